//! The rules of the gateway's Streamable HTTP endpoint, kept in the guest, once:
//! which paths and methods it serves, the bearer token (compared in constant
//! time), the `Host` and `Origin` (DNS rebinding), which `mcp-*` headers reach
//! the gateway, how the answer's messages are framed as SSE, and what a
//! session's `Mcp-Session-Id` is ([`SessionIds`]).
//!
//! [`decide`] applies them to a request's head, before any of its body is read:
//! the stock `wasi:http` component ([`crate::stock::exchange`]) serves through it,
//! and so does `mcpbox serve --http` (`host/src/gateway/http.rs`), through the WIT
//! entry `gateway.http-head`. The native host keeps the sockets, the buffers and
//! the budgets of the sessions the decision names; the dashboard (`/`, `/api/…`,
//! `/metrics`) reads no MCP message and stays in the host.
//!
//! # Sessions behind a trait
//!
//! A 2025 client names its session in every request after `initialize`. Where
//! the session lives is the [`SessionIds`] implementation's choice, as rmcp's
//! `SessionManager` has local and restored sessions: [`CarriedSessions`] (the
//! stock component, whose instances live for one request) gives out ids that
//! *are* the session (`mcpbox1.` and what `initialize` negotiated), which any
//! instance replays; [`SignedSessions`] (`mcpbox serve --http`, whose host keeps
//! the sessions in memory) gives out the gateway's handle signed with the host's
//! secret, which a new instance after a trap, given the same secret, recognises.

use crate::prelude::*;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

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
            Some(name) if !name.is_empty() && !name.contains('/') => Route::Mcp(Some(
                percent_encoding::percent_decode_str(name)
                    .decode_utf8_lossy()
                    .into_owned(),
            )),
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
    /// What the runtime knows of its listener: `Some(true)` on a loopback
    /// address, where a `Host` that is not a loopback name is refused;
    /// `Some(false)` elsewhere, where loopback origins are not taken as local;
    /// none when it cannot tell (a stock runtime), where they are.
    pub loopback_listener: Option<bool>,
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
    /// The listener is on loopback and the `Host` is not a loopback name: `403`.
    Host,
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
        if self.loopback_listener == Some(true) {
            let host = request.header("host").unwrap_or_default();
            if !is_loopback_authority(host) {
                return Err(Refused::Host);
            }
        }
        if let Some(origin) = request.header("origin") {
            let listed = self.allowed_origins.iter().any(|o| o == origin);
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            let local = self.loopback_listener != Some(false) && is_loopback_authority(authority);
            if !listed && !local {
                return Err(Refused::Origin);
            }
        }
        Ok(())
    }
}

/// Whether `authority` (`host[:port]`, IPv6 in brackets) names a loopback host.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(v6) => return v6.split(']').next() == Some("::1"),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<core::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
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

/// An answer given from the head alone: its body is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body, text for people.
    pub body: String,
}

impl Answer {
    /// `status` with `text` as a plain-text body.
    pub fn plain(status: u16, text: &str) -> Answer {
        Answer {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: text.into(),
        }
    }

    fn with(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// The rules of one endpoint: who may use it, and what it serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The token and the origins.
    pub access: Access,
    /// The only profile a path may name (`mcpbox serve --profile`): a path cannot
    /// widen what it narrowed. `/mcp` serves it.
    pub bound_profile: Option<String>,
    /// The runtime keeps sessions: `GET` opens or resumes a session's stream and
    /// `DELETE` ends it. Without (a stock runtime, whose instances live for one
    /// request), `GET` is `405` and `DELETE` has nothing to end (`204`).
    pub kept_sessions: bool,
}

/// What the rules make of a request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Answer this; the body is not read.
    Answer(Answer),
    /// Read the body and hand it to the gateway.
    Post {
        /// The session the request names: [`Named::Replay`] or
        /// [`Named::Session`], never [`Named::Unknown`] (that is a `404`).
        session: Option<Named>,
        /// The profile chosen by the path, or the bound one.
        profile: Option<String>,
        /// The `mcp-*` headers the gateway checks ([`HttpRequest::mcp_headers`]).
        headers: Vec<Pair>,
    },
    /// Open or resume the stream of the session of this handle.
    Stream(u64),
    /// End the session of this handle.
    EndSession(u64),
}

/// The `404` for a session id that names no session (any more).
pub fn session_not_found() -> Answer {
    Answer::plain(404, "session not found: initialize again")
}

/// The status and text of a refusal.
pub fn refusal(refused: Refused) -> Answer {
    match refused {
        Refused::NoTokenSet => Answer::plain(401, NO_TOKEN),
        Refused::Token => Answer::plain(
            401,
            "a bearer token is required: send `Authorization: Bearer TOKEN` (`mcpbox serve \
             --http`, `mcpbox dashboard` and the stock component take MCPBOX_TOKEN; the CLI \
             else keeps the token in the file http-token of the user's mcpbox configuration \
             directory)",
        )
        .with("www-authenticate", "Bearer"),
        Refused::Origin => Answer::plain(
            403,
            "forbidden: this Origin is not allowed (DNS rebinding protection; allow it with \
             `--allow-origin`, or MCPBOX_ALLOWED_ORIGINS for the stock component)",
        ),
        Refused::Host => Answer::plain(
            403,
            "forbidden: this server answers loopback host names only (DNS rebinding protection)",
        ),
    }
}

/// Why every request is refused while no token is set and serving without one
/// was not asked for (the stock component's settings; `mcpbox serve --http`
/// refuses to start so).
pub const NO_TOKEN: &str = "MCPBOX_TOKEN is not set, and without a bearer token this gateway \
    answers no request: set MCPBOX_TOKEN (clients send `Authorization: Bearer …`), or \
    MCPBOX_INSECURE_NO_TOKEN=1 to let anyone who can reach it call every tool";

/// Applies `rules` to the head of `request` (its body is not looked at): the
/// route, the token, `Host` and `Origin`, the method, the media types and the
/// session its id names. `GET /health` is answered first, with no token: it
/// says nothing but that the runtime serves.
pub fn decide(rules: &Rules, sessions: &dyn SessionIds, request: &HttpRequest) -> Decision {
    let profile = match route(&request.method, &request.path) {
        Route::Health => return Decision::Answer(Answer::plain(200, "ok\n")),
        Route::Mcp(profile) => profile,
        Route::NotFound => {
            return Decision::Answer(Answer::plain(
                404,
                "not found: the MCP endpoint is /mcp or /mcp/{profile}",
            ));
        }
    };
    if let Err(refused) = rules.access.check(request) {
        return Decision::Answer(refusal(refused));
    }
    let profile = match (profile, &rules.bound_profile) {
        (Some(named), Some(bound)) if named != *bound => {
            return Decision::Answer(Answer::plain(
                403,
                &format!(
                    "forbidden: this gateway serves the profile `{bound}` only (it was \
                     started with --profile {bound}); use /mcp or /mcp/{bound}, or start one \
                     without --profile to choose profiles by path"
                ),
            ));
        }
        (named, bound) => named.or_else(|| bound.clone()),
    };
    let session = request
        .header(SESSION_HEADER)
        .map(|id| sessions.resolve(id));
    if session == Some(Named::Unknown) {
        return Decision::Answer(session_not_found());
    }
    let handle = match session {
        Some(Named::Session(handle)) => Some(handle),
        _ => None,
    };
    match request.method.as_str() {
        "POST" => {
            let json = request
                .header("content-type")
                .is_some_and(|v| v.trim_start().starts_with("application/json"));
            if !json {
                return Decision::Answer(Answer::plain(
                    415,
                    "unsupported media type: send application/json",
                ));
            }
            Decision::Post {
                session,
                profile,
                headers: request.mcp_headers(),
            }
        }
        "GET" if rules.kept_sessions => {
            let accepts = request
                .header("accept")
                .is_some_and(|v| v.contains("text/event-stream") || v.contains("*/*"));
            if !accepts {
                return Decision::Answer(Answer::plain(
                    406,
                    "not acceptable: GET opens an SSE stream (text/event-stream)",
                ));
            }
            match handle {
                Some(handle) => Decision::Stream(handle),
                None => Decision::Answer(
                    Answer::plain(
                        405,
                        "no standalone stream without a session (2026-07-28 clients use \
                         subscriptions/listen)",
                    )
                    .with("allow", "POST, DELETE"),
                ),
            }
        }
        "GET" => Decision::Answer(
            Answer::plain(
                405,
                "method not allowed: a stock-runtime instance lives for one request, so \
                 there is no standalone GET stream; POST each message (2026-07-28: \
                 subscriptions/listen)",
            )
            .with("allow", "POST, DELETE"),
        ),
        "DELETE" if rules.kept_sessions => match handle {
            Some(handle) => Decision::EndSession(handle),
            None => Decision::Answer(Answer::plain(
                400,
                "DELETE needs the Mcp-Session-Id of the session to end",
            )),
        },
        // A 2025 session lives in its id (see `CarriedSessions`): nothing to forget.
        "DELETE" => Decision::Answer(Answer {
            status: 204,
            headers: Vec::new(),
            body: String::new(),
        }),
        _ => Decision::Answer(
            Answer::plain(405, "method not allowed: use POST, GET or DELETE")
                .with("allow", "GET, POST, DELETE"),
        ),
    }
}

/// What a request's `Mcp-Session-Id` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A session to reopen by replaying this `initialize` request (the session
    /// was carried by the client).
    Replay(String),
    /// The session the gateway gave this handle (kept by the runtime).
    Session(u64),
    /// No session of ours: `404`, "initialize again".
    Unknown,
}

/// Where 2025 sessions live, and what their `Mcp-Session-Id` is.
pub trait SessionIds {
    /// The id for the session the gateway opened as `handle` on the request
    /// whose body is `initialize_text` (a message or a batch); none when it
    /// cannot be given one.
    fn issue(&mut self, initialize_text: &str, handle: u64) -> Option<String>;
    /// What `id`, named by a request, continues.
    fn resolve(&self, id: &str) -> Named;
}

/// Sessions kept by the runtime (`mcpbox serve --http`): the id is the gateway's
/// handle and an HMAC-SHA256 of it under the host's secret (`serve-options.secret`),
/// in hex, so that a client cannot name a session it was not given, and a new
/// instance after a trap, served with the same secret, recognises every id the
/// old one gave. The handle alone is no secret (it carries a sequence number and
/// what the session negotiated); the MAC is what a client must not forge.
#[derive(Clone)]
pub struct SignedSessions {
    key: Hmac<Sha256>,
}

/// Bytes of the MAC kept in an id: 128 bits, compared in constant time.
const MAC_BYTES: usize = 16;

impl SignedSessions {
    /// Ids signed with `secret`.
    pub fn new(secret: &str) -> SignedSessions {
        // HMAC takes a key of any length.
        let key = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        SignedSessions { key }
    }

    fn mac(&self, handle: u64) -> Hmac<Sha256> {
        let mut mac = self.key.clone();
        // Apart from the gateway's other uses of the secret (`requestState`).
        mac.update(b"mcpbox session id\0");
        mac.update(&handle.to_be_bytes());
        mac
    }
}

impl core::fmt::Debug for SignedSessions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SignedSessions")
    }
}

impl SessionIds for SignedSessions {
    fn issue(&mut self, _initialize_text: &str, handle: u64) -> Option<String> {
        let tag = self.mac(handle).finalize().into_bytes();
        let mut id = format!("{handle:x}.");
        for b in &tag[..MAC_BYTES] {
            id.push_str(&format!("{b:02x}"));
        }
        Some(id)
    }

    fn resolve(&self, id: &str) -> Named {
        let Some((handle, tag)) = id.split_once('.') else {
            return Named::Unknown;
        };
        let hex = |t: &str| t.bytes().all(|b| b.is_ascii_hexdigit());
        if handle.is_empty() || handle.len() > 16 || tag.len() != 2 * MAC_BYTES {
            return Named::Unknown;
        }
        if !hex(handle) || !hex(tag) {
            return Named::Unknown;
        }
        let (Ok(handle), Some(tag)) = (u64::from_str_radix(handle, 16), unhex(tag)) else {
            return Named::Unknown;
        };
        match self.mac(handle).verify_truncated_left(&tag) {
            Ok(()) => Named::Session(handle),
            Err(_) => Named::Unknown,
        }
    }
}

/// The bytes of lowercase or uppercase hex text; none when it is not hex.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
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
    fn issue(&mut self, initialize_text: &str, _handle: u64) -> Option<String> {
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
    fn a_loopback_listener_answers_loopback_host_names_only() {
        let ok = ("authorization", "Bearer s3cret");
        let access = Access {
            token: Some("s3cret".into()),
            loopback_listener: Some(true),
            ..Access::default()
        };
        for host in [
            "localhost:8080",
            "127.0.0.1",
            "127.1.2.3:9",
            "[::1]:80",
            "LOCALHOST",
        ] {
            assert_eq!(
                access.check(&request(&[ok, ("host", host)])),
                Ok(()),
                "{host}"
            );
        }
        for host in ["evil.example.com", "10.0.0.1:80", "[::2]", ""] {
            let refused = access.check(&request(&[ok, ("host", host)]));
            assert_eq!(refused, Err(Refused::Host), "{host}");
        }
        // Elsewhere a loopback Origin is not local, and the Host is not looked at.
        let public = Access {
            loopback_listener: Some(false),
            ..access.clone()
        };
        let local = ("origin", "http://localhost:3000");
        let evil_host = ("host", "evil.example.com");
        assert_eq!(public.check(&request(&[ok, evil_host])), Ok(()));
        assert_eq!(public.check(&request(&[ok, local])), Err(Refused::Origin));
    }

    fn head(method: &str, path: &str, headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: method.into(),
            path: path.into(),
            ..request(headers)
        }
    }

    fn status(decision: &Decision) -> u16 {
        match decision {
            Decision::Answer(a) => a.status,
            _ => 0,
        }
    }

    #[test]
    fn the_head_decides_routes_methods_and_sessions_before_any_body() {
        let mut signed = SignedSessions::new("host secret");
        let rules = Rules {
            access: Access {
                token: Some("t".into()),
                loopback_listener: Some(true),
                ..Access::default()
            },
            bound_profile: None,
            kept_sessions: true,
        };
        let ok = [
            ("authorization", "Bearer t"),
            ("host", "127.0.0.1:1"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-method", "tools/call"),
        ];
        let id = signed.issue("", 0x1234).unwrap();
        let with_id: Vec<(&str, &str)> = ok
            .iter()
            .copied()
            .chain([("mcp-session-id", id.as_str())])
            .collect();
        let decide = |method: &str, path: &str, headers: &[(&str, &str)]| {
            decide(&rules, &signed, &head(method, path, headers))
        };
        assert_eq!(status(&decide("GET", "/health", &[])), 200);
        assert_eq!(status(&decide("POST", "/other", &ok)), 404);
        assert_eq!(status(&decide("POST", "/mcp", &ok[1..])), 401);
        assert_eq!(
            decide("POST", "/mcp/read%20only", &with_id),
            Decision::Post {
                session: Some(Named::Session(0x1234)),
                profile: Some("read only".into()),
                headers: vec![Pair {
                    name: "mcp-method".into(),
                    value: "tools/call".into()
                }],
            }
        );
        assert_eq!(status(&decide("POST", "/mcp", &ok[..2])), 415);
        assert_eq!(decide("GET", "/mcp", &with_id), Decision::Stream(0x1234));
        assert_eq!(status(&decide("GET", "/mcp", &ok)), 405);
        assert_eq!(status(&decide("GET", "/mcp", &with_id[..3])), 406);
        assert_eq!(
            decide("DELETE", "/mcp", &with_id),
            Decision::EndSession(0x1234)
        );
        assert_eq!(status(&decide("DELETE", "/mcp", &ok)), 400);
        assert_eq!(status(&decide("PUT", "/mcp", &ok)), 405);
        // An id this secret did not sign names no session, before any body.
        let forged: Vec<(&str, &str)> = ok
            .iter()
            .copied()
            .chain([("mcp-session-id", "1234.00")])
            .collect();
        assert_eq!(status(&decide("POST", "/mcp", &forged)), 404);
        // A bound profile: the path may name it, or nothing, and nothing else.
        let bound = Rules {
            bound_profile: Some("ops".into()),
            ..rules.clone()
        };
        let post = |path: &str| decide_with(&bound, &signed, &head("POST", path, &ok));
        assert!(matches!(post("/mcp"), Decision::Post { profile: Some(p), .. } if p == "ops"));
        assert!(matches!(post("/mcp/ops"), Decision::Post { .. }));
        assert_eq!(status(&post("/mcp/wide")), 403);
        // A stock runtime keeps no session: no stream to open, nothing to end.
        let stock = Rules {
            kept_sessions: false,
            ..rules.clone()
        };
        assert_eq!(
            status(&decide_with(
                &stock,
                &signed,
                &head("GET", "/mcp", &with_id)
            )),
            405
        );
        assert_eq!(
            status(&decide_with(
                &stock,
                &signed,
                &head("DELETE", "/mcp", &with_id)
            )),
            204
        );
    }

    fn decide_with(rules: &Rules, sessions: &dyn SessionIds, request: &HttpRequest) -> Decision {
        decide(rules, sessions, request)
    }

    #[test]
    fn signed_ids_name_their_session_under_the_same_secret_only() {
        let mut one = SignedSessions::new("secret one");
        let id = one.issue("", 0x0102_0304_0506).unwrap();
        // Visible ASCII only, as a session id must be.
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        assert_eq!(one.resolve(&id), Named::Session(0x0102_0304_0506));
        // A new instance given the same secret (after a trap) recognises it.
        assert_eq!(
            SignedSessions::new("secret one").resolve(&id),
            Named::Session(0x0102_0304_0506)
        );
        // Another process's secret does not; nor a handle with another's tag.
        assert_eq!(
            SignedSessions::new("secret two").resolve(&id),
            Named::Unknown
        );
        let (_, tag) = id.split_once('.').unwrap();
        for forged in [
            format!("102030405.{tag}"),
            format!("+102030406.{tag}"),
            format!("0102030406.{tag}"),
            id.to_uppercase(),
            format!("{id}0"),
            id[..id.len() - 2].to_string(),
            "mcpbox1.eyJ9".into(),
            "".into(),
            ".".into(),
        ] {
            let named = one.resolve(&forged);
            assert!(
                named == Named::Unknown || named == Named::Session(0x0102_0304_0506),
                "{forged}: {named:?}"
            );
        }
        assert_eq!(one.resolve(&format!("102030405.{tag}")), Named::Unknown);
        assert_eq!(one.resolve(&format!("+102030506.{tag}")), Named::Unknown);
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
        let id = CarriedSessions.issue(init, 1).unwrap();
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
        assert!(CarriedSessions.issue(&batch, 1).is_some());
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(CarriedSessions.issue(list, 1), None);
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
