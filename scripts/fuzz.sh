#!/usr/bin/env bash
# Runs the coverage-guided fuzz targets in fuzz/ (cargo-fuzz, libFuzzer); see fuzz/README.md.
#
#   scripts/fuzz.sh --list                 the targets
#   scripts/fuzz.sh TARGET SECONDS [ARGS]  runs one target for SECONDS (libFuzzer ARGS after)
#   scripts/fuzz.sh --smoke                builds every target, then runs each briefly (CI)
#
# Needs a nightly toolchain (sanitizers and coverage instrumentation are nightly-only); if
# there is none it says how to get one. cargo-fuzz is installed on first use into a cache
# outside the checkout ($ARCTERN_CACHE, default ~/.cache/arctern). Everything runs under
# `nice`: fuzzing takes whole cores, and others may be compiling.
#
# The corpus a run grows is kept in fuzz/corpus/TARGET (not committed); the committed seeds
# in fuzz/seeds/TARGET are read every run. A crash leaves its input in fuzz/artifacts/TARGET.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_FUZZ_VERSION=0.13.2
SMOKE_SECONDS="${ARCTERN_FUZZ_SMOKE_SECONDS:-5}"
# Campaigns run optimized builds; the smoke an unoptimized one, which builds in a fraction
# of the time and is as good at telling that every target builds and reads its seeds.
profile=release
cache="${ARCTERN_CACHE:-$HOME/.cache/arctern}"

usage() {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
}

targets() {
    sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^arctern-fuzz$'
}

toolchain() {
    if ! command -v rustup >/dev/null; then
        echo "fuzz.sh: rustup is needed for a nightly toolchain; see https://rustup.rs" >&2
        exit 2
    fi
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        echo "fuzz.sh: the fuzz targets need a nightly toolchain; install it with:" >&2
        echo "    rustup toolchain install nightly" >&2
        exit 2
    fi
}

# The cargo-fuzz binary: one of the pinned version on PATH, else the cached one, installed on
# first use.
cargo_fuzz() {
    if command -v cargo-fuzz >/dev/null &&
        [ "$(cargo-fuzz --version 2>/dev/null)" = "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
        command -v cargo-fuzz
        return
    fi
    local bin="$cache/cargo-fuzz-$CARGO_FUZZ_VERSION/bin/cargo-fuzz"
    if [ ! -x "$bin" ]; then
        echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $cache" >&2
        nice -n 19 cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION" \
            --root "$cache/cargo-fuzz-$CARGO_FUZZ_VERSION" >&2
    fi
    echo "$bin"
}

build() {
    toolchain
    local fuzz
    fuzz="$(cargo_fuzz)"
    local flags=()
    [ "$profile" = debug ] && flags=(--dev)
    (cd fuzz && RUSTUP_TOOLCHAIN=nightly nice -n 19 "$fuzz" fuzz build "${flags[@]}" "$@")
}

# run TARGET SECONDS [libFuzzer args]
run() {
    local target="$1" seconds="$2"
    shift 2
    if ! targets | grep -qx "$target"; then
        echo "fuzz.sh: no target $target (scripts/fuzz.sh --list)" >&2
        exit 2
    fi
    build "$target"
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    local dict=()
    [ -f "fuzz/dicts/$target.dict" ] && dict=("-dict=fuzz/dicts/$target.dict")
    # -timeout: one input may take at most 10 s; -rss_limit_mb: memory; leaks are reported
    # by the address sanitizer's leak checker (on by default).
    nice -n 19 "fuzz/target/x86_64-unknown-linux-gnu/$profile/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$target/" "${dict[@]}" "$@" \
        "fuzz/corpus/$target" "fuzz/seeds/$target"
}

case "${1:-}" in
    --list)
        targets
        ;;
    --smoke)
        # Every target builds, reads its seeds and runs briefly without a finding.
        profile=debug
        build
        log="$(mktemp)"
        trap 'rm -f "$log"' EXIT
        for target in $(targets); do
            echo "== fuzz smoke: $target (${SMOKE_SECONDS}s)"
            if ! run "$target" "$SMOKE_SECONDS" >"$log" 2>&1; then
                tail -n 60 "$log" >&2
                echo "fuzz smoke: $target failed (its input is in fuzz/artifacts/$target)" >&2
                exit 1
            fi
            grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+ +DONE' "$log" || true
        done
        ;;
    -h | --help | "")
        usage
        ;;
    *)
        [ $# -ge 2 ] || usage
        run "$@"
        ;;
esac
