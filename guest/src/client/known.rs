//! A stateless (2026-07-28) session started from what an earlier one learned:
//! the server's `server/discover` answer and its tool list.
//!
//! A 2026-07-28 server keeps no session, so a client that already knows the
//! server's capabilities and tools may call at once: `server/discover` and
//! `tools/list` would only tell it the same again. The stock component (one
//! short-lived gateway per HTTP request) keeps a [`KnownServer`] per server in
//! its instance and resumes from it ([`Client::resume`]), so a warm call costs
//! the server one request instead of three. Whoever keeps the knowledge decides
//! when it is stale (see `stock::known`); the client only says what it learned
//! ([`Client::known`]). A legacy (2025) session cannot be resumed: its
//! `Mcp-Session-Id` belongs to one `initialize`.

use crate::prelude::*;

use serde_json::Value;

use super::listing::fingerprint;
use super::{Client, ClientEvent, Era, Offers, Phase, STATELESS_VERSION, ServerInfo};
use crate::registry::ToolDef;

/// What a stateless session learned of its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownServer {
    /// What `server/discover` said about the server.
    pub server_info: ServerInfo,
    /// The capabilities `server/discover` answered.
    pub capabilities: Option<Value>,
    /// The tool list, as the last listing left it.
    pub tools: Vec<ToolDef>,
    /// How much longer the list is fresh by the server's `ttlMs` hint, if it
    /// gave one (and no subscription reports changes).
    pub fresh_for_ms: Option<u64>,
}

impl Client {
    /// What this session learned, with `tools` (its current list, which the
    /// manager holds): none unless it is a ready 2026-07-28 session.
    pub fn known(&self, tools: Vec<ToolDef>) -> Option<KnownServer> {
        (self.era == Era::Stateless && self.phase == Phase::Ready).then(|| KnownServer {
            server_info: self.server_info.clone(),
            capabilities: self.capabilities_seen.clone(),
            tools,
            fresh_for_ms: self.tools.relist_at.map(|t| t.saturating_sub(self.now_ms)),
        })
    }

    /// Starts a 2026-07-28 session ready with what an earlier one learned: no
    /// `server/discover`, no `tools/list`. Subscriptions and `ttlMs` work as
    /// after a listing of its own.
    pub fn resume(&mut self, known: KnownServer, now_ms: u64) {
        self.now_ms = now_ms;
        self.era = Era::Stateless;
        self.protocol_version = Some(STATELESS_VERSION.to_string());
        self.server_info = known.server_info;
        self.offers = Offers::read(known.capabilities.as_ref());
        self.tools.list_changed = known
            .capabilities
            .as_ref()
            .and_then(|c| c.get("tools"))
            .and_then(|t| t.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.capabilities_seen = known.capabilities;
        self.tools.param_headers = known
            .tools
            .iter()
            .filter(|t| !t.param_headers.is_empty())
            .map(|t| (t.name.clone(), t.param_headers.clone()))
            .collect();
        self.tasks.learn(&known.tools);
        self.tools.fingerprint = Some(fingerprint(&known.tools));
        self.tools.relist_at = known.fresh_for_ms.map(|f| now_ms.saturating_add(f));
        self.phase = Phase::Ready;
        self.resumed = true;
        self.events.push(ClientEvent::Ready(known.tools));
        self.on_ready();
    }

    /// Whether the session was started by [`Client::resume`].
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Opens no `subscriptions/listen` stream: for a client that lives for one
    /// exchange (the stock component's), where nobody would read it.
    pub fn forgo_subscriptions(&mut self) {
        self.subscriptions.may_listen = false;
    }
}
