//! The public data types of the embedding API, converted from the generated
//! WIT types so that embedders never depend on generated code.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The life cycle of one configured server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// Connecting, initialising or listing tools.
    Starting,
    /// Ready: its tools are in the registry.
    Connected,
    /// Could not start or connect, or lost; see [`ServerStatus::error`].
    Failed,
    /// Shut down on purpose, or disabled in the configuration.
    Closed,
}

/// What the registry knows about one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The configured name (the key under `mcpServers`).
    pub name: String,
    /// Where the server is in its life cycle.
    pub state: ServerState,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// Why the server failed, with its last stderr lines when there are any.
    pub error: Option<String>,
    /// How many tools the server contributes to the registry.
    pub tool_count: u32,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo.name` as the server reported it.
    pub server_name: Option<String>,
    /// `serverInfo.version` as the server reported it.
    pub server_version: Option<String>,
}

/// What the host knows about a server's latest connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDiagnostics {
    /// The last lines the server wrote to stderr, oldest first (and non-JSON
    /// lines it wrote to stdout, marked as such).
    pub stderr_tail: Vec<String>,
    /// Lines on stdout that were not JSON and were skipped.
    pub skipped_lines: u64,
    /// Messages dropped for exceeding the size cap.
    pub oversized_messages: u64,
    /// How the process ended ("exit code 1", "signal 9"), once it has.
    pub exit_status: Option<String>,
    /// The sandbox the process runs in (the kernel mechanism and the grants),
    /// when its entry has a `sandbox` block.
    pub sandbox: Option<String>,
}

/// One tool in the registry.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The namespaced name to call it by: `mcp__{server}__{tool}`.
    pub name: String,
    /// The configured server name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// A human-readable title, if the server gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool's description.
    pub description: Option<String>,
    /// The input schema exactly as the server sent it.
    pub input_schema: Box<RawValue>,
    /// The output schema exactly as the server sent it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<RawValue>>,
    /// The tool's annotations, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Box<RawValue>>,
}

/// The result of a tool call as the server returned it.
///
/// `content` and `structuredContent` are the server's JSON text, exactly: a
/// [`Value`] cannot hold everything JSON can (nesting deeper than serde_json's 128
/// levels, numbers beyond `f64` such as `1e999`), and a result that parsed into
/// one would come out changed or as `null`. Parse them where you need to
/// ([`CallResult::structured_value`]), knowing that limit.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    /// The server reported that the tool failed.
    pub is_error: bool,
    /// The text content blocks joined with "\n".
    pub text: String,
    /// The full `content` list, as the server sent it.
    pub content: Box<RawValue>,
    /// `structuredContent`, if any, as the server sent it.
    pub structured_content: Option<Box<RawValue>>,
}

impl CallResult {
    /// `structuredContent` as a [`Value`], if there is one. Err when it holds what
    /// a `Value` cannot (deeper than 128 levels, a number beyond `f64`); the text
    /// in [`CallResult::structured_content`] has it exactly.
    ///
    /// `structuredContent` is open JSON in MCP (its shape is the tool's output
    /// schema's): this parses it as any JSON and reads none of it.
    pub fn structured_value(&self) -> Result<Option<Value>, serde_json::Error> {
        self.structured_content
            .as_deref()
            .map(|raw| serde_json::from_str(raw.get()))
            .transpose()
    }
}

/// Equal when the texts are: `RawValue` has no equality of its own.
impl PartialEq for CallResult {
    fn eq(&self, other: &Self) -> bool {
        self.is_error == other.is_error
            && self.text == other.text
            && self.content.get() == other.content.get()
            && self.structured_content.as_deref().map(RawValue::get)
                == other.structured_content.as_deref().map(RawValue::get)
    }
}

/// Why a call produced no tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool of that name is in the registry.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// The arguments are not a JSON object or do not satisfy the tool's input schema.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool's server is not connected, or went away during the call.
    #[error("{0}")]
    ServerUnavailable(String),
    /// No answer within the timeout; the server was sent `notifications/cancelled`.
    #[error("{0}")]
    Timeout(String),
    /// The call was cancelled.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error or a malformed result.
    #[error("{0}")]
    Protocol(String),
    /// The configuration's permission rules refuse the call (the message names
    /// the rule), or an `ask` rule's approval was refused or could not be asked for.
    #[error("{0}")]
    Denied(String),
    /// The runtime itself stopped (shut down, or the guest trapped).
    #[error("the mcpbox runtime stopped: {0}")]
    Runtime(String),
}

/// A change reported by the registry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A server changed state.
    Status(ServerStatus),
    /// A server's tool list changed.
    ToolsChanged(String),
    /// A warning (a name collision, a skipped tool, an ignored message).
    Warning(String),
    /// A log message a server sent.
    Log {
        /// The server's configured name.
        server: String,
        /// The MCP log level.
        level: String,
        /// The message.
        message: String,
    },
    /// A server asks for input during a call: MCP elicitation (`elicitation/create`,
    /// and `input_required` results in 2026-07-28). Only with
    /// [`Options::input_requests`](crate::Options::input_requests); answer with
    /// [`Runtime::answer_input`](crate::Runtime::answer_input). The call waits, its
    /// timeout running, until all its input requests are answered.
    #[doc(alias = "elicitation")]
    #[doc(alias = "elicitation/create")]
    #[doc(alias = "input_required")]
    InputRequested(InputRequest),
    /// The input request (MCP elicitation) of this id needs no answer any more
    /// (its call ended, or the server withdrew it).
    #[doc(alias = "elicitation")]
    InputWithdrawn(u64),
    /// The input request (or approval) of this id was answered with
    /// [`Runtime::answer_input`](crate::Runtime::answer_input): the first answer
    /// wins, and whoever else shows the request (another page of the dashboard)
    /// learns here that it needs no answer any more.
    #[doc(alias = "elicitation")]
    InputAnswered(u64),
    /// A server asks the embedder's model for a message during a call: MCP
    /// sampling (`sampling/createMessage`; in 2026-07-28 inside an
    /// `input_required` result). Only with
    /// [`Options::sampling`](crate::Options::sampling); answer with
    /// [`Runtime::answer_input`](crate::Runtime::answer_input):
    /// [`InputAnswer::Accept`] with a `CreateMessageResult`, or
    /// [`InputAnswer::Decline`] to refuse. The call waits, its timeout running;
    /// withdrawn with [`Event::InputWithdrawn`] like an input request.
    #[doc(alias = "sampling")]
    #[doc(alias = "sampling/createMessage")]
    #[doc(alias = "createMessage")]
    SamplingRequested(SamplingRequest),
    /// A remote server needs OAuth authorization. With
    /// [`Options::authorize_on_demand`](crate::Options::authorize_on_demand),
    /// `url` is the authorization URL to show the user (the request waits for the
    /// redirect to mcpbox's loopback listener); otherwise it is `None` and the
    /// server needs `mcpbox login SERVER` (or tokens in the
    /// [`TokenStore`](crate::TokenStore)). Never carries a credential.
    #[doc(alias = "oauth")]
    AuthorizationRequired {
        /// The server's configured name.
        server: String,
        /// The authorization URL, when mcpbox is waiting for the user to open it.
        url: Option<String>,
    },
    /// A call ended, or was refused before it started: what the permission rules
    /// decided and how it went (see [`Options::audit_events`](crate::Options::audit_events)
    /// and [`Options::audit_file`](crate::Options::audit_file)).
    Audit(AuditRecord),
    /// A resource followed with
    /// [`Runtime::subscribe_resource`](crate::Runtime::subscribe_resource)
    /// changed (`notifications/resources/updated`): read it again to see how.
    #[doc(alias = "notifications/resources/updated")]
    #[doc(alias = "resources/subscribe")]
    ResourceUpdated {
        /// The server's configured name.
        server: String,
        /// The resource's URI, as its server knows it.
        uri: String,
    },
    /// A server's resource list changed (`notifications/resources/list_changed`);
    /// carries the server's configured name.
    #[doc(alias = "notifications/resources/list_changed")]
    ResourcesChanged(String),
    /// A server's prompt list changed (`notifications/prompts/list_changed`);
    /// carries the server's configured name.
    #[doc(alias = "notifications/prompts/list_changed")]
    PromptsChanged(String),
    /// A server asks the user to open a URL during a call: MCP URL-mode
    /// elicitation. Only with
    /// [`Options::url_elicitation`](crate::Options::url_elicitation); show the
    /// URL (mcpbox never opens it) and answer with
    /// [`Runtime::answer_input`](crate::Runtime::answer_input). The call waits,
    /// its timeout running; withdrawn with [`Event::InputWithdrawn`].
    #[doc(alias = "elicitation")]
    UrlElicitationRequested(UrlElicitationRequest),
    /// A call that its server runs as a task (MCP 2025-11-25 tasks: its tool's
    /// `execution.taskSupport` is `required`) changed status. mcpbox polls the
    /// task (`tasks/get`, at the server's `pollInterval`) and fetches its result
    /// (`tasks/result`), which the call returns as any call's; dropping the
    /// call's future (which cancels it) sends `tasks/cancel`.
    #[doc(alias = "tasks/get")]
    #[doc(alias = "taskSupport")]
    TaskStatus {
        /// The server's configured name.
        server: String,
        /// The registry name of the call's tool.
        tool: String,
        /// The server's task id.
        task_id: String,
        /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
        status: String,
        /// The server's `statusMessage`, if any.
        message: Option<String>,
    },
    /// A tool no longer matches the definition pinned when it was first seen
    /// (its description, schemas or behaviour hints changed since); its
    /// server's `onToolChange` decided what happens to it: `warn` (it stays, the
    /// new definition is pinned), `ask` (its calls ask first) or `block` (neither
    /// listed nor callable) until `mcpbox trust` accepts the change.
    #[doc(alias = "onToolChange")]
    #[doc(alias = "rug pull")]
    ToolChanged {
        /// The server's configured name.
        server: String,
        /// The tool's own name on its server.
        tool: String,
        /// Its registry name.
        name: String,
        /// What changed: `description`, `inputSchema`, `outputSchema`, `annotations`.
        changed: Vec<String>,
        /// The server's `onToolChange`: `warn`, `ask` or `block`.
        policy: String,
        /// Why its calls are refused or asked about, for a person.
        reason: String,
    },
    /// The runtime stopped, for the reason given: shut down, or a guest that kept
    /// failing (then every server is shown failed with this reason, the tool
    /// list is empty and calls fail with [`CallError::Runtime`]). The last event.
    Stopped(String),
    /// A new configuration was applied (by [`Runtime::reload`](crate::Runtime::reload),
    /// [`Runtime::reload_text`](crate::Runtime::reload_text) or the file watcher of
    /// [`Options::watch_config`](crate::Options::watch_config)). Comes after the
    /// status events of the servers it stopped and started.
    #[doc(alias = "hot reload")]
    Reloaded(ReloadReport),
    /// A new configuration was not applied: the running one stays. The error says
    /// why (the file's line and column for text that does not parse; a file that
    /// was deleted or cannot be read).
    ReloadFailed {
        /// The file or source the configuration came from.
        origin: String,
        /// What was wrong.
        error: String,
    },
}

/// What a configuration reload changed (see [`Event::Reloaded`]). Each list
/// holds server names in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadReport {
    /// The file or source the configuration came from.
    pub origin: String,
    /// Not configured before: started unless disabled.
    pub added: Vec<String>,
    /// No longer configured: shut down; their calls in flight failed with
    /// [`CallError::ServerUnavailable`] naming the reload.
    pub removed: Vec<String>,
    /// Their entry changed (anything but the timeouts): the old connection was
    /// closed (its calls in flight failed naming the reload) and the new entry
    /// started unless disabled.
    pub restarted: Vec<String>,
    /// Their entry changed only in `startupTimeoutMs` / `toolTimeoutMs`: still
    /// running; the new values apply from the next connect and call.
    pub updated: Vec<String>,
    /// Their entry is the same: still running, calls in flight untouched.
    pub unchanged: Vec<String>,
    /// Their new entry has a problem (in `issues`): the running definition was kept.
    pub kept: Vec<String>,
    /// Every problem in the new configuration.
    pub issues: Vec<ConfigIssue>,
    /// How many file-system events the watcher folded into this reload (a save
    /// storm is applied once); 0 for a reload that was asked for.
    pub file_events: u32,
}

impl ReloadReport {
    /// Whether the reload started or stopped anything, or changed a setting.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.restarted.is_empty()
            && self.updated.is_empty())
    }
}

/// One call, as the audit trail records it; one JSON line of the audit file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// When the host learnt the call ended (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// The call's handle in the guest; `None` when it was refused before it started.
    pub call: Option<u64>,
    /// The configured server name (empty when no tool of that name was found).
    pub server: String,
    /// The namespaced tool name.
    pub tool: String,
    /// The permission profile the caller used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// `allow`, `ask` or `deny`; `None` when no tool of that name was found.
    pub decision: Option<String>,
    /// The rule that decided, naming its field and file.
    pub rule: Option<String>,
    /// For `ask`: `once`, `session`, `session-earlier`, `refused`, `unanswered`,
    /// `withdrawn` or `nobody`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// `ok`, `tool-error`, or the error's kind (`denied`, `timeout`, …).
    pub outcome: String,
    /// From the call's start to its end, approval included.
    pub duration_ms: u64,
    /// The arguments, when the trail records them (`audit.arguments`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// A server's request for input from the user: MCP elicitation
/// (`elicitation/create`, and `input_required` results in 2026-07-28), form mode.
///
/// mcpbox calls it an input request because both eras arrive as the same thing
/// for the embedder; the MCP field names are kept (`message`, `requested_schema`).
#[doc(alias = "elicitation")]
#[doc(alias = "elicitation/create")]
#[doc(alias = "input_required")]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    /// The id [`Runtime::answer_input`](crate::Runtime::answer_input) takes.
    pub id: u64,
    /// The configured server name.
    pub server: String,
    /// The namespaced name of the tool whose call asks, when known.
    pub tool: Option<String>,
    /// What the server asks, to show the user.
    pub message: String,
    /// The JSON Schema of the object wanted: flat properties, maybe with defaults.
    pub requested_schema: Value,
    /// Set when mcpbox itself asks, because an `ask` permission rule covers the
    /// call (see [`Options::approvals`](crate::Options::approvals)); `None` for a
    /// server's request.
    pub approval: Option<ApprovalRequest>,
}

/// A server's request for a message from the model (MCP sampling,
/// `sampling/createMessage`): see [`Event::SamplingRequested`].
#[doc(alias = "sampling")]
#[doc(alias = "sampling/createMessage")]
#[doc(alias = "CreateMessageRequest")]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingRequest {
    /// The id [`Runtime::answer_input`](crate::Runtime::answer_input) takes.
    pub id: u64,
    /// The configured server name.
    pub server: String,
    /// The namespaced name of the tool whose call asks, when known. A request
    /// that belongs to no call is refused after 60 s unanswered.
    pub tool: Option<String>,
    /// The request's params as the server sent them: `messages`, `maxTokens`,
    /// and maybe `systemPrompt`, `temperature`, `stopSequences`,
    /// `modelPreferences`, `includeContext`, `metadata`, `tools`, `toolChoice`.
    pub params: Value,
}

/// A server's request for the user to open a URL (MCP URL-mode elicitation),
/// from [`Event::UrlElicitationRequested`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlElicitationRequest {
    /// The id [`Runtime::answer_input`](crate::Runtime::answer_input) takes.
    pub id: u64,
    /// The configured server name.
    pub server: String,
    /// The namespaced name of the tool whose call asks, when known.
    pub tool: Option<String>,
    /// Why the server asks, to show the user.
    pub message: String,
    /// The URL to show the user (http or https, as the server sent it).
    pub url: String,
    /// The server's id for this elicitation.
    pub elicitation_id: String,
}

/// What an approval is asked for: an `ask` permission rule covers a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The rule that asks, naming its field and file.
    pub rule: String,
    /// The call's arguments, checked against the tool's input schema.
    pub arguments: Value,
}

/// The answer to an [`InputRequest`]: the result of an MCP elicitation
/// (`elicitation/create`, and `input_required` results in 2026-07-28), whose
/// `action` is `accept`, `decline` or `cancel`.
#[doc(alias = "elicitation")]
#[doc(alias = "ElicitResult")]
#[derive(Debug, Clone, PartialEq)]
pub enum InputAnswer {
    /// The user answered with this JSON object; properties it leaves out get the
    /// requested schema's defaults, and the result must satisfy the schema.
    Accept(Value),
    /// The user said no.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

impl InputAnswer {
    /// Approves this one call (the answer to an approval request).
    pub fn approve_once() -> InputAnswer {
        InputAnswer::Accept(serde_json::json!({ "approve": "once" }))
    }

    /// Approves this call and every later call of the same tool until the
    /// configuration is reloaded (the answer to an approval request).
    pub fn approve_for_session() -> InputAnswer {
        InputAnswer::Accept(serde_json::json!({ "approve": "session" }))
    }
}

/// A directory MCP servers may work in (MCP roots; see
/// [`Options::roots`](crate::Options::roots) and
/// [`Runtime::set_roots`](crate::Runtime::set_roots)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// An absolute path or a `file://` URI (the guest turns a path into one).
    pub uri: String,
    /// A name to show for it.
    pub name: Option<String>,
}

impl Root {
    /// A root for a directory: an absolute path or a `file://` URI.
    pub fn new(uri: impl Into<String>) -> Root {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The same root, with a name to show for it.
    pub fn named(mut self, name: impl Into<String>) -> Root {
        self.name = Some(name.into());
        self
    }
}

/// A problem in the configuration; the rest of it still loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigIssue {
    /// The server entry concerned, if any.
    pub server: Option<String>,
    /// The field concerned, as a path below the server entry.
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.server, &self.field) {
            (Some(s), Some(field)) => write!(f, "server `{s}`, field `{field}`: {}", self.message),
            (Some(s), None) => write!(f, "server `{s}`: {}", self.message),
            (None, Some(field)) => write!(f, "field `{field}`: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

/// Every tool of the registry in one dialect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdaptedTools {
    /// The dialect.
    pub dialect: String,
    /// The tools that could be represented, ordered by registry name.
    pub tools: Vec<AdaptedTool>,
    /// The tools that could not, and why.
    pub refused: Vec<AdapterRefusal>,
}

/// One tool in a provider's dialect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdaptedTool {
    /// The name the provider sees; a call by it maps back
    /// ([`Runtime::call_adapted_tool`](crate::Runtime::call_adapted_tool)).
    pub name: String,
    /// The registry name (`mcp__{server}__{tool}`).
    pub registry_name: String,
    /// The provider's definition: MCP `Tool`, Chat Completions function tool,
    /// Anthropic tool or Gemini `FunctionDeclaration`, keys in the server's order.
    pub definition: Box<RawValue>,
    /// The OpenAI Responses API's flat function tool (`openai`, `openai-strict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responses_definition: Option<Box<RawValue>>,
    /// What the conversion lost.
    pub adapter_notes: Vec<AdapterNote>,
}

/// One thing a conversion lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AdapterNote {
    /// `dropped`, `widened`, `narrowed`, `recursion-cut`, `size-cut`, `renamed`,
    /// `collision` or `ambiguous`.
    pub kind: String,
    /// Where, as a JSON pointer into the tool's MCP definition.
    pub pointer: String,
    /// What was lost.
    pub lost: String,
}

/// A tool that cannot be represented in the dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AdapterRefusal {
    /// The registry name.
    pub name: String,
    /// Where the obstacle is, as a JSON pointer into the tool's definition.
    pub pointer: String,
    /// Why.
    pub reason: String,
}

impl AdaptedTools {
    pub(crate) fn new(dialect: String) -> AdaptedTools {
        AdaptedTools {
            dialect,
            tools: Vec::new(),
            refused: Vec::new(),
        }
    }
}
