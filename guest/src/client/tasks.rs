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
//! cancels, sends `tasks/cancel`. While a question of the task's (an
//! elicitation, a sampling request) waits for the embedder, the timeout is
//! paused: the wait is the embedder's, not the server's; the answer restarts it
//! in full.
//!
//! A task lives on the server, not on the exchange that polls it: a `tasks/get`
//! whose exchange failed below JSON-RPC (an HTTP error status, a stream cut off,
//! a proxy that dropped the connection) ends nothing. The task is polled again
//! after twice the wait of the last try (up to [`MAX_POLL_MS`]), a warning saying
//! so; a failed poll is no news, so the timeout runs on and, when it ends the
//! call, its error names the last failure.
//!
//! # The 2026-07-28 tasks extension
//!
//! A 2026-07-28 server that lists [`EXTENSION`] in its `server/discover`
//! capabilities is told in each request's `_meta` client capabilities that
//! this client takes it too. Task creation is then the server's choice: any
//! `tools/call` may be answered with a task handle (`resultType: "task"`, a
//! flat `taskId`, `status`, `pollIntervalMs`, `ttlMs`) in place of its result;
//! the caller's `task` option asks for nothing more on the wire. The handle is
//! polled with `tasks/get` (carrying the same `_meta`) at `pollIntervalMs`,
//! kept between [`MIN_POLL_MS`] and [`MAX_POLL_MS`] as above; its answer has
//! what the task ended with inlined (`result` when `completed`, a JSON-RPC
//! `error` when `failed`), so there is no `tasks/result`. While the task is
//! `input_required`, each new entry of its `inputRequests` goes through the
//! input path as a 2026-07-28 call's do, and each answer goes back at once with
//! `tasks/update` (`inputResponses` keyed as the requests were). Cancel and
//! timeout send `tasks/cancel`. What a server may not do, and what the call
//! ends with if it does (an error naming the server, the task and the field):
//! a malformed handle, a handle whose task id another running call already
//! has, a `tasks/get` answered about another task, a status that leaves a
//! terminal one, `completed` or `failed` polled with nothing inlined, and a
//! task the server no longer knows (`tasks/get` refused with -32602).

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use serde_json::value::RawValue;

use super::calls::{CallAnswer, PendingCall, read_call_result};
use super::elicitation::{InputTarget, Reading};
use super::wire::{ExtensionTask, TaskIdParams, TaskState};
use super::{CallError, CallResult, Client, ClientEvent, Era, Pending};
use crate::jsonrpc::{INVALID_PARAMS, Id};
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
/// The 2026-07-28 tasks extension's identifier.
pub(super) const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The statuses a task may have.
const STATUSES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
];

/// Whether a task with this status has ended.
fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

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
    /// A question of the task's waits for the embedder: the deadline does not
    /// run (see the module docs).
    paused: bool,
    /// A task of the 2026-07-28 extension (see the module docs), not a
    /// 2025-11-25 one.
    extension: bool,
    /// The extension's `inputRequests` keys already put to the embedder or
    /// answered: a later poll that lists them again asks nothing twice.
    asked: BTreeSet<String>,
    /// The `tasks/get` exchanges that failed in a row, and how the last one did
    /// (see the module docs).
    failed_polls: u32,
    last_failure: Option<String>,
}

/// The calls running as tasks on a connection that is going away, handed to
/// the server's next connection (see [`Client::hand_over_tasks`]).
#[derive(Debug, Default)]
pub struct HandedTasks(Vec<RunningTask>);

impl HandedTasks {
    /// Whether no call was handed over.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The calls handed over: handle and registry name.
    pub fn calls(&self) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.0.iter().map(|t| (t.call.call, t.call.name.as_str()))
    }

    /// Drops call `call`; whether it was handed over.
    pub fn remove(&mut self, call: u64) -> bool {
        let before = self.0.len();
        self.0.retain(|t| t.call.call != call);
        self.0.len() != before
    }
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
            .flat_map(|t| [(!t.paused).then_some(t.call.deadline_ms), t.next_poll])
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
            // The server decides which of the calls that declare the extension
            // become tasks: this one will (see `capabilities_for`).
            return match self.offers.tasks_extension {
                true => Ok(()),
                false => Err(format!(
                    "{name} cannot run as a task: its server `{}` speaks 2026-07-28 and does \
                     not offer the {EXTENSION} extension (its server/discover capabilities do \
                     not list it); call it without asking for a task",
                    self.server
                )),
            };
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
        let call = self.start_running(c, task.task_id.clone(), token, false);
        self.on_task_state(call, task);
        Ok(())
    }

    /// A status from `CreateTaskResult` or `tasks/get`: reported when it changed;
    /// `tasks/result` asked for once it is terminal or `input_required`; the next
    /// poll scheduled while it is not terminal.
    fn on_task_state(&mut self, call: u64, state: TaskState) {
        let now = self.now_ms;
        if !self.note_task_status(
            call,
            &state.status,
            state.status_message.clone(),
            state.poll_interval.as_ref(),
        ) {
            return;
        }
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return;
        };
        let terminal = terminal(&state.status);
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
                Some(&TaskIdParams {
                    task_id: &task_id,
                    input_responses: None,
                    meta: None,
                }),
                Pending::TaskResult(call),
            );
        }
    }

    /// Takes a task's status, poll hint and message: a change is reported (and
    /// is news, which pushes the deadline back). A status that leaves a terminal
    /// one ends the call with an error, and false is returned.
    fn note_task_status(
        &mut self,
        call: u64,
        status: &str,
        message: Option<String>,
        poll_hint: Option<&Value>,
    ) -> bool {
        let now = self.now_ms;
        let server = &self.server;
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return false;
        };
        if terminal(&task.status) && task.status != status {
            let why = format!(
                "{}: server `{server}` said its task {} was {} and then {status}; a task that \
                 ended does not run again, so the call ends here",
                task.call.name, task.task_id, task.status
            );
            self.tasks.running.remove(&call);
            self.finish(call, Err(CallError::Protocol(why)), true);
            return false;
        }
        // The hint is read as a number of any size: 0 or 10^9 is clamped, not
        // taken (no spinning, no stall) and not refused.
        if let Some(ms) = poll_hint.and_then(Value::as_f64) {
            task.poll_ms = (ms.max(0.0) as u64).clamp(MIN_POLL_MS, MAX_POLL_MS);
        }
        if task.status != status || task.message != message {
            task.status = status.to_string();
            task.message = message.clone();
            task.call.deadline_ms = now.saturating_add(task.call.timeout_ms);

            let event = ClientEvent::TaskStatus(TaskStatus {
                call,
                tool: task.call.name.clone(),
                task_id: task.task_id.clone(),
                status: status.to_string(),
                message,
            });
            self.events.push(event);
        }
        true
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
        if let Some(task) = call.and_then(|call| self.tasks.running.get_mut(&call))
            && task.extension
        {
            // The extension's form differs: taken as news to poll for now.
            if task.next_poll.is_some() {
                task.next_poll = Some(self.now_ms);
            }
            return;
        }
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
                if t.call.deadline_ms <= now_ms && !t.paused {
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
                self.send_task_cancel(&task);
                let polls = match &task.last_failure {
                    Some(how) => format!(
                        "; its last {} poll(s) failed, the last with: {how}",
                        task.failed_polls
                    ),
                    None => String::new(),
                };
                let why = format!(
                    "{} timed out after {} without news of its task {} (last status: {}{polls}); the server was sent tasks/cancel",
                    task.call.name,
                    format_ms(task.call.timeout_ms),
                    task.task_id,
                    task.status
                );
                self.finish(call, Err(CallError::Timeout(why)), true);
            } else if let Some(task) = self.tasks.running.get_mut(&call) {
                task.next_poll = None;
                let task_id = task.task_id.clone();
                let meta = self.task_meta(call);
                // The extension's requests name their task in `Mcp-Name`,
                // as a 2026-07-28 request names its tool (SEP-2243).
                let header = meta.is_some().then_some(task_id.as_str());
                self.request(
                    methods::TASKS_GET,
                    header,
                    Some(&TaskIdParams {
                        task_id: &task_id,
                        input_responses: None,
                        meta,
                    }),
                    Pending::TaskGet(call),
                );
            }
        }
    }

    /// The answer to a `tasks/get`.
    pub(super) fn on_task_get(&mut self, call: u64, outcome: Result<Box<RawValue>, Failure>) {
        let now = self.now_ms;
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return; // The call ended meanwhile.
        };
        if let Err(Failure::Exchange(how)) = &outcome {
            // The exchange failed, not the task: poll again, later each time.
            task.failed_polls = task.failed_polls.saturating_add(1);
            let wait = task
                .poll_ms
                .saturating_mul(1 << task.failed_polls.min(8))
                .min(MAX_POLL_MS);
            task.next_poll = Some(now.saturating_add(wait));
            task.last_failure = Some(how.clone());
            let warning = format!(
                "{}: tasks/get for its task {} on server `{}` failed ({how}); polling again in {}",
                task.call.name,
                task.task_id,
                self.server,
                format_ms(wait)
            );
            return self.warn(warning);
        }
        task.failed_polls = 0;
        task.last_failure = None;
        let task = &*task;
        if let Err(Failure::Rpc(e)) = &outcome
            && e.code == INVALID_PARAMS
        {
            let why = format!(
                "{}: server `{}` no longer knows its task {} (tasks/get was refused: {}); the \
                 task's result is lost",
                task.call.name, self.server, task.task_id, e.message
            );
            self.tasks.running.remove(&call);
            return self.finish(call, Err(CallError::Protocol(why)), true);
        }
        if task.extension {
            return match outcome {
                Ok(raw) => self.on_extension_answer(call, &raw, true),
                Err(e) => {
                    let why = format!(
                        "{}: tasks/get for its task {} failed: {e}",
                        task.call.name, task.task_id
                    );
                    self.end_task(call, Err(CallError::Protocol(why)), false);
                }
            };
        }
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
                Ok(CallAnswer::Result(result)) => Ok(result),
                Ok(CallAnswer::InputRequired | CallAnswer::Task) => {
                    Err(CallError::Protocol(format!(
                        "{name}: the server answered tasks/result with input_required or a task, which a 2025-11-25 task does not use"
                    )))
                }
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

    /// Keeps call `c` as running task `task_id` (of the extension, or a
    /// 2025-11-25 one), its timeout counted from now; its handle.
    fn start_running(
        &mut self,
        c: PendingCall,
        task_id: String,
        token: Id,
        extension: bool,
    ) -> u64 {
        let call = c.call;
        let mut running = RunningTask {
            call: c,
            task_id,
            token,
            status: String::new(),
            message: None,
            poll_ms: DEFAULT_POLL_MS,
            next_poll: None,
            result_asked: false,
            paused: false,
            extension,
            asked: BTreeSet::new(),
            failed_polls: 0,
            last_failure: None,
        };
        running.call.deadline_ms = self.now_ms.saturating_add(running.call.timeout_ms);
        self.tasks.running.insert(call, running);
        call
    }

    /// Cancels the task of `call`, if it runs as one: `tasks/cancel` goes to the
    /// server; the caller finishes the call.
    pub(super) fn cancel_task(&mut self, call: u64) -> bool {
        let Some(task) = self.tasks.running.remove(&call) else {
            return false;
        };
        self.send_task_cancel(&task);
        true
    }

    fn send_task_cancel(&mut self, task: &RunningTask) {
        let meta = task
            .extension
            .then(|| self.request_meta_for(None, None, task.call.caller, true));
        self.request(
            methods::TASKS_CANCEL,
            task.extension.then_some(task.task_id.as_str()),
            Some(&TaskIdParams {
                task_id: &task.task_id,
                input_responses: None,
                meta,
            }),
            Pending::TaskCancel,
        );
    }

    /// The `_meta` of a request about the task of `call`: the 2026-07-28
    /// fields (the tasks extension among the client capabilities, which the
    /// server requires of `tasks/*`) for the extension's, none for 2025-11-25.
    fn task_meta(&self, call: u64) -> Option<super::wire::RequestMeta<'static>> {
        let task = self.tasks.running.get(&call)?;
        task.extension
            .then(|| self.request_meta_for(None, None, task.call.caller, true))
    }

    /// Ends the call of a running task with `outcome`; `cancel`: the server is
    /// sent `tasks/cancel` first (it may still be running it).
    fn end_task(&mut self, call: u64, outcome: Result<CallResult, CallError>, cancel: bool) {
        let Some(task) = self.tasks.running.remove(&call) else {
            return;
        };
        if cancel {
            self.send_task_cancel(&task);
        }
        self.finish(call, outcome, true);
    }

    /// A call was answered with a task handle of the 2026-07-28 extension:
    /// polling starts (see the module docs).
    pub(super) fn on_extension_task_created(&mut self, token: Id, c: PendingCall, raw: &RawValue) {
        let state = match self.read_extension_task(&c.name, "task handle", raw) {
            Ok(state) => state,
            Err(why) => return self.finish(c.call, Err(CallError::Protocol(why)), true),
        };
        if let Some((_, other)) = self.tasks.call_of(&state.task_id) {
            let why = format!(
                "{}: server `{}` answered with a handle for task {}, which a running call \
                 ({other}) already has; a task id names one task",
                c.name, self.server, state.task_id
            );
            return self.finish(c.call, Err(CallError::Protocol(why)), true);
        }
        let call = self.start_running(c, state.task_id.clone(), token, true);
        self.on_extension_state(call, state, false);
    }

    /// A `tasks/get` answer (`polled`) or a handle, of an extension task.
    fn on_extension_answer(&mut self, call: u64, raw: &RawValue, polled: bool) {
        let Some(task) = self.tasks.running.get(&call) else {
            return;
        };
        let name = task.call.name.clone();
        match self.read_extension_task(&name, "tasks/get answer", raw) {
            Ok(state) => self.on_extension_state(call, state, polled),
            Err(why) => self.end_task(call, Err(CallError::Protocol(why)), true),
        }
    }

    /// Reads an extension task, naming the server and the field that is wrong.
    fn read_extension_task(
        &self,
        name: &str,
        what: &str,
        raw: &RawValue,
    ) -> Result<Extension, String> {
        let malformed = |why: &str| {
            format!(
                "{name}: server `{}` sent a malformed {what} ({why})",
                self.server
            )
        };
        let task: ExtensionTask =
            serde_json::from_str(raw.get()).map_err(|e| malformed(&e.to_string()))?;
        let task_id = match &task.task_id {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            Some(other) => {
                return Err(malformed(&format!(
                    "`taskId` must be a non-empty string, not {other}"
                )));
            }
            None => return Err(malformed("`taskId` is missing")),
        };
        let status = match &task.status {
            Some(Value::String(status)) if STATUSES.contains(&status.as_str()) => status.clone(),
            Some(other) => {
                return Err(malformed(&format!(
                    "`status` must be one of {}, not {other}",
                    STATUSES.join(", ")
                )));
            }
            None => return Err(malformed("`status` is missing")),
        };
        Ok(Extension {
            task_id,
            status,
            message: task
                .status_message
                .as_ref()
                .and_then(Value::as_str)
                .map(String::from),
            poll_interval_ms: task.poll_interval_ms,
            result: task.result,
            error: task.error,
            input_requests: task.input_requests,
        })
    }

    /// An extension task's state, from its handle or a `tasks/get` answer
    /// (`polled`): reported, then the call ends with what is inlined, or its
    /// questions go to the embedder, or the next poll is set.
    fn on_extension_state(&mut self, call: u64, state: Extension, polled: bool) {
        let now = self.now_ms;
        let Some(task) = self.tasks.running.get(&call) else {
            return;
        };
        let name = task.call.name.clone();
        if state.task_id != task.task_id {
            let why = format!(
                "{name}: server `{}` answered tasks/get for its task {} with task {}; the call \
                 ends here and its task is cancelled",
                self.server, task.task_id, state.task_id
            );
            return self.end_task(call, Err(CallError::Protocol(why)), true);
        }
        if !self.note_task_status(
            call,
            &state.status,
            state.message.clone(),
            state.poll_interval_ms.as_ref(),
        ) {
            return;
        }
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return;
        };
        let task_id = task.task_id.clone();
        task.next_poll = Some(now.saturating_add(task.poll_ms));
        let server = self.server.clone();
        let missing = |what: &str| {
            format!(
                "{name}: server `{server}` answered tasks/get for its task {task_id} with status \
                 {} and no `{what}`",
                state.status
            )
        };
        match state.status.as_str() {
            // A handle carries no result: its end is read with a poll at once.
            "completed" | "failed" if !polled => task.next_poll = Some(now),
            "completed" => {
                let outcome = match state.result.as_deref().map(|r| read_call_result(&name, r)) {
                    Some(Ok(CallAnswer::Result(result))) => Ok(result),
                    Some(Ok(_)) => Err(CallError::Protocol(format!(
                        "{name}: server `{server}` inlined a result of its task {task_id} that \
                         is not a tool result (`result.resultType` is not complete)"
                    ))),
                    Some(Err(e)) => Err(e),
                    None => Err(CallError::Protocol(missing("result"))),
                };
                self.end_task(call, outcome, false);
            }
            "failed" => {
                let why = match &state.error {
                    Some(error) => format!(
                        "{name}: its task {task_id} failed: {} ({})",
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("no message"),
                        error.get("code").map(Value::to_string).unwrap_or_default()
                    ),
                    None => missing("error"),
                };
                self.end_task(call, Err(CallError::Protocol(why)), false);
            }
            "cancelled" => {
                let why = format!(
                    "{name}: server `{server}` cancelled its task {task_id}{}",
                    state
                        .message
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                );
                self.end_task(call, Err(CallError::Protocol(why)), false);
            }
            "input_required" => self.ask_task_inputs(call, &name, state.input_requests),
            _ => {}
        }
    }

    /// The `inputRequests` of an `input_required` extension task: each one not
    /// asked yet goes to the embedder (or is answered at once: roots); one
    /// nobody here can answer ends the call with the tool error that says so,
    /// and cancels the task.
    fn ask_task_inputs(&mut self, call: u64, name: &str, requests: Option<Value>) {
        let Some(Value::Object(requests)) = requests else {
            return; // A handle carries none: the next poll brings them.
        };
        let mut answers = Vec::new();
        for (key, request) in requests {
            let Some(task) = self.tasks.running.get_mut(&call) else {
                return;
            };
            if !task.asked.insert(key.clone()) {
                continue;
            }
            match self.read_input(name, &request) {
                Reading::Ask(question) => {
                    self.ask(
                        Some((call, name.to_string())),
                        question,
                        InputTarget::Task(key),
                    );
                }
                Reading::Answer(answer) => answers.push((key, answer)),
                Reading::End(result) => return self.end_task(call, Ok(result), true),
            }
        }
        for (key, answer) in answers {
            self.send_task_update(call, key, answer);
        }
    }

    /// An answer to one of an extension task's `inputRequests`: sent at once
    /// with `tasks/update`, and the task polled again at once.
    pub(super) fn send_task_update(&mut self, call: u64, key: String, answer: Value) {
        let Some(task) = self.tasks.running.get_mut(&call) else {
            return;
        };
        if task.next_poll.is_some() {
            task.next_poll = Some(self.now_ms);
        }
        let task_id = task.task_id.clone();
        let meta = self.task_meta(call);
        let mut responses = serde_json::Map::new();
        responses.insert(key, answer);
        self.request(
            methods::TASKS_UPDATE,
            Some(&task_id),
            Some(&TaskIdParams {
                task_id: &task_id,
                input_responses: Some(&responses),
                meta,
            }),
            Pending::TaskUpdate(call),
        );
    }

    /// The answer to `tasks/update`: an acknowledgement, or an error that ends
    /// the call (the task would wait for an answer it never gets).
    pub(super) fn on_task_update(&mut self, call: u64, outcome: Result<Box<RawValue>, Failure>) {
        let Err(e) = outcome else {
            return;
        };
        let Some(task) = self.tasks.running.get(&call) else {
            return;
        };
        let why = format!(
            "{}: server `{}` refused the answers for its task {} (tasks/update: {e})",
            task.call.name, self.server, task.task_id
        );
        self.end_task(call, Err(CallError::Protocol(why)), true);
    }

    /// A sampling request of an extension task was refused: the task cannot
    /// go on, so it is cancelled and the call ends with a tool error saying why.
    pub(super) fn end_task_unanswered(&mut self, call: u64, refused: &str) {
        let Some(task) = self.tasks.running.get(&call) else {
            return;
        };
        let text = format!(
            "{}: the server asked for a message from the model, and {refused}; its task {} was cancelled",
            task.call.name, task.task_id
        );
        self.end_task(call, Ok(super::calls::tool_error(text)), true);
    }

    /// A question of the task of `call` went to the embedder: the call's
    /// deadline stops running.
    pub(super) fn task_waits_for_input(&mut self, call: u64) {
        if let Some(task) = self.tasks.running.get_mut(&call) {
            task.paused = true;
        }
    }

    /// A question of the task of `call` was answered or withdrawn: once none
    /// waits, the deadline runs again, in full.
    pub(super) fn task_input_answered(&mut self, call: u64) {
        let waiting = self.input.waiting.values().any(|w| w.call == Some(call));
        if let Some(task) = self.tasks.running.get_mut(&call)
            && task.paused
            && !waiting
        {
            task.paused = false;
            task.call.deadline_ms = self.now_ms.saturating_add(task.call.timeout_ms);
        }
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

    /// Takes the calls running as tasks, for the server's next connection: a
    /// task lives on its server, not on a connection, so its caller waits on
    /// while the next connection's client polls it ([`Client::adopt_tasks`]).
    /// Their questions waiting for the embedder are withdrawn: the next poll
    /// asks them again.
    pub fn hand_over_tasks(&mut self) -> HandedTasks {
        let running = core::mem::take(&mut self.tasks.running);
        for call in running.keys() {
            self.withdraw_inputs(Some(*call), false);
        }
        HandedTasks(running.into_values().collect())
    }

    /// Takes over the tasks of the server's previous connection, once this one
    /// is ready: each is polled at once, its deadline started afresh. A task
    /// of the other era (the server came back speaking another) cannot be
    /// polled here, and its call ends saying so; one the server no longer
    /// knows ends at its first poll, naming the server and the task.
    pub fn adopt_tasks(&mut self, handed: HandedTasks) {
        let now = self.now_ms;
        for mut task in handed.0 {
            let call = task.call.call;
            if task.extension != (self.era == Era::Stateless) {
                let why = format!(
                    "{}: server `{}` came back speaking {}, so its task {} of the earlier \
                     connection cannot be followed",
                    task.call.name,
                    self.server,
                    self.era.as_str(),
                    task.task_id
                );
                self.finish(call, Err(CallError::ServerUnavailable(why)), true);
                continue;
            }
            task.next_poll = Some(now);
            task.result_asked = false;
            task.asked.clear();
            task.paused = false;
            task.call.deadline_ms = now.saturating_add(task.call.timeout_ms);
            self.tasks.running.insert(call, task);
        }
    }

    /// Ends every running task's call with `error(name)`: the connection is gone.
    pub(super) fn abort_tasks(&mut self, error: &impl Fn(&str) -> CallError) {
        let running = core::mem::take(&mut self.tasks.running);
        for task in running.into_values() {
            self.finish(task.call.call, Err(error(&task.call.name)), false);
        }
    }
}

/// An extension task as read and checked ([`Client::read_extension_task`]).
struct Extension {
    task_id: String,
    status: String,
    message: Option<String>,
    poll_interval_ms: Option<Value>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
    input_requests: Option<Value>,
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
    use crate::client::{CallOptions, FinishedCall};
    use crate::elicitation::InputAnswer;
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

    /// A 2026-07-28 session whose server offers the tasks extension, with a
    /// call to `research` (handle 7, timeout 10 s) answered by a task handle
    /// (`working`, poll every 500 ms); with the `tools/call` it sent.
    fn extension_running(input: bool) -> (Client, Value) {
        let mut c = Client::new("modern");
        if input {
            c.enable_input_requests();
        }
        c.detect(None, 0);
        sent(&mut c);
        let discovered = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discovered}),
            0,
        );
        sent(&mut c);
        let tools = json!([{"name": "research", "inputSchema": {"type": "object"}}]);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": tools}}),
            0,
        );
        assert_eq!(c.phase(), crate::client::Phase::Ready);
        c.take_events();
        let task = CallOptions {
            task: true,
            ..CallOptions::default()
        };
        let args = RawValue::from_string("{}".into()).unwrap();
        c.start_call_until(
            7,
            "mcp__modern__research",
            "research",
            args,
            10_000,
            10_000,
            task,
        );
        let call = sent(&mut c).remove(0);
        let handle = json!({"resultType": "task", "taskId": "t1", "status": "working",
            "statusMessage": "Gathering", "createdAt": "2026-07-28T00:00:00Z",
            "lastUpdatedAt": "2026-07-28T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 500});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call["id"], "result": handle}),
            100,
        );
        (c, call)
    }

    /// Answers the next `tasks/get` (due at `at`) with `task`; the request.
    fn poll(c: &mut Client, at: u64, task: Value) -> Value {
        c.tick(at);
        let out = sent(c);
        let get = out
            .iter()
            .find(|m| m["method"] == "tasks/get")
            .unwrap_or_else(|| panic!("a tasks/get at {at}: {out:?}"))
            .clone();
        feed(
            c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": task}),
            at + 10,
        );
        get
    }

    fn ended(c: &mut Client) -> Result<CallResult, CallError> {
        let events = c.take_events();
        events
            .into_iter()
            .find_map(|e| match e {
                ClientEvent::Finished(FinishedCall { call: 7, outcome }) => Some(outcome),
                _ => None,
            })
            .expect("call 7 ended")
    }

    #[test]
    fn an_extension_task_handle_is_polled_to_its_inlined_result() {
        let (mut c, call) = extension_running(false);
        // A call that asks for a task declares the extension: the server offered it.
        let declared = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(declared["extensions"][EXTENSION], json!({}), "{call}");
        assert!(call["params"].get("task").is_none(), "no 2025 task member");
        assert_eq!(
            status(&c.take_events()),
            [("working".into(), Some("Gathering".into()))]
        );
        assert_eq!(c.next_deadline(), Some(600));
        let done = json!({"resultType": "complete", "taskId": "t1", "status": "completed",
            "result": {"content": [{"type": "text", "text": "# Report"}], "isError": false}});
        c.tick(600);
        let out = c.take_outbox();
        // The task is named in `Mcp-Name`, as a 2026-07-28 server requires.
        assert_eq!(out[0].meta.name.as_deref(), Some("t1"));
        let get: Value = serde_json::from_str(&out[0].text).unwrap();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": done}),
            610,
        );
        assert_eq!(get["params"]["taskId"], "t1");
        let meta = &get["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"]["extensions"][EXTENSION],
            json!({})
        );
        assert_eq!(status(&c.events), [("completed".into(), None)]);
        assert_eq!(ended(&mut c).unwrap().text, "# Report");
        assert!(!c.calls_in_flight());
        assert!(sent(&mut c).is_empty(), "no tasks/result in the extension");
        // A plain call declares no tasks: the server answers it when it is done,
        // and closing its stream cancels it.
        c.start_call(8, "mcp__modern__research", "research", "{}", 10_000, 1_000);
        let plain = sent(&mut c).remove(0);
        let declared = &plain["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(declared.is_object(), "{plain}");
        assert_eq!(declared["extensions"].get(EXTENSION), None, "{plain}");
    }

    #[test]
    fn an_extension_tasks_poll_hint_is_bounded() {
        for (hint, next) in [
            (json!(0), 100 + MIN_POLL_MS),
            (json!(1e9), 100 + MAX_POLL_MS),
        ] {
            let (mut c, _) = extension_running(false);
            c.tick(600);
            let get = sent(&mut c).remove(0);
            let task = json!({"taskId": "t1", "status": "working", "pollIntervalMs": hint});
            feed(
                &mut c,
                json!({"jsonrpc": "2.0", "id": get["id"], "result": task}),
                100,
            );
            assert_eq!(c.tasks.running[&7].next_poll, Some(next), "hint {hint}");
        }
    }

    #[test]
    fn an_extension_tasks_questions_are_answered_with_tasks_update() {
        let (mut c, _) = extension_running(true);
        c.take_events();
        let ask = json!({"method": "elicitation/create", "params": {"message": "Which?",
            "requestedSchema": {"type": "object", "properties": {"pick": {"type": "string"}}}}});
        let asking = json!({"taskId": "t1", "status": "input_required",
            "inputRequests": {"q1": ask}});
        poll(&mut c, 600, asking.clone());
        let events = c.take_events();
        let key = events
            .iter()
            .find_map(|e| match e {
                ClientEvent::InputRequested(r) if r.call == Some(7) => Some(r.id),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{events:?}"));
        // While the embedder thinks, the call's timeout does not run, and a poll
        // that lists the same question asks nothing again.
        poll(&mut c, 1110, asking);
        assert!(c.take_events().is_empty());
        let mut now = 1120;
        while now < 30_000 {
            now = c.next_deadline().unwrap();
            c.tick(now);
            for get in sent(&mut c) {
                let still = json!({"taskId": "t1", "status": "input_required",
                    "inputRequests": {"q1": ask}});
                feed(
                    &mut c,
                    json!({"jsonrpc": "2.0", "id": get["id"], "result": still}),
                    now,
                );
            }
        }
        assert!(
            c.calls_in_flight(),
            "not timed out while the embedder is asked"
        );
        c.answer_input(key, &InputAnswer::Accept(r#"{"pick":"a"}"#.into()))
            .unwrap();
        let update = sent(&mut c).remove(0);
        assert_eq!(update["method"], "tasks/update");
        assert_eq!(update["params"]["taskId"], "t1");
        assert_eq!(
            update["params"]["inputResponses"]["q1"],
            json!({"action": "accept", "content": {"pick": "a"}})
        );
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": update["id"], "result": {"resultType": "complete"}}),
            now + 20,
        );
        let done = json!({"taskId": "t1", "status": "completed", "result": {"content": []}});
        poll(&mut c, now + 20, done);
        assert!(ended(&mut c).is_ok());
    }

    #[test]
    fn an_extension_task_is_cancelled_with_its_meta_on_cancel_and_timeout() {
        let (mut c, _) = extension_running(false);
        assert!(c.cancel(7));
        let out = sent(&mut c);
        assert_eq!(out[0]["method"], "tasks/cancel");
        assert_eq!(out[0]["params"]["taskId"], "t1");
        assert!(
            out[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object()
        );

        // A task that stays `working` forever: the timeout ends it and cancels.
        let (mut c, _) = extension_running(false);
        let mut now = 100;
        let mut out = Vec::new();
        while now < 10_100 {
            now = c.next_deadline().unwrap();
            c.tick(now);
            for m in sent(&mut c) {
                if m["method"] == "tasks/get" {
                    let same =
                        json!({"taskId": "t1", "status": "working", "statusMessage": "Gathering"});
                    feed(
                        &mut c,
                        json!({"jsonrpc": "2.0", "id": m["id"], "result": same}),
                        now,
                    );
                }
                out.push(m);
            }
        }
        assert!(out.iter().any(|m| m["method"] == "tasks/cancel"), "{out:?}");
        let Err(CallError::Timeout(why)) = ended(&mut c) else {
            panic!()
        };
        assert!(why.contains("task t1"), "{why}");
    }

    #[test]
    fn a_hostile_servers_extension_tasks_end_their_calls_with_clear_errors() {
        let expect = |c: &mut Client, words: &[&str]| {
            let Err(CallError::Protocol(why)) = ended(c) else {
                panic!("a protocol error")
            };
            for w in words {
                assert!(why.contains(w), "{w:?} in {why}");
            }
            assert!(!c.calls_in_flight());
        };
        // tasks/get answered about another task: ended, and its own cancelled.
        let (mut c, _) = extension_running(false);
        poll(&mut c, 600, json!({"taskId": "t2", "status": "working"}));
        expect(&mut c, &["server `modern`", "task t1", "with task t2"]);
        assert_eq!(sent(&mut c)[0]["method"], "tasks/cancel");

        // A status that leaves a terminal one.
        let (mut c, _) = extension_running(false);
        let call = {
            c.start_call(8, "mcp__modern__research", "research", "{}", 10_000, 200);
            sent(&mut c).remove(0)
        };
        let done = json!({"resultType": "task", "taskId": "t8", "status": "completed"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call["id"], "result": done}),
            210,
        );
        c.tick(210);
        let get = sent(&mut c)
            .into_iter()
            .find(|m| m["params"]["taskId"] == "t8")
            .unwrap();
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "result": {"taskId": "t8", "status": "working"}}),
            220,
        );
        let events = c.take_events();
        let why = events
            .iter()
            .find_map(|e| match e {
                ClientEvent::Finished(FinishedCall {
                    call: 8,
                    outcome: Err(CallError::Protocol(why)),
                }) => Some(why.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{events:?}"));
        assert!(why.contains("was completed and then working"), "{why}");

        // A task the server does not know (a handle for an id it never kept).
        let (mut c, _) = extension_running(false);
        c.tick(600);
        let get = sent(&mut c).remove(0);
        let unknown = json!({"code": -32602, "message": "Unknown taskId: t1"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": get["id"], "error": unknown}),
            610,
        );
        expect(
            &mut c,
            &[
                "server `modern`",
                "no longer knows its task t1",
                "Unknown taskId",
            ],
        );

        // A second handle with a running call's task id.
        let (mut c, _) = extension_running(false);
        c.start_call(8, "mcp__modern__research", "research", "{}", 10_000, 200);
        let call = sent(&mut c).remove(0);
        let again = json!({"resultType": "task", "taskId": "t1", "status": "working"});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": call["id"], "result": again}),
            210,
        );
        let events = c.take_events();
        assert!(
            events.iter().any(|e| matches!(e, ClientEvent::Finished(FinishedCall { call: 8, outcome: Err(CallError::Protocol(why)) }) if why.contains("already has"))),
            "{events:?}"
        );
        assert!(c.calls_in_flight(), "call 7 still runs");

        // Malformed handles, each naming the field.
        for (handle, field) in [
            (
                json!({"resultType": "task", "status": "working"}),
                "`taskId` is missing",
            ),
            (
                json!({"resultType": "task", "taskId": 5, "status": "working"}),
                "`taskId` must be",
            ),
            (
                json!({"resultType": "task", "taskId": "t9", "status": "done"}),
                "`status` must be one of",
            ),
        ] {
            let (mut c, _) = extension_running(false);
            c.take_events();
            c.start_call(8, "mcp__modern__research", "research", "{}", 10_000, 200);
            let call = sent(&mut c).remove(0);
            feed(
                &mut c,
                json!({"jsonrpc": "2.0", "id": call["id"], "result": handle}),
                210,
            );
            let events = c.take_events();
            assert!(
                events.iter().any(|e| matches!(e, ClientEvent::Finished(FinishedCall { call: 8, outcome: Err(CallError::Protocol(why)) })
                    if why.contains(field) && why.contains("server `modern`") && why.contains("malformed task handle"))),
                "{field}: {events:?}"
            );
        }
    }

    #[test]
    fn asking_for_a_task_of_a_2026_server_needs_the_extension() {
        let (c, _) = extension_running(false);
        assert!(c.task_refused("mcp__modern__research", "research").is_ok());
        let mut c = Client::new("plain");
        c.detect(None, 0);
        sent(&mut c);
        let discovered = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}});
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": discovered}),
            0,
        );
        let why = c.task_refused("mcp__plain__x", "x").unwrap_err();
        assert!(
            why.contains("server `plain`")
                && why.contains(EXTENSION)
                && why.contains("without asking for a task"),
            "{why}"
        );
    }

    /// A poll whose exchange failed (a proxy that dropped the connection, a
    /// 502) ends nothing: the task is polled again, later each time, with a
    /// warning, and its result still ends the call; for a task of either era.
    /// Failed polls are no news: the timeout that ends a task only ever polled
    /// in vain names the last failure.
    #[test]
    fn a_failed_poll_is_tried_again_and_the_task_goes_on() {
        for extension in [false, true] {
            let (mut c, _) = if extension {
                extension_running(false)
            } else {
                running()
            };
            c.take_events();
            let mut at = 600;
            let mut waits = Vec::new();
            for _ in 0..3 {
                c.tick(at);
                let get = sent(&mut c).remove(0);
                assert_eq!(get["method"], "tasks/get");
                let failure = Failure::Exchange("HTTP 502 Bad Gateway".into());
                c.handle_failure(&get["id"].to_string(), failure, at);
                let events = c.take_events();
                assert!(
                    matches!(&events[..], [ClientEvent::Warning(w)]
                        if w.contains("task t1") && w.contains("HTTP 502") && w.contains("polling again")),
                    "{events:?}"
                );
                let next = c.next_deadline().expect("a next poll");
                waits.push(next - at);
                at = next;
            }
            assert_eq!(waits, [1000, 2000, 4000], "extension: {extension}");
            let done = if extension {
                json!({"taskId": "t1", "status": "completed", "result": {"content": []}})
            } else {
                json!({"taskId": "t1", "status": "completed"})
            };
            poll(&mut c, at, done);
            if extension {
                assert!(ended(&mut c).is_ok(), "the task's result ends the call");
            } else {
                let result = sent(&mut c).remove(0);
                assert_eq!(result["method"], "tasks/result");
                let content = json!({"content": [{"type": "text", "text": "report"}]});
                feed(
                    &mut c,
                    json!({"jsonrpc": "2.0", "id": result["id"], "result": content}),
                    at + 20,
                );
                assert!(ended(&mut c).is_ok(), "the task's result ends the call");
            }
        }

        // Only failed polls for the whole timeout: the call ends naming the last.
        let (mut c, _) = running();
        c.take_events();
        while c.calls_in_flight() {
            let now = c.next_deadline().unwrap();
            c.tick(now);
            for get in sent(&mut c)
                .into_iter()
                .filter(|m| m["method"] == "tasks/get")
            {
                let failure = Failure::Exchange("connection reset".into());
                c.handle_failure(&get["id"].to_string(), failure, now);
            }
            assert!(now < 20_000, "the call ends within its timeout");
        }
        let Err(CallError::Timeout(why)) = ended(&mut c) else {
            panic!("a timeout")
        };
        assert!(
            why.contains("poll(s) failed, the last with: connection reset"),
            "{why}"
        );
    }

    #[test]
    fn a_task_handed_to_the_next_connection_is_polled_there() {
        let (mut old, _) = extension_running(true);
        // A question waits for the embedder when the connection goes.
        let ask = json!({"method": "elicitation/create", "params": {"message": "Which?",
            "requestedSchema": {"type": "object"}}});
        poll(
            &mut old,
            600,
            json!({"taskId": "t1", "status": "input_required",
            "inputRequests": {"q1": ask}}),
        );
        old.take_events();
        let handed = old.hand_over_tasks();
        assert_eq!(
            handed.calls().collect::<Vec<_>>(),
            [(7, "mcp__modern__research")]
        );
        assert!(
            old.take_events()
                .iter()
                .any(|e| matches!(e, ClientEvent::InputWithdrawn(_))),
            "the question of the old connection is withdrawn"
        );
        old.abort_calls(|name| CallError::ServerUnavailable(format!("{name}: gone")));
        assert!(
            old.take_events().is_empty(),
            "a handed call is not ended with the connection"
        );

        // The next connection polls it at once, asks its question again, and
        // ends the call with its result.
        let (mut new, _) = extension_running(true);
        new.cancel(7);
        new.take_events();
        sent(&mut new);
        new.adopt_tasks(handed);
        let asking = json!({"taskId": "t1", "status": "input_required",
            "inputRequests": {"q1": ask}});
        poll(&mut new, 100, asking);
        assert!(
            new.take_events()
                .iter()
                .any(|e| matches!(e, ClientEvent::InputRequested(r) if r.call == Some(7))),
            "asked again on the new connection"
        );
        let done = json!({"taskId": "t1", "status": "completed", "result": {"content": []}});
        poll(&mut new, 1200, done);
        assert!(ended(&mut new).is_ok());

        // A server that forgot the task: the call ends naming it.
        let (mut old, _) = extension_running(false);
        let handed = old.hand_over_tasks();
        let (mut new, _) = extension_running(false);
        new.cancel(7);
        new.take_events();
        sent(&mut new);
        new.adopt_tasks(handed);
        new.tick(100);
        let get = sent(&mut new).remove(0);
        let forgot = json!({"code": -32602, "message": "Unknown taskId"});
        feed(
            &mut new,
            json!({"jsonrpc": "2.0", "id": get["id"], "error": forgot}),
            110,
        );
        let Err(CallError::Protocol(why)) = ended(&mut new) else {
            panic!()
        };
        assert!(
            why.contains("server `modern` no longer knows its task t1"),
            "{why}"
        );
    }
}
