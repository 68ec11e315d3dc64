//! Resources, prompts, completions and log levels end to end, against real
//! servers: server-everything (2025 era), the TypeScript SDK v2 and Python SDK
//! peers (2026-07-28 over stdio), and the fixture's blobs (large and too large).

use std::collections::BTreeMap;
use std::time::Duration;

use mcpbox::{CallError, Options, Runtime};
use mcpbox_tests::{everything_command, fastmcp_server_command, ts_server_command};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, fixture_entry, open, ready, status};

fn entry((command, args): (String, Vec<String>)) -> Value {
    json!({ "command": command, "args": args })
}

/// Awaits `f`, panicking after [`PATIENCE`].
async fn patient<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("answered in time")
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_resources_prompts_and_completions_in_the_2025_era() {
    let runtime = open(json!({ "everything": entry(everything_command()) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "everything");
    assert!(
        status(&servers, "everything")
            .protocol_version
            .as_deref()
            .is_some_and(|v| v.starts_with("2025")),
        "{servers:?}"
    );

    let resources = patient(runtime.list_resources(None)).await.unwrap();
    assert!(resources.len() >= 5, "{resources:?}");
    assert!(resources.iter().all(|r| r.server == "everything"));
    let doc = resources
        .iter()
        .find(|r| r.uri.ends_with("architecture.md"))
        .expect("the architecture document is listed");
    let read = patient(runtime.read_resource(None, &doc.uri))
        .await
        .unwrap();
    assert!(!read.text.is_empty(), "{read:?}");
    assert_eq!(read.contents[0].uri, doc.uri);

    let templates = patient(runtime.list_resource_templates(Some("everything")))
        .await
        .unwrap();
    let blob_template = templates
        .iter()
        .find(|t| t.uri_template.contains("/blob/"))
        .expect("a blob template");
    let uri = blob_template.uri_template.replace("{resourceId}", "3");
    let read = patient(runtime.read_resource(Some("everything"), &uri))
        .await
        .unwrap();
    let blob = read.contents[0].blob.as_deref().expect("a blob item");
    assert!(!blob.is_empty());
    assert_eq!(read.text, "", "a blob has no flat text");

    let prompts = patient(runtime.list_prompts(None)).await.unwrap();
    let args_prompt = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .expect("args-prompt is listed");
    assert_eq!(args_prompt.registry_name, "mcp__everything__args-prompt");
    assert!(
        args_prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );
    let got = patient(runtime.get_prompt("everything", "args-prompt", &args(&[("city", "Paris")])))
        .await
        .unwrap();
    assert!(got.text.contains("Paris"), "{got:?}");
    // A required argument left out: the server's refusal, naming server and prompt.
    let missing = patient(runtime.get_prompt("everything", "args-prompt", &args(&[])))
        .await
        .unwrap_err();
    let text = missing.to_string();
    assert!(
        text.contains("prompts/get args-prompt on server `everything`") && text.contains("city"),
        "{text}"
    );

    let completion = patient(runtime.complete(
        "everything",
        &json!({"ref": {"type": "ref/prompt", "name": "completable-prompt"},
                "argument": {"name": "department", "value": "E"}}),
    ))
    .await
    .unwrap();
    assert!(
        completion.values.iter().any(|v| v == "Engineering"),
        "{completion:?}"
    );

    patient(runtime.set_log_level("everything", "debug"))
        .await
        .unwrap();
    let bad = patient(runtime.set_log_level("everything", "loud"))
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, CallError::InvalidArguments(t) if t.contains("unknown log level")),
        "{bad}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sdk_peers_resources_and_prompts_in_the_2026_era() {
    let runtime = open(json!({
        "ts": entry(ts_server_command()),
        "py": entry(fastmcp_server_command()),
    }))
    .await;
    let servers = ready(&runtime).await;
    for name in ["ts", "py"] {
        assert_connected(&servers, name);
        assert_eq!(
            status(&servers, name).protocol_version.as_deref(),
            Some("2026-07-28")
        );
    }
    // Both servers' resources, each named by server and URI, in configuration
    // order (`json!` sorts the entries: py, then ts).
    let resources = patient(runtime.list_resources(None)).await.unwrap();
    let named: Vec<(&str, &str)> = resources
        .iter()
        .map(|r| (r.server.as_str(), r.uri.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("py", "py://readme"),
            ("ts", "ts://readme"),
            ("ts", "ts://logo")
        ]
    );

    // A read without a server goes to the one that has the URI.
    let read = patient(runtime.read_resource(None, "py://readme"))
        .await
        .unwrap();
    assert_eq!(read.text, "py-peer readme");
    let logo = patient(runtime.read_resource(None, "ts://logo"))
        .await
        .unwrap();
    assert_eq!(logo.contents[0].blob.as_deref(), Some("iVBORw=="));
    assert_eq!(logo.contents[0].mime_type.as_deref(), Some("image/png"));

    let templates = patient(runtime.list_resource_templates(None))
        .await
        .unwrap();
    let templated: Vec<(&str, &str)> = templates
        .iter()
        .map(|t| (t.server.as_str(), t.uri_template.as_str()))
        .collect();
    assert_eq!(
        templated,
        [("py", "py://item/{id}"), ("ts", "ts://item/{id}")]
    );
    for (server, uri) in [("ts", "ts://item/7"), ("py", "py://item/7")] {
        let read = patient(runtime.read_resource(Some(server), uri))
            .await
            .unwrap();
        assert_eq!(read.text, "item 7", "{server}");
    }

    let prompts = patient(runtime.list_prompts(None)).await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.registry_name.as_str()).collect();
    assert_eq!(names, ["mcp__py__review", "mcp__ts__greeting"]);
    let got =
        patient(runtime.get_prompt("ts", "greeting", &args(&[("name", "Ada"), ("tone", "dry")])))
            .await
            .unwrap();
    assert_eq!(got.text, "Say hello to Ada (dry)");
    let got = patient(runtime.get_prompt("py", "review", &args(&[("code", "x = 1")])))
        .await
        .unwrap();
    assert_eq!(got.text, "Review: x = 1");

    let completion = patient(runtime.complete(
        "ts",
        &json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": "Al"}}),
    ))
    .await
    .unwrap();
    assert_eq!(completion.values, ["Alan"]);
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_blob_goes_to_a_file_and_a_100_mb_one_fails_that_read_alone() {
    let dir = std::env::temp_dir().join(format!("mcpbox-resource-blobs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = json!({ "mcpServers": { "fx": fixture_entry(&["--blob-resources"]) } }).to_string();
    let runtime = Options::from_config_text("test.mcp.json", text)
        .results_dir(Some(dir.clone()))
        .open()
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "fx");

    let read = patient(runtime.read_resource(Some("fx"), "fixture://blob/3000000"))
        .await
        .unwrap();
    let item = &read.contents[0];
    assert_eq!(item.uri, "fixture://blob/3000000");
    assert!(
        item.blob.is_none(),
        "the blob did not come through the guest whole"
    );
    let file = item.file().expect("the blob went to a file");
    let path = file.strip_prefix("file://").unwrap();
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len(), 3_000_000);
    assert!(bytes.iter().all(|&b| b == 0));
    assert!(item.text.as_deref().unwrap().contains(file), "{item:?}");

    // 100 MB of blob is a 133 MB message, over the host's 64 MiB cap: that read
    // fails with the sizes, and the server and the runtime go on.
    let big = patient(runtime.read_resource(Some("fx"), "fixture://blob/100000000"))
        .await
        .unwrap_err();
    let text = big.to_string();
    assert!(
        text.contains("resources/read fixture://blob/100000000 on server `fx`")
            && text.contains("message too large"),
        "{text}"
    );
    let small = patient(runtime.read_resource(Some("fx"), "fixture://blob/1024"))
        .await
        .unwrap();
    assert_eq!(small.contents[0].blob.as_ref().map(String::len), Some(1368));
    // A server without prompts is refused by name, at once.
    let refused = runtime.list_prompts(Some("fx")).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("server `fx` does not offer prompts"),
        "{refused}"
    );
    runtime.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A read the caller drops is cancelled at the server, as a call is.
#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_read_leaves_nothing_behind() {
    let runtime: Runtime = open(json!({ "fx": fixture_entry(&["--blob-resources"]) })).await;
    assert_connected(&ready(&runtime).await, "fx");
    let gone = tokio::time::timeout(
        Duration::from_millis(1),
        runtime.read_resource(Some("fx"), "fixture://blob/50000000"),
    )
    .await;
    drop(gone);
    let after = patient(runtime.read_resource(Some("fx"), "fixture://blob/3"))
        .await
        .unwrap();
    assert_eq!(after.contents[0].blob.as_deref(), Some("AAAA"));
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_prompt_list_is_refused_naming_the_server_the_item_and_the_field() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/misbehaving_server.py");
    let runtime = open(json!({
        "odd": { "command": "python3", "args": [script, "--malformed-prompts"] },
    }))
    .await;
    assert_connected(&ready(&runtime).await, "odd");
    let e = patient(runtime.list_prompts(None)).await.unwrap_err();
    let CallError::Protocol(why) = &e else {
        panic!("{e:?}")
    };
    assert!(
        why.contains("server `odd`") && why.contains("prompt (item 0)"),
        "{why}"
    );
    assert!(why.contains("missing field `name`"), "{why}");
}
