//! The host side of the WIT contract in `wit/`: the one `bindgen!` of this crate.
//!
//! Generated types stay in here and in the thin import implementations
//! (`imports`, `transport`, `driver`); the public API (`crate::types`) wraps them in ordinary
//! Rust types so embedders never see generated code.

mod convert;

mod generated {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "mcpbox",
        // Imports are synchronous (they only queue work or take what is ready) and
        // may trap on host bugs such as a stale resource handle.
        imports: { default: trappable },
        // Exports run on the driver thread, which awaits them.
        exports: { default: async },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "mcpbox:runtime/transport.connection": crate::transport::Connection,
            "mcpbox:runtime/remote.grant": crate::imports::remote::Grant,
        },
    });
}

pub(crate) use generated::exports::mcpbox::runtime::gateway;
pub(crate) use generated::exports::mcpbox::runtime::registry;
pub(crate) use generated::exports::mcpbox::runtime::turns;
pub(crate) use generated::mcpbox::runtime::{
    blobs, control, pins, remote, state, transport, types as wit,
};
pub(crate) use generated::{Mcpbox, McpboxPre};
