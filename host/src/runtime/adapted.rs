//! Tools in a model provider's dialect through [`Runtime`]: provider-ready
//! definitions (`mcp`, `openai`, `openai-strict`, `anthropic`, `gemini`) with what
//! each conversion lost, and calls a model made under them mapped back.
//!
//! The conversion and the mapping are the guest's (`registry.adapted-tools`,
//! `registry.start-adapted-call`); this file carries them.

use serde_json::Value;
use tokio::sync::oneshot;

use super::{CallOptions, Runtime};
use crate::driver::Job;
use crate::types::{AdaptedTools, CallError, CallResult};

/// The dialects, as every surface names them.
pub const DIALECTS: [&str; 5] = ["mcp", "openai", "openai-strict", "anthropic", "gemini"];

impl Runtime {
    /// Every tool in the registry in the model provider's `dialect` (one of
    /// [`DIALECTS`]): definitions to hand the provider as they are, what each
    /// conversion lost, and the tools that cannot be represented with why.
    /// `Err` names the dialects when `dialect` is none of them.
    pub async fn adapted_tools(&self, dialect: &str) -> Result<AdaptedTools, String> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::AdaptedTools {
            dialect: dialect.to_owned(),
            reply,
        })?;
        // No answer: the guest trapped while converting (and was replaced), or
        // the runtime stopped.
        answer.await.unwrap_or_else(|_| {
            Err(match self.stopped() {
                Some(reason) => format!(
                    "the tools in {dialect} were not read: the mcpbox runtime stopped: {reason}"
                ),
                None => format!(
                    "the tools in {dialect} were not read: the guest failed while converting                      them and was restarted; try again"
                ),
            })
        })
    }

    /// Calls a tool as a model saw it in `dialect`: `name` is the adapted name
    /// (a registry name also works) and `arguments` were written under the
    /// adapted schema; they are mapped back to what the server's own schema
    /// expects, which then decides whether they are valid, as for any call.
    pub async fn call_adapted_tool(
        &self,
        dialect: &str,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallResult, CallError> {
        let arguments = match arguments {
            Value::Null => String::new(),
            other => other.to_string(),
        };
        self.call_adapted_tool_json(dialect, name, arguments, options)
            .await
    }

    /// Like [`call_adapted_tool`](Runtime::call_adapted_tool), with the
    /// arguments as JSON text.
    pub async fn call_adapted_tool_json(
        &self,
        dialect: &str,
        name: &str,
        arguments: String,
        options: CallOptions,
    ) -> Result<CallResult, CallError> {
        self.check_arguments_size(name, arguments.len())?;
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Call {
            tool: name.to_owned(),
            dialect: Some(dialect.to_owned()),
            arguments,
            timeout: options.timeout,
            task: options.task,
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }
}
