//! The embedding API: open a runtime from a configuration, list servers and
//! tools, call tools from as many tasks as you like.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::Error;
pub use crate::config_file::MAX_CONFIG_BYTES;
use crate::config_file::{read_config, too_large};
pub(crate) use crate::events::Events;

mod adapted;
mod completions;
mod logging;
mod prompts;
mod request;
mod resources;
mod skills;
mod tasks;
use crate::driver::{Driver, Job, Published};
use crate::engine;
use crate::imports::blobs::{Limits, Place, Results};
use crate::imports::state::StateStore;
use crate::instance::{EmbedderSettings, Factory};
use crate::metrics::{MetricsSnapshot, Monitor};
use crate::oauth::{self, OAuth, TokenStore};
use crate::store::{DiagnosticsMap, Policy, Wake};
use crate::transport::descendants::Subreaper;
pub use crate::types::{AdaptedTool, AdaptedTools, AdapterNote, AdapterRefusal};
use crate::types::{
    AuditRecord, CallError, CallResult, ConfigIssue, Event, InputAnswer, ReloadReport, Root,
    ServerDiagnostics, ServerState, ServerStatus, Tool,
};
pub use adapted::DIALECTS;
pub use completions::CompletionValues;
pub use prompts::{GetPrompt, Prompt, PromptArgument, PromptMessage};
pub use resources::{Resource, ResourceContents, ResourceRead, ResourceTemplate};
pub use skills::{LoadedSkill, Skill, SkillFile};
pub use tasks::Task;

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
    /// How long the driver polls before it sleeps (`Options::busy_poll`).
    busy_poll: Duration,
    input_requests: bool,
    /// Whether servers may ask for messages from the model (`Options::sampling`).
    sampling: bool,
    /// Whether servers may ask the user to open a URL (`Options::url_elicitation`).
    url_elicitation: bool,
    /// The embedder's roots (`Options::roots`); `None`: the configuration's.
    roots: Option<Vec<Root>>,
    token_store: TokenStore,
    authorize_on_demand: bool,
    authorization_timeout: Duration,
    /// Watch the configuration file and reload it on change (`watch_config`).
    watch: bool,
    /// How long the file must be quiet before a change is applied.
    watch_debounce: Duration,
    approvals: bool,
    /// Where result files go: `None` for the default, `Some(None)` for none.
    results_dir: Option<Option<PathBuf>>,
    /// How long the result directories of ended runtimes are kept.
    results_retention: Duration,
    embedder: EmbedderSettings,
    subreaper: bool,
    /// The configuration file's text as the caller read it (`from_config_file_read`).
    file_text: Option<String>,
    /// What a configuration read again from the file must pass before it is applied.
    reload_check: Option<ReloadCheck>,
    /// Count calls and server restarts (`metrics`).
    metrics: bool,
    /// The events' channel, when subscribed to before opening (`Options::subscribe`).
    events: EarlyEvents,
}

/// The events' channel of a runtime not opened yet ([`Options::subscribe`]).
/// A clone of the options starts without it, so two runtimes opened from
/// clones never share one.
#[derive(Debug, Default)]
struct EarlyEvents(Option<Events>);

impl Clone for EarlyEvents {
    fn clone(&self) -> Self {
        EarlyEvents(None)
    }
}

/// A check a configuration read again from the file must pass before it is
/// applied (see [`Options::reload_check`]).
#[derive(Clone)]
struct ReloadCheck(Arc<CheckFn>);

/// The function of a [`ReloadCheck`]: `Err` says why the text is not applied.
type CheckFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for ReloadCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReloadCheck")
    }
}

/// How long a watched configuration file must be quiet before a change is
/// applied; see [`Options::watch_debounce`].
pub const DEFAULT_WATCH_DEBOUNCE: Duration = Duration::from_millis(200);

/// How long the driver polls before it sleeps by default: 50 µs, what was
/// measured; see [`Options::busy_poll`].
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(50);

impl Options {
    /// Reads the configuration (`.mcp.json` format) from a file. A missing file
    /// is an empty configuration.
    pub fn from_config_file(path: impl Into<PathBuf>) -> Self {
        Self::new(ConfigSource::File(path.into()))
    }

    /// The configuration file at `path`, whose text the caller already read
    /// (say with [`trust::ConfigFile::read`](crate::trust::ConfigFile::read), so that
    /// what starts is what was checked): the runtime starts with `text`, and
    /// [`Runtime::reload`] and the watcher of [`watch_config`](Options::watch_config)
    /// read the file again, each read bounded as this one was.
    pub fn from_config_file_read(path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        let mut options = Self::new(ConfigSource::File(path.into()));
        options.file_text = Some(text.into());
        options
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
            busy_poll: DEFAULT_BUSY_POLL,
            input_requests: false,
            sampling: false,
            url_elicitation: false,
            roots: None,
            token_store: TokenStore::default_location(),
            authorize_on_demand: false,
            authorization_timeout: oauth::DEFAULT_LOGIN_TIMEOUT,
            watch: false,
            watch_debounce: DEFAULT_WATCH_DEBOUNCE,
            approvals: false,
            results_dir: None,
            results_retention: crate::imports::blobs::DEFAULT_RETENTION,
            embedder: EmbedderSettings::default(),
            subreaper: false,
            file_text: None,
            reload_check: None,
            metrics: false,
            events: EarlyEvents::default(),
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
    /// Needs the `watch` feature (the CLI turns it on).
    #[cfg(feature = "watch")]
    #[doc(alias = "hot reload")]
    pub fn watch_config(mut self, enabled: bool) -> Self {
        self.watch = enabled;
        self
    }

    /// A check every configuration read again from the file (by
    /// [`Runtime::reload`] or the watcher of [`watch_config`](Options::watch_config))
    /// must pass before it is applied; `Err` says why not, and then nothing is
    /// applied: the running configuration stays and an [`Event::ReloadFailed`]
    /// carries the message. The CLI checks here that a changed file is still
    /// trusted ([`trust`](crate::trust)). Text given to
    /// [`Runtime::reload_text`] is the embedder's own and is not checked.
    pub fn reload_check(
        mut self,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.reload_check = Some(ReloadCheck(Arc::new(check)));
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

    /// Lets servers ask the embedder's model for messages during a call: MCP
    /// sampling (`sampling/createMessage`, tools in sampling included); default
    /// off. When on, mcpbox declares the `sampling` capability (with `tools`), and
    /// each request arrives as [`Event::SamplingRequested`] with the server's
    /// params, to be answered with [`Runtime::answer_input`]:
    /// `InputAnswer::Accept(json!({"role": "assistant", "content": {"type":
    /// "text", "text": "…"}, "model": "…"}))`, or [`InputAnswer::Decline`]. The
    /// call waits (its timeout still running). When off, a 2025 server's request
    /// is refused (-32601, naming this option) and a 2026-07-28 call that asks ends
    /// as a tool error saying so.
    #[doc(alias = "sampling/createMessage")]
    pub fn sampling(mut self, enabled: bool) -> Self {
        self.sampling = enabled;
        self
    }

    /// Lets servers ask the user to open a URL during a call: MCP 2025-11-25
    /// URL-mode elicitation, for what the client must never see (a credential,
    /// a payment); default off. When on, mcpbox declares `elicitation.url`, and
    /// each request arrives as [`Event::UrlElicitationRequested`] with the URL
    /// to show the user; mcpbox never opens or fetches it. Answer with
    /// [`Runtime::answer_input`]: `InputAnswer::Accept(Value::Null)` once the
    /// user agreed to open it, or [`InputAnswer::Decline`]; the server learns
    /// the action alone. When off, such a request is refused with the reason.
    #[doc(alias = "elicitation")]
    pub fn url_elicitation(mut self, enabled: bool) -> Self {
        self.url_elicitation = enabled;
        self
    }

    /// The directories servers may work in (MCP roots), instead of the
    /// configuration's top-level `roots`; a server entry's own `roots` still win,
    /// and a sandboxed server gets at most its grants. Each is an absolute path or
    /// a `file://` URI. Servers are offered the `roots` capability only when they
    /// have roots. Change them later with [`Runtime::set_roots`].
    pub fn roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// Where OAuth tokens of remote servers are kept (default:
    /// [`TokenStore::default_location`], the file `mcpbox login` writes).
    #[doc(alias = "oauth")]
    pub fn token_store(mut self, store: TokenStore) -> Self {
        self.token_store = store;
        self
    }

    /// Runs the OAuth authorization when a remote server refuses a request
    /// (`401`, or `403` asking for more scopes), instead of failing it; default
    /// off. The authorization URL arrives as [`Event::AuthorizationRequired`];
    /// the request waits (up to `timeout`) for the browser's redirect to the
    /// loopback listener, then is sent again with the new token. When off, such
    /// a server is listed by [`Runtime::authorization_required`] and needs
    /// `mcpbox login`.
    #[doc(alias = "oauth")]
    pub fn authorize_on_demand(mut self, enabled: bool, timeout: Duration) -> Self {
        self.authorize_on_demand = enabled;
        self.authorization_timeout = timeout;
        self
    }

    /// Lets `ask` permission rules be asked (default off; [`input_requests`]
    /// implies it): a call such a rule covers waits, its timeout running, for an
    /// [`Event::InputRequested`] whose [`InputRequest::approval`] is set to be
    /// answered with [`Runtime::answer_input`] — [`InputAnswer::approve_once`],
    /// [`InputAnswer::approve_for_session`] or [`InputAnswer::Decline`]. Without
    /// it, such a call fails at once with [`CallError::Denied`].
    ///
    /// [`input_requests`]: Options::input_requests
    /// [`InputRequest::approval`]: crate::InputRequest::approval
    /// [`InputAnswer::approve_once`]: crate::InputAnswer::approve_once
    /// [`InputAnswer::approve_for_session`]: crate::InputAnswer::approve_for_session
    pub fn approvals(mut self, enabled: bool) -> Self {
        self.approvals = enabled;
        self
    }

    /// Where oversized tool results and the images and audio in results are
    /// written (docs/configuration.md, "Output limits"); `None` keeps no files (results
    /// are then cut, and media passed on inline). Default: a directory of its own
    /// per runtime, `results/<unix seconds>-<pid>` in the cache directory (a
    /// private temporary directory when there is no cache directory, or it is not
    /// safe to use). Directories are the user's and 0700, files 0600; a chosen
    /// directory that belongs to another user or that others may write is not
    /// used (every write is refused, saying why).
    pub fn results_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.results_dir = Some(dir);
        self
    }

    /// How long the default result directory of a runtime that ended is kept
    /// after its last write (default 7 days): a runtime that makes its directory
    /// removes older ones of runtimes whose process is gone.
    pub fn results_retention(mut self, retention: Duration) -> Self {
        self.results_retention = retention;
        self
    }

    /// Results larger than this many bytes are written to a file and passed on as
    /// their head, a note and a link to the file (overrides the configuration's
    /// `output.maxBytes`; default 100,000).
    pub fn max_result_bytes(mut self, bytes: u64) -> Self {
        self.embedder.max_result_bytes = Some(bytes);
        self
    }

    /// Keeps images and audio in results inline (base64) instead of writing them
    /// to files (overrides the configuration's `output.media`).
    pub fn inline_media(mut self, inline: bool) -> Self {
        self.embedder.inline_media = Some(inline);
        self
    }

    /// Appends the audit trail (one JSON line per call) to this file, instead of
    /// the configuration's `audit.file`. The file is created if missing; one
    /// that cannot be opened fails [`Options::open`].
    pub fn audit_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.embedder.audit_file = Some(path.into());
        self
    }

    /// Sends every call's audit record as an [`Event::Audit`] even when no audit
    /// file is written (with one, they are sent anyway).
    pub fn audit_events(mut self, enabled: bool) -> Self {
        self.embedder.audit_events = enabled;
        self
    }

    /// Also reads the permission rules of a Claude Code settings file next to the
    /// configuration (`.claude/settings.json` and `.claude/settings.local.json` in
    /// its directory): their `allow` / `ask` / `deny` rules about MCP tools join the
    /// configuration's; rules about Claude Code's own tools are skipped (docs/configuration.md,
    /// "Permissions"). No such file is a configuration issue; default off.
    pub fn claude_settings(mut self, enabled: bool) -> Self {
        self.embedder.claude_settings = enabled;
        self
    }

    /// Counts calls (by server, tool and outcome, with their durations), server
    /// restarts, uptime and guest restarts, for [`Runtime::metrics`], the `/metrics`
    /// and dashboard of [`Runtime::serve_http`] (docs/gateway.md, "Metrics"). Default off.
    /// The guest then reports every call as a few integers (the WIT's
    /// `call-counted`); with [`Options::audit_events`] on as well, the runtime
    /// also keeps the latest calls' audit records ([`Runtime::recent_calls`]).
    /// Measured cost: docs/gateway.md, "Metrics".
    pub fn metrics(mut self, enabled: bool) -> Self {
        self.metrics = enabled;
        self
    }

    /// Records call arguments in the audit trail (overrides the configuration's
    /// `audit.arguments`; default off).
    pub fn audit_arguments(mut self, enabled: bool) -> Self {
        self.embedder.audit_arguments = Some(enabled);
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

    /// How long the driver thread polls its servers' pipes and the callers'
    /// jobs before it sleeps, each time it runs out of work (default
    /// [`DEFAULT_BUSY_POLL`], 50 µs; `Duration::ZERO` sleeps at once).
    ///
    /// An answer or a caller's next job found while it polls wakes nobody. Where
    /// a wake-up is dear, as on a VM whose idle vCPUs halt, this halves a
    /// sequential call's time and lowers the CPU that the processes use in all,
    /// while the driver's own CPU per call grows by the time it polls
    /// (docs/PERFORMANCE.md, "A sequential call"). It never polls longer than
    /// this after a turn, so an idle runtime sleeps, and it polls less while
    /// what it waits for comes later than this (a server that answers in
    /// milliseconds is waited for asleep after a few calls).
    pub fn busy_poll(mut self, within: Duration) -> Self {
        self.busy_poll = within;
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

    /// A receiver of every event of the runtime these options open, from its
    /// start on: the first servers' status changes, the tools they changed
    /// since the last run ([`Event::ToolChanged`]), their warnings. The runtime
    /// runs on its own thread from the moment it opens, so a subscription made
    /// with [`Runtime::events`] after [`open`](Options::open) returns may come
    /// after some of those. A clone of these options does not carry it.
    pub fn subscribe(&mut self) -> broadcast::Receiver<Event> {
        self.events
            .0
            .get_or_insert_with(Events::default)
            .subscribe()
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
    /// Runs the call as a task (MCP 2025-11-25) when its tool allows one
    /// (`execution.taskSupport: "optional"`); a tool that requires one runs as
    /// one whatever this says. Either way the task's statuses arrive as
    /// [`Event::TaskStatus`] while the call waits. A tool that takes no task, or a
    /// 2026-07-28 server that does not offer the tasks extension, fails the call
    /// with [`CallError::InvalidArguments`]. To a 2026-07-28 server that offers
    /// it, the call declares the extension (only such calls do: a plain call
    /// stays plain), and the server runs it as a task.
    pub task: bool,
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
    events: Events,
    stopped: watch::Receiver<Option<String>>,
    /// The problems of the configuration last applied.
    /// Shared with the driver, which sets it before it announces a reload.
    issues: Arc<std::sync::Mutex<Vec<ConfigIssue>>>,
    diagnostics: DiagnosticsMap,
    oauth: Arc<OAuth>,
    /// Bare instances of the runtime's guest, to describe configuration text
    /// for OAuth before a reload applies it.
    describer: crate::describe::Describer,
    /// Where the configuration comes from, for `reload`.
    config: ConfigSource,
    /// What a configuration read again from the file must pass (`Options::reload_check`).
    reload_check: Option<ReloadCheck>,
    /// Reloads one at a time, so their order is the order they were asked in.
    reloading: tokio::sync::Mutex<()>,
    /// The guest's memory limit, which bounds the arguments of a call.
    memory_limit: usize,
    /// What went wrong while opening without stopping it.
    startup_warnings: Vec<String>,
    /// The counts of `Options::metrics`, when on.
    monitor: Option<Arc<Monitor>>,
    /// The boundary crossings the host counts (see `Runtime::guest_crossings`).
    crossings: Arc<std::sync::atomic::AtomicU64>,
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
            ConfigSource::File(path) => match &options.file_text {
                Some(text) if text.len() > MAX_CONFIG_BYTES => {
                    return Err(too_large(&path.display().to_string()));
                }
                Some(text) => (path.display().to_string(), text.clone()),
                None => (path.display().to_string(), read_config(path)?),
            },
        };
        #[cfg(feature = "watch")]
        let text_at_open = text.clone();

        let guest = options.guest.clone();
        let cache = match (&options.cache_dir, &options.config_dir) {
            (Some(cache), Some(key)) => Some(engine::CacheDirs {
                cache: cache.clone(),
                key: key.clone(),
            }),
            _ => None,
        };
        let state_dir = options.cache_dir.clone();
        // Pins are kept per configuration file, beside the trusted ones.
        let pins_at = match &options.config {
            ConfigSource::File(path) => options.config_dir.clone().map(|dir| (dir, path.clone())),
            ConfigSource::Text { .. } => None,
        };
        let (engine, component, (state_store, pin_store), startup_warnings) =
            tokio::task::spawn_blocking(move || {
                let engine = engine::engine()?;
                let mut warnings = Vec::new();
                let (state_store, warning) = StateStore::open(state_dir.as_deref());
                warnings.extend(warning);
                let (pin_store, warning) = match &pins_at {
                    Some((dir, config)) => crate::pins::PinStore::open(Some(dir), Some(config)),
                    None => crate::pins::PinStore::open(None, None),
                };
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
                        engine::load_component(
                            &engine,
                            &wasm,
                            &digest,
                            cache.as_ref(),
                            &mut warnings,
                        )?
                    }
                };
                Ok::<_, Error>((engine, component, (state_store, pin_store), warnings))
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
        // The driver thread's poll: connections register their pipes with it
        // from the first server's start on.
        let (waiter, readiness) = crate::transport::readiness::Readiness::new(options.busy_poll)
            .map_err(|e| Error::Guest(format!("the driver's poll could not be made: {e}")))?;
        let readiness = Arc::new(readiness);
        let wake = Arc::new(Wake::new(readiness.clone()));
        let diagnostics = DiagnosticsMap::default();
        // Subscribed to already (`Options::subscribe`), or from now on.
        let events_tx = options.events.0.clone().unwrap_or_default();
        let oauth = Arc::new(OAuth::new(
            options.token_store.clone(),
            options.authorize_on_demand,
            options.authorization_timeout,
            events_tx.clone(),
        ));
        let results_place = match &options.results_dir {
            Some(Some(dir)) => Place::Chosen(dir.clone()),
            Some(None) => Place::Nowhere,
            None => Place::Default(options.cache_dir.clone()),
        };
        let config_file = match &options.config {
            ConfigSource::File(path) => Some(path.as_path()),
            ConfigSource::Text { .. } => None,
        };
        let places =
            crate::transport::places::Places::new(&origin, config_file, options.cache_dir.clone());
        let results_limits = Limits {
            max_file: options.policy.max_message_bytes as u64,
            max_total: options.policy.max_result_files_bytes,
            max_files: options.policy.max_result_files,
            retention: options.results_retention,
        };
        let factory = Factory::new(
            engine,
            &component,
            options.policy.clone(),
            options.memory_limit,
            wake.clone(),
            diagnostics.clone(),
            (origin, text),
        )?
        .with_state_store(state_store)
        .with_pin_store(pin_store)
        .with_input_requests(options.input_requests)
        .with_sampling(options.sampling)
        .with_url_elicitation(options.url_elicitation)
        .with_roots(options.roots.clone())
        .with_oauth(oauth.clone())
        .with_approvals(options.approvals)
        .with_call_counts(options.metrics)
        .with_results(Arc::new(Results::new(results_place, results_limits)))
        .with_places(places)
        .with_embedder(options.embedder.clone());
        let started = factory.start().await?;
        let monitor = options
            .metrics
            .then(|| Arc::new(Monitor::new(&started.servers)));

        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        let (servers_tx, servers_rx) = watch::channel(Arc::new(started.servers));
        let (tools_tx, tools_rx) = watch::channel(Arc::new(started.tools));
        let (stopped_tx, stopped_rx) = watch::channel(None);
        let issues = Arc::new(std::sync::Mutex::new(started.issues));
        let crossings = factory.crossings();
        let describer = factory.describer();
        let published = Published {
            issues: issues.clone(),
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
            (waiter, readiness),
        )
        .with_subreaper(subreaper)
        .with_audit(started.audit)
        .with_monitor(monitor.clone());
        // Its own thread, waiting on the pipes itself; inside the embedder's
        // runtime for what runs there (see `crate::driver`).
        let tokio = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("mcpbox-driver".into())
            .spawn(move || tokio.block_on(driver.run()))
            .map_err(|e| Error::Guest(format!("the driver's thread could not start: {e}")))?;

        let runtime = Runtime {
            inner: Arc::new(Inner {
                jobs: jobs_tx,
                wake,
                servers: servers_rx,
                tools: tools_rx,
                events: events_tx,
                stopped: stopped_rx,
                issues,
                diagnostics,
                oauth,
                describer,
                config: options.config.clone(),
                reload_check: options.reload_check.clone(),
                reloading: tokio::sync::Mutex::new(()),
                memory_limit: options.memory_limit,
                startup_warnings,
                monitor,
                crossings,
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
        let origin = path.display().to_string();
        let text = match read_config(path) {
            Ok(text) => text,
            Err(e) => {
                let _ = self.inner.events.send(Event::ReloadFailed {
                    origin,
                    error: e.to_string(),
                });
                return Err(e);
            }
        };
        self.apply_file(origin, text, 0).await
    }

    /// Applies text read again from the configuration file, once it passed the
    /// [`Options::reload_check`] (otherwise an [`Event::ReloadFailed`] and `Err`).
    pub(crate) async fn apply_file(
        &self,
        origin: String,
        text: String,
        file_events: u32,
    ) -> Result<ReloadReport, Error> {
        if let Some(check) = self.inner.reload_check.clone() {
            let checked = {
                let text = text.clone();
                // The check may read files (the CLI's trust store).
                tokio::task::spawn_blocking(move || (check.0)(&text)).await
            };
            let refused = match checked {
                Ok(Ok(())) => None,
                Ok(Err(message)) => Some(message),
                Err(e) => Some(format!("the reload check failed: {e}")),
            };
            if let Some(message) = refused {
                let _ = self.inner.events.send(Event::ReloadFailed {
                    origin: origin.clone(),
                    error: message.clone(),
                });
                return Err(Error::Config { origin, message });
            }
        }
        self.apply(origin, text, file_events).await
    }

    /// Applies configuration text as a diff, as [`reload`](Runtime::reload) does;
    /// `origin` names it in messages. Later reloads from the file (by
    /// [`reload`](Runtime::reload) or the watcher) replace it again.
    pub async fn reload_text(
        &self,
        origin: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<ReloadReport, Error> {
        let (origin, text) = (origin.into(), text.into());
        // The cap of a start: refused before it is copied into the guest's memory.
        if text.len() > MAX_CONFIG_BYTES {
            let e = too_large(&origin);
            let _ = self.inner.events.send(Event::ReloadFailed {
                origin,
                error: e.to_string(),
            });
            return Err(e);
        }
        self.apply(origin, text, 0).await
    }

    /// Sends one reload to the driver and records its issues.
    pub(crate) async fn apply(
        &self,
        origin: String,
        text: String,
        file_events: u32,
    ) -> Result<ReloadReport, Error> {
        let _one_at_a_time = self.inner.reloading.lock().await;
        // Before the guest starts the new servers: their requests find their
        // `oauth` fields, and tokens bound to the URL each is configured with.
        // Described by a bare instance of the runtime's guest: the reload
        // itself reports what it refuses.
        if let Ok(Ok(described)) = self.inner.describer.describe(&origin, &text).await {
            self.inner.oauth.learn(&described);
        }
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
            // The driver set the issues before it announced the reload.
            Ok(Ok(report)) => Ok(report),
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
    pub(crate) fn stopped_watch(&self) -> watch::Receiver<Option<String>> {
        self.inner.stopped.clone()
    }

    /// Problems met while opening that did not stop it, for the embedder to show:
    /// a component cache that was not used or a cached component that was not
    /// loaded, and why (see [`Options::cache_dir`]).
    pub fn startup_warnings(&self) -> &[String] {
        &self.inner.startup_warnings
    }

    /// The counts of [`Options::metrics`] now: calls by server, tool and outcome,
    /// their durations, server restarts and uptime, guest restarts. `None` when
    /// metrics are off. [`MetricsSnapshot::prometheus_text`] writes it as
    /// `/metrics` serves it.
    pub fn metrics(&self) -> Option<MetricsSnapshot> {
        let monitor = self.inner.monitor.as_ref()?;
        Some(monitor.snapshot(&self.servers()))
    }

    /// The latest calls' audit records (up to 200), oldest first; empty unless
    /// both [`Options::metrics`] and audit records ([`Options::audit_events`], or
    /// an audit file) are on.
    pub fn recent_calls(&self) -> Vec<AuditRecord> {
        self.inner
            .monitor
            .as_ref()
            .map(|m| m.recent_calls())
            .unwrap_or_default()
    }

    /// Waits until the runtime stops, and returns why.
    pub(crate) async fn stopped_wait(&self) -> String {
        let mut stopped = self.inner.stopped.clone();
        match stopped.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "it stopped".to_owned(),
        }
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
                reason = stopped.wait_for(Option::is_some) => {
                    // The reason's guard goes before the servers are read: the
                    // driver sets the reason under the servers' lock, so that
                    // what is read here is the last snapshot.
                    drop(reason);
                    return self.servers();
                }
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
            sandbox: d.sandbox.clone(),
        })
    }

    /// The remote servers that need an OAuth login, by name, with the reason
    /// (which names the command to run). A server leaves the list once an
    /// authorization for it succeeds.
    #[doc(alias = "oauth")]
    pub fn authorization_required(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.oauth.required()
    }

    /// The OAuth authorization URLs waiting for the user (with
    /// [`Options::authorize_on_demand`]), by server: what
    /// [`Event::AuthorizationRequired`] carried, for a subscriber that came later.
    #[doc(alias = "oauth")]
    pub fn pending_authorizations(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.oauth.pending()
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
    /// warnings, server logs, input requests) from now on. The runtime runs on
    /// its own thread, so its first events may come before this call:
    /// [`Options::subscribe`] sees them all.
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
        self.call_tool_json_as(name, arguments, options, None).await
    }

    /// Like [`call_tool`](Runtime::call_tool), under the permission profile
    /// `profile` (`profiles` in the configuration): the call must pass that
    /// profile's rules as well as the top-level ones, as a client of `mcpbox
    /// serve --profile` does. An unknown profile is [`CallError::Denied`].
    pub async fn call_tool_as(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
        profile: Option<&str>,
    ) -> Result<CallResult, CallError> {
        let arguments = match arguments {
            Value::Null => String::new(),
            other => other.to_string(),
        };
        self.call_tool_json_as(name, arguments, options, profile)
            .await
    }

    async fn call_tool_json_as(
        &self,
        name: &str,
        arguments: String,
        options: CallOptions,
        profile: Option<&str>,
    ) -> Result<CallResult, CallError> {
        self.check_arguments_size(name, arguments.len())?;
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Call {
            tool: name.to_owned(),
            dialect: None,
            arguments,
            timeout: options.timeout,
            task: options.task,
            profile: profile.map(str::to_owned),
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }

    /// The guest's memory limit ([`Options::memory_limit`]), in bytes.
    pub(crate) fn guest_memory_limit(&self) -> usize {
        self.inner.memory_limit
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
    ///
    /// It also answers an [`Event::SamplingRequested`] (MCP sampling):
    /// [`InputAnswer::Accept`] with a `CreateMessageResult` (`content`, a content
    /// block or a list of them, and `model` required; `role` defaults to
    /// `assistant`), or [`InputAnswer::Decline`] / [`InputAnswer::Cancel`] to
    /// refuse (a 2025 server gets error -1, "User rejected sampling request"; a
    /// 2026-07-28 call ends as a tool error).
    #[doc(alias = "elicitation")]
    #[doc(alias = "sampling")]
    pub async fn answer_input(&self, id: u64, answer: InputAnswer) -> Result<(), String> {
        let (reply, done) = oneshot::channel();
        self.submit(Job::AnswerInput { id, answer, reply })
            .map_err(|reason| format!("the mcpbox runtime stopped: {reason}"))?;
        let answered = done.await.unwrap_or_else(|_| {
            Err(format!(
                "the mcpbox runtime stopped: {}",
                self.stop_reason()
            ))
        });
        if answered.is_ok() {
            let event = Event::InputAnswered(id);
            if let Some(monitor) = &self.inner.monitor {
                monitor.observe(&event);
            }
            let _ = self.inner.events.send(event);
        }
        answered
    }

    /// The monitor of [`Options::metrics`] (the dashboard's approvals, log
    /// messages and call timeline), when metrics are on.
    pub(crate) fn monitor(&self) -> Option<&Monitor> {
        self.inner.monitor.as_deref()
    }

    /// Sets the directories servers may work in (MCP roots), replacing those of
    /// [`Options::roots`] or, with `None`, going back to the configuration's
    /// top-level `roots`. A server entry's own `roots` still win, and a sandboxed
    /// server gets at most its grants. Running servers whose roots change are told
    /// (2025 sessions: `notifications/roots/list_changed`, after which a server
    /// such as the filesystem server asks for them again; a 2025 server that was
    /// connected without roots is reconnected to be offered them, failing its
    /// calls in flight; 2026-07-28 servers see them on their next request). Kept
    /// for a guest that replaces a failed one.
    ///
    /// `Err` naming the root when one is not an absolute path or a local
    /// `file://` URI (nothing changes then), or when the runtime stopped.
    pub async fn set_roots(&self, roots: Option<Vec<Root>>) -> Result<(), String> {
        let (reply, done) = oneshot::channel();
        self.submit(Job::SetRoots { roots, reply })
            .map_err(|reason| format!("the mcpbox runtime stopped: {reason}"))?;
        done.await.unwrap_or_else(|_| {
            Err(format!(
                "the mcpbox runtime stopped: {}",
                self.stop_reason()
            ))
        })
    }

    /// How many times the component boundary was crossed since the runtime
    /// opened, as the host counts them: the driver's entries into the guest
    /// (one step per turn, which takes every queued job, what every stdio
    /// server sent and the time; one per other job, such as a reload; two per
    /// republished snapshot) and the guest's calls of the stdio `transport`
    /// imports (`send`, `receive`, `subscribe`), which a step makes
    /// unnecessary. A sequential call to a stdio server costs two: the step
    /// that sends it and the step that takes its answer. For tests and
    /// benchmarks of the boundary's cost (the clock and `poll`, which
    /// wasmtime-wasi implements, are not counted).
    pub fn guest_crossings(&self) -> u64 {
        self.inner
            .crossings
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Queues a job for the driver and wakes it.
    pub(crate) fn submit(&self, job: Job) -> Result<(), String> {
        self.inner
            .wake
            // The job a failed send gives back is dropped; the caller hears why.
            .queue(|| self.inner.jobs.send(job).map_err(drop))
            .map_err(|()| self.stop_reason())
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
