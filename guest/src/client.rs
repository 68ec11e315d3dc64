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
//!   follow from the [`SendMeta`] the host gets with each message. An
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

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::elicitation::{self, InputAnswer, InputRequest};
use crate::jsonrpc::{self, INVALID_PARAMS, Id, METHOD_NOT_FOUND, Message, RpcError};
use crate::registry::ToolDef;
use crate::transport::{Oversized, Pair, SendMeta, format_ms};

/// The protocol version the guest offers in `initialize`.
pub const OFFERED_VERSION: &str = "2025-11-25";

/// Every protocol version the guest accepts back.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The stateless protocol revision the guest speaks.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// How long `server/discover` may go unanswered before the server is taken for a
/// legacy one that ignores unknown requests.
pub const PROBE_TIMEOUT_MS: u64 = 5_000;

/// The shortest re-list interval a `ttlMs` hint can ask for.
const MIN_TTL_MS: u64 = 1_000;

/// The JSON-RPC error code for an unsupported protocol version (2026-07-28).
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A listing that never ends (a server inventing cursors) stops here.
const MAX_PAGES: usize = 1000;

/// How many abandoned request ids are remembered to drop their late answers.
const ABANDONED_MEMORY: usize = 1024;

/// How many `input_required` rounds one call may take before it is given up: a
/// server that keeps asking would otherwise hold the call until its timeout.
const MAX_INPUT_ROUNDS: u32 = 16;

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
    /// The server asks for input; `id` is this client's key for
    /// [`Client::answer_input`].
    InputRequested(InputRequest),
    /// An input request that no longer needs an answer (its call finished or the
    /// server withdrew it), by this client's key.
    InputWithdrawn(u64),
}

/// A message waiting to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The JSON-RPC message text.
    pub text: String,
    /// Transport metadata for it.
    pub meta: SendMeta,
}

/// Which generation of MCP the session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` + `notifications/initialized`, versions 2024-11-05 … 2025-11-25.
    Legacy,
    /// 2026-07-28: no handshake, `_meta` on every request, `server/discover`.
    Stateless,
}

impl Era {
    /// A short name, for remembering the era across runs.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Stateless => STATELESS_VERSION,
        }
    }

    /// The era [`Era::as_str`] named.
    pub fn parse(text: &str) -> Option<Era> {
        match text {
            "legacy" => Some(Era::Legacy),
            STATELESS_VERSION => Some(Era::Stateless),
            _ => None,
        }
    }
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
struct PendingCall {
    call: u64,
    /// The registry name, for messages.
    name: String,
    /// The server's name for the tool and the arguments, to send the call again
    /// with input responses.
    tool: String,
    arguments: Box<RawValue>,
    timeout_ms: u64,
    deadline_ms: u64,
    /// `input_required` answers so far.
    rounds: u32,
}

/// A 2026-07-28 call between an `input_required` answer and its retry.
#[derive(Debug)]
struct InputRound {
    call: PendingCall,
    /// `requestState` exactly as the server sent it, to be echoed.
    request_state: Option<Value>,
    /// `inputRequests` keys still waiting for the embedder.
    waiting: BTreeSet<String>,
    /// `inputResponses` so far.
    responses: serde_json::Map<String, Value>,
}

/// An input request waiting for the embedder.
#[derive(Debug)]
struct InputWait {
    /// The call it belongs to, if known.
    call: Option<u64>,
    /// What the server asked for: answers are checked against it.
    schema: Value,
    /// Where the answer goes.
    to: InputTarget,
}

#[derive(Debug)]
enum InputTarget {
    /// A legacy `elicitation/create` request with this id: answered with a response.
    Request(Id),
    /// An entry of an `input_required` result's `inputRequests`.
    Round(String),
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
    ListTools,
    /// `subscriptions/listen`: open while the server streams list changes.
    Listen,
    Call(PendingCall),
}

#[derive(Debug)]
struct Listing {
    initial: bool,
    tools: Vec<ToolDef>,
    seen_cursors: BTreeSet<String>,
    pages: usize,
    /// The smallest `ttlMs` of the pages so far.
    ttl_ms: Option<u64>,
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
    /// A fingerprint of the last tool list reported, to report changes only
    /// (a copy of the list would double the memory a large list takes).
    tools_fingerprint: Option<u64>,
    /// The `x-mcp-header` annotations of the listed tools that have any, by tool.
    param_headers: BTreeMap<String, Vec<(String, String)>>,
    abandoned: VecDeque<Id>,
    stats: Stats,
    outbox: Vec<Outgoing>,
    events: Vec<ClientEvent>,
    /// The latest time seen, for work scheduled from inside message handling.
    now_ms: u64,
    /// When an unanswered `server/discover` gives way to `initialize`.
    probe_deadline: Option<u64>,
    /// The server's `tools.listChanged` capability.
    list_changed: bool,
    /// When the tool list goes stale (`ttlMs`), if no subscription keeps it fresh.
    relist_at: Option<u64>,
    /// Whether the embedder answers input requests (elicitation).
    input_requests: bool,
    /// Input requests waiting for the embedder, by key.
    inputs: BTreeMap<u64, InputWait>,
    next_input: u64,
    /// 2026-07-28 calls waiting for input before their retry, by call handle.
    rounds: BTreeMap<u64, InputRound>,
}

#[derive(Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

/// `_meta` of a request: a progress token, and in the stateless era the protocol
/// version, the client's capabilities and its name.
#[derive(Serialize, Default)]
struct RequestMeta<'a> {
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<&'a Id>,
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    protocol_version: Option<&'static str>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        skip_serializing_if = "Option::is_none"
    )]
    client_capabilities: Option<serde_json::Map<String, Value>>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    client_info: Option<ClientInfo>,
}

impl RequestMeta<'_> {
    fn is_empty(&self) -> bool {
        self.progress_token.is_none() && self.protocol_version.is_none()
    }
}

/// Params of a request that has none of its own but `_meta`.
#[derive(Serialize)]
struct MetaOnly<'a> {
    #[serde(rename = "_meta")]
    meta: RequestMeta<'a>,
}

#[derive(Serialize)]
struct ListParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    meta: RequestMeta<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListenFilter {
    tools_list_changed: bool,
}

#[derive(Serialize)]
struct ListenParams<'a> {
    notifications: ListenFilter,
    #[serde(rename = "_meta")]
    meta: RequestMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult {
    #[serde(default)]
    supported_versions: Option<Vec<Value>>,
    #[serde(default)]
    capabilities: Option<Value>,
    #[serde(default)]
    server_info: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
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
struct ListToolsResult<'a> {
    /// Borrowed from the result text: each tool is read straight into a `ToolDef`.
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    next_cursor: Option<Value>,
    #[serde(default)]
    result_type: Option<Value>,
    #[serde(default)]
    ttl_ms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTool<'a> {
    name: Value,
    #[serde(default)]
    title: Option<Value>,
    #[serde(default)]
    description: Option<Value>,
    #[serde(default, borrow)]
    input_schema: Option<&'a RawValue>,
    #[serde(default, borrow)]
    output_schema: Option<&'a RawValue>,
    #[serde(default, borrow)]
    annotations: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: Option<Value>,
    #[serde(default)]
    request_state: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCallResult {
    #[serde(default)]
    result_type: Option<Value>,
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
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a serde_json::Map<String, Value>>,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a Value>,
    #[serde(rename = "_meta")]
    meta: RequestMeta<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams<'a> {
    request_id: &'a Id,
    reason: &'a str,
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
            tools_fingerprint: None,
            param_headers: BTreeMap::new(),
            abandoned: VecDeque::new(),
            stats: Stats::default(),
            outbox: Vec::new(),
            events: Vec::new(),
            now_ms: 0,
            probe_deadline: None,
            list_changed: false,
            relist_at: None,
            input_requests: false,
            inputs: BTreeMap::new(),
            next_input: 1,
            rounds: BTreeMap::new(),
        }
    }

    /// Offers servers the `elicitation` capability (form mode): their requests for
    /// input become [`ClientEvent::InputRequested`]. Call before the session starts.
    pub fn enable_input_requests(&mut self) {
        self.input_requests = true;
    }

    /// The client capabilities declared to the server.
    fn capabilities(&self) -> serde_json::Map<String, Value> {
        let mut capabilities = serde_json::Map::new();
        if self.input_requests {
            capabilities.insert("elicitation".into(), serde_json::json!({"form": {}}));
        }
        capabilities
    }

    /// Starts the legacy handshake (`initialize`) without probing the era.
    pub fn begin(&mut self) {
        self.initialize(false);
    }

    /// Starts the session, finding out which era the server speaks: a server
    /// remembered as legacy (`hint`) gets `initialize` at once (falling back to
    /// discovery if that fails); any other gets the `server/discover` probe.
    pub fn detect(&mut self, hint: Option<Era>, now_ms: u64) {
        self.now_ms = now_ms;
        match hint {
            Some(Era::Legacy) => self.initialize(true),
            _ => self.discover(false),
        }
    }

    fn initialize(&mut self, or_discover: bool) {
        self.era = Era::Legacy;
        self.phase = Phase::Initializing;
        self.protocol_version = None;
        let params = InitializeParams {
            protocol_version: OFFERED_VERSION,
            capabilities: self.capabilities(),
            client_info: client_info(),
        };
        let pending = Pending::Initialize { or_discover };
        self.request("initialize", None, Some(&params), pending);
    }

    fn discover(&mut self, retried: bool) {
        self.era = Era::Stateless;
        self.phase = Phase::Discovering;
        self.protocol_version = Some(STATELESS_VERSION.to_string());
        self.probe_deadline = Some(self.now_ms.saturating_add(PROBE_TIMEOUT_MS));
        let params = MetaOnly {
            meta: self.request_meta(None),
        };
        self.request(
            "server/discover",
            None,
            Some(&params),
            Pending::Discover { retried },
        );
    }

    /// `_meta` for a request: the progress token, plus the stateless era's fields.
    fn request_meta<'a>(&self, progress_token: Option<&'a Id>) -> RequestMeta<'a> {
        let stateless = self.era == Era::Stateless;
        RequestMeta {
            progress_token,
            protocol_version: stateless.then_some(STATELESS_VERSION),
            client_capabilities: stateless.then(|| self.capabilities()),
            client_info: stateless.then(client_info),
        }
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

    /// Calls in flight (waiting for input included).
    pub fn pending_calls(&self) -> usize {
        self.pending
            .values()
            .filter(|p| matches!(p, Pending::Call(_)))
            .count()
            + self.rounds.len()
    }

    /// Takes the messages to send, oldest first.
    pub fn take_outbox(&mut self) -> Vec<Outgoing> {
        core::mem::take(&mut self.outbox)
    }

    /// Takes what happened, oldest first.
    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        core::mem::take(&mut self.events)
    }

    /// The earliest deadline: of a call, of the era probe, or of a stale tool list.
    pub fn next_deadline(&self) -> Option<u64> {
        self.pending
            .values()
            .filter_map(|p| match p {
                Pending::Call(c) => Some(c.deadline_ms),
                _ => None,
            })
            .chain(self.rounds.values().map(|r| r.call.deadline_ms))
            .chain(self.probe_deadline)
            .chain(self.relist_at)
            .min()
    }

    fn meta(&self, method: Option<&str>, name: Option<&str>) -> SendMeta {
        SendMeta {
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
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let method = meta.method.as_deref().unwrap_or_default();
        let text = jsonrpc::request(&id, method, params);
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
        self.handle_message(text.to_string(), now_ms);
    }

    /// Handles one message from the server, taking its text: the parsed message
    /// owns what it needs, so the text is freed before the message is acted on
    /// and a large tool list is not held twice meanwhile.
    pub fn handle_message(&mut self, text: String, now_ms: u64) {
        self.now_ms = now_ms;
        let messages = jsonrpc::parse(&text);
        let preview = messages
            .iter()
            .any(|m| matches!(m, Message::Invalid(_)))
            .then(|| jsonrpc::truncate(&text, 120));
        drop(text);
        for message in messages {
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
            "ping" => jsonrpc::result_response(&r.id, &serde_json::Map::new()),
            elicitation::METHOD if self.input_requests => {
                let params: Value = r
                    .params
                    .as_ref()
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or(Value::Null);
                match elicitation::parse_request(&params) {
                    Ok(request) => {
                        // Over stdio nothing says which call a request is for; with
                        // one call in flight it can only be that one.
                        let mut calls = self.pending.values().filter_map(|p| match p {
                            Pending::Call(c) => Some((c.call, c.name.clone())),
                            _ => None,
                        });
                        let call = match (calls.next(), calls.next()) {
                            (Some(only), None) => Some(only),
                            _ => None,
                        };
                        self.ask(call, request, InputTarget::Request(r.id));
                        return;
                    }
                    Err(why) => jsonrpc::error_response(
                        &r.id,
                        &RpcError::new(INVALID_PARAMS, format!("mcpbox: {why}")),
                    ),
                }
            }
            _ => {
                jsonrpc::error_response(&r.id, &RpcError::new(METHOD_NOT_FOUND, "method not found"))
            }
        };
        self.respond(text);
    }

    /// Queues an input request for the embedder.
    fn ask(
        &mut self,
        call: Option<(u64, String)>,
        request: elicitation::Elicitation,
        to: InputTarget,
    ) {
        let key = self.next_input;
        self.next_input += 1;
        let (call, tool) = call.unzip();
        self.events.push(ClientEvent::InputRequested(InputRequest {
            id: key,
            server: self.server.clone(),
            call,
            tool,
            message: request.message,
            requested_schema: request.schema.to_string(),
        }));
        self.inputs.insert(
            key,
            InputWait {
                call,
                schema: request.schema,
                to,
            },
        );
    }

    /// Answers the input request `key` (see [`ClientEvent::InputRequested`]).
    /// An accepted answer gets the requested schema's defaults for the fields it
    /// leaves out and must then satisfy that schema. Err (and the request stays
    /// open) when it does not, or when no request of that key is waiting.
    pub fn answer_input(&mut self, key: u64, answer: &InputAnswer) -> Result<(), String> {
        let wait = self
            .inputs
            .get(&key)
            .ok_or_else(|| format!("no input request {key} is waiting"))?;
        let result = elicitation::result(answer, &wait.schema)?;
        let Some(wait) = self.inputs.remove(&key) else {
            return Ok(());
        };
        match wait.to {
            InputTarget::Request(id) => self.respond(jsonrpc::result_response(&id, &result)),
            InputTarget::Round(entry) => {
                let Some(call) = wait.call else {
                    return Ok(());
                };
                let Some(round) = self.rounds.get_mut(&call) else {
                    return Ok(());
                };
                round.waiting.remove(&entry);
                round.responses.insert(entry, result);
                if round.waiting.is_empty()
                    && let Some(round) = self.rounds.remove(&call)
                {
                    let InputRound {
                        mut call,
                        request_state,
                        responses,
                        ..
                    } = round;
                    call.rounds += 1;
                    self.send_call(call, Some(&responses), request_state.as_ref());
                }
            }
        }
        Ok(())
    }

    /// Withdraws the input requests of `call` (`None`: those of no known call).
    /// `answer_server`: a legacy server's request is answered with `cancel`, so the
    /// server stops waiting for it (false when the connection is gone).
    fn withdraw_inputs(&mut self, call: Option<u64>, answer_server: bool) {
        let keys: Vec<u64> = self
            .inputs
            .iter()
            .filter(|(_, w)| w.call == call)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.withdraw(key, answer_server);
        }
    }

    fn withdraw(&mut self, key: u64, answer_server: bool) {
        let Some(wait) = self.inputs.remove(&key) else {
            return;
        };
        if let (InputTarget::Request(id), true) = (&wait.to, answer_server) {
            let cancel = serde_json::json!({"action": "cancel"});
            self.respond(jsonrpc::result_response(id, &cancel));
        }
        self.events.push(ClientEvent::InputWithdrawn(key));
    }

    /// A call is over: reports it and withdraws whatever input it still waits for.
    fn finish(&mut self, call: u64, outcome: Result<CallResult, CallError>, connected: bool) {
        self.rounds.remove(&call);
        self.withdraw_inputs(Some(call), connected);
        self.events
            .push(ClientEvent::Completed(Completion { call, outcome }));
        // Requests tied to no known call end with the last call in flight.
        if self.pending_calls() == 0 {
            self.withdraw_inputs(None, connected);
        }
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
                Phase::Discovering | Phase::Initializing | Phase::Failed => {}
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
            // The server withdrawing a request of its own: only input requests
            // wait for anything.
            "notifications/cancelled" => {
                let Some(request) = params.get("requestId") else {
                    return;
                };
                let id = Id::from_json(&request.to_string());
                let key = self.inputs.iter().find_map(|(k, w)| match &w.to {
                    InputTarget::Request(r) if *r == id => Some(*k),
                    _ => None,
                });
                if let Some(key) = key {
                    self.withdraw(key, false);
                }
            }
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
            Pending::Initialize { or_discover } => self.on_initialized(r.outcome, or_discover),
            Pending::Discover { retried } => self.on_discovered(r.outcome, retried),
            Pending::ListTools => self.on_tools_page(r.outcome),
            Pending::Listen => {
                if let Err(e) = r.outcome {
                    self.warn(format!(
                        "server `{}` refused subscriptions/listen ({e}); its tool list is refreshed only when it goes stale",
                        self.server
                    ));
                }
            }
            Pending::Call(c) => {
                let outcome = match r.outcome {
                    Ok(raw) => match read_call_result(&c.name, &raw) {
                        Ok(Some(result)) => Ok(result),
                        Ok(None) => return self.on_input_required(c, &raw),
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(CallError::Protocol(format!("{} failed: {e}", c.name))),
                };
                self.finish(c.call, outcome, true);
            }
        }
    }

    fn on_discovered(&mut self, outcome: Result<Box<RawValue>, RpcError>, retried: bool) {
        if self.phase != Phase::Discovering {
            return;
        }
        self.probe_deadline = None;
        let raw = match outcome {
            Ok(raw) => raw,
            Err(e)
                if e.code == UNSUPPORTED_PROTOCOL_VERSION && !retried && offers_stateless(&e) =>
            {
                // The server named the versions it takes and ours is one: ask again.
                return self.discover(true);
            }
            // Not a 2026-07-28 server (method not found, or a legacy server's
            // "not initialised"): the legacy handshake.
            Err(_) => return self.initialize(false),
        };
        let result: DiscoverResult = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(_) => return self.initialize(false),
        };
        let speaks = result
            .supported_versions
            .iter()
            .flatten()
            .any(|v| v.as_str() == Some(STATELESS_VERSION));
        if !speaks {
            return self.initialize(false);
        }
        let info = result.server_info.or_else(|| {
            result
                .meta
                .as_ref()
                .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
                .cloned()
        });
        self.set_server_info(info);
        self.after_handshake(result.capabilities.as_ref());
    }

    fn set_server_info(&mut self, info: Option<Value>) {
        if let Some(Value::Object(info)) = info {
            self.server_info = ServerInfo {
                name: text_of(info.get("name").cloned()),
                version: text_of(info.get("version").cloned()),
            };
        }
    }

    /// Lists tools when the server has them; ready with none otherwise.
    fn after_handshake(&mut self, capabilities: Option<&Value>) {
        let tools = capabilities
            .and_then(|c| c.get("tools"))
            .filter(|t| !t.is_null());
        self.list_changed = tools
            .and_then(|t| t.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if tools.is_some() {
            self.phase = Phase::Listing;
            self.start_listing(true);
        } else {
            // The server offers no tools; asking would only earn a -32601.
            self.phase = Phase::Ready;
            self.events.push(ClientEvent::Ready(Vec::new()));
        }
    }

    fn on_initialized(&mut self, outcome: Result<Box<RawValue>, RpcError>, or_discover: bool) {
        let raw = match outcome {
            Ok(raw) => raw,
            Err(_) if or_discover => return self.discover(false),
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
        self.set_server_info(result.server_info);
        self.notify::<()>("notifications/initialized", None);
        self.after_handshake(result.capabilities.as_ref());
    }

    fn start_listing(&mut self, initial: bool) {
        self.relist_at = None;
        self.listing = Some(Listing {
            initial,
            tools: Vec::new(),
            seen_cursors: BTreeSet::new(),
            pages: 1,
            ttl_ms: None,
        });
        self.list_page(None);
    }

    fn list_page(&mut self, cursor: Option<&str>) {
        let params = ListParams {
            cursor,
            meta: self.request_meta(None),
        };
        if cursor.is_none() && params.meta.is_empty() {
            self.request::<()>("tools/list", None, None, Pending::ListTools);
        } else {
            self.request("tools/list", None, Some(&params), Pending::ListTools);
        }
    }

    /// After the first listing of a stateless session: subscribe to list changes.
    fn subscribe(&mut self) {
        if self.era != Era::Stateless || !self.list_changed {
            return;
        }
        let params = ListenParams {
            notifications: ListenFilter {
                tools_list_changed: true,
            },
            meta: self.request_meta(None),
        };
        self.request("subscriptions/listen", None, Some(&params), Pending::Listen);
    }

    fn listening(&self) -> bool {
        self.pending.values().any(|p| matches!(p, Pending::Listen))
    }

    fn on_tools_page(&mut self, outcome: Result<Box<RawValue>, RpcError>) {
        let Some(mut listing) = self.listing.take() else {
            return;
        };
        let raw = outcome.map_err(|e| e.to_string());
        let page = raw.as_deref().map_err(Clone::clone).and_then(|raw| {
            serde_json::from_str::<ListToolsResult>(raw.get())
                .map_err(|e| format!("malformed result: {e}"))
        });
        let page = page.and_then(|page| match result_kind(page.result_type.as_ref()) {
            ResultKind::Complete => Ok(page),
            other => Err(format!("answered with resultType {other:?}")),
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
            match read_tool(raw) {
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
                listing.ttl_ms = min_ttl(listing.ttl_ms, page.ttl_ms.as_ref());
                self.listing = Some(listing);
                self.list_page(Some(&cursor));
                return;
            }
        }
        let ttl = min_ttl(listing.ttl_ms, page.ttl_ms.as_ref());
        let tools = listing.tools;
        let fingerprint = Some(fingerprint(&tools));
        self.param_headers = tools
            .iter()
            .filter(|t| !t.param_headers.is_empty())
            .map(|t| (t.name.clone(), t.param_headers.clone()))
            .collect();
        if listing.initial {
            self.phase = Phase::Ready;
            self.tools_fingerprint = fingerprint;
            self.events.push(ClientEvent::Ready(tools));
            self.subscribe();
        } else if fingerprint != self.tools_fingerprint {
            self.tools_fingerprint = fingerprint;
            self.events.push(ClientEvent::ToolsChanged(tools));
        }
        // A fresh-for hint matters only when no subscription reports changes;
        // 0 ("stale at once") would mean re-listing before every call: not done.
        if !self.listening()
            && let Some(ttl) = ttl.filter(|t| *t > 0)
        {
            self.relist_at = Some(self.now_ms.saturating_add(ttl.max(MIN_TTL_MS)));
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
        let pending = PendingCall {
            call,
            name: name.to_string(),
            tool: tool.to_string(),
            arguments,
            timeout_ms,
            deadline_ms,
            rounds: 0,
        };
        self.send_call(pending, None, None);
    }

    /// Sends `tools/call` for `call`, with the answers to its input requests when
    /// it is a retry.
    fn send_call(
        &mut self,
        call: PendingCall,
        input_responses: Option<&serde_json::Map<String, Value>>,
        request_state: Option<&Value>,
    ) {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let params = CallParams {
            name: &call.tool,
            arguments: &call.arguments,
            input_responses,
            request_state,
            meta: self.request_meta(Some(&id)),
        };
        let text = jsonrpc::request(&id, "tools/call", Some(&params));
        let mut meta = self.meta(Some("tools/call"), Some(&call.tool));
        if let Some(annotated) = self.param_headers.get(&call.tool) {
            meta.param_headers = param_headers(annotated, call.arguments.get());
        }
        self.outbox.push(Outgoing { text, meta });
        self.pending.insert(id, Pending::Call(call));
    }

    /// A call answered `input_required`: ask the embedder, or end the call with
    /// the reason mcpbox cannot go on.
    fn on_input_required(&mut self, c: PendingCall, raw: &RawValue) {
        let name = c.name.clone();
        if !self.input_requests {
            return self.finish(c.call, Ok(input_required(&name)), true);
        }
        if c.rounds >= MAX_INPUT_ROUNDS {
            let why = format!(
                "{name}: the server asked for input {MAX_INPUT_ROUNDS} times in a row; giving up on the call"
            );
            return self.finish(c.call, Err(CallError::Protocol(why)), true);
        }
        let malformed = |why: &str| {
            CallError::Protocol(format!(
                "{name}: the server sent a malformed input_required result ({why})"
            ))
        };
        let result: InputRequired = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(e) => return self.finish(c.call, Err(malformed(&e.to_string())), true),
        };
        let requests = match result.input_requests {
            Some(Value::Object(requests)) if !requests.is_empty() => requests,
            _ => {
                return self.finish(
                    c.call,
                    Err(malformed("inputRequests is not a non-empty object")),
                    true,
                );
            }
        };
        // Every request must be one mcpbox can put to the embedder, or none is asked.
        let mut asks = Vec::new();
        for (entry, request) in &requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("?");
            let parsed = if method == elicitation::METHOD {
                elicitation::parse_request(request.get("params").unwrap_or(&Value::Null))
            } else {
                Err(format!(
                    "it asked for {method}, which mcpbox does not offer"
                ))
            };
            match parsed {
                Ok(ask) => asks.push((entry.clone(), ask)),
                Err(why) => return self.finish(c.call, Ok(unanswerable(&name, &why)), true),
            }
        }
        let call = c.call;
        self.rounds.insert(
            call,
            InputRound {
                call: c,
                request_state: result.request_state,
                waiting: asks.iter().map(|(entry, _)| entry.clone()).collect(),
                responses: serde_json::Map::new(),
            },
        );
        for (entry, ask) in asks {
            self.ask(Some((call, name.clone())), ask, InputTarget::Round(entry));
        }
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
        match id {
            Some(id) => {
                self.pending.remove(&id);
                self.abandon(id, "cancelled by the caller");
            }
            // Waiting for input: nothing is in flight on the server.
            None if self.rounds.contains_key(&call) => {}
            None => return false,
        }
        self.finish(call, Err(CallError::Cancelled), true);
        true
    }

    /// Fires every deadline that has passed: calls, the era probe, a stale tool list.
    pub fn tick(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
        if self.phase == Phase::Discovering && self.probe_deadline.is_some_and(|d| d <= now_ms) {
            // No answer to the probe: a legacy server that ignores unknown requests.
            self.probe_deadline = None;
            let probe = self
                .pending
                .iter()
                .find(|(_, p)| matches!(p, Pending::Discover { .. }))
                .map(|(id, _)| id.clone());
            if let Some(id) = probe {
                self.pending.remove(&id);
                self.abandoned.push_back(id);
            }
            self.initialize(false);
        }
        if self.phase == Phase::Ready
            && self.listing.is_none()
            && self.relist_at.is_some_and(|t| t <= now_ms)
        {
            self.start_listing(false);
        }
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
            let waiting = self.inputs.values().any(|w| w.call == Some(c.call));
            let why = format!(
                "{} timed out after {after}{}; the server was sent notifications/cancelled",
                c.name,
                if waiting {
                    " (its input request was not answered in time)"
                } else {
                    ""
                }
            );
            self.finish(c.call, Err(CallError::Timeout(why)), true);
        }
        let expired: Vec<u64> = self
            .rounds
            .iter()
            .filter(|(_, r)| r.call.deadline_ms <= now_ms)
            .map(|(call, _)| *call)
            .collect();
        for call in expired {
            let Some(round) = self.rounds.remove(&call) else {
                continue;
            };
            // Nothing is in flight on the server: there is nothing to cancel there.
            let why = format!(
                "{} timed out after {} waiting for an answer to its input request",
                round.call.name,
                format_ms(round.call.timeout_ms)
            );
            self.finish(call, Err(CallError::Timeout(why)), true);
        }
    }

    /// The host dropped an oversized message. If we can tell which request it
    /// answered, that request fails now rather than at its timeout.
    pub fn handle_oversized(&mut self, o: &Oversized) {
        let too_large = format!("message too large ({} bytes > cap {})", o.size, o.cap);
        let id = o.id.as_deref().map(Id::from_json);
        match id.as_ref().and_then(|id| self.pending.remove(id)) {
            Some(Pending::Call(c)) => {
                let why = format!("{}: the server's answer was dropped: {too_large}", c.name);
                self.finish(c.call, Err(CallError::Protocol(why)), true);
            }
            Some(Pending::Initialize { .. } | Pending::Discover { .. }) => self.fail(format!(
                "server `{}` answered its handshake with a {too_large}",
                self.server
            )),
            Some(Pending::Listen) => self.warn(format!(
                "server `{}` ended subscriptions/listen with a {too_large}",
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
        let rounds = core::mem::take(&mut self.rounds);
        let calls = pending
            .into_values()
            .filter_map(|p| match p {
                Pending::Call(c) => Some(c),
                _ => None,
            })
            .chain(rounds.into_values().map(|r| r.call));
        for c in calls {
            self.finish(c.call, Err(error(&c.name)), false);
        }
        // Input requests of no call, too: their server is gone.
        let keys: Vec<u64> = self.inputs.keys().copied().collect();
        for key in keys {
            self.withdraw(key, false);
        }
        self.listing = None;
    }
}

fn client_info() -> ClientInfo {
    ClientInfo {
        name: "mcpbox",
        version: env!("CARGO_PKG_VERSION"),
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

/// The tool result for a call the server wants input for when the embedder did
/// not enable input requests: a tool error saying so and how to change it.
fn input_required(name: &str) -> CallResult {
    tool_error(format!(
        "{name}: the server asked for input to run this tool, and input requests are not \
         enabled in this mcpbox (the embedder enables them: Options::input_requests in Rust, \
         `inputRequests: true` in JavaScript)"
    ))
}

/// The tool result for a call whose input requests mcpbox cannot put to the
/// embedder (sampling, roots, URL-mode elicitation).
fn unanswerable(name: &str, why: &str) -> CallResult {
    tool_error(format!(
        "{name}: the server asked for input mcpbox cannot give: {why}"
    ))
}

fn tool_error(text: String) -> CallResult {
    let quoted = serde_json::to_string(&text).unwrap_or_default();
    CallResult {
        is_error: true,
        content: format!(r#"[{{"type":"text","text":{quoted}}}]"#),
        text,
        structured_content: None,
    }
}

/// Whether an `UnsupportedProtocolVersion` error lists the stateless version.
fn offers_stateless(error: &RpcError) -> bool {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions
                .iter()
                .any(|v| v.as_str() == Some(STATELESS_VERSION))
        })
}

/// The smaller of two `ttlMs` hints.
fn min_ttl(current: Option<u64>, page: Option<&Value>) -> Option<u64> {
    match (current, page.and_then(Value::as_u64)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Checks the `x-mcp-header` annotations of a tool's parameters (SEP-2243): each
/// is a non-empty HTTP token, unique regardless of case, on a string, integer or
/// boolean parameter. A tool that breaks a rule is not offered: its calls could
/// not carry the `Mcp-Param-*` headers the server relies on. Returns the
/// (property, header name) pairs.
fn check_param_headers(schema: &str) -> Result<Vec<(String, String)>, String> {
    let schema: Value = serde_json::from_str(schema).map_err(|e| e.to_string())?;
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut headers = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (param, spec) in properties {
        let Some(header) = spec.get("x-mcp-header") else {
            continue;
        };
        let Some(header) = header.as_str() else {
            return Err(format!("on `{param}` it is {header}, not a string"));
        };
        if header.is_empty() {
            return Err(format!("on `{param}` it is empty"));
        }
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if !header.bytes().all(token) {
            return Err(format!(
                "on `{param}`, {header:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
            ));
        }
        let lower = header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!("{header:?} names more than one parameter"));
        }
        seen.push(lower);
        let primitive = matches!(
            spec.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if !primitive {
            return Err(format!(
                "`{param}` is not a string, integer or boolean parameter"
            ));
        }
        headers.push((param.clone(), header.to_string()));
    }
    Ok(headers)
}

/// The `Mcp-Param-*` headers for a call (SEP-2243): each annotated parameter with
/// a non-null argument, as text: a string as is, a number in JSON notation, a
/// boolean as `true`/`false`. The host encodes values that are not plain ASCII.
fn param_headers(annotated: &[(String, String)], arguments: &str) -> Vec<Pair> {
    if annotated.is_empty() {
        return Vec::new();
    }
    let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(arguments) else {
        return Vec::new();
    };
    annotated
        .iter()
        .filter_map(|(param, header)| {
            let value = match arguments.get(param)? {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                // Null means absent; structures cannot be headers (the schema
                // check keeps them out unless the schema could not be compiled).
                _ => return None,
            };
            Some(Pair {
                name: header.clone(),
                value,
            })
        })
        .collect()
}

/// A 64-bit fingerprint of a tool list (every field, with its length, so no two
/// different lists of realistic size share one but by a 2^-64 chance). FxHash's
/// mixing, a word at a time: a 10,000-tool list takes well under a millisecond.
fn fingerprint(tools: &[ToolDef]) -> u64 {
    struct Fx(u64);
    impl Fx {
        fn word(&mut self, w: u64) {
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        fn text(&mut self, t: Option<&str>) {
            let Some(t) = t else {
                return self.word(u64::MAX);
            };
            self.word(t.len() as u64);
            let mut chunks = t.as_bytes().chunks_exact(8);
            for c in &mut chunks {
                self.word(u64::from_le_bytes(c.try_into().unwrap_or_default()));
            }
            let mut last = [0u8; 8];
            last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
            self.word(u64::from_le_bytes(last));
        }
    }
    let mut h = Fx(tools.len() as u64);
    for t in tools {
        h.text(Some(&t.name));
        h.text(t.title.as_deref());
        h.text(t.description.as_deref());
        h.text(Some(&t.input_schema));
        h.text(t.output_schema.as_deref());
        h.text(t.annotations.as_deref());
    }
    h.0
}

fn read_tool(raw: &RawValue) -> Result<ToolDef, String> {
    let t: RawTool = serde_json::from_str(raw.get())
        .map_err(|e| format!("{e} in {}", jsonrpc::truncate(raw.get(), 80)))?;
    let name = match t.name {
        Value::String(n) if !n.is_empty() => n,
        other => return Err(format!("its name is {other}, not a non-empty string")),
    };
    let param_headers = match &t.input_schema {
        Some(schema) if schema.get().contains("x-mcp-header") => check_param_headers(schema.get())
            .map_err(|e| format!("`{name}` has an invalid x-mcp-header: {e}"))?,
        _ => Vec::new(),
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
        param_headers,
    })
}

/// A `tools/call` result; `None` when it is `input_required`.
fn read_call_result(name: &str, raw: &RawValue) -> Result<Option<CallResult>, CallError> {
    let malformed = |why: String| {
        CallError::Protocol(format!(
            "{name}: the server sent a malformed tools/call result ({why})"
        ))
    };
    let result: RawCallResult =
        serde_json::from_str(raw.get()).map_err(|e| malformed(e.to_string()))?;
    match result_kind(result.result_type.as_ref()) {
        ResultKind::Complete => {}
        ResultKind::InputRequired => return Ok(None),
        ResultKind::Other(kind) => return Err(malformed(format!("unknown resultType {kind:?}"))),
    }
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
    Ok(Some(CallResult {
        is_error: result.is_error.unwrap_or(false),
        text,
        content,
        structured_content: result
            .structured_content
            .map(|s| s.get().to_string())
            .filter(|s| s != "null"),
    }))
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

    fn discover_result(list_changed: bool) -> Value {
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": list_changed}},
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.0"}}
        })
    }

    /// The `_meta` every stateless request must carry.
    fn assert_stateless_meta(request: &Value) {
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{request}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({}),
            "{request}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "mcpbox",
            "{request}"
        );
    }

    /// A stateless client through discovery and a one-page listing of `tools`.
    fn stateless_ready(tools: &[&str], list_changed: bool) -> Client {
        stateless_ready_from(Client::new("modern"), tools, list_changed)
    }

    fn stateless_ready_from(mut c: Client, tools: &[&str], list_changed: bool) -> Client {
        c.detect(None, 0);
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(list_changed)}),
            0,
        );
        sent(&mut c);
        let list: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": list, "ttlMs": 0, "cacheScope": "private"}}),
            0,
        );
        assert_eq!(c.phase(), Phase::Ready);
        c.take_events();
        c
    }

    #[test]
    fn discovery_finds_the_stateless_era() {
        let mut c = Client::new("modern");
        c.detect(None, 0);
        assert_eq!(c.phase(), Phase::Discovering);
        let out = sent(&mut c);
        assert_eq!(out.len(), 1);
        let (probe, meta) = &out[0];
        assert_eq!(probe["method"], "server/discover");
        assert_stateless_meta(probe);
        assert_eq!(meta.method.as_deref(), Some("server/discover"));
        assert_eq!(
            meta.protocol_version.as_deref(),
            Some(STATELESS_VERSION),
            "sets MCP-Protocol-Version"
        );

        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(true)}),
            0,
        );
        assert_eq!(c.era(), Era::Stateless);
        assert_eq!(c.protocol_version(), Some("2026-07-28"));
        assert_eq!(
            c.server_info().name.as_deref(),
            Some("modern"),
            "from the result's _meta"
        );
        let out = sent(&mut c);
        assert_eq!(
            out.len(),
            1,
            "no initialize, no notifications/initialized: {out:?}"
        );
        assert_eq!(out[0].0["method"], "tools/list");
        assert_stateless_meta(&out[0].0);

        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": [tool("a")], "nextCursor": "p2", "ttlMs": 0, "cacheScope": "private"}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["params"]["cursor"], "p2");
        assert_stateless_meta(&out[0].0);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "tools": [tool("b")], "ttlMs": 0, "cacheScope": "private"}}),
            0,
        );
        assert!(matches!(&c.take_events()[..], [ClientEvent::Ready(t)] if t.len() == 2));
        // Tool-list changes come through a subscription.
        let out = sent(&mut c);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0["method"], "subscriptions/listen");
        assert_eq!(
            out[0].0["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        assert_stateless_meta(&out[0].0);
        assert_eq!(c.next_deadline(), None, "a subscription has no deadline");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": {"toolsListChanged": true}}}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 4}}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "tools/list", "a change re-lists");

        // Calls carry the progress token and the era's _meta.
        let mut c = stateless_ready(&["echo"], false);
        c.start_call(1, "mcp__modern__echo", "echo", r#"{"text":"hi"}"#, 1000, 0);
        let out = sent(&mut c);
        let (call, meta) = &out[0];
        assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
        assert_stateless_meta(call);
        assert_eq!(meta.name.as_deref(), Some("echo"), "for Mcp-Name");
        assert_eq!(meta.protocol_version.as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn legacy_servers_fall_back_to_initialize() {
        let not_found = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}});
        // Method not found, an empty result (a server answering anything with {}),
        // and versions mcpbox does not speak all mean the legacy handshake.
        for answer in [
            not_found,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2099-01-01"]}}),
        ] {
            let mut c = Client::new("old");
            c.detect(None, 0);
            sent(&mut c);
            feed(&mut c, answer.clone(), 0);
            assert_eq!(c.phase(), Phase::Initializing, "{answer}");
            assert_eq!(c.era(), Era::Legacy);
            let out = sent(&mut c);
            assert_eq!(out[0].0["method"], "initialize");
            assert_eq!(
                out[0].1.protocol_version, None,
                "no MCP-Protocol-Version before negotiation"
            );
            assert!(out[0].0["params"].get("_meta").is_none());
            feed(
                &mut c,
                json!({"jsonrpc": "2.0", "id": 2, "result": init_result("2025-11-25")}),
                0,
            );
            let out = sent(&mut c);
            assert_eq!(out[0].0["method"], "notifications/initialized");
            assert_eq!(out[1].0["method"], "tools/list");
            assert!(
                out[1].0.get("params").is_none(),
                "legacy requests carry no _meta"
            );
            assert!(
                c.take_events().is_empty(),
                "falling back is not worth a warning"
            );
        }
    }

    #[test]
    fn an_unsupported_version_error_is_retried_once() {
        let unsupported = |id: i64| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "x"}}})
        };
        let mut c = Client::new("picky");
        c.detect(None, 0);
        sent(&mut c);
        feed(&mut c, unsupported(1), 0);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "server/discover", "asked again");
        assert_stateless_meta(&out[0].0);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": discover_result(false)}),
            0,
        );
        assert_eq!(c.era(), Era::Stateless);
        // Rejected twice: the legacy handshake.
        let mut c = Client::new("picky");
        c.detect(None, 0);
        feed(&mut c, unsupported(1), 0);
        feed(&mut c, unsupported(2), 0);
        let methods: Vec<Value> = sent(&mut c)
            .into_iter()
            .map(|(m, _)| m["method"].clone())
            .collect();
        assert_eq!(
            methods,
            ["server/discover", "server/discover", "initialize"]
        );
    }

    #[test]
    fn a_silent_probe_gives_way_to_initialize() {
        let mut c = Client::new("quiet");
        c.detect(None, 100);
        sent(&mut c);
        assert_eq!(c.next_deadline(), Some(100 + PROBE_TIMEOUT_MS));
        c.tick(100 + PROBE_TIMEOUT_MS - 1);
        assert!(sent(&mut c).is_empty());
        c.tick(100 + PROBE_TIMEOUT_MS);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "initialize");
        // A late answer to the probe is dropped quietly.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(false)}),
            6000,
        );
        assert_eq!(c.era(), Era::Legacy);
        assert_eq!(c.phase(), Phase::Initializing);
        assert_eq!(c.stats().unknown_responses, 0);
        assert!(c.take_events().is_empty());
    }

    #[test]
    fn a_legacy_hint_skips_the_probe_but_recovers_when_stale() {
        let mut c = Client::new("known");
        c.detect(Some(Era::Legacy), 0);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "initialize");
        // The server moved on to 2026-07-28 and refuses initialize: discover instead.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no initialize"}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "server/discover");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": discover_result(false)}),
            0,
        );
        assert_eq!(c.era(), Era::Stateless);
        assert_eq!(Era::parse(Era::Stateless.as_str()), Some(Era::Stateless));
        assert_eq!(Era::parse(Era::Legacy.as_str()), Some(Era::Legacy));
        assert_eq!(Era::parse("2025-11-25"), None);
    }

    #[test]
    fn input_required_results_are_clear_tool_errors() {
        let mut c = stateless_ready(&["book"], false);
        c.start_call(7, "mcp__modern__book", "book", "{}", 1000, 0);
        let id = sent(&mut c)[0].0["id"].clone();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "input_required",
                "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
                "requestState": "opaque"}}),
            0,
        );
        let events = c.take_events();
        let [
            ClientEvent::Completed(Completion {
                call: 7,
                outcome: Ok(r),
            }),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert!(r.is_error);
        assert!(
            r.text.contains("asked for input") && r.text.contains("not enabled"),
            "{r:?}"
        );
        let content: Value = serde_json::from_str(&r.content).unwrap();
        assert_eq!(content[0]["text"], r.text.as_str());
        // An explicit "complete" is an ordinary result; anything else is not understood.
        c.start_call(8, "mcp__modern__book", "book", "{}", 1000, 0);
        c.start_call(9, "mcp__modern__book", "book", "{}", 1000, 0);
        let ids: Vec<Value> = sent(&mut c)
            .into_iter()
            .map(|(m, _)| m["id"].clone())
            .collect();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": ids[0], "result": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": ids[1], "result": {"resultType": "task", "content": []}}),
            0,
        );
        let events = c.take_events();
        assert!(
            matches!(&events[0], ClientEvent::Completed(Completion { call: 8, outcome: Ok(r) }) if r.text == "ok" && !r.is_error)
        );
        assert!(
            matches!(&events[1], ClientEvent::Completed(Completion { call: 9, outcome: Err(CallError::Protocol(m)) }) if m.contains("unknown resultType \"task\"")),
            "{events:?}"
        );
    }

    #[test]
    fn tools_with_invalid_param_headers_are_skipped() {
        let with = |props: Value| json!({"name": "t", "inputSchema": {"type": "object", "properties": props}});
        let ok = with(
            json!({"region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"}, "b": {"type": "boolean", "x-mcp-header": "x_B-1"},
            "plain": {"type": "number"}}),
        );
        assert!(read_tool(&RawValue::from_string(ok.to_string()).unwrap()).is_ok());
        for (props, why) in [
            (
                json!({"v": {"type": "string", "x-mcp-header": ""}}),
                "empty",
            ),
            (
                json!({"v": {"type": "object", "x-mcp-header": "V"}}),
                "not a string, integer or boolean",
            ),
            (
                json!({"v": {"type": "array", "x-mcp-header": "V"}}),
                "not a string, integer or boolean",
            ),
            (
                json!({"v": {"type": "null", "x-mcp-header": "V"}}),
                "not a string, integer or boolean",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "My Header"}}),
                "not a header name",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "A:B"}}),
                "not a header name",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Régión"}}),
                "not a header name",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "A\u{1}"}}),
                "not a header name",
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}),
                "more than one",
            ),
        ] {
            let e = read_tool(&RawValue::from_string(with(props.clone()).to_string()).unwrap())
                .unwrap_err();
            assert!(
                e.contains(why) && e.contains("x-mcp-header"),
                "{props}: {e}"
            );
        }
    }

    /// The key of the one `InputRequested` event in `events`, checked against `call`.
    fn input_key(events: &[ClientEvent], call: Option<u64>) -> u64 {
        let asked: Vec<&InputRequest> = events
            .iter()
            .filter_map(|e| match e {
                ClientEvent::InputRequested(r) => Some(r),
                _ => None,
            })
            .collect();
        let [request] = asked[..] else {
            panic!("{events:?}")
        };
        assert_eq!(request.call, call, "{request:?}");
        request.id
    }

    fn elicit_params() -> Value {
        json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"}, "age": {"type": "integer"}}}})
    }

    #[test]
    fn legacy_elicitation_goes_to_the_embedder_and_back() {
        let mut c = Client::new("demo");
        c.enable_input_requests();
        c.begin();
        let init = &sent(&mut c)[0].0;
        assert_eq!(
            init["params"]["capabilities"],
            json!({"elicitation": {"form": {}}})
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("ask")]}}),
            0,
        );
        c.take_events();
        c.start_call(5, "mcp__demo__ask", "ask", "{}", 10_000, 0);
        let call_id = sent(&mut c)[0].0["id"].clone();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": elicit_params()}),
            10,
        );
        let events = c.take_events();
        let key = input_key(&events, Some(5));
        let ClientEvent::InputRequested(request) = &events[0] else {
            unreachable!()
        };
        assert_eq!(request.tool.as_deref(), Some("mcp__demo__ask"));
        assert_eq!(request.message, "Who are you?");
        assert_eq!(request.server, "demo");
        // A wrong answer is refused and the request stays open.
        let e = c
            .answer_input(key, &InputAnswer::Accept(r#"{"age": "x"}"#.into()))
            .unwrap_err();
        assert!(e.contains("/age"), "{e}");
        assert!(sent(&mut c).is_empty());
        c.answer_input(key, &InputAnswer::Accept(r#"{"age": 7}"#.into()))
            .unwrap();
        let out = sent(&mut c);
        assert_eq!(
            out[0].0,
            json!({"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept",
                "content": {"name": "John Doe", "age": 7}}})
        );
        assert!(
            c.answer_input(key, &InputAnswer::Decline)
                .unwrap_err()
                .contains("no input request")
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call_id, "result": {"content": []}}),
            20,
        );
        assert!(matches!(
            &c.take_events()[..],
            [ClientEvent::Completed(Completion {
                call: 5,
                outcome: Ok(_)
            })]
        ));
    }

    #[test]
    fn legacy_elicitation_is_refused_unless_enabled_and_withdrawn_with_its_call() {
        let mut c = ready(&["ask"]);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": elicit_params()}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["error"]["code"], -32601);

        let mut c = Client::new("demo");
        c.enable_input_requests();
        c.begin();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("ask")]}}),
            0,
        );
        sent(&mut c);
        c.take_events();
        c.start_call(1, "mcp__demo__ask", "ask", "{}", 1_000, 0);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": elicit_params()}),
            0,
        );
        let key = input_key(&c.take_events(), Some(1));
        sent(&mut c);
        // Nobody answers: the call times out and its request is withdrawn, the
        // server told `cancel` so it stops waiting too.
        c.tick(1_000);
        let events = c.take_events();
        assert!(
            events.contains(&ClientEvent::InputWithdrawn(key)),
            "{events:?}"
        );
        assert!(
            events.iter().any(|e| matches!(e, ClientEvent::Completed(Completion { call: 1, outcome: Err(CallError::Timeout(m)) }) if m.contains("input request was not answered"))),
            "{events:?}"
        );
        let out = sent(&mut c);
        assert!(
            out.iter()
                .any(|(m, _)| m["id"] == "e" && m["result"]["action"] == "cancel"),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|(m, _)| m["method"] == "notifications/cancelled")
        );
        // A URL-mode request is refused with the reason.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": "u", "method": "elicitation/create", "params": {"mode": "url", "url": "https://x", "message": "go"}}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["error"]["code"], -32602);
        assert!(
            out[0].0["error"]["message"]
                .as_str()
                .unwrap()
                .contains("form mode only")
        );
    }

    #[test]
    fn input_required_is_retried_with_the_answers_and_the_exact_state() {
        let mut c = Client::new("modern");
        c.enable_input_requests();
        let mut c = stateless_ready_from(c, &["book"], false);
        c.start_call(7, "mcp__modern__book", "book", r#"{"n":1}"#, 10_000, 0);
        let (first, _) = sent(&mut c).remove(0);
        assert_eq!(
            first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}}})
        );
        let state = json!("{\"nonce\":\"x y\"}");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": first["id"], "result": {"resultType": "input_required",
                "inputRequests": {"a": {"method": "elicitation/create", "params": elicit_params()},
                                  "b": {"method": "elicitation/create", "params": elicit_params()}},
                "requestState": state}}),
            5,
        );
        let events = c.take_events();
        let keys: Vec<u64> = events
            .iter()
            .map(|e| match e {
                ClientEvent::InputRequested(r) if r.call == Some(7) => r.id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(keys.len(), 2);
        assert_eq!(c.pending_calls(), 1);
        c.answer_input(keys[0], &InputAnswer::Decline).unwrap();
        assert!(sent(&mut c).is_empty(), "waits for every answer");
        c.answer_input(keys[1], &InputAnswer::Accept("{}".into()))
            .unwrap();
        let (retry, meta) = sent(&mut c).remove(0);
        assert_ne!(retry["id"], first["id"]);
        assert_eq!(meta.method.as_deref(), Some("tools/call"));
        assert_eq!(retry["params"]["name"], "book");
        assert_eq!(retry["params"]["arguments"], json!({"n": 1}));
        assert_eq!(retry["params"]["requestState"], state);
        assert_eq!(
            retry["params"]["inputResponses"],
            json!({"a": {"action": "decline"}, "b": {"action": "accept", "content": {"name": "John Doe"}}})
        );
        // A second round without requestState: the retry carries none.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": retry["id"], "result": {"resultType": "input_required",
                "inputRequests": {"c": {"method": "elicitation/create", "params": elicit_params()}}}}),
            6,
        );
        let key = input_key(&c.take_events(), Some(7));
        c.answer_input(key, &InputAnswer::Cancel).unwrap();
        let (again, _) = sent(&mut c).remove(0);
        assert!(again["params"].get("requestState").is_none(), "{again}");
        assert_eq!(
            again["params"]["inputResponses"],
            json!({"c": {"action": "cancel"}})
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": again["id"], "result": {"content": [{"type": "text", "text": "booked"}]}}),
            7,
        );
        assert!(
            matches!(&c.take_events()[..], [ClientEvent::Completed(Completion { call: 7, outcome: Ok(r) })] if r.text == "booked")
        );
    }

    #[test]
    fn a_call_waiting_for_input_times_out_or_is_cancelled_and_withdraws_it() {
        let mut c = Client::new("modern");
        c.enable_input_requests();
        let mut c = stateless_ready_from(c, &["book"], false);
        let ask = |c: &mut Client, call: u64| {
            c.start_call(call, "mcp__modern__book", "book", "{}", 1_000, 0);
            let (m, _) = sent(c).remove(0);
            feed(
                c,
                json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "input_required",
                    "inputRequests": {"a": {"method": "elicitation/create", "params": elicit_params()}}}}),
                0,
            );
            input_key(&c.take_events(), Some(call))
        };
        let k1 = ask(&mut c, 1);
        let k2 = ask(&mut c, 2);
        assert_eq!(c.next_deadline(), Some(1_000));
        assert!(c.cancel(2));
        assert_eq!(
            c.take_events(),
            vec![
                ClientEvent::InputWithdrawn(k2),
                ClientEvent::Completed(Completion {
                    call: 2,
                    outcome: Err(CallError::Cancelled)
                })
            ]
        );
        assert!(
            sent(&mut c).is_empty(),
            "nothing is in flight on the server to cancel"
        );
        c.tick(1_000);
        let events = c.take_events();
        assert_eq!(events[0], ClientEvent::InputWithdrawn(k1));
        assert!(
            matches!(&events[1], ClientEvent::Completed(Completion { call: 1, outcome: Err(CallError::Timeout(m)) }) if m.contains("waiting for an answer")),
            "{events:?}"
        );
        assert!(c.answer_input(k1, &InputAnswer::Decline).is_err());
        // Input mcpbox cannot give ends the call with the reason.
        c.start_call(3, "mcp__modern__book", "book", "{}", 1_000, 0);
        let (m, _) = sent(&mut c).remove(0);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "input_required",
                "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}}}}),
            0,
        );
        let events = c.take_events();
        assert!(
            matches!(&events[..], [ClientEvent::Completed(Completion { call: 3, outcome: Ok(r) })] if r.is_error && r.text.contains("sampling/createMessage")),
            "{events:?}"
        );
    }

    #[test]
    fn annotated_arguments_go_to_the_host_as_param_headers() {
        let mut c = Client::new("demo");
        c.begin();
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
            0,
        );
        sent(&mut c);
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "gone": {"type": "boolean", "x-mcp-header": "Gone"},
            "nil": {"type": "string", "x-mcp-header": "Nil"},
            "plain": {"type": "string"}}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "t", "inputSchema": schema}]}}),
            0,
        );
        c.start_call(
            1,
            "mcp__demo__t",
            "t",
            r#"{"region":" Zürich ","n":42,"b":false,"nil":null,"plain":"p"}"#,
            1_000,
            0,
        );
        let out = sent(&mut c);
        let pairs: Vec<(&str, &str)> = out[0]
            .1
            .param_headers
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect();
        // Literal text: the host encodes (here: base64 for the spaces and the ü).
        assert_eq!(pairs, [("B", "false"), ("N", "42"), ("Region", " Zürich ")]);
        // Other messages carry none.
        assert!(
            out.iter()
                .all(|(m, meta)| m["method"] == "tools/call" || meta.param_headers.is_empty())
        );
    }

    #[test]
    fn a_ttl_hint_refreshes_the_list_when_nothing_subscribes() {
        let mut c = Client::new("cached");
        c.detect(None, 0);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(false)}),
            0,
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": [tool("a")], "ttlMs": 60000, "cacheScope": "public"}}),
            500,
        );
        sent(&mut c);
        c.take_events();
        assert_eq!(c.next_deadline(), Some(60_500));
        c.tick(60_499);
        assert!(sent(&mut c).is_empty());
        c.tick(60_500);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "tools/list");
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": out[0].0["id"], "result": {"resultType": "complete", "tools": [tool("a"), tool("b")], "ttlMs": 10}}),
            61_000,
        );
        assert!(matches!(&c.take_events()[..], [ClientEvent::ToolsChanged(t)] if t.len() == 2));
        assert_eq!(
            c.next_deadline(),
            Some(61_000 + MIN_TTL_MS),
            "never more often than once a second"
        );
    }
}
