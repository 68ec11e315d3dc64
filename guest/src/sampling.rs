//! Sampling: a server asking the client's language model for a message while it
//! runs a tool (MCP `sampling/createMessage`), and the answer that goes back.
//!
//! mcpbox has no model of its own: the embedder (an agent platform, which has
//! one) opts in and answers. Only then does the client declare the `sampling`
//! capability (with `tools`, so servers may send tool-enabled requests, which
//! 2025-11-25 and 2026-07-28 have); otherwise servers are not asked to sample and
//! a request that comes anyway is refused with an error naming the opt-in.
//!
//! Requests travel as input requests do (see [`crate::elicitation`]): in 2025
//! sessions a JSON-RPC request from the server, answered with a
//! `CreateMessageResult` or the error a rejection gets (-1, "User rejected
//! sampling request"); in 2026-07-28 an entry of an `input_required` result,
//! answered in the retry's `inputResponses` (a rejection ends the call instead:
//! that revision's server waits for no answer). The embedder sees the request's
//! parameters as the server sent them, `tools` and `toolChoice` included, and
//! answers with the result object (`role`, `content`, `model`, `stopReason`).
//! This module reads requests and checks answers; the state is the client's.

use crate::prelude::*;

use serde_json::{Value, json};

use crate::config::types::kind_of;

/// The error code of a refused sampling request (2025-11-25, "Error Handling").
pub const REJECTED: i64 = -1;

/// How long a sampling request that belongs to no call waits for an answer; a
/// request that belongs to a call waits as long as the call does.
pub const UNATTACHED_TIMEOUT_MS: u64 = 60_000;

/// What the embedder is told to do to opt in, for messages.
pub const HOW_TO_ENABLE: &str = "the embedder enables it: Options::sampling in Rust, \
     `sampling: true` in JavaScript; `mcpbox serve` forwards it to clients that declare sampling";

/// Reads `sampling/createMessage` parameters: an object with a `messages` list
/// and a `maxTokens` number. Err with the reason otherwise.
pub fn parse_request(params: &Value) -> Result<Value, String> {
    let Value::Object(map) = params else {
        return Err(format!(
            "sampling/createMessage params must be an object, but are {}",
            kind_of(params)
        ));
    };
    match map.get("messages") {
        Some(Value::Array(_)) => {}
        Some(other) => {
            return Err(format!(
                "sampling/createMessage `messages` must be a list, but is {}",
                kind_of(other)
            ));
        }
        None => return Err("sampling/createMessage has no `messages`".into()),
    }
    if !map.get("maxTokens").is_some_and(Value::is_number) {
        return Err("sampling/createMessage needs a `maxTokens` number".into());
    }
    Ok(params.clone())
}

/// A line to show the user about the request.
pub fn summary(server: &str, params: &Value) -> String {
    let count = params
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let tools = params
        .get("tools")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let max = params.get("maxTokens").map_or("?".into(), Value::to_string);
    let mut line = format!(
        "server `{server}` asks for a message from the model ({count} message{}, at most {max} tokens",
        if count == 1 { "" } else { "s" }
    );
    if tools > 0 {
        line.push_str(&format!(
            ", {tools} tool{}",
            if tools == 1 { "" } else { "s" }
        ));
    }
    line.push(')');
    line
}

/// The `CreateMessageResult` of an accepted answer (JSON object text): `content`
/// (a content block or a list of them) and `model` (a string) are required;
/// `role` defaults to `assistant`. Err says what is missing.
pub fn result(text: &str) -> Result<Value, String> {
    let mut result = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(result)) => result,
        Ok(other) => {
            return Err(format!(
                "a sampling answer must be a CreateMessageResult object, but is {}",
                kind_of(&other)
            ));
        }
        Err(e) => return Err(format!("the sampling answer is not valid JSON: {e}")),
    };
    match result.get("content") {
        Some(Value::Object(_) | Value::Array(_)) => {}
        Some(other) => {
            return Err(format!(
                "the sampling answer's `content` must be a content block or a list of them, but is {}",
                kind_of(other)
            ));
        }
        None => {
            return Err(
                "the sampling answer has no `content` (like {\"type\": \"text\", \"text\": \"…\"})"
                    .into(),
            );
        }
    }
    if !result.get("model").is_some_and(Value::is_string) {
        return Err(
            "the sampling answer needs `model`, the name of the model that answered".into(),
        );
    }
    result.entry("role").or_insert_with(|| json!("assistant"));
    Ok(Value::Object(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_need_messages_and_max_tokens() {
        let ok = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 100, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]});
        assert_eq!(parse_request(&ok).unwrap(), ok);
        assert_eq!(
            summary("fx", &ok),
            "server `fx` asks for a message from the model (1 message, at most 100 tokens, 1 tool)"
        );
        assert!(parse_request(&json!([])).unwrap_err().contains("an array"));
        assert!(
            parse_request(&json!({"maxTokens": 5}))
                .unwrap_err()
                .contains("no `messages`")
        );
        assert!(
            parse_request(&json!({"messages": []}))
                .unwrap_err()
                .contains("maxTokens")
        );
    }

    #[test]
    fn answers_are_create_message_results() {
        let r = result(r#"{"content": {"type": "text", "text": "4"}, "model": "m"}"#).unwrap();
        assert_eq!(r["role"], "assistant");
        let tool_use = r#"{"role": "assistant", "model": "m", "stopReason": "toolUse",
            "content": [{"type": "tool_use", "id": "c1", "name": "t", "input": {}}]}"#;
        assert_eq!(result(tool_use).unwrap()["stopReason"], "toolUse");
        assert!(result("[]").unwrap_err().contains("an array"));
        assert!(result("{").unwrap_err().contains("not valid JSON"));
        assert!(
            result(r#"{"model": "m"}"#)
                .unwrap_err()
                .contains("no `content`")
        );
        assert!(
            result(r#"{"content": "hi", "model": "m"}"#)
                .unwrap_err()
                .contains("a string")
        );
        assert!(
            result(r#"{"content": {"type": "text", "text": "x"}}"#)
                .unwrap_err()
                .contains("`model`")
        );
    }
}
