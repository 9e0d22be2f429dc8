//! The ceiling: a trivial hyper server that answers every POST with the bytes of an echo
//! reply, copying only the request's `id` and `text` into a fixed template (a byte scan, no
//! JSON parser, no MCP). Measured with the same load generator on the same core, it shows
//! the most this machine, kernel and load generator allow; no MCP server can beat it.
//!
//! ```text
//! ceiling --port N
//! ```

use std::convert::Infallible;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[derive(Parser)]
#[command(about = "Trivial hyper server answering echo replies")]
struct Cli {
    /// Port to listen on (127.0.0.1).
    #[arg(long)]
    port: u16,
}

/// The JSON value after `"key":` in `body`: a number, or a string with its quotes.
fn raw_member<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = body.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &body[start..];
    if rest.first() == Some(&b'"') {
        let mut escaped = false;
        for (i, &b) in rest.iter().enumerate().skip(1) {
            match b {
                b'\\' if !escaped => escaped = true,
                b'"' if !escaped => return Some(&rest[..=i]),
                _ => escaped = false,
            }
        }
        None
    } else {
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// An echo reply as an MCP server writes it, with `id` and `text` copied in.
fn echo_reply(request: &[u8]) -> Vec<u8> {
    let id = raw_member(request, b"\"id\":").unwrap_or(b"null");
    let text = raw_member(request, b"\"text\":").unwrap_or(b"\"\"");
    let mut reply = Vec::with_capacity(192 + text.len());
    reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    reply.extend_from_slice(id);
    reply.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    reply.extend_from_slice(text);
    reply.extend_from_slice(
        br#"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ceiling","version":"0.1.0"}}}}"#,
    );
    reply
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let mut response = Response::new(Full::new(Bytes::from(echo_reply(&body))));
    response.headers_mut().insert(
        CONTENT_TYPE,
        "application/json".parse().expect("a valid header"),
    );
    Ok(response)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    let listener = TcpListener::bind(("127.0.0.1", cli.port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_id_and_text() {
        let request = arctern_bench::wire::tools_call_body(42, "echo", "a \"q\" b", None);
        let reply = echo_reply(&request);
        arctern_bench::wire::check_text_result(&reply, 42, "a \"q\" b").unwrap();
    }
}
