#!/usr/bin/env bash
# Installs, once, the third-party peers of the CLI's tests: the official MCP "everything"
# test server (npm @modelcontextprotocol/server-everything 2026.8.31, on the TypeScript SDK
# 1.x, protocol 2025-11-25) and, next to it, interop/everything/two-questions.mjs on the same
# SDK (@modelcontextprotocol/sdk 1.32.2), with every dependency pinned by
# interop/everything/package-lock.json, into a cache outside the checkout. Prints that
# folder on stdout (everything else goes to stderr):
#
#   ARCTERN_EVERYTHING="$(scripts/everything-env.sh)"
#   node "$ARCTERN_EVERYTHING/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio
#   node "$ARCTERN_EVERYTHING/two-questions.mjs"
#
# The cache is ${XDG_CACHE_HOME:-$HOME/.cache}/arctern/server-everything-2026.8.31. It is
# reinstalled (npm ci) only when the pins or the Node.js version change; two-questions.mjs
# is copied on every call, so edits to it take effect at once; a cached run takes a few
# milliseconds. Needs node (20 or newer) and npm; exits 3 without them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$root/interop/everything"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/arctern/server-everything-2026.8.31"
entry="$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
# Written last, so a half-done install is never taken for a ready one.
ready="$dir/.arctern-ready"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "everything-env.sh: $tool not found" >&2; exit 3; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "everything-env.sh: Node.js 20 or newer is needed (found $(node --version))" >&2; exit 3; }
fingerprint="$(cat "$pins/package.json" "$pins/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)"

is_ready() {
  [ -f "$ready" ] && [ "$(cat "$ready")" = "$fingerprint" ] && [ -f "$entry" ]
}

if ! is_ready; then
  mkdir -p "$(dirname "$dir")"
  # One installer at a time; whoever waited finds the work done.
  exec 9>"$dir.lock"
  flock 9
  if ! is_ready; then
    echo "everything-env.sh: installing @modelcontextprotocol/server-everything 2026.8.31 (pinned) into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    echo "$fingerprint" >"$ready"
  fi
fi
cp "$pins/two-questions.mjs" "$dir/two-questions.mjs.tmp"
mv "$dir/two-questions.mjs.tmp" "$dir/two-questions.mjs"
echo "$dir"
