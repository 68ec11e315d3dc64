//! Call counts, for metrics ([`Manager::enable_call_counts`], WIT
//! `registry.enable-call-counts`): every call that ends, or is refused before it
//! starts, queues an [`Event::CallCounted`] — a key that stands for its server and
//! tool, how it ended and how long it took. The key's names go out once, with its
//! first count, so a host counts each later call for the price of a few integers,
//! where an audit record would cost it six strings to lift and convert
//! (docs/PERFORMANCE.md, "Metrics cost"). Counts and audit records are
//! independent: an embedder can have either, or both.
//!
//! Keys last as long as the manager: a host that starts a new instance forgets
//! the old keys and learns the new instance's names as they come.

use super::*;

/// How a call ended, as metrics count it: the audit record's `outcome` word
/// ([`CallOutcome::as_str`]), as an enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The server answered with a result.
    Ok,
    /// The server's result says the tool failed (`isError`).
    ToolError,
    /// [`CallError::UnknownTool`].
    UnknownTool,
    /// [`CallError::InvalidArguments`].
    InvalidArguments,
    /// [`CallError::ServerUnavailable`].
    ServerUnavailable,
    /// [`CallError::Timeout`].
    Timeout,
    /// [`CallError::Cancelled`].
    Cancelled,
    /// [`CallError::Protocol`].
    Protocol,
    /// [`CallError::Denied`].
    Denied,
}

impl CallOutcome {
    /// How a call that completed ended.
    pub fn of(outcome: &Result<CallResult, CallError>) -> CallOutcome {
        match outcome {
            Ok(r) if r.is_error => CallOutcome::ToolError,
            Ok(_) => CallOutcome::Ok,
            Err(e) => CallOutcome::of_error(e),
        }
    }

    /// How a call that failed ended.
    pub fn of_error(error: &CallError) -> CallOutcome {
        match error {
            CallError::UnknownTool(_) => CallOutcome::UnknownTool,
            CallError::InvalidArguments(_) => CallOutcome::InvalidArguments,
            CallError::ServerUnavailable(_) => CallOutcome::ServerUnavailable,
            CallError::Timeout(_) => CallOutcome::Timeout,
            CallError::Cancelled => CallOutcome::Cancelled,
            CallError::Protocol(_) => CallOutcome::Protocol,
            CallError::Denied(_) => CallOutcome::Denied,
        }
    }

    /// The audit record's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool-error",
            CallOutcome::UnknownTool => "unknown-tool",
            CallOutcome::InvalidArguments => "invalid-arguments",
            CallOutcome::ServerUnavailable => "server-unavailable",
            CallOutcome::Timeout => "timeout",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::Protocol => "protocol",
            CallOutcome::Denied => "denied",
        }
    }
}

/// A server and one of its tools, as a key's first count names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountedTool {
    /// The configured server name; empty for a tool no server has.
    pub server: String,
    /// The tool's own name on its server; for a tool no server has, the name
    /// that was called (past [`UNKNOWN_NAMES`] of them, [`OTHER_UNKNOWN`]).
    pub tool: String,
}

/// One counted call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallCount {
    /// Stands for the call's server and tool.
    pub key: u32,
    /// What `key` stands for, on its first count only.
    pub names: Option<CountedTool>,
    /// How it ended.
    pub outcome: CallOutcome,
    /// From start to end, approval included; 0 for a call refused at once.
    pub duration_ms: u64,
}

/// How many names of tools no server has are counted each under its own key.
/// Calls to further such names share [`OTHER_UNKNOWN`]'s, so that a client that
/// calls made-up names cannot grow the counts (here and in the host) without end.
pub const UNKNOWN_NAMES: usize = 100;

/// The tool name under which calls past [`UNKNOWN_NAMES`] unknown names count.
pub const OTHER_UNKNOWN: &str = "(other)";

/// The keys given out so far.
#[derive(Debug, Default)]
pub(super) struct CallCounts {
    /// server → tool → key: looked up by `&str`, with no allocation once a
    /// tool has its key.
    keys: BTreeMap<String, BTreeMap<String, u32>>,
    /// Unknown tool names with a key of their own (at most [`UNKNOWN_NAMES`]).
    unknown: usize,
}

impl CallCounts {
    /// The count of a call to `tool` on `server` (empty: no server has it).
    pub fn count(
        &mut self,
        server: &str,
        tool: &str,
        outcome: CallOutcome,
        duration_ms: u64,
    ) -> CallCount {
        if let Some(&key) = self.keys.get(server).and_then(|tools| tools.get(tool)) {
            return CallCount {
                key,
                names: None,
                outcome,
                duration_ms,
            };
        }
        let tool = if server.is_empty() && self.unknown >= UNKNOWN_NAMES {
            OTHER_UNKNOWN
        } else {
            tool
        };
        let next = self.keys.values().map(BTreeMap::len).sum::<usize>();
        let tools = self.keys.entry(server.to_string()).or_default();
        let (key, names) = match tools.get(tool) {
            // `(other)`, named before.
            Some(&key) => (key, None),
            None => {
                // Keys are dense from 0, a host can keep them in a list; a guest
                // that gives out four billion of them has other problems.
                let key = u32::try_from(next).unwrap_or(u32::MAX);
                tools.insert(tool.to_string(), key);
                if server.is_empty() && tool != OTHER_UNKNOWN {
                    self.unknown += 1;
                }
                let names = CountedTool {
                    server: server.to_string(),
                    tool: tool.to_string(),
                };
                (key, Some(names))
            }
        };
        CallCount {
            key,
            names,
            outcome,
            duration_ms,
        }
    }
}

impl<P: Platform> Manager<P> {
    /// Queues an [`Event::CallCounted`] for every call that ends, or is refused
    /// before it starts, from now on (see the module docs).
    pub fn enable_call_counts(&mut self) {
        if self.call_counts.is_none() {
            self.call_counts = Some(CallCounts::default());
        }
    }

    /// Counts a call, when counts are on.
    pub(super) fn count_call(
        &mut self,
        server: &str,
        tool: &str,
        outcome: CallOutcome,
        duration_ms: u64,
    ) {
        if let Some(counts) = &mut self.call_counts {
            let count = counts.count(server, tool, outcome, duration_ms);
            self.events.push(Event::CallCounted(count));
        }
    }
}
