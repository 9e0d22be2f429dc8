//! stdio transport (under construction).

#[cfg(feature = "client")]
pub mod client;
