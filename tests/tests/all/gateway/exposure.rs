//! What a client is served: names in the conditional mode, the profile chosen by
//! `serve --profile`, and the tool-search mode over 10,000 tools. rmcp's client
//! over stdio throughout (the other clients and HTTP are in `clients.rs`).

use std::process::{Command, Stdio};

use mcpbox_tests::gateway::ConfigFile;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::{config, fixture, stdio_gateway};

/// rmcp's client on a stdio gateway over `config`, with `extra` serve flags.
async fn connect(config: &ConfigFile, extra: &[&str]) -> RunningService<RoleClient, ()> {
    let argv = stdio_gateway(&config.path, extra);
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    let transport = TokioChildProcess::new(command).expect("start the gateway");
    ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .unwrap_or_else(|e| panic!("rmcp could not connect to `serve {extra:?}`: {e}"))
}

async fn names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.iter().map(|t| t.name.to_string()).collect()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_names_keep_a_tools_own_name_unless_two_servers_have_it() {
    // Two fixtures: their built-in tools clash, `tool_0` and `tool_1` (only `fy`'s)
    // do not.
    let two = ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": fixture(), "args": []},
        "fy": {"command": fixture(), "args": ["--tools", "2"]},
    }}));
    let client = connect(&two, &["--naming", "conditional"]).await;
    let served = names(&client).await;
    for name in [
        "tool_0", "tool_1", "fx__echo", "fy__echo", "fx__add", "fy__add",
    ] {
        assert!(
            served.iter().any(|n| n == name),
            "{name} missing from {served:?}"
        );
    }
    assert!(
        !served.iter().any(|n| n == "echo"),
        "a clashing name kept its own: {served:?}"
    );
    assert_eq!(text(&call(&client, "tool_0", json!({})).await), "tool_0");
    assert_eq!(
        text(&call(&client, "fy__echo", json!({"text": "fy"})).await),
        "fy"
    );
    client.cancel().await.expect("close");

    // One server: every tool keeps its own name.
    let one = config(false, json!({}));
    let client = connect(&one, &["--naming", "conditional"]).await;
    let served = names(&client).await;
    assert!(served.iter().any(|n| n == "echo"), "{served:?}");
    assert!(!served.iter().any(|n| n.contains("__")), "{served:?}");
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "own"})).await),
        "own"
    );
    client.cancel().await.expect("close");

    // A `toolPrefix` stands for the server's name in the prefixed mode.
    let prefixed = ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": fixture(), "args": [], "toolPrefix": "box"},
    }}));
    let client = connect(&prefixed, &[]).await;
    let served = names(&client).await;
    assert!(served.iter().any(|n| n == "box__echo"), "{served:?}");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_is_served_under_the_profile_serve_names() {
    let config = config(
        false,
        json!({"profiles": {"echo-only": {"allow": ["mcp__fx__echo"], "default": "deny"}}}),
    );
    let client = connect(&config, &["--profile", "echo-only"]).await;
    assert_eq!(names(&client).await, ["fx__echo"]);
    assert_eq!(
        text(&call(&client, "fx__echo", json!({"text": "ok"})).await),
        "ok"
    );
    let denied = call(&client, "fx__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(
        text(&denied).contains("(profiles.echo-only.default in "),
        "the refusal names the rule: {}",
        text(&denied)
    );
    client.cancel().await.expect("close");

    // A profile that is not configured: the gateway does not start, and says which exist.
    let argv = stdio_gateway(&config.path, &["--profile", "nope"]);
    let output = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .expect("run the gateway");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no profile named `nope`") && stderr.contains("echo-only"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_finds_and_calls_one_of_ten_thousand_tools() {
    let config = ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": fixture(), "args": ["--tools", "9990"], "limits": {"maxTools": 20000}},
    }}));
    let client = connect(&config, &["--tool-search"]).await;
    assert_eq!(names(&client).await, ["search_tools", "call_tool"]);

    // By name: the one tool whose name has the number ranks first.
    let found = call(
        &client,
        "search_tools",
        json!({"query": "tool 4321", "limit": 3}),
    )
    .await;
    let tools = &found
        .structured_content
        .as_ref()
        .expect("structured results")["tools"];
    assert_eq!(tools[0]["name"], "fx__tool_4321", "{tools}");
    assert!(
        tools[0]["inputSchema"]["properties"]["text"].is_object(),
        "{tools}"
    );
    assert!(tools.as_array().is_some_and(|t| t.len() <= 3), "{tools}");
    // By what it does: words of the description.
    let found = call(&client, "search_tools", json!({"query": "add two numbers"})).await;
    let tools = &found
        .structured_content
        .as_ref()
        .expect("structured results")["tools"];
    assert_eq!(tools[0]["name"], "fx__add", "{tools}");
    // Nothing matches: said so, not an error.
    let none = call(&client, "search_tools", json!({"query": "xyzzy"})).await;
    assert!(text(&none).contains("No tool matches"), "{}", text(&none));

    // call_tool runs what the search found, with its arguments.
    let result = call(
        &client,
        "call_tool",
        json!({"name": "fx__tool_4321", "arguments": {"text": "found"}}),
    )
    .await;
    assert_eq!(text(&result), "found");
    let sum = call(
        &client,
        "call_tool",
        json!({"name": "fx__add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let missing = call(&client, "call_tool", json!({})).await;
    assert_eq!(missing.is_error, Some(true), "{}", text(&missing));
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_tools_right_after_initialize_waits_for_servers_still_starting() {
    let config = ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": fixture(), "args": ["--start-delay-ms", "1000"]},
    }}));
    // The first request after the handshake is the search: the server is still
    // starting, as tools/list would find it.
    let client = connect(&config, &["--tool-search"]).await;
    let found = call(&client, "search_tools", json!({"query": "add two numbers"})).await;
    let tools = &found
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no results: {}", text(&found)))["tools"];
    assert_eq!(tools[0]["name"], "fx__add", "{tools}");
    client.cancel().await.expect("close");
}
