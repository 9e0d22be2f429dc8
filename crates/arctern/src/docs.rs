//! Long-form guides.
//!
//! | guide | what it covers |
//! | --- | --- |
//! | [`mrtr`] | multi round-trip requests: questions, answers, rounds, both eras |
//! | [`tasks`] | long-running tools as tasks (the tasks extension) |
//! | [`apps`] | MCP Apps: interactive views shipped by servers, checked as hosts check them, both eras |
//! | [`request_state`] | what sealed request state protects, and how |
//! | [`budgets`] | every bounded budget, its default, who shares it, what happens when it is reached |
//! | [`authorization`] | OAuth 2.1 for servers and clients |
//! | [`fleet`] | many instances behind a load balancer: keys, rotation, notifications |
//! | [`observability`] | OpenTelemetry traces and metrics |
//! | [`hosts`] | using a server from Claude Desktop, Claude Code, Cursor, VS Code and the MCP Inspector |
//! | [`migrating_from_rmcp`] | rmcp 3.x, side by side with arctern |
//! | [`migrating_from_python`] | the Python SDK 2.x, side by side with arctern |

pub mod mrtr {
    #![doc = include_str!("../docs/mrtr.md")]
}

pub mod tasks {
    #![doc = include_str!("../docs/tasks.md")]
}

#[cfg(feature = "apps")]
pub mod apps {
    #![doc = include_str!("../docs/apps.md")]
}

pub mod request_state {
    #![doc = include_str!("../docs/request-state.md")]
}

pub mod budgets {
    #![doc = include_str!("../docs/budgets.md")]
}

#[cfg(all(feature = "auth", feature = "http"))]
pub mod authorization {
    #![doc = include_str!("../docs/authorization.md")]
}

#[cfg(feature = "http")]
pub mod fleet {
    #![doc = include_str!("../docs/fleet.md")]
}

#[cfg(feature = "otel")]
pub mod observability {
    #![doc = include_str!("../docs/observability.md")]
}

#[cfg(feature = "http")]
pub mod hosts {
    #![doc = include_str!("../docs/hosts.md")]
}

#[cfg(all(feature = "http", feature = "stdio"))]
pub mod migrating_from_rmcp {
    #![doc = include_str!("../docs/migrating-from-rmcp.md")]
}

#[cfg(all(feature = "http", feature = "stdio"))]
pub mod migrating_from_python {
    #![doc = include_str!("../docs/migrating-from-python.md")]
}
