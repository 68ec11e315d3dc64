//! `mcpbox serve --schema-dialect`: a real MCP client (rmcp) in front of a server
//! whose schemas are pydantic's (`tests/peers/adapter_models_server.py`) gets them
//! converted for the provider, as a client that forwards schemas unconverted needs
//! (Gemini CLI), the served parameters pass the provider's own SDK types
//! (`tests/peers/provider_check.py`), and arguments written under them are mapped
//! back before the server's own schema checks them.

use std::io::Write;
use std::process::{Command, Stdio};

use mcpbox_tests::gateway::ConfigFile;
use mcpbox_tests::{peers_dir, python_venv};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::stdio_gateway;

fn models_config() -> ConfigFile {
    let python = python_venv().join("bin/python");
    ConfigFile::new(&json!({"mcpServers": {"models": {
        "command": python,
        "args": [peers_dir().join("adapter_models_server.py")],
    }}}))
}

async fn connect(config: &ConfigFile, extra: &[&str]) -> RunningService<RoleClient, ()> {
    let argv = stdio_gateway(&config.path, extra);
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]).stderr(Stdio::null());
    let transport = TokioChildProcess::new(command).expect("start the gateway");
    ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .unwrap_or_else(|e| panic!("rmcp could not connect to `serve {extra:?}`: {e}"))
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

fn first_text(result: &CallToolResult) -> String {
    let v = serde_json::to_value(result).unwrap();
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Gemini `FunctionDeclaration`s as a client that forwards the served tools
/// unconverted builds them, checked by google-genai's types; the errors of each.
fn gemini_errors(tools: &[Tool]) -> Vec<Value> {
    let cases: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"id": t.name, "shape": "gemini", "definition": {
                "name": t.name, "description": t.description, "parameters": t.input_schema,
            }})
        })
        .collect();
    let mut child = Command::new(python_venv().join("bin/python"))
        .arg(peers_dir().join("provider_check.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the venv's python runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(cases).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "provider_check.py failed");
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    results
        .into_iter()
        .filter(|r| r["errors"].as_array().is_some_and(|e| !e.is_empty()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_dialect_gemini_serves_what_gemini_takes() {
    let config = models_config();
    let plain = connect(&config, &[]).await;
    let as_written = plain.list_all_tools().await.expect("tools/list");
    plain.cancel().await.ok();
    assert_eq!(as_written.len(), 7);
    // As the server wrote them, Gemini refuses them: the check can fail.
    assert!(!gemini_errors(&as_written).is_empty());

    let gemini = connect(&config, &["--schema-dialect", "gemini"]).await;
    let served = gemini.list_all_tools().await.expect("tools/list");
    assert_eq!(served.len(), 7, "{served:#?}");
    let errors = gemini_errors(&served);
    assert!(errors.is_empty(), "{errors:#?}");
    let tree = served
        .iter()
        .find(|t| t.name == "models__save_tree")
        .unwrap();
    let text = serde_json::to_string(&tree.input_schema).unwrap();
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    // Calls still reach the server, under the served names.
    let saved = call(
        &gemini,
        "models__save_tree",
        json!({"root": {"label": "a", "children": []}}),
    )
    .await;
    assert_eq!(first_text(&saved), "saved a");
    gemini.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_dialect_openai_strict_maps_nulls_back_on_tools_call() {
    let config = models_config();
    // Every property present, `null` for what a model would have left out.
    let strict = json!({
        "person": {
            "name": "Ada", "email": null, "age": null,
            "home": {"street": "1 rue", "city": "Paris", "postcode": "75001", "country": null},
            "work": null, "tags": null,
        },
        "notify": null,
    });
    let gateway = connect(&config, &["--schema-dialect", "openai-strict"]).await;
    let served = gateway.list_all_tools().await.expect("tools/list");
    let add = served
        .iter()
        .find(|t| t.name == "models__add_person")
        .unwrap();
    assert_eq!(
        add.input_schema.get("additionalProperties"),
        Some(&json!(false)),
        "strict mode's schema served"
    );
    let result = call(&gateway, "models__add_person", strict.clone()).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(first_text(&result), "added Ada");
    gateway.cancel().await.ok();

    // Without the dialect the same arguments break the server's own schema.
    let plain = connect(&config, &[]).await;
    let result = call(&plain, "models__add_person", strict).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(first_text(&result).contains("notify"), "{result:?}");
    plain.cancel().await.ok();
}
