//! `mcpbox:runtime/control`: the wake signal.
//!
//! The guest blocks in `wasi:io/poll` while it waits for its servers; the
//! embedder's queued jobs have to be able to end that wait. The pollable given
//! out here is ready while [`Wake`] says work is queued (or the runtime is
//! closing), so the driver gets the store back at once.

use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::bindings::control;
use crate::store::{HostState, Wake};

/// The resource behind `control.wake-signal`'s pollable.
struct WakeSignal(Arc<Wake>);

#[wasmtime_wasi::async_trait]
impl Pollable for WakeSignal {
    async fn ready(&mut self) {
        self.0.ready().await;
    }
}

impl control::Host for HostState {
    fn wake_signal(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let signal = self.table.push(WakeSignal(self.wake.clone()))?;
        subscribe(&mut self.table, signal)
    }
}
