//! The request-state boundary: the one place where multi round-trip state crosses between
//! the wire and the handler, for both eras and every handler style.
//!
//! On the way in ([`Boundary::open`]) it verifies and opens the sealed `requestState`,
//! keeps only the answers to the questions the previous round asked, adds the answers of
//! earlier rounds that the state carried, and hands the handler its plaintext state and a
//! [`Round`]. On the way out ([`Boundary::close`]) it checks an `input_required` round
//! against the limits and the client's capabilities, pins each question to its digest, and
//! seals the handler's state with every answer so far for the next round. On a legacy
//! session the shim keeps the same state in memory between rounds instead of sealing it
//! ([`Boundary::Legacy`]).
//!
//! A rejected token always gets the one fixed error ([`crate::state::INVALID_STATE_MESSAGE`]);
//! the reason goes to the log.

use std::collections::BTreeMap;

use arctern_types::ErrorObject;
use arctern_types::capabilities::ClientCapabilities;
use arctern_types::mrtr::{InputRequiredResult, InputResponse, InputResponses};
use arctern_types::result::ResultType;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::server::mrtr::{MrtrLimits, Round, digest_of};
use crate::server::wire::MrtrParams;
use crate::state::{
    FlowTrace, QuestionDigest, RejectReason, SealError, StateBinding, StatePayload, StateRejection,
    StateSealer,
};

/// What the boundary keeps of a request between opening its state and closing its round.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// Answers of earlier rounds, as the sealed state carried them (JSON).
    earlier: Map<String, Value>,
    /// This round's answers to the previous round's questions.
    fresh: InputResponses,
    /// Pins of every answer above: key → digest of the question it answers.
    pins: BTreeMap<String, QuestionDigest>,
    /// The round the request is.
    number: u32,
    /// The trace context of the flow's first round: carried from the state, or set by the
    /// telemetry while the first round runs.
    pub(crate) trace: Option<FlowTrace>,
    /// How long the presented token had left to live when it was opened (a sealed later
    /// round only).
    pub(crate) token_left: Option<std::time::Duration>,
}

/// How the state of a multi round-trip call travels between rounds.
pub(crate) enum Boundary<'a> {
    /// Sealed into `requestState` with this binding (the 2026-07-28 wire). The binding is
    /// computed only when it is needed: before [`open`](Self::open) for a request that
    /// carries a token, before [`close`](Self::close) for one whose handler asks
    /// ([`bind`](Self::bind)); most calls need neither.
    Sealed(&'a StateSealer, Option<StateBinding>),
    /// Passed through as the client sent it: sealing is turned off.
    Open,
    /// Kept in memory by the legacy shim between the rounds of one request.
    Legacy,
}

/// The next round's state, as the legacy shim keeps it.
pub(crate) type NextRound = StatePayload;

impl Boundary<'_> {
    /// Whether a binding must be set before [`open`](Self::open) or
    /// [`close`](Self::close) can use it.
    pub(crate) fn needs_binding(&self) -> bool {
        matches!(self, Boundary::Sealed(_, None))
    }

    /// Sets the binding of a sealed boundary (computed late: see [`Boundary::Sealed`]).
    pub(crate) fn bind(&mut self, binding: StateBinding) {
        if let Boundary::Sealed(_, slot) = self {
            *slot = Some(binding);
        }
    }

    /// Opens the request state in `params` (which then hold the handler's plaintext state
    /// and every answer so far) and returns the round.
    ///
    /// `previous` is the legacy shim's state of the previous round; on the modern wire the
    /// state comes from `params`. Fails only for a rejected token (whose error object is
    /// the one fixed error).
    pub(crate) fn open(
        &self,
        params: &mut dyn MrtrParams,
        previous: Option<NextRound>,
    ) -> Result<(Round, Carried), StateRejection> {
        let mut token_left = None;
        let payload = match self {
            Boundary::Open => return Ok((Round::default(), Carried::default())),
            Boundary::Legacy => {
                // Neither exists on the legacy wire: on the first round whatever a client put
                // there is dropped; later, the shim's state of the previous round stands in,
                // with the answers the shim collected.
                params.request_state_mut().take();
                if previous.is_none() {
                    params.input_responses_mut().take();
                }
                previous
            }
            Boundary::Sealed(sealer, binding) => match params.request_state_mut().take() {
                Some(token) => {
                    // The engine binds before opening a token; were it ever not to, the token
                    // opens for no one (fail closed) rather than unchecked.
                    let Some(binding) = binding else {
                        tracing::error!("a request state arrived before its binding was set");
                        return Err(StateRejection::new(RejectReason::WrongPrincipal));
                    };
                    let (payload, left) = sealer.open_remaining(&token, binding)?;
                    token_left = Some(left);
                    Some(payload)
                }
                None => None,
            },
        };
        let Some(payload) = payload else {
            // A first round: answers the client volunteers reach the handler unpinned (the
            // specification lets a server accept them); typed questions never take them.
            return Ok((
                Round::verified(0, BTreeMap::new(), None),
                Carried::default(),
            ));
        };
        let StatePayload {
            state,
            answers: earlier,
            asked: pins,
            round,
            flow,
            trace,
        } = payload;
        // Fresh answers: only to keys the previous round asked (pinned, and not carried).
        let mut fresh = params.input_responses_mut().take().unwrap_or_default();
        fresh.retain(|key, _| {
            let asked = pins.contains_key(key) && !earlier.contains_key(key);
            if !asked {
                tracing::debug!(
                    key,
                    "ignored an answer to a question the last round did not ask"
                );
            }
            asked
        });
        let mut all = fresh.clone();
        for (key, value) in &earlier {
            match InputResponse::deserialize(value) {
                Ok(answer) => {
                    all.insert(key.clone(), answer);
                }
                Err(e) => tracing::error!(key, error = %e, "a carried answer does not decode"),
            }
        }
        *params.request_state_mut() = state;
        *params.input_responses_mut() = (!all.is_empty()).then_some(all);
        let carried = Carried {
            earlier,
            fresh,
            pins: pins.clone(),
            number: round,
            trace,
            token_left,
        };
        Ok((Round::verified(round, pins, flow), carried))
    }

    /// Checks an `input_required` round and prepares the next one: on the modern wire the
    /// state is sealed into `ask.request_state`; on a legacy session it is returned for the
    /// shim to keep. `round` is the round that asked (it holds the flow).
    pub(crate) fn close(
        &self,
        carried: Carried,
        round: &Round,
        ask: &mut InputRequiredResult,
        client: &ClientCapabilities,
        limits: &MrtrLimits,
    ) -> Result<Option<NextRound>, ErrorObject> {
        let requests = ask.input_requests.as_ref().map_or(0, |r| r.len());
        if requests == 0 && ask.request_state.is_none() {
            tracing::error!(
                "a handler returned input_required with neither inputRequests nor requestState"
            );
            return Err(ErrorObject::internal_error(
                "Handler returned an input_required result with nothing to ask",
            ));
        }
        if requests > limits.max_input_requests {
            tracing::error!(
                requests,
                limit = limits.max_input_requests,
                "a handler asked more questions than the limit allows"
            );
            return Err(ErrorObject::internal_error(
                "The handler asked too many questions at once",
            ));
        }
        if carried.number.saturating_add(1) > limits.max_rounds {
            return Err(ErrorObject::invalid_params(format!(
                "The request needed more than {} rounds of input",
                limits.max_rounds
            )));
        }
        for request in ask.input_requests.iter().flat_map(|r| r.values()) {
            if !request.is_supported_by(client) {
                let required =
                    serde_json::to_value(request.required_capabilities()).unwrap_or_default();
                return Err(ErrorObject::missing_client_capability(required));
            }
        }
        ask.result_type = ResultType::INPUT_REQUIRED;
        if let Boundary::Open = self {
            return Ok(None);
        }
        let asked = ask.input_requests.as_ref();
        let is_asked = |key: &str| asked.is_some_and(|a| a.contains_key(key));
        // The questions of this round, pinned; and every earlier answer not asked again.
        let mut pins: BTreeMap<String, QuestionDigest> = asked
            .into_iter()
            .flatten()
            .map(|(key, request)| (key.clone(), digest_of(key, request)))
            .collect();
        let mut answers = carried.earlier;
        answers.retain(|key, _| !is_asked(key));
        let mut fresh_keys = Vec::new();
        for (key, answer) in carried.fresh {
            if !is_asked(&key)
                && let Ok(value) = serde_json::to_value(&answer)
            {
                fresh_keys.push(key.clone());
                answers.insert(key, value);
            }
        }
        for key in answers.keys() {
            if let Some(pin) = carried.pins.get(key) {
                pins.insert(key.clone(), *pin);
            }
        }
        let Some(flow) = round.flow() else {
            return Err(ErrorObject::internal_error(
                "Could not start a multi round-trip flow",
            ));
        };
        let next = StatePayload {
            state: ask.request_state.take(),
            answers,
            asked: pins,
            round: carried.number.saturating_add(1),
            flow: Some(flow),
            trace: carried.trace,
        };
        match self {
            Boundary::Sealed(_, None) => {
                tracing::error!("a round was sealed before its binding was set");
                Err(unbound())
            }
            Boundary::Sealed(sealer, Some(binding)) => match sealer.seal(binding, &next) {
                Ok(token) => {
                    ask.request_state = Some(token);
                    Ok(None)
                }
                Err(e @ SealError::TooLarge { .. })
                    if !fresh_keys.is_empty()
                        && fits_without(sealer, binding, &next, &fresh_keys) =>
                {
                    // The client's answers of this round are what does not fit: its error.
                    tracing::debug!(error = %e, "the client's answers are too large to carry");
                    Err(ErrorObject::invalid_params(
                        "The answers are too large to carry to the next round",
                    ))
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not seal request state");
                    Err(ErrorObject::internal_error(
                        "Could not seal the request state",
                    ))
                }
            },
            Boundary::Legacy => Ok(Some(next)),
            Boundary::Open => Ok(None),
        }
    }
}

/// Whether the next round's state would fit without this round's fresh answers (so that
/// they, not the handler's own state, made it too large). Only on that failure path.
fn fits_without(
    sealer: &StateSealer,
    binding: &StateBinding,
    next: &StatePayload,
    fresh: &[String],
) -> bool {
    let mut trimmed = next.clone();
    for key in fresh {
        trimmed.answers.remove(key);
        trimmed.asked.remove(key);
    }
    sealer.seal(binding, &trimmed).is_ok()
}

/// A sealed boundary used without its binding: a defect of the engine, never of the request.
fn unbound() -> ErrorObject {
    ErrorObject::internal_error("The server could not bind the request state")
}

/// The fixed rejection of a `requestState` that is not even a string (or is there twice):
/// the same error every sealer failure gets.
pub(crate) fn malformed_state() -> ErrorObject {
    tracing::debug!("rejected a requestState that is not a single string");
    StateRejection::new(RejectReason::Malformed).to_error_object()
}
