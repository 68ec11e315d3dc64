//! `mcpbox:runtime/pins`: the guest's pinned tool definitions, kept as text
//! the host never reads ([`crate::pins`]).

use crate::bindings::pins;
use crate::store::HostState;

impl pins::Host for HostState {
    fn load(&mut self) -> wasmtime::Result<Option<pins::Kept>> {
        Ok(self
            .pin_store
            .load()
            .map(|(pins, accept_pending)| pins::Kept {
                pins,
                accept_pending,
            }))
    }

    fn save(&mut self, pins: String) -> wasmtime::Result<()> {
        self.pin_store.save(pins);
        Ok(())
    }

    fn kept_across_runs(&mut self) -> wasmtime::Result<bool> {
        Ok(self.pin_store.kept_across_runs())
    }
}
