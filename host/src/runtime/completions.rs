//! Completions through [`Runtime`]: `completion/complete`, the values a server
//! suggests for a prompt argument or a resource template variable. How a
//! request travels is [`super::request`]'s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Runtime;
use super::request::malformed;
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
        let result = self.request(Some(server), request, None).await?;
        let completion = result.structured_content.ok_or_else(|| {
            CallError::Protocol("completion/complete: no completion in the result".into())
        })?;
        serde_json::from_str(completion.get()).map_err(|e| malformed("completion/complete", e))
    }
}
