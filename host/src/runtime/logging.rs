//! Log levels through [`Runtime`]: `logging/setLevel` (a 2026-07-28 server
//! gets the level in the `_meta` of its requests instead). How a request
//! travels is [`super::request`]'s; the log lines arrive as
//! [`Event::Log`](crate::Event::Log).

use super::Runtime;
use crate::bindings::registry;
use crate::types::CallError;

impl Runtime {
    /// Sets the lowest level of `notifications/message` log lines `server`
    /// sends (`logging/setLevel`: "debug" … "emergency").
    pub async fn set_log_level(&self, server: &str, level: &str) -> Result<(), CallError> {
        let request = registry::ServerRequest::SetLogLevel(level.to_string());
        self.request(Some(server), request, None, "logging/setLevel")
            .await
            .map(drop)
    }
}
