//! The server of the README, verbatim (`examples/src/quickstart.rs`; a test checks that the
//! two READMEs still show exactly this program, and runs its tool).
//!
//! ```sh
//! cargo run -p arctern-examples --bin quickstart    # http://127.0.0.1:8000/mcp
//! arctern call http://127.0.0.1:8000/mcp provision --arg name=orders
//! ```

include!("../quickstart.rs");
