//! Cancellation: `notifications/cancelled` for a call the caller cancelled or
//! that timed out, and the memory of abandoned request ids so that their late
//! answers are dropped quietly instead of counted as unknown.

use super::wire::CancelledParams;
use super::{CallError, Client, Pending};
use crate::jsonrpc::Id;
use crate::methods;

/// How many abandoned request ids are remembered to drop their late answers.
pub(super) const ABANDONED_MEMORY: usize = 1024;

impl Client {
    pub(super) fn abandon(&mut self, id: Id, reason: &str) {
        self.notify(
            methods::CANCELLED,
            Some(&CancelledParams {
                request_id: &id,
                reason,
            }),
        );
        if self.abandoned.len() == ABANDONED_MEMORY {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(id);
    }

    /// Cancels a call in flight; false if it is not in flight here.
    pub fn cancel(&mut self, call: u64) -> bool {
        let id = self
            .pending
            .iter()
            .find(|(_, p)| matches!(p, Pending::Call(c) if c.call == call))
            .map(|(id, _)| id.clone());
        match id {
            Some(id) => {
                self.pending.remove(&id);
                self.abandon(id, "cancelled by the caller");
            }
            // Waiting for input: nothing is in flight on the server.
            None if self.input.rounds.contains_key(&call) => {}
            // A task: the server is sent tasks/cancel.
            None if self.cancel_task(call) => {}
            None => return self.cancel_request(call),
        }
        self.finish(call, Err(CallError::Cancelled), true);
        true
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
