//! Which hosts the client reaches on a server's word: the URLs an MCP server or its
//! authorization server names are fetched before anyone is asked, so a server must not be
//! able to aim them inside the network the client runs in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use http::Uri;

use super::auth_error;
use crate::Result;

/// Which hosts the OAuth client may reach when a server names them: the authorization
/// server, its endpoints, and protected resource metadata (given to
/// [`OAuthBuilder::host_policy`](super::OAuthBuilder::host_policy)).
///
/// The default: when the MCP endpoint is not on this machine, the hosts it names must not
/// be on this machine either (loopback, `localhost`, unspecified addresses), nor in a
/// private range (RFC 1918, `100.64.0.0/10`, IPv6 unique local), link-local
/// (`169.254.0.0/16`, `fe80::/10`), multicast or broadcast, nor a cloud metadata service
/// (`169.254.169.254`, `fd00:ec2::254`, `100.100.100.200`, `metadata.google.internal`)
/// — unless the MCP endpoint itself is in the same private or link-local range. Names
/// under `.internal`, `.local` and `.home.arpa` count as private. An endpoint on this
/// machine may name any host but a metadata service (a server in development).
///
/// Addresses are recognised in every form a resolver accepts (`2130706433`, `0x7f.1`,
/// `[::ffff:127.0.0.1]`). Names are judged as written, not resolved: a public name that
/// resolves to a private address is caught only by a guard at the resolver or an egress
/// proxy (an [`HttpTransportBuilder::service`](crate::transport::http::client::HttpTransportBuilder::service)).
#[derive(Debug, Clone, Default)]
pub struct HostPolicy {
    allow_all: bool,
    allowed: Vec<String>,
}

/// What a host is, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    Public,
    /// This machine.
    Loopback,
    /// A private network (and anything that is no host on the internet).
    Private,
    LinkLocal,
    /// A cloud provider's metadata service.
    Metadata,
}

impl HostPolicy {
    /// The default policy (see the type's documentation).
    pub fn new() -> Self {
        HostPolicy::default()
    }

    /// Every host, wherever the MCP endpoint is (for tests, or when a proxy already
    /// guards the way out).
    pub fn allow_all() -> Self {
        HostPolicy {
            allow_all: true,
            allowed: Vec::new(),
        }
    }

    /// Allows `host` (a name or an address, as it appears in URLs: `auth.corp.internal`,
    /// `10.0.0.5`, `[fd00::5]`) whatever its range; may be repeated.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed.push(normalize(&host.into()));
        self
    }

    /// Whether `url`, named by a server, may be reached by a client of the MCP endpoint
    /// `endpoint`; the error says why not.
    pub(crate) fn check(&self, url: &Uri, endpoint: &Uri) -> Result<()> {
        if self.allow_all {
            return Ok(());
        }
        let host = normalize(url.host().unwrap_or(""));
        let target = reach(&host);
        if target == Reach::Public || self.allowed.contains(&host) {
            return Ok(());
        }
        let from = reach(&normalize(endpoint.host().unwrap_or("")));
        let allowed = match target {
            Reach::Metadata => false,
            _ if from == Reach::Loopback => true,
            _ => target == from && target != Reach::Loopback,
        };
        if allowed {
            return Ok(());
        }
        Err(auth_error(format!(
            "{} is {}, and the MCP server is not: it is not reached on the server's word \
             (OAuthBuilder::host_policy allows it)",
            origin(url),
            match target {
                Reach::Loopback => "on this machine",
                Reach::Private => "in a private network",
                Reach::LinkLocal => "a link-local address",
                Reach::Metadata => "a cloud metadata service",
                Reach::Public => "public",
            }
        )))
    }
}

/// `scheme://authority` of a URL, for messages (never its query).
pub(crate) fn origin(url: &Uri) -> String {
    format!(
        "{}://{}",
        url.scheme_str().unwrap_or(""),
        url.authority().map_or("", |a| a.as_str())
    )
}

/// The origin of a URL as compared: scheme and host in lower case, the port explicit.
pub(crate) fn same_origin(a: &Uri, b: &Uri) -> bool {
    fn key(u: &Uri) -> Option<(String, String, u16)> {
        let scheme = u.scheme_str()?.to_ascii_lowercase();
        let port = u.port_u16().or(match scheme.as_str() {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        })?;
        Some((scheme, normalize(u.host()?), port))
    }
    key(a).is_some_and(|k| Some(k) == key(b))
}

/// Whether a URL's host is this machine.
pub(crate) fn is_loopback(url: &Uri) -> bool {
    reach(&normalize(url.host().unwrap_or(""))) == Reach::Loopback
}

/// A host as compared: lower case, without IPv6 brackets and a final dot.
fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// What a (normalized) host is.
pub(crate) fn reach(host: &str) -> Reach {
    if host == "localhost" || host.ends_with(".localhost") {
        return Reach::Loopback;
    }
    if matches!(
        host,
        "metadata.google.internal"
            | "metadata.goog"
            | "instance-data"
            | "instance-data.ec2.internal"
    ) {
        return Reach::Metadata;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return match ip {
            IpAddr::V4(v4) => reach_v4(v4),
            IpAddr::V6(v6) => reach_v6(v6),
        };
    }
    // A host whose last label is a number is an IPv4 address to a resolver (`2130706433`,
    // `0x7f.1`, `0177.0.0.1`) — or, when it is none, no host at all.
    let last = host.rsplit('.').next().unwrap_or("");
    if !last.is_empty() && (last.bytes().all(|b| b.is_ascii_digit()) || is_hex_number(last)) {
        return parse_ipv4_loose(host).map_or(Reach::Private, reach_v4);
    }
    if host.is_empty()
        || [".internal", ".local", ".home.arpa", ".localdomain"]
            .iter()
            .any(|s| host.ends_with(s) || host == &s[1..])
    {
        return Reach::Private;
    }
    Reach::Public
}

fn is_hex_number(label: &str) -> bool {
    label
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// IPv4 in the forms `inet_aton` accepts: one to four parts, each decimal, octal (a
/// leading `0`) or hexadecimal (`0x`), the last filling the remaining bytes.
fn parse_ipv4_loose(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(4);
    for part in &parts {
        let n = if let Some(hex) = part.strip_prefix("0x") {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u64>().ok()?
        };
        numbers.push(n);
    }
    let (last, first) = numbers.split_last()?;
    if first.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut value = *last;
    for (i, &n) in first.iter().enumerate() {
        value |= n << (8 * (3 - i));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn reach_v4(ip: Ipv4Addr) -> Reach {
    let [a, b, ..] = ip.octets();
    if matches!(
        ip.octets(),
        [169, 254, 169, 254] | [169, 254, 170, 2] | [100, 100, 100, 200]
    ) {
        Reach::Metadata
    } else if ip.is_loopback() || ip.is_unspecified() || a == 0 {
        Reach::Loopback
    } else if ip.is_link_local() {
        Reach::LinkLocal
    } else if ip.is_private()
        || (a == 100 && (64..128).contains(&b))
        || ip.is_multicast()
        || ip.is_broadcast()
        || a >= 240
    {
        Reach::Private
    } else {
        Reach::Public
    }
}

fn reach_v6(ip: Ipv6Addr) -> Reach {
    let segments = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Reach::Metadata;
    }
    // An IPv4 address inside IPv6 (mapped, compatible, NAT64) is that address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return reach_v4(v4);
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
        || (segments[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified())
    {
        let [.., a, b, c, d] = ip.octets();
        return reach_v4(Ipv4Addr::new(a, b, c, d));
    }
    if ip.is_loopback() || ip.is_unspecified() {
        Reach::Loopback
    } else if segments[0] & 0xffc0 == 0xfe80 {
        Reach::LinkLocal
    } else if segments[0] & 0xfe00 == 0xfc00 || segments[0] & 0xffc0 == 0xfec0 || ip.is_multicast()
    {
        Reach::Private
    } else {
        Reach::Public
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn hosts_are_sorted_into_ranges_in_every_notation() {
        for (host, expected) in [
            ("example.com", Reach::Public),
            ("8.8.8.8", Reach::Public),
            ("2001:4860::8888", Reach::Public),
            ("localhost", Reach::Loopback),
            ("app.localhost", Reach::Loopback),
            ("127.0.0.1", Reach::Loopback),
            ("127.1.2.3", Reach::Loopback),
            ("0.0.0.0", Reach::Loopback),
            ("::1", Reach::Loopback),
            ("::", Reach::Loopback),
            ("::ffff:127.0.0.1", Reach::Loopback),
            ("::127.0.0.1", Reach::Loopback),
            ("2130706433", Reach::Loopback),
            ("0x7f.1", Reach::Loopback),
            ("0x7f000001", Reach::Loopback),
            ("0177.0.0.1", Reach::Loopback),
            ("127.1", Reach::Loopback),
            ("10.0.0.7", Reach::Private),
            ("172.16.0.1", Reach::Private),
            ("172.31.255.255", Reach::Private),
            ("192.168.1.1", Reach::Private),
            ("100.64.0.1", Reach::Private),
            ("167772167", Reach::Private),
            ("fd12::1", Reach::Private),
            ("::ffff:10.0.0.1", Reach::Private),
            ("64:ff9b::a00:1", Reach::Private),
            ("224.0.0.1", Reach::Private),
            ("255.255.255.255", Reach::Private),
            ("corp.internal", Reach::Private),
            ("printer.local", Reach::Private),
            ("999.1.1.1", Reach::Private),
            ("169.254.1.1", Reach::LinkLocal),
            ("fe80::1", Reach::LinkLocal),
            ("169.254.169.254", Reach::Metadata),
            ("2852039166", Reach::Metadata),
            ("0xa9.0xfe.0xa9.0xfe", Reach::Metadata),
            ("::ffff:169.254.169.254", Reach::Metadata),
            ("fd00:ec2::254", Reach::Metadata),
            ("100.100.100.200", Reach::Metadata),
            ("metadata.google.internal", Reach::Metadata),
            ("172.32.0.1", Reach::Public),
            ("100.128.0.1", Reach::Public),
            ("1.2.3.example.com", Reach::Public),
        ] {
            assert_eq!(reach(&normalize(host)), expected, "{host}");
        }
        assert_eq!(reach(&normalize("[::1]")), Reach::Loopback);
        assert_eq!(reach(&normalize("LOCALHOST.")), Reach::Loopback);
        assert_eq!(
            reach(&normalize("Metadata.Google.Internal.")),
            Reach::Metadata
        );
    }

    #[test]
    fn a_server_names_hosts_only_as_far_inside_as_itself() {
        let policy = HostPolicy::new();
        let remote = uri("https://mcp.example.com/mcp");
        let lan = uri("http://10.0.0.2/mcp");
        let local = uri("http://127.0.0.1:3000/mcp");
        assert!(
            policy
                .check(&uri("https://as.example.com"), &remote)
                .is_ok()
        );
        for inside in [
            "http://127.0.0.1:9000",
            "https://localhost",
            "https://10.0.0.7",
            "https://169.254.169.254/latest",
            "https://[fe80::1]",
            "https://2130706433",
        ] {
            let err = policy.check(&uri(inside), &remote).unwrap_err();
            assert!(err.is_auth(), "{inside}");
        }
        // The same private range as the endpoint: allowed; this machine: not.
        assert!(policy.check(&uri("https://10.0.0.7"), &lan).is_ok());
        assert!(policy.check(&uri("http://127.0.0.1:1"), &lan).is_err());
        // An endpoint on this machine may name anything but a metadata service.
        assert!(policy.check(&uri("http://127.0.0.1:9000"), &local).is_ok());
        assert!(policy.check(&uri("https://10.0.0.7"), &local).is_ok());
        assert!(
            policy
                .check(&uri("http://169.254.169.254"), &local)
                .is_err()
        );
        // The application decides otherwise.
        let corp = HostPolicy::new()
            .allow_host("10.0.0.7")
            .allow_host("[FD00::5]");
        assert!(corp.check(&uri("https://10.0.0.7"), &remote).is_ok());
        assert!(corp.check(&uri("https://[fd00::5]:8443"), &remote).is_ok());
        assert!(corp.check(&uri("https://10.0.0.8"), &remote).is_err());
        assert!(
            HostPolicy::allow_all()
                .check(&uri("http://169.254.169.254"), &remote)
                .is_ok()
        );
    }

    #[test]
    fn origins_compare_with_default_ports_and_case() {
        assert!(same_origin(
            &uri("https://MCP.example.com/a"),
            &uri("https://mcp.example.com:443/b?x")
        ));
        assert!(!same_origin(
            &uri("http://127.0.0.1:1/a"),
            &uri("http://127.0.0.1:2/a")
        ));
        assert!(!same_origin(
            &uri("http://example.com/a"),
            &uri("https://example.com/a")
        ));
    }
}
