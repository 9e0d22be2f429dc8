//! The sealed payload and its compact binary framing.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

use super::digest::QuestionDigest;

/// What a sealed `requestState` carries for the multi round-trip layer, in plaintext form.
///
/// Everything here is produced by the server and authenticated by the seal, so once
/// [`StateSealer::open`](super::StateSealer::open) returns it, it can be trusted as the
/// server's own earlier output (for the same request, principal and audience, within the
/// time window).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatePayload {
    /// The handler's own state, if it set any (any string: JSON, an id, ...).
    pub state: Option<String>,
    /// Answers accepted in earlier rounds and carried forward: question key → answer JSON.
    pub answers: Map<String, Value>,
    /// Question pins: question key → digest of the exact question asked for it (see
    /// [`question_digest`](super::question_digest)). An answer is only used if the question
    /// that would be asked now still has the pinned digest; this rejects forged or unsolicited
    /// answers to questions that were never asked in this form.
    pub asked: BTreeMap<String, QuestionDigest>,
    /// How many `input_required` rounds preceded this one (0 on the first).
    pub round: u32,
    /// The flow these rounds belong to, minted in its first round.
    pub flow: Option<Flow>,
    /// The trace context of the flow's first round, when it was traced: later rounds link
    /// to it. Sealed like the rest, so the client never sees it.
    pub trace: Option<FlowTrace>,
}

/// The identity of one multi round-trip flow: random, minted in the flow's first round,
/// the same in every round of it. Shown as 32 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId([u8; 16]);

impl FlowId {
    /// A flow id from its 16 bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        FlowId(bytes)
    }

    /// The 16 bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// A fresh id from the operating system's generator; `None` if the generator fails.
    pub fn random() -> Option<Self> {
        use rand::TryRng as _;
        let mut bytes = [0u8; 16];
        match rand::rngs::SysRng.try_fill_bytes(&mut bytes) {
            Ok(()) => Some(FlowId(bytes)),
            Err(e) => {
                tracing::error!(error = %e, "the operating system's random generator failed");
                None
            }
        }
    }
}

impl std::fmt::Display for FlowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for FlowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlowId({self})")
    }
}

impl std::str::FromStr for FlowId {
    type Err = InvalidFlowId;

    /// Parses the 32 hex digits [`Display`](std::fmt::Display) writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.as_bytes();
        if hex.len() != 32 {
            return Err(InvalidFlowId);
        }
        let mut bytes = [0u8; 16];
        for (i, pair) in hex.chunks_exact(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| InvalidFlowId)?;
            bytes[i] = u8::from_str_radix(text, 16).map_err(|_| InvalidFlowId)?;
        }
        Ok(FlowId(bytes))
    }
}

/// A string that is not 32 hex digits, parsed as a [`FlowId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a flow id is 32 hex digits")]
pub struct InvalidFlowId;

/// A flow as the request state carries it: its id and when its first round ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flow {
    /// The flow's id.
    pub id: FlowId,
    /// When the flow's first round ran, in milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
}

impl Flow {
    /// A new flow starting now; `None` if the random generator fails.
    pub fn start() -> Option<Self> {
        let started_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Some(Flow {
            id: FlowId::random()?,
            started_unix_ms,
        })
    }

    /// When the flow's first round ran.
    pub fn started(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(self.started_unix_ms)
    }
}

/// The W3C trace context of a flow's first round (its server span), as the request state
/// carries it: no OpenTelemetry types, so the token format is the same with or without the
/// `otel` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowTrace {
    /// The trace id (16 bytes, never all zero when valid).
    pub trace_id: [u8; 16],
    /// The span id of the first round's server span (8 bytes).
    pub span_id: [u8; 8],
    /// The W3C trace flags (bit 0: sampled).
    pub flags: u8,
}

impl StatePayload {
    /// An empty payload (round 0, no state, no answers, no pins).
    pub fn new() -> Self {
        Self::default()
    }

    /// A payload carrying only the handler's own state.
    pub fn with_state(state: impl Into<String>) -> Self {
        StatePayload {
            state: Some(state.into()),
            ..Self::default()
        }
    }
}

const FLAG_STATE: u8 = 0b0000_0001;
const FLAG_FLOW: u8 = 0b0000_0010;
const FLAG_TRACE: u8 = 0b0000_0100;

/// Deepest JSON nesting carried in answers (twice serde_json's parser limit of 128, so any
/// parsed answer fits).
pub(crate) const MAX_DEPTH: usize = 256;

/// Why a payload could not be framed.
#[derive(Debug)]
pub(crate) enum EncodeError {
    /// A field exceeds what its length prefix can express.
    TooLarge,
    /// An answer is nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

// Value tags of the answers encoding.
const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_I64: u8 = 3;
const T_U64: u8 = 4;
const T_F64: u8 = 5;
const T_STRING: u8 = 6;
const T_ARRAY: u8 = 7;
const T_OBJECT: u8 = 8;

/// Appends the framing of `payload` to `out`:
///
/// ```text
/// u32  round
/// u8   flags (bit 0: state present; bit 1: flow present; bit 2: trace present; other
///      bits zero)
/// [u32 len, bytes]    state, UTF-8, when present
/// [16 bytes, u64]     flow id and start (Unix milliseconds), when present
/// [16, 8, 1 bytes]    trace id, span id and trace flags of the first round, when present
/// object              answers (see below)
/// u16 count, then per pin: u16 len, key bytes (UTF-8), 32-byte question digest
/// ```
///
/// JSON values are encoded as a tag byte and a body: null/false/true (0/1/2, no body), i64
/// (3, 8 bytes), u64 above `i64::MAX` (4, 8 bytes), f64 (5, its 8 IEEE-754 bytes: exact, unlike
/// a decimal round trip), string (6, u32 length, UTF-8), array (7, u32 count, values), object
/// (8, u32 count, then u32 key length, key, value per member). The answers map is written as
/// an object body without the tag. All integers are big-endian.
pub(crate) fn encode(payload: &StatePayload, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    out.extend_from_slice(&payload.round.to_be_bytes());
    let flags = if payload.state.is_some() {
        FLAG_STATE
    } else {
        0
    } | if payload.flow.is_some() { FLAG_FLOW } else { 0 }
        | if payload.trace.is_some() {
            FLAG_TRACE
        } else {
            0
        };
    out.push(flags);
    if let Some(state) = &payload.state {
        put_str(out, state)?;
    }
    if let Some(flow) = &payload.flow {
        out.extend_from_slice(flow.id.as_bytes());
        out.extend_from_slice(&flow.started_unix_ms.to_be_bytes());
    }
    if let Some(trace) = &payload.trace {
        out.extend_from_slice(&trace.trace_id);
        out.extend_from_slice(&trace.span_id);
        out.push(trace.flags);
    }
    put_object(out, &payload.answers, 0)?;
    let count = u16::try_from(payload.asked.len()).map_err(|_| EncodeError::TooLarge)?;
    out.extend_from_slice(&count.to_be_bytes());
    for (key, digest) in &payload.asked {
        let len = u16::try_from(key.len()).map_err(|_| EncodeError::TooLarge)?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(digest.as_bytes());
    }
    Ok(())
}

/// A rough size of the framing, to size buffers once.
pub(crate) fn size_hint(payload: &StatePayload) -> usize {
    let state = payload.state.as_ref().map_or(0, |s| 4 + s.len()) + 24 + 25;
    let answers = payload.answers.len() * 48;
    let asked: usize = payload.asked.keys().map(|k| 34 + k.len()).sum();
    4 + 1 + state + 4 + answers + 2 + asked
}

fn put_len(out: &mut Vec<u8>, len: usize) -> Result<(), EncodeError> {
    let len = u32::try_from(len).map_err(|_| EncodeError::TooLarge)?;
    out.extend_from_slice(&len.to_be_bytes());
    Ok(())
}

fn put_str(out: &mut Vec<u8>, s: &str) -> Result<(), EncodeError> {
    put_len(out, s.len())?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_object(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    depth: usize,
) -> Result<(), EncodeError> {
    put_len(out, map.len())?;
    for (key, value) in map {
        put_str(out, key)?;
        put_value(out, value, depth + 1)?;
    }
    Ok(())
}

fn put_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), EncodeError> {
    if depth > MAX_DEPTH {
        return Err(EncodeError::TooDeep);
    }
    match value {
        Value::Null => out.push(T_NULL),
        Value::Bool(false) => out.push(T_FALSE),
        Value::Bool(true) => out.push(T_TRUE),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push(T_I64);
                out.extend_from_slice(&i.to_be_bytes());
            } else if let Some(u) = n.as_u64() {
                out.push(T_U64);
                out.extend_from_slice(&u.to_be_bytes());
            } else {
                // serde_json numbers are finite; `as_f64` only fails with exotic features.
                let f = n.as_f64().ok_or(EncodeError::TooLarge)?;
                out.push(T_F64);
                out.extend_from_slice(&f.to_bits().to_be_bytes());
            }
        }
        Value::String(s) => {
            out.push(T_STRING);
            put_str(out, s)?;
        }
        Value::Array(items) => {
            out.push(T_ARRAY);
            put_len(out, items.len())?;
            for item in items {
                put_value(out, item, depth + 1)?;
            }
        }
        Value::Object(map) => {
            out.push(T_OBJECT);
            put_object(out, map, depth)?;
        }
    }
    Ok(())
}

/// Decodes what [`encode`] wrote; the whole input must be consumed. `None` on any defect.
pub(crate) fn decode(input: &[u8]) -> Option<StatePayload> {
    let mut r = Reader(input);
    let round = u32::from_be_bytes(r.array()?);
    let flags = r.byte()?;
    if flags & !(FLAG_STATE | FLAG_FLOW | FLAG_TRACE) != 0 {
        return None;
    }
    let state = if flags & FLAG_STATE != 0 {
        Some(r.str()?.to_owned())
    } else {
        None
    };
    let flow = if flags & FLAG_FLOW != 0 {
        Some(Flow {
            id: FlowId::from_bytes(r.array()?),
            started_unix_ms: u64::from_be_bytes(r.array()?),
        })
    } else {
        None
    };
    let trace = if flags & FLAG_TRACE != 0 {
        Some(FlowTrace {
            trace_id: r.array()?,
            span_id: r.array()?,
            flags: r.byte()?,
        })
    } else {
        None
    };
    let answers = r.object(0)?;
    let count = u16::from_be_bytes(r.array()?);
    let mut asked = BTreeMap::new();
    for _ in 0..count {
        let len = usize::from(u16::from_be_bytes(r.array()?));
        let key = std::str::from_utf8(r.take(len)?).ok()?.to_owned();
        let digest = QuestionDigest::from_bytes(r.array()?);
        if asked.insert(key, digest).is_some() {
            return None;
        }
    }
    if !r.0.is_empty() {
        return None;
    }
    Some(StatePayload {
        state,
        answers,
        asked,
        round,
        flow,
        trace,
    })
}

impl Reader<'_> {
    fn len(&mut self) -> Option<usize> {
        usize::try_from(u32::from_be_bytes(self.array()?)).ok()
    }

    fn str(&mut self) -> Option<&str> {
        let len = self.len()?;
        std::str::from_utf8(self.take(len)?).ok()
    }

    fn object(&mut self, depth: usize) -> Option<Map<String, Value>> {
        let count = self.len()?;
        let mut map = Map::new();
        for _ in 0..count {
            let key = self.str()?.to_owned();
            let value = self.value(depth + 1)?;
            if map.insert(key, value).is_some() {
                return None;
            }
        }
        Some(map)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.byte()? {
            T_NULL => Value::Null,
            T_FALSE => Value::Bool(false),
            T_TRUE => Value::Bool(true),
            T_I64 => Value::from(i64::from_be_bytes(self.array()?)),
            T_U64 => {
                let u = u64::from_be_bytes(self.array()?);
                // Canonical: small values are always written as i64.
                if i64::try_from(u).is_ok() {
                    return None;
                }
                Value::from(u)
            }
            T_F64 => {
                let f = f64::from_bits(u64::from_be_bytes(self.array()?));
                Value::Number(Number::from_f64(f)?)
            }
            T_STRING => Value::String(self.str()?.to_owned()),
            T_ARRAY => {
                let count = self.len()?;
                // Every value takes at least one byte: don't trust `count` for the allocation.
                let mut items = Vec::with_capacity(count.min(self.0.len()));
                for _ in 0..count {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            T_OBJECT => Value::Object(self.object(depth)?),
            _ => return None,
        })
    }
}

/// A bounds-checked cursor over a byte slice.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn roundtrip(p: &StatePayload) {
        let mut buf = Vec::new();
        encode(p, &mut buf).unwrap();
        assert_eq!(decode(&buf).as_ref(), Some(p));
        // Every strict prefix and every extension is rejected.
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut]).is_none(), "prefix {cut} accepted");
        }
        let mut longer = buf.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
    }

    #[test]
    fn empty_and_full() {
        roundtrip(&StatePayload::default());
        let mut p = StatePayload::with_state("s");
        p.round = 7;
        p.answers
            .insert("a".into(), json!({"action": "accept", "content": {"x": 1}}));
        p.asked.insert(
            "a".into(),
            super::super::question_digest("elicitation/create", &json!({})),
        );
        roundtrip(&p);
        p.flow = Some(Flow::start().unwrap());
        roundtrip(&p);
        p.state = None;
        roundtrip(&p);
        p.trace = Some(FlowTrace {
            trace_id: [0x4b; 16],
            span_id: [0x7a; 8],
            flags: 1,
        });
        roundtrip(&p);
        p.flow = None;
        p.state = Some("s".into());
        roundtrip(&p);
    }

    #[test]
    fn a_trace_costs_25_bytes_and_sits_after_the_flow() {
        let mut p = StatePayload::new();
        p.flow = Some(Flow {
            id: FlowId::from_bytes([1; 16]),
            started_unix_ms: 7,
        });
        let mut without = Vec::new();
        encode(&p, &mut without).unwrap();
        p.trace = Some(FlowTrace {
            trace_id: [2; 16],
            span_id: [3; 8],
            flags: 1,
        });
        let mut with = Vec::new();
        encode(&p, &mut with).unwrap();
        assert_eq!(with.len(), without.len() + 25);
        assert_eq!(with[4], FLAG_FLOW | FLAG_TRACE);
        // round(4) flags(1) flow(24), then the trace.
        assert_eq!(&with[29..45], &[2; 16]);
        assert_eq!(&with[45..53], &[3; 8]);
        assert_eq!(with[53], 1);
        // The flag without the bytes is refused.
        let mut flag_only = without.clone();
        flag_only[4] |= FLAG_TRACE;
        assert!(decode(&flag_only).is_none());
    }

    #[test]
    fn flow_ids_print_and_parse() {
        let id = FlowId::from_bytes([0xab; 16]);
        assert_eq!(id.to_string(), "ab".repeat(16));
        assert_eq!(id.to_string().parse::<FlowId>(), Ok(id));
        assert_eq!("ab".parse::<FlowId>(), Err(InvalidFlowId));
        assert_eq!("zz".repeat(16).parse::<FlowId>(), Err(InvalidFlowId));
        assert_ne!(FlowId::random(), FlowId::random());
    }

    #[test]
    fn numbers_are_exact() {
        let mut p = StatePayload::new();
        for (i, n) in [
            json!(-534008544.6375204),
            json!(0.1),
            json!(f64::MAX),
            json!(f64::MIN_POSITIVE),
            json!(-0.0),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.0),
        ]
        .into_iter()
        .enumerate()
        {
            p.answers.insert(i.to_string(), n);
        }
        roundtrip(&p);
        let mut buf = Vec::new();
        encode(&p, &mut buf).unwrap();
        let back = decode(&buf).unwrap();
        assert_eq!(back.answers["0"].as_f64(), Some(-534008544.6375204));
        assert!(back.answers["4"].as_f64().unwrap().is_sign_negative());
        assert!(back.answers["7"].is_f64());
    }

    #[test]
    fn depth_is_bounded() {
        let mut deep = json!(1);
        for _ in 0..MAX_DEPTH - 1 {
            deep = json!([deep]);
        }
        let mut p = StatePayload::new();
        p.answers.insert("d".into(), deep.clone());
        roundtrip(&p);
        p.answers.insert("d".into(), json!([deep]));
        assert!(matches!(
            encode(&p, &mut Vec::new()),
            Err(EncodeError::TooDeep)
        ));
    }

    #[test]
    fn non_canonical_or_bogus_values_rejected() {
        let mut p = StatePayload::new();
        p.answers.insert("k".into(), json!(5));
        let mut buf = Vec::new();
        encode(&p, &mut buf).unwrap();
        // round(4) flags(1) count(4) keylen(4) "k"(1) tag at 14.
        assert_eq!(buf[14], T_I64);
        let mut as_u64 = buf.clone();
        as_u64[14] = T_U64;
        assert!(decode(&as_u64).is_none());
        let mut bad_tag = buf.clone();
        bad_tag[14] = 9;
        assert!(decode(&bad_tag).is_none());
        let mut nan = buf.clone();
        nan[14] = T_F64;
        nan[15..23].copy_from_slice(&f64::NAN.to_bits().to_be_bytes());
        assert!(decode(&nan).is_none());
    }

    #[test]
    fn unknown_flags_rejected() {
        let mut buf = Vec::new();
        encode(&StatePayload::default(), &mut buf).unwrap();
        for bit in [0b1000, 0b1000_0000] {
            buf[4] = bit;
            assert!(decode(&buf).is_none());
        }
    }
}
