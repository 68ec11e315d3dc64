//! Era detection and `server/discover` (2026-07-28).
//!
//! Detection probes `server/discover` first; any error, a result without a version
//! mcpbox speaks, or no answer within [`PROBE_TIMEOUT_MS`] falls back to the legacy
//! `initialize`. An `UnsupportedProtocolVersion` error (-32022) listing a version
//! mcpbox speaks is retried once with it. A hint from an earlier run skips the
//! probe for a server known to be legacy, for [`LEGACY_KEPT_MS`] after it was
//! found so; a probe answered only after its timeout does not make a server known
//! to be legacy.

use crate::prelude::*;

use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{DiscoverResult, MetaOnly};
use super::{Client, Pending, Phase};
use crate::jsonrpc::RpcError;
use crate::methods;
use crate::transport::Failure;

/// The stateless protocol revision the guest speaks.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// How long `server/discover` may go unanswered before the server is taken for a
/// legacy one that ignores unknown requests.
pub const PROBE_TIMEOUT_MS: u64 = 5_000;

/// How long a server found to speak only the legacy era is spared the probe.
/// Servers are upgraded to 2026-07-28, and a legacy verdict reached wrongly (a
/// probe answered late and, before that was recognised, taken for silence) must
/// heal: once it is older than this, the next connection probes again.
pub const LEGACY_KEPT_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The JSON-RPC error code for an unsupported protocol version (2026-07-28).
pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Which generation of MCP the session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` + `notifications/initialized`, versions 2024-11-05 … 2025-11-25.
    Legacy,
    /// 2026-07-28: no handshake, `_meta` on every request, `server/discover`.
    Stateless,
}

impl Era {
    /// A short name: the protocol version, or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Stateless => STATELESS_VERSION,
        }
    }

    /// What is remembered across runs (`mcpbox:runtime/state`): `2026-07-28`,
    /// or `legacy@MS`, MS the wall-clock date it was found (milliseconds since
    /// the Unix epoch; `legacy` alone on a platform without a wall clock).
    pub fn memo(self, wall_ms: Option<u64>) -> String {
        match (self, wall_ms) {
            (Era::Legacy, Some(ms)) => format!("legacy@{ms}"),
            _ => self.as_str().to_string(),
        }
    }

    /// The era a memo of [`Era::memo`] names, if it still holds at `wall_ms`:
    /// a legacy one for [`LEGACY_KEPT_MS`] after its date. An undated legacy
    /// memo (written before memos were dated, or where there is no wall clock)
    /// holds only on a platform without a wall clock, so that old verdicts
    /// are probed again.
    pub fn from_memo(text: &str, wall_ms: Option<u64>) -> Option<Era> {
        if text == STATELESS_VERSION {
            return Some(Era::Stateless);
        }
        let date = text.strip_prefix("legacy");
        match (date, wall_ms) {
            (Some(""), None) => Some(Era::Legacy),
            (Some(date), Some(now)) => {
                let found: u64 = date.strip_prefix('@')?.parse().ok()?;
                (now.abs_diff(found) < LEGACY_KEPT_MS).then_some(Era::Legacy)
            }
            _ => None,
        }
    }
}

impl Client {
    /// Starts the session, finding out which era the server speaks: a server
    /// remembered as legacy (`hint`) gets `initialize` at once (falling back to
    /// discovery if that fails); any other gets the `server/discover` probe.
    pub fn detect(&mut self, hint: Option<Era>, now_ms: u64) {
        self.now_ms = now_ms;
        match hint {
            Some(Era::Legacy) => self.initialize(true),
            _ => self.discover(false),
        }
    }

    pub(super) fn discover(&mut self, retried: bool) {
        self.era = Era::Stateless;
        self.phase = Phase::Discovering;
        self.protocol_version = Some(STATELESS_VERSION.to_string());
        self.deadlines.probe = Some(self.now_ms.saturating_add(PROBE_TIMEOUT_MS));
        let params = MetaOnly {
            meta: self.request_meta(None),
        };
        self.request(
            methods::SERVER_DISCOVER,
            None,
            Some(&params),
            Pending::Discover { retried },
        );
    }

    pub(super) fn on_discovered(&mut self, outcome: Result<Box<RawValue>, Failure>, retried: bool) {
        if self.phase != Phase::Discovering {
            return;
        }
        self.deadlines.probe = None;
        let raw = match outcome {
            Ok(raw) => raw,
            Err(Failure::Rpc(e))
                if e.code == UNSUPPORTED_PROTOCOL_VERSION && !retried && offers_stateless(&e) =>
            {
                // The server named the versions it takes and ours is one: ask again.
                return self.discover(true);
            }
            // Refused for want of an authorization the host could not get:
            // `initialize` would be refused the same way.
            Err(e @ Failure::NeedsAuthorization { .. }) => return self.fail(e.to_string()),
            // Not a 2026-07-28 server (method not found, or a legacy server's
            // "not initialised"): the legacy handshake.
            Err(_) => return self.initialize(false),
        };
        let result: DiscoverResult = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(_) => return self.initialize(false),
        };
        if !speaks_stateless(&result) {
            return self.initialize(false);
        }
        let info = result.server_info.or_else(|| {
            result
                .meta
                .as_ref()
                .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
                .cloned()
        });
        self.set_server_info(info);
        self.after_handshake(result.capabilities.as_ref());
    }

    /// No answer to the probe in time: a legacy server that ignores unknown
    /// requests, or a 2026-07-28 server still starting; `initialize` follows. The
    /// probe stays in flight: a slow 2026-07-28 server may answer it after all
    /// (see [`Client::on_late_discover`]), and may then refuse `initialize` on
    /// that connection, so a refused `initialize` probes once more.
    pub(super) fn expire_probe(&mut self, now_ms: u64) {
        if self.phase == Phase::Discovering && self.deadlines.probe.is_some_and(|d| d <= now_ms) {
            self.deadlines.probe = None;
            for pending in self.slots.pending.values_mut() {
                if matches!(pending, Pending::Discover { .. }) {
                    *pending = Pending::LateDiscover;
                }
            }
            self.initialize(true);
        }
    }

    /// The answer to a probe that had timed out. The session stays in the era it
    /// went on in, but an answer that offers 2026-07-28 means the server was slow
    /// to start, not legacy: remembering it as legacy would skip the probe on
    /// every later connection, and the server would never be spoken to in its
    /// own era again.
    pub(super) fn on_late_discover(&mut self, outcome: Result<Box<RawValue>, Failure>) {
        self.stateless_later |= outcome.ok().is_some_and(|raw| {
            serde_json::from_str::<DiscoverResult>(raw.get()).is_ok_and(|r| speaks_stateless(&r))
        });
    }

    /// The era the next connection to this server should start from: the
    /// session's, unless a late answer to its probe showed the server speaks
    /// 2026-07-28 (then the next connection probes again).
    pub fn era_to_remember(&self) -> Era {
        if self.stateless_later {
            Era::Stateless
        } else {
            self.era
        }
    }
}

/// Whether a `server/discover` result lists the version mcpbox speaks.
fn speaks_stateless(result: &DiscoverResult) -> bool {
    result
        .supported_versions
        .iter()
        .flatten()
        .any(|v| v.as_str() == Some(STATELESS_VERSION))
}

/// Whether an `UnsupportedProtocolVersion` error lists the stateless version.
pub(super) fn offers_stateless(error: &RpcError) -> bool {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions
                .iter()
                .any(|v| v.as_str() == Some(STATELESS_VERSION))
        })
}
