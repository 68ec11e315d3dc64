//! Tasks served to downstream clients (MCP 2025-11-25): a `tools/call` with
//! `task: {ttl}` answered at once with a task the client then polls.
//!
//! The gateway is the receiver of the client's task: it runs the call as any
//! other manager call (a tool whose server requires a task is run as one
//! upstream by the client side, which polls it there; any other tool runs as a
//! plain call) and keeps its task here, so a client may augment any tool the
//! gateway serves with `execution.taskSupport` (`optional` for every tool its
//! server runs as a task, `required` or `optional`: the gateway also takes a
//! plain call of a `required` tool, polling upstream on the client's behalf).
//! A task augmentation of a `forbidden` tool is refused with -32601, as the
//! spec has it.
//!
//! - Task ids are the gateway's own and belong to the session that made them:
//!   `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` of another
//!   session do not see them.
//! - Status: `working` (with the upstream task's `statusMessage`, when the
//!   server runs one); `input_required` while an upstream request for the call
//!   (an elicitation, a sampling request) waits for the client; `completed`,
//!   `failed` (a tool result with `isError`, or an error) or `cancelled`. Each
//!   change goes to the session's standalone stream as
//!   `notifications/tasks/status`; progress of the call goes there too.
//! - `tasks/result` waits for the end and answers with the tool's result (or
//!   error), with the task named in `_meta` `io.modelcontextprotocol/related-task`.
//!   An upstream request for the call is sent on a `tasks/result` exchange, as
//!   the spec has the receiver do: the client is told `input_required` and
//!   asks for the result, whose stream then carries the request.
//! - `tasks/cancel` cancels the manager call (which sends `tasks/cancel` or
//!   `notifications/cancelled` upstream).
//! - A finished task is kept for its `ttl` (the client's, at most
//!   [`MAX_TTL_MS`]); a session keeps at most [`MAX_TASKS_PER_SESSION`], the
//!   oldest finished one going first; when all of them run, a new one is
//!   refused. A session that ends cancels its running tasks.
//!
//! # The 2026-07-28 tasks extension
//!
//! A 2026-07-28 client declares `io.modelcontextprotocol/tasks` in a request's
//! `_meta` client capabilities (`server/discover` declares it too). The same
//! tasks serve it in the extension's wire form:
//!
//! - Task creation is the gateway's choice: a `tools/call` from such a request
//!   of a tool whose server runs it as a task (`execution.taskSupport` not
//!   `forbidden`, which only a 2025-11-25 server says) is answered at once with
//!   a flat `CreateTaskResult` (`resultType: "task"`, `taskId`, `status`,
//!   `ttlMs`, `pollIntervalMs`); any other call that is still running after
//!   [`TASK_AFTER_MS`] is answered with one then, in place of its result (a
//!   quick call gets its result, and a call that asks for input first gets its
//!   `input_required` round, the timer starting again with the retry). A `task`
//!   member in the request is not read. Without the extension the call is
//!   answered plainly, a `required` one too (the gateway polls upstream on the
//!   client's behalf, so it can answer without a task).
//! - `tasks/get` answers the task with what it ended with inlined: `result`
//!   when `completed` (a tool result with `isError` included), `error` when
//!   `failed` (a JSON-RPC error: the server's error, or one it never answered),
//!   and `inputRequests` while `input_required`. `tasks/update` answers those
//!   (`inputResponses` keyed as `inputRequests` were) through the same input
//!   path as any upstream request; a subset is taken, and the task stays
//!   `input_required` until every one is answered. `tasks/cancel` cancels a
//!   running task. Both acknowledge with an empty result, for any `taskId`, as
//!   the extension has it. `tasks/result` and `tasks/list` do not exist there
//!   (`-32601`), and the three methods from a request that did not declare the
//!   extension are refused with `-32021` naming it.
//! - Status changes go to the `subscriptions/listen` streams that named the
//!   task in `notifications.taskIds`, as `notifications/tasks/status` with the
//!   task as `tasks/get` has it.
//! - There is no session to keep such a task to: as the extension has it, its
//!   id is what gives access to it. Ids are unguessable (SHA-256 of the host's
//!   random secret and a serial, as `requestState` tokens are); a task of one
//!   profile's endpoint is not seen from another's, and never from a 2025
//!   session (nor a 2025 session's task from a 2026-07-28 request).

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::elicitation::{InputAnswer, InputRequest};
use crate::jsonrpc::{self, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::manager::Manager;
use crate::methods;
use crate::registry::TaskSupport;
use crate::transport::Platform;

use super::elicitation::Asked;
use super::exposure::Exposed;
use super::lifecycle::{
    META_SUBSCRIPTION_ID, MISSING_REQUIRED_CAPABILITY, Refusal, TASKS_EXTENSION,
};
use super::{DownCall, Gateway, Origin, Signal, Target, json_text, sampling};

/// The one revision whose sessions have tasks.
pub(super) const TASKS_VERSION: &str = "2025-11-25";
/// How long a finished task is kept when the client asks for no `ttl`.
pub const DEFAULT_TTL_MS: u64 = 300_000;
/// The longest a finished task is kept, whatever the client asks.
pub const MAX_TTL_MS: u64 = 3_600_000;
/// The poll interval suggested to clients.
pub const POLL_INTERVAL_MS: u64 = 1000;
/// How long a 2026-07-28 call of a client that takes tasks runs before it is
/// answered with a task in place of its result (an unsolicited task handle).
pub const TASK_AFTER_MS: u64 = 500;
/// The most tasks one session keeps.
pub const MAX_TASKS_PER_SESSION: usize = 256;
/// The most tasks the 2026-07-28 clients of one profile keep together (they
/// have no session to count them by).
pub const MAX_TASKS_PER_PROFILE: usize = 1024;
/// `_meta` key naming the task a message belongs to.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The tasks the gateway keeps for its clients.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    /// By task id.
    open: BTreeMap<String, DownTask>,
    /// The serial of the next task id.
    next: u64,
}

/// Who may use a task.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    /// A 2025-11-25 session.
    Session(u64),
    /// The 2026-07-28 clients of a profile's endpoint (the extension): no
    /// session; the unguessable id is what gives access.
    Caller(Option<String>),
}

impl Owner {
    fn of(origin: &Origin) -> Owner {
        match origin.stateless {
            Some(_) => Owner::Caller(origin.profile.clone()),
            None => Owner::Session(origin.session.unwrap_or_default()),
        }
    }

    /// The most tasks it keeps.
    fn limit(&self) -> usize {
        match self {
            Owner::Session(_) => MAX_TASKS_PER_SESSION,
            Owner::Caller(_) => MAX_TASKS_PER_PROFILE,
        }
    }

    /// Whether its tasks take the 2026-07-28 extension's wire form.
    fn extension(&self) -> bool {
        matches!(self, Owner::Caller(_))
    }
}

/// A downstream client's task.
#[derive(Debug)]
struct DownTask {
    owner: Owner,
    /// When it was made: the serial of its id, to drop the oldest first.
    serial: u64,
    /// The manager call it runs, while it runs.
    call: Option<u64>,
    status: &'static str,
    message: Option<String>,
    created_at: String,
    updated_at: String,
    ttl_ms: u64,
    /// When a finished task may be forgotten (monotonic ms).
    expires_ms: u64,
    /// The answer for `tasks/result`, once it ended.
    outcome: Option<Result<String, Refusal>>,
    /// `tasks/result` requests waiting for the end.
    waiting: Vec<Origin>,
    /// Upstream requests for the call: waiting for a `tasks/result` exchange
    /// (2025-11-25), or for `tasks/update` (the extension).
    pending: Vec<InputRequest>,
    /// Upstream requests sent to the client and not answered yet (input ids).
    asking: Vec<u64>,
}

impl DownTask {
    fn terminal(&self) -> bool {
        matches!(self.status, "completed" | "failed" | "cancelled")
    }

    fn json(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.message {
            task["statusMessage"] = Value::String(message.clone());
        }
        task
    }

    /// The task in the extension's wire form, as `tasks/get` answers it and
    /// status notifications carry it: what it ended with inlined, and the
    /// questions it waits on.
    fn detailed(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.message {
            task["statusMessage"] = Value::String(message.clone());
        }
        match (self.status, &self.outcome) {
            ("completed", Some(Ok(result))) => {
                task["result"] = serde_json::from_str(result).unwrap_or_else(|_| json!({}));
            }
            ("failed", Some(Err(refusal))) => {
                let mut error =
                    json!({"code": refusal.error.code, "message": refusal.error.message});
                if let Some(data) = &refusal.error.data {
                    error["data"] = data.clone();
                }
                task["error"] = error;
            }
            ("input_required", _) => {
                let asks: serde_json::Map<String, Value> = self
                    .pending
                    .iter()
                    .map(|r| (input_key(r), super::elicitation::input_request(r)))
                    .collect();
                task["inputRequests"] = Value::Object(asks);
            }
            _ => {}
        }
        task
    }
}

/// The key of an upstream request among a task's `inputRequests`.
fn input_key(r: &InputRequest) -> String {
    let kind = if r.sampling.is_some() {
        sampling::ROUND_KEY
    } else {
        "input"
    };
    format!("{kind}-{}", r.id)
}

/// `ms` after the Unix epoch as RFC 3339 (UTC, milliseconds).
pub(super) fn rfc3339(ms: u64) -> String {
    // Days to a civil date (Howard Hinnant's `civil_from_days`).
    let days = (ms / 86_400_000) as i64;
    let rest = ms % 86_400_000;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// The date now, for a task's stamps; the epoch on a platform with no wall clock.
fn date<P: Platform>(m: &Manager<P>) -> String {
    rfc3339(m.platform().wall_clock_ms().unwrap_or(0))
}

/// The `ttl` a `task` member asks for; `None` when it is not an object.
pub(super) fn requested(task: Option<&Value>) -> Option<u64> {
    let task = task?.as_object()?;
    let ttl = task
        .get("ttl")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TTL_MS);
    Some(ttl.min(MAX_TTL_MS))
}

/// Whether `method` is one of the task methods a 2025-11-25 session answers.
pub(super) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET | methods::TASKS_RESULT | methods::TASKS_LIST | methods::TASKS_CANCEL
    )
}

/// A tool result's `isError`.
fn is_error(result: &str) -> bool {
    serde_json::from_str::<Value>(result)
        .ok()
        .and_then(|v| v.get("isError").and_then(Value::as_bool))
        .unwrap_or(false)
}

/// A result object text with `_meta` naming its task.
fn with_related(result: &str, id: &str) -> String {
    match serde_json::from_str::<Value>(result) {
        Ok(Value::Object(mut o)) => {
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
            }
            json_text(&Value::Object(o))
        }
        _ => result.to_string(),
    }
}

fn not_found(id: &str) -> Refusal {
    Refusal::new(
        INVALID_PARAMS,
        format!("Invalid params: no task {id:?} here (it ended, or its ttl passed)"),
    )
}

/// Whether `method` is one of the extension's task methods (2026-07-28).
pub(super) fn is_extension_method(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
    )
}

/// An empty acknowledgement (the extension's `tasks/update` and `tasks/cancel`).
const ACK: &str = r#"{"resultType":"complete"}"#;

impl Gateway {
    /// Whether `origin` may make and use tasks: a 2025-11-25 session's request.
    pub(super) fn has_tasks(&self, origin: &Origin) -> bool {
        self.options.keeps_tasks
            && origin.stateless.is_none()
            && origin
                .session
                .and_then(|s| self.sessions.open.get(&s))
                .is_some_and(|s| s.protocol_version == TASKS_VERSION)
    }

    /// A task augmentation of `exposed` that cannot be: `Err` with the refusal.
    pub(super) fn check_task(&self, origin: &Origin, exposed: &Exposed) -> Result<(), Refusal> {
        if origin.task.is_none() {
            return Ok(());
        }
        if exposed.entry.tool.def.task_support == TaskSupport::Forbidden {
            return Err(Refusal::new(
                METHOD_NOT_FOUND,
                format!(
                    "Method not found: {} does not run as a task (its execution.taskSupport is \
                     forbidden); call it without `task`",
                    exposed.name
                ),
            ));
        }
        let owner = Owner::of(origin);
        if !self.full(&owner) {
            return Ok(());
        }
        let limit = owner.limit();
        let who = if owner.extension() {
            "the clients of this endpoint run"
        } else {
            "this session runs"
        };
        Err(Refusal::new(
            jsonrpc::INTERNAL_ERROR,
            format!(
                "{who} {limit} tasks already, the most allowed; wait for one to end or cancel one"
            ),
        ))
    }

    /// Whether `owner` keeps as many tasks as it may, all of them running.
    fn full(&self, owner: &Owner) -> bool {
        let (count, running) = self
            .tasks
            .open
            .values()
            .filter(|t| t.owner == *owner)
            .fold((0, 0), |(n, r), t| (n + 1, r + usize::from(!t.terminal())));
        count >= owner.limit() && running >= owner.limit()
    }

    /// Arms the timer of a 2026-07-28 call whose client takes tasks: past
    /// [`TASK_AFTER_MS`] it is answered with a task ([`Gateway::promote_due`]).
    pub(super) fn arm_task_after<P: Platform>(
        m: &mut Manager<P>,
        down: &mut DownCall,
        keeps_tasks: bool,
    ) {
        let takes_tasks = keeps_tasks
            && down
                .origin
                .stateless
                .as_ref()
                .is_some_and(|meta| meta.tasks);
        if takes_tasks && down.task.is_none() && down.origin.exchange.is_some() {
            let at = m.platform().now_ms().saturating_add(TASK_AFTER_MS);
            down.task_after = Some(at);
            m.wake_at(at);
        }
    }

    /// The calls of 2026-07-28 clients that take tasks and ran past
    /// [`TASK_AFTER_MS`] without an answer: each client gets a task in place of
    /// the result (the extension lets the server decide), and the call goes on
    /// as that task's.
    pub(super) fn promote_due<P: Platform>(&mut self, m: &mut Manager<P>) {
        let now = m.platform().now_ms();
        let due: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.task_after.is_some_and(|at| at <= now))
            .map(|(call, _)| *call)
            .collect();
        for call in due {
            let Some(mut down) = self.calls.remove(&call) else {
                continue;
            };
            down.task_after = None;
            let waiting = down.task.is_none() && down.origin.exchange.is_some() && !down.cancelled;
            if !waiting || self.full(&Owner::of(&down.origin)) {
                // Its client is to retry an input round, or has all the tasks it
                // may: it is answered as a plain call is.
                self.calls.insert(call, down);
                continue;
            }
            self.task_started(m, call, down, DEFAULT_TTL_MS);
        }
    }

    /// Whether a 2026-07-28 request's `tools/call` of `exposed` is to run as
    /// a task: the request declared the extension and the tool's server runs
    /// it as one.
    pub(super) fn extension_task(&self, origin: &Origin, exposed: &Exposed) -> bool {
        self.options.keeps_tasks
            && origin.stateless.as_ref().is_some_and(|m| m.tasks)
            && exposed.entry.tool.def.task_support != TaskSupport::Forbidden
    }

    /// The manager call `call` started for a task-augmented `tools/call`: the
    /// task is made and the client answered with it; the call goes on without
    /// an exchange.
    pub(super) fn task_started<P: Platform>(
        &mut self,
        m: &Manager<P>,
        call: u64,
        mut down: DownCall,
        ttl_ms: u64,
    ) {
        let owner = Owner::of(&down.origin);
        self.sweep_tasks(m, &owner);
        let serial = self.tasks.next;
        self.tasks.next += 1;
        let id = if owner.extension() {
            self.unguessable_id(serial)
        } else {
            format!("mcpbox-task-{serial}")
        };
        let now = date(m);
        let extension = owner.extension();
        let task = DownTask {
            owner,
            serial,
            call: Some(call),
            status: "working",
            message: None,
            created_at: now.clone(),
            updated_at: now,
            ttl_ms,
            expires_ms: u64::MAX,
            outcome: None,
            waiting: Vec::new(),
            pending: Vec::new(),
            asking: Vec::new(),
        };
        let answer = if extension {
            // A flat `CreateTaskResult`: no result, error or questions yet.
            let mut created = task.detailed(&id);
            created["resultType"] = json!("task");
            json_text(&created)
        } else {
            json_text(&json!({"task": task.json(&id)}))
        };
        self.tasks.open.insert(id.clone(), task);
        let origin = down.origin.clone();
        down.origin.exchange = None;
        down.task = Some(id);
        self.calls.insert(call, down);
        self.answer(&origin, Ok(answer));
    }

    /// An unguessable task id: SHA-256 of the host's secret and a serial.
    fn unguessable_id(&self, serial: u64) -> String {
        let mut h = Sha256::new();
        h.update(self.options.secret.as_bytes());
        h.update(b"\0task\0");
        h.update(serial.to_le_bytes());
        let digest = h.finalize();
        let mut id = String::from("mcpbox-task-");
        for b in &digest[..16] {
            id.push_str(&format!("{b:02x}"));
        }
        id
    }

    /// Forgets the finished tasks whose ttl passed, and those of `owner` past
    /// its limit (the oldest finished first).
    fn sweep_tasks<P: Platform>(&mut self, m: &Manager<P>, owner: &Owner) {
        let now = m.platform().now_ms();
        self.tasks
            .open
            .retain(|_, t| !(t.terminal() && t.expires_ms <= now));
        let mut finished: Vec<(u64, String)> = self
            .tasks
            .open
            .iter()
            .filter(|(_, t)| t.owner == *owner && t.terminal())
            .map(|(id, t)| (t.serial, id.clone()))
            .collect();
        let count = self
            .tasks
            .open
            .values()
            .filter(|t| t.owner == *owner)
            .count();
        finished.sort();
        for (_, id) in finished
            .into_iter()
            .take((count + 1).saturating_sub(owner.limit()))
        {
            self.tasks.open.remove(&id);
        }
    }

    /// The task's status changed: its client hears of it on its session's stream.
    fn task_changed<P: Platform>(&mut self, m: &Manager<P>, id: &str) {
        let now = date(m);
        let Some(task) = self.tasks.open.get_mut(id) else {
            return;
        };
        task.updated_at = now;
        let session = match task.owner {
            Owner::Session(session) => session,
            Owner::Caller(_) => {
                let params = task.detailed(id);
                return self.notify_listens(id, params);
            }
        };
        let params = task.json(id);
        self.out.push(Signal::Message {
            target: Target::Session(session),
            text: jsonrpc::notification(methods::TASKS_STATUS, Some(&params)),
        });
    }

    /// A 2026-07-28 task's status: to every `subscriptions/listen` stream that
    /// named it.
    fn notify_listens(&mut self, id: &str, params: Value) {
        let listens: Vec<(u64, Value)> = self
            .exchanges
            .iter()
            .filter_map(|(x, e)| {
                let listen = e.listen.as_ref()?;
                listen.tasks.contains(id).then(|| (*x, listen.id.clone()))
            })
            .collect();
        for (exchange, subscription) in listens {
            let mut params = params.clone();
            params["_meta"] = json!({META_SUBSCRIPTION_ID: subscription});
            self.out.push(Signal::Message {
                target: Target::Exchange(exchange),
                text: jsonrpc::notification(methods::TASKS_STATUS, Some(&params)),
            });
        }
    }

    /// The tasks among `ids` that a 2026-07-28 `subscriptions/listen` from
    /// `origin` may follow: those of its endpoint.
    pub(super) fn listenable_tasks(&self, origin: &Origin, ids: &[&str]) -> Vec<String> {
        let owner = Owner::of(origin);
        ids.iter()
            .filter(|id| {
                owner.extension() && self.tasks.open.get(**id).is_some_and(|t| t.owner == owner)
            })
            .map(|id| id.to_string())
            .collect()
    }

    /// The manager call of task `id` ended with `outcome` (`None`: cancelled).
    pub(super) fn task_finished<P: Platform>(
        &mut self,
        m: &Manager<P>,
        id: &str,
        outcome: Option<Result<String, Refusal>>,
    ) {
        let now = m.platform().now_ms();
        let Some(task) = self.tasks.open.get_mut(id) else {
            return; // Its session ended.
        };
        task.call = None;
        if task.terminal() {
            return; // Cancelled by the client: told so already.
        }
        let (status, outcome) = match outcome {
            // The extension reserves `failed` for JSON-RPC errors.
            Some(Ok(result)) if task.owner.extension() => ("completed", Ok(result)),
            Some(Ok(result)) if is_error(&result) => ("failed", Ok(result)),
            Some(Ok(result)) => ("completed", Ok(result)),
            Some(Err(refusal)) => ("failed", Err(refusal)),
            None => ("cancelled", Err(cancelled(id))),
        };
        task.status = status;
        task.outcome = Some(outcome);
        task.expires_ms = now.saturating_add(task.ttl_ms);
        task.pending.clear();
        task.asking.clear();
        self.task_changed(m, id);
        self.answer_waiting(id);
    }

    /// Answers the `tasks/result` requests waiting for task `id`'s end.
    fn answer_waiting(&mut self, id: &str) {
        let Some(task) = self.tasks.open.get_mut(id) else {
            return;
        };
        let Some(outcome) = task.outcome.clone() else {
            return;
        };
        let waiting = core::mem::take(&mut task.waiting);
        let outcome = outcome.map(|result| with_related(&result, id));
        for origin in waiting {
            self.answer(&origin, outcome.clone());
        }
    }

    /// The upstream task behind the manager call `call` reported a status: its
    /// message becomes the downstream task's. `false` when the call is not a
    /// downstream task's.
    pub(super) fn upstream_task_status<P: Platform>(
        &mut self,
        m: &Manager<P>,
        status: &crate::client::TaskStatus,
    ) -> bool {
        let Some(id) = self.calls.get(&status.call).and_then(|c| c.task.clone()) else {
            return false;
        };
        let Some(task) = self.tasks.open.get_mut(&id) else {
            return true;
        };
        if task.terminal() || task.message == status.message {
            return true;
        }
        task.message = status.message.clone();
        self.task_changed(m, &id);
        true
    }

    /// Upstream requests for the call of task `id`: the task is `input_required`,
    /// and they go out on a waiting `tasks/result` exchange, or wait for one.
    pub(super) fn task_inputs<P: Platform>(
        &mut self,
        m: &Manager<P>,
        id: &str,
        requests: Vec<InputRequest>,
    ) {
        let Some(task) = self.tasks.open.get_mut(id) else {
            return;
        };
        task.pending.extend(requests);
        // The extension's clients see the questions in the status itself.
        let changed = task.status != "input_required" || task.owner.extension();
        task.status = "input_required";
        if changed {
            self.task_changed(m, id);
        }
        self.send_task_inputs(id);
    }

    /// An upstream request was withdrawn: a 2026-07-28 task's question goes
    /// (and a task that asks nothing more is `working` again). `false` when no
    /// task waited on it.
    pub(super) fn task_input_withdrawn<P: Platform>(&mut self, m: &Manager<P>, input: u64) -> bool {
        let Some((id, task)) = self
            .tasks
            .open
            .iter_mut()
            .find(|(_, t)| t.owner.extension() && t.pending.iter().any(|r| r.id == input))
        else {
            return false;
        };
        task.pending.retain(|r| r.id != input);
        if task.pending.is_empty() && task.status == "input_required" {
            task.status = "working";
        }
        let id = id.clone();
        self.task_changed(m, &id);
        true
    }

    /// Sends task `id`'s pending upstream requests on the exchange of a waiting
    /// `tasks/result`, if one waits.
    fn send_task_inputs(&mut self, id: &str) {
        let Some(task) = self.tasks.open.get_mut(id) else {
            return;
        };
        if task.owner.extension() {
            return; // Asked in `tasks/get`, answered with `tasks/update`.
        }
        let Some(exchange) = task.waiting.iter().find_map(|o| o.exchange) else {
            return;
        };
        let pending = core::mem::take(&mut task.pending);
        for r in pending {
            let mut request = super::elicitation::input_request(&r);
            let method = request["method"]
                .as_str()
                .unwrap_or(methods::ELICITATION_CREATE)
                .to_string();
            if let Some(params) = request["params"].as_object_mut() {
                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
                }
            }
            let sent = self.send_request(exchange, &method, &request["params"]);
            self.input.asked.insert(
                sent,
                Asked::Input {
                    input: r.id,
                    exchange,
                    sampling: r.sampling.is_some(),
                },
            );
            if let Some(task) = self.tasks.open.get_mut(id) {
                task.asking.push(r.id);
            }
        }
    }

    /// The client answered (or the server withdrew) the upstream request
    /// `input`: a task that asks nothing more is `working` again.
    pub(super) fn task_input_done<P: Platform>(&mut self, m: &Manager<P>, input: u64) {
        let Some((id, task)) = self
            .tasks
            .open
            .iter_mut()
            .find(|(_, t)| t.asking.contains(&input))
        else {
            return;
        };
        task.asking.retain(|i| *i != input);
        if task.asking.is_empty() && task.pending.is_empty() && task.status == "input_required" {
            task.status = "working";
            let id = id.clone();
            self.task_changed(m, &id);
        }
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` of a session.
    pub(super) fn task_request<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        method: &str,
        params: &Value,
    ) {
        let owner = Owner::of(&origin);
        self.sweep_tasks(m, &owner);
        if method == methods::TASKS_LIST {
            let mut mine: Vec<(u64, Value)> = self
                .tasks
                .open
                .iter()
                .filter(|(_, t)| t.owner == owner)
                .map(|(id, t)| (t.serial, t.json(id)))
                .collect();
            mine.sort_by_key(|(serial, _)| *serial);
            let tasks: Vec<Value> = mine.into_iter().map(|(_, t)| t).collect();
            return self.answer(&origin, Ok(json_text(&json!({"tasks": tasks}))));
        }
        let Some(id) = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(String::from)
        else {
            let refusal = Refusal::new(
                INVALID_PARAMS,
                format!("Invalid params: {method} needs a `taskId` string"),
            );
            return self.answer(&origin, Err(refusal));
        };
        let Some(task) = self.tasks.open.get_mut(&id).filter(|t| t.owner == owner) else {
            return self.answer(&origin, Err(not_found(&id)));
        };
        match method {
            methods::TASKS_GET => {
                let answer = json_text(&task.json(&id));
                self.answer(&origin, Ok(answer));
            }
            methods::TASKS_RESULT => {
                task.waiting.push(origin);
                if task.outcome.is_some() {
                    self.answer_waiting(&id);
                } else {
                    self.send_task_inputs(&id);
                }
            }
            _ => {
                if task.terminal() {
                    let refusal = Refusal::new(
                        INVALID_PARAMS,
                        format!(
                            "Invalid params: task {id:?} is {} already; only a running task can be cancelled",
                            task.status
                        ),
                    );
                    return self.answer(&origin, Err(refusal));
                }
                let call = task.call;
                task.status = "cancelled";
                task.outcome = Some(Err(cancelled(&id)));
                task.expires_ms = m.platform().now_ms().saturating_add(task.ttl_ms);
                task.pending.clear();
                task.asking.clear();
                let answer = json_text(&task.json(&id));
                if let Some(call) = call {
                    if let Some(c) = self.calls.get_mut(&call) {
                        c.cancelled = true;
                    }
                    m.cancel(call);
                }
                self.task_changed(m, &id);
                self.answer_waiting(&id);
                self.answer(&origin, Ok(answer));
            }
        }
    }

    /// The `tasks/result` requests that came on `exchange` wait no more: it closed.
    pub(super) fn task_exchange_closed(&mut self, exchange: u64) {
        for task in self.tasks.open.values_mut() {
            task.waiting.retain(|o| o.exchange != Some(exchange));
        }
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` of a 2026-07-28 request
    /// (the extension's; see the module docs).
    pub(super) fn extension_task_request<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        method: &str,
        params: &Value,
    ) {
        if !origin.stateless.as_ref().is_some_and(|meta| meta.tasks) {
            let refusal = Refusal::new(
                MISSING_REQUIRED_CAPABILITY,
                format!(
                    "Missing required client capability: {method} belongs to the \
                     {TASKS_EXTENSION} extension; declare it in the request's _meta \
                     clientCapabilities.extensions"
                ),
            )
            .data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
            .status(400);
            return self.answer(&origin, Err(refusal));
        }
        let owner = Owner::of(&origin);
        self.sweep_tasks(m, &owner);
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            let refusal = Refusal::new(
                INVALID_PARAMS,
                format!("Invalid params: {method} needs a `taskId` string"),
            )
            .status(400);
            return self.answer(&origin, Err(refusal));
        };
        let id = id.to_string();
        let task = self.tasks.open.get_mut(&id).filter(|t| t.owner == owner);
        match (method, task) {
            (methods::TASKS_GET, Some(task)) => {
                let mut answer = task.detailed(&id);
                answer["resultType"] = json!("complete");
                self.answer(&origin, Ok(json_text(&answer)));
            }
            (methods::TASKS_GET, None) => self.answer(&origin, Err(not_found(&id))),
            (methods::TASKS_UPDATE, Some(task)) => {
                let responses = params
                    .get("inputResponses")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                // Only the questions still open are answered; other keys are
                // ignored, as the extension has it.
                let (answered, open): (Vec<_>, Vec<_>) = core::mem::take(&mut task.pending)
                    .into_iter()
                    .partition(|r| responses.contains_key(&input_key(r)));
                task.pending = open;
                let resumed = !answered.is_empty()
                    && task.pending.is_empty()
                    && task.status == "input_required";
                if resumed {
                    task.status = "working";
                }
                for r in &answered {
                    let response = &responses[&input_key(r)];
                    let answer = if r.sampling.is_some() {
                        InputAnswer::Accept(response.to_string())
                    } else {
                        super::elicitation::answer_of(response)
                    };
                    if m.answer_input(r.id, &answer).is_err() {
                        let _ = m.answer_input(r.id, &InputAnswer::Cancel);
                    }
                }
                if !answered.is_empty() {
                    self.task_changed(m, &id);
                }
                self.answer(&origin, Ok(ACK.into()));
            }
            (methods::TASKS_CANCEL, Some(task)) if !task.terminal() => {
                let call = task.call;
                task.status = "cancelled";
                task.outcome = Some(Err(cancelled(&id)));
                task.expires_ms = m.platform().now_ms().saturating_add(task.ttl_ms);
                task.pending.clear();
                if let Some(call) = call {
                    if let Some(c) = self.calls.get_mut(&call) {
                        c.cancelled = true;
                    }
                    m.cancel(call);
                }
                self.task_changed(m, &id);
                self.answer(&origin, Ok(ACK.into()));
            }
            // Acknowledged whatever the id names: another endpoint's task, or
            // none, is left alone.
            _ => self.answer(&origin, Ok(ACK.into())),
        }
    }

    /// Session `session` ended: its tasks are forgotten (their calls are
    /// cancelled with the session's other calls).
    pub(super) fn session_tasks_closed(&mut self, session: u64) {
        self.tasks
            .open
            .retain(|_, t| t.owner != Owner::Session(session));
    }
}

/// What `tasks/result` of a cancelled task answers.
fn cancelled(id: &str) -> Refusal {
    Refusal::new(
        jsonrpc::INTERNAL_ERROR,
        format!("task {id:?} was cancelled before it finished"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_767_225_600_000), "2026-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_827_696_789), "2000-02-29T12:34:56.789Z");
        assert_eq!(rfc3339(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }
}
