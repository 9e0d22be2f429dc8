//! Reading request headers: `Content-Type`, `Accept`, and the MCP headers that mirror the
//! body.

use http::HeaderMap;
use http::header::{ACCEPT, CONTENT_TYPE};

use crate::server::connection::WireHeaders;
use crate::transport::http::sentinel;

pub(crate) use crate::transport::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};

/// Whether the body is declared as JSON: `application/json` or an `application/*+json` type,
/// parameters (such as `charset`) ignored.
pub(crate) fn is_json_content(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case("json")
            || (sub.len() > 5 && sub.as_bytes()[sub.len() - 5..].eq_ignore_ascii_case(b"+json")))
}

/// Which response representations the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    /// Reads every `Accept` header; without one, the client accepts anything.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Accepts {
        let mut values = headers.get_all(ACCEPT).iter().peekable();
        if values.peek().is_none() {
            return Accepts {
                json: true,
                sse: true,
            };
        }
        let mut json = Best::default();
        let mut sse = Best::default();
        for value in values {
            // A header that is not visible ASCII cannot name either type.
            let Ok(value) = value.to_str() else { continue };
            for range in value.split(',') {
                let mut pieces = range.split(';');
                let media = pieces.next().unwrap_or("").trim();
                let Some((kind, sub)) = media.split_once('/') else {
                    continue;
                };
                let q = pieces
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                    .map_or(1.0, |(_, v)| v.trim().parse::<f32>().unwrap_or(1.0));
                json.offer(specificity(kind, sub, "application", "json"), q);
                sse.offer(specificity(kind, sub, "text", "event-stream"), q);
            }
        }
        Accepts {
            json: json.acceptable(),
            sse: sse.acceptable(),
        }
    }
}

/// The most specific media range matching one type, and its quality.
#[derive(Default)]
struct Best {
    specificity: u8,
    q: f32,
}

impl Best {
    fn offer(&mut self, specificity: u8, q: f32) {
        if specificity > self.specificity || (specificity == self.specificity && q > self.q) {
            self.specificity = specificity;
            self.q = q;
        }
    }

    fn acceptable(&self) -> bool {
        self.specificity > 0 && self.q > 0.0
    }
}

/// 3 for an exact match, 2 for `type/*`, 1 for `*/*`, 0 for no match.
fn specificity(kind: &str, sub: &str, want_kind: &str, want_sub: &str) -> u8 {
    let kind = kind.trim();
    let sub = sub.trim();
    if kind == "*" && sub == "*" {
        1
    } else if !kind.eq_ignore_ascii_case(want_kind) {
        0
    } else if sub == "*" {
        2
    } else if sub.eq_ignore_ascii_case(want_sub) {
        3
    } else {
        0
    }
}

/// The MCP headers the engine compares with the body.
pub(crate) fn wire_headers(headers: &HeaderMap) -> WireHeaders {
    WireHeaders {
        protocol_version: headers.get(MCP_PROTOCOL_VERSION).map(text),
        method: headers.get(MCP_METHOD).map(text),
        name: mcp_name(headers),
        params: mcp_params(headers),
    }
}

/// The prefix of the headers that mirror tool arguments, `Mcp-Param-{Name}`.
use crate::transport::headers::MCP_PARAM_PREFIX;

/// Every `Mcp-Param-{Name}` header, `{Name}` in lower case (as `http` spells names), value
/// decoded.
fn mcp_params(headers: &HeaderMap) -> Vec<(String, Result<String, String>)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let param = name.as_str().strip_prefix(MCP_PARAM_PREFIX)?;
            Some((param.to_owned(), sentinel::decode(value.as_bytes())))
        })
        .collect()
}

fn mcp_name(headers: &HeaderMap) -> Option<Result<String, String>> {
    let mut values = headers.get_all(MCP_NAME).iter();
    let first = values.next()?;
    if values.next().is_some() {
        // Intermediaries may disagree on which copy counts; refuse to guess.
        return Some(Err("the header is repeated".to_owned()));
    }
    Some(sentinel::decode(first.as_bytes()))
}

/// A header value as text; bytes that are not UTF-8 are replaced, so that the comparison
/// with the body fails instead of the value disappearing.
fn text(value: &http::HeaderValue) -> String {
    match value.to_str() {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
    }
}

/// Whether the request's `Mcp-Method` header names `method`.
pub(crate) fn mcp_method_is(headers: &HeaderMap, method: &str) -> bool {
    headers
        .get(MCP_METHOD)
        .is_some_and(|v| v.as_bytes() == method.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(values: &[&str]) -> Accepts {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(ACCEPT, v.parse().unwrap());
        }
        Accepts::from_headers(&h)
    }

    fn content(value: &str) -> bool {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, value.parse().unwrap());
        is_json_content(&h)
    }

    #[test]
    fn content_types() {
        assert!(content("application/json"));
        assert!(content("Application/JSON; charset=utf-8"));
        assert!(content("application/vnd.example+json"));
        assert!(!content("text/plain"));
        assert!(!content("application/x-www-form-urlencoded"));
        assert!(!content("application/jsonx"));
        assert!(!content("+json"));
        assert!(!is_json_content(&HeaderMap::new()));
    }

    #[test]
    fn accept_headers() {
        let both = Accepts {
            json: true,
            sse: true,
        };
        assert_eq!(accepts(&[]), both);
        assert_eq!(accepts(&["application/json, text/event-stream"]), both);
        assert_eq!(accepts(&["application/json", "text/event-stream"]), both);
        assert_eq!(accepts(&["*/*"]), both);
        assert_eq!(
            accepts(&["application/json"]),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accepts(&["text/*"]),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accepts(&["*/*, text/event-stream;q=0"]),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accepts(&["text/html"]),
            Accepts {
                json: false,
                sse: false
            }
        );
        assert_eq!(
            accepts(&["application/json;q=0.0, text/event-stream;q=0"]),
            Accepts {
                json: false,
                sse: false
            }
        );
    }
}
