//! Roots end to end against the reference filesystem server, which asks for the
//! client's roots after `initialize` and again on
//! `notifications/roots/list_changed`, and then allows exactly those
//! directories: what it may read follows the configuration's `roots`,
//! `Runtime::set_roots` and reloads.

use std::path::{Path, PathBuf};

use mcpbox::{Event, Options, Root, Runtime};
use mcpbox_tests::process::eventually_async;
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, next_event, ready, show, tempdir};

/// Two directories with a file each: `a/a.txt` and `b/b.txt`.
fn two_dirs(tag: &str) -> (PathBuf, PathBuf) {
    let (a, b) = (
        tempdir(&format!("roots-{tag}-a")),
        tempdir(&format!("roots-{tag}-b")),
    );
    std::fs::write(a.join("a.txt"), "in a").unwrap();
    std::fs::write(b.join("b.txt"), "in b").unwrap();
    (a, b)
}

/// The filesystem server, started allowed to reach `dirs` (before any roots).
fn fs_entry(dirs: &[&Path]) -> Value {
    let (command, _) = mcpbox_tests::filesystem_command(dirs[0]);
    json!({ "command": command, "args": dirs.iter().map(|d| show(d)).collect::<Vec<_>>() })
}

async fn open_with(config: Value, roots: Option<Vec<Root>>) -> Runtime {
    let mut options = Options::from_config_text("roots.mcp.json", config.to_string());
    if let Some(roots) = roots {
        options = options.roots(roots);
    }
    let runtime = options.open().await.expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "fs");
    runtime
}

/// What the server allows now, as it lists it.
async fn allowed(runtime: &Runtime) -> String {
    let r = call(runtime, "mcp__fs__list_allowed_directories", json!({}))
        .await
        .expect("listed");
    assert!(!r.is_error, "{r:?}");
    r.text
}

/// Waits until the server allows exactly `dirs`: it asks for roots on its own
/// schedule after `initialize` or `list_changed`, so the test looks until it
/// has (or [`PATIENCE`] runs out).
async fn await_allowed(runtime: &Runtime, dirs: &[&Path]) {
    eventually_async(PATIENCE, async || {
        let text = allowed(runtime).await;
        let listed: Vec<&str> = text.lines().skip(1).collect();
        let mut want: Vec<String> = dirs.iter().map(|d| show(d)).collect();
        want.sort();
        let mut have: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
        have.sort();
        if have == want {
            Ok(())
        } else {
            Err(format!(
                "the server never allowed {want:?}; it allows {text:?}"
            ))
        }
    })
    .await
}

/// Reading `file`: Ok(text) or Err(the server's refusal).
async fn read(runtime: &Runtime, file: PathBuf) -> Result<String, String> {
    let r = call(
        runtime,
        "mcp__fs__read_text_file",
        json!({ "path": show(&file) }),
    )
    .await
    .expect("a tool result");
    if r.is_error { Err(r.text) } else { Ok(r.text) }
}

async fn reads_only(runtime: &Runtime, yes: &Path, no: &Path) {
    let name = |d: &Path| {
        let a = d.join("a.txt");
        if a.exists() { a } else { d.join("b.txt") }
    };
    assert!(
        read(runtime, name(yes)).await.is_ok(),
        "{yes:?} is readable"
    );
    let e = read(runtime, name(no)).await.unwrap_err();
    assert!(e.contains("outside allowed directories"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_filesystem_server_follows_the_configured_and_the_embedders_roots() {
    let (a, b) = two_dirs("follow");
    // Started allowed `a`; the configuration's roots say `b`.
    let config =
        |root: &Path| json!({ "roots": [show(root)], "mcpServers": { "fs": fs_entry(&[&a]) } });
    let runtime = open_with(config(&b), None).await;
    await_allowed(&runtime, &[&b]).await;
    reads_only(&runtime, &b, &a).await;

    // The embedder's roots replace the file's: the server is told, asks again,
    // and follows.
    let mut events = runtime.events();
    runtime
        .set_roots(Some(vec![Root::new(show(&a)).named("a")]))
        .await
        .unwrap();
    await_allowed(&runtime, &[&a]).await;
    reads_only(&runtime, &a, &b).await;
    // Told, not restarted.
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(&event, Event::Status(s) if s.name == "fs" && s.state != mcpbox::ServerState::Connected),
            "{event:?}"
        );
    }

    // Back to the file's roots, then a reload of the file with other roots.
    runtime.set_roots(None).await.unwrap();
    await_allowed(&runtime, &[&b]).await;
    let report = runtime
        .reload_text("roots.mcp.json", config(&a).to_string())
        .await
        .unwrap();
    assert_eq!(report.unchanged, ["fs"], "{report:?}");
    await_allowed(&runtime, &[&a]).await;
    reads_only(&runtime, &a, &b).await;

    // A root that is neither an absolute path nor a file:// URI changes nothing.
    let e = runtime
        .set_roots(Some(vec![Root::new("relative/dir")]))
        .await
        .unwrap_err();
    assert!(e.contains("root 0") && e.contains("absolute path"), "{e}");
    await_allowed(&runtime, &[&a]).await;
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_connected_without_roots_is_reconnected_to_be_offered_them() {
    let (a, b) = two_dirs("gain");
    let config = json!({ "mcpServers": { "fs": fs_entry(&[&a]) } });
    let runtime = open_with(config, None).await;
    // No roots: no capability, so the server keeps its arguments.
    await_allowed(&runtime, &[&a]).await;
    let mut events = runtime.events();
    runtime
        .set_roots(Some(vec![Root::new(format!("file://{}", show(&b)))]))
        .await
        .unwrap();
    next_event(&mut events, |e| {
        matches!(e, Event::Status(s) if s.name == "fs" && s.state == mcpbox::ServerState::Connected)
    })
    .await;
    await_allowed(&runtime, &[&b]).await;
    reads_only(&runtime, &b, &a).await;
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn options_roots_reach_the_first_session_and_an_entrys_own_roots_win() {
    let (a, b) = two_dirs("own");
    let mut entry = fs_entry(&[&a, &b]);
    entry["roots"] = json!([{ "uri": format!("file://{}", show(&a)), "name": "a" }]);
    let config = json!({ "roots": [show(&b)], "mcpServers": { "fs": entry } });
    let runtime = open_with(config, Some(vec![Root::new(show(&b))])).await;
    await_allowed(&runtime, &[&a]).await;
    reads_only(&runtime, &a, &b).await;
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_server_gets_at_most_its_grants() {
    let (a, b) = two_dirs("boxed");
    let parent = a.parent().unwrap().to_path_buf();
    let mut entry = fs_entry(&[&a, &b]);
    entry["sandbox"] = json!({ "read": [show(&a)] });
    // The roots name `a`'s parent and `b`: the server is told `a` alone.
    let config = json!({ "roots": [show(&parent), show(&b)], "mcpServers": { "fs": entry } });
    let runtime = open_with(config, None).await;
    await_allowed(&runtime, &[&a]).await;
    reads_only(&runtime, &a, &b).await;
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_lists_the_roots_and_hears_of_changes() {
    let (a, b) = two_dirs("everything");
    let (command, args) = mcpbox_tests::everything_command();
    let config = json!({
        "roots": [{ "path": show(&a), "name": "project a" }],
        "mcpServers": { "everything": { "command": command, "args": args } },
    });
    let runtime = Options::from_config_text("roots.mcp.json", config.to_string())
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "everything");
    // The tool exists only for a client that declared roots.
    let r = call(&runtime, "mcp__everything__get-roots-list", json!({}))
        .await
        .expect("get-roots-list is offered");
    assert!(
        r.text.contains("1. project a") && r.text.contains(&format!("URI: file://{}", show(&a))),
        "{r:?}"
    );
    let mut events = runtime.events();
    runtime
        .set_roots(Some(vec![Root::new(show(&a)), Root::new(show(&b))]))
        .await
        .unwrap();
    // It asks again on `notifications/roots/list_changed` and logs what it got.
    next_event(&mut events, |e| {
        matches!(e, Event::Log { server, message, .. } if server == "everything" && message.contains("Roots updated: 2 root(s)"))
    })
    .await;
    let r = call(&runtime, "mcp__everything__get-roots-list", json!({}))
        .await
        .unwrap();
    assert!(
        r.text.contains(&format!("URI: file://{}", show(&b))),
        "{r:?}"
    );
    runtime.shutdown().await;
}
