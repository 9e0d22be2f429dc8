#!/usr/bin/env bash
# Instructions per `Client::call_tool` (client and server together, one thread), counted by
# callgrind over N calls of the `client_call` bench binary after its warm-up:
#   crates/arctern/benches/client_call_instructions.sh [N]
# Needs valgrind. Builds the bench in the bench profile first.
set -euo pipefail
calls=${1:-200}
cd "$(dirname "$0")/../../.."
bin=$(cargo bench -p arctern --bench client_call --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
[ -n "$bin" ] || { echo "could not build the client_call bench" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for transport in memory http; do
  CLIENT_CALLS=$transport:$calls valgrind --tool=callgrind --toggle-collect='client_call::measured_calls' \
    --callgrind-out-file="$out/$transport" "$bin" >/dev/null 2>"$out/$transport.log"
  total=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$out/$transport" | head -n 1 | cut -d' ' -f1)
  echo "client_call/$transport: $((total / calls)) instructions per call ($calls calls)"
done
