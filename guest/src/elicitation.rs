//! Elicitation: a server asking the user for input while it runs a tool, and the
//! answer that goes back.
//!
//! mcpbox has no user of its own: the embedder (an agent platform) is asked, through
//! an `input-requested` event, and answers with `answer-input`. Only when the
//! embedder opted in does the client declare the `elicitation` capability (form
//! mode); otherwise servers are not asked to send such requests and any that come
//! are refused.
//!
//! URL mode (2025-11-25) asks the user to visit a URL, for what the client must
//! never see (a credential, a payment): declared (`elicitation.url`) only when the
//! embedder opted in to it as well, it reaches the embedder as a
//! `url-elicitation-requested` event with the URL, and its answer carries only
//! the action (`accept`: the user agreed to open it). mcpbox never opens or
//! fetches the URL itself.
//!
//! Both eras carry the same request, `elicitation/create` with a `message` and a
//! flat `requestedSchema`, and the same answer (`action` and, on accept, `content`):
//! the legacy era as a JSON-RPC request from the server during the call, the
//! 2026-07-28 era inside an `input_required` result the client answers by retrying
//! the call with `inputResponses` (see `client`). This module holds what both share:
//! reading the request and making the answer, which fills the requested schema's
//! `default`s for the fields the embedder left out (SEP-1034) and checks the result
//! against that schema, so a wrong answer is refused with the reason instead of
//! reaching the server.

use crate::prelude::*;

use serde_json::{Map, Value, json};

use crate::config::types::kind_of;
use crate::schema::{self, Validator};

/// A server's request for input, as the embedder sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRequest {
    /// The handle `answer-input` takes (the client's own key until the manager
    /// gives it an instance-wide one).
    pub id: u64,
    /// The configured server name.
    pub server: String,
    /// The call it belongs to, when known.
    pub call: Option<u64>,
    /// The registry name of that call's tool, when known.
    pub tool: Option<String>,
    /// What the server asks.
    pub message: String,
    /// The JSON Schema of the object wanted, JSON text.
    pub requested_schema: String,
    /// Set when mcpbox itself asks: an `ask` permission rule wants the call
    /// approved (see `manager::approvals`). None for a server's request.
    pub approval: Option<Approval>,
    /// Set for a server's `sampling/createMessage` (see [`crate::sampling`]):
    /// its params, JSON object text. The answer is then a `CreateMessageResult`.
    pub sampling: Option<String>,
    /// Set for a URL-mode elicitation: the URL for the user to visit. The
    /// answer then carries only its action.
    pub url: Option<UrlElicitation>,
}

/// A URL-mode elicitation's URL and id (2025-11-25).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    /// The URL for the user to open (never opened by mcpbox).
    pub url: String,
    /// The server's `elicitationId`, which its
    /// `notifications/elicitation/complete` names.
    pub elicitation_id: String,
}

/// What an approval request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The rule that asks, as a sentence fragment naming its field and file.
    pub rule: String,
    /// The call's arguments, JSON object text (already checked against the schema).
    pub arguments: String,
}

/// The embedder's answer to an input request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputAnswer {
    /// The user answered with this JSON object (text); omitted fields get the
    /// schema's defaults.
    Accept(String),
    /// The user said no.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
    /// Nobody could be asked (the gateway's client that made the call did not
    /// declare the capability, say): the text says why, for the server. An
    /// elicitation is declined; a sampling request gets an error with the text
    /// instead of "User rejected", since nobody rejected it.
    Unanswerable(String),
}

/// An `elicitation/create` request's parameters, as far as mcpbox uses them.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// `message`.
    pub message: String,
    /// `requestedSchema` (null in URL mode).
    pub schema: Value,
    /// URL mode's URL and id.
    pub url: Option<UrlElicitation>,
}

/// Reads `elicitation/create` parameters: form mode (a `requestedSchema`), or URL
/// mode (a `url` and an `elicitationId`) when `url_mode` (the embedder takes
/// URL elicitations). Anything else is refused with the reason.
pub fn parse_request(params: &Value, url_mode: bool) -> Result<Elicitation, String> {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match params.get("mode").and_then(Value::as_str) {
        None | Some("form") => {}
        Some("url") if url_mode => {
            let field = |name: &str| match params.get(name) {
                Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(other) => Err(format!(
                    "a URL-mode elicitation's {name} must be a non-empty string, but is {}",
                    kind_of(other)
                )),
                None => Err(format!("the URL-mode elicitation has no {name}")),
            };
            let url = field("url")?;
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(format!(
                    "a URL-mode elicitation's url must be an http(s) URL, not {:?}",
                    crate::jsonrpc::truncate(&url, 80)
                ));
            }
            return Ok(Elicitation {
                message,
                schema: Value::Null,
                url: Some(UrlElicitation {
                    url,
                    elicitation_id: field("elicitationId")?,
                }),
            });
        }
        Some("url") => {
            return Err(
                "it asked the user to open a URL (URL-mode elicitation), which the embedder \
                 did not enable (Options::url_elicitation in Rust)"
                    .to_string(),
            );
        }
        Some(mode) => {
            return Err(format!(
                "elicitation mode {mode:?} is not supported (mcpbox offers form and url modes)"
            ));
        }
    }
    let schema = match params.get("requestedSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(other) => {
            return Err(format!(
                "requestedSchema must be a JSON Schema object, but is {}",
                kind_of(other)
            ));
        }
        None => return Err("the request has no requestedSchema".to_string()),
    };
    Ok(Elicitation {
        message,
        schema,
        url: None,
    })
}

/// The error a server answers a request with when the user must first open a
/// URL (`URLElicitationRequiredError`, 2025-11-25): its `data.elicitations`
/// are URL-mode elicitations, to complete before the request is retried.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// What a call answered with [`URL_ELICITATION_REQUIRED`] ends with: the
/// server's message and each URL the user must open (never opened by mcpbox)
/// before calling again.
pub fn url_required(name: &str, e: &crate::jsonrpc::RpcError) -> String {
    let urls: Vec<String> = e
        .data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|el| {
                    let url = el.get("url")?.as_str()?;
                    let message = el.get("message").and_then(Value::as_str).unwrap_or("");
                    Some(format!("{url} ({message})"))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut text = format!(
        "{name}: the server needs the user to open a URL first, then call again: {}",
        e.message
    );
    if urls.is_empty() {
        text.push_str(" (it named no URL)");
    }
    for url in urls {
        text.push_str("\n  ");
        text.push_str(&url);
    }
    text
}

/// The `ElicitResult` for a URL-mode elicitation: its action alone.
pub fn url_result(answer: &InputAnswer) -> Value {
    let action = match answer {
        InputAnswer::Accept(_) => "accept",
        InputAnswer::Decline | InputAnswer::Unanswerable(_) => "decline",
        InputAnswer::Cancel => "cancel",
    };
    json!({ "action": action })
}

/// The `ElicitResult` for `answer`: `{"action": "accept", "content": {…}}` with
/// the schema's defaults filled in, or `{"action": "decline"|"cancel"}`. Err when an
/// accepted answer is not a JSON object or does not satisfy `schema`.
pub fn result(answer: &InputAnswer, schema: &Value) -> Result<Value, String> {
    let text = match answer {
        InputAnswer::Decline | InputAnswer::Unanswerable(_) => {
            return Ok(json!({"action": "decline"}));
        }
        InputAnswer::Cancel => return Ok(json!({"action": "cancel"})),
        InputAnswer::Accept(text) => text,
    };
    let text = if text.trim().is_empty() { "{}" } else { text };
    let mut content = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(content)) => content,
        Ok(other) => {
            return Err(format!(
                "an accepted answer must be a JSON object, but is {}",
                kind_of(&other)
            ));
        }
        Err(e) => return Err(format!("the accepted answer is not valid JSON: {e}")),
    };
    fill_defaults(&mut content, schema);
    let content = Value::Object(content);
    // A schema mcpbox cannot compile is the server's problem: the answer goes as is.
    if let Ok(validator) = Validator::compile(&schema.to_string())
        && let Err(errors) = validator.validate(&content)
    {
        return Err(format!(
            "the answer does not match the requested schema: {}",
            schema::describe(&errors)
        ));
    }
    Ok(json!({"action": "accept", "content": content}))
}

/// Adds each property of `schema` that `content` lacks and that has a `default`
/// (SEP-1034: a client applies defaults for fields the user did not fill).
pub fn fill_defaults(content: &mut Map<String, Value>, schema: &Value) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}},
            "required": ["name"]})
    }

    #[test]
    fn accepted_answers_get_the_defaults_of_omitted_fields() {
        let r = result(&InputAnswer::Accept("{}".into()), &schema()).unwrap();
        assert_eq!(
            r,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30,
                "score": 95.5, "status": "active", "verified": true}})
        );
        // What the user gave wins; fields without a default stay out.
        let r = result(
            &InputAnswer::Accept(r#"{"age": 41, "note": "hi"}"#.into()),
            &schema(),
        )
        .unwrap();
        assert_eq!(r["content"]["age"], 41);
        assert_eq!(r["content"]["note"], "hi");
        assert_eq!(r["content"]["name"], "John Doe");
        // Empty text is an empty object.
        assert!(result(&InputAnswer::Accept(" ".into()), &schema()).is_ok());
    }

    #[test]
    fn wrong_answers_are_refused_with_the_reason() {
        let e = result(&InputAnswer::Accept("[1]".into()), &schema()).unwrap_err();
        assert!(e.contains("must be a JSON object, but is an array"), "{e}");
        let e = result(&InputAnswer::Accept("{".into()), &schema()).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        let e = result(&InputAnswer::Accept(r#"{"age": "old"}"#.into()), &schema()).unwrap_err();
        assert!(e.contains("/age") && e.contains("requested schema"), "{e}");
    }

    #[test]
    fn decline_and_cancel_carry_no_content() {
        assert_eq!(
            result(&InputAnswer::Decline, &schema()).unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            result(&InputAnswer::Cancel, &schema()).unwrap(),
            json!({"action": "cancel"})
        );
    }

    #[test]
    fn only_form_requests_with_a_schema_are_taken() {
        let ok = parse_request(
            &json!({"message": "Sure?", "requestedSchema": {"type": "object"}}),
            false,
        )
        .unwrap();
        assert_eq!(ok.message, "Sure?");
        assert!(
            parse_request(
                &json!({"mode": "url", "url": "https://x", "elicitationId": "e", "message": "m"}),
                false
            )
            .unwrap_err()
            .contains("did not enable")
        );
        assert!(
            parse_request(&json!({"mode": "carrier-pigeon", "message": "m"}), true)
                .unwrap_err()
                .contains("form and url modes")
        );
        assert!(
            parse_request(&json!({"message": "m"}), false)
                .unwrap_err()
                .contains("no requestedSchema")
        );
        assert!(
            parse_request(&json!({"message": "m", "requestedSchema": 5}), false)
                .unwrap_err()
                .contains("a number")
        );
    }

    #[test]
    fn a_url_required_error_names_each_url_to_open() {
        let e = crate::jsonrpc::RpcError {
            code: URL_ELICITATION_REQUIRED,
            message: "This request requires browser-based authorization.".into(),
            data: Some(
                json!({"elicitations": [{"mode": "url", "elicitationId": "e",
                "url": "https://auth.example/start", "message": "Sign in"}]}),
            ),
        };
        assert_eq!(
            url_required("mcp__s__t", &e),
            "mcp__s__t: the server needs the user to open a URL first, then call again: \
             This request requires browser-based authorization.\n  https://auth.example/start (Sign in)"
        );
    }

    #[test]
    fn url_requests_carry_their_url_and_id_and_are_answered_with_an_action_only() {
        let ok = parse_request(
            &json!({"mode": "url", "url": "https://pay.example/x", "elicitationId": "e1",
                "message": "Pay"}),
            true,
        )
        .unwrap();
        assert_eq!(
            ok.url,
            Some(UrlElicitation {
                url: "https://pay.example/x".into(),
                elicitation_id: "e1".into()
            })
        );
        for (bad, why) in [
            (json!({"mode": "url", "elicitationId": "e1"}), "has no url"),
            (
                json!({"mode": "url", "url": "https://x"}),
                "has no elicitationId",
            ),
            (
                json!({"mode": "url", "url": "file:///etc/passwd", "elicitationId": "e"}),
                "http(s) URL",
            ),
            (
                json!({"mode": "url", "url": 5, "elicitationId": "e"}),
                "a number",
            ),
        ] {
            let e = parse_request(&bad, true).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        assert_eq!(
            url_result(&InputAnswer::Accept(r#"{"secret": 1}"#.into())),
            json!({"action": "accept"})
        );
        assert_eq!(
            url_result(&InputAnswer::Decline),
            json!({"action": "decline"})
        );
    }
}
