//! The fixture server against its own documented behaviour, spoken to over raw
//! stdio, so that mcpbox's tests can trust what it does.

use std::time::{Duration, Instant};

use mcpbox_tests::fixture::{
    BUILTIN_TOOLS, COLLIDING_NAMES, SLEEP_STARTED, SUPPORTED_PROTOCOL_VERSIONS, WEIRD_NAMES,
};
use mcpbox_tests::fixture_server;
use mcpbox_tests::stdio::{StdioPeer, first_text, tool_names};
use serde_json::{Value, json};

fn start(args: &[&str]) -> StdioPeer {
    StdioPeer::spawn(fixture_server!(), args)
}

fn initialized(args: &[&str]) -> StdioPeer {
    let mut fixture = start(args);
    fixture.initialize("2025-11-25");
    fixture
}

fn initialize_params(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
}

#[test]
fn initialize_negotiates_the_protocol_version() {
    let cases = SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .map(|version| (*version, *version))
        .chain([("2099-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25")]);
    for (requested, expected) in cases {
        let mut fixture = start(&["--name", "negotiator"]);
        let result = fixture.initialize(requested);
        assert_eq!(result["protocolVersion"], expected, "requested {requested}");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(result["serverInfo"]["name"], "negotiator");
        assert!(result["serverInfo"]["version"].is_string());
    }

    let mut forced = start(&["--protocol", "1999-01-01"]);
    assert_eq!(
        forced.initialize("2025-11-25")["protocolVersion"],
        "1999-01-01"
    );
}

#[test]
fn answers_ping_unknown_methods_and_bad_lines() {
    let mut fixture = initialized(&[]);
    assert_eq!(fixture.request("ping", json!({}))["result"], json!({}));
    assert_eq!(
        fixture.request("resources/list", json!({}))["error"]["code"],
        -32601
    );

    fixture.send_line("{not json");
    let parse_error = fixture.next_message();
    assert_eq!(parse_error["error"]["code"], -32700);
    assert_eq!(parse_error["id"], Value::Null);

    fixture.send_line("[]");
    assert_eq!(fixture.next_message()["error"]["code"], -32600);
}

#[test]
fn lists_every_tool_across_pages() {
    let mut fixture = initialized(&[
        "--tools",
        "5",
        "--page-size",
        "4",
        "--weird-names",
        "--collide",
    ]);
    let tools = fixture.list_tools();
    for tool in &tools {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert!(
            schema["properties"].is_object() && schema["required"].is_array(),
            "{tool}"
        );
    }
    let expected: Vec<String> = BUILTIN_TOOLS
        .iter()
        .map(|name| (*name).to_owned())
        .chain((0..5).map(|i| format!("tool_{i}")))
        .chain(
            WEIRD_NAMES
                .iter()
                .chain(COLLIDING_NAMES)
                .map(|name| (*name).to_owned()),
        )
        .collect();
    assert_eq!(tool_names(&tools), expected);

    let first = fixture.request("tools/list", json!({}));
    assert_eq!(first["result"]["tools"].as_array().map(Vec::len), Some(4));
    assert!(first["result"]["nextCursor"].is_string());
    let bad = fixture.request("tools/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(bad["error"]["code"], -32602);
}

#[test]
fn calls_the_basic_tools() {
    let mut fixture = initialized(&["--collide"]);
    assert_eq!(
        first_text(&fixture.call_tool("echo", json!({"text": "hi"}))),
        "hi"
    );

    let sum = fixture.call_tool("add", json!({"a": 2, "b": 3}));
    assert_eq!(first_text(&sum), "5");
    assert_eq!(sum["structuredContent"], json!({"sum": 5}));
    assert_eq!(
        fixture.call_tool("add", json!({"a": 0.5, "b": 1}))["structuredContent"]["sum"],
        1.5
    );

    let failed = fixture.call_tool("fail", json!({"message": "nope"}));
    assert_eq!(failed["isError"], true);
    assert_eq!(first_text(&failed), "nope");

    let invalid = fixture.call_tool("echo", json!({}));
    assert_eq!(invalid["isError"], true, "{invalid}");

    let unknown = fixture.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602);

    assert_eq!(first_text(&fixture.call_tool("x.y", json!({}))), "x.y");
    assert_eq!(
        first_text(&fixture.call_tool("x_y", json!({"text": "t"}))),
        "t"
    );

    let multi = fixture.call_tool("multi", json!({"parts": ["a", "b"]}));
    assert_eq!(
        multi["content"],
        json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    );
    let image = fixture.call_tool("image", json!({}));
    assert_eq!(image["content"][1]["type"], "image");
    assert_eq!(image["content"][1]["mimeType"], "image/png");
    assert_eq!(
        first_text(&fixture.call_tool("huge", json!({"bytes": 100_000}))).len(),
        100_000
    );
}

#[test]
fn a_sleeping_call_does_not_delay_others_and_can_be_cancelled() {
    let mut fixture = initialized(&[]);
    let sleeper = fixture.send_request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60_000}}),
    );
    let started = Instant::now();
    assert_eq!(
        first_text(&fixture.call_tool("echo", json!({"text": "not blocked"}))),
        "not blocked"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    fixture.notify(
        "notifications/cancelled",
        json!({"requestId": sleeper, "reason": "test"}),
    );
    assert!(fixture.stderr_until(&format!("request {sleeper} cancelled")));
    // The cancelled call sends no response: nothing arrives before this answer.
    let id = fixture.send_request(
        "tools/call",
        json!({"name": "cancellations", "arguments": {}}),
    );
    let (reply, before) = fixture.response(id);
    assert!(before.is_empty(), "unexpected messages: {before:?}");
    assert_eq!(first_text(&reply["result"]), format!("[{sleeper}]"));
}

/// Calls run on reused threads (an idle one, or a new one when none is idle): a
/// call blocked on its `elicitation/create` holds up no other call, including one
/// that arrives when the only idle thread has just been taken by another blocked
/// call.
#[test]
fn calls_blocked_on_an_elicitation_do_not_delay_others() {
    let mut fixture = initialized(&[]);
    let elicit = |fixture: &mut StdioPeer| {
        let id = fixture.send_request(
            "tools/call",
            json!({"name": "elicit", "arguments": {"message": "wait"}}),
        );
        let asked = fixture.next_message();
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(asked["id"], format!("elicit-{id}"), "{asked}");
        id
    };
    let answer = |fixture: &mut StdioPeer, id: u64| {
        fixture.send(&json!({"jsonrpc": "2.0", "id": format!("elicit-{id}"),
            "result": {"action": "decline"}}));
        let (reply, before) = fixture.response(id);
        assert!(before.is_empty(), "unexpected messages: {before:?}");
        assert_eq!(first_text(&reply["result"]), r#"{"action":"decline"}"#);
    };
    let blocked: Vec<u64> = (0..3).map(|_| elicit(&mut fixture)).collect();
    assert_eq!(
        first_text(&fixture.call_tool("echo", json!({"text": "first"}))),
        "first"
    );
    // The echo's thread and the answered call's are idle now; two more blocked
    // calls take both, and the next echo needs a thread of its own.
    answer(&mut fixture, blocked[1]);
    let later = [elicit(&mut fixture), elicit(&mut fixture)];
    assert_eq!(
        first_text(&fixture.call_tool("echo", json!({"text": "second"}))),
        "second"
    );
    for id in [blocked[0], blocked[2], later[0], later[1]] {
        answer(&mut fixture, id);
    }
}

#[test]
fn sleep_answers_after_its_delay() {
    let mut fixture = initialized(&[]);
    let started = Instant::now();
    assert_eq!(
        first_text(&fixture.call_tool("sleep", json!({"ms": 50}))),
        "slept 50"
    );
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[test]
fn announce_sleeps_says_when_each_valid_sleep_arrives() {
    let announcement = json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": SLEEP_STARTED},
    });
    let mut fixture = initialized(&["--announce-sleeps"]);
    let id = fixture.send_request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
    let (reply, before) = fixture.response(id);
    assert_eq!(first_text(&reply["result"]), "slept 1");
    assert_eq!(before, vec![announcement], "announced before the answer");
    // A call with bad arguments never starts, so it is not announced.
    let id = fixture.send_request("tools/call", json!({"name": "sleep", "arguments": {}}));
    let (reply, before) = fixture.response(id);
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert!(before.is_empty(), "unexpected messages: {before:?}");
    // Without the flag a sleep says nothing until it answers.
    let mut quiet = initialized(&[]);
    let id = quiet.send_request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
    let (_, before) = quiet.response(id);
    assert!(before.is_empty(), "unexpected messages: {before:?}");
}

#[test]
fn progress_notifications_carry_the_token() {
    let mut fixture = initialized(&[]);
    let id = fixture.send_request(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3, "interval_ms": 1}, "_meta": {"progressToken": "p"}}),
    );
    let (reply, before) = fixture.response(id);
    assert_eq!(first_text(&reply["result"]), "done 3");
    let seen: Vec<_> = before
        .iter()
        .map(|m| (m["method"].clone(), m["params"]["progress"].clone()))
        .collect();
    let expected: Vec<_> = (1..=3)
        .map(|i| (json!("notifications/progress"), json!(i)))
        .collect();
    assert_eq!(seen, expected);
    assert!(before.iter().all(|m| m["params"]["progressToken"] == "p"));
}

#[test]
fn add_tool_announces_list_changed_and_log_sends_a_message() {
    let mut fixture = initialized(&[]);
    let id = fixture.send_request(
        "tools/call",
        json!({"name": "add_tool", "arguments": {"name": "fresh"}}),
    );
    let (reply, before) = fixture.response(id);
    assert_eq!(first_text(&reply["result"]), "added fresh");
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["method"], "notifications/tools/list_changed");
    assert!(tool_names(&fixture.list_tools()).contains(&"fresh".to_owned()));
    assert_eq!(
        fixture.call_tool("add_tool", json!({"name": "fresh"}))["isError"],
        true
    );
    assert_eq!(first_text(&fixture.call_tool("fresh", json!({}))), "fresh");

    let id = fixture.send_request(
        "tools/call",
        json!({"name": "log", "arguments": {"text": "hello log"}}),
    );
    let (_, before) = fixture.response(id);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["method"], "notifications/message");
    assert_eq!(before[0]["params"]["level"], "info");
    assert_eq!(before[0]["params"]["data"], "hello log");
    assert!(fixture.stderr_until("hello log"));
}

#[test]
fn crash_exits_with_the_code() {
    let mut fixture = initialized(&[]);
    fixture.send_request(
        "tools/call",
        json!({"name": "crash", "arguments": {"code": 7}}),
    );
    assert_eq!(fixture.wait_exit().code(), Some(7));
    assert!(fixture.stderr_until("crashing with exit code 7"));
}

#[test]
fn exit_on_init_writes_stderr_and_exits() {
    let mut fixture = start(&["--exit-on-init", "3", "--stderr-lines", "2"]);
    fixture.send_request("initialize", initialize_params("2025-11-25"));
    assert_eq!(fixture.wait_exit().code(), Some(3));
    assert_eq!(fixture.stderr_line(), "fixture: stderr line 0");
    assert_eq!(fixture.stderr_line(), "fixture: stderr line 1");
    assert!(fixture.stderr_until("exiting with code 3"));
}

#[test]
fn no_init_reply_stays_silent_but_alive() {
    let mut fixture = start(&["--no-init-reply"]);
    fixture.send_request("initialize", initialize_params("2025-11-25"));
    // Still alive and answering, and the first thing it says is the ping reply.
    let ping = fixture.send_request("ping", json!({}));
    let (_, before) = fixture.response(ping);
    assert!(before.is_empty(), "{before:?}");
}

#[test]
fn garbage_precedes_every_message() {
    let mut fixture = start(&["--garbage"]);
    fixture.send_request("initialize", initialize_params("2025-11-25"));
    let garbage = fixture.next_line();
    assert!(
        serde_json::from_str::<Value>(&garbage).is_err(),
        "{garbage:?}"
    );
    assert_eq!(fixture.next_message()["id"], 1);
}

#[test]
fn start_delay_holds_back_the_first_answer() {
    let started = Instant::now();
    let mut fixture = start(&["--start-delay-ms", "200"]);
    fixture.initialize("2025-11-25");
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn closing_stdin_ends_the_server() {
    let mut fixture = initialized(&[]);
    fixture.close_stdin();
    assert!(fixture.wait_exit().success());
}

#[test]
fn bad_flags_exit_with_a_usage_error() {
    let mut fixture = start(&["--bogus"]);
    assert_eq!(fixture.wait_exit().code(), Some(2));
    assert!(fixture.stderr_line().contains("--bogus"));
}

#[test]
fn long_names_share_seventy_characters_and_overflow_when_namespaced() {
    use mcpbox_tests::fixture::{LONG_NAME_A, LONG_NAME_B};
    let shared = LONG_NAME_A
        .chars()
        .zip(LONG_NAME_B.chars())
        .take_while(|(a, b)| a == b)
        .count();
    assert!(shared >= 70, "only {shared} shared characters");
    assert!(format!("mcp__fixture__{LONG_NAME_B}").len() > 64);
    assert_ne!(LONG_NAME_A, LONG_NAME_B);
}
