//! The gateway (the MCP server side, `mcpbox serve`): the registry served to
//! downstream MCP clients, as a state machine with no I/O of its own. Its host
//! half is `host/src/gateway/`; "server" elsewhere means an upstream MCP server.
//!
//! The host frames the transport (stdio lines, HTTP requests and SSE streams) and
//! hands each downstream message in with the facts only it knows
//! ([`Inbound`]: the *exchange* it arrived on — one HTTP POST, or one stdio line —
//! the session its `Mcp-Session-Id` names, the profile named by the path, the MCP
//! headers; over HTTP, [`http`] decided all three from the request's head). The
//! gateway answers with [`Signal`]s: messages for an exchange (its answer stream)
//! or for a session's standalone stream (the GET stream; stdout on stdio), the end
//! of an exchange with its HTTP status, and the opening of a session (whose id
//! [`http::SessionIds`] makes). Between the
//! two sits the [`Manager`]: a downstream `tools/call` becomes a manager call, and
//! what the manager reports about it (its end, progress, input requests, logs)
//! goes back to the client that made it. Every MCP meaning is decided here — eras,
//! sessions, ids, errors, which stream a message belongs to, when an answer is
//! final — so any host, including a stock `wasi:http` one, serves the same gateway.
//!
//! | module | MCP concept |
//! |---|---|
//! | [`lifecycle`] | `initialize` and sessions (2025-11-25 and older); `server/discover`, per-request `_meta` and headers (2026-07-28) |
//! | `exchanges` | exchanges (one POST, one stdio line) until every request in them is answered, and the backlog of a batch |
//! | `held` | requests held while servers start |
//! | [`http`] | the Streamable HTTP endpoint's rules: paths, token, `Origin`, which `mcp-*` headers pass, SSE framing, session ids behind a trait |
//! | `handle` | a 2025 session's handle: what it negotiated, kept by the host across a restart of the guest |
//! | `tools` | `tools/list` with pagination, `tools/call` bridged to the registry |
//! | [`exposure`] | served names (`{server}__{tool}`, conditional prefix), profiles applied |
//! | [`search`] | the `search_tools` / `call_tool` mode for large registries |
//! | `elicitation` | upstream input requests and `ask` approvals put to the client: `elicitation/create`, or `input_required` |
//! | [`sampling`] | an upstream `sampling/createMessage` forwarded to a client that declared `sampling`, its result passed back |
//! | `tasks` | the gateway's tasks: task-augmented `tools/call` (2025-11-25: `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) and the `io.modelcontextprotocol/tasks` extension (2026-07-28: `tasks/get`, `tasks/update`, `tasks/cancel`) |
//! | `subscriptions` | list changes (tools, resources, prompts) and resource subscriptions: `notifications/*/list_changed`, `resources/subscribe` (2025) and `subscriptions/listen` (2026-07-28) |
//! | [`logging`] | upstream log lines and progress to the right downstream stream |
//! | `resources` | resources, prompts, completions and skills of every server, aggregated and passed through |
//!
//! # Exchanges and their end
//!
//! Every request of an exchange is answered exactly once on that exchange (a
//! downstream `notifications/cancelled` answers it with silence); when the last
//! one is answered the gateway ends the exchange ([`Signal::End`]), so the host can
//! close that POST's SSE stream. An exchange of notifications and responses only
//! ends at once with status 202. A `subscriptions/listen` request is never
//! answered: its exchange stays open until the client goes away. The bookkeeping
//! is `exchanges.rs`'s, with its tests.
//!
//! # What one client may cost the others
//!
//! The guest's memory is shared by every client and server; a client's request
//! must never trap it. So a message's JSON values are counted, and the memory
//! reading it takes checked, before it is read ([`crate::budget`]: `413` or `503`
//! with a JSON-RPC error for that exchange alone); a JSON-RPC batch is read only
//! on a session that negotiated 2025-03-26 (the one revision with batches) and up
//! to [`MAX_BATCH`] messages; a batch's messages, and the requests held while
//! servers start, are handled only until the answers of the turn pass
//! [`FLUSH_BYTES`], the rest in the turns that follow ([`Gateway::busy`] tells the
//! host not to block meanwhile), so answers leave the guest as they are made; and
//! a log line fans out to sessions within [`FANOUT_BYTES`] a turn. The host holds
//! the requests in flight to a budget per session and in all (see
//! `host/src/gateway/http.rs`). Should the guest trap all the same, the host keeps
//! the sessions and the next instance reopens them from their handles (see
//! `handle`): what was in flight is lost, no session is.

pub mod exposure;
pub mod http;
pub mod lifecycle;
pub mod logging;
pub mod sampling;
pub mod search;

mod elicitation;
mod exchanges;
mod handle;
mod held;
mod resources;
mod subscriptions;
mod tasks;
mod tools;

#[cfg(test)]
mod tests;

use crate::prelude::*;
use crate::{budget, methods};
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};

use alloc::rc::Rc;
use exchanges::Exchanges;
use held::{Held, HeldRequest};

use serde_json::{Value, json};

use crate::client::{CallError, Caller, FinishedCall};
use crate::elicitation::InputRequest;
use crate::jsonrpc::{self, Id, METHOD_NOT_FOUND, Message};
use crate::manager::{Event, Manager};
use crate::permissions::Permissions;
use crate::transport::{Pair, Platform};

use exposure::{Exposure, Naming};
use lifecycle::{Refusal, RequestMeta};
use tools::Params;

/// JSON-RPC: the text is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// The served-name budget that leaves room for a client's `mcp__mcpbox__` prefix
/// within 64 characters (see [`exposure`]).
pub const DEFAULT_MAX_NAME_LEN: usize = 64 - "mcp__mcpbox__".len();

/// Tools per `tools/list` page.
pub const DEFAULT_PAGE_SIZE: usize = 500;

/// The most messages a JSON-RPC batch may hold.
pub const MAX_BATCH: usize = 64;

/// The one revision with JSON-RPC batches.
const BATCH_VERSION: &str = "2025-03-26";

/// Bytes of answers one turn hands the host before the rest of a batch, and
/// held requests released at once, wait for the next turn: the answers to a
/// batch leave the guest as they are made, not all built first.
pub const FLUSH_BYTES: usize = 1024 * 1024;

/// Bytes of log lines one turn fans out to the standalone streams of sessions
/// with no call of that server: past them, such copies are dropped (the calls'
/// own streams still get theirs). A line for every session costs a copy per
/// session; without a bound, sessions times a large line outgrows the guest.
pub const FANOUT_BYTES: usize = 4 * 1024 * 1024;

/// How a downstream client is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// Newline-delimited JSON-RPC on the host's stdin and stdout: one client.
    Stdio,
    /// Streamable HTTP: many clients; an exchange is one POST.
    Http,
}

/// How the gateway serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// How registry tools are named downstream.
    pub naming: Naming,
    /// The longest served name.
    pub max_name_len: usize,
    /// Serve `search_tools` and `call_tool` instead of every tool.
    pub tool_search: bool,
    /// Items per page of `tools/list` and of the resource, template and
    /// prompt lists.
    pub page_size: usize,
    /// Random text from the host, to make `requestState` tokens unguessable
    /// (the guest has no randomness of its own).
    pub secret: String,
    /// Schemas served in this provider dialect, arguments mapped back (see
    /// `tools.rs`); `None` serves them as the servers wrote them.
    pub schema_dialect: Option<crate::adapter::Dialect>,
    /// The gateway outlives its exchanges, so it keeps tasks for its clients
    /// (see `tasks`). False for an instance that lives for one request (the
    /// stock component): a task would end with it, so none is offered.
    pub keeps_tasks: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            naming: Naming::Prefixed,
            max_name_len: DEFAULT_MAX_NAME_LEN,
            tool_search: false,
            page_size: DEFAULT_PAGE_SIZE,
            secret: String::new(),
            schema_dialect: None,
            keeps_tasks: true,
        }
    }
}

/// One downstream message with the transport facts the host knows about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    /// The session the host found for the request's `Mcp-Session-Id` (or the one
    /// the stdio client opened); none when the request names none.
    pub session: Option<u64>,
    /// The exchange: one HTTP POST, or one stdio line. Unique for the run.
    pub exchange: u64,
    /// The transport.
    pub kind: TransportKind,
    /// The profile chosen (`--profile`, or the path `/mcp/NAME`).
    pub profile: Option<String>,
    /// The request's MCP headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, …).
    pub headers: Vec<Pair>,
    /// The JSON-RPC message (or batch) text.
    pub text: String,
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The answer stream of an exchange (the POST's response; stdout on stdio).
    Exchange(u64),
    /// A session's standalone stream (the HTTP GET stream; stdout on stdio).
    Session(u64),
}

/// What the gateway tells the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// A message for the client.
    Message {
        /// Which stream it belongs to.
        target: Target,
        /// The JSON-RPC message text.
        text: String,
    },
    /// The exchange is over: every request in it is answered. `status` is the
    /// HTTP status for an answer not yet streamed (202 when nothing was answered).
    End {
        /// The exchange.
        exchange: u64,
        /// The HTTP status.
        status: u16,
    },
    /// `initialize` on `exchange` opened `session`: over HTTP the host gives it an
    /// `Mcp-Session-Id` on that exchange's answer and maps the id to it.
    SessionOpened {
        /// The exchange that carried `initialize`.
        exchange: u64,
        /// The new session's handle.
        session: u64,
    },
}

/// A 2025-era session.
#[derive(Debug, Clone)]
struct Session {
    profile: Option<String>,
    /// The negotiated version.
    protocol_version: &'static str,
    /// The client declared form-mode elicitation.
    elicitation: bool,
    /// What the client declared of sampling.
    sampling: sampling::Sampling,
    /// `notifications/initialized` arrived.
    initialized: bool,
    /// The lowest log level it wants (rank; 0 until `logging/setLevel`).
    log_level: u8,
    /// The exposure fingerprint the session last saw or was told about.
    notified: u64,
    /// Tools (registry names) whose `ask` rule the host's user approved for this
    /// session (the dashboard's "approve for the session"): not asked again here.
    approved: BTreeSet<String>,
}

/// The gateway's 2025-era sessions: every open one by handle, the next handle's
/// sequence number, and the stdio client's.
#[derive(Debug, Default)]
struct Sessions {
    open: BTreeMap<u64, Session>,
    /// The sequence number of the next handle made (see `handle`).
    next: u64,
    /// The session of the stdio client. On stdio the connection is the session:
    /// lines that follow `initialize` belong to it even when the host hands them in
    /// before it saw the session open.
    stdio: Option<u64>,
}

/// Where a downstream request came from and how to answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    /// The exchange to answer on; none while a 2026-07-28 call waits for a retry.
    exchange: Option<u64>,
    session: Option<u64>,
    id: Id,
    /// The request's `_meta` facts, for a 2026-07-28 request.
    stateless: Option<RequestMeta>,
    profile: Option<String>,
    /// A `tools/call` to run as a task (see `tasks`): the `ttl` it keeps.
    task: Option<u64>,
}

impl Origin {
    /// Whether the client can be asked for input on this request.
    fn can_elicit(&self, sessions: &BTreeMap<u64, Session>) -> bool {
        match &self.stateless {
            Some(meta) => meta.elicitation,
            None => self
                .session
                .and_then(|s| sessions.get(&s))
                .is_some_and(|s| s.elicitation),
        }
    }

    /// Whether the client can be asked for this upstream input request: an
    /// elicitation needs `elicitation`, a sampling request `sampling` (and
    /// `sampling.tools` when it carries tools).
    fn can_take(&self, sessions: &BTreeMap<u64, Session>, r: &InputRequest) -> bool {
        let Some(params) = &r.sampling else {
            return self.can_elicit(sessions);
        };
        self.sampling(sessions).covers(params)
    }

    /// What the client declared of sampling.
    fn sampling(&self, sessions: &BTreeMap<u64, Session>) -> sampling::Sampling {
        match &self.stateless {
            Some(meta) => meta.sampling,
            None => self
                .session
                .and_then(|s| sessions.get(&s))
                .map(|s| s.sampling)
                .unwrap_or_default(),
        }
    }

    /// What the client can be asked, for the upstream request made for it (see
    /// [`Caller`]).
    fn caller(&self, sessions: &BTreeMap<u64, Session>) -> Caller {
        let sampling = self.sampling(sessions);
        Caller {
            elicitation: self.can_elicit(sessions),
            sampling: sampling.declared,
            sampling_tools: sampling.tools,
        }
    }

    /// Why the client cannot be asked `r` ([`Origin::can_take`] is false), in
    /// words for the server and whoever reads its answer.
    fn why_not(&self, sessions: &BTreeMap<u64, Session>, r: &InputRequest) -> String {
        let who = "the client of mcpbox serve that made this call";
        if r.sampling.is_none() {
            return format!("{who} did not declare the `elicitation` capability");
        }
        if self.sampling(sessions).declared {
            format!(
                "{who} declared `sampling` without `sampling.tools`, and the request carries tools"
            )
        } else {
            format!("{who} did not declare the `sampling` capability")
        }
    }
}

/// A downstream `tools/call` running as a manager call.
#[derive(Debug, Clone)]
struct DownCall {
    origin: Origin,
    progress_token: Option<Value>,
    /// The upstream server's configured name.
    server: Rc<str>,
    /// The served tool name.
    served: String,
    /// The client cancelled it: no answer goes back.
    cancelled: bool,
    /// Input requests that came while the call waited for a 2026-07-28 retry.
    queued: Vec<InputRequest>,
    /// The downstream task it runs (see `tasks`): its answer goes there.
    task: Option<String>,
    /// When a 2026-07-28 client that takes tasks gets one in place of the
    /// result, should the call still run (see `tasks`).
    task_after: Option<u64>,
}

/// The server side of one guest instance.
#[derive(Debug, Default)]
pub struct Gateway {
    options: ServeOptions,
    serving: bool,
    /// 2025-era sessions.
    sessions: Sessions,
    /// Exchanges in flight, and the backlog of their messages.
    exchanges: Exchanges,
    /// Manager call → the downstream call it serves.
    calls: BTreeMap<u64, DownCall>,
    /// Requests held while servers start.
    held: Held,
    /// What is served per profile (see `exposure::Served`).
    served: exposure::Served,
    /// Requests sent to downstream clients and 2026-07-28 input rounds.
    input: elicitation::InputRounds,
    /// Warnings for the host (name clashes), taken with [`Gateway::take_warnings`].
    warnings: Vec<String>,
    /// Events for the host: its approvals offered and withdrawn (see
    /// `elicitation`), passed on with the manager's by [`Gateway::absorb`].
    host_events: Vec<Event>,
    out: Vec<Signal>,
    /// Manager requests (resources, prompts, completions) → the downstream
    /// request each serves.
    requests: BTreeMap<u64, resources::DownRequest>,
    /// Which server listed each resource template served, for completions.
    template_servers: BTreeMap<String, String>,
    /// Which server listed each skill served (by `SKILL.md` URI), for
    /// `skills/get`.
    skill_servers: BTreeMap<String, String>,
    /// Served prompt name → (server, the prompt's own name), from the lists
    /// served.
    served_prompts: BTreeMap<String, (String, String)>,
    /// Resource subscriptions, held and in flight upstream.
    subscriptions: subscriptions::Subscriptions,
    /// Downstream clients' tasks.
    tasks: tasks::Tasks,
}

/// The text of a JSON value, for building messages around raw JSON.
fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

impl Gateway {
    /// A gateway that serves nobody yet.
    pub fn new() -> Gateway {
        Gateway {
            sessions: Sessions {
                next: 1,
                ..Sessions::default()
            },
            input: elicitation::InputRounds::new(),
            ..Gateway::default()
        }
    }

    /// A configuration was loaded: what was served under the old one is built
    /// afresh. The rules themselves (`permissions`, `profiles`) are the
    /// manager's ([`crate::permissions`]): the gateway asks it per tool.
    pub fn configure(&mut self) {
        self.served.exposures.clear();
        self.served.retired.clear();
        self.served.indexes.clear();
    }

    /// Starts serving. `Err` when `profile` (the stdio client's) is not configured.
    pub fn serve(
        &mut self,
        permissions: &Permissions,
        options: ServeOptions,
        profile: Option<&str>,
    ) -> Result<(), String> {
        if let Some(p) = profile {
            check_profile(permissions, p)?;
        }
        self.options = options;
        self.serving = true;
        self.served.exposures.clear();
        Ok(())
    }

    /// Takes what the gateway has for the host.
    pub fn take_signals(&mut self) -> Vec<Signal> {
        core::mem::take(&mut self.out)
    }

    /// Takes warnings for the host's log (served-name clashes).
    pub fn take_warnings(&mut self) -> Vec<String> {
        core::mem::take(&mut self.warnings)
    }

    /// Handles a downstream message (or batch).
    pub fn receive<P: Platform>(&mut self, m: &mut Manager<P>, inbound: Inbound) {
        let Inbound {
            session,
            exchange,
            kind,
            profile,
            headers,
            text,
        } = inbound;
        let session = match (session, kind) {
            (None, TransportKind::Stdio) => self.sessions.stdio,
            (session, _) => session,
        };
        // A session the host kept across a restart of the guest: reopened.
        if text.trim().is_empty() {
            return self.reopen(session, exchange, kind, profile);
        }
        self.exchanges.begin(exchange, session, kind);
        let ctx = Context {
            exchange,
            session,
            kind,
            profile,
            headers,
        };
        // Counted before it is read: what reading it builds must fit now, or this
        // exchange alone is refused. Held at once: the text and the raw payloads,
        // a request's parameters as a `Value` and the arguments that tools/call
        // takes from them (checked as one more tree).
        if let Err(refused) = budget::admit(budget::Needs::of(&text), 3, 2) {
            let status = match refused {
                budget::Refused::TooManyValues(_) => 413,
                budget::Refused::NoMemory(_) => 503,
            };
            let refusal = Refusal::new(INVALID_REQUEST, refused.describe("this message"));
            return self.refuse_whole(&ctx, refusal.status(status));
        }
        let messages = jsonrpc::parse(&text);
        // A batch that is not JSON at all is a parse error, as any such text.
        let batch = text.trim_start().starts_with('[')
            && !matches!(messages.as_slice(), [Message::Invalid(why)] if why.starts_with("not valid JSON"));
        drop(text);
        if batch && let Err(refusal) = self.check_batch(session, messages.len()) {
            return self.refuse_whole(&ctx, refusal);
        }
        // Count the requests first, so one answered at once does not end the
        // exchange before the rest of a batch is read.
        let requests = messages
            .iter()
            .filter(|m| matches!(m, Message::Request(_) | Message::Invalid(_)))
            .count();
        self.exchanges.expect(exchange, requests);
        self.run(m, ctx, messages.into());
    }

    /// Handles the messages of an exchange in order, until the answers made in
    /// this turn pass [`FLUSH_BYTES`]: the rest wait in the backlog for the next
    /// turn ([`Gateway::pump`]), so a batch's answers leave the guest as they are
    /// made instead of all being built first.
    fn run<P: Platform>(&mut self, m: &mut Manager<P>, ctx: Context, mut rest: VecDeque<Message>) {
        while let Some(message) = rest.pop_front() {
            self.handle(m, &ctx, message);
            if !rest.is_empty() && self.out_bytes() >= FLUSH_BYTES {
                self.exchanges.defer(ctx, rest);
                return;
            }
        }
        self.maybe_end(ctx.exchange);
    }

    fn handle<P: Platform>(&mut self, m: &mut Manager<P>, ctx: &Context, message: Message) {
        match message {
            Message::Request(r) => self.on_request(m, ctx, r),
            Message::Notification(n) => self.on_notification(m, ctx, n),
            Message::Response(r) => self.on_response(m, r),
            Message::Invalid(why) => {
                let code = if why.starts_with("not valid JSON") {
                    PARSE_ERROR
                } else {
                    INVALID_REQUEST
                };
                let origin = Origin {
                    exchange: Some(ctx.exchange),
                    session: ctx.session,
                    id: Id::Other("null".into()),
                    stateless: None,
                    profile: None,
                    task: None,
                };
                self.answer(&origin, Err(Refusal::new(code, why).status(400)));
            }
        }
    }

    /// Refuses a whole exchange's text with one error (id `null`).
    fn refuse_whole(&mut self, ctx: &Context, refusal: Refusal) {
        self.exchanges.expect(ctx.exchange, 1);
        let origin = Origin {
            exchange: Some(ctx.exchange),
            session: ctx.session,
            id: Id::Other("null".into()),
            stateless: None,
            profile: None,
            task: None,
        };
        self.answer(&origin, Err(refusal));
    }

    /// A batch of `len` messages is read only on a session that negotiated
    /// 2025-03-26, the one revision with JSON-RPC batches (2025-06-18 removed them;
    /// 2026-07-28 has none), and only up to [`MAX_BATCH`] messages.
    fn check_batch(&self, session: Option<u64>, len: usize) -> Result<(), Refusal> {
        let version = session
            .and_then(|s| self.sessions.open.get(&s))
            .map(|s| s.protocol_version);
        if version != Some(BATCH_VERSION) {
            let why = match version {
                Some(v) => format!("this session speaks MCP {v}, which has none"),
                None => "only a session that negotiated 2025-03-26 may send one".into(),
            };
            return Err(Refusal::new(
                INVALID_REQUEST,
                format!("Invalid Request: JSON-RPC batches are refused: {why}; send one message per request"),
            )
            .status(400));
        }
        if len > MAX_BATCH {
            return Err(Refusal::new(
                INVALID_REQUEST,
                format!(
                    "Invalid Request: a batch holds at most {MAX_BATCH} messages; this one holds {len}"
                ),
            )
            .status(413));
        }
        Ok(())
    }

    /// Bytes of message text waiting for the host in this turn.
    fn out_bytes(&self) -> usize {
        self.out
            .iter()
            .map(|s| match s {
                Signal::Message { text, .. } => text.len(),
                _ => 0,
            })
            .sum()
    }

    /// Whether the gateway has work for the next turn without waiting for
    /// anything: a batch's messages not handled yet, or held requests that can be
    /// answered now. The host's loop then does not block.
    pub fn busy<P: Platform>(&self, m: &Manager<P>) -> bool {
        self.exchanges.deferring() || (self.held.any() && !m.starting())
    }

    /// When the gateway has something to do without any message: a 2026-07-28
    /// client's approval that stops waiting. The host's loop wakes by then (with
    /// the manager's [`Manager::next_deadline`]).
    pub fn next_deadline(&self) -> Option<u64> {
        self.next_round_expiry()
    }

    /// Goes on with the backlog, within this turn's [`FLUSH_BYTES`].
    fn pump<P: Platform>(&mut self, m: &mut Manager<P>) {
        while self.out_bytes() < FLUSH_BYTES {
            let Some(exchanges::Backlog { ctx, rest }) = self.exchanges.next_deferred() else {
                return;
            };
            self.run(m, ctx, rest);
        }
    }

    /// Reopens a session the host kept across a restart of the guest (it hands
    /// in no text with the session's handle): the handle says what the session
    /// negotiated ([`handle`]); the profile is the one the host hands in. Its log
    /// level starts over (everything), and it hears of the tool list anew. The
    /// exchange ends at once, answered with nothing.
    fn reopen(
        &mut self,
        session: Option<u64>,
        exchange: u64,
        kind: TransportKind,
        profile: Option<String>,
    ) {
        if let Some(handle) = session
            && !self.sessions.open.contains_key(&handle)
            && let Some(facts) = handle::decode(handle)
        {
            self.sessions.open.insert(
                handle,
                Session {
                    profile,
                    protocol_version: facts.version,
                    elicitation: facts.elicitation,
                    sampling: facts.sampling,
                    initialized: true,
                    log_level: 0,
                    // Nothing it saw: told the list changed at the next change.
                    notified: 0,
                    approved: BTreeSet::new(),
                },
            );
            self.sessions.next = self.sessions.next.max(handle::sequence(handle) + 1);
            if kind == TransportKind::Stdio {
                self.sessions.stdio = Some(handle);
            }
        }
        self.out.push(Signal::End {
            exchange,
            status: 202,
        });
    }

    /// The client went away from an exchange (its HTTP connection closed, or
    /// stdin ended). Its calls are cancelled and the exchange ends
    /// ([`Signal::End`]), except in a 2025 HTTP session, whose client may resume
    /// the stream (`Last-Event-ID`): those run on.
    pub fn exchange_closed<P: Platform>(&mut self, m: &mut Manager<P>, exchange: u64) {
        let Some(x) = self.exchanges.get(&exchange) else {
            return;
        };
        if x.kind == TransportKind::Http && x.session.is_some() && x.listen.is_none() {
            return;
        }
        let listened = x.listen.is_some();
        self.task_exchange_closed(exchange);
        self.exchanges.remove(&exchange);
        // Over: the host forgets it too.
        self.out.push(Signal::End {
            exchange,
            status: 200,
        });
        if listened {
            self.release_all(m, subscriptions::Holder::Listen(exchange));
        }
        self.exchanges
            .forget_deferred(|ctx| ctx.exchange == exchange);
        self.held.forget(|o| o.exchange == Some(exchange));
        self.cancel_from(m, |o| o.exchange == Some(exchange));
        self.forget_asks(|o| o.exchange == Some(exchange));
    }

    /// Cancels the calls, and the resource, prompt and completion requests (nobody
    /// reads their answer either), that came from where `from` says.
    fn cancel_from<P: Platform>(&mut self, m: &mut Manager<P>, from: impl Fn(&Origin) -> bool) {
        let calls: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| from(&c.origin))
            .map(|(call, _)| *call)
            .collect();
        for call in calls {
            if let Some(c) = self.calls.get_mut(&call) {
                c.cancelled = true;
            }
            m.cancel(call);
        }
        let requests: Vec<u64> = self
            .requests
            .iter()
            .filter(|(_, r)| from(&r.origin))
            .map(|(request, _)| *request)
            .collect();
        for request in requests {
            m.cancel(request);
        }
    }

    /// The client ended its session (HTTP `DELETE`, or stdin closed): its calls
    /// are cancelled and the session is forgotten.
    pub fn session_closed<P: Platform>(&mut self, m: &mut Manager<P>, session: u64) {
        if self.sessions.stdio == Some(session) {
            self.sessions.stdio = None;
        }
        if self.sessions.open.remove(&session).is_none() {
            return;
        }
        self.release_all(m, subscriptions::Holder::Session(session));
        self.cancel_from(m, |o| o.session == Some(session));
        self.session_tasks_closed(session);
        self.forget_asks(|o| o.session == Some(session));
        self.exchanges
            .forget_deferred(|ctx| ctx.session == Some(session));
        self.held.forget(|o| o.session == Some(session));
        for x in self.exchanges.of_session(session) {
            if self
                .exchanges
                .remove(&x)
                .is_some_and(|x| x.listen.is_some())
            {
                self.release_all(m, subscriptions::Holder::Listen(x));
            }
        }
    }

    /// Takes what the manager produced: the finished calls and events of the
    /// gateway's calls are handled here; the rest are returned for the host.
    pub fn absorb<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        finished: Vec<FinishedCall>,
        events: Vec<Event>,
    ) -> (Vec<FinishedCall>, Vec<Event>) {
        // Not serving, no call or request of its own and no event: nothing here
        // is the gateway's (an embedder's sequential call), so nothing is sorted.
        if !self.serving
            && events.is_empty()
            && self.calls.is_empty()
            && self.requests.is_empty()
            && self.subscriptions.upstream.is_empty()
        {
            let warnings = self.take_warnings().into_iter().map(Event::Warning);
            return (finished, warnings.collect());
        }
        // Progress and log lines of a call come before its answer: they go out
        // first, while the call's stream is still open.
        let mut rest = Vec::with_capacity(events.len());
        let mut for_host = Vec::new();
        for event in events {
            match event {
                Event::Progress(p) => self.route_progress(&p),
                Event::Log(log) => {
                    if self.serving {
                        self.route_log(&log);
                    }
                    for_host.push(Event::Log(log));
                }
                other => rest.push(other),
            }
        }
        let mut theirs = Vec::new();
        for c in finished {
            if self.calls.contains_key(&c.call) {
                self.call_finished(m, c);
            } else if self.requests.contains_key(&c.call) {
                self.request_done(c);
            } else if self.subscriptions.upstream.contains_key(&c.call) {
                self.upstream_done(m, c);
            } else {
                theirs.push(c);
            }
        }
        let mut inputs = Vec::new();
        for event in rest {
            match event {
                Event::InputRequested(r) if self.owns_input(&r) => inputs.push(r),
                Event::InputWithdrawn(id) if self.withdraw_input(id) => {}
                Event::InputWithdrawn(id) if self.task_input_withdrawn(m, id) => {}
                Event::TaskStatus(_, ref s) if self.upstream_task_status(m, s) => {}
                Event::ResourceUpdated(u) => {
                    if self.serving {
                        self.resource_updated(&u.uri);
                    }
                    for_host.push(Event::ResourceUpdated(u));
                }
                Event::ResourcesChanged(server) => {
                    if self.serving {
                        self.list_changed(true);
                    }
                    for_host.push(Event::ResourcesChanged(server));
                }
                Event::PromptsChanged(server) => {
                    if self.serving {
                        self.list_changed(false);
                    }
                    for_host.push(Event::PromptsChanged(server));
                }
                other => for_host.push(other),
            }
        }
        if !inputs.is_empty() {
            self.inputs_requested(m, inputs);
        }
        if self.serving {
            self.expire_rounds(m);
            // Held lists first: a client that gets the settled list needs no
            // list_changed for it.
            if self.held.any() && !m.starting() {
                self.release_held(m);
            }
            self.pump(m);
            self.promote_due(m);
            if m.tools_generation() != self.served.seen_generation {
                self.tools_changed(m);
            }
        }
        for_host.extend(self.take_warnings().into_iter().map(Event::Warning));
        for_host.append(&mut self.host_events);
        (theirs, for_host)
    }

    fn on_request<P: Platform>(&mut self, m: &mut Manager<P>, ctx: &Context, r: jsonrpc::Request) {
        let params = if r.method == methods::TOOLS_CALL {
            Params::of_call(r.params.as_deref())
        } else {
            Params::read(r.params.as_deref())
        };
        let mut origin = Origin {
            exchange: Some(ctx.exchange),
            session: ctx.session,
            id: r.id,
            stateless: None,
            profile: ctx.profile.clone(),
            task: None,
        };
        if let Some(p) = &ctx.profile
            && let Err(why) = check_profile(m.permissions(), p)
        {
            return self.answer(
                &origin,
                Err(Refusal::new(jsonrpc::INVALID_PARAMS, why).status(404)),
            );
        }
        let method = r.method.as_str();
        // A 2025 session's requests are that session's, whatever they claim.
        if let Some(s) = ctx.session {
            let Some(session) = self.sessions.open.get(&s) else {
                return self.answer(
                    &origin,
                    Err(Refusal::new(
                        INVALID_REQUEST,
                        "Session not found: it ended; initialize again",
                    )
                    .status(404)),
                );
            };
            origin.profile = session.profile.clone();
            return self.legacy(m, origin, method, params);
        }
        let meta = params.get("_meta").and_then(Value::as_object);
        if lifecycle::claims_stateless(method, meta, &ctx.headers) {
            match lifecycle::check_stateless(
                method,
                &params,
                &ctx.headers,
                ctx.kind == TransportKind::Http,
            ) {
                Ok(meta) => origin.stateless = Some(meta),
                Err(refusal) => return self.answer(&origin, Err(refusal)),
            }
            return self.stateless(m, origin, method, params);
        }
        if method == methods::INITIALIZE {
            return self.initialize(m, ctx, origin, &params);
        }
        let refusal = Refusal::new(
            INVALID_REQUEST,
            "Bad Request: no session; send initialize first (MCP 2025-11-25 and older), \
             or the 2026-07-28 _meta on every request",
        )
        .status(400);
        self.answer(&origin, Err(refusal));
    }

    fn initialize<P: Platform>(
        &mut self,
        m: &Manager<P>,
        ctx: &Context,
        origin: Origin,
        params: &Value,
    ) {
        let notified = self.exposure(m, ctx.profile.as_deref()).fingerprint;
        let version = lifecycle::negotiate(params.get("protocolVersion").and_then(Value::as_str));
        let elicitation = lifecycle::declares_form_elicitation(
            params
                .get("capabilities")
                .and_then(|c| c.get("elicitation")),
        );
        let sampling = sampling::Sampling::declared(
            params.get("capabilities").and_then(|c| c.get("sampling")),
        );
        let facts = handle::Facts {
            version,
            elicitation,
            sampling,
        };
        let id = handle::encode(self.sessions.next, &facts);
        self.sessions.next += 1;
        self.sessions.open.insert(
            id,
            Session {
                profile: ctx.profile.clone(),
                protocol_version: version,
                elicitation,
                sampling,
                initialized: false,
                log_level: 0,
                notified,
                approved: BTreeSet::new(),
            },
        );
        if let Some(x) = self.exchanges.get_mut(&ctx.exchange) {
            x.session = Some(id);
        }
        if ctx.kind == TransportKind::Stdio {
            self.sessions.stdio = Some(id);
        }
        self.out.push(Signal::SessionOpened {
            exchange: ctx.exchange,
            session: id,
        });
        let mut origin = origin;
        origin.session = Some(id);
        self.answer(
            &origin,
            Ok(json_text(&lifecycle::initialize_result(
                version,
                self.options.keeps_tasks,
            ))),
        );
    }

    /// A request of a 2025 session.
    fn legacy<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        method: &str,
        params: Params,
    ) {
        match method {
            methods::PING => self.answer(&origin, Ok("{}".into())),
            methods::INITIALIZE => {
                let version = self
                    .sessions
                    .open
                    .get(&origin.session.unwrap_or_default())
                    .map_or("2025-11-25", |s| s.protocol_version);
                let result = lifecycle::initialize_result(version, self.options.keeps_tasks);
                self.answer(&origin, Ok(json_text(&result)));
            }
            methods::TOOLS_LIST => self.list_tools(m, origin, &params),
            methods::TOOLS_CALL => self.call_tool(m, origin, params),
            other if tasks::is_task_method(other) && self.has_tasks(&origin) => {
                self.task_request(m, origin, other, &params)
            }
            other if self.beyond_tools(m, &origin, other, &params) => {}
            methods::LOGGING_SET_LEVEL => {
                let level = params.get("level").and_then(Value::as_str);
                match level.and_then(logging::rank) {
                    Some(rank) => {
                        if let Some(s) = origin.session.and_then(|s| self.sessions.open.get_mut(&s))
                        {
                            s.log_level = rank;
                        }
                        self.answer(&origin, Ok("{}".into()));
                    }
                    None => self.answer(
                        &origin,
                        Err(Refusal::new(
                            jsonrpc::INVALID_PARAMS,
                            format!("Invalid params: unknown log level {level:?}"),
                        )),
                    ),
                }
            }
            _ => self.answer(
                &origin,
                Err(Refusal::new(
                    METHOD_NOT_FOUND,
                    format!("Method not found: {method}"),
                )),
            ),
        }
    }

    /// A 2026-07-28 request whose `_meta` checked out.
    fn stateless<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        method: &str,
        params: Params,
    ) {
        match method {
            methods::SERVER_DISCOVER => {
                let result = lifecycle::discover_result(self.options.keeps_tasks);
                self.answer(&origin, Ok(json_text(&result)))
            }
            methods::TOOLS_LIST => self.list_tools(m, origin, &params),
            methods::TOOLS_CALL => self.call_tool(m, origin, params),
            // Held while servers start: what it can honour (resource
            // subscriptions) depends on what they offer.
            methods::SUBSCRIPTIONS_LISTEN if m.starting() => {
                self.held.hold(HeldRequest::Other(
                    origin,
                    methods::SUBSCRIPTIONS_LISTEN.into(),
                    params.value,
                ));
            }
            methods::SUBSCRIPTIONS_LISTEN => self.listen(m, origin, &params),
            other if tasks::is_extension_method(other) && self.options.keeps_tasks => {
                self.extension_task_request(m, origin, other, &params)
            }
            other if self.beyond_tools(m, &origin, other, &params) => {}
            _ => self.answer(
                &origin,
                Err(
                    Refusal::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
                        .status(404),
                ),
            ),
        }
    }

    fn on_notification<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        ctx: &Context,
        n: jsonrpc::Notification,
    ) {
        let params: Value = n
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        match n.method.as_str() {
            methods::INITIALIZED => {
                if let Some(s) = ctx.session.and_then(|s| self.sessions.open.get_mut(&s)) {
                    s.initialized = true;
                }
            }
            methods::CANCELLED => {
                // Over stateless HTTP a client cancels by closing the stream: an
                // id alone could name another client's request.
                if ctx.session.is_none() && ctx.kind == TransportKind::Http {
                    return;
                }
                let Some(request) = params.get("requestId") else {
                    return;
                };
                let id = Id::from_json(&request.to_string());
                self.cancelled(m, ctx.session, &id);
            }
            _ => {}
        }
    }

    /// The downstream client cancelled its request `id`.
    fn cancelled<P: Platform>(&mut self, m: &mut Manager<P>, session: Option<u64>, id: &Id) {
        let call = self
            .calls
            .iter()
            .find(|(_, c)| c.origin.session == session && c.origin.id == *id && !c.cancelled)
            .map(|(call, _)| *call);
        if let Some(call) = call {
            if let Some(c) = self.calls.get_mut(&call) {
                c.cancelled = true;
            }
            m.cancel(call);
            return;
        }
        // A 2026-07-28 client's listen (on stdio; over HTTP it closes the stream).
        let wanted: Value = serde_json::from_str(&id.to_json()).unwrap_or(Value::Null);
        let listen = self
            .exchanges
            .iter()
            .find(|(_, x)| {
                x.session == session && x.listen.as_ref().is_some_and(|l| l.id == wanted)
            })
            .map(|(exchange, _)| *exchange);
        if let Some(exchange) = listen {
            if let Some(x) = self.exchanges.get_mut(&exchange) {
                x.listen = None;
                x.open = x.open.saturating_sub(1);
            }
            self.release_all(m, subscriptions::Holder::Listen(exchange));
            return self.maybe_end(exchange);
        }
        // A call still waiting for its approval: nothing runs upstream yet.
        let origins = self.forget_asks(|o| o.session == session && o.id == *id);
        for origin in origins {
            self.answer_nothing(&origin);
        }
    }

    /// Answers one request of an exchange.
    fn answer(&mut self, origin: &Origin, outcome: Result<String, Refusal>) {
        let stateless = origin.stateless.is_some();
        let (text, status) = match outcome {
            Ok(mut result) => {
                if stateless && !result.contains("\"resultType\"") {
                    complete(&mut result);
                }
                let text = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
                    origin.id.to_json()
                );
                (text, None)
            }
            Err(refusal) => (
                jsonrpc::error_response(&origin.id, &refusal.error),
                refusal.status,
            ),
        };
        let Some(exchange) = origin.exchange else {
            return;
        };
        self.out.push(Signal::Message {
            target: Target::Exchange(exchange),
            text,
        });
        self.exchanges.answered(exchange, status);
        self.maybe_end(exchange);
    }

    /// Ends one request of an exchange without an answer (it was cancelled).
    fn answer_nothing(&mut self, origin: &Origin) {
        let Some(exchange) = origin.exchange else {
            return;
        };
        self.exchanges.unanswered(exchange);
        self.maybe_end(exchange);
    }

    /// Ends `exchange` when nothing in it waits for an answer ([`exchanges`]).
    fn maybe_end(&mut self, exchange: u64) {
        if let Some(status) = self.exchanges.end_if_done(exchange) {
            self.out.push(Signal::End { exchange, status });
        }
    }

    /// The served tools of `profile`, built afresh when the registry changed.
    fn exposure<P: Platform>(&mut self, m: &Manager<P>, profile: Option<&str>) -> Rc<Exposure> {
        let generation = m.tools_generation();
        let key = profile.map(String::from);
        if let Some(e) = self.served.exposures.get(&key)
            && e.generation == generation
        {
            return e.clone();
        }
        let (exposure, warnings) = exposure::build(
            m.tool_entries(),
            generation,
            m.permissions(),
            profile,
            self.options.naming,
            self.options.max_name_len,
        );
        // A clash is reported once per registry change, not per profile.
        if key.is_none() || self.served.exposures.is_empty() {
            self.warnings.extend(warnings);
        }
        // Tools that left (their server failed) are kept by name: a call to one
        // goes to the manager, which restarts the server or says why it cannot.
        if let Some(old) = self.served.exposures.get(&key) {
            let retired = self.served.retired.entry(key.clone()).or_default();
            for t in &old.tools {
                if exposure.get(&t.name).is_none() {
                    retired.insert(t.name.clone(), t.clone());
                }
            }
            retired.retain(|name, _| exposure.get(name).is_none());
        }
        let exposure = Rc::new(exposure);
        self.served.exposures.insert(key, exposure.clone());
        exposure
    }

    /// A tool `profile` served before and no longer lists (its server is gone).
    fn retired(&self, profile: Option<&str>, name: &str) -> Option<&exposure::Exposed> {
        self.served
            .retired
            .get(&profile.map(String::from))?
            .get(name)
    }
}

/// The facts of the exchange a message came on.
#[derive(Debug, Clone)]
struct Context {
    exchange: u64,
    session: Option<u64>,
    kind: TransportKind,
    profile: Option<String>,
    headers: Vec<Pair>,
}

/// Marks a result object text as complete (2026-07-28 results say what they are).
fn complete(result: &mut String) {
    let body = result.trim_start();
    if body == "{}" {
        *result = r#"{"resultType":"complete"}"#.into();
    } else if body.starts_with('{') {
        let at = result.find('{').unwrap_or(0) + 1;
        result.insert_str(at, r#""resultType":"complete","#);
    }
}

/// A tool result saying the call failed, for the model to read.
fn tool_error(text: &str) -> String {
    json_text(&json!({"content": [{"type": "text", "text": text}], "isError": true}))
}

/// What a call error becomes downstream: an unknown tool is a JSON-RPC error
/// (-32602, as the spec has it); everything else a tool error the model can read.
fn call_error(e: CallError) -> Result<String, Refusal> {
    match e {
        CallError::UnknownTool(m) => Err(Refusal::new(
            jsonrpc::INVALID_PARAMS,
            format!("Unknown tool: {m}"),
        )),
        other => Ok(tool_error(&other.to_string())),
    }
}

/// `Ok` when the configuration has the profile `profile`; the error names the
/// ones it has and where to add it.
fn check_profile(permissions: &Permissions, profile: &str) -> Result<(), String> {
    if permissions.has_profile(profile) {
        return Ok(());
    }
    let names: Vec<&str> = permissions.profiles().collect();
    Err(format!(
        "no profile named `{profile}` in the configuration (configured: {}); \
         add it under \"profiles\"",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    ))
}
