//! The legacy handshake (`initialize`, 2024-11-05 … 2025-11-25): the version
//! offered and accepted, the client's capabilities and info, and what the server
//! said about itself. `notifications/initialized` ends it; then the tools are listed.

use crate::prelude::*;

use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{ClientInfo, InitializeParams, InitializeResult, text_of};
use super::{Caller, Client, ClientEvent, Era, Pending, Phase, ServerInfo};
use crate::methods;
use crate::transport::Failure;

/// The protocol version the guest offers in `initialize`.
pub const OFFERED_VERSION: &str = "2025-11-25";

/// Every protocol version the guest accepts back.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

impl Client {
    /// The client capabilities declared to the server.
    pub(super) fn capabilities(&self) -> serde_json::Map<String, Value> {
        self.capabilities_for(None)
    }

    /// The client capabilities declared for a request made for `caller`: what
    /// the embedder enabled, narrowed to what the caller declared (URL mode is
    /// not passed on to a caller: only form questions are put to one).
    pub(super) fn capabilities_for(
        &self,
        caller: Option<Caller>,
    ) -> serde_json::Map<String, Value> {
        let mut capabilities = serde_json::Map::new();
        let mut modes = serde_json::Map::new();
        if self.input.form && caller.is_none_or(|c| c.elicitation) {
            modes.insert("form".into(), serde_json::json!({}));
        }
        if self.input.url && caller.is_none() {
            modes.insert("url".into(), serde_json::json!({}));
        }
        if !modes.is_empty() {
            capabilities.insert("elicitation".into(), Value::Object(modes));
        }
        match caller {
            // Tool use in sampling (2025-11-25, 2026-07-28): the embedder gets the
            // `tools` and `toolChoice` the server sends and answers as it can.
            None if self.input.sampling => {
                capabilities.insert("sampling".into(), serde_json::json!({"tools": {}}));
            }
            Some(c) if self.input.sampling && c.sampling => {
                let sampling = if c.sampling_tools {
                    serde_json::json!({"tools": {}})
                } else {
                    serde_json::json!({})
                };
                capabilities.insert("sampling".into(), sampling);
            }
            _ => {}
        }
        if let Some(roots) = self.roots_capability() {
            capabilities.insert("roots".into(), roots);
        }
        // The extensions this client speaks: skills (it lists, loads and verifies
        // them whenever a server offers them, with nothing asked of the embedder),
        // and a 2026-07-28 server's tasks when it offers them (the client polls a
        // task handle to its result: see `tasks`).
        let mut extensions = serde_json::json!({ super::skills::EXTENSION: {} });
        if self.era == Era::Stateless && self.offers.tasks_extension {
            extensions[super::tasks::EXTENSION] = serde_json::json!({});
        }
        capabilities.insert("extensions".into(), extensions);
        capabilities
    }

    /// Starts the legacy handshake (`initialize`) without probing the era.
    pub fn begin(&mut self) {
        self.initialize(false);
    }

    pub(super) fn initialize(&mut self, or_discover: bool) {
        self.era = Era::Legacy;
        self.phase = Phase::Initializing;
        self.protocol_version = None;
        // Capabilities are fixed for the session from here: see `roots`.
        self.roots.offered = !self.roots.list.is_empty();
        let params = InitializeParams {
            protocol_version: OFFERED_VERSION,
            capabilities: self.capabilities(),
            client_info: client_info(),
        };
        let pending = Pending::Initialize { or_discover };
        self.request(methods::INITIALIZE, None, Some(&params), pending);
    }

    pub(super) fn on_initialized(
        &mut self,
        outcome: Result<Box<RawValue>, Failure>,
        or_discover: bool,
    ) {
        let raw = match outcome {
            Ok(raw) => raw,
            // The host's word on why: no other era would be let in either.
            Err(e @ Failure::NeedsAuthorization { .. }) => return self.fail(e.to_string()),
            Err(_) if or_discover => return self.discover(false),
            Err(e) => {
                return self.fail(format!("server `{}` rejected initialize: {e}", self.server));
            }
        };
        let result: InitializeResult = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(e) => {
                return self.fail(format!(
                    "server `{}` answered initialize with a malformed result ({e})",
                    self.server
                ));
            }
        };
        let version = match result.protocol_version {
            Some(Value::String(v)) => v,
            other => {
                return self.fail(format!(
                    "server `{}` answered initialize without a protocolVersion (got {})",
                    self.server,
                    other.map_or("nothing".into(), |v| v.to_string())
                ));
            }
        };
        if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
            return self.fail(format!(
                "server `{}` answered protocolVersion {:?}, which mcpbox does not support (supported: {})",
                self.server,
                version,
                SUPPORTED_VERSIONS.join(", ")
            ));
        }
        self.protocol_version = Some(version);
        self.set_server_info(result.server_info);
        self.notify::<()>(methods::INITIALIZED, None);
        self.after_handshake(result.capabilities.as_ref());
    }

    pub(super) fn set_server_info(&mut self, info: Option<Value>) {
        if let Some(Value::Object(info)) = info {
            self.server_info = ServerInfo {
                name: text_of(info.get("name").cloned()),
                version: text_of(info.get("version").cloned()),
            };
        }
    }

    /// Lists tools when the server has them; ready with none otherwise.
    pub(super) fn after_handshake(&mut self, capabilities: Option<&Value>) {
        self.offers = super::Offers::read(capabilities);
        self.capabilities_seen = capabilities.cloned();
        let tools = capabilities
            .and_then(|c| c.get("tools"))
            .filter(|t| !t.is_null());
        self.tools.list_changed = tools
            .and_then(|t| t.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if tools.is_some() {
            self.phase = Phase::Listing;
            self.start_listing(true);
        } else {
            // The server offers no tools; asking would only earn a -32601.
            self.phase = Phase::Ready;
            self.events.push(ClientEvent::Ready(Vec::new()));
            self.on_ready();
        }
    }
}

pub(super) fn client_info() -> ClientInfo {
    ClientInfo {
        name: "mcpbox",
        version: env!("CARGO_PKG_VERSION"),
    }
}
