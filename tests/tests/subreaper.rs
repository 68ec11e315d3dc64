//! `Options::subreaper`: this test binary is its own process, because being the
//! subreaper of its descendants is an attribute of the whole process (the e2e
//! tests run in one that is not).

use std::time::Duration;

use mcpbox::{Options, ServerState};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

/// Issue 10, finding 8: with the subreaper on, a server's grandchild that left
/// the process group with `setsid` and an empty environment (so no marker leads
/// to it) is reparented to this process, and the runtime's shutdown kills and
/// reaps it: no process and no zombie is left.
#[tokio::test(flavor = "multi_thread")]
async fn the_subreaper_stops_and_reaps_descendants_that_cleared_their_environment() {
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
    let result = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool("mcp__p__pids", json!({}), Default::default()),
    )
    .await
    .unwrap()
    .unwrap();
    let pids: Value = serde_json::from_str(&result.text).unwrap();
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
