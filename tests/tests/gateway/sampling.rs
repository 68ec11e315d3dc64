//! Sampling through the gateway: an upstream server's `sampling/createMessage`
//! goes to the downstream client that declared `sampling` (the TypeScript SDK
//! client, v1 and v2, over HTTP and stdio) and its answer comes back; a client
//! that did not declare it gets the upstream request refused.

use mcpbox_tests::everything_command;
use mcpbox_tests::gateway::{
    ConfigFile, SdkClient, Target, client_command, run_client, serve_http,
};
use serde_json::{Value, json};

use crate::{fixture, stdio_gateway, text};

fn config() -> ConfigFile {
    let (command, args) = everything_command();
    ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": fixture(), "args": []},
        "everything": {"command": command, "args": args},
    }}))
}

#[test]
fn clients_that_declared_sampling_answer_upstream_requests() {
    let config = config();
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    let calls = vec![
        (
            "everything__trigger-sampling-request",
            json!({"prompt": "What is 2+2?"}),
        ),
        ("fx__sample", json!({"prompt": "hi"})),
    ];
    for client in [SdkClient::TsV1, SdkClient::TsV2Legacy] {
        for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
            let mut command = client_command(client, &target, &calls, false);
            command.env("MCPBOX_TEST_SAMPLE", "four");
            let report = run_client(command);
            // server-everything validated the client's result with its SDK and echoes it.
            let everything = text(&report["calls"][0]);
            assert!(
                everything.contains("LLM sampling result")
                    && everything.contains("four (1 messages, 0 tools)")
                    && everything.contains("ts-client"),
                "{client:?} {target:?}: {report}"
            );
            let fx: Value = serde_json::from_str(text(&report["calls"][1])).unwrap_or_default();
            assert_eq!(fx["model"], "ts-client", "{client:?} {target:?}: {report}");
            assert_eq!(fx["content"]["text"], "four (1 messages, 0 tools)");
        }
    }
    // A client that did not declare sampling: the upstream request is refused,
    // and the server says so in its tool error.
    let report = run_client(client_command(
        SdkClient::TsV1,
        &Target::Http(http.url.clone()),
        &[("fx__sample", json!({"prompt": "hi"}))],
        false,
    ));
    assert_eq!(report["calls"][0]["isError"], true, "{report}");
    assert!(
        text(&report["calls"][0]).contains("User rejected sampling request"),
        "{report}"
    );
}
