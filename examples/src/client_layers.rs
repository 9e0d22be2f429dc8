//! Client middleware (`ClientBuilder::layer`): a bearer token on every request, a retry
//! policy for a server that is briefly unavailable, and request logging.

use std::time::{Duration, Instant};

use arctern::client::middleware::{Middleware, Next, Request, from_fn};

/// Adds `Authorization: Bearer {token}` to every request.
pub fn bearer(token: &str) -> impl Middleware {
    let value = format!("Bearer {token}");
    from_fn(move |mut request: Request, next: Next| {
        let value = value.clone();
        async move {
            match value.parse() {
                Ok(value) => {
                    request
                        .headers_mut()
                        .insert(axum::http::header::AUTHORIZATION, value);
                }
                Err(_) => tracing::warn!("the token is not a valid header value; not sent"),
            }
            next.run(request).await
        }
    })
}

/// Sends a request again, up to `retries` times after `pause`, while the server answers
/// `503 Service Unavailable` or the connection fails. A server's JSON-RPC error is an
/// answer, never retried.
pub fn retry_unavailable(retries: u32, pause: Duration) -> impl Middleware {
    from_fn(move |request: Request, next: Next| async move {
        let mut left = retries;
        loop {
            match next.clone().run(request.clone()).await {
                Err(e) if left > 0 && (e.http_status() == Some(503) || e.is_transport()) => {
                    left -= 1;
                    tracing::info!(method = request.method(), error = %e, "retrying");
                    tokio::time::sleep(pause).await;
                }
                answer => return answer,
            }
        }
    })
}

/// Logs every request: its method, target, outcome and how long it took.
pub fn log_requests() -> impl Middleware {
    from_fn(|request: Request, next: Next| async move {
        let (method, target) = (request.method(), request.target().map(str::to_owned));
        let started = Instant::now();
        let answer = next.run(request).await;
        tracing::info!(
            method,
            target = target.as_deref().unwrap_or("-"),
            ok = answer.is_ok(),
            elapsed = ?started.elapsed(),
            "request"
        );
        answer
    })
}
