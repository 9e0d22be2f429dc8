//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1, RFC 6750 §3): schemes with
//! comma-separated `name=value` parameters, values as tokens or quoted strings.

use std::collections::BTreeMap;

use http::HeaderMap;
use http::header::WWW_AUTHENTICATE;

/// One challenge: its scheme (lower case) and parameters (names in lower case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) scheme: String,
    pub(crate) params: BTreeMap<String, String>,
}

impl Challenge {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

/// Every challenge of every `WWW-Authenticate` header, in order. Malformed parts end the
/// parse of their header; what was read before them is kept.
pub(crate) fn parse(headers: &HeaderMap) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in headers.get_all(WWW_AUTHENTICATE) {
        if let Ok(text) = value.to_str() {
            parse_one(text, &mut out);
        }
    }
    out
}

/// The challenge to answer: the one of the scheme the request used (`sent`, such as
/// `DPoP` — a resource puts its error, like `insufficient_scope` or `use_dpop_nonce`, on that
/// one, RFC 9449 §7.1), else `Bearer`, else `DPoP`.
pub(crate) fn pick<'a>(challenges: &'a [Challenge], sent: Option<&str>) -> Option<&'a Challenge> {
    let scheme = |name: &str| challenges.iter().find(|c| c.scheme == name);
    sent.map(str::to_ascii_lowercase)
        .and_then(|sent| scheme(&sent))
        .or_else(|| scheme("bearer"))
        .or_else(|| scheme("dpop"))
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn parse_one(text: &str, out: &mut Vec<Challenge>) {
    let mut rest = text.trim_start();
    let mut current: Option<Challenge> = None;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let end = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        let word = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if let Some(value_part) = after.strip_prefix('=')
            && current.is_some()
            && !value_part.starts_with('=')
        {
            // A parameter of the current challenge.
            let value_part = value_part.trim_start_matches([' ', '\t']);
            let (value, remaining) = match value_part.strip_prefix('"') {
                Some(quoted) => match read_quoted(quoted) {
                    Some(v) => v,
                    None => break,
                },
                None => {
                    let end = value_part
                        .find(|c: char| !is_token_char(c) && c != '/' && c != ':' && c != '=')
                        .unwrap_or(value_part.len());
                    (value_part[..end].to_owned(), &value_part[end..])
                }
            };
            if let Some(c) = current.as_mut() {
                c.params.insert(word.to_ascii_lowercase(), value);
            }
            rest = remaining;
            continue;
        }
        // A new scheme (its token68 form, if any, is ignored).
        if let Some(c) = current.take() {
            out.push(c);
        }
        current = Some(Challenge {
            scheme: word.to_ascii_lowercase(),
            params: BTreeMap::new(),
        });
        rest = after;
    }
    if let Some(c) = current {
        out.push(c);
    }
}

/// A quoted string after its opening quote: its value and what follows the closing quote.
fn read_quoted(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &s[i + 1..])),
            '\\' => value.push(chars.next()?.1),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenges(values: &[&str]) -> Vec<Challenge> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(WWW_AUTHENTICATE, v.parse().unwrap());
        }
        parse(&headers)
    }

    #[test]
    fn reads_bearer_parameters_quoted_and_bare() {
        let c = challenges(&[
            r#"Bearer realm="mcp", error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp""#,
        ]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "bearer");
        assert_eq!(c[0].param("scope"), Some("a b"));
        assert_eq!(c[0].param("error"), Some("insufficient_scope"));
        assert_eq!(
            c[0].param("resource_metadata"),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = challenges(&[r#"Bearer error=invalid_token, Scope="x\"y""#]);
        assert_eq!(c[0].param("error"), Some("invalid_token"));
        assert_eq!(c[0].param("scope"), Some("x\"y"));
    }

    #[test]
    fn several_challenges_in_one_header_and_across_headers() {
        let c = challenges(&[
            r#"Basic realm="a", DPoP error="use_dpop_nonce", algs="ES256""#,
            "Bearer",
        ]);
        let schemes: Vec<&str> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["basic", "dpop", "bearer"]);
        assert_eq!(c[1].param("algs"), Some("ES256"));
        assert_eq!(pick(&c, None).unwrap().scheme, "bearer");
        // A request sent with DPoP reads the DPoP challenge, which carries its error.
        assert_eq!(
            pick(&c, Some("DPoP")).unwrap().param("error"),
            Some("use_dpop_nonce")
        );
        assert_eq!(pick(&c, Some("Bearer")).unwrap().scheme, "bearer");
        assert_eq!(pick(&c, Some("Negotiate")).unwrap().scheme, "bearer");
    }

    #[test]
    fn malformed_input_is_cut_short_not_fatal() {
        let c = challenges(&[r#"Bearer scope="unterminated"#]);
        assert_eq!(c[0].scheme, "bearer");
        assert!(c[0].params.is_empty());
        assert!(challenges(&["=,=,"]).is_empty());
        let c = challenges(&["Newauth abc123=="]);
        assert_eq!(c[0].scheme, "newauth");
    }
}
