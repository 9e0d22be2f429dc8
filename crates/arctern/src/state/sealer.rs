//! The sealing boundary: binding, claims, seal and open.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arctern_types::ErrorObject;
use rand::Rng as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::clock::{Clock, SystemClock};
use super::codec::{CodecError, StateCodec, UnsealError, XChaChaCodec};
use super::digest::{ArgsDigest, args_digest};
use super::key::{KeyError, KeyRing, StateKey};
use super::payload::{self, EncodeError, Reader, StatePayload};

/// The one message every rejected `requestState` gets on the wire, whatever the cause.
pub const INVALID_STATE_MESSAGE: &str = "Invalid or expired requestState";
/// Default lifetime of a sealed token (per round): 600 seconds.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// Default maximum token length, in bytes (8 KiB), both for sealing and for accepting.
pub const DEFAULT_MAX_TOKEN_LEN: usize = 8 * 1024;
/// Default tolerance for clocks of sibling servers running ahead: 60 seconds.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);
/// Longest accepted TTL (one year).
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// Smallest accepted maximum token length.
pub const MIN_MAX_TOKEN_LEN: usize = 256;

/// Version of the claims layout inside the seal.
const CLAIMS_VERSION: u8 = 1;
const METHOD_LABEL: &[u8] = b"arctern/state/v1/method\0";
const TARGET_LABEL: &[u8] = b"arctern/state/v1/target\0";
const AUDIENCE_LABEL: &[u8] = b"arctern/state/v1/audience\0";
const PRINCIPAL_LABEL: &[u8] = b"arctern/state/v1/principal\0";
/// Short on purpose: label, salt and principal digest fit one SHA-256 block (≤ 55 bytes), and
/// this hash runs on every seal and open.
const PRINCIPAL_TAG_LABEL: &[u8] = b"arctern/ptag1\0";

/// Method digests of the three methods that carry `requestState`, computed once.
fn method_digest(method: &str) -> [u8; 16] {
    static KNOWN: OnceLock<[[u8; 16]; 3]> = OnceLock::new();
    const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];
    match METHODS.iter().position(|m| *m == method) {
        Some(i) => KNOWN.get_or_init(|| METHODS.map(|m| digest16(METHOD_LABEL, m)))[i],
        None => digest16(METHOD_LABEL, method),
    }
}

fn digest16(label: &[u8], value: &str) -> [u8; 16] {
    let full = digest32(label, value);
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

fn digest32(label: &[u8], value: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(label);
    hasher.update(value.as_bytes());
    hasher.finalize().into()
}

fn principal_tag(salt: &[u8; 8], principal: &[u8; 32]) -> [u8; 16] {
    const _: () = assert!(PRINCIPAL_TAG_LABEL.len() + 8 + 32 <= 55);
    let mut hasher = Sha256::new();
    hasher.update(PRINCIPAL_TAG_LABEL);
    hasher.update(salt);
    hasher.update(principal);
    let full: [u8; 32] = hasher.finalize().into();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// What a token is bound to: the request it was minted for and who asked.
///
/// Build one per incoming request (the digests are computed once, here) and use it both to
/// [`open`](StateSealer::open) the inbound token and to [`seal`](StateSealer::seal) the next
/// one. Only digests are kept: the principal never appears in clear, in memory or in tokens.
///
/// ```
/// use arctern::state::StateBinding;
/// use serde_json::json;
///
/// let args = json!({"region": "eu", "size": 3});
/// let binding = StateBinding::for_request("tools/call", "provision", Some(&args))
///     .with_principal("alice");
/// ```
#[derive(Clone)]
pub struct StateBinding {
    method: Cow<'static, str>,
    method_digest: [u8; 16],
    target_digest: [u8; 32],
    args: ArgsDigest,
    audience: Option<[u8; 16]>,
    principal: Option<[u8; 32]>,
}

impl StateBinding {
    /// A binding to `method` (`tools/call`, `prompts/get`, `resources/read`), `target` (the
    /// tool or prompt name, or the resource URI) and an argument digest (see
    /// [`args_digest`]; use `args_digest(None)` for `resources/read`).
    pub fn new(method: impl Into<Cow<'static, str>>, target: &str, args: ArgsDigest) -> Self {
        let method = method.into();
        StateBinding {
            method_digest: method_digest(&method),
            method,
            target_digest: digest32(TARGET_LABEL, target),
            args,
            audience: None,
            principal: None,
        }
    }

    /// Like [`new`](Self::new), computing the argument digest from `params.arguments`.
    pub fn for_request(
        method: impl Into<Cow<'static, str>>,
        target: &str,
        arguments: Option<&Value>,
    ) -> Self {
        Self::new(method, target, args_digest(arguments))
    }

    /// Binds the token to an authenticated principal (for example the OAuth `sub`, or
    /// `client_id` and `sub` joined unambiguously). A token minted with a principal only opens
    /// for the same principal, and a token minted without one only opens without one.
    #[must_use]
    pub fn with_principal(mut self, principal: &str) -> Self {
        self.principal = Some(digest32(PRINCIPAL_LABEL, principal));
        self
    }

    /// [`with_principal`](Self::with_principal) when `principal` is `Some`, else unchanged.
    #[must_use]
    pub fn with_principal_opt(self, principal: Option<&str>) -> Self {
        match principal {
            Some(p) => self.with_principal(p),
            None => self,
        }
    }

    /// Overrides the sealer's audience for this request (for example one process serving
    /// several tenants under one key ring). Without it the sealer's audience applies.
    #[must_use]
    pub fn with_audience(mut self, audience: &str) -> Self {
        self.audience = Some(digest16(AUDIENCE_LABEL, audience));
        self
    }

    /// The method this binding is for.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The argument digest.
    pub fn args_digest(&self) -> &ArgsDigest {
        &self.args
    }

    /// Whether a principal is bound.
    pub fn has_principal(&self) -> bool {
        self.principal.is_some()
    }
}

impl fmt::Debug for StateBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateBinding")
            .field("method", &self.method)
            .field("args", &self.args)
            .field("audience_override", &self.audience.is_some())
            .field("principal", &self.principal.map(|_| "<bound>"))
            .finish_non_exhaustive()
    }
}

/// Why a `requestState` was rejected. For logs and tests only: the client always gets
/// [`INVALID_STATE_MESSAGE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// Longer than the maximum token length (checked before any decoding or crypto).
    TooLarge,
    /// Empty, not base64url, truncated or too short.
    Malformed,
    /// Unknown token format version.
    UnsupportedVersion,
    /// The token's key id is not in the key ring (another server, a retired key, or a
    /// process-local key from before a restart).
    UnknownKey,
    /// Authentication failed: the token was modified.
    AuthFailed,
    /// A custom codec refused the token for a reason of its own (logged separately).
    Codec,
    /// Authentic, but the claims inside are not well-formed.
    MalformedClaims,
    /// Authentic, but the claims layout version is unknown.
    UnsupportedClaimsVersion,
    /// The time window has passed.
    Expired,
    /// The expiry lies further ahead than this server's TTL plus clock skew allows (a
    /// sibling with a clock running ahead, or a longer TTL).
    ExpiryTooFar,
    /// Minted for another method.
    WrongMethod,
    /// Minted for another tool, prompt or resource.
    WrongTarget,
    /// Minted for other arguments.
    WrongArguments,
    /// Minted by a server with another audience.
    WrongAudience,
    /// Minted for another principal, or bound versus unbound.
    WrongPrincipal,
    /// Genuine, but its flow has completed (or another round of it is running), and the
    /// server keeps a one-time store.
    Replayed,
}

impl RejectReason {
    /// A stable `snake_case` name, for structured logs and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::TooLarge => "too_large",
            RejectReason::Malformed => "malformed",
            RejectReason::UnsupportedVersion => "unsupported_version",
            RejectReason::UnknownKey => "unknown_key",
            RejectReason::AuthFailed => "auth_failed",
            RejectReason::Codec => "codec",
            RejectReason::MalformedClaims => "malformed_claims",
            RejectReason::UnsupportedClaimsVersion => "unsupported_claims_version",
            RejectReason::Expired => "expired",
            RejectReason::ExpiryTooFar => "expiry_too_far",
            RejectReason::WrongMethod => "wrong_method",
            RejectReason::WrongTarget => "wrong_target",
            RejectReason::WrongArguments => "wrong_arguments",
            RejectReason::WrongAudience => "wrong_audience",
            RejectReason::WrongPrincipal => "wrong_principal",
            RejectReason::Replayed => "replayed",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<UnsealError> for RejectReason {
    fn from(err: UnsealError) -> Self {
        match err {
            UnsealError::Malformed => RejectReason::Malformed,
            UnsealError::UnsupportedVersion(_) => RejectReason::UnsupportedVersion,
            UnsealError::UnknownKey => RejectReason::UnknownKey,
            UnsealError::AuthFailed => RejectReason::AuthFailed,
            UnsealError::Other(_) => RejectReason::Codec,
        }
    }
}

/// A rejected `requestState`.
///
/// Its `Display` and its JSON-RPC form are always exactly [`INVALID_STATE_MESSAGE`] with code
/// `-32602`, so nothing about the cause reaches the client; [`reason`](Self::reason) tells
/// logs and tests what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateRejection {
    reason: RejectReason,
}

impl StateRejection {
    /// A rejection for `reason` (for example by a server layer that gets a non-string
    /// `requestState`, which it should report as [`RejectReason::Malformed`]).
    pub const fn new(reason: RejectReason) -> Self {
        StateRejection { reason }
    }

    /// Why the state was rejected.
    pub const fn reason(&self) -> RejectReason {
        self.reason
    }

    /// The JSON-RPC error: `{"code":-32602,"message":"Invalid or expired requestState"}`.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::invalid_params(INVALID_STATE_MESSAGE)
    }
}

impl fmt::Display for StateRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(INVALID_STATE_MESSAGE)
    }
}

impl std::error::Error for StateRejection {}

impl From<StateRejection> for ErrorObject {
    fn from(rejection: StateRejection) -> Self {
        rejection.to_error_object()
    }
}

/// Sealing failed: the server's own fault (a handler minted too much state, or the codec
/// failed), answered as an internal error, except when the client's answers of the round
/// are what made the state too large ([`TooLarge`](Self::TooLarge)): the engine answers
/// that with `-32602`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The token would be longer than the maximum token length.
    #[error("sealed requestState would be {len} bytes, over the maximum of {max}")]
    TooLarge {
        /// The size reached (a lower bound when the plaintext alone was already too large).
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// An answer is nested deeper than 256 levels.
    #[error("requestState answers are nested too deeply")]
    TooDeep,
    /// The codec failed.
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// A [`StateSealer`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The audience is empty or only whitespace.
    #[error("request-state audience must not be empty")]
    EmptyAudience,
    /// The TTL is below one second or above [`MAX_TTL`].
    #[error("request-state ttl must be between 1 second and {} seconds", MAX_TTL.as_secs())]
    InvalidTtl,
    /// The maximum token length is below [`MIN_MAX_TOKEN_LEN`].
    #[error("request-state max token length must be at least {MIN_MAX_TOKEN_LEN} bytes")]
    MaxTokenLenTooSmall,
    /// No key could be generated for the default codec.
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// Seals and opens `requestState` tokens: the security boundary between handlers, which see
/// plaintext [`StatePayload`]s, and the wire, which sees opaque tokens.
///
/// Cheap to clone (shared internals); share one per server. See the
/// [module documentation](super) for the threat model and format.
///
/// ```
/// use arctern::state::{StateBinding, StatePayload, StateSealer};
///
/// let sealer = StateSealer::ephemeral("my-server").unwrap();
/// let binding = StateBinding::for_request("tools/call", "provision", None);
/// let token = sealer.seal(&binding, &StatePayload::with_state("step-2")).unwrap();
/// let back = sealer.open(&token, &binding).unwrap();
/// assert_eq!(back.state.as_deref(), Some("step-2"));
///
/// let other = StateBinding::for_request("tools/call", "deprovision", None);
/// let err = sealer.open(&token, &other).unwrap_err();
/// assert_eq!(err.to_string(), "Invalid or expired requestState");
/// ```
#[derive(Clone)]
pub struct StateSealer {
    codec: Arc<dyn StateCodec>,
    clock: Arc<dyn Clock>,
    audience: Arc<str>,
    audience_digest: [u8; 16],
    ttl_secs: u64,
    skew_secs: u64,
    max_token_len: usize,
    ephemeral: bool,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateSealer")
            .field("codec", &self.codec)
            .field("clock", &self.clock)
            .field("audience", &self.audience)
            .field("ttl_secs", &self.ttl_secs)
            .field("skew_secs", &self.skew_secs)
            .field("max_token_len", &self.max_token_len)
            .field("ephemeral", &self.ephemeral)
            .finish()
    }
}

/// Builds a [`StateSealer`]; see [`StateSealer::builder`].
#[derive(Debug)]
pub struct StateSealerBuilder {
    audience: String,
    codec: Option<Arc<dyn StateCodec>>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    skew: Duration,
    max_token_len: usize,
}

impl StateSealerBuilder {
    /// Seal with the default [`XChaChaCodec`] under this ring (first key seals, all verify).
    #[must_use]
    pub fn keys(self, ring: KeyRing) -> Self {
        self.codec(XChaChaCodec::new(&ring))
    }

    /// Seal with the default codec under one key.
    #[must_use]
    pub fn key(self, key: StateKey) -> Self {
        self.keys(KeyRing::single(key))
    }

    /// Use a custom codec (for example backed by a key-management service).
    #[must_use]
    pub fn codec(self, codec: impl StateCodec) -> Self {
        self.shared_codec(Arc::new(codec))
    }

    /// Use a shared custom codec.
    #[must_use]
    pub fn shared_codec(mut self, codec: Arc<dyn StateCodec>) -> Self {
        self.codec = Some(codec);
        self
    }

    /// The time source (default [`SystemClock`]); tests use a
    /// [`ManualClock`](super::ManualClock).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Lifetime of each sealed token, per round (default [`DEFAULT_TTL`]; whole seconds,
    /// between 1 s and [`MAX_TTL`]).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How far ahead of this server's clock a sibling's clock may run (default
    /// [`DEFAULT_CLOCK_SKEW`]). A token whose expiry lies more than TTL + skew ahead is
    /// rejected ([`RejectReason::ExpiryTooFar`]).
    #[must_use]
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.skew = skew;
        self
    }

    /// Maximum token length in bytes (default [`DEFAULT_MAX_TOKEN_LEN`], at least
    /// [`MIN_MAX_TOKEN_LEN`]). Longer inbound tokens are rejected before any decoding; sealing
    /// a payload that would exceed it is a [`SealError::TooLarge`].
    #[must_use]
    pub fn max_token_len(mut self, max: usize) -> Self {
        self.max_token_len = max;
        self
    }

    /// Builds the sealer. Without [`keys`](Self::keys) or [`codec`](Self::codec) it gets a
    /// fresh process-local key ([`StateSealer::is_ephemeral`]).
    pub fn build(self) -> Result<StateSealer, ConfigError> {
        let audience = self.audience.trim();
        if audience.is_empty() {
            return Err(ConfigError::EmptyAudience);
        }
        let ttl_secs = self.ttl.as_secs();
        if ttl_secs == 0 || self.ttl > MAX_TTL {
            return Err(ConfigError::InvalidTtl);
        }
        if self.max_token_len < MIN_MAX_TOKEN_LEN {
            return Err(ConfigError::MaxTokenLenTooSmall);
        }
        let (codec, ephemeral) = match self.codec {
            Some(codec) => (codec, false),
            None => {
                let ring = KeyRing::single(StateKey::try_generate()?);
                (
                    Arc::new(XChaChaCodec::new(&ring)) as Arc<dyn StateCodec>,
                    true,
                )
            }
        };
        Ok(StateSealer {
            codec,
            clock: self.clock,
            audience_digest: digest16(AUDIENCE_LABEL, &self.audience),
            audience: self.audience.into(),
            ttl_secs,
            skew_secs: self.skew.as_secs(),
            max_token_len: self.max_token_len,
            ephemeral,
        })
    }
}

/// Fixed-size part of the claims, in order after the version byte.
struct Claims<'a> {
    expiry: u64,
    method: [u8; 16],
    target: [u8; 32],
    args: [u8; 32],
    audience: [u8; 16],
    principal: Option<([u8; 8], [u8; 16])>,
    payload: &'a [u8],
}

impl<'a> Claims<'a> {
    fn parse(input: &'a [u8]) -> Result<Self, RejectReason> {
        let mut r = Reader(input);
        let version = r.byte().ok_or(RejectReason::MalformedClaims)?;
        if version != CLAIMS_VERSION {
            return Err(RejectReason::UnsupportedClaimsVersion);
        }
        let bad = || RejectReason::MalformedClaims;
        let expiry = u64::from_be_bytes(r.array().ok_or_else(bad)?);
        let method = r.array().ok_or_else(bad)?;
        let target = r.array().ok_or_else(bad)?;
        let args = r.array().ok_or_else(bad)?;
        let audience = r.array().ok_or_else(bad)?;
        let principal = match r.byte().ok_or_else(bad)? {
            0 => None,
            1 => Some((r.array().ok_or_else(bad)?, r.array().ok_or_else(bad)?)),
            _ => return Err(bad()),
        };
        Ok(Claims {
            expiry,
            method,
            target,
            args,
            audience,
            principal,
            payload: r.0,
        })
    }
}

/// Length of the claims before the payload, without and with a principal.
const CLAIMS_FIXED_LEN: usize = 1 + 8 + 16 + 32 + 32 + 16 + 1;
const PRINCIPAL_LEN: usize = 8 + 16;

impl StateSealer {
    /// A builder for a sealer with this audience (usually the server's name; required, so a
    /// token minted by one server is never accepted by another that shares its keys).
    pub fn builder(audience: impl Into<String>) -> StateSealerBuilder {
        StateSealerBuilder {
            audience: audience.into(),
            codec: None,
            clock: Arc::new(SystemClock),
            ttl: DEFAULT_TTL,
            skew: DEFAULT_CLOCK_SKEW,
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
        }
    }

    /// A sealer with a fresh process-local key and default settings: right for a single
    /// process; tokens do not survive a restart and are not accepted by sibling processes.
    pub fn ephemeral(audience: impl Into<String>) -> Result<Self, ConfigError> {
        Self::builder(audience).build()
    }

    /// A sealer using this key ring, with default settings.
    pub fn with_keys(audience: impl Into<String>, ring: KeyRing) -> Result<Self, ConfigError> {
        Self::builder(audience).keys(ring).build()
    }

    /// Whether this sealer uses a process-local key generated at build time (tokens will not
    /// verify on another process, nor after a restart). Server layers use this to warn when
    /// such a sealer is exposed over HTTP, where a load balancer may spread a flow over
    /// several processes.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// The audience tokens are bound to.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Lifetime of each sealed token.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs)
    }

    /// How far apart clocks may be: a token is valid until its expiry plus this.
    pub fn clock_skew(&self) -> Duration {
        Duration::from_secs(self.skew_secs)
    }

    /// Maximum token length, in bytes.
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// The codec in use.
    pub fn codec(&self) -> &Arc<dyn StateCodec> {
        &self.codec
    }

    /// Seals `payload` for the request described by `binding`, valid for one TTL from now.
    pub fn seal(
        &self,
        binding: &StateBinding,
        payload: &StatePayload,
    ) -> Result<String, SealError> {
        let expiry = self.clock.now_unix().saturating_add(self.ttl_secs);
        let mut buf =
            Vec::with_capacity(CLAIMS_FIXED_LEN + PRINCIPAL_LEN + payload::size_hint(payload));
        buf.push(CLAIMS_VERSION);
        buf.extend_from_slice(&expiry.to_be_bytes());
        buf.extend_from_slice(&binding.method_digest);
        buf.extend_from_slice(&binding.target_digest);
        buf.extend_from_slice(binding.args.as_bytes());
        buf.extend_from_slice(binding.audience.as_ref().unwrap_or(&self.audience_digest));
        match &binding.principal {
            Some(principal) => {
                let mut salt = [0u8; 8];
                rand::rng().fill_bytes(&mut salt);
                buf.push(1);
                buf.extend_from_slice(&salt);
                buf.extend_from_slice(&principal_tag(&salt, principal));
            }
            None => buf.push(0),
        }
        payload::encode(payload, &mut buf).map_err(|err| match err {
            EncodeError::TooLarge => SealError::TooLarge {
                len: usize::MAX,
                max: self.max_token_len,
            },
            EncodeError::TooDeep => SealError::TooDeep,
        })?;
        // A token is never shorter than what it seals; don't spend crypto on a lost cause.
        if buf.len() > self.max_token_len {
            return Err(SealError::TooLarge {
                len: buf.len(),
                max: self.max_token_len,
            });
        }
        let token = self.codec.seal(&buf)?;
        if token.len() > self.max_token_len {
            return Err(SealError::TooLarge {
                len: token.len(),
                max: self.max_token_len,
            });
        }
        Ok(token)
    }

    /// Opens an inbound token for the request described by `binding`.
    ///
    /// Checks, in order: size, codec (encoding, version, key, authentication), claims layout,
    /// expiry, method, target, arguments, audience, principal. Any failure is logged (reason
    /// and method only, never token contents: every one at `debug`, and at most one every
    /// ten seconds at `warn` with the count held back, since clients send bad tokens at
    /// will) and returned as a [`StateRejection`].
    pub fn open(
        &self,
        token: &str,
        binding: &StateBinding,
    ) -> Result<StatePayload, StateRejection> {
        self.open_remaining(token, binding)
            .map(|(payload, _)| payload)
    }

    /// [`open`](Self::open), also returning how long the token has left to live (by this
    /// sealer's clock, rounded up to the second): what the one-time store must remember
    /// its flow for.
    pub(crate) fn open_remaining(
        &self,
        token: &str,
        binding: &StateBinding,
    ) -> Result<(StatePayload, Duration), StateRejection> {
        self.open_inner(token, binding).map_err(|reason| {
            log_rejection(&binding.method, reason.as_str(), &reason);
            StateRejection::new(reason)
        })
    }

    fn open_inner(
        &self,
        token: &str,
        binding: &StateBinding,
    ) -> Result<(StatePayload, Duration), RejectReason> {
        if token.len() > self.max_token_len {
            return Err(RejectReason::TooLarge);
        }
        if token.is_empty() {
            return Err(RejectReason::Malformed);
        }
        let plaintext = self.codec.unseal(token).map_err(|err| {
            if let UnsealError::Other(detail) = &err {
                log_rejection(
                    &binding.method,
                    "codec",
                    &format_args!("codec error: {detail}"),
                );
            }
            RejectReason::from(err)
        })?;
        let claims = Claims::parse(&plaintext)?;

        let now = self.clock.now_unix();
        if now >= claims.expiry {
            return Err(RejectReason::Expired);
        }
        if claims.expiry - now > self.ttl_secs.saturating_add(self.skew_secs) {
            return Err(RejectReason::ExpiryTooFar);
        }
        // Plain comparisons: both sides are known to the client or authenticated by the seal;
        // only the salted principal tag is compared in constant time.
        if claims.method != binding.method_digest {
            return Err(RejectReason::WrongMethod);
        }
        if claims.target != binding.target_digest {
            return Err(RejectReason::WrongTarget);
        }
        if &claims.args != binding.args.as_bytes() {
            return Err(RejectReason::WrongArguments);
        }
        let audience = binding.audience.as_ref().unwrap_or(&self.audience_digest);
        if &claims.audience != audience {
            return Err(RejectReason::WrongAudience);
        }
        match (&claims.principal, &binding.principal) {
            (None, None) => {}
            (Some((salt, tag)), Some(principal)) => {
                if !bool::from(tag.ct_eq(&principal_tag(salt, principal))) {
                    return Err(RejectReason::WrongPrincipal);
                }
            }
            _ => return Err(RejectReason::WrongPrincipal),
        }
        let remaining = Duration::from_secs(claims.expiry - now);
        payload::decode(claims.payload)
            .map(|payload| (payload, remaining))
            .ok_or(RejectReason::MalformedClaims)
    }
}

/// Logs a rejected token: always at `debug`, and at `warn` at most once every ten seconds
/// (a client can send bad tokens at will; the log must not become its amplifier).
fn log_rejection(method: &str, reason: &str, detail: &dyn std::fmt::Display) {
    static WARN: crate::log_limit::RateLimited =
        crate::log_limit::RateLimited::new(std::time::Duration::from_secs(10));
    tracing::debug!(method, reason, "requestState rejected: {detail}");
    WARN.log(|suppressed| {
        tracing::warn!(
            method,
            reason,
            suppressed,
            "requestState rejected: {detail} (at most one such line every 10 s; all at debug)"
        );
    });
}
