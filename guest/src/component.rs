//! The WIT boundary: generated bindings and a thin translation layer.
//!
//! This is the only module that sees generated types. It implements the exported
//! `registry` interface (in [`registry`], shared with the stock component) and
//! the `gateway` interface on one [`Manager`] per instance, and the [`Platform`]
//! trait on the imports: `transport.connection` for stdio servers,
//! `remote.grant` and `wasi:http/outgoing-handler` (in [`wasi_http`]) for remote
//! ones, the monotonic clock for time, `wasi:io/poll` over every connection's
//! pollables, a clock pollable and the embedder's wake signal for blocking, and
//! `state` for what is remembered across runs, `pins` for the pinned tool
//! definitions. Everything here only converts
//! between generated and plain types; the logic lives in the modules it calls,
//! where it is unit-tested natively.

use core::cell::RefCell;

use crate::gateway::exposure::Naming;
use crate::gateway::http::{self, SessionIds};
use crate::gateway::{Gateway, Inbound, ServeOptions, TransportKind};
use crate::manager::Manager;
use crate::prelude::*;
use crate::remote::target::Target;
use crate::remote::{Kind, RemoteConnection};
use crate::transport::{
    Connection, Diagnostics, Endpoint, Oversized, Pair, Platform, SendMeta, TransportError, Woken,
    clock_reusable,
};
use registry::{take_signals, to_wit_http, to_wit_stdio};

mod registry;
mod wasi_http;

// Generated code (and the export glue the macro expands to) needs `unsafe` for
// the canonical ABI; it is confined to this module.
#[allow(unsafe_code, missing_docs)]
mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "mcpbox",
        // wasi:io, wasi:clocks and wasi:http come from wit/deps; no other crate
        // provides them.
        generate_all,
    });

    use super::Component;
    export!(Component with_types_in self);
}

use bindings::exports::mcpbox::runtime::gateway as wit_gateway;
use bindings::exports::mcpbox::runtime::registry as wit;
use bindings::exports::mcpbox::runtime::turns as wit_turns;
use bindings::mcpbox::runtime::{blobs, control, pins, remote, state, transport, types};
use bindings::wasi::clocks::{monotonic_clock, wall_clock};
use bindings::wasi::io::poll;

/// The platform the real component runs on: host imports only.
#[derive(Default)]
struct Host {
    /// The embedder's wake signal, asked for once and polled on every `block`.
    wake: Option<poll::Pollable>,
    /// The last clock pollable and its instant (ms), kept while later `block`s
    /// may use it (see [`clock_reusable`]): subscribing and dropping one per
    /// `block` cost two boundary crossings of the ~16 of a sequential call.
    clock: Option<(u64, poll::Pollable)>,
}

/// A stdio connection, with its pollable, asked for once: every `block` polls
/// it, and creating and dropping one per poll cost two boundary crossings.
struct StdioConnection {
    /// Declared before the connection so it is dropped first: a pollable must not
    /// outlive the resource it was made from.
    pollable: core::cell::OnceCell<poll::Pollable>,
    /// The host's number for it, asked for at its first `turns.step`.
    id: core::cell::OnceCell<u64>,
    /// How it closed, once a step said so: said again on every `receive`.
    closed: Option<TransportError>,
    conn: transport::Connection,
}

impl StdioConnection {
    fn pollable(&self) -> &poll::Pollable {
        self.pollable.get_or_init(|| self.conn.subscribe())
    }

    fn id(&self) -> u64 {
        *self.id.get_or_init(|| self.conn.id())
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        if let Some(id) = self.id.get() {
            STEP.with(|s| s.forget(*id));
        }
    }
}

impl Connection for StdioConnection {
    fn send(&mut self, message: &str, _meta: &SendMeta) -> Result<(), TransportError> {
        if STEP.with(|s| s.active) {
            let id = self.id();
            STEP.with(|s| s.queue(id, message));
            return Ok(());
        }
        self.conn.send(message).map_err(from_wit_error)
    }

    fn receive(&mut self) -> Result<Vec<String>, TransportError> {
        if let Some(e) = &self.closed {
            return Err(e.clone());
        }
        if STEP.with(|s| s.active) {
            let id = self.id();
            match STEP.with(|s| s.take(id)) {
                Some(Err(e)) => {
                    if matches!(e, TransportError::Closed(_)) {
                        self.closed = Some(e.clone());
                    }
                    return Err(e);
                }
                Some(Ok(messages)) => return Ok(messages),
                // Kept by the host, too large to hand in: taken here, so that
                // the host's copy goes as soon as they are in this memory.
                None if STEP.with(|s| s.take_waiting(id)) => {}
                // Nothing handed in: the host read the pipe when it gathered
                // the step's input. Only after the guest blocked in this step
                // may more be waiting on the host's side.
                None if !STEP.with(|s| s.blocked) => return Ok(Vec::new()),
                None => {}
            }
        }
        self.conn.receive().map_err(from_wit_error)
    }

    fn diagnostics(&self) -> Diagnostics {
        let d = self.conn.diagnostics();
        Diagnostics {
            stderr_tail: d.stderr_tail,
            skipped_lines: d.skipped_lines,
            oversized_messages: d.oversized_messages,
            exit_status: d.exit_status,
            sandbox: d.sandbox,
        }
    }
}

/// The host's grant, as the remote transport asks about origins and
/// authorization.
struct GrantHandle(remote::Grant);

impl crate::remote::target::Grant for GrantHandle {
    fn same_origin(&self, url: &str) -> bool {
        self.0.same_origin(url)
    }

    fn needs_authorization(&self) -> Option<crate::transport::AuthorizationFailure> {
        use crate::transport::AuthorizationFailure as Plain;
        Some(match self.0.needs_authorization()? {
            remote::AuthorizationFailure::LoginRequired(why) => Plain::LoginRequired(why),
            remote::AuthorizationFailure::CredentialsRefused(why) => Plain::CredentialsRefused(why),
        })
    }
}

/// A connection of either kind.
enum HostConnection {
    Stdio(StdioConnection),
    Remote(Box<RemoteConnection<wasi_http::WasiHttp>>),
}

impl Connection for HostConnection {
    fn send(&mut self, message: &str, meta: &SendMeta) -> Result<(), TransportError> {
        match self {
            HostConnection::Stdio(c) => c.send(message, meta),
            HostConnection::Remote(c) => c.send(message, meta),
        }
    }

    fn receive(&mut self) -> Result<Vec<String>, TransportError> {
        match self {
            HostConnection::Stdio(c) => c.receive(),
            HostConnection::Remote(c) => c.receive(),
        }
    }

    fn diagnostics(&self) -> Diagnostics {
        match self {
            HostConnection::Stdio(c) => c.diagnostics(),
            HostConnection::Remote(c) => c.diagnostics(),
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        match self {
            HostConnection::Stdio(c) => c.next_deadline(),
            HostConnection::Remote(c) => c.next_deadline(),
        }
    }
}

impl Platform for Host {
    type Conn = HostConnection;

    fn open(
        &mut self,
        server: &str,
        endpoint: &Endpoint,
    ) -> Result<HostConnection, TransportError> {
        let (kind, url, headers) = match endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
                sandbox,
            } => {
                let invalid =
                    |e: String| TransportError::InvalidEndpoint(format!("server `{server}`: {e}"));
                let endpoint = to_wit_stdio(command, args, env, cwd.as_deref(), sandbox.as_ref())
                    .map_err(invalid)?;
                return transport::Connection::open(server, &endpoint)
                    .map(|conn| {
                        HostConnection::Stdio(StdioConnection {
                            pollable: core::cell::OnceCell::new(),
                            id: core::cell::OnceCell::new(),
                            closed: None,
                            conn,
                        })
                    })
                    .map_err(from_wit_error);
            }
            Endpoint::Http { url, headers } => (Kind::Streamable, url, headers),
            Endpoint::Sse { url, headers } => (Kind::LegacySse, url, headers),
        };
        let invalid =
            |e: String| TransportError::InvalidEndpoint(format!("server `{server}`: {e}"));
        let endpoint = to_wit_http(url, headers).map_err(invalid)?;
        let grant = remote::Grant::open(server, &endpoint).map_err(from_wit_error)?;
        let target = Target::granted(server, url, &grant.url(), Box::new(GrantHandle(grant)));
        let cap = usize::try_from(transport::max_message_bytes()).unwrap_or(usize::MAX);
        let conn = RemoteConnection::open(kind, wasi_http::WasiHttp::default(), target, cap);
        Ok(HostConnection::Remote(Box::new(conn)))
    }

    fn now_ms(&self) -> u64 {
        match STEP.with(|s| s.now_ms) {
            Some(now) => now,
            None => monotonic_clock::now() / 1_000_000,
        }
    }

    fn wall_clock_ms(&self) -> Option<u64> {
        let now = wall_clock::now();
        Some(now.seconds * 1000 + u64::from(now.nanoseconds / 1_000_000))
    }

    fn memo_get(&self, key: &str) -> Option<String> {
        state::get(key)
    }

    fn memo_set(&mut self, key: &str, value: &str) {
        state::set(key, value);
    }

    fn load_pins(&self) -> Option<(String, bool)> {
        pins::load().map(|kept| (kept.pins, kept.accept_pending))
    }

    fn save_pins(&mut self, text: &str) {
        pins::save(text);
    }

    fn pins_kept_across_runs(&self) -> bool {
        pins::kept_across_runs()
    }

    fn write_blob(
        &mut self,
        server: &str,
        name: &str,
        mime_type: &str,
        data: &[u8],
    ) -> Result<crate::transport::Blob, crate::transport::BlobError> {
        use crate::transport::{Blob, BlobError};
        blobs::write(server, name, mime_type, data)
            .map(|b| Blob {
                uri: b.uri,
                size: b.size,
            })
            .map_err(|e| match e {
                blobs::BlobError::Denied(m) => BlobError::Denied(m),
                blobs::BlobError::TooLarge(limit) => BlobError::TooLarge(limit),
                blobs::BlobError::Io(m) => BlobError::Io(m),
            })
    }

    fn block(&mut self, conns: &[&HostConnection], now_ms: u64, deadline_ms: u64) -> Woken {
        // Blocking inside a step: what the step queued goes out first, and
        // from now on the clock and the connections are read through imports.
        if STEP.with(|s| s.active) {
            for (id, messages) in STEP.with(Step::take_outgoing) {
                for conn in conns {
                    if let HostConnection::Stdio(c) = conn
                        && c.id.get() == Some(&id)
                    {
                        for m in &messages {
                            // A failed send shows as the connection closing.
                            let _ = c.conn.send(m);
                        }
                    }
                }
            }
            STEP.with(|s| {
                s.blocked = true;
                s.now_ms = None;
            });
        }
        let kept = self.clock.as_ref().map(|(at, _)| *at);
        if !kept.is_some_and(|at| clock_reusable(at, now_ms, deadline_ms)) {
            // Dropped before a new one is made.
            self.clock = None;
        }
        let (_, clock) = self.clock.get_or_insert_with(|| {
            let instant = deadline_ms.saturating_mul(1_000_000);
            (deadline_ms, monotonic_clock::subscribe_instant(instant))
        });
        let clock = &*clock;
        let wake = self.wake.get_or_insert_with(control::wake_signal);
        let mut refs: Vec<&poll::Pollable> = Vec::with_capacity(conns.len() + 2);
        for conn in conns {
            match conn {
                HostConnection::Stdio(c) => refs.push(c.pollable()),
                HostConnection::Remote(c) => c.port().pollables(&mut refs),
            }
        }
        refs.push(clock);
        let wake_index = refs.len();
        refs.push(wake);
        let ready = poll::poll(&refs);
        let signal = ready.iter().any(|&i| i as usize == wake_index);
        match (signal, ready.len() > usize::from(signal)) {
            (true, false) => Woken::Signal,
            (true, true) => Woken::SignalAndIo,
            (false, _) => Woken::Io,
        }
    }
}

/// `env` or `headers` entries as templates; `field` is the block's name.
fn from_wit_error(e: types::TransportError) -> TransportError {
    use types::TransportError as W;
    match e {
        W::Denied(m) => TransportError::Denied(m),
        W::InvalidEndpoint(m) => TransportError::InvalidEndpoint(m),
        W::Unreachable(m) => TransportError::Unreachable(m),
        W::Closed(m) => TransportError::Closed(m),
        W::TooLarge(o) => TransportError::TooLarge(Oversized {
            size: o.size,
            cap: o.cap,
            head: o.head,
            tail: o.tail,
        }),
        W::Io(m) => TransportError::Io(m),
        W::Unsupported(m) => TransportError::Unsupported(m),
    }
}

// wasm32-wasip2 without the `atomics` feature has exactly one thread; the `Sync`
// claim on `Global` below rests on that.
#[cfg(target_feature = "atomics")]
compile_error!("the guest assumes a single-threaded wasm target");

/// The one manager of this instance.
struct Global(RefCell<Option<Manager<Host>>>);

// SAFETY: the component runs on a single thread (checked above) and exports do not
// re-enter one another, so the cell is never reached from two threads; a re-entrant
// borrow would still be caught by the `RefCell` (and trap) rather than alias.
#[allow(unsafe_code)]
unsafe impl Sync for Global {}

static MANAGER: Global = Global(RefCell::new(None));

fn with<R>(f: impl FnOnce(&mut Manager<Host>) -> R) -> R {
    let mut slot = MANAGER.0.borrow_mut();
    f(slot.get_or_insert_with(|| Manager::new(Host::default())))
}

/// The gateway of this instance (the server side), beside its manager.
struct GlobalGateway(RefCell<Option<Gateway>>);

// SAFETY: as for `Global`.
#[allow(unsafe_code)]
unsafe impl Sync for GlobalGateway {}

static GATEWAY: GlobalGateway = GlobalGateway(RefCell::new(None));

/// The manager and the gateway together; never re-entered (see `Global`).
fn with_both<R>(f: impl FnOnce(&mut Manager<Host>, &mut Gateway) -> R) -> R {
    let mut gateway = GATEWAY.0.borrow_mut();
    let gateway = gateway.get_or_insert_with(Gateway::new);
    with(|m| f(m, gateway))
}

/// What a `turns.step` hands in and takes out, beside the manager: the
/// messages each stdio connection received, those it is to send, and the
/// step's time. Outside a step (the `registry` exports) it is inactive and the
/// connections use their imports.
#[derive(Default)]
struct Step {
    active: bool,
    /// The guest blocked on its own pollables in this step: the clock and the
    /// connections are read through imports from then on.
    blocked: bool,
    /// The step's time (ms), until the guest blocks.
    now_ms: Option<u64>,
    /// By connection: what arrived, as `receive` results, oldest first.
    inbox: alloc::collections::BTreeMap<
        u64,
        alloc::collections::VecDeque<Result<Vec<String>, TransportError>>,
    >,
    /// Connections whose messages the host kept, too large to hand in: their
    /// `receive` takes them through the import, after what the inbox holds.
    waiting: alloc::collections::BTreeSet<u64>,
    /// By connection: what to write, in order.
    outbox: alloc::collections::BTreeMap<u64, Vec<String>>,
}

impl Step {
    fn queue(&mut self, id: u64, message: &str) {
        self.outbox.entry(id).or_default().push(message.to_owned());
    }

    fn take(&mut self, id: u64) -> Option<Result<Vec<String>, TransportError>> {
        self.inbox.get_mut(&id)?.pop_front()
    }

    /// Whether the host kept messages for connection `id`'s `receive` (once).
    fn take_waiting(&mut self, id: u64) -> bool {
        self.waiting.remove(&id)
    }

    fn take_outgoing(&mut self) -> alloc::collections::BTreeMap<u64, Vec<String>> {
        core::mem::take(&mut self.outbox)
    }

    /// A connection was dropped: what it had not taken goes with it.
    fn forget(&mut self, id: u64) {
        self.inbox.remove(&id);
        self.waiting.remove(&id);
        self.outbox.remove(&id);
    }
}

/// The instance's step state; never re-entered (see `Global`).
struct StepCell(RefCell<Option<Step>>);

// SAFETY: as for `Global`.
#[allow(unsafe_code)]
unsafe impl Sync for StepCell {}

impl StepCell {
    fn with<R>(&self, f: impl FnOnce(&mut Step) -> R) -> R {
        f(self.0.borrow_mut().get_or_insert_with(Step::default))
    }
}

static STEP: StepCell = StepCell(RefCell::new(None));

/// The gateway's HTTP rules and session ids, once serving over HTTP
/// (`serve-options.http`): what `gateway.http-head` decides with.
struct HttpCell(RefCell<Option<(http::Rules, http::SignedSessions)>>);

// SAFETY: as for `Global`.
#[allow(unsafe_code)]
unsafe impl Sync for HttpCell {}

static HTTP: HttpCell = HttpCell(RefCell::new(None));

/// The headers for the answer that opens session `handle`: its signed id,
/// when serving over HTTP.
fn session_headers(handle: u64) -> Vec<types::Pair> {
    let mut http = HTTP.0.borrow_mut();
    let Some((_, ids)) = http.as_mut() else {
        return Vec::new();
    };
    ids.issue("", handle)
        .map(|id| types::Pair {
            name: http::SESSION_HEADER.into(),
            value: id,
        })
        .into_iter()
        .collect()
}

/// The exported interfaces: `registry` (in [`registry`]), `turns` and `gateway`.
struct Component;

/// The exported `turns` interface: one entry per turn of a host that waits on
/// its stdio servers itself. The jobs and the wait are the `registry` exports'
/// own, called here in order.
impl wit_turns::Guest for Component {
    fn step(input: wit_turns::TurnInput) -> wit_turns::TurnOutput {
        use wit::Guest as _;
        use wit_gateway::Guest as _;
        let mut signals = Vec::new();
        STEP.with(|s| {
            s.active = true;
            s.blocked = false;
            s.now_ms = Some(input.now / 1_000_000);
            for arrival in input.arrived {
                if arrival.waiting {
                    s.waiting.insert(arrival.connection);
                    continue;
                }
                let queue = s.inbox.entry(arrival.connection).or_default();
                if !arrival.messages.is_empty() {
                    queue.push_back(Ok(arrival.messages));
                }
                if let Some(e) = arrival.error {
                    queue.push_back(Err(from_wit_error(e)));
                }
            }
        });
        let jobs = input
            .jobs
            .into_iter()
            .map(|job| match job {
                wit_turns::Job::Call(c) => wit_turns::JobOutcome::Started(match c.dialect {
                    None => Component::start_call(c.tool, c.arguments, c.options),
                    Some(d) => Component::start_adapted_call(d, c.tool, c.arguments, c.options),
                }),
                wit_turns::Job::Request(r) => wit_turns::JobOutcome::Started(
                    Component::start_request(r.server, r.request, r.options),
                ),
                wit_turns::Job::Cancel(call) => {
                    Component::cancel(call);
                    wit_turns::JobOutcome::Cancelled
                }
                wit_turns::Job::AnswerInput(a) => {
                    wit_turns::JobOutcome::Answered(Component::answer_input(a.id, a.answer))
                }
                wit_turns::Job::Downstream(inbound) => {
                    signals.extend(Component::receive(inbound));
                    wit_turns::JobOutcome::Signalled
                }
                wit_turns::Job::ExchangeClosed(exchange) => {
                    signals.extend(Component::exchange_closed(exchange));
                    wit_turns::JobOutcome::Signalled
                }
                wit_turns::Job::SessionClosed(session) => {
                    signals.extend(Component::session_closed(session));
                    wit_turns::JobOutcome::Signalled
                }
            })
            .collect();
        // What the jobs already answered (a downstream client's `ping` or
        // `tools/list`, which the gateway answers itself and which ends no
        // call) goes back now: a step that blocked on remote servers would hold
        // it until its timeout.
        let timeout_ms = if signals.is_empty() {
            input.timeout_ms
        } else {
            0
        };
        let mut turn = Component::wait(timeout_ms);
        if !signals.is_empty() {
            signals.append(&mut turn.downstream);
            turn.downstream = signals;
        }
        let (deadline_ms, blocking) = with_both(|m, g| {
            // Work the gateway can do at once makes the next step due now.
            let deadline = if g.busy(m) {
                Some(0)
            } else {
                match (m.next_deadline(), g.next_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            };
            let blocking = m.connections().any(|c| match c {
                HostConnection::Remote(r) => r.port().waiting(),
                HostConnection::Stdio(_) => false,
            });
            (deadline, blocking)
        });
        let outgoing = STEP.with(|s| {
            s.active = false;
            s.now_ms = None;
            s.take_outgoing()
        });
        wit_turns::TurnOutput {
            jobs,
            outgoing: outgoing
                .into_iter()
                .map(|(connection, messages)| wit_turns::Outgoing {
                    connection,
                    messages,
                })
                .collect(),
            turn,
            deadline: deadline_ms.map(|ms| ms.saturating_mul(1_000_000)),
            blocking,
        }
    }
}

/// The exported `gateway` interface.
impl wit_gateway::Guest for Component {
    fn serve(options: wit_gateway::ServeOptions) -> Result<(), String> {
        let naming = Naming::parse(&options.naming).ok_or_else(|| {
            format!(
                "unknown naming mode {:?}: use \"prefixed\" or \"conditional\"",
                options.naming
            )
        })?;
        let schema_dialect = options
            .schema_dialect
            .as_deref()
            .map(str::parse::<crate::adapter::Dialect>)
            .transpose()
            .map_err(|e| format!("--schema-dialect: {e}"))?;
        *HTTP.0.borrow_mut() = options.http.map(|rules| {
            let rules = http::Rules {
                access: http::Access {
                    token: rules.token,
                    insecure_no_token: rules.insecure_no_token,
                    allowed_origins: rules.allowed_origins,
                    loopback_listener: Some(rules.loopback),
                },
                bound_profile: options.profile.clone(),
                kept_sessions: true,
            };
            (rules, http::SignedSessions::new(&options.secret))
        });
        let serve = ServeOptions {
            schema_dialect,
            naming,
            max_name_len: (options.max_name_length as usize).clamp(16, 64),
            tool_search: options.tool_search,
            page_size: (options.page_size as usize).max(1),
            secret: options.secret,
            keeps_tasks: true,
        };
        with_both(|m, g| {
            g.serve(m.permissions(), serve, options.profile.as_deref())?;
            m.serve_downstream();
            Ok(())
        })
    }

    fn http_head(head: wit_gateway::RequestHead) -> wit_gateway::HttpDecision {
        use wit_gateway::{HttpAnswer, HttpDecision, HttpPost};
        let pairs = |headers: Vec<(String, String)>| {
            headers
                .into_iter()
                .map(|(name, value)| types::Pair { name, value })
                .collect()
        };
        let http = HTTP.0.borrow();
        let Some((rules, ids)) = http.as_ref() else {
            return HttpDecision::Answer(HttpAnswer {
                status: 500,
                headers: Vec::new(),
                body: "the gateway does not serve HTTP (gateway.serve without http rules)".into(),
            });
        };
        let request = http::HttpRequest {
            method: head.method,
            path: head.path,
            headers: head
                .headers
                .into_iter()
                .map(|p| (p.name, p.value))
                .collect(),
            body: Vec::new(),
        };
        match http::decide(rules, ids, &request) {
            http::Decision::Answer(a) => HttpDecision::Answer(HttpAnswer {
                status: a.status,
                headers: pairs(a.headers),
                body: a.body,
            }),
            http::Decision::Post {
                session,
                profile,
                headers,
            } => HttpDecision::Post(HttpPost {
                session: match session {
                    Some(http::Named::Session(handle)) => Some(handle),
                    _ => None,
                },
                profile,
                headers: headers
                    .into_iter()
                    .map(|p| types::Pair {
                        name: p.name,
                        value: p.value,
                    })
                    .collect(),
            }),
            http::Decision::Stream(handle) => HttpDecision::OpenStream(handle),
            http::Decision::EndSession(handle) => HttpDecision::EndSession(handle),
        }
    }

    fn receive(message: wit_gateway::Inbound) -> Vec<types::DownstreamSignal> {
        let inbound = Inbound {
            session: message.session,
            exchange: message.exchange,
            kind: match message.kind {
                wit_gateway::TransportKind::Stdio => TransportKind::Stdio,
                wit_gateway::TransportKind::Http => TransportKind::Http,
            },
            profile: message.profile,
            headers: message
                .headers
                .into_iter()
                .map(|p| Pair {
                    name: p.name,
                    value: p.value,
                })
                .collect(),
            text: message.text,
        };
        with_both(|m, g| {
            g.receive(m, inbound);
            take_signals(g)
        })
    }

    fn exchange_closed(exchange: u64) -> Vec<types::DownstreamSignal> {
        with_both(|m, g| {
            g.exchange_closed(m, exchange);
            take_signals(g)
        })
    }

    fn session_closed(session: u64) -> Vec<types::DownstreamSignal> {
        with_both(|m, g| {
            g.session_closed(m, session);
            take_signals(g)
        })
    }
}
