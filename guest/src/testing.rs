//! An in-memory platform for native tests: scripted MCP servers and a clock that
//! only moves when the code under test blocks.
//!
//! A fake server sees each message the moment the guest sends it and schedules
//! its answers at a time of its choosing; `block` advances the clock straight to
//! the next scheduled answer, deadline or wake-up. Tests therefore run instantly,
//! never sleep, and a "60 s timeout" is exercised exactly.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use crate::transport::{
    Connection, Diagnostics, Endpoint, Oversized, Platform, SendMeta, TransportError, Woken,
};

/// What a fake server emits.
#[derive(Debug, Clone)]
pub enum Output {
    /// One message text.
    Message(String),
    /// A message the "host" dropped for its size.
    TooLarge(Oversized),
    /// The process exits.
    Exit { status: String, stderr: Vec<String> },
}

/// Where a fake server puts its output.
pub struct Out<'a> {
    now: u64,
    scheduled: &'a mut Vec<(u64, Output)>,
}

impl Out<'_> {
    /// Emits `output` after `delay_ms`.
    pub fn at(&mut self, delay_ms: u64, output: Output) {
        self.scheduled.push((self.now + delay_ms, output));
    }

    /// Sends a message after `delay_ms`.
    pub fn later(&mut self, delay_ms: u64, message: Value) {
        self.at(delay_ms, Output::Message(message.to_string()));
    }

    /// Answers request `id` with `result` after `delay_ms`.
    pub fn reply(&mut self, delay_ms: u64, id: &Value, result: Value) {
        self.later(
            delay_ms,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }
}

/// A scripted server.
pub trait Behaviour {
    /// Called with every message the guest sends.
    fn on_message(&mut self, message: &Value, out: &mut Out<'_>);
}

/// The shared state of one fake connection.
pub struct Sim {
    behaviour: Box<dyn Behaviour>,
    scheduled: Vec<(u64, Output)>,
    /// Everything the guest sent, in order.
    pub received: Vec<(Value, SendMeta)>,
    /// The same, as the guest wrote it.
    pub texts: Vec<String>,
    diagnostics: Diagnostics,
    closed: Option<String>,
    /// The guest dropped its connection handle.
    pub dropped: bool,
}

impl Sim {
    /// The messages with this method.
    pub fn sent(&self, method: &str) -> Vec<Value> {
        self.received
            .iter()
            .filter(|(m, _)| m["method"] == method)
            .map(|(m, _)| m.clone())
            .collect()
    }

    fn due(&self, now: u64) -> bool {
        self.closed.is_some() || self.scheduled.iter().any(|(t, _)| *t <= now)
    }

    fn next_time(&self) -> Option<u64> {
        self.scheduled.iter().map(|(t, _)| *t).min()
    }
}

/// A connection to a fake server.
pub struct FakeConn {
    sim: Rc<RefCell<Sim>>,
    clock: Rc<Cell<u64>>,
}

impl Drop for FakeConn {
    fn drop(&mut self) {
        self.sim.borrow_mut().dropped = true;
    }
}

impl Connection for FakeConn {
    fn send(&mut self, message: &str, meta: &SendMeta) -> Result<(), TransportError> {
        let mut sim = self.sim.borrow_mut();
        if let Some(why) = &sim.closed {
            return Err(TransportError::Closed(why.clone()));
        }
        let value: Value = serde_json::from_str(message).expect("the guest sends JSON");
        sim.received.push((value.clone(), meta.clone()));
        sim.texts.push(message.to_string());
        let Sim {
            behaviour,
            scheduled,
            ..
        } = &mut *sim;
        behaviour.on_message(
            &value,
            &mut Out {
                now: self.clock.get(),
                scheduled,
            },
        );
        Ok(())
    }

    fn receive(&mut self) -> Result<Vec<String>, TransportError> {
        let now = self.clock.get();
        let mut sim = self.sim.borrow_mut();
        if let Some(why) = &sim.closed {
            return Err(TransportError::Closed(why.clone()));
        }
        // Stable: outputs due at the same time keep their order.
        sim.scheduled.sort_by_key(|(t, _)| *t);
        let mut messages = Vec::new();
        while sim.scheduled.first().is_some_and(|(t, _)| *t <= now) {
            match &sim.scheduled[0].1 {
                Output::Message(m) => {
                    messages.push(m.clone());
                    sim.scheduled.remove(0);
                }
                // Errors come after the messages that preceded them, as the host does.
                _ if !messages.is_empty() => break,
                Output::TooLarge(o) => {
                    let o = o.clone();
                    sim.scheduled.remove(0);
                    sim.diagnostics.oversized_messages += 1;
                    return Err(TransportError::TooLarge(o));
                }
                Output::Exit { status, stderr } => {
                    let (status, stderr) = (status.clone(), stderr.clone());
                    sim.scheduled.clear();
                    sim.diagnostics.exit_status = Some(status.clone());
                    sim.diagnostics.stderr_tail = stderr;
                    sim.closed = Some(format!("exited ({status})"));
                    return Err(TransportError::Closed(format!("exited ({status})")));
                }
            }
        }
        Ok(messages)
    }

    fn diagnostics(&self) -> Diagnostics {
        self.sim.borrow().diagnostics.clone()
    }
}

type Factory = Box<dyn FnMut() -> Result<Box<dyn Behaviour>, TransportError>>;

/// The in-memory platform.
pub struct FakePlatform {
    clock: Rc<Cell<u64>>,
    factories: BTreeMap<String, Factory>,
    /// Every connection opened, per server, oldest first.
    pub opened: BTreeMap<String, Vec<Rc<RefCell<Sim>>>>,
    /// The endpoints `open` was given.
    pub endpoints: Vec<(String, Endpoint)>,
    /// The wake signal becomes ready at this time.
    pub wake_at: Option<u64>,
    /// How often the guest blocked.
    pub blocks: usize,
    /// What the guest kept with `memo_set` (the host's `state` store).
    pub memo: BTreeMap<String, String>,
    /// The pinned tool definitions the guest had kept (`mcpbox:runtime/pins`),
    /// and whether they are handed back as accepted (`mcpbox trust`).
    pub pins: Option<(String, bool)>,
    /// Whether the pins outlive the runtime, as a host's file keeps them
    /// (`mcpbox:runtime/pins` `kept-across-runs`); true unless a test says not.
    pub pins_kept_across_runs: bool,
    /// What a short-lived manager kept with `keep_server`.
    pub known: BTreeMap<String, crate::client::KnownServer>,
    /// Files the guest had written (`mcpbox:runtime/blobs`): server, name, bytes.
    pub blobs: Vec<(String, String, Vec<u8>)>,
    /// When set, `write_blob` is denied with this reason.
    pub refuse_blobs: Option<String>,
}

impl FakePlatform {
    /// A platform at time 0 with no servers.
    pub fn new() -> FakePlatform {
        FakePlatform {
            clock: Rc::new(Cell::new(0)),
            factories: BTreeMap::new(),
            opened: BTreeMap::new(),
            endpoints: Vec::new(),
            wake_at: None,
            blocks: 0,
            memo: BTreeMap::new(),
            pins: None,
            pins_kept_across_runs: true,
            known: BTreeMap::new(),
            blobs: Vec::new(),
            refuse_blobs: None,
        }
    }

    /// Registers how to make the server of that name; called on every open.
    pub fn serve<B: Behaviour + 'static>(
        &mut self,
        name: &str,
        mut make: impl FnMut() -> B + 'static,
    ) {
        self.factories.insert(
            name.to_string(),
            Box::new(move || Ok(Box::new(make()) as Box<dyn Behaviour>)),
        );
    }

    /// Makes opening that server fail.
    pub fn refuse(&mut self, name: &str, error: TransportError) {
        self.factories
            .insert(name.to_string(), Box::new(move || Err(error.clone())));
    }

    /// The current time.
    pub fn now(&self) -> u64 {
        self.clock.get()
    }

    /// The latest connection to that server.
    pub fn sim(&self, name: &str) -> Rc<RefCell<Sim>> {
        self.opened[name].last().expect("opened").clone()
    }

    /// Makes the latest connection to that server emit `output` after `delay_ms`.
    pub fn emit(&self, name: &str, delay_ms: u64, output: Output) {
        let sim = self.sim(name);
        let now = self.now();
        sim.borrow_mut().scheduled.push((now + delay_ms, output));
    }
}

impl Platform for FakePlatform {
    type Conn = FakeConn;

    fn write_blob(
        &mut self,
        server: &str,
        name: &str,
        _mime_type: &str,
        data: &[u8],
    ) -> Result<crate::transport::Blob, crate::transport::BlobError> {
        if let Some(why) = &self.refuse_blobs {
            return Err(crate::transport::BlobError::Denied(why.clone()));
        }
        let uri = format!("mem://blobs/{}", self.blobs.len());
        self.blobs
            .push((server.to_string(), name.to_string(), data.to_vec()));
        Ok(crate::transport::Blob {
            uri,
            size: data.len() as u64,
        })
    }

    fn open(&mut self, server: &str, endpoint: &Endpoint) -> Result<FakeConn, TransportError> {
        self.endpoints.push((server.to_string(), endpoint.clone()));
        let factory = self
            .factories
            .get_mut(server)
            .ok_or_else(|| TransportError::Unreachable(format!("no fake server `{server}`")))?;
        let behaviour = factory()?;
        let sim = Rc::new(RefCell::new(Sim {
            behaviour,
            scheduled: Vec::new(),
            received: Vec::new(),
            texts: Vec::new(),
            diagnostics: Diagnostics::default(),
            closed: None,
            dropped: false,
        }));
        self.opened
            .entry(server.to_string())
            .or_default()
            .push(sim.clone());
        Ok(FakeConn {
            sim,
            clock: self.clock.clone(),
        })
    }

    fn now_ms(&self) -> u64 {
        self.clock.get()
    }

    /// The fake clock, read as ms after 2026-01-01T00:00:00Z.
    fn wall_clock_ms(&self) -> Option<u64> {
        Some(1_767_225_600_000 + self.clock.get())
    }

    fn memo_get(&self, key: &str) -> Option<String> {
        self.memo.get(key).cloned()
    }

    fn memo_set(&mut self, key: &str, value: &str) {
        self.memo.insert(key.to_string(), value.to_string());
    }

    fn load_pins(&self) -> Option<(String, bool)> {
        self.pins.clone()
    }

    fn save_pins(&mut self, text: &str) {
        self.pins = Some((text.to_string(), false));
    }

    fn pins_kept_across_runs(&self) -> bool {
        self.pins_kept_across_runs
    }

    fn known_server(&self, key: &str) -> Option<crate::client::KnownServer> {
        self.known.get(key).cloned()
    }

    fn keep_server(&mut self, key: &str, known: Option<crate::client::KnownServer>) {
        match known {
            Some(known) => self.known.insert(key.to_string(), known),
            None => self.known.remove(key),
        };
    }

    fn block(&mut self, conns: &[&FakeConn], _now_ms: u64, deadline_ms: u64) -> Woken {
        self.blocks += 1;
        assert!(self.blocks < 100_000, "the guest is spinning in block()");
        let now = self.clock.get();
        let woken = self.wake_at.is_some_and(|w| w <= now);
        if conns.iter().any(|c| c.sim.borrow().due(now)) {
            return if woken { Woken::SignalAndIo } else { Woken::Io };
        }
        if woken {
            return Woken::Signal;
        }
        let next = conns
            .iter()
            .filter_map(|c| c.sim.borrow().next_time())
            .chain(self.wake_at)
            .fold(deadline_ms, u64::min);
        self.clock.set(now.max(next));
        if self.wake_at.is_some_and(|w| w <= self.clock.get()) {
            Woken::Signal
        } else {
            Woken::Io
        }
    }
}

/// What a tool call does on the fake server.
pub type CallHandler = Box<dyn FnMut(&Value, &Value, &mut Out<'_>)>;

/// A scripted MCP server: handshake, paginated tools, calls by handler.
pub struct McpServer {
    /// The protocolVersion it answers with.
    pub version: String,
    /// Whether it declares the tools capability.
    pub tools_capability: bool,
    /// Its tools; shared so a test can change them while it runs.
    pub tools: Rc<RefCell<Vec<Value>>>,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Whether it answers `initialize` at all.
    pub answers_initialize: bool,
    /// Delay before answering `tools/list`.
    pub list_delay: u64,
    /// Handles `tools/call`: (params, id, out).
    pub on_call: CallHandler,
    /// Speaks the stateless 2026-07-28 era: answers `server/discover` and
    /// refuses `initialize`; otherwise `server/discover` is an unknown method.
    pub stateless: bool,
    /// Answers unknown requests with -32601, as servers should (some ignore them).
    pub refuses_unknown: bool,
}

impl McpServer {
    /// A server with tools named `names`, each taking `{"text": string}`, whose
    /// calls echo the text back at once.
    pub fn with_tools(names: &[&str]) -> McpServer {
        let tools = names
            .iter()
            .map(|n| {
                json!({"name": n, "description": format!("the {n} tool"), "inputSchema": {
                    "type": "object", "properties": {"text": {"type": "string"}}
                }})
            })
            .collect();
        McpServer {
            version: "2025-11-25".into(),
            tools_capability: true,
            tools: Rc::new(RefCell::new(tools)),
            page_size: usize::MAX,
            answers_initialize: true,
            list_delay: 0,
            stateless: false,
            refuses_unknown: true,
            on_call: Box::new(|params, id, out| {
                let text = params["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                out.reply(0, id, json!({"content": [{"type": "text", "text": text}]}));
            }),
        }
    }

    /// Replaces the call handler.
    pub fn on_call(
        mut self,
        handler: impl FnMut(&Value, &Value, &mut Out<'_>) + 'static,
    ) -> McpServer {
        self.on_call = Box::new(handler);
        self
    }
}

impl Behaviour for McpServer {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        let id = &m["id"];
        let capabilities = if self.tools_capability {
            json!({"tools": {"listChanged": true}})
        } else {
            json!({})
        };
        match m["method"].as_str() {
            Some("server/discover") if self.stateless => {
                out.reply(
                    0,
                    id,
                    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                        "capabilities": capabilities, "ttlMs": 0, "cacheScope": "public",
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "0.0.2"}}}),
                );
            }
            // The subscription stays open: nothing to send until the list changes.
            Some("subscriptions/listen") if self.stateless => {}
            Some("initialize") if self.stateless => out.later(
                0,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "initialize is gone in 2026-07-28"}}),
            ),
            Some("initialize") if self.answers_initialize => {
                out.reply(
                    0,
                    id,
                    json!({"protocolVersion": self.version, "capabilities": capabilities, "serverInfo": {"name": "fake", "version": "0.0.1"}}),
                );
            }
            Some("tools/list") => {
                let start: usize = m["params"]["cursor"]
                    .as_str()
                    .and_then(|c| c.strip_prefix('p'))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let tools = self.tools.borrow();
                let end = start.saturating_add(self.page_size).min(tools.len());
                let mut result = json!({"tools": tools[start..end]});
                if end < tools.len() {
                    result["nextCursor"] = json!(format!("p{end}"));
                }
                out.reply(self.list_delay, id, result);
            }
            Some("tools/call") => (self.on_call)(&m["params"], id, out),
            Some("ping") => out.reply(0, id, json!({})),
            Some(method) if self.refuses_unknown && !id.is_null() && self.answers_initialize => out.later(
                0,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: {method}")}}),
            ),
            _ => {}
        }
    }
}
