//! The rules of the gateway's Streamable HTTP endpoint, kept in the guest: which
//! paths it serves, the bearer token (compared in constant time), the `Origin`
//! (DNS rebinding), which `mcp-*` headers reach the gateway, how the answer's
//! messages are framed as SSE, and what a session's `Mcp-Session-Id` is
//! ([`SessionIds`]).
//!
//! The stock `wasi:http` component ([`crate::stock::exchange`]) serves through
//! these rules. `mcpbox serve --http` (`host/src/gateway/http.rs`) still applies
//! its own copy of them — with random session ids it maps in memory, the
//! `Host` check of a loopback listener and its own wording — until the WIT
//! `gateway` interface takes one HTTP request per guest entry (see
//! `docs/gateway.md`, "One HTTP core").
//!
//! # Sessions behind a trait
//!
//! A 2025 client names its session in every request after `initialize`. Where
//! the session lives is the [`SessionIds`] implementation's choice, as rmcp's
//! `SessionManager` has local and restored sessions: [`CarriedSessions`] (the
//! stock component, whose instances live for one request) gives out ids that
//! *are* the session (`mcpbox1.` and what `initialize` negotiated), which any
//! instance replays.

use crate::prelude::*;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::transport::Pair;

/// The header that names a 2025 session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// An HTTP request as the runtime handed it over, its body read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The MCP headers the gateway checks against the body (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, …): every `mcp-*` header but the session's, which
    /// names the session instead ([`SessionIds`]).
    pub fn mcp_headers(&self) -> Vec<Pair> {
        self.headers
            .iter()
            .filter(|(n, _)| {
                let n = n.to_ascii_lowercase();
                n.starts_with("mcp-") && n != SESSION_HEADER
            })
            .map(|(n, v)| Pair {
                name: n.clone(),
                value: v.clone(),
            })
            .collect()
    }
}

/// What a request's path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /health` (any query): the load balancer's check, no MCP work.
    Health,
    /// `/mcp` (no profile) or `/mcp/NAME`.
    Mcp(Option<String>),
    /// Anything else.
    NotFound,
}

/// Where `method` and `path` (with its query) go.
pub fn route(method: &str, path: &str) -> Route {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if method == "GET" && path == "/health" {
        return Route::Health;
    }
    match path.trim_end_matches('/') {
        "/mcp" => Route::Mcp(None),
        other => match other.strip_prefix("/mcp/") {
            Some(name) if !name.is_empty() && !name.contains('/') => {
                Route::Mcp(Some(name.to_string()))
            }
            _ => Route::NotFound,
        },
    }
}

/// Who may use the endpoint: the bearer token and the `Origin`s allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// The token every request must carry (`Authorization: Bearer …`).
    pub token: Option<String>,
    /// Serve without a token when none is set (else every request is refused).
    pub insecure_no_token: bool,
    /// `Origin`s accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
}

/// Why a request was refused before any MCP was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No token is set and serving without one was not asked for: the
    /// operator's mistake, `401` for every request.
    NoTokenSet,
    /// The request's bearer token is missing or wrong: `401`.
    Token,
    /// The `Origin` is neither loopback nor allowed: `403`.
    Origin,
}

impl Access {
    /// The bearer token, then the `Origin` (DNS rebinding): the refusal when
    /// one fails. The token is compared in time independent of where it differs.
    pub fn check(&self, request: &HttpRequest) -> Result<(), Refused> {
        match &self.token {
            Some(token) => {
                let given = request
                    .header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .unwrap_or_default();
                if !same(given.as_bytes(), token.as_bytes()) {
                    return Err(Refused::Token);
                }
            }
            None if !self.insecure_no_token => return Err(Refused::NoTokenSet),
            None => {}
        }
        if let Some(origin) = request.header("origin") {
            let listed = self.allowed_origins.iter().any(|o| o == origin);
            if !listed && !is_loopback_origin(origin) {
                return Err(Refused::Origin);
            }
        }
        Ok(())
    }
}

/// Whether `origin` (`scheme://host[:port]`) names a loopback host.
fn is_loopback_origin(origin: &str) -> bool {
    let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Compares in time that does not depend on where the texts differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One SSE `message` event; a line break in the JSON becomes another `data:` line.
pub fn sse_event(message: &str) -> Vec<u8> {
    let mut event = String::with_capacity(message.len() + 24);
    event.push_str("event: message\n");
    for line in message.lines() {
        event.push_str("data: ");
        event.push_str(line);
        event.push('\n');
    }
    event.push('\n');
    event.into_bytes()
}

/// What a request's `Mcp-Session-Id` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A session to reopen by replaying this `initialize` request (the session
    /// was carried by the client).
    Replay(String),
    /// No session of ours: `404`, "initialize again".
    Unknown,
}

/// Where 2025 sessions live, and what their `Mcp-Session-Id` is.
pub trait SessionIds {
    /// The id for the session opened by `initialize_text` (the request's body,
    /// a message or a batch); none when no `initialize` is in it.
    fn issue(&mut self, initialize_text: &str) -> Option<String>;
    /// What `id`, named by a request, continues.
    fn resolve(&self, id: &str) -> Named;
}

/// Sessions carried by the client: the id is `mcpbox1.` and the `initialize`
/// request's `protocolVersion` and `capabilities` as JSON in base64url, so a
/// fresh instance that gets a request naming it replays that `initialize` (and
/// `notifications/initialized`) into its own gateway first, which negotiates the
/// same version and capabilities again. The client could forge nothing it could
/// not send in an `initialize` of its own; an id that does not decode is an
/// unknown session.
#[derive(Debug, Clone, Copy, Default)]
pub struct CarriedSessions;

/// The prefix of a carried session id (and its format's version).
const CARRIED_PREFIX: &str = "mcpbox1.";

/// The longest id accepted: header values are bounded, and so is what a replay costs.
const MAX_ID_LEN: usize = 4096;

impl SessionIds for CarriedSessions {
    fn issue(&mut self, initialize_text: &str) -> Option<String> {
        initialize_params(initialize_text).map(|p| carried_id(&p))
    }

    fn resolve(&self, id: &str) -> Named {
        carried_replay(id).map_or(Named::Unknown, Named::Replay)
    }
}

/// The carried session id for the `initialize` parameters `params`.
fn carried_id(params: &Value) -> String {
    let kept = json!({
        "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(Value::Null),
        "capabilities": params.get("capabilities").cloned().unwrap_or_else(|| json!({})),
    });
    let text = serde_json::to_string(&kept).unwrap_or_default();
    format!("{CARRIED_PREFIX}{}", URL_SAFE_NO_PAD.encode(text))
}

/// The `initialize` request that reopens the carried session `id`; none when
/// `id` is not one of ours.
fn carried_replay(id: &str) -> Option<String> {
    if id.len() > MAX_ID_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(id.strip_prefix(CARRIED_PREFIX)?)
        .ok()?;
    let params: Value = serde_json::from_slice(&bytes).ok()?;
    let mut params = params.as_object()?.clone();
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
fn initialize_params(text: &str) -> Option<Value> {
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
    fn paths_name_the_profile_and_the_health_check() {
        assert_eq!(route("POST", "/mcp"), Route::Mcp(None));
        assert_eq!(route("POST", "/mcp/?x=1"), Route::Mcp(None));
        assert_eq!(route("GET", "/mcp/ops"), Route::Mcp(Some("ops".into())));
        assert_eq!(route("POST", "/"), Route::NotFound);
        assert_eq!(route("POST", "/mcp/a/b"), Route::NotFound);
        assert_eq!(route("POST", "/mcpx"), Route::NotFound);
        assert_eq!(route("GET", "/health"), Route::Health);
        assert_eq!(route("GET", "/health?from=lb"), Route::Health);
        assert_eq!(route("POST", "/health"), Route::NotFound);
        assert_eq!(route("GET", "/health/x"), Route::NotFound);
    }

    fn request(headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn the_token_and_the_origin_are_checked() {
        let access = Access {
            token: Some("s3cret".into()),
            allowed_origins: vec!["https://app.example".into()],
            ..Access::default()
        };
        assert_eq!(access.check(&request(&[])), Err(Refused::Token));
        let wrong = ("authorization", "Bearer nope");
        assert_eq!(access.check(&request(&[wrong])), Err(Refused::Token));
        let ok = ("authorization", "Bearer s3cret");
        assert_eq!(access.check(&request(&[ok])), Ok(()));
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "https://app.example",
        ] {
            assert_eq!(
                access.check(&request(&[ok, ("origin", origin)])),
                Ok(()),
                "{origin}"
            );
        }
        let evil = ("origin", "https://evil.example");
        assert_eq!(access.check(&request(&[ok, evil])), Err(Refused::Origin));
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }

    #[test]
    fn without_a_token_nothing_is_served_unless_told_to() {
        let none = Access::default();
        let refused = none.check(&request(&[("authorization", "Bearer x")]));
        assert_eq!(refused, Err(Refused::NoTokenSet));
        let open = Access {
            insecure_no_token: true,
            ..Access::default()
        };
        assert_eq!(open.check(&request(&[])), Ok(()));
        // The flag does not lift a token that is set.
        let both = Access {
            token: Some("s3cret".into()),
            insecure_no_token: true,
            ..Access::default()
        };
        assert_eq!(both.check(&request(&[])), Err(Refused::Token));
    }

    #[test]
    fn mcp_headers_reach_the_gateway_and_the_session_header_does_not() {
        let r = request(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("mcp-session-id", "mcpbox1.x"),
            ("authorization", "Bearer t"),
        ]);
        let names: Vec<String> = r.mcp_headers().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["mcp-protocol-version", "Mcp-Method"]);
    }

    #[test]
    fn sse_events_keep_line_breaks_inside_data_lines() {
        assert_eq!(
            sse_event("{\n\"a\":1}"),
            b"event: message\ndata: {\ndata: \"a\":1}\n\n".to_vec()
        );
    }

    #[test]
    fn a_carried_id_replays_the_initialize_it_came_from() {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{"roots":{}},
            "clientInfo":{"name":"c","version":"1"}}}"#;
        let id = CarriedSessions.issue(init).unwrap();
        assert!(id.starts_with(CARRIED_PREFIX));
        // Visible ASCII only, as a session id must be.
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        let Named::Replay(replayed) = CarriedSessions.resolve(&id) else {
            panic!("{id} names no session");
        };
        let replayed: Value = serde_json::from_str(&replayed).unwrap();
        assert_eq!(replayed["method"], "initialize");
        assert_eq!(replayed["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(replayed["params"]["capabilities"], json!({"roots": {}}));
        // In a batch too; and no initialize, no session.
        let batch = format!(r#"[{{"jsonrpc":"2.0","method":"ping","id":2}},{init}]"#);
        assert!(CarriedSessions.issue(&batch).is_some());
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(CarriedSessions.issue(list), None);
    }

    #[test]
    fn carried_ids_that_are_not_ours_reopen_nothing() {
        for id in [
            "3f2a-random-session".to_string(),
            "mcpbox1.!!!".to_string(),
            format!("{CARRIED_PREFIX}{}", URL_SAFE_NO_PAD.encode("[1]")),
            "mcpbox1.".repeat(1000),
        ] {
            assert_eq!(CarriedSessions.resolve(&id), Named::Unknown, "{id}");
        }
    }
}
