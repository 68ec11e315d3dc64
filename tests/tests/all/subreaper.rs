//! `Options::subreaper`: each test runs alone in a process of its own (a child of
//! the test binary, [`mcpbox_tests::process::alone_in_a_process`]), because being
//! the subreaper of its descendants is an attribute of the whole process (the
//! other tests run in one that is not).

use std::time::Duration;

use mcpbox::{Options, ServerState};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

/// What the fixture server `p` says of its processes (its `pids` tool).
async fn pids_of(runtime: &mcpbox::Runtime) -> Value {
    let result = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool("mcp__p__pids", json!({}), Default::default()),
    )
    .await
    .unwrap()
    .unwrap();
    serde_json::from_str(&result.text).unwrap()
}

/// Runs `body` in a child of the test binary that runs test `name` alone: a
/// runtime's shutdown kills the adopted orphans only when no other runtime of the
/// process relies on the subreaper.
fn alone<F: std::future::Future<Output = ()>>(name: &str, body: impl FnOnce() -> F) {
    mcpbox_tests::process::alone(module_path!(), name, body);
}

/// With the subreaper on, a server's grandchild that left
/// the process group with `setsid` and an empty environment (so no marker leads
/// to it) is reparented to this process, and the runtime's shutdown kills and
/// reaps it: no process and no zombie is left.
#[test]
fn the_subreaper_stops_and_reaps_descendants_that_cleared_their_environment() {
    alone(
        "the_subreaper_stops_and_reaps_descendants_that_cleared_their_environment",
        the_subreaper_stops_and_reaps_descendants_that_cleared_their_environment_alone,
    );
}

async fn the_subreaper_stops_and_reaps_descendants_that_cleared_their_environment_alone() {
    let fixture = env!("CARGO_BIN_EXE_fixture-server");
    let config = json!({ "mcpServers": { "p": {
        "command": fixture, "args": ["--spawn-child", "--escapee-clean-env"],
    } } });
    let runtime = Options::from_config_text("subreaper.json", config.to_string())
        .subreaper(true)
        .open()
        .await
        .unwrap();
    assert!(
        runtime.startup_warnings().is_empty(),
        "{:?}",
        runtime.startup_warnings()
    );
    let servers = tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .unwrap();
    assert_eq!(servers[0].state, ServerState::Connected, "{servers:?}");
    let pids = pids_of(&runtime).await;
    let escapee = pids["escapees"][0].as_u64().unwrap();
    let me = std::process::id().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{escapee}/stat")).unwrap();
    let ppid = stat.rsplit_once(") ").unwrap().1.split(' ').nth(1).unwrap();
    assert_eq!(
        ppid, me,
        "the orphan was reparented to this process: {stat}"
    );

    runtime.shutdown().await;
    for pid in [&pids["pid"], &pids["children"][0], &pids["escapees"][0]] {
        let pid = pid.as_u64().unwrap();
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} was left behind (or left a zombie)"
        );
    }
}

/// With the subreaper on, a server that crashes takes what it left behind with
/// it while the runtime runs on: the marked daemon it started (outside its
/// process group) is found in this process's tree of children, not in all of
/// `/proc`, and killed.
#[test]
fn a_crashed_servers_marked_daemon_is_found_in_the_subreapers_tree() {
    alone(
        "a_crashed_servers_marked_daemon_is_found_in_the_subreapers_tree",
        a_crashed_servers_marked_daemon_is_found_in_the_subreapers_tree_alone,
    );
}

async fn a_crashed_servers_marked_daemon_is_found_in_the_subreapers_tree_alone() {
    let fixture = env!("CARGO_BIN_EXE_fixture-server");
    let config = json!({ "mcpServers": {
        "p": { "command": fixture, "args": ["--spawn-child", "--escapee"] },
        "q": { "command": fixture },
    } });
    let runtime = Options::from_config_text("subreaper-crash.json", config.to_string())
        .subreaper(true)
        .open()
        .await
        .unwrap();
    let servers = tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .unwrap();
    assert!(
        servers.iter().all(|s| s.state == ServerState::Connected),
        "{servers:?}"
    );
    let pids = pids_of(&runtime).await;
    let escapee = pids["escapees"][0].as_u64().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{escapee}")).exists());

    let _ = runtime
        .call_tool("mcp__p__crash", json!({"code": 3}), Default::default())
        .await;
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::path::Path::new(&format!("/proc/{escapee}")).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the crashed server's daemon {escapee} is still running"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The other server is untouched, and the runtime still answers.
    let echoed = runtime
        .call_tool(
            "mcp__q__echo",
            json!({"text": "still here"}),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(echoed.text.contains("still here"), "{echoed:?}");
    runtime.shutdown().await;
}
