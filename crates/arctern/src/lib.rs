#![doc = include_str!("../README.md")]

pub use arctern_types as types;
pub use arctern_types::Outcome;
pub use arctern_types::{ErrorCode, ErrorObject};
pub use era::Era;
pub use error::{Error, ErrorKind, Result};

mod era;
mod error;
#[cfg(feature = "server")]
mod log_limit;

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

// Entry points for the fuzz targets (`fuzz/`) into parsers that are not public. Only built
// under `--cfg fuzzing`, which cargo-fuzz sets; never part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
#[path = "fuzz_hooks.rs"]
pub mod __fuzz;
