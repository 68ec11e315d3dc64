//! What happens when a call ends, before its completion leaves `wait`: its result
//! is limited ([`crate::output`]: oversized results and media go to host files).
//!
//! Each call started is noted in `Manager::flight` with what its end needs: its
//! server (by name: a configuration loaded meanwhile renumbers the slots) and
//! its tool.

use super::*;

/// A call in flight, as its end needs to know it.
pub(super) struct Flight {
    /// The configured server name.
    pub server: String,
    pub tool: Rc<Tool>,
}

impl<P: Platform> Manager<P> {
    /// Limits a completed call's result.
    pub(super) fn finish(&mut self, mut c: Completion) -> Completion {
        let Some(flight) = self.flight.remove(&c.call) else {
            return c;
        };
        if let Ok(result) = c.outcome {
            let (result, warnings) = crate::output::limit(
                result,
                &self.output,
                &flight.server,
                &flight.tool.name,
                c.call,
                &mut self.platform,
            );
            self.events.extend(warnings.into_iter().map(Event::Warning));
            c.outcome = Ok(result);
        }
        c
    }
}
