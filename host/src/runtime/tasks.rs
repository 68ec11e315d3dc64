//! A server's tasks through [`Runtime`] (MCP 2025-11-25 tasks): `tasks/list`.
//!
//! The calls mcpbox runs as tasks are followed by the guest
//! (`guest/src/client/tasks.rs`), their statuses arriving as
//! [`Event::TaskStatus`](crate::Event::TaskStatus); a server's list also holds
//! the tasks other clients of a shared server started, and those it keeps after
//! they ended (for their `ttl`).

use serde::{Deserialize, Serialize};

use super::Runtime;
use super::request::unexpected;
use crate::bindings::registry;
use crate::types::CallError;

/// One task a server lists (`tasks/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The configured server that lists it.
    #[serde(default)]
    pub server: String,
    /// The server's id for it.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// What it is doing, in the server's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When its status last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// How long the server keeps it after its creation, in milliseconds; none
    /// for no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// How often the server suggests polling it, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

impl Runtime {
    /// The tasks of `server`, or of every connected server that declared
    /// `tasks.list` (all pages).
    #[doc(alias = "tasks/list")]
    pub async fn list_tasks(&self, server: Option<&str>) -> Result<Vec<Task>, CallError> {
        let what = "tasks/list";
        match self
            .request(server, registry::ServerRequest::ListTasks, None, what)
            .await?
        {
            (registry::RequestAnswer::Tasks(list), _) => Ok(list
                .into_iter()
                .map(|t| Task {
                    server: t.server,
                    task_id: t.task_id,
                    status: t.status,
                    status_message: t.status_message,
                    created_at: t.created_at,
                    last_updated_at: t.last_updated_at,
                    ttl: t.ttl,
                    poll_interval: t.poll_interval,
                })
                .collect()),
            _ => Err(unexpected(what)),
        }
    }
}
