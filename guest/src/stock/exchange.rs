//! One HTTP request to the stock component, served from start to end: the
//! Streamable HTTP framing that `mcpbox serve --http` does in the host, here for
//! an instance that lives for one request.
//!
//! Every request is first decided by the gateway's HTTP rules
//! ([`crate::gateway::http::decide`], as `mcpbox serve --http`'s are: the path
//! `/mcp` or `/mcp/PROFILE`, the bearer token, the `Origin`, the method).
//! `GET /health` answers `200 ok` at once, for a load balancer's health checks:
//! it shows that the runtime accepts connections and instantiates the component,
//! and does no MCP work (no configuration read, no server contacted); it needs
//! no token and says nothing a caller could use.
//!
//! For a `POST` the rules let through, a fresh [`Manager`] loads
//! the configuration and connects every server (those the instance knows from an
//! earlier request start ready: see [`super::known`]), a fresh [`Gateway`] gets the
//! message (after the replayed `initialize` of a 2025 session, see
//! [`CarriedSessions`]), and the manager is driven until the gateway ends the
//! exchange. The answer goes out as JSON when it is one message complete at once,
//! else as an SSE stream that starts with the first message (progress and log
//! lines before the result, a `subscriptions/listen` stream). Nothing here knows
//! an MCP method but `initialize`'s parameters for the session id.

use crate::prelude::*;

use crate::gateway::exposure::Naming;
use crate::gateway::http::{
    self, Access, CarriedSessions, Decision, Named, Rules, SESSION_HEADER, SessionIds, sse_event,
};
use crate::gateway::{Gateway, Inbound, ServeOptions, Signal, Target, TransportKind};
use crate::manager::{Event, Manager, ServerState};
use crate::transport::Platform;

use super::Settings;

pub use crate::gateway::http::HttpRequest;

/// The exchange number of the replayed `initialize` of a 2025 session.
const REPLAY: u64 = 1;
/// The exchange number of the request itself.
const REQUEST: u64 = 2;
/// A session handle no gateway gives out: a session id that is not ours.
const UNKNOWN_SESSION: u64 = u64::MAX;
/// How long one `wait` may block; the manager's own timeouts end every call.
const WAIT_MS: u64 = 60_000;

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
    let (session, profile) = match http::decide(&rules(settings), &CarriedSessions, request) {
        Decision::Post {
            session, profile, ..
        } => (session, profile),
        Decision::Answer(answer) => {
            if answer.status == 401 && settings.token.is_none() {
                // The operator's mistake, not the client's: the platform's log says so.
                out.log(&format!("mcpbox: {}", http::NO_TOKEN));
            }
            return send(out, &answer);
        }
        // Not without kept sessions.
        Decision::Stream(_) | Decision::EndSession(_) => {
            return send(out, &http::session_not_found());
        }
    };
    if settings.token.is_none() {
        out.log(
            "mcpbox: MCPBOX_INSECURE_NO_TOKEN is set and MCPBOX_TOKEN is not: anyone who can \
             reach this component can call every tool",
        );
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
        // This instance ends with the request, and a task would with it.
        keeps_tasks: false,
        ..ServeOptions::default()
    };
    if let Err(why) = g.serve(m.permissions(), options, None) {
        return plain(out, 500, &why);
    }
    m.serve_downstream();
    m.start();

    let session = session.map(|named| match named {
        Named::Replay(init) => {
            reopen(&mut m, &mut g, profile.clone(), init).unwrap_or(UNKNOWN_SESSION)
        }
        Named::Session(_) | Named::Unknown => UNKNOWN_SESSION,
    });
    g.receive(
        &mut m,
        Inbound {
            session,
            exchange: REQUEST,
            kind: TransportKind::Http,
            profile,
            headers: request.mcp_headers(),
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
                    exchange: REQUEST,
                    session,
                } => session_id = CarriedSessions.issue(text, session),
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
    let session = session_id.map(|id| (SESSION_HEADER, id));
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
        headers.push((SESSION_HEADER, id.to_string()));
    }
    headers
}

fn plain(out: &mut dyn Responder, status: u16, text: &str) {
    out.head(
        status,
        &[("content-type", "text/plain; charset=utf-8".to_string())],
    );
    out.body(text.as_bytes());
}

/// Who may use the component, from its settings. The token is required, as
/// by `mcpbox serve --http`: the component cannot tell who can reach it
/// (`wasmtime serve` listens on every interface unless told otherwise, and
/// loopback is shared by every user of a machine), so without `MCPBOX_TOKEN` it
/// refuses every request unless `MCPBOX_INSECURE_NO_TOKEN` says to serve anyone.
/// Its instances live for one request, so it keeps no session: a 2025 session
/// lives in its id ([`CarriedSessions`]).
fn rules(settings: &Settings) -> Rules {
    Rules {
        access: Access {
            token: settings.token.clone(),
            insecure_no_token: settings.insecure_no_token,
            allowed_origins: settings.allowed_origins.clone(),
            loopback_listener: None,
        },
        bound_profile: None,
        kept_sessions: false,
    }
}

/// Sends an answer the rules gave.
fn send(out: &mut dyn Responder, answer: &http::Answer) {
    let headers: Vec<(&str, String)> = answer
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    out.head(answer.status, &headers);
    if !answer.body.is_empty() {
        out.body(answer.body.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::http::Refused;

    #[test]
    fn settings_become_the_access_rules_and_refusals_say_what_to_set() {
        let settings = Settings {
            token: Some("s3cret".into()),
            allowed_origins: vec!["https://app.example".into()],
            ..Settings::default()
        };
        let rules = rules(&settings);
        assert_eq!(rules.access.token.as_deref(), Some("s3cret"));
        assert_eq!(rules.access.allowed_origins, ["https://app.example"]);
        assert!(!rules.access.insecure_no_token && !rules.kept_sessions);
        assert_eq!(http::refusal(Refused::NoTokenSet).body, http::NO_TOKEN);
        assert!(http::refusal(Refused::Token).body.contains("MCPBOX_TOKEN"));
        let origin = http::refusal(Refused::Origin);
        assert_eq!(origin.status, 403);
        assert!(
            origin.body.contains("MCPBOX_ALLOWED_ORIGINS"),
            "{}",
            origin.body
        );
    }
}
