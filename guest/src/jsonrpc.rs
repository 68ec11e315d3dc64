//! JSON-RPC 2.0, the framing-free message layer MCP is built on.
//!
//! Incoming text is classified into requests, notifications, responses and
//! invalid messages; outgoing messages are built here so every message the guest
//! sends has the same shape. Ids keep their JSON type: a response answers a request
//! only when its id matches exactly in type and value (`"5"` does not answer `5`),
//! as JSON-RPC requires. Payloads (`params`, `result`) stay raw JSON text so schemas
//! and results pass through byte for byte.

use crate::prelude::*;
use core::fmt;
use core::ops::Range;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The JSON-RPC error code for an unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The JSON-RPC error code for invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The JSON-RPC error code for an internal error; used for error objects we
/// could not read, so the failure still reaches the caller.
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id. JSON-RPC allows strings and numbers; equality is exact.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Id {
    /// An integer id (what the guest itself sends).
    Number(i64),
    /// A string id.
    String(String),
    /// Any other id (`null`, a fraction, a huge number) kept as its JSON text, so
    /// it can be echoed back but never matches an id the guest issued.
    Other(String),
}

impl Id {
    /// Reads an id from its JSON text.
    pub fn from_json(text: &str) -> Id {
        // The usual id, an integer, without building a JSON value: JSON's
        // grammar for one (`-?(0|[1-9][0-9]*)`), as `i64` reads it.
        // (`-0` is left to serde_json, which reads it as a float.)
        let (negative, digits) = match text.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, text),
        };
        let leading = match digits.as_bytes() {
            [b'1'..=b'9', ..] => true,
            [b'0'] => !negative,
            _ => false,
        };
        if leading
            && digits.bytes().all(|b| b.is_ascii_digit())
            && let Ok(n) = text.parse::<i64>()
        {
            return Id::Number(n);
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::String(s)) => Id::String(s),
            Ok(Value::Number(n)) if n.is_i64() => Id::Number(n.as_i64().unwrap_or_default()),
            Ok(v) => Id::Other(v.to_string()),
            Err(_) => Id::Other(text.trim().to_string()),
        }
    }

    /// The id as JSON text.
    pub fn to_json(&self) -> String {
        match self {
            Id::Number(n) => n.to_string(),
            Id::String(s) => Value::String(s.clone()).to_string(),
            Id::Other(raw) => raw.clone(),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
            Id::Other(raw) => match RawValue::from_string(raw.clone()) {
                Ok(raw) => raw.serialize(serializer),
                Err(_) => serializer.serialize_none(),
            },
        }
    }
}

/// The JSON-RPC error object: what a peer answers instead of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32601` for an unknown method, …).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information, as the peer sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(Value::String(data)) = &self.data {
            write!(f, " ({data})")?;
        }
        Ok(())
    }
}

impl core::error::Error for RpcError {}

/// A request from the peer: it expects a response with the same id.
#[derive(Debug)]
pub struct Request {
    /// The id to answer with.
    pub id: Id,
    /// The method.
    pub method: String,
    /// The parameters as raw JSON, if any.
    pub params: Option<Box<RawValue>>,
}

/// A notification from the peer: no response is expected.
#[derive(Debug)]
pub struct Notification {
    /// The method.
    pub method: String,
    /// The parameters as raw JSON, if any.
    pub params: Option<Box<RawValue>>,
}

/// A response to one of our requests.
#[derive(Debug)]
pub struct Response {
    /// The id of the request it answers.
    pub id: Id,
    /// The result as raw JSON, or the peer's error.
    pub outcome: Result<Box<RawValue>, RpcError>,
}

/// One incoming message, classified.
#[derive(Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
    /// Not a JSON-RPC 2.0 message; says why.
    Invalid(String),
}

/// Keeps a field that is present — even as `null` — apart from an absent one
/// (`#[serde(default)]` gives `None` only when the key is missing).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A message's members, borrowed from its text: nothing is copied until the
/// message is classified. (`jsonrpc` and `method` are read as values: a
/// message that nests past serde_json's recursion limit there, as a batch of
/// batches 100,000 deep does, is then refused as not valid JSON.)
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Classifies one message text. A JSON array (a batch, allowed by MCP 2025-03-26)
/// yields one message per element.
pub fn parse(text: &str) -> Vec<Message> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(trimmed) {
            Ok(items) if items.is_empty() => vec![Message::Invalid("empty batch".into())],
            Ok(items) => items
                .iter()
                .map(|item| shape(item.get()).into_message(copied))
                .collect(),
            Err(e) => vec![Message::Invalid(format!("not valid JSON: {e}"))],
        };
    }
    vec![shape(text).into_message(copied)]
}

/// A payload as an owned raw value: a copy of the text the parser has read and
/// checked already, so it is not read again.
fn copied(raw: &RawValue) -> Result<Box<RawValue>, String> {
    Ok(raw.to_owned())
}

/// What [`parse_owned`] made of a text.
#[derive(Debug)]
pub struct Parsed {
    /// The messages.
    pub messages: Vec<Message>,
    /// The text, unless it became a message's payload.
    pub text: Option<String>,
}

/// Up to this size a message's payload is copied out of its text (see
/// [`parse_owned`]); copying is cheaper than reading the payload again, and
/// holding it twice costs at most this much.
const COPY_AT_MOST: usize = 1024 * 1024;

/// [`parse`], taking the text. The `params` or `result` of a single message
/// larger than [`COPY_AT_MOST`] is made of the text's own buffer rather than a
/// copy: a tool list near the 64 MiB message cap is then held once, not twice,
/// while it is read, at the price of reading the payload a second time (serde
/// has no way to trust text it did not just read). What the guest needs at most
/// for one message is then about its size, not double.
pub fn parse_owned(text: String) -> Parsed {
    if text.len() <= COPY_AT_MOST || text.trim_start().starts_with('[') {
        return Parsed {
            messages: parse(&text),
            text: Some(text),
        };
    }
    // Where the payload lies, so that the borrow of `text` ends here.
    let shape = shape(&text).map(|raw| place(&text, raw));
    if let Shape::Invalid(why) = shape {
        return Parsed {
            messages: vec![Message::Invalid(why)],
            text: Some(text),
        };
    }
    let message = shape.into_message(|range| {
        let mut buffer = text;
        buffer.truncate(range.end);
        buffer.drain(..range.start);
        owned(buffer)
    });
    Parsed {
        messages: vec![message],
        text: None,
    }
}

/// A payload's text as an owned raw value. It was read as one already, so this
/// only fails for a bug, reported as an invalid message rather than a panic.
fn owned(text: String) -> Result<Box<RawValue>, String> {
    RawValue::from_string(text).map_err(|e| format!("not valid JSON: {e}"))
}

/// A message classified, its payload (`params` or `result`) still `P`: borrowed
/// from the text it came from, or its place in that text.
enum Shape<P> {
    Request {
        id: Id,
        method: String,
        params: Option<P>,
    },
    Notification {
        method: String,
        params: Option<P>,
    },
    Response {
        id: Id,
        outcome: Result<P, RpcError>,
    },
    Invalid(String),
}

impl<P> Shape<P> {
    /// The same message with its payload made into `Q` by `f`.
    fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Shape<Q> {
        match self {
            Shape::Request { id, method, params } => Shape::Request {
                id,
                method,
                params: params.map(f),
            },
            Shape::Notification { method, params } => Shape::Notification {
                method,
                params: params.map(f),
            },
            Shape::Response { id, outcome } => Shape::Response {
                id,
                outcome: outcome.map(f),
            },
            Shape::Invalid(why) => Shape::Invalid(why),
        }
    }

    /// The message, its payload made by `payload`.
    fn into_message(self, payload: impl FnOnce(P) -> Result<Box<RawValue>, String>) -> Message {
        match self.map(payload) {
            Shape::Request { id, method, params } => match params.transpose() {
                Ok(params) => Message::Request(Request { id, method, params }),
                Err(e) => Message::Invalid(e),
            },
            Shape::Notification { method, params } => match params.transpose() {
                Ok(params) => Message::Notification(Notification { method, params }),
                Err(e) => Message::Invalid(e),
            },
            Shape::Response { id, outcome } => match outcome {
                Ok(Ok(result)) => Message::Response(Response {
                    id,
                    outcome: Ok(result),
                }),
                Ok(Err(e)) => Message::Invalid(e),
                Err(error) => Message::Response(Response {
                    id,
                    outcome: Err(error),
                }),
            },
            Shape::Invalid(why) => Message::Invalid(why),
        }
    }
}

/// Where `part` (borrowed from `text`) lies in `text`.
fn place(text: &str, part: &RawValue) -> Range<usize> {
    let start = (part.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    start..start + part.get().len()
}

fn shape(text: &str) -> Shape<&RawValue> {
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) if e.is_data() => return Shape::Invalid(format!("not a JSON-RPC object: {e}")),
        Err(e) => return Shape::Invalid(format!("not valid JSON: {e}")),
    };
    if env.jsonrpc != Some(Value::String("2.0".into())) {
        return Shape::Invalid("missing \"jsonrpc\": \"2.0\"".into());
    }
    if let Some(params) = env.params
        && !matches!(
            params.get().trim_start().as_bytes().first(),
            Some(b'{' | b'[')
        )
    {
        return Shape::Invalid("params must be an object or an array".into());
    }
    match env.method {
        Some(Value::String(method)) => match env.id {
            None => Shape::Notification {
                method,
                params: env.params,
            },
            Some(raw) => match Id::from_json(raw.get()) {
                Id::Other(other) => {
                    Shape::Invalid(format!("request id {other} is not a string or an integer"))
                }
                id => Shape::Request {
                    id,
                    method,
                    params: env.params,
                },
            },
        },
        Some(_) => Shape::Invalid("method must be a string".into()),
        None => {
            let Some(raw_id) = env.id else {
                return Shape::Invalid("neither a method nor an id".into());
            };
            let id = Id::from_json(raw_id.get());
            let outcome = match (env.result, env.error) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(read_error(error)),
                (Some(_), Some(_)) => Err(RpcError::new(
                    INTERNAL_ERROR,
                    "malformed response: it has both result and error",
                )),
                (None, None) => Err(RpcError::new(
                    INTERNAL_ERROR,
                    "malformed response: it has neither result nor error",
                )),
            };
            Shape::Response { id, outcome }
        }
    }
}

/// A response whose id is fine but whose error object is not still answers the
/// request: turning it into a synthetic error fails the call at once instead of
/// letting it run into its timeout.
fn read_error(raw: &RawValue) -> RpcError {
    serde_json::from_str::<RpcError>(raw.get()).unwrap_or_else(|e| {
        RpcError::new(
            INTERNAL_ERROR,
            format!("malformed error object {}: {e}", truncate(raw.get(), 200)),
        )
    })
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[derive(Serialize)]
struct OutRequest<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a Id,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct OutNotification<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct OutResult<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a Id,
    result: &'a R,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    error: &'a RpcError,
}

/// Serialising our own plain structs cannot fail (no maps with non-string keys,
/// no failing `Serialize` impls), so an empty string would only signal a bug.
fn to_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Builds a request.
pub fn request<P: Serialize>(id: &Id, method: &str, params: Option<&P>) -> String {
    to_text(&OutRequest {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// Builds a notification.
pub fn notification<P: Serialize>(method: &str, params: Option<&P>) -> String {
    to_text(&OutNotification {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// Builds a successful response.
pub fn result_response<R: Serialize>(id: &Id, result: &R) -> String {
    to_text(&OutResult {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// Builds an error response.
pub fn error_response(id: &Id, error: &RpcError) -> String {
    to_text(&OutError {
        jsonrpc: "2.0",
        id,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Message {
        let mut all = parse(text);
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn ids_keep_their_type() {
        assert_eq!(Id::from_json("5"), Id::Number(5));
        assert_eq!(Id::from_json("\"5\""), Id::String("5".into()));
        assert_ne!(Id::from_json("5"), Id::from_json("\"5\""));
        assert_eq!(Id::from_json("5.5"), Id::Other("5.5".into()));
        assert_ne!(Id::from_json("5.0"), Id::Number(5));
        assert_eq!(Id::String("a\"b".into()).to_json(), r#""a\"b""#);
        // The integer fast path reads ids as a JSON value would.
        let by_value = |text: &str| match serde_json::from_str::<Value>(text) {
            Ok(Value::String(s)) => Id::String(s),
            Ok(Value::Number(n)) if n.is_i64() => Id::Number(n.as_i64().unwrap_or_default()),
            Ok(v) => Id::Other(v.to_string()),
            Err(_) => Id::Other(text.trim().to_string()),
        };
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "007",
            "-01",
            "+5",
            "1e3",
            "5.0",
            "-",
            "",
            " 5",
            "12a",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "null",
            "\"x\"",
        ] {
            assert_eq!(Id::from_json(text), by_value(text), "{text:?}");
        }
    }

    #[test]
    fn a_batch_nested_past_the_recursion_limit_is_not_valid_json() {
        // What the gateway answers with a parse error (-32700), and the guest's
        // stack survives.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for message in parse(&deep) {
            assert!(
                matches!(&message, Message::Invalid(why) if why.starts_with("not valid JSON")),
                "{message:?}"
            );
        }
    }

    #[test]
    fn escaped_members_read_as_their_strings() {
        match one(r#"{"jsonrpc":"2\u002e0","id":1,"method":"pi\u006eg"}"#) {
            Message::Request(r) => assert_eq!(r.method, "ping"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            one(r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#),
            Message::Invalid(_)
        ));
        // A null method is no method: this is a response (without a result).
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":1,"method":null}"#),
            Message::Response(_)
        ));
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        match one(r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#) {
            Message::Request(r) => {
                assert_eq!(r.id, Id::String("x".into()));
                assert_eq!(r.method, "ping");
                assert!(r.params.is_none());
            }
            other => panic!("{other:?}"),
        }
        match one(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"a":1}}"#) {
            Message::Notification(n) => {
                assert_eq!(n.method, "notifications/message");
                assert_eq!(n.params.unwrap().get(), r#"{"a":1}"#);
            }
            other => panic!("{other:?}"),
        }
        match one(r#"{"jsonrpc":"2.0","id":7,"result":{ "k" : [1, 2] }}"#) {
            Message::Response(r) => {
                assert_eq!(r.id, Id::Number(7));
                // The payload stays byte for byte as sent.
                assert_eq!(r.outcome.unwrap().get(), r#"{ "k" : [1, 2] }"#);
            }
            other => panic!("{other:?}"),
        }
        match one(
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":"why"}}"#,
        ) {
            Message::Response(r) => {
                let e = r.outcome.unwrap_err();
                assert_eq!(e.code, -32602);
                assert_eq!(e.to_string(), "JSON-RPC error -32602: bad (why)");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_null_result_is_still_a_result() {
        match one(r#"{"jsonrpc":"2.0","id":1,"result":null}"#) {
            Message::Response(r) => assert_eq!(r.outcome.unwrap().get(), "null"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_bodies_still_answer_their_request() {
        for text in [
            r#"{"jsonrpc":"2.0","id":3,"error":{"message":"no code"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":3}"#,
        ] {
            match one(text) {
                Message::Response(r) => {
                    assert_eq!(r.id, Id::Number(3));
                    assert_eq!(r.outcome.unwrap_err().code, INTERNAL_ERROR);
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_messages_are_classified_invalid() {
        for text in [
            "not json",
            "42",
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0"}"#,
            "[]",
        ] {
            assert!(
                matches!(one(text), Message::Invalid(_)),
                "{text} should be invalid"
            );
        }
    }

    #[test]
    fn batches_yield_each_message() {
        let all = parse(r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]"#);
        assert!(matches!(all[0], Message::Response(_)));
        assert!(matches!(all[1], Message::Notification(_)));
    }

    #[test]
    fn builds_messages() {
        let req = request(&Id::Number(1), "tools/list", Some(&json!({"cursor": "c"})));
        assert_eq!(
            serde_json::from_str::<Value>(&req).unwrap(),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}})
        );
        let note = notification::<()>("notifications/initialized", None);
        assert_eq!(
            note,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        let ok = result_response(&Id::String("p".into()), &json!({}));
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":"p","result":{}}"#);
        let err = error_response(
            &Id::Other("1.5".into()),
            &RpcError::new(METHOD_NOT_FOUND, "nope"),
        );
        assert_eq!(
            err,
            r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-32601,"message":"nope"}}"#
        );
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("abc", 3), "abc");
    }

    /// Taking the text changes nothing but where the payload's bytes live.
    #[test]
    fn parse_owned_agrees_with_parse() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let texts = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#.to_string(),
            r#"  {"jsonrpc":"2.0","id":"a","result": {"x": 1e999} , "extra": 1}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"deep":{deep}}}}}"#),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#.to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"é":"ü"}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":5,"result":null}"#.to_string(),
            r#"[{"jsonrpc":"2.0","id":6,"result":1},{"jsonrpc":"2.0","method":"m"}]"#.to_string(),
            r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1,"message":"m"}}"#.to_string(),
            "not json".to_string(),
            r#"{"jsonrpc":"1.0","id":1,"result":1}"#.to_string(),
        ];
        // Past `COPY_AT_MOST` the payload is made of the text's own buffer.
        let big = "x".repeat(COPY_AT_MOST);
        let bigs = texts
            .clone()
            .map(|t| t.replacen("\"jsonrpc\"", &format!("\"pad\":\"{big}\",\"jsonrpc\""), 1));
        for text in texts.into_iter().chain(bigs) {
            let parsed = parse_owned(text.clone());
            assert_eq!(
                format!("{:?}", parsed.messages),
                format!("{:?}", parse(&text)),
                "{}",
                &text[..text.len().min(80)]
            );
            let invalid = parsed
                .messages
                .iter()
                .any(|m| matches!(m, Message::Invalid(_)));
            // The text is still there for a preview whenever a message is invalid.
            if invalid {
                assert_eq!(parsed.text.as_deref(), Some(text.as_str()));
            }
        }
        let Message::Response(r) =
            &parse_owned(r#"{"jsonrpc":"2.0","id":1,"result": {"a" : 1e2}}"#.into()).messages[0]
        else {
            panic!()
        };
        assert_eq!(r.outcome.as_ref().unwrap().get(), r#"{"a" : 1e2}"#);
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result": ["{big}"]}}"#);
        let parsed = parse_owned(text);
        assert!(
            parsed.text.is_none(),
            "the big payload took the text's buffer"
        );
        let Message::Response(r) = &parsed.messages[0] else {
            panic!()
        };
        assert_eq!(r.outcome.as_ref().unwrap().get(), format!(r#"["{big}"]"#));
    }
}
