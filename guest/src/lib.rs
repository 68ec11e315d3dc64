//! The mcpbox guest: every piece of MCP logic, with no ambient authority.
//!
//! This crate compiles to a `wasm32-wasip2` component that imports host-owned
//! connections (`mcpbox:runtime/transport`), a wake signal (`mcpbox:runtime/control`)
//! and the monotonic clock, and exports the tool registry (`mcpbox:runtime/registry`).
//! It never touches files, sockets, the environment or randomness: whatever reaches
//! the world goes through an import the host controls.
//!
//! # Layout
//!
//! The logic is plain Rust behind two small traits ([`transport::Connection`] and
//! [`transport::Platform`]) so that it is unit-tested natively with an in-memory
//! transport and a controllable clock. Only `component` (compiled for `wasm32`
//! alone) sees the generated bindings, and it only translates.
//!
//! On `wasm32` the crate is `no_std` (with `alloc`): std's panic machinery reads
//! `RUST_BACKTRACE` and writes to stderr through wasi-libc, which would add
//! `wasi:cli/*` imports. So the component brings its own allocator (`dlmalloc`), a
//! panic handler that traps, and the two libc symbols it needs (`memcmp`,
//! `cabi_realloc`); see `component`.
//!
//! | module | MCP concept |
//! |---|---|
//! | [`transport`] | the guest's view of a host connection, and the clock/poll platform |
//! | [`jsonrpc`] | JSON-RPC 2.0 messages: classification, ids, building, the wire error |
//! | [`budget`] | what the guest may build from a text it is handed: values counted, memory checked, before parsing |
//! | [`methods`] | MCP method names, one constant each |
//! | [`config`] | `.mcp.json` text → server entries, with precise issues; `config::types` is the leaf every module reading a part of it shares |
//! | [`variables`] | the `${VAR}` grammar, parsed once: configuration text split into literals and references that hosts resolve |
//! | [`naming`] | `mcp__{server}__{tool}` names, sanitised and at most 64 characters |
//! | [`schema`] | checking call arguments against a tool's `inputSchema` (with a small ECMA-262 matcher for `pattern`) |
//! | [`adapter`] | tools in each model provider's dialect (OpenAI, Anthropic, Gemini), with what the conversion lost, and arguments mapped back |
//! | [`registry`] | the tool table built from every connected server's list |
//! | [`audit`] | the audit trail: one record per call (decision, rule, approval, outcome, duration) |
//! | [`output`] | output limits: oversized results and media written to host files, a head and a link passed on |
//! | [`sandbox`] | a stdio server's `sandbox` block: the grants the host enforces on its process |
//! | [`permissions`] | allow / ask / deny rules, tool filters and profiles: which tools are offered and called (read from the configuration by `config`) |
//! | [`remote`] | remote servers over HTTP, spoken by the guest: Streamable HTTP, legacy HTTP+SSE, sessions, SSE, origins |
//! | [`elicitation`] | a server's requests for input (form mode) and the embedder's answers |
//! | [`client`] | one server's MCP session, a module per protocol concept (see its "Layout") |
//! | [`manager`] | every configured server at once: start-up, status, events, `wait`; a new configuration applied as a diff (`manager/reload.rs`) |
//! | [`gateway`] | the gateway (`mcpbox serve`): the registry served to downstream MCP clients, both eras |
//! | [`stock`] | the gateway as a stock `wasi:http` proxy component (feature `stock`): one HTTP request per instance, standard WASI imports only; it also exports the registry, for composition |

#![deny(missing_docs)]
// The module tables link to private modules and items: the guest is a component,
// not a library anyone depends on, and its docs are read by its contributors
// (`cargo doc -p mcpbox-guest --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]
// Native builds (the unit tests) keep std; see "Layout" for why wasm does not.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

pub mod adapter;
pub mod audit;
pub mod budget;
pub mod client;
pub mod config;
pub mod elicitation;
pub mod gateway;
pub mod jsonrpc;
pub mod manager;
pub mod methods;
pub mod naming;
pub mod output;
pub mod permissions;
pub mod registry;
pub mod remote;
pub mod roots;
pub mod sampling;
pub mod sandbox;
pub mod schema;
pub mod transport;
pub mod variables;

#[cfg(all(target_arch = "wasm32", not(feature = "stock")))]
mod component;
pub mod stock;
#[cfg(target_arch = "wasm32")]
mod wasm_runtime;

/// The `alloc` names std's prelude provides, for the `no_std` component build.
mod prelude {
    pub(crate) use alloc::borrow::ToOwned;
    pub(crate) use alloc::boxed::Box;
    pub(crate) use alloc::string::{String, ToString};
    pub(crate) use alloc::vec::Vec;
    pub(crate) use alloc::{format, vec};
}

#[cfg(test)]
mod testing;

// The tests of `tests/`: the adapters on real schemas and the differential tests
// against boon and regress. Compiled into this crate's unit-test program, where
// they name the crate `mcpbox_guest` as any user of it would, rather than as
// integration tests: each of those is a program of its own that needs this crate
// built once more for the host, as a library, a minute of compiling on two cores
// (`autotests = false` in Cargo.toml). The fuzz targets include the generators
// from the same files.
#[cfg(test)]
extern crate self as mcpbox_guest;
#[cfg(test)]
#[path = "../tests/adapter/main.rs"]
mod adapter_tests;
#[cfg(test)]
#[path = "../tests/differential/main.rs"]
mod differential_tests;

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
