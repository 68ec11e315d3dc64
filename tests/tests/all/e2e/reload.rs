//! Hot reload against the fixture server: a new configuration applied as a diff
//! with calls in flight, the file watcher (saves by rename, syntax errors,
//! duplicates, a deleted and recreated file, a storm of saves).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpbox::{CallError, CallOptions, Event, Options, ReloadReport, Runtime, ServerState};
use mcpbox_tests::fixture::SLEEP_STARTED;
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, fixture_entry, next_event, ready, status};

/// A fresh directory for one test's configuration file.
fn dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpbox-reload-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(servers: Value) -> String {
    json!({ "mcpServers": servers }).to_string()
}

/// Saves as editors do: a new file renamed over the old one.
fn save(path: &Path, text: &str) {
    let temp = path.with_extension("swp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

/// A runtime on the file `path`, keeping its pins in this test process's
/// configuration directory, never the user's.
async fn open_file(path: &Path, watch: bool) -> Runtime {
    crate::with_process_dirs(Options::from_config_file(path))
        .watch_config(watch)
        .open()
        .await
        .expect("the runtime opens")
}

/// Waits for the next reload event (either kind).
async fn next_reload(events: &mut tokio::sync::broadcast::Receiver<Event>) -> Event {
    next_event(events, |e| {
        matches!(e, Event::Reloaded(_) | Event::ReloadFailed { .. })
    })
    .await
}

fn reloaded(event: Event) -> ReloadReport {
    match event {
        Event::Reloaded(report) => report,
        other => panic!("expected a reload, got {other:?}"),
    }
}

/// Starts a sleep on `server` and waits until the server has it.
async fn sleeping(
    runtime: &Runtime,
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    server: &str,
) -> tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>> {
    let call = {
        let runtime = runtime.clone();
        let tool = format!("mcp__{server}__sleep");
        tokio::spawn(async move {
            runtime
                .call_tool(&tool, json!({"ms": 3000}), CallOptions::default())
                .await
        })
    };
    let name = server.to_owned();
    next_event(events, |e| {
        matches!(e, Event::Log { server, message, .. } if *server == name && message == SLEEP_STARTED)
    })
    .await;
    call
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_keeps_unchanged_servers_and_their_calls() {
    let path = dir("diff").join("mcp.json");
    let sleepy = fixture_entry(&["--announce-sleeps"]);
    std::fs::write(
        &path,
        config(json!({ "keep": sleepy, "gone": sleepy, "change": sleepy })),
    )
    .unwrap();
    let runtime = open_file(&path, false).await;
    for name in ["keep", "gone", "change"] {
        assert_connected(&ready(&runtime).await, name);
    }
    let mut events = runtime.events();
    let keep = sleeping(&runtime, &mut events, "keep").await;
    let gone = sleeping(&runtime, &mut events, "gone").await;
    let change = sleeping(&runtime, &mut events, "change").await;

    std::fs::write(
        &path,
        config(json!({
            "keep": sleepy,
            "change": fixture_entry(&["--announce-sleeps", "--name", "changed"]),
            "new": fixture_entry(&[]),
        })),
    )
    .unwrap();
    let report = runtime.reload().await.expect("the reload applies");
    assert_eq!(report.unchanged, ["keep"]);
    assert_eq!(report.removed, ["gone"]);
    assert_eq!(report.restarted, ["change"]);
    assert_eq!(report.added, ["new"]);
    assert_eq!(report.origin, path.display().to_string());
    assert_eq!(reloaded(next_reload(&mut events).await), report);

    // The removed and the changed servers' calls fail, naming the reload.
    for (call, why) in [
        (
            gone,
            "server `gone` was removed from the configuration by a reload of",
        ),
        (change, "server `change` was restarted by a reload of"),
    ] {
        match tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap() {
            Err(CallError::ServerUnavailable(message)) => {
                assert!(message.contains(why), "{message}")
            }
            other => panic!("expected server-unavailable, got {other:?}"),
        }
    }
    // The unchanged server's call completes: its process was not touched.
    let kept = tokio::time::timeout(PATIENCE, keep).await.unwrap().unwrap();
    assert_eq!(kept.expect("the sleep completes").text, "slept 3000");

    let servers = ready(&runtime).await;
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    // In the file's order (`config` writes keys sorted).
    assert_eq!(names, ["change", "keep", "new"]);
    assert_eq!(
        status(&servers, "change").server_name.as_deref(),
        Some("changed")
    );
    assert_connected(&servers, "new");
    let r = crate::call(&runtime, "mcp__new__echo", json!({"text": "hi"})).await;
    assert_eq!(r.unwrap().text, "hi");
    assert!(matches!(
        crate::call(&runtime, "mcp__gone__echo", json!({"text": "hi"})).await,
        Err(CallError::UnknownTool(_))
    ));
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watcher_applies_saves_and_keeps_running_through_bad_ones() {
    let path = dir("watch").join("mcp.json");
    std::fs::write(&path, config(json!({ "a": fixture_entry(&[]) }))).unwrap();
    let runtime = open_file(&path, true).await;
    assert_connected(&ready(&runtime).await, "a");
    let mut events = runtime.events();

    // A save by rename adds a server.
    save(
        &path,
        &config(json!({ "a": fixture_entry(&[]), "b": fixture_entry(&[]) })),
    );
    let report = reloaded(next_reload(&mut events).await);
    assert_eq!(
        (report.added.as_slice(), report.unchanged.as_slice()),
        (&["b".to_owned()][..], &["a".to_owned()][..])
    );
    assert!(report.file_events >= 1);
    assert_connected(&ready(&runtime).await, "b");

    // A syntax error: reported with its line and column; everything keeps running.
    save(
        &path,
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": }\n  }\n}\n",
    );
    match next_reload(&mut events).await {
        Event::ReloadFailed { origin, error } => {
            assert_eq!(origin, path.display().to_string());
            assert!(error.contains("mcp.json:3:"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    let r = crate::call(&runtime, "mcp__b__echo", json!({"text": "still"})).await;
    assert_eq!(r.unwrap().text, "still");

    // A duplicate server: the last definition is used, and the issue is reported.
    let text = format!(
        "{{\"mcpServers\": {{\"a\": {a}, \"b\": {{\"command\": \"/nonexistent\"}}, \"b\": {a}}}}}",
        a = fixture_entry(&[])
    );
    save(&path, &text);
    let report = reloaded(next_reload(&mut events).await);
    assert_eq!(report.unchanged, ["a", "b"], "{report:?}");
    assert!(
        report
            .issues
            .iter()
            .any(|i| i.server.as_deref() == Some("b") && i.message.contains("more than once")),
        "{report:?}"
    );
    assert_eq!(runtime.config_issues(), report.issues);

    // A broken entry keeps the running definition.
    save(
        &path,
        &config(json!({ "a": fixture_entry(&[]), "b": {"command": 42} })),
    );
    let report = reloaded(next_reload(&mut events).await);
    assert_eq!(report.kept, ["b"]);
    assert_connected(&runtime.servers(), "b");

    // Deleted: reported, nothing stops. Recreated: applied.
    std::fs::remove_file(&path).unwrap();
    match next_reload(&mut events).await {
        Event::ReloadFailed { error, .. } => assert!(error.contains("was deleted"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_connected(&runtime.servers(), "a");
    std::fs::write(&path, config(json!({ "a": fixture_entry(&[]) }))).unwrap();
    let report = reloaded(next_reload(&mut events).await);
    assert_eq!(report.removed, ["b"]);
    assert_eq!(report.unchanged, ["a"]);
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_storm_of_saves_is_applied_once_as_its_last_state() {
    let path = dir("storm").join("mcp.json");
    std::fs::write(&path, config(json!({ "a": fixture_entry(&[]) }))).unwrap();
    // A quiet time well above the storm's gaps, so a slow machine does not split it.
    let runtime = crate::with_process_dirs(Options::from_config_file(&path))
        .watch_config(true)
        .watch_debounce(Duration::from_millis(1000))
        .open()
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "a");
    let mut events = runtime.events();

    // 100 saves in a second: every tenth one broken, each naming another server,
    // the last one valid and naming `last`. The pacing makes the storm, it does
    // not order anything the test then waits for.
    let mut pace = tokio::time::interval(Duration::from_millis(10));
    for i in 0..100 {
        pace.tick().await;
        let text = if i == 99 {
            config(json!({ "a": fixture_entry(&[]), "last": fixture_entry(&[]) }))
        } else if i % 10 == 5 {
            "{ \"mcpServers\": ".to_owned()
        } else {
            let mut servers = serde_json::Map::new();
            servers.insert("a".into(), fixture_entry(&[]));
            servers.insert(format!("s{i}"), fixture_entry(&[]));
            config(Value::Object(servers))
        };
        if i % 2 == 0 {
            save(&path, &text);
        } else {
            std::fs::write(&path, text).unwrap();
        }
    }
    let report = reloaded(next_reload(&mut events).await);
    assert_eq!(
        report.added,
        ["last"],
        "only the last state is applied: {report:?}"
    );
    assert_eq!(report.unchanged, ["a"]);
    assert!(
        report.file_events >= 10,
        "{} events folded",
        report.file_events
    );

    // Nothing else was applied: a reload asked for now is the next event.
    let again = runtime.reload().await.unwrap();
    assert!(!again.changed(), "{again:?}");
    assert_eq!(reloaded(next_reload(&mut events).await), again);
    let servers = ready(&runtime).await;
    assert_eq!(servers.len(), 2);
    assert_connected(&servers, "last");
    assert!(servers.iter().all(|s| s.state == ServerState::Connected));
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_text_and_a_runtime_opened_from_text() {
    let runtime = crate::open(json!({ "a": fixture_entry(&[]) })).await;
    assert_connected(&ready(&runtime).await, "a");
    let error = runtime.reload().await.unwrap_err();
    assert!(error.to_string().contains("use reload_text"), "{error}");
    let report = runtime
        .reload_text("edited.json", config(json!({ "b": fixture_entry(&[]) })))
        .await
        .unwrap();
    assert_eq!(
        (report.added.clone(), report.removed.clone()),
        (vec!["b".to_owned()], vec!["a".to_owned()])
    );
    let error = runtime
        .reload_text("edited.json", "[1, 2")
        .await
        .unwrap_err();
    assert!(error.to_string().starts_with("edited.json:1:"), "{error}");
    assert_connected(&ready(&runtime).await, "b");
    runtime.shutdown().await;
}

/// A remote server's changed URL or headers restart it through a fresh grant:
/// the new URL is the one reached, and the new headers are the ones sent.
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_url_or_headers_restarts_a_remote_server() {
    use mcpbox_tests::http::{EverythingMode, ScriptedServer, everything_http, fastmcp_http};

    let everything = everything_http(EverythingMode::StreamableHttp);
    let fastmcp = fastmcp_http();
    let runtime = crate::open(json!({ "remote": { "type": "http", "url": everything.url } })).await;
    assert_connected(&ready(&runtime).await, "remote");
    let r = crate::call(&runtime, "mcp__remote__echo", json!({"message": "one"})).await;
    assert_eq!(r.unwrap().text, "Echo: one");

    // Another URL: the other server.
    let report = runtime
        .reload_text(
            "edited.json",
            config(json!({ "remote": { "type": "http", "url": fastmcp.url } })),
        )
        .await
        .expect("the reload applies");
    assert_eq!(report.restarted, ["remote"]);
    let servers = ready(&runtime).await;
    assert_connected(&servers, "remote");
    assert_eq!(
        status(&servers, "remote").server_name.as_deref(),
        Some("fastmcp-peer")
    );
    let r = crate::call(&runtime, "mcp__remote__greet", json!({"name": "Ada"})).await;
    assert_eq!(r.unwrap().text, "Hello, Ada!");

    // Only the headers change: a new connection that sends the new ones.
    let scripted = ScriptedServer::start();
    let entry = |token: &str| {
        config(json!({ "remote": {
            "type": "http", "url": scripted.url, "headers": { "X-Token": token }
        }}))
    };
    runtime
        .reload_text("edited.json", entry("one"))
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "remote");
    let report = runtime
        .reload_text("edited.json", entry("two"))
        .await
        .unwrap();
    assert_eq!(report.restarted, ["remote"]);
    assert_connected(&ready(&runtime).await, "remote");
    let r = crate::call(&runtime, "mcp__remote__echo", json!({"text": "hi"})).await;
    assert_eq!(r.unwrap().text, "hi");
    let seen = scripted.seen();
    let call = seen
        .iter()
        .rfind(|s| s.rpc_method() == Some("tools/call"))
        .expect("the call reached the server");
    assert_eq!(call.header("x-token"), Some("two"), "{call:?}");
    let inits: Vec<_> = seen
        .iter()
        .filter(|s| s.rpc_method() == Some("initialize"))
        .map(|s| s.header("x-token"))
        .collect();
    assert_eq!(
        inits,
        [Some("one"), Some("two")],
        "one connection per entry"
    );
    runtime.shutdown().await;
}
