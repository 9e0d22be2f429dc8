//! The inspector's web server: the page (compiled in), and the small JSON API it calls. Every
//! request passes [`guard`] first: the `Host` must be this server's own loopback name and
//! port (DNS rebinding), a cross-site or foreign-origin request is refused (CSRF), and the
//! API wants the launch token as a bearer header (never a cookie, never in the page).
//! Every response carries a strict CSP and the no-referrer, nosniff and no-store headers.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};
use subtle::ConstantTimeEq as _;

use super::flows::{Call, Inspector};

/// The page's policy: our own script and style files only (no inline script, no eval),
/// images only as `data:` (results carry them inline), no frames of us anywhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                       img-src 'self' data:; media-src data:; connect-src 'self'; \
                       form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// What [`guard`] checks against.
pub struct Guard {
    /// The launch token, as the page sends it after `Bearer `.
    pub token: String,
    /// The `Host` values this server answers to (`127.0.0.1:PORT`, `localhost:PORT`, …).
    pub hosts: Vec<String>,
}

impl Guard {
    fn origin_ok(&self, origin: &str) -> bool {
        self.hosts.iter().any(|h| origin == format!("http://{h}"))
    }
}

/// The router, behind the guard.
pub fn router(inspector: Arc<Inspector>, guard: Arc<Guard>, max_body: usize) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route("/api/connection", get(connection))
        .route("/api/tools", get(tools))
        .route("/api/prompts", get(prompts))
        .route("/api/resources", get(resources))
        .route("/api/call", post(call))
        .route("/api/flows", get(flows))
        .route("/api/questions", get(questions))
        .route("/api/questions/{id}", post(answer))
        .route("/api/frames", get(frames))
        .route("/api/flows/{id}/lab", post(lab))
        .fallback(|| async { refuse(404, "not found") })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(inspector)
        .layer(middleware::from_fn_with_state(guard, guard_layer))
}

fn asset(text: &'static str, kind: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

fn reply(status: u16, body: &Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn refuse(status: u16, message: &str) -> Response {
    reply(status, &json!({ "error": message }))
}

fn ok(body: Value) -> Response {
    reply(200, &body)
}

/// Why a request is refused before any route sees it, if it is.
pub fn check(guard: &Guard, method: &Method, path: &str, headers: &HeaderMap) -> Option<Response> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST).unwrap_or("");
    if !guard.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        // Another name for this address: a DNS-rebinding page, or a proxy.
        return Some(refuse(
            421,
            "this inspector answers only to its own loopback address",
        ));
    }
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
    {
        return Some(refuse(403, "cross-site requests are refused"));
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| guard.origin_ok(o))
    {
        return Some(refuse(403, "requests from other origins are refused"));
    }
    if path.starts_with("/api/") {
        let given = text(header::AUTHORIZATION)
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let same = given.len() == guard.token.len()
            && bool::from(given.as_bytes().ct_eq(guard.token.as_bytes()));
        if !same {
            return Some(refuse(
                401,
                "missing or wrong token: open the URL the inspector printed",
            ));
        }
        // A form post from anywhere cannot set this type without a preflight.
        let json = text(header::CONTENT_TYPE).is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|t| t.trim() == "application/json")
        });
        if *method == Method::POST && !json {
            return Some(refuse(415, "send application/json"));
        }
    }
    None
}

/// The headers every response carries.
pub fn secure(headers: &mut HeaderMap) {
    let set = |h: &mut HeaderMap, name: &'static str, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(headers, "content-security-policy", CSP);
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "cache-control", "no-store");
    set(headers, "cross-origin-opener-policy", "same-origin");
    set(headers, "cross-origin-resource-policy", "same-origin");
    set(headers, "x-frame-options", "DENY");
}

async fn guard_layer(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let refused = check(
        &guard,
        request.method(),
        request.uri().path(),
        request.headers(),
    );
    let mut response = match refused {
        Some(r) => r,
        None => next.run(request).await,
    };
    secure(response.headers_mut());
    response
}

type Shared = State<Arc<Inspector>>;

async fn connection(State(i): Shared) -> Response {
    ok(i.connection())
}

async fn tools(State(i): Shared) -> Response {
    match i.client().list_tools().await {
        Ok(tools) => {
            let list: Vec<Value> = tools
                .iter()
                .map(|t| {
                    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
                    let required: Vec<&str> = t
                        .input_schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let params: Vec<Value> = t
                        .input_schema
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|props| {
                            props
                                .iter()
                                .map(|(name, schema)| {
                                    json!({
                                        "name": name,
                                        "required": required.contains(&name.as_str()),
                                        "types": crate::args::allowed_types(schema),
                                        "enum": schema.get("enum"),
                                        "description": schema.get("description"),
                                    })
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    v["params"] = json!(params);
                    v
                })
                .collect();
            ok(json!(list))
        }
        Err(e) => refuse(502, &format!("tools/list: {e}")),
    }
}

async fn prompts(State(i): Shared) -> Response {
    match i.client().list_prompts().await {
        Ok(p) => ok(json!(p)),
        Err(e) => refuse(502, &format!("prompts/list: {e}")),
    }
}

async fn resources(State(i): Shared) -> Response {
    match crate::inspect::list_resources(i.client()).await {
        Ok((r, t)) => ok(json!({ "resources": r, "templates": t })),
        Err(f) => refuse(502, &f.message),
    }
}

fn body_json(body: &Bytes) -> Result<Value, Box<Response>> {
    serde_json::from_slice(body)
        .map_err(|e| Box::new(refuse(400, &format!("the body is not JSON: {e}"))))
}

/// `{"kind": "tool", "name": …, "args": {"k": "raw text"}, "json": "{…}"}`: the arguments
/// are typed from the tool's schema exactly as `arctern call --arg k=raw` types them.
async fn call(State(i): Shared, body: Bytes) -> Response {
    let body = match body_json(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let pairs: Vec<String> = body
        .get("args")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) if s.is_empty() => None,
                    Value::String(s) => Some(format!("{k}={s}")),
                    Value::Null => None,
                    other => Some(format!("{k}={other}")),
                })
                .collect()
        })
        .unwrap_or_default();
    let json_text = body
        .get("json")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    let made = match body.get("kind").and_then(Value::as_str) {
        Some("tool") => match i.client().list_tools().await {
            Err(e) => return refuse(502, &format!("tools/list: {e}")),
            Ok(tools) => crate::inspect::find_tool(&tools, &name)
                .map_err(|f| f.message)
                .and_then(|tool| crate::args::build(&tool.input_schema, json_text, &pairs))
                .map(|args| Call::Tool(name.clone(), args)),
        },
        Some("prompt") => match i.client().list_prompts().await {
            Err(e) => return refuse(502, &format!("prompts/list: {e}")),
            Ok(prompts) => crate::inspect::find_prompt(&prompts, &name)
                .and_then(|p| crate::inspect::prompt_arguments(p, &pairs))
                .map_err(|f| f.message)
                .map(|args| {
                    Call::Prompt(
                        name.clone(),
                        args.into_iter()
                            .map(|(k, v)| (k, Value::String(v)))
                            .collect(),
                    )
                }),
        },
        Some("resource") if !name.is_empty() => Ok(Call::Resource(name.clone())),
        _ => Err("give kind (tool, prompt or resource) and name".to_owned()),
    };
    match made {
        Err(message) => refuse(400, &message),
        Ok(call) => match i.start(call) {
            Ok(id) => ok(json!({ "flow": id })),
            Err((status, message)) => refuse(status, &message),
        },
    }
}

async fn flows(State(i): Shared) -> Response {
    ok(json!(i.flows()))
}

async fn questions(State(i): Shared) -> Response {
    ok(json!(i.questions()))
}

async fn answer(State(i): Shared, Path(id): Path<u64>, body: Bytes) -> Response {
    let body = match body_json(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    match i.answer(id, &body) {
        Ok(()) => ok(json!({ "ok": true })),
        Err((status, message)) => refuse(status, &message),
    }
}

async fn frames(State(i): Shared) -> Response {
    let (frames, dropped) = i.frames.snapshot();
    ok(json!({ "frames": frames, "dropped": dropped }))
}

/// `{"round": N, "action": "replay" | "tamper" | "drop"}`: see [`Inspector::lab`].
async fn lab(State(i): Shared, Path(id): Path<u64>, body: Bytes) -> Response {
    let body = match body_json(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let round = body
        .get("round")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX);
    let action = body.get("action").and_then(Value::as_str).unwrap_or("");
    match i.lab(id, usize::try_from(round).unwrap_or(usize::MAX), action) {
        Ok(()) => ok(json!({ "ok": true })),
        Err((status, message)) => refuse(status, &message),
    }
}
