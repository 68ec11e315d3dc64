//! One request to a server that is not a tool call (`resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get`,
//! `completion/complete`, `logging/setLevel`, `resources/subscribe`), with its
//! deadline, its pages and its end: the client side of what the
//! embedder asks beyond tools.
//!
//! They ride on the call machinery: a request has a call handle, completes as a
//! [`FinishedCall`] whose [`CallResult`] holds the answer (see [`Request`] for what
//! each field holds), times out and is cancelled like a call. Lists are followed
//! through every `nextCursor` ([`super::pagination`]: a repeated cursor,
//! [`MAX_PAGES`] or the server's `maxListBytes` stops them) and complete once,
//! with every page's items. What a request's params and result mean is read in
//! the module of its concept ([`super::resources`], [`super::prompts`],
//! [`super::completions`], [`super::logging`]).
//!
//! Nothing here is listed at connect time: a server's resources and prompts are
//! asked for when the embedder asks, so a server with 10,000 resources costs
//! nothing until someone looks.

use crate::prelude::*;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::pagination::{Cursors, MAX_PAGES, list_result, read_page};
use super::{
    CallError, CallResult, Client, ClientEvent, FinishedCall, Pending, ResultKind, result_kind,
};
use crate::jsonrpc::{self, Id};
use crate::methods;
use crate::transport::{Failure, format_bytes, format_ms};

/// A request beyond tools, and what its [`CallResult`] holds once it completes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `resources/list`, every page: `content` is the JSON list of resources,
    /// `text` their URIs, one a line.
    ListResources,
    /// `resources/templates/list`, every page: `content` is the JSON list of
    /// templates, `text` their `uriTemplate`s, one a line.
    ListResourceTemplates,
    /// `resources/read`: `content` is the `contents` list, `text` its text
    /// items joined with "\n".
    ReadResource {
        /// The resource's URI, as the server knows it.
        uri: String,
    },
    /// `prompts/list`, every page: `content` is the JSON list of prompts, `text`
    /// their names, one a line.
    ListPrompts,
    /// `prompts/get`: `content` is the `messages` list, `text` their text
    /// content joined with "\n", `structured_content` the whole result.
    GetPrompt {
        /// The prompt's name on its server.
        name: String,
        /// A JSON object of string values (text), if any.
        arguments: Option<String>,
    },
    /// `completion/complete` with these params (a JSON object: `ref`,
    /// `argument`, maybe `context`): `content` is the `values` list, `text`
    /// the values one a line, `structured_content` the whole `completion`.
    Complete {
        /// The params, JSON object text.
        params: String,
    },
    /// `logging/setLevel`: an empty result. A 2026-07-28 server has no such
    /// request: the level goes in the `_meta` of every request from then on
    /// (`io.modelcontextprotocol/logLevel`), and the request completes at once.
    SetLogLevel {
        /// The MCP log level ("debug" … "emergency").
        level: String,
    },
    /// Subscribes to a resource's updates (`resources/subscribe` in 2025
    /// sessions, the `resourceSubscriptions` of `subscriptions/listen` in
    /// 2026-07-28 ones; see [`super::subscriptions`]): an empty result. Updates
    /// arrive as [`ClientEvent::ResourceUpdated`].
    Subscribe {
        /// The resource's URI, as the server knows it.
        uri: String,
    },
    /// Ends a [`Request::Subscribe`]: an empty result.
    Unsubscribe {
        /// The resource's URI, as the server knows it.
        uri: String,
    },
    /// `skills/list` (the skills extension), every page: `content` is the JSON
    /// list of skill entries, `text` their `SKILL.md` URIs, one a line. The
    /// entries are held for loading (see [`super::skills`]); no file is read.
    ListSkills,
    /// `skills/get`: `content` is the skill's entry, `text` its URI; the entry
    /// is held (and replaces one held before, unloading the skill).
    GetSkill {
        /// The URI of the skill's `SKILL.md`.
        uri: String,
    },
    /// Loads a skill: reads its `SKILL.md` and verifies it against the held
    /// entry (size, digest, frontmatter); `text` is the `SKILL.md`, `content`
    /// the `contents` list, `structured_content` the entry. A URI no entry
    /// holds gets its entry with `skills/get` first.
    LoadSkill {
        /// The skill's name in the server's listing, or its `SKILL.md` URI.
        skill: String,
    },
    /// Reads a file of a loaded skill, verified against the held entry, as
    /// [`Request::ReadResource`] reads any resource.
    ReadSkillFile {
        /// The skill's name in the server's listing, or its `SKILL.md` URI.
        skill: String,
        /// The file's path in the skill (`references/FORMS.md`) or its URI.
        file: String,
    },
    /// `tasks/list` (2025-11-25 tasks), every page: `content` is the JSON list
    /// of the server's tasks, `text` their ids, one a line.
    ListTasks,
    /// `resources/directory/read` (the skills extension's, where the server
    /// declares `directoryRead`), every page: `content` is the JSON list of the
    /// directory's direct children (a subdirectory's `mimeType` is
    /// `inode/directory`), `text` their URIs, one a line.
    ReadDirectory {
        /// The directory's URI, as the server knows it.
        uri: String,
    },
}

impl Request {
    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            Request::ListResources => methods::RESOURCES_LIST,
            Request::ListResourceTemplates => methods::RESOURCES_TEMPLATES_LIST,
            Request::ReadResource { .. } => methods::RESOURCES_READ,
            Request::ListPrompts => methods::PROMPTS_LIST,
            Request::GetPrompt { .. } => methods::PROMPTS_GET,
            Request::Complete { .. } => methods::COMPLETION_COMPLETE,
            Request::SetLogLevel { .. } => methods::LOGGING_SET_LEVEL,
            Request::Subscribe { .. } => methods::RESOURCES_SUBSCRIBE,
            Request::Unsubscribe { .. } => methods::RESOURCES_UNSUBSCRIBE,
            Request::ListSkills => methods::SKILLS_LIST,
            Request::GetSkill { .. } => methods::SKILLS_GET,
            Request::LoadSkill { .. } | Request::ReadSkillFile { .. } => methods::RESOURCES_READ,
            Request::ListTasks => methods::TASKS_LIST,
            Request::ReadDirectory { .. } => methods::RESOURCES_DIRECTORY_READ,
        }
    }

    /// The server capability the request needs.
    pub fn capability(&self) -> &'static str {
        match self {
            Request::ListResources
            | Request::ListResourceTemplates
            | Request::ReadResource { .. } => "resources",
            Request::ListPrompts | Request::GetPrompt { .. } => "prompts",
            Request::Complete { .. } => "completions",
            Request::SetLogLevel { .. } => "logging",
            Request::Subscribe { .. } | Request::Unsubscribe { .. } => "resources.subscribe",
            Request::ListSkills
            | Request::GetSkill { .. }
            | Request::LoadSkill { .. }
            | Request::ReadSkillFile { .. } => "skills",
            Request::ListTasks => "tasks.list",
            Request::ReadDirectory { .. } => "skills.directoryRead",
        }
    }

    /// For a list: the result field that holds its items.
    pub fn list_key(&self) -> Option<&'static str> {
        match self {
            Request::ListResources => Some("resources"),
            Request::ListResourceTemplates => Some("resourceTemplates"),
            Request::ListPrompts => Some("prompts"),
            Request::ListSkills => Some("skills"),
            Request::ListTasks => Some("tasks"),
            Request::ReadDirectory { .. } => Some("resources"),
            _ => None,
        }
    }

    /// What the `Mcp-Name` header carries (2026-07-28): the URI read or the
    /// prompt got.
    fn name(&self) -> Option<&str> {
        match self {
            Request::ReadResource { uri }
            | Request::Subscribe { uri }
            | Request::Unsubscribe { uri }
            | Request::GetSkill { uri }
            | Request::ReadDirectory { uri }
            | Request::LoadSkill { skill: uri }
            | Request::ReadSkillFile { file: uri, .. } => Some(uri),
            Request::GetPrompt { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The request as messages name it: `resources/read test://x`.
    pub(super) fn label(&self) -> String {
        match self.name() {
            Some(name) => format!("{} {name}", self.method()),
            None => self.method().to_string(),
        }
    }

    /// The params the request adds to `_meta` (and a cursor), or why they are
    /// unusable.
    fn params(&self) -> Result<Map<String, Value>, String> {
        let mut params = Map::new();
        match self {
            Request::ReadResource { uri }
            | Request::Subscribe { uri }
            | Request::Unsubscribe { uri }
            | Request::GetSkill { uri }
            | Request::ReadDirectory { uri }
            | Request::LoadSkill { skill: uri }
            | Request::ReadSkillFile { file: uri, .. } => {
                params.insert("uri".into(), uri.clone().into());
            }
            Request::GetPrompt { name, arguments } => {
                params.insert("name".into(), name.clone().into());
                if let Some(arguments) = arguments {
                    params.insert(
                        "arguments".into(),
                        super::prompts::prompt_arguments(name, arguments)?,
                    );
                }
            }
            Request::Complete { params: text } => match serde_json::from_str(text) {
                Ok(Value::Object(map)) => params = map,
                _ => {
                    return Err(format!(
                        "completion/complete params must be a JSON object with `ref` and `argument`, not {}",
                        jsonrpc::truncate(text, 80)
                    ));
                }
            },
            Request::SetLogLevel { level } => {
                super::logging::check_level(level)?;
                params.insert("level".into(), level.clone().into());
            }
            Request::ListResources
            | Request::ListResourceTemplates
            | Request::ListPrompts
            | Request::ListSkills
            | Request::ListTasks => {}
        }
        Ok(params)
    }
}

/// Which optional server capabilities the server declared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// `resources`.
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
    /// `resources.listChanged`.
    pub resources_list_changed: bool,
    /// `prompts.listChanged`.
    pub prompts_list_changed: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
    /// `logging`.
    pub logging: bool,
    /// The skills extension (`extensions["io.modelcontextprotocol/skills"]`).
    pub skills: bool,
    /// The skills extension's `directoryRead: true`: `resources/directory/read`.
    pub directory_read: bool,
    /// `tasks.list` (2025-11-25 tasks).
    pub tasks_list: bool,
    /// The 2026-07-28 tasks extension (`extensions["io.modelcontextprotocol/tasks"]`).
    pub tasks_extension: bool,
}

impl Offers {
    /// Reads a server's `capabilities` object.
    pub(super) fn read(capabilities: Option<&Value>) -> Offers {
        let has = |name: &str| {
            capabilities
                .and_then(|c| c.get(name))
                .is_some_and(|v| !v.is_null())
        };
        let flag = |name: &str, field: &str| {
            capabilities
                .and_then(|c| c.get(name))
                .and_then(|r| r.get(field))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let skills = capabilities
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(super::skills::EXTENSION));
        Offers {
            resources: has("resources"),
            subscribe: flag("resources", "subscribe"),
            resources_list_changed: flag("resources", "listChanged"),
            prompts_list_changed: flag("prompts", "listChanged"),
            prompts: has("prompts"),
            completions: has("completions"),
            logging: has("logging"),
            skills: skills.is_some_and(|v| !v.is_null()),
            directory_read: skills
                .and_then(|s| s.get("directoryRead"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            tasks_list: capabilities
                .and_then(|c| c.get("tasks"))
                .and_then(|t| t.get("list"))
                .is_some_and(|v| !v.is_null()),
            tasks_extension: capabilities
                .and_then(|c| c.get("extensions"))
                .and_then(|e| e.get(super::tasks::EXTENSION))
                .is_some_and(|v| !v.is_null()),
        }
    }

    /// Whether the server offers what `request` needs.
    pub fn allow(&self, request: &Request) -> bool {
        match request.capability() {
            "resources" => self.resources,
            "prompts" => self.prompts,
            "completions" => self.completions,
            "resources.subscribe" => self.subscribe,
            "skills" => self.skills,
            "skills.directoryRead" => self.skills && self.directory_read,
            "tasks.list" => self.tasks_list,
            _ => self.logging,
        }
    }
}

/// A request in flight.
#[derive(Debug)]
pub(super) struct PendingRequest {
    pub(super) call: u64,
    pub(super) request: Request,
    pub(super) timeout_ms: u64,
    pub(super) deadline_ms: u64,
    /// A list's items so far, and the cursors and bytes of its pages.
    items: Vec<Box<RawValue>>,
    cursors: Cursors,
    bytes: usize,
}

impl PendingRequest {
    /// Request `request` as call `call`, due `timeout_ms` after `now_ms`.
    pub(super) fn new(call: u64, request: Request, timeout_ms: u64, now_ms: u64) -> Self {
        PendingRequest {
            call,
            request,
            timeout_ms,
            deadline_ms: now_ms.saturating_add(timeout_ms),
            items: Vec::new(),
            cursors: Cursors::default(),
            bytes: 0,
        }
    }

    /// `resources/read test://x on server `s``, for messages.
    pub(super) fn label(&self, server: &str) -> String {
        format!("{} on server `{server}`", self.request.label())
    }
}

impl Client {
    /// The optional capabilities the server declared.
    pub fn offers(&self) -> Offers {
        self.offers
    }

    /// Sends `request` as call `call`; it completes through the client's events
    /// like a tool call (at once, with an error, when its params are unusable).
    pub fn start_request(&mut self, call: u64, request: Request, timeout_ms: u64, now_ms: u64) {
        let pending = PendingRequest::new(call, request, timeout_ms, now_ms);
        let Some(pending) = self.prepare_skill_request(pending) else {
            return;
        };
        if self.era == super::Era::Stateless {
            match &pending.request {
                Request::Subscribe { .. } | Request::Unsubscribe { .. } => {
                    return self.listen_for(pending);
                }
                Request::SetLogLevel { level } => {
                    let level = level.clone();
                    return self.set_log_level_in_meta(pending, level);
                }
                _ => {}
            }
        }
        self.send_request(pending, None);
    }

    pub(super) fn send_request(&mut self, pending: PendingRequest, cursor: Option<String>) {
        let mut params = match pending.request.params() {
            Ok(params) => params,
            Err(why) => {
                let why = format!("{}: {why}", pending.label(&self.server));
                return self.finish(pending.call, Err(CallError::InvalidArguments(why)), true);
            }
        };
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), cursor.into());
        }
        let meta = self.request_meta(None);
        if !meta.is_empty() {
            params.insert(
                "_meta".into(),
                serde_json::to_value(&meta).unwrap_or(Value::Null),
            );
        }
        let meta = self.meta(Some(pending.request.method()), pending.request.name());
        self.request_with(meta, Some(&params), Pending::Request(pending));
    }

    /// The server answered a request: a page, the result, or an error.
    pub(super) fn on_request_response(
        &mut self,
        mut r: PendingRequest,
        outcome: Result<Box<RawValue>, Failure>,
    ) {
        let label = r.label(&self.server);
        let raw = match outcome {
            Ok(raw) => raw,
            Err(e) => {
                let why = format!("{label} failed: {e}");
                return self.finish(r.call, Err(CallError::Protocol(why)), true);
            }
        };
        let malformed = |why: String| {
            CallError::Protocol(format!(
                "{label}: the server sent a malformed result ({why})"
            ))
        };
        let Some(key) = r.request.list_key() else {
            if let Some(outcome) = self.skill_response(&r, &raw) {
                return self.finish(r.call, outcome, true);
            }
            if matches!(r.request, Request::GetSkill { .. }) {
                // Its load went on with the entry it brought.
                return;
            }
            let outcome = read_result(&r.request, &raw).map_err(malformed);
            if outcome.is_ok() {
                self.subscribed(&r.request);
            }
            return self.finish(r.call, outcome, true);
        };
        let page = match read_page(key, &raw) {
            Ok(page) => page,
            Err(why) => return self.finish(r.call, Err(malformed(why)), true),
        };
        r.bytes += raw.get().len();
        r.items.extend(page.items);
        let max_bytes = self.tools.limits.max_list_bytes;
        if r.bytes > max_bytes {
            let why = format!(
                "{label}: the listing passed the server's maxListBytes of {} after {} items; raise `limits.maxListBytes` in its entry to list it",
                format_bytes(max_bytes as u64),
                r.items.len()
            );
            return self.finish(r.call, Err(CallError::Protocol(why)), true);
        }
        match page.next_cursor {
            Some(cursor) if r.cursors.at_limit() => {
                self.warn(format!(
                    "{label}: stopped after {MAX_PAGES} pages (next cursor {cursor:?}); the list is incomplete"
                ));
            }
            Some(cursor) if r.cursors.repeated(&cursor) => {
                self.warn(format!(
                    "{label}: the server repeated cursor {cursor:?}; the list ends there"
                ));
            }
            Some(cursor) => {
                r.cursors.followed();
                return self.send_request(r, Some(cursor));
            }
            None => {}
        }
        let items = core::mem::take(&mut r.items);
        if matches!(r.request, Request::ListSkills) {
            self.hold_skills(&items);
        }
        let outcome = Ok(list_result(key, items));
        self.finish(r.call, outcome, true);
    }

    /// Fails every request whose deadline passed; returns nothing, like `tick`.
    pub(super) fn expire_requests(&mut self, now_ms: u64) {
        let expired: Vec<Id> = self
            .slots
            .pending
            .iter()
            .filter(|(_, p)| matches!(p, Pending::Request(r) if r.deadline_ms <= now_ms))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            let Some(Pending::Request(r)) = self.slots.pending.remove(&id) else {
                continue;
            };
            let after = format_ms(r.timeout_ms);
            self.abandon(id, &format!("timed out after {after}"));
            let why = format!(
                "{} timed out after {after}; the server was told to cancel it",
                r.label(&self.server)
            );
            self.finish(r.call, Err(CallError::Timeout(why)), true);
        }
    }

    /// Cancels request `call`; false if it is not in flight here.
    pub(super) fn cancel_request(&mut self, call: u64) -> bool {
        let id = self
            .slots
            .pending
            .iter()
            .find(|(_, p)| matches!(p, Pending::Request(r) if r.call == call))
            .map(|(id, _)| id.clone());
        let Some(id) = id else {
            return self.cancel_listen_wait(call);
        };
        self.slots.pending.remove(&id);
        self.abandon(id, "cancelled by the caller");
        self.events.push(ClientEvent::Finished(FinishedCall {
            call,
            outcome: Err(CallError::Cancelled),
        }));
        true
    }
}

/// The result of a request that is not a list.
fn read_result(request: &Request, raw: &RawValue) -> Result<CallResult, String> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(rename = "resultType", default)]
        result_type: Option<Value>,
    }
    // Only `resultType` is built: the rest (a blob of many megabytes) is skipped.
    let kind: Kind =
        serde_json::from_str(raw.get()).map_err(|e| format!("not a JSON object: {e}"))?;
    match result_kind(kind.result_type.as_ref()) {
        ResultKind::Complete => {}
        ResultKind::InputRequired => {
            return Err(format!(
                "it asks for input (resultType input_required), which mcpbox answers only for tools/call; {} cannot go on",
                request.method()
            ));
        }
        ResultKind::Other(kind) => return Err(format!("unknown resultType {kind}")),
    }
    match request {
        Request::ReadResource { .. } => super::resources::read_result(raw),
        Request::GetPrompt { .. } => super::prompts::get_result(raw),
        Request::Complete { .. } => super::completions::complete_result(raw),
        _ => Ok(CallResult {
            is_error: false,
            text: String::new(),
            content: "[]".into(),
            structured_content: None,
        }),
    }
}
