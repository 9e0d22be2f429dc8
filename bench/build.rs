//! Generates the 99 extra tools of the "100 tools registered" server variants (the 100th is
//! `echo`), so that nobody writes them by hand:
//!
//! * `many_args.rs` — 99 argument structs, each with three distinct fields (a string, an
//!   integer and a boolean whose names carry the tool's number), shared by both Rust servers;
//! * `many_arctern.rs` — 99 handler functions and `register_many`, adding them to an
//!   arctern `McpServer`;
//! * `many_rmcp.rs` — one `#[tool_router(router = many_router)]` impl block on the rmcp
//!   server with the 99 tools.
//!
//! The Python server builds the same 99 tools at start-up (`python/server.py`).

use std::fmt::Write as _;
use std::path::PathBuf;

/// Tools besides `echo`.
const EXTRA_TOOLS: usize = 99;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut args = String::new();
    let mut arctern = String::new();
    let mut rmcp = String::new();

    arctern.push_str(
        "/// Registers the 99 generated tools on `server`.\n\
         pub fn register_many<S: Clone + Send + Sync + 'static>(server: McpServer<S>) -> McpServer<S> {\n    server\n",
    );
    rmcp.push_str("#[tool_router(router = many_router, vis = \"pub(crate)\")]\nimpl RmcpBench {\n");
    let mut arctern_fns = String::new();
    for i in 1..=EXTRA_TOOLS {
        let n = format!("{i:03}");
        let ty = format!("Tool{n}Args");
        let tool = format!("tool_{n}");
        let description =
            format!("Generated tool {i} of {EXTRA_TOOLS}: formats its three arguments.");
        let _ = write!(
            args,
            "/// Arguments of `{tool}`.\n\
             #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]\n\
             pub struct {ty} {{\n\
             \x20   /// A label for call {i}.\n\
             \x20   pub label_{n}: String,\n\
             \x20   /// A count for call {i}.\n\
             \x20   pub count_{n}: i64,\n\
             \x20   /// A switch for call {i}.\n\
             \x20   pub enabled_{n}: bool,\n\
             }}\n\n\
             impl {ty} {{\n\
             \x20   /// The text the tool answers.\n\
             \x20   pub fn render(&self) -> String {{\n\
             \x20       format!(\"{tool}: {{}} {{}} {{}}\", self.label_{n}, self.count_{n}, self.enabled_{n})\n\
             \x20   }}\n\
             }}\n\n"
        );
        let _ = write!(
            arctern_fns,
            "async fn {tool}(Args(a): Args<{ty}>) -> String {{\n    a.render()\n}}\n\n"
        );
        let _ = writeln!(
            arctern,
            "        .tool(\"{tool}\", \"{description}\", {tool})"
        );
        let _ = write!(
            rmcp,
            "    #[tool(description = \"{description}\")]\n\
             \x20   async fn {tool}(&self, Parameters(a): Parameters<{ty}>) -> String {{\n\
             \x20       a.render()\n\
             \x20   }}\n\n"
        );
    }
    arctern.push_str("}\n\n");
    arctern.push_str(&arctern_fns);
    rmcp.push_str("}\n");

    for (name, text) in [
        ("many_args.rs", args),
        ("many_arctern.rs", arctern),
        ("many_rmcp.rs", rmcp),
    ] {
        std::fs::write(out.join(name), text).expect("OUT_DIR is writable");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
