//! What the stock component's exchanges learned of their servers, kept in the
//! instance for the exchanges after them: each 2026-07-28 server's capabilities
//! and tool list ([`KnownServer`]), and each server's era.
//!
//! Every HTTP request gets a fresh gateway, which would otherwise send each
//! 2026-07-28 server `server/discover` and `tools/list` before the call it was
//! asked for: three upstream requests per call where `mcpbox serve` sends one.
//! A runtime that hands an instance more than one request (`jco serve`, wash's
//! instance pool, `wasmtime serve --max-instance-reuse-count N`) keeps its memory
//! between them, and so keeps this; a runtime that instantiates per request
//! (`wasmtime serve` by default) starts every request with it empty, and the
//! request pays the full cost, as before.
//!
//! # When it is stale
//!
//! - after `max_age_ms` (`MCPBOX_TOOLS_MAX_AGE`, 60 s by default; 0 keeps
//!   nothing), or sooner when the server's `ttlMs` hint says so: an instance
//!   sees no `notifications/tools/list_changed` of its own between requests, so
//!   age bounds how long a change goes unseen;
//! - at once when the server fails (unreachable, an HTTP error, a malformed
//!   answer) or answers a call with a JSON-RPC error: the manager forgets it
//!   (`Manager::short_lived`), and the next request learns it again;
//! - a re-list during a request (a `list_changed` in a call's stream) replaces
//!   it with the new list.
//!
//! A legacy (2025) server's session cannot be reused by another request, so it
//! is only its era that is kept: it gets `initialize` without the probe.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use crate::client::KnownServer;

/// The default of `MCPBOX_TOOLS_MAX_AGE`, in milliseconds.
pub const DEFAULT_MAX_AGE_MS: u64 = 60_000;

/// The servers known in this instance, by the manager's key (name and endpoint).
#[derive(Debug, Default)]
pub struct KnownServers {
    servers: BTreeMap<String, (u64, KnownServer)>,
    eras: BTreeMap<String, String>,
}

impl KnownServers {
    /// Knows nothing.
    pub const fn new() -> KnownServers {
        KnownServers {
            servers: BTreeMap::new(),
            eras: BTreeMap::new(),
        }
    }

    /// The server under `key` as learned at most `max_age_ms` ago (and within
    /// its `ttlMs`), at `now_ms`; none otherwise (and a stale entry is dropped).
    pub fn get(&mut self, key: &str, now_ms: u64, max_age_ms: u64) -> Option<KnownServer> {
        let (learned, known) = self.servers.get(key)?;
        let age = now_ms.saturating_sub(*learned);
        let fresh_for = known
            .fresh_for_ms
            .map_or(max_age_ms, |ttl| ttl.min(max_age_ms));
        if age >= fresh_for {
            self.servers.remove(key);
            return None;
        }
        let mut known = known.clone();
        known.fresh_for_ms = known.fresh_for_ms.map(|ttl| ttl.saturating_sub(age));
        Some(known)
    }

    /// Keeps (or, with `None`, forgets) the server under `key`, learned at `now_ms`.
    pub fn keep(&mut self, key: &str, known: Option<KnownServer>, now_ms: u64) {
        match known {
            Some(known) => {
                self.servers.insert(key.to_string(), (now_ms, known));
            }
            None => {
                self.servers.remove(key);
            }
        }
    }

    /// The era kept for the server under `key`.
    pub fn era(&self, key: &str) -> Option<String> {
        self.eras.get(key).cloned()
    }

    /// Keeps the era of the server under `key`.
    pub fn set_era(&mut self, key: &str, era: &str) {
        self.eras.insert(key.to_string(), era.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ServerInfo;

    fn known(fresh_for_ms: Option<u64>) -> KnownServer {
        KnownServer {
            server_info: ServerInfo::default(),
            capabilities: Some(serde_json::json!({"tools": {}})),
            tools: Vec::new(),
            fresh_for_ms,
        }
    }

    #[test]
    fn a_server_is_known_until_the_max_age() {
        let mut k = KnownServers::new();
        k.keep("a", Some(known(None)), 1_000);
        assert!(k.get("a", 1_000, 60_000).is_some());
        assert!(k.get("a", 60_999, 60_000).is_some());
        assert!(k.get("a", 61_000, 60_000).is_none());
        // Dropped once stale, even for a longer max age.
        assert!(k.get("a", 1_000, 120_000).is_none());
        // 0 keeps nothing.
        k.keep("b", Some(known(None)), 1_000);
        assert!(k.get("b", 1_000, 0).is_none());
    }

    #[test]
    fn a_ttl_hint_shortens_it_and_counts_down() {
        let mut k = KnownServers::new();
        k.keep("a", Some(known(Some(5_000))), 0);
        assert_eq!(k.get("a", 2_000, 60_000).unwrap().fresh_for_ms, Some(3_000));
        assert!(k.get("a", 5_000, 60_000).is_none());
    }

    #[test]
    fn forgetting_a_server_keeps_its_era() {
        let mut k = KnownServers::new();
        k.keep("a", Some(known(None)), 0);
        k.set_era("a", "legacy");
        k.keep("a", None, 0);
        assert!(k.get("a", 0, 60_000).is_none());
        assert_eq!(k.era("a").as_deref(), Some("legacy"));
    }
}
