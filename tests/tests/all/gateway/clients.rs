//! The official SDK clients and rmcp's, over stdio and HTTP, in both eras, through
//! the gateway to upstream servers of both eras.

use mcpbox_tests::gateway::{SdkClient, Target, client_command, run_client, serve_http};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::{config, rmcp_eras, rmcp_stdio, stdio_gateway, text};

/// The calls every client makes: one tool of each upstream.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("fx__echo", json!({"text": "through the gateway"})),
        ("ts__add", json!({"a": 2, "b": 3})),
        ("py__greet", json!({"name": "Ada"})),
    ]
}

fn check(client: SdkClient, target: &str, report: &Value) {
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{client:?} over {target}: no tools in {report}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "fx__echo",
        "fx__sleep",
        "ts__greet",
        "ts__add",
        "py__greet",
        "py__add",
    ] {
        assert!(
            tools.contains(&name),
            "{client:?} over {target}: {name} missing from {tools:?}"
        );
    }
    let results = &report["calls"];
    assert_eq!(
        text(&results[0]),
        "through the gateway",
        "{client:?} over {target}: {report}"
    );
    assert_eq!(text(&results[1]), "5", "{client:?} over {target}: {report}");
    // The upstream's structured content and output schema pass through unchanged.
    assert_eq!(
        results[1]["structuredContent"],
        json!({"sum": 5}),
        "{client:?} over {target}"
    );
    assert_eq!(
        text(&results[2]),
        "Hello, Ada!",
        "{client:?} over {target}: {report}"
    );
    let version = report["protocolVersion"].as_str().unwrap_or_default();
    if client.stateless() {
        assert_eq!(version, "2026-07-28", "{client:?} over {target}: {report}");
    } else {
        assert!(
            version.starts_with("2025-") || version.is_empty(),
            "{client:?} over {target}: {report}"
        );
    }
}

#[test]
fn sdk_clients_of_both_eras_over_stdio_and_http() {
    let config = config(true, json!({}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    // HTTP is served on one thread unless told otherwise: both kinds of runtime.
    let http_threads = serve_http(crate::cli(), &config.path, &["--threads", "2"]);
    let stdio = stdio_gateway(&config.path, &[]);
    for client in SdkClient::ALL {
        for (name, target) in [
            ("http", Target::Http(http.url.clone())),
            ("http --threads 2", Target::Http(http_threads.url.clone())),
            ("stdio", Target::Stdio(stdio.clone())),
        ] {
            let run = std::panic::catch_unwind(|| {
                run_client(client_command(client, &target, &calls(), false))
            });
            let report = run.unwrap_or_else(|panic| {
                eprintln!("the HTTP gateway's stderr:\n{}", http.stderr().join("\n"));
                std::panic::resume_unwind(panic)
            });
            check(client, name, &report);
        }
    }
}

/// rmcp's client: both eras, both transports.
async fn rmcp_round<T, E, A>(transport: T, lifecycle: ClientLifecycleMode, what: &str)
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client: RunningService<RoleClient, ()> = ()
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("rmcp over {what} could not connect: {e}"));
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"fx__echo") && names.contains(&"ts__greet"),
        "{what}: {names:?}"
    );
    let result = client
        .call_tool(
            CallToolRequestParams::new("ts__greet").with_arguments(
                json!({"name": "rmcp"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("tools/call");
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    assert_eq!(text, ["Hello, rmcp!"], "{what}");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_in_both_eras_over_stdio_and_http() {
    // reqwest needs a process-wide TLS provider even for plain http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = config(true, json!({}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    for (era, lifecycle) in rmcp_eras() {
        let transport = crate::rmcp_http(&http.url);
        rmcp_round(transport, lifecycle, &format!("http, {era}")).await;
    }
    for (era, lifecycle) in rmcp_eras() {
        rmcp_round(
            rmcp_stdio(&config.path),
            lifecycle,
            &format!("stdio, {era}"),
        )
        .await;
    }
}

#[test]
fn clients_approve_ask_rules_and_answer_upstream_questions() {
    // `ask` on the fixture's echo: a client that can be asked approves and the call
    // runs; the fixture's `elicit` asks its own question, answered with defaults.
    let config = config(
        false,
        json!({"permissions": {"ask": ["mcp__fx__echo"], "deny": ["mcp__fx__crash"]}}),
    );
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    let calls = vec![
        ("fx__echo", json!({"text": "approved"})),
        ("fx__elicit", json!({"message": "Who?"})),
    ];
    for client in [SdkClient::TsV1, SdkClient::TsV2Legacy] {
        for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
            let report = run_client(client_command(client, &target, &calls, true));
            let tools: Vec<&str> = report["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert!(
                !tools.contains(&"fx__crash"),
                "denied tools are not listed: {tools:?}"
            );
            assert_eq!(
                text(&report["calls"][0]),
                "approved",
                "{client:?} {target:?}: {report}"
            );
            let answer: Value = serde_json::from_str(text(&report["calls"][1])).unwrap_or_default();
            assert_eq!(
                answer["action"], "accept",
                "{client:?} {target:?}: {report}"
            );
            assert_eq!(
                answer["content"]["name"], "Ada",
                "{client:?} {target:?}: {report}"
            );
        }
    }
    // A client that declared no elicitation gets a clear tool error for the ask rule.
    let report = run_client(client_command(
        SdkClient::TsV1,
        &Target::Http(http.url.clone()),
        &[("fx__echo", json!({"text": "x"}))],
        false,
    ));
    assert_eq!(report["calls"][0]["isError"], true, "{report}");
    assert!(
        text(&report["calls"][0]).contains("cannot be asked"),
        "{report}"
    );
}

#[test]
fn an_accept_without_content_approves_an_ask_rule_and_approve_false_refuses() {
    // A client that shows the approval question as yes or no accepts with `{}`;
    // one that shows the form and has the box cleared sends `approve: false`.
    let config = config(false, json!({"permissions": {"ask": ["mcp__fx__echo"]}}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    let calls = [("fx__echo", json!({"text": "approved"}))];
    for client in [SdkClient::TsV1, SdkClient::TsV2Stateless] {
        for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
            let mut command = client_command(client, &target, &calls, true);
            command.env("MCPBOX_TEST_ACCEPT", "empty");
            let report = run_client(command);
            assert_eq!(
                text(&report["calls"][0]),
                "approved",
                "{client:?} {target:?}: {report}"
            );
            let mut command = client_command(client, &target, &calls, true);
            command.env("MCPBOX_TEST_ACCEPT", "no");
            let report = run_client(command);
            assert!(
                text(&report["calls"][0]).contains("was not run: the user did not approve it"),
                "{client:?} {target:?}: {report}"
            );
        }
    }
}
