//! One server's MCP session, as a state machine with no I/O of its own.
//!
//! The client turns incoming message texts and the passage of time into outgoing
//! messages (its outbox) and [`ClientEvent`]s; the manager moves messages between
//! the outbox and the connection. Keeping I/O out makes every protocol rule
//! testable by feeding text in and reading text out.
//!
//! Life cycle (the legacy era, MCP 2024-11-05 … 2025-11-25): `initialize` offering
//! [`OFFERED_VERSION`] → check the answered version → `notifications/initialized` →
//! `tools/list`, following every `nextCursor` → ready. `notifications/tools/list_changed`
//! starts a re-list (coalesced: at most one more after the running one).
//! The stateless 2026-07-28 era (`server/discover`, per-request `_meta`) will be a
//! second [`Era`] with its own handshake; everything after the handshake is shared.
//!
//! Calls carry a progress token and a deadline. A deadline that passes sends
//! `notifications/cancelled` and completes the call with a timeout; a progress
//! notification pushes the deadline back. Late answers to abandoned requests are
//! dropped quietly; answers nobody asked for are counted.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::jsonrpc::{self, Id, METHOD_NOT_FOUND, Message, RpcError};
use crate::registry::ToolDef;
use crate::transport::{Oversized, SendMeta, format_ms};

/// The protocol version the guest offers in `initialize`.
pub const OFFERED_VERSION: &str = "2025-11-25";

/// Every protocol version the guest accepts back.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// A listing that never ends (a server inventing cursors) stops here.
const MAX_PAGES: usize = 1000;

/// How many abandoned request ids are remembered to drop their late answers.
const ABANDONED_MEMORY: usize = 1024;

/// Options for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// Overrides the server's tool timeout, in milliseconds.
    pub timeout_ms: Option<u64>,
}

/// A tool result, as the server returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The server said the tool failed (`isError`).
    pub is_error: bool,
    /// Text content blocks joined with "\n".
    pub text: String,
    /// The full `content` list, JSON text.
    pub content: String,
    /// `structuredContent`, JSON text.
    pub structured_content: Option<String>,
}

/// Why a call produced no tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No tool of that name.
    UnknownTool(String),
    /// Arguments are not JSON or do not satisfy the input schema.
    InvalidArguments(String),
    /// The server is not connected or went away.
    ServerUnavailable(String),
    /// No answer in time; `notifications/cancelled` was sent.
    Timeout(String),
    /// Cancelled by the caller.
    Cancelled,
    /// A JSON-RPC error answer or a malformed result.
    Protocol(String),
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CallError::UnknownTool(m)
            | CallError::InvalidArguments(m)
            | CallError::ServerUnavailable(m)
            | CallError::Timeout(m)
            | CallError::Protocol(m) => f.write_str(m),
            CallError::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// A finished call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The handle `start_call` returned.
    pub call: u64,
    /// The result or why there is none.
    pub outcome: Result<CallResult, CallError>,
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
    Completed(Completion),
    /// A `notifications/message` log line.
    Log {
        /// The MCP log level.
        level: String,
        /// The data, as text.
        message: String,
    },
    /// Something odd, for the event stream.
    Warning(String),
}

/// A message waiting to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The JSON-RPC message text.
    pub text: String,
    /// Transport metadata for it.
    pub meta: SendMeta,
}

/// Which generation of MCP the session speaks. Only the legacy (stateful) era
/// exists today; the 2026-07-28 stateless era will add a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` + `notifications/initialized`, versions 2024-11-05 … 2025-11-25.
    Legacy,
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
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
struct PendingCall {
    call: u64,
    /// The registry name, for messages.
    name: String,
    timeout_ms: u64,
    deadline_ms: u64,
}

#[derive(Debug)]
enum Pending {
    Initialize,
    ListTools,
    Call(PendingCall),
}

#[derive(Debug)]
struct Listing {
    initial: bool,
    tools: Vec<ToolDef>,
    seen_cursors: BTreeSet<String>,
    pages: usize,
}

/// One server's MCP session.
#[derive(Debug)]
pub struct Client {
    server: String,
    era: Era,
    phase: Phase,
    next_id: i64,
    pending: BTreeMap<Id, Pending>,
    protocol_version: Option<String>,
    server_info: ServerInfo,
    listing: Option<Listing>,
    relist_requested: bool,
    tools: Vec<ToolDef>,
    abandoned: VecDeque<Id>,
    stats: Stats,
    outbox: Vec<Outgoing>,
    events: Vec<ClientEvent>,
}

#[derive(Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    protocol_version: &'static str,
    capabilities: serde_json::Map<String, Value>,
    client_info: ClientInfo,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: Option<Value>,
    #[serde(default)]
    capabilities: Option<Value>,
    #[serde(default)]
    server_info: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListToolsResult {
    tools: Vec<Box<RawValue>>,
    #[serde(default)]
    next_cursor: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTool {
    name: Value,
    #[serde(default)]
    title: Option<Value>,
    #[serde(default)]
    description: Option<Value>,
    #[serde(default)]
    input_schema: Option<Box<RawValue>>,
    #[serde(default)]
    output_schema: Option<Box<RawValue>>,
    #[serde(default)]
    annotations: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCallResult {
    #[serde(default)]
    content: Option<Box<RawValue>>,
    #[serde(default)]
    structured_content: Option<Box<RawValue>>,
    #[serde(default)]
    is_error: Option<bool>,
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a RawValue,
    #[serde(rename = "_meta")]
    meta: ProgressMeta<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressMeta<'a> {
    progress_token: &'a Id,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams<'a> {
    request_id: &'a Id,
    reason: &'a str,
}

#[derive(Serialize)]
struct CursorParams<'a> {
    cursor: &'a str,
}

fn text_of(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl Client {
    /// A session with the named server, before anything is sent.
    pub fn new(server: &str) -> Client {
        Client {
            server: server.to_string(),
            era: Era::Legacy,
            phase: Phase::Initializing,
            next_id: 1,
            pending: BTreeMap::new(),
            protocol_version: None,
            server_info: ServerInfo::default(),
            listing: None,
            relist_requested: false,
            tools: Vec::new(),
            abandoned: VecDeque::new(),
            stats: Stats::default(),
            outbox: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Starts the handshake.
    pub fn begin(&mut self) {
        let params = InitializeParams {
            protocol_version: OFFERED_VERSION,
            capabilities: serde_json::Map::new(),
            client_info: ClientInfo {
                name: "mcpbox",
                version: env!("CARGO_PKG_VERSION"),
            },
        };
        self.request("initialize", None, Some(&params), Pending::Initialize);
    }

    /// Where the session is.
    pub fn phase(&self) -> Phase {
        self.phase
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

    /// Calls in flight.
    pub fn pending_calls(&self) -> usize {
        self.pending
            .values()
            .filter(|p| matches!(p, Pending::Call(_)))
            .count()
    }

    /// Takes the messages to send, oldest first.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        core::mem::take(&mut self.outbox)
    }

    /// Takes what happened, oldest first.
    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        core::mem::take(&mut self.events)
    }

    /// The earliest call deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.pending
            .values()
            .filter_map(|p| match p {
                Pending::Call(c) => Some(c.deadline_ms),
                _ => None,
            })
            .min()
    }

    fn meta(&self, method: Option<&str>, name: Option<&str>) -> SendMeta {
        SendMeta {
            method: method.map(String::from),
            name: name.map(String::from),
            protocol_version: self.protocol_version.clone(),
        }
    }

    fn request<P: Serialize>(
        &mut self,
        method: &str,
        name: Option<&str>,
        params: Option<&P>,
        pending: Pending,
    ) -> Id {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let text = jsonrpc::request(&id, method, params);
        let meta = self.meta(Some(method), name);
        self.outbox.push(Outgoing { text, meta });
        self.pending.insert(id.clone(), pending);
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
        self.listing = None;
        self.pending.retain(|_, p| matches!(p, Pending::Call(_)));
        self.events.push(ClientEvent::Failed(message));
    }

    /// Handles one message text from the server.
    pub fn handle_text(&mut self, text: &str, now_ms: u64) {
        for message in jsonrpc::parse(text) {
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
                            jsonrpc::truncate(text, 120)
                        ));
                    }
                }
            }
        }
    }

    fn on_request(&mut self, r: jsonrpc::Request) {
        let text = match r.method.as_str() {
            "ping" => jsonrpc::result_response(&r.id, &serde_json::Map::new()),
            _ => {
                jsonrpc::error_response(&r.id, &RpcError::new(METHOD_NOT_FOUND, "method not found"))
            }
        };
        self.respond(text);
    }

    fn on_notification(&mut self, n: jsonrpc::Notification, now_ms: u64) {
        let params: Value = n
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        match n.method.as_str() {
            "notifications/tools/list_changed" => match self.phase {
                // The first listing has not started; it will see the new list.
                Phase::Initializing | Phase::Failed => {}
                Phase::Listing => self.relist_requested = true,
                Phase::Ready if self.listing.is_some() => self.relist_requested = true,
                Phase::Ready => self.start_listing(false),
            },
            "notifications/progress" => {
                let Some(token) = params.get("progressToken") else {
                    return;
                };
                let token = Id::from_json(&token.to_string());
                if let Some(Pending::Call(c)) = self.pending.get_mut(&token) {
                    c.deadline_ms = now_ms.saturating_add(c.timeout_ms);
                }
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_string();
                let data = match params.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let message = match params.get("logger").and_then(Value::as_str) {
                    Some(logger) => format!("{logger}: {data}"),
                    None => data,
                };
                self.events.push(ClientEvent::Log { level, message });
            }
            // The server cancelling a request of its own: we never run any for long.
            _ => {}
        }
    }

    fn on_response(&mut self, r: jsonrpc::Response) {
        let Some(pending) = self.pending.remove(&r.id) else {
            if let Some(pos) = self.abandoned.iter().position(|id| *id == r.id) {
                // A late answer to a call we gave up on: expected, not news.
                self.abandoned.remove(pos);
                return;
            }
            self.stats.unknown_responses += 1;
            if self.stats.unknown_responses == 1 {
                self.warn(format!(
                    "server `{}` answered request id {}, which matches no request in flight; ignoring it (further ones are only counted)",
                    self.server, r.id
                ));
            }
            return;
        };
        match pending {
            Pending::Initialize => self.on_initialized(r.outcome),
            Pending::ListTools => self.on_tools_page(r.outcome),
            Pending::Call(c) => {
                let outcome = match r.outcome {
                    Ok(raw) => read_call_result(&c.name, &raw),
                    Err(e) => Err(CallError::Protocol(format!("{} failed: {e}", c.name))),
                };
                self.events.push(ClientEvent::Completed(Completion {
                    call: c.call,
                    outcome,
                }));
            }
        }
    }

    fn on_initialized(&mut self, outcome: Result<Box<RawValue>, RpcError>) {
        let raw = match outcome {
            Ok(raw) => raw,
            Err(e) => {
                return self.fail(format!("server `{}` rejected initialize: {e}", self.server));
            }
        };
        let result: InitializeResult = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(e) => {
                return self.fail(format!(
                    "server `{}` answered initialize with a malformed result ({e})",
                    self.server
                ));
            }
        };
        let version = match result.protocol_version {
            Some(Value::String(v)) => v,
            other => {
                return self.fail(format!(
                    "server `{}` answered initialize without a protocolVersion (got {})",
                    self.server,
                    other.map_or("nothing".into(), |v| v.to_string())
                ));
            }
        };
        if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
            return self.fail(format!(
                "server `{}` answered protocolVersion {:?}, which mcpbox does not support (supported: {})",
                self.server,
                version,
                SUPPORTED_VERSIONS.join(", ")
            ));
        }
        self.protocol_version = Some(version);
        if let Some(Value::Object(info)) = result.server_info {
            self.server_info = ServerInfo {
                name: text_of(info.get("name").cloned()),
                version: text_of(info.get("version").cloned()),
            };
        }
        self.notify::<()>("notifications/initialized", None);
        let has_tools = result
            .capabilities
            .as_ref()
            .and_then(|c| c.get("tools"))
            .is_some_and(|t| !t.is_null());
        if has_tools {
            self.phase = Phase::Listing;
            self.start_listing(true);
        } else {
            // The server offers no tools; asking would only earn a -32601.
            self.phase = Phase::Ready;
            self.events.push(ClientEvent::Ready(Vec::new()));
        }
    }

    fn start_listing(&mut self, initial: bool) {
        self.listing = Some(Listing {
            initial,
            tools: Vec::new(),
            seen_cursors: BTreeSet::new(),
            pages: 1,
        });
        self.request::<()>("tools/list", None, None, Pending::ListTools);
    }

    fn on_tools_page(&mut self, outcome: Result<Box<RawValue>, RpcError>) {
        let Some(mut listing) = self.listing.take() else {
            return;
        };
        let page = outcome.map_err(|e| e.to_string()).and_then(|raw| {
            serde_json::from_str::<ListToolsResult>(raw.get())
                .map_err(|e| format!("malformed result: {e}"))
        });
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                if listing.initial {
                    return self.fail(format!("server `{}` failed tools/list: {e}", self.server));
                }
                self.warn(format!(
                    "server `{}` failed tools/list after announcing a change ({e}); keeping its previous tools",
                    self.server
                ));
                return self.after_listing();
            }
        };
        for raw in page.tools {
            match read_tool(&raw) {
                Ok(tool) => listing.tools.push(tool),
                Err(e) => self.warn(format!(
                    "server `{}` listed a tool that is skipped: {e}",
                    self.server
                )),
            }
        }
        let cursor = match page.next_cursor {
            Some(Value::String(c)) if !c.is_empty() => Some(c),
            _ => None,
        };
        if let Some(cursor) = cursor {
            if !listing.seen_cursors.insert(cursor.clone()) {
                self.warn(format!(
                    "server `{}` sent tools/list cursor {cursor:?} twice; stopping the listing there with {} tools",
                    self.server,
                    listing.tools.len()
                ));
            } else if listing.pages >= MAX_PAGES {
                self.warn(format!(
                    "server `{}` is still paginating tools/list after {MAX_PAGES} pages; stopping there with {} tools",
                    self.server,
                    listing.tools.len()
                ));
            } else {
                listing.pages += 1;
                self.listing = Some(listing);
                self.request(
                    "tools/list",
                    None,
                    Some(&CursorParams { cursor: &cursor }),
                    Pending::ListTools,
                );
                return;
            }
        }
        let tools = listing.tools;
        if listing.initial {
            self.phase = Phase::Ready;
            self.tools = tools.clone();
            self.events.push(ClientEvent::Ready(tools));
        } else if tools != self.tools {
            self.tools = tools.clone();
            self.events.push(ClientEvent::ToolsChanged(tools));
        }
        self.after_listing();
    }

    fn after_listing(&mut self) {
        if core::mem::take(&mut self.relist_requested) && self.phase == Phase::Ready {
            self.start_listing(false);
        }
    }

    /// Sends `tools/call`. `arguments` must be a JSON object's text (the registry
    /// checked it); `name` is the registry name, `tool` the server's.
    pub fn start_call(
        &mut self,
        call: u64,
        name: &str,
        tool: &str,
        arguments: &str,
        timeout_ms: u64,
        now_ms: u64,
    ) {
        let deadline_ms = now_ms.saturating_add(timeout_ms);
        self.start_call_until(call, name, tool, arguments, timeout_ms, deadline_ms);
    }

    /// Like [`Client::start_call`], with a first deadline set by the caller: a call
    /// that waited for its server to restart keeps the deadline it started with.
    /// Progress still pushes the deadline back by the full `timeout_ms`.
    pub fn start_call_until(
        &mut self,
        call: u64,
        name: &str,
        tool: &str,
        arguments: &str,
        timeout_ms: u64,
        deadline_ms: u64,
    ) {
        let Ok(arguments) = RawValue::from_string(arguments.to_string()) else {
            self.events.push(ClientEvent::Completed(Completion {
                call,
                outcome: Err(CallError::InvalidArguments(format!(
                    "arguments for {name} are not valid JSON"
                ))),
            }));
            return;
        };
        let id = Id::Number(self.next_id);
        let params = CallParams {
            name: tool,
            arguments: &arguments,
            meta: ProgressMeta {
                progress_token: &id,
            },
        };
        let pending = Pending::Call(PendingCall {
            call,
            name: name.to_string(),
            timeout_ms,
            deadline_ms,
        });
        self.request("tools/call", Some(tool), Some(&params), pending);
    }

    fn abandon(&mut self, id: Id, reason: &str) {
        self.notify(
            "notifications/cancelled",
            Some(&CancelledParams {
                request_id: &id,
                reason,
            }),
        );
        if self.abandoned.len() == ABANDONED_MEMORY {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(id);
    }

    /// Cancels a call in flight; false if it is not in flight here.
    pub fn cancel(&mut self, call: u64) -> bool {
        let id = self
            .pending
            .iter()
            .find(|(_, p)| matches!(p, Pending::Call(c) if c.call == call))
            .map(|(id, _)| id.clone());
        let Some(id) = id else {
            return false;
        };
        self.pending.remove(&id);
        self.abandon(id, "cancelled by the caller");
        self.events.push(ClientEvent::Completed(Completion {
            call,
            outcome: Err(CallError::Cancelled),
        }));
        true
    }

    /// Fires every call deadline that has passed.
    pub fn tick(&mut self, now_ms: u64) {
        let expired: Vec<Id> = self
            .pending
            .iter()
            .filter(|(_, p)| matches!(p, Pending::Call(c) if c.deadline_ms <= now_ms))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            let Some(Pending::Call(c)) = self.pending.remove(&id) else {
                continue;
            };
            let after = format_ms(c.timeout_ms);
            self.abandon(id, &format!("timed out after {after}"));
            self.events.push(ClientEvent::Completed(Completion {
                call: c.call,
                outcome: Err(CallError::Timeout(format!(
                    "{} timed out after {after}; the server was sent notifications/cancelled",
                    c.name
                ))),
            }));
        }
    }

    /// The host dropped an oversized message. If we can tell which request it
    /// answered, that request fails now rather than at its timeout.
    pub fn handle_oversized(&mut self, o: &Oversized) {
        let too_large = format!("message too large ({} bytes > cap {})", o.size, o.cap);
        let id = o.id.as_deref().map(Id::from_json);
        match id.as_ref().and_then(|id| self.pending.remove(id)) {
            Some(Pending::Call(c)) => self.events.push(ClientEvent::Completed(Completion {
                call: c.call,
                outcome: Err(CallError::Protocol(format!(
                    "{}: the server's answer was dropped: {too_large}",
                    c.name
                ))),
            })),
            Some(Pending::Initialize) => self.fail(format!(
                "server `{}` answered initialize with a {too_large}",
                self.server
            )),
            Some(Pending::ListTools) => {
                let initial = self.listing.as_ref().is_none_or(|l| l.initial);
                if initial {
                    self.fail(format!(
                        "server `{}` answered tools/list with a {too_large}",
                        self.server
                    ));
                } else {
                    self.listing = None;
                    self.warn(format!(
                        "server `{}` answered tools/list with a {too_large}; keeping its previous tools",
                        self.server
                    ));
                    self.after_listing();
                }
            }
            None => self.warn(format!(
                "server `{}` sent a {too_large}; the host dropped it",
                self.server
            )),
        }
    }

    /// Completes every call in flight with `error(name)`, for a lost connection
    /// or a shutdown. Nothing is sent: the connection is gone.
    pub fn abort_calls(&mut self, error: impl Fn(&str) -> CallError) {
        let pending = core::mem::take(&mut self.pending);
        for (_, p) in pending {
            if let Pending::Call(c) = p {
                self.events.push(ClientEvent::Completed(Completion {
                    call: c.call,
                    outcome: Err(error(&c.name)),
                }));
            }
        }
        self.listing = None;
    }
}

fn read_tool(raw: &RawValue) -> Result<ToolDef, String> {
    let t: RawTool = serde_json::from_str(raw.get())
        .map_err(|e| format!("{e} in {}", jsonrpc::truncate(raw.get(), 80)))?;
    let name = match t.name {
        Value::String(n) if !n.is_empty() => n,
        other => return Err(format!("its name is {other}, not a non-empty string")),
    };
    let annotations = t
        .annotations
        .map(|a| a.get().to_string())
        .filter(|a| a != "null");
    let title = text_of(t.title).or_else(|| {
        annotations
            .as_deref()
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .and_then(|a| text_of(a.get("title").cloned()))
    });
    Ok(ToolDef {
        name,
        title,
        description: text_of(t.description),
        // MCP requires an input schema; the registry needs one, so a missing one
        // means "an object with anything in it", which is what servers mean by it.
        input_schema: t.input_schema.map_or_else(
            || r#"{"type":"object"}"#.to_string(),
            |s| s.get().to_string(),
        ),
        output_schema: t.output_schema.map(|s| s.get().to_string()),
        annotations,
    })
}

fn read_call_result(name: &str, raw: &RawValue) -> Result<CallResult, CallError> {
    let malformed = |why: String| {
        CallError::Protocol(format!(
            "{name}: the server sent a malformed tools/call result ({why})"
        ))
    };
    let result: RawCallResult =
        serde_json::from_str(raw.get()).map_err(|e| malformed(e.to_string()))?;
    let content = result
        .content
        .map_or_else(|| "[]".to_string(), |c| c.get().to_string());
    let blocks: Vec<Value> =
        serde_json::from_str(&content).map_err(|_| malformed("content is not a list".into()))?;
    let text = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(CallResult {
        is_error: result.is_error.unwrap_or(false),
        text,
        content,
        structured_content: result
            .structured_content
            .map(|s| s.get().to_string())
            .filter(|s| s != "null"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(c: &mut Client) -> Vec<(Value, SendMeta)> {
        c.take_outbox()
            .into_iter()
            .map(|o| (serde_json::from_str(&o.text).unwrap(), o.meta))
            .collect()
    }

    fn feed(c: &mut Client, v: Value, now: u64) {
        c.handle_text(&v.to_string(), now);
    }

    fn init_result(version: &str) -> Value {
        json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "demo", "version": "1.2"}})
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    /// A client through the handshake and a one-page listing of `tools`.
    fn ready(tools: &[&str]) -> Client {
        let mut c = Client::new("demo");
        c.begin();
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-06-18")}),
            0,
        );
        sent(&mut c);
        let list: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": list}}),
            0,
        );
        assert_eq!(c.phase(), Phase::Ready);
        c.take_events();
        c
    }

    #[test]
    fn handshake_offers_and_negotiates() {
        let mut c = Client::new("demo");
        c.begin();
        let out = sent(&mut c);
        assert_eq!(out.len(), 1);
        let (init, meta) = &out[0];
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["id"], 1);
        assert_eq!(init["params"]["protocolVersion"], OFFERED_VERSION);
        assert_eq!(init["params"]["clientInfo"]["name"], "mcpbox");
        assert_eq!(
            init["params"]["clientInfo"]["version"],
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(meta.method.as_deref(), Some("initialize"));
        assert_eq!(meta.protocol_version, None);

        // A 2024-11-05-only server is accepted.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2024-11-05")}),
            0,
        );
        assert_eq!(c.protocol_version(), Some("2024-11-05"));
        assert_eq!(c.server_info().name.as_deref(), Some("demo"));
        assert_eq!(c.server_info().version.as_deref(), Some("1.2"));
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "notifications/initialized");
        assert!(out[0].0.get("id").is_none());
        assert_eq!(out[0].1.protocol_version.as_deref(), Some("2024-11-05"));
        assert_eq!(out[1].0["method"], "tools/list");
        assert_eq!(out[1].1.method.as_deref(), Some("tools/list"));
        assert_eq!(c.phase(), Phase::Listing);
    }

    #[test]
    fn unsupported_versions_are_rejected_with_the_supported_list() {
        let mut c = Client::new("x");
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("1999-01-01")}),
            0,
        );
        assert_eq!(c.phase(), Phase::Failed);
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Failed(
                "server `x` answered protocolVersion \"1999-01-01\", which mcpbox does not support \
                 (supported: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25)"
                    .into()
            )]
        );
    }

    #[test]
    fn initialize_errors_fail_the_session() {
        let mut c = Client::new("x");
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "nope"}}),
            0,
        );
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Failed(
                "server `x` rejected initialize: JSON-RPC error -32600: nope".into()
            )]
        );
    }

    #[test]
    fn a_server_without_tools_capability_is_ready_with_none() {
        let mut c = Client::new("x");
        c.begin();
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-03-26", "capabilities": {}}}),
            0,
        );
        assert_eq!(c.phase(), Phase::Ready);
        assert_eq!(c.take_events(), vec![ClientEvent::Ready(vec![])]);
        let out = sent(&mut c);
        assert_eq!(out.len(), 1, "only notifications/initialized");
    }

    #[test]
    fn follows_every_cursor() {
        let mut c = Client::new("demo");
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a"), tool("b")], "nextCursor": "p2"}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["params"], json!({"cursor": "p2"}));
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("c")], "nextCursor": "p3"}}),
            0,
        );
        assert_eq!(sent(&mut c)[0].0["params"]["cursor"], "p3");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [tool("d")]}}),
            0,
        );
        assert!(sent(&mut c).is_empty());
        match &c.take_events()[..] {
            [ClientEvent::Ready(tools)] => {
                let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
                assert_eq!(names, ["a", "b", "c", "d"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_repeated_cursor_stops_the_listing() {
        let mut c = Client::new("loop");
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a")], "nextCursor": "same"}}),
            0,
        );
        assert_eq!(sent(&mut c).len(), 1);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("b")], "nextCursor": "same"}}),
            0,
        );
        assert!(sent(&mut c).is_empty(), "no third request");
        let events = c.take_events();
        assert!(
            matches!(&events[0], ClientEvent::Warning(w) if w.contains("cursor \"same\" twice")),
            "{events:?}"
        );
        assert!(matches!(&events[1], ClientEvent::Ready(t) if t.len() == 2));
    }

    #[test]
    fn tools_keep_exact_schema_text() {
        let mut c = Client::new("demo");
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        let page = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[
            {"name":"t","title":"T","description":"d","inputSchema":{ "type":"object", "z":1,"a":2 },
             "outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
            {"name":"u","annotations":{"title":"From annotations"}},
            {"title":"nameless"}
        ]}}"#;
        c.handle_text(page, 0);
        let events = c.take_events();
        assert!(matches!(&events[0], ClientEvent::Warning(w) if w.contains("skipped")));
        let ClientEvent::Ready(tools) = &events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(tools[0].input_schema, r#"{ "type":"object", "z":1,"a":2 }"#);
        assert_eq!(
            tools[0].output_schema.as_deref(),
            Some(r#"{"type":"object"}"#)
        );
        assert_eq!(
            tools[0].annotations.as_deref(),
            Some(r#"{"readOnlyHint":true}"#)
        );
        assert_eq!(tools[0].title.as_deref(), Some("T"));
        assert_eq!(tools[0].description.as_deref(), Some("d"));
        assert_eq!(tools[1].input_schema, r#"{"type":"object"}"#);
        assert_eq!(tools[1].title.as_deref(), Some("From annotations"));
    }

    #[test]
    fn responses_match_ids_exactly() {
        let mut c = ready(&["echo"]);
        c.start_call(9, "mcp__demo__echo", "echo", "{}", 1000, 0);
        let out = sent(&mut c);
        let id = out[0].0["id"].as_i64().unwrap();
        // Same digits as a string: not an answer. Ignored and counted.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": id.to_string(), "result": {"content": []}}),
            0,
        );
        assert_eq!(c.stats().unknown_responses, 1);
        assert_eq!(c.pending_calls(), 1);
        assert!(
            matches!(&c.take_events()[..], [ClientEvent::Warning(w)] if w.contains("matches no request"))
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 999, "result": {}}),
            0,
        );
        assert_eq!(c.stats().unknown_responses, 2);
        assert!(c.take_events().is_empty(), "only the first is warned about");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
            0,
        );
        assert_eq!(c.pending_calls(), 0);
        assert!(matches!(
            &c.take_events()[..],
            [ClientEvent::Completed(Completion {
                call: 9,
                outcome: Ok(_)
            })]
        ));
    }

    #[test]
    fn invalid_messages_are_ignored_and_counted() {
        let mut c = ready(&[]);
        c.handle_text("garbage", 0);
        c.handle_text(r#"{"jsonrpc":"2.0"}"#, 0);
        assert_eq!(c.stats().invalid_messages, 2);
        assert_eq!(c.take_events().len(), 1);
        assert!(sent(&mut c).is_empty());
    }

    #[test]
    fn ping_is_answered_and_other_requests_are_refused() {
        let mut c = ready(&[]);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 41, "method": "sampling/createMessage", "params": {}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(
            out[0].0,
            json!({"jsonrpc": "2.0", "id": "p1", "result": {}})
        );
        assert_eq!(out[0].1.method, None);
        assert_eq!(
            out[1].0,
            json!({"jsonrpc": "2.0", "id": 41, "error": {"code": -32601, "message": "method not found"}})
        );
    }

    #[test]
    fn call_results_are_mapped() {
        let mut c = ready(&["echo"]);
        c.start_call(1, "mcp__demo__echo", "echo", r#"{"text":"hi"}"#, 1000, 0);
        let out = sent(&mut c);
        let (req, meta) = &out[0];
        assert_eq!(req["method"], "tools/call");
        assert_eq!(req["params"]["name"], "echo");
        assert_eq!(req["params"]["arguments"], json!({"text": "hi"}));
        assert_eq!(req["params"]["_meta"]["progressToken"], req["id"]);
        assert_eq!(meta.name.as_deref(), Some("echo"));
        assert_eq!(meta.method.as_deref(), Some("tools/call"));
        assert_eq!(meta.protocol_version.as_deref(), Some("2025-06-18"));
        let id = req["id"].clone();
        c.handle_text(
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"a"}},{{"type":"image","data":"x","mimeType":"image/png"}},{{"type":"text","text":"b"}}],"structuredContent":{{"n":1}},"isError":true}}}}"#
            ),
            0,
        );
        let events = c.take_events();
        let [
            ClientEvent::Completed(Completion {
                call: 1,
                outcome: Ok(r),
            }),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert!(r.is_error);
        assert_eq!(r.text, "a\nb");
        assert_eq!(
            r.content,
            r#"[{"type":"text","text":"a"},{"type":"image","data":"x","mimeType":"image/png"},{"type":"text","text":"b"}]"#
        );
        assert_eq!(r.structured_content.as_deref(), Some(r#"{"n":1}"#));
    }

    #[test]
    fn error_answers_and_malformed_results_are_protocol_errors() {
        let mut c = ready(&["echo"]);
        c.start_call(1, "mcp__demo__echo", "echo", "{}", 1000, 0);
        c.start_call(2, "mcp__demo__echo", "echo", "{}", 1000, 0);
        let ids: Vec<Value> = sent(&mut c)
            .into_iter()
            .map(|(m, _)| m["id"].clone())
            .collect();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": ids[0], "error": {"code": -32602, "message": "Unknown tool"}}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": ids[1], "result": {"content": "oops"}}),
            0,
        );
        let events = c.take_events();
        assert_eq!(
            events[0],
            ClientEvent::Completed(Completion {
                call: 1,
                outcome: Err(CallError::Protocol(
                    "mcp__demo__echo failed: JSON-RPC error -32602: Unknown tool".into()
                ))
            })
        );
        assert!(
            matches!(&events[1], ClientEvent::Completed(Completion { call: 2, outcome: Err(CallError::Protocol(m)) }) if m.contains("malformed"))
        );
    }

    #[test]
    fn timeouts_cancel_and_progress_extends() {
        let mut c = ready(&["slow"]);
        c.start_call(5, "mcp__demo__slow", "slow", "{}", 1000, 100);
        let id = sent(&mut c)[0].0["id"].clone();
        assert_eq!(c.next_deadline(), Some(1100));
        // Progress at 900 moves the deadline to 1900.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": id, "progress": 1}}),
            900,
        );
        assert_eq!(c.next_deadline(), Some(1900));
        // A token of the wrong type does not.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": id.to_string(), "progress": 2}}),
            1500,
        );
        assert_eq!(c.next_deadline(), Some(1900));
        c.tick(1899);
        assert!(c.take_events().is_empty());
        c.tick(1900);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "notifications/cancelled");
        assert_eq!(out[0].0["params"]["requestId"], id);
        assert_eq!(out[0].0["params"]["reason"], "timed out after 1s");
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Completed(Completion {
                call: 5,
                outcome: Err(CallError::Timeout(
                    "mcp__demo__slow timed out after 1s; the server was sent notifications/cancelled".into()
                ))
            })]
        );
        // The late answer is dropped quietly, not counted as unknown.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
            2000,
        );
        assert!(c.take_events().is_empty());
        assert_eq!(c.stats().unknown_responses, 0);
    }

    #[test]
    fn cancel_sends_cancelled_and_completes() {
        let mut c = ready(&["slow"]);
        c.start_call(3, "mcp__demo__slow", "slow", "{}", 60_000, 0);
        let id = sent(&mut c)[0].0["id"].clone();
        assert!(c.cancel(3));
        assert!(!c.cancel(3));
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "notifications/cancelled");
        assert_eq!(out[0].0["params"]["requestId"], id);
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Completed(Completion {
                call: 3,
                outcome: Err(CallError::Cancelled)
            })]
        );
        assert_eq!(c.next_deadline(), None);
    }

    #[test]
    fn list_changed_relists_and_coalesces() {
        let mut c = ready(&["a"]);
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        feed(&mut c, changed.clone(), 0);
        let out = sent(&mut c);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0["method"], "tools/list");
        let first = out[0].0["id"].clone();
        // Two more announcements while listing: one more listing, not two.
        feed(&mut c, changed.clone(), 0);
        feed(&mut c, changed, 0);
        assert!(sent(&mut c).is_empty());
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": first, "result": {"tools": [tool("a"), tool("b")]}}),
            0,
        );
        let events = c.take_events();
        assert!(
            matches!(&events[..], [ClientEvent::ToolsChanged(t)] if t.len() == 2),
            "{events:?}"
        );
        let out = sent(&mut c);
        assert_eq!(out.len(), 1);
        let second = out[0].0["id"].clone();
        // Same list again: no change event.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": second, "result": {"tools": [tool("a"), tool("b")]}}),
            0,
        );
        assert!(c.take_events().is_empty());
        assert!(sent(&mut c).is_empty());
    }

    #[test]
    fn log_messages_become_events() {
        let mut c = ready(&[]);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "disk low"}}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "db", "data": {"rows": 3}}}),
            0,
        );
        assert_eq!(
            c.take_events(),
            vec![
                ClientEvent::Log {
                    level: "warning".into(),
                    message: "disk low".into()
                },
                ClientEvent::Log {
                    level: "info".into(),
                    message: "db: {\"rows\":3}".into()
                },
            ]
        );
    }

    #[test]
    fn oversized_answers_fail_their_request() {
        let mut c = ready(&["big"]);
        c.start_call(4, "mcp__demo__big", "big", "{}", 60_000, 0);
        let id = sent(&mut c)[0].0["id"].clone();
        c.handle_oversized(&Oversized {
            size: 2000,
            cap: 1000,
            id: Some(id.to_string()),
        });
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Completed(Completion {
                call: 4,
                outcome: Err(CallError::Protocol(
                    "mcp__demo__big: the server's answer was dropped: message too large (2000 bytes > cap 1000)".into()
                ))
            })]
        );
        c.handle_oversized(&Oversized {
            size: 5,
            cap: 4,
            id: None,
        });
        assert!(
            matches!(&c.take_events()[..], [ClientEvent::Warning(w)] if w.contains("message too large (5 bytes > cap 4)"))
        );
    }

    #[test]
    fn abort_completes_every_call() {
        let mut c = ready(&["a"]);
        c.start_call(1, "mcp__demo__a", "a", "{}", 1000, 0);
        c.start_call(2, "mcp__demo__a", "a", "{}", 1000, 0);
        c.abort_calls(|name| CallError::ServerUnavailable(format!("{name}: gone")));
        let events = c.take_events();
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[0], ClientEvent::Completed(Completion { call: 1, outcome: Err(CallError::ServerUnavailable(m)) }) if m == "mcp__demo__a: gone")
        );
        assert_eq!(c.pending_calls(), 0);
    }
}
