//! Making a guest instance ready to serve: a fresh store with its limits, the
//! configuration loaded, every server starting, and the first snapshots taken.
//!
//! Kept apart from the driver because it runs twice in a runtime's life: when
//! the runtime opens, and again if the guest traps (a bug, or a memory limit
//! hit), so the host can replace a broken guest without going down itself.

use std::sync::Arc;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

use crate::Error;
use crate::audit::AuditLog;
use crate::bindings::{
    Mcpbox, McpboxPre, blobs, control, pins, registry, remote, state, transport,
};
use crate::engine::EPOCH_TICK;
use crate::imports::blobs::Results;
use crate::imports::state::StateStore;
use crate::store::{DiagnosticsMap, HostState, Policy, Wake};
use crate::transport::stdio::Supervisors;
use crate::types::{ConfigIssue, ServerStatus, Tool};

/// How long one call into the guest may run wasm code before it is stopped as
/// runaway, beyond the time it asked to block for. Host calls (polling) count
/// too, so this is a bound, not a budget of pure computation.
pub(crate) const GUEST_BUDGET_MS: u64 = 10_000;

/// Tools read from the guest per `tools` call: the guest copies one page at a
/// time, so a large registry never needs a second copy of itself in its memory.
const TOOLS_PAGE: u32 = 256;

/// The most tools [`read_tools`] makes room for before reading them (about 7 MB
/// of list; W6's 71,000 tools grow past it).
const PRESIZED_TOOLS: usize = 65_536;

/// Reads every tool in the registry, a page at a time, into a list sized by the
/// servers' tool counts. Grown by doubling instead, the list of 10,000 tools was
/// the process's largest heap peak (2.75 MB: the old and the new buffer at once,
/// for 16,384 places); sized, the peak heap of W4 went from 5.93 to 5.00 MB
/// (heaptrack over the benchmark's worker).
pub(crate) async fn read_tools(
    registry: &registry::Guest,
    store: &mut Store<HostState>,
    servers: &[registry::ServerStatus],
) -> wasmtime::Result<Vec<Tool>> {
    // The counts are the guest's word: a hint, capped, never trusted with the
    // host's memory (a guest that claims four billion tools gets a list that
    // grows as usual past the cap).
    let expected = servers
        .iter()
        .fold(0usize, |n, s| n.saturating_add(s.tool_count as usize))
        .min(PRESIZED_TOOLS);
    let mut tools: Vec<Tool> = Vec::with_capacity(expected);
    loop {
        let start = u32::try_from(tools.len()).unwrap_or(u32::MAX);
        let page = registry.call_tools(&mut *store, start, TOOLS_PAGE).await?;
        let full = page.len() == TOOLS_PAGE as usize;
        tools.extend(page.into_iter().map(Tool::from));
        if !full {
            return Ok(tools);
        }
    }
}

/// Every tool in a dialect, a page at a time as [`read_tools`] reads them;
/// `Err` when the guest knows no such dialect.
pub(crate) async fn read_adapted_tools(
    registry: &registry::Guest,
    store: &mut Store<HostState>,
    dialect: String,
) -> wasmtime::Result<Result<crate::types::AdaptedTools, String>> {
    let mut start = 0u32;
    let mut all = crate::types::AdaptedTools::new(String::new());
    loop {
        let page = match registry
            .call_adapted_tools(&mut *store, &dialect, start, TOOLS_PAGE)
            .await?
        {
            Ok(page) => page,
            Err(e) => return Ok(Err(e)),
        };
        // A page covers `TOOLS_PAGE` tools of the registry, adapted or refused.
        let read = u32::try_from(page.tools.len() + page.refused.len()).unwrap_or(u32::MAX);
        all.extend(page);
        if read < TOOLS_PAGE {
            all.dialect = dialect;
            return Ok(Ok(all));
        }
        start = start.saturating_add(read);
    }
}

/// Everything needed to make a new instance of the same guest and configuration.
pub(crate) struct Factory {
    engine: Engine,
    pre: McpboxPre<HostState>,
    policy: Policy,
    memory_limit: usize,
    wake: Arc<Wake>,
    diagnostics: DiagnosticsMap,
    /// What the guest remembers across runs (`mcpbox:runtime/state`).
    state_store: Arc<StateStore>,
    /// The pinned tool definitions kept for the configuration (`mcpbox:runtime/pins`).
    pin_store: Arc<crate::pins::PinStore>,
    /// Where the `blobs` import writes.
    results: Arc<Results>,
    /// What the embedder sets over the configuration.
    embedder: EmbedderSettings,
    /// The server processes of every instance, so a shutdown can wait for them.
    supervisors: Arc<Supervisors>,
    /// Where servers run and keep private files, for every instance.
    places: Arc<crate::transport::places::Places>,
    /// The boundary crossings the host counts, over every instance.
    crossings: Arc<std::sync::atomic::AtomicU64>,
    origin: String,
    text: String,
    /// Whether servers may ask for input (`registry.enable-input-requests`).
    input_requests: bool,
    /// The runtime's OAuth state, which outlives instances.
    oauth: Option<Arc<crate::oauth::OAuth>>,
    /// Whether `ask` rules are asked (`registry.enable-approvals`).
    approvals: bool,
    /// Whether servers may ask for messages from the model (`registry.enable-sampling`).
    sampling: bool,
    /// Whether servers may ask the user to open a URL
    /// (`registry.enable-url-elicitation`).
    url_elicitation: bool,
    /// Whether calls are counted for metrics (`registry.enable-call-counts`).
    call_counts: bool,
    /// The embedder's roots (`registry.set-roots`), as last set.
    roots: Option<Vec<crate::types::Root>>,
}

/// An instance that has loaded its configuration and started its servers.
pub(crate) struct Started {
    pub store: Store<HostState>,
    pub guest: Mcpbox,
    pub issues: Vec<ConfigIssue>,
    pub servers: Vec<ServerStatus>,
    pub tools: Vec<Tool>,
    /// The audit trail's file, when the embedder or the configuration names one.
    pub audit: Option<Arc<AuditLog>>,
}

/// What the embedder sets over the configuration (see `Options`).
#[derive(Debug, Clone, Default)]
pub(crate) struct EmbedderSettings {
    pub max_result_bytes: Option<u64>,
    pub inline_media: Option<bool>,
    /// Whether audit events reach the embedder even with no file.
    pub audit_events: bool,
    pub audit_arguments: Option<bool>,
    /// Overrides the configuration's `audit.file`.
    pub audit_file: Option<std::path::PathBuf>,
    /// Also read the permission rules of `.claude/settings.json` (and
    /// `settings.local.json`) next to the configuration.
    pub claude_settings: bool,
}

impl Factory {
    /// Links the host's imports for `component`.
    pub fn new(
        engine: Engine,
        component: &Component,
        policy: Policy,
        memory_limit: usize,
        wake: Arc<Wake>,
        diagnostics: DiagnosticsMap,
        (origin, text): (String, String),
    ) -> Result<Factory, Error> {
        let mut linker = Linker::new(&engine);
        let link = |linker: &mut Linker<HostState>| -> wasmtime::Result<()> {
            // io, clocks, random and stdio with an empty context: nothing here
            // reaches files, sockets or the environment.
            wasmtime_wasi::p2::add_to_linker_proxy_interfaces_async(linker)?;
            // wasi:http, whose requests the hook sends only under a `remote` grant.
            wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
            transport::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            remote::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            control::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            state::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            pins::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            blobs::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
            Ok(())
        };
        link(&mut linker)
            .map_err(|e| Error::Guest(format!("linking the host imports failed: {e:#}")))?;
        let pre = linker
            .instantiate_pre(component)
            .and_then(McpboxPre::new)
            .map_err(|e| Error::Guest(format!("the guest does not fit this host: {e:#}")))?;
        Ok(Factory {
            engine,
            pre,
            policy,
            memory_limit,
            wake,
            diagnostics,
            state_store: Arc::default(),
            pin_store: Arc::default(),
            results: Arc::new(Results::none()),
            embedder: EmbedderSettings::default(),
            supervisors: Arc::default(),
            places: Arc::default(),
            crossings: Arc::default(),
            origin,
            text,
            input_requests: false,
            oauth: None,
            approvals: false,
            sampling: false,
            url_elicitation: false,
            call_counts: false,
            roots: None,
        })
    }

    /// Bare instances of the same guest, to describe configuration text
    /// (`registry.describe-config`) beside the running one.
    pub fn describer(&self) -> crate::describe::Describer {
        crate::describe::Describer::new(self.engine.clone(), self.pre.clone())
    }

    /// Lets `ask` rules be asked (approvals) in every instance made from now on.
    pub fn with_approvals(mut self, enabled: bool) -> Factory {
        self.approvals = enabled;
        self
    }

    /// Lets servers ask for input (elicitation) in every instance made from now on.
    pub fn with_input_requests(mut self, enabled: bool) -> Factory {
        self.input_requests = enabled;
        self
    }

    /// Lets servers ask for messages from the model (sampling) in every instance
    /// made from now on.
    pub fn with_sampling(mut self, enabled: bool) -> Factory {
        self.sampling = enabled;
        self
    }

    /// Lets servers ask the user to open a URL (URL-mode elicitation) in every
    /// instance made from now on.
    pub fn with_url_elicitation(mut self, enabled: bool) -> Factory {
        self.url_elicitation = enabled;
        self
    }

    /// Counts calls for metrics in every instance made from now on.
    pub fn with_call_counts(mut self, enabled: bool) -> Factory {
        self.call_counts = enabled;
        self
    }

    /// The embedder's roots, for every instance made from now on.
    pub fn with_roots(mut self, roots: Option<Vec<crate::types::Root>>) -> Factory {
        self.roots = roots;
        self
    }

    /// Keeps the embedder's roots as last set, for an instance that replaces a
    /// trapped one.
    pub fn set_roots(&mut self, roots: Option<Vec<crate::types::Root>>) {
        self.roots = roots;
    }

    /// Adds OAuth to the remote servers of every instance made from now on.
    pub fn with_oauth(mut self, oauth: Arc<crate::oauth::OAuth>) -> Factory {
        self.oauth = Some(oauth);
        self
    }

    /// The configuration a fresh instance loads from now on: the last one a
    /// reload applied, so a guest replaced after a trap runs what was running.
    pub fn set_config(&mut self, origin: String, text: String) {
        self.origin = origin;
        self.text = text;
    }

    /// Where the `blobs` import writes (nowhere by default).
    pub fn with_results(mut self, results: Arc<Results>) -> Factory {
        self.results = results;
        self
    }

    /// Sets the embedder's overrides (`registry.set-options`) and the audit log
    /// file the embedder names (the configuration may name one too).
    pub fn with_embedder(mut self, options: EmbedderSettings) -> Factory {
        self.embedder = options;
        self
    }

    /// Where the servers of every instance made from now on run and keep private files.
    pub fn with_places(mut self, places: crate::transport::places::Places) -> Factory {
        self.places = Arc::new(places);
        self
    }

    /// The server processes of every instance made by this factory.
    pub fn supervisors(&self) -> Arc<Supervisors> {
        self.supervisors.clone()
    }

    /// The boundary crossings the host counts, over every instance made by
    /// this factory (see `Runtime::guest_crossings`).
    pub fn crossings(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.crossings.clone()
    }

    /// Keeps the guest's `state` entries in `state_store` (in memory only by default).
    pub fn with_state_store(mut self, state_store: Arc<StateStore>) -> Factory {
        self.state_store = state_store;
        self
    }

    /// Keeps the guest's pinned tool definitions in `pin_store` (in memory only
    /// by default).
    pub fn with_pin_store(mut self, pin_store: Arc<crate::pins::PinStore>) -> Factory {
        self.pin_store = pin_store;
        self
    }

    /// Instantiates the guest, loads the configuration and starts the servers.
    pub async fn start(&self) -> Result<Started, Error> {
        let mut state = HostState::new(
            self.policy.clone(),
            self.wake.clone(),
            self.memory_limit,
            self.diagnostics.clone(),
        );
        state.state_store = self.state_store.clone();
        state.pin_store = self.pin_store.clone();
        state.grants.oauth = self.oauth.clone();
        state.results = self.results.clone();
        state.supervisors = self.supervisors.clone();
        state.places = self.places.clone();
        state.crossings = self.crossings.clone();
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limits);
        budget(&mut store, 0);
        let guest = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| Error::Guest(format!("instantiating the guest failed: {e:#}")))?;
        let registry = guest.mcpbox_runtime_registry();
        let trapped = |what: &str| {
            let what = what.to_owned();
            move |e: wasmtime::Error| Error::Guest(format!("the guest failed while {what}: {e:#}"))
        };
        let mut issues = registry
            .call_load_config(&mut store, &self.origin, &self.text)
            .await
            .map_err(trapped("loading the configuration"))?
            .map_err(|message| Error::Config {
                origin: self.origin.clone(),
                message,
            })?;
        // What the configuration's remote servers need for OAuth, as this
        // guest reads it, before any of them starts.
        if let Some(oauth) = &self.oauth
            && let Ok(described) = registry
                .call_describe_config(&mut store, &self.origin, &self.text)
                .await
                .map_err(trapped("describing the configuration"))?
        {
            oauth.learn(&described);
        }
        if self.embedder.claude_settings {
            let files = claude_settings_files(&self.origin);
            if files.is_empty() {
                issues.push(registry::ConfigIssue {
                    server: None,
                    field: None,
                    message: format!(
                        "no Claude Code settings were read: there is no .claude/settings.json \
                         (or settings.local.json) next to {}",
                        self.origin
                    ),
                });
            }
            for path in files {
                let text = std::fs::read_to_string(&path).map_err(|e| Error::Config {
                    origin: path.display().to_string(),
                    message: format!("the Claude Code settings cannot be read: {e}"),
                })?;
                issues.extend(
                    registry
                        .call_load_claude_settings(&mut store, &path.display().to_string(), &text)
                        .await
                        .map_err(trapped("reading the Claude Code settings"))?,
                );
            }
        }
        if self.input_requests {
            registry
                .call_enable_input_requests(&mut store)
                .await
                .map_err(trapped("enabling input requests"))?;
        }
        if self.sampling {
            registry
                .call_enable_sampling(&mut store)
                .await
                .map_err(trapped("enabling sampling"))?;
        }
        if self.url_elicitation {
            registry
                .call_enable_url_elicitation(&mut store)
                .await
                .map_err(trapped("enabling URL elicitation"))?;
        }
        if self.call_counts {
            registry
                .call_enable_call_counts(&mut store)
                .await
                .map_err(trapped("enabling call counts"))?;
        }
        if self.approvals {
            registry
                .call_enable_approvals(&mut store)
                .await
                .map_err(trapped("enabling approvals"))?;
        }
        let audit = match &self.embedder.audit_file {
            Some(path) => Some(path.clone()),
            None => registry
                .call_audit_file(&mut store)
                .await
                .map_err(trapped("reading the audit settings"))?
                .and_then(|written| {
                    written
                        .map(|written| crate::audit::resolve_path(&self.origin, &written))
                        .transpose()
                })
                .map_err(|message| Error::Config {
                    origin: self.origin.clone(),
                    message,
                })?,
        };
        let audit = audit
            .map(|path| AuditLog::open(&path).map(Arc::new))
            .transpose()
            .map_err(|message| Error::Config {
                origin: self.origin.clone(),
                message,
            })?;
        let options = registry::EmbedderOptions {
            max_result_bytes: self.embedder.max_result_bytes,
            inline_media: self.embedder.inline_media,
            audit: Some(self.embedder.audit_events || audit.is_some()),
            audit_arguments: self.embedder.audit_arguments,
        };
        registry
            .call_set_options(&mut store, options)
            .await
            .map_err(trapped("setting options"))?;
        if let Some(roots) = &self.roots {
            let roots: Vec<_> = roots.iter().map(Into::into).collect();
            registry
                .call_set_roots(&mut store, Some(&roots))
                .await
                .map_err(trapped("setting roots"))?
                .map_err(|message| Error::Config {
                    origin: "Options::roots".into(),
                    message,
                })?;
        }
        registry
            .call_start(&mut store)
            .await
            .map_err(trapped("starting servers"))?;
        let servers = registry
            .call_servers(&mut store)
            .await
            .map_err(trapped("listing servers"))?;
        let tools = read_tools(registry, &mut store, &servers)
            .await
            .map_err(trapped("listing tools"))?;
        Ok(Started {
            store,
            guest,
            issues: issues.into_iter().map(Into::into).collect(),
            servers: servers.into_iter().map(Into::into).collect(),
            tools,
            audit,
        })
    }
}

/// Allows the guest to run for `blocking_ms` (the time it will deliberately
/// block) plus [`GUEST_BUDGET_MS`] before it traps as runaway.
pub(crate) fn budget(store: &mut Store<HostState>, blocking_ms: u64) {
    let tick_ms = EPOCH_TICK.as_millis() as u64;
    store.set_epoch_deadline((blocking_ms + GUEST_BUDGET_MS).div_ceil(tick_ms));
}

/// The Claude Code settings files next to the configuration that exist:
/// `.claude/settings.json`, then `.claude/settings.local.json`, in the
/// configuration file's directory (the current directory for configuration text
/// that is not a file).
fn claude_settings_files(origin: &str) -> Vec<std::path::PathBuf> {
    let config = std::path::Path::new(origin);
    let dir = config
        .parent()
        .filter(|_| config.is_file())
        .unwrap_or(std::path::Path::new(""));
    ["settings.json", "settings.local.json"]
        .iter()
        .map(|name| dir.join(".claude").join(name))
        .filter(|path| path.is_file())
        .collect()
}
