//! The stdio server: reads messages line by line, serves each request in its own task, and
//! writes every outgoing message through a single writer task.
//!
//! Data flow: the reading loop splits the input into lines and parses each one, and hands
//! every message to a server [`Connection`], which decides the era from the first request,
//! registers requests by id (so `notifications/cancelled` finds them) and delivers the
//! client's answers to a legacy session. Requests are served in tasks of their own;
//! notifications and malformed lines are handled inline. Every task sends its serialized
//! messages into one bounded channel, drained by a writer task that owns the output, so
//! lines never interleave and the output is flushed only when the channel runs dry.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use arctern_types::jsonrpc::{JsonRpcErrorResponse, JsonRpcMessage};
use arctern_types::methods;
use arctern_types::{ErrorObject, RequestId};
use bytes::Bytes;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::server::connection::{Connection, Handling, Reply, RequestOrigin, TransportKind};
use crate::server::{Handler, McpServer, Server};
use crate::{Error, ErrorKind, Result};

use super::frame::{Frame, Framer};
use super::writer::write_lines;

/// The default maximum length of one incoming line (one message): 4 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 4 * 1024 * 1024;

/// The default number of requests served at once: 1024.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// The default time in-flight requests get to finish once the input has ended: 5 seconds.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Outgoing messages queued before senders wait for the writer (backpressure from a client
/// that reads slowly).
const OUTBOX_CAPACITY: usize = 1024;
/// How long the writer may take to flush what is queued once serving has ended; a client that
/// stopped reading its end must not keep the server alive forever.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves a [`Server`] over stdio: newline-delimited JSON-RPC on stdin and stdout, or on any
/// reader/writer pair.
///
/// - Each line is one message; `\r\n` line ends and blank lines are accepted. A line longer
///   than [`max_line_length`](Self::max_line_length) is skipped without being buffered and
///   answered with an id-less `-32600` error; malformed JSON gets `-32700`, and JSON that is
///   not a single JSON-RPC message (a batch, wrong member types) gets `-32600`.
/// - Each request runs in its own task, so a slow request never holds up others. At most
///   [`max_in_flight`](Self::max_in_flight) requests run at once; at the limit, reading pauses
///   until one finishes, which bounds the memory a fast-writing client can make the server use.
///   `notifications/cancelled` stops the request it names (its handler future is dropped
///   and nothing more is written for it), including a `subscriptions/listen` stream.
/// - Request-scoped notifications (progress, log messages) and subscription notifications
///   are written as they are produced.
/// - At the end of the input (the client's shutdown signal) reading stops, open
///   `subscriptions/listen` streams end gracefully with their final result, in-flight requests
///   get the [`shutdown_grace`](Self::shutdown_grace) period to finish and are cancelled
///   after it, the output is flushed, and serving returns `Ok`. [`Server::shutdown`] ends
///   serving the same way.
///
/// Only MCP messages are ever written to the output; diagnostics go through [`tracing`].
///
/// ```no_run
/// use arctern::server::extract::Args;
/// use arctern::server::McpServer;
/// use arctern::transport::stdio::StdioServer;
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Echo { text: String }
///
/// # async fn run() -> arctern::Result<()> {
/// let server = McpServer::new("echo")
///     .tool("echo", "Echoes its input.", |Args(e): Args<Echo>| async move { e.text })
///     .build()?;
/// StdioServer::new(server).serve().await
/// # }
/// ```
pub struct StdioServer<H> {
    server: Server<H>,
    max_line_length: usize,
    max_in_flight: usize,
    shutdown_grace: Duration,
}

impl<H> fmt::Debug for StdioServer<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioServer")
            .field("max_line_length", &self.max_line_length)
            .field("max_in_flight", &self.max_in_flight)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish_non_exhaustive()
    }
}

impl<H: Handler> StdioServer<H> {
    /// A stdio transport for `server`, with the default limits and grace period.
    pub fn new(server: Server<H>) -> Self {
        StdioServer {
            server,
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// The longest line (one message, without its line end) accepted, in bytes; default
    /// [`DEFAULT_MAX_LINE_LENGTH`]. Longer lines are discarded as they arrive, so memory use
    /// stays bounded by about this much, and answered with an id-less `-32600` error.
    pub fn max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes;
        self
    }

    /// How many requests may be served at once (at least 1); default
    /// [`DEFAULT_MAX_IN_FLIGHT`]. Open `subscriptions/listen` streams do not count.
    ///
    /// At the limit the server stops reading until a request finishes, so a
    /// `notifications/cancelled` sent after the request that hit the limit is only seen
    /// then.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.max(1);
        self
    }

    /// How long in-flight requests may run on after the input ends before they are
    /// cancelled; default [`DEFAULT_SHUTDOWN_GRACE`].
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The server being served.
    pub fn server(&self) -> &Server<H> {
        &self.server
    }

    /// Serves on the process's stdin and stdout until stdin ends (or [`Server::shutdown`] is
    /// called).
    ///
    /// On Unix, when stdin and stdout are pipes (as when a client spawns the server), they
    /// are read and written without blocking, straight from the runtime's event loop; they
    /// are put back in blocking mode when serving ends. Otherwise (a terminal, a file, or
    /// other platforms) Tokio reads stdin on its blocking thread pool; if serving then ends
    /// through [`Server::shutdown`] while stdin is still open, that read stays pending until
    /// input arrives or stdin closes, which can delay the runtime's own shutdown.
    pub async fn serve(self) -> Result<()> {
        // The reading loop runs as a task of the runtime rather than inside the caller's
        // future: under `#[tokio::main]` that future runs on the main thread, and every
        // request handed from it to a worker thread (and every wake-up back) would be a
        // thread switch.
        #[cfg(unix)]
        if let Some((reader, writer)) = std_pipes::open() {
            let served = run_as_task(self, reader, writer).await;
            std_pipes::restore_blocking();
            return served;
        }
        run_as_task(self, tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves on `reader` and `writer` until the reader reaches end of input (or
    /// [`Server::shutdown`] is called).
    ///
    /// Returns `Ok` after a graceful end. Fails when reading or writing fails (the messages
    /// already accepted are still drained first): with [`ErrorKind::Closed`] when the peer
    /// closed its end of the output, with [`ErrorKind::Timeout`] when the peer stopped reading
    /// and the remaining output could not be flushed, with [`ErrorKind::Io`] otherwise.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
        let mut writer_task = tokio::spawn(write_lines(rx, writer));
        let unsolicited = tx.clone();
        let connection =
            self.server
                .connection(TransportKind::Stdio)
                .on_unsolicited(move |message: Bytes| {
                    if unsolicited.try_send(message).is_err() {
                        tracing::debug!(
                            "dropped an unsolicited message: the output is full or closed"
                        );
                    }
                });
        // If this future is dropped mid-way, nothing it started may outlive it (an open
        // subscription would run forever).
        let close = CloseOnDrop(connection.clone());
        let mut reading = Reading {
            connection: connection.clone(),
            tx,
            max_line_length: self.max_line_length,
            permits: Arc::new(Semaphore::new(self.max_in_flight)),
        };

        let ended = reading.read_loop(reader).await;
        let read_error = match ended {
            Ended::WriterGone => {
                // Nothing can be delivered any more: stop everything at once.
                connection.close();
                None
            }
            Ended::Eof | Ended::Shutdown => {
                drain(&connection, self.shutdown_grace).await;
                None
            }
            Ended::ReadFailed(e) => {
                drain(&connection, self.shutdown_grace).await;
                Some(e)
            }
        };
        // The writer ends once every sender is gone: ours here, the tasks' as they finish or
        // are cancelled.
        drop(reading);
        drop(connection);
        drop(close);
        let written = match tokio::time::timeout(FLUSH_TIMEOUT, &mut writer_task).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Ok(Err(_)) => Ok(()),
            Err(_) => {
                writer_task.abort();
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "the peer stopped reading; undelivered output was dropped",
                ));
            }
        };
        if let Some(e) = read_error {
            return Err(Error::new(ErrorKind::Io, "could not read the input").with_source(e));
        }
        written.map_err(|e| {
            // A closed pipe means the client went away; let callers tell that from a failure.
            let kind = match e.kind() {
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => ErrorKind::Closed,
                _ => ErrorKind::Io,
            };
            Error::new(kind, "could not write the output").with_source(e)
        })
    }
}

/// Spawns the serving loop as a task of the current runtime at once and returns a future
/// that waits for it; a panic inside it is resumed there.
///
/// Under `#[tokio::main]` the caller's future and the frames that poll it live on the main
/// thread's stack, and every page they ever touch stays resident. So the serving state (about
/// 10 KB) is built here, out of line and only when stdio is served, and the caller's future
/// holds just the task's handle.
#[inline(never)]
fn run_as_task<H, R, W>(
    server: StdioServer<H>,
    reader: R,
    writer: W,
) -> impl Future<Output = Result<()>>
where
    H: Handler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let task = tokio::spawn(server.serve_io(reader, writer));
    async move {
        match task.await {
            Ok(served) => served,
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Err(_) => Err(Error::new(
                ErrorKind::Closed,
                "the runtime shut down while serving stdio",
            )),
        }
    }
}

/// stdin and stdout as non-blocking pipes driven by the runtime's reactor. Tokio's own
/// stdin and stdout hand every read and write to its blocking thread pool, and those thread
/// hand-offs cost more than serving a small request.
#[cfg(unix)]
mod std_pipes {
    use std::os::fd::AsFd;

    use tokio::net::unix::pipe::{Receiver, Sender};

    /// Both ends, or `None` when either is not a pipe (the caller then falls back to
    /// Tokio's stdin and stdout). Works on duplicates, so the standard descriptors stay open.
    pub(super) fn open() -> Option<(Receiver, Sender)> {
        let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        let reader = Receiver::from_owned_fd(input).ok()?;
        match Sender::from_owned_fd(output) {
            Ok(writer) => Some((reader, writer)),
            Err(_) => {
                let _ = reader.into_blocking_fd();
                None
            }
        }
    }

    /// Clears `O_NONBLOCK` again: the flag belongs to the pipe ends shared with the parent
    /// and with the rest of this process (`println!` would fail on a full pipe otherwise).
    pub(super) fn restore_blocking() {
        if let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned()
            && let Ok(reader) = Receiver::from_owned_fd_unchecked(fd)
        {
            let _ = reader.into_blocking_fd();
        }
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned()
            && let Ok(writer) = Sender::from_owned_fd_unchecked(fd)
        {
            let _ = writer.into_blocking_fd();
        }
    }
}

impl<H: Handler> Server<H> {
    /// Serves this server on the process's stdin and stdout until stdin ends; see
    /// [`StdioServer`] for the details and for tuning.
    pub async fn serve_stdio(self) -> Result<()> {
        StdioServer::new(self).serve().await
    }
}

impl<S: Clone + Send + Sync + 'static> McpServer<S> {
    /// Builds the server and serves it on the process's stdin and stdout until stdin ends;
    /// see [`StdioServer`]. Handlers that could not be registered are reported as an
    /// [`ErrorKind::Config`] error before anything is read.
    pub async fn serve_stdio(self) -> Result<()> {
        self.build()?.serve_stdio().await
    }
}

/// Closes a connection when dropped.
struct CloseOnDrop<H>(Connection<H>);

impl<H> Drop for CloseOnDrop<H> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Why the reading loop stopped.
enum Ended {
    /// The input ended.
    Eof,
    /// [`Server::shutdown`] was called.
    Shutdown,
    /// Reading failed.
    ReadFailed(io::Error),
    /// The writer failed, so nothing more can be sent.
    WriterGone,
}

/// The reading side of one served stream.
struct Reading<H> {
    connection: Connection<H>,
    tx: mpsc::Sender<Bytes>,
    max_line_length: usize,
    /// One per request being served (subscriptions excepted).
    permits: Arc<Semaphore>,
}

impl<H: Handler> Reading<H> {
    async fn read_loop<R: AsyncRead + Unpin>(&mut self, mut reader: R) -> Ended {
        let mut framer = Framer::new(self.max_line_length);
        let server = self.connection.server().clone();
        let shutdown = server.shutdown_token().cancelled();
        tokio::pin!(shutdown);
        loop {
            while let Some(frame) = framer.next_frame() {
                self.dispatch(frame, &framer.buf).await;
            }
            framer.make_room();
            tokio::select! {
                biased;
                () = &mut shutdown => return Ended::Shutdown,
                () = self.tx.closed() => return Ended::WriterGone,
                read = reader.read_buf(&mut framer.buf) => match read {
                    Ok(0) => {
                        // A last line without a line end still counts.
                        if let Some(frame) = framer.finish() {
                            self.dispatch(frame, &framer.buf).await;
                        }
                        return Ended::Eof;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Ended::ReadFailed(e),
                },
            }
        }
    }

    async fn dispatch(&mut self, frame: Frame, buf: &[u8]) {
        let line = match frame {
            Frame::Line(range) => &buf[range],
            Frame::TooLong => {
                let max = self.max_line_length;
                tracing::debug!(max, "discarded a line over the length limit");
                let error = ErrorObject::invalid_request(format!(
                    "Message too large: a line may hold at most {max} bytes"
                ));
                self.send_error(None, error).await;
                return;
            }
        };
        match JsonRpcMessage::from_slice(line) {
            Ok(JsonRpcMessage::Request(request)) => {
                // Listen streams are long-lived and do not count against the limit.
                let permit = if request.method == methods::SUBSCRIPTIONS_LISTEN {
                    None
                } else {
                    self.permit().await
                };
                // Registered (and, for a first request, the era decided) before reading on.
                let reply = self
                    .connection
                    .handle(JsonRpcMessage::Request(request), origin());
                tokio::spawn(forward(reply, self.tx.clone(), permit));
            }
            Ok(message) => {
                // Notifications, cancellations and the client's answers take effect at once.
                let reply = self.connection.handle(message, origin()).await;
                if let Reply::Message { body, .. } = reply {
                    self.send(body).await;
                }
            }
            Err(e) => {
                tracing::debug!(code = e.error.code.0, message = %e.error.message, "rejected a malformed line");
                self.send_error(e.id, e.error).await;
            }
        }
    }

    /// A slot for one more request; waits (and so pauses reading) at the limit.
    async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        tracing::trace!("at the in-flight limit; reading pauses");
        tokio::select! {
            permit = self.permits.clone().acquire_owned() => permit.ok(),
            // Shutting down: serve it anyway, the drain bounds it.
            () = self.connection.server().shutdown_token().cancelled() => None,
        }
    }

    async fn send_error(&self, id: Option<RequestId>, error: ErrorObject) {
        match serde_json::to_vec(&JsonRpcErrorResponse::new(id, error)) {
            Ok(bytes) => self.send(Bytes::from(bytes)).await,
            Err(e) => tracing::error!(error = %e, "could not serialize an error response"),
        }
    }

    async fn send(&self, bytes: Bytes) {
        // A failure means the writer is gone; the reading loop notices and stops.
        let _ = self.tx.send(bytes).await;
    }
}

/// Ends open subscriptions gracefully and gives in-flight requests the grace period, then
/// cancels what is left.
async fn drain<H: Handler>(connection: &Connection<H>, grace: Duration) {
    connection.close_gracefully();
    if tokio::time::timeout(grace, connection.idle())
        .await
        .is_err()
    {
        tracing::debug!(
            cancelled = connection.in_flight(),
            "cancelled the requests still running after the shutdown grace period"
        );
    }
    connection.close();
}

fn origin() -> RequestOrigin {
    RequestOrigin::new(TransportKind::Stdio)
}

/// Serves one request and writes everything it produces.
async fn forward(reply: Handling, tx: mpsc::Sender<Bytes>, _permit: Option<OwnedSemaphorePermit>) {
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
        // Cancelled: a cancelled request gets no answer.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_serving_future_is_small() {
        // The caller's future holds only the serving task's handle; the serving state lives
        // in the task (see `run_as_task`). Futures are inert: nothing is read here.
        let server = crate::server::McpServer::new("t").build().unwrap();
        let serving = server.serve_stdio();
        let size = std::mem::size_of_val(&serving);
        assert!(size <= 512, "serve_stdio's future is {size} bytes");
    }
}
