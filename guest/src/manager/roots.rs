//! Roots across servers: the configuration's top-level `roots` and the
//! embedder's ([`Manager::set_roots`]), and which a server gets (see
//! [`crate::roots`]).

use super::*;

/// The roots the manager hands its servers, besides each entry's own.
#[derive(Debug, Default)]
pub(super) struct Roots {
    /// The configuration's top-level `roots`.
    pub(super) configured: Option<Vec<Root>>,
    /// The embedder's roots ([`Manager::set_roots`]), kept across loads.
    pub(super) embedder: Option<Vec<Root>>,
}

impl Roots {
    /// The roots of the server `config` configures.
    pub(super) fn of(&self, config: &ServerConfig) -> Vec<Root> {
        roots_of(config, self.embedder.as_deref(), self.configured.as_deref())
    }
}

impl<P: Platform> Manager<P> {
    /// Sets the embedder's roots (`None`: back to the configuration's) and tells
    /// every running server whose roots change (see [`crate::roots`]).
    pub fn set_roots(&mut self, roots: Option<Vec<Root>>) {
        self.roots.embedder = roots;
        self.apply_roots();
    }

    /// The roots server `server` gets now, as [`crate::roots`] chooses them.
    pub fn roots_of(&self, server: &str) -> Option<Vec<Root>> {
        let slot = self.slots.iter().find(|s| s.config.name == server)?;
        Some(self.roots.of(&slot.config))
    }

    /// Hands every live client its roots as they are now: a 2025 server is sent
    /// `notifications/roots/list_changed`, and one that was initialized without
    /// the `roots` capability and now has roots is reconnected to be offered it.
    pub(super) fn apply_roots(&mut self) {
        let mut reconnect = Vec::new();
        for i in 0..self.slots.len() {
            let roots = self.roots.of(&self.slots[i].config);
            let slot = &mut self.slots[i];
            let (Some(client), Some(_)) = (slot.client.as_mut(), slot.conn.as_ref()) else {
                continue;
            };
            if client.set_roots(roots) {
                reconnect.push(self.slots[i].config.name.clone());
            }
            self.flush(i);
        }
        for name in reconnect {
            let _ = self.reconnect(&name);
        }
        self.sync_statuses();
    }
}

/// A server's roots: its entry's own, else the embedder's, else the
/// configuration's, clipped to its sandbox's grants.
fn roots_of(
    config: &ServerConfig,
    embedder: Option<&[Root]>,
    configured: Option<&[Root]>,
) -> Vec<Root> {
    let roots = config
        .roots
        .as_deref()
        .or(embedder)
        .or(configured)
        .unwrap_or_default();
    let sandbox = match &config.endpoint {
        Endpoint::Stdio { sandbox, .. } => sandbox.as_ref(),
        _ => None,
    };
    crate::roots::clip(roots, sandbox)
}
