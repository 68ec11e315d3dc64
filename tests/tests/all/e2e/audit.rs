//! The audit trail end to end: a JSON line per call in the file the user names,
//! and `Audit` events for embedders.

use std::path::PathBuf;

use mcpbox::{CallError, Event, Options};
use mcpbox_tests::process::eventually_async;
use serde_json::{Value, json};

use crate::{assert_connected, call, fixture_entry, next_event, ready};

fn audit_file(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcpbox-audit-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("trail").join("audit.jsonl")
}

fn lines(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_decision_is_a_line_in_the_configured_file() {
    let file = audit_file("config");
    let config = json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "permissions": { "deny": ["mcp__fx__crash"], "ask": ["mcp__fx__add"] },
        // `${VAR}` works; this one falls back to its default.
        "audit": { "file": format!("${{MCPBOX_SURELY_UNSET:-{}}}", file.display()), "arguments": true },
    });
    let runtime = Options::from_config_text("test.mcp.json", config.to_string())
        .approvals(true)
        .open()
        .await
        .expect("the runtime opens");
    let mut events = runtime.events();
    let mut audits = runtime.events();
    assert_connected(&ready(&runtime).await, "fx");

    call(&runtime, "mcp__fx__echo", json!({"text": "logged"}))
        .await
        .unwrap();
    assert!(matches!(
        call(&runtime, "mcp__fx__crash", json!({})).await,
        Err(CallError::Denied(_))
    ));
    // Asked, and approved.
    let caller = runtime.clone();
    let add = tokio::spawn(async move {
        caller
            .call_tool("mcp__fx__add", json!({"a": 1, "b": 2}), Default::default())
            .await
    });
    let Event::InputRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    runtime
        .answer_input(request.id, mcpbox::InputAnswer::approve_once())
        .await
        .unwrap();
    assert_eq!(add.await.unwrap().unwrap().text, "3");
    // The embedder sees the records too; the file has them once the events are out.
    let mut seen = 0;
    while seen < 3 {
        if let Event::Audit(_) = next_event(&mut audits, |e| matches!(e, Event::Audit(_))).await {
            seen += 1;
        }
    }
    runtime.shutdown().await;

    let records = lines(&file);
    assert_eq!(records.len(), 3, "{records:#?}");
    let echo = &records[0];
    assert_eq!(echo["tool"], "mcp__fx__echo");
    assert_eq!(echo["server"], "fx");
    assert_eq!(echo["decision"], "allow");
    assert_eq!(echo["rule"], "`allow` (permissions.default)");
    assert_eq!(echo["outcome"], "ok");
    assert_eq!(echo["arguments"], json!({"text": "logged"}));
    assert!(echo["durationMs"].is_u64());
    let time = echo["time"].as_str().unwrap();
    assert!(
        time.ends_with('Z') && time.len() == 24,
        "RFC 3339 with milliseconds: {time}"
    );
    let crash = &records[1];
    assert_eq!(
        (&crash["decision"], &crash["outcome"], &crash["call"]),
        (&json!("deny"), &json!("denied"), &Value::Null)
    );
    assert_eq!(
        crash["rule"],
        "`mcp__fx__crash` (permissions.deny[0] in test.mcp.json)"
    );
    let add = &records[2];
    assert_eq!(
        (&add["decision"], &add["approval"], &add["outcome"]),
        (&json!("ask"), &json!("once"), &json!("ok"))
    );
    std::fs::remove_dir_all(file.parent().unwrap().parent().unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedders_file_wins_and_arguments_stay_out_by_default() {
    let file = audit_file("option");
    let config = json!({ "mcpServers": { "fx": fixture_entry(&[]) } });
    let runtime = Options::from_config_text("test.mcp.json", config.to_string())
        .audit_file(&file)
        .open()
        .await
        .unwrap();
    let mut events = runtime.events();
    assert_connected(&ready(&runtime).await, "fx");
    let r = call(&runtime, "mcp__fx__fail", json!({"message": "secret-ish"}))
        .await
        .unwrap();
    assert!(r.is_error);
    next_event(&mut events, |e| matches!(e, Event::Audit(_))).await;
    runtime.shutdown().await;
    let records = lines(&file);
    assert_eq!(records[0]["outcome"], "tool-error");
    assert!(records[0].get("arguments").is_none(), "{}", records[0]);
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("secret-ish")
    );
    std::fs::remove_dir_all(file.parent().unwrap().parent().unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_audit_file_that_cannot_be_written_fails_the_open() {
    let config =
        json!({ "mcpServers": {}, "audit": { "file": "/proc/mcpbox-cannot/audit.jsonl" } });
    let e = Options::from_config_text("test.mcp.json", config.to_string())
        .open()
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("/proc/mcpbox-cannot"), "{e}");
}

/// Metrics with audit events keep each call's record among the recent calls
/// whether or not anyone listens to the events: with no subscriber the driver
/// hands the record over without a copy, with one the subscriber gets the same
/// record as an event.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_keep_the_recent_calls_with_and_without_subscribers() {
    let config = json!({ "mcpServers": { "fx": fixture_entry(&[]) } });
    let runtime = Options::from_config_text("test.mcp.json", config.to_string())
        .metrics(true)
        .audit_events(true)
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "fx");
    for i in 0..3 {
        call(
            &runtime,
            "mcp__fx__echo",
            json!({"text": format!("quiet {i}")}),
        )
        .await
        .unwrap();
    }
    // The answer goes out before the record is published: wait for it, with a deadline.
    let quiet = eventually_async(crate::PATIENCE, async || {
        let recent = runtime.recent_calls();
        if recent.len() >= 3 {
            Ok(recent)
        } else {
            Err(format!(
                "the calls never reached the recent calls: {recent:?}"
            ))
        }
    })
    .await;
    assert_eq!(quiet.len(), 3, "{quiet:?}");
    assert!(
        quiet
            .iter()
            .all(|r| r.tool == "mcp__fx__echo" && r.server == "fx" && r.outcome == "ok"),
        "{quiet:?}"
    );

    let mut events = runtime.events();
    call(&runtime, "mcp__fx__echo", json!({"text": "heard"}))
        .await
        .unwrap();
    let Event::Audit(heard) = next_event(&mut events, |e| matches!(e, Event::Audit(_))).await
    else {
        unreachable!("next_event returns what its predicate matched")
    };
    // The monitor counted it before the event went out.
    let recent = runtime.recent_calls();
    assert_eq!(recent.len(), 4, "{recent:?}");
    assert_eq!(recent.last(), Some(&heard));
    let metrics = runtime.metrics().expect("metrics are on");
    let echo: u64 = metrics
        .calls
        .iter()
        .filter(|c| c.server == "fx" && c.tool == "echo" && c.outcome == "ok")
        .map(|c| c.count)
        .sum();
    assert_eq!(echo, 4, "{:?}", metrics.calls);
}
