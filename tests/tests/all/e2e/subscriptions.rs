//! Resource subscriptions, resource and prompt list changes and the 2026-07-28
//! per-request log level, end to end against real servers: server-everything
//! (2025 era, `resources/subscribe` and its `toggle-subscriber-updates` tool) and
//! the TypeScript SDK v2 peer (2026-07-28 over stdio and Streamable HTTP, where
//! the subscription rides on `subscriptions/listen`).

use mcpbox::{CallError, Event, Runtime};
use mcpbox_tests::http::ts_http;
use mcpbox_tests::{everything_command, ts_server_command};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, next_event, open, ready};

fn entry((command, args): (String, Vec<String>)) -> Value {
    json!({ "command": command, "args": args })
}

/// The events so far, once a round trip to `server` shows that everything it
/// sent before has been handled.
async fn events_until_now(
    runtime: &Runtime,
    server: &str,
    events: &mut tokio::sync::broadcast::Receiver<Event>,
) -> Vec<Event> {
    tokio::time::timeout(PATIENCE, runtime.list_resources(Some(server)))
        .await
        .expect("in time")
        .expect("the server lists its resources");
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    seen
}

/// Every event up to `server`'s next resource list change.
async fn until_resources_changed(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    server: &str,
) -> Vec<Event> {
    let mut seen = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        loop {
            match events.recv().await {
                Ok(Event::ResourcesChanged(s)) if s == server => return,
                Ok(e) => seen.push(e),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no resource list change of {server} in time: {seen:?}"));
    seen
}

fn updated(events: &[Event], server: &str, uri: &str) -> bool {
    events.iter().any(
        |e| matches!(e, Event::ResourceUpdated { server: s, uri: u } if s == server && u == uri),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_reports_updates_of_subscribed_resources_in_the_2025_era() {
    let runtime = open(json!({ "everything": entry(everything_command()) })).await;
    assert_connected(&ready(&runtime).await, "everything");
    let uri = "demo://resource/static/document/architecture.md";
    let toggle = "mcp__everything__toggle-subscriber-updates";
    let mut events = runtime.events();

    runtime
        .subscribe_resource(Some("everything"), uri)
        .await
        .expect("server-everything declares resources.subscribe");
    // Its updates start with one at once for every subscribed resource.
    let started = call(&runtime, toggle, json!({})).await.unwrap();
    assert!(started.text.starts_with("Started"), "{started:?}");
    next_event(&mut events, |e| {
        matches!(e, Event::ResourceUpdated { server, uri: u } if server == "everything" && u == uri)
    })
    .await;

    // Unsubscribed, a fresh start sends nothing for it.
    runtime
        .unsubscribe_resource(Some("everything"), uri)
        .await
        .unwrap();
    let stopped = call(&runtime, toggle, json!({})).await.unwrap();
    assert!(stopped.text.starts_with("Stopped"), "{stopped:?}");
    let _ = events_until_now(&runtime, "everything", &mut events).await;
    let started = call(&runtime, toggle, json!({})).await.unwrap();
    assert!(started.text.starts_with("Started"), "{started:?}");
    let seen = events_until_now(&runtime, "everything", &mut events).await;
    assert!(!updated(&seen, "everything", uri), "{seen:?}");
    // With no server named, every server that offers subscriptions is asked.
    runtime.subscribe_resource(None, uri).await.unwrap();
    next_event(&mut events, |e| {
        matches!(e, Event::ResourceUpdated { server, uri: u } if server == "everything" && u == uri)
    })
    .await;
    runtime.shutdown().await;
}

/// The TS SDK v2 peer over stdio and over HTTP: the URI goes into the
/// `resourceSubscriptions` of a new `subscriptions/listen`, and its
/// `touch` tool publishes an update and resource and prompt list changes.
#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_v2_updates_arrive_on_subscriptions_listen_in_2026_07_28() {
    let http = ts_http();
    let runtime = open(json!({
        "ts": entry(ts_server_command()),
        "tshttp": { "type": "http", "url": http.url },
    }))
    .await;
    let servers = ready(&runtime).await;
    for server in ["ts", "tshttp"] {
        assert_connected(&servers, server);
        let mut events = runtime.events();
        let touch = format!("mcp__{server}__touch");
        runtime
            .subscribe_resource(Some(server), "ts://readme")
            .await
            .unwrap_or_else(|e| panic!("{server}: {e}"));
        let r = call(&runtime, &touch, json!({"uri": "ts://readme"}))
            .await
            .unwrap();
        assert_eq!(r.text, "touched ts://readme");
        next_event(&mut events, |e| {
            matches!(e, Event::ResourceUpdated { server: s, uri } if s == server && uri == "ts://readme")
        })
        .await;
        next_event(
            &mut events,
            |e| matches!(e, Event::ResourcesChanged(s) if s == server),
        )
        .await;
        next_event(
            &mut events,
            |e| matches!(e, Event::PromptsChanged(s) if s == server),
        )
        .await;

        // Another URI is not reported; nor is this one once unsubscribed. The
        // peer sends an update before the list change on the same stream, so
        // what came before the list change is all there is to see.
        call(&runtime, &touch, json!({"uri": "ts://logo"}))
            .await
            .unwrap();
        let seen = until_resources_changed(&mut events, server).await;
        assert!(!updated(&seen, server, "ts://logo"), "{server}: {seen:?}");
        runtime
            .unsubscribe_resource(Some(server), "ts://readme")
            .await
            .unwrap();
        call(&runtime, &touch, json!({"uri": "ts://readme"}))
            .await
            .unwrap();
        let seen = until_resources_changed(&mut events, server).await;
        assert!(!updated(&seen, server, "ts://readme"), "{server}: {seen:?}");
    }
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_resources_subscribe_is_refused_by_name() {
    let runtime = open(json!({ "fx": crate::fixture_entry(&[]) })).await;
    assert_connected(&ready(&runtime).await, "fx");
    let e = runtime
        .subscribe_resource(Some("fx"), "test://x")
        .await
        .unwrap_err();
    assert!(
        matches!(&e, CallError::Protocol(m) if m.contains("`fx`") && m.contains("resources.subscribe")),
        "{e:?}"
    );
    runtime.shutdown().await;
}

/// 2026-07-28 has no `logging/setLevel`: the configured `logLevel` goes in each
/// request's `_meta`, and without one the server sends no log lines at all.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_server_logs_at_the_configured_level_and_not_without_one() {
    let mut with_level = entry(ts_server_command());
    with_level["logLevel"] = json!("info");
    let runtime = open(json!({
        "leveled": with_level,
        "quiet": entry(ts_server_command()),
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "leveled");
    assert_connected(&servers, "quiet");
    let mut events = runtime.events();
    for server in ["leveled", "quiet"] {
        let r = call(&runtime, &format!("mcp__{server}__log"), json!({}))
            .await
            .unwrap();
        assert_eq!(r.text, "logged");
    }
    let mut logs = Vec::new();
    for server in ["leveled", "quiet"] {
        for e in events_until_now(&runtime, server, &mut events).await {
            if let Event::Log {
                server, message, ..
            } = e
            {
                logs.push((server, message));
            }
        }
    }
    assert_eq!(
        logs,
        vec![("leveled".to_string(), "an info line".to_string())],
        "info passes the configured level, debug does not, and the server without one logs nothing"
    );
    runtime.shutdown().await;
}
