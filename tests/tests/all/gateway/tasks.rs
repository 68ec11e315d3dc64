//! Tasks through the gateway: server-everything's `simulate-research-query`
//! requires a task (`execution.taskSupport: "required"`); the gateway's own
//! client runs it as one and polls it, so a downstream client that knows
//! nothing of tasks gets the report as a plain call's result, and one that runs
//! its calls as tasks (the TypeScript SDK's `callToolStream`) gets a task of the
//! gateway's, polled to the same report.

use mcpbox_tests::everything_command;
use mcpbox_tests::gateway::{
    ConfigFile, SdkClient, Target, client_command, run_client, serve_http,
};
use serde_json::json;

use crate::{stdio_gateway, text};

/// The research query, plain and ambiguous (which asks for a clarification: the
/// client, with `--approve`, picks the first interpretation offered).
fn calls() -> [(&'static str, serde_json::Value); 2] {
    [
        (
            "everything__simulate-research-query",
            json!({"topic": "wasm"}),
        ),
        (
            "everything__simulate-research-query",
            json!({"topic": "wasm", "ambiguous": true}),
        ),
    ]
}

/// Both reports were written, the ambiguous one with the clarification asked.
fn check_reports(target: &Target, report: &serde_json::Value) {
    for call in 0..2 {
        assert_ne!(
            report["calls"][call]["isError"], true,
            "{target:?}: {report}"
        );
        assert!(
            text(&report["calls"][call]).starts_with("# Research Report: wasm"),
            "{target:?}: {report}"
        );
    }
    assert!(
        text(&report["calls"][1]).contains("**Clarification**: technical"),
        "{target:?}: the clarification reached the server: {report}"
    );
}

#[test]
fn a_client_without_tasks_gets_the_report_of_a_tool_that_requires_one() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
        let report = run_client(client_command(SdkClient::TsV1, &target, &calls(), true));
        check_reports(&target, &report);
    }
}

#[test]
fn a_client_with_tasks_polls_the_gateways_task_to_the_report() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
        let mut client = client_command(SdkClient::TsV1, &target, &calls(), true);
        client.env("MCPBOX_TEST_TASKS", "1");
        let report = run_client(client);
        for task in report["tasks"].as_array().unwrap() {
            assert!(
                task["taskId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("mcpbox-task-")),
                "{target:?}: the gateway's task: {report}"
            );
            assert_eq!(task["statuses"][0], "working", "{target:?}: {report}");
        }
        // The ambiguous query's task asked for its clarification.
        let statuses = report["tasks"][1]["statuses"].as_array().unwrap();
        assert!(
            statuses.iter().any(|s| s == "input_required"),
            "{target:?}: {report}"
        );
        check_reports(&target, &report);
    }
}
