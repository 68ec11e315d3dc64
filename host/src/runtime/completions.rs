//! Completions through [`Runtime`]: `completion/complete`, the values a server
//! suggests for a prompt argument or a resource template variable. How a
//! request travels is [`super::request`]'s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Runtime;
use super::request::unexpected;
use crate::bindings::registry;
use crate::types::CallError;

/// A `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompletionValues {
    /// The values, best first (at most 100).
    pub values: Vec<String>,
    /// How many there are in all, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Runtime {
    /// Asks `server` to complete an argument (`completion/complete`): `params`
    /// is the request's params (`ref`, `argument`, maybe `context`).
    pub async fn complete(
        &self,
        server: &str,
        params: &Value,
    ) -> Result<CompletionValues, CallError> {
        let request = registry::ServerRequest::Complete(params.to_string());
        let what = "completion/complete";
        match self.request(Some(server), request, None, what).await? {
            (registry::RequestAnswer::Completion(c), _) => Ok(CompletionValues {
                values: c.values,
                total: c.total,
                has_more: c.has_more,
            }),
            _ => Err(unexpected(what)),
        }
    }
}
