#!/usr/bin/env bash
# Fleet rows: the demo server (`arctern serve`, release build) measured with the benchmark's
# load generator in three placements, for `echo` and the two-round `confirm` flow:
#
#   direct       one instance, the load generator connected to it
#   nginx-1      the same instance behind nginx (scripts/fleet.sh up 1)
#   nginx-N      N instances behind nginx, round robin (scripts/fleet.sh up N)
#
# and the cost of the nginx hop per call (latency at 1 connection; nginx's own CPU per call).
# Everything runs on loopback and competes for this machine's cores: unlike bench/run.sh,
# nothing is pinned, so on a 2-core machine N instances cannot scale throughput; the rows
# show the cost of the hop and that a fleet serves flows across instances at full speed.
#
#   bench/fleet.sh [--instances N] [--duration S] [--warmup S] [--conns C] [--no-build]
#
# Results: one JSON line per run in bench/results/fleet.runs.jsonl (the RunRecord of
# bench/src/record.rs plus "placement" and "nginx_cpu_us_per_call"), and a Markdown table in
# bench/results/fleet.md. Needs what scripts/fleet.sh needs (nginx, redis-server).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
N=3
DURATION=5
WARMUP=1
CONNS=8
BUILD=1
OUT="$BENCH_DIR/results"
while [ $# -gt 0 ]; do
    case "$1" in
        --instances) N=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --conns) CONNS=$2; shift ;;
        --no-build) BUILD=0 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "fleet.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

say() { printf '\n== %s\n' "$*" >&2; }

if [ "$BUILD" = 1 ]; then
    say "building (release): the load generator and the arctern command"
    cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml" --bin load
    cargo build --release --manifest-path "$ROOT/Cargo.toml" -p arctern-cli
fi
LOAD="${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release/load"
ARCTERN_BIN="$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/arctern"
export ARCTERN_BIN
[ -x "$LOAD" ] && [ -x "$ARCTERN_BIN" ] || { echo "fleet.sh: build first (without --no-build)" >&2; exit 1; }

mkdir -p "$OUT"
RUNS="$OUT/fleet.runs.jsonl"
: >"$RUNS"
FLEET_DIR="$(mktemp -d "${TMPDIR:-/tmp}/arctern-bench-fleet.XXXXXX")"
rmdir "$FLEET_DIR"
export ARCTERN_FLEET_DIR="$FLEET_DIR"
trap '"$ROOT/scripts/fleet.sh" down >/dev/null 2>&1 || true' EXIT

# CPU ticks (user + system) of nginx's worker processes.
nginx_ticks() {
    local master total=0 pid
    master=$(cut -d' ' -f1 "$FLEET_DIR/nginx.pidfile")
    for pid in $(pgrep -P "$master"); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
    done
    echo "$total"
}

# run PLACEMENT MODE CONNS ADDR PID
run() {
    local placement=$1 mode=$2 conns=$3 addr=$4 pid=$5 before after tmp
    tmp=$(mktemp)
    before=$( [ "$placement" = direct ] && echo 0 || nginx_ticks )
    "$LOAD" http --peer arctern --scenario "$placement-$mode" --mode "$mode" --conns "$conns" \
        --addr "$addr" --pid "$pid" --duration "$DURATION" --warmup "$WARMUP" --out "$tmp" >&2 \
        || echo "fleet.sh: a run reported errors ($placement $mode)" >&2
    after=$( [ "$placement" = direct ] && echo 0 || nginx_ticks )
    python3 - "$tmp" "$placement" "$((after - before))" "$(getconf CLK_TCK)" "$DURATION" "$WARMUP" >>"$RUNS" <<'EOF'
import json, sys
path, placement, ticks, hz, duration, warmup = sys.argv[1:7]
record = json.loads(open(path).read().splitlines()[-1])
record["placement"] = placement
# nginx's CPU over the whole run (warm-up included) spread over the calls of that time.
calls = record["calls"] * (float(duration) + float(warmup)) / float(duration)
record["nginx_cpu_us_per_call"] = (int(ticks) / int(hz) * 1e6 / calls) if calls and placement != "direct" else 0.0
print(json.dumps(record))
EOF
    rm -f "$tmp"
}

addr_of() { python3 -c 'import sys,urllib.parse; u=urllib.parse.urlsplit(sys.argv[1]); print(f"{u.hostname}:{u.port}")' "$1"; }

say "one instance: direct, and behind nginx"
INFO=$("$ROOT/scripts/fleet.sh" up 1)
FRONT=$(addr_of "$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')")
I1=$(addr_of "$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["instances"][0]["url"])')")
P1=$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["instances"][0]["pid"])')
for mode in echo confirm; do
    for conns in 1 "$CONNS"; do
        run direct "$mode" "$conns" "$I1" "$P1"
        run nginx-1 "$mode" "$conns" "$FRONT" "$P1"
    done
done
"$ROOT/scripts/fleet.sh" down >/dev/null

say "$N instances behind nginx"
INFO=$("$ROOT/scripts/fleet.sh" up "$N")
FRONT=$(addr_of "$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')")
P1=$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["instances"][0]["pid"])')
for mode in echo confirm; do
    for conns in 1 "$CONNS"; do
        run "nginx-$N" "$mode" "$conns" "$FRONT" "$P1"
    done
done
"$ROOT/scripts/fleet.sh" down >/dev/null

python3 - "$RUNS" "$N" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/fleet.md" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n, load = sys.argv[2], sys.argv[3]
print("### Fleet: one instance direct, behind nginx, and %s behind nginx\n" % n)
print("`arctern serve` (release) with `--key-file`, `--redis` and `--instance-id`; nginx 1 worker,")
print("keepalive upstreams; nothing pinned (load average at the end: %s). Server CPU is the first" % load)
print("instance's; nginx CPU is its worker's per call. Every `confirm` flow's second round claims the flow")
print("in Redis (the one-time store: one Lua script call) and marks it completed (another).\n")
print("| placement | call | connections | calls/s | p50 | p99 | errors | server CPU / call | nginx CPU / call |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    mode = r["scenario"].split("-")[-1]
    print(f"| {r['placement']} | {mode} | {r['concurrency']} | {r['calls_per_s']:,.0f} | {r['p50_us']:.0f} µs | {r['p99_us']:.0f} µs | {r['errors']} | {r.get('server_cpu_us_per_call', 0):.1f} µs | {r['nginx_cpu_us_per_call']:.1f} µs |")
print()
def find(placement, mode, conns):
    for r in runs:
        if r["placement"] == placement and r["scenario"].endswith(mode) and r["concurrency"] == conns:
            return r
for mode in ("echo", "confirm"):
    d, g = find("direct", mode, 1), find("nginx-1", mode, 1)
    if d and g:
        hops = 1 if mode == "echo" else 2
        print(f"nginx hop, {mode} at 1 connection: +{g['p50_us'] - d['p50_us']:.0f} µs p50 per call "
              f"({(g['p50_us'] - d['p50_us']) / hops:.0f} µs per request), nginx CPU {g['nginx_cpu_us_per_call'] / hops:.1f} µs per request.")
EOF
cat "$OUT/fleet.md"
