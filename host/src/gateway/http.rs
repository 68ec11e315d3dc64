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
//! - **Rules**: what a request is for is the guest's decision
//!   (`gateway.http-head`, `guest/src/gateway/http.rs`), taken from its head
//!   alone: the route and method, the bearer token, `Host` and `Origin`, which
//!   session its id names and which headers reach the gateway. An answer it gives
//!   is sent as it is, the body unread; only the dashboard's routes are the
//!   host's, under its own checks (`refusal`).
//! - **Sessions**: when the guest opens a session, the headers it gives (the
//!   session's id, the guest's handle signed with the serve secret) go on that
//!   exchange's answer, and the host keeps the session by its handle; one it ended
//!   is `404`. `GET` opens the session's standalone SSE stream (one at a time: a
//!   second is `409`); `DELETE` ends the session (the guest cancels its calls). At
//!   most [`HttpOptions::max_sessions`] are kept (a new one ends the one used
//!   longest ago), and one idle for [`HttpOptions::session_idle_timeout`] ends.
//!   When the guest traps and is replaced, the sessions carry on: the driver
//!   reopens them in the new instance, which recognises their ids (it is served
//!   with the same secret); the exchanges the old one had are lost.
//! - **Resumption**: events on a session's streams carry ids `{stream}-{n}`
//!   (stream 0 is the standalone one, others are exchanges), and the session keeps
//!   its last `REPLAY_EVENTS` events, within [`HttpOptions::replay_bytes`] and,
//!   for every session together, [`HttpOptions::replay_total_bytes`]; `GET` with
//!   `Last-Event-ID` replays what followed that event on its stream, then goes on
//!   live if the stream is still open. A 2025 session's calls keep running when
//!   their POST connection drops, so the answer can be fetched this way.
//! - **Safety**: see [`HttpOptions`]. A client that does not read its stream gets
//!   it closed when the bytes waiting for it pass
//!   [`HttpOptions::stream_buffer_bytes`] (or every stream's together pass
//!   [`HttpOptions::stream_buffer_total_bytes`]); the dispatcher never waits for a
//!   client, so one slow client never holds up the others or the guest. The
//!   requests in flight are held to a budget of the guest's memory per session
//!   and in all (`429` past it), and the connections to a cap that closes the
//!   oldest idle one first (`connections`).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::Runtime;
use crate::bindings::{gateway, wit};
use crate::driver::{Downstream, Job};

use super::connections::{Admitted, Busy, Connections};
use super::sse::{Finish, Item, Items, Refused, Sink, Source, SseBody, counted_stream};
use super::{ServeError, dashboard};

/// Events a session keeps for resumption.
pub const REPLAY_EVENTS: usize = 1024;

/// Exchanges one session may have in flight (sent, not yet answered whole).
pub const SESSION_EXCHANGES: usize = 1024;
/// Exchanges all clients together may have in flight.
pub const TOTAL_EXCHANGES: usize = 8192;
/// A request body up to this size is *small*: it may also use the reserve of
/// the in-flight budget (see [`HttpOptions`]), so large requests cannot crowd
/// out small ones.
const SMALL_BODY: usize = 16 * 1024;

/// The HTTP safety rules of [`Runtime::serve_http`].
///
/// Besides these, every client's requests are held to a budget of the guest's
/// memory, derived from its limit ([`Options::memory_limit`](crate::Options::memory_limit)):
/// the bodies of the requests one session has in flight (sent and not yet
/// answered whole) may total 1/16 of it, and `SESSION_EXCHANGES` requests; every
/// client's together 1/4 of it and `TOTAL_EXCHANGES` requests, and a further
/// 1/16 that only requests of at most 16 KiB may use, so that large requests
/// never crowd out small ones. A request past the budget is `429` with
/// `Retry-After`, and nothing of it reaches the guest.
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
    /// Bytes of messages every stream together may hold (host memory): past it,
    /// a stream that is behind already is closed as if its own buffer were full.
    pub stream_buffer_total_bytes: usize,
    /// The most sessions kept at once. A session opened past it ends the one
    /// used longest ago (sessions with an open stream or a request in flight
    /// last); a request naming an ended session is `404`, and its client
    /// initializes again.
    pub max_sessions: usize,
    /// A session with no request, no request in flight and no open stream for
    /// this long is ended.
    pub session_idle_timeout: Duration,
    /// Bytes of events one session keeps for resumption (`Last-Event-ID`), at most
    /// (and at most `REPLAY_EVENTS` events).
    pub replay_bytes: usize,
    /// Bytes of events all sessions together keep for resumption: past it, the
    /// session keeping the most gives up its oldest.
    pub replay_total_bytes: usize,
    /// The most connections open at once (at most 3/4 of the process's file
    /// descriptor limit, whatever this says). A connection accepted at the cap
    /// closes the oldest idle one (no request in progress, no open stream); when
    /// none is idle, it is closed itself.
    pub max_connections: usize,
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
            stream_buffer_total_bytes: 256 * 1024 * 1024,
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(3600),
            replay_bytes: 4 * 1024 * 1024,
            replay_total_bytes: 64 * 1024 * 1024,
            max_connections: 4096,
        }
    }
}

struct SessionEntry {
    standalone: Option<Sink>,
    /// Which attachment `standalone` is (see `ExchangeEntry::attached`).
    standalone_attached: u64,
    standalone_seq: u64,
    /// (stream, n, message) of recent events, oldest first.
    replay: VecDeque<(u64, u64, Arc<str>)>,
    replay_bytes: usize,
    /// Exchanges of the session that ended recently, for resumption.
    ended: VecDeque<u64>,
    /// When it was last used, as `State::clock` counts (its key in `State::used`).
    used: u64,
    /// When it was last used, for the idle timeout.
    last_used: Instant,
    /// Its exchanges in flight, and the bytes of their bodies.
    in_flight: usize,
    in_flight_bytes: usize,
}

impl SessionEntry {
    fn new(used: u64) -> SessionEntry {
        SessionEntry {
            standalone: None,
            standalone_attached: 0,
            standalone_seq: 0,
            replay: VecDeque::new(),
            replay_bytes: 0,
            ended: VecDeque::new(),
            used,
            last_used: Instant::now(),
            in_flight: 0,
            in_flight_bytes: 0,
        }
    }

    /// Whether its client is there: a stream open, or a request in flight.
    fn attended(&self) -> bool {
        self.in_flight > 0 || self.standalone.as_ref().is_some_and(|s| !s.is_closed())
    }
}

struct ExchangeEntry {
    /// None once the client went away (or was cut off).
    sink: Option<Sink>,
    /// Which attachment `sink` is (a resumed stream attaches anew), so the guard
    /// of an older connection does not detach a newer one.
    attached: u64,
    /// The session it belongs to, by the guest's handle.
    session: Option<u64>,
    seq: u64,
    /// The bytes of its request body, counted in flight until it ends.
    bytes: usize,
}

#[derive(Default)]
struct State {
    /// The sessions, by the guest's handle (which their signed ids name).
    sessions: HashMap<u64, SessionEntry>,
    exchanges: HashMap<u64, ExchangeEntry>,
    /// Ticks for `SessionEntry::used`.
    clock: u64,
    /// The sessions by when they were last used, oldest first.
    used: BTreeSet<(u64, u64)>,
    /// The sessions by the bytes of events they keep for resumption, and the total.
    replay_sizes: BTreeSet<(usize, u64)>,
    replay_total: usize,
    /// Exchanges in flight, and the bytes of their bodies.
    in_flight: usize,
    in_flight_bytes: usize,
}

/// A session ended by the host: what to tell the guest.
struct Evicted {
    handle: u64,
}

impl State {
    /// Notes that session `id` was used now.
    fn touch(&mut self, id: u64) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        self.clock += 1;
        self.used.remove(&(s.used, id));
        s.used = self.clock;
        s.last_used = Instant::now();
        self.used.insert((s.used, id));
    }

    /// Adds a session the guest opened as `handle`.
    fn open_session(&mut self, handle: u64) {
        self.clock += 1;
        self.used.insert((self.clock, handle));
        self.replay_sizes.insert((0, handle));
        self.sessions.insert(handle, SessionEntry::new(self.clock));
    }

    /// Forgets session `id`, its exchanges and what it kept; its handle.
    fn remove_session(&mut self, id: u64) -> Option<u64> {
        let session = self.sessions.remove(&id)?;
        self.used.remove(&(session.used, id));
        self.replay_sizes.remove(&(session.replay_bytes, id));
        self.replay_total -= session.replay_bytes;
        let gone: Vec<u64> = self
            .exchanges
            .iter()
            .filter(|(_, x)| x.session == Some(id))
            .map(|(x, _)| *x)
            .collect();
        for x in gone {
            self.remove_exchange(x);
        }
        Some(id)
    }

    /// Adds an exchange in flight.
    fn add_exchange(&mut self, x: u64, entry: ExchangeEntry) {
        self.in_flight += 1;
        self.in_flight_bytes += entry.bytes;
        if let Some(s) = entry.session.and_then(|id| self.sessions.get_mut(&id)) {
            s.in_flight += 1;
            s.in_flight_bytes += entry.bytes;
        }
        self.exchanges.insert(x, entry);
    }

    /// Forgets an exchange: it is no longer in flight.
    fn remove_exchange(&mut self, x: u64) -> Option<ExchangeEntry> {
        let entry = self.exchanges.remove(&x)?;
        self.in_flight -= 1;
        self.in_flight_bytes -= entry.bytes;
        if let Some(s) = entry.session.and_then(|id| self.sessions.get_mut(&id)) {
            s.in_flight -= 1;
            s.in_flight_bytes -= entry.bytes;
        }
        Some(entry)
    }

    /// Ends sessions until at most `max` are left: those used longest ago first,
    /// sessions whose client is there (a stream open, a request in flight) last.
    fn evict_beyond(&mut self, max: usize) -> Vec<Evicted> {
        let mut evicted = Vec::new();
        while self.sessions.len() > max {
            let unattended = self
                .used
                .iter()
                .find(|(_, id)| self.sessions.get(id).is_some_and(|s| !s.attended()))
                .or_else(|| self.used.first())
                .map(|(_, id)| *id);
            let Some(id) = unattended else { break };
            evicted.extend(self.remove_session(id).map(|handle| Evicted { handle }));
        }
        evicted
    }

    /// Ends the sessions nobody used for `timeout` and whose client is not there.
    fn expire(&mut self, timeout: Duration) -> Vec<Evicted> {
        let now = Instant::now();
        let idle: Vec<u64> = self
            .used
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| {
                self.sessions
                    .get(id)
                    .is_some_and(|s| !s.attended() && now.duration_since(s.last_used) >= timeout)
            })
            .collect();
        idle.into_iter()
            .filter_map(|id| self.remove_session(id))
            .map(|handle| Evicted { handle })
            .collect()
    }

    /// Keeps an event of session `id`'s stream for resumption, within the bounds:
    /// the session's own, then every session's together (the session keeping the
    /// most gives up its oldest).
    fn remember(&mut self, id: u64, event: (u64, u64, &Arc<str>), options: &HttpOptions) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        let (stream, n, text) = event;
        self.replay_sizes.remove(&(s.replay_bytes, id));
        s.replay.push_back((stream, n, text.clone()));
        s.replay_bytes += text.len();
        self.replay_total += text.len();
        while s.replay.len() > REPLAY_EVENTS || s.replay_bytes > options.replay_bytes {
            let Some((_, _, old)) = s.replay.pop_front() else {
                break;
            };
            s.replay_bytes -= old.len();
            self.replay_total -= old.len();
        }
        self.replay_sizes.insert((s.replay_bytes, id));
        while self.replay_total > options.replay_total_bytes {
            let Some(&(bytes, handle)) = self.replay_sizes.last() else {
                break;
            };
            let Some(s) = self.sessions.get_mut(&handle) else {
                self.replay_sizes.remove(&(bytes, handle));
                continue;
            };
            let Some((_, _, old)) = s.replay.pop_front() else {
                break;
            };
            self.replay_sizes.remove(&(s.replay_bytes, handle));
            s.replay_bytes -= old.len();
            self.replay_total -= old.len();
            self.replay_sizes.insert((s.replay_bytes, handle));
        }
    }
}

pub(super) struct Shared {
    pub(super) runtime: Runtime,
    pub(super) options: HttpOptions,
    /// Whether `/mcp` is served (`serve_http`) or only the dashboard (`serve_dashboard`).
    mcp: bool,
    /// The profile of `/mcp` (`ServeOptions::profile`), the one the dashboard's
    /// calls are made under (the guest's rules bind `/mcp/{profile}` to it).
    pub(super) default_profile: Option<String>,
    /// Whether the listener is on a loopback address.
    loopback: bool,
    state: Mutex<State>,
    next_exchange: AtomicU64,
    /// The in-flight budget (see [`HttpOptions`]).
    budget: Budget,
    /// Bytes every stream holds for its client, together.
    buffered: Arc<AtomicUsize>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A stream for a client of `/mcp`, within the per-stream and total bounds.
    fn stream(&self) -> (Sink, Source) {
        counted_stream(
            self.options.stream_buffer_bytes,
            Some((
                self.buffered.clone(),
                self.options.stream_buffer_total_bytes,
            )),
        )
    }

    /// Tells the guest of sessions the host ended.
    fn evicted(&self, evicted: Vec<Evicted>) {
        for e in evicted {
            let _ = self.runtime.submit(Job::SessionClosed(e.handle));
        }
    }
}

/// What the requests in flight may hold of the guest's memory (see [`HttpOptions`]).
#[derive(Debug, Clone, Copy)]
struct Budget {
    session_bytes: usize,
    total_bytes: usize,
    /// What only small requests may use beyond `total_bytes`.
    reserve_bytes: usize,
}

impl Budget {
    fn of(memory_limit: usize) -> Budget {
        Budget {
            session_bytes: memory_limit / 16,
            total_bytes: memory_limit / 4,
            reserve_bytes: memory_limit / 16,
        }
    }

    /// Why a request of `bytes` does not fit now, if it does not.
    fn refuse(
        &self,
        state: &State,
        session: Option<&SessionEntry>,
        bytes: usize,
    ) -> Option<String> {
        if let Some(s) = session {
            if s.in_flight >= SESSION_EXCHANGES {
                return Some(format!(
                    "this session has {} requests in flight, the most it may; \
                     wait for some to be answered",
                    s.in_flight
                ));
            }
            if s.in_flight_bytes > 0 && s.in_flight_bytes + bytes > self.session_bytes {
                return Some(format!(
                    "this session's requests in flight hold {} bytes, and this one {bytes} \
                     more than the {} a session may (1/16 of the guest's memory limit); \
                     wait for some to be answered",
                    s.in_flight_bytes, self.session_bytes
                ));
            }
        }
        if state.in_flight >= TOTAL_EXCHANGES {
            return Some(format!(
                "the gateway has {} requests in flight, the most it takes; try again shortly",
                state.in_flight
            ));
        }
        let room = if bytes <= SMALL_BODY {
            self.total_bytes + self.reserve_bytes
        } else {
            self.total_bytes
        };
        if state.in_flight_bytes + bytes > room {
            return Some(format!(
                "the requests in flight hold {} bytes of the {} the gateway takes at once \
                 (a quarter of the guest's memory limit); try again shortly",
                state.in_flight_bytes, self.total_bytes
            ));
        }
        None
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
    let budget = Budget::of(runtime.guest_memory_limit());
    let connections = Arc::new(Connections::new(options.max_connections));
    let shared = Arc::new(Shared {
        runtime,
        options,
        mcp: feed.is_some(),
        default_profile,
        loopback,
        state: Mutex::new(State::default()),
        next_exchange: AtomicU64::new(1),
        budget,
        buffered: Arc::new(AtomicUsize::new(0)),
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
    let mut refused_since_warning = 0u64;
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
                // Out of file descriptors, say: the oldest idle connection makes
                // room; the clients already connected go on.
                if connections.make_room() {
                    // Its task closes it.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                } else {
                    eprintln!("mcpbox serve: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        let (id, close) = match connections.admit() {
            Admitted::Serve { id, close } => (id, close),
            Admitted::Refuse => {
                // At the cap, and every connection busy: this one waits for none.
                if refused_since_warning.is_power_of_two() {
                    eprintln!(
                        "mcpbox serve: {} connections are open, the most it keeps, none idle: \
                         closed a new one ({refused_since_warning} so far)",
                        connections.cap()
                    );
                }
                refused_since_warning += 1;
                drop(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let connections = connections.clone();
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
            let tracked = connections.clone();
            let service = service_fn(move |req| {
                let shared = shared.clone();
                // Busy until the response's body is sent (or dropped).
                let busy = tracked.begin(id);
                async move {
                    let response = handle(shared, req).await;
                    Ok::<_, Infallible>(response.map(|body| Tracked { body, _busy: busy }))
                }
            });
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = close.notified() => {
                    // Idle, and the oldest at the cap: a request that arrived
                    // meanwhile is answered first.
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            connections.closed(id);
        });
    }
}

/// A response body that keeps its connection busy until it is sent or dropped.
pub(super) struct Tracked {
    body: ResponseBody,
    _busy: Busy,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = <ResponseBody as Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

pub(super) type ResponseBody = Either<Full<Bytes>, SseBody<Guard>>;

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
    // The dashboard reads no MCP message: its routes, and its token, `Host` and
    // `Origin` checks, are the host's. Its page is the same static text for
    // everyone: it loads without the token (which it then sends with its API
    // requests); Host and Origin still apply.
    if (shared.options.dashboard && dashboard::is_ours(&req)) || !shared.mcp {
        let page = shared.options.dashboard && dashboard::is_page(&req);
        if let Some(refused) = refusal(&shared, req.headers(), !page) {
            return refused;
        }
        if shared.options.dashboard && dashboard::is_action(&req) {
            return dashboard::act(&shared, req).await;
        }
        if shared.options.dashboard
            && let Some(response) = dashboard::handle(&shared, &req)
        {
            return response;
        }
        return plain(
            StatusCode::NOT_FOUND,
            "not found: this server shows the dashboard (at /) and does not serve MCP; \
             `mcpbox serve --http` serves both",
        );
    }
    // Everything else is MCP's: the guest's rules decide from the head, before
    // any of the body is read.
    let head = gateway::RequestHead {
        method: req.method().as_str().to_owned(),
        path: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned()),
        headers: req
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some(wit::Pair {
                    name: name.as_str().to_owned(),
                    value: value.to_str().ok()?.to_owned(),
                })
            })
            .collect(),
    };
    let (reply, decided) = tokio::sync::oneshot::channel();
    if let Err(why) = shared.runtime.submit(Job::HttpHead { head, reply }) {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the mcpbox runtime stopped: {why}"),
        );
    }
    let Ok(decision) = decided.await else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway was restarted before it answered; try again",
        );
    };
    match decision {
        gateway::HttpDecision::Answer(answer) => {
            let mut r = Response::new(Either::Left(Full::new(Bytes::from(answer.body))));
            *r.status_mut() =
                StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            put_headers(r.headers_mut(), answer.headers);
            r
        }
        gateway::HttpDecision::Post(post_) => post(shared, req, post_).await,
        gateway::HttpDecision::OpenStream(session) => get(&shared, &req, session),
        gateway::HttpDecision::EndSession(session) => delete(&shared, session),
    }
}

/// Puts headers the guest gave on a response, as they are (none it could not
/// have meant: a name or value that is not a header's is left out).
fn put_headers(map: &mut HeaderMap, headers: Vec<wit::Pair>) {
    for pair in headers {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(pair.name.as_bytes()),
            HeaderValue::from_str(&pair.value),
        ) {
            map.append(name, value);
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

/// The dashboard's token, `Host` and `Origin` checks: the refusal when one
/// fails. (`/mcp`'s are the guest's, `gateway.http-head`.)
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

/// The `415` for a body that is not declared `application/json`, which the
/// dashboard's actions require (as the guest's rules do of `/mcp`).
pub(super) fn not_json(req: &Request<Incoming>) -> Option<Response<ResponseBody>> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    (!json).then(|| {
        plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: send application/json",
        )
    })
}

/// A `POST` the guest's rules let through (`decided`): its body is read within
/// the limits and the budget of the session the decision names, then handed in.
async fn post(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    decided: gateway::HttpPost,
) -> Response<ResponseBody> {
    let gateway::HttpPost {
        session: session_id,
        profile,
        headers,
    } = decided;
    let limit = shared.options.max_body_bytes;
    // What the body will weigh: its declared length, else the most it may.
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .map_or(limit, |n| n.min(limit));
    // The budget is taken before the body is read, so a request past it costs
    // nothing more; it is given back if the body never arrives whole.
    let reservation = shared.next_exchange.fetch_add(1, Ordering::Relaxed);
    let (sink, rx) = shared.stream();
    let taken = {
        let mut state = shared.state();
        let session = session_id.and_then(|id| state.sessions.get(&id));
        if session_id.is_some() && session.is_none() {
            return not_found_session();
        }
        match shared.budget.refuse(&state, session, declared) {
            Some(why) => Err(why),
            None => {
                let handle = session_id;
                if let Some(id) = session_id {
                    state.touch(id);
                }
                state.add_exchange(
                    reservation,
                    ExchangeEntry {
                        sink: Some(sink),
                        attached: 0,
                        session: session_id,
                        seq: 0,
                        bytes: declared,
                    },
                );
                Ok(handle)
            }
        }
    };
    let handle = match taken {
        Ok(handle) => handle,
        Err(why) => {
            // Read to its end (and dropped as it comes), so that the client,
            // still sending, is not cut off before it reads the answer.
            let timeout = shared.options.read_timeout;
            let mut body = Limited::new(req.into_body(), limit);
            let _ = tokio::time::timeout(timeout, async {
                while let Some(Ok(_)) = body.frame().await {}
            })
            .await;
            let mut r = plain(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("too many requests in flight: {why}"),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return r;
        }
    };
    let reserved = Reserved {
        shared: &shared,
        exchange: reservation,
    };
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
    // An empty text is the host's own word to the guest (a session reopened
    // after a restart); a client's is refused here.
    if text.trim().is_empty() {
        return plain(
            StatusCode::BAD_REQUEST,
            "the request body is empty: send a JSON-RPC message",
        );
    }
    // Handed to the guest under the exchange's lasting id, given now, under the
    // lock: ids then follow the order in which the guest gets them, which is how
    // the host knows, when the guest is replaced, which exchanges it had.
    let exchange = {
        let mut state = shared.state();
        let Some(mut entry) = state.remove_exchange(reserved.exchange) else {
            std::mem::forget(reserved);
            return if session_gone(&state, handle) {
                not_found_session()
            } else {
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the gateway was restarted before it answered; try again",
                )
            };
        };
        std::mem::forget(reserved);
        // The body as it came, in place of what it declared.
        entry.bytes = text.len();
        let exchange = shared.next_exchange.fetch_add(1, Ordering::Relaxed);
        state.add_exchange(exchange, entry);
        let job = Job::Downstream(gateway::Inbound {
            session: handle,
            exchange,
            kind: gateway::TransportKind::Http,
            profile,
            headers,
            text,
        });
        if let Err(why) = shared.runtime.submit(job) {
            state.remove_exchange(exchange);
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the mcpbox runtime stopped: {why}"),
            );
        }
        exchange
    };
    let guard = Guard {
        shared: shared.clone(),
        stream: Stream::Exchange(exchange),
        attached: 0,
        armed: true,
    };
    respond(rx, guard).await
}

async fn respond(mut rx: Source, mut guard: Guard) -> Response<ResponseBody> {
    let mut extra = Vec::new();
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
                Item::Headers(headers) => {
                    extra.extend(headers);
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
    put_headers(response.headers_mut(), extra);
    response
}

/// The `404` for a session that ended (evicted, idle, deleted): the guest's rules
/// found its id good, the host no longer keeps it.
fn not_found_session() -> Response<ResponseBody> {
    plain(StatusCode::NOT_FOUND, "session not found: initialize again")
}

/// Whether the session of `handle` ended (none: the request named none).
fn session_gone(state: &State, handle: Option<u64>) -> bool {
    handle.is_some_and(|h| !state.sessions.contains_key(&h))
}

/// An exchange's place in the budget while its body is read: given back when
/// the body never arrives whole (the handler returns early, or is dropped).
struct Reserved<'a> {
    shared: &'a Shared,
    exchange: u64,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.shared.state().remove_exchange(self.exchange);
    }
}

/// A message's text as the bytes of a response body (`Bytes::from_owner`).
struct JsonText(Arc<str>);

impl AsRef<[u8]> for JsonText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

pub(super) fn sse(body: SseBody<Guard>) -> Response<ResponseBody> {
    let mut r = Response::new(Either::Right(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// A `GET` of session `id`'s stream (the guest's rules checked the head): the
/// standalone one, or, with `Last-Event-ID` (the host's event ids), the rest of
/// one it kept.
fn get(shared: &Arc<Shared>, req: &Request<Incoming>, id: u64) -> Response<ResponseBody> {
    let resume = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once('-'))
        .and_then(|(s, n)| Some((s.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    let (sink, rx) = shared.stream();
    let mut state = shared.state();
    let state = &mut *state;
    state.touch(id);
    let Some(session) = state.sessions.get_mut(&id) else {
        return not_found_session();
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
                Stream::Standalone(id)
            } else {
                match state.exchanges.get_mut(&stream) {
                    Some(x) if x.session == Some(id) => {
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
            Stream::Standalone(id)
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

/// A `DELETE` of session `id` (the guest's rules checked the head).
fn delete(shared: &Arc<Shared>, id: u64) -> Response<ResponseBody> {
    let Some(handle) = shared.state().remove_session(id) else {
        return plain(StatusCode::NOT_FOUND, "session not found");
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
    Standalone(u64),
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

impl Finish for Guard {
    fn finished(&mut self) {
        self.armed = false;
    }
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
                let mut state = self.shared.state();
                if let Some(s) = state.sessions.get_mut(id)
                    && s.standalone_attached == self.attached
                {
                    s.standalone = None;
                    // Idle from now on, unless used.
                    state.touch(*id);
                }
            }
            Stream::Replayed | Stream::Dashboard => {}
        }
    }
}

/// Where a batch goes.
#[derive(PartialEq, Eq)]
enum Dest {
    Exchange(u64),
    Standalone(u64),
}

/// Moves the gateway's signals to the streams they name, never waiting for a
/// client: a stream whose buffer is full is closed instead. Between signals,
/// ends the sessions idle past [`HttpOptions::session_idle_timeout`].
async fn dispatch(shared: Arc<Shared>, mut feed: mpsc::UnboundedReceiver<Downstream>) {
    let timeout = shared.options.session_idle_timeout;
    let every = (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    let mut sweep = tokio::time::interval(every);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let downstream = tokio::select! {
            downstream = feed.recv() => match downstream {
                Some(downstream) => downstream,
                None => return,
            },
            _ = sweep.tick() => {
                let evicted = shared.state().expire(timeout);
                shared.evicted(evicted);
                continue;
            }
        };
        let signals = match downstream {
            Downstream::Signals(signals) => signals,
            Downstream::Restarted { why, through } => {
                eprintln!(
                    "mcpbox serve: {why}; the sessions carry on, the requests in flight were lost"
                );
                // Their streams end unanswered (a JSON answer not begun is 503);
                // a resumption of one is 404. Later ones go to the new instance.
                let mut state = shared.state();
                let lost: Vec<u64> = state
                    .exchanges
                    .keys()
                    .filter(|x| **x <= through)
                    .copied()
                    .collect();
                for x in lost {
                    state.remove_exchange(x);
                }
                continue;
            }
            Downstream::Stopped(why) => {
                eprintln!("mcpbox serve: {why}; every session ends");
                *shared.state() = State::default();
                continue;
            }
        };
        let mut cut_off = Vec::new();
        let mut evicted = Vec::new();
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
                        let id = o.session;
                        state.open_session(id);
                        if let Some(x) = state.exchanges.get_mut(&o.exchange) {
                            x.session = Some(id);
                        }
                        if let Some(s) = state.sessions.get_mut(&id) {
                            s.in_flight += 1;
                            s.in_flight_bytes +=
                                state.exchanges.get(&o.exchange).map_or(0, |x| x.bytes);
                        }
                        add(Dest::Exchange(o.exchange), Item::Headers(o.answer_headers));
                        evicted.extend(state.evict_beyond(shared.options.max_sessions));
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
                                let id = match entry.session {
                                    Some(sid) if !whole => {
                                        entry.seq += 1;
                                        let n = entry.seq;
                                        state.remember(sid, (x, n, &text), &shared.options);
                                        Some(format!("{x}-{n}"))
                                    }
                                    _ => None,
                                };
                                add(Dest::Exchange(x), Item::Message { id, text });
                            }
                            wit::DownstreamTarget::Session(sid) => {
                                let Some(s) = state.sessions.get_mut(&sid) else {
                                    continue;
                                };
                                s.standalone_seq += 1;
                                let n = s.standalone_seq;
                                let attached = s.standalone.is_some();
                                state.remember(sid, (0, n, &text), &shared.options);
                                if attached {
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
                if let Some(entry) = state.remove_exchange(x)
                    && let Some(s) = entry.session.and_then(|sid| state.sessions.get_mut(&sid))
                {
                    if s.ended.len() == REPLAY_EVENTS {
                        s.ended.pop_front();
                    }
                    s.ended.push_back(x);
                }
            }
        }
        shared.evicted(evicted);
        for x in cut_off {
            let _ = shared.runtime.submit(Job::ExchangeClosed(x));
        }
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

    fn exchange(session: Option<u64>, bytes: usize) -> ExchangeEntry {
        ExchangeEntry {
            sink: None,
            attached: 0,
            session,
            seq: 0,
            bytes,
        }
    }

    #[test]
    fn sessions_past_the_cap_go_least_recently_used_first_and_attended_last() {
        let mut state = State::default();
        // Sessions 1 to 4.
        for id in 1..=4 {
            state.open_session(id);
        }
        // 1 has a request in flight; 2 was used after 3.
        state.add_exchange(1, exchange(Some(1), 10));
        state.touch(2);
        let evicted = state.evict_beyond(2);
        let handles: Vec<u64> = evicted.iter().map(|e| e.handle).collect();
        assert_eq!(handles, [3, 4]);
        assert!(state.sessions.contains_key(&1) && state.sessions.contains_key(&2));
        // The attended one last, whenever it was used.
        state.touch(2);
        let evicted = state.evict_beyond(1);
        assert_eq!(evicted.iter().map(|e| e.handle).collect::<Vec<_>>(), [2]);
        // With none unattended left, the oldest goes, and its exchanges with it.
        state.open_session(5);
        state.add_exchange(2, exchange(Some(5), 20));
        let evicted = state.evict_beyond(1);
        assert_eq!(evicted.iter().map(|e| e.handle).collect::<Vec<_>>(), [1]);
        assert_eq!((state.in_flight, state.in_flight_bytes), (1, 20));
        state.remove_exchange(2);
        assert!(state.exchanges.is_empty());
        // Idle past the timeout, and nothing in flight: expired.
        assert!(state.expire(Duration::from_secs(3600)).is_empty());
        assert_eq!(state.expire(Duration::ZERO).len(), 1);
        assert!(state.sessions.is_empty() && state.used.is_empty());
    }

    #[test]
    fn replay_of_every_session_is_held_to_one_budget_the_largest_giving_way() {
        let options = HttpOptions {
            replay_bytes: 1000,
            replay_total_bytes: 2500,
            ..HttpOptions::default()
        };
        let mut state = State::default();
        let (big, small) = (1, 2);
        state.open_session(big);
        state.open_session(small);
        let text = |n: usize| -> Arc<str> { Arc::from("x".repeat(n)) };
        state.remember(small, (0, 1, &text(300)), &options);
        for n in 0..10 {
            state.remember(big, (0, n, &text(300)), &options);
        }
        // Its own cap first: 3 of 300 bytes.
        assert_eq!(state.sessions[&big].replay_bytes, 900);
        for id in [3, 4] {
            state.open_session(id);
            for n in 0..3 {
                state.remember(id, (0, n, &text(300)), &options);
            }
        }
        // 300 + 900 + 900 + 900 would be over 2,500: the largest gave way.
        assert!(state.replay_total <= 2500, "{}", state.replay_total);
        assert_eq!(state.sessions[&small].replay_bytes, 300);
        let total: usize = state.sessions.values().map(|s| s.replay_bytes).sum();
        assert_eq!(total, state.replay_total);
        assert_eq!(state.remove_session(big), Some(1));
        let total: usize = state.sessions.values().map(|s| s.replay_bytes).sum();
        assert_eq!(total, state.replay_total);
    }

    #[test]
    fn requests_in_flight_are_held_to_the_budget_small_ones_to_a_reserve_too() {
        let budget = Budget::of(256 << 20);
        let mut state = State::default();
        state.open_session(1);
        let big = 4 << 20;
        // A session: 16 MiB of bodies.
        for x in 0..4 {
            assert!(budget.refuse(&state, state.sessions.get(&1), big).is_none());
            state.add_exchange(x, exchange(Some(1), big));
        }
        let why = budget.refuse(&state, state.sessions.get(&1), big).unwrap();
        assert!(why.contains("1/16"), "{why}");
        // Everyone: 64 MiB of large bodies ...
        for x in 10..22 {
            assert!(budget.refuse(&state, None, big).is_none());
            state.add_exchange(x, exchange(None, big));
        }
        let why = budget.refuse(&state, None, big).unwrap();
        assert!(why.contains("a quarter"), "{why}");
        // ... while small ones still fit, in the reserve.
        assert!(budget.refuse(&state, None, 1000).is_none());
        assert!(budget.refuse(&state, None, SMALL_BODY + 1).is_some());
        for x in 0..22 {
            state.remove_exchange(x);
        }
        assert_eq!((state.in_flight, state.in_flight_bytes), (0, 0));
        assert_eq!(state.sessions[&1].in_flight_bytes, 0);
    }
}
