//! Credentials of remote servers, attacked end to end: hostile
//! HTTP servers (`tests/src/http.rs`) try to send the configured credentials to
//! another origin, and a `${VAR}` in a URL must reach its server and nothing
//! else. "Another origin" is a [`Recorder`]: it answers every request as a
//! server would, so a request sent there by mistake would look like success,
//! and it records everything that reached it.
//!
//! Two attacks exist only because of the stand-in design (the guest sends every
//! request to `g<N>.mcpbox.internal`, and the host maps it to the configured
//! URL): a hostile server naming another server's stand-in authority, as its
//! legacy `endpoint` or in a redirect, must not get that server's credentials.

use mcpbox::{CallError, ServerState};
use mcpbox_tests::http::{LegacyServer, Recorder, ScriptedServer, free_port};
use serde_json::json;

use crate::{assert_connected, call, open, ready, status};

/// The configured headers every test sends, and must see nowhere else.
fn credentials() -> serde_json::Value {
    json!({ "X-API-Key": "secret-key", "Authorization": "Bearer secret-token" })
}

/// Asserts that nothing at all reached `elsewhere`: no request, so no header
/// (`Authorization`, `X-API-Key`) and no `Referer`.
fn nothing_reached(elsewhere: &Recorder) {
    assert!(elsewhere.seen().is_empty(), "{:#?}", elsewhere.seen());
}

/// A legacy SSE server whose `endpoint` event names another origin
/// (another port, another host name for the same address, a scheme-relative
/// reference) fails with an error naming that origin, the configured URL and
/// the fix, and nothing is sent there: no message, no configured header.
#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_endpoint_on_another_origin_fails_the_server_and_nothing_reaches_it() {
    let elsewhere = Recorder::start();
    let port = elsewhere.origin.rsplit(':').next().unwrap().to_owned();
    let cases = [
        (
            "port",
            format!("{}/messages?sessionId=1", elsewhere.origin),
            elsewhere.origin.clone(),
        ),
        (
            "host",
            format!("http://localhost:{port}/messages"),
            format!("http://localhost:{port}"),
        ),
        (
            "relative",
            format!("//127.0.0.1:{port}/messages"),
            elsewhere.origin.clone(),
        ),
    ];
    let legacy: Vec<_> = cases
        .iter()
        .map(|(_, endpoint, _)| LegacyServer::start(endpoint))
        .collect();
    let mut config = serde_json::Map::new();
    for ((name, ..), server) in cases.iter().zip(&legacy) {
        config.insert(
            (*name).to_owned(),
            json!({ "type": "sse", "url": server.url, "headers": credentials() }),
        );
    }
    let runtime = open(config.into()).await;
    let servers = ready(&runtime).await;
    for ((name, _, origin), server) in cases.iter().zip(&legacy) {
        let s = status(&servers, name);
        assert_eq!(s.state, ServerState::Failed, "{s:?}");
        let error = s.error.as_deref().unwrap_or_default();
        assert!(
            error.contains(&format!(
                "server `{name}` named {origin} in its endpoint event, another origin than {}",
                server.url
            )) && error.contains("nothing was sent")
                && error.contains("configure that URL"),
            "{name}: {error}"
        );
        // Only the event stream, on the configured origin, with its headers.
        let seen = server.seen();
        assert!(seen.iter().all(|r| r.method == "GET"), "{seen:#?}");
        assert_eq!(seen[0].header("x-api-key"), Some("secret-key"));
    }
    nothing_reached(&elsewhere);
    runtime.shutdown().await;
    nothing_reached(&elsewhere);
}

/// On the stand-in design: a legacy server whose `endpoint` names
/// another server's stand-in authority (`g0.mcpbox.internal`, the first server
/// opened) must not reach that server under its grant. Were `hostile` the one
/// given `g0`, the endpoint would be its own and it would not fail as asserted.
#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_endpoint_naming_another_servers_stand_in_reaches_nothing() {
    let victim = ScriptedServer::start();
    let hostile = LegacyServer::start("http://g0.mcpbox.internal/stolen");
    // Slots open in configuration order: `a` gets the grant `g0`.
    let runtime = open(json!({
        "a": { "type": "http", "url": victim.url, "headers": credentials() },
        "hostile": { "type": "sse", "url": hostile.url },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "a");
    let s = status(&servers, "hostile");
    assert_eq!(s.state, ServerState::Failed, "{s:?}");
    let error = s.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("named http://g0.mcpbox.internal in its endpoint event, another origin")
            && error.contains("nothing was sent"),
        "{error}"
    );
    let seen = victim.seen();
    assert!(seen.iter().all(|r| r.path == "/mcp"), "{seen:#?}");
    assert_eq!(victim.sessions(), 1, "{seen:#?}");
    runtime.shutdown().await;
}

/// A Streamable HTTP server answering `307` or `308` to another
/// origin (another port, another host name, a scheme-relative reference): the
/// call fails naming the configured URL, the other origin and the fix, and
/// nothing reaches the other host (no `X-API-Key`, no `Authorization`, no
/// `Referer` carrying `?key=k`). The connection stays good.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_origin_is_refused_and_nothing_reaches_it() {
    let server = ScriptedServer::start();
    let elsewhere = Recorder::start();
    let port = elsewhere.origin.rsplit(':').next().unwrap().to_owned();
    let configured = format!("{}?key=k", server.url);
    let runtime = open(json!({ "s": {
        "type": "http", "url": configured, "headers": credentials()
    }}))
    .await;
    assert_connected(&ready(&runtime).await, "s");
    let targets = [
        (
            format!("{}/mcp", elsewhere.origin),
            elsewhere.origin.clone(),
        ),
        (
            format!("http://localhost:{port}/mcp?key=k"),
            format!("http://localhost:{port}"),
        ),
        (format!("//127.0.0.1:{port}/mcp"), elsewhere.origin.clone()),
    ];
    for status in [307, 308] {
        for (location, origin) in &targets {
            server.redirect_next_call(status, location);
            let err = call(&runtime, "mcp__s__echo", json!({"text": "x"}))
                .await
                .unwrap_err();
            let CallError::Protocol(message) = &err else {
                panic!("{status} {location}: {err:?}")
            };
            assert!(
                message.contains(&format!(
                    "the server at {configured} redirected tools/call ({status}) to {origin}, \
                     another origin"
                )) && message.contains("nothing was sent there")
                    && message.contains("configure its new URL"),
                "{status} {location}: {message}"
            );
        }
    }
    nothing_reached(&elsewhere);
    // The connection is still good, and nothing carried a Referer.
    let r = call(&runtime, "mcp__s__echo", json!({"text": "after"})).await;
    assert_eq!(r.map(|r| r.text), Ok("after".to_owned()));
    assert!(server.seen().iter().all(|r| r.header("referer").is_none()));
    runtime.shutdown().await;
    nothing_reached(&elsewhere);
}

/// Same-origin redirects: `307` and `308` on the configured origin (a
/// relative and an absolute `Location`) are followed: the same request again,
/// with the configured headers and without a `Referer` (which would carry the
/// configured URL's query).
#[tokio::test(flavor = "multi_thread")]
async fn same_origin_307_and_308_are_followed_with_the_headers_and_no_referer() {
    let server = ScriptedServer::start();
    let runtime = open(json!({ "s": {
        "type": "http", "url": format!("{}?key=k", server.url), "headers": credentials()
    }}))
    .await;
    assert_connected(&ready(&runtime).await, "s");
    let locations = [
        "/moved?key=k".to_owned(),
        format!("{}/moved", server.origin()),
    ];
    for status in [307, 308] {
        for location in &locations {
            server.redirect_next_call(status, location);
            let text = format!("{status} {location}");
            let r = call(&runtime, "mcp__s__echo", json!({ "text": text })).await;
            assert_eq!(r.map(|r| r.text), Ok(text.clone()));
            let seen = server.seen();
            let calls: Vec<_> = seen
                .iter()
                .filter(|r| r.rpc_method() == Some("tools/call"))
                .filter(|r| r.body.as_ref().unwrap()["params"]["arguments"]["text"] == text)
                .collect();
            assert_eq!(calls.len(), 2, "the call, then again after the {status}");
            assert_eq!(calls[0].body, calls[1].body);
            assert_eq!(calls[0].path, "/mcp?key=k");
            assert!(calls[1].path.starts_with("/moved"), "{:?}", calls[1]);
            for c in calls {
                assert_eq!(c.header("x-api-key"), Some("secret-key"), "{c:?}");
                assert_eq!(c.header("authorization"), Some("Bearer secret-token"));
            }
        }
    }
    assert!(server.seen().iter().all(|r| r.header("referer").is_none()));
    runtime.shutdown().await;
}

/// On the stand-in design: a redirect to another server's stand-in
/// authority is another origin. (Were `hostile` the one given `g0`, the
/// redirect would be same-origin and the call would succeed.)
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_servers_stand_in_is_refused() {
    let victim = ScriptedServer::start();
    let hostile = ScriptedServer::start();
    let runtime = open(json!({
        "a": { "type": "http", "url": victim.url, "headers": credentials() },
        "hostile": { "type": "http", "url": hostile.url },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "a");
    assert_connected(&servers, "hostile");
    hostile.redirect_next_call(307, "http://g0.mcpbox.internal/stolen");
    let err = call(&runtime, "mcp__hostile__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Protocol(m) if m.contains("to http://g0.mcpbox.internal, another origin")),
        "{err:?}"
    );
    let seen = victim.seen();
    assert!(seen.iter().all(|r| r.path == "/mcp"), "{seen:#?}");
    assert!(
        seen.iter().all(|r| r.rpc_method() != Some("tools/call")),
        "{seen:#?}"
    );
    runtime.shutdown().await;
}

/// The variable the secret-in-the-URL test puts in URLs, and its value.
const SECRET_VAR: &str = "MCPBOX_TEST_API_KEY";
const SECRET: &str = "s3cret-7d41b9e2";

/// A secret in the URL: `"url": "http://…/mcp?api_key=${MCPBOX_TEST_API_KEY}"` reaches its
/// server resolved (query and header), and the value appears in no output of
/// the runtime: statuses and their errors, events, call errors, tools, config
/// issues, diagnostics, `state.json`, the `Debug` of the runtime. Every
/// failure names the URL as configured. Covered failures: connection refused,
/// HTTP 500, a redirect to another origin, a hostile legacy endpoint, an unset
/// variable, a URL that does not resolve to http(s).
///
/// Those outputs are the guest's own strings: had the value crossed into the
/// guest, its messages (which name the URL) would show it. The host's side, that
/// nothing it hands the guest holds a value, is the unit test
/// `imports::wasi_http::tests::nothing_handed_to_the_guest_holds_a_resolved_value`.
///
/// The variable is set only in a child run of this test binary (setting it in
/// this process would race the other tests' threads).
#[test]
fn a_secret_in_the_url_reaches_its_server_and_no_output() {
    if !mcpbox_tests::process::alone_in_a_process(
        module_path!(),
        "a_secret_in_the_url_reaches_its_server_and_no_output",
        &[(SECRET_VAR, SECRET)],
    ) {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(secret_in_the_url());
}

async fn secret_in_the_url() {
    let var = format!("${{{SECRET_VAR}}}");
    let with_secret = |url: &str| format!("{url}?api_key={var}");
    let ok = ScriptedServer::start();
    let failing = ScriptedServer::start();
    let moved = ScriptedServer::start();
    let elsewhere = Recorder::start();
    let legacy = LegacyServer::start(&format!("{}/messages", elsewhere.origin));
    let urls = [
        ("ok", with_secret(&ok.url)),
        ("failing", with_secret(&failing.url)),
        ("moved", with_secret(&moved.url)),
        (
            "gone",
            with_secret(&format!("http://127.0.0.1:{}/mcp", free_port())),
        ),
        (
            "unset",
            format!("{}&x=${{MCPBOX_TEST_SURELY_UNSET}}", with_secret(&ok.url)),
        ),
        ("ws", format!("ws://127.0.0.1:1/{var}")),
        // Resolves to something that is not a URL: the host says so without the value.
        ("bare", var.clone()),
    ];
    let mut config = serde_json::Map::new();
    for (name, url) in &urls {
        let headers = json!({ "Authorization": format!("Bearer {var}") });
        config.insert(
            (*name).to_owned(),
            json!({ "type": "http", "url": url, "headers": headers }),
        );
    }
    let legacy_url = with_secret(&legacy.url);
    config.insert("old".into(), json!({ "type": "sse", "url": legacy_url }));
    let cache = std::env::temp_dir().join(format!("mcpbox-secret-{}", std::process::id()));
    let text = json!({ "mcpServers": config }).to_string();
    let options = mcpbox::Options::from_config_text("secret.mcp.json", text);
    let runtime = crate::with_cache(options, &cache)
        .open()
        .await
        .expect("the runtime opens");
    let mut events = runtime.events();
    let servers = ready(&runtime).await;
    assert_connected(&servers, "ok");
    assert_connected(&servers, "failing");
    assert_connected(&servers, "moved");

    // Everything a user or an embedder can see, as text.
    let mut seen = vec![format!("{servers:#?}"), format!("{:#?}", runtime.tools())];
    seen.push(format!("{:#?}", runtime.config_issues()));
    let r = call(&runtime, "mcp__ok__echo", json!({"text": "fine"})).await;
    assert_eq!(r.as_ref().map(|r| r.text.as_str()), Ok("fine"));
    failing.fail_next_calls(1);
    moved.redirect_next_call(307, &format!("{}/mcp", elsewhere.origin));
    let mut failures = Vec::new();
    for name in ["failing", "moved", "gone", "old", "unset", "bare"] {
        let text = match call(
            &runtime,
            &format!("mcp__{name}__echo"),
            json!({"text": "x"}),
        )
        .await
        {
            Ok(r) => format!("the call succeeded: {r:?}"),
            Err(err) => format!("{err} {err:?}"),
        };
        failures.push((name, text));
    }
    for name in ["gone", "old", "unset", "bare"] {
        let error = status(&servers, name).error.clone().unwrap_or_default();
        failures.push((name, error));
    }
    // A URL that is not http(s) as written is a configuration issue.
    let issue = runtime
        .config_issues()
        .iter()
        .find(|i| i.server.as_deref() == Some("ws"))
        .map(|i| format!("{i:?}"))
        .unwrap_or_default();
    failures.push(("ws", issue));
    seen.extend(failures.iter().map(|(_, text)| text.clone()));
    for (name, _) in &urls {
        seen.push(format!("{:?}", runtime.diagnostics(name)));
    }
    seen.push(format!("{:#?}", runtime.servers()));
    seen.push(format!("{runtime:?}"));
    runtime.shutdown().await;
    while let Ok(event) = events.try_recv() {
        seen.push(format!("{event:?}"));
    }
    if let Ok(state) = std::fs::read_to_string(cache.join("state.json")) {
        seen.push(state);
    }
    let _ = std::fs::remove_dir_all(&cache);

    // The value reached its server, in the query and the header...
    let requests = ok.seen();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.path, format!("/mcp?api_key={SECRET}"), "{r:?}");
        assert_eq!(
            r.header("authorization"),
            Some(&*format!("Bearer {SECRET}"))
        );
    }
    // ...and in no output.
    for text in &seen {
        assert!(!text.contains(SECRET), "the value shows in: {text}");
    }
    // Each failure says what went wrong, naming the URL as configured where it
    // names one.
    for (name, text) in &failures {
        let named = match *name {
            "failing" => text.contains("HTTP 500"),
            "old" => text.contains(&legacy_url),
            "unset" => text.contains("MCPBOX_TEST_SURELY_UNSET") && text.contains("`url`"),
            "ws" | "bare" => text.contains("url"),
            _ => text.contains(&var),
        };
        assert!(named, "{name}: {text}");
    }
    nothing_reached(&elsewhere);
}
