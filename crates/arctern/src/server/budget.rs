//! Fair shares of the budgets callers share: who a share counts against ([`Caller`]), and
//! the refusal a caller over one gets ([`OverBudget`]).
//!
//! Every server-wide budget is bounded; the ones callers fill with their own requests (the
//! one-time flow store, running tasks, stored tasks) also hold a share per caller, so the
//! first caller to reach a limit is refused while the others are still served. The
//! [budgets guide](crate::docs::budgets) lists every budget, its default and what happens
//! when it is reached.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use arctern_types::{ErrorCode, ErrorObject};
use serde_json::{Value, json};

use crate::log_limit::RateLimited;

/// Who a per-caller share counts against: the request's principal (an authentication
/// layer's [`Principal`](crate::server::Principal), else the server's
/// [`PrincipalHook`](crate::server::PrincipalHook)); for an anonymous request, the address
/// of the peer it came from (IPv6 peers by their /64 network, which one host usually holds
/// whole); without either (stdio, or a service mounted without
/// [`PeerAddr`](crate::transport::http::PeerAddr)), one shared anonymous caller.
///
/// Behind a reverse proxy every anonymous request comes from the proxy's address: give
/// callers a principal there (a [`PrincipalHook`](crate::server::PrincipalHook) may read a
/// forwarded-for header the operator trusts), or they share one share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Caller {
    /// An authenticated or hook-assigned principal.
    Principal(Arc<str>),
    /// An anonymous caller, by its peer address.
    Peer(IpAddr),
    /// An anonymous caller whose address is unknown.
    Anonymous,
}

impl Caller {
    /// The caller of a request with `principal` from `peer`.
    pub fn new(principal: Option<&str>, peer: Option<IpAddr>) -> Self {
        match (principal, peer) {
            (Some(p), _) => Caller::Principal(p.into()),
            (None, Some(IpAddr::V6(v6))) if v6.to_ipv4_mapped().is_none() => {
                let mut octets = v6.octets();
                octets[8..].fill(0);
                Caller::Peer(IpAddr::V6(Ipv6Addr::from(octets)))
            }
            (None, Some(IpAddr::V6(v6))) => {
                Caller::Peer(IpAddr::V4(v6.to_ipv4_mapped().expect("checked above")))
            }
            (None, Some(ip)) => Caller::Peer(ip),
            (None, None) => Caller::Anonymous,
        }
    }

    /// The caller of a request from `origin` whose principal is `principal`.
    pub(crate) fn of(
        principal: Option<&str>,
        origin: &crate::server::connection::RequestOrigin,
    ) -> Self {
        #[cfg(feature = "http")]
        let peer = origin.peer.or_else(|| {
            origin
                .extensions
                .get::<crate::transport::http::PeerAddr>()
                .map(|p| p.0.ip())
        });
        #[cfg(not(feature = "http"))]
        let peer = origin.peer;
        Caller::new(principal, peer)
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Principal(p) => write!(f, "principal:{p}"),
            Caller::Peer(ip) => write!(f, "peer:{ip}"),
            Caller::Anonymous => f.write_str("anonymous"),
        }
    }
}

/// A budget callers share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Budget {
    /// Flows the one-time store holds
    /// ([`MemoryOneTimeStore`](crate::server::mrtr::MemoryOneTimeStore)).
    OneTimeFlows,
    /// Tasks running at once ([`TaskConfig::max_running`](crate::server::tasks::TaskConfig)).
    RunningTasks,
    /// Tasks the task store holds ([`TaskStore`](crate::server::tasks::TaskStore)).
    StoredTasks,
}

impl Budget {
    /// The budget's name on the wire (`data.budget` of an [`OverBudget`] error).
    pub fn as_str(self) -> &'static str {
        match self {
            Budget::OneTimeFlows => "oneTimeFlows",
            Budget::RunningTasks => "runningTasks",
            Budget::StoredTasks => "storedTasks",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [
            Budget::OneTimeFlows,
            Budget::RunningTasks,
            Budget::StoredTasks,
        ]
        .into_iter()
        .find(|b| b.as_str() == name)
    }

    fn what(self) -> &'static str {
        match self {
            Budget::OneTimeFlows => "multi round-trip flows in progress or completed",
            Budget::RunningTasks => "running tasks",
            Budget::StoredTasks => "stored tasks",
        }
    }

    /// Refusals of this budget, logged at most once every ten seconds.
    fn log(self) -> &'static RateLimited {
        static ONE_TIME: RateLimited = RateLimited::new(Duration::from_secs(10));
        static RUNNING: RateLimited = RateLimited::new(Duration::from_secs(10));
        static STORED: RateLimited = RateLimited::new(Duration::from_secs(10));
        match self {
            Budget::OneTimeFlows => &ONE_TIME,
            Budget::RunningTasks => &RUNNING,
            Budget::StoredTasks => &STORED,
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a refusal is of the caller's share or of the whole budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// The caller holds its share; other callers are still served.
    Caller,
    /// The budget is full for every caller.
    Server,
}

impl Scope {
    /// The scope's name on the wire (`data.scope` of an [`OverBudget`] error).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Caller => "caller",
            Scope::Server => "server",
        }
    }
}

/// A call refused because its caller holds its share of a [`Budget`] (or the budget is
/// full): the JSON-RPC error `-31429` with `data` naming the budget and when to retry,
/// answered on HTTP with `429 Too Many Requests` and `Retry-After`.
///
/// ```json
/// {"code": -31429,
///  "message": "Over budget: this caller holds its share of the server's running tasks; retry in 300 s",
///  "data": {"budget": "runningTasks", "scope": "caller", "retryAfterSeconds": 300}}
/// ```
///
/// ```
/// use std::time::Duration;
/// use arctern::server::budget::{Budget, OverBudget, Scope};
///
/// let refusal = OverBudget::new(Budget::RunningTasks, Scope::Caller, Duration::from_secs(300));
/// let error = refusal.to_error();
/// assert_eq!(error.code.0, OverBudget::CODE);
/// assert_eq!(OverBudget::from_error(&error), Some(refusal));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OverBudget {
    budget: Budget,
    scope: Scope,
    retry_after_secs: u64,
}

impl OverBudget {
    /// The JSON-RPC error code: application-defined, outside the range JSON-RPC and MCP
    /// reserve (`-32768` to `-32000`), as the MCP specification asks of new codes.
    pub const CODE: i32 = -31429;

    /// A refusal of `budget`, worth retrying after `retry_after` (rounded up to seconds, at
    /// least one).
    pub fn new(budget: Budget, scope: Scope, retry_after: Duration) -> Self {
        let secs = retry_after
            .as_secs()
            .saturating_add(u64::from(retry_after.subsec_nanos() > 0));
        OverBudget {
            budget,
            scope,
            retry_after_secs: secs.max(1),
        }
    }

    /// The budget reached.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Whether the caller's share or the whole budget was reached.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// When a retry may succeed: when the first of the caller's (or, for a full budget, of
    /// anyone's) holdings is due to end.
    pub fn retry_after(&self) -> Duration {
        Duration::from_secs(self.retry_after_secs)
    }

    /// The JSON-RPC error answering the call.
    pub fn to_error(&self) -> ErrorObject {
        let whose = match self.scope {
            Scope::Caller => "this caller holds its share of",
            Scope::Server => "the server holds all it may of",
        };
        let message = format!(
            "Over budget: {whose} the server's {}; retry in {} s",
            self.budget.what(),
            self.retry_after_secs
        );
        ErrorObject::new(ErrorCode(Self::CODE), message).with_data(json!({
            "budget": self.budget.as_str(),
            "scope": self.scope.as_str(),
            "retryAfterSeconds": self.retry_after_secs,
        }))
    }

    /// The refusal an error answers with, if it is one.
    pub fn from_error(error: &ErrorObject) -> Option<Self> {
        if error.code.0 != Self::CODE {
            return None;
        }
        let data = error.data.as_ref()?;
        let budget = Budget::from_name(data.get("budget")?.as_str()?)?;
        let scope = match data.get("scope").and_then(Value::as_str) {
            Some("server") => Scope::Server,
            _ => Scope::Caller,
        };
        let retry_after_secs = data.get("retryAfterSeconds")?.as_u64()?;
        Some(OverBudget {
            budget,
            scope,
            retry_after_secs,
        })
    }

    /// The refusal in a serialized JSON-RPC error response, if it is one (what an HTTP
    /// transport reads back to set `Retry-After`).
    #[cfg(feature = "http")]
    pub(crate) fn from_response_body(body: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: ErrorObject,
        }
        let envelope: Envelope = serde_json::from_slice(body).ok()?;
        Self::from_error(&envelope.error)
    }

    /// Logs the refusal of `caller`, at most once per ten seconds per budget (callers
    /// trigger refusals at will), with the count held back.
    pub(crate) fn log(&self, caller: &Caller) {
        self.budget.log().log(|held_back| {
            tracing::warn!(
                budget = self.budget.as_str(),
                scope = self.scope.as_str(),
                %caller,
                retry_after_secs = self.retry_after_secs,
                held_back,
                "refused a caller over budget"
            );
        });
    }
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "over budget: {} ({}), retry in {} s",
            self.budget,
            self.scope.as_str(),
            self.retry_after_secs
        )
    }
}

impl std::error::Error for OverBudget {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_by_principal_then_peer_network() {
        let v4: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(Caller::new(None, Some(v4)), Caller::Peer(v4));
        assert_eq!(
            Caller::new(Some("alice"), Some(v4)),
            Caller::Principal("alice".into())
        );
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        assert_eq!(Caller::new(None, Some(a)), Caller::new(None, Some(b)));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(
            Caller::new(None, Some(mapped)),
            Caller::Peer("10.0.0.1".parse().unwrap())
        );
        assert_eq!(Caller::new(None, None), Caller::Anonymous);
    }

    #[test]
    fn a_refusal_round_trips_and_rounds_up() {
        let refusal = OverBudget::new(
            Budget::OneTimeFlows,
            Scope::Server,
            Duration::from_millis(1500),
        );
        assert_eq!(refusal.retry_after(), Duration::from_secs(2));
        let error = refusal.to_error();
        assert!(error.message.contains("retry in 2 s"), "{}", error.message);
        assert_eq!(OverBudget::from_error(&error), Some(refusal));
        assert_eq!(
            OverBudget::new(Budget::StoredTasks, Scope::Caller, Duration::ZERO).retry_after(),
            Duration::from_secs(1)
        );
        assert_eq!(
            OverBudget::from_error(&ErrorObject::internal_error("x")),
            None
        );
    }
}
