//! Cancellation: `notifications/cancelled` for a call the caller cancelled or
//! that timed out. Abandoned request ids are remembered in `calls::Slots` so
//! that their late answers are dropped quietly instead of counted as unknown.

use super::wire::CancelledParams;
use super::{CallError, Client};
use crate::jsonrpc::Id;
use crate::methods;

impl Client {
    pub(super) fn abandon(&mut self, id: Id, reason: &str) {
        self.notify(
            methods::CANCELLED,
            Some(&CancelledParams {
                request_id: &id,
                reason,
            }),
        );
        self.slots.remember_abandoned(id);
    }

    /// Cancels a call in flight; false if it is not in flight here.
    pub fn cancel(&mut self, call: u64) -> bool {
        match self.slots.call_id(call) {
            Some(id) => {
                self.slots.pending.remove(&id);
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
}
