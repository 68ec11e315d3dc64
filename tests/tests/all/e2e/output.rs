//! Output limits end to end: oversized results and images go to files in the
//! host's result directory, the caller gets a head, a note and a link.

use std::path::PathBuf;

use mcpbox::{Options, Runtime};
use serde_json::{Value, json};

use crate::{assert_connected, call, fixture_entry, ready};

fn results_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcpbox-results-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn open_with(servers: Value, options: impl FnOnce(Options) -> Options) -> Runtime {
    let text = json!({ "mcpServers": servers }).to_string();
    let runtime = options(Options::from_config_text("test.mcp.json", text))
        .open()
        .await
        .expect("the runtime opens");
    for s in ready(&runtime).await.iter() {
        assert_connected(std::slice::from_ref(s), &s.name);
    }
    runtime
}

/// The file a `resource_link` block points to, read.
fn linked(block: &Value) -> Vec<u8> {
    assert_eq!(block["type"], "resource_link", "{block}");
    let uri = block["uri"].as_str().unwrap();
    let path = url_path(uri);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{uri}: {e}"))
}

fn url_path(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").expect("a file URI"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_result_is_cut_and_kept_whole_in_a_file() {
    let dir = results_dir("large");
    let runtime = open_with(json!({ "fx": fixture_entry(&[]) }), |o| {
        o.results_dir(Some(dir.clone()))
    })
    .await;
    let r = call(&runtime, "mcp__fx__huge", json!({"bytes": 300_000}))
        .await
        .unwrap();
    let content = content_of(&r);
    let blocks = content.as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    let head = blocks[0]["text"].as_str().unwrap();
    assert_eq!(head.len(), 100_000 - 1024);
    assert!(head.bytes().all(|b| b == b'x'));
    let note = blocks[1]["text"].as_str().unwrap();
    assert!(
        note.starts_with("[mcpbox: the result of mcp__fx__huge was 300 KB (over the 100 KB limit), so the first 98976 bytes of its text are above; the whole result is in file://"),
        "{note}"
    );
    let whole = linked(&blocks[2]);
    assert_eq!(whole.len(), 300_000);
    assert_eq!(blocks[2]["mimeType"], "text/plain");
    assert_eq!(blocks[2]["size"], 300_000);
    assert!(url_path(blocks[2]["uri"].as_str().unwrap()).starts_with(&dir));
    assert_eq!(r.text, format!("{head}\n{note}"));
    runtime.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn images_go_to_files_unless_the_embedder_wants_them_inline() {
    let dir = results_dir("images");
    let (everything, args) = mcpbox_tests::everything_command();
    let servers = json!({
        "fx": fixture_entry(&[]),
        "everything": { "command": everything, "args": args },
    });
    let runtime = open_with(servers.clone(), |o| o.results_dir(Some(dir.clone()))).await;
    for (tool, text) in [
        ("mcp__fx__image", "a red pixel"),
        (
            "mcp__everything__get-tiny-image",
            "Here's the image you requested:",
        ),
    ] {
        let r = call(&runtime, tool, json!({})).await.unwrap();
        let content = content_of(&r);
        let blocks = content.as_array().unwrap();
        assert_eq!(blocks[0]["text"], text);
        assert_eq!(blocks[1]["mimeType"], "image/png");
        let png = linked(&blocks[1]);
        assert_eq!(&png[..4], b"\x89PNG", "{tool}: the image, decoded");
        assert_eq!(blocks[1]["size"], png.len());
        assert!(!r.content.get().contains("iVBOR"), "no base64 passes");
    }
    runtime.shutdown().await;

    let inline = open_with(servers, |o| o.inline_media(true).results_dir(None)).await;
    let r = call(&inline, "mcp__fx__image", json!({})).await.unwrap();
    assert_eq!(content_of(&r)[1]["type"], "image");
    inline.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_limit_is_configurable_and_without_a_directory_the_rest_is_dropped() {
    let text =
        json!({ "mcpServers": { "fx": fixture_entry(&[]) }, "output": { "maxBytes": 5000 } });
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .results_dir(None)
        .open()
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "fx");
    let r = call(&runtime, "mcp__fx__huge", json!({"bytes": 6_000}))
        .await
        .unwrap();
    assert!(
        r.text.ends_with(
            "the rest is gone: the host did not keep it (denied: no result directory is configured (Options::results_dir))]"
        ),
        "{}",
        r.text
    );
    assert_eq!(content_of(&r).as_array().unwrap().len(), 2);
    let small = call(&runtime, "mcp__fx__huge", json!({"bytes": 4_000}))
        .await
        .unwrap();
    assert_eq!(small.text.len(), 4_000, "under the limit: untouched");
    runtime.shutdown().await;
}

/// A result's `content` list, parsed (the runtime passes it on as the server's text).
fn content_of(r: &mcpbox::CallResult) -> Value {
    serde_json::from_str(r.content.get()).unwrap()
}

/// Result files may hold what a tool read: a cache directory others may write
/// is not used for them (they go to a private temporary directory, with a
/// warning), a `results` symlink planted in the cache is not followed, and
/// every file is 0600 in a 0700 directory.
#[tokio::test(flavor = "multi_thread")]
async fn result_files_never_go_where_others_can_reach_them() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let unsafe_cache = crate::tempdir("results-unsafe-cache");
    std::fs::set_permissions(&unsafe_cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let safe_cache = crate::tempdir("results-planted-cache");
    let attacker = crate::tempdir("results-attacker");
    std::os::unix::fs::symlink(&attacker, safe_cache.join("results")).unwrap();
    for (cache, why) in [
        (&unsafe_cache, "may be written by anyone"),
        (&safe_cache, "is a symbolic link"),
    ] {
        let runtime = open_with(json!({ "fx": fixture_entry(&[]) }), |o| {
            // A cache anybody may write is not used for the compiled guest either.
            if cache == &safe_cache {
                crate::with_cache(o, cache)
            } else {
                o.cache_dir(Some(cache.clone()))
            }
        })
        .await;
        let mut events = runtime.events();
        let r = call(&runtime, "mcp__fx__huge", json!({"bytes": 300_000}))
            .await
            .unwrap();
        let content = content_of(&r);
        let file = url_path(content[2]["uri"].as_str().unwrap());
        assert!(
            !file.starts_with(cache) && !file.starts_with(&attacker),
            "{}",
            file.display()
        );
        assert_eq!(linked(&content[2]).len(), 300_000);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        let warning = crate::next_event(
            &mut events,
            |e| matches!(e, mcpbox::Event::Warning(w) if w.contains("result files go to")),
        )
        .await;
        assert!(format!("{warning:?}").contains(why), "{warning:?}");
        runtime.shutdown().await;
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    }
    assert_eq!(std::fs::read_dir(&attacker).unwrap().count(), 0);
    assert!(!unsafe_cache.join("results").exists());
}

/// One result of 20,000 one-pixel images writes 100 image files and the one
/// file of the whole result, not 20,001: the rest stay inline (so in that
/// file), with a warning.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_of_many_images_writes_a_bounded_number_of_files() {
    let dir = results_dir("many-images");
    let runtime = open_with(json!({ "fx": fixture_entry(&[]) }), |o| {
        o.results_dir(Some(dir.clone()))
    })
    .await;
    let mut events = runtime.events();
    let r = call(&runtime, "mcp__fx__image", json!({"count": 20_000}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 101);
    let content = content_of(&r);
    let link = content
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "resource_link" && b["mimeType"] == "application/json")
        .expect("the whole result's file");
    let whole: Value = serde_json::from_slice(&linked(link)).unwrap();
    let blocks = whole["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 20_001, "nothing is lost");
    assert_eq!(
        blocks.iter().filter(|b| b["type"] == "image").count(),
        19_900
    );
    crate::next_event(&mut events, |e| {
        matches!(e, mcpbox::Event::Warning(w)
            if w.contains("19900 images or audio clips of its result were passed on inline"))
    })
    .await;
    runtime.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
