//! An in-memory HTTP port for native tests: scripted servers behind any URL,
//! and a clock that moves only when the test says.
//!
//! A server is a function from a request to a scripted reply (a head, body
//! pieces, an end or a failure, each at a time of its choosing); a test can add
//! to a reply later (an event on a stream kept open). [`Harness::run`] drives a
//! connection the way the manager does — `receive`, then wait for the nearest
//! scripted item or the connection's own deadline — so a "30 s" timeout passes
//! in no time.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use serde_json::Value;

use super::port::{ErrorKind, ExchangeId, Head, HttpError, HttpPort, Progress, Request};
use super::{Kind, RemoteConnection};
use crate::transport::{Connection, SendMeta, TransportError};

/// Where a server puts its reply to one request.
pub struct Reply<'a> {
    now: u64,
    items: &'a mut VecDeque<(u64, Progress)>,
    /// The exchange, for adding to the reply later ([`Net::push`]).
    pub exchange: ExchangeId,
}

impl Reply<'_> {
    /// Adds `item` `delay_ms` from now (after every earlier item).
    pub fn at(&mut self, delay_ms: u64, item: Progress) -> &mut Self {
        self.items.push_back((self.now + delay_ms, item));
        self
    }

    /// The head, at once.
    pub fn head(&mut self, status: u16, headers: &[(&str, &str)]) -> &mut Self {
        let headers = headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), (*v).to_string()))
            .collect();
        self.at(0, Progress::Head(Head { status, headers }))
    }

    /// A piece of body, at once.
    pub fn data(&mut self, bytes: &str) -> &mut Self {
        self.at(0, Progress::Data(bytes.as_bytes().to_vec()))
    }

    /// The end, at once.
    pub fn end(&mut self) -> &mut Self {
        self.at(0, Progress::End)
    }

    /// A JSON answer.
    pub fn json(&mut self, status: u16, body: &Value, headers: &[(&str, &str)]) -> &mut Self {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.head(status, &all).data(&body.to_string()).end()
    }

    /// A failure of `kind`, at once.
    pub fn fail(&mut self, kind: ErrorKind, message: &str) -> &mut Self {
        self.at(0, Progress::Failed(HttpError::new(kind, message)))
    }
}

/// A scripted server.
pub type Server = Box<dyn FnMut(&Request, &mut Reply<'_>)>;

/// The shared state of the fake network.
pub struct Net {
    /// The time, in milliseconds.
    pub clock: u64,
    server: Server,
    exchanges: BTreeMap<ExchangeId, VecDeque<(u64, Progress)>>,
    /// Every request, in order, with its exchange.
    pub requests: Vec<(ExchangeId, Request)>,
    /// Exchanges the connection closed.
    pub closed: BTreeSet<ExchangeId>,
    next: ExchangeId,
}

impl Net {
    /// Adds to exchange `id`'s reply, `delay_ms` from now.
    pub fn push(&mut self, id: ExchangeId, delay_ms: u64, item: Progress) {
        let at = self.clock + delay_ms;
        self.exchanges.entry(id).or_default().push_back((at, item));
    }

    /// The requests whose JSON-RPC method is `method`.
    pub fn posted(&self, method: &str) -> Vec<Request> {
        self.requests
            .iter()
            .filter(|(_, r)| body(r)["method"] == method)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn next_due(&self) -> Option<u64> {
        self.exchanges
            .values()
            .filter_map(|items| items.front().map(|(t, _)| *t))
            .min()
    }
}

/// A request's body as JSON (`null` when it has none).
pub fn body(r: &Request) -> Value {
    serde_json::from_slice(&r.body).unwrap_or(Value::Null)
}

/// The port: a handle on the shared network.
pub struct FakeHttp(pub Rc<RefCell<Net>>);

impl core::fmt::Debug for FakeHttp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FakeHttp")
    }
}

impl HttpPort for FakeHttp {
    fn now_ms(&self) -> u64 {
        self.0.borrow().clock
    }

    fn start(&mut self, request: Request) -> Result<ExchangeId, HttpError> {
        let mut net = self.0.borrow_mut();
        let id = net.next;
        net.next += 1;
        net.requests.push((id, request.clone()));
        let mut items = VecDeque::new();
        let now = net.clock;
        (net.server)(
            &request,
            &mut Reply {
                now,
                items: &mut items,
                exchange: id,
            },
        );
        net.exchanges.insert(id, items);
        Ok(id)
    }

    fn poll(&mut self, id: ExchangeId) -> Progress {
        let mut net = self.0.borrow_mut();
        let now = net.clock;
        let Some(items) = net.exchanges.get_mut(&id) else {
            return Progress::Failed(HttpError::new(ErrorKind::Other, "no such exchange"));
        };
        match items.front() {
            Some((t, _)) if *t <= now => items.pop_front().map_or(Progress::Pending, |(_, p)| p),
            _ => Progress::Pending,
        }
    }

    fn close(&mut self, id: ExchangeId) {
        let mut net = self.0.borrow_mut();
        net.exchanges.remove(&id);
        net.closed.insert(id);
    }
}

/// What `receive` gave.
#[derive(Debug)]
pub enum Got {
    /// A message, parsed.
    Message(Value),
    /// An error.
    Error(TransportError),
}

/// A connection on the fake network.
pub struct Harness {
    /// The network.
    pub net: Rc<RefCell<Net>>,
    /// The connection (dropped by [`Harness::drop_connection`]).
    pub conn: Option<RemoteConnection<FakeHttp>>,
}

impl Harness {
    /// A `kind` connection to `url` served by `server`, with a 1 MB cap.
    pub fn new(kind: Kind, url: &str, server: Server) -> Harness {
        Harness::with_target(kind, super::target::Target::plain(url).unwrap(), server)
    }

    /// A connection to `target`.
    pub fn with_target(kind: Kind, target: super::target::Target, server: Server) -> Harness {
        let net = Rc::new(RefCell::new(Net {
            clock: 0,
            server,
            exchanges: BTreeMap::new(),
            requests: Vec::new(),
            closed: BTreeSet::new(),
            next: 1,
        }));
        let conn = RemoteConnection::open(kind, FakeHttp(net.clone()), target, 1 << 20);
        Harness {
            net,
            conn: Some(conn),
        }
    }

    fn conn(&mut self) -> &mut RemoteConnection<FakeHttp> {
        self.conn.as_mut().expect("connection open")
    }

    /// Sends a message, with the metadata the client would give it.
    pub fn send(&mut self, message: &Value, version: Option<&str>) {
        let meta = SendMeta {
            id: message.get("id").map(Value::to_string),
            method: message
                .get("method")
                .and_then(Value::as_str)
                .map(String::from),
            name: message["params"]["name"].as_str().map(String::from),
            protocol_version: version.map(String::from),
            param_headers: Vec::new(),
        };
        self.send_meta(message, meta);
    }

    /// Sends a message with metadata of the test's making.
    pub fn send_meta(&mut self, message: &Value, meta: SendMeta) {
        let text = message.to_string();
        self.conn()
            .send(&text, &meta)
            .expect("the connection takes messages");
    }

    /// Drives the connection until nothing is due before `until_ms`, returning
    /// what `receive` gave in order.
    pub fn run(&mut self, until_ms: u64) -> Vec<Got> {
        let mut got = Vec::new();
        for _ in 0..10_000 {
            loop {
                match self.conn().receive() {
                    Ok(messages) if messages.is_empty() => break,
                    Ok(messages) => got.extend(
                        messages
                            .iter()
                            .map(|m| Got::Message(serde_json::from_str(m).expect("JSON"))),
                    ),
                    Err(e) => {
                        let closed = matches!(e, TransportError::Closed(_));
                        got.push(Got::Error(e));
                        if closed {
                            return got;
                        }
                    }
                }
            }
            let net_due = self.net.borrow().next_due();
            let next = [net_due, self.conn().next_deadline()]
                .into_iter()
                .flatten()
                .min();
            let now = self.net.borrow().clock;
            match next {
                Some(t) if t <= until_ms => self.net.borrow_mut().clock = t.max(now),
                _ => {
                    self.net.borrow_mut().clock = until_ms.max(now);
                    return got;
                }
            }
        }
        panic!("the connection keeps itself busy");
    }

    /// Drops the connection, as the manager does when it closes a server.
    pub fn drop_connection(&mut self) {
        self.conn = None;
    }

    /// The requests made so far.
    pub fn requests(&self) -> Vec<Request> {
        self.net
            .borrow()
            .requests
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }
}
