//! Log levels across servers: the configuration's `logLevel`, sent to a server
//! as it connects (nobody waits for the answer; a refusal is a warning naming
//! the server). A `logging/setLevel` the embedder asks for names its server and
//! goes as any request ([`super::request`]).

use super::*;
use crate::client::Request;

impl<P: Platform> Manager<P> {
    /// Sends the configuration's `logLevel` to slot `i`, which just connected,
    /// when it offers logging.
    pub(super) fn send_log_level(&mut self, i: usize) {
        let slot = &self.slots[i];
        let Some(level) = slot.config.log_level.clone() else {
            return;
        };
        if !slot.client.as_ref().is_some_and(|c| c.offers().logging) {
            self.events.push(Event::Warning(format!(
                "server `{}` has `logLevel` {level:?} in its entry but does not offer logging; nothing was sent",
                slot.config.name
            )));
            return;
        }
        let call = self.calls.take_next();
        let timeout = slot.config.tool_timeout_ms;
        self.requests
            .quiet
            .insert(call, slot.config.name.to_string());
        let now = self.platform.now_ms();
        if let Some(client) = self.slots[i].client.as_mut() {
            client.start_request(call, Request::SetLogLevel { level }, timeout, now);
        }
        self.calls.route(call, i);
        self.flush(i);
    }
}
