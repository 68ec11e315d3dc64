//! The client as a specification: text in, text and events out, on a hand-driven clock.

use super::listing::{MIN_TTL_MS, read_tool};
use super::*;
use crate::elicitation::InputAnswer;
use serde_json::json;
use serde_json::value::RawValue;

pub(super) fn sent(c: &mut Client) -> Vec<(Value, SendMeta)> {
    c.take_outbox()
        .into_iter()
        .map(|o| (serde_json::from_str(&o.text).unwrap(), o.meta))
        .collect()
}

pub(super) fn feed(c: &mut Client, v: Value, now: u64) {
    c.handle_text(&v.to_string(), now);
}

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "demo", "version": "1.2"}})
}

/// The result of call `call`, when it is the only event.
fn only_result(events: &[ClientEvent], call: u64) -> &CallResult {
    match events {
        [
            ClientEvent::Finished(FinishedCall {
                call: c,
                outcome: Ok(r),
            }),
        ] if *c == call => r,
        _ => panic!("call {call} alone completed with a result: {events:?}"),
    }
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

/// A client through the handshake and a one-page listing of `tools`.
pub(super) fn ready(tools: &[&str]) -> Client {
    legacy_ready_from(Client::new("demo"), "2025-06-18", tools).0
}

/// `c`, set up by the test (roots, input requests, sampling), through an
/// `initialize` handshake at `version` to ready with `tools`; with the
/// `initialize` request it sent.
fn legacy_ready_from(mut c: Client, version: &str, tools: &[&str]) -> (Client, Value) {
    c.begin();
    let (init, _) = sent(&mut c).remove(0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result(version)}),
        0,
    );
    sent(&mut c);
    let list: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": list}}),
        0,
    );
    assert_eq!(c.phase(), Phase::Ready);
    c.take_events();
    (c, init)
}

#[test]
fn handshake_offers_and_negotiates() {
    let mut c = Client::new("demo");
    c.begin();
    let out = sent(&mut c);
    assert_eq!(out.len(), 1);
    let (init, meta) = &out[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["id"], 1);
    assert_eq!(init["params"]["protocolVersion"], OFFERED_VERSION);
    assert_eq!(init["params"]["clientInfo"]["name"], "mcpbox");
    assert_eq!(
        init["params"]["clientInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(meta.method.as_deref(), Some("initialize"));
    assert_eq!(meta.protocol_version, None);

    // A 2024-11-05-only server is accepted.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2024-11-05")}),
        0,
    );
    assert_eq!(c.protocol_version(), Some("2024-11-05"));
    assert_eq!(c.server_info().name.as_deref(), Some("demo"));
    assert_eq!(c.server_info().version.as_deref(), Some("1.2"));
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "notifications/initialized");
    assert!(out[0].0.get("id").is_none());
    assert_eq!(out[0].1.protocol_version.as_deref(), Some("2024-11-05"));
    assert_eq!(out[1].0["method"], "tools/list");
    assert_eq!(out[1].1.method.as_deref(), Some("tools/list"));
    assert_eq!(c.phase(), Phase::Listing);
}

#[test]
fn unsupported_versions_are_rejected_with_the_supported_list() {
    let mut c = Client::new("x");
    c.begin();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("1999-01-01")}),
        0,
    );
    assert_eq!(c.phase(), Phase::Failed);
    assert_eq!(
        c.take_events(),
        vec![ClientEvent::Failed(
            "server `x` answered protocolVersion \"1999-01-01\", which mcpbox does not support \
             (supported: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25)"
                .into()
        )]
    );
}

#[test]
fn initialize_errors_fail_the_session() {
    let mut c = Client::new("x");
    c.begin();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "nope"}}),
        0,
    );
    assert_eq!(
        c.take_events(),
        vec![ClientEvent::Failed(
            "server `x` rejected initialize: JSON-RPC error -32600: nope".into()
        )]
    );
}

#[test]
fn a_server_without_tools_capability_is_ready_with_none() {
    let mut c = Client::new("x");
    c.begin();
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-03-26", "capabilities": {}}}),
        0,
    );
    assert_eq!(c.phase(), Phase::Ready);
    assert_eq!(c.take_events(), vec![ClientEvent::Ready(vec![])]);
    let out = sent(&mut c);
    assert_eq!(out.len(), 1, "only notifications/initialized");
}

#[test]
fn follows_every_cursor() {
    let mut c = Client::new("demo");
    c.begin();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
        0,
    );
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a"), tool("b")], "nextCursor": "p2"}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["params"], json!({"cursor": "p2"}));
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("c")], "nextCursor": "p3"}}),
        0,
    );
    assert_eq!(sent(&mut c)[0].0["params"]["cursor"], "p3");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [tool("d")]}}),
        0,
    );
    assert!(sent(&mut c).is_empty());
    match &c.take_events()[..] {
        [ClientEvent::Ready(tools)] => {
            let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["a", "b", "c", "d"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_repeated_cursor_stops_the_listing() {
    let mut c = Client::new("loop");
    c.begin();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
        0,
    );
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a")], "nextCursor": "same"}}),
        0,
    );
    assert_eq!(sent(&mut c).len(), 1);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("b")], "nextCursor": "same"}}),
        0,
    );
    assert!(sent(&mut c).is_empty(), "no third request");
    let events = c.take_events();
    assert!(
        matches!(&events[0], ClientEvent::Warning(w) if w.contains("cursor \"same\" twice")),
        "{events:?}"
    );
    assert!(matches!(&events[1], ClientEvent::Ready(t) if t.len() == 2));
}

#[test]
fn tools_keep_exact_schema_text() {
    let mut c = Client::new("demo");
    c.begin();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
        0,
    );
    let page = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[
        {"name":"t","title":"T","description":"d","inputSchema":{ "type":"object", "z":1,"a":2 },
         "outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
        {"name":"u","annotations":{"title":"From annotations"}},
        {"title":"nameless"}
    ]}}"#;
    c.handle_text(page, 0);
    let events = c.take_events();
    assert!(matches!(&events[0], ClientEvent::Warning(w) if w.contains("skipped")));
    let ClientEvent::Ready(tools) = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(tools[0].input_schema, r#"{ "type":"object", "z":1,"a":2 }"#);
    assert_eq!(
        tools[0].output_schema.as_deref(),
        Some(r#"{"type":"object"}"#)
    );
    assert_eq!(
        tools[0].annotations.as_deref(),
        Some(r#"{"readOnlyHint":true}"#)
    );
    assert_eq!(tools[0].title.as_deref(), Some("T"));
    assert_eq!(tools[0].description.as_deref(), Some("d"));
    assert_eq!(tools[1].input_schema, r#"{"type":"object"}"#);
    assert_eq!(tools[1].title.as_deref(), Some("From annotations"));
}

#[test]
fn invalid_messages_are_ignored_and_counted() {
    let mut c = ready(&[]);
    c.handle_text("garbage", 0);
    c.handle_text(r#"{"jsonrpc":"2.0"}"#, 0);
    assert_eq!(c.stats().invalid_messages, 2);
    assert_eq!(c.take_events().len(), 1);
    assert!(sent(&mut c).is_empty());
}

#[test]
fn ping_is_answered_and_other_requests_are_refused() {
    let mut c = ready(&[]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 41, "method": "vendor/unknown", "params": {}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(
        out[0].0,
        json!({"jsonrpc": "2.0", "id": "p1", "result": {}})
    );
    assert_eq!(out[0].1.method, None);
    assert_eq!(
        out[1].0,
        json!({"jsonrpc": "2.0", "id": 41, "error": {"code": -32601, "message": "method not found"}})
    );
}

#[test]
fn call_results_are_mapped() {
    let mut c = ready(&["echo"]);
    c.start_call(1, "mcp__demo__echo", "echo", r#"{"text":"hi"}"#, 1000, 0);
    let out = sent(&mut c);
    let (req, meta) = &out[0];
    assert_eq!(req["method"], "tools/call");
    assert_eq!(req["params"]["name"], "echo");
    assert_eq!(req["params"]["arguments"], json!({"text": "hi"}));
    assert_eq!(req["params"]["_meta"]["progressToken"], req["id"]);
    assert_eq!(meta.name.as_deref(), Some("echo"));
    assert_eq!(meta.method.as_deref(), Some("tools/call"));
    assert_eq!(meta.protocol_version.as_deref(), Some("2025-06-18"));
    let id = req["id"].clone();
    c.handle_text(
        &format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"a"}},{{"type":"image","data":"x","mimeType":"image/png"}},{{"type":"text","text":"b"}}],"structuredContent":{{"n":1}},"isError":true}}}}"#
        ),
        0,
    );
    let events = c.take_events();
    let r = only_result(&events, 1);
    assert!(r.is_error);
    assert_eq!(r.text, "a\nb");
    assert_eq!(
        r.content,
        r#"[{"type":"text","text":"a"},{"type":"image","data":"x","mimeType":"image/png"},{"type":"text","text":"b"}]"#
    );
    assert_eq!(r.structured_content.as_deref(), Some(r#"{"n":1}"#));
}

#[test]
fn error_answers_and_malformed_results_are_protocol_errors() {
    let mut c = ready(&["echo"]);
    c.start_call(1, "mcp__demo__echo", "echo", "{}", 1000, 0);
    c.start_call(2, "mcp__demo__echo", "echo", "{}", 1000, 0);
    let ids: Vec<Value> = sent(&mut c)
        .into_iter()
        .map(|(m, _)| m["id"].clone())
        .collect();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": ids[0], "error": {"code": -32602, "message": "Unknown tool"}}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": ids[1], "result": {"content": "oops"}}),
        0,
    );
    let events = c.take_events();
    assert_eq!(
        events[0],
        ClientEvent::Finished(FinishedCall {
            call: 1,
            outcome: Err(CallError::Protocol(
                "mcp__demo__echo failed: JSON-RPC error -32602: Unknown tool".into()
            ))
        })
    );
    assert!(
        matches!(&events[1], ClientEvent::Finished(FinishedCall { call: 2, outcome: Err(CallError::Protocol(m)) }) if m.contains("malformed"))
    );
}

#[test]
fn cancel_sends_cancelled_and_completes() {
    let mut c = ready(&["slow"]);
    c.start_call(3, "mcp__demo__slow", "slow", "{}", 60_000, 0);
    let id = sent(&mut c)[0].0["id"].clone();
    assert!(c.cancel(3));
    assert!(!c.cancel(3));
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "notifications/cancelled");
    assert_eq!(out[0].0["params"]["requestId"], id);
    assert_eq!(
        c.take_events(),
        vec![ClientEvent::Finished(FinishedCall {
            call: 3,
            outcome: Err(CallError::Cancelled)
        })]
    );
    assert_eq!(c.next_deadline(), None);
}

#[test]
fn list_changed_relists_and_coalesces() {
    let mut c = ready(&["a"]);
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    feed(&mut c, changed.clone(), 0);
    let out = sent(&mut c);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0["method"], "tools/list");
    let first = out[0].0["id"].clone();
    // Two more announcements while listing: one more listing, not two.
    feed(&mut c, changed.clone(), 0);
    feed(&mut c, changed, 0);
    assert!(sent(&mut c).is_empty());
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": first, "result": {"tools": [tool("a"), tool("b")]}}),
        0,
    );
    let events = c.take_events();
    assert!(
        matches!(&events[..], [ClientEvent::ToolsChanged(t)] if t.len() == 2),
        "{events:?}"
    );
    let out = sent(&mut c);
    assert_eq!(out.len(), 1);
    let second = out[0].0["id"].clone();
    // Same list again: no change event.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": second, "result": {"tools": [tool("a"), tool("b")]}}),
        0,
    );
    assert!(c.take_events().is_empty());
    assert!(sent(&mut c).is_empty());
}

#[test]
fn log_messages_become_events() {
    let mut c = ready(&[]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "disk low"}}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "db", "data": {"rows": 3}}}),
        0,
    );
    assert_eq!(
        c.take_events(),
        vec![
            ClientEvent::Log {
                level: "warning".into(),
                message: "disk low".into()
            },
            ClientEvent::Log {
                level: "info".into(),
                message: "db: {\"rows\":3}".into()
            },
        ]
    );
}

#[test]
fn oversized_answers_fail_their_request() {
    let mut c = ready(&["big"]);
    c.start_call(4, "mcp__demo__big", "big", "{}", 60_000, 0);
    let id = sent(&mut c)[0].0["id"].clone();
    c.handle_oversized(
        &Oversized {
            size: 2000,
            cap: 1000,
            head: format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{", id).into_bytes(),
            tail: Vec::new(),
        },
        0,
    );
    assert_eq!(
        c.take_events(),
        vec![ClientEvent::Finished(FinishedCall {
            call: 4,
            outcome: Err(CallError::Protocol(
                "mcp__demo__big: the server's answer was dropped: message too large (2000 bytes > cap 1000)".into()
            ))
        })]
    );
    c.handle_oversized(
        &Oversized {
            size: 5,
            cap: 4,
            head: b"junk".to_vec(),
            tail: Vec::new(),
        },
        0,
    );
    assert!(
        matches!(&c.take_events()[..], [ClientEvent::Warning(w)] if w.contains("message too large (5 bytes > cap 4)"))
    );
}

fn discover_result(list_changed: bool) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": list_changed}},
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.0"}}
    })
}

/// The `_meta` every stateless request must carry.
fn assert_stateless_meta(request: &Value) {
    let meta = &request["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "{request}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}}),
        "{request}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"], "mcpbox",
        "{request}"
    );
}

/// A stateless client through discovery and a one-page listing of `tools`.
fn stateless_ready(tools: &[&str], list_changed: bool) -> Client {
    stateless_ready_from(Client::new("modern"), tools, list_changed)
}

fn stateless_ready_from(mut c: Client, tools: &[&str], list_changed: bool) -> Client {
    c.detect(None, 0);
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(list_changed)}),
        0,
    );
    sent(&mut c);
    let list: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": list, "ttlMs": 0, "cacheScope": "private"}}),
        0,
    );
    assert_eq!(c.phase(), Phase::Ready);
    c.take_events();
    c
}

#[test]
fn discovery_finds_the_stateless_era() {
    let mut c = Client::new("modern");
    c.detect(None, 0);
    assert_eq!(c.phase(), Phase::Discovering);
    let out = sent(&mut c);
    assert_eq!(out.len(), 1);
    let (probe, meta) = &out[0];
    assert_eq!(probe["method"], "server/discover");
    assert_stateless_meta(probe);
    assert_eq!(meta.method.as_deref(), Some("server/discover"));
    assert_eq!(
        meta.protocol_version.as_deref(),
        Some(STATELESS_VERSION),
        "sets MCP-Protocol-Version"
    );

    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(true)}),
        0,
    );
    assert_eq!(c.era(), Era::Stateless);
    assert_eq!(c.protocol_version(), Some("2026-07-28"));
    assert_eq!(
        c.server_info().name.as_deref(),
        Some("modern"),
        "from the result's _meta"
    );
    let out = sent(&mut c);
    assert_eq!(
        out.len(),
        1,
        "no initialize, no notifications/initialized: {out:?}"
    );
    assert_eq!(out[0].0["method"], "tools/list");
    assert_stateless_meta(&out[0].0);

    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": [tool("a")], "nextCursor": "p2", "ttlMs": 0, "cacheScope": "private"}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["params"]["cursor"], "p2");
    assert_stateless_meta(&out[0].0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "tools": [tool("b")], "ttlMs": 0, "cacheScope": "private"}}),
        0,
    );
    assert!(matches!(&c.take_events()[..], [ClientEvent::Ready(t)] if t.len() == 2));
    // Tool-list changes come through a subscription.
    let out = sent(&mut c);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0["method"], "subscriptions/listen");
    assert_eq!(
        out[0].0["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_stateless_meta(&out[0].0);
    assert_eq!(c.next_deadline(), None, "a subscription has no deadline");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": {"toolsListChanged": true}}}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 4}}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "tools/list", "a change re-lists");

    // Calls carry the progress token and the era's _meta.
    let mut c = stateless_ready(&["echo"], false);
    c.start_call(1, "mcp__modern__echo", "echo", r#"{"text":"hi"}"#, 1000, 0);
    let out = sent(&mut c);
    let (call, meta) = &out[0];
    assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
    assert_stateless_meta(call);
    assert_eq!(meta.name.as_deref(), Some("echo"), "for Mcp-Name");
    assert_eq!(meta.protocol_version.as_deref(), Some("2026-07-28"));
}

#[test]
fn legacy_servers_fall_back_to_initialize() {
    let not_found = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}});
    // Method not found, an empty result (a server answering anything with {}),
    // and versions mcpbox does not speak all mean the legacy handshake.
    for answer in [
        not_found,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2099-01-01"]}}),
    ] {
        let mut c = Client::new("old");
        c.detect(None, 0);
        sent(&mut c);
        feed(&mut c, answer.clone(), 0);
        assert_eq!(c.phase(), Phase::Initializing, "{answer}");
        assert_eq!(c.era(), Era::Legacy);
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "initialize");
        assert_eq!(
            out[0].1.protocol_version, None,
            "no MCP-Protocol-Version before negotiation"
        );
        assert!(out[0].0["params"].get("_meta").is_none());
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": init_result("2025-11-25")}),
            0,
        );
        let out = sent(&mut c);
        assert_eq!(out[0].0["method"], "notifications/initialized");
        assert_eq!(out[1].0["method"], "tools/list");
        assert!(
            out[1].0.get("params").is_none(),
            "legacy requests carry no _meta"
        );
        assert!(
            c.take_events().is_empty(),
            "falling back is not worth a warning"
        );
    }
}

#[test]
fn an_unsupported_version_error_is_retried_once() {
    let unsupported = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "x"}}})
    };
    let mut c = Client::new("picky");
    c.detect(None, 0);
    sent(&mut c);
    feed(&mut c, unsupported(1), 0);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "server/discover", "asked again");
    assert_stateless_meta(&out[0].0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": discover_result(false)}),
        0,
    );
    assert_eq!(c.era(), Era::Stateless);
    // Rejected twice: the legacy handshake.
    let mut c = Client::new("picky");
    c.detect(None, 0);
    feed(&mut c, unsupported(1), 0);
    feed(&mut c, unsupported(2), 0);
    let methods: Vec<Value> = sent(&mut c)
        .into_iter()
        .map(|(m, _)| m["method"].clone())
        .collect();
    assert_eq!(
        methods,
        ["server/discover", "server/discover", "initialize"]
    );
}

#[test]
fn a_silent_probe_gives_way_to_initialize() {
    let mut c = Client::new("quiet");
    c.detect(None, 100);
    sent(&mut c);
    assert_eq!(c.next_deadline(), Some(100 + PROBE_TIMEOUT_MS));
    c.tick(100 + PROBE_TIMEOUT_MS - 1);
    assert!(sent(&mut c).is_empty());
    c.tick(100 + PROBE_TIMEOUT_MS);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "initialize");
    assert_eq!(c.era_to_remember(), Era::Legacy);
    // A late answer to the probe changes nothing in this session, quietly, but
    // it shows a server that was slow to start, not a legacy one: the next
    // connection probes again instead of being told the server is legacy.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(false)}),
        6000,
    );
    assert_eq!(c.era(), Era::Legacy);
    assert_eq!(c.phase(), Phase::Initializing);
    assert_eq!(c.stats().unknown_responses, 0);
    assert!(c.take_events().is_empty());
    assert_eq!(c.era_to_remember(), Era::Stateless);
}

#[test]
fn a_late_refusal_of_the_probe_leaves_the_server_legacy() {
    let mut c = Client::new("quiet");
    c.detect(None, 0);
    sent(&mut c);
    c.tick(PROBE_TIMEOUT_MS);
    assert_eq!(sent(&mut c)[0].0["method"], "initialize");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}),
        PROBE_TIMEOUT_MS + 1,
    );
    assert_eq!(c.phase(), Phase::Initializing);
    assert!(c.take_events().is_empty());
    assert_eq!(c.era_to_remember(), Era::Legacy);
}

#[test]
fn a_slow_modern_server_that_refuses_initialize_is_probed_again() {
    // Under load a 2026-07-28 server answers the probe late, and then refuses the
    // fallback initialize on that connection: a second probe finds it.
    let mut c = Client::new("slow");
    c.detect(None, 0);
    sent(&mut c);
    c.tick(PROBE_TIMEOUT_MS);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "initialize");
    let id = out[0].0["id"].clone();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "connection is serving the 2026-07-28 protocol"}}),
        PROBE_TIMEOUT_MS + 10,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "server/discover");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": out[0].0["id"], "result": discover_result(false)}),
        PROBE_TIMEOUT_MS + 20,
    );
    assert_eq!(c.era(), Era::Stateless);
    assert_eq!(c.phase(), Phase::Listing);
}

#[test]
fn a_legacy_hint_skips_the_probe_but_recovers_when_stale() {
    let mut c = Client::new("known");
    c.detect(Some(Era::Legacy), 0);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "initialize");
    // The server moved on to 2026-07-28 and refuses initialize: discover instead.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no initialize"}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "server/discover");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": discover_result(false)}),
        0,
    );
    assert_eq!(c.era(), Era::Stateless);
}

#[test]
fn a_remembered_legacy_era_holds_for_a_while_then_is_probed_again() {
    let now = 1_767_225_600_000;
    let stateless = Era::Stateless.memo(Some(now));
    assert_eq!(Era::from_memo(&stateless, Some(now)), Some(Era::Stateless));
    assert_eq!(Era::from_memo(&stateless, None), Some(Era::Stateless));

    let legacy = Era::Legacy.memo(Some(now));
    assert_eq!(legacy, format!("legacy@{now}"));
    assert_eq!(Era::from_memo(&legacy, Some(now)), Some(Era::Legacy));
    let later = now + LEGACY_KEPT_MS - 1;
    assert_eq!(Era::from_memo(&legacy, Some(later)), Some(Era::Legacy));
    assert_eq!(Era::from_memo(&legacy, Some(later + 1)), None);
    // A date far in the future (a clock set back since) does not hold for good.
    assert_eq!(Era::from_memo(&legacy, Some(now - LEGACY_KEPT_MS)), None);

    // Undated, as memos were written before they carried a date: probed again,
    // unless the platform has no wall clock to date them with.
    assert_eq!(Era::Legacy.memo(None), "legacy");
    assert_eq!(Era::from_memo("legacy", Some(now)), None);
    assert_eq!(Era::from_memo("legacy", None), Some(Era::Legacy));
    for junk in [
        "2025-11-25",
        "legacy@",
        "legacy@x",
        "legacy@-1",
        "legacyx",
        "",
    ] {
        assert_eq!(Era::from_memo(junk, Some(now)), None, "{junk}");
    }
}

#[test]
fn input_required_results_are_clear_tool_errors() {
    let mut c = stateless_ready(&["book"], false);
    c.start_call(7, "mcp__modern__book", "book", "{}", 1000, 0);
    let id = sent(&mut c)[0].0["id"].clone();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
            "requestState": "opaque"}}),
        0,
    );
    let events = c.take_events();
    let r = only_result(&events, 7);
    assert!(r.is_error);
    assert!(
        r.text.contains("asked for input") && r.text.contains("not enabled"),
        "{r:?}"
    );
    let content: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(content[0]["text"], r.text.as_str());
    // An explicit "complete" is an ordinary result; anything else is not
    // understood, and a task handle (the tasks extension) must name its task.
    c.start_call(8, "mcp__modern__book", "book", "{}", 1000, 0);
    c.start_call(9, "mcp__modern__book", "book", "{}", 1000, 0);
    let ids: Vec<Value> = sent(&mut c)
        .into_iter()
        .map(|(m, _)| m["id"].clone())
        .collect();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": ids[0], "result": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": ids[1], "result": {"resultType": "tusk", "content": []}}),
        0,
    );
    let events = c.take_events();
    assert!(
        matches!(&events[0], ClientEvent::Finished(FinishedCall { call: 8, outcome: Ok(r) }) if r.text == "ok" && !r.is_error)
    );
    assert!(
        matches!(&events[1], ClientEvent::Finished(FinishedCall { call: 9, outcome: Err(CallError::Protocol(m)) }) if m.contains("unknown resultType \"tusk\"")),
        "{events:?}"
    );
}

#[test]
fn tools_with_invalid_param_headers_are_skipped() {
    let with =
        |props: Value| json!({"name": "t", "inputSchema": {"type": "object", "properties": props}});
    let ok = with(
        json!({"region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"}, "b": {"type": "boolean", "x-mcp-header": "x_B-1"},
        "plain": {"type": "number"}}),
    );
    assert!(read_tool(&RawValue::from_string(ok.to_string()).unwrap()).is_ok());
    for (props, why) in [
        (
            json!({"v": {"type": "string", "x-mcp-header": ""}}),
            "empty",
        ),
        (
            json!({"v": {"type": "object", "x-mcp-header": "V"}}),
            "not a string, integer or boolean",
        ),
        (
            json!({"v": {"type": "array", "x-mcp-header": "V"}}),
            "not a string, integer or boolean",
        ),
        (
            json!({"v": {"type": "null", "x-mcp-header": "V"}}),
            "not a string, integer or boolean",
        ),
        (
            json!({"v": {"type": "string", "x-mcp-header": "My Header"}}),
            "not a header name",
        ),
        (
            json!({"v": {"type": "string", "x-mcp-header": "A:B"}}),
            "not a header name",
        ),
        (
            json!({"v": {"type": "string", "x-mcp-header": "Régión"}}),
            "not a header name",
        ),
        (
            json!({"v": {"type": "string", "x-mcp-header": "A\u{1}"}}),
            "not a header name",
        ),
        (
            json!({"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}),
            "more than one",
        ),
    ] {
        let e = read_tool(&RawValue::from_string(with(props.clone()).to_string()).unwrap())
            .unwrap_err();
        assert!(
            e.contains(why) && e.contains("x-mcp-header"),
            "{props}: {e}"
        );
    }
}

/// The key of the one `InputRequested` event in `events`, checked against `call`.
fn input_key(events: &[ClientEvent], call: Option<u64>) -> u64 {
    let asked: Vec<&InputRequest> = events
        .iter()
        .filter_map(|e| match e {
            ClientEvent::InputRequested(r) => Some(r),
            _ => None,
        })
        .collect();
    let [request] = asked[..] else {
        panic!("{events:?}")
    };
    assert_eq!(request.call, call, "{request:?}");
    request.id
}

fn elicit_params() -> Value {
    json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"}, "age": {"type": "integer"}}}})
}

#[test]
fn legacy_elicitation_goes_to_the_embedder_and_back() {
    let mut c = Client::new("demo");
    c.enable_input_requests();
    let (mut c, init) = legacy_ready_from(c, "2025-11-25", &["ask"]);
    assert_eq!(
        init["params"]["capabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    c.start_call(5, "mcp__demo__ask", "ask", "{}", 10_000, 0);
    let call_id = sent(&mut c)[0].0["id"].clone();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": elicit_params()}),
        10,
    );
    let events = c.take_events();
    let key = input_key(&events, Some(5));
    let ClientEvent::InputRequested(request) = &events[0] else {
        unreachable!()
    };
    assert_eq!(request.tool.as_deref(), Some("mcp__demo__ask"));
    assert_eq!(request.message, "Who are you?");
    assert_eq!(request.server, "demo");
    // A wrong answer is refused and the request stays open.
    let e = c
        .answer_input(key, &InputAnswer::Accept(r#"{"age": "x"}"#.into()))
        .unwrap_err();
    assert!(e.contains("/age"), "{e}");
    assert!(sent(&mut c).is_empty());
    c.answer_input(key, &InputAnswer::Accept(r#"{"age": 7}"#.into()))
        .unwrap();
    let out = sent(&mut c);
    assert_eq!(
        out[0].0,
        json!({"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept",
            "content": {"name": "John Doe", "age": 7}}})
    );
    assert!(
        c.answer_input(key, &InputAnswer::Decline)
            .unwrap_err()
            .contains("no input request")
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": call_id, "result": {"content": []}}),
        20,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Finished(FinishedCall {
            call: 5,
            outcome: Ok(_)
        })]
    ));
}

#[test]
fn legacy_elicitation_is_refused_unless_enabled_and_withdrawn_with_its_call() {
    let mut c = ready(&["ask"]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": elicit_params()}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["error"]["code"], -32601);

    let mut c = Client::new("demo");
    c.enable_input_requests();
    let (mut c, _) = legacy_ready_from(c, "2025-11-25", &["ask"]);
    c.start_call(1, "mcp__demo__ask", "ask", "{}", 1_000, 0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": elicit_params()}),
        0,
    );
    let key = input_key(&c.take_events(), Some(1));
    sent(&mut c);
    // Nobody answers: the call times out and its request is withdrawn, the
    // server told `cancel` so it stops waiting too.
    c.tick(1_000);
    let events = c.take_events();
    assert!(
        events.contains(&ClientEvent::InputWithdrawn(key)),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, ClientEvent::Finished(FinishedCall { call: 1, outcome: Err(CallError::Timeout(m)) }) if m.contains("input request was not answered"))),
        "{events:?}"
    );
    let out = sent(&mut c);
    assert!(
        out.iter()
            .any(|(m, _)| m["id"] == "e" && m["result"]["action"] == "cancel"),
        "{out:?}"
    );
    assert!(
        out.iter()
            .any(|(m, _)| m["method"] == "notifications/cancelled")
    );
    // A URL-mode request the embedder did not enable is refused with the reason.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "u", "method": "elicitation/create", "params": {"mode": "url", "url": "https://x", "message": "go"}}),
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["error"]["code"], -32602);
    assert!(
        out[0].0["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not enable")
    );
}

#[test]
fn input_required_is_retried_with_the_answers_and_the_exact_state() {
    let mut c = Client::new("modern");
    c.enable_input_requests();
    let mut c = stateless_ready_from(c, &["book"], false);
    c.start_call(7, "mcp__modern__book", "book", r#"{"n":1}"#, 10_000, 0);
    let (first, _) = sent(&mut c).remove(0);
    assert_eq!(
        first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    let state = json!("{\"nonce\":\"x y\"}");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": first["id"], "result": {"resultType": "input_required",
            "inputRequests": {"a": {"method": "elicitation/create", "params": elicit_params()},
                              "b": {"method": "elicitation/create", "params": elicit_params()}},
            "requestState": state}}),
        5,
    );
    let events = c.take_events();
    let keys: Vec<u64> = events
        .iter()
        .map(|e| match e {
            ClientEvent::InputRequested(r) if r.call == Some(7) => r.id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys.len(), 2);
    assert_eq!(c.pending_calls(), 1);
    assert!(c.calls_in_flight());
    c.answer_input(keys[0], &InputAnswer::Decline).unwrap();
    assert!(sent(&mut c).is_empty(), "waits for every answer");
    c.answer_input(keys[1], &InputAnswer::Accept("{}".into()))
        .unwrap();
    let (retry, meta) = sent(&mut c).remove(0);
    assert_ne!(retry["id"], first["id"]);
    assert_eq!(meta.method.as_deref(), Some("tools/call"));
    assert_eq!(retry["params"]["name"], "book");
    assert_eq!(retry["params"]["arguments"], json!({"n": 1}));
    assert_eq!(retry["params"]["requestState"], state);
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"a": {"action": "decline"}, "b": {"action": "accept", "content": {"name": "John Doe"}}})
    );
    // A second round without requestState: the retry carries none.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": retry["id"], "result": {"resultType": "input_required",
            "inputRequests": {"c": {"method": "elicitation/create", "params": elicit_params()}}}}),
        6,
    );
    let key = input_key(&c.take_events(), Some(7));
    c.answer_input(key, &InputAnswer::Cancel).unwrap();
    let (again, _) = sent(&mut c).remove(0);
    assert!(again["params"].get("requestState").is_none(), "{again}");
    assert_eq!(
        again["params"]["inputResponses"],
        json!({"c": {"action": "cancel"}})
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": again["id"], "result": {"content": [{"type": "text", "text": "booked"}]}}),
        7,
    );
    assert!(
        matches!(&c.take_events()[..], [ClientEvent::Finished(FinishedCall { call: 7, outcome: Ok(r) })] if r.text == "booked")
    );
}

#[test]
fn a_call_waiting_for_input_times_out_or_is_cancelled_and_withdraws_it() {
    let mut c = Client::new("modern");
    c.enable_input_requests();
    let mut c = stateless_ready_from(c, &["book"], false);
    let ask = |c: &mut Client, call: u64| {
        c.start_call(call, "mcp__modern__book", "book", "{}", 1_000, 0);
        let (m, _) = sent(c).remove(0);
        feed(
            c,
            json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "input_required",
                "inputRequests": {"a": {"method": "elicitation/create", "params": elicit_params()}}}}),
            0,
        );
        input_key(&c.take_events(), Some(call))
    };
    let k1 = ask(&mut c, 1);
    let k2 = ask(&mut c, 2);
    assert_eq!(c.next_deadline(), Some(1_000));
    assert!(c.cancel(2));
    assert_eq!(
        c.take_events(),
        vec![
            ClientEvent::InputWithdrawn(k2),
            ClientEvent::Finished(FinishedCall {
                call: 2,
                outcome: Err(CallError::Cancelled)
            })
        ]
    );
    assert!(
        sent(&mut c).is_empty(),
        "nothing is in flight on the server to cancel"
    );
    c.tick(1_000);
    let events = c.take_events();
    assert_eq!(events[0], ClientEvent::InputWithdrawn(k1));
    assert!(
        matches!(&events[1], ClientEvent::Finished(FinishedCall { call: 1, outcome: Err(CallError::Timeout(m)) }) if m.contains("waiting for an answer")),
        "{events:?}"
    );
    assert!(c.answer_input(k1, &InputAnswer::Decline).is_err());
    // Input mcpbox cannot give ends the call with the reason.
    c.start_call(3, "mcp__modern__book", "book", "{}", 1_000, 0);
    let (m, _) = sent(&mut c).remove(0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}}}}),
        0,
    );
    let events = c.take_events();
    assert!(
        matches!(&events[..], [ClientEvent::Finished(FinishedCall { call: 3, outcome: Ok(r) })] if r.is_error && r.text.contains("sampling/createMessage")),
        "{events:?}"
    );
}

#[test]
fn annotated_arguments_go_to_the_host_as_param_headers() {
    let mut c = Client::new("demo");
    c.begin();
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
        0,
    );
    sent(&mut c);
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"},
        "b": {"type": "boolean", "x-mcp-header": "B"},
        "gone": {"type": "boolean", "x-mcp-header": "Gone"},
        "nil": {"type": "string", "x-mcp-header": "Nil"},
        "plain": {"type": "string"}}});
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "t", "inputSchema": schema}]}}),
        0,
    );
    c.start_call(
        1,
        "mcp__demo__t",
        "t",
        r#"{"region":" Zürich ","n":42,"b":false,"nil":null,"plain":"p"}"#,
        1_000,
        0,
    );
    let out = sent(&mut c);
    let pairs: Vec<(&str, &str)> = out[0]
        .1
        .param_headers
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    // Literal text: the host encodes (here: base64 for the spaces and the ü).
    assert_eq!(pairs, [("B", "false"), ("N", "42"), ("Region", " Zürich ")]);
    // Other messages carry none.
    assert!(
        out.iter()
            .all(|(m, meta)| m["method"] == "tools/call" || meta.param_headers.is_empty())
    );
}

#[test]
fn a_ttl_hint_refreshes_the_list_when_nothing_subscribes() {
    let mut c = Client::new("cached");
    c.detect(None, 0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": discover_result(false)}),
        0,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": [tool("a")], "ttlMs": 60000, "cacheScope": "public"}}),
        500,
    );
    sent(&mut c);
    c.take_events();
    assert_eq!(c.next_deadline(), Some(60_500));
    c.tick(60_499);
    assert!(sent(&mut c).is_empty());
    c.tick(60_500);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "tools/list");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": out[0].0["id"], "result": {"resultType": "complete", "tools": [tool("a"), tool("b")], "ttlMs": 10}}),
        61_000,
    );
    assert!(matches!(&c.take_events()[..], [ClientEvent::ToolsChanged(t)] if t.len() == 2));
    assert_eq!(
        c.next_deadline(),
        Some(61_000 + MIN_TTL_MS),
        "never more often than once a second"
    );
}

/// A content block deeper than 128 levels or holding `1e999` does not make the
/// result "malformed" (as it did when the content list was read into
/// `serde_json::Value`s to find the text blocks): the text blocks are found
/// without building the others, and the content passes through as sent.
#[test]
fn content_of_any_depth_passes_through_with_its_text_found() {
    let mut c = ready(&["echo"]);
    c.start_call(1, "mcp__demo__echo", "echo", "{}", 1000, 0);
    let id = sent(&mut c)[0].0["id"].clone();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let content = format!(
        r#"[{{"type":"text","text":"a\u00e9"}},{{"type":"resource","resource":{{"uri":"x:y","deep":{deep},"n":1e999}}}},{{"type":"text","text":"b","_meta":{{"deep":{deep}}}}},"not a block",{{"type":{deep}}}]"#
    );
    c.handle_text(
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":{content}}}}}"#),
        0,
    );
    let events = c.take_events();
    let [
        ClientEvent::Finished(FinishedCall {
            call: 1,
            outcome: Ok(r),
        }),
    ] = &events[..]
    else {
        panic!(
            "{}",
            format!("{events:?}").chars().take(300).collect::<String>()
        )
    };
    assert_eq!(r.text, "aé\nb");
    assert!(
        r.content == content,
        "the content list is the server's text"
    );
}

/// Log `data` that a `serde_json::Value` cannot hold (too deep, a number beyond
/// f64) is kept as written, not read as nothing (an empty `info` line).
#[test]
fn log_data_of_any_depth_is_kept_as_written() {
    let mut c = ready(&["echo"]);
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    c.handle_text(
        &format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"error","logger":"db","data":{{"n":1e999,"d":{deep}}}}}}}"#
        ),
        0,
    );
    let events = c.take_events();
    assert_eq!(
        events,
        [ClientEvent::Log {
            level: "error".into(),
            message: format!(r#"db: {{"n":1e999,"d":{deep}}}"#),
        }]
    );
}

fn roots(paths: &[&str]) -> Vec<crate::roots::Root> {
    paths
        .iter()
        .map(|p| crate::roots::Root::new(p, None).unwrap())
        .collect()
}

#[test]
fn legacy_roots_are_declared_listed_and_announced_when_they_change() {
    let mut c = Client::new("fs");
    c.set_initial_roots(roots(&["/work/a"]));
    c.begin();
    let (init, _) = sent(&mut c).remove(0);
    assert_eq!(
        init["params"]["capabilities"],
        json!({"roots": {"listChanged": true}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": init_result("2025-11-25")}),
        0,
    );
    sent(&mut c);
    // The filesystem server asks right after `notifications/initialized`.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"}),
        0,
    );
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": [{"uri": "file:///work/a"}]}})
    );
    // The same roots again: nothing to say.
    assert!(!c.set_roots(roots(&["/work/a"])));
    assert!(sent(&mut c).is_empty());
    // New roots: announced, then listed on request.
    assert!(!c.set_roots(roots(&["/work/b", "/work/c"])));
    let (note, _) = sent(&mut c).remove(0);
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "r2", "method": "roots/list", "params": {}}),
        0,
    );
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(
        answer["result"],
        json!({"roots": [{"uri": "file:///work/b"}, {"uri": "file:///work/c"}]})
    );
    // None left: still declared for this session, so the list is empty.
    assert!(!c.set_roots(Vec::new()));
    assert_eq!(sent(&mut c).len(), 1);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "method": "roots/list"}),
        0,
    );
    assert_eq!(sent(&mut c)[0].0["result"], json!({"roots": []}));
}

#[test]
fn a_legacy_server_without_roots_refuses_roots_list_and_needs_a_new_session_for_them() {
    let mut c = ready(&["t"]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 4, "method": "roots/list"}),
        0,
    );
    assert_eq!(sent(&mut c)[0].0["error"]["code"], -32601);
    assert!(!c.set_roots(Vec::new()), "nothing to offer: no new session");
    assert!(
        c.set_roots(roots(&["/x"])),
        "the capability was not declared in initialize"
    );
    assert!(
        sent(&mut c).is_empty(),
        "nothing is sent for undeclared roots"
    );
}

#[test]
fn a_stateless_roots_request_is_answered_without_asking_anyone() {
    let mut c = Client::new("modern");
    c.set_initial_roots(roots(&["/srv/data"]));
    let mut c = stateless_ready_from(c, &["scan"], false);
    c.start_call(7, "mcp__modern__scan", "scan", "{}", 10_000, 0);
    let (first, _) = sent(&mut c).remove(0);
    assert_eq!(
        first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"roots": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": first["id"], "result": {"resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list"}}, "requestState": "s1"}}),
        1,
    );
    assert!(c.take_events().is_empty(), "no one is asked");
    let (retry, _) = sent(&mut c).remove(0);
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"r": {"roots": [{"uri": "file:///srv/data"}]}})
    );
    assert_eq!(retry["params"]["requestState"], "s1");
    // Roots and elicitation in one round: the roots answer waits with the rest.
    c.enable_input_requests();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": retry["id"], "result": {"resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list"},
                              "e": {"method": "elicitation/create", "params": elicit_params()}}}}),
        2,
    );
    let key = input_key(&c.take_events(), Some(7));
    assert!(sent(&mut c).is_empty());
    c.answer_input(key, &InputAnswer::Cancel).unwrap();
    let (again, _) = sent(&mut c).remove(0);
    assert_eq!(
        again["params"]["inputResponses"],
        json!({"r": {"roots": [{"uri": "file:///srv/data"}]}, "e": {"action": "cancel"}})
    );
    // Changing roots sends nothing (2026-07-28 has no such notification) and
    // needs no new session; the next request declares what there is.
    assert!(!c.set_roots(Vec::new()));
    assert!(sent(&mut c).is_empty());
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": again["id"], "result": {"resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list"}}}}),
        3,
    );
    let events = c.take_events();
    let r = only_result(&events, 7);
    assert!(
        r.is_error && r.text.contains("no roots are declared"),
        "{r:?}"
    );
}

fn sampling_params() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
        "maxTokens": 50, "systemPrompt": "be brief",
        "tools": [{"name": "calc", "inputSchema": {"type": "object"}}], "toolChoice": {"mode": "auto"}})
}

fn sampling_key(events: &[ClientEvent], call: Option<u64>) -> (u64, Value) {
    match events {
        [ClientEvent::InputRequested(r)] if r.call == call && r.sampling.is_some() => (
            r.id,
            serde_json::from_str(r.sampling.as_deref().unwrap()).unwrap(),
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn legacy_sampling_goes_to_the_embedder_and_back() {
    let mut c = Client::new("demo");
    c.enable_sampling();
    let (mut c, init) = legacy_ready_from(c, "2025-11-25", &["ask"]);
    assert_eq!(
        init["params"]["capabilities"],
        json!({"sampling": {"tools": {}}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    c.start_call(7, "mcp__demo__ask", "ask", "{}", 10_000, 0);
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": sampling_params()}),
        1,
    );
    let events = c.take_events();
    let (key, params) = sampling_key(&events, Some(7));
    assert_eq!(
        params,
        sampling_params(),
        "the params as the server sent them"
    );
    let ClientEvent::InputRequested(r) = &events[0] else {
        unreachable!()
    };
    assert!(
        r.message.contains("1 message, at most 50 tokens, 1 tool"),
        "{r:?}"
    );
    // A malformed answer is refused and the request stays open.
    let e = c
        .answer_input(
            key,
            &InputAnswer::Accept(r#"{"content": {"type": "text", "text": "4"}}"#.into()),
        )
        .unwrap_err();
    assert!(e.contains("`model`"), "{e}");
    assert!(sent(&mut c).is_empty());
    c.answer_input(
        key,
        &InputAnswer::Accept(r#"{"content": {"type": "text", "text": "4"}, "model": "m1"}"#.into()),
    )
    .unwrap();
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": "s1", "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m1"}})
    );
    // Declined: the error a rejection gets.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage", "params": sampling_params()}),
        2,
    );
    let (key, _) = sampling_key(&c.take_events(), Some(7));
    c.answer_input(key, &InputAnswer::Decline).unwrap();
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(answer["error"]["code"], -1);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("User rejected sampling request")
    );
    // Malformed requests are refused with the reason.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "s3", "method": "sampling/createMessage", "params": {"messages": []}}),
        3,
    );
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(answer["error"]["code"], -32602);
    assert!(c.take_events().is_empty());
    // The call's timeout withdraws a request still waiting; the server hears so.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": "s4", "method": "sampling/createMessage", "params": sampling_params()}),
        4,
    );
    let (key, _) = sampling_key(&c.take_events(), Some(7));
    c.tick(10_000);
    let out = sent(&mut c);
    let answer = out
        .iter()
        .find(|(m, _)| m["id"] == "s4")
        .expect("answered")
        .0
        .clone();
    assert_eq!(answer["error"]["code"], -1, "{answer}");
    let events = c.take_events();
    assert!(
        events.contains(&ClientEvent::InputWithdrawn(key)),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, ClientEvent::Finished(FinishedCall { call: 7, outcome: Err(CallError::Timeout(m)) }) if m.contains("not answered in time"))), "{events:?}");
}

#[test]
fn sampling_is_refused_naming_the_opt_in_and_an_unattached_one_times_out() {
    let mut c = ready(&["t"]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": sampling_params()}),
        0,
    );
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(answer["error"]["code"], -32601);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Options::sampling") && message.contains("`sampling: true`"),
        "{message}"
    );

    // Enabled, with no call in flight: it waits 60 s, then the server is told
    // nobody answered.
    let mut c = Client::new("demo");
    c.enable_sampling();
    let (mut c, _) = legacy_ready_from(c, "2025-11-25", &[]);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": sampling_params()}),
        1_000,
    );
    let (key, _) = sampling_key(&c.take_events(), None);
    assert_eq!(c.next_deadline(), Some(61_000));
    c.tick(60_999);
    assert!(sent(&mut c).is_empty());
    c.tick(61_000);
    let (answer, _) = sent(&mut c).remove(0);
    assert_eq!(answer["id"], 6);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody answered the sampling request within 60s"),
        "{answer}"
    );
    let events = c.take_events();
    assert!(
        events.contains(&ClientEvent::InputWithdrawn(key)),
        "{events:?}"
    );
    assert!(c.answer_input(key, &InputAnswer::Decline).is_err());
}

#[test]
fn stateless_sampling_is_answered_in_the_retry_or_ends_the_call() {
    let mut c = Client::new("modern");
    c.enable_sampling();
    let mut c = stateless_ready_from(c, &["ask"], false);
    c.start_call(7, "mcp__modern__ask", "ask", "{}", 10_000, 0);
    let (first, _) = sent(&mut c).remove(0);
    assert_eq!(
        first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"sampling": {"tools": {}}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": first["id"], "result": {"resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": sampling_params()}},
            "requestState": "st"}}),
        1,
    );
    let (key, params) = sampling_key(&c.take_events(), Some(7));
    assert_eq!(params["tools"][0]["name"], "calc");
    let tool_use = json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
        "content": [{"type": "tool_use", "id": "u1", "name": "calc", "input": {"x": 2}}]});
    c.answer_input(key, &InputAnswer::Accept(tool_use.to_string()))
        .unwrap();
    let (retry, _) = sent(&mut c).remove(0);
    assert_eq!(retry["params"]["inputResponses"], json!({"s": tool_use}));
    assert_eq!(retry["params"]["requestState"], "st");
    // Declined: nothing is sent again and the call ends saying so.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": retry["id"], "result": {"resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": sampling_params()}}}}),
        2,
    );
    let (key, _) = sampling_key(&c.take_events(), Some(7));
    c.answer_input(key, &InputAnswer::Decline).unwrap();
    assert!(sent(&mut c).is_empty());
    let events = c.take_events();
    let r = only_result(&events, 7);
    assert!(
        r.is_error && r.text.contains("the embedder declined it"),
        "{r:?}"
    );

    // Not enabled: a tool error naming the opt-in.
    let mut c = stateless_ready(&["ask"], false);
    c.start_call(8, "mcp__modern__ask", "ask", "{}", 10_000, 0);
    let (first, _) = sent(&mut c).remove(0);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": first["id"], "result": {"resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": sampling_params()}}}}),
        1,
    );
    let events = c.take_events();
    let r = only_result(&events, 8);
    assert!(
        r.is_error
            && r.text.contains("sampling is not enabled")
            && r.text.contains("Options::sampling"),
        "{r:?}"
    );
}

/// Capabilities with everything subscriptions need.
fn change_capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {}
    })
}

/// A 2025 client whose server offers resource subscriptions and list changes.
fn legacy_subscribable(c: Client) -> Client {
    let mut c = c;
    c.begin();
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": change_capabilities()}}),
        0,
    );
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("a")]}}),
        0,
    );
    assert_eq!(c.phase(), Phase::Ready);
    c.take_events();
    c
}

#[test]
fn legacy_subscriptions_are_requests_and_changes_are_events() {
    let mut c = legacy_subscribable(Client::new("subs"));
    assert!(sent(&mut c).is_empty(), "nothing to subscribe again");
    let subscribe = Request::Subscribe {
        uri: "test://a".into(),
    };
    assert!(c.offers().allow(&subscribe));
    c.start_request(7, subscribe, 1000, 0);
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "resources/subscribe");
    assert_eq!(out[0].0["params"], json!({"uri": "test://a"}));
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": out[0].0["id"], "result": {}}),
        1,
    );
    only_result(&c.take_events(), 7);
    assert!(c.subscriptions().contains("test://a"));

    for (method, params) in [
        (
            "notifications/resources/updated",
            json!({"uri": "test://a"}),
        ),
        ("notifications/resources/list_changed", json!({})),
        ("notifications/prompts/list_changed", json!({})),
    ] {
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "method": method, "params": params}),
            2,
        );
    }
    assert_eq!(
        c.take_events(),
        vec![
            ClientEvent::ResourceUpdated("test://a".into()),
            ClientEvent::ResourcesChanged,
            ClientEvent::PromptsChanged
        ]
    );

    c.start_request(
        8,
        Request::Unsubscribe {
            uri: "test://a".into(),
        },
        1000,
        3,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "resources/unsubscribe");
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": out[0].0["id"], "result": {}}),
        4,
    );
    only_result(&c.take_events(), 8);
    assert!(c.subscriptions().is_empty());

    // A refused subscription is the server's error, and not kept.
    c.start_request(
        9,
        Request::Subscribe {
            uri: "test://nope".into(),
        },
        1000,
        5,
    );
    let out = sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": out[0].0["id"], "error": {"code": -32002, "message": "no such resource"}}),
        6,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Finished(FinishedCall { call: 9, outcome: Err(CallError::Protocol(m)) })]
            if m.contains("no such resource")
    ));
    assert!(c.subscriptions().is_empty());
}

#[test]
fn a_new_legacy_session_subscribes_again_and_drops_what_is_refused() {
    let mut c = Client::new("subs");
    c.set_initial_subscriptions(["test://a".to_string(), "test://b".to_string()].into());
    let mut c = {
        c.begin();
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": change_capabilities()}}),
            0,
        );
        sent(&mut c);
        feed(
            &mut c,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
            0,
        );
        c
    };
    let out = sent(&mut c);
    let subscribes: Vec<&Value> = out
        .iter()
        .filter(|(m, _)| m["method"] == "resources/subscribe")
        .map(|(m, _)| m)
        .collect();
    assert_eq!(subscribes.len(), 2, "{out:?}");
    assert_eq!(subscribes[0]["params"]["uri"], "test://a");
    assert_eq!(subscribes[1]["params"]["uri"], "test://b");
    c.take_events();
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": subscribes[0]["id"], "result": {}}),
        1,
    );
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": subscribes[1]["id"], "error": {"code": -32002, "message": "gone"}}),
        1,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Warning(w)] if w.contains("test://b") && w.contains("gone")
    ));
    assert_eq!(c.subscriptions().len(), 1);
    assert!(c.subscriptions().contains("test://a"));
}

/// A 2026-07-28 client whose server offers subscriptions and list changes,
/// with its first listen's id.
fn stateless_subscribable(c: Client) -> (Client, Value) {
    let mut c = c;
    c.detect(None, 0);
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": change_capabilities()}}),
        0,
    );
    sent(&mut c);
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": [tool("a")]}}),
        0,
    );
    c.take_events();
    let out = sent(&mut c);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0["method"], "subscriptions/listen");
    (c, out[0].0.clone())
}

fn listen_ack(id: &Value, filter: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"notifications": filter, "_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
}

#[test]
fn stateless_subscriptions_ride_on_subscriptions_listen() {
    let (mut c, first) = stateless_subscribable(Client::new("modern"));
    assert_eq!(
        first["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
        "every change the server declared, and no resources yet"
    );
    assert_stateless_meta(&first);

    c.start_request(
        7,
        Request::Subscribe {
            uri: "test://a".into(),
        },
        1000,
        10,
    );
    let out = sent(&mut c);
    assert_eq!(out.len(), 2, "{out:?}");
    let second = &out[0].0;
    assert_eq!(second["method"], "subscriptions/listen");
    assert_eq!(
        second["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://a"])
    );
    assert_eq!(second["params"]["notifications"]["toolsListChanged"], true);
    assert_eq!(out[1].0["method"], "notifications/cancelled");
    assert_eq!(
        out[1].0["params"]["requestId"], first["id"],
        "the old listen"
    );
    assert!(c.take_events().is_empty(), "waits for the acknowledgement");
    assert_eq!(c.next_deadline(), Some(1010));

    feed(
        &mut c,
        listen_ack(
            &second["id"],
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]}),
        ),
        11,
    );
    only_result(&c.take_events(), 7);
    assert_eq!(c.next_deadline(), None);

    // The old stream's copy is dropped; the new one's arrives.
    let updated = |id: &Value| {
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "test://a", "_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
    };
    feed(&mut c, updated(&first["id"]), 12);
    assert!(c.take_events().is_empty());
    feed(&mut c, updated(&second["id"]), 12);
    assert_eq!(
        c.take_events(),
        vec![ClientEvent::ResourceUpdated("test://a".into())]
    );

    // A URI the acknowledgement leaves out is refused and not kept.
    c.start_request(
        8,
        Request::Subscribe {
            uri: "test://b".into(),
        },
        1000,
        20,
    );
    let third = sent(&mut c).remove(0).0;
    feed(
        &mut c,
        listen_ack(&third["id"], json!({"resourceSubscriptions": ["test://a"]})),
        21,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Finished(FinishedCall { call: 8, outcome: Err(CallError::Protocol(m)) })]
            if m.contains("test://b") && m.contains("resourceSubscriptions")
    ));
    assert!(!c.subscriptions().contains("test://b"));

    // No acknowledgement in time: a timeout.
    c.start_request(
        9,
        Request::Subscribe {
            uri: "test://c".into(),
        },
        1000,
        30,
    );
    sent(&mut c);
    c.tick(1030);
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Finished(FinishedCall { call: 9, outcome: Err(CallError::Timeout(m)) })]
            if m.contains("did not acknowledge")
    ));

    // Unsubscribing the last one leaves a listen without resourceSubscriptions.
    c.start_request(
        10,
        Request::Unsubscribe {
            uri: "test://c".into(),
        },
        1000,
        40,
    );
    c.start_request(
        11,
        Request::Unsubscribe {
            uri: "test://a".into(),
        },
        1000,
        40,
    );
    let out = sent(&mut c);
    let last = out
        .iter()
        .rev()
        .find(|(m, _)| m["method"] == "subscriptions/listen")
        .expect("a new listen")
        .0
        .clone();
    assert!(
        last["params"]["notifications"]
            .get("resourceSubscriptions")
            .is_none(),
        "{last}"
    );
    feed(
        &mut c,
        listen_ack(&last["id"], json!({"toolsListChanged": true})),
        41,
    );
    let events = c.take_events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(c.subscriptions().is_empty());
}

/// A listen whose stream breaks in transit is opened again after a delay that
/// doubles while it keeps failing and starts over once a listen is
/// acknowledged; a listen the server refuses is not asked for again.
#[test]
fn a_listen_that_fails_in_transit_is_opened_again_and_a_refused_one_is_not() {
    let (mut c, first) = stateless_subscribable(Client::new("modern"));
    let id = first["id"].to_string();
    c.handle_failure(&id, Failure::Exchange("the stream broke".into()), 100);
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Warning(w)] if w == "server `modern` lost its subscriptions/listen stream (the stream broke); listening again in 1s"
    ));
    assert_eq!(c.next_deadline(), Some(1_100));
    c.tick(1_099);
    assert!(sent(&mut c).is_empty(), "not before its time");
    c.tick(1_100);
    let out = sent(&mut c);
    assert_eq!(out.len(), 1, "{out:?}");
    let second = out[0].0.clone();
    assert_eq!(second["method"], "subscriptions/listen");
    assert_eq!(
        second["params"]["notifications"],
        first["params"]["notifications"]
    );

    // Failing again: twice the delay, and no second warning.
    c.handle_failure(
        &second["id"].to_string(),
        Failure::Exchange("again".into()),
        1_200,
    );
    assert!(c.take_events().is_empty());
    assert_eq!(c.next_deadline(), Some(3_200));
    c.tick(3_200);
    let third = sent(&mut c)[0].0.clone();
    assert_eq!(third["method"], "subscriptions/listen");

    // Acknowledged: the next failure starts from the first delay again.
    feed(
        &mut c,
        listen_ack(&third["id"], json!({"toolsListChanged": true})),
        3_300,
    );
    c.take_events();
    c.handle_failure(
        &third["id"].to_string(),
        Failure::Exchange("once more".into()),
        5_000,
    );
    assert_eq!(c.take_events().len(), 1, "a new streak warns again");
    assert_eq!(c.next_deadline(), Some(6_000));
    c.tick(6_000);
    let fourth = sent(&mut c)[0].0.clone();

    // Refused: a warning, and no listen again.
    feed(
        &mut c,
        json!({"jsonrpc": "2.0", "id": fourth["id"], "error": {"code": -32601, "message": "no"}}),
        6_100,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Warning(w)] if w.contains("refused subscriptions/listen")
    ));
    assert_eq!(c.next_deadline(), None);
    c.tick(100_000);
    assert!(sent(&mut c).is_empty());
}

#[test]
fn a_stateless_log_level_goes_in_every_requests_meta() {
    let (mut c, first) = stateless_subscribable(Client::new("modern"));
    assert!(
        first["params"]["_meta"]
            .get("io.modelcontextprotocol/logLevel")
            .is_none(),
        "no level, no key: the server sends no log lines"
    );
    c.start_request(
        3,
        Request::SetLogLevel {
            level: "info".into(),
        },
        1000,
        0,
    );
    assert!(sent(&mut c).is_empty(), "no logging/setLevel in 2026-07-28");
    only_result(&c.take_events(), 3);
    c.start_call(4, "mcp__modern__a", "a", "{}", 1000, 0);
    let out = sent(&mut c);
    assert_eq!(
        out[0].0["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "info"
    );
    c.start_request(
        5,
        Request::SetLogLevel {
            level: "loud".into(),
        },
        1000,
        0,
    );
    assert!(matches!(
        &c.take_events()[..],
        [ClientEvent::Finished(FinishedCall {
            call: 5,
            outcome: Err(CallError::InvalidArguments(_))
        })]
    ));

    // 2025 sessions keep logging/setLevel and no _meta key.
    let mut c = legacy_subscribable(Client::new("old"));
    c.start_request(
        6,
        Request::SetLogLevel {
            level: "info".into(),
        },
        1000,
        0,
    );
    let out = sent(&mut c);
    assert_eq!(out[0].0["method"], "logging/setLevel");
}
