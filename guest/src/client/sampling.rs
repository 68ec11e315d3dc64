//! Sampling requests (`sampling/createMessage`), as the client handles them:
//! declared only when the embedder opted in, put to it as input requests (see
//! [`super::elicitation`] for the shared state: which request waits for which
//! call, rounds, withdrawal), answered with a `CreateMessageResult` or refused.
//! Reading requests and checking answers is [`crate::sampling`]'s.

use crate::prelude::*;

use serde_json::Value;

use super::calls::{CallResult, tool_error};
use super::elicitation::{InputTarget, Question};
use super::{Client, ClientEvent};
use crate::elicitation::InputAnswer;
use crate::jsonrpc::{self, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError};
use crate::sampling;

impl Client {
    /// Offers servers the `sampling` capability (with `tools`): their
    /// `sampling/createMessage` requests become [`ClientEvent::InputRequested`]
    /// with `sampling` set. Call before the session starts.
    pub fn enable_sampling(&mut self) {
        self.input.sampling = true;
    }

    /// Answers a sampling request: an accepted answer must be a
    /// `CreateMessageResult` (else Err, and the request stays open). A refusal
    /// is error -1 to a 2025 server; in 2026-07-28 it ends the call, since the
    /// server waits for no answer.
    pub(super) fn answer_sampling(&mut self, key: u64, answer: &InputAnswer) -> Result<(), String> {
        let result = match answer {
            InputAnswer::Accept(text) => Some(sampling::result(text)?),
            InputAnswer::Decline | InputAnswer::Cancel | InputAnswer::Unanswerable(_) => None,
        };
        let Some(wait) = self.input.waiting.remove(&key) else {
            return Ok(());
        };
        if let Some(call) = wait.call {
            self.task_input_answered(call);
        }
        // Who refused, in words that are true: a person (through the embedder),
        // or nobody, because nobody could be asked.
        let refused = match answer {
            InputAnswer::Unanswerable(why) => format!("nobody could answer it: {why}"),
            InputAnswer::Decline => "the embedder declined it".to_string(),
            _ => "the embedder cancelled it".to_string(),
        };
        match (wait.to, result) {
            (InputTarget::Request(id), Some(result)) => {
                self.respond(jsonrpc::result_response(&id, &result));
            }
            (InputTarget::Request(id), None) => self.respond(jsonrpc::error_response(
                &id,
                &RpcError::new(
                    sampling::REJECTED,
                    match answer {
                        InputAnswer::Unanswerable(_) => {
                            format!("Sampling request not answered (mcpbox: {refused})")
                        }
                        _ => format!("User rejected sampling request (mcpbox: {refused})"),
                    },
                ),
            )),
            (InputTarget::Round(entry), Some(result)) => {
                if let Some(call) = wait.call {
                    self.round_answered(call, entry, result);
                }
            }
            (InputTarget::Task(entry), Some(result)) => {
                if let Some(call) = wait.call {
                    self.send_task_update(call, entry, result);
                }
            }
            (InputTarget::Task(_), None) => {
                if let Some(call) = wait.call {
                    self.end_task_unanswered(call, &refused);
                }
            }
            (InputTarget::Round(_), None) => {
                let Some(call) = wait.call else {
                    return Ok(());
                };
                let Some(round) = self.input.rounds.remove(&call) else {
                    return Ok(());
                };
                let text = format!(
                    "{}: the server asked for a message from the model, and {refused}; \
                     the call was not sent again",
                    round.call.name
                );
                self.finish(call, Ok(tool_error(text)), true);
            }
        }
        Ok(())
    }

    /// Ends the sampling requests that belong to no call and waited past their
    /// deadline: the server is told nobody answered.
    pub(super) fn expire_inputs(&mut self, now_ms: u64) {
        let expired: Vec<u64> = self
            .input
            .waiting
            .iter()
            .filter(|(_, w)| w.deadline_ms.is_some_and(|d| d <= now_ms))
            .map(|(k, _)| *k)
            .collect();
        for key in expired {
            let Some(wait) = self.input.waiting.remove(&key) else {
                continue;
            };
            if let InputTarget::Request(id) = &wait.to {
                self.respond(jsonrpc::error_response(
                    id,
                    &RpcError::new(
                        sampling::REJECTED,
                        format!(
                            "mcpbox: nobody answered the sampling request within {}",
                            crate::transport::format_ms(sampling::UNATTACHED_TIMEOUT_MS)
                        ),
                    ),
                ));
            }
            self.warn(format!(
                "server `{}` asked for a message from the model, and nobody answered within {}; \
                 the server was told so",
                self.server,
                crate::transport::format_ms(sampling::UNATTACHED_TIMEOUT_MS)
            ));
            self.events.push(ClientEvent::InputWithdrawn(key));
        }
    }

    /// A 2025 server's `sampling/createMessage`: put to the embedder when it opted
    /// in, refused with the reason when it did not or the request is malformed.
    pub(super) fn on_sampling_request(&mut self, r: jsonrpc::Request) {
        if !self.input.sampling {
            return self.respond(jsonrpc::error_response(
                &r.id,
                &RpcError::new(
                    METHOD_NOT_FOUND,
                    format!(
                        "mcpbox: sampling is not enabled, so mcpbox did not declare the sampling \
                         capability ({})",
                        sampling::HOW_TO_ENABLE
                    ),
                ),
            ));
        }
        let params: Value = r
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        match sampling::parse_request(&params) {
            Ok(params) => {
                let call = self.only_call();
                self.ask(call, Question::Sampling(params), InputTarget::Request(r.id));
            }
            Err(why) => self.respond(jsonrpc::error_response(
                &r.id,
                &RpcError::new(INVALID_PARAMS, format!("mcpbox: {why}")),
            )),
        }
    }
}

/// The tool result for a call whose server wants a message from the model when
/// the embedder did not enable sampling.
pub(super) fn sampling_not_enabled(name: &str) -> CallResult {
    tool_error(format!(
        "{name}: the server asked for a message from the model (sampling/createMessage) to run \
         this tool, and sampling is not enabled in this mcpbox ({})",
        sampling::HOW_TO_ENABLE
    ))
}
