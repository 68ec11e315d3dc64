//! What a configuration names, as the guest reads it: the servers trust lists
//! and the `oauth` fields OAuth needs, from the WIT `registry.describe-config`.
//!
//! The host parses no `.mcp.json` and no `${VAR}`: configuration text has one
//! reader, the guest's. Trust (`crate::trust`) and `mcpbox login` need what a
//! file names before any runtime exists, so they ask a bare instance of the
//! embedded guest (the compiled component from the cache, instantiated, asked,
//! dropped: nothing loaded, nothing started). A runtime asks an instance of its
//! own guest (`Describer`, made from its factory) when it applies a
//! configuration. Only a command that needs a description makes one: a trusted
//! `mcpbox call` or `tools` makes none (trust looks at the file's bytes first).

use std::sync::{Arc, OnceLock};

use wasmtime::{Engine, Store};

use crate::Error;
use crate::bindings::{McpboxPre, registry};
use crate::store::{HostState, Policy};

pub(crate) use registry::{OauthFields, ServerDescription, ServerReach};

/// The memory a bare instance may use: the text and its description.
const BARE_MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Makes bare instances of one guest to describe configuration text.
#[derive(Clone)]
pub(crate) struct Describer {
    engine: Engine,
    pre: McpboxPre<HostState>,
}

impl std::fmt::Debug for Describer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Describer").finish_non_exhaustive()
    }
}

impl Describer {
    /// A describer of the guest `pre` was linked for.
    pub(crate) fn new(engine: Engine, pre: McpboxPre<HostState>) -> Describer {
        Describer { engine, pre }
    }

    /// The embedded guest, loaded once per process from the compiled-component
    /// cache in the default places (those a runtime uses by default, so the
    /// runtime that follows finds it compiled).
    pub(crate) fn embedded() -> Result<Describer, Error> {
        static EMBEDDED: OnceLock<Result<Describer, String>> = OnceLock::new();
        EMBEDDED
            .get_or_init(|| {
                let load = || {
                    let engine = crate::engine::engine()?;
                    let cache = match (crate::default_cache_dir(), crate::default_config_dir()) {
                        (Some(cache), Some(key)) => Some(crate::engine::CacheDirs { cache, key }),
                        _ => None,
                    };
                    let component = crate::engine::load_component(
                        &engine,
                        crate::engine::EMBEDDED_GUEST,
                        crate::engine::EMBEDDED_GUEST_SHA256,
                        cache.as_ref(),
                        &mut Vec::new(),
                    )?;
                    let factory = crate::instance::Factory::new(
                        engine,
                        &component,
                        Policy::default(),
                        BARE_MEMORY_LIMIT,
                        Arc::default(),
                        Default::default(),
                        (String::new(), String::new()),
                    )?;
                    Ok::<_, Error>(factory.describer())
                };
                load().map_err(|e| e.to_string())
            })
            .clone()
            .map_err(Error::Guest)
    }

    /// The server entries of `text` (`origin` names it in messages): `Ok(Err)`
    /// for text the guest refuses whole (it starts nothing), `Err` when the
    /// guest could not answer.
    pub(crate) async fn describe(
        &self,
        origin: &str,
        text: &str,
    ) -> Result<Result<Vec<ServerDescription>, String>, Error> {
        let state = HostState::new(
            Policy::default(),
            Arc::default(),
            BARE_MEMORY_LIMIT,
            Default::default(),
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limits);
        crate::instance::budget(&mut store, 0);
        let guest = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| Error::Guest(format!("instantiating the guest failed: {e:#}")))?;
        guest
            .mcpbox_runtime_registry()
            .call_describe_config(&mut store, origin, text)
            .await
            .map_err(|e| {
                Error::Guest(format!(
                    "the guest failed while describing the configuration: {e:#}"
                ))
            })
    }

    /// [`describe`](Self::describe) for callers that are not async (trust's
    /// checks, which may run on a tokio worker): on a thread of its own, with a
    /// runtime of its own, since a runtime cannot block inside another.
    pub(crate) fn describe_blocking(
        &self,
        origin: &str,
        text: &str,
    ) -> Result<Result<Vec<ServerDescription>, String>, Error> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .build()
                        .map_err(|e| Error::Guest(format!("no runtime to describe with: {e}")))?
                        .block_on(self.describe(origin, text))
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(Error::Guest(
                        "describing the configuration panicked".to_owned(),
                    ))
                })
        })
    }
}

/// Every `${VAR}` name the descriptions refer to, sorted, each once.
pub(crate) fn variables(descriptions: &[ServerDescription]) -> Vec<String> {
    let mut names: Vec<String> = descriptions
        .iter()
        .flat_map(|d| d.variables.iter().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}
