//! Long-form guides.

pub mod mrtr {
    #![doc = include_str!("../docs/mrtr.md")]
}

pub mod tasks {
    #![doc = include_str!("../docs/tasks.md")]
}

pub mod request_state {
    #![doc = include_str!("../docs/request-state.md")]
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
