#!/usr/bin/env bash
# Runs one leg of the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in conformance/scripts/conformance-cli.sh) against this project's fixtures, with the
# checked-in expected-failures file of that wire.
#
#   scripts/conformance.sh server 2026-07-28
#   scripts/conformance.sh client 2026-07-28
#   scripts/conformance.sh client extensions   (the extension scenarios: OAuth client
#                                               credentials, enterprise-managed, DPoP, WIF)
#   scripts/conformance.sh server 2026-07-28 --scenario tools-list   (extra suite options)
#
# The suite is installed once into ${CONFORMANCE_HOME:-$XDG_CACHE_HOME/mcp-conformance}.
# Results go to conformance-out/<leg>-<wire>/ (ignored by git).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

leg="${1:?usage: scripts/conformance.sh server|client WIRE [suite options]}"
wire="${2:?usage: scripts/conformance.sh server|client WIRE [suite options]}"
shift 2

cargo build --quiet -p arctern-conformance --bins
bin_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug"
baseline="conformance/expected-failures.$wire.yml"
out="conformance-out/$leg-$wire"
rm -rf "$out"

select=(--suite all --spec-version "$wire")
# Extension scenarios have no wire of their own: the suite picks it.
[ "$wire" = extensions ] && select=(--suite extensions)
for arg in "$@"; do
  case "$arg" in --scenario) select=(--spec-version "$wire") ;; esac
done
baseline_args=()
[ -f "$baseline" ] && baseline_args=(--expected-failures "$baseline")

case "$leg" in
  server)
    port="${CONFORMANCE_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
    exec conformance/scripts/run-server-conformance.sh \
      --server-cmd "$bin_dir/conformance-server --port $port" \
      --url "http://127.0.0.1:$port/mcp" --out "$out" \
      -- "${select[@]}" "${baseline_args[@]}" "$@"
    ;;
  client)
    exec conformance/scripts/run-client-conformance.sh \
      --client-cmd "$bin_dir/conformance-client" --out "$out" \
      -- "${select[@]}" --timeout 60000 "${baseline_args[@]}" "$@"
    ;;
  *) echo "unknown leg $leg (server or client)" >&2; exit 2 ;;
esac
