#!/usr/bin/env bash
# Creates, once, the virtualenv of the interop tests: the Python reference MCP SDK (PyPI
# mcp 2.3.0) with every dependency pinned by interop/python/requirements.txt. Prints the
# path of its python on stdout (everything else goes to stderr):
#
#   ARCTERN_PYTHON="$(scripts/python-env.sh)"
#
# The virtualenv lives outside the checkout, in
# ${XDG_CACHE_HOME:-$HOME/.cache}/arctern/python-mcp-2.3.0, and is rebuilt only when the
# pins or the base interpreter change; a cached run takes a few milliseconds.
#
# Environment: PYTHON  the interpreter to build it with (default python3; mcp needs >= 3.10)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/interop/python/requirements.txt"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/arctern/python-mcp-2.3.0"
# Written last, so a half-built virtualenv is never taken for a ready one.
ready="$venv/.arctern-ready"
base="${PYTHON:-python3}"

command -v "$base" >/dev/null || { echo "python-env.sh: $base not found (set PYTHON)" >&2; exit 2; }
base_id="$("$base" -c 'import sys; print(sys.executable, sys.version)')"
fingerprint="$(cat "$requirements" <(echo "$base_id") | sha256sum | cut -d' ' -f1)"

is_ready() {
  [ -x "$venv/bin/python" ] && [ -f "$ready" ] && [ "$(cat "$ready")" = "$fingerprint" ]
}

if ! is_ready; then
  mkdir -p "$(dirname "$venv")"
  # One builder at a time; whoever waited finds the work done.
  exec 9>"$venv.lock"
  flock 9
  if ! is_ready; then
    echo "python-env.sh: creating $venv (mcp 2.3.0, pinned)" >&2
    rm -rf "$venv"
    "$base" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      --requirement "$requirements" >&2
    "$venv/bin/python" -c 'import mcp, mcp_types, uvicorn' >&2
    echo "$fingerprint" > "$ready"
  fi
fi
echo "$venv/bin/python"
