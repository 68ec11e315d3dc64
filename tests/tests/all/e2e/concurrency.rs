//! Many callers at once through one runtime (one store, one driver thread).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcpbox::{CallOptions, Event};
use mcpbox_tests::fixture::SLEEP_STARTED;
use serde_json::json;

use crate::{PATIENCE, assert_connected, fixture_entry, next_event, open, ready};

/// 50 calls from 50 tasks in flight at once: a slow call on one server must not
/// hold up fast calls on another, and every caller gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_callers_and_a_slow_server_do_not_wait_for_each_other() {
    let runtime = open(json!({
        "slow": fixture_entry(&["--announce-sleeps"]),
        "fast": fixture_entry(&[]),
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "slow");
    assert_connected(&servers, "fast");

    let mut events = runtime.events();
    let slow_done = Arc::new(AtomicBool::new(false));
    let slow = {
        let (runtime, slow_done) = (runtime.clone(), slow_done.clone());
        tokio::spawn(async move {
            let r = runtime
                .call_tool(
                    "mcp__slow__sleep",
                    json!({"ms": 1000}),
                    CallOptions::default(),
                )
                .await;
            slow_done.store(true, Ordering::SeqCst);
            r
        })
    };
    // The sleep is in flight before the echoes start: the server said it arrived.
    next_event(&mut events, |e| {
        matches!(e, Event::Log { server, message, .. }
            if server == "slow" && message == SLEEP_STARTED)
    })
    .await;

    let echoes: Vec<_> = (0..50)
        .map(|i| {
            let (runtime, slow_done) = (runtime.clone(), slow_done.clone());
            tokio::spawn(async move {
                let text = format!("message {i}");
                let server = if i % 5 == 0 { "slow" } else { "fast" };
                let r = runtime
                    .call_tool(
                        &format!("mcp__{server}__echo"),
                        json!({ "text": text }),
                        CallOptions::default(),
                    )
                    .await
                    .expect("echo succeeds");
                (i, r.text, slow_done.load(Ordering::SeqCst))
            })
        })
        .collect();
    for echo in echoes {
        let (i, text, slow_finished_first) =
            tokio::time::timeout(PATIENCE, echo).await.unwrap().unwrap();
        assert_eq!(
            text,
            format!("message {i}"),
            "every caller gets its own answer"
        );
        assert!(!slow_finished_first, "echo {i} waited for the 1 s sleep");
    }
    let slept = tokio::time::timeout(PATIENCE, slow)
        .await
        .unwrap()
        .unwrap()
        .expect("the sleep succeeds");
    assert_eq!(slept.text, "slept 1000");
}

/// Many overlapping sleeps on one server finish in order of their length, not
/// of their start: the server and the runtime keep them all in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_calls_on_one_server_complete_independently() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for ms in [600u64, 400, 200, 0] {
        let (runtime, tx) = (runtime.clone(), tx.clone());
        tokio::spawn(async move {
            let r = runtime
                .call_tool(
                    "mcp__fx__sleep",
                    json!({ "ms": ms }),
                    CallOptions::default(),
                )
                .await;
            let _ = tx.send((ms, r.map(|r| r.text)));
        });
    }
    drop(tx);
    let mut order = Vec::new();
    while let Some((ms, text)) = tokio::time::timeout(PATIENCE, rx.recv()).await.unwrap() {
        assert_eq!(text.unwrap(), format!("slept {ms}"));
        order.push(ms);
    }
    assert_eq!(order, vec![0, 200, 400, 600]);
}

/// A server that stops reading its stdin holds up no other server: what the
/// runtime writes to it waits in its own buffer (well past the pipe's 64 KiB),
/// while calls to another server are written and answered as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_its_stdin_holds_up_no_other() {
    let runtime = open(json!({
        "deaf": fixture_entry(&["--deaf-after-list"]),
        "fine": fixture_entry(&[]),
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "deaf");
    assert_connected(&servers, "fine");

    // 4 MiB for a server that reads nothing: its pipe is full after the first.
    let big = "x".repeat(256 * 1024);
    let unanswered: Vec<_> = (0..16)
        .map(|_| {
            let (runtime, big) = (runtime.clone(), big.clone());
            tokio::spawn(async move {
                runtime
                    .call_tool(
                        "mcp__deaf__echo",
                        json!({ "text": big }),
                        CallOptions::default(),
                    )
                    .await
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let start = std::time::Instant::now();
    for i in 0..20 {
        let text = format!("message {i}");
        let r = tokio::time::timeout(
            PATIENCE,
            runtime.call_tool(
                "mcp__fine__echo",
                json!({ "text": text }),
                CallOptions::default(),
            ),
        )
        .await
        .expect("a call to the other server is answered")
        .expect("echo succeeds");
        assert_eq!(r.text, text);
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "20 echoes took {:?} beside a server that reads nothing",
        start.elapsed()
    );
    for call in &unanswered {
        assert!(!call.is_finished(), "the deaf server answered nothing");
    }
    for call in unanswered {
        call.abort();
    }
}
