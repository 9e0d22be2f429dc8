#![doc = include_str!("../README.md")]

pub use arctern_types as types;
pub use arctern_types::Outcome;
pub use arctern_types::{ErrorCode, ErrorObject};
pub use era::Era;
pub use error::{Error, ErrorKind, Result};

mod era;
mod error;

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
#[cfg(all(feature = "server", feature = "client"))]
pub mod docs;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod state;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;
