//! Approvals: a call to a tool an `ask` rule covers waits until someone approves it.
//!
//! The question travels the way a server's elicitation does (see
//! [`crate::elicitation`]), so an embedder that answers input requests answers
//! approvals with the same code: an [`Event::InputRequested`] whose
//! [`InputRequest::approval`] carries the arguments and the rule, and whose
//! requested schema offers one choice, `approve`: `once` (the default) or
//! `session`. The answer comes back through [`Manager::answer_input`]:
//!
//! | answer | effect |
//! |---|---|
//! | accept `{}` or `{"approve": "once"}` | this call goes out |
//! | accept `{"approve": "session"}` | this call, and every later call of the same tool (with the same profile) until the configuration is reloaded |
//! | decline or cancel | the call fails with `denied`, naming the rule |
//!
//! The call's timeout keeps running while it waits: past it the call fails with
//! `timeout` and the question is withdrawn ([`Event::InputWithdrawn`]), as it is
//! when the call is cancelled or the manager shuts down. Approvals are asked only
//! once the embedder opted in ([`Manager::enable_approvals`], or
//! [`Manager::enable_input_requests`], which implies it); otherwise an `ask` call
//! is refused at once, saying nobody can be asked.
//!
//! An approved call is sent like any other: its server may have gone away
//! meanwhile, in which case it restarts the server or fails as a fresh call would.

use super::*;
use crate::elicitation::Approval;
use crate::permissions::Rule;

/// The schema of an approval's answer.
const APPROVAL_SCHEMA: &str = r#"{"type":"object","properties":{"approve":{"type":"string","enum":["once","session"],"default":"once","title":"Approve this call once, or every call of this tool for the rest of the session"}}}"#;

/// The approvals of one manager: whether they are asked, the calls waiting for
/// one, the tools approved for the session.
#[derive(Default)]
pub(super) struct Approvals {
    /// Whether `ask` rules are asked.
    pub(super) enabled: bool,
    /// Calls waiting for an approval, by input request id.
    pub(super) waiting: BTreeMap<u64, Pending>,
    /// Tools approved for the session, as (profile, registry name).
    pub(super) session: alloc::collections::BTreeSet<(Option<String>, String)>,
}

impl Approvals {
    /// Whether a call of `tool` (registry name) with `profile` was approved for
    /// the session.
    pub(super) fn approved_for_session(&self, tool: &str, profile: Option<&str>) -> bool {
        !self.session.is_empty()
            && self
                .session
                .contains(&(profile.map(String::from), tool.to_string()))
    }

    /// The nearest deadline of a call waiting for its approval.
    pub(super) fn next_deadline(&self) -> Option<u64> {
        self.waiting.values().map(|p| p.deadline_ms).min()
    }
}

/// A call waiting for its approval.
pub(super) struct Pending {
    pub call: u64,
    pub slot: usize,
    pub tool: Rc<Tool>,
    /// Checked arguments, a JSON object.
    pub arguments: Box<RawValue>,
    pub timeout_ms: u64,
    pub deadline_ms: u64,
    /// The caller's options.
    pub options: crate::client::CallOptions,
    pub rule: Rc<Rule>,
    pub profile: Option<String>,
}

/// How an approval was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Once,
    Session,
    Refused,
}

fn verdict(answer: &InputAnswer) -> Result<Verdict, String> {
    let text = match answer {
        InputAnswer::Decline | InputAnswer::Cancel | InputAnswer::Unanswerable(_) => {
            return Ok(Verdict::Refused);
        }
        InputAnswer::Accept(text) => text,
    };
    let text = if text.trim().is_empty() { "{}" } else { text };
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("the accepted answer is not valid JSON: {e}"))?;
    let Some(fields) = value.as_object() else {
        return Err(format!(
            "an accepted answer must be a JSON object like {{\"approve\": \"once\"}}, but is {}",
            crate::config::kind_of(&value)
        ));
    };
    match fields.get("approve") {
        None => Ok(Verdict::Once),
        Some(v) if v == "once" => Ok(Verdict::Once),
        Some(v) if v == "session" => Ok(Verdict::Session),
        Some(other) => Err(format!(
            "the answer does not match the requested schema: /approve: must be \"once\" or \
             \"session\", but is {other}"
        )),
    }
}

impl<P: Platform> Manager<P> {
    /// Offers approvals for `ask` rules to the embedder as input requests (see
    /// [`crate::manager::approvals`](self)); without it, such calls are refused.
    pub fn enable_approvals(&mut self) {
        self.approvals.enabled = true;
    }

    /// Asks for the approval of a call an `ask` rule covers: the call waits
    /// until it is answered, times out or is cancelled.
    pub(super) fn ask_approval(&mut self, pending: Pending) -> Result<u64, CallError> {
        let tool = &pending.tool.name;
        if !self.approvals.enabled {
            return Err(CallError::Denied(format!(
                "{tool} needs approval ({}), but nobody can be asked: the embedder does not \
                 answer approvals",
                pending.rule
            )));
        }
        let id = self.input.next_id();
        let server = self.slots[pending.slot].config.name.clone();
        let request = InputRequest {
            id,
            server: server.clone(),
            call: Some(pending.call),
            tool: Some(tool.clone()),
            message: format!(
                "Allow {tool} (tool `{}` of server `{server}`)? The permission rule {} asks first.",
                pending.tool.def.name, pending.rule
            ),
            requested_schema: APPROVAL_SCHEMA.to_string(),
            approval: Some(Approval {
                rule: pending.rule.to_string(),
                arguments: pending.arguments.get().to_string(),
            }),
            sampling: None,
            url: None,
        };
        self.events.push(Event::InputRequested(request));
        let call = pending.call;
        self.calls.route(call, pending.slot);
        self.approvals.waiting.insert(id, pending);
        Ok(call)
    }

    /// Answers approval `id`, if it is one: `None` when no approval of that id
    /// is waiting (it may be a server's input request).
    pub(super) fn answer_approval(
        &mut self,
        id: u64,
        answer: &InputAnswer,
    ) -> Option<Result<(), String>> {
        let pending = self.approvals.waiting.get(&id)?;
        let verdict = match verdict(answer) {
            Ok(v) => v,
            Err(e) => {
                let tool = &pending.tool.name;
                return Some(Err(format!("approval {id} for {tool}: {e}")));
            }
        };
        let pending = self.approvals.waiting.remove(&id)?;
        self.calls.end(pending.call);
        let tool = pending.tool.name.clone();
        if let Some(flight) = self.calls.flight.get_mut(&pending.call) {
            flight.approval = Some(match verdict {
                Verdict::Once => "once",
                Verdict::Session => "session",
                Verdict::Refused => "refused",
            });
        }
        match verdict {
            Verdict::Refused => {
                let message = format!(
                    "{tool} was not approved (the permission rule {} asks first)",
                    pending.rule
                );
                self.complete(pending.call, Err(CallError::Denied(message)));
            }
            Verdict::Once | Verdict::Session => {
                if verdict == Verdict::Session {
                    self.approvals
                        .session
                        .insert((pending.profile.clone(), tool.clone()));
                }
                let now = self.platform.now_ms();
                let sent = self.dispatch(
                    pending.call,
                    pending.slot,
                    &pending.tool,
                    pending.arguments,
                    pending.timeout_ms,
                    now,
                    pending.deadline_ms,
                    pending.options,
                );
                if let Err(e) = sent {
                    self.complete(pending.call, Err(e));
                }
            }
        }
        self.sync_statuses();
        Some(Ok(()))
    }

    /// Withdraws the approval of call `call`, completing it `cancelled`; false
    /// when the call is not waiting for one.
    pub(super) fn cancel_approval(&mut self, call: u64) -> bool {
        let Some(id) = self
            .approvals
            .waiting
            .iter()
            .find(|(_, p)| p.call == call)
            .map(|(id, _)| *id)
        else {
            return false;
        };
        self.approvals.waiting.remove(&id);
        self.events.push(Event::InputWithdrawn(id));
        self.note_approval(call, "withdrawn");
        self.complete(call, Err(CallError::Cancelled));
        true
    }

    /// Fails the calls whose timeout passed before they were approved.
    pub(super) fn expire_approvals(&mut self, now: u64) {
        if self.approvals.waiting.values().all(|p| p.deadline_ms > now) {
            return;
        }
        let expired: Vec<u64> = self
            .approvals
            .waiting
            .iter()
            .filter(|(_, p)| p.deadline_ms <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            let Some(p) = self.approvals.waiting.remove(&id) else {
                continue;
            };
            self.events.push(Event::InputWithdrawn(id));
            self.note_approval(p.call, "unanswered");
            let message = format!(
                "{} was not approved within the call's timeout of {} (the permission rule {} asks first)",
                p.tool.name,
                format_ms(p.timeout_ms),
                p.rule
            );
            self.complete(p.call, Err(CallError::Timeout(message)));
        }
    }

    /// Fails every call waiting for an approval with `why` (shut down, reloaded).
    pub(super) fn withdraw_approvals(&mut self, why: &str) {
        for (id, p) in core::mem::take(&mut self.approvals.waiting) {
            self.events.push(Event::InputWithdrawn(id));
            self.note_approval(p.call, "withdrawn");
            let message = format!("{} is unavailable: {why}", p.tool.name);
            self.complete(p.call, Err(CallError::ServerUnavailable(message)));
        }
    }

    /// Notes how call `call`'s approval ended, for its audit record.
    fn note_approval(&mut self, call: u64, how: &'static str) {
        if let Some(flight) = self.calls.flight.get_mut(&call) {
            flight.approval = Some(how);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_once_session_or_refused() {
        let accept = |s: &str| verdict(&InputAnswer::Accept(s.into()));
        assert_eq!(accept("{}"), Ok(Verdict::Once));
        assert_eq!(accept(""), Ok(Verdict::Once));
        assert_eq!(accept(r#"{"approve":"once"}"#), Ok(Verdict::Once));
        assert_eq!(accept(r#"{"approve":"session"}"#), Ok(Verdict::Session));
        assert_eq!(verdict(&InputAnswer::Decline), Ok(Verdict::Refused));
        assert_eq!(verdict(&InputAnswer::Cancel), Ok(Verdict::Refused));
        assert!(
            accept(r#"{"approve":"always"}"#)
                .unwrap_err()
                .contains("/approve")
        );
        assert!(accept("[1]").unwrap_err().contains("JSON object"));
        assert!(accept("{").unwrap_err().contains("not valid JSON"));
        // The schema offered is valid JSON with the default the embedder may rely on.
        let schema: serde_json::Value = serde_json::from_str(APPROVAL_SCHEMA).unwrap();
        assert_eq!(schema["properties"]["approve"]["default"], "once");
    }
}
