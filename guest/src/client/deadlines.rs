//! Deadlines on the client's clock: call timeouts (with `notifications/progress`
//! pushing a call's deadline back), the era probe's timeout, a tool list that
//! went stale (`ttlMs`) and a `subscriptions/listen` to open again after its
//! stream broke. The manager asks for the nearest one and calls `tick`.

use crate::prelude::*;

use serde_json::Value;

use super::{CallError, Client, ClientEvent, Pending, Progress};
use crate::jsonrpc::Id;
use crate::transport::format_ms;

/// The deadlines the client keeps apart from the concepts that own theirs: a
/// bound on the calls and requests in flight, and the era probe's timeout.
#[derive(Debug)]
pub(super) struct Deadlines {
    /// No call or request in flight (`calls::Slots`) is due before this time
    /// (`u64::MAX`: none is waiting). A lower bound, lowered as they are queued
    /// and made exact again when [`Client::tick`] looks at them: with a thousand
    /// calls in flight, `tick` and `next_deadline` walked them all on every turn.
    due_from: u64,
    /// When an unanswered `server/discover` gives way to `initialize`.
    pub(super) probe: Option<u64>,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            due_from: u64::MAX,
            probe: None,
        }
    }
}

impl Deadlines {
    /// Notes the deadline of a call or request queued in flight.
    pub(super) fn due_by(&mut self, deadline_ms: u64) {
        self.due_from = self.due_from.min(deadline_ms);
    }

    /// Nothing in flight has a deadline any more.
    pub(super) fn none_due(&mut self) {
        self.due_from = u64::MAX;
    }

    /// The bound on the calls' and requests' deadlines, if one may come.
    fn calls_from(&self) -> Option<u64> {
        (self.due_from < u64::MAX).then_some(self.due_from)
    }

    /// Whether a call or request may be due at `now_ms`.
    fn calls_due(&self, now_ms: u64) -> bool {
        now_ms >= self.due_from
    }
}

impl Client {
    /// The earliest deadline: of a call, of the era probe, of a stale tool list,
    /// or of a `subscriptions/listen` to open again.
    /// Never later than it; after a call ends or progress moves its deadline it
    /// can be earlier, until the next [`Client::tick`] (a wake-up with nothing due).
    pub fn next_deadline(&self) -> Option<u64> {
        // The calls' bound may be earlier than their nearest deadline (a call
        // that ended since): waking then costs one `tick`, which makes it exact.
        self.deadlines
            .calls_from()
            .into_iter()
            .chain(self.input.rounds.values().map(|r| r.call.deadline_ms))
            .chain(self.tasks.deadlines())
            .chain(self.input.waiting.values().filter_map(|w| w.deadline_ms))
            .chain(self.listen_deadlines())
            .chain(self.deadlines.probe)
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
        let due = self.deadlines.calls_due(now_ms);
        if due {
            self.expire_requests(now_ms);
        }
        self.expire_listen_waits(now_ms);
        self.expire_inputs(now_ms);
        self.tick_tasks(now_ms);
        let expired: Vec<Id> = if due {
            self.slots
                .pending
                .iter()
                .filter(|(_, p)| matches!(p, Pending::Call(c) if c.deadline_ms <= now_ms))
                .map(|(id, _)| id.clone())
                .collect()
        } else {
            Vec::new()
        };
        for id in expired {
            let Some(Pending::Call(c)) = self.slots.pending.remove(&id) else {
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
            self.deadlines.due_from = self.slots.due();
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

    /// `notifications/progress` for a call in flight pushes its deadline back by
    /// the call's full timeout.
    pub(super) fn on_progress(&mut self, params: &Value, now_ms: u64) {
        let Some(token) = params.get("progressToken") else {
            return;
        };
        let token = Id::from_json(&token.to_string());
        let call = match self.slots.pending.get_mut(&token) {
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

#[cfg(test)]
mod tests {
    use super::super::tests::{feed, ready, sent};
    use super::*;
    use crate::client::FinishedCall;
    use serde_json::json;

    #[test]
    fn the_calls_bound_only_falls_until_it_is_cleared() {
        let mut d = Deadlines::default();
        assert_eq!(d.calls_from(), None);
        assert!(!d.calls_due(u64::MAX - 1));
        d.due_by(500);
        d.due_by(900);
        assert_eq!(d.calls_from(), Some(500));
        assert!(!d.calls_due(499));
        assert!(d.calls_due(500));
        d.none_due();
        assert_eq!(d.calls_from(), None);
    }

    /// Calls in flight are looked at by `tick` only once one may be due (the bound
    /// in `due_from`): a later call with a shorter timeout lowers it, and a call that
    /// ends leaves it early until a tick finds nothing due.
    #[test]
    fn every_call_times_out_on_time_among_many() {
        let mut c = ready(&["slow"]);
        c.start_call(1, "mcp__demo__slow", "slow", "{}", 10_000, 0);
        c.start_call(2, "mcp__demo__slow", "slow", "{}", 1_000, 100);
        c.start_call(3, "mcp__demo__slow", "slow", "{}", 5_000, 200);
        let ids: Vec<Value> = sent(&mut c)
            .into_iter()
            .map(|(m, _)| m["id"].clone())
            .collect();
        assert_eq!(c.next_deadline(), Some(1_100));
        c.tick(1_099);
        assert!(c.take_events().is_empty());
        c.tick(1_100);
        let events = c.take_events();
        assert!(
            matches!(
                &events[..],
                [ClientEvent::Finished(FinishedCall {
                    call: 2,
                    outcome: Err(CallError::Timeout(_))
                })]
            ),
            "{events:?}"
        );
        assert_eq!(c.next_deadline(), Some(5_200));
        // Call 3 is answered: the bound stays at its deadline until a tick.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": ids[2], "result": {"content": []}}),
            3_000,
        );
        assert_eq!(c.take_events().len(), 1);
        assert_eq!(c.next_deadline(), Some(5_200));
        c.tick(5_200);
        assert!(c.take_events().is_empty(), "nothing was due at 5.2 s");
        assert_eq!(c.next_deadline(), Some(10_000));
        c.tick(10_000);
        let events = c.take_events();
        assert!(
            matches!(
                &events[..],
                [ClientEvent::Finished(FinishedCall {
                    call: 1,
                    outcome: Err(CallError::Timeout(_))
                })]
            ),
            "{events:?}"
        );
        assert!(!c.calls_in_flight());
        assert_eq!(c.next_deadline(), None);
    }

    #[test]
    fn timeouts_cancel_and_progress_extends() {
        let mut c = ready(&["slow"]);
        c.start_call(5, "mcp__demo__slow", "slow", "{}", 1000, 100);
        let id = sent(&mut c)[0].0["id"].clone();
        assert_eq!(c.next_deadline(), Some(1100));
        // Progress at 900 moves the deadline to 1900.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": id, "progress": 1}}),
            900,
        );
        // And is reported, for the gateway to pass on.
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Progress(Progress {
                call: 5,
                progress: json!(1),
                total: None,
                message: None
            })]
        );
        // The next deadline stays the old one, a bound, until a tick then finds
        // nothing due and makes it exact.
        assert_eq!(c.next_deadline(), Some(1100));
        c.tick(1100);
        assert!(c.take_events().is_empty());
        assert!(sent(&mut c).is_empty());
        assert_eq!(c.next_deadline(), Some(1900));
        // A token of the wrong type does not.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": id.to_string(), "progress": 2}}),
            1500,
        );
        assert_eq!(c.next_deadline(), Some(1900));
        c.tick(1899);
        assert!(c.take_events().is_empty());
        c.tick(1900);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "notifications/cancelled");
        assert_eq!(out[0].0["params"]["requestId"], id);
        assert_eq!(out[0].0["params"]["reason"], "timed out after 1s");
        assert_eq!(
            c.take_events(),
            vec![ClientEvent::Finished(FinishedCall {
                call: 5,
                outcome: Err(CallError::Timeout(
                    "mcp__demo__slow timed out after 1s; the server was told to cancel it".into()
                ))
            })]
        );
        // The late answer is dropped quietly, not counted as unknown.
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
            2000,
        );
        assert!(c.take_events().is_empty());
        assert_eq!(c.stats().unknown_responses, 0);
    }
}
