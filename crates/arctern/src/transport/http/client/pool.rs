//! The built-in connection pool: HTTP/1.1 keep-alive connections over TCP, opened on
//! demand up to a limit, reused while idle.

use std::net::SocketAddr;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::OutgoingMessage;
use crate::{Error, ErrorKind, Result};

use super::{Inner, MCP_PROTOCOL_VERSION, transport_error};

/// Aborts a task when dropped: dropping a connection closes its socket at once.
pub(super) struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 connection.
pub(super) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    _task: AbortOnDrop,
    _permit: OwnedSemaphorePermit,
}

pub(super) struct Idle {
    conn: Conn,
    since: Instant,
}

impl Inner {
    pub(super) fn checkout(&self) -> Option<Conn> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(idle) = pool.pop() {
            if !idle.conn.sender.is_closed() && idle.since.elapsed() < self.idle_timeout {
                return Some(idle.conn);
            }
        }
        None
    }

    pub(super) fn checkin(&self, conn: Conn) {
        if self.closed.is_cancelled() || conn.sender.is_closed() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < self.max_idle {
            pool.push(Idle {
                conn,
                since: Instant::now(),
            });
            drop(pool);
            self.returned.notify_one();
        }
    }

    /// A pooled connection, or a new one once the connection limit allows it.
    pub(super) async fn acquire(&self) -> Result<(Conn, bool)> {
        loop {
            let returned = self.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(conn) = self.checkout() {
                return Ok((conn, true));
            }
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return Ok((self.connect(permit).await?, false));
            }
            tokio::select! {
                () = &mut returned => {}
                permit = self.permits.clone().acquire_owned() => {
                    let permit = permit.map_err(|_| Error::new(ErrorKind::Closed, "the transport is closed"))?;
                    return Ok((self.connect(permit).await?, false));
                }
                () = self.closed.cancelled() => {
                    return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
                }
            }
        }
    }

    pub(super) async fn connect(&self, permit: OwnedSemaphorePermit) -> Result<Conn> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| transport_error(format!("cannot resolve {}", self.host)).with_source(e))?
            .collect();
        let mut last = None;
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    // Small request/response messages: never wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let (sender, connection) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream))
                            .await
                            .map_err(|e| transport_error("HTTP handshake failed").with_source(e))?;
                    let task = tokio::spawn(async move {
                        if let Err(e) = connection.await {
                            tracing::debug!(error = %e, "HTTP connection ended");
                        }
                    });
                    return Ok(Conn {
                        sender,
                        _task: AbortOnDrop(task),
                        _permit: permit,
                    });
                }
                Ok(Err(e)) => last = Some(Error::from(e)),
                Err(_) => {
                    last = Some(Error::new(
                        ErrorKind::Timeout,
                        format!("connecting to {addr} timed out"),
                    ))
                }
            }
        }
        Err(last.unwrap_or_else(|| transport_error(format!("no address for {}", self.host))))
    }

    /// Sends a message on a pooled (or new) connection.
    pub(super) async fn dispatch(
        &self,
        message: &OutgoingMessage,
    ) -> Result<(http::Response<Incoming>, Conn)> {
        if let Some(version) = message.headers.get(MCP_PROTOCOL_VERSION) {
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.clone());
        }
        self.exchange(|| self.request(message)).await
    }

    /// Sends what `make` builds on a pooled (or new) connection, rebuilding it for a retry.
    pub(super) async fn exchange(
        &self,
        make: impl Fn() -> Request<Full<Bytes>>,
    ) -> Result<(http::Response<Incoming>, Conn)> {
        if self.closed.is_cancelled() {
            return Err(Error::new(ErrorKind::Closed, "the transport is closed"));
        }
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut conn, reused) = self.acquire().await?;
            if let Err(e) = conn.sender.ready().await {
                if reused && tries < 8 {
                    continue;
                }
                return Err(transport_error("the HTTP connection closed").with_source(e));
            }
            match conn.sender.send_request(make()).await {
                Ok(response) => return Ok((response, conn)),
                // Not sent at all (the pooled connection was going away): safe to retry.
                Err(e) if reused && e.is_canceled() && tries < 8 => continue,
                Err(e) => return Err(transport_error("the HTTP request failed").with_source(e)),
            }
        }
    }
}
