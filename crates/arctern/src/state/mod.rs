//! Sealed `requestState` for multi round-trip requests (MCP 2026-07-28).
//!
//! When a `tools/call`, `prompts/get` or `resources/read` handler needs input it answers
//! `{"resultType":"input_required","inputRequests":{…},"requestState":"…"}`; the client
//! answers the questions and retries the same request, echoing `requestState`. The server
//! keeps no memory between rounds, so everything it needs later travels in that string, and
//! the string comes back from the client.
//!
//! # Threat model
//!
//! The client, or anyone who can reach the server, controls the echoed `requestState`. It may
//! try to:
//!
//! * **forge or edit** state (skip a confirmation step, change an amount, inject answers);
//! * **read** state the server put there (internal ids, carried answers);
//! * **replay** a genuine token against another tool, other arguments, another method,
//!   another user, or another server sharing the same keys;
//! * **keep** a token and use it much later;
//! * **exhaust** the server with huge or pathological tokens.
//!
//! [`StateSealer`] defends against all of these: every token is encrypted and authenticated
//! with XChaCha20-Poly1305 ([`XChaChaCodec`]) under a [`KeyRing`], and carries claims binding
//! it to an expiry, the method, the target (tool or prompt name, resource URI), a canonical
//! digest of the arguments ([`args_digest`]), the server's audience and, when there is one,
//! the authenticated principal (salted digest, never in clear). Oversized tokens are refused
//! before any decoding. Whatever goes wrong, the client sees one fixed error —
//! `{"code":-32602,"message":"Invalid or expired requestState"}` ([`INVALID_STATE_MESSAGE`],
//! [`StateRejection::to_error_object`]) — and the real reason ([`RejectReason`]) goes to the
//! log through `tracing`.
//!
//! Not covered: **single use.** A genuine token can be presented again, with the same
//! binding, until it expires; flows whose final round has side effects must enforce
//! idempotency or one-time semantics server-side. `inputResponses` (the answers) are client
//! data and are not authenticated; use question pins ([`StatePayload::asked`],
//! [`question_digest`]) to accept answers only for questions that were actually asked.
//!
//! # Keys and fleets
//!
//! [`StateSealer::ephemeral`] (and a builder without keys) uses a fresh random key that never
//! leaves the process: fine for one process, but a flow spread by a load balancer over
//! several processes, or crossing a restart, will fail. For fleets give every process the
//! same ring, for example from an environment variable parsed by [`KeyRing::from_env`]
//! (`ARCTERN_STATE_KEYS=k2:<base64>,k1:<base64>`, first key seals, all verify), and rotate
//! with `[old,new]` → `[new,old]` → `[new]` (see [`KeyRing`]).
//!
//! # Token format
//!
//! The default codec's token is base64url without padding of
//! `version(1) ‖ key-id length ‖ key id ‖ nonce(24) ‖ ciphertext ‖ tag(16)`, with the header
//! as associated data (details on [`XChaChaCodec`]). The plaintext ("claims") is a compact
//! big-endian binary layout:
//!
//! ```text
//! size  field
//! 1     claims version (1)
//! 8     expiry, Unix seconds (u64)
//! 16    SHA-256(label ‖ method), truncated
//! 32    SHA-256(label ‖ target)
//! 32    argument digest (ArgsDigest)
//! 16    SHA-256(label ‖ audience), truncated
//! 1     principal flag: 0 none, 1 bound; if 1:
//!   8   random salt
//!   16  SHA-256(label ‖ salt ‖ SHA-256(label ‖ principal)), truncated
//! …     payload: round, handler state, flow id and start, the first round's trace
//!       context (trace id, span id, flags), carried answers (JSON), question pins
//! ```
//!
//! Fields an attacker can choose freely (target, arguments) get full 256-bit digests; the
//! others are server-controlled or per-token salted and are truncated to 128 bits. Each field
//! has its own digest so a mismatch is logged with a specific reason. A token carrying a short
//! handler state and no principal is about 230 characters with a short key id; one with a
//! principal, a carried answer and its question pin about 420.
//!
//! The codec is pluggable ([`StateCodec`]): the sealer builds and checks the claims itself,
//! so a key-management-service codec only has to turn bytes into an authenticated string and
//! back.
//!
//! # Performance
//!
//! Build one [`StateBinding`] per request (it hashes the method, target, arguments and
//! principal once, a few hundred nanoseconds) and use it for both [`StateSealer::open`] and
//! [`StateSealer::seal`]. A seal or an open of a small payload costs well under a
//! microsecond; the ChaCha20 keystream and Poly1305 dominate. See `benches/state.rs`.

mod clock;
mod codec;
mod digest;
mod envelope;
mod key;
mod payload;
mod reload;
mod sealer;

pub use clock::{Clock, ManualClock, SystemClock};
pub use codec::{CodecError, StateCodec, TOKEN_FORMAT_VERSION, UnsealError, XChaChaCodec};
pub(crate) use digest::args_digest_of_object;
pub use digest::{ArgsDigest, QuestionDigest, args_digest, canonical_json, question_digest};
pub use envelope::{
    DataKey, ENVELOPE_FORMAT_VERSION, EnvelopeCodec, EnvelopeConfig, KeyService, KeyServiceError,
    LocalKeyService, MAX_WRAPPED_KEY_LEN,
};
pub use key::{
    KeyError, KeyId, KeyRing, MAX_KEY_ID_LEN, MAX_KEY_MATERIAL_LEN, MIN_KEY_MATERIAL_LEN, StateKey,
};
pub use payload::{Flow, FlowId, FlowTrace, InvalidFlowId, StatePayload};
#[cfg(unix)]
pub use reload::ReloadOnSignal;
pub use reload::{KeySource, ReloadableKeyRing};
pub use sealer::{
    ConfigError, DEFAULT_CLOCK_SKEW, DEFAULT_MAX_TOKEN_LEN, DEFAULT_TTL, INVALID_STATE_MESSAGE,
    MAX_TTL, MIN_MAX_TOKEN_LEN, RejectReason, SealError, StateBinding, StateRejection, StateSealer,
    StateSealerBuilder,
};
