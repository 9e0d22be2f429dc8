//! The ceiling: a trivial hyper server that answers every POST with the bytes of an echo
//! reply, copying only the request's `id` and `text` into a fixed template (a byte scan, no
//! JSON parser, no MCP: `wire::ceiling_reply`). Measured with the same load generator on
//! the same core, it shows the most this machine, kernel and load generator allow; no MCP
//! server can beat it.
//!
//! ```text
//! ceiling --port N
//! ```

use std::convert::Infallible;

use arctern_bench::wire;
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

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let mut response = Response::new(Full::new(Bytes::from(wire::ceiling_reply(&body))));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, wire::JSON.parse().expect("a valid header"));
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
