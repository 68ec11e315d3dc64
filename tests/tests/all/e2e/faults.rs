//! Servers that misbehave, one fault at a time: the registry stays up, says
//! clearly what happened, and loses nothing that belongs to a working caller.

use std::time::Duration;

use mcpbox::{CallError, CallOptions, Options, Policy, ServerState};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, fixture, fixture_entry, open, ready, status};

/// Waits until `/proc/<pid>` is gone (the process was reaped, or never ours).
async fn gone(pid: u64) -> bool {
    let path = format!("/proc/{pid}");
    tokio::time::timeout(PATIENCE, async {
        while std::path::Path::new(&path).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_during_initialize_reports_code_and_stderr() {
    let runtime =
        open(json!({ "dies": fixture_entry(&["--exit-on-init", "7"]), "ok": fixture_entry(&[]) }))
            .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "ok");
    let dies = status(&servers, "dies");
    assert_eq!(dies.state, ServerState::Failed);
    let error = dies.error.as_deref().unwrap_or_default();
    assert!(error.contains("exit code 7"), "{error}");
    assert!(
        error.contains("exiting with code 7 on initialize"),
        "the last stderr line is shown: {error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_initialize_times_out_alone() {
    let mut silent = fixture_entry(&["--no-init-reply"]);
    silent["startupTimeoutMs"] = json!(500);
    let runtime = open(json!({ "silent": silent, "ok": fixture_entry(&[]) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "ok");
    let silent = status(&servers, "silent");
    assert_eq!(silent.state, ServerState::Failed);
    let error = silent.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("did not finish connecting within"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_start_shows_starting_then_connects() {
    let runtime = open(json!({ "slow": fixture_entry(&["--start-delay-ms", "5000"]) })).await;
    assert_eq!(
        status(&runtime.servers(), "slow").state,
        ServerState::Starting
    );
    assert_connected(&ready(&runtime).await, "slow");
    assert_eq!(
        call(&runtime, "mcp__slow__echo", json!({"text": "late"}))
            .await
            .unwrap()
            .text,
        "late"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_call_times_out_while_others_on_the_server_work() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let hung = {
        let runtime = runtime.clone();
        tokio::spawn(async move {
            let options = CallOptions {
                timeout: Some(Duration::from_millis(1500)),
                ..CallOptions::default()
            };
            runtime
                .call_tool("mcp__fx__sleep", json!({"ms": 60_000}), options)
                .await
        })
    };
    for i in 0..10 {
        let text = format!("meanwhile {i}");
        assert_eq!(
            call(&runtime, "mcp__fx__echo", json!({ "text": text }))
                .await
                .unwrap()
                .text,
            text
        );
    }
    assert!(
        !hung.is_finished(),
        "the hung call is still waiting while the echoes ran"
    );
    let err = tokio::time::timeout(PATIENCE, hung)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_lines_are_skipped_and_counted() {
    let runtime = open(json!({ "noisy": fixture_entry(&["--garbage"]) })).await;
    assert_connected(&ready(&runtime).await, "noisy");
    for _ in 0..3 {
        call(&runtime, "mcp__noisy__echo", json!({"text": "x"}))
            .await
            .unwrap();
    }
    let d = runtime
        .diagnostics("noisy")
        .expect("the server had a connection");
    // One garbage line before every message: initialize, tools/list, three calls.
    assert!(d.skipped_lines >= 5, "{d:?}");
    assert!(
        d.stderr_tail
            .iter()
            .any(|l| l.contains("this line is not JSON")),
        "{d:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_message_fails_its_call_only() {
    let text = json!({ "mcpServers": { "fx": fixture_entry(&[]) } }).to_string();
    let policy = Policy {
        max_message_bytes: 1024 * 1024,
        ..Policy::default()
    };
    let runtime = Options::from_config_text("cap.json", text)
        .policy(policy)
        .open()
        .await
        .unwrap();
    ready(&runtime).await;
    let err = call(&runtime, "mcp__fx__huge", json!({"bytes": 5_000_000}))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("too large"), "{message}");
    assert!(message.contains("1048576"), "the cap is named: {message}");
    assert_eq!(runtime.diagnostics("fx").unwrap().oversized_messages, 1);
    // The connection is still good.
    assert_eq!(
        call(&runtime, "mcp__fx__echo", json!({"text": "after"}))
            .await
            .unwrap()
            .text,
        "after"
    );
    assert_connected(&runtime.servers(), "fx");
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_and_duplicate_ids_never_reach_the_wrong_caller() {
    let runtime = open(json!({ "liar": fixture_entry(&["--bad-ids"]) })).await;
    assert_connected(&ready(&runtime).await, "liar");
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let text = format!("caller {i}");
                let r = runtime
                    .call_tool(
                        "mcp__liar__echo",
                        json!({ "text": text }),
                        CallOptions::default(),
                    )
                    .await;
                (text, r)
            })
        })
        .collect();
    for c in calls {
        let (text, result) = tokio::time::timeout(PATIENCE, c).await.unwrap().unwrap();
        assert_eq!(result.unwrap().text, text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_notification_flood_does_not_stop_calls() {
    let runtime = open(json!({ "flood": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let r = call(&runtime, "mcp__flood__flood", json!({"count": 50_000}))
        .await
        .unwrap();
    assert_eq!(r.text, "flooded 50000");
    assert_eq!(
        call(&runtime, "mcp__flood__echo", json!({"text": "ok"}))
            .await
            .unwrap()
            .text,
        "ok"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_closes_stdout_is_detected_and_stopped() {
    let runtime = open(json!({ "mute": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let pids: Value = serde_json::from_str(
        &call(&runtime, "mcp__mute__pids", json!({}))
            .await
            .unwrap()
            .text,
    )
    .unwrap();
    let err = call(&runtime, "mcp__mute__close_stdout", json!({}))
        .await
        .unwrap_err();
    let CallError::ServerUnavailable(message) = &err else {
        panic!("expected unavailable, got {err:?}")
    };
    assert!(
        message.contains("closed its stdout while still running"),
        "{message}"
    );
    assert!(
        gone(pids["pid"].as_u64().unwrap()).await,
        "the process was stopped"
    );
    assert_eq!(
        status(&runtime.servers(), "mute").state,
        ServerState::Failed
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_children_go_with_it() {
    let runtime = open(json!({ "parent": fixture_entry(&["--spawn-child"]) })).await;
    ready(&runtime).await;
    let pids: Value = serde_json::from_str(
        &call(&runtime, "mcp__parent__pids", json!({}))
            .await
            .unwrap()
            .text,
    )
    .unwrap();
    let server = pids["pid"].as_u64().unwrap();
    let child = pids["children"][0]
        .as_u64()
        .expect("the fixture started a child");
    assert!(std::path::Path::new(&format!("/proc/{child}")).exists());
    runtime.shutdown().await;
    assert!(gone(server).await, "the server was stopped");
    assert!(
        gone(child).await,
        "the server's child was stopped with its process group"
    );
}

/// Waits until process `pid` no longer runs: gone, or a zombie that its parent
/// (init, for an orphan) has yet to reap.
async fn stops_running(pid: u64) -> bool {
    let path = format!("/proc/{pid}/stat");
    tokio::time::timeout(PATIENCE, async {
        loop {
            match std::fs::read_to_string(&path) {
                Err(_) => return,
                Ok(stat)
                    if stat
                        .rsplit_once(") ")
                        .is_some_and(|(_, r)| r.starts_with('Z')) =>
                {
                    return;
                }
                // Polling /proc: an orphan is not ours to wait for.
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .is_ok()
}

/// The fixture's pids: its own, its `--spawn-child` child, its `--escapee`.
async fn fixture_pids(runtime: &mcpbox::Runtime, server: &str) -> Vec<u64> {
    let pids: Value = serde_json::from_str(
        &call(runtime, &format!("mcp__{server}__pids"), json!({}))
            .await
            .unwrap()
            .text,
    )
    .unwrap();
    let mut all = vec![pids["pid"].as_u64().unwrap()];
    for key in ["children", "escapees"] {
        all.extend(
            pids[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap()),
        );
    }
    all
}

/// A grandchild that left the server's process group with
/// `setsid` (a daemon) is stopped with the server, whether the runtime is shut
/// down, dropped, or the server stops on its own; found by the
/// `MCPBOX_SERVER_ID` marker it inherited (no subreaper in this process).
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_escaped_grandchild_goes_with_it() {
    let args = ["--spawn-child", "--escapee"];
    let runtime = open(json!({ "p": fixture_entry(&args) })).await;
    assert_connected(&ready(&runtime).await, "p");
    let pids = fixture_pids(&runtime, "p").await;
    assert_eq!(pids.len(), 3, "{pids:?}");
    runtime.shutdown().await;
    for pid in pids {
        assert!(stops_running(pid).await, "{pid} survived the shutdown");
    }

    // Dropped without a shutdown.
    let runtime = open(json!({ "p": fixture_entry(&args) })).await;
    assert_connected(&ready(&runtime).await, "p");
    let pids = fixture_pids(&runtime, "p").await;
    drop(runtime);
    for pid in pids {
        assert!(stops_running(pid).await, "{pid} survived the drop");
    }

    // The server crashes: what it left behind is stopped too.
    let runtime = open(json!({ "p": fixture_entry(&args) })).await;
    assert_connected(&ready(&runtime).await, "p");
    let pids = fixture_pids(&runtime, "p").await;
    let _ = call(&runtime, "mcp__p__crash", json!({"code": 3})).await;
    for pid in pids {
        assert!(stops_running(pid).await, "{pid} survived the crash");
    }
}

/// `Runtime::shutdown` returns once every server process is stopped and reaped.
#[tokio::test(flavor = "multi_thread")]
async fn shutdown_returns_once_the_servers_are_gone() {
    let runtime = open(json!({ "p": fixture_entry(&["--spawn-child"]) })).await;
    assert_connected(&ready(&runtime).await, "p");
    let pids = fixture_pids(&runtime, "p").await;
    runtime.shutdown().await;
    let server = pids[0];
    assert!(
        !std::path::Path::new(&format!("/proc/{server}")).exists(),
        "the server was reaped before shutdown returned"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_entry_with_a_bad_command_in_a_shell_fails_cleanly() {
    // A shell that exits at once: no handshake, a clear exit status.
    let runtime = open(json!({
        "sh": { "command": "sh", "args": ["-c", "echo 'fatal: no config' >&2; exit 4"] },
        "ok": { "command": fixture() },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "ok");
    let error = status(&servers, "sh").error.clone().unwrap_or_default();
    assert!(
        error.contains("exit code 4") && error.contains("fatal: no config"),
        "{error}"
    );
}
