//! The embedding API: open a runtime from a configuration, list servers and
//! tools, call tools from as many tasks as you like.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::Error;
use crate::driver::{Driver, Job, Published};
use crate::engine;
use crate::imports::state::Memo;
use crate::instance::Factory;
use crate::store::{DiagnosticsMap, Policy, Wake};
use crate::types::{
    CallError, CallResult, ConfigIssue, Event, InputAnswer, ReloadReport, ServerDiagnostics,
    ServerState, ServerStatus, Tool,
};

/// Where the guest component comes from.
#[derive(Debug, Clone)]
enum GuestSource {
    Embedded,
    File(PathBuf),
}

/// Where the configuration comes from.
#[derive(Debug, Clone)]
enum ConfigSource {
    File(PathBuf),
    Text { origin: String, text: String },
}

/// How to open a [`Runtime`].
///
/// ```no_run
/// # async fn demo() -> Result<(), mcpbox::Error> {
/// let runtime = mcpbox::Options::from_config_file(".mcp.json").open().await?;
/// runtime.ready().await;
/// for tool in runtime.tools().iter() {
///     println!("{}", tool.name);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    config: ConfigSource,
    guest: GuestSource,
    cache_dir: Option<PathBuf>,
    policy: Policy,
    memory_limit: usize,
    input_requests: bool,
    /// Watch the configuration file and reload it on change (`watch_config`).
    watch: bool,
    /// How long the file must be quiet before a change is applied.
    watch_debounce: Duration,
}

/// How long a watched configuration file must be quiet before a change is
/// applied; see [`Options::watch_debounce`].
pub const DEFAULT_WATCH_DEBOUNCE: Duration = Duration::from_millis(200);

impl Options {
    /// Reads the configuration (`.mcp.json` format) from a file. A missing file
    /// is an empty configuration.
    pub fn from_config_file(path: impl Into<PathBuf>) -> Self {
        Self::new(ConfigSource::File(path.into()))
    }

    /// Uses configuration text; `origin` names it in error messages.
    pub fn from_config_text(origin: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(ConfigSource::Text {
            origin: origin.into(),
            text: text.into(),
        })
    }

    fn new(config: ConfigSource) -> Self {
        Options {
            config,
            guest: GuestSource::Embedded,
            cache_dir: engine::default_cache_dir(),
            policy: Policy::default(),
            memory_limit: 256 * 1024 * 1024,
            input_requests: false,
            watch: false,
            watch_debounce: DEFAULT_WATCH_DEBOUNCE,
        }
    }

    /// Watches the configuration file (of [`from_config_file`](Options::from_config_file))
    /// and applies every change as a diff, as [`Runtime::reload`] does: servers whose
    /// entry did not change keep running. Each applied change is an
    /// [`Event::Reloaded`]; a change that cannot be applied (text that does not
    /// parse, a deleted file) is an [`Event::ReloadFailed`] and the running
    /// configuration stays. The file's directory is watched, so editors that save
    /// by writing a new file and renaming it over the old one are seen too.
    /// Changes are applied once the file has been quiet for
    /// [`watch_debounce`](Options::watch_debounce), so a burst of saves is applied
    /// once, as its last state. No effect for configuration text.
    ///
    /// Needs the `watch` feature (on with the default `cli` feature).
    #[cfg(feature = "watch")]
    #[doc(alias = "hot reload")]
    pub fn watch_config(mut self, enabled: bool) -> Self {
        self.watch = enabled;
        self
    }

    /// How long the watched file must go without a change before the change is
    /// applied (default [`DEFAULT_WATCH_DEBOUNCE`], 200 ms).
    #[cfg(feature = "watch")]
    pub fn watch_debounce(mut self, quiet: Duration) -> Self {
        self.watch_debounce = quiet;
        self
    }

    /// Lets servers ask the user for input during a call: MCP elicitation
    /// (`elicitation/create`, and `input_required` results in 2026-07-28), form
    /// mode; default off. When on, mcpbox declares the `elicitation` capability,
    /// and each request arrives as [`Event::InputRequested`] on
    /// [`Runtime::events`], to be answered with [`Runtime::answer_input`]; the call
    /// waits for the answer (its timeout still running). When off, servers are not
    /// offered elicitation, and a 2026-07-28 server that asks anyway ends the call
    /// with a tool error saying so.
    #[doc(alias = "elicitation")]
    pub fn input_requests(mut self, enabled: bool) -> Self {
        self.input_requests = enabled;
        self
    }

    /// Loads another build of the guest component instead of the embedded one.
    pub fn guest_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.guest = GuestSource::File(path.into());
        self
    }

    /// Where compiled components are cached; `None` compiles every time.
    /// Defaults to [`default_cache_dir`](crate::default_cache_dir).
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }

    /// The capability policy: whether stdio servers may be started
    /// ([`Policy::allow_processes`]), whether remote servers may be contacted
    /// ([`Policy::allow_network`]), the largest message accepted. Default: all
    /// allowed, 64 MiB.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The most linear memory the guest may use, in bytes (default 256 MiB).
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Opens the runtime and starts connecting every enabled server. Returns as
    /// soon as the servers are starting; see [`Runtime::ready`].
    ///
    /// Must be called inside a multi-threaded tokio runtime.
    pub async fn open(self) -> Result<Runtime, Error> {
        Runtime::open(self).await
    }
}

/// Options for one tool call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Overrides the server's tool timeout.
    pub timeout: Option<Duration>,
}

/// A running mcpbox: the guest component, its servers and its tool registry.
///
/// Cheap to clone; every clone talks to the same runtime and may be used from
/// any task. The servers stop when the last clone is dropped or on
/// [`shutdown`](Runtime::shutdown).
#[derive(Debug, Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    jobs: mpsc::UnboundedSender<Job>,
    wake: Arc<Wake>,
    servers: watch::Receiver<Arc<Vec<ServerStatus>>>,
    tools: watch::Receiver<Arc<Vec<Tool>>>,
    events: broadcast::Sender<Event>,
    stopped: watch::Receiver<Option<String>>,
    /// The problems of the configuration last applied.
    issues: std::sync::Mutex<Vec<ConfigIssue>>,
    diagnostics: DiagnosticsMap,
    /// Where the configuration comes from, for `reload`.
    config: ConfigSource,
    /// Reloads one at a time, so their order is the order they were asked in.
    reloading: tokio::sync::Mutex<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.wake.close();
    }
}

impl Runtime {
    async fn open(options: Options) -> Result<Runtime, Error> {
        let (origin, text) = match &options.config {
            ConfigSource::Text { origin, text } => (origin.clone(), text.clone()),
            ConfigSource::File(path) => (path.display().to_string(), read_config(path)?),
        };
        #[cfg(feature = "watch")]
        let text_at_open = text.clone();

        let guest = options.guest.clone();
        let cache_dir = options.cache_dir.clone();
        let (engine, component) = tokio::task::spawn_blocking(move || {
            let engine = engine::engine()?;
            let component = match &guest {
                GuestSource::Embedded => engine::load_component(
                    &engine,
                    engine::EMBEDDED_GUEST,
                    engine::EMBEDDED_GUEST_SHA256,
                    cache_dir.as_deref(),
                )?,
                GuestSource::File(path) => {
                    let wasm = std::fs::read(path).map_err(|e| {
                        Error::Guest(format!(
                            "could not read the guest component {}: {e}",
                            path.display()
                        ))
                    })?;
                    let digest = engine::wasm_digest(&wasm);
                    engine::load_component(&engine, &wasm, &digest, cache_dir.as_deref())?
                }
            };
            Ok::<_, Error>((engine, component))
        })
        .await
        .map_err(|e| Error::Guest(format!("loading the guest panicked: {e}")))??;

        let wake = Arc::new(Wake::default());
        let diagnostics = DiagnosticsMap::default();
        let factory = Factory::new(
            engine,
            &component,
            options.policy,
            options.memory_limit,
            wake.clone(),
            diagnostics.clone(),
            (origin, text),
        )?
        .with_memo(Memo::in_dir(options.cache_dir.as_deref()))
        .with_input_requests(options.input_requests);
        let started = factory.start().await?;

        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        let (servers_tx, servers_rx) = watch::channel(Arc::new(started.servers));
        let (tools_tx, tools_rx) = watch::channel(Arc::new(started.tools));
        let (events_tx, _) = broadcast::channel(1024);
        let (stopped_tx, stopped_rx) = watch::channel(None);
        let published = Published {
            servers: servers_tx,
            tools: tools_tx,
            events: events_tx.clone(),
            stopped: stopped_tx,
        };
        let driver = Driver::new(
            factory,
            started.store,
            started.guest,
            jobs_rx,
            wake.clone(),
            published,
        );
        tokio::spawn(driver.run());

        let runtime = Runtime {
            inner: Arc::new(Inner {
                jobs: jobs_tx,
                wake,
                servers: servers_rx,
                tools: tools_rx,
                events: events_tx,
                stopped: stopped_rx,
                issues: std::sync::Mutex::new(started.issues),
                diagnostics,
                config: options.config.clone(),
                reloading: tokio::sync::Mutex::new(()),
            }),
        };
        #[cfg(feature = "watch")]
        if options.watch
            && let ConfigSource::File(path) = &options.config
        {
            crate::watch::start(&runtime, path, text_at_open, options.watch_debounce)?;
        }
        Ok(runtime)
    }

    /// Problems found in the configuration (the one last applied, after a
    /// reload). Entries with problems were skipped; the rest loaded.
    pub fn config_issues(&self) -> Vec<ConfigIssue> {
        self.inner
            .issues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reads the configuration file again and applies it as a diff: servers
    /// whose entry did not change keep running with their calls in flight;
    /// removed ones are shut down (their calls fail with
    /// [`CallError::ServerUnavailable`] naming the reload); added and changed
    /// ones start; an entry that now has a problem keeps its running definition
    /// (see [`ReloadReport`]). An [`Event::Reloaded`] follows the status events.
    ///
    /// `Err` when the text as a whole is unusable (not JSON: the message has the
    /// line and column; the file cannot be read) — then the running configuration
    /// stays, and an [`Event::ReloadFailed`] says so — or when the runtime was
    /// opened from text (use [`reload_text`](Runtime::reload_text)) or stopped.
    /// A missing file is an empty configuration, as when opening.
    #[doc(alias = "hot reload")]
    pub async fn reload(&self) -> Result<ReloadReport, Error> {
        let ConfigSource::File(path) = &self.inner.config else {
            return Err(Error::Config {
                origin: self.origin(),
                message: "this runtime was opened from configuration text, not a file: \
                          use reload_text"
                    .into(),
            });
        };
        let text = match read_config(path) {
            Ok(text) => text,
            Err(e) => {
                let _ = self.inner.events.send(Event::ReloadFailed {
                    origin: path.display().to_string(),
                    error: e.to_string(),
                });
                return Err(e);
            }
        };
        self.apply(path.display().to_string(), text, 0).await
    }

    /// Applies configuration text as a diff, as [`reload`](Runtime::reload) does;
    /// `origin` names it in messages. Later reloads from the file (by
    /// [`reload`](Runtime::reload) or the watcher) replace it again.
    pub async fn reload_text(
        &self,
        origin: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<ReloadReport, Error> {
        self.apply(origin.into(), text.into(), 0).await
    }

    /// Sends one reload to the driver and records its issues.
    pub(crate) async fn apply(
        &self,
        origin: String,
        text: String,
        file_events: u32,
    ) -> Result<ReloadReport, Error> {
        let _one_at_a_time = self.inner.reloading.lock().await;
        let (reply, answer) = oneshot::channel();
        let stopped =
            |reason: String| Error::Guest(format!("the mcpbox runtime stopped: {reason}"));
        self.submit(Job::Reload {
            origin: origin.clone(),
            text,
            file_events,
            reply,
        })
        .map_err(stopped)?;
        match answer.await {
            Ok(Ok(report)) => {
                *self.inner.issues.lock().unwrap_or_else(|p| p.into_inner()) =
                    report.issues.clone();
                Ok(report)
            }
            Ok(Err(message)) => Err(Error::Config { origin, message }),
            Err(_) => Err(stopped(self.stop_reason())),
        }
    }

    /// The configuration's origin as messages name it.
    fn origin(&self) -> String {
        match &self.inner.config {
            ConfigSource::File(path) => path.display().to_string(),
            ConfigSource::Text { origin, .. } => origin.clone(),
        }
    }

    /// Sends an event to every subscriber (the watcher's own failures).
    #[cfg(feature = "watch")]
    pub(crate) fn announce(&self, event: Event) {
        let _ = self.inner.events.send(event);
    }

    /// A handle that does not keep the runtime alive (for the watcher).
    #[cfg(feature = "watch")]
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The runtime behind a [`downgrade`](Runtime::downgrade)d handle, while it lives.
    #[cfg(feature = "watch")]
    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Runtime> {
        weak.upgrade().map(|inner| Runtime { inner })
    }

    /// Whether the runtime stopped (shut down, or the guest kept failing).
    #[cfg(feature = "watch")]
    pub(crate) fn stopped(&self) -> watch::Receiver<Option<String>> {
        self.inner.stopped.clone()
    }

    /// Every configured server and its current state.
    pub fn servers(&self) -> Arc<Vec<ServerStatus>> {
        self.inner.servers.borrow().clone()
    }

    /// Waits until no server is starting any more (each is connected, failed or
    /// closed), and returns their states.
    pub async fn ready(&self) -> Arc<Vec<ServerStatus>> {
        let mut servers = self.inner.servers.clone();
        let mut stopped = self.inner.stopped.clone();
        loop {
            {
                let current = servers.borrow_and_update();
                if !current.iter().any(|s| s.state == ServerState::Starting) {
                    return current.clone();
                }
            }
            tokio::select! {
                changed = servers.changed() => if changed.is_err() { return self.servers() },
                _ = stopped.wait_for(Option::is_some) => return self.servers(),
            }
        }
    }

    /// What the host knows about a server's latest connection: its last stderr
    /// lines, the non-JSON stdout lines it skipped, oversized messages dropped and
    /// how the process ended. `None` if the server never had a connection.
    pub fn diagnostics(&self, server: &str) -> Option<ServerDiagnostics> {
        let map = self
            .inner
            .diagnostics
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let d = map.get(server)?.lock().unwrap_or_else(|p| p.into_inner());
        Some(ServerDiagnostics {
            stderr_tail: d.stderr_tail.iter().cloned().collect(),
            skipped_lines: d.skipped_lines,
            oversized_messages: d.oversized_messages,
            exit_status: d.exit_status.clone(),
        })
    }

    /// Every tool in the registry, ordered by name.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.inner.tools.borrow().clone()
    }

    /// Waits until the tool `name` is in the registry and returns it, or returns
    /// `None` once no server is starting any more and the tool is still absent.
    /// Lets a caller use one tool without waiting for every slow server.
    pub async fn wait_for_tool(&self, name: &str) -> Option<Tool> {
        let mut servers = self.inner.servers.clone();
        let mut tools = self.inner.tools.clone();
        let mut stopped = self.inner.stopped.clone();
        loop {
            if let Some(tool) = tools.borrow_and_update().iter().find(|t| t.name == name) {
                return Some(tool.clone());
            }
            if !servers
                .borrow_and_update()
                .iter()
                .any(|s| s.state == ServerState::Starting)
            {
                // Tools are published together with the status that settled them.
                return self.tools().iter().find(|t| t.name == name).cloned();
            }
            tokio::select! {
                r = servers.changed() => if r.is_err() { return None },
                r = tools.changed() => if r.is_err() { return None },
                _ = stopped.wait_for(Option::is_some) => return None,
            }
        }
    }

    /// Subscribes to registry events (status changes, tool list changes,
    /// warnings, server logs, input requests) from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Calls a tool by its namespaced name. `arguments` must be a JSON object
    /// (or `null` for none). A tool that reports failure is an `Ok` result with
    /// `is_error` set; `Err` means no tool result was produced.
    ///
    /// Dropping the returned future cancels the call.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallResult, CallError> {
        let arguments = match arguments {
            Value::Null => String::new(),
            other => other.to_string(),
        };
        self.call_tool_json(name, arguments, options).await
    }

    /// Like [`call_tool`](Runtime::call_tool), with the arguments as JSON text.
    pub async fn call_tool_json(
        &self,
        name: &str,
        arguments: String,
        options: CallOptions,
    ) -> Result<CallResult, CallError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Call {
            tool: name.to_owned(),
            arguments,
            timeout: options.timeout,
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }

    /// Closes every connection and stops every server. Pending calls fail with
    /// [`CallError::ServerUnavailable`]; later calls with [`CallError::Runtime`].
    pub async fn shutdown(&self) {
        let (reply, done) = oneshot::channel();
        if self.submit(Job::Shutdown { reply }).is_ok() {
            let _ = done.await;
        }
    }

    /// Connects the server `server` afresh, now, and forgets its failures.
    ///
    /// A server that exits or drops its connection is restarted by the next call
    /// to one of its tools, after a backoff (1 s after the first failure in a row,
    /// doubling up to 30 s); after 5 failures in a row it is no longer restarted
    /// until this is called (or the runtime reopened). A connected server is
    /// disconnected first: its calls in flight fail with
    /// [`CallError::ServerUnavailable`]. When this returns, [`servers`](Runtime::servers)
    /// shows the server starting (or failed, if it could not be started).
    ///
    /// `Err` when no server of that name is configured, it is disabled, or the
    /// runtime stopped.
    pub async fn reconnect(&self, server: &str) -> Result<(), String> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Reconnect {
            server: server.to_owned(),
            reply,
        })
        .map_err(|reason| format!("the mcpbox runtime stopped: {reason}"))?;
        answer.await.unwrap_or_else(|_| {
            Err(format!(
                "the mcpbox runtime stopped: {}",
                self.stop_reason()
            ))
        })
    }

    /// Answers the input request `id` (from [`Event::InputRequested`]), that is an
    /// MCP elicitation (`elicitation/create`, and `input_required` results in
    /// 2026-07-28): an accepted answer goes to the server with the requested
    /// schema's defaults filled in for the fields it leaves out (SEP-1034). `Err` when no request of that id is
    /// waiting (answered already, or withdrawn: see [`Event::InputWithdrawn`]), when
    /// an accepted answer is not a JSON object satisfying the requested schema (the
    /// request then stays open for a corrected answer), or when the runtime stopped.
    #[doc(alias = "elicitation")]
    pub async fn answer_input(&self, id: u64, answer: InputAnswer) -> Result<(), String> {
        let (reply, done) = oneshot::channel();
        self.submit(Job::AnswerInput { id, answer, reply })
            .map_err(|reason| format!("the mcpbox runtime stopped: {reason}"))?;
        done.await.unwrap_or_else(|_| {
            Err(format!(
                "the mcpbox runtime stopped: {}",
                self.stop_reason()
            ))
        })
    }

    fn submit(&self, job: Job) -> Result<(), String> {
        self.inner.jobs.send(job).map_err(|_| self.stop_reason())?;
        self.inner.wake.add();
        Ok(())
    }

    fn stop_reason(&self) -> String {
        self.inner
            .stopped
            .borrow()
            .clone()
            .unwrap_or_else(|| "it stopped".into())
    }
}

fn read_config(path: &Path) -> Result<String, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Error::Config {
            origin: path.display().to_string(),
            message: format!("{}: cannot be read: {e}", path.display()),
        }),
    }
}
