//! The library side of the `arctern` command: the demo server that `arctern serve` runs,
//! for tests and programs that serve it in-process.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = arctern_cli::demo::server()?;
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

pub mod demo;
