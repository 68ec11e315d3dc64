//! The small trait the HTTP transports run on: start a request, see what came
//! back, never block.
//!
//! The component binds it to `wasi:http/outgoing-handler` (`crate::component`);
//! the native tests bind it to in-memory servers on a hand-driven clock. Nothing
//! here knows MCP: it is HTTP/1.1 as a client sees it, pulled a piece at a time.

use crate::prelude::*;
use core::fmt;

/// The request methods the transports use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: an event stream.
    Get,
    /// `POST`: a message.
    Post,
    /// `DELETE`: the end of a session.
    Delete,
    /// `HEAD`: is anything still serving HTTP there?
    Head,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Head => "HEAD",
        }
    }
}

/// One HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The absolute URL (`http://host/path?query`).
    pub url: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body; empty for none.
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lowercase), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// The status and headers of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The value of header `name` (lowercase), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The media type, lowercase, without parameters (`text/event-stream`).
    pub fn media_type(&self) -> String {
        self.header("content-type")
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// What failed below HTTP, in the terms the transports act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No connection could be made (refused, unreachable, DNS, TLS, connect
    /// timeout): nothing is serving HTTP there.
    Connect,
    /// A connection was made and then failed (closed, reset, timed out, not
    /// HTTP): the server may or may not still be there.
    Broken,
    /// The host refused to send the request (no grant, or its policy).
    Denied,
    /// Anything else.
    Other,
}

/// A failed exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// How, for people ("connection refused").
    pub message: String,
}

impl HttpError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> HttpError {
        HttpError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A request in flight, as [`HttpPort::start`] numbered it.
pub type ExchangeId = u64;

/// The next thing that happened to an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Nothing new yet.
    Pending,
    /// The response's status and headers.
    Head(Head),
    /// A piece of the response body.
    Data(Vec<u8>),
    /// The body ended: the exchange is over.
    End,
    /// The exchange failed: it is over.
    Failed(HttpError),
}

/// Sending HTTP requests without blocking.
pub trait HttpPort {
    /// Monotonic time in milliseconds (the transports' timers run on it).
    fn now_ms(&self) -> u64;

    /// Starts sending `request`. Err only when it cannot even start (a URL the
    /// port cannot use); failures on the way come from `poll`.
    fn start(&mut self, request: Request) -> Result<ExchangeId, HttpError>;

    /// What happened next to `exchange`: its head, then pieces of its body, then
    /// its end or failure; `Pending` while nothing new came. An exchange the
    /// port does not know (over, or closed) is `Failed`.
    fn poll(&mut self, exchange: ExchangeId) -> Progress;

    /// Stops reading `exchange` and forgets it. A request already sent is not
    /// recalled: closing the exchange of a `DELETE` does not stop the `DELETE`.
    fn close(&mut self, exchange: ExchangeId);
}
