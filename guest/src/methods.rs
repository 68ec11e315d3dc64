//! MCP method names, one constant each, so that a newcomer grepping a method
//! (`"tools/list"`, `"server/discover"`) lands here and then on every use.
//!
//! Requests the client sends, notifications either side sends, and the requests a
//! server may send the client. Tests keep the literal strings on purpose: they pin
//! what goes on the wire.

/// The legacy handshake request (2024-11-05 … 2025-11-25).
pub const INITIALIZE: &str = "initialize";
/// The notification that ends the legacy handshake.
pub const INITIALIZED: &str = "notifications/initialized";
/// The 2026-07-28 era probe: which versions and capabilities the server has.
pub const SERVER_DISCOVER: &str = "server/discover";
/// Liveness check; either side may send it.
pub const PING: &str = "ping";
/// One page of the server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Running a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// The server's tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The 2026-07-28 subscription request that streams list changes.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Progress of a request, keyed by its progress token.
pub const PROGRESS: &str = "notifications/progress";
/// A log line from the server.
pub const LOG_MESSAGE: &str = "notifications/message";
/// Either side gives up on a request it sent.
pub const CANCELLED: &str = "notifications/cancelled";
/// A server asks the user for input (both eras; see `crate::elicitation`).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// A server asks the client's model for a message (both eras; see `crate::sampling`).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// A server asks the client for its roots (both eras; see `crate::roots`).
pub const ROOTS_LIST: &str = "roots/list";
/// The client's roots changed (2025 sessions).
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// The client sets the lowest log level it wants (2025 sessions).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// The first message of a `subscriptions/listen` stream (2026-07-28).
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// One page of the server's resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// One page of the server's resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Reading one resource by URI.
pub const RESOURCES_READ: &str = "resources/read";
/// Lists a server's skills (the skills extension, `io.modelcontextprotocol/skills`).
pub const SKILLS_LIST: &str = "skills/list";
/// One skill's entry by its `SKILL.md` URI (the skills extension).
pub const SKILLS_GET: &str = "skills/get";
/// One page of a directory's direct children (the skills extension's optional
/// method, where the server declares `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// One page of the server's prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// One prompt, filled in with arguments.
pub const PROMPTS_GET: &str = "prompts/get";
/// Completion values for a prompt argument or a resource template variable.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Asks for `notifications/resources/updated` about one resource (2025 sessions;
/// the 2026-07-28 revision names resources in `subscriptions/listen` instead).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Ends a `resources/subscribe` (2025 sessions).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// A subscribed resource changed and may be read again.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// The server's resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// The server's prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// A task's status (2025-11-25 tasks).
pub const TASKS_GET: &str = "tasks/get";
/// A task's result, once it is done; waits until then (2025-11-25 tasks).
pub const TASKS_RESULT: &str = "tasks/result";
/// The tasks of a session (2025-11-25 tasks).
pub const TASKS_LIST: &str = "tasks/list";
/// Cancels a task (2025-11-25 tasks).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Answers a task's `inputRequests` (the 2026-07-28 tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// A task's status changed (2025-11-25 tasks; a server may send it, or not).
pub const TASKS_STATUS: &str = "notifications/tasks/status";
