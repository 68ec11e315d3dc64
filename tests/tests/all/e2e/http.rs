//! Remote servers: Streamable HTTP and legacy HTTP+SSE against the real npm and
//! PyPI servers in their HTTP modes, and HTTP faults against a scripted server.
//! Hostile servers (credentials to other origins, secrets in URLs) are in
//! `security.rs`.

use mcpbox::{CallError, Event, Runtime, ServerState};
use mcpbox_tests::http::{
    EverythingMode, ScriptedServer, ServerProcess, everything_http, everything_http_at,
    fastmcp_http, free_port, ts_http_at,
};
use mcpbox_tests::process::eventually_async;
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, call, next_event, open, ready, status};

async fn ok(runtime: &Runtime, tool: &str, args: Value) -> mcpbox::CallResult {
    call(runtime, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool} failed: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_server_everything() {
    let server = everything_http(EverythingMode::StreamableHttp);
    let runtime = open(json!({ "everything": { "type": "http", "url": server.url } })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "everything");
    let s = status(&servers, "everything");
    assert_eq!(s.transport, "http");
    assert!(s.tool_count > 5, "{s:?}");
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));

    let r = ok(
        &runtime,
        "mcp__everything__echo",
        json!({"message": "over http"}),
    )
    .await;
    assert_eq!(r.text, "Echo: over http");
    // Progress notifications interleaved with the answer on one event stream.
    let r = ok(
        &runtime,
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    )
    .await;
    assert!(r.text.contains("completed"), "{r:?}");
    let r = ok(
        &runtime,
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 40}),
    )
    .await;
    assert!(r.text.contains("42"), "{r:?}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_python_sdk() {
    let server = fastmcp_http();
    let runtime = open(json!({ "py": { "url": server.url } })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "py");
    assert_eq!(
        status(&servers, "py").transport,
        "http",
        "inferred from `url`"
    );
    assert_eq!(
        status(&servers, "py").server_name.as_deref(),
        Some("fastmcp-peer")
    );

    let r = ok(&runtime, "mcp__py__greet", json!({"name": "Ada"})).await;
    assert_eq!(r.text, "Hello, Ada!");
    let r = ok(&runtime, "mcp__py__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(r.structured_value().unwrap(), Some(json!({"result": 42})));
    let r = ok(&runtime, "mcp__py__fail", json!({"message": "nope"})).await;
    assert!(r.is_error && r.text.contains("nope"), "{r:?}");
    // Concurrent calls share the session.
    let calls = (0..8).map(|i| {
        let runtime = runtime.clone();
        async move {
            ok(&runtime, "mcp__py__add", json!({"a": i, "b": 1}))
                .await
                .text
        }
    });
    let sums = futures_join(calls).await;
    assert_eq!(sums, (1..=8).map(|i| i.to_string()).collect::<Vec<_>>());
    runtime.shutdown().await;
}

/// Runs futures concurrently on the runtime and collects their outputs in order.
async fn futures_join<F, T>(futures: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sse_server_everything() {
    let server = everything_http(EverythingMode::Sse);
    let runtime = open(json!({ "old": { "type": "sse", "url": server.url } })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "old");
    assert_eq!(status(&servers, "old").transport, "sse");
    let r = ok(&runtime, "mcp__old__echo", json!({"message": "over sse"})).await;
    assert_eq!(r.text, "Echo: over sse");
    let r = ok(&runtime, "mcp__old__get-sum", json!({"a": 1, "b": 2})).await;
    assert!(r.text.contains('3'), "{r:?}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_headers_and_delete_on_close() {
    let server = ScriptedServer::start();
    let home = std::env::var("HOME").unwrap_or_default();
    let runtime = open(json!({ "s": {
        "type": "http",
        "url": server.url,
        "headers": { "X-Home": "${HOME}", "X-Fixed": "plain" }
    }}))
    .await;
    assert_connected(&ready(&runtime).await, "s");
    let r = ok(&runtime, "mcp__s__echo", json!({"text": "hi"})).await;
    assert_eq!(r.text, "hi");
    runtime.shutdown().await;
    drop(runtime);

    // DELETE is sent when the connection closes; give it a moment to arrive.
    let seen = eventually_async(PATIENCE, async || {
        let seen = server.seen();
        if seen.iter().any(|s| s.method == "DELETE") {
            Ok(seen)
        } else {
            Err(format!("no DELETE: {seen:#?}"))
        }
    })
    .await;
    for request in &seen {
        assert_eq!(request.header("x-home"), Some(home.as_str()), "{request:?}");
        assert_eq!(request.header("x-fixed"), Some("plain"));
    }
    let init = seen
        .iter()
        .find(|s| s.rpc_method() == Some("initialize"))
        .unwrap();
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(
        init.header("mcp-protocol-version"),
        None,
        "nothing negotiated yet"
    );
    assert!(init.header("accept").unwrap().contains("text/event-stream"));
    let list = seen
        .iter()
        .find(|s| s.rpc_method() == Some("tools/list"))
        .unwrap();
    assert_eq!(list.header("mcp-session-id"), Some("session-1"));
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
    let delete = seen.iter().find(|s| s.method == "DELETE").unwrap();
    assert_eq!(delete.header("mcp-session-id"), Some("session-1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn http_500_fails_only_that_call() {
    let server = ScriptedServer::start();
    let runtime = open(json!({ "s": { "type": "http", "url": server.url } })).await;
    assert_connected(&ready(&runtime).await, "s");
    server.fail_next_calls(1);
    let err = call(&runtime, "mcp__s__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    let CallError::Protocol(message) = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("HTTP 500") && message.contains("boom"),
        "{message}"
    );
    // The connection is still good.
    assert_eq!(
        ok(&runtime, "mcp__s__echo", json!({"text": "after"}))
            .await
            .text,
        "after"
    );
    assert_connected(&runtime.servers(), "s");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_stream_is_resumed_without_loss_or_duplicates() {
    let server = ScriptedServer::start();
    let runtime = open(json!({ "s": { "type": "http", "url": server.url } })).await;
    assert_connected(&ready(&runtime).await, "s");
    let mut events = runtime.events();
    server.cut_next_call();
    let r = ok(&runtime, "mcp__s__echo", json!({"text": "resumed"})).await;
    assert_eq!(r.text, "resumed");
    next_event(
        &mut events,
        |e| matches!(e, Event::Log { message, .. } if message == "before the cut"),
    )
    .await;
    let resume = server
        .seen()
        .into_iter()
        .find(|s| s.method == "GET" && s.header("last-event-id").is_some())
        .expect("a GET resuming the stream");
    assert_eq!(
        resume.header("last-event-id"),
        Some("e2"),
        "resumes after the last event seen"
    );
    // One more call, then check the log line was delivered exactly once.
    ok(&runtime, "mcp__s__echo", json!({"text": "again"})).await;
    runtime.shutdown().await;
    let mut logs = 0;
    while let Ok(e) = events.try_recv() {
        logs += usize::from(matches!(e, Event::Log { message, .. } if message == "before the cut"));
    }
    assert_eq!(logs, 0, "the log line before the cut arrived twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ended_session_is_reinitialised_once() {
    let server = ScriptedServer::start();
    let runtime = open(json!({ "s": { "type": "http", "url": server.url } })).await;
    assert_connected(&ready(&runtime).await, "s");
    assert_eq!(server.sessions(), 1);
    server.end_session();
    let r = ok(&runtime, "mcp__s__echo", json!({"text": "new session"})).await;
    assert_eq!(r.text, "new session");
    assert_eq!(server.sessions(), 2, "re-initialised exactly once");
    let seen = server.seen();
    let calls: Vec<_> = seen
        .iter()
        .filter(|s| s.rpc_method() == Some("tools/call"))
        .collect();
    assert_eq!(calls.len(), 2, "the call was retried once");
    assert_eq!(calls[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(calls[1].header("mcp-session-id"), Some("session-2"));
    assert!(
        seen.iter()
            .filter(|s| s.rpc_method() == Some("notifications/initialized"))
            .count()
            == 2,
        "{seen:#?}"
    );
    assert_connected(&runtime.servers(), "s");
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_fails_the_server_with_the_reason() {
    let port = free_port();
    let runtime = open(json!({
        "gone": { "type": "http", "url": format!("http://127.0.0.1:{port}/mcp") },
        "gone-sse": { "type": "sse", "url": format!("http://127.0.0.1:{port}/sse") },
    }))
    .await;
    let servers = ready(&runtime).await;
    for name in ["gone", "gone-sse"] {
        let s = status(&servers, name);
        assert_eq!(s.state, ServerState::Failed, "{s:?}");
        let error = s.error.as_deref().unwrap_or_default();
        assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
        assert!(
            error.to_lowercase().contains("connection refused"),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unset_header_variable_fails_that_server_only() {
    let server = ScriptedServer::start();
    let runtime = open(json!({
        "bad": { "url": server.url, "headers": { "Authorization": "Bearer ${MCPBOX_TEST_SURELY_UNSET}" } },
        "good": { "url": server.url },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "good");
    let bad = status(&servers, "bad");
    assert_eq!(bad.state, ServerState::Failed);
    let error = bad.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("headers.Authorization") && error.contains("MCPBOX_TEST_SURELY_UNSET"),
        "{error}"
    );
}

/// Calls `tool` until it succeeds, waiting out the restart backoff the errors
/// announce ("next restart allowed in …"); panics on any other error or after
/// [`PATIENCE`].
async fn call_through_backoff(runtime: &Runtime, tool: &str, args: Value) -> mcpbox::CallResult {
    eventually_async(PATIENCE, async || {
        match call(runtime, tool, args.clone()).await {
            Ok(r) => Ok(r),
            Err(CallError::ServerUnavailable(m)) if m.contains("next restart allowed in") => Err(m),
            Err(e) => panic!("{tool}: {e}"),
        }
    })
    .await
}

/// The port of a loopback URL `http://127.0.0.1:PORT/…`.
fn port_of(url: &str) -> u16 {
    url.split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// A remote server that goes away after connecting takes the path of a crashed
/// stdio server: it shows as failed with an error naming it and its URL (found
/// through the stream it held open, with no call needed), calls fail at once,
/// and once it is back on its port a call reconnects it. `start(0)` starts it on
/// a free port, `start(port)` on that one.
async fn goes_away_and_comes_back(
    start: impl Fn(u16) -> Result<ServerProcess, String>,
    tool: &str,
    args: Value,
) {
    let server = start(0).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url.clone();
    let runtime = open(json!({ "s": { "type": "http", "url": url } })).await;
    assert_connected(&ready(&runtime).await, "s");
    ok(&runtime, tool, args.clone()).await;

    let mut events = runtime.events();
    drop(server); // Killed: the port now refuses connections.
    let failed = next_event(
        &mut events,
        |e| matches!(e, Event::Status(s) if s.name == "s" && s.state == ServerState::Failed),
    );
    // On a timeout, what the connection noted says how far it got.
    let failed = tokio::time::timeout(PATIENCE - std::time::Duration::from_secs(5), failed)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "server `s` was not failed in time: {:?} {:?}",
                status(&runtime.servers(), "s"),
                runtime.diagnostics("s")
            )
        });
    let Event::Status(failed) = failed else {
        unreachable!()
    };
    let error = failed.error.unwrap_or_default();
    assert!(
        error.contains(&format!(
            "server `s` went away: {url} cannot be reached any more"
        )),
        "{error}"
    );
    let err = call(&runtime, tool, args.clone()).await.unwrap_err();
    let CallError::ServerUnavailable(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains(&url), "{message}");

    let _back = start(port_of(&url)).unwrap_or_else(|e| panic!("the port is taken: {e}"));
    call_through_backoff(&runtime, tool, args).await;
    assert_connected(&runtime.servers(), "s");
    runtime.shutdown().await;
}

/// The TypeScript SDK v2 (2026-07-28, stateless): the stream held open is
/// `subscriptions/listen`, a POST answered with an event stream.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_server_that_goes_away_fails_and_a_call_reconnects_it() {
    goes_away_and_comes_back(ts_http_at, "mcp__s__add", json!({"a": 1, "b": 2})).await;
}

/// server-everything (2025-11-25, a session): the stream held open is the GET
/// stream; the new connection starts a new session.
#[tokio::test(flavor = "multi_thread")]
async fn a_2025_server_that_goes_away_fails_and_a_call_reconnects_it() {
    let start = |port| match port {
        0 => Ok(everything_http(EverythingMode::StreamableHttp)),
        port => everything_http_at(EverythingMode::StreamableHttp, port),
    };
    goes_away_and_comes_back(start, "mcp__s__echo", json!({"message": "hi"})).await;
}

/// The policy's network switch: remote servers fail as denied, naming the server
/// and the URL, and nothing reaches them; stdio servers are not affected. The
/// process switch is its mirror image.
#[tokio::test(flavor = "multi_thread")]
async fn the_policy_refuses_the_network_or_processes() {
    let server = ScriptedServer::start();
    let sse_url = server.url.replace("/mcp", "/sse");
    let config = json!({ "mcpServers": {
        "remote": { "type": "http", "url": server.url },
        "old": { "type": "sse", "url": sse_url },
        "fx": crate::fixture_entry(&[]),
    }})
    .to_string();
    let no_network = mcpbox::Policy {
        allow_network: false,
        ..mcpbox::Policy::default()
    };
    let runtime = mcpbox::Options::from_config_text("policy.json", config.clone())
        .policy(no_network)
        .open()
        .await
        .expect("the runtime opens");
    let servers = ready(&runtime).await;
    assert_connected(&servers, "fx");
    for (name, url) in [("remote", &server.url), ("old", &sse_url)] {
        let s = status(&servers, name);
        assert_eq!(s.state, ServerState::Failed, "{s:?}");
        let error = s.error.as_deref().unwrap_or_default();
        assert!(
            error.contains(&format!(
                "denied by policy: server `{name}`: the policy does not allow network connections, so {url} was not contacted"
            )) && error.contains("Policy::allow_network"),
            "{error}"
        );
    }
    // A call names the cause too (exit code 3 in the CLI).
    let err = call(&runtime, "mcp__remote__echo", json!({"text": "x"})).await;
    assert!(
        matches!(&err, Err(CallError::ServerUnavailable(m)) if m.contains("does not allow network connections")),
        "{err:?}"
    );
    runtime.shutdown().await;
    assert!(server.seen().is_empty(), "{:?}", server.seen());

    let no_processes = mcpbox::Policy {
        allow_processes: false,
        ..mcpbox::Policy::default()
    };
    let runtime = mcpbox::Options::from_config_text("policy.json", config)
        .policy(no_processes)
        .open()
        .await
        .expect("the runtime opens");
    let servers = ready(&runtime).await;
    assert_connected(&servers, "remote");
    let fx = status(&servers, "fx");
    assert_eq!(fx.state, ServerState::Failed);
    assert!(
        fx.error
            .as_deref()
            .is_some_and(|e| e.contains("the policy does not allow starting processes")),
        "{fx:?}"
    );
    runtime.shutdown().await;
}
