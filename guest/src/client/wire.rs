//! The serde shapes of what the client sends and reads: request params, results,
//! `_meta`. Kept together so the wire format is one file to read; the logic that
//! fills and reads them lives in the module of its protocol concept.

use crate::prelude::*;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::jsonrpc::Id;

#[derive(Serialize)]
pub(super) struct ClientInfo {
    pub(super) name: &'static str,
    pub(super) version: &'static str,
}

/// `_meta` of a request: a progress token, and in the stateless era the protocol
/// version, the client's capabilities and its name.
#[derive(Serialize, Default)]
pub(super) struct RequestMeta<'a> {
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub(super) progress_token: Option<&'a Id>,
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) protocol_version: Option<&'static str>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) client_capabilities: Option<serde_json::Map<String, Value>>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) client_info: Option<ClientInfo>,
    /// The lowest level of `notifications/message` wanted for the request
    /// (2026-07-28: absent, the server sends none).
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) log_level: Option<String>,
}

impl RequestMeta<'_> {
    pub(super) fn is_empty(&self) -> bool {
        self.progress_token.is_none() && self.protocol_version.is_none()
    }
}

/// Params of a request that has none of its own but `_meta`.
#[derive(Serialize)]
pub(super) struct MetaOnly<'a> {
    #[serde(rename = "_meta")]
    pub(super) meta: RequestMeta<'a>,
}

#[derive(Serialize)]
pub(super) struct ListParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cursor: Option<&'a str>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(super) meta: RequestMeta<'a>,
}

/// The `notifications` filter of `subscriptions/listen`: only what is asked
/// for is written (the spec has every field opt-in).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListenFilter {
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub(super) tools_list_changed: bool,
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub(super) prompts_list_changed: bool,
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub(super) resources_list_changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) resource_subscriptions: Option<Vec<String>>,
}

impl ListenFilter {
    pub(super) fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_none()
    }
}

#[derive(Serialize)]
pub(super) struct ListenParams<'a> {
    pub(super) notifications: ListenFilter,
    #[serde(rename = "_meta")]
    pub(super) meta: RequestMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DiscoverResult {
    #[serde(default)]
    pub(super) supported_versions: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) capabilities: Option<Value>,
    #[serde(default)]
    pub(super) server_info: Option<Value>,
    #[serde(default, rename = "_meta")]
    pub(super) meta: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeParams {
    pub(super) protocol_version: &'static str,
    pub(super) capabilities: serde_json::Map<String, Value>,
    pub(super) client_info: ClientInfo,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeResult {
    pub(super) protocol_version: Option<Value>,
    #[serde(default)]
    pub(super) capabilities: Option<Value>,
    #[serde(default)]
    pub(super) server_info: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListToolsResult<'a> {
    /// Borrowed from the result text: each tool is read straight into a `ToolDef`.
    #[serde(borrow)]
    pub(super) tools: Vec<&'a RawValue>,
    #[serde(default)]
    pub(super) next_cursor: Option<Value>,
    #[serde(default)]
    pub(super) result_type: Option<Value>,
    #[serde(default)]
    pub(super) ttl_ms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawTool<'a> {
    pub(super) name: Value,
    #[serde(default)]
    pub(super) title: Option<Value>,
    #[serde(default)]
    pub(super) description: Option<Value>,
    #[serde(default, borrow)]
    pub(super) input_schema: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) output_schema: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) annotations: Option<&'a RawValue>,
    /// `execution` (2025-11-25): `taskSupport`.
    #[serde(default)]
    pub(super) execution: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InputRequired {
    #[serde(default)]
    pub(super) input_requests: Option<Value>,
    #[serde(default)]
    pub(super) request_state: Option<Value>,
}

/// A `tools/call` result, its parts borrowed from the result's text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawCallResult<'a> {
    #[serde(default)]
    pub(super) result_type: Option<Value>,
    #[serde(default, borrow)]
    pub(super) content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) structured_content: Option<&'a RawValue>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
}

#[derive(Serialize)]
pub(super) struct CallParams<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: &'a RawValue,
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    pub(super) input_responses: Option<&'a serde_json::Map<String, Value>>,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    pub(super) request_state: Option<&'a Value>,
    /// Asks for the call to run as a task (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) task: Option<TaskParams>,
    #[serde(rename = "_meta")]
    pub(super) meta: RequestMeta<'a>,
}

/// `task` in a task-augmented request (2025-11-25): how long the server keeps
/// the task and its result.
#[derive(Serialize)]
pub(super) struct TaskParams {
    pub(super) ttl: u64,
}

/// Params of `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskIdParams<'a> {
    pub(super) task_id: &'a str,
    /// `tasks/update`'s answers, keyed as the task's `inputRequests` were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) input_responses: Option<&'a serde_json::Map<String, Value>>,
    /// A 2026-07-28 request's `_meta` (the tasks extension); none in 2025-11-25.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<RequestMeta<'a>>,
}

/// A task of the 2026-07-28 tasks extension, as a `CreateTaskResult` (the
/// handle a `tools/call` may answer with) and a `tasks/get` answer carry it:
/// flat, with what it ended with, or what it waits for, inlined.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ExtensionTask {
    /// A string; read as any value so that a wrong type is named in the error.
    #[serde(default)]
    pub(super) task_id: Option<Value>,
    /// A string; likewise.
    #[serde(default)]
    pub(super) status: Option<Value>,
    #[serde(default)]
    pub(super) status_message: Option<Value>,
    #[serde(default)]
    pub(super) poll_interval_ms: Option<Value>,
    /// The tool's result, when `completed`.
    #[serde(default)]
    pub(super) result: Option<Box<RawValue>>,
    /// A JSON-RPC error, when `failed`.
    #[serde(default)]
    pub(super) error: Option<Value>,
    /// What the task waits for, when `input_required`.
    #[serde(default)]
    pub(super) input_requests: Option<Value>,
}

/// A task as `CreateTaskResult.task` and `tasks/get` carry it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskState {
    pub(super) task_id: String,
    pub(super) status: String,
    #[serde(default)]
    pub(super) status_message: Option<String>,
    #[serde(default)]
    pub(super) poll_interval: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CancelledParams<'a> {
    pub(super) request_id: &'a Id,
    pub(super) reason: &'a str,
}

pub(super) fn text_of(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}
