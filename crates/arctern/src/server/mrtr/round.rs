//! One round of a multi round-trip request, as the request-state boundary verified it.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use arctern_types::mrtr::InputRequest;
use serde_json::Value;

use crate::state::{Flow, FlowId, QuestionDigest};

/// Which round of a multi round-trip request a request is, and which questions the answers
/// it carries answer.
///
/// The server's request-state boundary builds it before the handler runs (it is part of the
/// [`RequestContext`](crate::server::RequestContext)) from the sealed `requestState`:
///
/// - [`number`](Self::number): how many `input_required` rounds came before this request;
///   the server refuses a request past [`MrtrLimits::max_rounds`](super::MrtrLimits).
/// - The request's `inputResponses` hold every answer of the flow so far: the answers to the
///   questions of the previous round, and the answers of earlier rounds, which the server
///   carries forward in the sealed state. An answer arrives only if its key was asked in the
///   round that minted the state (or was carried from an earlier round and not asked
///   again); anything else a client sends is dropped.
/// - Each of those answers is pinned to the exact question it answers:
///   [`answers`](Self::answers) tells whether the answer under a key answers a given
///   question, so a handler can refuse an answer to a question it no longer asks in that
///   form.
///
/// - [`flow_id`](Self::flow_id): the flow the round belongs to, the same in every round.
///
/// Without request-state sealing (an explicit opt-out) nothing is verified: the number is
/// always 0, nothing is pinned, there is no flow, and `inputResponses` arrive as the client
/// sent them.
#[derive(Debug, Clone, Default)]
pub struct Round {
    number: u32,
    pins: BTreeMap<String, QuestionDigest>,
    verified: bool,
    /// The flow: carried from earlier rounds, or minted when first needed in round 0
    /// (`None` inside if the random generator failed).
    flow: OnceLock<Option<Flow>>,
}

impl Round {
    /// A round the boundary verified, of the carried `flow` (`None` in a first round).
    pub(crate) fn verified(
        number: u32,
        pins: BTreeMap<String, QuestionDigest>,
        flow: Option<Flow>,
    ) -> Self {
        let slot = OnceLock::new();
        if let Some(flow) = flow {
            let _ = slot.set(Some(flow));
        }
        Round {
            number,
            pins,
            verified: true,
            flow: slot,
        }
    }

    /// The id of the flow this round belongs to: random, minted in the flow's first round
    /// and carried sealed, so the same in every round of one flow (and different in every
    /// other flow). Key a side effect's idempotency on it. `None` when the round is not
    /// verified (sealing is off) or the request is not a multi round-trip method.
    pub fn flow_id(&self) -> Option<FlowId> {
        self.flow().map(|f| f.id)
    }

    /// When the flow's first round ran (see [`flow_id`](Self::flow_id)).
    pub fn flow_started(&self) -> Option<SystemTime> {
        self.flow().map(|f| f.started())
    }

    /// The flow, minted on first use in a verified first round.
    pub(crate) fn flow(&self) -> Option<Flow> {
        if !self.verified {
            return None;
        }
        *self.flow.get_or_init(Flow::start)
    }

    /// How many `input_required` rounds came before this request (0 on a first request).
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Whether the server verified this round (request-state sealing is on, or the request
    /// is served on a legacy session, where rounds never leave the server).
    pub fn is_verified(&self) -> bool {
        self.verified
    }

    /// Whether the answer under `key` answers exactly `question` (the question asked under
    /// that key, rendered the same). Always `false` in an unverified round.
    pub fn answers(&self, key: &str, question: &InputRequest) -> bool {
        self.pins
            .get(key)
            .is_some_and(|pin| *pin == digest_of(key, question))
    }

    /// The digest of the question the answer under `key` answers.
    pub(crate) fn pin(&self, key: &str) -> Option<&QuestionDigest> {
        self.pins.get(key)
    }
}

/// Most question keys whose last question a thread remembers (see [`digest_of`]).
const DIGEST_MEMO_KEYS: usize = 256;

/// The last question a thread saw under one key: its digest, and its JSON once a round
/// that asks it has been written.
struct Remembered {
    question: InputRequest,
    digest: QuestionDigest,
    json: OnceLock<Box<[u8]>>,
}

thread_local! {
    /// Per thread: question key → the last question asked under it, with its digest.
    static DIGEST_MEMO: RefCell<HashMap<String, Arc<Remembered>>> =
        RefCell::new(HashMap::new());
}

/// The remembered entry of `key`, if it holds this very question.
fn remembered(key: &str, request: &InputRequest) -> Option<Arc<Remembered>> {
    DIGEST_MEMO
        .with_borrow(|memo| memo.get(key).cloned())
        .filter(|hit| hit.question == *request)
}

/// The digest that pins answers to `request`, asked under `key`.
///
/// Rendering a question to canonical JSON and hashing it is a good part of the cost of a
/// round, and a handler usually asks the same question under the same key round after
/// round and call after call. So each thread remembers the last question seen under each
/// key with its digest, and reuses the digest when the question compares equal (equal
/// questions have the same canonical JSON, so the same digest).
pub(crate) fn digest_of(key: &str, request: &InputRequest) -> QuestionDigest {
    if let Some(hit) = remembered(key, request) {
        return hit.digest;
    }
    let params = serde_json::to_value(request)
        .ok()
        .and_then(|mut v| v.get_mut("params").map(Value::take))
        .unwrap_or(Value::Null);
    let digest = crate::state::question_digest(request.method(), &params);
    DIGEST_MEMO.with_borrow_mut(|memo| {
        if memo.len() < DIGEST_MEMO_KEYS || memo.contains_key(key) {
            let entry = Remembered {
                question: request.clone(),
                digest,
                json: OnceLock::new(),
            };
            memo.insert(key.to_owned(), Arc::new(entry));
        }
    });
    digest
}

/// Appends the JSON of `request`, asked under `key`, to `out`: serialized once per
/// remembered question (see [`digest_of`]) and copied after that, as list pages are.
pub(crate) fn write_question(
    out: &mut Vec<u8>,
    key: &str,
    request: &InputRequest,
) -> Result<(), serde_json::Error> {
    let hit = remembered(key, request);
    if let Some(json) = hit.as_ref().and_then(|hit| hit.json.get()) {
        out.extend_from_slice(json);
        return Ok(());
    }
    let start = out.len();
    serde_json::to_writer(&mut *out, request)?;
    if let Some(hit) = hit {
        let _ = hit.json.set(out[start..].into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use arctern_types::elicitation::{PrimitiveSchemaDefinition, RequestedSchema};

    use super::*;

    fn uncached(request: &InputRequest) -> QuestionDigest {
        let params = serde_json::to_value(request).unwrap()["params"].take();
        crate::state::question_digest(request.method(), &params)
    }

    fn form(message: &str, field: &str) -> InputRequest {
        InputRequest::elicit_form(
            message,
            RequestedSchema::new().required(field, PrimitiveSchemaDefinition::boolean()),
        )
    }

    #[test]
    fn memoised_digests_equal_fresh_ones_and_follow_changed_questions() {
        let first = form("Go ahead?", "ok");
        let digest = digest_of("memo-test", &first);
        assert_eq!(digest, uncached(&first));
        // Remembered: the same question gives the same digest.
        assert_eq!(digest_of("memo-test", &first.clone()), digest);

        // Another question under the same key is hashed afresh, and replaces the memo.
        let reworded = form("Really go ahead?", "ok");
        let other_field = form("Go ahead?", "yes");
        for changed in [&reworded, &other_field] {
            let changed_digest = digest_of("memo-test", changed);
            assert_ne!(changed_digest, digest);
            assert_eq!(changed_digest, uncached(changed));
        }
        assert_eq!(digest_of("memo-test", &first), digest);

        // Keys do not share memos: the same question under two keys has one digest.
        assert_eq!(digest_of("memo-test-2", &first), digest);
    }

    #[test]
    fn the_memo_stays_bounded() {
        let question = form("Go ahead?", "ok");
        for i in 0..DIGEST_MEMO_KEYS + 50 {
            digest_of(&format!("bounded-{i}"), &question);
        }
        let remembered = DIGEST_MEMO.with_borrow(HashMap::len);
        assert!(
            remembered <= DIGEST_MEMO_KEYS,
            "{remembered} keys remembered"
        );
        // Past the bound, digests are still right, just not remembered.
        assert_eq!(digest_of("bounded-late", &question), uncached(&question));
    }

    #[test]
    fn a_round_tells_which_question_an_answer_answers() {
        let asked = form("Go ahead?", "ok");
        let pins = BTreeMap::from([("confirm".to_owned(), digest_of("confirm", &asked))]);
        let round = Round::verified(1, pins, None);
        assert!(round.answers("confirm", &asked));
        assert!(!round.answers("confirm", &form("Really?", "ok")));
        assert!(!round.answers("other", &asked));
        assert!(!Round::default().answers("confirm", &asked));
    }
}
