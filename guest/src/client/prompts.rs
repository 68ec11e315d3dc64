//! Prompts: the arguments of a `prompts/get` (strings only), what its result
//! holds (`description`, `messages` each with a `role` and one content block),
//! and the flat text view of it. The request itself, and listing, are
//! [`super::request`]'s.

use crate::prelude::*;

use serde_json::Value;
use serde_json::value::RawValue;

use super::CallResult;
use crate::jsonrpc;

/// Prompt arguments: a JSON object whose values are strings (MCP gives prompt
/// arguments as text only).
pub(super) fn prompt_arguments(prompt: &str, text: &str) -> Result<Value, String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return Err(format!(
            "arguments for prompt `{prompt}` must be a JSON object of strings, not {}",
            jsonrpc::truncate(text, 80)
        ));
    };
    if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!(
            "argument `{key}` of prompt `{prompt}` is {value}; prompt arguments are strings (write \"{key}\": \"…\")"
        ));
    }
    Ok(Value::Object(map))
}

/// A `prompts/get` result: `content` is its `messages` list, `text` the text
/// blocks of the messages joined with "\n", `structured_content` the whole result.
pub(super) fn get_result(raw: &RawValue) -> Result<CallResult, String> {
    #[derive(serde::Deserialize)]
    struct Get<'a> {
        #[serde(borrow)]
        messages: Option<&'a RawValue>,
    }
    let get: Get<'_> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    let messages = get.messages.ok_or("no `messages` list")?;
    let list: Vec<Value> =
        serde_json::from_str(messages.get()).map_err(|_| "`messages` is not a list")?;
    let text = list
        .iter()
        .filter_map(|m| m.get("content"))
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(CallResult {
        is_error: false,
        text,
        content: messages.get().to_string(),
        structured_content: Some(raw.get().to_string()),
    })
}
