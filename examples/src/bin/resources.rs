//! Resources and resource templates: a text resource at a fixed URI, a binary one, and a
//! template, `notes://{name}`, whose variables arrive in `Args`. The notes are the server's
//! shared state (`McpServer::with_state`, read with the `State` extractor).
//!
//! ```sh
//! cargo run -p arctern-examples --bin resources    # http://127.0.0.1:8000/mcp
//! arctern resources http://127.0.0.1:8000/mcp
//! arctern read http://127.0.0.1:8000/mcp notes://groceries
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use arctern::ErrorObject;
use arctern::server::extract::{Args, State};
use arctern::server::{Blob, McpServer, ResourceSpec, ResourceTemplateSpec, resource_not_found};
use schemars::JsonSchema;
use serde::Deserialize;

/// The notes, by name.
type Notes = Arc<BTreeMap<&'static str, &'static str>>;

/// The smallest valid PNG: one transparent pixel.
const PIXEL_PNG: [u8; 68] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00,
    0x00, 0x05, 0x00, 0x01, 0x7a, 0x5e, 0xab, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
    0xae, 0x42, 0x60, 0x82,
];

/// `docs://readme`: a fixed text resource; it takes the MIME type its spec declares.
async fn readme() -> String {
    "# Notes\n\nEvery note is a resource: `notes://{name}`.\n".to_owned()
}

/// `docs://pixel.png`: binary content, sent base64-encoded as a `blob`.
async fn pixel() -> Blob {
    Blob(PIXEL_PNG.to_vec())
}

/// The template's variables.
#[derive(Deserialize, JsonSchema)]
struct NoteName {
    name: String,
}

/// `notes://{name}`: one note, or the protocol's "resource not found" error.
async fn note(Args(n): Args<NoteName>, State(notes): State<Notes>) -> Result<String, ErrorObject> {
    notes
        .get(n.name.as_str())
        .map(|text| (*text).to_owned())
        .ok_or_else(|| resource_not_found(&format!("notes://{}", n.name)))
}

#[tokio::main]
async fn main() -> arctern::Result<()> {
    let notes: Notes = Arc::new(BTreeMap::from([
        ("groceries", "Milk, bread, coffee."),
        ("ideas", "A server that answers in haiku."),
    ]));
    let server = McpServer::with_state("notes", notes)
        .resource(
            ResourceSpec::new("docs://readme", "readme")
                .description("What this server holds.")
                .mime_type("text/markdown"),
            readme,
        )
        .resource(
            ResourceSpec::new("docs://pixel.png", "pixel")
                .mime_type("image/png")
                .size(PIXEL_PNG.len() as u64),
            pixel,
        )
        .resource_template(
            ResourceTemplateSpec::new("notes://{name}", "note")
                .description("A note, by name.")
                .mime_type("text/plain"),
            note,
        )
        .build()?;
    arctern_examples::serve(server).await
}
