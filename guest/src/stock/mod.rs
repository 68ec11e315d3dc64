//! The gateway as a stock `wasi:http` proxy component: what runs when a runtime
//! nobody here wrote (the stock `wasmtime serve`, wasmCloud, Spin) hands mcpbox
//! one HTTP request.
//!
//! The feature `stock` builds world `mcpbox:stock/stock` (`wit-stock/`) instead of
//! `mcpbox:runtime/mcpbox`: the component exports `wasi:http/incoming-handler`
//! (and the registry) and imports only standard WASI 0.2 interfaces. What mcpbox's own hosts provide
//! through `mcpbox:runtime` is done here instead:
//!
//! | mcpbox host import | in the stock component |
//! |---|---|
//! | `transport.connection` (stdio servers) | none: a stdio entry fails with `unsupported`, naming the server and the fix |
//! | `remote.grant` (policy, `${VAR}`, stand-in URL) | the configured URL and headers, `${VAR}` resolved from `wasi:cli/environment` ([`references`]); origins compared in the guest ([`Target::resolved`](crate::remote::target::Target::resolved)) |
//! | `control.wake-signal` | none: nothing else can queue work for an instance that serves one request |
//! | `state` (the era a server speaks) | kept in the instance with each 2026-07-28 server's tools ([`known`]), for the requests an instance serves after the first |
//! | `blobs` | none: results stay inline |
//! | the host's HTTP listener (`mcpbox serve --http`) | [`exchange`]: one request, one instance, the gateway driven until its answer is complete |
//!
//! It also exports `mcpbox:runtime/registry`, the mcpbox guest's own interface
//! and binding, on a manager that lives as long as the instance, for a
//! component composed with this one (an agent written as a component): its
//! `wait` blocks on `wasi:io/poll`, and the configuration is read as below
//! unless the consumer calls `load-config`. See `docs/PLATFORMS.md`, "The
//! registry, composed".
//!
//! # One request, one instance
//!
//! `wasmtime serve` instantiates the component per request, and a platform may
//! send consecutive requests of a client to different instances or machines. So
//! each request loads the configuration, connects every remote server (the
//! 2026-07-28 `server/discover`, or a 2025 `initialize`, and `tools/list`),
//! answers, and drops its gateway. What it learned of each 2026-07-28 server
//! (capabilities, tools) stays in the instance ([`known`]): where the runtime
//! hands the same instance later requests, they call at once, with nothing but
//! the call sent upstream, until that knowledge is stale.
//!
//! - **2026-07-28** needs nothing more: every request carries its own `_meta`.
//! - **2025 sessions** are carried by the client: the `Mcp-Session-Id` the stock
//!   component gives out is the `initialize` request's parameters (version and
//!   capabilities) in base64url ([`CarriedSessions`](crate::gateway::http::CarriedSessions)),
//!   and each later request replays that
//!   `initialize` into its fresh gateway before its own message. Any instance can
//!   answer any request of the session. What a session kept in memory is not kept:
//!   `logging/setLevel` applies to its own request only, there is no standalone
//!   `GET` stream (`405`, as the 2025 transport allows) and no resumption.
//! - **Input requests** (an upstream's elicitation, `ask` approvals) need the
//!   answer to reach the instance that asked, which per-request instances cannot
//!   promise: they are not enabled, so an `ask` rule refuses the call (`denied`)
//!   and an upstream's `elicitation/create` is refused, both saying so.
//!
//! # Configuration without a filesystem
//!
//! The `.mcp.json` text comes from the environment variable `MCPBOX_CONFIG`, or,
//! when it is unset, from `MCPBOX_STOCK_CONFIG` at build time (baked into the
//! component). Secrets are never baked: `${VAR}` references in URLs and headers
//! are resolved per request from the environment the platform gives the instance
//! (`wasmtime serve --env`, wash's `workload.environment`, wasmCloud secrets). With
//! the feature `stock-config` (world `mcpbox:stock/stock-config`), every variable
//! is looked up in `wasi:config/store` first, then in the environment; that build
//! loads only on a runtime that provides `wasi:config`. See [`Settings`].

pub mod exchange;
pub mod known;
pub mod references;

#[cfg(all(target_arch = "wasm32", feature = "stock"))]
mod component;

use crate::prelude::*;

/// How the stock component serves, from its environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The `.mcp.json` text, and where it came from (for messages).
    pub config: Option<(String, String)>,
    /// `MCPBOX_TOKEN`: a bearer token every request must carry. Without it the
    /// component answers no request ([`exchange`]), unless
    /// [`insecure_no_token`](Settings::insecure_no_token).
    pub token: Option<String>,
    /// `MCPBOX_INSECURE_NO_TOKEN` (`1` or `true`): serve without a token when
    /// `MCPBOX_TOKEN` is unset, to anyone who can reach the component.
    pub insecure_no_token: bool,
    /// `MCPBOX_ALLOWED_ORIGINS` (comma-separated): `Origin`s accepted besides
    /// loopback ones.
    pub allowed_origins: Vec<String>,
    /// `MCPBOX_NAMING`: "prefixed" (the default) or "conditional".
    pub naming: Option<String>,
    /// `MCPBOX_TOOL_SEARCH`: serve `search_tools` / `call_tool` (`1` or `true`).
    pub tool_search: bool,
    /// `MCPBOX_SECRET`: the key of the gateway's `requestState` tokens.
    pub secret: Option<String>,
    /// `MCPBOX_TOOLS_MAX_AGE` (seconds): how long what an exchange learned of a
    /// server is used by the next ones in the instance (see [`known`]).
    pub known_max_age_ms: u64,
    /// Settings that were set wrong, and what was used instead: for the log.
    pub warnings: Vec<String>,
}

/// The environment variable that holds the configuration text.
pub const CONFIG_VAR: &str = "MCPBOX_CONFIG";

/// The environment variable that bounds how long servers stay known (seconds).
pub const MAX_AGE_VAR: &str = "MCPBOX_TOOLS_MAX_AGE";

impl Settings {
    /// The settings in `env` (the instance's environment), with `baked` (the
    /// configuration text given at build time) when `MCPBOX_CONFIG` is not set.
    pub fn from_env(env: &[(String, String)], baked: Option<&str>) -> Settings {
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        let config = match get(CONFIG_VAR) {
            Some(text) => Some((CONFIG_VAR.to_string(), text)),
            None => baked
                .filter(|t| !t.trim().is_empty())
                .map(|t| ("the configuration built in".to_string(), t.to_string())),
        };
        let mut warnings = Vec::new();
        let known_max_age_ms = match get(MAX_AGE_VAR) {
            None => known::DEFAULT_MAX_AGE_MS,
            Some(text) => match text.trim().parse::<u64>() {
                Ok(seconds) => seconds.saturating_mul(1000),
                Err(_) => {
                    warnings.push(format!(
                        "{MAX_AGE_VAR} is {text:?}, not a number of seconds (0 keeps \
                         nothing); using {} s",
                        known::DEFAULT_MAX_AGE_MS / 1000
                    ));
                    known::DEFAULT_MAX_AGE_MS
                }
            },
        };
        Settings {
            config,
            token: get("MCPBOX_TOKEN"),
            insecure_no_token: get("MCPBOX_INSECURE_NO_TOKEN")
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            allowed_origins: get("MCPBOX_ALLOWED_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|o| !o.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            naming: get("MCPBOX_NAMING"),
            tool_search: get("MCPBOX_TOOL_SEARCH")
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            secret: get("MCPBOX_SECRET"),
            known_max_age_ms,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_environment_overrides_the_baked_configuration() {
        let s = Settings::from_env(&env(&[(CONFIG_VAR, "{\"a\":1}")]), Some("{}"));
        assert_eq!(
            s.config,
            Some((CONFIG_VAR.to_string(), "{\"a\":1}".to_string()))
        );
        let s = Settings::from_env(&env(&[]), Some("{\"b\":2}"));
        assert_eq!(s.config.map(|c| c.1).as_deref(), Some("{\"b\":2}"));
        let s = Settings::from_env(&env(&[(CONFIG_VAR, "")]), None);
        assert_eq!(s.config, None);
    }

    #[test]
    fn options_come_from_their_variables() {
        let s = Settings::from_env(
            &env(&[
                ("MCPBOX_TOKEN", "t"),
                (
                    "MCPBOX_ALLOWED_ORIGINS",
                    "https://a.example, https://b.example,",
                ),
                ("MCPBOX_TOOL_SEARCH", "true"),
                ("MCPBOX_NAMING", "conditional"),
            ]),
            None,
        );
        assert_eq!(s.token.as_deref(), Some("t"));
        assert_eq!(
            s.allowed_origins,
            ["https://a.example", "https://b.example"]
        );
        assert!(s.tool_search);
        assert_eq!(s.naming.as_deref(), Some("conditional"));
        assert_eq!(s.known_max_age_ms, known::DEFAULT_MAX_AGE_MS);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn the_max_age_is_in_seconds_and_a_bad_one_is_reported() {
        let s = Settings::from_env(&env(&[(MAX_AGE_VAR, "0")]), None);
        assert_eq!(s.known_max_age_ms, 0);
        let s = Settings::from_env(&env(&[(MAX_AGE_VAR, "300")]), None);
        assert_eq!(s.known_max_age_ms, 300_000);
        let s = Settings::from_env(&env(&[(MAX_AGE_VAR, "1m")]), None);
        assert_eq!(s.known_max_age_ms, known::DEFAULT_MAX_AGE_MS);
        assert!(s.warnings[0].contains(MAX_AGE_VAR), "{:?}", s.warnings);
    }
}
