//! Both MCP eras against real servers: the Python SDK (`mcp` 2.3) speaks the
//! stateless 2026-07-28 revision over stdio and Streamable HTTP; the npm servers and
//! the fixture speak the `initialize` era. The era found is remembered under the
//! cache directory for the next run.

use mcpbox::{CallOptions, Options};
use mcpbox_tests::fastmcp_server_command;
use mcpbox_tests::http::fastmcp_http;
use serde_json::json;

use crate::{PATIENCE, assert_connected, fixture_entry, ready, status};

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
        let runtime = Options::from_config_text("era.mcp.json", config.clone())
            .cache_dir(Some(cache.clone()))
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
            assert_eq!(r.structured_content, Some(json!({"result": 42})));
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
        assert_eq!(era_of("fx"), Some(json!("legacy")));
    }
    let _ = std::fs::remove_dir_all(&cache);
}
