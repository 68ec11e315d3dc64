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
//!
//! The guest reads each result into records (`call-result.answer`: it knows
//! MCP's result shapes, checks every item and names the server and field of
//! one that does not fit); the files here only map those records to the
//! public types.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::Runtime;
use crate::bindings::registry;
use crate::driver::Job;
use crate::types::CallError;

/// The guest answered `what` with records of another request's kind, or none:
/// a guest and host that do not agree on the WIT.
pub(super) fn unexpected(what: &str) -> CallError {
    CallError::Protocol(format!(
        "{what}: the guest's answer is not of this request's kind (a guest built for another version of mcpbox?)"
    ))
}

/// A field that is open JSON in MCP, which the guest hands over as the
/// server's text: its shape is the server's, so it is parsed as any JSON and
/// not read further. Err only for what a [`Value`] cannot hold (deeper than
/// 128 levels, a number beyond `f64`).
pub(super) fn open_json(what: &str, field: &str, text: &str) -> Result<Value, CallError> {
    serde_json::from_str(text).map_err(|e| {
        CallError::Protocol(format!(
            "{what}: the server's `{field}` cannot be held as a JSON value ({e})"
        ))
    })
}

/// [`open_json`] of a field that may be absent.
pub(super) fn open_json_opt(
    what: &str,
    field: &str,
    text: Option<String>,
) -> Result<Option<Value>, CallError> {
    text.map(|t| open_json(what, field, &t)).transpose()
}

impl Runtime {
    /// Sends `request` to `server` (or, for `None`, as the guest fans it out)
    /// and awaits what the guest read of its result (`call-result.answer`) and
    /// the result's flat text.
    pub(super) async fn request(
        &self,
        server: Option<&str>,
        request: registry::ServerRequest,
        timeout: Option<Duration>,
        what: &str,
    ) -> Result<(registry::RequestAnswer, String), CallError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Request {
            server: server.map(String::from),
            request,
            timeout,
            reply,
        })
        .map_err(CallError::Runtime)?;
        let result = match answer.await {
            Ok(outcome) => outcome?,
            Err(_) => return Err(CallError::Runtime(self.stop_reason())),
        };
        let answer = result.answer.ok_or_else(|| unexpected(what))?;
        Ok((answer, result.text))
    }
}
