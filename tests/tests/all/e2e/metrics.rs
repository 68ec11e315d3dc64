//! Metrics end to end (`Options::metrics`): calls counted from the guest's call
//! counts (WIT `call-counted`), with no audit records made, and the counts kept
//! when a trapped guest is replaced by one that gives out its keys anew.

use mcpbox::{CallError, Event, MetricsSnapshot, Options, Runtime};
use mcpbox_tests::process::eventually_async;
use serde_json::json;

use crate::{assert_connected, call, fixture_entry, next_event, ready};

/// Calls of `tool` on `server` that ended with `outcome`.
fn count(metrics: &MetricsSnapshot, server: &str, tool: &str, outcome: &str) -> u64 {
    metrics
        .calls
        .iter()
        .filter(|c| c.server == server && c.tool == tool && c.outcome == outcome)
        .map(|c| c.count)
        .sum()
}

/// The metrics once `total` calls are counted: a call's answer goes out before
/// its count is taken in, so wait for it, with a deadline.
async fn counted(runtime: &Runtime, total: u64) -> MetricsSnapshot {
    eventually_async(crate::PATIENCE, async || {
        let metrics = runtime.metrics().expect("metrics are on");
        let seen: u64 = metrics.calls.iter().map(|c| c.count).sum();
        if seen >= total {
            Ok(metrics)
        } else {
            Err(format!(
                "{total} calls never got counted: {:?}",
                metrics.calls
            ))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_calls_without_audit_records_and_across_a_new_guest() {
    let config = json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "permissions": { "deny": ["mcp__fx__crash"] },
    });
    // Room for normal work, not for an 8 MiB answer (as `fixture::trappable`).
    let runtime = Options::from_config_text("test.mcp.json", config.to_string())
        .metrics(true)
        .memory_limit(4 * 1024 * 1024)
        .open()
        .await
        .expect("the runtime opens");
    let mut events = runtime.events();
    assert_connected(&ready(&runtime).await, "fx");

    for text in ["a", "b"] {
        call(&runtime, "mcp__fx__echo", json!({ "text": text }))
            .await
            .unwrap();
    }
    let failed = call(&runtime, "mcp__fx__fail", json!({ "message": "no" }))
        .await
        .unwrap();
    assert!(failed.is_error);
    let denied = call(&runtime, "mcp__fx__crash", json!({})).await;
    assert!(matches!(denied, Err(CallError::Denied(_))), "{denied:?}");
    let unknown = call(&runtime, "mcp__fx__nope", json!({})).await;
    assert!(
        matches!(unknown, Err(CallError::UnknownTool(_))),
        "{unknown:?}"
    );
    let before = counted(&runtime, 5).await;
    assert_eq!(count(&before, "fx", "echo", "ok"), 2, "{:?}", before.calls);
    assert_eq!(count(&before, "fx", "fail", "tool-error"), 1);
    assert_eq!(count(&before, "fx", "crash", "denied"), 1);
    assert_eq!(count(&before, "", "mcp__fx__nope", "unknown-tool"), 1);
    let echo = before.latency.iter().find(|l| l.tool == "echo").unwrap();
    assert_eq!(echo.count, 2);

    // Trap the guest: a fresh one takes over and numbers its tools from 0 again,
    // `fail` first this time, where the old one had `echo`.
    let trapped = call(
        &runtime,
        "mcp__fx__huge",
        json!({ "bytes": 8 * 1024 * 1024 }),
    )
    .await;
    assert!(matches!(trapped, Err(CallError::Runtime(_))), "{trapped:?}");
    next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("restarted")),
    )
    .await;
    assert_connected(&ready(&runtime).await, "fx");
    let failed = call(&runtime, "mcp__fx__fail", json!({ "message": "again" }))
        .await
        .unwrap();
    assert!(failed.is_error);
    call(&runtime, "mcp__fx__echo", json!({ "text": "c" }))
        .await
        .unwrap();
    let after = counted(&runtime, 7).await;
    assert_eq!(after.guest_restarts, 1);
    assert_eq!(count(&after, "fx", "echo", "ok"), 3, "{:?}", after.calls);
    assert_eq!(count(&after, "fx", "fail", "tool-error"), 2);
    assert_eq!(count(&after, "fx", "crash", "denied"), 1);

    // Counting made no audit records: none was sent, none was kept.
    while let Ok(event) = events.try_recv() {
        assert!(!matches!(event, Event::Audit(_)), "{event:?}");
    }
    assert!(runtime.recent_calls().is_empty());
    runtime.shutdown().await;
}
