//! Deadlines on the client's clock: call timeouts (with `notifications/progress`
//! pushing a call's deadline back), the era probe's timeout, a tool list that
//! went stale (`ttlMs`) and a `subscriptions/listen` to open again after its
//! stream broke. The manager asks for the nearest one and calls `tick`.

use crate::prelude::*;

use serde_json::Value;

use super::{CallError, Client, ClientEvent, Pending, Progress};
use crate::jsonrpc::Id;
use crate::transport::format_ms;

impl Client {
    /// The earliest deadline: of a call, of the era probe, of a stale tool list,
    /// or of a `subscriptions/listen` to open again.
    /// Never later than it; after a call ends or progress moves its deadline it
    /// can be earlier, until the next [`Client::tick`] (a wake-up with nothing due).
    pub fn next_deadline(&self) -> Option<u64> {
        // The calls' bound may be earlier than their nearest deadline (a call
        // that ended since): waking then costs one `tick`, which makes it exact.
        (self.due_from < u64::MAX)
            .then_some(self.due_from)
            .into_iter()
            .chain(self.input.rounds.values().map(|r| r.call.deadline_ms))
            .chain(self.tasks.deadlines())
            .chain(self.input.waiting.values().filter_map(|w| w.deadline_ms))
            .chain(self.listen_deadlines())
            .chain(self.probe_deadline)
            .chain(self.tools.relist_at)
            .chain(self.subscriptions.relisten_at)
            .min()
    }

    /// Fires every deadline that has passed: calls, the era probe, a stale tool
    /// list, a `subscriptions/listen` to open again.
    pub fn tick(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
        self.expire_probe(now_ms);
        self.relist_if_stale(now_ms);
        self.relisten_if_due(now_ms);
        // Calls and requests are looked at only once one may be due.
        let due = now_ms >= self.due_from;
        if due {
            self.expire_requests(now_ms);
        }
        self.expire_listen_waits(now_ms);
        self.expire_inputs(now_ms);
        self.tick_tasks(now_ms);
        let expired: Vec<Id> = if due {
            self.pending
                .iter()
                .filter(|(_, p)| matches!(p, Pending::Call(c) if c.deadline_ms <= now_ms))
                .map(|(id, _)| id.clone())
                .collect()
        } else {
            Vec::new()
        };
        for id in expired {
            let Some(Pending::Call(c)) = self.pending.remove(&id) else {
                continue;
            };
            let after = format_ms(c.timeout_ms);
            self.abandon(id, &format!("timed out after {after}"));
            let waiting = self.input.waiting.values().any(|w| w.call == Some(c.call));
            let why = format!(
                "{} timed out after {after}{}; the server was told to cancel it",
                c.name,
                if waiting {
                    " (its input request was not answered in time)"
                } else {
                    ""
                }
            );
            self.finish(c.call, Err(CallError::Timeout(why)), true);
        }
        if due {
            self.due_from = self.pending_due();
        }
        let expired: Vec<u64> = self
            .input
            .rounds
            .iter()
            .filter(|(_, r)| r.call.deadline_ms <= now_ms)
            .map(|(call, _)| *call)
            .collect();
        for call in expired {
            let Some(round) = self.input.rounds.remove(&call) else {
                continue;
            };
            // Nothing is in flight on the server: there is nothing to cancel there.
            let why = format!(
                "{} timed out after {} waiting for an answer to its input request",
                round.call.name,
                format_ms(round.call.timeout_ms)
            );
            self.finish(call, Err(CallError::Timeout(why)), true);
        }
    }

    /// Notes the deadline of a call or request queued in `pending`.
    pub(super) fn due_by(&mut self, deadline_ms: u64) {
        self.due_from = self.due_from.min(deadline_ms);
    }

    /// The nearest deadline of the calls and requests in `pending`, exactly.
    fn pending_due(&self) -> u64 {
        self.pending
            .values()
            .filter_map(Pending::deadline_ms)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// `notifications/progress` for a call in flight pushes its deadline back by
    /// the call's full timeout.
    pub(super) fn on_progress(&mut self, params: &Value, now_ms: u64) {
        let Some(token) = params.get("progressToken") else {
            return;
        };
        let token = Id::from_json(&token.to_string());
        let call = match self.pending.get_mut(&token) {
            Some(Pending::Call(c)) => {
                c.deadline_ms = now_ms.saturating_add(c.timeout_ms);
                Some(c.call)
            }
            _ => self.task_progress(&token, now_ms),
        };
        if let Some(call) = call {
            // And is reported, for the gateway to pass on to its client.
            self.events.push(ClientEvent::Progress(Progress {
                call,
                progress: params.get("progress").cloned().unwrap_or(Value::Null),
                total: params.get("total").cloned(),
                message: params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(String::from),
            }));
        }
    }
}
