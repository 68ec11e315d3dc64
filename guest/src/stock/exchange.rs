//! One HTTP request to the stock component, served from start to end: the
//! Streamable HTTP framing that `mcpbox serve --http` does in the host, here for
//! an instance that lives for one request.
//!
//! `GET /health` answers `200 ok` at once, for a load balancer's health checks:
//! it shows that the runtime accepts connections and instantiates the component,
//! and does no MCP work (no configuration read, no server contacted); it needs
//! no token and says nothing a caller could use.
//!
//! Any other request is checked as the host checks it (the path `/mcp` or
//! `/mcp/PROFILE`, the bearer token, the `Origin`), then a fresh [`Manager`] loads
//! the configuration and connects every server (those the instance knows from an
//! earlier request start ready: see [`super::known`]), a fresh [`Gateway`] gets the
//! message (after the replayed `initialize` of a 2025 session, see
//! [`super::session`]), and the manager is driven until the gateway ends the
//! exchange. The answer goes out as JSON when it is one message complete at once,
//! else as an SSE stream that starts with the first message (progress and log
//! lines before the result, a `subscriptions/listen` stream). Nothing here knows
//! an MCP method but `initialize`'s parameters for the session id.

use crate::prelude::*;

use crate::gateway::exposure::Naming;
use crate::gateway::{Gateway, Inbound, ServeOptions, Signal, Target, TransportKind};
use crate::manager::{Event, Manager, ServerState};
use crate::transport::{Pair, Platform};

use super::Settings;
use super::session;

/// The exchange number of the replayed `initialize` of a 2025 session.
const REPLAY: u64 = 1;
/// The exchange number of the request itself.
const REQUEST: u64 = 2;
/// A session handle no gateway gives out: a session id that is not ours.
const UNKNOWN_SESSION: u64 = u64::MAX;
/// How long one `wait` may block; the manager's own timeouts end every call.
const WAIT_MS: u64 = 60_000;

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
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Where the response goes.
pub trait Responder {
    /// Sends the status and headers; called once, before any `body`.
    fn head(&mut self, status: u16, headers: &[(&str, String)]);
    /// Sends a piece of the body; false when the client is gone.
    fn body(&mut self, bytes: &[u8]) -> bool;
    /// Writes a line to the operator's log (the platform's: `wasi:cli/stderr`).
    fn log(&mut self, line: &str);
}

/// Serves `request` on `platform` with `settings`; the response goes to `out`.
pub fn handle<P: Platform>(
    platform: P,
    settings: &Settings,
    request: &HttpRequest,
    out: &mut dyn Responder,
) {
    if request.method == "GET" && is_health(&request.path) {
        return plain(out, 200, "ok\n");
    }
    let profile = match route(&request.path) {
        Ok(profile) => profile,
        Err(()) => {
            return plain(
                out,
                404,
                "not found: the MCP endpoint is /mcp (or /mcp/PROFILE)",
            );
        }
    };
    if let Some(refusal) = check_access(settings, request) {
        if refusal.1 == NO_TOKEN {
            // The operator's mistake, not the client's: the platform's log says so.
            out.log(&format!("mcpbox: {NO_TOKEN}"));
        }
        return plain(out, refusal.0, refusal.1);
    }
    if settings.token.is_none() {
        out.log(
            "mcpbox: MCPBOX_INSECURE_NO_TOKEN is set and MCPBOX_TOKEN is not: anyone who can \
             reach this component can call every tool",
        );
    }
    match request.method.as_str() {
        "POST" => {}
        // A 2025 session lives in its id (see `session`): nothing to forget.
        "DELETE" => return out.head(204, &[]),
        _ => {
            out.head(
                405,
                &[
                    ("allow", "POST, DELETE".into()),
                    ("content-type", "text/plain; charset=utf-8".into()),
                ],
            );
            out.body(
                b"method not allowed: a stock-runtime instance lives for one request, so \
                  there is no standalone GET stream; POST each message (2026-07-28: \
                  subscriptions/listen)",
            );
            return;
        }
    }
    let Ok(text) = core::str::from_utf8(&request.body) else {
        return plain(out, 400, "bad request: the body is not UTF-8 text");
    };
    let Some((origin, config)) = &settings.config else {
        return plain(
            out,
            500,
            "mcpbox has no configuration: set MCPBOX_CONFIG to the .mcp.json text \
             (wasmtime serve --env MCPBOX_CONFIG=\"$(cat .mcp.json)\") or build the \
             component with MCPBOX_STOCK_CONFIG",
        );
    };
    let naming = settings.naming.as_deref().unwrap_or("prefixed");
    let Some(naming) = Naming::parse(naming) else {
        return plain(
            out,
            500,
            &format!("MCPBOX_NAMING is {naming:?}: use \"prefixed\" or \"conditional\""),
        );
    };
    for warning in &settings.warnings {
        out.log(&format!("mcpbox: {warning}"));
    }
    let mut m = Manager::new(platform);
    // One gateway per request: servers known from an earlier request of this
    // instance start ready, and no subscription stream is opened.
    m.short_lived();
    match m.load_config(origin, config) {
        Ok(issues) => {
            for issue in issues {
                out.log(&format!("mcpbox: {origin}: {issue}"));
            }
        }
        Err(why) => {
            return plain(
                out,
                500,
                &format!("mcpbox could not read its configuration ({origin}): {why}"),
            );
        }
    }
    let mut g = Gateway::new();
    g.configure();
    let options = ServeOptions {
        naming,
        tool_search: settings.tool_search,
        secret: settings.secret.clone().unwrap_or_default(),
        ..ServeOptions::default()
    };
    if let Err(why) = g.serve(m.permissions(), options, None) {
        return plain(out, 500, &why);
    }
    m.serve_downstream();
    m.start();

    let session = request.header("mcp-session-id").map(|id| {
        session::replay(id)
            .and_then(|init| reopen(&mut m, &mut g, profile.clone(), init))
            .unwrap_or(UNKNOWN_SESSION)
    });
    g.receive(
        &mut m,
        Inbound {
            session,
            exchange: REQUEST,
            kind: TransportKind::Http,
            profile,
            headers: request
                .headers
                .iter()
                .filter(|(n, _)| n.starts_with("mcp-"))
                .map(|(n, v)| Pair {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect(),
            text: text.to_string(),
        },
    );
    answer(&mut m, &mut g, text, out);
    let events = m.events();
    log_events(events, out);
    m.shutdown();
}

/// Replays a 2025 session's `initialize` (and `notifications/initialized`); the
/// session's handle in this gateway.
fn reopen<P: Platform>(
    m: &mut Manager<P>,
    g: &mut Gateway,
    profile: Option<String>,
    initialize: String,
) -> Option<u64> {
    let inbound = |session, text| Inbound {
        session,
        exchange: REPLAY,
        kind: TransportKind::Http,
        profile: profile.clone(),
        headers: Vec::new(),
        text,
    };
    g.receive(m, inbound(None, initialize));
    let session = g.take_signals().into_iter().find_map(|s| match s {
        Signal::SessionOpened { session, .. } => Some(session),
        _ => None,
    })?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    g.receive(m, inbound(Some(session), initialized.into()));
    g.take_signals();
    Some(session)
}

/// Drives the manager until the gateway ends the exchange, and sends its answer.
fn answer<P: Platform>(m: &mut Manager<P>, g: &mut Gateway, text: &str, out: &mut dyn Responder) {
    let mut pending: Vec<String> = Vec::new();
    let mut session_id: Option<String> = None;
    let mut streaming = false;
    let mut signals = g.take_signals();
    let status = loop {
        let mut ended = None;
        for signal in signals.drain(..) {
            match signal {
                Signal::Message {
                    target: Target::Exchange(REQUEST),
                    text,
                } => pending.push(text),
                Signal::SessionOpened {
                    exchange: REQUEST, ..
                } => session_id = session::initialize_params(text).map(|p| session::id_for(&p)),
                Signal::End {
                    exchange: REQUEST,
                    status,
                } => ended = Some(status),
                // A session's standalone stream: there is none (no GET).
                _ => {}
            }
        }
        if let Some(status) = ended {
            break status;
        }
        if !pending.is_empty() {
            // More is coming: stream what there is now.
            if !streaming {
                out.head(200, &sse_headers(session_id.as_deref()));
                streaming = true;
            }
            for message in pending.drain(..) {
                if !out.body(&sse_event(&message)) {
                    g.exchange_closed(m, REQUEST);
                    return;
                }
            }
        }
        let finished = m.wait(if g.busy(m) { 0 } else { WAIT_MS });
        let events = m.events();
        let (_, events) = g.absorb(m, finished, events);
        log_events(events, out);
        signals = g.take_signals();
    };
    let session = session_id.map(|id| ("mcp-session-id", id));
    match (streaming, pending.len()) {
        (false, 0) => out.head(status, session.as_slice()),
        (false, 1) => {
            let mut headers = vec![("content-type", "application/json".to_string())];
            headers.extend(session);
            out.head(status, &headers);
            out.body(pending[0].as_bytes());
        }
        (streaming, _) => {
            if !streaming {
                out.head(200, &sse_headers(session.map(|s| s.1).as_deref()));
            }
            for message in &pending {
                if !out.body(&sse_event(message)) {
                    break;
                }
            }
        }
    }
}

/// What the operator should know of the manager's events: servers that failed
/// (a stdio entry, an unreachable URL, an unset `${VAR}`) and warnings.
fn log_events(events: Vec<Event>, out: &mut dyn Responder) {
    for event in events {
        match event {
            Event::Status(s) if s.state == ServerState::Failed => {
                let why = s.error.unwrap_or_default();
                out.log(&format!("mcpbox: server `{}` failed: {why}", s.name));
            }
            Event::Warning(w) => out.log(&format!("mcpbox: {w}")),
            _ => {}
        }
    }
}

fn sse_headers(session: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("content-type", "text/event-stream".to_string()),
        ("cache-control", "no-cache".to_string()),
    ];
    if let Some(id) = session {
        headers.push(("mcp-session-id", id.to_string()));
    }
    headers
}

/// One SSE `message` event; a line break in the JSON becomes another `data:` line.
fn sse_event(message: &str) -> Vec<u8> {
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

fn plain(out: &mut dyn Responder, status: u16, text: &str) {
    out.head(
        status,
        &[("content-type", "text/plain; charset=utf-8".to_string())],
    );
    out.body(text.as_bytes());
}

/// Whether `path` is the health check's (`/health`, any query).
fn is_health(path: &str) -> bool {
    path.split(['?', '#']).next() == Some("/health")
}

/// The profile a path names: `/mcp` none, `/mcp/NAME` that one.
fn route(path: &str) -> Result<Option<String>, ()> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    match path.trim_end_matches('/') {
        "/mcp" => Ok(None),
        other => match other.strip_prefix("/mcp/") {
            Some(name) if !name.is_empty() && !name.contains('/') => Ok(Some(name.to_string())),
            _ => Err(()),
        },
    }
}

/// Why every request is refused while the component has no token.
const NO_TOKEN: &str = "MCPBOX_TOKEN is not set, and without a bearer token this gateway \
    answers no request: set MCPBOX_TOKEN (clients send `Authorization: Bearer …`), or \
    MCPBOX_INSECURE_NO_TOKEN=1 to let anyone who can reach it call every tool";

/// The bearer token and the `Origin` (DNS rebinding), as `mcpbox serve --http`
/// checks them: the refusal when one fails. The token is required, as there:
/// the component cannot tell who can reach it (`wasmtime serve` listens on
/// every interface unless told otherwise, and loopback is shared by every user
/// of a machine), so without `MCPBOX_TOKEN` it refuses every request unless
/// `MCPBOX_INSECURE_NO_TOKEN` says to serve anyone.
fn check_access(settings: &Settings, request: &HttpRequest) -> Option<(u16, &'static str)> {
    match &settings.token {
        Some(token) => {
            let given = request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            if !same(given.as_bytes(), token.as_bytes()) {
                return Some((401, "a bearer token is required (MCPBOX_TOKEN)"));
            }
        }
        None if !settings.insecure_no_token => return Some((401, NO_TOKEN)),
        None => {}
    }
    if let Some(origin) = request.header("origin") {
        let listed = settings.allowed_origins.iter().any(|o| o == origin);
        if !listed && !is_loopback_origin(origin) {
            return Some((
                403,
                "forbidden: this Origin is not allowed (DNS rebinding protection; \
                 list it in MCPBOX_ALLOWED_ORIGINS)",
            ));
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_profile() {
        assert_eq!(route("/mcp"), Ok(None));
        assert_eq!(route("/mcp/?x=1"), Ok(None));
        assert_eq!(route("/mcp/ops"), Ok(Some("ops".into())));
        assert_eq!(route("/"), Err(()));
        assert_eq!(route("/mcp/a/b"), Err(()));
        assert_eq!(route("/mcpx"), Err(()));
        assert!(is_health("/health") && is_health("/health?from=lb"));
        assert!(!is_health("/health/x") && !is_health("/mcp") && !is_health("/"));
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
        let settings = Settings {
            token: Some("s3cret".into()),
            allowed_origins: vec!["https://app.example".into()],
            ..Settings::default()
        };
        assert_eq!(check_access(&settings, &request(&[])).unwrap().0, 401);
        assert_eq!(
            check_access(&settings, &request(&[("authorization", "Bearer nope")]))
                .unwrap()
                .0,
            401
        );
        let ok = ("authorization", "Bearer s3cret");
        assert_eq!(check_access(&settings, &request(&[ok])), None);
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "https://app.example",
        ] {
            assert_eq!(
                check_access(&settings, &request(&[ok, ("origin", origin)])),
                None,
                "{origin}"
            );
        }
        assert_eq!(
            check_access(
                &settings,
                &request(&[ok, ("origin", "https://evil.example")])
            )
            .unwrap()
            .0,
            403
        );
    }

    #[test]
    fn without_a_token_nothing_is_served_unless_told_to() {
        let none = Settings::default();
        let refused = check_access(&none, &request(&[("authorization", "Bearer x")])).unwrap();
        assert_eq!(refused, (401, NO_TOKEN));
        let open = Settings {
            insecure_no_token: true,
            ..Settings::default()
        };
        assert_eq!(check_access(&open, &request(&[])), None);
        // The flag does not lift a token that is set.
        let both = Settings {
            token: Some("s3cret".into()),
            insecure_no_token: true,
            ..Settings::default()
        };
        assert_eq!(check_access(&both, &request(&[])).unwrap().0, 401);
    }

    #[test]
    fn sse_events_keep_line_breaks_inside_data_lines() {
        assert_eq!(
            sse_event("{\n\"a\":1}"),
            b"event: message\ndata: {\ndata: \"a\":1}\n\n".to_vec()
        );
    }
}
