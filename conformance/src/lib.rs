//! Fixtures for the official MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! [`fixture`] builds the "everything server": every tool, prompt, resource and resource
//! template the suite's server scenarios call, on top of [`arctern::server::McpServer`]. The
//! `conformance-server` binary serves it over Streamable HTTP (`--port`) or stdio (`--stdio`);
//! `scripts/conformance.sh server 2026-07-28` runs the suite against it.

pub mod fixture;
