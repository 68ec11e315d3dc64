//! One request to a server that is not a tool call, through [`Runtime`]: what
//! the per-concept files ([`super::resources`], [`super::prompts`],
//! [`super::completions`], [`super::logging`]) share.
//!
//! Each method there is one `registry.start-request` that completes like a call
//! (dropping its future cancels it). A resource is named by its server and the
//! server's own URI, a prompt by its server and its own name: lists carry the
//! `server` of every item, and a prompt also its `registry_name`
//! (`mcp__{server}__{prompt}`, made as tool names are). A list with no server
//! asks every connected server that offers it; a read with no server is
//! answered by the first server (in configuration order) that has the URI.
//! Subscriptions ([`Runtime::subscribe_resource`]) report changes as events.

use std::time::Duration;

use tokio::sync::oneshot;

use super::Runtime;
use crate::bindings::registry;
use crate::driver::Job;
use crate::types::{CallError, CallResult};

/// A malformed result: the guest passed on what the server sent, and it does
/// not have the shape MCP gives it.
pub(super) fn malformed(what: &str, e: serde_json::Error) -> CallError {
    CallError::Protocol(format!("{what}: the server sent a malformed result ({e})"))
}

impl Runtime {
    /// Sends `request` to `server` (or, for `None`, as the guest fans it out)
    /// and awaits its result.
    pub(super) async fn request(
        &self,
        server: Option<&str>,
        request: registry::ServerRequest,
        timeout: Option<Duration>,
    ) -> Result<CallResult, CallError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Request {
            server: server.map(String::from),
            request,
            timeout,
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }

    /// A list `request`: its items, read as `T`.
    pub(super) async fn list<T: serde::de::DeserializeOwned>(
        &self,
        server: Option<&str>,
        request: registry::ServerRequest,
        what: &str,
    ) -> Result<Vec<T>, CallError> {
        let result = self.request(server, request, None).await?;
        serde_json::from_str(result.content.get()).map_err(|e| malformed(what, e))
    }
}
