//! `Host` and `Origin` checks against DNS rebinding and cross-site requests (spec §4.7).

use std::net::{Ipv4Addr, Ipv6Addr};

use http::header::{HOST, ORIGIN};
use http::request::Parts;

use super::config::HttpConfig;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    Host,
    Origin,
}

/// The checks of one service, with the localhost-only default resolved.
#[derive(Debug)]
pub(crate) struct Guard {
    localhost_only: bool,
    config: HttpConfig,
}

impl Guard {
    pub(crate) fn new(config: HttpConfig, localhost_only: bool) -> Self {
        Guard {
            localhost_only,
            config,
        }
    }

    /// Whether `Host` is checked at all: localhost-only mode, or a list of allowed hosts.
    pub(crate) fn checks_host(&self) -> bool {
        self.localhost_only || !self.config.allowed_hosts.is_empty()
    }

    pub(crate) fn check(&self, parts: &Parts) -> Result<(), Denied> {
        let host = request_host(parts);
        let check_host = self.checks_host();
        let authority = match host.and_then(parse_authority) {
            Some(a) => Some(a),
            None if check_host => return Err(Denied::Host),
            None => None,
        };
        if check_host
            && let Some((name, port)) = authority
            && !self.host_allowed(name, port)
        {
            return Err(Denied::Host);
        }
        let Some(origin) = parts.headers.get(ORIGIN) else {
            // Not from a browser, or a same-origin GET/HEAD: nothing to check.
            return Ok(());
        };
        if self.config.any_origin {
            return Ok(());
        }
        let Ok(origin) = origin.to_str() else {
            return Err(Denied::Origin);
        };
        // "Same origin as Host" means something only once Host itself was checked: in a
        // DNS-rebinding attack both name the attacker's host.
        let validated_host = authority.filter(|_| check_host);
        if self.origin_allowed(origin.trim(), validated_host) {
            Ok(())
        } else {
            Err(Denied::Origin)
        }
    }

    fn host_allowed(&self, name: &str, port: Option<u16>) -> bool {
        (self.localhost_only && is_loopback(name))
            || self.config.allowed_hosts.iter().any(|p| {
                p.host.eq_ignore_ascii_case(name) && p.port.is_none_or(|want| port == Some(want))
            })
    }

    fn origin_allowed(&self, origin: &str, host: Option<(&str, Option<u16>)>) -> bool {
        let origin = origin.strip_suffix('/').unwrap_or(origin);
        if self
            .config
            .allowed_origins
            .iter()
            .any(|o| o.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some((scheme, name, port)) = parse_origin(origin) else {
            // Includes the opaque origin "null", unless it was allowed above.
            return false;
        };
        if self.localhost_only && is_loopback(name) {
            return true;
        }
        // Same origin as the (validated) Host the request was sent to.
        let Some((host_name, host_port)) = host else {
            return false;
        };
        let default = default_port(scheme);
        host_name.eq_ignore_ascii_case(name) && port.or(default) == host_port.or(default)
    }
}

/// The request's host: the `Host` header, or the URI's authority (absolute-form requests,
/// HTTP/2).
fn request_host(parts: &Parts) -> Option<&str> {
    match parts.headers.get(HOST) {
        Some(h) => h.to_str().ok(),
        None => parts.uri.authority().map(|a| a.as_str()),
    }
}

/// Splits `host[:port]` (IPv6 in brackets); `None` when malformed.
pub(crate) fn parse_authority(s: &str) -> Option<(&str, Option<u16>)> {
    let s = s.trim();
    let (name, rest) = if s.starts_with('[') {
        let end = s.find(']')?;
        s.split_at(end + 1)
    } else {
        match s.find(':') {
            Some(i) => s.split_at(i),
            None => (s, ""),
        }
    };
    if name.is_empty() || name.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let port = match rest {
        "" | ":" => None,
        _ => {
            let digits = rest.strip_prefix(':')?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((name, port))
}

/// Splits `scheme://host[:port]`; `None` for `null` and anything malformed.
fn parse_origin(origin: &str) -> Option<(&str, &str, Option<u16>)> {
    let (scheme, authority) = origin.split_once("://")?;
    if scheme.is_empty() || authority.contains('/') {
        return None;
    }
    let (name, port) = parse_authority(authority)?;
    Some((scheme, name, port))
}

fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("http") {
        Some(80)
    } else if scheme.eq_ignore_ascii_case("https") {
        Some(443)
    } else {
        None
    }
}

/// `localhost`, an IPv4 loopback address, or the IPv6 loopback address in brackets.
pub(crate) fn is_loopback(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(host: Option<&str>, origin: Option<&str>) -> Parts {
        let mut b = http::Request::builder().method("POST").uri("/mcp");
        if let Some(h) = host {
            b = b.header(HOST, h);
        }
        if let Some(o) = origin {
            b = b.header(ORIGIN, o);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn local() -> Guard {
        Guard::new(HttpConfig::new(), true)
    }

    #[test]
    fn authorities() {
        assert_eq!(
            parse_authority("localhost:8000"),
            Some(("localhost", Some(8000)))
        );
        assert_eq!(parse_authority("[::1]:9"), Some(("[::1]", Some(9))));
        assert_eq!(parse_authority("[::1]"), Some(("[::1]", None)));
        assert_eq!(parse_authority("example.com"), Some(("example.com", None)));
        assert_eq!(parse_authority("a:b"), None);
        assert_eq!(parse_authority("a:1:2"), None);
        assert_eq!(parse_authority(":80"), None);
        assert_eq!(parse_authority("a:99999"), None);
        assert_eq!(parse_authority("[::1"), None);
    }

    #[test]
    fn loopback_names() {
        for ok in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.1.2.3",
            "[::1]",
            "localhost.",
        ] {
            assert!(is_loopback(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "10.0.0.1",
            "::1",
            "[::2]",
            "localhost.evil.com",
            "0.0.0.0",
        ] {
            assert!(!is_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn localhost_only_checks_host_and_origin() {
        let g = local();
        assert_eq!(g.check(&parts(Some("localhost:3000"), None)), Ok(()));
        assert_eq!(g.check(&parts(Some("127.0.0.1:1"), None)), Ok(()));
        assert_eq!(g.check(&parts(Some("[::1]:8080"), None)), Ok(()));
        assert_eq!(
            g.check(&parts(Some("localhost"), Some("http://localhost:5173"))),
            Ok(())
        );
        assert_eq!(g.check(&parts(Some("evil.com"), None)), Err(Denied::Host));
        assert_eq!(g.check(&parts(None, None)), Err(Denied::Host));
        assert_eq!(
            g.check(&parts(Some("evil.com:80"), Some("http://evil.com"))),
            Err(Denied::Host)
        );
        assert_eq!(
            g.check(&parts(Some("localhost:80"), Some("http://evil.com"))),
            Err(Denied::Origin)
        );
        assert_eq!(
            g.check(&parts(Some("localhost"), Some("null"))),
            Err(Denied::Origin)
        );
    }

    #[test]
    fn allowed_hosts_and_origins() {
        let config = HttpConfig::new()
            .allow_host("mcp.example.com")
            .allow_host("pinned.example.com:8443")
            .allow_origin("https://App.Example.com/");
        let g = Guard::new(config, false);
        assert_eq!(g.check(&parts(Some("MCP.example.com:1"), None)), Ok(()));
        assert_eq!(
            g.check(&parts(Some("pinned.example.com:8443"), None)),
            Ok(())
        );
        assert_eq!(
            g.check(&parts(Some("pinned.example.com:8444"), None)),
            Err(Denied::Host)
        );
        assert_eq!(
            g.check(&parts(Some("localhost"), None)),
            Err(Denied::Host),
            "loopback is not implied once localhost-only checking is off"
        );
        assert_eq!(
            g.check(&parts(
                Some("mcp.example.com"),
                Some("https://app.example.com")
            )),
            Ok(())
        );
        assert_eq!(
            g.check(&parts(
                Some("mcp.example.com"),
                Some("https://mcp.example.com")
            )),
            Ok(()),
            "same origin as a checked Host"
        );
        assert_eq!(
            g.check(&parts(
                Some("mcp.example.com"),
                Some("http://mcp.example.com:80")
            )),
            Ok(()),
            "default port"
        );
        assert_eq!(
            g.check(&parts(
                Some("mcp.example.com"),
                Some("https://other.example.com")
            )),
            Err(Denied::Origin)
        );
    }

    #[test]
    fn open_server_checks_origin_only() {
        let g = Guard::new(HttpConfig::new(), false);
        assert_eq!(g.check(&parts(Some("anything.example"), None)), Ok(()));
        assert_eq!(g.check(&parts(None, None)), Ok(()));
        // Host is not checked, so an Origin equal to it proves nothing (a rebound name
        // sends both): only allowed origins pass.
        assert_eq!(
            g.check(&parts(
                Some("rebind.attacker.test:8080"),
                Some("http://rebind.attacker.test:8080")
            )),
            Err(Denied::Origin)
        );
        assert_eq!(
            g.check(&parts(
                Some("a.example:8080"),
                Some("http://a.example:9090")
            )),
            Err(Denied::Origin)
        );
        let listed = Guard::new(HttpConfig::new().allow_origin("http://a.example"), false);
        assert_eq!(
            listed.check(&parts(Some("a.example"), Some("http://a.example"))),
            Ok(())
        );
        assert_eq!(
            g.check(&parts(Some("a.example"), Some("http://evil.com"))),
            Err(Denied::Origin)
        );
        let any = Guard::new(HttpConfig::new().allow_origin("*"), false);
        assert_eq!(
            any.check(&parts(Some("a.example"), Some("http://evil.com"))),
            Ok(())
        );
    }
}
