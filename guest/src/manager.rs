//! Every configured server at once: start-up, status, calls, events and `wait`.
//!
//! The manager owns one [`Client`] and one connection per server and the shared
//! [`Registry`]. It is fail-soft: a server that cannot start, answers garbage or
//! exits changes only its own status and its own calls. All servers start together
//! and each has its own connect deadline covering open, `initialize` and the full
//! tool listing.
//!
//! `wait` is the only place the guest blocks. It drains every connection, fires
//! expired deadlines and returns as soon as a call completed or an event is queued;
//! otherwise it blocks on every live connection, the nearest deadline and the
//! embedder's wake signal at once (see [`Platform::block`]), so a Store driver that
//! parks the guest in `wait(10 s)` still gets control back the moment it has work.

use crate::prelude::*;
use alloc::collections::BTreeMap;
use core::fmt;

use crate::client::{CallError, CallOptions, Client, ClientEvent, Completion, Phase, Stats};
use crate::config::{self, ConfigIssue, ServerConfig};
use crate::naming;
use crate::registry::{self, Registry, Source, Tool, ToolInfo};
use crate::transport::{Connection, Platform, TransportError, Woken, format_ms};

/// How many `receive` rounds one connection gets per pump, so one chatty server
/// cannot starve the others.
const RECEIVE_ROUNDS: usize = 16;

/// The life cycle of one configured server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Connecting, initialising or listing tools.
    Starting,
    /// Ready: its tools are in the registry.
    Connected,
    /// Could not start or connect, or lost; `error` says why.
    Failed,
    /// Shut down on purpose, disabled, or not started yet.
    Closed,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerState::Starting => "starting",
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::Closed => "closed",
        })
    }
}

/// What the manager knows about one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The configured name.
    pub name: String,
    /// Its state.
    pub state: ServerState,
    /// "stdio", "http" or "sse".
    pub transport: String,
    /// Why it failed (with its last stderr lines), or why it is closed.
    pub error: Option<String>,
    /// Tools it contributes to the registry.
    pub tool_count: u32,
    /// The negotiated protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo.name`.
    pub server_name: Option<String>,
    /// `serverInfo.version`.
    pub server_version: Option<String>,
}

/// A `notifications/message` log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The server that sent it.
    pub server: String,
    /// The MCP log level.
    pub level: String,
    /// The data, as text.
    pub message: String,
}

/// Something that changed, for logs and live displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A server's status changed; its new status.
    Status(ServerStatus),
    /// A server's tool list changed after `notifications/tools/list_changed`.
    ToolsChanged(String),
    /// A collision, a skipped tool, an ignored message.
    Warning(String),
    /// A server's log line.
    Log(LogEntry),
}

struct Slot<C> {
    config: ServerConfig,
    state: ServerState,
    error: Option<String>,
    conn: Option<C>,
    client: Option<Client>,
    /// When a starting server must be connected by.
    connect_deadline: Option<u64>,
    /// Its tools, named and compiled; empty unless connected.
    tools: Vec<Tool>,
    /// The status last reported in an event, to report changes only.
    reported: Option<ServerStatus>,
}

/// All servers of one configuration.
pub struct Manager<P: Platform> {
    platform: P,
    origin: String,
    slots: Vec<Slot<P::Conn>>,
    registry: Registry,
    /// Calls in flight → the slot that runs them.
    calls: BTreeMap<u64, usize>,
    next_call: u64,
    completions: Vec<Completion>,
    events: Vec<Event>,
}

impl<P: Platform> fmt::Debug for Manager<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("origin", &self.origin)
            .field("servers", &self.servers())
            .field("tools", &self.registry.len())
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

/// How a lost connection is described, from the transport's own account.
fn lost_message<C: Connection>(
    server: &str,
    conn: Option<&C>,
    error: &TransportError,
    starting: bool,
) -> String {
    let diagnostics = conn.map(Connection::diagnostics).unwrap_or_default();
    let how = match (&diagnostics.exit_status, error) {
        (Some(status), _) => format!("server `{server}` exited ({status})"),
        (None, TransportError::Closed(why)) => {
            format!("server `{server}` closed the connection ({why})")
        }
        (None, other) => format!("server `{server}` lost its connection ({other})"),
    };
    let when = if starting {
        " before it finished connecting"
    } else {
        ""
    };
    format!("{how}{when}{}", diagnostics.stderr_suffix())
}

impl<P: Platform> Manager<P> {
    /// A manager with no configuration.
    pub fn new(platform: P) -> Manager<P> {
        Manager {
            platform,
            origin: String::new(),
            slots: Vec::new(),
            registry: Registry::new(),
            calls: BTreeMap::new(),
            next_call: 1,
            completions: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The platform, for embedders and tests that drive it.
    pub fn platform(&self) -> &P {
        &self.platform
    }

    /// The platform, mutably.
    pub fn platform_mut(&mut self) -> &mut P {
        &mut self.platform
    }

    /// Replaces the configuration, shutting down running servers first. On `Err`
    /// (text that is not a JSON object) nothing changes.
    pub fn load_config(&mut self, origin: &str, text: &str) -> Result<Vec<ConfigIssue>, String> {
        let parsed = config::parse(origin, text)?;
        self.shutdown();
        self.origin = origin.to_string();
        self.slots = parsed
            .servers
            .into_iter()
            .map(|config| Slot {
                state: ServerState::Closed,
                error: (!config.enabled).then(|| "disabled in configuration".to_string()),
                config,
                conn: None,
                client: None,
                connect_deadline: None,
                tools: Vec::new(),
                reported: None,
            })
            .collect();
        // Loading is not a state change: statuses are reported from `start` on.
        for slot in &mut self.slots {
            slot.reported = Some(status_of(slot, &self.registry));
        }
        self.rebuild_registry();
        Ok(parsed.issues)
    }

    /// Starts every enabled server that is not already starting or connected.
    pub fn start(&mut self) {
        let now = self.platform.now_ms();
        for i in 0..self.slots.len() {
            let slot = &self.slots[i];
            if !slot.config.enabled
                || matches!(slot.state, ServerState::Starting | ServerState::Connected)
            {
                continue;
            }
            let opened = self.platform.open(&slot.config.name, &slot.config.endpoint);
            let slot = &mut self.slots[i];
            slot.tools.clear();
            match opened {
                Ok(conn) => {
                    let mut client = Client::new(&slot.config.name);
                    client.begin();
                    slot.conn = Some(conn);
                    slot.client = Some(client);
                    slot.state = ServerState::Starting;
                    slot.error = None;
                    slot.connect_deadline =
                        Some(now.saturating_add(slot.config.startup_timeout_ms));
                    self.flush(i);
                }
                Err(e) => {
                    slot.client = None;
                    slot.state = ServerState::Failed;
                    slot.error = Some(format!(
                        "server `{}` could not be started ({} transport): {e}",
                        slot.config.name,
                        slot.config.endpoint.kind()
                    ));
                }
            }
        }
        self.sync_statuses();
    }

    /// Every configured server, in configuration order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.slots
            .iter()
            .map(|s| status_of(s, &self.registry))
            .collect()
    }

    /// Every tool, ordered by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.registry.tools()
    }

    /// Ignored-message counters of a server's current session.
    pub fn server_stats(&self, server: &str) -> Option<Stats> {
        self.slots
            .iter()
            .find(|s| s.config.name == server)
            .and_then(|s| s.client.as_ref())
            .map(Client::stats)
    }

    /// Starts a call. Errors known at once return here; the result arrives
    /// through [`Manager::wait`].
    pub fn start_call(
        &mut self,
        tool: &str,
        arguments: &str,
        options: CallOptions,
    ) -> Result<u64, CallError> {
        let Some(info) = self.registry.get(tool).cloned() else {
            return Err(self.missing_tool(tool));
        };
        let arguments = self
            .registry
            .check_arguments(tool, arguments)
            .map_err(CallError::InvalidArguments)?;
        let Some(i) = self.slots.iter().position(|s| s.config.name == info.server) else {
            return Err(CallError::UnknownTool(format!("no tool named `{tool}`")));
        };
        let now = self.platform.now_ms();
        let slot = &mut self.slots[i];
        let (ServerState::Connected, Some(client)) = (slot.state, slot.client.as_mut()) else {
            return Err(unavailable(tool, slot));
        };
        let call = self.next_call;
        self.next_call += 1;
        let timeout_ms = options.timeout_ms.unwrap_or(slot.config.tool_timeout_ms);
        client.start_call(call, &info.name, &info.tool, &arguments, timeout_ms, now);
        self.calls.insert(call, i);
        self.flush(i);
        self.process(i);
        self.sync_statuses();
        Ok(call)
    }

    /// An unknown name may belong to a server that is not connected: say so, since
    /// "no such tool" would send the caller looking in the wrong place.
    fn missing_tool(&self, tool: &str) -> CallError {
        let owner = self.slots.iter().find(|s| {
            s.state != ServerState::Connected
                && tool.starts_with(&naming::prefix(s.config.name_segment()))
        });
        match owner {
            Some(slot) => unavailable(tool, slot),
            None => CallError::UnknownTool(format!(
                "no tool named `{tool}` ({} tools available)",
                self.registry.len()
            )),
        }
    }

    /// Cancels a call in flight; it completes with `cancelled`. Unknown or
    /// finished calls are ignored.
    pub fn cancel(&mut self, call: u64) {
        let Some(&i) = self.calls.get(&call) else {
            return;
        };
        if let Some(client) = self.slots[i].client.as_mut() {
            client.cancel(call);
        }
        self.flush(i);
        self.process(i);
        self.sync_statuses();
    }

    /// Drives every connection until a call completes, an event is queued, the
    /// wake signal is ready or `timeout_ms` passes. Returns the completed calls.
    pub fn wait(&mut self, timeout_ms: u64) -> Vec<Completion> {
        let until = self.platform.now_ms().saturating_add(timeout_ms);
        loop {
            self.pump();
            if !self.completions.is_empty() || !self.events.is_empty() {
                break;
            }
            let now = self.platform.now_ms();
            if now >= until {
                break;
            }
            let deadline = self.next_deadline().map_or(until, |d| d.min(until));
            let conns: Vec<&P::Conn> = self.slots.iter().filter_map(|s| s.conn.as_ref()).collect();
            if self.platform.block(&conns, deadline) == Woken::Signal {
                // Take whatever arrived together with the wake-up before returning.
                self.pump();
                break;
            }
        }
        core::mem::take(&mut self.completions)
    }

    /// Takes the events queued since the last call.
    pub fn events(&mut self) -> Vec<Event> {
        core::mem::take(&mut self.events)
    }

    /// Closes every connection; calls in flight complete with `server-unavailable`.
    pub fn shutdown(&mut self) {
        for i in 0..self.slots.len() {
            let slot = &mut self.slots[i];
            if let Some(client) = slot.client.as_mut() {
                let message = format!("server `{}` was shut down", slot.config.name);
                client.abort_calls(|_| CallError::ServerUnavailable(message.clone()));
            }
            self.process(i);
            let slot = &mut self.slots[i];
            slot.conn = None;
            slot.connect_deadline = None;
            slot.tools.clear();
            if matches!(slot.state, ServerState::Starting | ServerState::Connected) {
                slot.state = ServerState::Closed;
                slot.error = None;
            }
        }
        self.rebuild_registry();
        self.sync_statuses();
    }

    fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .flat_map(|s| {
                [
                    s.connect_deadline,
                    s.client.as_ref().and_then(Client::next_deadline),
                ]
            })
            .flatten()
            .min()
    }

    /// One round over every connection: receive, process, fire deadlines, send.
    fn pump(&mut self) {
        for i in 0..self.slots.len() {
            self.drive(i);
        }
        self.sync_statuses();
    }

    fn drive(&mut self, i: usize) {
        let now = self.platform.now_ms();
        let slot = &mut self.slots[i];
        let (Some(conn), Some(client)) = (slot.conn.as_mut(), slot.client.as_mut()) else {
            return;
        };
        let mut lost = None;
        for _ in 0..RECEIVE_ROUNDS {
            match conn.receive() {
                Ok(messages) if messages.is_empty() => break,
                Ok(messages) => {
                    for m in &messages {
                        client.handle_text(m, now);
                    }
                }
                // One dropped message; the connection goes on.
                Err(TransportError::TooLarge(o)) => client.handle_oversized(&o),
                Err(e) => {
                    lost = Some(e);
                    break;
                }
            }
        }
        client.tick(now);
        // Messages that arrived before the connection closed are handled first;
        // sending to a closed connection would only blur why it was lost.
        if lost.is_none() {
            self.flush(i);
        }
        self.process(i);
        if let Some(e) = lost {
            self.connection_lost(i, &e);
        }
        let slot = &self.slots[i];
        if slot.state == ServerState::Starting && slot.connect_deadline.is_some_and(|d| now >= d) {
            let diagnostics = slot
                .conn
                .as_ref()
                .map(Connection::diagnostics)
                .unwrap_or_default();
            let message = format!(
                "server `{}` did not finish connecting within {}{}",
                slot.config.name,
                format_ms(slot.config.startup_timeout_ms),
                diagnostics.stderr_suffix()
            );
            self.fail(i, message);
        }
    }

    /// Sends everything the client queued.
    fn flush(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let (Some(conn), Some(client)) = (slot.conn.as_mut(), slot.client.as_mut()) else {
            return;
        };
        let mut lost = None;
        for out in client.take_outbox() {
            if let Err(e) = conn.send(&out.text, &out.meta) {
                lost = Some(e);
                break;
            }
        }
        if let Some(e) = lost {
            self.connection_lost(i, &e);
        }
    }

    /// Acts on what the client reported.
    fn process(&mut self, i: usize) {
        let Some(client) = self.slots[i].client.as_mut() else {
            return;
        };
        let events = client.take_events();
        let server = self.slots[i].config.name.clone();
        for event in events {
            match event {
                ClientEvent::Ready(defs) => {
                    self.set_tools(i, defs);
                    let slot = &mut self.slots[i];
                    slot.state = ServerState::Connected;
                    slot.connect_deadline = None;
                    self.rebuild_registry();
                }
                ClientEvent::ToolsChanged(defs) => {
                    if self.slots[i].state == ServerState::Connected {
                        self.set_tools(i, defs);
                        self.rebuild_registry();
                        self.events.push(Event::ToolsChanged(server.clone()));
                    }
                }
                ClientEvent::Failed(message) => {
                    let suffix = self.slots[i]
                        .conn
                        .as_ref()
                        .map(|c| c.diagnostics().stderr_suffix())
                        .unwrap_or_default();
                    self.fail(i, format!("{message}{suffix}"));
                }
                ClientEvent::Completed(c) => {
                    self.calls.remove(&c.call);
                    self.completions.push(c);
                }
                ClientEvent::Log { level, message } => self.events.push(Event::Log(LogEntry {
                    server: server.clone(),
                    level,
                    message,
                })),
                ClientEvent::Warning(w) => self.events.push(Event::Warning(w)),
            }
        }
    }

    fn set_tools(&mut self, i: usize, defs: Vec<registry::ToolDef>) {
        let slot = &mut self.slots[i];
        let (tools, warnings) =
            registry::prepare(&slot.config.name, slot.config.name_segment(), defs);
        slot.tools = tools;
        self.events.extend(warnings.into_iter().map(Event::Warning));
    }

    fn connection_lost(&mut self, i: usize, error: &TransportError) {
        let slot = &self.slots[i];
        if slot.conn.is_none() {
            return;
        }
        let starting = slot.state == ServerState::Starting;
        let message = lost_message(&slot.config.name, slot.conn.as_ref(), error, starting);
        self.fail(i, message);
    }

    /// Marks a server failed: its connection is dropped, its calls complete with
    /// `server-unavailable`, its tools leave the registry.
    fn fail(&mut self, i: usize, message: String) {
        let slot = &mut self.slots[i];
        if let Some(client) = slot.client.as_mut() {
            client.abort_calls(|_| CallError::ServerUnavailable(message.clone()));
        }
        slot.state = ServerState::Failed;
        slot.error = Some(message);
        slot.conn = None;
        slot.connect_deadline = None;
        slot.tools.clear();
        self.process(i);
        self.rebuild_registry();
    }

    fn rebuild_registry(&mut self) {
        let sources: Vec<Source<'_>> = self
            .slots
            .iter()
            .filter(|s| s.state == ServerState::Connected)
            .map(|s| Source {
                server: &s.config.name,
                tools: &s.tools,
            })
            .collect();
        let warnings = self.registry.rebuild(&sources);
        self.events.extend(warnings.into_iter().map(Event::Warning));
    }

    /// Queues a status event for every server whose status changed.
    fn sync_statuses(&mut self) {
        for slot in &mut self.slots {
            let now = status_of(slot, &self.registry);
            if slot.reported.as_ref() != Some(&now) {
                slot.reported = Some(now.clone());
                self.events.push(Event::Status(now));
            }
        }
    }
}

fn status_of<C>(slot: &Slot<C>, registry: &Registry) -> ServerStatus {
    let client = slot.client.as_ref();
    let info = client.map(Client::server_info);
    ServerStatus {
        name: slot.config.name.clone(),
        state: slot.state,
        transport: slot.config.endpoint.kind().to_string(),
        error: slot.error.clone(),
        tool_count: registry.count_for(&slot.config.name),
        protocol_version: client.and_then(|c| c.protocol_version().map(String::from)),
        server_name: info.and_then(|i| i.name.clone()),
        server_version: info.and_then(|i| i.version.clone()),
    }
}

fn unavailable<C>(tool: &str, slot: &Slot<C>) -> CallError {
    let state = match (slot.state, slot.client.as_ref().map(Client::phase)) {
        (ServerState::Starting, Some(Phase::Listing)) => "still listing its tools".to_string(),
        (ServerState::Starting, _) => "still starting".to_string(),
        (state, _) => state.to_string(),
    };
    let why = slot
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    CallError::ServerUnavailable(format!(
        "{tool} is unavailable: server `{}` is {state}{why}",
        slot.config.name
    ))
}

#[cfg(test)]
mod tests;
