#!/usr/bin/env bash
# Installs, once, the TypeScript peer of the benchmark: the official TypeScript MCP SDK's
# v2 server packages (@modelcontextprotocol/server 2.4.0 and @modelcontextprotocol/node
# 2.1.2, protocol revision 2026-07-28), with every dependency pinned by package-lock.json,
# into a cache outside the checkout, next to a copy of server.mjs. Prints the path of that
# copy on stdout (everything else goes to stderr):
#
#   TS_SERVER="$(bench/typescript/env.sh)"    # then: node "$TS_SERVER" --port N
#
# The cache is ${ARCTERN_BENCH_TS:-${XDG_CACHE_HOME:-$HOME/.cache}/arctern-bench/ts-mcp-server-2.4.0}.
# It is reinstalled (npm ci) only when the pins or the Node.js version change; server.mjs is
# copied on every call, so edits to it take effect at once. Needs node (20 or newer) and npm;
# exits 3 without them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${ARCTERN_BENCH_TS:-${XDG_CACHE_HOME:-$HOME/.cache}/arctern-bench/ts-mcp-server-2.4.0}"
# Written last, so a half-done install is never taken for a ready one.
ready="$dir/.arctern-ready"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "typescript/env.sh: $tool not found" >&2; exit 3; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "typescript/env.sh: Node.js 20 or newer is needed (found $(node --version))" >&2; exit 3; }
fingerprint="$(cat "$here/package.json" "$here/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)"

is_ready() {
  [ -f "$ready" ] && [ "$(cat "$ready")" = "$fingerprint" ]
}

if ! is_ready; then
  mkdir -p "$(dirname "$dir")"
  # One installer at a time; whoever waited finds the work done.
  exec 9>"$dir.lock"
  flock 9
  if ! is_ready; then
    echo "typescript/env.sh: installing @modelcontextprotocol/server 2.4.0 (pinned) into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    echo "$fingerprint" >"$ready"
  fi
fi
cp "$here/server.mjs" "$dir/server.mjs.tmp"
mv "$dir/server.mjs.tmp" "$dir/server.mjs"
echo "$dir/server.mjs"
