//! Streamable HTTP (MCP 2025-03-26 and later, 2026-07-28 included), the client
//! side.
//!
//! Every message is a POST to the endpoint with `Accept: application/json,
//! text/event-stream`. A request's answer comes back as one JSON body or as an
//! SSE stream that may carry server requests and notifications before the
//! response. Requests are posted side by side (a slow tool call must not hold up
//! a listing); notifications and responses are posted in order, each accepted
//! before the next message goes ([`ACK_TIMEOUT_MS`] at most), so
//! `notifications/initialized` reaches the server before the `tools/list` queued
//! behind it. Around that:
//!
//! - `Mcp-Session-Id` from the `initialize` answer is sent on every later
//!   request; a 404 to a request carrying it means the server ended the session:
//!   the client's own `initialize` is sent again (under an id of its own, its
//!   answer not the client's business), then `notifications/initialized`, and the
//!   message is posted once more in the new session (once: a second 404 fails it);
//! - `MCP-Protocol-Version` carries the version the client negotiated, and from
//!   2026-07-28 on `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*` ([`super::headers`]);
//! - a response stream that ends before its answer is resumed with a GET
//!   carrying `Last-Event-ID`, after the server's `retry:` delay (nothing is
//!   lost: the server replays what followed that id, and nothing is delivered
//!   twice: events before it are not replayed); [`MAX_RECONNECTS`] attempts in a
//!   row without progress give up and fail the request;
//! - once `notifications/initialized` is accepted, the optional GET stream for
//!   server-initiated messages is opened (a 405 means the server has none;
//!   messages wait [`GET_OPEN_WAIT_MS`] at most for its answer, so a server that
//!   routes answers to "the" GET stream finds it open), and reopened the same way;
//! - in 2026-07-28 a `notifications/cancelled` is not POSTed: the stream of
//!   the request it names is closed, which is that revision's cancellation over
//!   HTTP (`closes_stream`);
//! - dropping the connection sends `DELETE` with the session id.

use crate::prelude::*;

use super::headers::{self, LAST_EVENT_ID, SESSION_ID};
use super::port::{Head, Method, Request};
use super::sse::SseParser;
use super::{
    ACCEPT_BOTH, EVENT_STREAM, Exchange, Hold, Outgoing, Post, Purpose, Reading, Reinit,
    RemoteConnection, Timer,
};
use crate::methods;
use crate::remote::port::HttpPort;

/// How long a POST carrying a notification or a response may take to be accepted
/// before the messages behind it go on.
pub const ACK_TIMEOUT_MS: u64 = 30_000;
/// How long the first GET stream may take to be answered before messages go on.
pub const GET_OPEN_WAIT_MS: u64 = 2_000;
/// Reconnection delay when the server gave no `retry:`.
pub const DEFAULT_RETRY_MS: u64 = 1_000;
/// Consecutive failed reconnections after which a stream is given up.
pub const MAX_RECONNECTS: u32 = 5;
/// The first revision in which closing a request's response stream is how a
/// client cancels it over HTTP (instead of posting `notifications/cancelled`).
pub const STREAM_CLOSE_CANCELS: &str = "2026-07-28";

impl<P: HttpPort> RemoteConnection<P> {
    /// Headers every Streamable HTTP request carries: `Accept`, the session,
    /// and the protocol's (for a message, from its metadata).
    fn session_headers(&self, accept: &str, out: Option<&Outgoing>) -> Vec<(String, String)> {
        let mut h = vec![("accept".to_string(), accept.to_string())];
        if let Some(session) = &self.session {
            h.push((SESSION_ID.to_string(), session.clone()));
        }
        let version = match out {
            Some(out) => out.meta.protocol_version.as_deref(),
            None => self.version.as_deref(),
        };
        h.extend(headers::protocol(out.map(|o| &o.meta), version));
        h
    }

    /// Sends what the queue lets go; true if anything was sent.
    pub(super) fn send_queued(&mut self) -> bool {
        if self.kind == super::Kind::LegacySse {
            return self.send_queued_legacy();
        }
        let mut sent = false;
        while self.hold.is_none() && !self.over {
            let Some(out) = self.queue.pop_front() else {
                break;
            };
            if let Some(v) = &out.meta.protocol_version {
                self.version = Some(v.clone());
            }
            if out.meta.method.as_deref() == Some(methods::INITIALIZE) {
                self.initialize = Some(out.clone());
            }
            let request = out.meta.id.is_some();
            let post = Post {
                out,
                stale: None,
                retried: false,
                first: !self.reached,
            };
            if let Some(id) = self.post(post)
                && !request
            {
                // Notifications and responses go in order, each accepted first.
                self.hold = Some(Hold::Ack(id));
                self.at(ACK_TIMEOUT_MS, Timer::Ack(id));
            }
            sent = true;
        }
        sent
    }

    /// A `notifications/cancelled` in the 2026-07-28 revision: over HTTP a
    /// request is cancelled by closing its response stream (the server has no
    /// session to look the id up in, and the reference SDKs drop the
    /// notification), so the stream of the request it names — a tool call, a
    /// `subscriptions/listen`, any other — is closed (or its resumption given
    /// up), and nothing is POSTed. True when the notification was taken so.
    /// Older revisions get the notification POSTed.
    /// Taken at once, not queued: what waits in the queue (behind a
    /// notification the server has not accepted yet, say) must not hold up a
    /// cancellation.
    pub(super) fn closes_stream(&mut self, out: &Outgoing) -> bool {
        let version = out
            .meta
            .protocol_version
            .as_deref()
            .or(self.version.as_deref());
        if self.kind != super::Kind::Streamable
            || out.meta.method.as_deref() != Some(methods::CANCELLED)
            || self.session.is_some()
            || version.is_none_or(|v| v < STREAM_CLOSE_CANCELS)
        {
            return false;
        }
        let Some(request) = serde_json::from_str::<serde_json::Value>(&out.message)
            .ok()
            .and_then(|m| m.pointer("/params/requestId").map(ToString::to_string))
        else {
            return false;
        };
        let streams: Vec<u64> = self
            .exchanges
            .iter()
            .filter(|(_, ex)| match &ex.purpose {
                Purpose::Post(post) => post.out.meta.id.as_deref() == Some(request.as_str()),
                Purpose::Resume { id, .. } => *id == request,
                _ => false,
            })
            .map(|(id, _)| *id)
            .collect();
        for id in streams {
            self.finish(id);
        }
        self.queue
            .retain(|o| o.meta.id.as_deref() != Some(request.as_str()));
        self.timers
            .retain(|(_, t)| !matches!(t, Timer::Resume { id, .. } if *id == request));
        true
    }

    /// POSTs a message in the current session.
    fn post(&mut self, mut post: Post) -> Option<u64> {
        let mut h = self.session_headers(ACCEPT_BOTH, Some(&post.out));
        h.push(("content-type".into(), "application/json".into()));
        post.stale = self.session.clone();
        let request = Request {
            method: Method::Post,
            url: self.target.base().to_string(),
            headers: h,
            body: post.out.message.as_bytes().to_vec(),
        };
        self.start(request, Purpose::Post(post))
    }

    /// The head of a POST (or of a re-initialisation step).
    pub(super) fn on_post_head(&mut self, id: u64, head: Head) {
        if let Some(session) = head.header(SESSION_ID)
            && self.session.as_deref() != Some(session)
        {
            self.session = Some(session.to_string());
        }
        self.release(id);
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        let status = head.status;
        let success = (200..300).contains(&status);
        if let Purpose::Reinit { initialized } = ex.purpose {
            if !initialized && !success {
                self.finish(id);
                return self.end_reinit(Err(format!(
                    "the server ended the session and refused a new one (HTTP {status})"
                )));
            }
            ex.reading = Reading::Discard;
            return;
        }
        let Purpose::Post(post) = &ex.purpose else {
            return;
        };
        let method = post.out.meta.method.as_deref();
        if status == 404
            && post.stale.is_some()
            && method != Some(methods::INITIALIZE)
            && !post.retried
        {
            return self.session_ended(id);
        }
        if success && method == Some(methods::INITIALIZED) && !self.listening {
            self.listening = true;
            if let Some(get) = self.listen(SseParser::new(self.cap), 0) {
                // Open the GET stream before the next message goes out, so that a
                // server which routes answers to "the" GET stream finds it open,
                // and a later GET resuming a response stream is not mistaken for it.
                self.hold = Some(Hold::Open(get));
                self.at(GET_OPEN_WAIT_MS, Timer::Open(get));
            }
        }
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        let media = head.media_type();
        ex.reading = match status {
            202 | 204 => return self.finish(id),
            _ if success && media == EVENT_STREAM => Reading::Events {
                parser: SseParser::new(self.cap),
                answered: false,
                before: None,
            },
            _ if success && media == "application/json" => Reading::Body {
                status,
                buf: Vec::new(),
                over: None,
                cap: self.cap,
            },
            _ if success => {
                let (what, request) = match &ex.purpose {
                    Purpose::Post(p) => (p.out.what(), p.out.meta.id.clone()),
                    _ => return,
                };
                self.finish(id);
                let shown = head.header("content-type").unwrap_or("none").to_string();
                return self.fail(
                    request.as_deref(),
                    format!(
                        "the server answered {what} with content type {shown:?}, not JSON or an event stream"
                    ),
                );
            }
            _ => Reading::Body {
                status,
                buf: Vec::new(),
                over: None,
                cap: super::ERROR_BODY_CAP,
            },
        };
    }

    /// The server answered 404 to a message sent in session `stale`: it ended
    /// the session. Re-initialise once, then send the message again.
    fn session_ended(&mut self, id: u64) {
        let Some(Exchange {
            purpose: Purpose::Post(mut post),
            ..
        }) = self.exchanges.remove(&id)
        else {
            return;
        };
        self.port.close(id);
        post.retried = true;
        if self.session != post.stale {
            // Another message already started a new session.
            self.post(post);
            return;
        }
        if let Some(reinit) = &mut self.reinit {
            reinit.parked.push(post);
            return;
        }
        let stale = post.stale.clone().unwrap_or_default();
        self.note(format!(
            "the server answered 404 to session {stale}; it ended the session: re-initialising"
        ));
        let Some(init) = self.initialize.clone() else {
            let why = "the server ended the session before it was initialised".to_string();
            return self.fail(post.out.meta.id.as_deref(), why);
        };
        self.session = None;
        self.listening = false;
        self.reinit = Some(Reinit { parked: vec![post] });
        self.hold = Some(Hold::Reinit);
        // The client's own `initialize`, under an id of the transport's: its
        // answer is read and dropped.
        let mut message: serde_json::Value = match serde_json::from_str(&init.message) {
            Ok(m) => m,
            Err(e) => return self.end_reinit(Err(format!("re-initialising failed: {e}"))),
        };
        message["id"] = format!("mcpbox-reinitialize-{}", self.replays).into();
        self.replays += 1;
        let replay = Outgoing {
            message: message.to_string(),
            meta: init.meta,
        };
        self.post_reinit(replay, false);
    }

    fn post_reinit(&mut self, out: Outgoing, initialized: bool) {
        let mut h = self.session_headers(ACCEPT_BOTH, Some(&out));
        h.push(("content-type".into(), "application/json".into()));
        let request = Request {
            method: Method::Post,
            url: self.target.base().to_string(),
            headers: h,
            body: out.message.into_bytes(),
        };
        self.start(request, Purpose::Reinit { initialized });
    }

    /// A step of re-initialising finished.
    pub(super) fn on_reinit_step(&mut self, initialized: bool) {
        if initialized {
            return self.end_reinit(Ok(()));
        }
        let out = Outgoing {
            message: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            meta: crate::transport::SendMeta {
                method: Some(methods::INITIALIZED.into()),
                protocol_version: self.version.clone(),
                ..Default::default()
            },
        };
        self.post_reinit(out, true);
    }

    /// Re-initialising is over: the messages that waited go again, or fail.
    pub(super) fn end_reinit(&mut self, outcome: Result<(), String>) {
        let parked = self.reinit.take().map(|r| r.parked).unwrap_or_default();
        if self.hold == Some(Hold::Reinit) {
            self.hold = None;
        }
        match outcome {
            Ok(()) => {
                for post in parked {
                    self.post(post);
                }
            }
            Err(why) => {
                self.note(why.clone());
                for post in parked {
                    if let Some(id) = post.out.meta.id.as_deref() {
                        self.fail(Some(id), why.clone());
                    }
                }
            }
        }
    }

    /// Opens the GET stream for server-initiated messages.
    pub(super) fn listen(&mut self, parser: SseParser, failures: u32) -> Option<u64> {
        let mut h = self.session_headers(EVENT_STREAM, None);
        if let Some(last) = parser.last_event_id() {
            h.push((LAST_EVENT_ID.to_string(), last.to_string()));
        }
        let request = Request {
            method: Method::Get,
            url: self.target.base().to_string(),
            headers: h,
            body: Vec::new(),
        };
        self.start(
            request,
            Purpose::Listen {
                parser: Some(parser),
                failures,
            },
        )
    }

    /// Reopens the GET stream after the server's retry delay, unless it failed
    /// too often.
    pub(super) fn listen_later(&mut self, parser: SseParser, failures: u32) {
        if failures >= MAX_RECONNECTS {
            return self.note("gave up on the GET stream for server-initiated messages".into());
        }
        let delay = parser.retry_ms().unwrap_or(DEFAULT_RETRY_MS);
        self.at(delay, Timer::Listen { parser, failures });
    }

    pub(super) fn on_listen_head(&mut self, id: u64, head: Head) {
        self.release(id);
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        let Purpose::Listen { parser, failures } = &mut ex.purpose else {
            return;
        };
        let failures = *failures;
        let mut parser = parser.take().unwrap_or_else(|| SseParser::new(self.cap));
        if (200..300).contains(&head.status) && head.media_type() == EVENT_STREAM {
            parser.reset_stream();
            let before = parser.last_event_id().map(String::from);
            ex.reading = Reading::Events {
                parser,
                answered: false,
                before,
            };
            return;
        }
        self.finish(id);
        // 405 (or 404): the server offers no GET stream.
        if !matches!(head.status, 404 | 405) {
            self.note(format!("the GET stream was refused: HTTP {}", head.status));
            self.listen_later(parser, failures + 1);
        }
    }

    /// The event stream answering request `id` ended before the answer: resume
    /// it after the server's retry delay, or fail the request.
    pub(super) fn resume_later(&mut self, id: String, parser: SseParser, failures: u32) {
        if parser.last_event_id().is_none() || failures >= MAX_RECONNECTS {
            // No event ids: the stream cannot be resumed.
            let why =
                "the server's event stream ended before it answered, and it could not be resumed";
            return self.fail(Some(&id), why.into());
        }
        let delay = parser.retry_ms().unwrap_or(DEFAULT_RETRY_MS);
        self.at(
            delay,
            Timer::Resume {
                id,
                parser,
                failures,
            },
        );
    }

    /// Resumes request `id`'s event stream with `Last-Event-ID`.
    pub(super) fn resume(&mut self, id: String, parser: SseParser, failures: u32) {
        let mut h = self.session_headers(EVENT_STREAM, None);
        if let Some(last) = parser.last_event_id() {
            h.push((LAST_EVENT_ID.to_string(), last.to_string()));
        }
        let request = Request {
            method: Method::Get,
            url: self.target.base().to_string(),
            headers: h,
            body: Vec::new(),
        };
        self.start(
            request,
            Purpose::Resume {
                id,
                parser: Some(parser),
                failures,
            },
        );
    }

    pub(super) fn on_resume_head(&mut self, id: u64, head: Head) {
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        let Purpose::Resume {
            id: request,
            parser,
            failures,
        } = &mut ex.purpose
        else {
            return;
        };
        let (request, failures) = (request.clone(), *failures);
        let mut parser = parser.take().unwrap_or_else(|| SseParser::new(self.cap));
        if (200..300).contains(&head.status) && head.media_type() == EVENT_STREAM {
            parser.reset_stream();
            let before = parser.last_event_id().map(String::from);
            ex.reading = Reading::Events {
                parser,
                answered: false,
                before,
            };
            return;
        }
        self.finish(id);
        let last = parser.last_event_id().unwrap_or_default().to_string();
        self.note(format!(
            "resuming after event {last:?}: HTTP {}",
            head.status
        ));
        if matches!(head.status, 404 | 405) {
            self.resume_later(request, parser, MAX_RECONNECTS);
        } else {
            self.resume_later(request, parser, failures + 1);
        }
    }

    /// The `DELETE` that ends the session, if there is one.
    pub(super) fn delete_request(&self) -> Option<Request> {
        self.session.as_ref()?;
        Some(Request {
            method: Method::Delete,
            url: self.target.base().to_string(),
            headers: self.session_headers(ACCEPT_BOTH, None),
            body: Vec::new(),
        })
    }
}
