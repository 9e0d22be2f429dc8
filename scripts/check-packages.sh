#!/usr/bin/env bash
# What publishing needs, checked on a checkout (CI runs it; it needs the crates.io index):
#
#   1. no dependency declares a `rust-version` above ours (1.90): the part of the MSRV that a
#      machine without a 1.90 toolchain can check (clippy's `incompatible_msrv` lint, in the
#      clippy step, covers the standard library items we use);
#   2. `cargo publish --dry-run` of every published crate: each is packaged and built from
#      its tarball, so a package that reads outside itself or misses a file fails here;
#   3. the README's "Getting started": a new crate made with exactly its `cargo add` lines (arctern
#      by path instead of from crates.io) compiles with the README's server as its main.rs;
#   4. the docs.rs build (nightly, `--cfg docsrs`: feature badges), without warnings.
#
#   scripts/check-packages.sh            all of it
#   scripts/check-packages.sh --no-doc   without the nightly docs.rs build
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

doc=1
[ "${1:-}" = "--no-doc" ] && doc=0

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

echo "-- dependencies' rust-version against ours (+${SECONDS}s)"
cargo metadata --format-version 1 --locked > "$scratch/metadata.json"
python3 - "$scratch/metadata.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
def version(v):
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))
members = set(meta["workspace_members"])
ours = {p["rust_version"] for p in meta["packages"] if p["id"] in members}
assert len(ours) == 1, "one rust-version for the workspace, found %s" % ours
msrv = ours.pop()
above, undeclared, checked = [], 0, 0
for p in meta["packages"]:
    if p["id"] in members:
        continue
    if p["rust_version"] is None:
        undeclared += 1
        continue
    checked += 1
    if version(p["rust_version"]) > version(msrv):
        above.append("%s %s needs %s" % (p["name"], p["version"], p["rust_version"]))
if above:
    sys.exit("dependencies above our rust-version %s: %s" % (msrv, "; ".join(above)))
print("%d dependencies declare a rust-version, none above %s; %d declare none (not checked)"
      % (checked, msrv, undeclared))
PY

echo "-- cargo publish --dry-run --workspace (+${SECONDS}s)"
# In a clean clone (CI) the tree is clean; locally, uncommitted edits are packaged as they are.
allow_dirty=()
[ -n "$(git status --porcelain --untracked-files=no)" ] && allow_dirty=(--allow-dirty)
# Each package is built from its tarball as a workspace of its own, without our profile:
# no debug info there, which only costs linking and disk.
CARGO_PROFILE_DEV_DEBUG=0 cargo publish --dry-run --workspace --locked "${allow_dirty[@]}"

echo "-- the README's getting started, in a new crate (+${SECONDS}s)"
# The commands of the README's first sh block, arctern by path, run in the new crate.
python3 - "$root/README.md" "$root/crates/arctern" > "$scratch/commands.sh" <<'PY'
import re, sys
readme, arctern = open(sys.argv[1]).read(), sys.argv[2]
section = readme.split("\n## Getting started\n", 1)[1].split("\n## ", 1)[0]
block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
for line in block.splitlines():
    line = line.split("#", 1)[0].strip()
    if line.startswith("cargo new "):
        continue  # made below, in the scratch directory
    if line == "cargo add arctern":
        line = f"cargo add arctern --path {arctern}"
    assert line.startswith("cargo add "), line
    print(line)
PY
(
    cd "$scratch"
    cargo new --quiet --vcs none my-server
    cd my-server
    # Versions as the workspace pins them, so that this builds what CI tested.
    cp "$root/Cargo.lock" .
    bash -eu ../commands.sh
    python3 - "$root/README.md" > src/main.rs <<'PY'
import re, sys
section = open(sys.argv[1]).read().split("\n## A server\n", 1)[1].split("\n## ", 1)[0]
print(re.search(r"```rust,no_run\n(.*?)```", section, re.S).group(1), end="")
PY
    CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" cargo check --quiet
)
echo "the README's server compiles in a new crate with the README's dependencies"

if [ "$doc" = 1 ]; then
    echo "-- the docs.rs build of arctern (nightly, --cfg docsrs, every feature) (+${SECONDS}s)"
    RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo +nightly doc -p arctern --all-features --no-deps --quiet
fi
