//! Remote servers over HTTP: Streamable HTTP (MCP 2025-03-26 and later, the
//! stateless 2026-07-28 revision included) and the deprecated HTTP+SSE
//! transport of 2024-11-05.
//!
//! The guest hands over one JSON-RPC message at a time with a little metadata
//! (method, name, negotiated version); everything about the wire is here.
//!
//! **Streamable HTTP.** Every message is a POST to the endpoint with
//! `Accept: application/json, text/event-stream`. A request's answer comes back
//! as one JSON body or as an SSE stream that may carry server requests and
//! notifications before the response. Requests are posted concurrently (a slow
//! tool call must not hold up a listing); notifications and responses are
//! posted in order and awaited, so `notifications/initialized` reaches the
//! server before the `tools/list` queued behind it. Around that:
//!
//! - `Mcp-Session-Id` from the `initialize` answer is sent on every later
//!   request; a 404 to a request carrying it means the server ended the
//!   session, and the host re-initialises once, transparently (replaying the
//!   guest's own `initialize` under an id of its own, then
//!   `notifications/initialized`), and retries the message;
//! - `MCP-Protocol-Version` carries the version the guest negotiated, and from
//!   2026-07-28 on `Mcp-Method` / `Mcp-Name` name the method and the tool
//!   (non-ASCII values as `=?base64?…?=`);
//! - a response stream that ends before its answer is resumed with a GET
//!   carrying `Last-Event-ID`, after the server's `retry:` delay (nothing is
//!   lost: the server replays what followed that id, and nothing is delivered
//!   twice: events before it are not replayed);
//! - after the handshake the optional GET stream for server-initiated messages
//!   is opened (a 405 means the server has none), and reopened the same way;
//! - closing the connection sends `DELETE` with the session id.
//!
//! HTTP failures become JSON-RPC errors for the request they concern (a 500
//! answering `tools/call` fails that call at once, with the status and the
//! server's words), so the guest sees them without waiting for a timeout.
//!
//! **A server that goes away** closes the connection, as a stdio server's exit
//! does, so the guest fails the calls in flight, marks the server failed and
//! restarts it through its backoff. Going away means: an exchange (a POST, the
//! GET stream, a resumption) fails below HTTP — the connection was refused or
//! broke, nothing was answered — and a new connection to the URL gets no HTTP
//! answer either: the failed exchange was itself a connection attempt, or a
//! `HEAD` probe sent right after it is refused or dropped unanswered
//! ([`Shared::gone_after`]). An HTTP error status, a slow answer, or a probe
//! that gets any answer (or none within 5 s) leave the connection open. A server that cannot be reached at all on the first message
//! closes it the same way.
//!
//! **HTTP+SSE (legacy).** A GET opens the event stream; its first `endpoint`
//! event names the URL to POST messages to; every answer arrives on the stream.
//! The stream ending closes the connection.
//!
//! Configured headers (already resolved from `${VAR}` by [`super::endpoint`])
//! go on every request; the guest never sees their values.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Response, StatusCode, Url};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::endpoint::HttpSpec;
use super::framing::{Frame, Oversized};
use super::sse::{SseItem, SseParser};
use super::{Diagnostics, Inbound, Outgoing};
use crate::bindings::wit;

/// Messages read ahead of the guest; beyond this, reading pauses.
const INBOUND_QUEUE: usize = 1024;
/// How long establishing a TCP (and TLS) connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a POST carrying a notification or a response may take to be accepted.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `DELETE` may take when a connection closes.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the first GET stream may take to be answered before messages go on.
const GET_OPEN_WAIT: Duration = Duration::from_secs(2);
/// Reconnection delay when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Consecutive failed reconnections after which a stream is given up.
const MAX_RECONNECTS: u32 = 5;
/// How long the `HEAD` probe after a broken exchange may take; a probe that is
/// neither answered nor refused in this time proves nothing either way.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of an HTTP error body is read for the error message.
const ERROR_BODY_CAP: usize = 64 * 1024;
/// The protocol revision from which `Mcp-Method` / `Mcp-Name` are sent.
const HEADERS_FROM_VERSION: &str = "2026-07-28";

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
/// Prefixes the `x-mcp-header` name of a mirrored tool argument (SEP-2243).
const MCP_PARAM_PREFIX: &str = "mcp-param-";
const EVENT_STREAM: &str = "text/event-stream";

/// Which HTTP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Streamable HTTP.
    Streamable,
    /// The deprecated HTTP+SSE transport.
    LegacySse,
}

/// The running parts of one remote server, handed to [`super::Connection`].
/// Dropping `outbound` ends the session (with `DELETE`) and every task.
pub(crate) struct Spawned {
    pub inbound: mpsc::Receiver<Inbound>,
    pub outbound: mpsc::UnboundedSender<Outgoing>,
}

/// The process-wide HTTP client: one connection pool for every server.
fn client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(true)).clone()
}

/// The client for [`Shared::gone_after`]'s probe: without a pool, so that every
/// probe makes a new connection rather than trying one the server may have
/// dropped a moment ago.
fn probe_client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(false)).clone()
}

fn build_client(pooled: bool) -> Result<reqwest::Client, String> {
    // reqwest is built without a bundled crypto provider (ring builds in
    // seconds, aws-lc-rs in minutes); install ring unless the embedder
    // already chose one.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("mcpbox/", env!("CARGO_PKG_VERSION")));
    if !pooled {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder
        .build()
        .map_err(|e| format!("could not create the HTTP client: {}", chain(&e)))
}

/// Opens a connection to a remote server. Must be called inside a tokio runtime.
/// Nothing goes on the wire until the guest sends its first message (legacy
/// SSE: the event stream is opened at once).
pub(crate) fn connect(
    kind: Kind,
    spec: &HttpSpec,
    max_message: usize,
    diagnostics: Arc<Mutex<Diagnostics>>,
) -> Result<Spawned, wit::TransportError> {
    let url = Url::parse(&spec.url).map_err(|e| {
        wit::TransportError::InvalidEndpoint(format!("`url` {:?} is not a URL: {e}", spec.url))
    })?;
    let mut headers = HeaderMap::new();
    for (name, value) in &spec.headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            wit::TransportError::InvalidEndpoint(format!(
                "`headers.{name}` is not a valid header name"
            ))
        })?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            wit::TransportError::InvalidEndpoint(format!(
                "`headers.{name}` has a value that cannot be sent in an HTTP header (control characters or non-ASCII)"
            ))
        })?;
        headers.append(header, value);
    }
    let client = client().map_err(wit::TransportError::Io)?;
    let (in_tx, in_rx) = mpsc::channel(INBOUND_QUEUE);
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        client,
        url,
        headers,
        cap: max_message,
        inbound: in_tx,
        diagnostics,
        session: Mutex::new(Session::default()),
        reinit: tokio::sync::Mutex::new(()),
        reached: AtomicBool::new(false),
        gone: AtomicBool::new(false),
        replays: AtomicU64::new(0),
    });
    match kind {
        Kind::Streamable => tokio::spawn(streamable(shared, out_rx)),
        Kind::LegacySse => tokio::spawn(legacy(shared, out_rx)),
    };
    Ok(Spawned {
        inbound: in_rx,
        outbound: out_tx,
    })
}

/// What the host remembers about a Streamable HTTP session.
#[derive(Debug, Default)]
struct Session {
    id: Option<String>,
    /// The latest protocol version the guest sent with a message.
    protocol_version: Option<String>,
    /// The guest's `initialize`, replayed when the server ends the session.
    initialize: Option<Outgoing>,
    /// The GET stream for server-initiated messages has been started.
    listening: bool,
}

struct Shared {
    client: reqwest::Client,
    url: Url,
    /// The configured headers, resolved.
    headers: HeaderMap,
    cap: usize,
    inbound: mpsc::Sender<Inbound>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    session: Mutex<Session>,
    /// Held while the session is being re-initialised, so it happens once.
    reinit: tokio::sync::Mutex<()>,
    /// Some request got an HTTP answer: the server exists.
    reached: AtomicBool,
    /// The server went away and the connection was closed for it.
    gone: AtomicBool,
    /// Ids for replayed `initialize` requests.
    replays: AtomicU64,
}

/// The parts of a JSON-RPC message the transport looks at.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
}

impl<'a> Peek<'a> {
    fn of(text: &'a str) -> Peek<'a> {
        serde_json::from_str(text).unwrap_or(Peek {
            id: None,
            method: None,
        })
    }

    /// The id of a request (not of a response or a notification), as JSON text.
    fn request_id(&self) -> Option<String> {
        match (self.id, &self.method) {
            (Some(id), Some(_)) => Some(id.get().trim().to_owned()),
            _ => None,
        }
    }
}

/// Whether `text` (a message or a batch) holds the response to request `id`.
fn answers(text: &str, id: &str) -> bool {
    let is_answer = |p: &Peek<'_>| p.method.is_none() && p.id.is_some_and(|i| i.get().trim() == id);
    if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<Peek<'_>>>(text).is_ok_and(|batch| batch.iter().any(is_answer))
    } else {
        is_answer(&Peek::of(text))
    }
}

/// A JSON-RPC error response to request `id` (JSON text), made by the host.
fn error_response(id: &str, message: &str) -> String {
    let message = serde_json::to_string(message).unwrap_or_else(|_| "\"\"".into());
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":{message}}}}}"#)
}

/// A POST that got no HTTP answer: what to tell the guest, and the transport
/// error behind it (none when re-initialising a session failed).
struct PostError {
    why: String,
    transport: Option<reqwest::Error>,
}

/// The innermost cause of an error: "Connection refused (os error 111)" rather
/// than reqwest's "error sending request for url (…)".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// An error with its causes: reqwest's own text omits why a request failed.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = e.source();
    }
    text
}

/// A header value as SEP-2243 encodes it: plain when it is visible ASCII without
/// surrounding spaces, `=?base64?…?=` otherwise, and also when the plain value
/// would itself read as that wrapper (so the server decodes back what was meant).
fn encoded_header(value: &str) -> Option<HeaderValue> {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        HeaderValue::from_str(value).ok()
    } else {
        HeaderValue::from_str(&format!("=?base64?{}?=", base64(value.as_bytes()))).ok()
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// How a stream ended.
enum StreamEnd {
    /// The server closed it, or it broke.
    Ended,
    /// The connection was dropped: stop everything.
    Stopped,
}

/// A body read with the cap.
enum Body {
    Text(String),
    TooLarge(Frame),
}

impl Shared {
    /// Keeps a line for diagnostics (shown as the server's "last stderr").
    fn note(&self, line: String) {
        self.diagnostics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_stderr(format!("http: {line}"));
    }

    async fn deliver(&self, item: Inbound) -> bool {
        self.inbound.send(item).await.is_ok()
    }

    fn session_id(&self) -> Option<String> {
        self.lock().id.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Headers for one request: the configured ones, then the protocol's.
    fn headers(&self, accept: &'static str, meta: Option<&wit::SendMeta>) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        let session = self.lock();
        if let Some(id) = session
            .id
            .as_deref()
            .and_then(|id| HeaderValue::from_str(id).ok())
        {
            headers.insert(SESSION_ID, id);
        }
        let version = match meta {
            Some(meta) => meta.protocol_version.as_deref(),
            None => session.protocol_version.as_deref(),
        };
        if let Some(v) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(PROTOCOL_VERSION, v);
        }
        if let Some(meta) = meta
            && version.is_some_and(|v| v >= HEADERS_FROM_VERSION)
        {
            if let Some(m) = meta.method.as_deref().and_then(encoded_header) {
                headers.insert(MCP_METHOD, m);
            }
            if let Some(n) = meta.name.as_deref().and_then(encoded_header) {
                headers.insert(MCP_NAME, n);
            }
            // The guest checked each name is an HTTP token; one that is not
            // (a guest bug) is left out rather than failing the request.
            for param in &meta.param_headers {
                let name = format!("{MCP_PARAM_PREFIX}{}", param.name);
                if let (Ok(name), Some(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    encoded_header(&param.value),
                ) {
                    headers.insert(name, value);
                }
            }
        }
        headers
    }

    async fn post(&self, out: &Outgoing) -> Result<Response, reqwest::Error> {
        let mut headers = self.headers("application/json, text/event-stream", Some(&out.meta));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(out.message.clone())
            .send()
            .await?;
        self.reached.store(true, Ordering::Relaxed);
        if let Some(id) = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            let mut session = self.lock();
            if session.id.as_deref() != Some(id) {
                session.id = Some(id.to_owned());
            }
        }
        Ok(response)
    }

    async fn get(&self, last_event_id: Option<&str>) -> Result<Response, reqwest::Error> {
        let mut headers = self.headers(EVENT_STREAM, None);
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert(LAST_EVENT_ID, id);
        }
        self.client
            .get(self.url.clone())
            .headers(headers)
            .send()
            .await
    }

    /// Posts `out`; when the server says the session is gone (404 to a request
    /// that carried its id), re-initialises once and posts again.
    async fn post_in_session(&self, out: &Outgoing) -> Result<Response, PostError> {
        let stale = self.session_id();
        let response = self.post(out).await.map_err(|e| self.post_error(e))?;
        let is_initialize = out.meta.method.as_deref() == Some("initialize");
        if response.status() != StatusCode::NOT_FOUND || stale.is_none() || is_initialize {
            return Ok(response);
        }
        self.note(format!(
            "the server answered 404 to session {}; it ended the session: re-initialising",
            stale.as_deref().unwrap_or_default()
        ));
        self.reinitialize(stale).await.map_err(|why| PostError {
            why,
            transport: None,
        })?;
        self.post(out).await.map_err(|e| self.post_error(e))
    }

    fn post_error(&self, error: reqwest::Error) -> PostError {
        PostError {
            why: format!("could not reach {}: {}", self.url, chain(&error)),
            transport: Some(error),
        }
    }

    /// After an exchange failed with `error`: whether the server went away (see
    /// the module docs), in which case the connection is closed, once, with the
    /// reason. A connection error proves it at once; any other failure below
    /// HTTP is checked with a `HEAD` to the URL on a new connection, which any
    /// live server answers somehow (405 will do).
    async fn gone_after(&self, error: &reqwest::Error) -> bool {
        if self.gone.load(Ordering::SeqCst) {
            return true;
        }
        let cause = if error.is_connect() {
            root_cause(error)
        } else {
            let Ok(client) = probe_client() else {
                return false;
            };
            let probe = client
                .head(self.url.clone())
                .headers(self.headers.clone())
                .send();
            match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
                // Refused, or accepted and dropped unanswered (a listener
                // closing as its process dies): nothing serves HTTP there.
                Ok(Err(e)) => root_cause(&e),
                // Answered (any status), or still thinking: it is there.
                Ok(Ok(_)) | Err(_) => return false,
            }
        };
        if self.gone.swap(true, Ordering::SeqCst) {
            return true;
        }
        let why = if self.reached.load(Ordering::Relaxed) {
            format!(
                "went away: {} cannot be reached any more ({cause})",
                self.url
            )
        } else {
            format!("could not reach {}: {cause}", self.url)
        };
        // Not noted in the diagnostics: the reason is the error itself.
        self.deliver(Inbound::Closed(why)).await;
        true
    }

    /// Starts a new session by replaying the guest's `initialize` and
    /// `notifications/initialized`; their answers are not the guest's business.
    async fn reinitialize(&self, stale: Option<String>) -> Result<(), String> {
        let _one_at_a_time = self.reinit.lock().await;
        if self.session_id() != stale {
            return Ok(()); // Another message already started a new session.
        }
        let (template, version) = {
            let mut session = self.lock();
            session.id = None;
            session.listening = false;
            (session.initialize.clone(), session.protocol_version.clone())
        };
        let template = template.ok_or("the server ended the session before it was initialised")?;
        let mut message: serde_json::Value =
            serde_json::from_str(&template.message).map_err(|e| e.to_string())?;
        let n = self.replays.fetch_add(1, Ordering::Relaxed);
        message["id"] = format!("mcpbox-reinitialize-{n}").into();
        let replay = Outgoing {
            message: message.to_string(),
            meta: template.meta.clone(),
        };
        let response = self
            .post(&replay)
            .await
            .map_err(|e| format!("re-initialising failed: {}", chain(&e)))?;
        if !response.status().is_success() {
            return Err(format!(
                "the server ended the session and refused a new one (HTTP {})",
                response.status()
            ));
        }
        // Read the answer to the end (it may be a stream) and drop it.
        let _ = response.bytes().await;
        let initialized = Outgoing {
            message: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            meta: wit::SendMeta {
                method: Some("notifications/initialized".into()),
                name: None,
                protocol_version: version,
                param_headers: Vec::new(),
            },
        };
        let response = self
            .post(&initialized)
            .await
            .map_err(|e| format!("re-initialising failed: {}", chain(&e)))?;
        let _ = response.bytes().await;
        Ok(())
    }

    /// Reads a whole body, giving up past `cap` bytes.
    async fn read_body(&self, mut response: Response, cap: usize) -> Result<Body, reqwest::Error> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > cap {
                let mut o = Oversized::start(&body);
                o.push(&chunk);
                return Ok(Body::TooLarge(o.finish()));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Body::Text(match String::from_utf8(body) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }))
    }

    /// Handles the answer to a POST. `request` is the id of the request it
    /// carried, if it carried one: that request gets a JSON-RPC error when
    /// the HTTP exchange fails, so the guest need not wait for its timeout.
    async fn read_reply(&self, response: Response, request: Option<&str>, what: &str) {
        let status = response.status();
        let ctype = content_type(&response);
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return;
        }
        if status.is_success() && ctype.starts_with(EVENT_STREAM) {
            let mut parser = SseParser::new(self.cap);
            let mut answered = false;
            let end = self
                .pump(
                    response,
                    &mut parser,
                    request,
                    &mut answered,
                    &mut |_, _| {},
                )
                .await;
            if let (StreamEnd::Ended, Some(id), false) = (end, request, answered) {
                self.resume(parser, id).await;
            }
            return;
        }
        let cap = if status.is_success() {
            self.cap
        } else {
            ERROR_BODY_CAP
        };
        let body = match self.read_body(response, cap).await {
            Ok(body) => body,
            Err(e) => {
                if self.gone_after(&e).await {
                    return;
                }
                let why = format!("reading the answer to {what} failed: {}", chain(&e));
                return self.fail(request, why).await;
            }
        };
        let text = match body {
            Body::TooLarge(Frame::Oversized { size, id }) if status.is_success() => {
                let cap = self.cap as u64;
                self.diagnostics
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .oversized_messages += 1;
                self.deliver(Inbound::TooLarge(wit::Oversized { size, cap, id }))
                    .await;
                return;
            }
            Body::TooLarge(_) => String::new(),
            Body::Text(text) => text,
        };
        if status.is_success() && ctype.starts_with("application/json") {
            if !text.trim().is_empty() {
                self.deliver(Inbound::Message(text)).await;
            }
            return;
        }
        if status.is_success() {
            let why = format!(
                "the server answered {what} with content type {ctype:?}, not JSON or an event stream"
            );
            return self.fail(request, why).await;
        }
        // An error status. A JSON-RPC error in the body says more than the status.
        if let Some(id) = request {
            if answers(&text, id) {
                self.deliver(Inbound::Message(text)).await;
                return;
            }
            if let Ok(serde_json::Value::Object(mut error)) = serde_json::from_str(&text)
                && error.get("error").is_some_and(serde_json::Value::is_object)
            {
                // Servers that fail before reading the request answer with `id: null`.
                error.insert("id".into(), serde_json::from_str(id).unwrap_or_default());
                error.insert("jsonrpc".into(), "2.0".into());
                let text = serde_json::Value::Object(error).to_string();
                self.deliver(Inbound::Message(text)).await;
                return;
            }
        }
        let mut snippet: String = text.trim().chars().take(200).collect();
        if snippet.is_empty() {
            snippet = status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_owned();
        }
        self.fail(
            request,
            format!(
                "HTTP {} from the server for {what}: {snippet}",
                status.as_u16()
            ),
        )
        .await;
    }

    /// Reports a failed exchange: as the request's error if it was a request,
    /// otherwise in the diagnostics.
    async fn fail(&self, request: Option<&str>, why: String) {
        self.note(why.clone());
        if let Some(id) = request {
            self.deliver(Inbound::Message(error_response(id, &why)))
                .await;
        }
    }

    /// Reads an event stream, delivering `message` events and passing others to
    /// `other`, until it ends or the connection is dropped.
    async fn pump(
        &self,
        mut response: Response,
        parser: &mut SseParser,
        request: Option<&str>,
        answered: &mut bool,
        other: &mut (dyn FnMut(String, String) + Send),
    ) -> StreamEnd {
        let mut items = Vec::new();
        loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk,
                () = self.inbound.closed() => return StreamEnd::Stopped,
            };
            match chunk {
                Ok(Some(bytes)) => parser.feed(&bytes, &mut items),
                Ok(None) => return StreamEnd::Ended,
                Err(e) => {
                    self.note(format!("an event stream broke: {}", chain(&e)));
                    if self.gone_after(&e).await {
                        return StreamEnd::Stopped;
                    }
                    return StreamEnd::Ended;
                }
            }
            for item in items.drain(..) {
                let delivered = match item {
                    SseItem::Event { event, data } if event == "message" => {
                        if data.trim().is_empty() {
                            continue; // A priming event: only its id and retry matter.
                        }
                        if request.is_some_and(|id| answers(&data, id)) {
                            *answered = true;
                        }
                        self.deliver(Inbound::Message(data)).await
                    }
                    SseItem::Event { event, data } => {
                        other(event, data);
                        true
                    }
                    SseItem::Oversized { size, id } => {
                        if request.is_some() && id.as_deref() == request {
                            *answered = true;
                        }
                        self.diagnostics
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .oversized_messages += 1;
                        let cap = self.cap as u64;
                        self.deliver(Inbound::TooLarge(wit::Oversized { size, cap, id }))
                            .await
                    }
                };
                if !delivered {
                    return StreamEnd::Stopped;
                }
            }
        }
    }

    /// Waits the server's `retry:` delay; false when the connection was dropped meanwhile.
    async fn pause(&self, parser: &SseParser) -> bool {
        let delay = parser
            .retry_ms()
            .map_or(DEFAULT_RETRY, Duration::from_millis);
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = self.inbound.closed() => false,
        }
    }

    /// A response stream ended before the answer to `request`: reconnect with
    /// GET and `Last-Event-ID` until the answer arrives, or fail the request.
    async fn resume(&self, mut parser: SseParser, request: &str) {
        let mut answered = false;
        let mut failures = 0;
        while !answered && failures < MAX_RECONNECTS {
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                break; // The server gave no event ids: the stream cannot be resumed.
            };
            if !self.pause(&parser).await {
                return;
            }
            let response = match self.get(Some(&last)).await {
                Ok(r) if r.status().is_success() && content_type(&r).starts_with(EVENT_STREAM) => r,
                Ok(r) => {
                    self.note(format!(
                        "resuming after event {last:?}: HTTP {}",
                        r.status()
                    ));
                    if matches!(
                        r.status(),
                        StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_FOUND
                    ) {
                        break;
                    }
                    failures += 1;
                    continue;
                }
                Err(e) => {
                    self.note(format!(
                        "resuming after event {last:?} failed: {}",
                        chain(&e)
                    ));
                    if self.gone_after(&e).await {
                        return;
                    }
                    failures += 1;
                    continue;
                }
            };
            parser.reset_stream();
            let before = parser.last_event_id().map(str::to_owned);
            let end = self
                .pump(
                    response,
                    &mut parser,
                    Some(request),
                    &mut answered,
                    &mut |_, _| {},
                )
                .await;
            if matches!(end, StreamEnd::Stopped) {
                return;
            }
            if parser.last_event_id().map(str::to_owned) == before {
                failures += 1; // No progress on this attempt.
            } else {
                failures = 0;
            }
        }
        if !answered {
            let why =
                "the server's event stream ended before it answered, and it could not be resumed";
            self.fail(Some(request), why.into()).await;
        }
    }

    /// The GET stream for server-initiated messages, kept open while the
    /// connection lives. A 405 (or 404) means the server offers none. `opened`
    /// fires once the first GET has been answered (or failed).
    async fn listen(self: Arc<Self>, opened: oneshot::Sender<()>) {
        let mut parser = SseParser::new(self.cap);
        let mut failures = 0;
        let mut opened = Some(opened);
        loop {
            let last = parser.last_event_id().map(str::to_owned);
            let response = tokio::select! {
                r = self.get(last.as_deref()) => r,
                () = self.inbound.closed() => return,
            };
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match response {
                Ok(r) if r.status().is_success() && content_type(&r).starts_with(EVENT_STREAM) => {
                    parser.reset_stream();
                    let mut answered = false;
                    let end = self
                        .pump(r, &mut parser, None, &mut answered, &mut |_, _| {})
                        .await;
                    if matches!(end, StreamEnd::Stopped) {
                        return;
                    }
                    if parser.last_event_id() == last.as_deref() {
                        failures += 1;
                    } else {
                        failures = 0;
                    }
                }
                Ok(r)
                    if matches!(
                        r.status(),
                        StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_FOUND
                    ) =>
                {
                    return;
                }
                Ok(r) => {
                    self.note(format!("the GET stream was refused: HTTP {}", r.status()));
                    failures += 1;
                }
                Err(e) => {
                    self.note(format!("the GET stream failed: {}", chain(&e)));
                    if self.gone_after(&e).await {
                        return;
                    }
                    failures += 1;
                }
            }
            if failures >= MAX_RECONNECTS {
                self.note("gave up on the GET stream for server-initiated messages".into());
                return;
            }
            if !self.pause(&parser).await {
                return;
            }
        }
    }

    /// Ends the session on the server, if there is one.
    async fn delete_session(&self) {
        if self.session_id().is_none() {
            return;
        }
        let headers = self.headers("application/json, text/event-stream", None);
        let request = self
            .client
            .request(Method::DELETE, self.url.clone())
            .headers(headers);
        let _ = tokio::time::timeout(DELETE_TIMEOUT, request.send()).await;
    }
}

/// Streamable HTTP: posts the guest's messages as they come.
async fn streamable(shared: Arc<Shared>, mut outbound: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(out) = outbound.recv().await {
        let peek = Peek::of(&out.message);
        let request = peek.request_id();
        {
            let mut session = shared.lock();
            if let Some(v) = &out.meta.protocol_version {
                session.protocol_version = Some(v.clone());
            }
            if peek.method.as_deref() == Some("initialize") {
                session.initialize = Some(out.clone());
            }
        }
        let what = peek.method.clone().unwrap_or_else(|| "a response".into());
        if let Some(id) = request {
            // Requests run side by side; their answers may take a while.
            let shared = shared.clone();
            tokio::spawn(async move {
                let first = !shared.reached.load(Ordering::Relaxed);
                match shared.post_in_session(&out).await {
                    Ok(response) => shared.read_reply(response, Some(&id), &what).await,
                    Err(e) if first && !shared.reached.load(Ordering::Relaxed) => {
                        // Nothing ever answered: the server is not there.
                        if !shared.gone.swap(true, Ordering::SeqCst) {
                            shared.note(e.why.clone());
                            shared.deliver(Inbound::Closed(e.why)).await;
                        }
                    }
                    Err(PostError {
                        transport: Some(error),
                        ..
                    }) if shared.gone_after(&error).await => {}
                    Err(e) => shared.fail(Some(&id), e.why).await,
                }
            });
            continue;
        }
        // Notifications and responses go in order, each accepted before the next.
        let posted = tokio::time::timeout(ACK_TIMEOUT, shared.post_in_session(&out)).await;
        let ok = match posted {
            Ok(Ok(response)) => {
                let ok = response.status().is_success();
                let ctype = content_type(&response);
                if ctype.starts_with(EVENT_STREAM) {
                    // Unusual for a notification; read it without holding up the queue.
                    let shared = shared.clone();
                    tokio::spawn(async move { shared.read_reply(response, None, &what).await });
                } else {
                    shared.read_reply(response, None, &what).await;
                }
                ok
            }
            Ok(Err(e)) => {
                shared.note(e.why);
                if let Some(error) = e.transport {
                    shared.gone_after(&error).await;
                }
                false
            }
            Err(_) => {
                shared.note(format!(
                    "the server did not accept {what} within {ACK_TIMEOUT:?}"
                ));
                false
            }
        };
        if ok && peek.method.as_deref() == Some("notifications/initialized") {
            let start = !std::mem::replace(&mut shared.lock().listening, true);
            if start {
                // Open the GET stream before the next message goes out, so that a
                // server which routes answers to "the" GET stream finds it open,
                // and a later GET resuming a response stream is not mistaken for it.
                let (opened, is_open) = oneshot::channel();
                tokio::spawn(shared.clone().listen(opened));
                let _ = tokio::time::timeout(GET_OPEN_WAIT, is_open).await;
            }
        }
    }
    // The guest dropped the connection.
    shared.delete_session().await;
}

/// The deprecated HTTP+SSE transport: one event stream for everything the
/// server sends, and POSTs to the URL its `endpoint` event names.
async fn legacy(shared: Arc<Shared>, mut outbound: mpsc::UnboundedReceiver<Outgoing>) {
    let response = match shared.get(None).await {
        Ok(r) if r.status().is_success() && content_type(&r).starts_with(EVENT_STREAM) => r,
        Ok(r) => {
            let why = format!(
                "GET {} answered HTTP {} ({}), not an event stream",
                shared.url,
                r.status(),
                content_type(&r)
            );
            shared.note(why.clone());
            shared.deliver(Inbound::Closed(why)).await;
            return;
        }
        Err(e) => {
            let why = format!("could not reach {}: {}", shared.url, chain(&e));
            shared.note(why.clone());
            shared.deliver(Inbound::Closed(why)).await;
            return;
        }
    };
    let (endpoint_tx, endpoint_rx) = oneshot::channel::<Result<Url, String>>();
    let reader = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut endpoint_tx = Some(endpoint_tx);
            let base = shared.url.clone();
            let mut on_event = |event: String, data: String| {
                if event == "endpoint"
                    && let Some(tx) = endpoint_tx.take()
                {
                    let url = base.join(data.trim()).map_err(|e| {
                        format!("the server's endpoint event {data:?} is not a URL: {e}")
                    });
                    let _ = tx.send(url);
                }
            };
            let mut parser = SseParser::new(shared.cap);
            let mut answered = false;
            if let StreamEnd::Ended = shared
                .pump(response, &mut parser, None, &mut answered, &mut on_event)
                .await
            {
                let why = "the server closed its event stream".to_owned();
                shared.deliver(Inbound::Closed(why)).await;
            }
        })
    };
    let endpoint = match endpoint_rx.await {
        Ok(Ok(url)) => url,
        Ok(Err(why)) => {
            shared.note(why.clone());
            shared.deliver(Inbound::Closed(why)).await;
            reader.abort();
            return;
        }
        // The stream ended first; the reader reported it.
        Err(_) => return,
    };
    while let Some(out) = outbound.recv().await {
        let request = Peek::of(&out.message).request_id();
        let what = out
            .meta
            .method
            .clone()
            .unwrap_or_else(|| "a response".into());
        let mut headers = shared.headers("application/json, text/event-stream", Some(&out.meta));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let sent = shared
            .client
            .post(endpoint.clone())
            .headers(headers)
            .body(out.message)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {
                let _ = r.bytes().await;
            }
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                let snippet: String = body.trim().chars().take(200).collect();
                let why = format!(
                    "HTTP {} from the server for {what}: {snippet}",
                    status.as_u16()
                );
                shared.fail(request.as_deref(), why).await;
            }
            Err(e) => {
                // The event stream ending closes the connection too; whichever
                // notices first says so.
                if shared.gone_after(&e).await {
                    continue;
                }
                let why = format!("could not reach {endpoint}: {}", chain(&e));
                shared.fail(request.as_deref(), why).await;
            }
        }
    }
    reader.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64("Hello, 世界".as_bytes()), "SGVsbG8sIOS4lueVjA==");
    }

    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(encoded_header("tools/call").unwrap(), "tools/call");
        assert_eq!(encoded_header("my-tool").unwrap(), "my-tool");
        assert_eq!(
            encoded_header(" padded ").unwrap(),
            "=?base64?IHBhZGRlZCA=?="
        );
        assert_eq!(encoded_header("héllo").unwrap(), "=?base64?aMOpbGxv?=");
        assert_eq!(encoded_header("a\nb").unwrap(), "=?base64?YQpi?=");
        assert_eq!(encoded_header("").unwrap(), "");
        // A plain value that looks encoded is encoded, so it reads back as itself.
        assert_eq!(
            encoded_header("=?base64?SGk=?=").unwrap(),
            "=?base64?PT9iYXNlNjQ/U0drPT89?="
        );
    }

    #[test]
    fn answers_match_ids_exactly() {
        assert!(answers(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "3"));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":"3","result":{}}"#, "3"));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, "3"));
        assert!(answers(
            r#"[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":3,"error":{}}]"#,
            "3"
        ));
        assert_eq!(
            Peek::of(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
                .request_id()
                .as_deref(),
            Some("7")
        );
        assert_eq!(
            Peek::of(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).request_id(),
            None
        );
        let e: serde_json::Value =
            serde_json::from_str(&error_response("7", "HTTP 500 \"x\"")).unwrap();
        assert_eq!(e["id"], 7);
        assert_eq!(e["error"]["message"], "HTTP 500 \"x\"");
    }
}
