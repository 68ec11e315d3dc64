//! `tools/list` and `tools/call`, served from the registry.
//!
//! `tools/list` is paged ([`super::ServeOptions::page_size`] tools a page); the
//! cursor is the last served name of the page before, so it stays meaningful when
//! the registry changes between pages (a tool added before it is not served twice,
//! one removed does not shift the rest). While servers are still starting, a
//! `tools/list` is held until every server is connected or failed, so a client
//! that lists at once gets the whole list rather than a list_changed later; so is
//! a `search_tools` call (search mode), and a call of a tool not listed yet.
//!
//! `tools/call` goes to the manager under the registry name, its `arguments` as
//! the client wrote them (read once, to check them against the schema; never
//! re-encoded); its result goes back as the server sent it (`content`,
//! `structuredContent`, `isError`). Failures
//! without a tool result (a server that is gone, a timeout) become tool errors
//! the model can read; an unknown name is a JSON-RPC error.
//!
//! With a schema dialect ([`super::ServeOptions::schema_dialect`], `mcpbox serve
//! --schema-dialect gemini`), `tools/list` serves each tool's input schema as that
//! provider takes it ([`crate::adapter`], cached per tool and dialect by the
//! manager), for clients that hand schemas to the provider without converting; the
//! served names stay the gateway's. A tool the dialect cannot represent is left
//! out (the provider would refuse the whole request), with a warning saying why.
//! The arguments of a `tools/call` are mapped back to what the server's own schema
//! expects, which then checks them as for any call.

use crate::prelude::*;
use alloc::rc::Rc;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::adapter::{AdaptedTool, Dialect};
use crate::client::{CallError, CallOptions, CallResult, FinishedCall};
use crate::jsonrpc::INVALID_PARAMS;
use crate::manager::Manager;
use crate::methods;
use crate::registry::{TaskSupport, ToolDef};
use crate::transport::Platform;

use super::exposure::Exposed;
use super::held::HeldRequest;
use super::lifecycle::Refusal;
use super::search::{self, Index};
use super::{DownCall, FLUSH_BYTES, Gateway, Origin, call_error, json_text, tool_error};

/// A call that could not start: its origin and the answer it is owed.
pub(super) type NotStarted = (Origin, Result<String, Refusal>);

/// How long a 2026-07-28 client may keep a tool list without asking again, when
/// it does not listen for changes.
const LIST_TTL_MS: u64 = 300_000;

/// The search mode's tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The search mode's tool that calls a tool found by `search_tools`.
pub const CALL_TOOL: &str = "call_tool";

/// A request's params as the gateway reads them: a `Value`, but for the
/// `arguments` of a `tools/call`, which stay the text the client wrote. They pass
/// to the server as they came: parsed into a `Value` and written again, they cost
/// a second parse and an encoding per call, and changed on the way (an integer
/// past 2^64 became a float, `1.50` became `1.5`).
#[derive(Debug)]
pub(super) struct Params {
    /// Every member but a `tools/call`'s `arguments`.
    pub value: Value,
    /// A `tools/call`'s `arguments`, as written.
    pub arguments: Option<Box<RawValue>>,
}

impl core::ops::Deref for Params {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.value
    }
}

impl Params {
    /// The params of a request other than `tools/call`; `{}` when absent or not JSON.
    pub fn read(raw: Option<&RawValue>) -> Params {
        Params {
            value: raw
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_else(|| json!({})),
            arguments: None,
        }
    }

    /// The params of a `tools/call`, its `arguments` kept as written; `{}` when
    /// absent or not a JSON object.
    pub fn of_call(raw: Option<&RawValue>) -> Params {
        Params::of_call_text(raw.map_or("", RawValue::get))
    }

    /// [`Params::of_call`] of a text.
    fn of_call_text(text: &str) -> Params {
        match serde_json::from_str::<Split>(text).ok() {
            Some(Split(members, arguments)) => Params {
                value: Value::Object(members),
                arguments,
            },
            None => Params::read(None),
        }
    }
}

/// An object's members read as `Value`s, but `arguments` kept raw.
struct Split(Map<String, Value>, Option<Box<RawValue>>);

impl<'de> Deserialize<'de> for Split {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Split, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Split;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Split, A::Error> {
                let (mut members, mut arguments) = (Map::new(), None);
                // A repeated key counts at its last value, as a `Value` reads it.
                while let Some(key) = map.next_key::<String>()? {
                    if key == "arguments" {
                        arguments = Some(map.next_value::<Box<RawValue>>()?);
                    } else {
                        members.insert(key, map.next_value::<Value>()?);
                    }
                }
                Ok(Split(members, arguments))
            }
        }
        d.deserialize_map(Members)
    }
}

/// A tool definition as `tools/list` serves it, schemas as the server sent them;
/// with `tasks` (a 2025-11-25 session), `execution.taskSupport` says whether the
/// gateway takes it as a task (see `tasks`).
fn tool_json(name: &str, def: &ToolDef, tasks: bool) -> String {
    let mut s = format!(r#"{{"name":{}"#, json_text(&name));
    if let Some(title) = &def.title {
        s.push_str(&format!(r#","title":{}"#, json_text(title)));
    }
    if let Some(description) = &def.description {
        s.push_str(&format!(r#","description":{}"#, json_text(description)));
    }
    s.push_str(&format!(r#","inputSchema":{}"#, def.input_schema));
    if let Some(schema) = &def.output_schema {
        s.push_str(&format!(r#","outputSchema":{schema}"#));
    }
    if let Some(annotations) = &def.annotations {
        s.push_str(&format!(r#","annotations":{annotations}"#));
    }
    if tasks && def.task_support != TaskSupport::Forbidden {
        s.push_str(r#","execution":{"taskSupport":"optional"}"#);
    }
    s.push('}');
    s
}

/// A tool definition as `tools/list` serves it under a schema dialect: the input
/// schema is the dialect's parameters (an empty object where the dialect leaves a
/// tool without parameters out); the rest as the server sent it, the output schema
/// too (a client checks results against it; providers do not read it).
fn adapted_tool_json(name: &str, def: &ToolDef, adapted: &AdaptedTool) -> String {
    let mut s = format!(r#"{{"name":{}"#, json_text(&name));
    if let Some(title) = &def.title {
        s.push_str(&format!(r#","title":{}"#, json_text(title)));
    }
    if let Some(description) = &def.description {
        s.push_str(&format!(r#","description":{}"#, json_text(description)));
    }
    match &adapted.parameters {
        Some(parameters) => s.push_str(&format!(r#","inputSchema":{}"#, parameters.get())),
        None => s.push_str(r#","inputSchema":{"type":"object","properties":{}}"#),
    }
    if let Some(schema) = &def.output_schema {
        s.push_str(&format!(r#","outputSchema":{schema}"#));
    }
    if let Some(annotations) = &def.annotations {
        s.push_str(&format!(r#","annotations":{annotations}"#));
    }
    s.push('}');
    s
}

/// The two tools of the search mode.
fn search_mode_tools(count: usize) -> String {
    let search = json!({
        "name": SEARCH_TOOLS,
        "description": format!(
            "Searches the {count} tools behind this gateway by what they do (words of their \
             names, descriptions and parameters) and returns the best matches with their input \
             schemas. Then run one with `{CALL_TOOL}`."
        ),
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": search::MAX_RESULTS,
                      "description": format!("How many matches to return (default {}).", search::DEFAULT_RESULTS)}
        }, "required": ["query"]},
        "annotations": {"readOnlyHint": true}
    });
    let call = json!({
        "name": CALL_TOOL,
        "description": format!("Runs a tool found with `{SEARCH_TOOLS}`, by its name, with arguments matching its input schema."),
        "inputSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "The tool's name as search_tools returned it."},
            "arguments": {"type": "object", "description": "The tool's arguments."}
        }, "required": ["name"]}
    });
    format!(r#"{{"tools":[{search},{call}]}}"#)
}

fn invalid(why: impl Into<String>) -> Refusal {
    Refusal::new(INVALID_PARAMS, format!("Invalid params: {}", why.into()))
}

impl Gateway {
    pub(super) fn list_tools<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        params: &Value,
    ) {
        let cursor = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.clone()),
            Some(_) => return self.answer(&origin, Err(invalid("cursor must be a string"))),
        };
        if m.starting() {
            self.held.hold(HeldRequest::List(origin, cursor));
            return;
        }
        let page = self.tools_page(m, &origin, cursor.as_deref());
        self.answer(&origin, page);
    }

    /// Answers the requests held while servers started, oldest first, until the
    /// answers of this turn pass [`FLUSH_BYTES`]; the rest wait for the next turn
    /// (the gateway is [`busy`](Gateway::busy) meanwhile), so a thousand held
    /// lists are not all built at once.
    pub(super) fn release_held<P: Platform>(&mut self, m: &mut Manager<P>) {
        let full = |g: &Gateway| g.out_bytes() >= FLUSH_BYTES;
        while !full(self) {
            match self.held.release() {
                None => return,
                Some(HeldRequest::List(origin, cursor)) => {
                    let page = self.tools_page(m, &origin, cursor.as_deref());
                    self.answer(&origin, page);
                }
                Some(HeldRequest::Call(origin, params)) => self.call_tool(m, origin, params),
                Some(HeldRequest::Other(origin, method, params)) => {
                    if method == methods::SUBSCRIPTIONS_LISTEN {
                        self.listen(m, origin, &params);
                    } else {
                        self.beyond_tools(m, &origin, &method, &params);
                    }
                }
            }
        }
    }

    fn tools_page<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: &Origin,
        cursor: Option<&str>,
    ) -> Result<String, Refusal> {
        let exposure = self.exposure(m, origin.profile.as_deref());
        if let Some(s) = origin.session.and_then(|s| self.sessions.open.get_mut(&s)) {
            s.notified = exposure.fingerprint;
        }
        if self.options.tool_search {
            return Ok(search_mode_tools(exposure.tools.len()));
        }
        let start = match cursor {
            None => 0,
            Some(c)
                if !c.is_empty()
                    && c.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
            {
                exposure.tools.partition_point(|t| t.name.as_str() <= c)
            }
            Some(c) => return Err(invalid(format!("{c:?} is not a cursor this server gave"))),
        };
        let end = start
            .saturating_add(self.options.page_size.max(1))
            .min(exposure.tools.len());
        let adaptation = match self.options.schema_dialect {
            Some(dialect) if dialect != Dialect::Mcp => {
                let adaptation = m.adapted_tools(dialect);
                self.warn_refused(m.tools_generation(), &adaptation);
                Some(adaptation)
            }
            _ => None,
        };
        let tasks = self.has_tasks(origin);
        let mut text = String::from(r#"{"tools":["#);
        let mut first = true;
        for t in &exposure.tools[start..end] {
            let def = &t.entry.tool.def;
            let json = match adaptation.as_ref().and_then(|a| a.get(&t.entry.tool.name)) {
                None => tool_json(&t.name, def, tasks),
                Some(Ok(adapted)) => adapted_tool_json(&t.name, def, adapted),
                // Not served: the provider would refuse the whole request for it.
                Some(Err(_)) => continue,
            };
            if !first {
                text.push(',');
            }
            first = false;
            text.push_str(&json);
        }
        text.push(']');
        if end < exposure.tools.len() && end > 0 {
            text.push_str(&format!(
                r#","nextCursor":{}"#,
                json_text(&exposure.tools[end - 1].name)
            ));
        }
        if origin.stateless.is_some() {
            // Caching hints (2026-07-28): changes are announced on
            // subscriptions/listen; the list is the client's own (its profile).
            text.push_str(&format!(r#","ttlMs":{LIST_TTL_MS},"cacheScope":"private""#));
        }
        text.push('}');
        Ok(text)
    }

    /// Says once per registry generation which tools the schema dialect cannot
    /// represent and so are not served.
    fn warn_refused(&mut self, generation: u64, adaptation: &crate::adapter::Adaptation) {
        if self.served.refusals_warned == generation {
            return;
        }
        self.served.refusals_warned = generation;
        for refusal in &adaptation.refused {
            self.warnings.push(format!("gateway: {refusal}"));
        }
    }

    pub(super) fn call_tool<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        mut origin: Origin,
        params: Params,
    ) {
        if self.has_tasks(&origin) {
            origin.task = super::tasks::requested(params.get("task"));
        }
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        if params.get("requestState").is_some() || params.get("inputResponses").is_some() {
            return self.retry(m, origin, params.value, progress_token);
        }
        let Some(mut name) = params.get("name").and_then(Value::as_str).map(String::from) else {
            return self.answer(&origin, Err(invalid("tools/call needs a `name` string")));
        };
        // A raw value's text starts at its first byte: `{` is an object.
        let mut arguments: String = match params.arguments.as_deref().map(RawValue::get) {
            None | Some("null") => "{}".into(),
            Some(a) if a.starts_with('{') => a.into(),
            Some(_) => return self.answer(&origin, Err(invalid("`arguments` must be an object"))),
        };
        let exposure = self.exposure(m, origin.profile.as_deref());
        if self.options.tool_search && exposure.get(&name).is_none() {
            match name.as_str() {
                SEARCH_TOOLS => {
                    if m.starting() {
                        // As `tools/list`: the servers still starting may list the tool.
                        self.held.hold(HeldRequest::Call(origin, params));
                        return;
                    }
                    let result = self.search(m, &origin, &arguments);
                    return self.answer(&origin, result);
                }
                CALL_TOOL => {
                    let inner = Params::of_call_text(&arguments);
                    let Some(n) = inner.get("name").and_then(Value::as_str) else {
                        let text =
                            tool_error("call_tool needs the `name` of a tool search_tools found");
                        return self.answer(&origin, Ok(text));
                    };
                    name = n.to_string();
                    arguments = match inner.arguments.as_deref().map(RawValue::get) {
                        None | Some("null") => "{}".into(),
                        Some(a) => a.into(),
                    };
                }
                _ => {}
            }
        }
        let known = exposure
            .get(&name)
            .or_else(|| self.retired(origin.profile.as_deref(), &name))
            .cloned();
        let Some(exposed) = known else {
            if m.starting() {
                // Its server may still be listing it: wait for the servers.
                self.held.hold(HeldRequest::Call(origin, params));
                return;
            }
            // Denied by the profile, or kept out of the registry by the rules
            // (a `deny` rule, `enabledTools` / `disabledTools`): say which rule.
            let rule = exposure.denied.get(&name).cloned().or_else(|| {
                m.denied_by(&format!("mcp__{name}"))
                    .map(|rule| rule.to_string())
            });
            if let Some(rule) = rule {
                let text = tool_error(&format!(
                    "{name} is not allowed here: it is denied by the permission rule {rule}"
                ));
                return self.answer(&origin, Ok(text));
            }
            // Held back because it changed since it was pinned: say so, and the fix.
            if let Some(reason) = m.blocked_by(&format!("mcp__{name}")) {
                return self.answer(&origin, Ok(tool_error(&reason)));
            }
            let refusal = Refusal::new(INVALID_PARAMS, format!("Unknown tool: {name}"));
            return self.answer(&origin, Err(refusal));
        };
        // A 2026-07-28 client that takes tasks gets one for a tool that runs as
        // one (the gateway's choice, as the extension has it).
        if self.extension_task(&origin, &exposed) {
            origin.task = Some(super::tasks::DEFAULT_TTL_MS);
        }
        if let Err(refusal) = self.check_task(&origin, &exposed) {
            return self.answer(&origin, Err(refusal));
        }
        if let Some(rule) = exposed.ask.clone() {
            return self.ask_approval(m, origin, exposed, arguments, progress_token, rule);
        }
        self.start_call(m, origin, &exposed, &arguments, progress_token);
    }

    /// Starts the manager call for a downstream `tools/call` that may go ahead.
    pub(super) fn start_call<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        exposed: &Exposed,
        arguments: &str,
        progress_token: Option<Value>,
    ) {
        if let Err(refused) = self.begin_call(m, origin, exposed, arguments, progress_token) {
            let (origin, outcome) = *refused;
            self.answer(&origin, outcome);
        }
    }

    /// Starts the manager call as [`Gateway::start_call`] does, returning its id,
    /// or the origin and the answer it is owed when it could not start.
    pub(super) fn begin_call<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        exposed: &Exposed,
        arguments: &str,
        progress_token: Option<Value>,
    ) -> Result<u64, Box<NotStarted>> {
        let tool = &exposed.entry.tool.name;
        let profile = origin.profile.as_deref();
        // Written by a model under the served schemas: the server's own expect
        // what they were converted from.
        let mapped;
        let arguments = match self.options.schema_dialect {
            Some(dialect) => {
                mapped = m.map_adapted_arguments(dialect, tool, arguments);
                mapped.as_str()
            }
            None => arguments,
        };
        // A 2026-07-28 server logs during a call only at the level the call asks for:
        // ask for what this client wants to see (see logging.rs).
        let options = CallOptions {
            log_level: self.wanted_log_level(&origin),
            ..CallOptions::default()
        };
        // An `ask` tool reaches here once this client approved the call.
        let started = if exposed.ask.is_some() {
            m.start_call_approved(tool, arguments, options, profile, "client")
        } else {
            m.start_call_as(tool, arguments, options, profile)
        };
        match started {
            Ok(call) => {
                let ttl = origin.task;
                let mut down = DownCall {
                    origin,
                    progress_token,
                    server: exposed.entry.server.clone(),
                    served: exposed.name.clone(),
                    cancelled: false,
                    queued: Vec::new(),
                    task: None,
                    task_after: None,
                };
                match ttl {
                    Some(ttl) => self.task_started(m, call, down, ttl),
                    None => {
                        Gateway::arm_task_after(m, &mut down, self.options.keeps_tasks);
                        self.calls.insert(call, down);
                    }
                }
                Ok(call)
            }
            Err(e) => Err(Box::new((origin, call_error(e)))),
        }
    }

    /// A manager call of the gateway finished.
    pub(super) fn call_finished<P: Platform>(&mut self, m: &Manager<P>, c: FinishedCall) {
        let Some(call) = self.calls.remove(&c.call) else {
            return;
        };
        // A 2026-07-28 task ends `failed` with the JSON-RPC error when the call
        // got no tool result (the extension keeps tool errors for results).
        let extension_task = call.task.is_some() && call.origin.stateless.is_some();
        let outcome = match c.outcome {
            Ok(result) => Some(Ok(result_json(&result))),
            Err(CallError::Cancelled) => None,
            Err(
                e @ (CallError::Protocol(_)
                | CallError::ServerUnavailable(_)
                | CallError::Timeout(_)),
            ) if extension_task => Some(Err(Refusal::new(
                crate::jsonrpc::INTERNAL_ERROR,
                e.to_string(),
            ))),
            Err(e) => Some(call_error(e)),
        };
        if let Some(task) = &call.task {
            return self.task_finished(m, task, outcome);
        }
        if call.origin.exchange.is_none() {
            // Its client is to retry a 2026-07-28 round: the round keeps the answer.
            if let Some(outcome) = outcome {
                self.park_outcome(c.call, outcome);
            }
            return self.forget_rounds_of(c.call);
        }
        self.forget_rounds_of(c.call);
        match outcome {
            Some(outcome) if !call.cancelled => self.answer(&call.origin, outcome),
            _ => self.answer_nothing(&call.origin),
        }
    }

    /// `search_tools`: the best matches for the query, with their schemas.
    fn search<P: Platform>(
        &mut self,
        m: &Manager<P>,
        origin: &Origin,
        arguments: &str,
    ) -> Result<String, Refusal> {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return Ok(tool_error("search_tools needs a `query` string"));
        };
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(search::DEFAULT_RESULTS, |l| {
                (l as usize).clamp(1, search::MAX_RESULTS)
            });
        let exposure = self.exposure(m, origin.profile.as_deref());
        let key = origin.profile.clone();
        let index = match self.served.indexes.get(&key) {
            Some(i) if i.fingerprint == exposure.fingerprint => i.clone(),
            _ => {
                let i = Rc::new(Index::build(&exposure));
                self.served.indexes.insert(key, i.clone());
                i
            }
        };
        let hits = index.search(query, limit);
        let mut listed = Vec::new();
        for (at, _) in &hits {
            let t = &exposure.tools[*at];
            listed.push(tool_json(&t.name, &t.entry.tool.def, false));
        }
        let tools = format!("[{}]", listed.join(","));
        let text = if hits.is_empty() {
            format!("No tool matches {query:?}; try other words.")
        } else {
            tools.clone()
        };
        Ok(format!(
            r#"{{"content":[{{"type":"text","text":{}}}],"structuredContent":{{"tools":{tools}}},"isError":false}}"#,
            json_text(&text)
        ))
    }
}

/// A tool result as the upstream server sent it.
fn result_json(r: &CallResult) -> String {
    let mut s = format!(r#"{{"content":{}"#, r.content);
    if let Some(structured) = &r.structured_content {
        s.push_str(&format!(r#","structuredContent":{structured}"#));
    }
    s.push_str(&format!(r#","isError":{}}}"#, r.is_error));
    s
}
