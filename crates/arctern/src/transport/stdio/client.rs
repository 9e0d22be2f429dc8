//! The client side of stdio: the server runs as a child process; messages are
//! newline-delimited JSON on its stdin and stdout.
//!
//! One writer task owns the child's stdin; one reader task reads its stdout and routes each
//! message: responses by id to the waiting call, `notifications/progress` by progress token
//! (the client uses the request id as token), subscription notifications by their
//! `subscriptionId`, `notifications/cancelled` from the server to the subscription it ends.
//! Anything else — notably `notifications/message`, which has no request stream on stdio —
//! goes to the client's unrouted sink (its global log callback). Requests from the server
//! (legacy sessions: `elicitation/create`, `sampling/createMessage`, `roots/list`, `ping`)
//! go to the client's request sink, which answers each with a line of its own.
//!
//! Dropping a call sends `notifications/cancelled` with its request id. Lines that are not
//! JSON are skipped with a warning; a line longer than the message bound
//! ([`StdioCommand::max_message_size`], 16 MiB by default) or the child's exit fails every
//! call in flight with [`ErrorKind::Closed`] (or [`Transport`](ErrorKind::Transport)), so no
//! call waits forever.
//!
//! Shutdown ([`Transport::close`], or dropping the transport) closes the child's stdin, waits
//! for it to exit, then sends `SIGTERM` (Unix) and finally kills it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use arctern_types::jsonrpc::{JsonRpcMessage, JsonRpcNotification, RequestId};
use arctern_types::meta::SUBSCRIPTION_ID_KEY;
use arctern_types::methods;
use arctern_types::notifications::CancelledNotificationParams;
use arctern_types::progress::ProgressToken;
use arctern_types::{ErrorObject, JsonRpcErrorResponse};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream};
use serde::Deserialize;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::transport::{MessageStream, OutgoingMessage, RequestSink, Transport, UnroutedSink};
use crate::{Error, ErrorKind, Result};

/// The default bound on one line (one message) from the server.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;
/// How long shutdown waits at each step (after closing stdin, after `SIGTERM`) by default.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The variables of this process a child inherits by default (what the TypeScript and Python
/// SDKs pass too): enough to find programs and a home, never tokens or keys.
#[cfg(not(windows))]
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
/// The variables of this process a child inherits by default (what the TypeScript and Python
/// SDKs pass too): enough to find programs and a home, never tokens or keys.
#[cfg(windows)]
pub const DEFAULT_INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// Which of this process's environment variables a child inherits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Inherit {
    /// [`DEFAULT_INHERITED_ENV`].
    Default,
    /// Everything.
    All,
    /// Nothing.
    Nothing,
}

/// Notifications buffered per call before further ones are dropped (the final response is
/// never dropped).
const NOTIFICATION_BUFFER: usize = 256;
/// Messages queued for the child's stdin.
const WRITE_QUEUE: usize = 1024;

/// What happens to the child's stderr.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum StderrMode {
    /// Passed through to this process's stderr (the default).
    #[default]
    Inherit,
    /// Discarded.
    Null,
    /// Each line logged with `tracing` (target `arctern::stdio::stderr`, level info).
    Log,
    /// Each line handed to a callback.
    Callback(Arc<dyn Fn(&str) + Send + Sync>),
}

impl fmt::Debug for StderrMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StderrMode::Inherit => "Inherit",
            StderrMode::Null => "Null",
            StderrMode::Log => "Log",
            StderrMode::Callback(_) => "Callback",
        })
    }
}

/// The command that starts a stdio MCP server.
///
/// The child inherits only [`DEFAULT_INHERITED_ENV`] from this process's environment, plus
/// what [`env`](Self::env) sets: a server gets no token or key it was not given.
/// [`inherit_env`](Self::inherit_env) passes everything instead.
///
/// ```no_run
/// # async fn run() -> arctern::Result<()> {
/// use arctern::client::Client;
/// use arctern::transport::stdio::client::StdioCommand;
///
/// let client = Client::builder()
///     .connect_stdio(StdioCommand::new("my-mcp-server").arg("--quiet"))
///     .await?;
/// # let _ = client; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    inherit: Inherit,
    cwd: Option<PathBuf>,
    stderr: StderrMode,
    shutdown_grace: Duration,
    max_message_size: usize,
}

impl StdioCommand {
    /// Runs `program` (looked up in `PATH`).
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            inherit: Inherit::Default,
            cwd: None,
            stderr: StderrMode::default(),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Starts the child with an empty environment (plus what [`env`](Self::env) sets).
    pub fn env_clear(mut self) -> Self {
        self.inherit = Inherit::Nothing;
        self
    }

    /// Passes this process's whole environment to the child (plus what
    /// [`env`](Self::env) sets), instead of [`DEFAULT_INHERITED_ENV`] only.
    pub fn inherit_env(mut self) -> Self {
        self.inherit = Inherit::All;
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// What happens to the child's stderr (default: passed through).
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// Hands each stderr line of the child to `f`.
    pub fn on_stderr(self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr(StderrMode::Callback(Arc::new(f)))
    }

    /// How long shutdown waits after closing stdin, and again after `SIGTERM`.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The longest line (message) accepted from the server.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1024);
        self
    }
}

/// A stdio client transport: a child process speaking MCP on its stdin and stdout.
pub struct StdioTransport {
    shared: Arc<Shared>,
    child: Arc<Mutex<Option<Child>>>,
    grace: Duration,
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

/// A call waiting for its answer.
struct Pending {
    notes: mpsc::Sender<JsonRpcMessage>,
    done: oneshot::Sender<Result<JsonRpcMessage>>,
}

struct Shared {
    pending: Mutex<HashMap<RequestId, Pending>>,
    writer: Mutex<Option<mpsc::Sender<Bytes>>>,
    unrouted: RwLock<Option<UnroutedSink>>,
    /// Where server→client requests go (legacy sessions); without one they are refused.
    requests: RwLock<Option<RequestSink>>,
    /// Why the connection is gone, once it is.
    closed: Mutex<Option<(ErrorKind, String)>>,
}

impl Shared {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn writer(&self) -> Option<mpsc::Sender<Bytes>> {
        self.writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn closed_error(&self) -> Option<Error> {
        self.closed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(kind, why)| Error::new(*kind, why.clone()))
    }

    /// Ends the connection: every call in flight fails with `kind`.
    fn fail_all(&self, kind: ErrorKind, why: &str) {
        {
            let mut closed = self.closed.lock().unwrap_or_else(|e| e.into_inner());
            if closed.is_none() {
                *closed = Some((kind, why.to_owned()));
            }
        }
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        let pending: Vec<Pending> = self.lock_pending().drain().map(|(_, p)| p).collect();
        for p in pending {
            let _ = p.done.send(Err(Error::new(kind, why.to_owned())));
        }
    }

    /// Routes one message from the server.
    fn route(&self, message: JsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(ref r) => {
                let id = r.id.clone();
                self.finish(&id, message);
            }
            JsonRpcMessage::Error(ref e) => match e.id.clone() {
                Some(id) => self.finish(&id, message),
                None => tracing::warn!(error = %e.error, "the server sent an error without an id"),
            },
            JsonRpcMessage::Notification(note) => self.route_notification(note),
            JsonRpcMessage::Request(r) => {
                let sink = self
                    .requests
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                if let Some(sink) = sink {
                    sink(r);
                    return;
                }
                tracing::warn!(method = %r.method, "the server sent a request; 2026-07-28 servers send none");
                let answer =
                    JsonRpcErrorResponse::new(Some(r.id), ErrorObject::method_not_found(&r.method));
                if let (Some(writer), Ok(bytes)) = (self.writer(), serde_json::to_vec(&answer)) {
                    let _ = writer.try_send(Bytes::from(bytes));
                }
            }
        }
    }

    fn finish(&self, id: &RequestId, message: JsonRpcMessage) {
        match self.lock_pending().remove(id) {
            Some(p) => {
                let _ = p.done.send(Ok(message));
            }
            None => tracing::debug!(%id, "dropped a response to no pending request"),
        }
    }

    fn route_notification(&self, note: JsonRpcNotification) {
        #[derive(Deserialize)]
        struct Routing {
            #[serde(rename = "progressToken")]
            progress_token: Option<ProgressToken>,
            #[serde(rename = "_meta")]
            meta: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let params = note.params.as_deref().map(|p| p.get()).unwrap_or("{}");
        if note.method == methods::NOTIFICATIONS_CANCELLED {
            // From a server, this only ever ends a subscription.
            if let Ok(p) = serde_json::from_str::<CancelledNotificationParams>(params) {
                let id = p.request_id.clone();
                self.finish(&id, JsonRpcMessage::Notification(note));
            }
            return;
        }
        let routing = serde_json::from_str::<Routing>(params).ok();
        let target = routing.and_then(|r| {
            if note.method == methods::NOTIFICATIONS_PROGRESS {
                r.progress_token.map(|t| match t {
                    ProgressToken::Number(n) => RequestId::Number(n),
                    ProgressToken::String(s) => RequestId::String(s),
                })
            } else {
                r.meta
                    .and_then(|m| m.get(SUBSCRIPTION_ID_KEY).cloned())
                    .and_then(|v| RequestId::deserialize(v).ok())
            }
        });
        if let Some(id) = target {
            let pending = self.lock_pending();
            if let Some(p) = pending.get(&id) {
                if p.notes
                    .try_send(JsonRpcMessage::Notification(note))
                    .is_err()
                {
                    tracing::debug!(%id, "dropped a notification for a call that does not keep up");
                }
                return;
            }
        }
        let sink = self
            .unrouted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match sink {
            Some(sink) => sink(note),
            None => tracing::debug!(method = %note.method, "dropped an unrouted notification"),
        }
    }
}

impl StdioTransport {
    /// Starts the child process. Needs a Tokio runtime.
    pub fn spawn(command: StdioCommand) -> Result<Self> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        match command.inherit {
            Inherit::All => {}
            Inherit::Nothing => {
                cmd.env_clear();
            }
            Inherit::Default => {
                cmd.env_clear();
                for name in DEFAULT_INHERITED_ENV {
                    if let Some(value) = std::env::var_os(name) {
                        cmd.env(name, value);
                    }
                }
            }
        }
        cmd.envs(command.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        cmd.stderr(match command.stderr {
            StderrMode::Inherit => Stdio::inherit(),
            StderrMode::Null => Stdio::null(),
            StderrMode::Log | StderrMode::Callback(_) => Stdio::piped(),
        });
        let mut child = cmd.spawn().map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("could not start {:?}", command.program),
            )
            .with_source(e)
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::new(
                ErrorKind::Io,
                "the child has no stdin/stdout pipes",
            ));
        };
        if let Some(stderr) = child.stderr.take() {
            let sink: Arc<dyn Fn(&str) + Send + Sync> = match command.stderr {
                StderrMode::Callback(f) => f,
                _ => Arc::new(|line: &str| {
                    tracing::info!(target: "arctern::stdio::stderr", "{line}");
                }),
            };
            let max = command.max_message_size;
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                while let Ok(outcome) = read_line(&mut reader, &mut line, max).await {
                    if matches!(outcome, Line::Eof) {
                        break;
                    }
                    let text = String::from_utf8_lossy(&line);
                    sink(text.trim_end_matches('\r'));
                    line.clear();
                }
            });
        }
        let shared = start(stdout, stdin, command.max_message_size);
        Ok(StdioTransport {
            shared,
            child: Arc::new(Mutex::new(Some(child))),
            grace: command.shutdown_grace,
        })
    }

    /// A transport over any byte stream pair (a socket, a pipe, an in-memory duplex) that
    /// carries newline-delimited MCP messages: `reader` is what the server writes, `writer`
    /// what it reads. Closing the transport shuts `writer` down. Needs a Tokio runtime.
    pub fn from_io<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        StdioTransport {
            shared: start(reader, writer, DEFAULT_MAX_MESSAGE_SIZE),
            child: Arc::new(Mutex::new(None)),
            grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(Child::id)
    }
}

/// Starts the reader and writer tasks.
fn start<R, W>(reader: R, writer: W, max: usize) -> Arc<Shared>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(WRITE_QUEUE);
    let shared = Arc::new(Shared {
        pending: Mutex::new(HashMap::new()),
        writer: Mutex::new(Some(tx)),
        unrouted: RwLock::new(None),
        requests: RwLock::new(None),
        closed: Mutex::new(None),
    });
    tokio::spawn(write_loop(BufWriter::new(writer), rx, shared.clone()));
    tokio::spawn(read_loop(BufReader::new(reader), shared.clone(), max));
    shared
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut stdin: BufWriter<W>,
    mut rx: mpsc::Receiver<Bytes>,
    shared: Arc<Shared>,
) {
    while let Some(message) = rx.recv().await {
        let mut result = stdin.write_all(&message).await;
        if result.is_ok() {
            result = stdin.write_all(b"\n").await;
        }
        // Batch: flush only when nothing else is queued.
        if result.is_ok() && rx.is_empty() {
            result = stdin.flush().await;
        }
        if let Err(e) = result {
            tracing::debug!(error = %e, "writing to the server's stdin failed");
            shared.fail_all(ErrorKind::Closed, "the server's stdin is closed");
            return;
        }
    }
    // Every sender is gone (shutdown): closing stdin tells the server to exit.
    let _ = stdin.shutdown().await;
}

async fn read_loop<R: AsyncBufRead + Unpin>(mut reader: R, shared: Arc<Shared>, max: usize) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut reader, &mut line, max).await {
            Ok(Line::Complete) => {}
            Ok(Line::Eof) => {
                shared.fail_all(ErrorKind::Closed, "the server closed its stdout");
                return;
            }
            Ok(Line::TooLong) => {
                tracing::warn!(max, "the server sent a line longer than the message bound");
                shared.fail_all(
                    ErrorKind::Transport,
                    "the server sent a message larger than the bound",
                );
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading the server's stdout failed");
                shared.fail_all(ErrorKind::Closed, "the server's stdout broke");
                return;
            }
        }
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match JsonRpcMessage::from_slice(text) {
            Ok(message) => shared.route(message),
            Err(e) => match e.id.clone() {
                // A malformed answer to a known call fails that call.
                Some(id) => {
                    let pending = shared.lock_pending().remove(&id);
                    if let Some(p) = pending {
                        let _ = p.done.send(Err(Error::new(
                            ErrorKind::Transport,
                            "the server sent a malformed message",
                        )
                        .with_source(e)));
                    }
                }
                None => tracing::warn!(
                    line = %String::from_utf8_lossy(&text[..text.len().min(200)]),
                    "skipped a line from the server that is not a JSON-RPC message"
                ),
            },
        }
    }
}

enum Line {
    Complete,
    Eof,
    TooLong,
}

/// Reads one line into `buf` (without the newline), never holding more than `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if buf.len() + chunk.len() > max {
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(chunk);
        let used = found.unwrap_or(chunk.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(Line::Complete);
        }
    }
}

/// The messages of one call; dropped early, it cancels the call.
struct CallStream {
    id: RequestId,
    notes: mpsc::Receiver<JsonRpcMessage>,
    done: oneshot::Receiver<Result<JsonRpcMessage>>,
    stashed: Option<Result<JsonRpcMessage>>,
    finished: bool,
    shared: Arc<Shared>,
}

impl Stream for CallStream {
    type Item = Result<JsonRpcMessage>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        if let Some(last) = this.stashed.take() {
            if let Ok(note) = this.notes.try_recv() {
                this.stashed = Some(last);
                return Poll::Ready(Some(Ok(note)));
            }
            this.finished = true;
            return Poll::Ready(Some(last));
        }
        if let Poll::Ready(Some(note)) = this.notes.poll_recv(cx) {
            return Poll::Ready(Some(Ok(note)));
        }
        match Pin::new(&mut this.done).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(result) => {
                let last = result.unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::Closed,
                        "the connection to the server closed",
                    ))
                });
                // Notifications sent before the final message come first.
                if let Ok(note) = this.notes.try_recv() {
                    this.stashed = Some(last);
                    return Poll::Ready(Some(Ok(note)));
                }
                this.finished = true;
                Poll::Ready(Some(last))
            }
        }
    }
}

impl Drop for CallStream {
    fn drop(&mut self) {
        if self.finished || self.stashed.is_some() {
            return;
        }
        if self.shared.lock_pending().remove(&self.id).is_none() {
            return;
        }
        let note = JsonRpcNotification::new(
            methods::NOTIFICATIONS_CANCELLED,
            CancelledNotificationParams::new(self.id.clone())
                .with_reason("the client abandoned the request"),
        );
        let (Some(writer), Ok(bytes)) = (self.shared.writer(), serde_json::to_vec(&note)) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(bytes)) = writer.try_send(Bytes::from(bytes))
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                let _ = writer.send(bytes).await;
            });
        }
    }
}

impl Transport for StdioTransport {
    fn send(&self, request: OutgoingMessage) -> BoxFuture<'static, Result<MessageStream>> {
        let shared = self.shared.clone();
        async move {
            if let Some(e) = shared.closed_error() {
                return Err(e);
            }
            let Some(id) = request.id.clone() else {
                return Err(Error::new(ErrorKind::Config, "a request needs an id"));
            };
            let Some(writer) = shared.writer() else {
                return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
            };
            let (notes_tx, notes) = mpsc::channel(NOTIFICATION_BUFFER);
            let (done_tx, done) = oneshot::channel();
            {
                let mut pending = shared.lock_pending();
                if pending.contains_key(&id) {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("request id {id} is already in flight"),
                    ));
                }
                pending.insert(
                    id.clone(),
                    Pending {
                        notes: notes_tx,
                        done: done_tx,
                    },
                );
            }
            // From here on, dropping the stream unregisters the call (and cancels it).
            let stream = CallStream {
                id,
                notes,
                done,
                stashed: None,
                finished: false,
                shared: shared.clone(),
            };
            if writer.send(request.body).await.is_err() {
                let mut stream = stream;
                stream.finished = true;
                shared.lock_pending().remove(&stream.id);
                return Err(shared
                    .closed_error()
                    .unwrap_or_else(|| Error::new(ErrorKind::Closed, "the transport is closed")));
            }
            Ok(Box::pin(stream) as MessageStream)
        }
        .boxed()
    }

    fn notify(&self, notification: OutgoingMessage) -> BoxFuture<'static, Result<()>> {
        let shared = self.shared.clone();
        async move {
            let Some(writer) = shared.writer() else {
                return Err(shared
                    .closed_error()
                    .unwrap_or_else(|| Error::new(ErrorKind::Closed, "the transport is closed")));
            };
            writer
                .send(notification.body)
                .await
                .map_err(|_| Error::new(ErrorKind::Closed, "the transport is closed"))
        }
        .boxed()
    }

    fn set_unrouted_sink(&self, sink: UnroutedSink) {
        *self
            .shared
            .unrouted
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    fn set_request_sink(&self, sink: RequestSink) {
        *self
            .shared
            .requests
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    fn close(&self) -> BoxFuture<'static, Result<()>> {
        let shared = self.shared.clone();
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        let grace = self.grace;
        async move {
            // Closing stdin is the polite request to exit.
            shared
                .writer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(child) = child {
                stop(child, grace).await;
            }
            shared.fail_all(ErrorKind::Closed, "the transport is closed");
            Ok(())
        }
        .boxed()
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.shared
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let (Some(child), Ok(handle)) = (child, tokio::runtime::Handle::try_current()) {
            let grace = self.grace;
            handle.spawn(stop(child, grace));
        }
        // Without a runtime the child handle is dropped here, which kills it.
    }
}

/// Waits for the child to exit after its stdin closed; then `SIGTERM`; then kills it.
async fn stop(mut child: Child, grace: Duration) {
    if tokio::time::timeout(grace, child.wait()).await.is_ok() {
        return;
    }
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // No signal API without `unsafe` or another dependency: ask `kill(1)`.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_bounded_lines() {
        let input: &[u8] = b"one\r\ntwo\n\nthree-is-long\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        loop {
            buf.clear();
            match read_line(&mut reader, &mut buf, 8).await.unwrap() {
                Line::Complete => lines.push(String::from_utf8(buf.clone()).unwrap()),
                Line::Eof => break,
                Line::TooLong => {
                    lines.push("<too long>".into());
                    break;
                }
            }
        }
        assert_eq!(lines, ["one\r", "two", "", "<too long>"]);
    }
}
