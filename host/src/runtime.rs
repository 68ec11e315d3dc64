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
    CallError, CallResult, ConfigIssue, Event, InputAnswer, ServerDiagnostics, ServerState,
    ServerStatus, Tool,
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
}

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
        }
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
struct Inner {
    jobs: mpsc::UnboundedSender<Job>,
    wake: Arc<Wake>,
    servers: watch::Receiver<Arc<Vec<ServerStatus>>>,
    tools: watch::Receiver<Arc<Vec<Tool>>>,
    events: broadcast::Sender<Event>,
    stopped: watch::Receiver<Option<String>>,
    issues: Vec<ConfigIssue>,
    diagnostics: DiagnosticsMap,
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

        Ok(Runtime {
            inner: Arc::new(Inner {
                jobs: jobs_tx,
                wake,
                servers: servers_rx,
                tools: tools_rx,
                events: events_tx,
                stopped: stopped_rx,
                issues: started.issues,
                diagnostics,
            }),
        })
    }

    /// Problems found in the configuration. Entries with problems were skipped;
    /// the rest loaded.
    pub fn config_issues(&self) -> &[ConfigIssue] {
        &self.inner.issues
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

    /// Queues a job for the driver and wakes it.
    pub(crate) fn submit(&self, job: Job) -> Result<(), String> {
        self.inner.jobs.send(job).map_err(|_| self.stop_reason())?;
        self.inner.wake.add();
        Ok(())
    }

    /// Why the runtime stopped ("it stopped" while it runs).
    pub(crate) fn stop_reason(&self) -> String {
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
