//! A lean Streamable HTTP client for the gateway's G1 and G2 (`gw-http-lean`):
//! the same 2025-11-25 session and `tools/call` POSTs as rmcp's client makes on
//! `gw-http`, with less of the client's own CPU in the way, so that the figure
//! says what the gateway can serve rather than what rmcp's client can send.
//!
//! What it does, and what it leaves out:
//! - hyper 1's HTTP/1.1 client connection (already in the tree under reqwest),
//!   one request at a time per connection, connections kept alive in a pool
//!   and reused: 1,000 calls in flight are 1,000 connections, as with rmcp's
//!   client (HTTP/1.1 has no multiplexing, and the gateway does not pipeline).
//! - The session: `initialize`, then `notifications/initialized` (202), then
//!   every call with `Mcp-Session-Id` and `MCP-Protocol-Version`.
//! - Each body is written with one `format!` of a fixed template (no
//!   `serde_json::Value` built and serialised per call).
//! - **Every answer is checked**: status 200, then the JSON-RPC response (from
//!   `application/json`, or the `data:` lines of an SSE answer) is parsed into
//!   borrowed fields only: its `id` must be the request's, it must be a result
//!   that is not `isError`, and its first text must be the echoed text. A
//!   gateway that answers wrongly fails the sample instead of looking fast.
//! - Not an MCP client library: no capabilities, no server requests, no
//!   notifications, no retries, no `Last-Event-ID` resumption. Those are not
//!   part of G1 or G2, and rmcp's `gw-http` column stays beside it for the full
//!   client.

use std::borrow::Cow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The protocol version of the session (what rmcp's client speaks in the bench).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// A session with the gateway over a pool of kept-alive connections.
pub struct LeanClient {
    /// `127.0.0.1:PORT`, for connecting and the `Host` header.
    authority: String,
    /// The request path (`/mcp`).
    path: String,
    /// `Bearer TOKEN`, the gateway's token.
    authorization: String,
    session: String,
    /// Idle connections, reused last-in first-out.
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    next_id: AtomicU64,
}

/// The part of a JSON-RPC response that the check reads.
#[derive(Deserialize)]
struct Answer<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(default, rename = "isError")]
    is_error: bool,
    #[serde(default, borrow)]
    content: Vec<Content<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

impl LeanClient {
    /// Opens a session at `url` (`http://HOST:PORT/PATH`), sending `token` as
    /// the bearer token.
    pub async fn connect(url: &str, token: &str) -> Result<LeanClient, BoxError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("the lean client speaks plain http only, not {url}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let mut client = LeanClient {
            authority: authority.to_owned(),
            path: path.to_owned(),
            authorization: format!("Bearer {token}"),
            session: String::new(),
            idle: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
        };
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcpbox-bench-lean","version":"0"}}}}}}"#
        );
        let (status, headers, body) = client.post(init).await?;
        if status != StatusCode::OK {
            return Err(format!("initialize answered {status}: {}", lossy(&body)).into());
        }
        client.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize answered without an Mcp-Session-Id")?
            .to_owned();
        let answer = json_rpc(&headers, &body, 0)?;
        if answer.result.is_none() {
            return Err(format!("initialize failed: {}", lossy(&body)).into());
        }
        let (status, _, body) = client
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
            .await?;
        if status != StatusCode::ACCEPTED {
            return Err(format!(
                "notifications/initialized answered {status}, not 202: {}",
                lossy(&body)
            )
            .into());
        }
        Ok(client)
    }

    /// An idle connection, or a new one.
    async fn connection(&self) -> Result<SendRequest<Full<Bytes>>, BoxError> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match idle {
                // One the server closed meanwhile is dropped for another.
                Some(mut sender) => {
                    if sender.ready().await.is_ok() {
                        return Ok(sender);
                    }
                }
                None => break,
            }
        }
        let stream = TcpStream::connect(&self.authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// POSTs `body`; the status, headers and whole body of the answer.
    async fn post(&self, body: String) -> Result<(StatusCode, header::HeaderMap, Bytes), BoxError> {
        let mut sender = self.connection().await?;
        let mut request = Request::post(self.path.as_str())
            .header(header::HOST, self.authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::AUTHORIZATION, self.authorization.as_str())
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", self.session.as_str());
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        let response = sender.send_request(request).await?;
        let (parts, incoming) = response.into_parts();
        let body = incoming.collect().await?.to_bytes();
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sender);
        Ok((parts.status, parts.headers, body))
    }

    /// Calls `name` (an echo tool) with `text`; checks that the answer is the
    /// request's, a success, and the text itself.
    pub async fn echo(&self, name: &str, text: &str) -> Result<(), BoxError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // `name` and `text` are the bench's own: plain ASCII with nothing to escape.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"text":"{text}"}}}}}}"#
        );
        let (status, headers, body) = self.post(body).await?;
        check_echo(name, status, &headers, &body, id, text)
    }
}

/// Whether `body` answers request `id` with a successful echo of `text`.
fn check_echo(
    name: &str,
    status: StatusCode,
    headers: &header::HeaderMap,
    body: &[u8],
    id: u64,
    text: &str,
) -> Result<(), BoxError> {
    if status != StatusCode::OK {
        return Err(format!("{name} answered {status}: {}", lossy(body)).into());
    }
    let answer = json_rpc(headers, body, id)?;
    let got = answer
        .result
        .as_ref()
        .filter(|r| !r.is_error)
        .and_then(|r| r.content.first())
        .and_then(|c| c.text.as_deref());
    if answer.error.is_none() && got == Some(text) {
        Ok(())
    } else {
        Err(format!("{name} answered {}, not {text:?}", lossy(body)).into())
    }
}

/// The JSON-RPC response with id `id` in an answer's body: the body itself
/// (`application/json`) or one of its SSE events' `data:`.
fn json_rpc<'a>(
    headers: &header::HeaderMap,
    body: &'a [u8],
    id: u64,
) -> Result<Answer<'a>, BoxError> {
    let sse = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        let answer: Answer<'a> = serde_json::from_slice(body)
            .map_err(|e| format!("an answer that is not JSON-RPC ({e}): {}", lossy(body)))?;
        return if answer.id == Some(id) {
            Ok(answer)
        } else {
            Err(format!("the answer to request {id} has id {:?}", answer.id).into())
        };
    }
    for line in body.split(|&b| b == b'\n') {
        let Some(data) = line.strip_prefix(b"data:") else {
            continue;
        };
        // Notifications (progress, logging) may come first: the response is the
        // event with this id.
        if let Ok(answer) = serde_json::from_slice::<Answer<'a>>(data)
            && answer.id == Some(id)
        {
            return Ok(answer);
        }
    }
    Err(format!("no response to request {id} in the stream: {}", lossy(body)).into())
}

fn lossy(body: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(&body[..body.len().min(300)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &'static str) -> header::HeaderMap {
        let mut h = header::HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        h
    }

    fn check(content_type: &'static str, body: &str, status: StatusCode) -> bool {
        check_echo(
            "echo",
            status,
            &headers(content_type),
            body.as_bytes(),
            7,
            "call 7",
        )
        .is_ok()
    }

    #[test]
    fn only_the_right_answer_passes() {
        let json = "application/json";
        let ok =
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"call 7"}]}}"#;
        assert!(check(json, ok, StatusCode::OK));
        // The same answer to another request, with an error status, or not JSON fails.
        assert!(!check(json, &ok.replace(":7,", ":8,"), StatusCode::OK));
        assert!(!check(json, ok, StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!check(json, "not json", StatusCode::OK));
        // Another text, a tool error, a JSON-RPC error.
        assert!(!check(
            json,
            &ok.replace("call 7", "call 8"),
            StatusCode::OK
        ));
        let tool_error = ok.replace(r#""content""#, r#""isError":true,"content""#);
        assert!(!check(json, &tool_error, StatusCode::OK));
        let error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}"#;
        assert!(!check(json, error, StatusCode::OK));
        // An SSE answer: a notification first, then the response.
        let sse = "text/event-stream";
        let stream = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}}\n\nevent: message\ndata: {ok}\n\n"
        );
        assert!(check(sse, &stream, StatusCode::OK));
        assert!(!check(sse, &stream.replace(":7,", ":9,"), StatusCode::OK));
    }
}
