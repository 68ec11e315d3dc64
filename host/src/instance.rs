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
use crate::bindings::{Mcpbox, McpboxPre, control, registry, remote, state, transport};
use crate::engine::EPOCH_TICK;
use crate::imports::state::Memo;
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

/// Reads every tool in the registry, a page at a time.
pub(crate) async fn read_tools(
    registry: &registry::Guest,
    store: &mut Store<HostState>,
) -> wasmtime::Result<Vec<Tool>> {
    let mut tools: Vec<Tool> = Vec::new();
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

/// Everything needed to make a new instance of the same guest and configuration.
pub(crate) struct Factory {
    engine: Engine,
    pre: McpboxPre<HostState>,
    policy: Policy,
    memory_limit: usize,
    wake: Arc<Wake>,
    diagnostics: DiagnosticsMap,
    /// What the guest remembers across runs (`mcpbox:runtime/state`).
    memo: Arc<Memo>,
    /// The server processes of every instance, so a shutdown can wait for them.
    supervisors: Arc<Supervisors>,
    origin: String,
    text: String,
    /// Whether servers may ask for input (`registry.enable-input-requests`).
    input_requests: bool,
}

/// An instance that has loaded its configuration and started its servers.
pub(crate) struct Started {
    pub store: Store<HostState>,
    pub guest: Mcpbox,
    pub issues: Vec<ConfigIssue>,
    pub servers: Vec<ServerStatus>,
    pub tools: Vec<Tool>,
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
            memo: Arc::default(),
            supervisors: Arc::default(),
            origin,
            text,
            input_requests: false,
        })
    }

    /// Lets servers ask for input (elicitation) in every instance made from now on.
    pub fn with_input_requests(mut self, enabled: bool) -> Factory {
        self.input_requests = enabled;
        self
    }

    /// The server processes of every instance made by this factory.
    pub fn supervisors(&self) -> Arc<Supervisors> {
        self.supervisors.clone()
    }

    /// Keeps the guest's `state` entries in `memo` (in memory only by default).
    pub fn with_memo(mut self, memo: Arc<Memo>) -> Factory {
        self.memo = memo;
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
        state.memo = self.memo.clone();
        state.supervisors = self.supervisors.clone();
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
        let issues = registry
            .call_load_config(&mut store, &self.origin, &self.text)
            .await
            .map_err(trapped("loading the configuration"))?
            .map_err(|message| Error::Config {
                origin: self.origin.clone(),
                message,
            })?;
        if self.input_requests {
            registry
                .call_enable_input_requests(&mut store)
                .await
                .map_err(trapped("enabling input requests"))?;
        }
        registry
            .call_start(&mut store)
            .await
            .map_err(trapped("starting servers"))?;
        let servers = registry
            .call_servers(&mut store)
            .await
            .map_err(trapped("listing servers"))?;
        let tools = read_tools(registry, &mut store)
            .await
            .map_err(trapped("listing tools"))?;
        Ok(Started {
            store,
            guest,
            issues: issues.into_iter().map(Into::into).collect(),
            servers: servers.into_iter().map(Into::into).collect(),
            tools,
        })
    }
}

/// Allows the guest to run for `blocking_ms` (the time it will deliberately
/// block) plus [`GUEST_BUDGET_MS`] before it traps as runaway.
pub(crate) fn budget(store: &mut Store<HostState>, blocking_ms: u64) {
    let tick_ms = EPOCH_TICK.as_millis() as u64;
    store.set_epoch_deadline((blocking_ms + GUEST_BUDGET_MS).div_ceil(tick_ms));
}
