//! Remote servers over HTTP, spoken by the guest itself: Streamable HTTP (MCP
//! 2025-03-26 and later, the stateless 2026-07-28 revision included) and the
//! deprecated HTTP+SSE transport of 2024-11-05.
//!
//! A [`RemoteConnection`] is a state machine over a small non-blocking HTTP
//! port ([`port::HttpPort`]): the component binds the port to
//! `wasi:http/outgoing-handler`, the native tests to in-memory servers on a
//! hand-driven clock. It implements [`Connection`], so the manager drives a
//! remote server exactly as a stdio one: `send` queues a message, `receive`
//! moves the exchanges along and hands over what arrived, `next_deadline` says
//! when a timer of its own (a reconnection delay, a probe) is due.
//!
//! | module | what |
//! |---|---|
//! | [`port`] | the HTTP port: requests, heads, body pieces, errors |
//! | [`target`] | the URL requests go to, references resolved, origins compared |
//! | [`headers`] | MCP's HTTP headers (`Mcp-Session-Id`, `MCP-Protocol-Version`, SEP-2243) |
//! | [`sse`] | the `text/event-stream` parser, with a cap on one event |
//! | [`streamable_http`] | POST per message, sessions, resumption, the GET stream, `DELETE` |
//! | [`legacy_sse`] | one event stream, POSTs to the URL its `endpoint` event names |
//!
//! Rules both transports share, here:
//!
//! - **Only the configured origin.** A URL a server names (a legacy `endpoint`
//!   event, a redirect's `Location`) is followed only when it is on the configured
//!   URL's origin: the host adds the configured headers (credentials) to requests
//!   for that origin alone, and a request for another origin is never sent. Same-
//!   origin `307`/`308` redirects are followed (at most [`MAX_REDIRECTS`]); other
//!   redirects are error statuses. No `Referer` is ever sent.
//! - **Error statuses fail exactly the request they answer**, with the status
//!   and the server's words (or the server's own JSON-RPC error when the body
//!   holds one), as [`TransportError::RequestFailed`]; the connection goes on.
//! - **A server that goes away** closes the connection, as a stdio server's exit
//!   does, so the manager fails the calls in flight, marks the server failed and
//!   restarts it through its backoff. Going away means: an exchange fails below
//!   HTTP and a new connection gets no HTTP answer either: the failed exchange
//!   was itself a connection attempt, or a `HEAD` sent right after it (which the
//!   host sends on a new connection) is refused or dropped unanswered. An HTTP
//!   error status, a slow answer, or a probe that gets any answer (or none
//!   within [`PROBE_TIMEOUT_MS`]) leave the connection open. A server that cannot
//!   be reached at all on the first message closes it the same way.
//! - **Messages over the cap** (the host's `max-message-bytes`) are dropped while
//!   their edges are kept, and the request they answer fails ([`Oversized`]).
//!
//! Every message names the URL as configured (`${VAR}` and all), never a
//! resolved one: the guest does not know resolved values.

use crate::prelude::*;
use alloc::collections::{BTreeMap, VecDeque};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::RpcError;
use crate::transport::oversized::Edges;
use crate::transport::{
    Connection, Diagnostics, Failure, Oversized, SendMeta, TransportError, format_ms,
};

pub mod headers;
pub mod legacy_sse;
pub mod port;
pub mod sse;
pub mod streamable_http;
pub mod target;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use port::{ErrorKind, ExchangeId, Head, HttpError, HttpPort, Method, Progress, Request};
use sse::{SseItem, SseParser};
use target::Target;

/// Messages read ahead of the guest; beyond this, reading pauses.
const INBOUND_QUEUE: usize = 1024;
/// At most this many messages are handed over per `receive`.
const RECEIVE_BATCH: usize = 256;
/// Same-origin redirects followed for one request.
pub const MAX_REDIRECTS: u32 = 5;
/// How long the `HEAD` probe after a broken exchange may take; a probe that is
/// neither answered nor refused in this time proves nothing either way.
pub const PROBE_TIMEOUT_MS: u64 = 5_000;
/// How much of an HTTP error body is read for the error message.
const ERROR_BODY_CAP: usize = 64 * 1024;
/// Diagnostic notes kept (shown as the server's "last stderr").
const NOTES: usize = 20;
/// `Accept` of a POST: a JSON answer or an event stream.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// The event-stream media type.
const EVENT_STREAM: &str = "text/event-stream";

/// Which HTTP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Streamable HTTP.
    Streamable,
    /// The deprecated HTTP+SSE transport.
    LegacySse,
}

/// One message for the server, with what the client said about it.
#[derive(Debug, Clone)]
struct Outgoing {
    message: String,
    meta: SendMeta,
}

impl Outgoing {
    /// For messages: the method, or "a response".
    fn what(&self) -> String {
        self.meta
            .method
            .clone()
            .unwrap_or_else(|| "a response".into())
    }
}

/// One item for the client, in arrival order.
#[derive(Debug)]
enum Item {
    Message(String),
    TooLarge(Oversized),
    Failed { id: String, failure: Failure },
    Closed(String),
}

/// A request in flight and what it is for.
#[derive(Debug)]
struct Exchange {
    /// Kept to send again after a redirect, and to resolve its `Location`.
    request: Request,
    redirects: u32,
    purpose: Purpose,
    reading: Reading,
}

/// What an exchange is for.
#[derive(Debug)]
enum Purpose {
    /// A message, POSTed.
    Post(Post),
    /// The Streamable HTTP GET stream for server-initiated messages.
    Listen {
        parser: Option<SseParser>,
        failures: u32,
    },
    /// A GET resuming the event stream that was to answer request `id`.
    Resume {
        id: String,
        parser: Option<SseParser>,
        failures: u32,
    },
    /// The legacy transport's event stream.
    Stream,
    /// A `HEAD` after an exchange broke below HTTP; `then` runs unless the
    /// probe shows the server gone.
    Probe { then: After },
    /// Re-initialising a session the server ended: the client's `initialize`
    /// replayed, then `notifications/initialized`.
    Reinit { initialized: bool },
}

/// A POSTed message.
#[derive(Debug)]
struct Post {
    out: Outgoing,
    /// The session it was sent in.
    stale: Option<String>,
    /// Already sent again after the session ended.
    retried: bool,
    /// Sent before anything reached the server.
    first: bool,
}

/// Where reading a response is.
#[derive(Debug)]
enum Reading {
    /// No head yet.
    Head,
    /// A body read whole (up to `cap`; beyond, only its edges).
    Body {
        status: u16,
        buf: Vec<u8>,
        over: Option<Edges>,
        cap: usize,
    },
    /// An event stream. `before`: the last event id when it was opened.
    Events {
        parser: SseParser,
        answered: bool,
        before: Option<String>,
    },
    /// Read to the end and ignored.
    Discard,
}

/// What holds the queue of messages: they go out in order behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// A notification or response POSTed, until the server accepts it.
    Ack(ExchangeId),
    /// The first GET stream, until it is answered (or a short wait passes).
    Open(ExchangeId),
    /// A session being re-initialised.
    Reinit,
    /// A legacy POST, until its answer was read.
    Legacy(ExchangeId),
}

/// Work for later, on the port's clock.
#[derive(Debug)]
enum Timer {
    /// Resume request `id`'s event stream.
    Resume {
        id: String,
        parser: SseParser,
        failures: u32,
    },
    /// Reopen the GET stream.
    Listen { parser: SseParser, failures: u32 },
    /// The probe of this exchange took too long: the server is there.
    Probe(ExchangeId),
    /// The server did not accept this notification or response in time.
    Ack(ExchangeId),
    /// Stop waiting for the first GET stream to be answered.
    Open(ExchangeId),
}

/// What to do after a below-HTTP failure, once the server proved to be there.
#[derive(Debug)]
enum After {
    /// Fail request `id` (none: only note it).
    Fail { id: Option<String>, why: String },
    /// Resume request `id`'s event stream.
    Resume {
        id: String,
        parser: SseParser,
        failures: u32,
    },
    /// Reopen the GET stream.
    Listen { parser: SseParser, failures: u32 },
    /// Close the connection.
    Close(String),
}

/// A session being re-initialised: the posts that wait for it.
#[derive(Debug, Default)]
struct Reinit {
    parked: Vec<Post>,
}

/// A connection to a remote server over an [`HttpPort`].
#[derive(Debug)]
pub struct RemoteConnection<P: HttpPort> {
    kind: Kind,
    port: P,
    target: Target,
    cap: usize,
    exchanges: BTreeMap<ExchangeId, Exchange>,
    timers: Vec<(u64, Timer)>,
    queue: VecDeque<Outgoing>,
    hold: Option<Hold>,
    /// Streamable HTTP: the session the server assigned.
    session: Option<String>,
    /// The latest protocol version the client sent with a message.
    version: Option<String>,
    /// The client's `initialize`, replayed when the server ends the session.
    initialize: Option<Outgoing>,
    /// The GET stream for server-initiated messages was started this session.
    listening: bool,
    reinit: Option<Reinit>,
    replays: u64,
    /// Legacy: the URL the `endpoint` event named.
    endpoint: Option<String>,
    /// Some request got an HTTP answer: the server exists.
    reached: bool,
    inbound: VecDeque<Item>,
    /// The connection is over: no more I/O.
    over: bool,
    /// `receive` returned `closed` with this: every later call does too.
    closed: Option<String>,
    diagnostics: Diagnostics,
}

impl<P: HttpPort> RemoteConnection<P> {
    /// A connection to `target` over `port`, reading messages of at most `cap`
    /// bytes. Streamable HTTP sends nothing until the first message; the legacy
    /// transport opens its event stream at once.
    pub fn open(kind: Kind, port: P, target: Target, cap: usize) -> RemoteConnection<P> {
        let mut c = RemoteConnection {
            kind,
            port,
            target,
            cap,
            exchanges: BTreeMap::new(),
            timers: Vec::new(),
            queue: VecDeque::new(),
            hold: None,
            session: None,
            version: None,
            initialize: None,
            listening: false,
            reinit: None,
            replays: 0,
            endpoint: None,
            reached: false,
            inbound: VecDeque::new(),
            over: false,
            closed: None,
            diagnostics: Diagnostics::default(),
        };
        if kind == Kind::LegacySse {
            c.open_stream();
        }
        c
    }

    /// The port, for whoever blocks on its exchanges.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The URL as configured.
    fn url(&self) -> &str {
        self.target.configured()
    }

    /// Keeps a line for diagnostics (shown as the server's "last stderr").
    fn note(&mut self, line: String) {
        let tail = &mut self.diagnostics.stderr_tail;
        if tail.len() == NOTES {
            tail.remove(0);
        }
        tail.push(format!("http: {line}"));
    }

    fn deliver(&mut self, item: Item) {
        if !self.over {
            self.inbound.push_back(item);
        }
    }

    fn deliver_oversized(&mut self, o: Oversized) {
        self.diagnostics.oversized_messages += 1;
        self.deliver(Item::TooLarge(o));
    }

    /// Reports a failed exchange: as request `id`'s failure when it carried a
    /// request, and in the diagnostics.
    fn fail(&mut self, id: Option<&str>, why: String) {
        self.note(why.clone());
        if let Some(id) = id {
            self.deliver(Item::Failed {
                id: id.to_string(),
                failure: Failure::Exchange(why),
            });
        }
    }

    /// Ends the connection with `why`: every exchange is dropped, nothing more
    /// is sent, and `receive` reports `closed` after what arrived before. `why`
    /// is a predicate: the manager says "server `x` {why}".
    fn close(&mut self, why: String) {
        if self.over {
            return;
        }
        self.inbound.push_back(Item::Closed(why));
        self.over = true;
        for id in core::mem::take(&mut self.exchanges).into_keys() {
            self.port.close(id);
        }
        self.timers.clear();
        self.queue.clear();
        self.hold = None;
    }

    /// The server went away: `cause` is how the new connection failed.
    fn gone(&mut self, cause: &str) {
        let why = if self.reached {
            format!(
                "went away: {} cannot be reached any more ({cause})",
                self.url()
            )
        } else {
            format!("could not reach {}: {cause}", self.url())
        };
        self.close(why);
    }

    /// Starts `request` for `purpose`; a request that cannot even start fails
    /// as its exchange would.
    fn start(&mut self, request: Request, purpose: Purpose) -> Option<ExchangeId> {
        if self.over {
            return None;
        }
        match self.port.start(request.clone()) {
            Ok(id) => {
                self.exchanges.insert(
                    id,
                    Exchange {
                        request,
                        redirects: 0,
                        purpose,
                        reading: Reading::Head,
                    },
                );
                Some(id)
            }
            Err(e) => {
                self.on_failed(purpose, None, e);
                None
            }
        }
    }

    fn at(&mut self, delay_ms: u64, timer: Timer) {
        let due = self.port.now_ms().saturating_add(delay_ms);
        self.timers.push((due, timer));
    }

    /// After an exchange failed below HTTP with `e`: the server went away (see
    /// the module docs), or `then` runs. A connection error proves it at once;
    /// any other failure is checked with a `HEAD`.
    fn probe_then(&mut self, e: &HttpError, then: After) {
        if self.over {
            return;
        }
        match e.kind {
            ErrorKind::Connect => self.gone(&e.message),
            ErrorKind::Broken => {
                let request = Request {
                    method: Method::Head,
                    url: self.target.base().to_string(),
                    headers: Vec::new(),
                    body: Vec::new(),
                };
                match self.port.start(request.clone()) {
                    Ok(id) => {
                        self.exchanges.insert(
                            id,
                            Exchange {
                                request,
                                redirects: 0,
                                purpose: Purpose::Probe { then },
                                reading: Reading::Head,
                            },
                        );
                        self.at(PROBE_TIMEOUT_MS, Timer::Probe(id));
                    }
                    Err(_) => self.run(then),
                }
            }
            ErrorKind::Denied | ErrorKind::Other => self.run(then),
        }
    }

    fn run(&mut self, then: After) {
        match then {
            After::Fail { id, why } => self.fail(id.as_deref(), why),
            After::Resume {
                id,
                parser,
                failures,
            } => self.resume_later(id, parser, failures),
            After::Listen { parser, failures } => self.listen_later(parser, failures),
            After::Close(why) => self.close(why),
        }
    }

    /// Moves every exchange along, fires due timers and sends what the queue
    /// lets go, until nothing more happens without waiting. Exchanges go first:
    /// what already arrived counts before a timer that fell due meanwhile (after
    /// a late turn, a probe's answer must not be taken for its timeout).
    fn pump(&mut self) {
        for _ in 0..64 {
            if self.over {
                return;
            }
            let mut progressed = false;
            let ids: Vec<ExchangeId> = self.exchanges.keys().copied().collect();
            for id in ids {
                while self.exchanges.contains_key(&id) {
                    // Read no further ahead of the client than the queue allows.
                    if self.inbound.len() >= INBOUND_QUEUE {
                        break;
                    }
                    match self.port.poll(id) {
                        Progress::Pending => break,
                        Progress::Head(head) => self.on_head(id, head),
                        Progress::Data(bytes) => self.on_data(id, &bytes),
                        Progress::End => self.on_end(id),
                        Progress::Failed(e) => {
                            if let Some(ex) = self.exchanges.remove(&id) {
                                let reading = ex.reading;
                                self.on_failed(ex.purpose, Some((id, reading)), e);
                            }
                        }
                    }
                    progressed = true;
                }
            }
            progressed |= self.fire_timers();
            progressed |= self.send_queued();
            if !progressed {
                return;
            }
        }
    }

    fn fire_timers(&mut self) -> bool {
        let now = self.port.now_ms();
        if !self.timers.iter().any(|(t, _)| *t <= now) {
            return false;
        }
        let (due, later): (Vec<_>, Vec<_>) = core::mem::take(&mut self.timers)
            .into_iter()
            .partition(|(t, _)| *t <= now);
        self.timers = later;
        for (_, timer) in due {
            match timer {
                Timer::Resume {
                    id,
                    parser,
                    failures,
                } => self.resume(id, parser, failures),
                Timer::Listen { parser, failures } => {
                    self.listen(parser, failures);
                }
                Timer::Probe(ex) => {
                    // Neither answered nor refused in time: it proves nothing.
                    if let Some(Exchange {
                        purpose: Purpose::Probe { then, .. },
                        ..
                    }) = self.exchanges.remove(&ex)
                    {
                        self.port.close(ex);
                        self.run(then);
                    }
                }
                Timer::Ack(ex) if self.hold == Some(Hold::Ack(ex)) => {
                    self.hold = None;
                    if let Some(Exchange {
                        purpose: Purpose::Post(post),
                        ..
                    }) = self.exchanges.remove(&ex)
                    {
                        self.port.close(ex);
                        let what = post.out.what();
                        self.note(format!(
                            "the server did not accept {what} within {}",
                            format_ms(streamable_http::ACK_TIMEOUT_MS)
                        ));
                    }
                }
                Timer::Open(ex) if self.hold == Some(Hold::Open(ex)) => self.hold = None,
                Timer::Ack(_) | Timer::Open(_) => {}
            }
        }
        true
    }

    fn on_head(&mut self, id: ExchangeId, head: Head) {
        self.reached = true;
        let follows = self
            .exchanges
            .get(&id)
            .is_some_and(|ex| !matches!(ex.purpose, Purpose::Probe { .. }));
        if follows
            && matches!(head.status, 307 | 308)
            && let Some(location) = head.header("location").map(str::to_string)
        {
            return self.redirect(id, &location, head.status);
        }
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        match &mut ex.purpose {
            Purpose::Probe { .. } => {
                // Answered (any status): it is there.
                if let Some(Exchange {
                    purpose: Purpose::Probe { then, .. },
                    ..
                }) = self.exchanges.remove(&id)
                {
                    self.port.close(id);
                    self.timers
                        .retain(|(_, t)| !matches!(t, Timer::Probe(p) if *p == id));
                    self.run(then);
                }
            }
            Purpose::Stream => self.on_stream_head(id, head),
            Purpose::Listen { .. } => self.on_listen_head(id, head),
            Purpose::Resume { .. } => self.on_resume_head(id, head),
            Purpose::Post(_) if self.kind == Kind::LegacySse => self.on_legacy_post_head(id, head),
            Purpose::Post(_) | Purpose::Reinit { .. } => self.on_post_head(id, head),
        }
    }

    /// Forgets exchange `id` (its answer is not needed).
    fn finish(&mut self, id: ExchangeId) {
        self.exchanges.remove(&id);
        self.port.close(id);
        self.release(id);
    }

    /// The queue may go on if exchange `id` held it (and its timer is moot).
    fn release(&mut self, id: ExchangeId) {
        if matches!(self.hold, Some(Hold::Ack(h) | Hold::Open(h) | Hold::Legacy(h)) if h == id) {
            self.hold = None;
            self.timers
                .retain(|(_, t)| !matches!(t, Timer::Ack(h) | Timer::Open(h) if *h == id));
        }
    }

    /// Exchange `old` goes on as `new` (a redirect): what waited on it waits on `new`.
    fn renumber(&mut self, old: ExchangeId, new: ExchangeId) {
        self.hold = match self.hold {
            Some(Hold::Ack(h)) if h == old => Some(Hold::Ack(new)),
            Some(Hold::Open(h)) if h == old => Some(Hold::Open(new)),
            Some(Hold::Legacy(h)) if h == old => Some(Hold::Legacy(new)),
            other => other,
        };
        for (_, timer) in &mut self.timers {
            match timer {
                Timer::Ack(h) | Timer::Open(h) | Timer::Probe(h) if *h == old => *h = new,
                _ => {}
            }
        }
    }

    /// A same-origin redirect is followed (the same request to the new URL); one
    /// to another origin fails the exchange: nothing goes there.
    fn redirect(&mut self, id: ExchangeId, location: &str, status: u16) {
        let Some(mut ex) = self.exchanges.remove(&id) else {
            return;
        };
        self.port.close(id);
        let what = match &ex.purpose {
            Purpose::Post(post) => post.out.what(),
            _ => format!("the {} request", ex.request.method.as_str()),
        };
        let refused = match self.target.resolve(&ex.request.url, location) {
            Ok(_) if ex.redirects >= MAX_REDIRECTS => Some(format!(
                "the server redirected {what} more than {MAX_REDIRECTS} times"
            )),
            Ok(url) => {
                ex.redirects += 1;
                ex.request.url = url;
                ex.reading = Reading::Head;
                match self.port.start(ex.request.clone()) {
                    Ok(new) => {
                        self.exchanges.insert(new, ex);
                        self.renumber(id, new);
                    }
                    Err(e) => {
                        self.release(id);
                        self.on_failed(ex.purpose, None, e);
                    }
                }
                return;
            }
            Err(Some(elsewhere)) => Some(format!(
                "the server at {} redirected {what} ({status}) to {}, another origin; mcpbox \
                 follows redirects only on the configured origin, so nothing was sent there \
                 (if the server moved, configure its new URL)",
                self.url(),
                elsewhere.origin
            )),
            Err(None) => Some(format!(
                "the server redirected {what} ({status}) to {location:?}, which is not a URL"
            )),
        };
        if let Some(why) = refused {
            self.release(id);
            self.on_refused(ex.purpose, why);
        }
    }

    /// An exchange that ended without its answer, for a reason the server gave
    /// (a refused redirect): its purpose fails as on an error status.
    fn on_refused(&mut self, purpose: Purpose, why: String) {
        match purpose {
            Purpose::Post(post) => {
                let id = post.out.meta.id.clone();
                self.fail(id.as_deref(), why);
            }
            Purpose::Resume { id, .. } => self.fail(Some(&id), why),
            Purpose::Stream => self.close(format!("failed: {why}")),
            Purpose::Reinit { .. } => self.end_reinit(Err(why)),
            Purpose::Listen { .. } | Purpose::Probe { .. } => self.note(why),
        }
    }

    fn on_data(&mut self, id: ExchangeId, bytes: &[u8]) {
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        match &mut ex.reading {
            Reading::Body { buf, over, cap, .. } => match over {
                Some(edges) => edges.push(bytes),
                None if buf.len() + bytes.len() > *cap => {
                    let mut edges = Edges::start(buf);
                    edges.push(bytes);
                    *buf = Vec::new();
                    *over = Some(edges);
                }
                None => buf.extend_from_slice(bytes),
            },
            Reading::Events { parser, .. } => {
                let mut items = Vec::new();
                parser.feed(bytes, &mut items);
                for item in items {
                    self.on_event(id, item);
                }
            }
            Reading::Head | Reading::Discard => {}
        }
    }

    /// One item of an event stream.
    fn on_event(&mut self, id: ExchangeId, item: SseItem) {
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        let request = match &ex.purpose {
            Purpose::Post(post) => post.out.meta.id.clone(),
            Purpose::Resume { id, .. } => Some(id.clone()),
            _ => None,
        };
        let is_stream = matches!(ex.purpose, Purpose::Stream);
        let Reading::Events { answered, .. } = &mut ex.reading else {
            return;
        };
        match item {
            SseItem::Event { event, data } if event == "message" => {
                if data.trim().is_empty() {
                    return; // A priming event: only its id and retry matter.
                }
                if request.as_deref().is_some_and(|r| answers(&data, r)) {
                    *answered = true;
                }
                self.deliver(Item::Message(data));
            }
            SseItem::Event { event, data } if event == "endpoint" && is_stream => {
                self.on_endpoint(&data);
            }
            SseItem::Event { .. } => {}
            SseItem::Oversized(o) => {
                if request.is_some() && o.id() == request {
                    *answered = true;
                }
                self.deliver_oversized(o);
            }
        }
    }

    fn on_end(&mut self, id: ExchangeId) {
        let Some(ex) = self.exchanges.remove(&id) else {
            return;
        };
        self.port.close(id);
        self.release(id);
        match (ex.purpose, ex.reading) {
            (
                Purpose::Post(post),
                Reading::Body {
                    status, buf, over, ..
                },
            ) => {
                self.on_post_body(post, status, buf, over);
            }
            (
                Purpose::Post(post),
                Reading::Events {
                    parser, answered, ..
                },
            ) => {
                if let (Some(request), false) = (post.out.meta.id, answered) {
                    self.resume_later(request, parser, 0);
                }
            }
            (
                Purpose::Resume { id, failures, .. },
                Reading::Events {
                    parser,
                    answered: false,
                    before,
                },
            ) => {
                let failures = next_failures(&parser, before.as_deref(), failures);
                self.resume_later(id, parser, failures);
            }
            (Purpose::Listen { failures, .. }, Reading::Events { parser, before, .. }) => {
                let failures = next_failures(&parser, before.as_deref(), failures);
                self.listen_later(parser, failures);
            }
            (Purpose::Stream, _) => self.close("closed its event stream".into()),
            (Purpose::Reinit { initialized }, _) => self.on_reinit_step(initialized),
            _ => {}
        }
    }

    /// An exchange failed below HTTP. `reading`: how far it had come (none: it
    /// never started).
    fn on_failed(
        &mut self,
        purpose: Purpose,
        reading: Option<(ExchangeId, Reading)>,
        e: HttpError,
    ) {
        if let Some((id, _)) = &reading {
            self.port.close(*id);
            self.release(*id);
        }
        let (started, reading) = match reading {
            Some((_, Reading::Head)) | None => (false, None),
            Some((_, reading)) => (true, Some(reading)),
        };
        match purpose {
            Purpose::Post(post) if self.kind == Kind::LegacySse => {
                let why = format!(
                    "could not reach the message endpoint {} of {}: {e}",
                    target::path_of(self.endpoint.as_deref().unwrap_or_default()),
                    self.url()
                );
                let id = post.out.meta.id;
                self.probe_then(&e, After::Fail { id, why });
            }
            Purpose::Post(post) => {
                let what = post.out.what();
                let id = post.out.meta.id.clone();
                if post.first && !self.reached {
                    // Nothing ever answered: the server is not there.
                    return self.close(format!("could not reach {}: {e}", self.url()));
                }
                let why = match reading {
                    Some(Reading::Events { parser, .. }) => {
                        self.note(format!("an event stream broke: {e}"));
                        if let Some(id) = id {
                            return self.probe_then(
                                &e,
                                After::Resume {
                                    id,
                                    parser,
                                    failures: 0,
                                },
                            );
                        }
                        return self.probe_then(
                            &e,
                            After::Fail {
                                id: None,
                                why: format!("the answer to {what} broke off: {e}"),
                            },
                        );
                    }
                    Some(_) => format!("reading the answer to {what} failed: {e}"),
                    None => format!("could not reach {}: {e}", self.url()),
                };
                if id.is_none() {
                    self.note(why.clone());
                }
                self.probe_then(&e, After::Fail { id, why });
            }
            Purpose::Resume {
                id,
                parser,
                failures,
            } => {
                let parser = match reading {
                    Some(Reading::Events { parser, .. }) => parser,
                    _ => parser.unwrap_or_else(|| SseParser::new(self.cap)),
                };
                let last = parser.last_event_id().unwrap_or_default().to_string();
                self.note(format!("resuming after event {last:?} failed: {e}"));
                self.probe_then(
                    &e,
                    After::Resume {
                        id,
                        parser,
                        failures: failures + 1,
                    },
                );
            }
            Purpose::Listen { parser, failures } => {
                let parser = match reading {
                    Some(Reading::Events { parser, .. }) => parser,
                    _ => parser.unwrap_or_else(|| SseParser::new(self.cap)),
                };
                self.note(format!("the GET stream failed: {e}"));
                self.probe_then(
                    &e,
                    After::Listen {
                        parser,
                        failures: failures + 1,
                    },
                );
            }
            Purpose::Stream if !started => {
                self.close(format!("could not reach {}: {e}", self.url()));
            }
            Purpose::Stream => {
                self.note(format!("the event stream broke: {e}"));
                let why = "closed its event stream".to_string();
                self.probe_then(&e, After::Close(why));
            }
            Purpose::Probe { .. } => {
                // Refused, or accepted and dropped unanswered (a listener closing
                // as its process dies): nothing serves HTTP there.
                if e.kind == ErrorKind::Denied {
                    return;
                }
                self.gone(&e.message);
            }
            Purpose::Reinit { .. } => self.end_reinit(Err(format!("re-initialising failed: {e}"))),
        }
    }

    /// A whole body answering a POST.
    fn on_post_body(&mut self, post: Post, status: u16, buf: Vec<u8>, over: Option<Edges>) {
        let what = post.out.what();
        let id = post.out.meta.id;
        if (200..300).contains(&status) {
            // A legacy POST's answer is only an acknowledgement.
            if self.kind == Kind::LegacySse {
                return;
            }
            match over {
                Some(edges) => {
                    let o = edges.finish(self.cap as u64);
                    self.deliver_oversized(o);
                }
                None => {
                    let text = lossy(buf);
                    if !text.trim().is_empty() {
                        self.deliver(Item::Message(text));
                    }
                }
            }
            return;
        }
        let text = if over.is_some() {
            String::new()
        } else {
            lossy(buf)
        };
        // A refusal for want of an authorization the host could not get: the
        // host's fact says what it means and what to do.
        if matches!(status, 401 | 403)
            && let Some(failure) = self.target.unauthorized()
        {
            // Not a note as well: the failure says it all, and a note would
            // repeat it as the server's "last stderr".
            if let Some(id) = id {
                self.deliver(Item::Failed { id, failure });
            }
            return;
        }
        // An error status. A JSON-RPC error in the body says more than the status.
        if let Some(id) = &id {
            if answers(&text, id) {
                return self.deliver(Item::Message(text));
            }
            if let Some(error) = rpc_error(&text) {
                return self.deliver(Item::Failed {
                    id: id.clone(),
                    failure: Failure::Rpc(error),
                });
            }
        }
        let mut snippet: String = text.trim().chars().take(200).collect();
        if snippet.is_empty() {
            snippet = reason(status).to_string();
        }
        let why = format!("HTTP {status} from the server for {what}: {snippet}");
        self.fail(id.as_deref(), why);
    }
}

impl<P: HttpPort> Connection for RemoteConnection<P> {
    fn send(&mut self, message: &str, meta: &SendMeta) -> Result<(), TransportError> {
        if let Some(why) = &self.closed {
            return Err(TransportError::Closed(why.clone()));
        }
        if !self.over {
            let out = Outgoing {
                message: message.to_string(),
                meta: meta.clone(),
            };
            if self.closes_stream(&out) {
                return Ok(());
            }
            self.queue.push_back(out);
            self.pump();
        }
        Ok(())
    }

    fn receive(&mut self) -> Result<Vec<String>, TransportError> {
        if let Some(why) = &self.closed {
            return Err(TransportError::Closed(why.clone()));
        }
        self.pump();
        let mut messages = Vec::new();
        while messages.len() < RECEIVE_BATCH {
            match self.inbound.front() {
                None => break,
                Some(Item::Message(_)) => {
                    if let Some(Item::Message(m)) = self.inbound.pop_front() {
                        messages.push(m);
                    }
                }
                // What came before an error is delivered first; the error next time.
                Some(_) if !messages.is_empty() => break,
                Some(_) => {
                    return Err(match self.inbound.pop_front() {
                        Some(Item::TooLarge(o)) => TransportError::TooLarge(o),
                        Some(Item::Failed { id, failure }) => {
                            TransportError::RequestFailed { id, failure }
                        }
                        Some(Item::Closed(why)) => {
                            self.closed = Some(why.clone());
                            TransportError::Closed(why)
                        }
                        _ => unreachable!("the front item was not a message"),
                    });
                }
            }
        }
        Ok(messages)
    }

    fn diagnostics(&self) -> Diagnostics {
        self.diagnostics.clone()
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.inbound.is_empty() {
            // Something is waiting to be received: now.
            return Some(self.port.now_ms());
        }
        self.timers.iter().map(|(t, _)| *t).min()
    }
}

impl<P: HttpPort> Drop for RemoteConnection<P> {
    /// Ends a Streamable HTTP session on the server. The `DELETE` is sent and
    /// left to the host: nobody waits for its answer.
    fn drop(&mut self) {
        if self.kind == Kind::Streamable
            && let Some(request) = self.delete_request()
            && let Ok(id) = self.port.start(request)
        {
            self.port.close(id);
        }
    }
}

/// How many failed reconnections in a row: none if the stream made progress
/// (its last event id moved), one more if not.
fn next_failures(parser: &SseParser, before: Option<&str>, failures: u32) -> u32 {
    if parser.last_event_id() == before {
        failures + 1
    } else {
        0
    }
}

/// The parts of a JSON-RPC message the transport looks at.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<&'a RawValue>,
}

/// Whether `text` (a message or a batch) holds the response to request `id`
/// (JSON text).
fn answers(text: &str, id: &str) -> bool {
    let is_answer = |p: &Peek<'_>| p.method.is_none() && p.id.is_some_and(|i| i.get().trim() == id);
    if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<Peek<'_>>>(text).is_ok_and(|batch| batch.iter().any(is_answer))
    } else {
        serde_json::from_str::<Peek<'_>>(text).is_ok_and(|p| is_answer(&p))
    }
}

/// The JSON-RPC error object in an error body, as servers that fail before
/// reading the request send it (`"id": null`).
fn rpc_error(text: &str) -> Option<RpcError> {
    #[derive(Deserialize)]
    struct Body {
        error: RpcError,
    }
    serde_json::from_str::<Body>(text).ok().map(|b| b.error)
}

fn lossy(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// The reason phrase of an error status the server gave no words for.
fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "no reason given",
    }
}
