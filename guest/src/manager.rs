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
//!
//! # Restarts
//!
//! A server that exits or drops its connection fails every call in flight on it at
//! once, with the reason (`server `fx` exited (exit code 3)` and its last stderr
//! lines), and becomes `failed`. Its last tool list is kept on its slot, out of the
//! registry: [`Manager::tools`] does not offer tools that cannot run, but
//! [`Manager::start_call`] still recognises them (never "unknown tool"), checks the
//! arguments against the kept schema, and restarts the server:
//!
//! - A *failure* is a lost connection or a failed connect (refused open, failed
//!   handshake, connect timeout). Failures in a row are counted; the count goes back
//!   to 0 when a call on the server gets any JSON-RPC answer, on [`Manager::reconnect`]
//!   and on [`Manager::load_config`]. Connecting alone does not reset it, so a server
//!   that crashes on every call still runs out of restarts.
//! - After failure *n* a restart is allowed [`backoff_ms`]`(n)` later: 1 s, doubling,
//!   at most 30 s. A call before then fails at once with `server-unavailable` saying
//!   how long to wait. A call after then reopens the connection and is *held*, not
//!   sent, until the server is connected again (calls arriving meanwhile are held
//!   too); it fails with `server-unavailable` if connecting fails or its own timeout
//!   passes first, and is re-checked against the fresh tool list before it is sent.
//! - After [`CIRCUIT_THRESHOLD`] failures in a row the circuit is open: calls fail at
//!   once and nothing restarts the server until `reconnect` or a configuration reload.
//!
//! Nothing restarts a server on a timer: restarts follow calls, so an idle broken
//! server costs nothing. A server that never connected has no tool list to recognise
//! calls by and stays failed until `reconnect` or a reload. A server's count of
//! failures and its backoff are kept in `restarts`.
//!
//! A call the server runs as a task is the exception on [`Manager::reconnect`]:
//! the task lives on the server, so its call is handed to the next connection,
//! whose client polls it once connected (see `client::tasks`); a connection
//! that fails first ends it as it ends held calls. A lost connection still ends
//! it with the others: nothing reconnects on a timer.
//!
//! # Input requests
//!
//! With [`Manager::enable_input_requests`], servers may ask for input during a call
//! (see [`crate::elicitation`]). Each request is an [`Event::InputRequested`] with an
//! id unique in this manager, answered with [`Manager::answer_input`]; a request
//! that no longer needs an answer (its call finished, timed out or was cancelled,
//! its server went away) is an [`Event::InputWithdrawn`]. A call waiting for input
//! stays a call in flight: `wait` keeps driving it and its timeout keeps running.
//!
//! With [`Manager::enable_sampling`], servers may ask the embedder's model for a
//! message the same way (see [`crate::sampling`]): an [`Event::InputRequested`]
//! with `sampling` set, answered with a `CreateMessageResult`.
//!
//! # Approvals
//!
//! A call to a tool an `ask` permission rule covers waits for an approval, asked
//! of the embedder as an input request (see `approvals`).
//!
//! # State
//!
//! Each concept keeps its state in a struct beside its methods, owned by the
//! manager: the calls in flight (their handles, their slots, what their end
//! needs) in `calls`, the registry (rebuilt when stale, and its adapted forms)
//! in `published`, input requests in `inputs`, approvals in `approvals`, the
//! permission rules and the settings files they came from in `permissions`, a
//! server's failures and backoff in `restarts` (one per server), roots in
//! `roots`, the audit trail's settings and each call's end in `finished`, call
//! counts in `call_counts`, requests beyond tools in `request`.

use crate::prelude::*;
use alloc::collections::BTreeMap;
use core::fmt;

use crate::client::{
    CallError, CallOptions, CallResult, Client, ClientEvent, Era, FinishedCall, Phase, Progress,
    Stats,
};
use crate::config::{self, ConfigIssue, ServerConfig};
use crate::elicitation::{InputAnswer, InputRequest};
use crate::naming;
use crate::permissions::{Decision, Rule};
use crate::registry::{self, Registry, Source, Standing, Tool, ToolInfo};
use crate::roots::Root;
use crate::transport::{Connection, Endpoint, Platform, TransportError, Woken, format_ms};
use alloc::rc::Rc;
use serde_json::value::RawValue;

/// How many `receive` calls one connection gets per pump: they go on past the
/// failures that come one at a time (a dropped message, a failed request) and
/// stop at the first batch of messages, so one chatty server cannot starve the
/// others.
const RECEIVE_ROUNDS: usize = 16;

pub use restarts::{BACKOFF_BASE_MS, BACKOFF_CAP_MS, CIRCUIT_THRESHOLD, backoff_ms};
use restarts::{Gate, Restarts, format_wait};

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
    /// A server asks for input; answer with [`Manager::answer_input`].
    InputRequested(InputRequest),
    /// The input request of this id needs no answer any more.
    InputWithdrawn(u64),
    /// A call ended (or was refused): what the rules decided and how it went.
    /// Only queued when audit events are on ([`EmbedderOptions::audit`]).
    Audit(crate::audit::AuditRecord),
    /// A server reported progress on a call. Not part of the `registry` export's
    /// events: the gateway passes it to the downstream client that made the call.
    Progress(Progress),
    /// A resource followed with [`Request::Subscribe`](crate::client::Request)
    /// changed (`notifications/resources/updated`).
    ResourceUpdated(ResourceUpdate),
    /// A server's resource list changed (`notifications/resources/list_changed`).
    ResourcesChanged(String),
    /// A server's prompt list changed (`notifications/prompts/list_changed`).
    PromptsChanged(String),
    /// A call ended (or was refused), counted: only queued when call counts are
    /// on ([`Manager::enable_call_counts`]).
    CallCounted(call_counts::CallCount),
    /// A call its server runs as a task changed status: the server's name and
    /// the status.
    TaskStatus(String, crate::client::TaskStatus),
    /// A tool no longer matches the definition pinned when it was first seen
    /// (see [`pins`]); its server's `onToolChange` decided what happens to it.
    ToolChanged(pins::ToolChange),
}

/// A tool of a server's list that the permission rules keep out of the registry.
#[derive(Debug, Clone)]
struct DeniedTool {
    /// The rule that denies it.
    rule: Rc<Rule>,
    /// Its own name on its server.
    own: String,
}

/// A subscribed resource that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUpdate {
    /// The server that sent it.
    pub server: String,
    /// The resource's URI, as the server knows it.
    pub uri: String,
}

struct Slot<C> {
    config: ServerConfig,
    state: ServerState,
    /// Why it failed (or is closed), without the restart advice `status_of` adds.
    error: Option<String>,
    conn: Option<C>,
    client: Option<Client>,
    /// When a starting server must be connected by.
    connect_deadline: Option<u64>,
    /// Its last tool list, named and compiled. In the registry while connected;
    /// kept after the connection is lost so calls to them are still recognised
    /// (and restart it). Empty until it first connects; cleared by `shutdown`.
    tools: Vec<Rc<Tool>>,
    /// Calls waiting for it to (re)connect, oldest first.
    held: Vec<Held>,
    /// Tools of its last list that the permission rules deny, by registry name:
    /// not in the registry, refused by name when called.
    denied: BTreeMap<String, DeniedTool>,
    /// Tools of its last list held back by `onToolChange: "block"`, by registry
    /// name: not in the registry, refused by name when called (see [`pins`]).
    blocked: BTreeMap<String, pins::ToolChange>,
    /// Tools of its last list whose calls ask first, by `onToolChange: "ask"`,
    /// by their own names.
    asking: BTreeMap<String, pins::ToolChange>,
    /// Its tools are the first list it had, offered before they were pinned;
    /// they are pinned in the next turn ([`Manager::pin_first_list`]).
    unpinned: bool,
    /// Its failures in a row, which decide when a call may restart it.
    restarts: Restarts,
    /// The status last reported in an event, to report changes only.
    reported: Option<Reported>,
    /// The resources followed on it: kept across its sessions, so a restarted
    /// server is subscribed again (see `client::subscriptions`).
    subscriptions: alloc::collections::BTreeSet<String>,
    /// The calls running as tasks on its previous connection, handed to the
    /// next one's client once it is ready (see [`Manager::reconnect`]).
    handed: crate::client::HandedTasks,
}

/// A status as last reported, with what it was computed from that it does not
/// show as such, so that an unchanged status is recognised without building it.
struct Reported {
    status: ServerStatus,
    /// `Slot::error` (the status adds restart advice to it).
    error: Option<String>,
    failures: u32,
    restartable: bool,
}

impl Reported {
    fn now<C>(slot: &Slot<C>, registry: &Registry) -> Reported {
        Reported {
            status: status_of(slot, registry),
            error: slot.error.clone(),
            failures: slot.restarts.failures,
            restartable: slot.restartable(),
        }
    }
}

/// A call waiting for its server to reconnect.
struct Held {
    call: u64,
    /// The registry name.
    name: String,
    /// Checked arguments, a JSON object.
    arguments: Box<RawValue>,
    timeout_ms: u64,
    /// The call fails if its server is not connected by then.
    deadline_ms: u64,
    /// The caller's options ([`CallOptions::log_level`], [`CallOptions::task`],
    /// [`CallOptions::caller`]).
    options: CallOptions,
}

impl<C> Slot<C> {
    fn new(config: ServerConfig) -> Slot<C> {
        Slot {
            state: ServerState::Closed,
            error: (!config.enabled).then(|| "disabled in configuration".to_string()),
            config,
            conn: None,
            client: None,
            connect_deadline: None,
            tools: Vec::new(),
            held: Vec::new(),
            denied: BTreeMap::new(),
            blocked: BTreeMap::new(),
            asking: BTreeMap::new(),
            unpinned: false,
            restarts: Restarts::default(),
            reported: None,
            subscriptions: alloc::collections::BTreeSet::new(),
            handed: crate::client::HandedTasks::default(),
        }
    }

    /// A failed server that calls can restart: it has a tool list to recognise
    /// them by.
    fn restartable(&self) -> bool {
        self.state == ServerState::Failed && !self.tools.is_empty()
    }
}

/// All servers of one configuration.
pub struct Manager<P: Platform> {
    platform: P,
    origin: String,
    /// The tool definitions pinned when first seen (see [`pins`]).
    pins: pins::Pins,
    slots: Vec<Slot<P::Conn>>,
    /// The registry, whether it waits for a rebuild, and its adaptations (see
    /// `published`).
    registry: published::Published,
    /// Calls in flight: their handles, their slots, what their end needs (see
    /// `calls`).
    calls: calls::Calls,
    finished: Vec<FinishedCall>,
    events: Vec<Event>,
    /// Input requests: what servers are offered, what waits for an answer (see
    /// "Input requests").
    input: inputs::Inputs,
    /// The permission rules and what they were built from (see `permissions`).
    rules: permissions::Rules,
    /// The gateway serves this registry ([`Manager::serve_downstream`]).
    serving: bool,
    /// The manager lives for one exchange ([`Manager::short_lived`]).
    short_lived: bool,
    /// Approvals of calls `ask` rules cover (see "Approvals").
    approvals: approvals::Approvals,
    /// How results are limited (the configuration's `output`, the embedder's
    /// overrides).
    output: crate::output::Settings,
    /// The keys of [`Event::CallCounted`], once counts are on.
    call_counts: Option<call_counts::CallCounts>,
    /// The audit trail's settings (see `finished`).
    audit: finished::Audit,
    /// The embedder's overrides, kept across configuration loads.
    options: EmbedderOptions,
    /// Requests beyond tools in flight (see `requests`).
    requests: request::Requests,
    /// The roots servers get (see `roots`).
    roots: roots::Roots,
    /// Instants (ms) to be woken at: timers of the gateway ([`Manager::wake_at`]).
    wakes: alloc::collections::BTreeSet<u64>,
}

/// What the embedder sets over the configuration (`registry.set-options`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedderOptions {
    /// Overrides `output.maxBytes`.
    pub max_result_bytes: Option<u64>,
    /// Overrides `output.media` (true: `inline`).
    pub inline_media: Option<bool>,
    /// Queue an [`Event::Audit`] for every call.
    pub audit: Option<bool>,
    /// Overrides `audit.arguments`.
    pub audit_arguments: Option<bool>,
}

impl<P: Platform> fmt::Debug for Manager<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("origin", &self.origin)
            .field("servers", &self.servers())
            .field("tools", &self.registry.current.len())
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
    // The transport's own account comes first: it knows, say, that the server
    // closed its stdout and was stopped for it, where the exit status alone
    // would only show the signal that stopped it.
    let how = match (error, &diagnostics.exit_status) {
        (TransportError::Closed(why), _) => format!("server `{server}` {why}"),
        (other, Some(status)) => format!("server `{server}` exited ({status}) after {other}"),
        (other, None) => format!("server `{server}` lost its connection ({other})"),
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
            pins: pins::Pins::default(),
            slots: Vec::new(),
            registry: Default::default(),
            calls: calls::Calls::default(),
            finished: Vec::new(),
            events: Vec::new(),
            input: Default::default(),
            rules: Default::default(),
            serving: false,
            short_lived: false,
            approvals: Default::default(),
            output: Default::default(),
            call_counts: None,
            audit: Default::default(),
            options: EmbedderOptions::default(),
            requests: Default::default(),
            roots: Default::default(),
            wakes: Default::default(),
        }
    }

    /// Asks [`Manager::wait`] to return by `at_ms` (monotonic): the gateway's
    /// timers, which live beside the manager's own deadlines and so reach every
    /// host that waits on them.
    pub fn wake_at(&mut self, at_ms: u64) {
        self.wakes.insert(at_ms);
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
        // The pins are read back below, so they are saved first, whether or
        // not the platform keeps them across runs.
        self.pin_and_save();
        self.close_servers();
        // Shutting down withdrew every input request; the ids of the old slots go too.
        self.input.waiting.clear();
        self.origin = origin.to_string();
        let mut warnings = Vec::new();
        self.pins = pins::Pins::load(self.platform.load_pins(), &mut warnings);
        self.events.extend(warnings.into_iter().map(Event::Warning));
        self.rules.permissions = parsed.permissions;
        self.rules.claude_settings.clear();
        self.output = parsed.output;
        self.audit.settings = parsed.audit;
        self.roots.configured = parsed.roots;
        self.apply_options();
        self.rules.warned.clear();
        self.approvals.session.clear();
        // Fresh slots: every failure count is 0 and every circuit closed.
        self.slots = parsed.servers.into_iter().map(Slot::new).collect();
        self.invalidate_registry();
        self.sync_registry();
        // Loading is not a state change: statuses are reported from `start` on.
        for slot in &mut self.slots {
            slot.reported = Some(Reported::now(slot, &self.registry.current));
        }
        Ok(parsed.issues)
    }

    /// Starts every enabled server that is not already starting or connected.
    pub fn start(&mut self) {
        for i in 0..self.slots.len() {
            let slot = &self.slots[i];
            if slot.config.enabled
                && !matches!(slot.state, ServerState::Starting | ServerState::Connected)
            {
                self.open(i);
            }
        }
        self.sync_statuses();
    }

    /// Connects the server afresh, now: a live connection is dropped first (its
    /// calls in flight complete with `server-unavailable`, except those running
    /// as tasks, which the new connection follows), the failure count goes
    /// back to 0 and the circuit closes. Calls held for it stay held. `Err` when no
    /// server of that name is configured, or it is disabled.
    pub fn reconnect(&mut self, server: &str) -> Result<(), String> {
        let Some(i) = self.slots.iter().position(|s| s.config.name == server) else {
            let names: Vec<&str> = self.slots.iter().map(|s| s.config.name.as_str()).collect();
            return Err(format!(
                "no server named `{server}` in {} (configured: {})",
                self.origin,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        if !self.slots[i].config.enabled {
            return Err(format!(
                "server `{server}` is disabled in the configuration"
            ));
        }
        let slot = &mut self.slots[i];
        slot.restarts.failures = 0;
        if let (Some(client), Some(_)) = (slot.client.as_mut(), slot.conn.as_ref()) {
            // A task lives on the server: its call waits for the next connection.
            slot.handed = client.hand_over_tasks();
            let message = format!("server `{server}` was reconnected before the call finished");
            client.abort_calls(|_| CallError::ServerUnavailable(message.clone()));
        }
        self.process(i);
        let slot = &mut self.slots[i];
        // Dropping the connection stops the old process before the new one starts.
        slot.conn = None;
        slot.connect_deadline = None;
        self.open(i);
        self.invalidate_registry();
        self.sync_statuses();
        Ok(())
    }

    /// Opens slot `i`'s connection and begins the handshake; the slot is starting,
    /// or failed (a counted failure) when the connection cannot be opened.
    fn open(&mut self, i: usize) {
        let now = self.platform.now_ms();
        let slot = &self.slots[i];
        let opened = self.platform.open(&slot.config.name, &slot.config.endpoint);
        let slot = &mut self.slots[i];
        match opened {
            Ok(conn) => {
                let key = era_key(&slot.config.name, &slot.config.endpoint);
                // The era found on an earlier run spares a legacy server the probe.
                let wall_ms = self.platform.wall_clock_ms();
                let hint = self
                    .platform
                    .memo_get(&key)
                    .and_then(|memo| Era::from_memo(&memo, wall_ms));
                // What an earlier exchange learned spares a 2026-07-28 server
                // `server/discover` and `tools/list` (see `short_lived`).
                let known = if self.short_lived {
                    self.platform.known_server(&key)
                } else {
                    None
                };
                let mut client = Client::new(&slot.config.name);
                client.limit(slot.config.limits);
                client.set_initial_subscriptions(slot.subscriptions.clone());
                client.set_initial_roots(self.roots.of(&slot.config));
                if self.input.form {
                    client.enable_input_requests();
                }
                if self.input.sampling {
                    client.enable_sampling();
                }
                if self.input.url {
                    client.enable_url_elicitation();
                }
                if self.short_lived {
                    client.forgo_subscriptions();
                }
                let resumed = known.is_some();
                match known {
                    Some(known) => client.resume(known, now),
                    None => client.detect(hint, now),
                }
                slot.conn = Some(conn);
                slot.client = Some(client);
                slot.state = ServerState::Starting;
                slot.error = None;
                slot.connect_deadline = Some(now.saturating_add(slot.config.startup_timeout_ms));
                self.flush(i);
                if resumed {
                    // Ready already: nothing will come from the server to wake
                    // `wait` for it.
                    self.process(i);
                }
            }
            Err(e) => {
                slot.client = None;
                let message = format!(
                    "server `{}` could not be started ({} transport): {e}",
                    slot.config.name,
                    slot.config.endpoint.kind()
                );
                self.fail(i, message);
            }
        }
    }

    /// Every configured server, in configuration order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        debug_assert!(
            !self.registry.is_stale(),
            "every public call leaves it rebuilt"
        );
        self.slots
            .iter()
            .map(|s| status_of(s, &self.registry.current))
            .collect()
    }

    /// Whether any server is still starting (connecting or listing its tools).
    pub fn starting(&self) -> bool {
        self.slots.iter().any(|s| s.state == ServerState::Starting)
    }

    /// Ignored-message counters of a server's current session.
    pub fn server_stats(&self, server: &str) -> Option<Stats> {
        self.slots
            .iter()
            .find(|s| s.config.name == server)
            .and_then(|s| s.client.as_ref())
            .map(Client::stats)
    }

    /// [`Manager::start_call_as`] for a call whose `ask` rule someone already
    /// approved: `by` says who, for the audit trail (the gateway asks its own
    /// client, so the approval belongs to that client and is not remembered for
    /// other callers). A `deny` rule still refuses it.
    pub(crate) fn start_call_approved(
        &mut self,
        tool: &str,
        arguments: &str,
        options: CallOptions,
        profile: Option<&str>,
        by: &'static str,
    ) -> Result<u64, CallError> {
        let mut attempt = finished::Attempt::default();
        let started = self.begin_call(tool, arguments, options, profile, Some(by), &mut attempt);
        if let Err(e) = &started {
            self.audit_refusal(tool, arguments, profile, attempt, e);
        }
        started
    }

    /// Drives every connection until a call completes, an event is queued, the
    /// wake signal is ready or `timeout_ms` passes. Returns the completed calls.
    pub fn wait(&mut self, timeout_ms: u64) -> Vec<FinishedCall> {
        let mut until = None;
        loop {
            // The time the pump went by: one clock reading per round.
            let now = self.pump();
            let until = *until.get_or_insert(now.saturating_add(timeout_ms));
            if !self.finished.is_empty() || !self.events.is_empty() {
                break;
            }
            if self.wakes.first().is_some_and(|w| *w <= now) {
                self.wakes = self.wakes.split_off(&now.saturating_add(1));
                break;
            }
            if now >= until {
                break;
            }
            let deadline = self.next_deadline().map_or(until, |d| d.min(until));
            let conns: Vec<&P::Conn> = self.slots.iter().filter_map(|s| s.conn.as_ref()).collect();
            match self.platform.block(&conns, now, deadline) {
                Woken::Io => {}
                // Back to the embedder at once: it has work, and nothing came meanwhile.
                Woken::Signal => break,
                // Take what arrived together with the wake-up before returning.
                Woken::SignalAndIo => {
                    self.pump();
                    break;
                }
            }
        }
        let done = core::mem::take(&mut self.finished);
        done.into_iter()
            .filter_map(|c| {
                let c = self.finish_request(c)?;
                Some(self.finish(c))
            })
            .collect()
    }

    /// Sets what the embedder overrides over the configuration (output limits,
    /// audit events); kept across configuration loads.
    pub fn set_options(&mut self, options: EmbedderOptions) {
        self.options = options;
        self.apply_options();
    }

    fn apply_options(&mut self) {
        if let Some(max) = self.options.max_result_bytes {
            self.output.max_bytes = max.max(1);
        }
        if let Some(inline) = self.options.inline_media {
            self.output.inline_media = inline;
        } else if self.serving && !self.output.media_configured {
            // An MCP client of the gateway expects image and audio blocks as
            // the server sent them, and may be on another machine than the
            // files would be.
            self.output.inline_media = true;
        }
        self.audit.events = self.options.audit.unwrap_or(false);
        self.audit.arguments = self
            .options
            .audit_arguments
            .unwrap_or(self.audit.settings.arguments);
    }

    /// The configuration's `audit.file`, as written (`${VAR}` unresolved): where
    /// the host is asked to write the audit trail.
    pub fn audit_file(&self) -> Option<&str> {
        self.audit.settings.file.as_deref()
    }

    /// Takes the events queued since the last call.
    pub fn events(&mut self) -> Vec<Event> {
        core::mem::take(&mut self.events)
    }

    /// Closes every connection; calls in flight or waiting for a restart complete
    /// with `server-unavailable`. Kept tool lists are dropped: nothing restarts a
    /// server that was shut down except `start` or `reconnect`.
    ///
    /// A first list not pinned yet is pinned first and the pins saved, where the
    /// platform keeps them for the configuration's next run. Where it keeps them
    /// only while the runtime lives, nobody would read them: a runtime closed
    /// right after its first list of 10,000 tools would spend about 25 ms and 4
    /// MiB on them (docs/PERFORMANCE.md, "Memory").
    pub fn shutdown(&mut self) {
        if self.platform.pins_kept_across_runs() {
            self.pin_and_save();
        }
        self.close_servers();
    }

    /// Pins every first list not pinned yet, and saves the pins if they changed.
    fn pin_and_save(&mut self) {
        for i in 0..self.slots.len() {
            self.pin_first_list(i);
        }
        self.save_pins();
    }

    /// [`Manager::shutdown`] without its pins.
    fn close_servers(&mut self) {
        self.withdraw_approvals("mcpbox was shut down before the call was approved");
        for i in 0..self.slots.len() {
            let slot = &mut self.slots[i];
            let message = format!("server `{}` was shut down", slot.config.name);
            if let Some(client) = slot.client.as_mut() {
                client.abort_calls(|_| CallError::ServerUnavailable(message.clone()));
            }
            self.fail_held(i, |_| message.clone());
            self.process(i);
            let slot = &mut self.slots[i];
            slot.conn = None;
            slot.connect_deadline = None;
            slot.tools.clear();
            slot.denied.clear();
            slot.blocked.clear();
            slot.asking.clear();
            if matches!(slot.state, ServerState::Starting | ServerState::Connected) {
                slot.state = ServerState::Closed;
                slot.error = None;
            }
        }
        self.invalidate_registry();
        self.sync_statuses();
    }

    /// The live connections, for a platform that asks what they wait on.
    pub fn connections(&self) -> impl Iterator<Item = &P::Conn> {
        self.slots.iter().filter_map(|s| s.conn.as_ref())
    }

    /// The nearest instant (ms) at which something is due: a timeout, a
    /// connection's deadline, a restart, an approval's expiry, a timer
    /// ([`Manager::wake_at`]).
    ///
    /// A client counts only while its slot has a connection: only then is it
    /// driven (`drive`). A server that failed keeps its client, whose requests
    /// may still wait (an `initialize` never answered); their deadlines would
    /// pass and stay due, and a host that sleeps until the next deadline would
    /// wake at once, again and again.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .flat_map(|s| {
                [
                    s.connect_deadline,
                    s.conn
                        .as_ref()
                        .and(s.client.as_ref())
                        .and_then(Client::next_deadline),
                    s.conn.as_ref().and_then(Connection::next_deadline),
                    s.held.iter().map(|h| h.deadline_ms).min(),
                ]
            })
            .flatten()
            .chain(self.approvals.next_deadline())
            .chain(self.wakes.first().copied())
            // A first list to pin: due at once.
            .chain(self.slots.iter().any(|s| s.unpinned).then_some(0))
            .min()
    }

    /// Completes every held call of slot `i` with `server-unavailable`, with the
    /// text `why(name)` after "{name} is unavailable: ".
    fn fail_held(&mut self, i: usize, why: impl Fn(&str) -> String) {
        for h in core::mem::take(&mut self.slots[i].held) {
            let message = format!("{} is unavailable: {}", h.name, why(&h.name));
            self.complete(h.call, Err(CallError::ServerUnavailable(message)));
        }
        // Tasks handed over, waiting for a connection that will not come.
        let handed = core::mem::take(&mut self.slots[i].handed);
        for (call, name) in handed.calls() {
            let message = format!("{name} is unavailable: {}", why(name));
            self.complete(call, Err(CallError::ServerUnavailable(message)));
        }
    }

    /// Fails held calls whose own timeout passed before their server reconnected.
    fn expire_held(&mut self, i: usize, now: u64) {
        let slot = &mut self.slots[i];
        if slot.held.iter().all(|h| h.deadline_ms > now) {
            return;
        }
        let (expired, kept): (Vec<Held>, Vec<Held>) = core::mem::take(&mut slot.held)
            .into_iter()
            .partition(|h| h.deadline_ms <= now);
        slot.held = kept;
        let server = slot.config.name.clone();
        for h in expired {
            let message = format!(
                "{} is unavailable: server `{server}` did not reconnect within the call's timeout of {}",
                h.name,
                format_ms(h.timeout_ms)
            );
            self.complete(h.call, Err(CallError::ServerUnavailable(message)));
        }
    }

    /// Sends the calls that waited for slot `i` to connect, each re-checked
    /// against the tool list the server has now.
    fn send_held(&mut self, i: usize) {
        if !self.slots[i].held.is_empty() {
            self.sync_registry();
        }
        self.expire_held(i, self.platform.now_ms());
        let held = core::mem::take(&mut self.slots[i].held);
        for h in held {
            let server = &self.slots[i].config.name;
            let entry = self
                .registry
                .current
                .get(&h.name)
                .filter(|e| *e.server == **server)
                .cloned();
            let Some(entry) = entry else {
                let message = format!(
                    "no tool named `{}`: server `{server}` was restarted and no longer lists it",
                    h.name
                );
                self.complete(h.call, Err(CallError::UnknownTool(message)));
                continue;
            };
            let (arguments, warning) = entry.tool.check_arguments(&entry.server, h.arguments.get());
            self.events.extend(warning.map(Event::Warning));
            let arguments = match arguments {
                Ok(arguments) => arguments,
                Err(e) => {
                    self.complete(h.call, Err(CallError::InvalidArguments(e)));
                    continue;
                }
            };
            if let Some(client) = self.slots[i].client.as_mut() {
                client.start_call_until(
                    h.call,
                    &h.name,
                    &entry.tool.def.name,
                    arguments,
                    h.timeout_ms,
                    h.deadline_ms,
                    h.options,
                );
            }
        }
        self.flush(i);
    }

    /// One round over every connection: receive, process, fire deadlines, send.
    /// Returns the time it went by.
    fn pump(&mut self) -> u64 {
        let now = self.platform.now_ms();
        for i in 0..self.slots.len() {
            self.pin_first_list(i);
            self.drive(i, now);
        }
        self.expire_approvals(now);
        self.sync_statuses();
        self.save_pins();
        now
    }

    fn drive(&mut self, i: usize, now: u64) {
        self.expire_held(i, now);
        let slot = &mut self.slots[i];
        let (Some(conn), Some(client)) = (slot.conn.as_mut(), slot.client.as_mut()) else {
            return;
        };
        let mut lost = None;
        for _ in 0..RECEIVE_ROUNDS {
            match conn.receive() {
                Ok(messages) if messages.is_empty() => break,
                // `receive` took every message received so far: another call
                // would find only what arrived meanwhile, which the connection's
                // pollable reports to the next `block` anyway. Stopping here
                // saves a crossing per answer (an empty `receive`).
                Ok(messages) => {
                    for m in messages {
                        client.handle_message(m, now);
                    }
                    break;
                }
                // One dropped message; the connection goes on.
                Err(TransportError::TooLarge(o)) => client.handle_oversized(&o, now),
                // One request failed at the transport; the connection goes on.
                Err(TransportError::RequestFailed { id, failure }) => {
                    client.handle_failure(&id, failure, now);
                }
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
            let awaited = slot
                .client
                .as_ref()
                .and_then(Client::awaited)
                .map(|m| format!(" (it had not answered {m})"))
                .unwrap_or_default();
            let message = format!(
                "server `{}` did not finish connecting within {}{awaited}{}",
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
                    self.remember_era(i);
                    let handed = core::mem::take(&mut self.slots[i].handed);
                    if let (false, Some(client)) =
                        (handed.is_empty(), self.slots[i].client.as_mut())
                    {
                        client.adopt_tasks(handed);
                    }
                    let fresh = !self.slots[i].client.as_ref().is_some_and(Client::resumed);
                    if fresh {
                        self.keep_known(i, &defs);
                    }
                    self.set_tools(i, defs);
                    let slot = &mut self.slots[i];
                    slot.state = ServerState::Connected;
                    slot.connect_deadline = None;
                    self.invalidate_registry();
                    self.send_held(i);
                    self.send_log_level(i);
                }
                ClientEvent::ToolsChanged(defs) => {
                    if self.slots[i].state == ServerState::Connected {
                        self.keep_known(i, &defs);
                        self.set_tools(i, defs);
                        self.invalidate_registry();
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
                ClientEvent::Finished(c) => {
                    // Any JSON-RPC answer shows the server works: its failures
                    // are forgiven. Timeouts, cancels and aborts are no answer.
                    if matches!(c.outcome, Ok(_) | Err(CallError::Protocol(_))) {
                        self.slots[i].restarts.failures = 0;
                    }
                    // An error answer may mean the tools kept are no longer the
                    // server's: the next exchange learns them again.
                    if matches!(c.outcome, Err(CallError::Protocol(_))) {
                        self.forget_known(i);
                    }
                    self.calls.end(c.call);
                    self.finished.push(c);
                }
                ClientEvent::Log { level, message } => self.events.push(Event::Log(LogEntry {
                    server: server.clone(),
                    level,
                    message,
                })),
                ClientEvent::Warning(w) => self.events.push(Event::Warning(w)),
                ClientEvent::InputRequested(mut request) => {
                    let id = self.input.next_id();
                    self.input.waiting.insert(id, (i, request.id));
                    request.id = id;
                    self.events.push(Event::InputRequested(request));
                }
                ClientEvent::Progress(p) => self.events.push(Event::Progress(p)),
                ClientEvent::ResourceUpdated(uri) => {
                    self.events.push(Event::ResourceUpdated(ResourceUpdate {
                        server: server.to_string(),
                        uri,
                    }));
                }
                ClientEvent::ResourcesChanged => {
                    self.events
                        .push(Event::ResourcesChanged(server.to_string()));
                }
                ClientEvent::PromptsChanged => {
                    self.events.push(Event::PromptsChanged(server.to_string()));
                }
                ClientEvent::TaskStatus(status) => {
                    self.events.push(Event::TaskStatus(server.clone(), status));
                }
                ClientEvent::InputWithdrawn(key) => {
                    if let Some(id) = self.input.withdraw(i, key) {
                        self.events.push(Event::InputWithdrawn(id));
                    }
                }
            }
        }
        // The resources followed outlive this session (see `open`).
        if let Some(client) = self.slots[i].client.as_ref()
            && self.slots[i].subscriptions != *client.subscriptions()
        {
            self.slots[i].subscriptions = client.subscriptions().clone();
        }
    }

    /// Keeps the era a server turned out to speak, for its next connection
    /// (in this run or a later one: the host stores it).
    fn remember_era(&mut self, i: usize) {
        let slot = &self.slots[i];
        let Some(era) = slot.client.as_ref().map(Client::era_to_remember) else {
            return;
        };
        let key = era_key(&slot.config.name, &slot.config.endpoint);
        // Written when it changes, or when a legacy memo is too old to hold
        // (its date renewed), not on every connection.
        let wall_ms = self.platform.wall_clock_ms();
        let kept = self.platform.memo_get(&key);
        if kept.and_then(|memo| Era::from_memo(&memo, wall_ms)) != Some(era) {
            self.platform.memo_set(&key, &era.memo(wall_ms));
        }
    }

    /// Keeps what slot `i`'s ready 2026-07-28 session learned (its tools are
    /// `defs`) on the platform, for the next short-lived manager.
    fn keep_known(&mut self, i: usize, defs: &[registry::ToolDef]) {
        if !self.short_lived {
            return;
        }
        let slot = &self.slots[i];
        let Some(known) = slot.client.as_ref().and_then(|c| c.known(defs.to_vec())) else {
            return;
        };
        let key = era_key(&slot.config.name, &slot.config.endpoint);
        self.platform.keep_server(&key, Some(known));
    }

    /// Forgets what was kept of slot `i`'s server: it failed, or answered a
    /// call with an error, so the next short-lived manager asks it again.
    fn forget_known(&mut self, i: usize) {
        if self.short_lived {
            let slot = &self.slots[i];
            let key = era_key(&slot.config.name, &slot.config.endpoint);
            self.platform.keep_server(&key, None);
        }
    }

    /// Takes a server's fresh tool list: the tools the permission rules deny
    /// are set apart (never offered, refused by name), the rest named for the
    /// registry; rules naming tools the list lacks are warned about, once.
    fn set_tools(&mut self, i: usize, defs: Vec<registry::ToolDef>) {
        self.pin_first_list(i);
        let slot = &mut self.slots[i];
        let server = &slot.config.name;
        let mut names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        for warning in self.rules.permissions.unknown_tools(server, &names) {
            if self.rules.first_warning(&warning) {
                self.events.push(Event::Warning(warning));
            }
        }
        // A server's first list has nothing to be compared with, so it is
        // offered at once and pinned in the next turn: digesting thousands of
        // tools does not keep them from the caller. Not a list that names a
        // tool twice (its second definition is a change of the first), nor in
        // a manager that lives for one exchange (it has no next turn).
        let first = !self.short_lived && !self.pins.has(server) && {
            names.sort_unstable();
            names.windows(2).all(|pair| pair[0] != pair[1])
        };
        slot.denied.clear();
        slot.blocked.clear();
        slot.asking.clear();
        let segment = slot.config.name_segment();
        let policy = slot.config.on_tool_change;
        let mut offered = Vec::with_capacity(defs.len());
        for def in defs {
            let name = naming::tool_name(segment, &def.name);
            match self.rules.permissions.decide(server, &def.name, None) {
                Decision::Deny(rule) => {
                    slot.denied.insert(
                        name,
                        DeniedTool {
                            rule,
                            own: def.name,
                        },
                    );
                    continue;
                }
                _ if first => {}
                _ => match self.pins.check(server, &name, &def, policy) {
                    pins::Check::Same => {}
                    pins::Check::Changed { change, new } => {
                        if new {
                            self.events.push(Event::ToolChanged(change.clone()));
                        }
                        match policy {
                            config::OnToolChange::Warn => {}
                            config::OnToolChange::Ask => {
                                slot.asking.insert(def.name.clone(), change);
                            }
                            config::OnToolChange::Block => {
                                slot.blocked.insert(name, change);
                                continue;
                            }
                        }
                    }
                },
            }
            offered.push(def);
        }
        slot.tools = registry::prepare(segment, offered);
        slot.unpinned = first;
    }

    /// Pins slot `i`'s first list, offered unpinned ([`Manager::set_tools`]):
    /// in the turn after it was offered, before its next list is compared and
    /// before the pins are saved ([`Manager::pin_and_save`]).
    fn pin_first_list(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if !core::mem::take(&mut slot.unpinned) {
            return;
        }
        let (server, policy) = (&slot.config.name, slot.config.on_tool_change);
        for tool in &slot.tools {
            // The server had no pins and the list no repeated name: each tool
            // is new, and pinned as it is.
            let check = self.pins.check(server, &tool.name, &tool.def, policy);
            debug_assert!(matches!(check, pins::Check::Same));
        }
    }

    /// Hands the pins to the platform to keep, when they changed: once per
    /// round and at start, not once per tool list, as every save writes all
    /// of them (thousands of servers starting would cost a square).
    fn save_pins(&mut self) {
        if let Some(text) = self.pins.take_changed() {
            self.platform.save_pins(&text);
        }
    }

    /// The gateway serves this registry to MCP clients: images and audio stay
    /// inline in results unless the configuration's `output.media` or the
    /// embedder says otherwise.
    pub fn serve_downstream(&mut self) {
        self.serving = true;
        self.apply_options();
    }

    /// The manager lives for one exchange (the stock component's gateway, one per
    /// HTTP request): its 2026-07-28 servers start ready from what the platform
    /// kept of an earlier exchange ([`Platform::known_server`]), what they learn
    /// is kept for the next ([`Platform::keep_server`]; forgotten when the
    /// server fails or answers a call with an error), and no
    /// `subscriptions/listen` stream is opened (nobody would read it). Call
    /// before [`Manager::start`].
    pub fn short_lived(&mut self) {
        self.short_lived = true;
    }

    /// Why the tool of registry name `tool` is held back by its server's
    /// `onToolChange: "block"` (see [`pins`]), if it is.
    pub fn blocked_by(&self, tool: &str) -> Option<String> {
        self.slots
            .iter()
            .find_map(|s| s.blocked.get(tool))
            .map(pins::ToolChange::reason)
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

    /// Marks a server failed and counts the failure: its connection is dropped,
    /// its calls (in flight or held) complete with `server-unavailable`, its tools
    /// leave the registry but stay on the slot.
    fn fail(&mut self, i: usize, message: String) {
        self.forget_known(i);
        let now = self.platform.now_ms();
        let slot = &mut self.slots[i];
        if let Some(client) = slot.client.as_mut() {
            client.abort_calls(|_| CallError::ServerUnavailable(message.clone()));
        }
        slot.state = ServerState::Failed;
        slot.conn = None;
        slot.connect_deadline = None;
        slot.restarts.failed(now);
        self.fail_held(i, |_| message.clone());
        self.slots[i].error = Some(message);
        self.process(i);
        self.invalidate_registry();
    }

    /// Queues a status event for every server whose status changed.
    fn sync_statuses(&mut self) {
        self.sync_registry();
        for slot in &mut self.slots {
            if status_is_current(slot, &self.registry.current) {
                continue;
            }
            let now = Reported::now(slot, &self.registry.current);
            if slot.reported.as_ref().map(|r| &r.status) != Some(&now.status) {
                self.events.push(Event::Status(now.status.clone()));
            }
            slot.reported = Some(now);
        }
    }
}

/// The key a server's era is remembered under: its name and a hash (FNV-1a) of
/// where it lives, so an entry that now points elsewhere is probed afresh.
fn era_key(name: &str, endpoint: &Endpoint) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |text: &str| {
        for byte in text.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(endpoint.kind());
    match endpoint {
        Endpoint::Stdio { command, args, .. } => {
            feed(command);
            args.iter().for_each(|a| feed(a));
        }
        Endpoint::Http { url, .. } | Endpoint::Sse { url, .. } => feed(url),
    }
    format!("era/{name}/{hash:016x}")
}

/// Whether the last reported status is still what [`status_of`] would say,
/// found without building it: this runs after every call and every turn of `wait`.
fn status_is_current<C>(slot: &Slot<C>, registry: &Registry) -> bool {
    let Some(r) = &slot.reported else {
        return false;
    };
    let client = slot.client.as_ref();
    let info = client.map(Client::server_info);
    r.status.state == slot.state
        && r.failures == slot.restarts.failures
        && r.restartable == slot.restartable()
        && r.error == slot.error
        && r.status.tool_count == registry.count_for(&slot.config.name)
        && r.status.protocol_version.as_deref() == negotiated_version(client)
        && r.status.server_name.as_deref() == info.and_then(|i| i.name.as_deref())
        && r.status.server_version.as_deref() == info.and_then(|i| i.version.as_deref())
}

/// The protocol version a server's status shows: only one agreed on. While the
/// client probes (`server/discover` names the version it tries) or once it gave
/// up before connecting, none was.
fn negotiated_version(client: Option<&Client>) -> Option<&str> {
    let client = client?;
    matches!(client.phase(), Phase::Listing | Phase::Ready)
        .then(|| client.protocol_version())
        .flatten()
}

fn status_of<C>(slot: &Slot<C>, registry: &Registry) -> ServerStatus {
    let client = slot.client.as_ref();
    let info = client.map(Client::server_info);
    // What happens next, stated without the clock so the status only changes when
    // something happens: how long the backoff is, or that the circuit is open.
    let error = match &slot.error {
        Some(e) if slot.restartable() && slot.restarts.tripped() => Some(format!(
            "{e}; circuit open after {} failures in a row: not restarted until the \
             configuration is reloaded or the server is reconnected",
            slot.restarts.failures
        )),
        Some(e) if slot.restartable() => Some(format!(
            "{e}; the next call restarts it after a {} backoff (failure {} of {CIRCUIT_THRESHOLD} \
             before the circuit opens)",
            format_ms(backoff_ms(slot.restarts.failures)),
            slot.restarts.failures
        )),
        other => other.clone(),
    };
    ServerStatus {
        name: slot.config.name.clone(),
        state: slot.state,
        transport: slot.config.endpoint.kind().to_string(),
        error,
        tool_count: registry.count_for(&slot.config.name),
        protocol_version: negotiated_version(client).map(String::from),
        server_name: info.and_then(|i| i.name.clone()),
        server_version: info.and_then(|i| i.version.clone()),
    }
}

/// The refusal of a call to `tool` that `rule` denies.
fn denied(tool: &str, rule: &Rule) -> CallError {
    CallError::Denied(format!("{tool} is denied by the permission rule {rule}"))
}

fn unavailable<C>(tool: &str, slot: &Slot<C>, now: u64) -> CallError {
    if slot.restartable() {
        let error = slot.error.as_deref().unwrap_or("it failed");
        let next = match slot.restarts.gate(now) {
            Gate::Tripped => format!(
                "the circuit is open after {} failures in a row: reload the configuration \
                 or reconnect `{}` to try again",
                slot.restarts.failures, slot.config.name
            ),
            Gate::Wait(ms) => format!("next restart allowed in {}", format_wait(ms)),
            Gate::Open => "the next call restarts it".to_string(),
        };
        return CallError::ServerUnavailable(format!("{tool} is unavailable: {error}; {next}"));
    }
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

mod reload;
pub use reload::ReloadReport;
mod adapted;
mod approvals;
pub mod call_counts;
mod calls;
mod finished;
mod inputs;
mod logging;
mod permissions;
pub mod pins;
mod prompts;
mod published;
mod request;
mod resources;
mod restarts;
mod roots;

#[cfg(test)]
mod tests;
