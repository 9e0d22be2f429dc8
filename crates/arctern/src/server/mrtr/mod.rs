//! Multi round-trip requests on the server: the input a handler received this round, the
//! questions it asks, and the interim result that carries them.

use std::fmt;
use std::sync::{Arc, Mutex};

use arctern_types::mrtr::{InputRequest, InputRequiredResult, InputResponses};
use indexmap::IndexMap;

use crate::server::context::RequestContext;
use crate::server::handler::HandlerResult;
use crate::server::outcome::Outcome;

/// Returned by a run-time question that is not answered yet; propagate it with `?` and the
/// server turns the call into an `input_required` round.
///
/// Converts into any error type that implements `From<Interrupt>` (including `anyhow::Error`
/// and `Box<dyn Error>`, since it is a `std::error::Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupt(());

impl fmt::Display for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("input required from the client")
    }
}

impl std::error::Error for Interrupt {}

/// Shared between a running handler body and the server: set when the body stops at a
/// question that is not answered yet.
#[derive(Clone, Default)]
pub(crate) struct InterruptSlot(Option<Arc<Mutex<Option<Interrupt>>>>);

impl InterruptSlot {
    pub(crate) fn take(&self) -> Option<Interrupt> {
        self.0
            .as_ref()
            .and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take())
    }
}

/// The multi round-trip input of one call: what the client answered, the verified state, and
/// the questions asked this round.
#[derive(Default)]
pub(crate) struct InputState {
    pub(crate) responses: Option<InputResponses>,
    pub(crate) request_state: Option<String>,
    pub(crate) asks: IndexMap<String, InputRequest>,
    pub(crate) interrupt: InterruptSlot,
}

impl InputState {
    pub(crate) fn new(responses: Option<InputResponses>, request_state: Option<String>) -> Self {
        InputState {
            responses,
            request_state,
            ..Default::default()
        }
    }

    pub(crate) fn interrupt_slot(&self) -> InterruptSlot {
        self.interrupt.clone()
    }

    /// The interim result asking every question queued this round.
    pub(crate) fn finish_round<T>(self, ctx: &RequestContext) -> HandlerResult<Outcome<T>> {
        let _ = ctx;
        let mut result = InputRequiredResult::default();
        if !self.asks.is_empty() {
            result.input_requests = Some(self.asks.into_iter().collect());
        }
        result.request_state = self.request_state;
        Ok(Outcome::InputRequired(result))
    }
}
