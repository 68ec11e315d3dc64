//! Completions: what a `completion/complete` result holds (`completion.values`,
//! maybe `total` and `hasMore`), for prompt arguments and resource template
//! variables alike.

use crate::prelude::*;

use serde_json::Value;
use serde_json::value::RawValue;

use super::CallResult;

/// A `completion/complete` result: `content` is the `values` list, `text` the
/// values one a line, `structured_content` the `completion` object.
pub(super) fn complete_result(raw: &RawValue) -> Result<CallResult, String> {
    #[derive(serde::Deserialize)]
    struct Complete {
        completion: Option<Value>,
    }
    let result: Complete = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    let completion = result.completion.ok_or("no `completion` object")?;
    let values = completion
        .get("values")
        .and_then(Value::as_array)
        .ok_or("`completion.values` is not a list")?;
    let text = values
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(CallResult {
        is_error: false,
        text,
        content: Value::Array(values.clone()).to_string(),
        structured_content: Some(completion.to_string()),
    })
}
