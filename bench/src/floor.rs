//! The latency floor: a blocking `std::net` ping-pong over one TCP connection that moves the
//! same bytes as one HTTP `tools/call` echo of the benchmark — the request as the load
//! generator's hyper client writes it (request line, headers, body), the response as the
//! ceiling's hyper server writes it — with no HTTP parsing, no JSON and no async runtime on
//! either side. What is left is the kernel's loopback round trip and the wake-ups of the two
//! threads: no server in this arrangement can answer faster.
//!
//! Both sides are ours, so the framing is fixed sizes: the client writes the whole request
//! and reads exactly the response's length; the server reads exactly the request's length,
//! checks that it got the expected bytes, and writes the whole response. Every call sends the
//! same request (one representative id, [`FLOOR_ID`]).

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;

use crate::wire;

/// The id (and, as `c0-<id>`, the text) of the floor's request. The load generator counts ids
/// up from 1 on each connection; a 10-second row at one connection passes 100 000, so the
/// floor's messages are as long as the load generator's in the middle of a row.
pub const FLOOR_ID: u64 = 100_000;

/// The endpoint path the load generator posts to.
pub const PATH: &str = "/mcp";

/// A fixed-length stand-in for the `date` header hyper's server adds (an IMF-fixdate is
/// always 29 characters).
const DATE: &str = "Thu, 01 Jan 2026 00:00:00 GMT";

/// An HTTP/1.1 POST as the load generator's hyper client writes it: the request line, the
/// headers in the order the load generator sets them, the `content-length` hyper adds, and
/// the body.
pub fn http_request(host: &str, method: &str, name: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "POST {PATH} HTTP/1.1\r\nhost: {host}\r\ncontent-type: {}\r\naccept: {}\r\n",
        wire::JSON,
        wire::ACCEPT
    );
    for (header, value) in wire::mcp_headers(method, name) {
        head.push_str(header);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    message
}

/// A `200 OK` as the ceiling's hyper server writes it: `content-type`, the `content-length`
/// and `date` hyper adds, and the body.
pub fn http_response(body: &[u8]) -> Vec<u8> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ncontent-length: {}\r\ndate: {DATE}\r\n\r\n",
        wire::JSON,
        body.len()
    );
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    message
}

/// The two messages of one floor call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// What the client writes: an HTTP echo request to `host`.
    pub request: Vec<u8>,
    /// What the server answers: the ceiling's reply to it.
    pub response: Vec<u8>,
}

impl Exchange {
    /// The bytes of the echo call `id` (text `c0-<id>`, as the load generator's first
    /// connection sends it) to `host`, and of the ceiling's answer.
    pub fn echo(host: &str, id: u64) -> Exchange {
        let body = wire::tools_call_body(id, "echo", &format!("c0-{id}"), None);
        Exchange {
            request: http_request(host, "tools/call", Some("echo"), &body),
            response: http_response(&wire::ceiling_reply(&body)),
        }
    }

    /// The floor's call to `127.0.0.1:<port>`.
    pub fn for_port(port: u16) -> Exchange {
        Exchange::echo(&format!("127.0.0.1:{port}"), FLOOR_ID)
    }
}

/// Serves one connection: for every request read (exactly `exchange.request.len()` bytes,
/// which must be `exchange.request`), writes `exchange.response`. Returns the number of
/// calls answered when the client closes the connection between two requests; an error for
/// a connection that breaks, closes in the middle of a request, or sends other bytes.
pub fn serve(mut stream: TcpStream, exchange: &Exchange) -> io::Result<u64> {
    let mut buf = vec![0; exchange.request.len()];
    let mut calls = 0;
    loop {
        if !read_message(&mut stream, &mut buf)? {
            return Ok(calls);
        }
        if buf != exchange.request {
            return Err(io::Error::new(
                ErrorKind::InvalidData,
                "the request is not the floor's request",
            ));
        }
        stream.write_all(&exchange.response)?;
        calls += 1;
    }
}

/// Fills `buf` from `stream`; `Ok(false)` if the stream ends before the first byte.
fn read_message(stream: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!("the peer closed after {filled} of {} bytes", buf.len()),
                ));
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The client side of one connection.
pub struct Pinger {
    stream: TcpStream,
    exchange: Exchange,
    buf: Vec<u8>,
}

impl Pinger {
    /// Uses `stream` (connected to a floor server expecting `exchange`) with `TCP_NODELAY`.
    pub fn new(stream: TcpStream, exchange: Exchange) -> io::Result<Pinger> {
        stream.set_nodelay(true)?;
        let buf = vec![0; exchange.response.len()];
        Ok(Pinger {
            stream,
            exchange,
            buf,
        })
    }

    /// One call: writes the request, reads exactly the response's length and checks it.
    pub fn call(&mut self) -> Result<(), String> {
        self.stream
            .write_all(&self.exchange.request)
            .map_err(|e| format!("write: {e}"))?;
        match read_message(&mut self.stream, &mut self.buf) {
            Ok(true) if self.buf == self.exchange.response => Ok(()),
            Ok(true) => Err("the response is not the floor's response".into()),
            Ok(false) => Err("the server closed the connection".into()),
            Err(e) => Err(format!("read: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// The head of an HTTP message and its `content-length`.
    fn head_and_length(message: &[u8]) -> (String, usize) {
        let end = message
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a blank line after the head");
        let head = String::from_utf8(message[..end].to_vec()).unwrap();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .expect("a content-length")
            .parse()
            .unwrap();
        assert_eq!(
            message.len(),
            end + 4 + length,
            "content-length frames the body"
        );
        (head, length)
    }

    #[test]
    fn the_messages_are_an_echo_call_and_the_ceilings_answer() {
        let ex = Exchange::echo("127.0.0.1:18601", 7);
        let (head, length) = head_and_length(&ex.request);
        assert!(head.starts_with("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:18601\r\n"));
        assert!(head.contains("\r\nmcp-method: tools/call\r\nmcp-name: echo"));
        let body = &ex.request[ex.request.len() - length..];
        assert_eq!(body, wire::tools_call_body(7, "echo", "c0-7", None));

        let (head, length) = head_and_length(&ex.response);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        let body = &ex.response[ex.response.len() - length..];
        wire::check_text_result(body, 7, "c0-7").unwrap();

        // A longer id makes both messages longer by its digits, twice (id and text).
        let long = Exchange::for_port(18601);
        assert_eq!(long.request.len(), ex.request.len() + 2 * 5);
        assert_eq!(long.response.len(), ex.response.len() + 2 * 5);
    }

    fn server(exchange: &Exchange) -> (u16, thread::JoinHandle<io::Result<u64>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let exchange = exchange.clone();
        let handle = thread::spawn(move || serve(listener.accept()?.0, &exchange));
        (port, handle)
    }

    #[test]
    fn calls_are_answered_until_the_client_closes() {
        let ex = Exchange::for_port(1);
        let (port, server) = server(&ex);
        let mut pinger = Pinger::new(TcpStream::connect(("127.0.0.1", port)).unwrap(), ex).unwrap();
        for _ in 0..3 {
            pinger.call().unwrap();
        }
        drop(pinger);
        assert_eq!(server.join().unwrap().unwrap(), 3);
    }

    #[test]
    fn other_bytes_end_the_connection() {
        let ex = Exchange::for_port(1);
        let (port, server) = server(&ex);
        let mut other = ex.clone();
        other.request[0] = b'G';
        let mut pinger =
            Pinger::new(TcpStream::connect(("127.0.0.1", port)).unwrap(), other).unwrap();
        assert!(pinger.call().is_err());
        let err = server.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData);
    }

    #[test]
    fn a_request_cut_short_is_an_error() {
        let ex = Exchange::for_port(1);
        let (port, server) = server(&ex);
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(&ex.request[..10]).unwrap();
        drop(stream);
        let err = server.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    }
}
