#!/usr/bin/env bash
# The benchmark in one command: builds the servers, the load generator and the
# micro-benchmarks in release mode, installs the Python reference SDK and the TypeScript SDK
# (pinned, cached outside the checkout) if missing, runs every scenario against every server
# in the same run — one fresh server process per run pinned to one core, the load generator
# pinned to the other (except the rows that put both on the server's core on purpose) — and
# prints a Markdown table of absolute figures and ratios, also written to
# bench/results/latest.md and bench/results/latest.json. The default run takes about 18
# minutes (see bench/README.md).
#
# Usage: bench/run.sh [--quick] [--duration S] [--warmup S] [--repeat N]
#                     [--pairs N] [--pair-duration S] [--streams N] [--publishes N]
#                     [--peers ceiling,arctern,rmcp,typescript,python]
#                     [--scenarios echo,floor,confirm,https,many,stdio,startup,streams,micro]
#                     [--no-build] [--out DIR]
#
#   --quick          2 s per row after 0.5 s warm-up, 1 s per interleaved run, 3 start-ups,
#                    5 publishes, short micro-benchmarks
#   --duration       measured seconds per row (default 10)
#   --warmup         warm-up seconds per row (default 2)
#   --repeat         process starts timed per server and transport (default 5)
#   --pairs          interleaved pairs of runs for two targets, each using the median of
#                    its pairs' ratios (default 3; 0: compare the single rows instead):
#                    arctern with 2 then with 100 tools registered (echo, 32 connections)
#                    for "no drop with 100 tools", and arctern then rmcp over stdio (32 in
#                    flight) for "stdio ≥ 2× rmcp"
#   --pair-duration  measured seconds per interleaved run (default 5)
#   --streams        subscriptions/listen streams held open in the streams scenario
#                    (default 10000; the script raises its open-files limit to fit)
#   --publishes      publish calls timed in the streams scenario (default 20)
#   --handshakes     full TLS handshakes timed before each HTTPS run (default 200)
#   --peers          servers to measure (default: all)
#   --scenarios      scenario groups to run (default: all)
#                      echo     HTTP tools/call echo at 1, 8 and 32 connections
#                      floor    latency at 1 connection across cores and on one core: the
#                               floor (a blocking std::net ping-pong of the same bytes as an
#                               echo call, no HTTP, no async runtime) with its client on
#                               LOAD_CPU and on SERVER_CPU, and the HTTP echo at 1 connection
#                               with the load generator on SERVER_CPU
#                      confirm  HTTP 2-round confirm flow at 1 and 32 connections
#                      https    echo and the confirm flow over HTTPS at 1 and 32 connections
#                               (arctern and rmcp, both on rustls with ring; a test CA made
#                               for the run), with HANDSHAKES full TLS handshakes timed apart
#                               before each run
#                      many     100 tools registered: tools/list at 32, echo at 1 and 32, and
#                               the interleaved 2-tool / 100-tool pairs (see --pairs)
#                      stdio    stdio echo with 1 and 32 requests in flight, and the
#                               interleaved arctern / rmcp pairs at 32 (see --pairs)
#                      startup  process start to first answered request (HTTP and stdio)
#                      streams  N idle subscriptions/listen streams over HTTP: server memory
#                               per stream, and publish-to-delivery time on all of them
#                               (arctern, rmcp, typescript; the Python reference is not run)
#                      micro    criterion: envelope parse/serialize, seal, unseal
#   --no-build       use the binaries already built (the micro-benchmarks are still
#                    compiled, unpinned, if out of date)
#   --out            where results go (default: bench/results)
#
# Environment: SERVER_CPU (default 0), LOAD_CPU (default 1), BENCH_PORT_BASE (default
# 18600), ARCTERN_BENCH_VENV (default ${XDG_CACHE_HOME:-~/.cache}/arctern-bench/venv-mcp-2.3.0),
# ARCTERN_BENCH_TS (default ${XDG_CACHE_HOME:-~/.cache}/arctern-bench/ts-mcp-server-2.4.0).
# The TypeScript peer needs Node.js 20 or newer and npm (leave it out with --peers).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
TARGET="$BENCH_DIR/target/release"

DURATION=10
WARMUP=2
REPEAT=5
PAIRS=3
PAIR_DURATION=5
QUICK=0
BUILD=1
STREAMS=10000
PUBLISHES=20
PEERS="ceiling,arctern,rmcp,typescript,python"
SCENARIOS="echo,floor,confirm,https,many,stdio,startup,streams,micro"
HANDSHAKES=200
OUT="$BENCH_DIR/results"
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT=${BENCH_PORT_BASE:-18600}
VENV=${ARCTERN_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/arctern-bench/venv-mcp-2.3.0}

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; DURATION=2; WARMUP=0.5; REPEAT=3; PAIR_DURATION=1; PUBLISHES=5 ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --repeat) REPEAT=$2; shift ;;
        --pairs) PAIRS=$2; shift ;;
        --pair-duration) PAIR_DURATION=$2; shift ;;
        --streams) STREAMS=$2; shift ;;
        --publishes) PUBLISHES=$2; shift ;;
        --handshakes) HANDSHAKES=$2; shift ;;
        --peers) PEERS=$2; shift ;;
        --scenarios) SCENARIOS=$2; shift ;;
        --no-build) BUILD=0 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

has() { [[ ",$1," == *",$2,"* ]]; }
say() { printf '\n== %s\n' "$*" >&2; }

mkdir -p "$OUT"
RUNS="$OUT/latest.runs.tmp"
LOG="$OUT/servers.log.tmp"
MACHINE="$OUT/machine.json.tmp"
: >"$RUNS"
: >"$LOG"
LOADAVG_START=$(cut -d' ' -f1 /proc/loadavg)

# ---------------------------------------------------------------------------------------
# Build

if [ "$BUILD" = 1 ]; then
    say "building (release)"
    cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml" --bins
    if has "$SCENARIOS" micro; then
        cargo bench --manifest-path "$BENCH_DIR/Cargo.toml" --bench micro --no-run
    fi
fi

# The Python reference: mcp 2.3.0 and its dependencies at the versions in requirements.txt,
# in a virtual environment cached outside the checkout, reinstalled when the pins change.
if has "$PEERS" python; then
    REQS="$BENCH_DIR/python/requirements.txt"
    STAMP="$VENV/.arctern-bench-requirements"
    if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQS" "$STAMP"; then
        say "installing the Python reference SDK into $VENV"
        rm -rf "$VENV"
        mkdir -p "$(dirname "$VENV")"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$REQS"
        cp "$REQS" "$STAMP"
    fi
    PY="$VENV/bin/python"
fi

# The TypeScript SDK: @modelcontextprotocol/server 2.4.0 and its dependencies as pinned by
# bench/typescript/package-lock.json, installed into a cache outside the checkout.
if has "$PEERS" typescript; then
    if ! TS_SERVER=$("$BENCH_DIR/typescript/env.sh"); then
        echo "run.sh: the TypeScript peer needs Node.js 20 or newer and npm; install them, or" \
            "leave the peer out (--peers ceiling,arctern,rmcp,python)" >&2
        exit 1
    fi
fi

# The streams scenario holds STREAMS sockets open in the load generator and as many in the
# server: raise the open-files limit (both inherit it) as far as the hard limit allows.
if has "$SCENARIOS" streams; then
    need=$((STREAMS + 1024))
    if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$need" ]; then
        hard=$(ulimit -Hn)
        if [ "$hard" = unlimited ] || [ "$hard" -ge "$need" ]; then
            ulimit -Sn "$need"
        else
            ulimit -Sn "$hard"
            echo "run.sh: the open-files limit is $hard; $STREAMS streams need about $need" \
                "(raise the hard limit, or pass --streams N)" >&2
        fi
    fi
fi

# ---------------------------------------------------------------------------------------
# Servers and runs

# The command line of a server: server_cmd PEER (--port N | --stdio) [--many]
server_cmd() {
    local peer=$1
    shift
    case "$peer" in
        arctern) echo "$TARGET/arctern-server $*" ;;
        rmcp) echo "$TARGET/rmcp-server $*" ;;
        typescript) echo "node $TS_SERVER $*" ;;
        python) echo "$PY $BENCH_DIR/python/server.py $*" ;;
        ceiling) echo "$TARGET/ceiling $*" ;;
    esac
}

# A run's measured seconds and the load generator's core: DURATION and LOAD_CPU unless the
# caller sets RUN_DURATION or RUN_LOAD_CPU for that one call.
run_duration() { echo "${RUN_DURATION:-$DURATION}"; }
run_load_cpu() { echo "${RUN_LOAD_CPU:-$LOAD_CPU}"; }

FAILED=0

# http_run PEER SCENARIO MODE CONNS [--many]: one fresh server, one measured run
# (RUN_DURATION and RUN_LOAD_CPU override the duration and the load generator's core;
# RUN_TLS=1 serves and measures HTTPS with the run's test CA).
http_run() {
    local peer=$1 scenario=$2 mode=$3 conns=$4 many=${5:-}
    local load_cpu server_tls=() load_tls=()
    load_cpu=$(run_load_cpu)
    if [ "${RUN_TLS:-0}" = 1 ]; then
        server_tls=(--tls-cert "$TLS_DIR/cert.pem" --tls-key "$TLS_DIR/key.pem")
        load_tls=(--tls-ca "$TLS_DIR/ca.pem" --handshakes "$HANDSHAKES")
    fi
    PORT=$((PORT + 1))
    # shellcheck disable=SC2046
    taskset -c "$SERVER_CPU" $(server_cmd "$peer" --port "$PORT" $many) "${server_tls[@]}" \
        >>"$LOG" 2>&1 &
    local pid=$!
    if taskset -c "$load_cpu" "$TARGET/load" wait --addr "127.0.0.1:$PORT" --timeout 60; then
        taskset -c "$load_cpu" "$TARGET/load" http --peer "$peer" --scenario "$scenario" \
            --mode "$mode" --conns "$conns" --duration "$(run_duration)" --warmup "$WARMUP" \
            --addr "127.0.0.1:$PORT" --pid "$pid" --out "$RUNS" "${load_tls[@]}" || FAILED=1
    else
        echo "$peer did not start (see $LOG)" >&2
        FAILED=1
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# floor_run SCENARIO CLIENT_CPU: the blocking ping-pong, server on SERVER_CPU.
floor_run() {
    local scenario=$1 client_cpu=$2
    PORT=$((PORT + 1))
    taskset -c "$SERVER_CPU" "$TARGET/floor" serve --port "$PORT" >>"$LOG" 2>&1 &
    local pid=$!
    if taskset -c "$client_cpu" "$TARGET/load" wait --addr "127.0.0.1:$PORT" --timeout 60; then
        taskset -c "$client_cpu" "$TARGET/floor" ping --port "$PORT" --scenario "$scenario" \
            --duration "$DURATION" --warmup "$WARMUP" --pid "$pid" --out "$RUNS" || FAILED=1
    else
        echo "the floor server did not start (see $LOG)" >&2
        FAILED=1
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# stdio_run PEER INFLIGHT [SCENARIO]: one fresh server over stdio, one measured run
# (RUN_DURATION overrides the duration).
stdio_run() {
    local peer=$1 inflight=$2 scenario=${3:-stdio}
    # shellcheck disable=SC2046
    taskset -c "$LOAD_CPU" "$TARGET/load" stdio --peer "$peer" --scenario "$scenario" \
        --inflight "$inflight" --duration "$(run_duration)" --warmup "$WARMUP" --out "$RUNS" \
        -- taskset -c "$SERVER_CPU" $(server_cmd "$peer" --stdio) 2>>"$LOG" || FAILED=1
}

startup_run() {
    local peer=$1
    PORT=$((PORT + 1))
    # shellcheck disable=SC2046
    taskset -c "$LOAD_CPU" "$TARGET/load" startup --peer "$peer" --transport http \
        --addr "127.0.0.1:$PORT" --repeat "$REPEAT" --out "$RUNS" \
        -- taskset -c "$SERVER_CPU" $(server_cmd "$peer" --port "$PORT") 2>>"$LOG" || FAILED=1
    # shellcheck disable=SC2046
    taskset -c "$LOAD_CPU" "$TARGET/load" startup --peer "$peer" --transport stdio \
        --repeat "$REPEAT" --out "$RUNS" \
        -- taskset -c "$SERVER_CPU" $(server_cmd "$peer" --stdio) 2>>"$LOG" || FAILED=1
}

# streams_run PEER: one fresh server with its listen variant, STREAMS streams, PUBLISHES
# publishes.
streams_run() {
    local peer=$1
    PORT=$((PORT + 1))
    # shellcheck disable=SC2046
    taskset -c "$SERVER_CPU" $(server_cmd "$peer" --port "$PORT" --listen) >>"$LOG" 2>&1 &
    local pid=$!
    if taskset -c "$LOAD_CPU" "$TARGET/load" wait --addr "127.0.0.1:$PORT" --timeout 60; then
        taskset -c "$LOAD_CPU" "$TARGET/load" streams --peer "$peer" --addr "127.0.0.1:$PORT" \
            --pid "$pid" --streams "$STREAMS" --publishes "$PUBLISHES" --out "$RUNS" || FAILED=1
    else
        echo "$peer did not start (see $LOG)" >&2
        FAILED=1
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Peers other than the ceiling, in the order given.
mcp_peers() { tr ',' '\n' <<<"$PEERS" | grep -v '^ceiling$' || true; }

if has "$SCENARIOS" echo; then
    say "echo over HTTP"
    for conns in 1 8 32; do
        for peer in $(tr ',' ' ' <<<"$PEERS"); do
            http_run "$peer" echo echo "$conns"
        done
    done
fi

if has "$SCENARIOS" floor; then
    say "latency floor: across cores and on one core"
    floor_run floor "$LOAD_CPU"
    floor_run floor-samecore "$SERVER_CPU"
    for peer in $(tr ',' ' ' <<<"$PEERS"); do
        RUN_LOAD_CPU=$SERVER_CPU http_run "$peer" echo-samecore echo 1
    done
fi

if has "$SCENARIOS" confirm; then
    say "2-round confirm flow over HTTP"
    for conns in 1 32; do
        for peer in $(mcp_peers); do
            http_run "$peer" confirm confirm "$conns"
        done
    done
fi

if has "$SCENARIOS" https; then
    say "HTTPS: echo and the confirm flow (arctern and rmcp on rustls with ring)"
    TLS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/arctern-bench-tls.XXXXXX")
    "$TARGET/load" tls-ca --dir "$TLS_DIR"
    for conns in 1 32; do
        for mode in echo confirm; do
            for peer in $(mcp_peers); do
                case "$peer" in
                    arctern | rmcp) RUN_TLS=1 http_run "$peer" "https-$mode" "$mode" "$conns" ;;
                esac
            done
        done
    done
    rm -rf "$TLS_DIR"
fi

if has "$SCENARIOS" many; then
    say "100 tools registered"
    for peer in $(mcp_peers); do
        http_run "$peer" list100 list 32 --many
    done
    for conns in 1 32; do
        for peer in $(mcp_peers); do
            http_run "$peer" echo100 echo "$conns" --many
        done
    done
    if has "$PEERS" arctern && [ "$PAIRS" -gt 0 ]; then
        say "100 tools vs 2 tools: $PAIRS interleaved pairs (arctern, 32 connections)"
        for _ in $(seq "$PAIRS"); do
            RUN_DURATION=$PAIR_DURATION http_run arctern echo-pair echo 32
            RUN_DURATION=$PAIR_DURATION http_run arctern echo100-pair echo 32 --many
        done
    fi
fi

if has "$SCENARIOS" stdio; then
    say "stdio"
    for inflight in 1 32; do
        for peer in $(mcp_peers); do
            stdio_run "$peer" "$inflight"
        done
    done
    if has "$PEERS" arctern && has "$PEERS" rmcp && [ "$PAIRS" -gt 0 ]; then
        say "stdio arctern vs rmcp: $PAIRS interleaved pairs (32 in flight)"
        for _ in $(seq "$PAIRS"); do
            RUN_DURATION=$PAIR_DURATION stdio_run arctern 32 stdio-pair
            RUN_DURATION=$PAIR_DURATION stdio_run rmcp 32 stdio-pair
        done
    fi
fi

if has "$SCENARIOS" startup; then
    say "start-up: process start to first answered request"
    for peer in $(mcp_peers); do
        startup_run "$peer"
    done
fi

if has "$SCENARIOS" streams; then
    say "$STREAMS open subscriptions/listen streams"
    for peer in $(mcp_peers); do
        case "$peer" in
            arctern | rmcp | typescript) streams_run "$peer" ;;
        esac
    done
fi

CRITERION_ARGS=()
if has "$SCENARIOS" micro; then
    say "micro-benchmarks"
    rm -rf "$BENCH_DIR/target/criterion"
    if [ "$QUICK" = 1 ]; then
        MICRO_TIMES=(--warm-up-time 0.5 --measurement-time 1)
    else
        MICRO_TIMES=(--warm-up-time 1 --measurement-time 3)
    fi
    # Built here too, unpinned, when out of date (also with --no-build: `cargo bench` has no
    # run-only mode, and compiling inside the pinned run below would take one core for minutes).
    cargo bench --manifest-path "$BENCH_DIR/Cargo.toml" --bench micro --no-run --quiet || FAILED=1
    taskset -c "$SERVER_CPU" cargo bench --manifest-path "$BENCH_DIR/Cargo.toml" \
        --bench micro -- --noplot "${MICRO_TIMES[@]}" 2>&1 | grep -E '^[a-z]+/|time:' >&2 || FAILED=1
    CRITERION_ARGS=(--criterion "$BENCH_DIR/target/criterion")
fi

# ---------------------------------------------------------------------------------------
# Report

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- crates 2>/dev/null)" ]; then
    commit="$commit+uncommitted"
fi
python_version=$("${PY:-python3}" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "?")
node_version=$(node --version 2>/dev/null || echo "?")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
cat >"$MACHINE" <<EOF
{
  "date": "$(date -u +%Y-%m-%dT%H:%MZ)",
  "cpu": "${cpu//\"/}",
  "cpus": "$(nproc)",
  "kernel": "$(uname -sr)",
  "commit": "$commit",
  "rustc": "$(rustc --version)",
  "python": "Python $python_version",
  "node": "$node_version",
  "duration_s": "$DURATION",
  "warmup_s": "$WARMUP",
  "quick": $([ "$QUICK" = 1 ] && echo true || echo false),
  "pairs": "$PAIRS",
  "pair_duration_s": "$PAIR_DURATION",
  "server_cpu": "$SERVER_CPU",
  "load_cpu": "$LOAD_CPU",
  "loadavg_start": "$LOADAVG_START",
  "loadavg_end": "$(cut -d' ' -f1 /proc/loadavg)"
}
EOF

say "report"
"$TARGET/report" --runs "$RUNS" --machine "$MACHINE" "${CRITERION_ARGS[@]}" \
    --md "$OUT/latest.md" --json "$OUT/latest.json"

if [ "$FAILED" = 1 ]; then
    echo "run.sh: some runs failed or had errors (see the report and $LOG)" >&2
    exit 1
fi
