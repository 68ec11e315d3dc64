//! The gateway over Streamable HTTP: `POST`, `GET` and `DELETE` on `/mcp` and
//! `/mcp/{profile}`.
//!
//! Built on hyper 1 directly (already in the tree under reqwest) rather than a
//! framework: there is one path with three methods, and what matters is control
//! over each response body (streamed answers, per-stream buffers, knowing when a
//! client went away), which a router would only wrap.
//!
//! # What the host does here, and only here
//!
//! - **Exchanges**: each POST body goes to the guest as one exchange. Its answers
//!   come back as signals: a single answer that is complete at once is sent as
//!   `application/json` with the status the guest gave; anything else opens an SSE
//!   stream that ends when the guest ends the exchange. An exchange of only
//!   notifications and responses is answered `202 Accepted`.
//! - **Sessions**: when the guest opens a session, a random `Mcp-Session-Id` (128
//!   bits from the OS) goes on that exchange's answer and is mapped to the guest's
//!   handle; a request naming an unknown id is `404`. `GET` with the id opens the
//!   session's standalone SSE stream (one at a time: a second is `409`); `DELETE`
//!   ends the session (the guest cancels its calls). `GET` without a session is
//!   `405`: the 2026-07-28 stateless form has no standalone stream.
//! - **Resumption**: events on a session's streams carry ids `{stream}-{n}`
//!   (stream 0 is the standalone one, others are exchanges), and the session keeps
//!   its last [`REPLAY_EVENTS`] events; `GET` with `Last-Event-ID` replays what
//!   followed that event on its stream, then goes on live if the stream is still
//!   open. A 2025 session's calls keep running when their POST connection drops,
//!   so the answer can be fetched this way.
//! - **Safety**: see [`HttpOptions`]. A client that does not read its stream gets
//!   it closed when the bytes waiting for it pass
//!   [`HttpOptions::stream_buffer_bytes`]; the dispatcher never waits for a
//!   client, so one slow client never holds up the others or the guest.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::Runtime;
use crate::bindings::{gateway, wit};
use crate::driver::{Downstream, Job};

use super::{ServeError, dashboard, random_hex};

/// Events a session keeps for resumption.
pub const REPLAY_EVENTS: usize = 1024;
/// Bytes of events a session keeps for resumption, at most.
const REPLAY_BYTES: usize = 16 * 1024 * 1024;

/// The HTTP safety rules of [`Runtime::serve_http`].
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// A bearer token every request must carry (`Authorization: Bearer …`).
    /// Required on every address, loopback included: any user of the machine can
    /// connect to loopback, so without a token every one of them could call every
    /// tool and read the dashboard. `serve_http` and `serve_dashboard` refuse to
    /// start without one unless [`insecure_no_token`](HttpOptions::insecure_no_token)
    /// is set on a loopback listener. [`random_token`](crate::random_token) makes
    /// one; [`stored_token`](crate::stored_token) keeps one for the user, as the CLI does.
    pub token: Option<String>,
    /// Serve without a token, on a loopback listener only: every local user, and
    /// every program any of them runs, can then call every tool (with the
    /// credentials of its server's entry) and read the dashboard (servers' stderr,
    /// the recent calls, with their arguments when the audit records them). For a
    /// machine with one user and a client that cannot send a header. Off
    /// loopback a token is required all the same. Default off.
    pub insecure_no_token: bool,
    /// `Origin`s accepted besides loopback ones (`http://localhost:3000`, …). A
    /// request with any other `Origin` is refused with `403` (DNS rebinding); on
    /// a loopback listener, a `Host` that is not a loopback name is refused too.
    pub allowed_origins: Vec<String>,
    /// Also serve the status dashboard: the page at `/`, its REST API under
    /// `/api/` with live events at `/api/events`, and `/metrics` (README,
    /// "Dashboard" and "Metrics"). Under the same rules as `/mcp`, except that
    /// the page itself, which holds no data, loads without the token (it reads the
    /// token from its URL's `#token=` fragment, which browsers never send, and
    /// sends it with each API request). Default on.
    pub dashboard: bool,
    /// The largest request body; larger is `413`.
    pub max_body_bytes: usize,
    /// The largest request head (request line and headers); larger is `431`.
    pub max_header_bytes: usize,
    /// The longest a client may take to send a request head (counted from when
    /// the connection waits for one, so an idle kept-alive connection is closed
    /// after it too), and then to send the body. A head not complete by then
    /// closes the connection, a body is `408`: a client that trickles bytes
    /// (slowloris) holds a connection for this long at most.
    pub read_timeout: Duration,
    /// Bytes of messages a stream may hold for a client that reads slower than
    /// the gateway writes (or not at all); a message past them closes that
    /// stream (the client can resume it). Counted in bytes, not messages, so a
    /// client that reads a flood of small notifications a little behind is not
    /// taken for one that stopped reading; one message larger than this alone
    /// still goes through.
    pub stream_buffer_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            insecure_no_token: false,
            allowed_origins: Vec::new(),
            dashboard: true,
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            read_timeout: Duration::from_secs(30),
            stream_buffer_bytes: 8 * 1024 * 1024,
        }
    }
}

/// What a stream's receiver gets.
#[derive(Debug)]
pub(super) enum Item {
    /// The session id to put on the answer (first, on an `initialize` exchange).
    SessionId(String),
    /// An SSE event.
    Message { id: Option<String>, text: Arc<str> },
    /// The exchange is over, with the status for an answer not yet streamed.
    End(u16),
}

pub(super) type Items = Vec<Item>;

/// What an item weighs against [`HttpOptions::stream_buffer_bytes`]: its text
/// and about what the SSE framing adds.
fn weight(items: &Items) -> usize {
    items
        .iter()
        .map(|item| match item {
            Item::Message { text, .. } => text.len() + 48,
            Item::SessionId(_) | Item::End(_) => 48,
        })
        .sum()
}

/// A stream's sending side: the dispatcher's end of one response stream, with
/// the bytes sent and not yet taken by the response body. A tokio bounded
/// channel counts batches, and a batch can be one notification or a thousand;
/// this counts what the client has not read.
#[derive(Debug)]
pub(super) struct Sink {
    tx: mpsc::UnboundedSender<Items>,
    waiting: Arc<AtomicUsize>,
    limit: usize,
}

/// Why [`Sink::try_send`] did not send.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The client is this many bytes behind already.
    Full,
    /// The response body is gone.
    Closed,
}

impl Sink {
    /// Whether the response body is gone.
    pub(super) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when the response body is gone.
    pub(super) async fn closed(&self) {
        self.tx.closed().await;
    }

    pub(super) fn try_send(&self, items: Items) -> Result<(), Refused> {
        let bytes = weight(&items);
        let waiting = self.waiting.load(Ordering::Acquire);
        if waiting > 0 && waiting + bytes > self.limit {
            return Err(Refused::Full);
        }
        self.waiting.fetch_add(bytes, Ordering::AcqRel);
        self.tx.send(items).map_err(|_| {
            self.waiting.fetch_sub(bytes, Ordering::AcqRel);
            Refused::Closed
        })
    }
}

/// A stream's receiving side (the response body's).
#[derive(Debug)]
pub(super) struct Source {
    rx: mpsc::UnboundedReceiver<Items>,
    waiting: Arc<AtomicUsize>,
}

impl Source {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Items>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(items)) = &polled {
            self.waiting.fetch_sub(weight(items), Ordering::AcqRel);
        }
        polled
    }

    async fn recv(&mut self) -> Option<Items> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }
}

/// A stream that holds at most `limit` bytes for its client (see [`Sink`]).
pub(super) fn stream(limit: usize) -> (Sink, Source) {
    let (tx, rx) = mpsc::unbounded_channel();
    let waiting = Arc::new(AtomicUsize::new(0));
    (
        Sink {
            tx,
            waiting: waiting.clone(),
            limit,
        },
        Source { rx, waiting },
    )
}

struct SessionEntry {
    handle: u64,
    standalone: Option<Sink>,
    /// Which attachment `standalone` is (see `ExchangeEntry::attached`).
    standalone_attached: u64,
    standalone_seq: u64,
    /// (stream, n, message) of recent events, oldest first.
    replay: VecDeque<(u64, u64, Arc<str>)>,
    replay_bytes: usize,
    /// Exchanges of the session that ended recently, for resumption.
    ended: VecDeque<u64>,
}

struct ExchangeEntry {
    /// None once the client went away (or was cut off).
    sink: Option<Sink>,
    /// Which attachment `sink` is (a resumed stream attaches anew), so the guard
    /// of an older connection does not detach a newer one.
    attached: u64,
    /// The session it belongs to, by id.
    session: Option<String>,
    seq: u64,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, SessionEntry>,
    handles: HashMap<u64, String>,
    exchanges: HashMap<u64, ExchangeEntry>,
}

pub(super) struct Shared {
    pub(super) runtime: Runtime,
    pub(super) options: HttpOptions,
    /// Whether `/mcp` is served (`serve_http`) or only the dashboard (`serve_dashboard`).
    mcp: bool,
    /// The profile of `/mcp` (`ServeOptions::profile`); when set, the only one
    /// `/mcp/{profile}` may name.
    default_profile: Option<String>,
    /// Whether the listener is on a loopback address.
    loopback: bool,
    state: Mutex<State>,
    next_exchange: AtomicU64,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Serves until the runtime stops or accepting fails: `/mcp` when `feed` (the
/// gateway's signals) is given, the dashboard when the options say so.
pub(super) async fn run(
    runtime: Runtime,
    feed: Option<mpsc::UnboundedReceiver<Downstream>>,
    options: HttpOptions,
    default_profile: Option<String>,
    listener: TcpListener,
) -> Result<(), ServeError> {
    let local: SocketAddr = listener.local_addr()?;
    let loopback = local.ip().is_loopback();
    match options.token.as_deref() {
        Some(token) if !super::token::is_valid_token(token) => {
            return Err(ServeError::Refused(
                "the bearer token must be one word of letters, digits, `-`, `_`, `.`, `~`, \
                 `+` or `/` (HttpOptions::token, MCPBOX_TOKEN)"
                    .into(),
            ));
        }
        Some(_) => {}
        None if !loopback => {
            return Err(ServeError::Refused(format!(
                "serving on {local}, which is not a loopback address, needs a bearer token \
                 (HttpOptions::token; `mcpbox serve --http` keeps one in the user's mcpbox \
                 configuration directory, or reads MCPBOX_TOKEN)"
            )));
        }
        None if !options.insecure_no_token => {
            return Err(ServeError::Refused(format!(
                "serving on {local} needs a bearer token, loopback too: any user of this \
                 machine can connect to it (HttpOptions::token, mcpbox::random_token or \
                 mcpbox::stored_token; HttpOptions::insecure_no_token serves without one)"
            )));
        }
        None => {}
    }
    let shared = Arc::new(Shared {
        runtime,
        options,
        mcp: feed.is_some(),
        default_profile,
        loopback,
        state: Mutex::new(State::default()),
        next_exchange: AtomicU64::new(1),
    });
    let mut dispatcher = match feed {
        Some(feed) => tokio::spawn(dispatch(shared.clone(), feed)),
        None => {
            let runtime = shared.runtime.clone();
            tokio::spawn(async move {
                runtime.stopped_wait().await;
            })
        }
    };
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut dispatcher => {
                return Err(ServeError::Stopped(shared.runtime.stop_reason()));
            }
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: the clients already connected go on.
                eprintln!("mcpbox serve: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .max_header_size(shared.options.max_header_bytes)
                // Room for a head somewhat over the limit, so that it is read
                // whole and answered 431 (a head cut off by a full buffer leaves
                // bytes unread, and the close resets the connection, answer and
                // all); hyper's floor for its read buffer is 8 KiB.
                .max_buf_size((shared.options.max_header_bytes / 4 * 5).max(8 * 1024))
                // The header timeout takes effect only with a timer.
                .timer(TokioTimer::new())
                .header_read_timeout(shared.options.read_timeout);
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(shared, req).await) }
            });
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

pub(super) type ResponseBody = Either<Full<Bytes>, SseBody>;

pub(super) fn plain(status: StatusCode, text: &str) -> Response<ResponseBody> {
    let mut r = Response::new(Either::Left(Full::new(Bytes::from(text.to_owned()))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ResponseBody> {
    let path = req.uri().path();
    // The dashboard's page is the same static text for everyone: it loads without
    // the token (which it then sends with its API requests); Host and Origin still apply.
    let page = shared.options.dashboard && dashboard::is_page(&req);
    if let Some(refused) = refusal(&shared, req.headers(), !page) {
        return refused;
    }
    if shared.options.dashboard
        && let Some(response) = dashboard::handle(&shared, &req)
    {
        return response;
    }
    if !shared.mcp {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: this server shows the dashboard (at /) and does not serve MCP; \
             `mcpbox serve --http` serves both",
        );
    }
    let profile = match path.strip_prefix("/mcp") {
        Some("" | "/") => shared.default_profile.clone(),
        Some(rest) => match rest.strip_prefix('/') {
            Some(name) if !name.is_empty() && !name.contains('/') => {
                let name = percent_decode(name);
                // A profile given at start-up binds every client: a path cannot
                // widen what `--profile` narrowed.
                if let Some(bound) = &shared.default_profile
                    && *bound != name
                {
                    return plain(
                        StatusCode::FORBIDDEN,
                        &format!(
                            "forbidden: this gateway serves the profile `{}` only (it was \
                             started with --profile {0}); use /mcp or /mcp/{0}, or start one \
                             without --profile to choose profiles by path",
                            bound
                        ),
                    );
                }
                Some(name)
            }
            _ => {
                return plain(
                    StatusCode::NOT_FOUND,
                    "not found: the MCP endpoint is /mcp or /mcp/{profile}",
                );
            }
        },
        None => {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is /mcp or /mcp/{profile}",
            );
        }
    };
    match *req.method() {
        Method::POST => post(shared, req, profile).await,
        Method::GET => get(&shared, &req),
        Method::DELETE => delete(&shared, &req),
        _ => {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

/// `%XX` escapes in a path segment (profile names are plain; this is for safety).
pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a host name (without port) is a loopback name.
fn loopback_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host of `host[:port]` (IPv6 in brackets).
fn host_part(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Token, `Host` and `Origin`: the refusal when one fails.
fn refusal(
    shared: &Shared,
    headers: &HeaderMap,
    token_needed: bool,
) -> Option<Response<ResponseBody>> {
    if let Some(token) = shared.options.token.as_ref().filter(|_| token_needed) {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(given.as_bytes(), token.as_bytes()) {
            let mut r = plain(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: send `Authorization: Bearer TOKEN` \
                 (`mcpbox serve --http` and `mcpbox dashboard` take MCPBOX_TOKEN, else keep \
                 the token in the file http-token of the user's mcpbox configuration directory)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Some(r);
        }
    }
    if shared.loopback {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !loopback_name(host_part(host)) {
            return Some(plain(
                StatusCode::FORBIDDEN,
                "forbidden: this server answers loopback host names only (DNS rebinding protection)",
            ));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let listed = shared.options.allowed_origins.iter().any(|o| o == origin);
        let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
        let local = shared.loopback && loopback_name(host_part(authority));
        if !listed && !local {
            return Some(plain(
                StatusCode::FORBIDDEN,
                "forbidden: this Origin is not allowed (DNS rebinding protection)",
            ));
        }
    }
    None
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The MCP headers the guest checks against the body.
fn mcp_headers(headers: &HeaderMap) -> Vec<wit::Pair> {
    headers
        .iter()
        .filter(|(name, _)| {
            let n = name.as_str();
            n.starts_with("mcp-") && n != "mcp-session-id"
        })
        .filter_map(|(name, value)| {
            Some(wit::Pair {
                name: name.as_str().to_owned(),
                value: value.to_str().ok()?.to_owned(),
            })
        })
        .collect()
}

fn session_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn post(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    profile: Option<String>,
) -> Response<ResponseBody> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !json {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: send application/json",
        );
    }
    let session_id = session_header(req.headers());
    let handle = match &session_id {
        Some(id) => match shared.state().sessions.get(id) {
            Some(s) => Some(s.handle),
            None => return plain(StatusCode::NOT_FOUND, "session not found: initialize again"),
        },
        None => None,
    };
    let headers = mcp_headers(req.headers());
    let limit = shared.options.max_body_bytes;
    let timeout = shared.options.read_timeout;
    let collected = tokio::time::timeout(timeout, Limited::new(req.into_body(), limit).collect());
    let Ok(collected) = collected.await else {
        return plain(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {}s",
                timeout.as_secs_f64()
            ),
        );
    };
    let body = match collected {
        Ok(body) => body.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body is over the limit of {limit} bytes"),
            );
        }
        Err(_) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    let text = match String::from_utf8(body.to_vec()) {
        Ok(text) => text,
        Err(_) => return plain(StatusCode::BAD_REQUEST, "the request body is not UTF-8"),
    };
    let exchange = shared.next_exchange.fetch_add(1, Ordering::Relaxed);
    let (sink, rx) = stream(shared.options.stream_buffer_bytes);
    shared.state().exchanges.insert(
        exchange,
        ExchangeEntry {
            sink: Some(sink),
            attached: 0,
            session: session_id,
            seq: 0,
        },
    );
    let guard = Guard {
        shared: shared.clone(),
        stream: Stream::Exchange(exchange),
        attached: 0,
        armed: true,
    };
    let job = Job::Downstream(gateway::Inbound {
        session: handle,
        exchange,
        kind: gateway::TransportKind::Http,
        profile,
        headers,
        text,
    });
    if let Err(why) = shared.runtime.submit(job) {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the mcpbox runtime stopped: {why}"),
        );
    }
    respond(rx, guard).await
}

async fn respond(mut rx: Source, mut guard: Guard) -> Response<ResponseBody> {
    let mut session = None;
    let first = loop {
        let Some(items) = rx.recv().await else {
            guard.armed = false;
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the gateway was restarted before it answered; try again",
            );
        };
        let rest: Items = items
            .into_iter()
            .filter_map(|item| match item {
                Item::SessionId(id) => {
                    session = Some(id);
                    None
                }
                other => Some(other),
            })
            .collect();
        if !rest.is_empty() {
            break rest;
        }
    };
    let mut response = match first.as_slice() {
        [Item::End(status)] => {
            guard.armed = false;
            let mut r = Response::new(Either::Left(Full::new(Bytes::new())));
            *r.status_mut() = StatusCode::from_u16(*status).unwrap_or(StatusCode::OK);
            r
        }
        [Item::Message { text, .. }, Item::End(status)] => {
            guard.armed = false;
            // The guest's text itself is the body: no copy.
            let body = Bytes::from_owner(JsonText(text.clone()));
            let mut r = Response::new(Either::Left(Full::new(body)));
            *r.status_mut() = StatusCode::from_u16(*status).unwrap_or(StatusCode::OK);
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
        _ => sse(SseBody::new(first, rx, guard)),
    };
    if let Some(id) = session
        && let Ok(value) = HeaderValue::from_str(&id)
    {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// A message's text as the bytes of a response body (`Bytes::from_owner`).
struct JsonText(Arc<str>);

impl AsRef<[u8]> for JsonText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

pub(super) fn sse(body: SseBody) -> Response<ResponseBody> {
    let mut r = Response::new(Either::Right(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn get(shared: &Arc<Shared>, req: &Request<Incoming>) -> Response<ResponseBody> {
    let accepts = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream") || v.contains("*/*"));
    if !accepts {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "not acceptable: GET opens an SSE stream (text/event-stream)",
        );
    }
    let Some(id) = session_header(req.headers()) else {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "no standalone stream without a session (2026-07-28 clients use subscriptions/listen)",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return r;
    };
    let resume = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once('-'))
        .and_then(|(s, n)| Some((s.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    let (sink, rx) = stream(shared.options.stream_buffer_bytes);
    let mut state = shared.state();
    let state = &mut *state;
    let Some(session) = state.sessions.get_mut(&id) else {
        return plain(StatusCode::NOT_FOUND, "session not found: initialize again");
    };
    let mut first: Items = Vec::new();
    let mut attached = 0;
    let stream = match resume {
        Some((stream, after)) => {
            for (s, n, text) in &session.replay {
                if *s == stream && *n > after {
                    first.push(Item::Message {
                        id: Some(format!("{s}-{n}")),
                        text: text.clone(),
                    });
                }
            }
            if stream == 0 {
                session.standalone = Some(sink);
                session.standalone_attached += 1;
                attached = session.standalone_attached;
                Stream::Standalone(id.clone())
            } else {
                match state.exchanges.get_mut(&stream) {
                    Some(x) if x.session.as_deref() == Some(id.as_str()) => {
                        x.sink = Some(sink);
                        x.attached += 1;
                        attached = x.attached;
                        Stream::Exchange(stream)
                    }
                    _ if session.ended.contains(&stream) => {
                        first.push(Item::End(200));
                        Stream::Replayed
                    }
                    _ => {
                        return plain(StatusCode::NOT_FOUND, "that stream is not known (any more)");
                    }
                }
            }
        }
        None => {
            if session.standalone.as_ref().is_some_and(|s| !s.is_closed()) {
                return plain(
                    StatusCode::CONFLICT,
                    "the session's standalone stream is already open",
                );
            }
            session.standalone = Some(sink);
            session.standalone_attached += 1;
            attached = session.standalone_attached;
            Stream::Standalone(id.clone())
        }
    };
    let guard = Guard {
        shared: shared.clone(),
        stream,
        attached,
        armed: true,
    };
    sse(SseBody::new(first, rx, guard))
}

fn delete(shared: &Arc<Shared>, req: &Request<Incoming>) -> Response<ResponseBody> {
    let Some(id) = session_header(req.headers()) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "DELETE needs the Mcp-Session-Id of the session to end",
        );
    };
    let handle = {
        let mut state = shared.state();
        let Some(session) = state.sessions.remove(&id) else {
            return plain(StatusCode::NOT_FOUND, "session not found");
        };
        state.handles.remove(&session.handle);
        state
            .exchanges
            .retain(|_, x| x.session.as_deref() != Some(id.as_str()));
        session.handle
    };
    match shared.runtime.submit(Job::SessionClosed(handle)) {
        Ok(()) => Response::new(Either::Left(Full::new(Bytes::new()))),
        Err(why) => plain(StatusCode::SERVICE_UNAVAILABLE, &why),
    }
}

/// Which stream a response body feeds.
#[derive(Debug, Clone)]
pub(super) enum Stream {
    Exchange(u64),
    Standalone(String),
    /// The dashboard's live events: nothing to tell the guest when it goes.
    Dashboard,
    /// A resumed stream that had ended: replay only.
    Replayed,
}

/// Tells the guest when a client goes away from a stream it did not finish.
pub(super) struct Guard {
    pub(super) shared: Arc<Shared>,
    pub(super) stream: Stream,
    /// The attachment this guard's stream is.
    pub(super) attached: u64,
    pub(super) armed: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match &self.stream {
            Stream::Exchange(x) => {
                let known = {
                    let mut state = self.shared.state();
                    match state.exchanges.get_mut(x) {
                        Some(entry) if entry.attached == self.attached => {
                            entry.sink = None;
                            true
                        }
                        _ => false,
                    }
                };
                if known {
                    let _ = self.shared.runtime.submit(Job::ExchangeClosed(*x));
                }
            }
            Stream::Standalone(id) => {
                if let Some(s) = self.shared.state().sessions.get_mut(id)
                    && s.standalone_attached == self.attached
                {
                    s.standalone = None;
                }
            }
            Stream::Replayed | Stream::Dashboard => {}
        }
    }
}

/// An SSE response body fed by the dispatcher.
pub(super) struct SseBody {
    buffered: VecDeque<Bytes>,
    rx: Source,
    done: bool,
    guard: Guard,
}

impl SseBody {
    pub(super) fn new(first: Items, rx: Source, guard: Guard) -> SseBody {
        let mut body = SseBody {
            buffered: VecDeque::new(),
            rx,
            done: false,
            guard,
        };
        body.push(first);
        body
    }

    fn push(&mut self, items: Items) {
        for item in items {
            match item {
                Item::Message { id, text } => {
                    let mut event = String::with_capacity(text.len() + 32);
                    if let Some(id) = id {
                        event.push_str("id: ");
                        event.push_str(&id);
                        event.push('\n');
                    }
                    event.push_str("event: message\n");
                    // JSON needs no line breaks between tokens; one `data:` line.
                    event.push_str("data: ");
                    event.extend(
                        text.chars()
                            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
                    );
                    event.push_str("\n\n");
                    self.buffered.push_back(Bytes::from(event));
                }
                Item::End(_) => self.done = true,
                Item::SessionId(_) => {}
            }
        }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            if let Some(bytes) = self.buffered.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            if self.done {
                self.guard.armed = false;
                return Poll::Ready(None);
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(items)) => self.push(items),
                Poll::Ready(None) => {
                    // Cut off by the dispatcher (it told the guest), or a reset.
                    self.guard.armed = false;
                    self.done = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Where a batch goes.
#[derive(PartialEq, Eq)]
enum Dest {
    Exchange(u64),
    Standalone(String),
}

/// Moves the gateway's signals to the streams they name, never waiting for a
/// client: a stream whose buffer is full is closed instead.
async fn dispatch(shared: Arc<Shared>, mut feed: mpsc::UnboundedReceiver<Downstream>) {
    while let Some(downstream) = feed.recv().await {
        let signals = match downstream {
            Downstream::Signals(signals) => signals,
            Downstream::Reset(why) => {
                eprintln!("mcpbox serve: {why}; every session ends");
                *shared.state() = State::default();
                continue;
            }
        };
        let mut cut_off = Vec::new();
        {
            let mut state = shared.state();
            let state = &mut *state;
            let mut batches: Vec<(Dest, Items)> = Vec::new();
            let mut ended = Vec::new();
            let mut add =
                |dest: Dest, item: Item| match batches.iter_mut().find(|(d, _)| *d == dest) {
                    Some((_, items)) => items.push(item),
                    None => batches.push((dest, vec![item])),
                };
            let mut signals = signals.into_iter().peekable();
            while let Some(signal) = signals.next() {
                match signal {
                    wit::DownstreamSignal::SessionOpened(o) => {
                        let Ok(id) = random_hex(16) else { continue };
                        state.sessions.insert(
                            id.clone(),
                            SessionEntry {
                                handle: o.session,
                                standalone: None,
                                standalone_attached: 0,
                                standalone_seq: 0,
                                replay: VecDeque::new(),
                                replay_bytes: 0,
                                ended: VecDeque::new(),
                            },
                        );
                        state.handles.insert(o.session, id.clone());
                        if let Some(x) = state.exchanges.get_mut(&o.exchange) {
                            x.session = Some(id.clone());
                        }
                        add(Dest::Exchange(o.exchange), Item::SessionId(id));
                    }
                    wit::DownstreamSignal::Message(m) => {
                        let text: Arc<str> = Arc::from(m.text);
                        match m.target {
                            wit::DownstreamTarget::Exchange(x) => {
                                let Some(entry) = state.exchanges.get_mut(&x) else {
                                    continue;
                                };
                                // The whole answer at once (its one message, then
                                // the end) goes out as `application/json` (see
                                // `respond`), which has no event ids: nothing to
                                // number or keep for resumption.
                                let whole = entry.seq == 0
                                    && matches!(
                                        signals.peek(),
                                        Some(wit::DownstreamSignal::End(e)) if e.exchange == x
                                    );
                                let id = match &entry.session {
                                    Some(sid) if !whole => {
                                        entry.seq += 1;
                                        if let Some(s) = state.sessions.get_mut(sid) {
                                            remember(s, x, entry.seq, &text);
                                        }
                                        Some(format!("{x}-{}", entry.seq))
                                    }
                                    _ => None,
                                };
                                add(Dest::Exchange(x), Item::Message { id, text });
                            }
                            wit::DownstreamTarget::Session(h) => {
                                let Some(sid) = state.handles.get(&h).cloned() else {
                                    continue;
                                };
                                let Some(s) = state.sessions.get_mut(&sid) else {
                                    continue;
                                };
                                s.standalone_seq += 1;
                                let n = s.standalone_seq;
                                remember(s, 0, n, &text);
                                if s.standalone.is_some() {
                                    add(
                                        Dest::Standalone(sid),
                                        Item::Message {
                                            id: Some(format!("0-{n}")),
                                            text,
                                        },
                                    );
                                }
                            }
                        }
                    }
                    wit::DownstreamSignal::End(e) => {
                        add(Dest::Exchange(e.exchange), Item::End(e.status));
                        ended.push(e.exchange);
                    }
                }
            }
            for (dest, items) in batches {
                let (sink, exchange) = match &dest {
                    Dest::Exchange(x) => (
                        state.exchanges.get_mut(x).and_then(|e| e.sink.as_ref()),
                        Some(*x),
                    ),
                    Dest::Standalone(sid) => (
                        state
                            .sessions
                            .get_mut(sid)
                            .and_then(|s| s.standalone.as_ref()),
                        None,
                    ),
                };
                let Some(sink) = sink else { continue };
                match sink.try_send(items) {
                    Ok(()) => {}
                    Err(Refused::Full) => {
                        // The client is not reading: its stream closes, others go on.
                        match &dest {
                            Dest::Exchange(x) => {
                                if let Some(e) = state.exchanges.get_mut(x) {
                                    e.sink = None;
                                }
                            }
                            Dest::Standalone(sid) => {
                                if let Some(s) = state.sessions.get_mut(sid) {
                                    s.standalone = None;
                                }
                            }
                        }
                        cut_off.extend(exchange);
                    }
                    Err(Refused::Closed) => {}
                }
            }
            for x in ended {
                if let Some(entry) = state.exchanges.remove(&x)
                    && let Some(s) = entry.session.and_then(|sid| state.sessions.get_mut(&sid))
                {
                    if s.ended.len() == REPLAY_EVENTS {
                        s.ended.pop_front();
                    }
                    s.ended.push_back(x);
                }
            }
        }
        for x in cut_off {
            let _ = shared.runtime.submit(Job::ExchangeClosed(x));
        }
    }
}

/// Keeps an event of a session's stream for resumption, within the bounds.
fn remember(s: &mut SessionEntry, stream: u64, n: u64, text: &Arc<str>) {
    s.replay.push_back((stream, n, text.clone()));
    s.replay_bytes += text.len();
    while s.replay.len() > REPLAY_EVENTS || s.replay_bytes > REPLAY_BYTES {
        let Some((_, _, old)) = s.replay.pop_front() else {
            break;
        };
        s.replay_bytes -= old.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_hosts() {
        assert!(loopback_name("localhost"));
        assert!(loopback_name("127.0.0.1"));
        assert!(loopback_name("127.1.2.3"));
        assert!(loopback_name("[::1]"));
        assert!(!loopback_name("evil.example.com"));
        assert!(!loopback_name("10.0.0.1"));
        assert_eq!(host_part("localhost:8080"), "localhost");
        assert_eq!(host_part("[::1]:8080"), "[::1]");
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
        assert_eq!(percent_decode("read%20only"), "read only");
    }

    fn note(n: usize) -> Items {
        vec![Item::Message {
            id: None,
            text: Arc::from("x".repeat(n)),
        }]
    }

    #[test]
    fn a_stream_holds_bytes_not_batches_for_its_client() {
        let (sink, mut source) = stream(10_000);
        // A hundred small batches fit (a count of batches would have refused them
        // long before their bytes did).
        for _ in 0..100 {
            assert_eq!(sink.try_send(note(50)), Ok(()));
        }
        // Past the budget the stream is refused; what the client reads makes room.
        assert_eq!(sink.try_send(note(200)), Err(Refused::Full));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        for _ in 0..10 {
            assert!(matches!(source.poll_recv(&mut cx), Poll::Ready(Some(_))));
        }
        assert_eq!(sink.try_send(note(200)), Ok(()));
        // One message larger than the whole budget goes through an empty stream.
        let (big, _source) = stream(100);
        assert_eq!(big.try_send(note(1_000)), Ok(()));
        assert_eq!(big.try_send(note(1)), Err(Refused::Full));
        // A stream whose body is gone says so.
        drop(source);
        assert_eq!(sink.try_send(note(1)), Err(Refused::Closed));
    }
}
