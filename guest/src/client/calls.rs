//! `tools/call`: starting a call with its progress token and deadline, reading
//! its result (`content`, `structuredContent`, `isError`, `resultType`), and
//! completing it, or every call at once when the connection is lost. Every
//! request in flight, calls or not, is kept by its JSON-RPC id in [`Slots`].

use crate::prelude::*;
use alloc::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use serde_json::value::RawValue;

use super::param_headers::param_headers;
use super::wire::{CallParams, RawCallResult, TaskParams};
use super::{Client, ClientEvent, Outgoing, Pending, ResultKind, result_kind};
use crate::jsonrpc::{self, Id};
use crate::methods;
use crate::transport::Failure;

/// How many abandoned request ids are remembered to drop their late answers.
pub(super) const ABANDONED_MEMORY: usize = 1024;

/// The requests in flight, by JSON-RPC id: calls and every other request the
/// session waits an answer to, the id the next one gets, and the ids given up
/// on (see `cancellation`), whose late answers are dropped quietly.
#[derive(Debug)]
pub(super) struct Slots {
    next_id: i64,
    /// What each request in flight is, by its id.
    pub(super) pending: BTreeMap<Id, Pending>,
    /// Requests given up on, oldest first (at most [`ABANDONED_MEMORY`] once
    /// cancelled or timed out).
    pub(super) abandoned: VecDeque<Id>,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            next_id: 1,
            pending: BTreeMap::new(),
            abandoned: VecDeque::new(),
        }
    }
}

impl Slots {
    /// The id of the next request.
    pub(super) fn next_id(&mut self) -> Id {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        id
    }

    /// The id of call `call`'s `tools/call`, if it is in flight.
    pub(super) fn call_id(&self, call: u64) -> Option<Id> {
        self.pending
            .iter()
            .find(|(_, p)| matches!(p, Pending::Call(c) if c.call == call))
            .map(|(id, _)| id.clone())
    }

    /// Calls and requests in flight, those with a deadline.
    #[cfg(test)]
    pub(super) fn with_deadline(&self) -> usize {
        self.pending
            .values()
            .filter(|p| p.deadline_ms().is_some())
            .count()
    }

    /// Whether a call or request with a deadline is in flight.
    pub(super) fn any_with_deadline(&self) -> bool {
        self.pending.values().any(|p| p.deadline_ms().is_some())
    }

    /// The nearest deadline of the calls and requests in flight, exactly
    /// (`u64::MAX`: none).
    pub(super) fn due(&self) -> u64 {
        self.pending
            .values()
            .filter_map(Pending::deadline_ms)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Remembers a request given up on, forgetting the oldest past
    /// [`ABANDONED_MEMORY`].
    pub(super) fn remember_abandoned(&mut self, id: Id) {
        if self.abandoned.len() == ABANDONED_MEMORY {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(id);
    }

    /// Whether `id` is a request given up on; forgets it. A late answer to one is
    /// expected, not news.
    pub(super) fn forget_abandoned(&mut self, id: &Id) -> bool {
        match self.abandoned.iter().position(|a| a == id) {
            Some(pos) => {
                self.abandoned.remove(pos);
                true
            }
            None => false,
        }
    }
}

/// Options for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// Overrides the server's tool timeout, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The lowest level of `notifications/message` wanted during this call from a
    /// 2026-07-28 server, sent in the request's `_meta` instead of the server's
    /// `logLevel` (the gateway passes its downstream client's on). A server of the
    /// `initialize` era has one level per session, set by `logging/setLevel`.
    pub log_level: Option<&'static str>,
    /// Runs the call as a task (MCP 2025-11-25) when its tool allows one
    /// (`execution.taskSupport: optional`); a tool that requires one runs as one
    /// anyway. A tool that does not take tasks, or a server that does not run
    /// them, fails the call saying so. A 2026-07-28 server with the tasks
    /// extension decides itself which calls run as tasks: there this asks
    /// nothing more.
    pub task: bool,
    /// Who the call is for, when that is not the embedder: what it can be asked
    /// (see [`Caller`]).
    pub caller: Option<Caller>,
}

/// What the one a call is made for can answer, when that is not the embedder
/// (the gateway's downstream client). A 2026-07-28 server is sent the client
/// capabilities of each request in its `_meta`: the call's request declares
/// `elicitation` and `sampling` only where the caller declared them too (and
/// the embedder enabled them), so that a server does not offer work that needs
/// a question to a caller who cannot be asked. A server of the `initialize` era
/// has one set of capabilities per session, declared in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caller {
    /// The caller declared form-mode elicitation.
    pub elicitation: bool,
    /// The caller declared `sampling`.
    pub sampling: bool,
    /// The caller declared `sampling.tools`.
    pub sampling_tools: bool,
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
    /// The permission rules refuse the call (the text names the rule), or
    /// nobody approved it.
    Denied(String),
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CallError::UnknownTool(m)
            | CallError::InvalidArguments(m)
            | CallError::ServerUnavailable(m)
            | CallError::Timeout(m)
            | CallError::Protocol(m)
            | CallError::Denied(m) => f.write_str(m),
            CallError::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// A finished call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedCall {
    /// The handle `start_call` returned.
    pub call: u64,
    /// The result or why there is none.
    pub outcome: Result<CallResult, CallError>,
}

#[derive(Debug)]
pub(super) struct PendingCall {
    pub(super) call: u64,
    /// The registry name, for messages.
    pub(super) name: String,
    /// The server's name for the tool and the arguments, to send the call again
    /// with input responses.
    pub(super) tool: String,
    pub(super) arguments: Box<RawValue>,
    pub(super) timeout_ms: u64,
    pub(super) deadline_ms: u64,
    /// [`CallOptions::log_level`].
    pub(super) log_level: Option<&'static str>,
    /// [`CallOptions::task`].
    pub(super) task: bool,
    /// [`CallOptions::caller`].
    pub(super) caller: Option<Caller>,
    /// `input_required` answers so far.
    pub(super) rounds: u32,
}

impl PendingCall {
    /// The tool's name on its server.
    pub(super) fn tool(&self) -> &str {
        &self.tool
    }
}

impl Client {
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
        let Ok(arguments) = RawValue::from_string(arguments.to_string()) else {
            self.events.push(ClientEvent::Finished(FinishedCall {
                call,
                outcome: Err(CallError::InvalidArguments(format!(
                    "arguments for {name} are not valid JSON"
                ))),
            }));
            return;
        };
        let deadline_ms = now_ms.saturating_add(timeout_ms);
        let options = CallOptions::default();
        self.start_call_until(
            call,
            name,
            tool,
            arguments,
            timeout_ms,
            deadline_ms,
            options,
        );
    }

    /// Like [`Client::start_call`], with the arguments as the registry read them
    /// (`registry::check_arguments`: not read again here) and a first deadline
    /// set by the caller: a call that waited for its server to restart keeps the
    /// deadline it started with. Progress still pushes the deadline back by the
    /// full `timeout_ms`; of `options`, [`CallOptions::log_level`],
    /// [`CallOptions::task`] and [`CallOptions::caller`] are read here (the
    /// caller resolved the timeout).
    #[allow(clippy::too_many_arguments)]
    pub fn start_call_until(
        &mut self,
        call: u64,
        name: &str,
        tool: &str,
        arguments: Box<RawValue>,
        timeout_ms: u64,
        deadline_ms: u64,
        options: CallOptions,
    ) {
        if options.task
            && let Err(why) = self.task_refused(name, tool)
        {
            let outcome = Err(CallError::InvalidArguments(why));
            return self
                .events
                .push(ClientEvent::Finished(FinishedCall { call, outcome }));
        }
        let pending = PendingCall {
            call,
            name: name.to_string(),
            tool: tool.to_string(),
            arguments,
            timeout_ms,
            deadline_ms,
            log_level: options.log_level,
            task: options.task,
            caller: options.caller,
            rounds: 0,
        };
        self.send_call(pending, None, None);
    }

    /// Sends `tools/call` for `call`, with the answers to its input requests when
    /// it is a retry.
    pub(super) fn send_call(
        &mut self,
        call: PendingCall,
        input_responses: Option<&serde_json::Map<String, Value>>,
        request_state: Option<&Value>,
    ) {
        let id = self.slots.next_id();
        let params = CallParams {
            name: &call.tool,
            arguments: &call.arguments,
            input_responses,
            request_state,
            task: self.as_task(&call).then_some(TaskParams {
                ttl: super::tasks::TASK_TTL_MS,
            }),
            meta: self.request_meta_for(Some(&id), call.log_level, call.caller),
        };
        let text = jsonrpc::request(&id, methods::TOOLS_CALL, Some(&params));
        let mut meta = self.meta(Some(methods::TOOLS_CALL), Some(&call.tool));
        meta.id = Some(id.to_json());
        if let Some(annotated) = self.tools.param_headers.get(&call.tool) {
            meta.param_headers = param_headers(annotated, call.arguments.get());
        }
        self.outbox.push(Outgoing { text, meta });
        self.deadlines.due_by(call.deadline_ms);
        self.slots.pending.insert(id, Pending::Call(call));
    }

    /// A call is over: reports it and withdraws whatever input it still waits for.
    pub(super) fn finish(
        &mut self,
        call: u64,
        outcome: Result<CallResult, CallError>,
        connected: bool,
    ) {
        self.input.rounds.remove(&call);
        self.withdraw_inputs(Some(call), connected);
        self.events
            .push(ClientEvent::Finished(FinishedCall { call, outcome }));
        // Requests tied to no known call end with the last call in flight.
        if !self.calls_in_flight() {
            // Nothing in `pending` has a deadline now.
            self.deadlines.none_due();
            self.withdraw_inputs(None, connected);
        }
    }

    /// Completes every call in flight with `error(name)`, for a lost connection
    /// or a shutdown. Nothing is sent: the connection is gone.
    pub fn abort_calls(&mut self, error: impl Fn(&str) -> CallError) {
        let pending = core::mem::take(&mut self.slots.pending);
        self.deadlines.none_due();
        let rounds = core::mem::take(&mut self.input.rounds);
        self.abort_tasks(&error);
        let mut calls = Vec::new();
        for p in pending.into_values() {
            match p {
                Pending::Call(c) => calls.push(c),
                Pending::Request(r) => {
                    let label = r.label(&self.server);
                    self.finish(r.call, Err(error(&label)), false);
                }
                Pending::Listen(l) => {
                    for r in l.waiting {
                        let label = r.label(&self.server);
                        self.finish(r.call, Err(error(&label)), false);
                    }
                }
                _ => {}
            }
        }
        self.subscriptions.listen_id = None;
        let calls = calls
            .into_iter()
            .chain(rounds.into_values().map(|r| r.call));
        for c in calls {
            self.finish(c.call, Err(error(&c.name)), false);
        }
        // Input requests of no call, too: their server is gone.
        let keys: Vec<u64> = self.input.waiting.keys().copied().collect();
        for key in keys {
            self.withdraw(key, false);
        }
        self.tools.listing = None;
    }

    /// The server answered a call: its result, a request for input, or an error.
    pub(super) fn on_call_response(
        &mut self,
        id: Id,
        c: PendingCall,
        outcome: Result<Box<RawValue>, Failure>,
    ) {
        let c = match &outcome {
            Ok(raw) if self.as_task(&c) => match self.on_task_created(id.clone(), c, raw) {
                Ok(()) => return,
                Err(c) => c,
            },
            _ => c,
        };
        let outcome = match outcome {
            Ok(raw) => match read_call_result(&c.name, &raw) {
                Ok(CallAnswer::Result(result)) => Ok(result),
                Ok(CallAnswer::InputRequired) => return self.on_input_required(c, &raw),
                Ok(CallAnswer::Task) if self.era == super::Era::Stateless => {
                    return self.on_extension_task_created(id, c, &raw);
                }
                Ok(CallAnswer::Task) => Err(CallError::Protocol(format!(
                    "{}: the server sent a malformed tools/call result (resultType \"task\", \
                     which only a 2026-07-28 server's tasks extension sends)",
                    c.name
                ))),
                Err(e) => Err(e),
            },
            Err(Failure::Rpc(e)) if e.code == crate::elicitation::URL_ELICITATION_REQUIRED => Err(
                CallError::Protocol(crate::elicitation::url_required(&c.name, &e)),
            ),
            Err(e) => Err(CallError::Protocol(format!("{} failed: {e}", c.name))),
        };
        self.finish(c.call, outcome, true);
    }
}

/// What a `tools/call` answer is.
#[derive(Debug)]
pub(super) enum CallAnswer {
    /// The tool's result.
    Result(CallResult),
    /// `resultType: "input_required"` (2026-07-28): the server wants input first.
    InputRequired,
    /// `resultType: "task"` (the 2026-07-28 tasks extension): a task handle, to
    /// poll to the result (see `tasks`).
    Task,
}

/// Reads a `tools/call` result.
pub(super) fn read_call_result(name: &str, raw: &RawValue) -> Result<CallAnswer, CallError> {
    let malformed = |why: String| {
        CallError::Protocol(format!(
            "{name}: the server sent a malformed tools/call result ({why})"
        ))
    };
    let result: RawCallResult =
        serde_json::from_str(raw.get()).map_err(|e| malformed(e.to_string()))?;
    match result_kind(result.result_type.as_ref()) {
        ResultKind::Complete => {}
        ResultKind::InputRequired => return Ok(CallAnswer::InputRequired),
        ResultKind::Other(kind) if kind == "task" => return Ok(CallAnswer::Task),
        ResultKind::Other(kind) => return Err(malformed(format!("unknown resultType {kind:?}"))),
    }
    // The blocks one level deep, and of each only `type` and `text`: the rest
    // (a resource 10,000 levels deep, a number like 1e999) is skipped, not built,
    // and passes through in `content` as the server wrote it.
    let blocks: Vec<&RawValue> = match result.content {
        Some(c) => {
            serde_json::from_str(c.get()).map_err(|_| malformed("content is not a list".into()))?
        }
        None => Vec::new(),
    };
    let mut texts: Vec<String> = blocks
        .iter()
        .filter_map(|b| serde_json::from_str::<Block<'_>>(b.get()).ok())
        .filter(|b| b.kind.is_some_and(is_text_kind))
        .filter_map(|b| serde_json::from_str::<String>(b.text?.get()).ok())
        .collect();
    // One text block, the usual answer, is the text itself: no copy to join.
    let text = if texts.len() == 1 {
        texts.pop().unwrap_or_default()
    } else {
        texts.join("\n")
    };
    Ok(CallAnswer::Result(CallResult {
        is_error: result.is_error.unwrap_or(false),
        text,
        content: result
            .content
            .map_or_else(|| "[]".to_string(), |c| c.get().to_string()),
        structured_content: result
            .structured_content
            .map(|s| s.get().to_string())
            .filter(|s| s != "null"),
    }))
}

/// Whether a block's `type` is `"text"`, written plainly (no string to build)
/// or with escapes.
fn is_text_kind(kind: &RawValue) -> bool {
    kind.get() == r#""text""#
        || serde_json::from_str::<String>(kind.get()).is_ok_and(|k| k == "text")
}

/// What the flat text view reads of a content block.
#[derive(serde::Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

pub(super) fn tool_error(text: String) -> CallResult {
    let quoted = serde_json::to_string(&text).unwrap_or_default();
    CallResult {
        is_error: true,
        content: format!(r#"[{{"type":"text","text":{quoted}}}]"#),
        text,
        structured_content: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{feed, ready, sent};
    use super::*;
    use serde_json::json;

    #[test]
    fn slots_number_requests_and_remember_a_bounded_number_given_up_on() {
        let mut slots = Slots::default();
        assert_eq!(slots.next_id(), Id::Number(1));
        assert_eq!(slots.next_id(), Id::Number(2));
        for n in 0..=ABANDONED_MEMORY as i64 {
            slots.remember_abandoned(Id::Number(n));
        }
        assert_eq!(slots.abandoned.len(), ABANDONED_MEMORY);
        // The oldest was forgotten to make room; the newest is forgotten once.
        assert!(!slots.forget_abandoned(&Id::Number(0)));
        assert!(slots.forget_abandoned(&Id::Number(ABANDONED_MEMORY as i64)));
        assert!(!slots.forget_abandoned(&Id::Number(ABANDONED_MEMORY as i64)));
        assert_eq!(slots.due(), u64::MAX);
        assert!(!slots.any_with_deadline());
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
        assert!(c.calls_in_flight());
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
        assert!(!c.calls_in_flight());
        assert!(matches!(
            &c.take_events()[..],
            [ClientEvent::Finished(FinishedCall {
                call: 9,
                outcome: Ok(_)
            })]
        ));
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
            matches!(&events[0], ClientEvent::Finished(FinishedCall { call: 1, outcome: Err(CallError::ServerUnavailable(m)) }) if m == "mcp__demo__a: gone")
        );
        assert_eq!(c.pending_calls(), 0);
        assert!(!c.calls_in_flight());
    }
}
