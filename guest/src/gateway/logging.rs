//! Logging and progress, passed from upstream servers to downstream clients.
//!
//! An upstream `notifications/message` names its server but not a call, so it goes
//! to the streams of that server's calls in flight whose clients want that level
//! (a 2025 session's `logging/setLevel`, everything when never set; a 2026-07-28
//! request's `_meta` `logLevel`, nothing when absent), and to every other 2025
//! session's standalone stream, as far as one turn's [`super::FANOUT_BYTES`] of
//! copies go (a copy per call or session of a large line would outgrow the
//! guest; the rest are dropped, as a log line may be). Progress names the call: it goes on
//! that call's stream under the progress token the downstream client gave.

use crate::methods;
use crate::prelude::*;
use alloc::collections::BTreeSet;

use serde_json::{Value, json};

use crate::client::Progress;
use crate::manager::LogEntry;
use crate::{budget, jsonrpc};

use super::{FANOUT_BYTES, Gateway, Origin, Signal, Target};

/// MCP log levels, lowest first (RFC 5424 severities).
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The rank of a log level (0 = debug).
pub fn rank(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

impl Gateway {
    /// The rank of the lowest log level the client of `origin` wants during a
    /// call: a 2026-07-28 request's `_meta` `logLevel` (none when absent), a 2025
    /// session's `logging/setLevel` (everything when never set).
    fn wanted_rank(&self, origin: &Origin) -> Option<u8> {
        match &origin.stateless {
            Some(meta) => meta.log_level,
            None => Some(self.sessions.open.get(&origin.session?)?.log_level),
        }
    }

    /// [`Gateway::wanted_rank`] as the level's name, to ask an upstream server for.
    pub(super) fn wanted_log_level(&self, origin: &Origin) -> Option<&'static str> {
        LEVELS.get(usize::from(self.wanted_rank(origin)?)).copied()
    }

    /// Passes an upstream server's log line to the clients that want it.
    pub(super) fn route_log(&mut self, log: &LogEntry) {
        let level = rank(&log.level).unwrap_or(1);
        // Structured data is passed as such when the guest can afford to read it
        // (see `budget`), else as the text it came as.
        let readable = budget::admit(budget::Needs::of(&log.message), 1, 1).is_ok();
        let data = readable
            .then(|| serde_json::from_str::<Value>(&log.message).ok())
            .flatten()
            .filter(|v| v.is_object() || v.is_array())
            .unwrap_or_else(|| Value::String(log.message.clone()));
        let note = jsonrpc::notification(
            methods::LOG_MESSAGE,
            Some(&json!({"level": log.level, "logger": log.server, "data": data})),
        );
        // The copies are held to what is left of this turn's fan-out budget: the
        // calls of a server, or the sessions, times a large line would outgrow the
        // guest. A log line may be dropped; an answer never is.
        let mut room = FANOUT_BYTES.saturating_sub(self.out_bytes());
        let take = |room: &mut usize| {
            let fits = note.len() <= *room;
            if fits {
                *room -= note.len();
            }
            fits
        };
        let mut told = BTreeSet::new();
        let mut out = Vec::new();
        for call in self.calls.values() {
            if *call.server != *log.server {
                continue;
            }
            let wants = self
                .wanted_rank(&call.origin)
                .is_some_and(|min| level >= min);
            if wants && call.origin.exchange.is_some() && take(&mut room) {
                out.push(Signal::Message {
                    target: Target::Exchange(call.origin.exchange.unwrap_or_default()),
                    text: note.clone(),
                });
                told.extend(call.origin.session);
            }
        }
        for (id, session) in &self.sessions.open {
            if session.initialized
                && level >= session.log_level
                && !told.contains(id)
                && take(&mut room)
            {
                out.push(Signal::Message {
                    target: Target::Session(*id),
                    text: note.clone(),
                });
            }
        }
        self.out.extend(out);
    }

    /// Passes upstream progress on a call to the downstream progress token.
    pub(super) fn route_progress(&mut self, p: &Progress) {
        let Some(call) = self.calls.get(&p.call) else {
            return;
        };
        let Some(token) = &call.progress_token else {
            return;
        };
        // A task's progress goes to its session's stream: the call's exchange
        // was answered with the task.
        let target = match (
            call.origin.exchange,
            call.task.is_some(),
            call.origin.session,
        ) {
            (Some(exchange), _, _) => Target::Exchange(exchange),
            (None, true, Some(session)) => Target::Session(session),
            _ => return,
        };
        let mut params = json!({"progressToken": token, "progress": p.progress});
        if let Some(total) = &p.total {
            params["total"] = total.clone();
        }
        if let Some(message) = &p.message {
            params["message"] = Value::String(message.clone());
        }
        self.out.push(Signal::Message {
            target,
            text: jsonrpc::notification(methods::PROGRESS, Some(&params)),
        });
    }
}
