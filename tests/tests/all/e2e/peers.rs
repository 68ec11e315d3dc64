//! The registry against the servers users actually run: the npm reference
//! servers and a server on the official Python SDK, at pinned versions.

use mcpbox::{CallOptions, Runtime};
use mcpbox_tests::{
    everything_command, fastmcp_server_command, filesystem_command, memory_command,
};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, open, ready, status, tempdir};

fn entry((command, args): (String, Vec<String>)) -> Value {
    json!({ "command": command, "args": args })
}

async fn call(runtime: &Runtime, tool: &str, args: Value) -> mcpbox::CallResult {
    tokio::time::timeout(
        PATIENCE,
        runtime.call_tool(tool, args, CallOptions::default()),
    )
    .await
    .expect("the call finishes in time")
    .unwrap_or_else(|e| panic!("{tool} failed: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn npm_reference_servers() {
    let root = tempdir("fs-root");
    std::fs::write(root.join("hello.txt"), "hello from disk\n").unwrap();
    let mut memory = entry(memory_command());
    memory["env"] = json!({ "MEMORY_FILE_PATH": root.join("memory.jsonl").display().to_string() });
    let runtime = open(json!({
        "everything": entry(everything_command()),
        "fs": entry(filesystem_command(&root)),
        "memory": memory,
    }))
    .await;
    let servers = ready(&runtime).await;
    for name in ["everything", "fs", "memory"] {
        assert_connected(&servers, name);
        assert!(status(&servers, name).tool_count > 0, "{name} has tools");
    }
    let tools = runtime.tools();
    let echo = tools
        .iter()
        .find(|t| t.name == "mcp__everything__echo")
        .expect("everything's echo is listed");
    let schema: Value = serde_json::from_str(echo.input_schema.get()).unwrap();
    assert_eq!(schema["properties"]["message"]["type"], "string");

    let r = call(&runtime, "mcp__everything__echo", json!({"message": "hi"})).await;
    assert_eq!(r.text, "Echo: hi");

    let path = root.join("hello.txt").display().to_string();
    let r = call(&runtime, "mcp__fs__read_text_file", json!({ "path": path })).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("hello from disk"), "{r:?}");
    // Outside the allowed root: the server refuses, as a tool error.
    let r = call(
        &runtime,
        "mcp__fs__read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert!(r.is_error, "{r:?}");

    call(
        &runtime,
        "mcp__memory__create_entities",
        json!({"entities": [{"name": "mcpbox", "entityType": "project", "observations": ["runs MCP servers in wasm"]}]}),
    )
    .await;
    let graph = call(&runtime, "mcp__memory__read_graph", json!({})).await;
    assert!(graph.text.contains("runs MCP servers in wasm"), "{graph:?}");
    runtime.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_server() {
    let runtime = open(json!({ "py": entry(fastmcp_server_command()) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "py");
    assert!(status(&servers, "py").protocol_version.is_some());

    let r = call(&runtime, "mcp__py__greet", json!({"name": "Ada"})).await;
    assert_eq!(r.text, "Hello, Ada!");
    let r = call(&runtime, "mcp__py__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(r.text, "42");
    assert_eq!(r.structured_value().unwrap(), Some(json!({"result": 42})));
    let r = call(&runtime, "mcp__py__fail", json!({"message": "nope"})).await;
    assert!(r.is_error);
    assert!(r.text.contains("nope"), "{r:?}");
    // The schema FastMCP generated is enforced before the call leaves mcpbox.
    let err = runtime
        .call_tool(
            "mcp__py__add",
            json!({"a": "two", "b": 1}),
            CallOptions::default(),
        )
        .await;
    assert!(
        matches!(err, Err(mcpbox::CallError::InvalidArguments(_))),
        "{err:?}"
    );
}
