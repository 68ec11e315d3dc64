//! Tasks (MCP 2025-11-25): a call that the server runs in the background and the
//! client polls to its result.
//!
//! A tool declares `execution.taskSupport`; one that says `required` refuses a
//! plain call, so the client sends its `tools/call` with `task: {ttl}`, as it
//! does for an `optional` one when the caller asks ([`super::CallOptions::task`]; asked
//! of a tool that takes no task, the call fails before anything is sent). The server
//! answers at once with a `CreateTaskResult` (`task`: `taskId`, `status`, maybe
//! `statusMessage` and `pollInterval`); the call then lives here, not in the
//! pending requests: `tasks/get` every `pollInterval` (kept between
//! [`MIN_POLL_MS`] and [`MAX_POLL_MS`], [`DEFAULT_POLL_MS`] when the server gives
//! none) reports its status, each change a [`ClientEvent::TaskStatus`]; once the
//! status is terminal, or `input_required`, `tasks/result` is sent. A server's
//! `notifications/tasks/status` counts as a `tasks/get` answer. That request
//! is where a server delivers what it wants from the client meanwhile (an
//! `elicitation/create` tied to the task by `_meta`
//! `io.modelcontextprotocol/related-task`, which goes through the ordinary
//! input-request path), and its answer is the tool's result, which finishes the
//! call as a plain call's would.
//!
//! The call's timeout counts time without news: a status that changes, or a
//! `notifications/progress` with the call's progress token (the id its
//! `tools/call` went under), pushes the deadline back by the full timeout, as
//! progress does for a plain call. A call that times out, or that the caller
//! cancels, sends `tasks/cancel`. A 2026-07-28 server's tasks (the
//! `io.modelcontextprotocol/tasks` extension) are not offered yet: its calls go
//! out plain.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

use super::calls::{PendingCall, read_call_result};
use super::wire::{TaskIdParams, TaskState};
use super::{CallError, Client, ClientEvent, Era, Pending};
use crate::jsonrpc::Id;
use crate::methods;
use crate::registry::{TaskSupport, ToolDef};
use crate::transport::{Failure, format_ms};

/// How often a task is polled when its server suggests nothing.
pub(super) const DEFAULT_POLL_MS: u64 = 1000;
/// The shortest poll interval taken from a server: a smaller hint would have the
/// client flood it.
pub(super) const MIN_POLL_MS: u64 = 100;
/// The longest: a task's status is shown while the caller waits.
pub(super) const MAX_POLL_MS: u64 = 30_000;
/// How long the server is asked to keep a task and its result (`task.ttl`).
pub(super) const TASK_TTL_MS: u64 = 300_000;

/// What the client knows of tasks: which tools need one, and the calls running
/// as tasks.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    /// `execution.taskSupport` of the listed tools that are not `forbidden`.
    support: BTreeMap<String, TaskSupport>,
    /// The calls running as tasks, by call handle.
    running: BTreeMap<u64, RunningTask>,
}

/// A call the server runs as a task.
#[derive(Debug)]
pub(super) struct RunningTask {
    call: PendingCall,
    task_id: String,
    /// The id the `tools/call` went under: the progress token.
    token: Id,
    status: String,
    message: Option<String>,
    poll_ms: u64,
    /// When the next `tasks/get` goes; none while one is in flight.
    next_poll: Option<u64>,
    /// `tasks/result` was sent.
    result_asked: bool,
}

/// A task's status, as [`ClientEvent::TaskStatus`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStatus {
    /// The call it runs.
    pub call: u64,
    /// The registry name of the call's tool.
    pub tool: String,
    /// The server's `taskId`.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// `statusMessage`, if any.
    pub message: Option<String>,
}

impl Tasks {
    /// Takes the tools' `execution.taskSupport` from a new tool list.
    pub(super) fn learn(&mut self, tools: &[ToolDef]) {
        self.support = tools
            .iter()
            .filter(|t| t.task_support != TaskSupport::Forbidden)
            .map(|t| (t.name.clone(), t.task_support))
            .collect();
    }

    /// How many calls run as tasks.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.running.len()
    }

    /// Whether no call runs as a task.
    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The deadlines and poll times of the running tasks.
    pub(super) fn deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.running
            .values()
            .flat_map(|t| [Some(t.call.deadline_ms), t.next_poll])
            .flatten()
    }

    /// The call (handle and registry name) a task id belongs to.
    pub(super) fn call_of(&self, task_id: &str) -> Option<(u64, String)> {
        self.running
            .values()
            .find(|t| t.task_id == task_id)
            .map(|t| (t.call.call, t.call.name.clone()))
    }

    /// Every running call (handle and registry name).
    pub(super) fn calls(&self) -> impl Iterator<Item = (u64, String)> + '_ {
        self.running
            .values()
            .map(|t| (t.call.call, t.call.name.clone()))
    }
}

impl Client {
    /// Whether a call goes out as a task: the server speaks 2025-11-25 and its
    /// tool requires one, or allows one and the caller asked for it.
    pub(super) fn as_task(&self, call: &PendingCall) -> bool {
        self.era == Era::Legacy
            && match self.tasks.support.get(call.tool()) {
                Some(TaskSupport::Required) => true,
                Some(TaskSupport::Optional) => call.task,
                _ => false,
            }
    }

    /// Why a call the caller asked to run as a task cannot run as one, naming
    /// the tool (`name`, its registry name; `tool`, its server's) and the fix.
    pub(super) fn task_refused(&self, name: &str, tool: &str) -> Result<(), String> {
        if self.era != Era::Legacy {
            return Err(format!(
                "{name} cannot run as a task: its server speaks 2026-07-28, whose tasks (the \
                 io.modelcontextprotocol/tasks extension) mcpbox does not run yet; call it \
                 without asking for a task"
            ));
        }
        match self.tasks.support.get(tool) {
            Some(_) => Ok(()),
            None => Err(format!(
                "{name} cannot run as a task: the tool does not take one (its \
                 execution.taskSupport is forbidden or absent); call it without asking for a task"
            )),
        }
    }

    /// A call sent as a task was answered: a `CreateTaskResult` starts polling;
    /// anything else is read as a plain result (a server may run it at once).
    /// `Err` gives the call back when the answer holds no task.
    pub(super) fn on_task_created(
        &mut self,
        token: Id,
        c: PendingCall,
        raw: &RawValue,
    ) -> Result<(), PendingCall> {
        #[derive(serde::Deserialize)]
        struct Created {
            task: Option<TaskState>,
        }
        let Some(task) = serde_json::from_str::<Created>(raw.get())
            .ok()
            .and_then(|created| created.task)
        else {
            return Err(c);
        };
        let call = c.call;
        let mut running = RunningTask {
            call: c,
            task_id: task.task_id.clone(),
            token,
            status: String::new(),
            message: None,
            poll_ms: DEFAULT_POLL_MS,
            next_poll: None,
            result_asked: false,
        };
        running.call.deadline_ms = self.now_ms.saturating_add(running.call.timeout_ms);
        self.tasks.running.insert(call, running);
        self.on_task_state(call, task);
        Ok(())
    }

    /// A status from `CreateTaskResult` or `tasks/get`: reported when it changed;
    /// `tasks/result` asked for once it is terminal or `input_required`; the next
    /// poll scheduled while it is not terminal.
    fn on_task_state(&mut self, call: u64, state: TaskState) {
        let now = self.now_ms;
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return;
        };
        if let Some(ms) = state.poll_interval.as_ref().and_then(Value::as_u64) {
            task.poll_ms = ms.clamp(MIN_POLL_MS, MAX_POLL_MS);
        }
        let changed = task.status != state.status || task.message != state.status_message;
        if changed {
            task.status = state.status.clone();
            task.message = state.status_message.clone();
            task.call.deadline_ms = now.saturating_add(task.call.timeout_ms);
            let event = ClientEvent::TaskStatus(TaskStatus {
                call,
                tool: task.call.name.clone(),
                task_id: task.task_id.clone(),
                status: state.status.clone(),
                message: state.status_message.clone(),
            });
            self.events.push(event);
        }
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return;
        };
        let terminal = matches!(state.status.as_str(), "completed" | "failed" | "cancelled");
        task.next_poll = (!terminal).then(|| now.saturating_add(task.poll_ms));
        if state.status == "cancelled" && !task.result_asked {
            // Not by the caller (that call has ended): the server gave up.
            let why = format!(
                "{}: the server cancelled its task {}{}",
                task.call.name,
                task.task_id,
                task.message
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            );
            self.tasks.running.remove(&call);
            return self.finish(call, Err(CallError::Protocol(why)), true);
        }
        if (terminal || state.status == "input_required") && !task.result_asked {
            task.result_asked = true;
            let task_id = task.task_id.clone();
            self.request(
                methods::TASKS_RESULT,
                None,
                Some(&TaskIdParams { task_id: &task_id }),
                Pending::TaskResult(call),
            );
        }
    }

    /// `notifications/tasks/status`: the status of a running task, as a
    /// `tasks/get` answer would give it; one about no running task is dropped.
    pub(super) fn on_task_status_notification(&mut self, params: Value) {
        let Ok(state) = serde_json::from_value::<TaskState>(params) else {
            return;
        };
        let call = self
            .tasks
            .running
            .values()
            .find(|t| t.task_id == state.task_id)
            .map(|t| t.call.call);
        if let Some(call) = call {
            let polling = self.tasks.running.get(&call).map(|t| t.next_poll);
            self.on_task_state(call, state);
            // A poll in flight schedules the next one when it is answered.
            if polling == Some(None)
                && let Some(task) = self.tasks.running.get_mut(&call)
            {
                task.next_poll = None;
            }
        }
    }

    /// Sends `tasks/get` for the tasks whose poll is due, and gives up on those
    /// whose deadline passed (sending `tasks/cancel`).
    pub(super) fn tick_tasks(&mut self, now_ms: u64) {
        let due: Vec<(u64, bool)> = self
            .tasks
            .running
            .values()
            .filter_map(|t| {
                if t.call.deadline_ms <= now_ms {
                    Some((t.call.call, true))
                } else if t.next_poll.is_some_and(|at| at <= now_ms) {
                    Some((t.call.call, false))
                } else {
                    None
                }
            })
            .collect();
        for (call, expired) in due {
            if expired {
                let Some(task) = self.tasks.running.remove(&call) else {
                    continue;
                };
                self.send_task_cancel(&task.task_id);
                let why = format!(
                    "{} timed out after {} without news of its task {} (last status: {}); the server was sent tasks/cancel",
                    task.call.name,
                    format_ms(task.call.timeout_ms),
                    task.task_id,
                    task.status
                );
                self.finish(call, Err(CallError::Timeout(why)), true);
            } else if let Some(task) = self.tasks.running.get_mut(&call) {
                task.next_poll = None;
                let task_id = task.task_id.clone();
                self.request(
                    methods::TASKS_GET,
                    None,
                    Some(&TaskIdParams { task_id: &task_id }),
                    Pending::TaskGet(call),
                );
            }
        }
    }

    /// The answer to a `tasks/get`.
    pub(super) fn on_task_get(&mut self, call: u64, outcome: Result<Box<RawValue>, Failure>) {
        let Some(task) = self.tasks.running.get(&call) else {
            return; // The call ended meanwhile.
        };
        let state = outcome.map_err(|e| e.to_string()).and_then(|raw| {
            serde_json::from_str::<TaskState>(raw.get()).map_err(|e| e.to_string())
        });
        match state {
            Ok(state) => self.on_task_state(call, state),
            Err(e) => {
                let why = format!(
                    "{}: tasks/get for its task {} failed: {e}",
                    task.call.name, task.task_id
                );
                self.tasks.running.remove(&call);
                self.finish(call, Err(CallError::Protocol(why)), true);
            }
        }
    }

    /// The answer to `tasks/result`: the tool's result, which ends the call.
    pub(super) fn on_task_result(&mut self, call: u64, outcome: Result<Box<RawValue>, Failure>) {
        let Some(task) = self.tasks.running.remove(&call) else {
            return; // The call ended meanwhile.
        };
        let name = &task.call.name;
        let outcome = match outcome {
            Ok(raw) => match read_call_result(name, &raw) {
                Ok(Some(result)) => Ok(result),
                Ok(None) => Err(CallError::Protocol(format!(
                    "{name}: the server answered tasks/result with input_required, which a 2025-11-25 task does not use"
                ))),
                Err(e) => Err(e),
            },
            Err(e) => Err(CallError::Protocol(format!(
                "{name}: its task {} ended {}: {e}",
                task.task_id,
                if task.status.is_empty() {
                    "badly"
                } else {
                    &task.status
                }
            ))),
        };
        self.finish(call, outcome, true);
    }

    /// Cancels the task of `call`, if it runs as one: `tasks/cancel` goes to the
    /// server; the caller finishes the call.
    pub(super) fn cancel_task(&mut self, call: u64) -> bool {
        let Some(task) = self.tasks.running.remove(&call) else {
            return false;
        };
        self.send_task_cancel(&task.task_id);
        true
    }

    fn send_task_cancel(&mut self, task_id: &str) {
        self.request(
            methods::TASKS_CANCEL,
            None,
            Some(&TaskIdParams { task_id }),
            Pending::TaskCancel,
        );
    }

    /// `notifications/progress` with a running task's progress token: pushes its
    /// deadline back; the call it belongs to, if any.
    pub(super) fn task_progress(&mut self, token: &Id, now_ms: u64) -> Option<u64> {
        let task = self
            .tasks
            .running
            .values_mut()
            .find(|t| t.token == *token)?;
        task.call.deadline_ms = now_ms.saturating_add(task.call.timeout_ms);
        Some(task.call.call)
    }

    /// Ends every running task's call with `error(name)`: the connection is gone.
    pub(super) fn abort_tasks(&mut self, error: &impl Fn(&str) -> CallError) {
        let running = core::mem::take(&mut self.tasks.running);
        for task in running.into_values() {
            self.finish(task.call.call, Err(error(&task.call.name)), false);
        }
    }
}

/// The call a server request belongs to by its `_meta`
/// `io.modelcontextprotocol/related-task`, as its task id.
pub(super) fn related_task(params: &Value) -> Option<&str> {
    params
        .get("_meta")?
        .get("io.modelcontextprotocol/related-task")?
        .get("taskId")?
        .as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{CallOptions, CallResult, FinishedCall};
    use serde_json::json;

    fn sent(c: &mut Client) -> Vec<Value> {
        c.take_outbox()
            .into_iter()
            .map(|o| serde_json::from_str(&o.text).unwrap())
            .collect()
    }

    fn feed(c: &mut Client, v: Value, now: u64) {
        c.handle_text(&v.to_string(), now);
    }

    /// A 2025-11-25 session whose tool `research` requires a task, with a call
    /// to it (handle 7, timeout 10 s) answered by a `working` task that asks to
    /// be polled every 500 ms; with the `tools/call` it sent.
    fn running() -> (Client, Value) {
        let mut c = Client::new("demo");
        c.begin();
        sent(&mut c);
        let init = json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "s"},
            "capabilities": {"tools": {}, "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": init}),
            0,
        );
        sent(&mut c);
        let tools = json!([
            {"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
            {"name": "echo", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
            {"name": "plain", "inputSchema": {"type": "object"}}]);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}}),
            0,
        );
        assert_eq!(c.phase(), crate::client::Phase::Ready);
        c.take_events();
        c.start_call(
            7,
            "mcp__demo__research",
            "research",
            r#"{"topic":"wasm"}"#,
            10_000,
            0,
        );
        let call = sent(&mut c).remove(0);
        let task = json!({"task": {"taskId": "t1", "status": "working", "statusMessage": "Gathering",
            "createdAt": "2025-11-25T00:00:00Z", "ttl": 300000, "pollInterval": 500}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call["id"], "result": task}),
            100,
        );
        (c, call)
    }

    fn status(events: &[ClientEvent]) -> Vec<(String, Option<String>)> {
        events
            .iter()
            .filter_map(|e| match e {
                ClientEvent::TaskStatus(s) => Some((s.status.clone(), s.message.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_required_tool_is_called_as_a_task_and_polled_to_its_result() {
        let (mut c, call) = running();
        assert_eq!(call["method"], "tools/call");
        assert_eq!(call["params"]["task"], json!({"ttl": TASK_TTL_MS}));
        assert_eq!(
            status(&c.take_events()),
            [("working".into(), Some("Gathering".into()))]
        );
        assert!(c.calls_in_flight());
        // Polled at the server's interval, not before.
        assert_eq!(c.next_deadline(), Some(600));
        c.tick(599);
        assert!(sent(&mut c).is_empty());
        c.tick(600);
        let get = sent(&mut c).remove(0);
        assert_eq!(get["method"], "tasks/get");
        assert_eq!(get["params"], json!({"taskId": "t1"}));
        // The same status again is no news.
        let same = json!({"taskId": "t1", "status": "working", "statusMessage": "Gathering"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": same}),
            610,
        );
        assert!(c.take_events().is_empty());
        c.tick(1110);
        let get = sent(&mut c).remove(0);
        let done = json!({"taskId": "t1", "status": "completed"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": done}),
            1120,
        );
        assert_eq!(status(&c.take_events()), [("completed".into(), None)]);
        let result = sent(&mut c).remove(0);
        assert_eq!(result["method"], "tasks/result");
        assert_eq!(result["params"], json!({"taskId": "t1"}));
        // Polling stops at a terminal status.
        c.tick(5000);
        assert!(sent(&mut c).is_empty());
        let report = json!({"content": [{"type": "text", "text": "# Report"}]});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": result["id"], "result": report}),
            5010,
        );
        let events = c.take_events();
        let [
            ClientEvent::Finished(FinishedCall {
                call: 7,
                outcome:
                    Ok(CallResult {
                        text,
                        is_error: false,
                        ..
                    }),
            }),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert_eq!(text, "# Report");
        assert!(!c.calls_in_flight());
        // An optional tool goes out plain.
        c.start_call(8, "mcp__demo__echo", "echo", "{}", 10_000, 6000);
        assert!(sent(&mut c)[0]["params"].get("task").is_none());
    }

    #[test]
    fn an_optional_tool_runs_as_a_task_when_the_caller_asks() {
        let (mut c, _) = running();
        c.take_events();
        let task = CallOptions {
            task: true,
            ..CallOptions::default()
        };
        let args = || RawValue::from_string("{}".into()).unwrap();
        c.start_call_until(8, "mcp__demo__echo", "echo", args(), 10_000, 10_000, task);
        let call = sent(&mut c).remove(0);
        assert_eq!(call["params"]["task"], json!({"ttl": TASK_TTL_MS}));
        let created = json!({"task": {"taskId": "t2", "status": "working"}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call["id"], "result": created}),
            200,
        );
        assert_eq!(status(&c.take_events()), [("working".into(), None)]);
        assert_eq!(c.tasks.call_of("t2"), Some((8, "mcp__demo__echo".into())));

        // A tool that takes no task: the call fails at once, saying why and what
        // to do, and nothing is sent.
        c.start_call_until(9, "mcp__demo__plain", "plain", args(), 10_000, 10_000, task);
        assert!(sent(&mut c).is_empty());
        let events = c.take_events();
        let [
            ClientEvent::Finished(FinishedCall {
                call: 9,
                outcome: Err(CallError::InvalidArguments(why)),
            }),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert!(
            why.contains("mcp__demo__plain cannot run as a task")
                && why.contains("without asking for a task"),
            "{why}"
        );
    }

    #[test]
    fn tasks_list_follows_every_page_and_lists_each_task() {
        let (mut c, _) = running();
        assert!(c.offers().tasks_list, "the server declared tasks.list");
        c.take_events();
        c.start_request(20, crate::client::Request::ListTasks, 10_000, 200);
        let list = sent(&mut c).remove(0);
        assert_eq!(list["method"], "tasks/list");
        let page = json!({"tasks": [{"taskId": "t1", "status": "working"}], "nextCursor": "2"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": list["id"], "result": page}),
            210,
        );
        let next = sent(&mut c).remove(0);
        assert_eq!(next["method"], "tasks/list");
        assert_eq!(next["params"]["cursor"], "2");
        let page = json!({"tasks": [{"taskId": "t0", "status": "completed"}]});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": next["id"], "result": page}),
            220,
        );
        let events = c.take_events();
        let Some(ClientEvent::Finished(FinishedCall {
            call: 20,
            outcome: Ok(listed),
        })) = events.last()
        else {
            panic!("{events:?}")
        };
        assert_eq!(listed.text, "t1\nt0");
        let tasks: Value = serde_json::from_str(&listed.content).unwrap();
        assert_eq!(tasks[1], json!({"taskId": "t0", "status": "completed"}));
    }

    #[test]
    fn input_required_asks_for_the_result_where_the_server_sends_its_request() {
        let (mut c, _) = running();
        c.enable_input_requests();
        c.tick(600);
        let get = sent(&mut c).remove(0);
        let asking = json!({"taskId": "t1", "status": "input_required"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": asking}),
            610,
        );
        let out = sent(&mut c);
        assert_eq!(out[0]["method"], "tasks/result");
        // The request names its task: it belongs to call 7.
        let elicit = json!({"jsonrpc": "2.0", "id": 90, "method": "elicitation/create", "params": {
            "message": "Which?", "requestedSchema": {"type": "object"},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}}});
        feed(&mut c, elicit, 620);
        let asked = c.take_events();
        assert!(
            asked
                .iter()
                .any(|e| matches!(e, ClientEvent::InputRequested(r) if r.call == Some(7))),
            "{asked:?}"
        );
        // Still polled meanwhile; tasks/result is not asked twice.
        c.tick(1200);
        let get = sent(&mut c).remove(0);
        let working = json!({"taskId": "t1", "status": "working"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": working}),
            1210,
        );
        c.tick(1800);
        let get = sent(&mut c).remove(0);
        let done = json!({"taskId": "t1", "status": "completed"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": done}),
            1810,
        );
        assert!(sent(&mut c).iter().all(|m| m["method"] != "tasks/result"));
    }

    #[test]
    fn cancelling_or_timing_out_sends_tasks_cancel() {
        let (mut c, _) = running();
        c.take_events();
        assert!(c.cancel(7));
        let out = sent(&mut c);
        assert_eq!(out[0]["method"], "tasks/cancel");
        assert_eq!(out[0]["params"], json!({"taskId": "t1"}));
        assert!(matches!(
            &c.take_events()[..],
            [ClientEvent::Finished(FinishedCall {
                call: 7,
                outcome: Err(CallError::Cancelled)
            })]
        ));
        assert!(!c.calls_in_flight());
        c.tick(5000);
        assert!(sent(&mut c).is_empty(), "no poll after the cancel");

        // Ten seconds without news: given up, and the server told.
        let (mut c, _) = running();
        c.take_events();
        let mut now = 100;
        let mut out = Vec::new();
        while now < 10_100 {
            now = c.next_deadline().unwrap();
            c.tick(now);
            let got = sent(&mut c);
            out.extend(got.iter().cloned());
            for get in got.into_iter().filter(|m| m["method"] == "tasks/get") {
                let same =
                    json!({"taskId": "t1", "status": "working", "statusMessage": "Gathering"});
                feed(
                    &mut c,
                    json!({"jsonrpc": "2.0", "id": get["id"], "result": same}),
                    now,
                );
            }
        }
        assert!(out.iter().any(|m| m["method"] == "tasks/cancel"), "{out:?}");
        let events = c.take_events();
        let [
            ClientEvent::Finished(FinishedCall {
                call: 7,
                outcome: Err(CallError::Timeout(why)),
            }),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert!(
            why.contains("task t1") && why.contains("tasks/cancel"),
            "{why}"
        );
    }

    #[test]
    fn a_status_notification_counts_as_a_poll_answer() {
        let (mut c, _) = running();
        c.take_events();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
            "params": {"taskId": "t1", "status": "completed", "ttl": 300000}});
        feed(&mut c, note, 200);
        assert_eq!(status(&c.take_events()), [("completed".into(), None)]);
        assert_eq!(sent(&mut c)[0]["method"], "tasks/result");
        // One about a task nobody runs changes nothing.
        let other = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
            "params": {"taskId": "t9", "status": "working"}});
        feed(&mut c, other, 210);
        assert!(c.take_events().is_empty());
    }

    #[test]
    fn a_failed_task_fails_its_call_with_the_servers_error() {
        let (mut c, _) = running();
        c.tick(600);
        let get = sent(&mut c).remove(0);
        let failed = json!({"taskId": "t1", "status": "failed", "statusMessage": "boom"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": failed}),
            610,
        );
        let result = sent(&mut c).remove(0);
        let error = json!({"code": -32603, "message": "research failed"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": result["id"], "error": error}),
            620,
        );
        let events = c.take_events();
        let Some(ClientEvent::Finished(FinishedCall {
            call: 7,
            outcome: Err(CallError::Protocol(why)),
        })) = events.last()
        else {
            panic!("{events:?}")
        };
        assert!(
            why.contains("task t1 ended failed") && why.contains("research failed"),
            "{why}"
        );
    }
}
