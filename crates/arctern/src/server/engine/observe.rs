//! The dispatch path's seam for telemetry: with the `otel` feature an [`Observation`]
//! gathers what a request's span and metrics say; without it, an empty stand-in whose
//! calls compile to nothing.

use arctern_types::RequestId;

use super::Server;
use super::dispatch::Served;
use super::method::Method;
use crate::server::connection::TransportKind;

#[cfg(feature = "otel")]
pub(crate) use crate::otel::{Observation, TargetKind};

#[cfg(feature = "otel")]
impl Observation {
    /// Runs `fut` inside the request's span (begun now if not yet), so that spans the
    /// handler makes nest under it; as it is when there is no span and no client's trace
    /// context to run it in.
    pub(crate) fn instrument<F: std::future::Future>(
        &mut self,
        fut: F,
    ) -> crate::otel::InContext<F> {
        crate::otel::InContext::new(fut, self.context())
    }
}

#[cfg(not(feature = "otel"))]
pub(crate) use off::{Observation, TargetKind};

#[cfg(not(feature = "otel"))]
mod off {
    use std::future::Future;
    use std::time::SystemTime;

    use arctern_types::{ErrorObject, RequestMeta};
    use serde_json::value::RawValue;

    use crate::server::connection::Reply;
    use crate::state::{FlowTrace, RejectReason};

    /// Without the `otel` feature: observes nothing.
    #[derive(Default)]
    pub(crate) struct Observation;

    #[derive(Clone, Copy)]
    pub(crate) enum TargetKind {
        Tool,
        Prompt,
        Resource,
    }

    #[allow(clippy::unused_self)]
    impl Observation {
        #[inline]
        pub(crate) fn target(&mut self, _: TargetKind, _: &str) {}
        #[inline]
        pub(crate) fn envelope(&mut self, _: &RequestMeta) {}
        #[inline]
        pub(crate) fn round(&mut self, _: u32, _: Option<SystemTime>, _: Option<FlowTrace>) {}
        #[inline]
        pub(crate) fn rejected(&mut self, _: RejectReason) {}
        #[inline]
        pub(crate) fn first_round_trace(&mut self) -> Option<FlowTrace> {
            None
        }
        #[inline]
        pub(crate) fn answered(&mut self, _: bool, _: bool) {}
        #[inline]
        pub(crate) fn failed(&mut self, _: &ErrorObject) {}
        #[inline]
        pub(crate) fn finish(self) {}
        #[inline]
        pub(crate) fn finish_reply(self, _: &Reply, _: Option<&RawValue>) {}
        #[inline]
        pub(crate) fn instrument<F: Future>(&mut self, fut: F) -> F {
            fut
        }
    }
}

impl<H> Server<H> {
    /// Starts observing a request.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn observe(
        &self,
        era: &Served,
        transport: TransportKind,
        method: &str,
        id: &RequestId,
    ) -> Observation {
        #[cfg(feature = "otel")]
        {
            Observation::start(
                self.inner.config.telemetry.as_ref(),
                era.era(),
                transport,
                method,
                id,
            )
        }
        #[cfg(not(feature = "otel"))]
        {
            Observation
        }
    }
}

/// The kind of target `method` names, if any.
pub(crate) fn target_kind(method: Method) -> Option<TargetKind> {
    match method {
        Method::ToolsCall => Some(TargetKind::Tool),
        Method::PromptsGet => Some(TargetKind::Prompt),
        Method::ResourcesRead => Some(TargetKind::Resource),
        _ => None,
    }
}
