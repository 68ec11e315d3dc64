//! 2025 sessions carried by the client: the stock component's `Mcp-Session-Id`.
//!
//! A 2025 client sends `initialize` once and names the session in every later
//! request, but each of those requests may reach a fresh instance. So the session
//! id is the session itself: `mcpbox1.` and the `initialize` request's
//! `protocolVersion` and `capabilities` as JSON in base64url. An instance that
//! gets a request naming it replays that `initialize` (and
//! `notifications/initialized`) into its own gateway first, which negotiates the
//! same version and capabilities again. The client could forge nothing it could
//! not send in an `initialize` of its own; an id that does not decode is an
//! unknown session (`404`, "initialize again").

use crate::prelude::*;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// The prefix of a session id (and its format's version).
const PREFIX: &str = "mcpbox1.";

/// The longest id accepted: header values are bounded, and so is what a replay costs.
const MAX_ID_LEN: usize = 4096;

/// The session id for the `initialize` parameters `params`.
pub fn id_for(params: &Value) -> String {
    let kept = json!({
        "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(Value::Null),
        "capabilities": params.get("capabilities").cloned().unwrap_or_else(|| json!({})),
    });
    let text = serde_json::to_string(&kept).unwrap_or_default();
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(text))
}

/// The `initialize` request that reopens the session named `id`; none when `id`
/// is not one of ours.
pub fn replay(id: &str) -> Option<String> {
    if id.len() > MAX_ID_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(id.strip_prefix(PREFIX)?).ok()?;
    let params: Value = serde_json::from_slice(&bytes).ok()?;
    let params = params.as_object()?;
    let mut params = params.clone();
    params.insert(
        "clientInfo".into(),
        json!({"name": "mcpbox-stock-session", "version": "1"}),
    );
    let request = json!({
        "jsonrpc": "2.0",
        "id": "mcpbox-session-replay",
        "method": "initialize",
        "params": params,
    });
    serde_json::to_string(&request).ok()
}

/// The parameters of the `initialize` request in `text` (a message or a batch).
pub fn initialize_params(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    let messages = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    messages.into_iter().find_map(|m| {
        (m.get("method").and_then(Value::as_str) == Some("initialize"))
            .then(|| m.get("params").cloned().unwrap_or_else(|| json!({})))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_replays_the_initialize_it_came_from() {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "1"}
        });
        let id = id_for(&params);
        assert!(id.starts_with(PREFIX));
        // Visible ASCII only, as a session id must be.
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        let replayed: Value = serde_json::from_str(&replay(&id).unwrap()).unwrap();
        assert_eq!(replayed["method"], "initialize");
        assert_eq!(replayed["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(replayed["params"]["capabilities"], json!({"roots": {}}));
    }

    #[test]
    fn ids_that_are_not_ours_reopen_nothing() {
        assert_eq!(replay("3f2a-random-session"), None);
        assert_eq!(replay("mcpbox1.!!!"), None);
        assert_eq!(
            replay(&format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode("[1]"))),
            None
        );
        assert_eq!(replay(&"mcpbox1.".repeat(1000)), None);
    }

    #[test]
    fn initialize_is_found_in_a_message_or_a_batch() {
        let one =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}"#;
        assert_eq!(initialize_params(one).unwrap()["protocolVersion"], "x");
        let batch = format!(r#"[{{"jsonrpc":"2.0","method":"ping","id":2}},{one}]"#);
        assert!(initialize_params(&batch).is_some());
        assert!(initialize_params(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
    }
}
