//! Faults through the gateway: an upstream that crashes mid-call, clients that go
//! away mid-call (over HTTP, and over stdio in front of a second gateway), many
//! clients at once, a client that does not read (over HTTP and stdio), a remote
//! upstream that makes the guest's steps block.

use std::time::{Duration, Instant};

use mcpbox_tests::gateway::{AUTHORIZATION, ConfigFile, RawRequest, http, serve_http};
use mcpbox_tests::http::ServerProcess;
use mcpbox_tests::stdio::StdioPeer;
use serde_json::{Value, json};

use crate::{POST, config, stateless_call, stdio_gateway, text};

/// The request ids the fixture saw cancelled, through the gateway.
fn cancellations(url: &str) -> Vec<Value> {
    let r = http(
        url,
        "POST",
        &POST,
        &stateless_call(900, "fx__cancellations", json!({})),
    );
    let messages = r.messages();
    let seen: Vec<Value> = serde_json::from_str(text(&messages[0]["result"])).unwrap_or_default();
    seen
}

/// Waits (polling) until the fixture has seen `n` cancellations.
fn await_cancellations(url: &str, n: usize) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = cancellations(url);
        if seen.len() >= n {
            return seen;
        }
        assert!(
            Instant::now() < until,
            "the fixture saw {} cancellations, not {n}",
            seen.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_upstream_crash_mid_call_is_a_tool_error_not_a_hang() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let r = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(1, "fx__crash", json!({"code": 7})),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let result = &r.messages()[0]["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        text(result).contains("server `fx`") && text(result).contains("exit code 7"),
        "{result}"
    );

    // Over stdio, a 2025 client: the same.
    let argv = stdio_gateway(&config.path, &[]);
    let mut peer = StdioPeer::spawn(&argv[0], &argv[1..]);
    peer.deadline = Duration::from_secs(60);
    peer.initialize("2025-11-25");
    let result = peer.call_tool("fx__crash", json!({"code": 3}));
    assert_eq!(result["isError"], true, "{result}");
    // The server is restarted by the next call (after its backoff), or said to be
    // unavailable: either way an answer, never a hang.
    let again = peer.call_tool("fx__echo", json!({"text": "x"}));
    assert!(again["isError"] == true || text(&again) == "x", "{again}");
    peer.close_stdin();
    assert!(peer.wait_exit().success());
}

#[test]
fn a_client_that_goes_away_mid_call_has_it_cancelled_upstream() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let before = cancellations(&gateway.url).len();
    // A 2026-07-28 client: closing the stream is how it cancels.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "fx__progress", "arguments": {"steps": 100000, "interval_ms": 50},
        "_meta": {"progressToken": "p1", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut request = RawRequest::send(&gateway.url, "POST", &POST, &body.to_string());
    let (status, _, data) = request.first_event();
    assert_eq!(status, 200);
    assert!(data.contains("notifications/progress"), "{data}");
    drop(request);
    await_cancellations(&gateway.url, before + 1);

    // A 2025 session that ends (DELETE) has its calls cancelled too.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let r = http(&gateway.url, "POST", &POST, &init.to_string());
    let session = r.header("mcp-session-id").expect("a session id").to_owned();
    let with_session: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Mcp-Session-Id", session.as_str())])
        .collect();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        http(&gateway.url, "POST", &with_session, &note.to_string()).status,
        202
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "fx__progress", "arguments": {"steps": 100000, "interval_ms": 50},
        "_meta": {"progressToken": "p2"}}});
    let mut request = RawRequest::send(&gateway.url, "POST", &with_session, &call.to_string());
    let (_, id, _) = request.first_event();
    assert!(id.is_some(), "a session's events carry ids for resumption");
    let gone = http(
        &gateway.url,
        "DELETE",
        &[AUTHORIZATION, ("Mcp-Session-Id", session.as_str())],
        "",
    );
    assert_eq!(gone.status, 200);
    await_cancellations(&gateway.url, before + 2);
    // The ended session is unknown from now on.
    let r = http(
        &gateway.url,
        "POST",
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string(),
    );
    assert_eq!(r.status, 404);
    drop(request);
}

/// A stdio gateway whose upstream is an HTTP gateway in front of the fixture,
/// so the fixture outlives the stdio gateway and can be asked what it saw
/// cancelled.
struct GatewayBehindGateway {
    /// The HTTP gateway, whose fixture `cancellations` asks.
    inner: ServerProcess,
    /// How many cancellations the fixture had seen before.
    before: usize,
    /// The stdio gateway's command line.
    argv: Vec<String>,
    /// Kept while the gateways run: dropped, the files are removed.
    _configs: (ConfigFile, ConfigFile),
}

fn gateway_behind_gateway() -> GatewayBehindGateway {
    let inner_config = config(false, json!({}));
    let inner = serve_http(crate::cli(), &inner_config.path, &[]);
    let before = cancellations(&inner.url).len();
    let outer_config = ConfigFile::new(&json!({"mcpServers": {
        "up": {"type": "http", "url": inner.url, "headers": {"Authorization": AUTHORIZATION.1}},
    }}));
    let argv = stdio_gateway(&outer_config.path, &[]);
    GatewayBehindGateway {
        inner,
        before,
        argv,
        _configs: (inner_config, outer_config),
    }
}

#[test]
fn a_stdio_client_that_goes_away_mid_call_has_it_cancelled_upstream() {
    let chain = gateway_behind_gateway();
    let mut peer = StdioPeer::spawn(&chain.argv[0], &chain.argv[1..]);
    peer.deadline = Duration::from_secs(60);
    peer.initialize("2025-11-25");
    peer.send_request(
        "tools/call",
        json!({"name": "up__fx__progress", "arguments": {"steps": 100000, "interval_ms": 50},
               "_meta": {"progressToken": "p"}}),
    );
    // The call is running upstream once its progress comes back through both.
    loop {
        let message = peer.next_message();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p", "{message}");
            break;
        }
        assert!(
            message.get("id").is_none(),
            "an answer before any progress: {message}"
        );
    }
    // As the MCP SDKs end a stdio server: stdin closed, then SIGTERM when it has
    // not exited two seconds later (it goes on answering what it received).
    peer.close_stdin();
    std::thread::sleep(Duration::from_secs(2));
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(peer.id()).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let status = peer.wait_exit();
    assert_eq!(status.code(), Some(143), "{status:?}");
    await_cancellations(&chain.inner.url, chain.before + 1);
}

#[test]
fn a_stdio_client_that_pipes_its_requests_and_closes_stdin_gets_every_answer() {
    // `printf '…' | mcpbox serve`: every line is in before the first answer is
    // out, the server still starting, and a call still running when the input
    // ends.
    let config = ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": crate::fixture(), "args": ["--start-delay-ms", "500"]},
    }}));
    let argv = stdio_gateway(&config.path, &[]);
    let mut peer = StdioPeer::spawn(&argv[0], &argv[1..]);
    peer.deadline = Duration::from_secs(60);
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "fx__sleep", "arguments": {"ms": 1000}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "fx__echo", "arguments": {"text": "last"}}}),
    ];
    for line in &lines {
        peer.send(line);
    }
    peer.close_stdin();
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < 4 {
        let message = peer.next_message();
        if let Some(id) = message["id"].as_u64() {
            answered.insert(id, message);
        }
    }
    assert!(
        answered[&1]["result"]["serverInfo"].is_object(),
        "{answered:?}"
    );
    let tools = answered[&2]["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "fx__sleep"), "{tools:?}");
    let slept = &answered[&3]["result"];
    assert!(
        slept.is_object() && slept["isError"] != true,
        "{answered:?}"
    );
    assert_eq!(text(&answered[&4]["result"]), "last", "{answered:?}");
    assert!(peer.wait_exit().success());
}

#[test]
fn a_stdio_client_that_stops_reading_does_not_stall_the_gateway() {
    // The fixture is asked what it saw cancelled while the stdio gateway's
    // stdout is full.
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let chain = gateway_behind_gateway();
    let mut child = mcpbox_tests::process::ChildGuard::spawn(
        std::process::Command::new(&chain.argv[0])
            .args(&chain.argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null()),
    )
    .kill_after(Duration::from_secs(120));
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |message: Value| {
        input
            .write_all(format!("{message}\n").as_bytes())
            .expect("the gateway reads");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "slow", "version": "1"}}}),
    );
    let mut line = String::new();
    output.read_line(&mut line).expect("an answer");
    assert!(line.contains("serverInfo"), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Results several times the pipe's buffer, which this client does not read.
    const LARGE: [u64; 4] = [2, 4, 5, 6];
    for id in LARGE {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "up__fx__huge", "arguments": {"bytes": 8_000_000}}}));
    }
    std::thread::sleep(Duration::from_secs(2));
    // The gateway still takes requests, sends them upstream and cancels them.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "up__fx__sleep", "arguments": {"ms": 600_000}}}));
    std::thread::sleep(Duration::from_secs(1));
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 3}}),
    );
    await_cancellations(&chain.inner.url, chain.before + 1);
    // Nothing was lost: the results come whole once the client reads.
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < LARGE.len() {
        line.clear();
        output.read_line(&mut line).expect("a line");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if let Some(id) = message["id"].as_u64() {
            let result = &message["result"];
            assert!(result.is_object() && result["isError"] != true, "{message}");
            answered.insert(id);
        }
    }
    drop(input);
    let mut rest = Vec::new();
    output.read_to_end(&mut rest).expect("stdout ends");
    assert!(child.wait().expect("it exits").success());
}

#[test]
fn a_gateway_whose_steps_block_on_a_remote_upstream_answers_pings_at_once() {
    // A remote upstream makes the guest's steps block (it waits on its own
    // pollables); what the gateway answers itself ends no call and must not
    // wait for a blocked step's timeout (a second).
    let chain = gateway_behind_gateway();
    let mut peer = StdioPeer::spawn(&chain.argv[0], &chain.argv[1..]);
    peer.initialize("2025-11-25");
    // Settled: the upstream answered once.
    assert_eq!(
        text(&peer.call_tool("up__fx__echo", json!({"text": "up"}))),
        "up"
    );
    let started = Instant::now();
    for _ in 0..10 {
        let answer = peer.request("ping", json!({}));
        assert!(answer["result"].is_object(), "{answer}");
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "10 pings took {took:?}: each waited for the blocked step"
    );
}

#[test]
fn a_hundred_http_clients_at_once() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let url = gateway.url.clone();
    let clients: Vec<_> = (0..100)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let r = http(
                    &url,
                    "POST",
                    &POST,
                    &stateless_call(i, "fx__echo", json!({"text": format!("client {i}")})),
                );
                assert_eq!(r.status, 200, "{r:?}");
                let messages = r.messages();
                assert_eq!(messages[0]["id"], i);
                assert_eq!(text(&messages[0]["result"]), format!("client {i}"));
            })
        })
        .collect();
    for c in clients {
        c.join().expect("a client failed");
    }
}

#[test]
fn a_client_that_does_not_read_does_not_hold_up_the_others() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let init = |id: u64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let r = http(&gateway.url, "POST", &POST, &body.to_string());
        let session = r.header("mcp-session-id").expect("a session").to_owned();
        let headers: Vec<(String, String)> = POST
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .chain([("Mcp-Session-Id".to_owned(), session)])
            .collect();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(http(&gateway.url, "POST", &h, &note).status, 202);
        headers
    };
    // The slow client opens its standalone stream and never reads it.
    let slow = init(1);
    let slow_h: Vec<(&str, &str)> = slow
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .filter(|(n, _)| *n != "Content-Type")
        .chain([("Accept", "text/event-stream")])
        .collect();
    let stalled = RawRequest::send(&gateway.url, "GET", &slow_h, "");
    // Another client makes the upstream flood: every log line goes to the slow
    // client's standalone stream too, far more than it buffers.
    let busy = init(2);
    let busy_h: Vec<(&str, &str)> = busy.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let flood = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "fx__flood", "arguments": {"count": 50000}}});
    let started = Instant::now();
    let r = http(&gateway.url, "POST", &busy_h, &flood.to_string());
    let messages = r.messages();
    let last = messages.last().expect("an answer");
    assert_eq!(text(&last["result"]), "flooded 50000", "{last}");
    // And a third client is answered while the slow one still holds its stream.
    let r = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(6, "fx__echo", json!({"text": "still here"})),
    );
    assert_eq!(text(&r.messages()[0]["result"]), "still here");
    assert!(started.elapsed() < Duration::from_secs(60));
    drop(stalled);
}

/// What the TypeScript SDK v2 peer at `url` says of its `wait` tool: the waits
/// begun and the waits cancelled (asked directly, in 2026-07-28).
fn waits(url: &str) -> (u64, u64) {
    let r = http(
        url,
        "POST",
        &[
            POST[0],
            POST[1],
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "waits"),
        ],
        &stateless_call(1, "waits", json!({})),
    );
    let counts: Value = serde_json::from_str(text(&r.messages()[0]["result"])).unwrap_or_default();
    (
        counts["started"].as_u64().unwrap_or_default(),
        counts["cancelled"].as_u64().unwrap_or_default(),
    )
}

/// Waits (polling) until the peer's counts pass `check`.
fn await_waits(url: &str, check: impl Fn((u64, u64)) -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = waits(url);
        if check(seen) {
            return;
        }
        assert!(Instant::now() < until, "the peer's waits: {seen:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_cancelled_call_reaches_a_2026_http_upstream_by_closing_its_stream() {
    // Over HTTP in 2026-07-28, closing the request's response stream is the
    // cancellation; the TypeScript SDK v2 server drops a notifications/cancelled.
    // The gateways stay up throughout, so nothing closes the upstream streams
    // but the cancellations themselves.
    let upstream = mcpbox_tests::http::ts_http();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "ts": {"type": "http", "url": upstream.url},
        "quick": {"type": "http", "url": upstream.url, "toolTimeoutMs": 1000},
    }}));
    let argv = stdio_gateway(&config.path, &[]);
    let mut peer = StdioPeer::spawn(&argv[0], &argv[1..]);
    peer.deadline = Duration::from_secs(60);
    peer.initialize("2025-11-25");
    // A call's timeout.
    let result = peer.call_tool("quick__wait", json!({"ms": 600000}));
    assert!(text(&result).contains("timed out"), "{result}");
    await_waits(&upstream.url, |(started, cancelled)| {
        started == 1 && cancelled == 1
    });
    // A client's cancel (a 2025 client's notifications/cancelled).
    let id = peer.send_request(
        "tools/call",
        json!({"name": "ts__wait", "arguments": {"ms": 600000}}),
    );
    await_waits(&upstream.url, |(started, _)| started == 2);
    peer.notify("notifications/cancelled", json!({"requestId": id}));
    await_waits(&upstream.url, |(_, cancelled)| cancelled == 2);
    peer.close_stdin();
    assert!(peer.wait_exit().success());

    // A 2026-07-28 client of the HTTP gateway cancels by closing its stream too.
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let request = RawRequest::send(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(1, "ts__wait", json!({"ms": 600000})),
    );
    await_waits(&upstream.url, |(started, _)| started == 3);
    drop(request);
    await_waits(&upstream.url, |(_, cancelled)| cancelled == 3);
}
