//! What the manager does at a call's end: output limits.

use super::*;

fn manager_with(text: &str) -> Manager<FakePlatform> {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        McpServer::with_tools(&["read_file", "write_file", "delete"]).on_call(|params, id, out| {
            let text = params["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.reply(30, id, json!({"content": [{"type": "text", "text": text}]}));
        })
    });
    let mut m = Manager::new(p);
    assert_eq!(m.load_config(".mcp.json", text).unwrap(), vec![]);
    m
}

#[test]
fn an_oversized_result_is_cut_and_kept_in_a_host_file() {
    let mut m =
        manager_with(r#"{"mcpServers": {"fs": {"command": "fs"}}, "output": {"maxBytes": 2000}}"#);
    connect(&mut m);
    let big = "z".repeat(5_000);
    m.start_call(
        "mcp__fs__read_file",
        &json!({ "text": big }).to_string(),
        CallOptions::default(),
    )
    .unwrap();
    let done = completions(&mut m, 1);
    let r = done[0].outcome.as_ref().unwrap();
    assert!(r.content.len() < 2_000, "{}", r.content.len());
    assert!(
        r.text
            .contains("[mcpbox: the result of mcp__fs__read_file was 5 KB"),
        "{}",
        r.text
    );
    assert!(r.content.contains("\"resource_link\""));
    let blobs = &m.platform().blobs;
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].0, "fs");
    assert_eq!(blobs[0].2, big.as_bytes());
    // The embedder's setting wins over the configuration's.
    m.set_options(EmbedderOptions {
        max_result_bytes: Some(10_000),
        ..EmbedderOptions::default()
    });
    m.start_call(
        "mcp__fs__read_file",
        &json!({ "text": big }).to_string(),
        CallOptions::default(),
    )
    .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(done[0].outcome.as_ref().unwrap().text, big);
}
