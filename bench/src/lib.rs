//! Shared pieces of the arctern benchmark: the benchmark contract on the wire (request
//! bodies and headers the load generator sends, and the checks it applies to every reply),
//! the result record every run writes, the latency histogram, the latency floor (a blocking
//! TCP ping-pong of the same bytes as an HTTP echo call), and RSS and CPU time sampling from
//! `/proc`.
//!
//! The **benchmark contract** is the same for every server measured:
//!
//! * `echo {text}` answers one text content block equal to `text`;
//! * `confirm {text}` answers, in round 1, `input_required` with one form elicitation under
//!   the key `confirm` (schema `{ok: boolean}`) and a sealed `requestState`; the retry with
//!   `inputResponses.confirm = {"action":"accept","content":{"ok":true}}` and the echoed
//!   state answers one text block equal to `text`;
//! * the "100 tools" variants register `echo` and 99 other tools, each with its own
//!   three-field argument struct, and `tools/list` lists all 100;
//! * the "listen" variants (the open-streams scenario) register `echo` and `publish {uri}`
//!   and advertise `resources.subscribe`. A
//!   `subscriptions/listen` request with `resourceSubscriptions: [LISTEN_RESOURCE]` is
//!   answered with a long-lived SSE stream whose first message is
//!   `notifications/subscriptions/acknowledged`; each `publish {uri: LISTEN_RESOURCE}` call
//!   answers one text block `published` after announcing `notifications/resources/updated`
//!   for that URI to every open stream, each notification tagged with the stream's
//!   subscription id (the listen request's id). Each server publishes through its SDK's own
//!   means (see the servers).

pub mod contract;
pub mod cpu;
pub mod floor;
pub mod measure;
pub mod record;
pub mod rss;
pub mod stream;
pub mod tls;
pub mod wire;

/// The protocol revision every request is sent at.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The resource the open-streams scenario subscribes to and publishes updates of.
pub const LISTEN_RESOURCE: &str = "bench://resource";

/// How many tools the "100 tools" server variants register.
pub const MANY_TOOLS: usize = 100;

/// The argument structs of the 99 generated tools of the "100 tools" variants
/// (`Tool001Args` … `Tool099Args`, three fields each), shared by both Rust servers.
pub mod many {
    include!(concat!(env!("OUT_DIR"), "/many_args.rs"));
}
