//! The host's implementations of the guest's imports, one file per WIT
//! interface of `wit/mcpbox.wit` (as wasmtime-wasi keeps `p2/host/*.rs`).
//!
//! | WIT interface              | implementation                 |
//! |----------------------------|--------------------------------|
//! | `mcpbox:runtime/transport` | [`crate::transport`] (`mod.rs`: `Host`, `HostConnection`; stdio processes) |
//! | `mcpbox:runtime/remote`    | [`remote`] (grants: policy, `${VAR}` resolved and kept) |
//! | `wasi:http`                | `wasmtime-wasi-http`, with the hook in [`wasi_http`] (OAuth: [`crate::oauth`]) |
//! | `mcpbox:runtime/control`   | [`control`]                    |
//! | `mcpbox:runtime/state`     | [`state`]                      |
//! | `mcpbox:runtime/pins`      | [`pins`] (the store: [`crate::pins`]) |
//! | `mcpbox:runtime/blobs`     | [`blobs`]                      |
//! | `wasi:io`, `wasi:clocks`   | `wasmtime-wasi`                |
//!
//! Each implementation is thin: it looks up the resource, calls plain Rust and
//! maps the error. All of them are implemented on [`crate::store::HostState`].

pub(crate) mod blobs;
pub(crate) mod control;
pub(crate) mod pins;
pub(crate) mod remote;
pub(crate) mod state;
pub(crate) mod wasi_http;
