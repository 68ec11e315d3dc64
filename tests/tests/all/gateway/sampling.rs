//! Sampling through the gateway: an upstream server's `sampling/createMessage`
//! goes to the downstream client that declared `sampling` (the TypeScript SDK
//! client, v1 and v2, over HTTP and stdio) and its answer comes back; a client
//! that did not declare it gets the upstream request refused.

use mcpbox_tests::everything_command;
use mcpbox_tests::gateway::{
    ConfigFile, SdkClient, Target, client_command, http, run_client, serve_http,
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
    // and the server says so in its tool error, in words that are true: nobody
    // rejected it, the client cannot be asked.
    let report = run_client(client_command(
        SdkClient::TsV1,
        &Target::Http(http.url.clone()),
        &[
            ("fx__sample", json!({"prompt": "hi"})),
            (
                "everything__trigger-sampling-request",
                json!({"prompt": "What is 2+2?"}),
            ),
        ],
        false,
    ));
    for call in [&report["calls"][0], &report["calls"][1]] {
        assert_eq!(call["isError"], true, "{report}");
        let said = text(call);
        assert!(
            said.contains("did not declare the `sampling` capability")
                && !said.contains("rejected"),
            "{report}"
        );
    }
}

/// rmcp's client as the one that answers (2025 era: rmcp drives
/// `sampling/createMessage` through its `ClientHandler`), over HTTP and stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// rmcp marks sampling deprecated (SEP-2577); the 2025 era this test speaks has it.
#[allow(deprecated)]
async fn rmcp_answers_sampling_requests_through_the_gateway() {
    use rmcp::handler::client::ClientHandler;
    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
        CreateMessageResult, ErrorData, Implementation,
    };
    use rmcp::service::{RequestContext, RoleClient};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    struct Sampler;

    impl ClientHandler for Sampler {
        async fn create_message(
            &self,
            params: CreateMessageRequestParams,
            _: RequestContext<RoleClient>,
        ) -> Result<CreateMessageResult, ErrorData> {
            let text = format!("four ({} messages)", params.messages.len());
            Ok(serde_json::from_value(json!({
                "role": "assistant", "content": {"type": "text", "text": text},
                "model": "rmcp-client", "stopReason": "endTurn"
            }))
            .expect("a CreateMessageResult"))
        }

        fn get_info(&self) -> ClientConfig {
            ClientConfig::new(
                ClientCapabilities::builder().enable_sampling().build(),
                Implementation::new("rmcp-sampler", "1.0.0"),
            )
        }
    }

    async fn round<T, E, A>(transport: T, what: &str)
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let client = Sampler
            .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
            .await
            .unwrap_or_else(|e| panic!("rmcp over {what} could not connect: {e}"));
        let arguments = json!({"prompt": "hi"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let result = client
            .call_tool(CallToolRequestParams::new("fx__sample").with_arguments(arguments))
            .await
            .unwrap_or_else(|e| panic!("{what}: tools/call: {e}"));
        let result = serde_json::to_value(&result).unwrap();
        let answer: Value = serde_json::from_str(text(&result)).unwrap_or_default();
        assert_eq!(answer["model"], "rmcp-client", "{what}: {result}");
        assert_eq!(
            answer["content"]["text"], "four (1 messages)",
            "{what}: {result}"
        );
        client.cancel().await.expect("close");
    }

    // reqwest needs a process-wide TLS provider even for plain http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = config();
    let http = serve_http(crate::cli(), &config.path, &[]);
    round(crate::rmcp_http(&http.url), "http").await;
    round(crate::rmcp_stdio(&config.path), "stdio").await;
}

/// A 2026-07-28 server (the TypeScript SDK v2 peer over HTTP) reads the client's
/// capabilities from each request: a call forwarded by the gateway carries those
/// of the downstream client that made it, so the server can tell a client that
/// can answer a sampling request from one that cannot.
#[test]
fn a_2026_upstream_sees_the_capabilities_of_the_client_that_made_the_call() {
    let upstream = mcpbox_tests::http::ts_http();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "ts": {"type": "http", "url": upstream.url},
    }}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let seen = |capabilities: Value| -> Value {
        let mut meta = crate::meta();
        meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ts__capabilities", "arguments": {}, "_meta": meta}});
        let r = http(&gateway.url, "POST", &crate::POST, &body.to_string());
        let messages = r.messages();
        serde_json::from_str(text(&messages[0]["result"]))
            .unwrap_or_else(|_| panic!("ts__capabilities: {messages:?}"))
    };
    let sampler = seen(json!({"sampling": {}, "elicitation": {"form": {}}}));
    assert_eq!(sampler["sampling"], json!({}), "{sampler}");
    assert_eq!(sampler["elicitation"], json!({"form": {}}), "{sampler}");
    let mute = seen(json!({}));
    assert_eq!(mute.get("sampling"), None, "{mute}");
    assert_eq!(mute.get("elicitation"), None, "{mute}");
    // A 2025 session: what it declared in `initialize`.
    let stdio = stdio_gateway(&config.path, &[]);
    let mut peer = mcpbox_tests::stdio::StdioPeer::spawn(&stdio[0], &stdio[1..]);
    let reply = peer.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {"tools": {}}},
               "clientInfo": {"name": "sampler", "version": "1"}}),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    peer.notify("notifications/initialized", json!({}));
    let session: Value =
        serde_json::from_str(text(&peer.call_tool("ts__capabilities", json!({})))).unwrap();
    assert_eq!(session["sampling"], json!({"tools": {}}), "{session}");
    assert_eq!(session.get("elicitation"), None, "{session}");
}
