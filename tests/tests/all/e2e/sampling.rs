//! Sampling end to end: a server asks the embedder's model for a message
//! (`sampling/createMessage`) during a call, the embedder answers through
//! `Runtime::answer_input`, and the answer reaches the server; refused, declined,
//! unanswered and not-enabled requests too. Against server-everything's
//! `trigger-sampling-request` (which exists only for a client that declared
//! sampling) and the fixture server's `sample`.

use std::time::Duration;

use mcpbox::{CallError, CallOptions, Event, InputAnswer, Options, Runtime, SamplingRequest};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, fixture_entry, next_event, ready};

async fn open_with(servers: Value, sampling: bool) -> Runtime {
    let text = json!({ "mcpServers": servers }).to_string();
    let runtime = Options::from_config_text("sampling.mcp.json", text)
        .sampling(sampling)
        .open()
        .await
        .expect("the runtime opens");
    let servers = ready(&runtime).await;
    for s in &servers {
        assert_connected(&servers, &s.name);
    }
    runtime
}

fn everything() -> Value {
    let (command, args) = mcpbox_tests::everything_command();
    json!({ "everything": { "command": command, "args": args } })
}

/// Starts a call to `tool` and returns it with the sampling request it made.
async fn sample(
    runtime: &Runtime,
    tool: &str,
    args: Value,
    options: CallOptions,
) -> (
    tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
    SamplingRequest,
) {
    let mut events = runtime.events();
    let caller = runtime.clone();
    let tool = tool.to_string();
    let call = tokio::spawn(async move { caller.call_tool(&tool, args, options).await });
    let Event::SamplingRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::SamplingRequested(_))).await
    else {
        unreachable!()
    };
    (call, request)
}

async fn ended(
    call: tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
) -> Result<mcpbox::CallResult, CallError> {
    tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the call ends in time")
        .expect("the call task runs")
}

fn answer(text: &str) -> InputAnswer {
    InputAnswer::Accept(json!({"role": "assistant",
        "content": {"type": "text", "text": text}, "model": "test-model", "stopReason": "endTurn"}))
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_gets_the_embedders_answer() {
    let runtime = open_with(everything(), true).await;
    let (call, request) = sample(
        &runtime,
        "mcp__everything__trigger-sampling-request",
        json!({"prompt": "What is 2+2?", "maxTokens": 30}),
        CallOptions::default(),
    )
    .await;
    assert_eq!(request.server, "everything");
    assert_eq!(
        request.tool.as_deref(),
        Some("mcp__everything__trigger-sampling-request")
    );
    assert_eq!(request.params["maxTokens"], 30);
    assert_eq!(
        request.params["systemPrompt"],
        "You are a helpful test server."
    );
    let asked = request.params["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(asked.contains("What is 2+2?"), "{asked}");
    // Not a CreateMessageResult: refused with the reason, the request stays open.
    let e = runtime
        .answer_input(request.id, InputAnswer::Accept(json!({"text": "4"})))
        .await
        .unwrap_err();
    assert!(
        e.contains("server `everything`") && e.contains("`content`"),
        "{e}"
    );
    runtime.answer_input(request.id, answer("4")).await.unwrap();
    let result = ended(call).await.expect("a result");
    assert!(!result.is_error, "{result:?}");
    // The server validated the answer with the SDK's schema and echoes it.
    assert!(result.text.contains("LLM sampling result"), "{result:?}");
    assert!(
        result.text.contains("\"model\": \"test-model\"")
            && result.text.contains("\"text\": \"4\""),
        "{result:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn declined_and_unanswered_requests_end_cleanly() {
    let runtime = open_with(json!({ "fx": fixture_entry(&[]) }), true).await;
    // Declined: the server gets the error a rejection gets.
    let (call, request) = sample(
        &runtime,
        "mcp__fx__sample",
        json!({"prompt": "hi"}),
        CallOptions::default(),
    )
    .await;
    assert_eq!(request.params["messages"][0]["content"]["text"], "hi");
    runtime
        .answer_input(request.id, InputAnswer::Decline)
        .await
        .unwrap();
    let result = ended(call).await.expect("a result");
    assert!(result.is_error, "{result:?}");
    assert!(
        result.text.contains("\"code\":-1")
            && result.text.contains("User rejected sampling request"),
        "{result:?}"
    );

    // Unanswered: the call's timeout ends it, the request is withdrawn and the
    // server is told; the server goes on.
    let mut events = runtime.events();
    let (call, request) = sample(
        &runtime,
        "mcp__fx__sample",
        json!({"prompt": "anyone?"}),
        CallOptions {
            timeout: Some(Duration::from_millis(800)),
            ..CallOptions::default()
        },
    )
    .await;
    let e = ended(call).await.unwrap_err();
    assert!(
        matches!(&e, CallError::Timeout(m) if m.contains("not answered in time")),
        "{e:?}"
    );
    next_event(
        &mut events,
        |e| matches!(e, Event::InputWithdrawn(id) if *id == request.id),
    )
    .await;
    assert!(
        runtime
            .answer_input(request.id, answer("late"))
            .await
            .is_err()
    );
    let r = call_ok(&runtime, "mcp__fx__echo", json!({"text": "still here"})).await;
    assert_eq!(r, "still here");
    runtime.shutdown().await;
}

async fn call_ok(runtime: &Runtime, tool: &str, args: Value) -> String {
    let r = call(runtime, tool, args).await.expect("a result");
    assert!(!r.is_error, "{r:?}");
    r.text
}

#[tokio::test(flavor = "multi_thread")]
async fn without_opting_in_servers_are_refused_naming_the_option() {
    let runtime = open_with(
        json!({ "fx": fixture_entry(&[]), "everything": everything()["everything"] }),
        false,
    )
    .await;
    let r = call(&runtime, "mcp__fx__sample", json!({"prompt": "hi"}))
        .await
        .expect("a result");
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains("-32601") && r.text.contains("Options::sampling"),
        "{r:?}"
    );
    // server-everything offers its sampling tool only to clients that declare it.
    assert!(
        !runtime
            .tools()
            .iter()
            .any(|t| t.name == "mcp__everything__trigger-sampling-request"),
        "not declared, not offered"
    );
    runtime.shutdown().await;
}
