//! MCP over a Unix domain socket: a transport of its own, built on arctern's public
//! [`Connection`](arctern::server::connection::Connection) alone, serving 2026-07-28 clients and 2025-era clients alike.
//!
//! Framing: one JSON-RPC message per line (as stdio), so arctern's stdio client transport
//! can talk to it over the socket ([`connect`]). Each accepted socket is one
//! [`Connection`](arctern::server::connection::Connection): its first request decides the era, requests are served concurrently, and
//! everything written goes through one writer task so lines never interleave.

use std::path::Path;

use arctern::server::connection::{Reply, RequestOrigin, TransportKind};
use arctern::server::{Handler, Server};
use arctern::transport::stdio::client::StdioTransport;
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

/// The longest line a client may send.
pub const MAX_LINE: usize = 1024 * 1024;

/// Serves `server` on every connection `listener` accepts, until `listener` fails.
pub async fn serve<H: Handler>(server: Server<H>, listener: UnixListener) -> std::io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        tokio::spawn(serve_socket(server.clone(), socket));
    }
}

/// Serves one socket until the client closes it.
pub async fn serve_socket<H: Handler>(server: Server<H>, socket: UnixStream) {
    let (reader, mut writer) = socket.into_split();
    let (tx, mut rx) = mpsc::channel::<bytes::Bytes>(256);
    let writing = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let line = [message.as_ref(), b"\n"].concat();
            if writer.write_all(&line).await.is_err() {
                break;
            }
        }
    });
    // A legacy session's list changes and resource updates go out on the same socket.
    let unsolicited = tx.downgrade();
    let connection = server
        .connection(TransportKind::Other)
        .on_unsolicited(move |message| {
            if let Some(tx) = unsolicited.upgrade() {
                let _ = tx.try_send(message);
            }
        });
    let mut lines = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) if line.len() > MAX_LINE => {
                tracing::warn!("closing a socket that sent an over-long line");
                break;
            }
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Everything that must follow the order of the socket happens inside `handle`;
        // the rest of a request runs in its own task.
        let reply = connection.handle_bytes(&line, RequestOrigin::new(TransportKind::Other));
        let tx = tx.clone();
        tokio::spawn(async move {
            match reply.await {
                Reply::Message { body, .. } => {
                    let _ = tx.send(body).await;
                }
                Reply::Stream(mut stream) => {
                    while let Some(message) = stream.next().await {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                }
                _ => {}
            }
        });
    }
    // The client left: cancel what it left running, end its session, flush.
    connection.close();
    drop(connection);
    drop(tx);
    let _ = writing.await;
}

/// A client transport over the socket at `path`.
pub async fn connect(path: impl AsRef<Path>) -> std::io::Result<StdioTransport> {
    let socket = UnixStream::connect(path).await?;
    let (reader, writer) = socket.into_split();
    Ok(StdioTransport::from_io(reader, writer))
}
