//! Input requests (elicitation) end to end: the fixture server's `elicit` tool sends
//! `elicitation/create` during the call, the embedder answers through
//! `Runtime::answer_input`, and the answer (with the schema's defaults) reaches the
//! server; declined, refused, unanswered and not-enabled requests too.

use std::time::Duration;

use mcpbox::{CallError, CallOptions, Event, InputAnswer, InputRequest, Options, Runtime};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, fixture_entry, next_event, ready};

/// A runtime over one fixture server `fx`, with input requests enabled or not.
async fn open_fixture(input_requests: bool) -> Runtime {
    let text = json!({ "mcpServers": { "fx": fixture_entry(&[]) } }).to_string();
    let runtime = Options::from_config_text("test.mcp.json", text)
        .input_requests(input_requests)
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "fx");
    runtime
}

/// Starts a call to `elicit` and returns it with the input request it made.
async fn elicit(
    runtime: &Runtime,
    options: CallOptions,
) -> (
    tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
    InputRequest,
) {
    let mut events = runtime.events();
    let caller = runtime.clone();
    let call = tokio::spawn(async move {
        caller
            .call_tool("mcp__fx__elicit", json!({"message": "Who?"}), options)
            .await
    });
    let Event::InputRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    (call, request)
}

/// The call's text, parsed: the `result` the server got.
async fn answer_seen(
    call: tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
) -> Value {
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the call ends in time")
        .expect("the call task runs")
        .expect("the call gives a result");
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text).expect("the fixture returns JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accepted_answer_reaches_the_server_with_the_defaults() {
    let runtime = open_fixture(true).await;
    let (call, request) = elicit(&runtime, CallOptions::default()).await;
    assert_eq!(request.server, "fx");
    assert_eq!(request.tool.as_deref(), Some("mcp__fx__elicit"));
    assert_eq!(request.message, "Who?");
    assert_eq!(request.requested_schema["properties"]["age"]["default"], 36);
    // A wrong answer is refused with the reason, and the request stays open.
    let e = runtime
        .answer_input(request.id, InputAnswer::Accept(json!({"color": "blue"})))
        .await
        .unwrap_err();
    assert!(e.contains("server `fx`") && e.contains("/color"), "{e}");
    runtime
        .answer_input(request.id, InputAnswer::Accept(json!({"color": "red"})))
        .await
        .unwrap();
    assert_eq!(
        answer_seen(call).await,
        json!({"action": "accept", "content": {"name": "Ada", "age": 36, "color": "red"}})
    );
    // Answered once is answered.
    let e = runtime
        .answer_input(request.id, InputAnswer::Decline)
        .await
        .unwrap_err();
    assert!(e.contains("no input request"), "{e}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn decline_and_cancel_reach_the_server() {
    let runtime = open_fixture(true).await;
    for (answer, action) in [
        (InputAnswer::Decline, "decline"),
        (InputAnswer::Cancel, "cancel"),
    ] {
        let (call, request) = elicit(&runtime, CallOptions::default()).await;
        runtime.answer_input(request.id, answer).await.unwrap();
        assert_eq!(answer_seen(call).await, json!({"action": action}));
    }
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_request_ends_with_its_calls_timeout() {
    let runtime = open_fixture(true).await;
    let mut events = runtime.events();
    let options = CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..CallOptions::default()
    };
    let (call, request) = elicit(&runtime, options).await;
    let outcome = tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap();
    let Err(CallError::Timeout(why)) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(why.contains("input request was not answered"), "{why}");
    let id = request.id;
    next_event(&mut events, |e| *e == Event::InputWithdrawn(id)).await;
    assert!(
        runtime
            .answer_input(id, InputAnswer::Decline)
            .await
            .is_err()
    );
    // The server was told too, and goes on serving.
    let r = call_echo(&runtime).await;
    assert_eq!(r, "still here");
    runtime.shutdown().await;
}

async fn call_echo(runtime: &Runtime) -> String {
    call(runtime, "mcp__fx__echo", json!({"text": "still here"}))
        .await
        .unwrap()
        .text
}

#[tokio::test(flavor = "multi_thread")]
async fn without_opting_in_the_server_is_refused() {
    let runtime = open_fixture(false).await;
    let result = call(&runtime, "mcp__fx__elicit", json!({})).await.unwrap();
    assert!(result.is_error, "{result:?}");
    assert!(
        result.text.contains("elicitation failed: method not found"),
        "{}",
        result.text
    );
    runtime.shutdown().await;
}

/// URL-mode elicitation with server-everything's `trigger-url-elicitation`,
/// which it offers only to a client that declares `elicitation.url`.
#[tokio::test(flavor = "multi_thread")]
async fn url_elicitation_reaches_the_embedder_and_only_its_action_goes_back() {
    let (command, args) = mcpbox_tests::everything_command();
    let text = json!({"mcpServers": {"everything": {"command": command, "args": args}}});
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .url_elicitation(true)
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "everything");
    let tool = "mcp__everything__trigger-url-elicitation";
    for (answer, said) in [
        (
            InputAnswer::Accept(Value::Null),
            "User completed the URL elicitation flow",
        ),
        (InputAnswer::Decline, "User declined to open the URL"),
    ] {
        let mut events = runtime.events();
        let caller = runtime.clone();
        let call = tokio::spawn(async move {
            caller
                .call_tool(
                    tool,
                    json!({"url": "https://pay.example/checkout?order=7", "message": "Pay for order 7"}),
                    CallOptions::default(),
                )
                .await
        });
        let Event::UrlElicitationRequested(request) = next_event(&mut events, |e| {
            matches!(e, Event::UrlElicitationRequested(_))
        })
        .await
        else {
            unreachable!()
        };
        assert_eq!(request.url, "https://pay.example/checkout?order=7");
        assert_eq!(request.message, "Pay for order 7");
        assert_eq!(request.tool.as_deref(), Some(tool));
        assert!(!request.elicitation_id.is_empty(), "{request:?}");
        runtime.answer_input(request.id, answer).await.unwrap();
        let result = tokio::time::timeout(PATIENCE, call)
            .await
            .expect("the call ends in time")
            .expect("the call runs")
            .expect("the call gives a result");
        assert!(result.text.contains(said), "{result:?}");
    }
    runtime.shutdown().await;
}
