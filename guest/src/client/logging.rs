//! Log levels: `logging/setLevel` with one of the MCP levels ([`LOG_LEVELS`]).
//! A 2025 server gets the request (see [`super::request`]); a 2026-07-28 server
//! has none, so the level goes in the `_meta` of every request from then on
//! (`io.modelcontextprotocol/logLevel`) and the request completes at once. The
//! server's `notifications/message` lines become [`super::ClientEvent::Log`].

use crate::prelude::*;

#[cfg(doc)]
use super::Request;
use super::request::PendingRequest;
use super::{CallError, CallResult, Client};

/// The MCP log levels, lowest first (RFC 5424 severities).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// `level` is one of [`LOG_LEVELS`], or why not.
pub(super) fn check_level(level: &str) -> Result<(), String> {
    if !LOG_LEVELS.contains(&level) {
        return Err(format!(
            "unknown log level {level:?}; use one of {}",
            LOG_LEVELS.join(", ")
        ));
    }
    Ok(())
}

impl Client {
    /// [`Request::SetLogLevel`] to a 2026-07-28 server: `level` is kept for the
    /// `_meta` of every later request, and the request completes at once.
    pub(super) fn set_log_level_in_meta(&mut self, pending: PendingRequest, level: String) {
        let outcome = match check_level(&level) {
            Ok(()) => {
                self.log_level = Some(level);
                Ok(CallResult {
                    is_error: false,
                    text: String::new(),
                    content: "[]".into(),
                    structured_content: None,
                })
            }
            Err(why) => Err(CallError::InvalidArguments(format!(
                "{}: {why}",
                pending.label(&self.server)
            ))),
        };
        self.finish(pending.call, outcome, true);
    }
}
