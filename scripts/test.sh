#!/usr/bin/env bash
# Runs every test of the project: the Rust test suites, then the official MCP conformance
# suite against the fixture server and the fixture client (2026-07-28 wire, and 2025-11-25,
# the legacy era, for both; and the client's extension scenarios). Tools it needs (the
# pinned conformance suite, the Python reference SDK, the everything server) are installed
# on first use into a cache outside the checkout.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    Rust tests only (without the fleet tests, which need nginx and Redis,
#                              and the inspector's browser tests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1

echo "== Python reference SDK (mcp 2.3.0) for the interop tests (+${SECONDS}s)"
ARCTERN_PYTHON="$(scripts/python-env.sh)"
# Here a missing virtualenv fails the interop tests instead of skipping them.
export ARCTERN_PYTHON ARCTERN_REQUIRE_PYTHON=1

echo "== the official MCP everything server (npm, pinned) for the CLI's tests (+${SECONDS}s)"
ARCTERN_EVERYTHING="$(scripts/everything-env.sh)"
# Here a missing Node.js or server fails those tests instead of skipping them.
export ARCTERN_EVERYTHING ARCTERN_REQUIRE_NODE=1

echo "== cargo test (+${SECONDS}s)"
# One invocation for every target and the doc tests: `--doc` run on its own builds the
# proc-macro dependencies with another profile and so recompiles everything above them.
cargo test --workspace

[ "$quick" = 1 ] && exit 0

echo "== arctern inspect in a real browser: Debian's chromium, playwright-core from its lock file (installed when missing) (+${SECONDS}s)"
# A missing Node.js fails here (exit 3) instead of skipping.
scripts/inspect-e2e.sh

echo "== fleet: nginx, HAProxy, Redis and three instances on loopback (fetches the packages into a cache when missing) (+${SECONDS}s)"
scripts/fleet.sh test

echo "== conformance: server leg, 2026-07-28 wire (+${SECONDS}s)"
scripts/conformance.sh server 2026-07-28

echo "== conformance: server leg, 2025-11-25 wire (legacy era) (+${SECONDS}s)"
scripts/conformance.sh server 2025-11-25

echo "== conformance: client leg, 2026-07-28 wire (+${SECONDS}s)"
scripts/conformance.sh client 2026-07-28

echo "== conformance: client leg, 2025-11-25 wire (legacy era) (+${SECONDS}s)"
scripts/conformance.sh client 2025-11-25

echo "== conformance: client leg, extension scenarios (OAuth client credentials, enterprise-managed, DPoP, WIF) (+${SECONDS}s)"
scripts/conformance.sh client extensions
