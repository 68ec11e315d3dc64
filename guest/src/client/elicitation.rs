//! Input requests (elicitation, form mode) in both eras, as the client handles them.
//!
//! Legacy: the server sends `elicitation/create` as a JSON-RPC request during a
//! call and gets a response. 2026-07-28: a call answers `resultType:
//! "input_required"` with `inputRequests` (and maybe a `requestState`); once every
//! one is answered the call is sent again, under a new JSON-RPC id, with
//! `inputResponses` and the `requestState` exactly as received. Reading requests and
//! making answers is shared with [`crate::elicitation`]; this module is the state:
//! which request waits for which call, rounds, withdrawal.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use serde_json::value::RawValue;

use super::calls::{PendingCall, tool_error};
use super::wire::InputRequired;
use super::{CallError, CallResult, Client, ClientEvent, Pending};
use crate::elicitation::{self, InputAnswer, InputRequest};
use crate::jsonrpc::{self, INVALID_PARAMS, Id, RpcError};
use crate::methods;
use crate::sampling;

/// How many `input_required` rounds one call may take before it is given up: a
/// server that keeps asking would otherwise hold the call until its timeout.
pub(super) const MAX_INPUT_ROUNDS: u32 = 16;

/// The client's input requests: what the embedder answers (elicitation, form and
/// URL mode; sampling), the requests waiting for it and the 2026-07-28 calls
/// waiting for their answers before their retry.
#[derive(Debug)]
pub(super) struct Inputs {
    /// Whether the embedder answers input requests (elicitation, form mode).
    pub(super) form: bool,
    /// Whether the embedder takes URL-mode elicitations.
    pub(super) url: bool,
    /// Whether the embedder answers sampling requests.
    pub(super) sampling: bool,
    /// Input requests waiting for the embedder, by key.
    pub(super) waiting: BTreeMap<u64, InputWait>,
    /// The key of the next input request.
    pub(super) next: u64,
    /// 2026-07-28 calls waiting for input before their retry, by call handle.
    pub(super) rounds: BTreeMap<u64, InputRound>,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            form: false,
            url: false,
            sampling: false,
            waiting: BTreeMap::new(),
            next: 1,
            rounds: BTreeMap::new(),
        }
    }
}

impl Inputs {
    /// Whether any elicitation mode is offered.
    pub(super) fn elicits(&self) -> bool {
        self.form || self.url
    }

    /// A key for a new input request, unique in this session.
    fn next_key(&mut self) -> u64 {
        let key = self.next;
        self.next += 1;
        key
    }
}

/// A 2026-07-28 call between an `input_required` answer and its retry.
#[derive(Debug)]
pub(super) struct InputRound {
    pub(super) call: PendingCall,
    /// `requestState` exactly as the server sent it, to be echoed.
    pub(super) request_state: Option<Value>,
    /// `inputRequests` keys still waiting for the embedder.
    pub(super) waiting: BTreeSet<String>,
    /// `inputResponses` so far.
    pub(super) responses: serde_json::Map<String, Value>,
}

/// An input request waiting for the embedder.
#[derive(Debug)]
pub(super) struct InputWait {
    /// The call it belongs to, if known.
    pub(super) call: Option<u64>,
    /// What the server asked for: answers are checked against it.
    pub(super) schema: Value,
    /// Where the answer goes.
    pub(super) to: InputTarget,
    /// A `sampling/createMessage` (the answer is a `CreateMessageResult`), not
    /// an elicitation.
    pub(super) sampling: bool,
    /// A URL-mode elicitation: the answer is its action alone.
    pub(super) url: bool,
    /// When nobody answering ends it: for a request that belongs to no call
    /// (one that does ends with its call).
    pub(super) deadline_ms: Option<u64>,
}

#[derive(Debug)]
pub(super) enum InputTarget {
    /// A legacy `elicitation/create` request with this id: answered with a response.
    Request(Id),
    /// An entry of an `input_required` result's `inputRequests`.
    Round(String),
    /// An entry of the `inputRequests` of a task of the 2026-07-28 tasks
    /// extension: answered with `tasks/update`.
    Task(String),
}

impl Client {
    /// Offers servers the `elicitation` capability (form mode): their requests for
    /// input become [`ClientEvent::InputRequested`]. Call before the session starts.
    pub fn enable_input_requests(&mut self) {
        self.input.form = true;
    }

    /// Offers servers URL-mode elicitation (`elicitation.url`): their requests to
    /// have the user open a URL become [`ClientEvent::InputRequested`] with `url`
    /// set. Call before the session starts.
    pub fn enable_url_elicitation(&mut self) {
        self.input.url = true;
    }

    /// A call answered `input_required`: ask the embedder, or end the call with
    /// the reason mcpbox cannot go on.
    pub(super) fn on_input_required(&mut self, c: PendingCall, raw: &RawValue) {
        let name = c.name.clone();
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
        // Every request must be one mcpbox can answer or put to the embedder, or
        // none is asked. Roots are answered at once: nobody needs asking.
        let mut asks = Vec::new();
        let mut responses = serde_json::Map::new();
        for (entry, request) in &requests {
            match self.read_input(&name, request) {
                Reading::Ask(ask) => asks.push((entry.clone(), ask)),
                Reading::Answer(answer) => {
                    responses.insert(entry.clone(), answer);
                }
                Reading::End(result) => return self.finish(c.call, Ok(result), true),
            }
        }
        if asks.is_empty() {
            let mut c = c;
            c.rounds += 1;
            return self.send_call(c, Some(&responses), result.request_state.as_ref());
        }
        let call = c.call;
        self.input.rounds.insert(
            call,
            InputRound {
                call: c,
                request_state: result.request_state,
                waiting: asks.iter().map(|(entry, _)| entry.clone()).collect(),
                responses,
            },
        );
        for (entry, ask) in asks {
            self.ask(Some((call, name.clone())), ask, InputTarget::Round(entry));
        }
    }

    /// Reads one entry of `inputRequests` (a 2026-07-28 call's, or a task's of
    /// the tasks extension) of the call of tool `name`: a question for the
    /// embedder, an answer mcpbox gives itself (roots), or the tool result that
    /// ends the call because nobody here can answer it.
    pub(super) fn read_input(&self, name: &str, request: &Value) -> Reading {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("?");
        let params = request.get("params").unwrap_or(&Value::Null);
        let parsed = match method {
            methods::ELICITATION_CREATE if !self.input.elicits() => {
                return Reading::End(input_required(name));
            }
            methods::ELICITATION_CREATE => self.parse_elicitation(params),
            methods::SAMPLING_CREATE_MESSAGE if !self.input.sampling => {
                return Reading::End(super::sampling::sampling_not_enabled(name));
            }
            methods::SAMPLING_CREATE_MESSAGE => {
                sampling::parse_request(params).map(Question::Sampling)
            }
            methods::ROOTS_LIST if !self.roots.list.is_empty() => {
                return Reading::Answer(crate::roots::list_result(&self.roots.list));
            }
            methods::ROOTS_LIST => Err(
                "it asked for roots/list, and no roots are declared for this server (the \
                 configuration's `roots`, or the embedder's: Runtime::set_roots in Rust, \
                 `setRoots` in JavaScript)"
                    .to_string(),
            ),
            _ => Err(format!(
                "it asked for {method}, which mcpbox does not offer"
            )),
        };
        match parsed {
            Ok(ask) => Reading::Ask(ask),
            Err(why) => Reading::End(unanswerable(name, &why)),
        }
    }

    /// Queues an input request for the embedder.
    pub(super) fn ask(&mut self, call: Option<(u64, String)>, question: Question, to: InputTarget) {
        let key = self.input.next_key();
        let (call, tool) = call.unzip();
        let (message, schema, sampling, url) = match question {
            Question::Elicitation(e) => (e.message, e.schema, None, e.url),
            Question::Sampling(params) => (
                sampling::summary(&self.server, &params),
                Value::Null,
                Some(params.to_string()),
                None,
            ),
        };
        let deadline_ms = (sampling.is_some() && call.is_none())
            .then(|| self.now_ms.saturating_add(sampling::UNATTACHED_TIMEOUT_MS));
        self.events.push(ClientEvent::InputRequested(InputRequest {
            id: key,
            server: self.server.clone(),
            call,
            tool,
            message,
            requested_schema: if sampling.is_some() || url.is_some() {
                String::new()
            } else {
                schema.to_string()
            },
            approval: None,
            sampling: sampling.clone(),
            url: url.clone(),
        }));
        self.input.waiting.insert(
            key,
            InputWait {
                call,
                schema,
                to,
                sampling: sampling.is_some(),
                url: url.is_some(),
                deadline_ms,
            },
        );
        if let Some(call) = call {
            self.task_waits_for_input(call);
        }
    }

    /// Answers the input request `key` (see [`ClientEvent::InputRequested`]).
    /// An accepted answer gets the requested schema's defaults for the fields it
    /// leaves out and must then satisfy that schema. Err (and the request stays
    /// open) when it does not, or when no request of that key is waiting.
    pub fn answer_input(&mut self, key: u64, answer: &InputAnswer) -> Result<(), String> {
        let wait = self
            .input
            .waiting
            .get(&key)
            .ok_or_else(|| format!("no input request {key} is waiting"))?;
        if wait.sampling {
            return self.answer_sampling(key, answer);
        }
        let result = if wait.url {
            elicitation::url_result(answer)
        } else {
            elicitation::result(answer, &wait.schema)?
        };
        let Some(wait) = self.input.waiting.remove(&key) else {
            return Ok(());
        };
        if let Some(call) = wait.call {
            self.task_input_answered(call);
        }
        match wait.to {
            InputTarget::Request(id) => self.respond(jsonrpc::result_response(&id, &result)),
            InputTarget::Round(entry) => {
                if let Some(call) = wait.call {
                    self.round_answered(call, entry, result);
                }
            }
            InputTarget::Task(entry) => {
                if let Some(call) = wait.call {
                    self.send_task_update(call, entry, result);
                }
            }
        }
        Ok(())
    }

    /// One entry of a round is answered: once none waits, the call is retried.
    pub(super) fn round_answered(&mut self, call: u64, entry: String, result: Value) {
        let Some(round) = self.input.rounds.get_mut(&call) else {
            return;
        };
        round.waiting.remove(&entry);
        round.responses.insert(entry, result);
        if round.waiting.is_empty()
            && let Some(round) = self.input.rounds.remove(&call)
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

    /// Withdraws the input requests of `call` (`None`: those of no known call).
    /// `answer_server`: a legacy server's request is answered with `cancel`, so the
    /// server stops waiting for it (false when the connection is gone).
    pub(super) fn withdraw_inputs(&mut self, call: Option<u64>, answer_server: bool) {
        let keys: Vec<u64> = self
            .input
            .waiting
            .iter()
            .filter(|(_, w)| w.call == call)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.withdraw(key, answer_server);
        }
    }

    pub(super) fn withdraw(&mut self, key: u64, answer_server: bool) {
        let Some(wait) = self.input.waiting.remove(&key) else {
            return;
        };
        if let Some(call) = wait.call {
            self.task_input_answered(call);
        }
        if let (InputTarget::Request(id), true) = (&wait.to, answer_server) {
            if wait.sampling {
                self.respond(jsonrpc::error_response(
                    id,
                    &RpcError::new(
                        sampling::REJECTED,
                        "mcpbox: the sampling request was not answered: the call it came with ended first",
                    ),
                ));
            } else {
                let cancel = serde_json::json!({"action": "cancel"});
                self.respond(jsonrpc::result_response(id, &cancel));
            }
        }
        self.events.push(ClientEvent::InputWithdrawn(key));
    }

    /// The call in flight when there is exactly one: over stdio nothing says
    /// which call a server's request is for, and with one it can only be that one.
    pub(super) fn only_call(&self) -> Option<(u64, String)> {
        let mut calls = self
            .slots
            .pending
            .values()
            .filter_map(|p| match p {
                Pending::Call(c) => Some((c.call, c.name.clone())),
                _ => None,
            })
            .chain(self.tasks.calls());
        match (calls.next(), calls.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// A legacy server's `elicitation/create` (input requests enabled): put to the
    /// embedder, or refused with the reason when it is malformed.
    pub(super) fn on_elicitation_request(&mut self, r: jsonrpc::Request) {
        let params: Value = r
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        match self.parse_elicitation(&params) {
            Ok(Question::Elicitation(request)) => {
                // A task's request names its task (delivered with tasks/result).
                let call = super::tasks::related_task(&params)
                    .and_then(|task| self.tasks.call_of(task))
                    .or_else(|| self.only_call());
                self.ask(
                    call,
                    Question::Elicitation(request),
                    InputTarget::Request(r.id),
                );
            }
            Ok(Question::Sampling(_)) => {}
            Err(why) => self.respond(jsonrpc::error_response(
                &r.id,
                &RpcError::new(INVALID_PARAMS, format!("mcpbox: {why}")),
            )),
        }
    }

    /// `notifications/cancelled` from the server: it withdraws a request of its
    /// own. Only input requests wait for anything.
    pub(super) fn on_server_cancelled(&mut self, params: &Value) {
        let Some(request) = params.get("requestId") else {
            return;
        };
        let id = Id::from_json(&request.to_string());
        let key = self.input.waiting.iter().find_map(|(k, w)| match &w.to {
            InputTarget::Request(r) if *r == id => Some(*k),
            _ => None,
        });
        if let Some(key) = key {
            self.withdraw(key, false);
        }
    }
}

/// The tool result for a call the server wants input for when the embedder did
/// not enable input requests: a tool error saying so and how to change it.
pub(super) fn input_required(name: &str) -> CallResult {
    tool_error(format!(
        "{name}: the server asked for input to run this tool, and input requests are not \
         enabled in this mcpbox (the embedder enables them: Options::input_requests in Rust, \
         `inputRequests: true` in JavaScript)"
    ))
}

impl Client {
    /// Reads an `elicitation/create`'s params: URL mode only when the embedder
    /// takes it, form mode only when it takes input requests.
    fn parse_elicitation(&self, params: &Value) -> Result<Question, String> {
        let request = elicitation::parse_request(params, self.input.url)?;
        if request.url.is_none() && !self.input.form {
            return Err(
                "it asked for input in a form, and input requests are not enabled in this \
                 mcpbox (Options::input_requests in Rust, `inputRequests: true` in JavaScript)"
                    .to_string(),
            );
        }
        Ok(Question::Elicitation(request))
    }
}

/// What [`Client::read_input`] made of one input request.
pub(super) enum Reading {
    /// A question for the embedder.
    Ask(Question),
    /// An answer mcpbox gives at once (roots).
    Answer(Value),
    /// Nobody here can answer: the call ends with this tool result.
    End(CallResult),
}

/// What a server asks the embedder.
#[derive(Debug)]
pub(super) enum Question {
    /// `elicitation/create`.
    Elicitation(elicitation::Elicitation),
    /// `sampling/createMessage`, its params.
    Sampling(Value),
}

/// The tool result for a call whose input requests mcpbox cannot put to the
/// embedder (URL-mode elicitation, roots when there are none, an unknown method).
pub(super) fn unanswerable(name: &str, why: &str) -> CallResult {
    tool_error(format!(
        "{name}: the server asked for input mcpbox cannot give: {why}"
    ))
}
