//! End-to-end tests: the real host, the real guest component, and real server
//! processes — the workspace's fixture server and the npm and PyPI reference
//! servers (installed by `scripts/install-peers`, which `scripts/test` runs).
//!
//! In the one integration test binary (`tests/tests/all/`), so the guest is
//! compiled (or loaded from the cache) once per run and every test shares it.

mod audit;
mod concurrency;
mod elicitation;
mod era;
mod faults;
mod fixture;
mod http;
mod metrics;
mod output;
mod peers;
mod permissions;
mod reload;
mod resources;
mod roots;
mod sampling;
mod sandbox;
mod security;
mod server_limits;
mod skills;
mod subscriptions;
mod tasks;

use std::time::Duration;

use mcpbox::{Event, Options, Runtime, ServerState, ServerStatus};
use serde_json::{Value, json};

/// Generous: tests check behaviour, not speed.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A fresh, empty directory for this test (named after `tag`, the process and
/// the test's thread), as its real path: the filesystem server resolves
/// symlinks, so paths are compared in that form.
pub fn tempdir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcpbox-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// A path as the configuration and the servers' arguments write it.
pub fn show(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// The fixture server's path.
pub fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_fixture-server")
}

/// A stdio server entry running the fixture server with `args`.
pub fn fixture_entry(args: &[&str]) -> Value {
    json!({ "command": fixture(), "args": args })
}

/// Opens a runtime over `servers` (the value of `mcpServers`), with this test
/// process's own cache and configuration directories
/// ([`mcpbox_tests::compiled_guest::process_dirs`]): no era remembered by an
/// earlier run decides how a server is first spoken to.
pub async fn open(servers: Value) -> Runtime {
    let text = json!({ "mcpServers": servers }).to_string();
    with_process_dirs(Options::from_config_text("test.mcp.json", text))
        .open()
        .await
        .expect("the runtime opens")
}

/// `options` with this test process's cache and configuration directories, as
/// [`open`] has: a runtime on a file keeps its pins there, not in the user's.
pub fn with_process_dirs(options: Options) -> Options {
    let (cache, config) = mcpbox_tests::compiled_guest::process_dirs();
    options.cache_dir(Some(cache)).config_dir(Some(config))
}

/// Options that use `cache` as the cache directory, a test's own, with the
/// guest compiled once for this process already in it (and this process's
/// configuration directory, which holds the key that signs it): for a test
/// about what lands in the cache, which need not compile the guest again.
pub fn with_cache(options: Options, cache: &std::path::Path) -> Options {
    let (_, config) = mcpbox_tests::compiled_guest::process_dirs();
    mcpbox_tests::compiled_guest::seed(cache, &config);
    options
        .cache_dir(Some(cache.to_owned()))
        .config_dir(Some(config))
}

/// Calls a tool with default options; panics after [`PATIENCE`].
pub async fn call(
    runtime: &Runtime,
    tool: &str,
    args: Value,
) -> Result<mcpbox::CallResult, mcpbox::CallError> {
    tokio::time::timeout(
        PATIENCE,
        runtime.call_tool(tool, args, mcpbox::CallOptions::default()),
    )
    .await
    .expect("the call finishes in time")
}

/// Waits for every server to settle; panics after [`PATIENCE`].
pub async fn ready(runtime: &Runtime) -> Vec<ServerStatus> {
    tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .expect("servers settle in time")
        .to_vec()
}

/// The status of the server called `name`.
pub fn status<'a>(servers: &'a [ServerStatus], name: &str) -> &'a ServerStatus {
    servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name} in {servers:?}"))
}

/// Asserts that a server connected, showing its error otherwise.
pub fn assert_connected(servers: &[ServerStatus], name: &str) {
    let s = status(servers, name);
    assert_eq!(
        s.state,
        ServerState::Connected,
        "{name} did not connect: {s:?}"
    );
}

/// Waits until an event matching `pred` arrives.
pub async fn next_event(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match events.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    })
    .await
    .expect("the event arrives in time")
}

/// Asserts that no event so far says the guest trapped and was replaced.
pub fn assert_no_guest_restart(events: &mut tokio::sync::broadcast::Receiver<Event>) {
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(&event, Event::Warning(w) if w.contains("guest failed")),
            "{event:?}"
        );
    }
}
