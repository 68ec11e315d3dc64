//! Elicitation forwarded (the gateway's side): putting questions to the
//! downstream client — an upstream server's input requests during a call
//! (elicitation, form mode; and sampling, whose own rules are
//! [`super::sampling`]'s), and approvals for calls an `ask` rule holds.
//!
//! - A **2025 client** that declared the `elicitation` capability gets an
//!   `elicitation/create` request on the stream of the call it is about; its
//!   response goes to the upstream server (or decides the approval).
//! - A **2026-07-28 client** that declared `elicitation` in the request's
//!   `_meta` gets an `input_required` result: `inputRequests` with the questions
//!   and a `requestState` token. The upstream call (or the held approval) waits in
//!   the gateway; the client's retry of the same `tools/call` with
//!   `inputResponses` and that `requestState` answers it and takes over the call,
//!   whose result (or next round of questions) it then gets.
//! - A client that cannot be asked: an upstream request is declined
//!   ([`InputAnswer::Unanswerable`]: an elicitation is declined; a sampling
//!   request gets an error saying which capability the client did not declare,
//!   not "User rejected"), and a call that needs approval ends with a tool error
//!   naming the rule.
//!
//! `requestState` tokens are unguessable (SHA-256 of the host's random secret and
//! a counter), so one client cannot take over another's call by naming its round.
//!
//! An approval is also offered to the host, as the manager's own approvals are
//! (an [`Event::InputRequested`] with `approval` set, under an id of the
//! manager's numbering), so that the host's user can answer it too: the
//! dashboard of `mcpbox serve --http`. The first answer wins. When the host
//! answers first ([`Gateway::answer_approval`]), a 2025 client is told its
//! question is void (`notifications/cancelled` for the `elicitation/create`) and
//! gets the call's answer, and a 2026-07-28 client's retry gets it; when the
//! client answers first, or goes away, the host's question is withdrawn
//! ([`Event::InputWithdrawn`]).

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::elicitation::{self as input, InputAnswer, InputRequest};
use crate::jsonrpc::{self, INVALID_PARAMS, Id};
use crate::manager::{Event, Manager};
use crate::methods::{self, ELICITATION_CREATE as METHOD};
use crate::transport::Platform;

use super::exposure::Exposed;
use super::lifecycle::Refusal;
use super::sampling;
use super::{Gateway, Origin, Signal, Target, json_text, tool_error};

/// Rounds kept waiting for a retry; the oldest goes when more wait.
const MAX_ROUNDS: usize = 1024;

/// A request sent to a 2025 client.
/// The gateway's input rounds: requests it sent downstream clients (elicitation,
/// approvals) awaiting their answers, and 2026-07-28 `input_required` rounds
/// awaiting their retry.
#[derive(Debug, Default)]
pub(super) struct InputRounds {
    /// Requests sent to downstream clients, by id text.
    pub(super) asked: BTreeMap<String, Asked>,
    /// 2026-07-28 `input_required` rounds waiting for a retry, by `requestState`.
    pub(super) rounds: BTreeMap<String, Round>,
    /// The serial of the next request id or round the gateway makes up.
    pub(super) next: u64,
}

impl InputRounds {
    /// None asked yet; serials start at 1.
    pub(super) fn new() -> InputRounds {
        InputRounds {
            next: 1,
            ..InputRounds::default()
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Asked {
    /// An upstream input request (the manager's input id), on `exchange`;
    /// `sampling`: a `sampling/createMessage`, answered with its result.
    Input {
        input: u64,
        exchange: u64,
        sampling: bool,
    },
    /// An approval.
    Approval(Box<Approval>),
}

/// A call held by an `ask` rule.
#[derive(Debug, Clone)]
pub(super) struct Approval {
    origin: Origin,
    exposed: Exposed,
    arguments: String,
    progress_token: Option<Value>,
    rule: String,
    /// Its id among the host's input requests (see the module docs).
    input: u64,
}

/// What a 2026-07-28 round is about.
#[derive(Debug, Clone)]
enum Subject {
    /// A manager call waiting for answers to its input requests.
    Call(u64),
    /// A call waiting for its approval.
    Approval(Box<Approval>),
}

/// An `input_required` round waiting for the client's retry.
#[derive(Debug, Clone)]
pub(super) struct Round {
    subject: Subject,
    /// The served tool name: the retry must name it too.
    served: String,
    /// `inputRequests` keys → the manager's input ids (0 for an approval).
    keys: BTreeMap<String, u64>,
    /// The call ended while it waited: its answer, for the retry.
    outcome: Option<Result<String, Refusal>>,
    /// When it was made, to drop the oldest first.
    serial: u64,
}

/// The requested schema of an approval.
/// The approval question's schema: one optional boolean, checked by default. What
/// decides is the action ([`approved`]): `accept` is the yes (with `{}`, as a
/// client that shows only yes and no sends it, or with `approve: true`), unless
/// the form says `approve: false`; `decline` and `cancel` are no.
fn approval_schema() -> Value {
    json!({"type": "object", "properties": {"approve": {
        "type": "boolean", "title": "Allow this call",
        "description": "Accept to run the call; clear this to refuse it.",
        "default": true}}})
}

fn approval_message(a: &Approval) -> String {
    format!(
        "Allow the tool {} (`{}` of server `{}`) to run with {}? The permission rule {} asks before it runs.",
        a.exposed.name,
        a.exposed.entry.tool.def.name,
        a.exposed.entry.server,
        jsonrpc::truncate(&a.arguments, 300),
        a.rule
    )
}

/// Reads an `ElicitResult`.
pub(super) fn answer_of(result: &Value) -> InputAnswer {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => InputAnswer::Accept(
            result
                .get("content")
                .map_or_else(|| "{}".to_string(), Value::to_string),
        ),
        Some("decline") => InputAnswer::Decline,
        _ => InputAnswer::Cancel,
    }
}

/// Whether an `ElicitResult` approves the call: `accept`, and `approve` (when
/// the content has it) `true`. Anything else — `approve: false`, an `approve`
/// that is not a boolean, `decline`, `cancel` — is a no.
fn approved(result: &Value) -> bool {
    result.get("action").and_then(Value::as_str) == Some("accept")
        && match result.get("content").and_then(|c| c.get("approve")) {
            None => true,
            Some(approve) => approve.as_bool() == Some(true),
        }
}

fn not_approved(a: &Approval) -> String {
    tool_error(&format!(
        "{} was not run: the user did not approve it (the permission rule {} asks first)",
        a.exposed.name, a.rule
    ))
}

impl Gateway {
    /// Whether an upstream input request belongs to one of the gateway's calls.
    pub(super) fn owns_input(&self, r: &InputRequest) -> bool {
        match r.call {
            Some(call) => self.calls.contains_key(&call),
            None => self.calls.values().any(|c| *c.server == *r.server),
        }
    }

    /// Upstream input requests for the gateway's calls: to their clients.
    pub(super) fn inputs_requested<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        inputs: Vec<InputRequest>,
    ) {
        let mut by_call: BTreeMap<u64, Vec<InputRequest>> = BTreeMap::new();
        for r in inputs {
            // A legacy server's request names no call when several run: it can
            // be put to a client only when they all came from the same one.
            let call = r.call.or_else(|| {
                let mut owners = self.calls.iter().filter(|(_, c)| *c.server == *r.server);
                let (first, c) = owners.next()?;
                owners
                    .all(|(_, o)| {
                        o.origin.session == c.origin.session
                            && o.origin.exchange == c.origin.exchange
                    })
                    .then_some(*first)
            });
            match call {
                Some(call) => by_call.entry(call).or_default().push(r),
                None => {
                    let why = "the server's request names no call, and its calls in flight \
                               came from more than one client of mcpbox serve, so none of \
                               them could be asked";
                    let _ = m.answer_input(r.id, &InputAnswer::Unanswerable(why.into()));
                }
            }
        }
        for (call, requests) in by_call {
            let Some(c) = self.calls.get_mut(&call) else {
                continue;
            };
            if let Some(task) = c.task.clone() {
                // A downstream task's call: asked on a `tasks/result` stream.
                let (requests, refused): (Vec<_>, Vec<_>) = requests
                    .into_iter()
                    .partition(|r| c.origin.can_take(&self.sessions.open, r));
                for r in refused {
                    let why = c.origin.why_not(&self.sessions.open, &r);
                    let _ = m.answer_input(r.id, &InputAnswer::Unanswerable(why));
                }
                if !requests.is_empty() {
                    self.task_inputs(m, &task, requests);
                }
                continue;
            }
            if c.origin.exchange.is_none() {
                // Waiting for a 2026-07-28 retry: asked with the next round.
                c.queued.extend(requests);
                continue;
            }
            // What the client cannot be asked is declined: a 2025 server hears
            // so, a 2026-07-28 call ends saying so.
            let (requests, refused): (Vec<_>, Vec<_>) = requests
                .into_iter()
                .partition(|r| c.origin.can_take(&self.sessions.open, r));
            for r in refused {
                let why = c.origin.why_not(&self.sessions.open, &r);
                let _ = m.answer_input(r.id, &InputAnswer::Unanswerable(why));
            }
            if requests.is_empty() {
                continue;
            }
            let Some(c) = self.calls.get_mut(&call) else {
                continue;
            };
            let origin = c.origin.clone();
            let served = c.served.clone();
            if origin.stateless.is_some() {
                let mut keys = BTreeMap::new();
                let mut asks = serde_json::Map::new();
                for r in &requests {
                    let kind = if r.sampling.is_some() {
                        sampling::ROUND_KEY
                    } else {
                        "input"
                    };
                    let key = format!("{kind}-{}", r.id);
                    asks.insert(key.clone(), input_request(r));
                    keys.insert(key, r.id);
                }
                self.input_required(&origin, Subject::Call(call), served, keys, asks);
                if let Some(c) = self.calls.get_mut(&call) {
                    c.origin.exchange = None;
                }
            } else if let Some(exchange) = origin.exchange {
                for r in requests {
                    let request = input_request(&r);
                    let method = request["method"].as_str().unwrap_or(METHOD).to_string();
                    let id = self.send_request(exchange, &method, &request["params"]);
                    self.input.asked.insert(
                        id,
                        Asked::Input {
                            input: r.id,
                            exchange,
                            sampling: r.sampling.is_some(),
                        },
                    );
                }
            }
        }
    }

    /// Sends a request (`elicitation/create`, `sampling/createMessage`) to a
    /// 2025 client on `exchange`; returns its id text.
    pub(super) fn send_request(&mut self, exchange: u64, method: &str, params: &Value) -> String {
        let id = Id::String(format!("mcpbox-{}", self.input.next));
        self.input.next += 1;
        self.out.push(Signal::Message {
            target: Target::Exchange(exchange),
            text: jsonrpc::request(&id, method, Some(params)),
        });
        id.to_json()
    }

    /// An upstream input request was withdrawn; true if it was the gateway's.
    pub(super) fn withdraw_input(&mut self, input: u64) -> bool {
        let asked = self
            .input
            .asked
            .iter()
            .find(|(_, a)| matches!(a, Asked::Input { input: i, .. } if *i == input))
            .map(|(id, a)| (id.clone(), a.clone()));
        if let Some((id, Asked::Input { exchange, .. })) = asked {
            self.input.asked.remove(&id);
            let params = json!({"requestId": serde_json::from_str::<Value>(&id).unwrap_or(Value::Null),
                "reason": "the upstream server no longer needs the answer"});
            self.out.push(Signal::Message {
                target: Target::Exchange(exchange),
                text: jsonrpc::notification(methods::CANCELLED, Some(&params)),
            });
            return true;
        }
        self.input
            .rounds
            .values_mut()
            .any(|r| r.keys.values().any(|i| *i == input))
    }

    /// Holds a call an `ask` rule covers until the client approves it.
    pub(super) fn ask_approval<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        exposed: Exposed,
        arguments: String,
        progress_token: Option<Value>,
        rule: String,
    ) {
        if !origin.can_elicit(&self.sessions.open) {
            let text = tool_error(&format!(
                "{} needs the user's approval (the permission rule {rule} asks first), and this client cannot \
                 be asked: it did not declare the elicitation capability. Allow the tool in the \
                 rules, or use a client that supports elicitation.",
                exposed.name
            ));
            return self.answer(&origin, Ok(text));
        }
        let approval = Approval {
            origin: origin.clone(),
            exposed,
            arguments,
            progress_token,
            rule,
            input: m.new_input_id(),
        };
        self.host_events.push(Event::InputRequested(InputRequest {
            id: approval.input,
            server: approval.exposed.entry.server.to_string(),
            call: None,
            tool: Some(approval.exposed.entry.tool.name.clone()),
            message: approval_message(&approval),
            requested_schema: approval_schema().to_string(),
            approval: Some(input::Approval {
                rule: approval.rule.clone(),
                arguments: approval.arguments.clone(),
            }),
            sampling: None,
            url: None,
        }));
        let params = json!({"mode": "form", "message": approval_message(&approval),
            "requestedSchema": approval_schema()});
        if origin.stateless.is_some() {
            let served = approval.exposed.name.clone();
            let mut asks = serde_json::Map::new();
            asks.insert(
                "approve".into(),
                json!({"method": METHOD, "params": params}),
            );
            let keys = [("approve".to_string(), 0)].into_iter().collect();
            return self.input_required(
                &origin,
                Subject::Approval(Box::new(approval)),
                served,
                keys,
                asks,
            );
        }
        let Some(exchange) = origin.exchange else {
            return;
        };
        let id = self.send_request(exchange, METHOD, &params);
        self.input
            .asked
            .insert(id, Asked::Approval(Box::new(approval)));
    }

    /// Answers `origin` with an `input_required` result and keeps the round.
    fn input_required(
        &mut self,
        origin: &Origin,
        subject: Subject,
        served: String,
        keys: BTreeMap<String, u64>,
        asks: serde_json::Map<String, Value>,
    ) {
        let serial = self.input.next;
        self.input.next += 1;
        let token = self.token(serial);
        let result =
            json!({"resultType": "input_required", "inputRequests": asks, "requestState": token});
        if self.input.rounds.len() >= MAX_ROUNDS
            && let Some(oldest) = self
                .input
                .rounds
                .iter()
                .min_by_key(|(_, r)| r.serial)
                .map(|(t, _)| t.clone())
            && let Some(Round {
                subject: Subject::Approval(a),
                outcome: None,
                ..
            }) = self.input.rounds.remove(&oldest)
        {
            self.host_events.push(Event::InputWithdrawn(a.input));
        }
        self.input.rounds.insert(
            token,
            Round {
                subject,
                served,
                keys,
                outcome: None,
                serial,
            },
        );
        self.answer(origin, Ok(json_text(&result)));
    }

    /// An unguessable `requestState`: SHA-256 of the host's secret and a serial.
    fn token(&self, serial: u64) -> String {
        let mut h = Sha256::new();
        h.update(self.options.secret.as_bytes());
        h.update(b"\0");
        h.update(serial.to_le_bytes());
        let digest = h.finalize();
        let mut token = String::from("mcpbox.");
        for b in &digest[..16] {
            token.push_str(&format!("{b:02x}"));
        }
        token
    }

    /// A call ended: a round waiting for its retry keeps the answer for it.
    pub(super) fn forget_rounds_of(&mut self, call: u64) {
        self.input.rounds.retain(|_, r| {
            !matches!(r.subject, Subject::Call(c) if c == call) || r.outcome.is_some()
        });
    }

    /// Keeps the answer of a call that ended while its client was to retry.
    pub(super) fn park_outcome(&mut self, call: u64, outcome: Result<String, Refusal>) -> bool {
        let round = self
            .input
            .rounds
            .values_mut()
            .find(|r| matches!(r.subject, Subject::Call(c) if c == call));
        match round {
            Some(r) => {
                r.outcome = Some(outcome);
                true
            }
            None => false,
        }
    }

    /// A 2026-07-28 retry: `tools/call` with `inputResponses` and `requestState`.
    pub(super) fn retry<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        params: Value,
        progress_token: Option<Value>,
    ) {
        let invalid = |why: &str| Refusal::new(INVALID_PARAMS, format!("Invalid params: {why}"));
        let Some(state) = params.get("requestState").and_then(Value::as_str) else {
            return self.answer(
                &origin,
                Err(invalid("inputResponses without a requestState")),
            );
        };
        let Some(round) = self.input.rounds.get(state) else {
            return self.answer(
                &origin,
                Err(invalid(
                    "requestState is not one this server issued, or its round is over",
                )),
            );
        };
        if params.get("name").and_then(Value::as_str) != Some(round.served.as_str()) {
            return self.answer(
                &origin,
                Err(invalid(
                    "the retry names another tool than the call it continues",
                )),
            );
        }
        let responses = params
            .get("inputResponses")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let Some(round) = self.input.rounds.remove(state) else {
            return;
        };
        if let Some(outcome) = round.outcome {
            return self.answer(&origin, outcome);
        }
        match round.subject {
            Subject::Call(call) => {
                for (key, input) in &round.keys {
                    // A question left unanswered is a dismissed one.
                    let answer = match responses.get(key) {
                        None => InputAnswer::Cancel,
                        Some(result) if key.starts_with(&format!("{}-", sampling::ROUND_KEY)) => {
                            InputAnswer::Accept(result.to_string())
                        }
                        Some(result) => answer_of(result),
                    };
                    if m.answer_input(*input, &answer).is_err() {
                        let _ = m.answer_input(*input, &InputAnswer::Cancel);
                    }
                }
                let keeps_tasks = self.options.keeps_tasks;
                let Some(c) = self.calls.get_mut(&call) else {
                    let text =
                        tool_error("the call ended before the answers to its questions came");
                    return self.answer(&origin, Ok(text));
                };
                c.origin = origin;
                if progress_token.is_some() {
                    c.progress_token = progress_token;
                }
                // The answered call may still become a task of its client.
                Gateway::arm_task_after(m, c, keeps_tasks);
                let queued = core::mem::take(&mut c.queued);
                if !queued.is_empty() {
                    self.inputs_requested(m, queued);
                }
            }
            Subject::Approval(a) => {
                self.host_events.push(Event::InputWithdrawn(a.input));
                let yes = responses.get("approve").is_some_and(approved);
                if yes {
                    let token = progress_token.or(a.progress_token.clone());
                    self.start_call(m, origin, &a.exposed, &a.arguments, token);
                } else {
                    self.answer(&origin, Ok(not_approved(&a)));
                }
            }
        }
    }

    /// A 2025 client answered a request of the gateway.
    pub(super) fn on_response<P: Platform>(&mut self, m: &mut Manager<P>, r: jsonrpc::Response) {
        let Some(asked) = self.input.asked.remove(&r.id.to_json()) else {
            return;
        };
        let result: Value = match &r.outcome {
            Ok(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        match asked {
            Asked::Input {
                input,
                sampling: true,
                ..
            } => {
                let answer = sampling::answer_of_response(&r.outcome);
                if m.answer_input(input, &answer).is_err() {
                    let _ = m.answer_input(input, &InputAnswer::Decline);
                }
                self.task_input_done(m, input);
            }
            Asked::Input { input, .. } => {
                if m.answer_input(input, &answer_of(&result)).is_err() {
                    let _ = m.answer_input(input, &InputAnswer::Cancel);
                }
                self.task_input_done(m, input);
            }
            Asked::Approval(a) => {
                self.host_events.push(Event::InputWithdrawn(a.input));
                if approved(&result) {
                    self.start_call(m, a.origin, &a.exposed, &a.arguments, a.progress_token);
                } else {
                    let text = not_approved(&a);
                    self.answer(&a.origin, Ok(text));
                }
            }
        }
    }

    /// Drops the approvals whose origin matches; returns their origins.
    pub(super) fn forget_asks(&mut self, gone: impl Fn(&Origin) -> bool) -> Vec<Origin> {
        let mut origins = Vec::new();
        let mut withdrawn = Vec::new();
        self.input.asked.retain(|_, a| match a {
            Asked::Approval(ap) if gone(&ap.origin) => {
                origins.push(ap.origin.clone());
                withdrawn.push(Event::InputWithdrawn(ap.input));
                false
            }
            _ => true,
        });
        self.host_events.extend(withdrawn);
        origins
    }

    /// The host answers approval `id` (see the module docs): `None` when it is
    /// not one of the gateway's approvals waiting for an answer.
    pub fn answer_approval<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        id: u64,
        answer: &InputAnswer,
    ) -> Option<Result<(), String>> {
        let asked = self
            .input
            .asked
            .iter()
            .find(|(_, a)| matches!(a, Asked::Approval(ap) if ap.input == id))
            .map(|(key, _)| key.clone());
        let round = self
            .input
            .rounds
            .iter()
            .find(|(_, r)| {
                r.outcome.is_none() && matches!(&r.subject, Subject::Approval(a) if a.input == id)
            })
            .map(|(token, _)| token.clone());
        if asked.is_none() && round.is_none() {
            return None;
        }
        let yes = match host_verdict(answer) {
            Ok(yes) => yes,
            Err(e) => return Some(Err(format!("approval {id}: {e}"))),
        };
        if let Some(key) = asked
            && let Some(Asked::Approval(a)) = self.input.asked.remove(&key)
        {
            // The client's question is void: someone else answered it.
            if let Some(exchange) = a.origin.exchange {
                let params = json!({"requestId": serde_json::from_str::<Value>(&key).unwrap_or(Value::Null),
                    "reason": "the call was answered elsewhere (the mcpbox dashboard)"});
                self.out.push(Signal::Message {
                    target: Target::Exchange(exchange),
                    text: jsonrpc::notification(methods::CANCELLED, Some(&params)),
                });
            }
            if yes {
                self.start_call(
                    m,
                    a.origin.clone(),
                    &a.exposed,
                    &a.arguments,
                    a.progress_token.clone(),
                );
            } else {
                self.answer(&a.origin, Ok(not_approved(&a)));
            }
            return Some(Ok(()));
        }
        // A 2026-07-28 client: its retry of the round gets the call (or its answer).
        let token = round?;
        let Subject::Approval(a) = self.input.rounds.get(&token)?.subject.clone() else {
            return None;
        };
        let outcome = if yes {
            let mut origin = a.origin.clone();
            // Nobody waits on an exchange until the client retries.
            origin.exchange = None;
            match self.begin_call(
                m,
                origin,
                &a.exposed,
                &a.arguments,
                a.progress_token.clone(),
            ) {
                Ok(call) => {
                    if let Some(r) = self.input.rounds.get_mut(&token) {
                        r.subject = Subject::Call(call);
                        r.keys.clear();
                    }
                    return Some(Ok(()));
                }
                Err(refused) => refused.1,
            }
        } else {
            Ok(not_approved(&a))
        };
        if let Some(r) = self.input.rounds.get_mut(&token) {
            r.outcome = Some(outcome);
        }
        Some(Ok(()))
    }
}

/// Whether the host's answer approves the call: `accept` (with `{}`, or with
/// `approve` `once` or `session`, as the manager's approvals take it, or `true`,
/// as this question's schema has it), unless `approve` is `false`; decline and
/// cancel are no. An approval for the session approves this call once: the
/// gateway's clients are each asked their own.
fn host_verdict(answer: &InputAnswer) -> Result<bool, String> {
    let text = match answer {
        InputAnswer::Accept(text) => text,
        _ => return Ok(false),
    };
    let text = if text.trim().is_empty() { "{}" } else { text };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("the accepted answer is not valid JSON: {e}"))?;
    let Some(fields) = value.as_object() else {
        return Err("an accepted answer must be a JSON object like {\"approve\": \"once\"}".into());
    };
    match fields.get("approve") {
        None | Some(Value::Bool(true)) => Ok(true),
        Some(Value::Bool(false)) => Ok(false),
        Some(v) if v == "once" || v == "session" => Ok(true),
        Some(other) => Err(format!(
            "/approve must be \"once\", \"session\" or a boolean, but is {other}"
        )),
    }
}

/// The request (method and params) that puts an upstream input request to a
/// client: `sampling/createMessage` ([`sampling::create_message`]), or
/// `elicitation/create`.
pub(super) fn input_request(r: &InputRequest) -> Value {
    match &r.sampling {
        Some(params) => sampling::create_message(params),
        None => elicitation_request(&r.message, &r.requested_schema),
    }
}

/// An `elicitation/create` request (method and params) for `inputRequests`.
fn elicitation_request(message: &str, schema: &str) -> Value {
    let schema: Value = serde_json::from_str(schema).unwrap_or_else(|_| json!({"type": "object"}));
    json!({"method": METHOD, "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}
