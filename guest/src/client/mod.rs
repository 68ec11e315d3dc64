//! One server's MCP session, as a state machine with no I/O of its own.
//!
//! The client turns incoming message texts and the passage of time into outgoing
//! messages (its outbox) and [`ClientEvent`]s; the manager moves messages between
//! the outbox and the connection. Keeping I/O out makes every protocol rule
//! testable by feeding text in and reading text out.
//!
//! Two eras of MCP, detected per server ([`Client::detect`]):
//!
//! - **2026-07-28, stateless**: `server/discover` (sent with the version in `_meta`
//!   and answered with `supportedVersions`) → `tools/list` → ready, then
//!   `subscriptions/listen` for tool-list changes when the server offers them.
//!   Every request carries `_meta` with the protocol version, the client's
//!   capabilities and its name; `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//!   follow from the [`SendMeta`] the HTTP transport gets with each message. An
//!   `UnsupportedProtocolVersion` error (-32022) listing a version mcpbox speaks is
//!   retried once with it. A listing's `ttlMs` schedules the next one when no
//!   subscription delivers changes.
//! - **legacy, 2024-11-05 … 2025-11-25**: `initialize` offering [`OFFERED_VERSION`] →
//!   check the answered version → `notifications/initialized` → `tools/list` → ready.
//!
//! Detection probes `server/discover` first; any error, a result without a version
//! mcpbox speaks, or no answer within [`PROBE_TIMEOUT_MS`] falls back to
//! `initialize`. A hint from an earlier run ([`Client::detect`]'s `hint`) skips the
//! probe for a server known to be legacy. Listing follows every `nextCursor`;
//! `notifications/tools/list_changed` starts a re-list (coalesced: at most one more
//! after the running one). Results are read by `resultType` (absent means
//! `complete`).
//!
//! **Input requests** (elicitation, form mode; see [`crate::elicitation`]) are
//! offered only when the embedder enabled them ([`Client::enable_input_requests`]):
//! then the `elicitation` capability is declared and a server's request becomes a
//! [`ClientEvent::InputRequested`] the embedder answers with
//! [`Client::answer_input`]. In the legacy era the request is a JSON-RPC request
//! from the server (`elicitation/create`), answered with a response; it belongs to
//! the call in flight when there is exactly one. In the 2026-07-28 era a call
//! answers `resultType: "input_required"` with `inputRequests` (and maybe a
//! `requestState`); once every one is answered the call is sent again, under a new
//! JSON-RPC id, with `inputResponses` and the `requestState` exactly as received
//! (none when there was none). The call's deadline covers the wait for answers:
//! a call that times out, is cancelled or loses its server withdraws its input
//! requests ([`ClientEvent::InputWithdrawn`]; a legacy server's request is answered
//! with `cancel`). Not enabled, `elicitation/create` gets -32601 and
//! `input_required` completes the call as a tool error saying what to enable.
//!
//! Calls carry a progress token and a deadline. A deadline that passes sends
//! `notifications/cancelled` and completes the call with a timeout; a progress
//! notification pushes the deadline back. Late answers to abandoned requests are
//! dropped quietly; answers nobody asked for are counted.

//!
//! # Layout
//!
//! A concept with state of its own keeps it in a struct in its module, owned by
//! [`Client`]: the tool list in `listing::ToolList`, input requests in
//! `elicitation::Inputs`, subscriptions and the listen stream in
//! `subscriptions::Subscriptions`, roots in `roots::Roots`, calls running as
//! tasks in `tasks::Tasks`, the skills listed and loaded in `skills::Skills`,
//! the requests in flight by id (and the ids given up on) in `calls::Slots`,
//! the bound on their deadlines and the era probe's timeout in
//! `deadlines::Deadlines`. What every concept shares (the server's name, the
//! era and phase, the outbox, the events, the clock) stays on `Client`.
//!
//! | module | MCP concept |
//! |---|---|
//! | [`handshake`] | `initialize` / `notifications/initialized` (legacy era) |
//! | [`discover`] | `server/discover` and era detection (2026-07-28) |
//! | [`known`] | a 2026-07-28 session resumed from what an earlier one learned (capabilities, tools) |
//! | [`listing`] | `tools/list`: `list_changed`, `subscriptions/listen`, `ttlMs`, the tool list's limits |
//! | [`pagination`] | following `nextCursor` from page to page (tools and the lists beyond them) |
//! | [`calls`] | `tools/call`: starting, reading results, completing |
//! | [`request`] | one request that is not a tool call: its params, its pages, its deadline, the capability it needs |
//! | [`answer`] | what a request beyond tools answered, read into the records a host maps (each item checked, the server and field named) |
//! | [`resources`] | `resources/read` results (text and blob contents) |
//! | [`prompts`] | `prompts/get`: its arguments and its results |
//! | [`completions`] | `completion/complete` results |
//! | [`logging`] | `logging/setLevel` and the log levels (a 2026-07-28 server gets the level in `_meta`) |
//! | [`cancellation`] | `notifications/cancelled`, abandoned requests |
//! | [`deadlines`] | timeouts, `notifications/progress`, the probe and the stale list |
//! | [`elicitation`] | input requests, both eras (`elicitation/create`, `input_required`) |
//! | [`sampling`] | `sampling/createMessage`, both eras, and the `sampling` capability |
//! | [`skills`] | `skills/list`, `skills/get` and loading a skill: its files read lazily, verified against its entry (SEP-2640) |
//! | [`roots`] | `roots/list`, `notifications/roots/list_changed`, the `roots` capability |
//! | [`subscriptions`] | `resources/subscribe`, `notifications/resources/updated`, resource and prompt list changes, the `subscriptions/listen` filter (2026-07-28) |
//! | [`param_headers`] | `Mcp-Param-*` headers (SEP-2243) |
//! | [`wire`] | the serde shapes of params and results |

use crate::prelude::*;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::elicitation::InputRequest;
use crate::jsonrpc::{self, Id, METHOD_NOT_FOUND, Message, RpcError};
use crate::methods;
use crate::registry::ToolDef;
use crate::transport::{Failure, Oversized, SendMeta};

mod answer;
mod calls;
mod cancellation;
mod completions;
mod deadlines;
mod discover;
mod elicitation;
mod handshake;
mod known;
mod listing;
mod logging;
mod pagination;
mod param_headers;
mod prompts;
mod request;
mod resources;
mod roots;
mod sampling;
mod skills;
mod subscriptions;
mod tasks;
mod wire;

#[cfg(test)]
mod tests;

pub use answer::{
    Answer, CompletionValues, GotPrompt, ListedPrompt, ListedResource, ListedTask, PromptArgument,
    PromptMessage, ResourceItem, ResourceTemplate, SkillEntry, read_answer,
};
pub use calls::{CallError, CallOptions, CallResult, Caller, FinishedCall};
pub use discover::{Era, LEGACY_KEPT_MS, PROBE_TIMEOUT_MS, STATELESS_VERSION};
pub use handshake::{OFFERED_VERSION, SUPPORTED_VERSIONS};
pub use known::KnownServer;
pub use logging::LOG_LEVELS;
pub use request::{Offers, Request};
pub use tasks::{HandedTasks, TaskStatus};

use calls::PendingCall;
use handshake::client_info;
use request::PendingRequest;
use wire::RequestMeta;

/// One server's MCP session.
#[derive(Debug)]
pub struct Client {
    server: String,
    era: Era,
    phase: Phase,
    /// The requests in flight by id, and those given up on (see `calls`).
    slots: calls::Slots,
    /// The calls' bound and the probe's timeout (see `deadlines`).
    deadlines: deadlines::Deadlines,
    protocol_version: Option<String>,
    server_info: ServerInfo,
    /// The tool list: its listing in progress, its limits, its changes (see `listing`).
    tools: listing::ToolList,
    stats: Stats,
    outbox: Vec<Outgoing>,
    events: Vec<ClientEvent>,
    /// The latest time seen, for work scheduled from inside message handling.
    now_ms: u64,
    /// Input requests: what is offered, what waits for the embedder (see `elicitation`).
    input: elicitation::Inputs,
    /// The optional capabilities the server declared (resources, prompts, …).
    offers: Offers,
    /// The roots the server gets, and whether they were offered (see `roots`).
    roots: roots::Roots,
    /// The capabilities the server answered, for [`Client::known`].
    capabilities_seen: Option<Value>,
    /// Whether the session was resumed from a [`KnownServer`].
    resumed: bool,
    /// The resources followed and the `subscriptions/listen` stream (see `subscriptions`).
    subscriptions: subscriptions::Subscriptions,
    /// The log level asked for (2026-07-28: sent in every request's `_meta`;
    /// see [`Request::SetLogLevel`]).
    log_level: Option<String>,
    /// Which tools run as tasks, and the calls running as tasks (see `tasks`).
    tasks: tasks::Tasks,
    /// The skills listed, and those loaded (see `skills`).
    skills: skills::Skills,
    /// A probe answered after its timeout said the server speaks 2026-07-28: a
    /// slow start, not a legacy server (see [`Client::era_to_remember`]).
    stateless_later: bool,
}

/// What the client tells the manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// Handshake and first listing done: the server is connected with these tools.
    Ready(Vec<ToolDef>),
    /// A re-list finished with a different list.
    ToolsChanged(Vec<ToolDef>),
    /// The session cannot go on (unsupported version, failed handshake or listing).
    Failed(String),
    /// A call finished.
    Finished(FinishedCall),
    /// A `notifications/message` log line.
    Log {
        /// The MCP log level.
        level: String,
        /// The data, as text.
        message: String,
    },
    /// Something odd, for the event stream.
    Warning(String),
    /// The server asks for input; `id` is this client's key for
    /// [`Client::answer_input`].
    InputRequested(InputRequest),
    /// An input request that no longer needs an answer (its call finished or the
    /// server withdrew it), by this client's key.
    InputWithdrawn(u64),
    /// The server reported progress on a call (`notifications/progress`).
    Progress(Progress),
    /// A subscribed resource changed (`notifications/resources/updated`), by URI.
    ResourceUpdated(String),
    /// The server's resource list changed (`notifications/resources/list_changed`).
    ResourcesChanged,
    /// The server's prompt list changed (`notifications/prompts/list_changed`).
    PromptsChanged,
    /// A call running as a task changed status (see `tasks`).
    TaskStatus(TaskStatus),
}

/// A `notifications/progress` about a call in flight, for whoever passes it on
/// (the gateway, to the downstream client's progress token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The call it is about.
    pub call: u64,
    /// `progress` as the server sent it (a number).
    pub progress: Value,
    /// `total`, if given.
    pub total: Option<Value>,
    /// `message`, if given.
    pub message: Option<String>,
}

/// A message waiting to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The JSON-RPC message text.
    pub text: String,
    /// Transport metadata for it.
    pub meta: SendMeta,
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `server/discover` sent, no answer yet.
    Discovering,
    /// `initialize` sent, no answer yet.
    Initializing,
    /// Initialised, first tool listing under way.
    Listing,
    /// Connected.
    Ready,
    /// Given up; see the `Failed` event.
    Failed,
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// `serverInfo.version`.
    pub version: Option<String>,
}

/// Counters of messages that were ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages that were not valid JSON-RPC.
    pub invalid_messages: u64,
    /// Responses whose id matched no request.
    pub unknown_responses: u64,
}

#[derive(Debug)]
enum Pending {
    /// `initialize`; `or_discover`: a failure tries `server/discover` instead
    /// (the era came from a hint, which may be stale).
    Initialize {
        or_discover: bool,
    },
    /// `server/discover`; `retried`: already re-sent after -32022.
    Discover {
        retried: bool,
    },
    /// A `server/discover` probe still unanswered at its timeout: the session
    /// went on with `initialize`, and a late answer only says which era the
    /// next connection should try (see `discover`).
    LateDiscover,
    ListTools,
    /// `subscriptions/listen`: open while the server streams changes.
    Listen(subscriptions::Listen),
    /// `resources/subscribe` sent again after a reconnect, for this URI.
    Resubscribe(String),
    Call(PendingCall),
    /// A request beyond tools (resources, prompts, completions, logging).
    Request(PendingRequest),
    /// `tasks/get` for the task of this call.
    TaskGet(u64),
    /// `tasks/result` for the task of this call.
    TaskResult(u64),
    /// `tasks/cancel`: its answer changes nothing.
    TaskCancel,
    /// `tasks/update` for the task of this call (the 2026-07-28 extension).
    TaskUpdate(u64),
}

impl Pending {
    /// When it times out: calls and requests have a deadline, the rest none.
    fn deadline_ms(&self) -> Option<u64> {
        match self {
            Pending::Call(c) => Some(c.deadline_ms),
            Pending::Request(r) => Some(r.deadline_ms),
            _ => None,
        }
    }
}

impl Client {
    /// A session with the named server, before anything is sent.
    pub fn new(server: &str) -> Client {
        Client {
            server: server.to_string(),
            era: Era::Legacy,
            phase: Phase::Initializing,
            slots: calls::Slots::default(),
            deadlines: deadlines::Deadlines::default(),
            protocol_version: None,
            server_info: ServerInfo::default(),
            tools: listing::ToolList::default(),
            stats: Stats::default(),
            outbox: Vec::new(),
            events: Vec::new(),
            now_ms: 0,
            input: elicitation::Inputs::default(),
            offers: Offers::default(),
            roots: roots::Roots::default(),
            capabilities_seen: None,
            resumed: false,
            subscriptions: subscriptions::Subscriptions::default(),
            log_level: None,
            tasks: tasks::Tasks::default(),
            skills: skills::Skills::default(),
            stateless_later: false,
        }
    }

    /// Where the session is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The handshake request the session waits for an answer to, while it
    /// connects (for the message of a connection that takes too long).
    pub fn awaited(&self) -> Option<&'static str> {
        match self.phase {
            Phase::Discovering => Some(methods::SERVER_DISCOVER),
            Phase::Initializing => Some(methods::INITIALIZE),
            Phase::Listing => Some(methods::TOOLS_LIST),
            Phase::Ready | Phase::Failed => None,
        }
    }

    /// The era in use.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// What the server said about itself.
    pub fn server_info(&self) -> &ServerInfo {
        &self.server_info
    }

    /// Ignored-message counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Calls in flight (waiting for input included); the tests' count beside
    /// [`Client::calls_in_flight`].
    #[cfg(test)]
    pub fn pending_calls(&self) -> usize {
        self.slots.with_deadline() + self.input.rounds.len() + self.tasks.len()
    }

    /// Whether any call is in flight (waiting for input included), without
    /// counting them, so asking after every call that ends does not walk the other
    /// calls (with a thousand in flight, that was 2 % of the HTTP gateway's time).
    pub fn calls_in_flight(&self) -> bool {
        !self.input.rounds.is_empty() || !self.tasks.is_empty() || self.slots.any_with_deadline()
    }

    /// Takes the messages to send, oldest first.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        core::mem::take(&mut self.outbox)
    }

    /// Takes what happened, oldest first.
    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        core::mem::take(&mut self.events)
    }

    /// `_meta` for a request: the progress token, plus the stateless era's fields.
    fn request_meta<'a>(&self, progress_token: Option<&'a Id>) -> RequestMeta<'a> {
        self.request_meta_logging(progress_token, None)
    }

    /// [`Client::request_meta`], asking a stateless server for `log_level` (when
    /// given) instead of the level `logging/setLevel` set for every request.
    fn request_meta_logging<'a>(
        &self,
        progress_token: Option<&'a Id>,
        log_level: Option<&str>,
    ) -> RequestMeta<'a> {
        self.request_meta_for(progress_token, log_level, None, false)
    }

    /// [`Client::request_meta_logging`] for a request made for `caller`: a
    /// stateless server is sent the capabilities the caller has (see [`Caller`]).
    fn request_meta_for<'a>(
        &self,
        progress_token: Option<&'a Id>,
        log_level: Option<&str>,
        caller: Option<Caller>,
        task: bool,
    ) -> RequestMeta<'a> {
        let stateless = self.era == Era::Stateless;
        let log_level = log_level
            .map(String::from)
            .or_else(|| self.log_level.clone());
        RequestMeta {
            progress_token,
            protocol_version: stateless.then_some(STATELESS_VERSION),
            client_capabilities: stateless.then(|| self.capabilities_for(caller, task)),
            client_info: stateless.then(client_info),
            log_level: log_level.filter(|_| stateless),
        }
    }

    fn meta(&self, method: Option<&str>, name: Option<&str>) -> SendMeta {
        SendMeta {
            id: None,
            method: method.map(String::from),
            name: name.map(String::from),
            protocol_version: self.protocol_version.clone(),
            param_headers: Vec::new(),
        }
    }

    fn request<P: Serialize>(
        &mut self,
        method: &str,
        name: Option<&str>,
        params: Option<&P>,
        pending: Pending,
    ) -> Id {
        let meta = self.meta(Some(method), name);
        self.request_with(meta, params, pending)
    }

    /// Queues a request with transport metadata of the caller's making.
    fn request_with<P: Serialize>(
        &mut self,
        meta: SendMeta,
        params: Option<&P>,
        pending: Pending,
    ) -> Id {
        let id = self.slots.next_id();
        let method = meta.method.as_deref().unwrap_or_default();
        let text = jsonrpc::request(&id, method, params);
        let meta = SendMeta {
            id: Some(id.to_json()),
            ..meta
        };
        self.outbox.push(Outgoing { text, meta });
        if let Some(deadline) = pending.deadline_ms() {
            self.deadlines.due_by(deadline);
        }
        self.slots.pending.insert(id.clone(), pending);
        id
    }

    fn notify<P: Serialize>(&mut self, method: &str, params: Option<&P>) {
        let text = jsonrpc::notification(method, params);
        let meta = self.meta(Some(method), None);
        self.outbox.push(Outgoing { text, meta });
    }

    fn respond(&mut self, text: String) {
        let meta = self.meta(None, None);
        self.outbox.push(Outgoing { text, meta });
    }

    fn warn(&mut self, message: String) {
        self.events.push(ClientEvent::Warning(message));
    }

    fn fail(&mut self, message: String) {
        self.phase = Phase::Failed;
        self.tools.listing = None;
        let mut waiting = Vec::new();
        self.slots.pending.retain(|_, p| match p {
            Pending::Call(_)
            | Pending::Request(_)
            | Pending::TaskGet(_)
            | Pending::TaskResult(_)
            | Pending::TaskUpdate(_)
            | Pending::TaskCancel => true,
            Pending::Listen(l) => {
                waiting.append(&mut l.waiting);
                false
            }
            _ => false,
        });
        self.subscriptions.listen_id = None;
        for r in waiting {
            let why = format!("{}: {message}", r.label(&self.server));
            self.finish(r.call, Err(CallError::ServerUnavailable(why)), false);
        }
        self.events.push(ClientEvent::Failed(message));
    }

    /// Handles one message text from the server.
    pub fn handle_text(&mut self, text: &str, now_ms: u64) {
        self.handle_message(text.to_string(), now_ms);
    }

    /// Handles one message from the server, taking its text: a message's payload
    /// is made of the text's own buffer (see [`jsonrpc::parse_owned`]), so a large
    /// tool list is never held twice.
    pub fn handle_message(&mut self, text: String, now_ms: u64) {
        self.now_ms = now_ms;
        let parsed = jsonrpc::parse_owned(text);
        let preview = parsed
            .messages
            .iter()
            .any(|m| matches!(m, Message::Invalid(_)))
            .then(|| jsonrpc::truncate(parsed.text.as_deref().unwrap_or_default(), 120));
        drop(parsed.text);
        for message in parsed.messages {
            match message {
                Message::Request(r) => self.on_request(r),
                Message::Notification(n) => self.on_notification(n, now_ms),
                Message::Response(r) => self.on_response(r),
                Message::Invalid(why) => {
                    self.stats.invalid_messages += 1;
                    if self.stats.invalid_messages == 1 {
                        self.warn(format!(
                            "server `{}` sent a message that is not valid JSON-RPC ({why}): {}; ignoring it (further ones are only counted)",
                            self.server,
                            preview.as_deref().unwrap_or_default()
                        ));
                    }
                }
            }
        }
    }

    fn on_request(&mut self, r: jsonrpc::Request) {
        let text = match r.method.as_str() {
            methods::PING => jsonrpc::result_response(&r.id, &serde_json::Map::new()),
            methods::ELICITATION_CREATE if self.input.elicits() => {
                return self.on_elicitation_request(r);
            }
            methods::ROOTS_LIST if self.roots.offered && self.era == Era::Legacy => {
                return self.on_roots_request(&r);
            }
            methods::SAMPLING_CREATE_MESSAGE => return self.on_sampling_request(r),
            _ => {
                jsonrpc::error_response(&r.id, &RpcError::new(METHOD_NOT_FOUND, "method not found"))
            }
        };
        self.respond(text);
    }

    fn on_notification(&mut self, n: jsonrpc::Notification, now_ms: u64) {
        if n.method == methods::LOG_MESSAGE {
            return self.on_log(n.params.as_deref());
        }
        let params: Value = n
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        if self.on_change(&n.method, &params) {
            return;
        }
        match n.method.as_str() {
            methods::PROGRESS => self.on_progress(&params, now_ms),
            methods::TASKS_STATUS => self.on_task_status_notification(params),
            methods::CANCELLED => self.on_server_cancelled(&params),
            _ => {}
        }
    }

    /// `notifications/message`: `data` as text when it is a string, otherwise as
    /// the server wrote it (read without building it, so no depth or number
    /// loses it).
    fn on_log(&mut self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        struct LogParams<'a> {
            #[serde(default, borrow)]
            level: Option<&'a RawValue>,
            #[serde(default, borrow)]
            logger: Option<&'a RawValue>,
            #[serde(default, borrow)]
            data: Option<&'a RawValue>,
        }
        let string =
            |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok());
        let log = params
            .and_then(|p| serde_json::from_str::<LogParams<'_>>(p.get()).ok())
            .unwrap_or(LogParams {
                level: None,
                logger: None,
                data: None,
            });
        let level = string(log.level).unwrap_or_else(|| "info".to_string());
        let data = match log.data {
            Some(raw) => string(Some(raw)).unwrap_or_else(|| raw.get().to_string()),
            None => String::new(),
        };
        let message = match string(log.logger) {
            Some(logger) => format!("{logger}: {data}"),
            None => data,
        };
        self.events.push(ClientEvent::Log { level, message });
    }

    fn on_response(&mut self, r: jsonrpc::Response) {
        self.on_answer(r.id, r.outcome.map_err(Failure::Rpc));
    }

    /// The transport could not get request `id` (JSON text) answered: an HTTP
    /// error status, a stream that ended for good before the answer. The request
    /// fails as it would on a JSON-RPC error, with the transport's account.
    pub fn handle_failure(&mut self, id: &str, failure: Failure, now_ms: u64) {
        self.now_ms = now_ms;
        self.on_answer(Id::from_json(id), Err(failure));
    }

    fn on_answer(&mut self, id: Id, outcome: Result<Box<RawValue>, Failure>) {
        let Some(pending) = self.slots.pending.remove(&id) else {
            if self.slots.forget_abandoned(&id) {
                return;
            }
            self.stats.unknown_responses += 1;
            if self.stats.unknown_responses == 1 {
                self.warn(format!(
                    "server `{}` answered request id {}, which matches no request in flight; ignoring it (further ones are only counted)",
                    self.server, id
                ));
            }
            return;
        };
        match pending {
            Pending::Initialize { or_discover } => self.on_initialized(outcome, or_discover),
            Pending::Discover { retried } => self.on_discovered(outcome, retried),
            Pending::LateDiscover => self.on_late_discover(outcome),
            Pending::ListTools => self.on_tools_page(outcome),
            Pending::Listen(listen) => self.on_listen_ended(&id, listen, outcome),
            Pending::Resubscribe(uri) => self.on_resubscribed(uri, outcome),
            Pending::Call(c) => self.on_call_response(id, c, outcome),
            Pending::Request(r) => self.on_request_response(r, outcome),
            Pending::TaskGet(call) => self.on_task_get(call, outcome),
            Pending::TaskResult(call) => self.on_task_result(call, outcome),
            Pending::TaskUpdate(call) => self.on_task_update(call, outcome),
            Pending::TaskCancel => {}
        }
    }

    /// An oversized message was dropped (by the host, or by the guest's HTTP
    /// reader). If its edges show which request it answered, that request fails
    /// now rather than at its timeout.
    pub fn handle_oversized(&mut self, o: &Oversized, now_ms: u64) {
        self.now_ms = now_ms;
        let too_large = format!("message too large ({} bytes > cap {})", o.size, o.cap);
        let id = o.id().as_deref().map(Id::from_json);
        match id.as_ref().and_then(|id| self.slots.pending.remove(id)) {
            Some(Pending::Call(c)) => {
                let why = format!("{}: the server's answer was dropped: {too_large}", c.name);
                self.finish(c.call, Err(CallError::Protocol(why)), true);
            }
            Some(Pending::Request(r)) => {
                let why = format!(
                    "{}: the server's answer was dropped: {too_large}",
                    r.label(&self.server)
                );
                self.finish(r.call, Err(CallError::Protocol(why)), true);
            }
            Some(Pending::Initialize { .. } | Pending::Discover { .. }) => self.fail(format!(
                "server `{}` answered its handshake with a {too_large}",
                self.server
            )),
            Some(Pending::Listen(listen)) => {
                let id = id.clone().unwrap_or(Id::Number(0));
                let e = Failure::Exchange(format!("it ended with a {too_large}"));
                self.on_listen_ended(&id, listen, Err(e));
            }
            Some(Pending::Resubscribe(uri)) => {
                self.on_resubscribed(uri, Err(Failure::Exchange(too_large.clone())));
            }
            Some(Pending::TaskGet(call)) => {
                self.on_task_get(call, Err(Failure::Exchange(too_large.clone())));
            }
            Some(Pending::TaskResult(call)) => {
                self.on_task_result(call, Err(Failure::Exchange(too_large.clone())));
            }
            Some(Pending::TaskUpdate(call)) => {
                self.on_task_update(call, Err(Failure::Exchange(too_large.clone())));
            }
            Some(Pending::TaskCancel | Pending::LateDiscover) => {}
            Some(Pending::ListTools) => {
                let initial = self.tools.listing.as_ref().is_none_or(|l| l.initial);
                if initial {
                    self.fail(format!(
                        "server `{}` answered tools/list with a {too_large}",
                        self.server
                    ));
                } else {
                    self.tools.listing = None;
                    self.warn(format!(
                        "server `{}` answered tools/list with a {too_large}; keeping its previous tools",
                        self.server
                    ));
                    self.after_listing();
                }
            }
            None => self.warn(format!(
                "server `{}` sent a {too_large}; it was dropped",
                self.server
            )),
        }
    }
}

/// What a result's `resultType` says it is (absent: `complete`).
#[derive(Debug, PartialEq, Eq)]
enum ResultKind {
    Complete,
    InputRequired,
    Other(String),
}

fn result_kind(value: Option<&Value>) -> ResultKind {
    match value {
        None | Some(Value::Null) => ResultKind::Complete,
        Some(Value::String(s)) if s == "complete" => ResultKind::Complete,
        Some(Value::String(s)) if s == "input_required" => ResultKind::InputRequired,
        Some(Value::String(s)) => ResultKind::Other(s.clone()),
        Some(other) => ResultKind::Other(other.to_string()),
    }
}
