//! Tasks through the gateway: server-everything's `simulate-research-query`
//! requires a task (`execution.taskSupport: "required"`); the gateway's own
//! client runs it as one and polls it, so a downstream client that knows
//! nothing of tasks gets the report as a plain call's result.

use mcpbox_tests::everything_command;
use mcpbox_tests::gateway::{
    ConfigFile, SdkClient, Target, client_command, run_client, serve_http,
};
use serde_json::json;

use crate::{stdio_gateway, text};

#[test]
fn a_client_without_tasks_gets_the_report_of_a_tool_that_requires_one() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    let calls = [(
        "everything__simulate-research-query",
        json!({"topic": "wasm"}),
    )];
    for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
        let report = run_client(client_command(SdkClient::TsV1, &target, &calls, false));
        assert_ne!(report["calls"][0]["isError"], true, "{target:?}: {report}");
        assert!(
            text(&report["calls"][0]).starts_with("# Research Report: wasm"),
            "{target:?}: {report}"
        );
    }
}
