//! Both MCP eras against real servers: the Python SDK (`mcp` 2.3) and the TypeScript
//! SDK v2 (`@modelcontextprotocol/server` 2.4) speak the stateless 2026-07-28
//! revision over stdio and Streamable HTTP; the npm reference servers and the
//! fixture speak the `initialize` era. The era found is remembered under the cache
//! directory for the next run.

use mcpbox::{CallOptions, Event, Options, Runtime};
use mcpbox_tests::http::{fastmcp_http, ts_http};
use mcpbox_tests::{fastmcp_server_command, ts_server_command};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, fixture_entry, next_event, open, ready, status};

#[tokio::test(flavor = "multi_thread")]
async fn eras_are_detected_per_server_and_remembered() {
    let cache = std::env::temp_dir().join(format!("mcpbox-era-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let http = fastmcp_http();
    let (python, args) = fastmcp_server_command();
    let config = json!({ "mcpServers": {
        "py": { "command": python, "args": args },
        "pyhttp": { "type": "http", "url": http.url },
        "fx": fixture_entry(&[]),
    }})
    .to_string();
    for run in 0..2 {
        let options = Options::from_config_text("era.mcp.json", config.clone());
        let runtime = crate::with_cache(options, &cache)
            .open()
            .await
            .expect("the runtime opens");
        let servers = ready(&runtime).await;
        for name in ["py", "pyhttp", "fx"] {
            assert_connected(&servers, name);
        }
        assert_eq!(
            status(&servers, "py").protocol_version.as_deref(),
            Some("2026-07-28"),
            "run {run}"
        );
        assert_eq!(
            status(&servers, "pyhttp").protocol_version.as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(
            status(&servers, "fx").protocol_version.as_deref(),
            Some("2025-11-25")
        );
        assert_eq!(
            status(&servers, "pyhttp").server_name.as_deref(),
            Some("fastmcp-peer")
        );
        for server in ["py", "pyhttp"] {
            let tool = format!("mcp__{server}__add");
            let r = tokio::time::timeout(
                PATIENCE,
                runtime.call_tool(&tool, json!({"a": 20, "b": 22}), CallOptions::default()),
            )
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(r.text, "42");
            assert_eq!(r.structured_value().unwrap(), Some(json!({"result": 42})));
            let r = runtime
                .call_tool(
                    &format!("mcp__{server}__fail"),
                    json!({"message": "no"}),
                    CallOptions::default(),
                )
                .await
                .unwrap();
            assert!(r.is_error && r.text.contains("no"), "{r:?}");
        }
        runtime.shutdown().await;
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cache.join("state.json")).expect("state.json"))
                .expect("JSON");
        let era_of = |server: &str| {
            stored
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| k.starts_with(&format!("era/{server}/")))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(era_of("py"), Some(json!("2026-07-28")));
        assert_eq!(era_of("pyhttp"), Some(json!("2026-07-28")));
        // Dated, so that the verdict is probed again once it is old.
        let fx = era_of("fx").expect("fx's era");
        assert!(
            fx.as_str().is_some_and(|e| e.starts_with("legacy@")),
            "{fx}"
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// The TypeScript SDK v2 over stdio (`serveStdio`) and Streamable HTTP
/// (`createMcpHandler`): the era is 2026-07-28 on both, tools with an
/// `outputSchema` return structured content, and a tool that changes the tool list
/// reaches mcpbox through `subscriptions/listen`.
#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_v2_server_speaks_2026_07_28() {
    let http = ts_http();
    let (node, args) = ts_server_command();
    let runtime = open(json!({
        "ts": { "command": node, "args": args },
        "tshttp": { "type": "http", "url": http.url },
    }))
    .await;
    let servers = ready(&runtime).await;
    for name in ["ts", "tshttp"] {
        assert_connected(&servers, name);
        let s = status(&servers, name);
        assert_eq!(s.protocol_version.as_deref(), Some("2026-07-28"), "{s:?}");
        assert_eq!(s.server_name.as_deref(), Some("ts-peer"), "{s:?}");
        assert_eq!(s.tool_count, 9, "{s:?}");
    }
    for server in ["ts", "tshttp"] {
        ts_peer_tools(&runtime, server).await;
    }
    runtime.shutdown().await;
}

async fn ts_peer_tools(runtime: &Runtime, server: &str) {
    let ok = |r: Result<mcpbox::CallResult, mcpbox::CallError>, what: &str| {
        r.unwrap_or_else(|e| panic!("{server}: {what}: {e}"))
    };
    let tool = |name: &str| format!("mcp__{server}__{name}");
    let tools = runtime.tools();
    let add = tools
        .iter()
        .find(|t| t.name == tool("add"))
        .unwrap_or_else(|| panic!("{server}: no add in {tools:?}"));
    let output: Value =
        serde_json::from_str(add.output_schema.as_ref().expect("an outputSchema").get()).unwrap();
    assert_eq!(output["properties"]["sum"]["type"], "number", "{output}");

    let r = ok(
        call(runtime, &tool("greet"), json!({"name": "Ada"})).await,
        "greet",
    );
    assert_eq!(r.text, "Hello, Ada!");
    let r = ok(
        call(runtime, &tool("add"), json!({"a": 20, "b": 22})).await,
        "add",
    );
    assert_eq!(r.text, "42");
    assert_eq!(r.structured_value().unwrap(), Some(json!({"sum": 42})));
    let r = ok(
        call(runtime, &tool("fail"), json!({"message": "no"})).await,
        "fail",
    );
    assert!(r.is_error && r.text == "no", "{server}: {r:?}");

    // `unlock` adds `secret` and publishes notifications/tools/list_changed on the
    // subscriptions/listen stream mcpbox holds open; mcpbox lists the tools again.
    let mut events = runtime.events();
    let r = ok(call(runtime, &tool("unlock"), json!({})).await, "unlock");
    assert!(!r.is_error, "{server}: {r:?}");
    next_event(
        &mut events,
        |e| matches!(e, Event::ToolsChanged(s) if s == server),
    )
    .await;
    let secret = tokio::time::timeout(PATIENCE, runtime.wait_for_tool(&tool("secret")))
        .await
        .expect("in time");
    assert!(secret.is_some(), "{server}: secret not listed");
    let r = ok(call(runtime, &tool("secret"), json!({})).await, "secret");
    assert_eq!(r.text, "the secret is 42");
}
