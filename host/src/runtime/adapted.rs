//! Tools in a model provider's dialect through [`Runtime`]: provider-ready
//! definitions (`mcp`, `openai`, `openai-strict`, `anthropic`, `gemini`) with what
//! each conversion lost, and calls a model made under them mapped back.
//!
//! The conversion and the mapping are the guest's (`registry.adapted-tools`,
//! `registry.start-adapted-call`); this file carries them.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{CallOptions, Runtime};
use crate::bindings::registry;
use crate::driver::Job;
use crate::types::{CallError, CallResult};

/// The dialects, as every surface names them.
pub const DIALECTS: [&str; 5] = ["mcp", "openai", "openai-strict", "anthropic", "gemini"];

/// Every tool of the registry in one dialect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdaptedTools {
    /// The dialect.
    pub dialect: String,
    /// The tools that could be represented, ordered by registry name.
    pub tools: Vec<AdaptedTool>,
    /// The tools that could not, and why.
    pub refused: Vec<AdapterRefusal>,
}

/// One tool in a provider's dialect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdaptedTool {
    /// The name the provider sees; a call by it maps back
    /// ([`Runtime::call_adapted_tool`]).
    pub name: String,
    /// The registry name (`mcp__{server}__{tool}`).
    pub registry_name: String,
    /// The provider's definition: MCP `Tool`, Chat Completions function tool,
    /// Anthropic tool or Gemini `FunctionDeclaration`, keys in the server's order.
    pub definition: Box<RawValue>,
    /// The OpenAI Responses API's flat function tool (`openai`, `openai-strict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responses_definition: Option<Box<RawValue>>,
    /// What the conversion lost.
    pub adapter_notes: Vec<AdapterNote>,
}

/// One thing a conversion lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AdapterNote {
    /// `dropped`, `widened`, `narrowed`, `recursion-cut`, `size-cut`, `renamed`,
    /// `collision` or `ambiguous`.
    pub kind: String,
    /// Where, as a JSON pointer into the tool's MCP definition.
    pub pointer: String,
    /// What was lost.
    pub lost: String,
}

/// A tool that cannot be represented in the dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AdapterRefusal {
    /// The registry name.
    pub name: String,
    /// Where the obstacle is, as a JSON pointer into the tool's definition.
    pub pointer: String,
    /// Why.
    pub reason: String,
}

/// JSON text the guest made; a guest that sent something else is a bug, kept
/// visible as a JSON string rather than a panic.
fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).unwrap_or_else(|e| {
        serde_json::value::to_raw_value(&format!("not JSON: {e}")).expect("a string serialises")
    })
}

impl AdaptedTools {
    pub(crate) fn new(dialect: String) -> AdaptedTools {
        AdaptedTools {
            dialect,
            tools: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Adds a page read from the guest.
    pub(crate) fn extend(&mut self, page: registry::AdaptedPage) {
        self.tools.extend(page.tools.into_iter().map(|t| {
            AdaptedTool {
                name: t.name,
                registry_name: t.registry_name,
                definition: raw(t.definition),
                responses_definition: t.responses_definition.map(raw),
                adapter_notes: t
                    .notes
                    .into_iter()
                    .map(|n| AdapterNote {
                        kind: n.kind,
                        pointer: n.pointer,
                        lost: n.lost,
                    })
                    .collect(),
            }
        }));
        self.refused
            .extend(page.refused.into_iter().map(|r| AdapterRefusal {
                name: r.name,
                pointer: r.pointer,
                reason: r.reason,
            }));
    }
}

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
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }
}
