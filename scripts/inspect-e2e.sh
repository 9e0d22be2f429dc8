#!/usr/bin/env bash
# The browser tests of `arctern inspect` (crates/arctern-cli/e2e): Debian's headless Chromium
# driven by playwright-core (pinned by e2e/package-lock.json; it downloads no browser), under
# Node's test runner. Installs what is missing, once: the `chromium` package with apt-get
# (as root), and the npm packages into a cache outside the checkout
# (${XDG_CACHE_HOME:-$HOME/.cache}/arctern/inspect-e2e). Builds the binary and the fixture
# server with cargo. Needs node (20 or newer) and npm; exits 3 without them.
#
#   scripts/inspect-e2e.sh            run the tests
#   scripts/inspect-e2e.sh --shots    also refresh the screenshots under crates/arctern-cli/docs
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$root/crates/arctern-cli/e2e"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/arctern/inspect-e2e"
ready="$dir/.arctern-ready"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "inspect-e2e.sh: $tool not found" >&2; exit 3; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "inspect-e2e.sh: Node.js 20 or newer is needed (found $(node --version))" >&2; exit 3; }

chromium="${CHROMIUM:-$(command -v chromium || true)}"
if [ -z "$chromium" ]; then
  echo "inspect-e2e.sh: installing Debian's chromium (apt-get)" >&2
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2
  chromium="$(command -v chromium)"
fi

fingerprint="$(cat "$pins/package.json" "$pins/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)"
if ! { [ -f "$ready" ] && [ "$(cat "$ready")" = "$fingerprint" ]; }; then
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock 9
  if ! { [ -f "$ready" ] && [ "$(cat "$ready")" = "$fingerprint" ]; }; then
    echo "inspect-e2e.sh: installing playwright-core (pinned) into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    echo "$fingerprint" >"$ready"
  fi
fi
# Next to its node_modules, so that the import resolves.
cp "$pins/inspect.test.mjs" "$dir/inspect.test.mjs"

cd "$root"
cargo build -p arctern-cli --bin arctern --example inspect_fixture >&2
target="$(cargo metadata --format-version 1 --no-deps | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')"
shots=""
if [ "${1:-}" = "--shots" ]; then
  shots="$root/crates/arctern-cli/docs"
  mkdir -p "$shots"
fi
ARCTERN="$target/debug/arctern" ARCTERN_FIXTURE="$target/debug/examples/inspect_fixture" \
  CHROMIUM="$chromium" SHOTS="$shots" node --test "$dir/inspect.test.mjs"
