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
use crate::transport::descendants::Subreaper;
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
    config_dir: Option<PathBuf>,
    policy: Policy,
    memory_limit: usize,
    input_requests: bool,
    subreaper: bool,
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
            config_dir: engine::default_config_dir(),
            policy: Policy::default(),
            memory_limit: 256 * 1024 * 1024,
            input_requests: false,
            subreaper: false,
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

    /// Makes this process the *subreaper* of its descendants (Linux
    /// `PR_SET_CHILD_SUBREAPER`; default off, on in the CLI), so that no process a
    /// server starts can outlive the runtime, not even one that leaves the
    /// server's process group with `setsid` and clears its environment.
    ///
    /// Without it, mcpbox still stops each server's process group and every
    /// descendant that kept the `MCPBOX_SERVER_ID` marker it gives each server
    /// in its environment. With it, orphans of servers are reparented to this
    /// process: mcpbox reaps those that exit, and when the last runtime with this
    /// option shuts down it kills **every child process it did not start as a
    /// server**. The attribute belongs to the whole process and stays set, and
    /// mcpbox cannot tell an orphan from a child started by other code in the
    /// process; so turn it on only in a process that starts no child processes
    /// of its own (or waits for none of them).
    pub fn subreaper(mut self, enabled: bool) -> Self {
        self.subreaper = enabled;
        self
    }

    /// Loads another build of the guest component instead of the embedded one.
    pub fn guest_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.guest = GuestSource::File(path.into());
        self
    }

    /// Where compiled components are cached; `None` compiles every time.
    /// Defaults to [`default_cache_dir`](crate::default_cache_dir).
    ///
    /// A cached component is native code, so it is loaded only from a directory
    /// and a file of the current user's that group and others cannot write, and
    /// only if its HMAC (keyed by a secret in the [`config_dir`](Options::config_dir))
    /// checks out; otherwise the guest is compiled in memory and
    /// [`Runtime::startup_warnings`] says why.
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }

    /// Where mcpbox keeps the key that signs cached components (`cache-key`,
    /// 0600). Defaults to [`default_config_dir`](crate::default_config_dir);
    /// `None` turns the on-disk component cache off.
    pub fn config_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.config_dir = dir;
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
    ///
    /// It also bounds the arguments of one call: at most 1/16 of it (16 MiB by
    /// default; see [`Runtime::check_arguments_size`]).
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
    /// The guest's memory limit, which bounds the arguments of a call.
    memory_limit: usize,
    /// What went wrong while opening without stopping it.
    startup_warnings: Vec<String>,
}

/// The arguments of one call may take up this fraction of the guest's memory
/// limit. The guest holds them several times over while it starts the call (the
/// text handed in, the value parsed to check it against the schema, the request
/// written for the server), next to every server's state and any answers arriving
/// meanwhile. Measured with the default 256 MiB: an `echo` of 32 MB of arguments
/// (whose answer is as large) worked, 40 MB ran the guest out of memory, which
/// traps it and restarts every server. 1/16 (16 MiB) leaves room for that.
const ARGUMENTS_SHARE: usize = 16;

impl Drop for Inner {
    fn drop(&mut self) {
        self.wake.close();
    }
}

impl Runtime {
    async fn open(options: Options) -> Result<Runtime, Error> {
        let (origin, text) = match &options.config {
            ConfigSource::Text { origin, text } if text.len() > MAX_CONFIG_BYTES => {
                return Err(too_large(origin));
            }
            ConfigSource::Text { origin, text } => (origin.clone(), text.clone()),
            ConfigSource::File(path) => (path.display().to_string(), read_config(path)?),
        };

        let guest = options.guest.clone();
        let cache = match (&options.cache_dir, &options.config_dir) {
            (Some(cache), Some(key)) => Some(engine::CacheDirs {
                cache: cache.clone(),
                key: key.clone(),
            }),
            _ => None,
        };
        let state_dir = options.cache_dir.clone();
        let (engine, component, memo, startup_warnings) = tokio::task::spawn_blocking(move || {
            let engine = engine::engine()?;
            let mut warnings = Vec::new();
            let (memo, warning) = Memo::open(state_dir.as_deref());
            warnings.extend(warning);
            let component = match &guest {
                GuestSource::Embedded => engine::load_component(
                    &engine,
                    engine::EMBEDDED_GUEST,
                    engine::EMBEDDED_GUEST_SHA256,
                    cache.as_ref(),
                    &mut warnings,
                )?,
                GuestSource::File(path) => {
                    let wasm = std::fs::read(path).map_err(|e| {
                        Error::Guest(format!(
                            "could not read the guest component {}: {e}",
                            path.display()
                        ))
                    })?;
                    let digest = engine::wasm_digest(&wasm);
                    engine::load_component(&engine, &wasm, &digest, cache.as_ref(), &mut warnings)?
                }
            };
            Ok::<_, Error>((engine, component, memo, warnings))
        })
        .await
        .map_err(|e| Error::Guest(format!("loading the guest panicked: {e}")))??;

        // Before any server starts, so that no early orphan goes to init.
        let mut startup_warnings = startup_warnings;
        let subreaper = if options.subreaper {
            match Subreaper::start() {
                Ok(subreaper) => Some(subreaper),
                Err(e) => {
                    startup_warnings.push(format!(
                        "could not make this process the subreaper of its servers' \
                         descendants ({e}); a descendant that leaves its server's process \
                         group and environment may outlive the server"
                    ));
                    None
                }
            }
        } else {
            None
        };
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
        .with_memo(memo)
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
            subreaper,
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
                memory_limit: options.memory_limit,
                startup_warnings,
            }),
        })
    }

    /// Problems found in the configuration. Entries with problems were skipped;
    /// the rest loaded.
    pub fn config_issues(&self) -> &[ConfigIssue] {
        &self.inner.issues
    }

    /// Problems met while opening that did not stop it, for the embedder to show:
    /// a component cache that was not used or a cached component that was not
    /// loaded, and why (see [`Options::cache_dir`]).
    pub fn startup_warnings(&self) -> &[String] {
        &self.inner.startup_warnings
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
        self.check_arguments_size(name, arguments.len())?;
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

    /// The largest arguments (JSON text, in bytes) a call accepts: 1/16 of the
    /// guest's memory limit ([`Options::memory_limit`]), 16 MiB by default.
    pub fn max_arguments_bytes(&self) -> usize {
        self.inner.memory_limit / ARGUMENTS_SHARE
    }

    /// What [`call_tool`](Runtime::call_tool) checks before anything enters the
    /// guest: `Err(`[`CallError::InvalidArguments`]`)` naming `tool`, the size,
    /// the limit and how to raise it when `bytes` of arguments are over
    /// [`max_arguments_bytes`](Runtime::max_arguments_bytes). Lets a caller refuse
    /// arguments before reading them whole.
    pub fn check_arguments_size(&self, tool: &str, bytes: usize) -> Result<(), CallError> {
        let limit = self.max_arguments_bytes();
        if bytes <= limit {
            return Ok(());
        }
        Err(CallError::InvalidArguments(format!(
            "the arguments of `{tool}` are {bytes} bytes, more than the {} a call may have \
             (1/{ARGUMENTS_SHARE} of the guest's memory limit of {}); a larger memory limit \
             raises it (Options::memory_limit; CLI: --memory-limit MIB)",
            size(limit),
            size(self.inner.memory_limit),
        )))
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
        self.stopped().unwrap_or_else(|| "it stopped".into())
    }

    /// Why the runtime stopped, once it has: it was shut down, or the guest kept
    /// failing (three traps within a minute). `None` while it runs. See also
    /// [`Event::Stopped`].
    pub fn stopped(&self) -> Option<String> {
        self.inner.stopped.borrow().clone()
    }
}

/// `bytes` in the largest binary unit that shows it exactly ("16 MiB", "256 KiB").
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The largest configuration accepted, as the guest's own cap
/// (`mcpbox_guest::config::MAX_CONFIG_BYTES`): a bigger text is refused here,
/// before it is read whole or copied into the guest's memory.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;

fn too_large(origin: &str) -> Error {
    Error::Config {
        origin: origin.to_owned(),
        message: format!(
            "{origin} is larger than 16 MiB, the most a configuration may be; is this the right file?"
        ),
    }
}

/// The text of the configuration file at `path`, read no further than one byte
/// past [`MAX_CONFIG_BYTES`]; a missing file is empty.
pub(crate) fn read_config(path: &Path) -> Result<String, Error> {
    use std::io::Read;
    let origin = path.display().to_string();
    let cannot = |e: std::io::Error| Error::Config {
        origin: origin.clone(),
        message: format!("{origin}: cannot be read: {e}"),
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(cannot(e)),
    };
    // One byte past the cap tells a file over it apart, whatever its metadata says.
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() > MAX_CONFIG_BYTES {
        return Err(too_large(&origin));
    }
    Ok(text)
}
