//! Permission rules end to end: what the registry offers and what it refuses,
//! against the fixture server and the Python and TypeScript SDK peers.

use mcpbox::{CallError, Event, Options, Runtime};
use serde_json::{Value, json};

use crate::{assert_connected, call, fixture_entry, ready};

/// Opens a runtime over a whole configuration (servers, permissions, profiles).
async fn open_config(config: Value) -> Runtime {
    Options::from_config_text("test.mcp.json", config.to_string())
        .open()
        .await
        .expect("the runtime opens")
}

fn names(runtime: &Runtime, server: &str) -> Vec<String> {
    runtime
        .tools()
        .iter()
        .filter(|t| t.server == server)
        .map(|t| t.name.clone())
        .collect()
}

fn denial(result: Result<mcpbox::CallResult, CallError>) -> String {
    match result {
        Err(CallError::Denied(m)) => m,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixture_offers_and_runs_only_what_the_rules_allow() {
    let mut fx = fixture_entry(&[]);
    fx["disabledTools"] = json!(["add"]);
    let runtime = open_config(json!({
        "mcpServers": { "fx": fx },
        "permissions": {
            "deny": ["mcp__fx__crash", "mcp__fx__no_such_tool"],
            "ask": ["mcp__fx__sleep"],
        },
    }))
    .await;
    let mut events = runtime.events();
    assert_connected(&ready(&runtime).await, "fx");
    let offered = names(&runtime, "fx");
    assert!(offered.contains(&"mcp__fx__echo".to_owned()), "{offered:?}");
    assert!(
        offered.contains(&"mcp__fx__sleep".to_owned()),
        "ask tools are offered"
    );
    assert!(
        !offered.contains(&"mcp__fx__crash".to_owned()),
        "{offered:?}"
    );
    assert!(!offered.contains(&"mcp__fx__add".to_owned()), "{offered:?}");

    let e = denial(call(&runtime, "mcp__fx__crash", json!({})).await);
    assert_eq!(
        e,
        "mcp__fx__crash is denied by the permission rule `mcp__fx__crash` \
         (permissions.deny[0] in test.mcp.json)"
    );
    let e = denial(call(&runtime, "mcp__fx__add", json!({"a": 1, "b": 2})).await);
    assert!(e.contains("mcpServers.fx.disabledTools[0]"), "{e}");
    let e = denial(call(&runtime, "mcp__fx__sleep", json!({"ms": 1})).await);
    assert!(
        e.contains("needs approval") && e.contains("permissions.ask[0]"),
        "{e}"
    );
    // The server is untouched and keeps working.
    let ok = call(&runtime, "mcp__fx__echo", json!({"text": "still here"}))
        .await
        .expect("echo is allowed");
    assert_eq!(ok.text, "still here");

    // The rule naming a tool the fixture does not have was reported when its list came.
    let warning = crate::next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("no_such_tool")),
    )
    .await;
    let Event::Warning(w) = warning else {
        unreachable!()
    };
    assert!(
        w.contains("permissions.deny[1]") && w.contains("server `fx` lists no such tool"),
        "{w}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn configuration_problems_in_the_rules_are_reported_and_the_rest_loads() {
    let runtime = open_config(json!({
        "mcpServers": { "fx": fixture_entry(&[]) },
        "permissions": { "allow": ["mcp__*", "mcp__nope__x"], "deny": ["mcp__fx__echo"], "colour": 1 },
    }))
    .await;
    let issues = runtime.config_issues();
    let fields: Vec<Option<&str>> = issues.iter().map(|i| i.field.as_deref()).collect();
    assert_eq!(
        fields,
        [
            Some("permissions.colour"),
            Some("permissions.allow[0]"),
            Some("permissions.allow[1]")
        ]
    );
    assert_eq!(runtime.config_issues()[2].server.as_deref(), Some("nope"));
    assert_connected(&ready(&runtime).await, "fx");
    assert!(matches!(
        call(&runtime, "mcp__fx__echo", json!({"text": "x"})).await,
        Err(CallError::Denied(_))
    ));
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_peers_are_filtered_by_rules_and_tool_lists() {
    let (py, py_args) = mcpbox_tests::fastmcp_server_command();
    let (ts, ts_args) = mcpbox_tests::ts_server_command();
    let runtime = open_config(json!({
        "mcpServers": {
            "py": { "command": py, "args": py_args },
            "ts": { "command": ts, "args": ts_args, "enabledTools": ["greet", "add"] },
        },
        "permissions": { "deny": ["mcp__py__add"] },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "py");
    assert_connected(&servers, "ts");
    assert_eq!(names(&runtime, "py"), ["mcp__py__fail", "mcp__py__greet"]);
    assert_eq!(names(&runtime, "ts"), ["mcp__ts__add", "mcp__ts__greet"]);
    let e = denial(call(&runtime, "mcp__py__add", json!({"a": 1, "b": 2})).await);
    assert!(e.contains("permissions.deny[0]"), "{e}");
    let e = denial(call(&runtime, "mcp__ts__fail", json!({"message": "m"})).await);
    assert!(e.contains("mcpServers.ts.enabledTools"), "{e}");
    let r = call(&runtime, "mcp__ts__add", json!({"a": 2, "b": 3}))
        .await
        .expect("allowed");
    assert_eq!(r.text, "5");
    let r = call(&runtime, "mcp__py__greet", json!({"name": "Ada"}))
        .await
        .expect("allowed");
    assert_eq!(r.text, "Hello, Ada!");
    runtime.shutdown().await;
}

/// A runtime where the fixture's `echo` needs approval and the TypeScript peer's
/// `greet` too (the whole `ts` server asks), with approvals on.
async fn asking(approvals: bool) -> Runtime {
    let (ts, ts_args) = mcpbox_tests::ts_server_command();
    let config = json!({
        "mcpServers": { "fx": fixture_entry(&[]), "ts": { "command": ts, "args": ts_args } },
        "permissions": { "ask": ["mcp__fx__echo", "mcp__ts"] },
    });
    let runtime = Options::from_config_text("test.mcp.json", config.to_string())
        .approvals(approvals)
        .open()
        .await
        .expect("the runtime opens");
    let servers = ready(&runtime).await;
    assert_connected(&servers, "fx");
    assert_connected(&servers, "ts");
    runtime
}

/// Starts a call and returns it with the approval request it made.
async fn ask(
    runtime: &Runtime,
    tool: &str,
    args: Value,
    options: mcpbox::CallOptions,
) -> (
    tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
    mcpbox::InputRequest,
) {
    let mut events = runtime.events();
    let caller = runtime.clone();
    let tool = tool.to_owned();
    let call = tokio::spawn(async move { caller.call_tool(&tool, args, options).await });
    let Event::InputRequested(request) =
        crate::next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    (call, request)
}

async fn finished(
    call: tokio::task::JoinHandle<Result<mcpbox::CallResult, CallError>>,
) -> Result<mcpbox::CallResult, CallError> {
    tokio::time::timeout(crate::PATIENCE, call)
        .await
        .expect("the call ends in time")
        .expect("the call task runs")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_call_goes_out_and_a_refused_one_is_denied() {
    let runtime = asking(true).await;
    let (pending, request) = ask(
        &runtime,
        "mcp__fx__echo",
        json!({"text": "approved"}),
        Default::default(),
    )
    .await;
    assert_eq!(request.server, "fx");
    assert_eq!(request.tool.as_deref(), Some("mcp__fx__echo"));
    let approval = request.approval.as_ref().expect("an approval request");
    assert_eq!(approval.arguments, json!({"text": "approved"}));
    assert_eq!(
        approval.rule,
        "`mcp__fx__echo` (permissions.ask[0] in test.mcp.json)"
    );
    assert_eq!(
        request.requested_schema["properties"]["approve"]["default"],
        "once"
    );
    runtime
        .answer_input(request.id, mcpbox::InputAnswer::approve_once())
        .await
        .unwrap();
    assert_eq!(finished(pending).await.unwrap().text, "approved");

    // The TypeScript SDK peer: a whole-server ask rule, refused.
    let (pending, request) = ask(
        &runtime,
        "mcp__ts__greet",
        json!({"name": "Ada"}),
        Default::default(),
    )
    .await;
    runtime
        .answer_input(request.id, mcpbox::InputAnswer::Decline)
        .await
        .unwrap();
    let e = denial(finished(pending).await);
    assert!(
        e.contains("mcp__ts__greet was not approved") && e.contains("permissions.ask[1]"),
        "{e}"
    );

    // Approved for the session: the next calls go without a question.
    let (pending, request) = ask(
        &runtime,
        "mcp__ts__greet",
        json!({"name": "Bo"}),
        Default::default(),
    )
    .await;
    runtime
        .answer_input(request.id, mcpbox::InputAnswer::approve_for_session())
        .await
        .unwrap();
    assert_eq!(finished(pending).await.unwrap().text, "Hello, Bo!");
    let again = call(&runtime, "mcp__ts__greet", json!({"name": "Cy"})).await;
    assert_eq!(again.unwrap().text, "Hello, Cy!");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_approval_ends_with_the_call_timeout() {
    let runtime = asking(true).await;
    let mut events = runtime.events();
    let options = mcpbox::CallOptions {
        timeout: Some(std::time::Duration::from_millis(300)),
        ..mcpbox::CallOptions::default()
    };
    let (pending, request) = ask(&runtime, "mcp__fx__echo", json!({"text": "late"}), options).await;
    let result = finished(pending).await;
    let Err(CallError::Timeout(message)) = &result else {
        panic!("{result:?}")
    };
    assert!(
        message.contains("was not approved within the call's timeout"),
        "{message}"
    );
    crate::next_event(
        &mut events,
        |e| matches!(e, Event::InputWithdrawn(id) if *id == request.id),
    )
    .await;
    assert!(
        runtime
            .answer_input(request.id, mcpbox::InputAnswer::approve_once())
            .await
            .is_err()
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_approvals_an_ask_call_is_refused_at_once() {
    let runtime = asking(false).await;
    let e = denial(call(&runtime, "mcp__fx__echo", json!({"text": "x"})).await);
    assert!(
        e.contains("needs approval") && e.contains("nobody can be asked"),
        "{e}"
    );
    runtime.shutdown().await;
}
