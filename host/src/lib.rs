//! mcpbox: use tools from MCP servers through a sandboxed WebAssembly component.
//!
//! All MCP logic (JSON-RPC, the client, the multi-server manager and the tool
//! registry) lives in a WebAssembly component, the *guest*, that has no ambient
//! authority. This crate is the *host*: it runs the guest with wasmtime and
//! owns everything that touches the world — server processes, HTTP under
//! grants, the capability policy, the component cache — and offers the
//! embedding API. The `mcpbox` command line is a crate of its own, `mcpbox-cli`
//! (`cli/`), built on this one.
//!
//! # Features
//!
//! None is on by default: the default build is what an embedder needs.
//!
//! - `keychain`: OAuth tokens in the OS keychain where one answers (the
//!   [`TokenStore`] keeps them in a 0600 file otherwise).
//! - `watch`: [`Options::watch_config`], the configuration file followed as it
//!   changes ([`Runtime::reload`] works without it).
//! - `client-configs`: [`client_configs`], the MCP server configurations of
//!   other clients (the servers they configured, read and written).
//!
//! ```no_run
//! use mcpbox::{CallOptions, Options};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Options::from_config_file(".mcp.json").open().await?;
//! runtime.ready().await;
//! let result = runtime
//!     .call_tool("mcp__demo__echo", serde_json::json!({"text": "hi"}), CallOptions::default())
//!     .await?;
//! println!("{}", result.text);
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! - [`runtime`](Runtime): the embedding API, safe to use from many tasks at once.
//! - `driver`: the one task that owns the guest's store and feeds it jobs.
//! - `imports`: the guest's imports, one file per WIT interface —
//!   `imports/control.rs` (the wake signal) and `imports/state.rs` (what the
//!   guest remembers across runs, the MCP era of each server, in `state.json`
//!   in the cache directory).
//! - `imports/remote.rs` and `imports/wasi_http.rs`: remote servers. The guest
//!   speaks Streamable HTTP and HTTP+SSE itself over `wasi:http`; the host opens
//!   grants (the network policy, `${VAR}` resolved and kept out of the guest) and
//!   sends the guest's requests under them, adding the configured headers.
//! - [`oauth`]: OAuth for remote servers (discovery, registration, the
//!   authorization code flow with PKCE, refresh, the [`TokenStore`]), run by the
//!   host from the `wasi:http` hook; `login`/`logout` for the CLI.
//! - `transport`: the `mcpbox:runtime/transport` import (`transport/mod.rs`):
//!   stdio child processes with process groups, env scrubbing and a message
//!   size cap.
//! - `store`: the store's data (`HostState`), the capability
//!   [`Policy`] and the wake signal.
//! - `gateway`: the gateway's transports — [`Runtime::serve_stdio`],
//!   [`Runtime::serve_stdio_fds`] (on the driver thread's own poll) and
//!   [`Runtime::serve_http`] (Streamable HTTP); the MCP logic is the guest's.
//! - `instance`: a fresh guest instance with its configuration loaded, at
//!   start-up and again when a trapped guest is replaced.
//! - `engine`: the wasmtime engine, its epoch ticker and the on-disk cache of
//!   compiled components (signed, and loaded only from the user's own files).
//! - `user_files`: files kept for the user between runs, used only where no
//!   other user can write them, written 0600 in 0700 directories.
//! - `bindings`: the one `bindgen!` over `wit/`.
//! - [`terminal`]: escaping server text for a terminal (the CLI's human output).
//! - [`trust`]: whether a configuration file may start its servers (the CLI asks
//!   before it runs a file it has not seen).
//! - [`types`](Tool): the public data types.
//! - `watch` (feature `watch`): the configuration file's watcher, which feeds
//!   [`Runtime::reload`] (see [`Options::watch_config`]).
//! - `metrics`: the counts of [`Options::metrics`] ([`Runtime::metrics`],
//!   `/metrics` in the Prometheus text format, the dashboard's uptime and calls).
//! - `gateway/dashboard.rs`: the status page, REST API and live events served
//!   beside `/mcp` by [`Runtime::serve_http`] and [`Runtime::serve_dashboard`].
//! - [`client_configs`] (feature `client-configs`): other MCP clients'
//!   configurations — the servers they configured, and what is installed but
//!   configured nowhere.

#![deny(missing_docs)]

mod audit;
mod bindings;
#[cfg(feature = "client-configs")]
pub mod client_configs;
mod config_file;
mod describe;
mod driver;
mod engine;
mod events;
mod gateway;
mod imports;
mod instance;
mod metrics;
pub mod oauth;
pub mod pins;
mod runtime;
mod store;
pub mod terminal;
mod transport;
pub mod trust;
mod types;
mod user_files;
#[cfg(feature = "watch")]
mod watch;

pub use engine::{default_cache_dir, default_config_dir};
pub use gateway::{
    HttpOptions, Naming, ServeError, ServeOptions, StoredToken, TOKEN_FILE, TokenFileError,
    is_valid_token, raise_open_files_limit, random_token, stored_token,
};
pub use metrics::{
    CallCount, LATENCY_BUCKETS, Latency, MetricsSnapshot, PROMETHEUS_CONTENT_TYPE, ServerMetrics,
};
pub use oauth::TokenStore;
pub use runtime::{
    AdaptedTool, AdaptedTools, AdapterNote, AdapterRefusal, CallOptions, CompletionValues,
    DEFAULT_BUSY_POLL, DEFAULT_WATCH_DEBOUNCE, DIALECTS, GetPrompt, LoadedSkill, MAX_CONFIG_BYTES,
    Options, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, ResourceRead,
    ResourceTemplate, Runtime, Skill, SkillFile, Task,
};
pub use store::Policy;
pub use types::{
    ApprovalRequest, AuditRecord, CallError, CallResult, ConfigIssue, Event, InputAnswer,
    InputRequest, ReloadReport, Root, SamplingRequest, ServerDiagnostics, ServerState,
    ServerStatus, Tool, UrlElicitationRequest,
};

/// The guest component embedded in this build, for hosts that load it elsewhere.
pub fn embedded_guest() -> &'static [u8] {
    engine::EMBEDDED_GUEST
}

/// Why a runtime could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration as a whole is unusable (unreadable file, not JSON).
    /// The message names the origin (and the line and column where they apply).
    #[error("{message}")]
    Config {
        /// The file or source the configuration came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The guest component could not be loaded, compiled or instantiated.
    #[error("{0}")]
    Guest(String),
}
