//! The registry's events channel, a leaf: the runtime publishes on it and
//! the OAuth client announces on it, without either reaching the other's
//! module for it.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::types::Event;

/// How many events a subscriber may fall behind before it misses some
/// (`RecvError::Lagged`).
const EVENTS_BUFFER: usize = 1024;

/// The registry's events, on a broadcast channel made at the first
/// subscription: an event sent before anyone subscribed reaches nobody either
/// way, and the channel's [`EVENTS_BUFFER`] slots, written when it is made, cost
/// a cold `mcpbox tools` 68 of its 880 page faults (docs/PERFORMANCE.md, "A cold
/// process").
#[derive(Debug, Clone, Default)]
pub(crate) struct Events(Arc<std::sync::OnceLock<broadcast::Sender<Event>>>);

impl Events {
    /// Sends `event` to every subscriber; how many it reached (none before the
    /// first subscription: it is dropped).
    pub fn send(&self, event: Event) -> usize {
        self.0
            .get()
            .and_then(|sender| sender.send(event).ok())
            .unwrap_or(0)
    }

    /// A receiver of every event sent from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0
            .get_or_init(|| broadcast::channel(EVENTS_BUFFER).0)
            .subscribe()
    }

    /// How many receivers there are.
    pub fn receiver_count(&self) -> usize {
        self.0.get().map_or(0, broadcast::Sender::receiver_count)
    }
}
