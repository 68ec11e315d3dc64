//! The integration tests: one test binary, as every test binary links wasmtime
//! (a minute of compiling and linking on two cores each). The modules are the
//! binaries they once were, each with its own module docs:
//!
//! | module | what it runs |
//! |---|---|
//! | [`e2e`] | the library (`mcpbox::Runtime`) against the fixture server and the npm and PyPI peers |
//! | [`gateway`] | `mcpbox serve` against real MCP clients, their faults and attacks |
//! | [`cli`], [`import`], [`oauth_login`] | the `mcpbox` program as a user runs it |
//! | [`stock`] | the stock `wasi:http` component on runtimes nobody here wrote |
//! | [`conformance`], [`conformance_server`] | the official MCP conformance suite, client and server scenarios |
//! | [`fixture_server`], [`peers`], [`helpers`] | the fixture server, the pinned peers and the helpers of `mcpbox_tests` behave as the tests assume |
//! | [`limits`], [`subreaper`] | what belongs to the whole process (peak memory, descriptors, the subreaper), each test alone in a child of this binary |
//!
//! Run one module with a filter: `cargo test --workspace --test all e2e::security::`.

mod cli;
mod conformance;
mod conformance_server;
mod e2e;
mod fixture_server;
mod gateway;
mod helpers;
mod import;
mod limits;
mod oauth_login;
mod peers;
mod stock;
mod subreaper;

// The tests of `e2e` and `gateway` name their shared helpers from the crate root
// (`crate::call`, `crate::cli`), as when each was a binary of its own; both
// define `fixture` alike.
use e2e::fixture;
use e2e::*;
use gateway::*;
