//! The gateway against the real manager and scripted upstream servers on the
//! in-memory platform: downstream messages in, signals out, as a host sees them.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::client::STATELESS_VERSION;
use crate::manager::ServerState;
use crate::testing::{Behaviour, FakePlatform, McpServer, Out, Output};

/// A manager with the given servers (stdio entries) and a gateway serving it.
struct Rig {
    m: Manager<FakePlatform>,
    g: Gateway,
    next_exchange: u64,
    /// Every signal seen, in order.
    seen: Vec<Signal>,
    /// Every event for the host, in order.
    host: Vec<crate::manager::Event>,
}

fn config(servers: &[&str], extra: &str) -> String {
    let entries: Vec<String> = servers
        .iter()
        .map(|s| format!(r#""{s}": {{"command": "{s}-server"}}"#))
        .collect();
    format!(r#"{{"mcpServers": {{{}}}{extra}}}"#, entries.join(", "))
}

impl Rig {
    fn new(p: FakePlatform, servers: &[&str]) -> Rig {
        Rig::with(p, servers, "", ServeOptions::default())
    }

    fn with(p: FakePlatform, servers: &[&str], extra: &str, options: ServeOptions) -> Rig {
        let text = config(servers, extra);
        let mut m = Manager::new(p);
        assert_eq!(m.load_config("test", &text).unwrap(), vec![]);
        m.enable_input_requests();
        m.enable_sampling();
        let mut g = Gateway::new();
        g.configure();
        g.serve(
            m.permissions(),
            ServeOptions {
                secret: "test-secret".into(),
                ..options
            },
            None,
        )
        .unwrap();
        m.start();
        Rig {
            m,
            g,
            next_exchange: 1,
            seen: Vec::new(),
            host: Vec::new(),
        }
    }

    /// Drives the manager until no server is starting.
    fn settle(&mut self) {
        for _ in 0..100 {
            if !self.m.starting() {
                self.turn();
                return;
            }
            self.turn();
        }
        panic!("servers never settled: {:?}", self.m.servers());
    }

    /// One turn of the host's loop: the manager's wait, then the gateway.
    fn turn(&mut self) -> Vec<Signal> {
        // As the host's loop: no wait with work to do, and none past the
        // gateway's own deadline.
        let timeout = match self.g.next_deadline() {
            _ if self.g.busy(&self.m) => 0,
            Some(due) => due.saturating_sub(self.m.platform().now_ms()).min(600_000),
            None => 600_000,
        };
        let done = self.m.wait(timeout);
        let events = self.m.events();
        let (theirs, host) = self.g.absorb(&mut self.m, done, events);
        self.host.extend(host);
        assert!(theirs.is_empty(), "finished calls for the host: {theirs:?}");
        let out = self.g.take_signals();
        self.seen.extend(out.clone());
        out
    }

    /// Sends a message on a fresh exchange; returns it and what came at once.
    fn send(&mut self, session: Option<u64>, message: Value) -> (u64, Vec<Signal>) {
        self.send_with(session, None, message, TransportKind::Http)
    }

    fn send_with(
        &mut self,
        session: Option<u64>,
        profile: Option<&str>,
        message: Value,
        kind: TransportKind,
    ) -> (u64, Vec<Signal>) {
        let exchange = self.next_exchange;
        self.next_exchange += 1;
        // The headers an HTTP client sends with a 2026-07-28 request (SEP-2243).
        let mut headers = Vec::new();
        if kind == TransportKind::Http && message["params"]["_meta"].is_object() {
            let pair = |name: &str, value: &Value| Pair {
                name: name.into(),
                value: value.as_str().unwrap_or_default().into(),
            };
            headers.push(pair("Mcp-Method", &message["method"]));
            match message["method"].as_str() {
                Some("tools/call" | "prompts/get") => {
                    headers.push(pair("Mcp-Name", &message["params"]["name"]));
                }
                Some("resources/read") => {
                    headers.push(pair("Mcp-Name", &message["params"]["uri"]));
                }
                Some("tasks/get" | "tasks/update" | "tasks/cancel") => {
                    headers.push(pair("Mcp-Name", &message["params"]["taskId"]));
                }
                _ => {}
            }
        }
        self.g.receive(
            &mut self.m,
            Inbound {
                session,
                exchange,
                kind,
                profile: profile.map(String::from),
                headers,
                text: message.to_string(),
            },
        );
        let out = self.g.take_signals();
        self.seen.extend(out.clone());
        (exchange, out)
    }

    /// Turns until the exchange ends; every message on it and its status.
    fn answer_of(&mut self, exchange: u64, mut first: Vec<Signal>) -> (Vec<Value>, u16) {
        let mut messages = Vec::new();
        for _ in 0..50 {
            for s in first.drain(..) {
                match s {
                    Signal::Message {
                        target: Target::Exchange(x),
                        text,
                    } if x == exchange => messages.push(serde_json::from_str(&text).unwrap()),
                    Signal::End {
                        exchange: x,
                        status,
                    } if x == exchange => return (messages, status),
                    _ => {}
                }
            }
            first = self.turn();
        }
        panic!("exchange {exchange} never ended; got {messages:?}");
    }

    /// A request on a fresh exchange, answered: the response and the status.
    fn request(&mut self, session: Option<u64>, message: Value) -> (Value, u16) {
        let (x, first) = self.send(session, message);
        let (messages, status) = self.answer_of(x, first);
        let response = messages
            .into_iter()
            .rev()
            .find(|m| m.get("id").is_some() && m.get("method").is_none())
            .expect("a response");
        (response, status)
    }

    /// Follows a list method (`resources/list`, `skills/list`) of `session`
    /// from its first page to the last, request ids from `first_id` on: every
    /// item of `key`, and how many pages there were. Each page holds at most
    /// `page_size` items; ten pages mean the cursor never ends.
    fn list_all_pages(
        &mut self,
        session: u64,
        method: &str,
        key: &str,
        page_size: usize,
        first_id: i64,
    ) -> (Vec<Value>, i64) {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let (r, _) = self.request(
                Some(session),
                json!({"jsonrpc": "2.0", "id": first_id + pages, "method": method, "params": params}),
            );
            pages += 1;
            let page = r["result"][key].as_array().expect(key).clone();
            assert!(page.len() <= page_size, "{r}");
            items.extend(page);
            match r["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
            assert!(pages < 10, "the cursor never ends");
        }
        (items, pages)
    }

    /// A request on a fresh exchange: every message on it, in order, and the status.
    fn request_all(&mut self, session: Option<u64>, message: Value) -> (Vec<Value>, u16) {
        let (x, first) = self.send(session, message);
        self.answer_of(x, first)
    }

    /// Opens a 2025 session and sends `initialized`.
    fn initialize(&mut self, capabilities: Value) -> u64 {
        self.initialize_as("2025-06-18", capabilities)
    }

    /// Opens a session of protocol version `version` and sends `initialized`.
    fn initialize_as(&mut self, version: &str, capabilities: Value) -> u64 {
        let (x, out) = self.send(
            None,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "1"}}}),
        );
        let session = out
            .iter()
            .find_map(|s| match s {
                Signal::SessionOpened { exchange, session } if *exchange == x => Some(*session),
                _ => None,
            })
            .expect("a session");
        let (messages, status) = self.answer_of(x, out);
        assert_eq!(status, 200);
        assert_eq!(messages[0]["result"]["protocolVersion"], version);
        assert_eq!(messages[0]["result"]["serverInfo"]["name"], "mcpbox");
        let (_, out) = self.send(
            Some(session),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert!(
            out.iter()
                .any(|s| matches!(s, Signal::End { status: 202, .. }))
        );
        session
    }

    /// Messages that went to a session's standalone stream.
    fn standalone(&self, session: u64) -> Vec<Value> {
        self.seen
            .iter()
            .filter_map(|s| match s {
                Signal::Message {
                    target: Target::Session(x),
                    text,
                } if *x == session => Some(serde_json::from_str(text).unwrap()),
                _ => None,
            })
            .collect()
    }
}

fn stateless_meta(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
           "io.modelcontextprotocol/clientCapabilities": capabilities,
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// A rig whose one upstream, `new`, is a 2026-07-28 server offering `echo`.
fn stateless_echo_rig() -> Rig {
    let mut p = FakePlatform::new();
    p.serve("new", || McpServer {
        stateless: true,
        ..McpServer::with_tools(&["echo"])
    });
    let mut rig = Rig::new(p, &["new"]);
    rig.settle();
    rig
}

/// The `_meta` member `key` of each `tools/call` the upstream `new` was sent.
fn sent_call_meta(rig: &Rig, key: &str) -> Vec<Value> {
    let sim = rig.m.platform().sim("new");
    let sent = sim.borrow().sent("tools/call");
    sent.iter()
        .map(|m| m["params"]["_meta"][key].clone())
        .collect()
}

/// Calls `new__echo` as request `id` in a 2025 `session`, or (`None`) as a
/// 2026-07-28 request with `meta`, and waits for its answer.
fn echo_through(rig: &mut Rig, session: Option<u64>, id: i64, meta: Option<Value>) {
    let mut message = call(id, "new__echo", json!({"text": "x"}));
    if let Some(meta) = meta {
        message["params"]["_meta"] = meta;
    }
    let (x, _) = rig.send(session, message);
    let (messages, _) = rig.answer_of(x, Vec::new());
    assert_eq!(messages.last().unwrap()["id"], json!(id), "{messages:?}");
}

fn texts(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_2025_client_lists_and_calls_across_servers() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read", "write"]));
    p.serve("git", || {
        McpServer::with_tools(&["log"]).on_call(|params, id, out| {
            out.reply(
                0,
                id,
                json!({"content": [{"type": "text", "text": "ok"}],
                "structuredContent": {"n": params["arguments"]["text"]}, "isError": false}),
            );
        })
    });
    let mut rig = Rig::new(p, &["fs", "git"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (list, status) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(status, 200);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fs__read", "fs__write", "git__log"]);
    assert_eq!(list["result"]["tools"][0]["description"], "the read tool");
    assert!(list["result"].get("nextCursor").is_none());

    let (r, _) = rig.request(Some(s), call(2, "fs__read", json!({"text": "hi"})));
    assert_eq!(r["id"], 2);
    assert_eq!(texts(&r["result"]), "hi");
    assert_eq!(r["result"]["isError"], false);
    // Structured content passes through exactly.
    let (r, _) = rig.request(Some(s), call(3, "git__log", json!({"text": "x"})));
    assert_eq!(r["result"]["structuredContent"], json!({"n": "x"}));
    // An unknown tool is a JSON-RPC error; bad arguments a tool error.
    let (r, _) = rig.request(Some(s), call(4, "fs__nope", json!({})));
    assert_eq!(r["error"]["code"], -32602);
    let (r, _) = rig.request(Some(s), call(5, "fs__read", json!({"text": 5})));
    assert_eq!(r["result"]["isError"], true);
    assert!(texts(&r["result"]).contains("want string"), "{r}");
    // Ping, an unknown method, and a request without a session.
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
    );
    assert_eq!(r["result"], json!({}));
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 7, "method": "widgets/list"}),
    );
    assert_eq!(r["error"]["code"], -32601);
    let (r, status) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    );
    assert_eq!((r["error"]["code"].as_i64(), status), (Some(-32600), 400));
}

#[test]
fn a_2026_client_discovers_and_calls_without_a_session() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let meta = stateless_meta(json!({}));
    let (r, status) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta}}),
    );
    assert_eq!(status, 200);
    assert_eq!(r["result"]["supportedVersions"], json!([STATELESS_VERSION]));
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcpbox"
    );
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
    );
    assert_eq!(r["result"]["tools"][0]["name"], "fs__read");
    assert_eq!(r["result"]["resultType"], "complete");
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "fs__read", "arguments": {"text": "yo"}, "_meta": meta}}),
    );
    assert_eq!(texts(&r["result"]), "yo");
    assert_eq!(r["result"]["resultType"], "complete");
    // Removed and unknown methods: 404; bad _meta: 400.
    let (r, status) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta}}),
    );
    assert_eq!((r["error"]["code"].as_i64(), status), (Some(-32601), 404));
    let (r, status) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}}),
    );
    assert_eq!(
        (r["error"]["code"].as_i64(), status, r["id"].as_i64()),
        (Some(-32602), 400, Some(4))
    );
}

/// A `tools/call`'s arguments reach the server as the client wrote them: not
/// parsed into a `Value` and written again, which turned an integer past 2^64
/// into a float and `1.50` into `1.5`. Absent or null arguments are `{}`;
/// arguments that are not an object are refused, as before.
#[test]
fn call_arguments_reach_the_server_as_the_client_wrote_them() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let session = rig.initialize(json!({}));
    let arguments = r#"{"text": "caf\u00e9",  "n": 123456789012345678901234567890, "x": 1.50}"#;
    let sent = |rig: &mut Rig, id: u64, params: &str| -> Vec<Value> {
        let exchange = rig.next_exchange;
        rig.next_exchange += 1;
        rig.g.receive(
            &mut rig.m,
            Inbound {
                session: Some(session),
                exchange,
                kind: TransportKind::Stdio,
                profile: None,
                headers: Vec::new(),
                text: format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
                ),
            },
        );
        let out = rig.g.take_signals();
        rig.answer_of(exchange, out).0
    };
    let answer = sent(
        &mut rig,
        1,
        &format!(r#"{{"name": "fs__read", "arguments": {arguments}}}"#),
    );
    assert_eq!(texts(&answer[0]["result"]), "café");
    let sim = rig.m.platform().sim("fs");
    let upstream = sim.borrow().texts.last().cloned().unwrap();
    assert!(
        upstream.contains(&format!(r#""arguments":{arguments}"#)),
        "{upstream}"
    );
    for (id, params) in [
        (2, r#"{"name": "fs__read"}"#),
        (3, r#"{"arguments": null, "name": "fs__read"}"#),
    ] {
        sent(&mut rig, id, params);
        let upstream = sim.borrow().texts.last().cloned().unwrap();
        assert!(upstream.contains(r#""arguments":{}"#), "{upstream}");
    }
    let answer = sent(&mut rig, 4, r#"{"name": "fs__read", "arguments": "{}"}"#);
    assert_eq!(
        answer[0]["error"]["message"],
        "Invalid params: `arguments` must be an object"
    );
}

#[test]
fn lists_are_paged_with_stable_cursors_and_held_while_servers_start() {
    let mut p = FakePlatform::new();
    p.serve("big", || {
        let names: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        McpServer {
            list_delay: 5_000,
            ..McpServer::with_tools(&refs)
        }
    });
    let options = ServeOptions {
        page_size: 3,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["big"], "", options);
    let s = rig.initialize(json!({}));
    // Listed while the server is still listing its tools: held, then answered whole.
    let (x, out) = rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert!(out.is_empty(), "held: {out:?}");
    let (messages, _) = rig.answer_of(x, out);
    let page = &messages[0]["result"];
    assert_eq!(page["tools"].as_array().unwrap().len(), 3);
    assert_eq!(page["nextCursor"], "big__t2");
    let mut all = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let (r, _) = rig.request(
            Some(s),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": cursor}}),
        );
        all.extend(
            r["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone()),
        );
        cursor = r["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(all.len(), 7);
    // The session saw the settled list: no list_changed for it.
    assert!(rig.standalone(s).is_empty(), "{:?}", rig.standalone(s));
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "no such/cursor"}}),
    );
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn tool_changes_reach_sessions_and_listen_streams() {
    let mut p = FakePlatform::new();
    let tools = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let shared = tools.clone();
    p.serve("fs", move || {
        let server = McpServer::with_tools(&["read"]);
        *shared.borrow_mut() = vec![server.tools.clone()];
        server
    });
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let meta = stateless_meta(json!({}));
    let (listen, out) = rig.send(
        None,
        json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
               "params": {"notifications": {"toolsListChanged": true, "promptsListChanged": true}, "_meta": meta}}),
    );
    let ack: Value = match &out[0] {
        Signal::Message { text, .. } => serde_json::from_str(text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert!(
        !out.iter().any(|s| matches!(s, Signal::End { .. })),
        "the stream stays open"
    );

    // The server's list changes.
    tools.borrow()[0]
        .borrow_mut()
        .push(json!({"name": "write", "inputSchema": {"type": "object"}}));
    rig.m.platform().emit(
        "fs",
        0,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string(),
        ),
    );
    for _ in 0..5 {
        rig.turn();
    }
    let told = rig.standalone(s);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["method"], "notifications/tools/list_changed");
    let on_listen: Vec<Value> = rig
        .seen
        .iter()
        .filter_map(|sig| match sig {
            Signal::Message {
                target: Target::Exchange(x),
                text,
            } if *x == listen => Some(serde_json::from_str(text).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(on_listen.len(), 2, "ack and one change: {on_listen:?}");
    assert_eq!(on_listen[1]["method"], "notifications/tools/list_changed");
    assert_eq!(
        on_listen[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    // Closing the listen stream forgets it.
    rig.g.exchange_closed(&mut rig.m, listen);
    assert!(rig.g.exchanges.is_empty());
}

/// A server whose `ask` tool asks for input and answers the call with the
/// answer it got.
struct Asking(McpServer);

impl Behaviour for Asking {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        if m["method"] == "tools/call" && m["params"]["name"] == "ask" {
            out.later(
                0,
                json!({"jsonrpc": "2.0", "id": format!("ask-{}", m["id"]), "method": "elicitation/create",
                    "params": {"message": "Sure?", "requestedSchema": {"type": "object",
                        "properties": {"ok": {"type": "boolean"}}}}}),
            );
            return;
        }
        if m.get("method").is_none()
            && let Some(call) = m["id"].as_str().and_then(|i| i.strip_prefix("ask-"))
        {
            let call: Value = serde_json::from_str(call).unwrap();
            let text = m["result"].to_string();
            out.reply(
                0,
                &call,
                json!({"content": [{"type": "text", "text": text}]}),
            );
            return;
        }
        self.0.on_message(m, out);
    }
}

#[test]
fn upstream_input_requests_reach_2025_clients_that_can_answer() {
    let mut p = FakePlatform::new();
    p.serve("a", || Asking(McpServer::with_tools(&["ask"])));
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let s = rig.initialize(json!({"elicitation": {}}));
    let (x, out) = rig.send(Some(s), call(1, "a__ask", json!({})));
    let mut question = None;
    let mut pending = out;
    for _ in 0..10 {
        question = pending.iter().find_map(|sig| match sig {
            Signal::Message {
                target: Target::Exchange(e),
                text,
            } if *e == x => {
                let v: Value = serde_json::from_str(text).unwrap();
                (v["method"] == "elicitation/create").then_some(v)
            }
            _ => None,
        });
        if question.is_some() {
            break;
        }
        pending = rig.turn();
    }
    let question = question.expect("the question reached the client");
    assert_eq!(question["params"]["message"], "Sure?");
    // The client answers on another exchange (another POST).
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": true}}}),
    );
    let (messages, _) = rig.answer_of(x, Vec::new());
    let response = messages.last().unwrap();
    assert_eq!(
        texts(&response["result"]),
        r#"{"action":"accept","content":{"ok":true}}"#
    );

    // A client without the capability: the upstream is declined.
    let plain = rig.initialize(json!({}));
    let (r, _) = rig.request(Some(plain), call(2, "a__ask", json!({})));
    assert_eq!(texts(&r["result"]), r#"{"action":"decline"}"#);
}

#[test]
fn upstream_input_requests_reach_2026_clients_as_input_required() {
    let mut p = FakePlatform::new();
    p.serve("a", || Asking(McpServer::with_tools(&["ask"])));
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = stateless_meta(json!({"elicitation": {}}));
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "a__ask", "arguments": {}, "_meta": meta}}),
    );
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let (key, ask) = requests.iter().next().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Sure?");
    let state = result["requestState"].as_str().unwrap().to_string();
    assert!(state.len() > 32, "{state}");
    // A forged state is refused; the real one continues the call.
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "a__ask", "arguments": {}, "_meta": meta,
            "inputResponses": {key: {"action": "decline"}}, "requestState": "mcpbox.forged"}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "a__ask", "arguments": {}, "_meta": meta,
            "inputResponses": {key: {"action": "accept", "content": {"ok": false}}}, "requestState": state}}),
    );
    assert_eq!(r["id"], 3);
    assert_eq!(
        texts(&r["result"]),
        r#"{"action":"accept","content":{"ok":false}}"#
    );
}

#[test]
fn ask_rules_become_questions_and_deny_rules_hide_tools() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read", "write", "rm"]));
    let rules = r#", "permissions": {"ask": ["mcp__fs__write"], "deny": ["mcp__fs__rm"]},
        "profiles": {"ro": {"allow": ["mcp__fs__read"], "default": "deny"}}"#;
    let mut rig = Rig::with(p, &["fs"], rules, ServeOptions::default());
    rig.settle();
    let s = rig.initialize(json!({"elicitation": {}}));
    let (list, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fs__read", "fs__write"]);
    let (r, _) = rig.request(Some(s), call(2, "fs__rm", json!({})));
    assert!(
        texts(&r["result"])
            .contains("denied by the permission rule `mcp__fs__rm` (permissions.deny[0] in test)"),
        "{r}"
    );

    // ask: the client is asked; yes runs the call, no does not. `accept` is the
    // yes, with `{}` too (a client that shows yes and no only); `approve: false`,
    // a non-boolean `approve` and `decline` are no.
    let answers = [
        (
            json!({"action": "accept", "content": {"approve": true}}),
            "go",
        ),
        (json!({"action": "accept", "content": {}}), "go"),
        (json!({"action": "accept"}), "go"),
        (
            json!({"action": "accept", "content": {"approve": false}}),
            "was not run",
        ),
        (
            json!({"action": "accept", "content": {"approve": "no"}}),
            "was not run",
        ),
        (json!({"action": "decline"}), "was not run"),
        (json!({"action": "cancel"}), "was not run"),
    ];
    for (answer, expect) in &answers {
        let (x, out) = rig.send(Some(s), call(3, "fs__write", json!({"text": "go"})));
        let question: Value = out
            .iter()
            .find_map(|sig| match sig {
                Signal::Message { text, .. } => Some(serde_json::from_str(text).unwrap()),
                _ => None,
            })
            .unwrap();
        assert_eq!(question["method"], "elicitation/create");
        assert!(
            question["params"]["message"]
                .as_str()
                .unwrap()
                .contains("`mcp__fs__write` (permissions.ask[0] in test)")
        );
        let (_, out) = rig.send(
            Some(s),
            json!({"jsonrpc": "2.0", "id": question["id"], "result": answer}),
        );
        let (messages, _) = rig.answer_of(x, out);
        let text = texts(&messages.last().unwrap()["result"]);
        assert!(text.contains(expect), "{answer}: {text}");
    }
    let sim = rig.m.platform().sim("fs");
    assert_eq!(
        sim.borrow().sent("tools/call").len(),
        3,
        "only the approved calls ran"
    );

    // A client that cannot be asked gets a clear tool error.
    let plain = rig.initialize(json!({}));
    let (r, _) = rig.request(Some(plain), call(4, "fs__write", json!({"text": "x"})));
    assert!(texts(&r["result"]).contains("cannot be asked"), "{r}");
    // A profile narrows the list.
    let (x, out) = rig.send_with(
        None,
        Some("ro"),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": stateless_meta(json!({}))}}),
        TransportKind::Http,
    );
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(messages[0]["result"]["tools"].as_array().unwrap().len(), 1);
    let (x, out) = rig.send_with(
        None,
        Some("nope"),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": stateless_meta(json!({}))}}),
        TransportKind::Http,
    );
    let (messages, status) = rig.answer_of(x, out);
    assert_eq!(status, 404);
    assert!(
        messages[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no profile named `nope`")
    );
}

/// The approval the host was offered last, by id; panics when there is none.
fn offered(rig: &mut Rig) -> u64 {
    rig.turn();
    rig.host
        .iter()
        .rev()
        .find_map(|e| match e {
            crate::manager::Event::InputRequested(r) if r.approval.is_some() => Some(r.id),
            _ => None,
        })
        .expect("an approval offered to the host")
}

#[test]
fn the_host_answers_a_clients_approval_first_or_sees_it_withdrawn() {
    use crate::elicitation::InputAnswer;
    use crate::manager::Event;
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["write"]));
    let rules = r#", "permissions": {"ask": ["mcp__fs__write"]}"#;
    let mut rig = Rig::with(p, &["fs"], rules, ServeOptions::default());
    rig.settle();
    let s = rig.initialize(json!({"elicitation": {}}));
    let question = |out: &[Signal]| -> Value {
        out.iter()
            .find_map(|sig| match sig {
                Signal::Message { text, .. } => serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(|v| v["method"] == "elicitation/create"),
                _ => None,
            })
            .expect("an elicitation/create")
    };

    // A 2025 client is asked; the host answers first: the client's question is
    // void, and the call's answer comes to it.
    let (x, out) = rig.send(Some(s), call(1, "fs__write", json!({"text": "go"})));
    let asked = question(&out);
    let id = offered(&mut rig);
    let once = InputAnswer::Accept(r#"{"approve":"once"}"#.into());
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), Some(Ok(())));
    let out = rig.g.take_signals();
    let cancelled = out
        .iter()
        .find_map(|sig| match sig {
            Signal::Message { text, .. } => serde_json::from_str::<Value>(text)
                .ok()
                .filter(|v| v["method"] == "notifications/cancelled"),
            _ => None,
        })
        .expect("the client's question withdrawn");
    assert_eq!(cancelled["params"]["requestId"], asked["id"]);
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(texts(&messages.last().unwrap()["result"]), "go");
    // The first answer won: the host's second is not the gateway's any more, and
    // the client's late answer changes nothing.
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), None);
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}),
    );

    // The host denies: the client gets the refusal.
    let (x, out) = rig.send(Some(s), call(2, "fs__write", json!({"text": "no"})));
    question(&out);
    let id = offered(&mut rig);
    assert_eq!(
        rig.g.answer_approval(&mut rig.m, id, &InputAnswer::Decline),
        Some(Ok(()))
    );
    let out = rig.g.take_signals();
    let (messages, _) = rig.answer_of(x, out);
    assert!(texts(&messages.last().unwrap()["result"]).contains("was not run"));

    // The client answers first: the host's question is withdrawn.
    let (x, out) = rig.send(Some(s), call(3, "fs__write", json!({"text": "client"})));
    let asked = question(&out);
    let id = offered(&mut rig);
    let (_, out) = rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}),
    );
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(texts(&messages.last().unwrap()["result"]), "client");
    assert!(
        rig.host.contains(&Event::InputWithdrawn(id)),
        "{:?}",
        rig.host
    );
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), None);

    // A 2026-07-28 client got `input_required`; the host approves, and the
    // client's retry gets the call's answer.
    let meta = stateless_meta(json!({"elicitation": {}}));
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "fs__write", "arguments": {"text": "later"}, "_meta": meta}}),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    let id = offered(&mut rig);
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), Some(Ok(())));
    rig.settle();
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "fs__write", "arguments": {"text": "later"}, "_meta": meta,
            "inputResponses": {}, "requestState": state}}),
    );
    assert_eq!(texts(&r["result"]), "later", "{r}");
    let sim = rig.m.platform().sim("fs");
    assert_eq!(
        sim.borrow().sent("tools/call").len(),
        3,
        "the approved calls ran"
    );
}

#[test]
fn a_2026_clients_approval_that_nobody_answers_leaves_the_host_in_time() {
    // The client's request ended with its question; a client that never retries
    // gives no other sign, so the question waits a bounded time.
    use crate::manager::Event;
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["write"]));
    let rules = r#", "permissions": {"ask": ["mcp__fs__write"]}"#;
    let mut rig = Rig::with(p, &["fs"], rules, ServeOptions::default());
    rig.settle();
    let meta = stateless_meta(json!({"elicitation": {}}));
    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fs__write", "arguments": {"text": "late"}, "_meta": meta}});
    let (r, _) = rig.request(None, ask);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    let asked_at = rig.m.platform().now_ms();
    let id = offered(&mut rig);
    let withdrawn = |rig: &Rig| rig.host.contains(&Event::InputWithdrawn(id));
    for _ in 0..20 {
        if withdrawn(&rig) {
            break;
        }
        rig.turn();
    }
    assert!(withdrawn(&rig), "{:?}", rig.host);
    let waited = rig.m.platform().now_ms() - asked_at;
    assert!(
        (elicitation::APPROVAL_WAIT_MS..elicitation::APPROVAL_WAIT_MS + 1000).contains(&waited),
        "withdrawn after {waited} ms"
    );
    // The host's late answer is not taken; the client's late retry is told.
    let once = crate::elicitation::InputAnswer::Accept(r#"{"approve":"once"}"#.into());
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), None);
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "fs__write", "arguments": {"text": "late"}, "_meta": meta,
            "inputResponses": {"approve": {"action": "accept"}}, "requestState": state}}),
    );
    assert!(texts(&r["result"]).contains("nobody approved it"), "{r}");
    let sim = rig.m.platform().sim("fs");
    assert!(sim.borrow().sent("tools/call").is_empty());
}

#[test]
fn the_hosts_approval_for_the_session_covers_that_session_only() {
    use crate::elicitation::InputAnswer;
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["write"]));
    let rules = r#", "permissions": {"ask": ["mcp__fs__write"]}"#;
    let mut rig = Rig::with(p, &["fs"], rules, ServeOptions::default());
    rig.settle();
    let asks = |out: &[Signal]| {
        out.iter().any(|sig| {
            matches!(sig, Signal::Message { text, .. } if text.contains("elicitation/create"))
        })
    };
    let first = rig.initialize(json!({"elicitation": {}}));
    let other = rig.initialize(json!({"elicitation": {}}));
    // The host approves the first session's call for the session.
    let (x, out) = rig.send(Some(first), call(1, "fs__write", json!({"text": "a"})));
    assert!(asks(&out));
    let id = offered(&mut rig);
    let session = InputAnswer::Accept(r#"{"approve":"session"}"#.into());
    assert_eq!(
        rig.g.answer_approval(&mut rig.m, id, &session),
        Some(Ok(()))
    );
    let out = rig.g.take_signals();
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(texts(&messages.last().unwrap()["result"]), "a");
    // That session's next call of the tool runs without a question.
    let (x, out) = rig.send(Some(first), call(2, "fs__write", json!({"text": "b"})));
    assert!(!asks(&out), "{out:?}");
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(texts(&messages.last().unwrap()["result"]), "b");
    // Another session is still asked.
    let (_, out) = rig.send(Some(other), call(3, "fs__write", json!({"text": "c"})));
    assert!(asks(&out), "{out:?}");
    // "once" approves the one call: that session's next is asked again.
    let id = offered(&mut rig);
    let once = InputAnswer::Accept(r#"{"approve":"once"}"#.into());
    assert_eq!(rig.g.answer_approval(&mut rig.m, id, &once), Some(Ok(())));
    rig.settle();
    let (_, out) = rig.send(Some(other), call(4, "fs__write", json!({"text": "d"})));
    assert!(asks(&out), "{out:?}");
}

#[test]
fn cancellation_progress_and_logs_pass_through() {
    let mut p = FakePlatform::new();
    p.serve("slow", || {
        McpServer::with_tools(&["work"]).on_call(|params, _id, out| {
            let token = params["_meta"]["progressToken"].clone();
            out.later(
                10,
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2, "message": "half"}}),
            );
            out.later(
                10,
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}}),
            );
            // Never answers.
        })
    });
    let mut rig = Rig::new(p, &["slow"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (x, _) = rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "slow__work", "arguments": {}, "_meta": {"progressToken": "p9"}}}),
    );
    let mut on_x = Vec::new();
    for _ in 0..5 {
        for sig in rig.turn() {
            if let Signal::Message {
                target: Target::Exchange(e),
                text,
            } = sig
                && e == x
            {
                on_x.push(serde_json::from_str::<Value>(&text).unwrap());
            }
        }
        if on_x.len() >= 2 {
            break;
        }
    }
    let progress = on_x
        .iter()
        .find(|v| v["method"] == "notifications/progress")
        .unwrap();
    assert_eq!(
        progress["params"],
        json!({"progressToken": "p9", "progress": 1, "total": 2, "message": "half"})
    );
    let log = on_x
        .iter()
        .find(|v| v["method"] == "notifications/message")
        .unwrap();
    assert_eq!(
        log["params"],
        json!({"level": "info", "logger": "slow", "data": "working"})
    );

    // The client cancels: the upstream is told, and the request gets no answer.
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
    );
    let (messages, _) = rig.answer_of(x, Vec::new());
    assert!(
        messages.iter().all(|m| m.get("id").is_none()),
        "{messages:?}"
    );
    let sim = rig.m.platform().sim("slow");
    assert_eq!(sim.borrow().sent("notifications/cancelled").len(), 1);
}

#[test]
fn a_2026_upstream_is_asked_for_the_logs_its_downstream_client_wants() {
    // A 2026-07-28 server logs during a call only at the `_meta` `logLevel` the call
    // asks for, so the gateway asks for what the calling client wants to see.
    let mut rig = stateless_echo_rig();
    let sent_levels = |rig: &Rig| sent_call_meta(rig, "io.modelcontextprotocol/logLevel");
    let echo = echo_through;

    // A 2025 session that never set a level gets everything, so asks for all of it;
    // after `logging/setLevel`, for that level.
    let s = rig.initialize(json!({}));
    echo(&mut rig, Some(s), 1, None);
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "warning"}}),
    );
    rig.turn();
    echo(&mut rig, Some(s), 3, None);
    // A 2026-07-28 request asks for its own level, or for none.
    let mut meta = stateless_meta(json!({}));
    echo(&mut rig, None, 4, Some(meta.clone()));
    meta["io.modelcontextprotocol/logLevel"] = json!("error");
    echo(&mut rig, None, 5, Some(meta));
    assert_eq!(
        sent_levels(&rig),
        vec![
            json!("debug"),
            json!("warning"),
            Value::Null,
            json!("error")
        ]
    );
}

#[test]
fn a_2026_upstream_is_told_what_the_calling_client_can_be_asked() {
    // A 2026-07-28 server reads the client's capabilities from each request's
    // `_meta`: a forwarded call declares sampling and elicitation only where the
    // downstream client that made it declared them.
    let mut rig = stateless_echo_rig();
    let sent_capabilities =
        |rig: &Rig| sent_call_meta(rig, "io.modelcontextprotocol/clientCapabilities");
    let echo = echo_through;
    // 2025 sessions: what each declared in `initialize`.
    let able = rig.initialize(json!({"sampling": {"tools": {}}, "elicitation": {}}));
    let mute = rig.initialize(json!({"roots": {}}));
    echo(&mut rig, Some(able), 1, None);
    echo(&mut rig, Some(mute), 2, None);
    // 2026-07-28 requests: what each request's `_meta` declared.
    echo(
        &mut rig,
        None,
        3,
        Some(stateless_meta(json!({"sampling": {}}))),
    );
    echo(&mut rig, None, 4, Some(stateless_meta(json!({}))));
    // mcpbox's own extensions go to the server whoever calls.
    let skills = json!({"io.modelcontextprotocol/skills": {}});
    assert_eq!(
        sent_capabilities(&rig),
        vec![
            json!({"elicitation": {"form": {}}, "sampling": {"tools": {}}, "extensions": skills}),
            json!({"extensions": skills}),
            json!({"sampling": {}, "extensions": skills}),
            json!({"extensions": skills}),
        ]
    );
    // What the gateway asks for itself (its lists) declares what mcpbox can answer.
    let sim = rig.m.platform().sim("new");
    let listed = sim.borrow().sent("tools/list");
    assert_eq!(
        listed[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}, "sampling": {"tools": {}}, "extensions": skills})
    );
}

#[test]
fn a_client_that_goes_away_cancels_its_calls() {
    let mut p = FakePlatform::new();
    p.serve("slow", || {
        McpServer::with_tools(&["work"]).on_call(|_, _, _| {})
    });
    let mut rig = Rig::new(p, &["slow"]);
    rig.settle();
    // stdio: the client's session closes (stdin ended).
    let (x, out) = rig.send_with(
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        TransportKind::Stdio,
    );
    let s = out
        .iter()
        .find_map(|sig| match sig {
            Signal::SessionOpened { session, .. } => Some(*session),
            _ => None,
        })
        .unwrap();
    rig.answer_of(x, out);
    // The stdio host need not have seen the session open: the connection is the session.
    rig.send_with(
        None,
        None,
        call(1, "slow__work", json!({})),
        TransportKind::Stdio,
    );
    assert_eq!(rig.g.calls.values().next().unwrap().origin.session, Some(s));
    rig.g.session_closed(&mut rig.m, s);
    rig.turn();
    // A 2026 HTTP client closes its stream.
    let meta = stateless_meta(json!({}));
    let (x, _) = rig.send(
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow__work", "arguments": {}, "_meta": meta}}),
    );
    rig.g.exchange_closed(&mut rig.m, x);
    rig.turn();
    let sim = rig.m.platform().sim("slow");
    assert_eq!(sim.borrow().sent("notifications/cancelled").len(), 2);
    assert!(rig.g.calls.is_empty());
}

#[test]
fn an_upstream_crash_mid_call_is_a_tool_error() {
    let mut p = FakePlatform::new();
    p.serve("crashy", || {
        McpServer::with_tools(&["boom"]).on_call(|_, _, out| {
            out.at(
                5,
                Output::Exit {
                    status: "exit code 3".into(),
                    stderr: vec!["panic!".into()],
                },
            );
        })
    });
    let mut rig = Rig::new(p, &["crashy"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (r, _) = rig.request(Some(s), call(1, "crashy__boom", json!({})));
    assert_eq!(r["result"]["isError"], true);
    let text = texts(&r["result"]);
    assert!(
        text.contains("server `crashy` exited") && text.contains("panic!"),
        "{text}"
    );
    assert_eq!(rig.m.servers()[0].state, ServerState::Failed);
    // And the session hears that the tool list changed.
    assert!(
        rig.standalone(s)
            .iter()
            .any(|v| v["method"] == "notifications/tools/list_changed")
    );
    // Its tools are still known: a call says why it cannot run, not "unknown tool".
    let (r, _) = rig.request(Some(s), call(2, "crashy__boom", json!({})));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(texts(&r["result"]).contains("next restart allowed"), "{r}");
}

#[test]
fn search_mode_serves_two_tools_that_find_and_call_the_rest() {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        let server = McpServer::with_tools(&[]);
        *server.tools.borrow_mut() = vec![
            json!({"name": "read_file", "description": "Reads a file from disk.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}),
            json!({"name": "list_directory", "description": "Lists the entries of a directory.", "inputSchema": {"type": "object"}}),
            json!({"name": "echo", "description": "Returns the text.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
        ];
        server
    });
    let options = ServeOptions {
        tool_search: true,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["fs"], "", options);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (list, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let names: BTreeSet<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["search_tools", "call_tool"]));
    let (r, _) = rig.request(
        Some(s),
        call(
            2,
            "search_tools",
            json!({"query": "read a file", "limit": 2}),
        ),
    );
    let found = &r["result"]["structuredContent"]["tools"];
    assert_eq!(found[0]["name"], "fs__read_file", "{r}");
    assert_eq!(
        found[0]["inputSchema"]["properties"]["path"]["type"],
        "string"
    );
    let (r, _) = rig.request(
        Some(s),
        call(3, "search_tools", json!({"query": "directory entries"})),
    );
    assert_eq!(
        r["result"]["structuredContent"]["tools"][0]["name"],
        "fs__list_directory"
    );
    let (r, _) = rig.request(
        Some(s),
        call(
            4,
            "call_tool",
            json!({"name": "fs__echo", "arguments": {"text": "found"}}),
        ),
    );
    assert_eq!(texts(&r["result"]), "found");
}

#[test]
fn batches_and_garbage_are_answered_in_one_exchange() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    // 2025-03-26 is the one revision with batches.
    let s = rig.initialize_as("2025-03-26", json!({}));
    let (x, out) = rig.send(
        Some(s),
        json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
               {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fs__read", "arguments": {"text": "b"}}}]),
    );
    let (messages, status) = rig.answer_of(x, out);
    assert_eq!(status, 200);
    let ids: BTreeSet<i64> = messages.iter().filter_map(|m| m["id"].as_i64()).collect();
    assert_eq!(ids, BTreeSet::from([1, 2]));
    let exchange = rig.next_exchange;
    rig.next_exchange += 1;
    rig.g.receive(
        &mut rig.m,
        Inbound {
            session: Some(s),
            exchange,
            kind: TransportKind::Http,
            profile: None,
            headers: Vec::new(),
            text: "{not json".into(),
        },
    );
    let out = rig.g.take_signals();
    let (messages, status) = rig.answer_of(exchange, out);
    assert_eq!(
        (messages[0]["error"]["code"].as_i64(), status),
        (Some(-32700), 400)
    );
    assert_eq!(messages[0]["id"], Value::Null);
}

#[test]
fn progress_sent_with_the_answer_goes_out_before_it() {
    let mut p = FakePlatform::new();
    p.serve("fast", || {
        McpServer::with_tools(&["work"]).on_call(|params, id, out| {
            let token = params["_meta"]["progressToken"].clone();
            out.later(
                0,
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 100, "total": 100}}),
            );
            out.reply(
                0,
                id,
                json!({"content": [{"type": "text", "text": "done"}]}),
            );
        })
    });
    let mut rig = Rig::new(p, &["fast"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (messages, _) = rig.request_all(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "fast__work", "arguments": {}, "_meta": {"progressToken": 7}}}),
    );
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[1]["id"], 4);
}

/// A server whose `sample` tool asks for a message from the model (with tools
/// when called with `{"tools": true}`) and answers the call with what it got:
/// the result, or the error.
struct Sampler(McpServer);

impl Behaviour for Sampler {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        if m["method"] == "tools/call" && m["params"]["name"] == "sample" {
            let mut params = json!({"messages": [{"role": "user",
                "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 10});
            if m["params"]["arguments"]["tools"] == true {
                params["tools"] = json!([{"name": "calc", "inputSchema": {"type": "object"}}]);
            }
            out.later(
                0,
                json!({"jsonrpc": "2.0", "id": format!("s-{}", m["id"]),
                    "method": "sampling/createMessage", "params": params}),
            );
            return;
        }
        if m.get("method").is_none()
            && let Some(call) = m["id"].as_str().and_then(|i| i.strip_prefix("s-"))
        {
            let call: Value = serde_json::from_str(call).unwrap();
            let text = m.get("result").unwrap_or(&m["error"]).to_string();
            out.reply(
                0,
                &call,
                json!({"content": [{"type": "text", "text": text}]}),
            );
            return;
        }
        self.0.on_message(m, out);
    }
}

/// Drives the rig until a request with `method` reaches exchange `x`.
fn asked_on(rig: &mut Rig, x: u64, out: Vec<Signal>, method: &str) -> Value {
    let mut pending = out;
    for _ in 0..10 {
        let found = pending.iter().find_map(|sig| match sig {
            Signal::Message {
                target: Target::Exchange(e),
                text,
            } if *e == x => {
                let v: Value = serde_json::from_str(text).unwrap();
                (v["method"] == method).then_some(v)
            }
            _ => None,
        });
        if let Some(found) = found {
            return found;
        }
        pending = rig.turn();
    }
    panic!("no {method} reached exchange {x}")
}

#[test]
fn upstream_sampling_reaches_2025_clients_that_declared_it() {
    let mut p = FakePlatform::new();
    p.serve("a", || Sampler(McpServer::with_tools(&["sample"])));
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let s = rig.initialize(json!({"sampling": {"tools": {}}}));
    let (x, out) = rig.send(Some(s), call(1, "a__sample", json!({"tools": true})));
    let asked = asked_on(&mut rig, x, out, "sampling/createMessage");
    assert_eq!(asked["params"]["maxTokens"], 10);
    assert_eq!(asked["params"]["tools"][0]["name"], "calc");
    let result =
        json!({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"});
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": result}),
    );
    let (messages, _) = rig.answer_of(x, Vec::new());
    let got: Value = serde_json::from_str(&texts(&messages.last().unwrap()["result"])).unwrap();
    assert_eq!(got, result);

    // The client's refusal reaches the server as one.
    let (x, out) = rig.send(Some(s), call(2, "a__sample", json!({})));
    let asked = asked_on(&mut rig, x, out, "sampling/createMessage");
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "no"}}),
    );
    let (messages, _) = rig.answer_of(x, Vec::new());
    let got: Value = serde_json::from_str(&texts(&messages.last().unwrap()["result"])).unwrap();
    assert_eq!(got["code"], -1, "{got}");

    // Without `sampling`, or with tools but without `sampling.tools`: refused.
    let plain = rig.initialize(json!({"elicitation": {}}));
    // Nobody rejected it: the refusal says which capability was missing.
    let (r, _) = rig.request(Some(plain), call(3, "a__sample", json!({})));
    let said = texts(&r["result"]);
    assert!(
        said.contains("did not declare the `sampling` capability") && !said.contains("rejected"),
        "{r}"
    );
    let no_tools = rig.initialize(json!({"sampling": {}}));
    let (r, _) = rig.request(Some(no_tools), call(4, "a__sample", json!({"tools": true})));
    assert!(
        texts(&r["result"]).contains("declared `sampling` without `sampling.tools`"),
        "{r}"
    );
    let (x, out) = rig.send(Some(no_tools), call(5, "a__sample", json!({})));
    asked_on(&mut rig, x, out, "sampling/createMessage");
}

#[test]
fn upstream_sampling_reaches_2026_clients_as_input_required() {
    let mut p = FakePlatform::new();
    p.serve("a", || Sampler(McpServer::with_tools(&["sample"])));
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = stateless_meta(json!({"sampling": {}}));
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "a__sample", "arguments": {}, "_meta": meta}}),
    );
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let (key, ask) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["maxTokens"], 10);
    let state = result["requestState"].as_str().unwrap().to_string();
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"});
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "a__sample", "arguments": {}, "_meta": meta,
            "inputResponses": {key: answer}, "requestState": state}}),
    );
    let got: Value = serde_json::from_str(&texts(&r["result"])).unwrap();
    assert_eq!(got, answer);
    // A 2026 client that did not declare sampling: refused upstream, saying why.
    let meta = stateless_meta(json!({}));
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "a__sample", "arguments": {}, "_meta": meta}}),
    );
    assert!(
        texts(&r["result"]).contains("did not declare the `sampling` capability"),
        "{r}"
    );
}

/// A 2025 upstream with subscribable resources: `resources/subscribe` and
/// `resources/unsubscribe` are answered (and seen in its sim).
struct Subscribable(McpServer);

impl Behaviour for Subscribable {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        match m["method"].as_str() {
            Some("initialize") => out.reply(
                0,
                &m["id"],
                json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "res", "version": "1"},
                       "capabilities": {"tools": {}, "resources": {"subscribe": true, "listChanged": true}}}),
            ),
            Some("resources/subscribe" | "resources/unsubscribe") => {
                out.reply(0, &m["id"], json!({}));
            }
            // Never answered.
            Some("resources/read") if m["params"]["uri"] == "res://silent" => {}
            // Five resources, two a page.
            Some("resources/list") => {
                let start: usize = m["params"]["cursor"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let end = (start + 2).min(5);
                let items: Vec<Value> = (start..end)
                    .map(|i| json!({"uri": format!("res://{i}"), "name": format!("r{i}")}))
                    .collect();
                let mut result = json!({"resources": items});
                if end < 5 {
                    result["nextCursor"] = json!(end.to_string());
                }
                out.reply(0, &m["id"], result);
            }
            _ => self.0.on_message(m, out),
        }
    }
}

fn upstream_sent(rig: &Rig, method: &str) -> Vec<String> {
    rig.m
        .platform()
        .sim("res")
        .borrow()
        .sent(method)
        .iter()
        .map(|m| m["params"]["uri"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn emit(rig: &Rig, message: Value) {
    rig.m
        .platform()
        .emit("res", 0, Output::Message(message.to_string()));
}

#[test]
fn resource_subscriptions_are_shared_upstream_and_dropped_with_their_last_holder() {
    let mut p = FakePlatform::new();
    p.serve("res", || Subscribable(McpServer::with_tools(&["read"])));
    let mut rig = Rig::new(p, &["res"]);
    rig.settle();
    let one = rig.initialize(json!({}));
    let two = rig.initialize(json!({}));
    let subscribe = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": "res://a"}});
    let (r, _) = rig.request(Some(one), subscribe(1));
    assert_eq!(r["result"], json!({}), "{r}");
    let (r, _) = rig.request(Some(two), subscribe(2));
    assert_eq!(r["result"], json!({}), "{r}");
    assert_eq!(
        upstream_sent(&rig, "resources/subscribe"),
        ["res://a"],
        "one upstream subscription"
    );

    // A 2026-07-28 client holds it too, on its listen.
    let meta = stateless_meta(json!({}));
    let (listen, out) = rig.send(
        None,
        json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
               "params": {"notifications": {"resourceSubscriptions": ["res://a", "res://b"], "resourcesListChanged": true}, "_meta": meta}}),
    );
    let ack: Value = match &out[0] {
        Signal::Message { text, .. } => serde_json::from_str(text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true, "resourceSubscriptions": ["res://a", "res://b"]})
    );
    for _ in 0..3 {
        rig.turn();
    }
    assert_eq!(
        upstream_sent(&rig, "resources/subscribe"),
        ["res://a", "res://b"]
    );

    emit(
        &rig,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "res://a"}}),
    );
    emit(
        &rig,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}),
    );
    for _ in 0..3 {
        rig.turn();
    }
    for s in [one, two] {
        let told = rig.standalone(s);
        let methods: Vec<&str> = told.iter().map(|m| m["method"].as_str().unwrap()).collect();
        assert_eq!(
            methods,
            [
                "notifications/resources/updated",
                "notifications/resources/list_changed"
            ],
            "{told:?}"
        );
        assert_eq!(told[0]["params"]["uri"], "res://a");
    }
    let on_listen: Vec<Value> = rig
        .seen
        .iter()
        .filter_map(|sig| match sig {
            Signal::Message {
                target: Target::Exchange(x),
                text,
            } if *x == listen => Some(serde_json::from_str(text).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(
        on_listen.len(),
        3,
        "ack, update, list change: {on_listen:?}"
    );
    assert_eq!(on_listen[1]["params"]["uri"], "res://a");
    assert_eq!(
        on_listen[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "l"
    );

    // Holders leave: a closed session, an unsubscribe, a closed listen. The
    // last one out unsubscribes upstream.
    rig.g.session_closed(&mut rig.m, one);
    let (r, _) = rig.request(
        Some(two),
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/unsubscribe", "params": {"uri": "res://a"}}),
    );
    assert_eq!(r["result"], json!({}));
    for _ in 0..3 {
        rig.turn();
    }
    assert!(
        upstream_sent(&rig, "resources/unsubscribe").is_empty(),
        "the listen still holds both"
    );
    rig.g.exchange_closed(&mut rig.m, listen);
    for _ in 0..3 {
        rig.turn();
    }
    let mut gone = upstream_sent(&rig, "resources/unsubscribe");
    gone.sort();
    assert_eq!(gone, ["res://a", "res://b"]);
    assert!(rig.g.subscriptions.holders.is_empty());

    // A 2026-07-28 client has no resources/subscribe.
    let (x, out) = rig.send_with(
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe", "params": {"uri": "res://a", "_meta": meta}}),
        TransportKind::Stdio,
    );
    let (messages, _) = rig.answer_of(x, out);
    assert_eq!(messages[0]["error"]["code"], -32601, "{messages:?}");
    assert!(rig.g.subscriptions.holders.is_empty());
}

/// Every upstream page is listed, and the whole is served in pages of the
/// gateway's page size, each with the cursor of the next.
#[test]
fn resource_lists_follow_every_upstream_page_and_are_served_in_pages() {
    let mut p = FakePlatform::new();
    p.serve("res", || Subscribable(McpServer::with_tools(&["read"])));
    let options = ServeOptions {
        page_size: 2,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["res"], "", options);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (items, pages) = rig.list_all_pages(s, "resources/list", "resources", 2, 0);
    let uris: Vec<&str> = items.iter().map(|i| i["uri"].as_str().unwrap()).collect();
    assert_eq!(pages, 3);
    assert_eq!(
        uris,
        ["res://0", "res://1", "res://2", "res://3", "res://4"]
    );
    // Each downstream page asked for every upstream page.
    assert_eq!(
        rig.m
            .platform()
            .sim("res")
            .borrow()
            .sent("resources/list")
            .len(),
        9
    );
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 99, "method": "resources/list", "params": {"cursor": "not-mine"}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// A client that goes away takes its resource requests with it: the upstream
/// read is cancelled, as a call is.
#[test]
fn a_closed_exchange_cancels_its_resource_request_upstream() {
    let mut p = FakePlatform::new();
    p.serve("res", || Subscribable(McpServer::with_tools(&["read"])));
    let mut rig = Rig::new(p, &["res"]);
    rig.settle();
    let meta = stateless_meta(json!({}));
    let (x, _) = rig.send_with(
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
               "params": {"uri": "res://silent", "_meta": meta}}),
        TransportKind::Stdio,
    );
    // (No turn: the fake clock would run to the request's timeout.)
    let sim = rig.m.platform().sim("res");
    let read = sim.borrow().sent("resources/read");
    assert_eq!(read.len(), 1);
    assert!(sim.borrow().sent("notifications/cancelled").is_empty());
    rig.g.exchange_closed(&mut rig.m, x);
    // At once, not at the request's timeout (a turn would run the fake clock there).
    let cancelled = sim.borrow().sent("notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], read[0]["id"]);
    assert_eq!(cancelled[0]["params"]["reason"], "cancelled by the caller");
    rig.turn();
    assert!(rig.g.requests.is_empty());
}

/// Sends raw text on a fresh exchange.
fn send_text(rig: &mut Rig, session: Option<u64>, text: String) -> (u64, Vec<Signal>) {
    let exchange = rig.next_exchange;
    rig.next_exchange += 1;
    rig.g.receive(
        &mut rig.m,
        Inbound {
            session,
            exchange,
            kind: TransportKind::Http,
            profile: None,
            headers: Vec::new(),
            text,
        },
    );
    let out = rig.g.take_signals();
    rig.seen.extend(out.clone());
    (exchange, out)
}

fn pings(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "ping"}))
            .collect(),
    )
}

#[test]
fn batches_are_refused_where_the_revision_has_none_and_capped_where_it_has() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let refused = |rig: &mut Rig, session: Option<u64>, batch: Value| {
        let (messages, status) = rig.request_all(session, batch);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0]["error"]["code"], -32600, "{messages:?}");
        assert_eq!(messages[0]["id"], Value::Null);
        (
            messages[0]["error"]["message"].as_str().unwrap().to_owned(),
            status,
        )
    };
    // 2025-06-18 removed batching, 2025-11-25 has none: the batch is refused whole.
    for version in ["2025-06-18", "2025-11-25"] {
        let s = rig.initialize_as(version, json!({}));
        let (message, status) = refused(&mut rig, Some(s), pings(2));
        assert_eq!(status, 400);
        assert!(message.contains(version), "{message}");
    }
    // Without a session (2026-07-28 has none) too.
    let stateless = Value::Array(vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": stateless_meta(json!({}))}}),
    ]);
    let (message, status) = refused(&mut rig, None, stateless);
    assert_eq!(status, 400);
    assert!(message.contains("2025-03-26"), "{message}");
    // 2025-03-26 has batches: up to the cap.
    let s = rig.initialize_as("2025-03-26", json!({}));
    let (messages, status) = rig.request_all(Some(s), pings(MAX_BATCH));
    assert_eq!((messages.len(), status), (MAX_BATCH, 200));
    let (message, status) = refused(&mut rig, Some(s), pings(MAX_BATCH + 1));
    assert_eq!(status, 413);
    assert!(
        message.contains(&format!("at most {MAX_BATCH}")),
        "{message}"
    );
    // Text that only looks like a batch is what it is: not JSON.
    let s = rig.initialize(json!({}));
    let (x, out) = send_text(
        &mut rig,
        Some(s),
        format!("{}{}", "[".repeat(1000), "]".repeat(999)),
    );
    let (messages, status) = rig.answer_of(x, out);
    assert_eq!(
        (messages[0]["error"]["code"].as_i64(), status),
        (Some(-32700), 400)
    );
}

#[test]
fn a_batch_is_answered_as_it_is_handled_not_built_whole_first() {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        let server = McpServer::with_tools(&[]);
        // 40 tools of 10 KB each: a page of about 400 KB.
        *server.tools.borrow_mut() = (0..40)
            .map(|i| {
                json!({"name": format!("t{i}"), "description": "d".repeat(10_000),
                            "inputSchema": {"type": "object"}})
            })
            .collect();
        server
    });
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let s = rig.initialize_as("2025-03-26", json!({}));
    let batch = Value::Array(
        (0..MAX_BATCH)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
            .collect(),
    );
    let (x, mut out) = rig.send(Some(s), batch);
    let mut answers = 0;
    let mut turns = 0;
    loop {
        let bytes: usize = out
            .iter()
            .map(|s| match s {
                Signal::Message { text, .. } => text.len(),
                _ => 0,
            })
            .sum();
        // No turn holds much more than its share (one answer past the mark).
        assert!(bytes < FLUSH_BYTES + 500_000, "{bytes} bytes in one turn");
        answers += out
            .iter()
            .filter(|s| matches!(s, Signal::Message { target: Target::Exchange(e), .. } if *e == x))
            .count();
        if out
            .iter()
            .any(|s| matches!(s, Signal::End { exchange, .. } if *exchange == x))
        {
            break;
        }
        turns += 1;
        assert!(turns < 100, "the batch never ended");
        out = rig.turn();
    }
    assert_eq!(answers, MAX_BATCH);
    assert!(turns >= 10, "answered in {turns} turns");
    assert!(!rig.g.busy(&rig.m));
}

#[test]
fn a_message_of_too_many_values_is_refused_before_it_is_read() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    // Arguments of zeros: 2 bytes a value, far under any byte cap.
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"fs__read","arguments":{{"text":[{}0]}}}}}}"#,
        "0,".repeat(crate::budget::MAX_VALUES)
    );
    let (x, out) = send_text(&mut rig, Some(s), text);
    let (messages, status) = rig.answer_of(x, out);
    assert_eq!(status, 413);
    assert_eq!(messages[0]["error"]["code"], -32600);
    let message = messages[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("JSON values"), "{message}");
    // The session goes on.
    let (r, _) = rig.request(Some(s), call(6, "fs__read", json!({"text": "after"})));
    assert_eq!(texts(&r["result"]), "after");
}

#[test]
fn a_session_is_reopened_in_a_new_gateway_from_its_handle() {
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let s = rig.initialize_as(
        "2025-03-26",
        json!({"elicitation": {}, "sampling": {"tools": {}}}),
    );
    let before = rig.g.sessions.open.get(&s).cloned().unwrap();
    // A new instance: a fresh gateway over a fresh manager.
    let mut p = FakePlatform::new();
    p.serve("fs", || McpServer::with_tools(&["read"]));
    let mut fresh = Rig::new(p, &["fs"]);
    fresh.next_exchange = rig.next_exchange;
    fresh.settle();
    // A handle it never gave, with a text: not found, as before.
    let (r, status) = fresh.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!((status, r["error"]["code"].as_i64()), (404, Some(-32600)));
    // The host reopens it (no text), then its requests are served.
    let (x, out) = send_text(&mut fresh, Some(s), String::new());
    assert_eq!(
        out,
        vec![Signal::End {
            exchange: x,
            status: 202
        }]
    );
    let after = fresh.g.sessions.open.get(&s).cloned().unwrap();
    assert_eq!(after.protocol_version, "2025-03-26");
    assert!(after.elicitation && after.sampling.declared && after.sampling.tools);
    assert!(after.initialized);
    assert_eq!(
        (before.protocol_version, before.elicitation, before.sampling),
        (after.protocol_version, after.elicitation, after.sampling)
    );
    let (r, status) = fresh.request(Some(s), call(2, "fs__read", json!({"text": "kept"})));
    assert_eq!((status, texts(&r["result"])), (200, "kept".into()));
    // Batches still follow the revision it negotiated.
    let (messages, _) = fresh.request_all(Some(s), pings(2));
    assert_eq!(messages.len(), 2);
    // A session opened later gets a handle of its own.
    let t = fresh.initialize(json!({}));
    assert_ne!(handle::sequence(t), handle::sequence(s));
}

#[test]
fn a_stateless_exchange_the_client_left_ends() {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        // Never answers: the call stays in flight.
        McpServer::with_tools(&["slow"]).on_call(|_, _, _| {})
    });
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let mut request = call(1, "fs__slow", json!({"text": "x"}));
    request["params"]["_meta"] = stateless_meta(json!({}));
    let (x, _) = rig.send(None, request);
    rig.g.exchange_closed(&mut rig.m, x);
    let out = rig.g.take_signals();
    assert!(
        out.iter()
            .any(|s| matches!(s, Signal::End { exchange, .. } if *exchange == x)),
        "{out:?}"
    );
}

#[test]
fn a_log_line_fans_out_within_the_turns_budget() {
    let line = "l".repeat(200_000);
    let mut p = FakePlatform::new();
    let logged = line.clone();
    p.serve("fs", move || {
        let logged = logged.clone();
        McpServer::with_tools(&["log"]).on_call(move |_, id, out| {
            out.later(
                0,
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": logged}}),
            );
            out.reply(
                0,
                id,
                json!({"content": [{"type": "text", "text": "logged"}]}),
            );
        })
    });
    let mut rig = Rig::new(p, &["fs"]);
    rig.settle();
    let sessions: Vec<u64> = (0..60).map(|_| rig.initialize(json!({}))).collect();
    rig.seen.clear();
    let (r, _) = rig.request(Some(sessions[0]), call(1, "fs__log", json!({})));
    assert_eq!(texts(&r["result"]), "logged");
    let copies: usize = sessions.iter().map(|s| rig.standalone(*s).len()).sum();
    // Sixty copies of 200 KB would be 12 MB in one turn; the budget holds it to 4 MiB.
    assert!(copies > 0, "nobody heard the line");
    assert!(copies * line.len() <= FANOUT_BYTES, "{copies} copies");
}

#[test]
fn a_schema_dialect_serves_converted_schemas_and_leaves_out_what_it_cannot_represent() {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        let server = McpServer::with_tools(&["read", "broken"]);
        server.tools.borrow_mut()[1]["inputSchema"] =
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}});
        server.tools.borrow_mut()[0]["inputSchema"] = json!({
            "type": "object",
            "properties": {"text": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "additionalProperties": false,
        });
        server
    });
    let options = ServeOptions {
        schema_dialect: Some(crate::adapter::Dialect::Gemini),
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["fs"], "", options);
    rig.settle();
    let s = rig.initialize(json!({}));
    let (list, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    assert_eq!(tools[0]["name"], "fs__read");
    assert_eq!(
        tools[0]["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string", "nullable": true}}})
    );
    let warnings = rig.g.take_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("mcp__fs__broken") && w.contains("gemini")),
        "{warnings:?}"
    );
    // Said once for this registry, however often it is listed.
    rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert!(rig.g.take_warnings().is_empty());
    let (r, _) = rig.request(Some(s), call(3, "fs__read", json!({"text": "hi"})));
    assert_eq!(texts(&r["result"]), "hi");
}

/// The first message on exchange `x` (of what came at once, then turns) that
/// `wanted` picks.
fn message_on(rig: &mut Rig, x: u64, out: Vec<Signal>, wanted: impl Fn(&Value) -> bool) -> Value {
    let mut pending = out;
    for _ in 0..20 {
        let found = pending.iter().find_map(|sig| match sig {
            Signal::Message {
                target: Target::Exchange(e),
                text,
            } if *e == x => Some(serde_json::from_str::<Value>(text).unwrap()).filter(&wanted),
            _ => None,
        });
        if let Some(found) = found {
            return found;
        }
        pending = rig.turn();
    }
    panic!("nothing wanted reached exchange {x}")
}

/// `tools/call` of `name` as a task.
fn task_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments, "task": {"ttl": 60000}}})
}

fn task_request(id: i64, method: &str, task: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task}})
}

/// The `notifications/tasks/status` a session's stream got: (status, message).
fn task_statuses(rig: &Rig, session: u64) -> Vec<(String, Option<String>)> {
    rig.standalone(session)
        .into_iter()
        .filter(|m| m["method"] == "notifications/tasks/status")
        .map(|m| {
            let p = &m["params"];
            (
                p["status"].as_str().unwrap().to_string(),
                p["statusMessage"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn a_2025_11_25_client_runs_calls_as_tasks_of_its_own_session() {
    let mut p = FakePlatform::new();
    p.serve("a", || {
        let s = McpServer::with_tools(&["plain", "slow"]).on_call(|params, id, out| {
            let text = params["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.reply(
                5000,
                id,
                json!({"content": [{"type": "text", "text": text}]}),
            );
        });
        s.tools.borrow_mut()[1]["execution"] = json!({"taskSupport": "optional"});
        s
    });
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let s = rig.initialize_as("2025-11-25", json!({}));
    let (list, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let tools = &list["result"]["tools"];
    assert!(tools[0].get("execution").is_none(), "{tools}");
    assert_eq!(tools[1]["execution"], json!({"taskSupport": "optional"}));

    // Answered at once with the task; the call runs on.
    let (r, _) = rig.request(Some(s), task_call(2, "a__slow", json!({"text": "report"})));
    let task = &r["result"]["task"];
    let id = task["taskId"].clone();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000);
    assert!(
        task["createdAt"]
            .as_str()
            .unwrap()
            .starts_with("2026-01-01T"),
        "{task}"
    );
    let (r, _) = rig.request(Some(s), task_request(3, "tasks/get", &id));
    assert_eq!(r["result"]["status"], "working");
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/list"}),
    );
    assert_eq!(r["result"]["tasks"][0]["taskId"], id);
    // Another session does not see it.
    let other = rig.initialize_as("2025-11-25", json!({}));
    let (r, _) = rig.request(Some(other), task_request(5, "tasks/get", &id));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (r, _) = rig.request(
        Some(other),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/list"}),
    );
    assert_eq!(r["result"]["tasks"], json!([]));

    // tasks/result waits for the end, and names its task.
    let (r, _) = rig.request(Some(s), task_request(7, "tasks/result", &id));
    assert_eq!(texts(&r["result"]), "report");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    assert_eq!(task_statuses(&rig, s), [("completed".to_string(), None)]);
    let (r, _) = rig.request(Some(s), task_request(8, "tasks/get", &id));
    assert_eq!(r["result"]["status"], "completed");
    let (r, _) = rig.request(Some(s), task_request(9, "tasks/cancel", &id));
    assert_eq!(r["error"]["code"], -32602, "a finished task: {r}");

    // A forbidden tool is not run as a task.
    let (r, _) = rig.request(Some(s), task_call(10, "a__plain", json!({"text": "x"})));
    assert_eq!(r["error"]["code"], -32601, "{r}");

    // Cancelled: the call ends upstream, tasks/result says so.
    let (r, _) = rig.request(Some(s), task_call(11, "a__slow", json!({"text": "never"})));
    let id = r["result"]["task"]["taskId"].clone();
    let (r, _) = rig.request(Some(s), task_request(12, "tasks/cancel", &id));
    assert_eq!(r["result"]["status"], "cancelled");
    let (r, _) = rig.request(Some(s), task_request(13, "tasks/result", &id));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{r}"
    );
    let cancelled = rig
        .m
        .platform()
        .sim("a")
        .borrow()
        .sent("notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "the upstream call was cancelled");

    // An older session has no tasks.
    let old = rig.initialize(json!({}));
    let (list, _) = rig.request(
        Some(old),
        json!({"jsonrpc": "2.0", "id": 14, "method": "tools/list"}),
    );
    assert!(list["result"]["tools"][1].get("execution").is_none());
    let (r, _) = rig.request(Some(old), task_request(15, "tasks/get", &id));
    assert_eq!(r["error"]["code"], -32601);
}

#[test]
fn a_tasks_input_requests_go_out_on_its_tasks_result_stream() {
    let mut p = FakePlatform::new();
    p.serve("a", || {
        let s = McpServer::with_tools(&["ask"]);
        s.tools.borrow_mut()[0]["execution"] = json!({"taskSupport": "optional"});
        Asking(s)
    });
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let s = rig.initialize_as("2025-11-25", json!({"elicitation": {}}));
    let (r, _) = rig.request(Some(s), task_call(1, "a__ask", json!({})));
    let id = r["result"]["task"]["taskId"].clone();
    while task_statuses(&rig, s).is_empty() {
        rig.turn();
    }
    assert_eq!(
        task_statuses(&rig, s),
        [("input_required".to_string(), None)]
    );
    let (x, out) = rig.send(Some(s), task_request(2, "tasks/result", &id));
    let question = message_on(&mut rig, x, out, |m| m["method"] == "elicitation/create");
    assert_eq!(question["params"]["message"], "Sure?");
    assert_eq!(
        question["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    rig.send(
        Some(s),
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": true}}}),
    );
    let (messages, _) = rig.answer_of(x, Vec::new());
    let result = messages.last().unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(
        texts(&result["result"]),
        r#"{"action":"accept","content":{"ok":true}}"#
    );
    let statuses: Vec<String> = task_statuses(&rig, s).into_iter().map(|(s, _)| s).collect();
    assert_eq!(statuses, ["input_required", "working", "completed"]);
}

/// A 2025-11-25 server whose `research` tool requires a task: created at once,
/// `working` with a message, then `completed` at the second `tasks/get`.
struct Researching {
    server: McpServer,
    polls: u32,
}

impl Behaviour for Researching {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        let id = &m["id"];
        let task = |status: &str, message: &str| {
            json!({"taskId": "up-1", "status": status, "statusMessage": message,
                "createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z",
                "ttl": 60000, "pollInterval": 100})
        };
        match m["method"].as_str() {
            Some("tools/call") => {
                assert!(m["params"]["task"].is_object(), "called as a task: {m}");
                out.reply(0, id, json!({"task": task("working", "Gathering")}));
            }
            Some("tasks/get") => {
                self.polls += 1;
                let state = if self.polls < 2 {
                    task("working", "Writing")
                } else {
                    task("completed", "Done")
                };
                out.reply(0, id, state);
            }
            Some("tasks/result") => {
                out.reply(
                    0,
                    id,
                    json!({"content": [{"type": "text", "text": "# Report"}]}),
                );
            }
            _ => self.server.on_message(m, out),
        }
    }
}

#[test]
fn a_tool_that_requires_a_task_upstream_serves_plain_calls_and_tasks() {
    let mut p = FakePlatform::new();
    p.serve("a", || {
        let server = McpServer::with_tools(&["research"]);
        server.tools.borrow_mut()[0]["execution"] = json!({"taskSupport": "required"});
        Researching { server, polls: 0 }
    });
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    // A client without tasks gets the result: the gateway polled for it.
    let old = rig.initialize(json!({}));
    let (r, _) = rig.request(Some(old), call(1, "a__research", json!({})));
    assert_eq!(texts(&r["result"]), "# Report", "{r}");

    // A 2025-11-25 client sees it as optional, and may run it as a task whose
    // status carries the upstream task's messages.
    let s = rig.initialize_as("2025-11-25", json!({}));
    let (list, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(
        list["result"]["tools"][0]["execution"],
        json!({"taskSupport": "optional"})
    );
    let (r, _) = rig.request(Some(s), call(3, "a__research", json!({})));
    assert_eq!(texts(&r["result"]), "# Report", "a plain call: {r}");
    let (r, _) = rig.request(Some(s), task_call(4, "a__research", json!({})));
    let id = r["result"]["task"]["taskId"].clone();
    let (r, _) = rig.request(Some(s), task_request(5, "tasks/result", &id));
    assert_eq!(texts(&r["result"]), "# Report");
    let messages: Vec<Option<String>> =
        task_statuses(&rig, s).into_iter().map(|(_, m)| m).collect();
    assert!(messages.contains(&Some("Gathering".into())), "{messages:?}");
    assert_eq!(task_statuses(&rig, s).last().unwrap().0, "completed");
}

/// A 2025 upstream serving skills (the skills extension): `skills/list` one
/// skill a page, `skills/get` of its own (`-32602` for any other URI), and
/// `resources/read` of their `SKILL.md` (`-32002` for any other URI); with
/// `directories`, it declares `directoryRead` and answers
/// `resources/directory/read` of a skill's directory (its `SKILL.md` and a
/// `references` subdirectory) and of that subdirectory (one file), one child a
/// page, `-32602` for any other URI.
struct SkillServer {
    inner: McpServer,
    skills: Vec<&'static str>,
    directories: bool,
}

/// The children of `uri` in a [`SkillServer`] serving `skills`.
fn skill_children(skills: &[&str], uri: &str) -> Option<Vec<Value>> {
    skills.iter().find_map(|s| {
        let dir = format!("skill://{s}");
        let references = format!("{dir}/references");
        if uri == dir {
            Some(vec![
                json!({"uri": skill_uri(s), "name": "SKILL.md", "mimeType": "text/markdown"}),
                json!({"uri": references, "name": "references", "mimeType": "inode/directory"}),
            ])
        } else if uri == references {
            Some(vec![
                json!({"uri": format!("{references}/FORMS.md"), "name": "FORMS.md"}),
            ])
        } else {
            None
        }
    })
}

fn skill_uri(name: &str) -> String {
    format!("skill://{name}/SKILL.md")
}

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: the {name} skill\n---\nDo {name}.\n")
}

/// A skill's entry; the skill named `dynamic` has generated files
/// (`resources: "dynamic"`).
fn skill_entry(name: &str) -> Value {
    let uri = skill_uri(name);
    let size = skill_md(name).len();
    let resources = if name == "dynamic" {
        json!("dynamic")
    } else {
        json!([{"uri": uri, "digest": format!("sha256:{}", "0".repeat(64)), "size": size}])
    };
    json!({"uri": uri, "frontmatter": {"name": name, "description": format!("the {name} skill")},
           "resources": resources})
}

impl SkillServer {
    fn serving(skills: &[&'static str]) -> SkillServer {
        SkillServer {
            inner: McpServer::with_tools(&["x"]),
            skills: skills.to_vec(),
            directories: false,
        }
    }

    fn with_directories(skills: &[&'static str]) -> SkillServer {
        SkillServer {
            directories: true,
            ..SkillServer::serving(skills)
        }
    }

    fn own(&self, uri: &str) -> Option<&'static str> {
        self.skills.iter().copied().find(|s| skill_uri(s) == uri)
    }
}

impl Behaviour for SkillServer {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        let error = |code: i64, message: String| json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": code, "message": message}});
        let uri = m["params"]["uri"].as_str().unwrap_or_default();
        match m["method"].as_str() {
            Some("initialize") => {
                let skills = if self.directories {
                    json!({"directoryRead": true})
                } else {
                    json!({})
                };
                out.reply(
                    0,
                    &m["id"],
                    json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "skills", "version": "1"},
                           "capabilities": {"tools": {}, "resources": {},
                                            "extensions": {"io.modelcontextprotocol/skills": skills}}}),
                );
            }
            Some("resources/directory/read") if self.directories => {
                match skill_children(&self.skills, uri) {
                    Some(children) => {
                        let start: usize = m["params"]["cursor"]
                            .as_str()
                            .and_then(|c| c.parse().ok())
                            .unwrap_or(0);
                        let mut result = json!({"resources": children.get(start..start + 1)});
                        if start + 1 < children.len() {
                            result["nextCursor"] = json!((start + 1).to_string());
                        }
                        out.reply(0, &m["id"], result);
                    }
                    None => out.later(0, error(-32602, format!("{uri} is not a directory"))),
                }
            }
            Some("skills/list") => {
                let start: usize = m["params"]["cursor"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let items: Vec<Value> = self
                    .skills
                    .iter()
                    .skip(start)
                    .take(1)
                    .map(|s| skill_entry(s))
                    .collect();
                let mut result = json!({"skills": items});
                if start + 1 < self.skills.len() {
                    result["nextCursor"] = json!((start + 1).to_string());
                }
                out.reply(0, &m["id"], result);
            }
            Some("skills/get") => match self.own(uri) {
                Some(s) => out.reply(0, &m["id"], json!({"skill": skill_entry(s)})),
                None => out.later(0, error(-32602, format!("no skill {uri}"))),
            },
            Some("resources/read") => match self.own(uri) {
                Some(s) => out.reply(
                    0,
                    &m["id"],
                    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": skill_md(s)}]}),
                ),
                None => out.later(0, error(-32002, format!("no resource {uri}"))),
            },
            _ => self.inner.on_message(m, out),
        }
    }
}

/// Skills pass through as resources do: every server's skills in one list,
/// served in pages, URIs kept; `skills/get` answered by the server that has
/// the skill (asked alone once a list named it), `-32602` for a URI none has;
/// a skill's `SKILL.md` read with `resources/read`; the extension declared in
/// both eras, with the 2026-07-28 caching hints on its results.
#[test]
fn skills_of_every_server_are_listed_in_pages_and_got_from_the_server_that_has_them() {
    let mut p = FakePlatform::new();
    p.serve("a", || SkillServer::serving(&["alpha", "beta"]));
    p.serve("b", || SkillServer::serving(&["gamma"]));
    let options = ServeOptions {
        page_size: 2,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["a", "b"], "", options);
    rig.settle();
    let skills = json!({"io.modelcontextprotocol/skills": {"directoryRead": true}});
    assert_eq!(
        lifecycle::initialize_result("2025-11-25", true)["capabilities"]["extensions"],
        skills
    );
    let s = rig.initialize(json!({}));
    let sent = |rig: &Rig, server: &str| {
        rig.m
            .platform()
            .sim(server)
            .borrow()
            .sent("skills/get")
            .len()
    };

    // Before any list, a get asks every server offering skills.
    let get = |id: i64, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "skills/get", "params": {"uri": uri}});
    let (r, _) = rig.request(Some(s), get(1, &skill_uri("alpha")));
    assert_eq!(r["result"]["skill"], skill_entry("alpha"), "{r}");
    assert_eq!((sent(&rig, "a"), sent(&rig, "b")), (1, 1));

    let (items, pages) = rig.list_all_pages(s, "skills/list", "skills", 2, 10);
    for item in &items {
        assert_eq!(item.get("server"), None, "{item}");
    }
    let uris: Vec<&str> = items.iter().map(|i| i["uri"].as_str().unwrap()).collect();
    assert_eq!(pages, 2);
    assert_eq!(
        uris,
        [skill_uri("alpha"), skill_uri("beta"), skill_uri("gamma")]
    );

    // Listed: the get goes to the server that listed it, alone.
    let (r, _) = rig.request(Some(s), get(2, &skill_uri("gamma")));
    assert_eq!(r["result"]["skill"], skill_entry("gamma"), "{r}");
    assert_eq!((sent(&rig, "a"), sent(&rig, "b")), (1, 2));

    // A URI no server serves, and no URI at all: invalid params.
    let (r, _) = rig.request(Some(s), get(3, "skill://nowhere/SKILL.md"));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 4, "method": "skills/get", "params": {}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // The skill's files are resources.
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": skill_uri("gamma")}}),
    );
    assert_eq!(r["result"]["contents"][0]["text"], skill_md("gamma"), "{r}");

    // 2026-07-28: declared in discover; results carry caching hints.
    let meta = stateless_meta(json!({}));
    let (r, _) = rig.request(
        None,
        json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {"_meta": meta}}),
    );
    assert_eq!(
        r["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{r}"
    );
    for (id, method, params) in [
        (7, "skills/list", json!({"_meta": meta})),
        (
            8,
            "skills/get",
            json!({"uri": skill_uri("beta"), "_meta": meta}),
        ),
    ] {
        let (r, _) = rig.request(
            None,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        assert_eq!(r["result"]["ttlMs"], 0, "{r}");
        assert_eq!(r["result"]["cacheScope"], "private", "{r}");
    }
}

/// `resources/directory/read` (the skills extension's `directoryRead`, which
/// the gateway declares): before any list it asks every server declaring it;
/// once a list named a skill, the server that listed it alone, for the skill's
/// directory and the directories under it; every upstream page followed and
/// served in pages; `-32602` for a URI no server has as a directory, for a
/// missing `uri`, and when no server declares `directoryRead`.
#[test]
fn skill_directories_are_read_from_the_server_that_has_them() {
    let mut p = FakePlatform::new();
    p.serve("a", || SkillServer::with_directories(&["alpha"]));
    p.serve("b", || SkillServer::with_directories(&["gamma"]));
    p.serve("c", || SkillServer::serving(&["delta"]));
    let options = ServeOptions {
        page_size: 1,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["a", "b", "c"], "", options);
    rig.settle();
    let s = rig.initialize(json!({}));
    let sent = |rig: &Rig, server: &str| {
        rig.m
            .platform()
            .sim(server)
            .borrow()
            .sent("resources/directory/read")
            .len()
    };
    let read = |rig: &mut Rig, id: i64, params: Value| {
        rig.request(
            Some(s),
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/directory/read", "params": params}),
        )
        .0
    };
    let uris = |r: &Value| -> Vec<String> {
        r["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|c| c["uri"].as_str().unwrap().to_string())
            .collect()
    };

    // Before any list: every server declaring directoryRead is asked (not
    // `c`); the one that has it answers, both upstream pages followed, served
    // one child a page.
    let r = read(&mut rig, 1, json!({"uri": "skill://alpha"}));
    assert_eq!(uris(&r), [skill_uri("alpha")], "{r}");
    assert_eq!(r["result"]["nextCursor"], "1", "{r}");
    assert_eq!(
        (sent(&rig, "a"), sent(&rig, "b"), sent(&rig, "c")),
        (2, 1, 0)
    );
    let r = read(&mut rig, 2, json!({"uri": "skill://alpha", "cursor": "1"}));
    assert_eq!(uris(&r), ["skill://alpha/references"], "{r}");
    assert_eq!(r["result"]["resources"][0]["mimeType"], "inode/directory");
    assert_eq!(r["result"].get("nextCursor"), None, "{r}");
    for child in r["result"]["resources"].as_array().unwrap() {
        assert_eq!(child.get("server"), None, "{child}");
    }

    // Listed: the skill's server alone, for its directory and under it.
    rig.list_all_pages(s, "skills/list", "skills", 1, 10);
    let before = (sent(&rig, "a"), sent(&rig, "b"));
    let r = read(&mut rig, 20, json!({"uri": "skill://gamma/references"}));
    assert_eq!(uris(&r), ["skill://gamma/references/FORMS.md"], "{r}");
    assert_eq!((sent(&rig, "a"), sent(&rig, "b")), (before.0, before.1 + 1));

    // A file, a URI nobody serves, no URI: invalid params, the upstream's
    // reason passed on.
    for (id, params) in [
        (21, json!({"uri": skill_uri("gamma")})),
        (22, json!({"uri": "skill://nowhere"})),
        (23, json!({})),
    ] {
        let r = read(&mut rig, id, params);
        assert_eq!(r["error"]["code"], -32602, "{r}");
    }

    // No server declares directoryRead: nothing is sent.
    let mut p = FakePlatform::new();
    p.serve("c", || SkillServer::serving(&["delta"]));
    let mut rig = Rig::with(p, &["c"], "", ServeOptions::default());
    rig.settle();
    let s = rig.initialize(json!({}));
    let (r, _) = rig.request(
        Some(s),
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/directory/read", "params": {"uri": "skill://delta"}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("directoryRead"),
        "{r}"
    );
    assert_eq!(sent(&rig, "c"), 0);
}

/// A skill whose files are generated (`resources: "dynamic"`) cannot be loaded
/// (nothing to verify), but it is described: listed, and got with `skills/get`,
/// before and after a listing named it.
#[test]
fn a_dynamic_skill_is_listed_and_got_through_the_gateway() {
    let mut p = FakePlatform::new();
    p.serve("d", || SkillServer::serving(&["dynamic", "alpha"]));
    let mut rig = Rig::new(p, &["d"]);
    rig.settle();
    let s = rig.initialize(json!({}));
    let get = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "skills/get", "params": {"uri": skill_uri("dynamic")}});
    let (r, _) = rig.request(Some(s), get(1));
    assert_eq!(r["result"]["skill"], skill_entry("dynamic"), "{r}");
    let (items, _) = rig.list_all_pages(s, "skills/list", "skills", 50, 10);
    assert_eq!(items[0], skill_entry("dynamic"));
    let (r, _) = rig.request(Some(s), get(2));
    assert_eq!(r["result"]["skill"], skill_entry("dynamic"), "{r}");
}

/// The `_meta` of a 2026-07-28 request that declares the tasks extension (and
/// form elicitation).
fn tasks_meta() -> Value {
    stateless_meta(json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}))
}

/// A 2026-07-28 request of `method` with `params` and `meta`.
fn v2(id: i64, method: &str, mut params: Value, meta: &Value) -> Value {
    params["_meta"] = meta.clone();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `tasks/get` of a 2026-07-28 client, turned until the task's status is
/// `status` (or terminal).
fn poll_until(rig: &mut Rig, id: &Value, status: &str, meta: &Value) -> Value {
    for n in 0..200 {
        let (r, _) = rig.request(None, v2(1000 + n, "tasks/get", json!({"taskId": id}), meta));
        let now = r["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if now == status || ["completed", "failed", "cancelled"].contains(&now.as_str()) {
            return r["result"].clone();
        }
        rig.turn();
    }
    panic!("task {id} never reached {status}")
}

/// A server whose `slow` tool (`execution.taskSupport: optional`) answers its
/// text after 5 s, `broken` fails with a JSON-RPC error, `sorry` with a tool
/// error; `plain` runs as no task.
fn task_server() -> McpServer {
    let s = McpServer::with_tools(&["plain", "slow", "broken", "sorry"]).on_call(|params, id, out| {
        let text = params["arguments"]["text"].as_str().unwrap_or("").to_string();
        match params["name"].as_str() {
            Some("broken") => out.later(
                100,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "it broke"}}),
            ),
            Some("sorry") => out.reply(
                100,
                id,
                json!({"content": [{"type": "text", "text": "no luck"}], "isError": true}),
            ),
            Some("slow") => out.reply(5000, id, json!({"content": [{"type": "text", "text": text}]})),
            _ => out.reply(0, id, json!({"content": [{"type": "text", "text": text}]})),
        }
    });
    for t in s.tools.borrow_mut().iter_mut().skip(1) {
        t["execution"] = json!({"taskSupport": "optional"});
    }
    s
}

#[test]
fn a_2026_client_that_declares_the_tasks_extension_gets_tasks_it_polls() {
    let mut p = FakePlatform::new();
    p.serve("a", task_server);
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(None, v2(1, "server/discover", json!({}), &meta));
    assert_eq!(
        r["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{r}"
    );
    assert!(r["result"]["capabilities"].get("tasks").is_none(), "{r}");

    // A tool that runs as a task: a flat CreateTaskResult at once, no `task`
    // wrapper, the extension's field names.
    let started = rig.m.platform().now_ms();
    let (r, _) = rig.request(
        None,
        v2(
            2,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "report"}}),
            &meta,
        ),
    );
    let created = &r["result"];
    assert_eq!(created["resultType"], "task", "{r}");
    assert_eq!(rig.m.platform().now_ms(), started, "at once");
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], tasks::DEFAULT_TTL_MS);
    assert_eq!(created["pollIntervalMs"], tasks::POLL_INTERVAL_MS);
    for absent in [
        "task",
        "ttl",
        "pollInterval",
        "result",
        "error",
        "inputRequests",
        "requestState",
    ] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = created["taskId"].clone();
    let text = id.as_str().unwrap();
    assert!(
        text.starts_with("mcpbox-task-") && text.len() == "mcpbox-task-".len() + 32,
        "an unguessable id: {text}"
    );
    let (r, _) = rig.request(None, v2(3, "tasks/get", json!({"taskId": id}), &meta));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["status"], "working");
    assert!(r["result"].get("result").is_none(), "{r}");
    let done = poll_until(&mut rig, &id, "completed", &meta);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(texts(&done["result"]), "report");
    assert!(
        done["result"].get("_meta").is_none(),
        "no related-task: {done}"
    );

    // A tool error is a completed task whose result says so; a JSON-RPC error
    // a failed one, with the error and no result.
    let (r, _) = rig.request(
        None,
        v2(
            4,
            "tools/call",
            json!({"name": "a__sorry", "arguments": {}}),
            &meta,
        ),
    );
    let done = poll_until(&mut rig, &r["result"]["taskId"], "completed", &meta);
    assert_eq!(
        (done["status"].clone(), done["result"]["isError"].clone()),
        (json!("completed"), json!(true)),
        "{done}"
    );
    let (r, _) = rig.request(
        None,
        v2(
            5,
            "tools/call",
            json!({"name": "a__broken", "arguments": {}}),
            &meta,
        ),
    );
    let done = poll_until(&mut rig, &r["result"]["taskId"], "failed", &meta);
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], -32603, "{done}");
    assert!(
        done["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it broke"),
        "{done}"
    );
    assert!(done.get("result").is_none(), "{done}");

    // A tool that runs as no task is answered plainly, a legacy `task` member
    // changes nothing; a client without the extension gets plain results.
    let (r, _) = rig.request(
        None,
        v2(
            6,
            "tools/call",
            json!({"name": "a__plain", "arguments": {"text": "x"}, "task": {"ttl": 1000}}),
            &meta,
        ),
    );
    assert_eq!(
        (r["result"]["resultType"].clone(), texts(&r["result"])),
        (json!("complete"), "x".into()),
        "{r}"
    );
    let plain = stateless_meta(json!({}));
    let (r, _) = rig.request(
        None,
        v2(
            7,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "y"}}),
            &plain,
        ),
    );
    assert_eq!(
        (r["result"]["resultType"].clone(), texts(&r["result"])),
        (json!("complete"), "y".into()),
        "{r}"
    );
    assert!(r["result"].get("taskId").is_none(), "{r}");
}

#[test]
fn the_extensions_task_methods_need_it_and_cancel_acknowledges_any_id() {
    let mut p = FakePlatform::new();
    p.serve("a", task_server);
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(
        None,
        v2(
            1,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "never"}}),
            &meta,
        ),
    );
    let id = r["result"]["taskId"].clone();

    // Without the extension on the request: -32021, naming it.
    let plain = stateless_meta(json!({}));
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
        .into_iter()
        .enumerate()
    {
        let (r, status) = rig.request(
            None,
            v2(
                2 + n as i64,
                method,
                json!({"taskId": id, "inputResponses": {}}),
                &plain,
            ),
        );
        assert_eq!(
            (r["error"]["code"].as_i64(), status),
            (Some(-32021), 400),
            "{method}: {r}"
        );
        assert_eq!(
            r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json!({}),
            "{r}"
        );
    }
    // The 2025-11-25 methods the extension removed.
    for (n, method) in ["tasks/result", "tasks/list"].into_iter().enumerate() {
        let (r, _) = rig.request(
            None,
            v2(10 + n as i64, method, json!({"taskId": id}), &meta),
        );
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    // An unknown id: tasks/get says so; cancel and update acknowledge.
    let nobody = json!("mcpbox-task-0123456789abcdef0123456789abcdef");
    let (r, _) = rig.request(None, v2(20, "tasks/get", json!({"taskId": nobody}), &meta));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    for (n, method) in ["tasks/cancel", "tasks/update"].into_iter().enumerate() {
        let (r, _) = rig.request(
            None,
            v2(
                21 + n as i64,
                method,
                json!({"taskId": nobody, "inputResponses": {}}),
                &meta,
            ),
        );
        assert_eq!(
            r["result"],
            json!({"resultType": "complete"}),
            "{method}: {r}"
        );
    }
    // Cancel: an empty acknowledgement; the task is cancelled and so is its call.
    let (r, _) = rig.request(None, v2(30, "tasks/cancel", json!({"taskId": id}), &meta));
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
    let (r, _) = rig.request(None, v2(31, "tasks/get", json!({"taskId": id}), &meta));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    assert!(r["result"].get("error").is_none(), "{r}");
    let cancelled = rig
        .m
        .platform()
        .sim("a")
        .borrow()
        .sent("notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "the upstream call was cancelled");
    // Again, once it ended: the same acknowledgement.
    let (r, _) = rig.request(None, v2(32, "tasks/cancel", json!({"taskId": id}), &meta));
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
}

#[test]
fn one_endpoints_tasks_are_not_seen_from_another_or_from_a_2025_session() {
    let mut p = FakePlatform::new();
    p.serve("a", task_server);
    let profiles =
        r#", "profiles": {"one": {"allow": ["mcp__a__*"]}, "two": {"allow": ["mcp__a__*"]}}"#;
    let mut rig = Rig::with(p, &["a"], profiles, ServeOptions::default());
    rig.settle();
    let meta = tasks_meta();
    let on = |profile: &str, id: i64, method: &str, params: Value| {
        (profile.to_string(), v2(id, method, params, &meta))
    };
    let ask = |rig: &mut Rig, (profile, message): (String, Value)| {
        let (x, first) = rig.send_with(None, Some(&profile), message, TransportKind::Http);
        let (messages, _) = rig.answer_of(x, first);
        messages.last().cloned().unwrap()
    };
    let r = ask(
        &mut rig,
        on(
            "one",
            1,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "mine"}}),
        ),
    );
    let id = r["result"]["taskId"].clone();
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let r = ask(&mut rig, on("one", 2, "tasks/get", json!({"taskId": id})));
    assert_eq!(r["result"]["status"], "working", "{r}");
    // Another endpoint: not found, and its cancel changes nothing.
    let r = ask(&mut rig, on("two", 3, "tasks/get", json!({"taskId": id})));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = ask(
        &mut rig,
        on("two", 4, "tasks/cancel", json!({"taskId": id})),
    );
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
    let r = ask(&mut rig, on("one", 5, "tasks/get", json!({"taskId": id})));
    assert_eq!(
        r["result"]["status"], "working",
        "another's cancel did nothing: {r}"
    );
    // A 2025-11-25 session sees none of them, nor they its tasks.
    let s = rig.initialize_as("2025-11-25", json!({}));
    let (r, _) = rig.request(Some(s), task_request(6, "tasks/get", &id));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (r, _) = rig.request(Some(s), task_call(7, "a__slow", json!({"text": "theirs"})));
    let theirs = r["result"]["task"]["taskId"].clone();
    let r = ask(
        &mut rig,
        on("one", 8, "tasks/get", json!({"taskId": theirs})),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// A server whose `ask` tool asks one question, and `ask2` two at once; each
/// answers with the answers it got, once it has them all.
struct AskingMany {
    inner: McpServer,
    answers: BTreeMap<String, Vec<Value>>,
}

impl Behaviour for AskingMany {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        let name = m["params"]["name"].as_str().unwrap_or_default();
        if m["method"] == "tools/call" && (name == "ask" || name == "ask2") {
            let questions: &[&str] = if name == "ask" {
                &["one"]
            } else {
                &["one", "two"]
            };
            for q in questions {
                out.later(
                    0,
                    json!({"jsonrpc": "2.0", "id": format!("{q}-{}-{}", questions.len(), m["id"]), "method": "elicitation/create",
                        "params": {"message": format!("Question {q}?"), "requestedSchema": {"type": "object",
                            "properties": {"ok": {"type": "boolean"}}}}}),
                );
            }
            return;
        }
        if m.get("method").is_none()
            && let Some(id) = m["id"].as_str()
            && let [_, count, call] = id.splitn(3, '-').collect::<Vec<_>>()[..]
        {
            let got = self.answers.entry(call.to_string()).or_default();
            got.push(m["result"].clone());
            if got.len().to_string() == count {
                let call: Value = serde_json::from_str(call).unwrap();
                let text = Value::Array(got.clone()).to_string();
                out.reply(
                    0,
                    &call,
                    json!({"content": [{"type": "text", "text": text}]}),
                );
            }
            return;
        }
        self.inner.on_message(m, out);
    }
}

#[test]
fn a_2026_tasks_questions_are_asked_in_tasks_get_and_answered_with_tasks_update() {
    let mut p = FakePlatform::new();
    p.serve("a", || {
        let inner = McpServer::with_tools(&["ask", "ask2"]);
        for t in inner.tools.borrow_mut().iter_mut() {
            t["execution"] = json!({"taskSupport": "optional"});
        }
        AskingMany {
            inner,
            answers: BTreeMap::new(),
        }
    });
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(
        None,
        v2(
            1,
            "tools/call",
            json!({"name": "a__ask", "arguments": {}}),
            &meta,
        ),
    );
    let id = r["result"]["taskId"].clone();
    let task = poll_until(&mut rig, &id, "input_required", &meta);
    assert_eq!(task["status"], "input_required", "{task}");
    let asks = task["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .clone();
    assert_eq!(asks.len(), 1, "{task}");
    let (key, ask) = asks.iter().next().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Question one?");
    // A key it never asked is ignored; the task still waits.
    let (r, _) = rig.request(
        None,
        v2(
            2,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"nope": {"action": "accept"}}}),
            &meta,
        ),
    );
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
    let (r, _) = rig.request(None, v2(3, "tasks/get", json!({"taskId": id}), &meta));
    assert_eq!(r["result"]["status"], "input_required", "{r}");
    let (r, _) = rig.request(
        None,
        v2(4, "tasks/update", json!({"taskId": id, "inputResponses": {key.clone(): {"action": "accept", "content": {"ok": true}}}}), &meta),
    );
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
    let done = poll_until(&mut rig, &id, "completed", &meta);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        texts(&done["result"]),
        r#"[{"action":"accept","content":{"ok":true}}]"#
    );

    // Two questions at once, answered one at a time: input_required until both are.
    let (r, _) = rig.request(
        None,
        v2(
            5,
            "tools/call",
            json!({"name": "a__ask2", "arguments": {}}),
            &meta,
        ),
    );
    let id = r["result"]["taskId"].clone();
    let mut task = poll_until(&mut rig, &id, "input_required", &meta);
    for _ in 0..5 {
        if task["inputRequests"].as_object().map_or(0, |a| a.len()) == 2 {
            break;
        }
        rig.turn();
        task = poll_until(&mut rig, &id, "input_required", &meta);
    }
    let keys: Vec<String> = task["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{task}");
    let answer = |key: &str| json!({key: {"action": "accept", "content": {"ok": true}}});
    let (r, _) = rig.request(
        None,
        v2(
            6,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answer(&keys[0])}),
            &meta,
        ),
    );
    assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
    let (r, _) = rig.request(None, v2(7, "tasks/get", json!({"taskId": id}), &meta));
    assert_eq!(r["result"]["status"], "input_required", "{r}");
    let left: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(left, [&keys[1]], "{r}");
    rig.request(
        None,
        v2(
            8,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answer(&keys[1])}),
            &meta,
        ),
    );
    let done = poll_until(&mut rig, &id, "completed", &meta);
    assert_eq!(done["status"], "completed", "{done}");
}

#[test]
fn a_2026_tasks_status_goes_to_the_listens_that_named_it() {
    let mut p = FakePlatform::new();
    p.serve("a", task_server);
    let mut rig = Rig::new(p, &["a"]);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(
        None,
        v2(
            1,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "told"}}),
            &meta,
        ),
    );
    let id = r["result"]["taskId"].clone();
    let (listen, out) = rig.send(
        None,
        v2(
            2,
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id, "mcpbox-task-nobody"]}}),
            &meta,
        ),
    );
    let (other, _) = rig.send(
        None,
        v2(
            3,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            &meta,
        ),
    );
    let ack: Value = match &out[0] {
        Signal::Message { text, .. } => serde_json::from_str(text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": [id]}),
        "{ack}"
    );
    let done = poll_until(&mut rig, &id, "completed", &meta);
    assert_eq!(done["status"], "completed");
    let on = |rig: &Rig, exchange: u64| -> Vec<Value> {
        rig.seen
            .iter()
            .filter_map(|s| match s {
                Signal::Message {
                    target: Target::Exchange(x),
                    text,
                } if *x == exchange => Some(serde_json::from_str::<Value>(text).unwrap()),
                _ => None,
            })
            .filter(|m| m["method"] == "notifications/tasks/status")
            .collect()
    };
    let told = on(&rig, listen);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["params"]["taskId"], id);
    assert_eq!(told[0]["params"]["status"], "completed");
    assert_eq!(texts(&told[0]["params"]["result"]), "told");
    assert_eq!(
        told[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    assert!(on(&rig, other).is_empty(), "a listen that did not name it");
}

/// A server whose `ask` tool asks a question, then takes 5 s to answer.
struct AskThenSlow(McpServer);

impl Behaviour for AskThenSlow {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        if m["method"] == "tools/call" && m["params"]["name"] == "ask" {
            out.later(
                0,
                json!({"jsonrpc": "2.0", "id": format!("ask-{}", m["id"]), "method": "elicitation/create",
                    "params": {"message": "Name?", "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}}}}),
            );
            return;
        }
        if m.get("method").is_none()
            && let Some(call) = m["id"].as_str().and_then(|i| i.strip_prefix("ask-"))
        {
            let call: Value = serde_json::from_str(call).unwrap();
            let text = format!(
                "Hello, {}!",
                m["result"]["content"]["name"].as_str().unwrap_or("?")
            );
            out.reply(
                5000,
                &call,
                json!({"content": [{"type": "text", "text": text}]}),
            );
            return;
        }
        self.0.on_message(m, out);
    }
}

/// A tool no server runs as a task still becomes one for a client that takes
/// tasks, once it runs past TASK_AFTER_MS; a quick one is answered plainly. A
/// call that asks first goes through an `input_required` round, and becomes a
/// task after it, should it then run long.
#[test]
fn a_long_call_of_a_2026_client_that_takes_tasks_is_answered_with_a_task() {
    let mut p = FakePlatform::new();
    p.serve("a", || {
        McpServer::with_tools(&["quick", "long"]).on_call(|params, id, out| {
            let delay = if params["name"] == "long" { 5000 } else { 10 };
            out.reply(
                delay,
                id,
                json!({"content": [{"type": "text", "text": "done"}]}),
            );
        })
    });
    p.serve("b", || AskThenSlow(McpServer::with_tools(&["ask"])));
    let mut rig = Rig::new(p, &["a", "b"]);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(
        None,
        v2(
            1,
            "tools/call",
            json!({"name": "a__quick", "arguments": {}}),
            &meta,
        ),
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let started = rig.m.platform().now_ms();
    let (r, _) = rig.request(
        None,
        v2(
            2,
            "tools/call",
            json!({"name": "a__long", "arguments": {}}),
            &meta,
        ),
    );
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let waited = rig.m.platform().now_ms() - started;
    assert!(
        (tasks::TASK_AFTER_MS..5000).contains(&waited),
        "answered after {waited} ms"
    );
    let done = poll_until(&mut rig, &r["result"]["taskId"], "completed", &meta);
    assert_eq!(texts(&done["result"]), "done", "{done}");
    // A client without the extension waits for the result.
    let plain = stateless_meta(json!({}));
    let (r, _) = rig.request(
        None,
        v2(
            3,
            "tools/call",
            json!({"name": "a__long", "arguments": {}}),
            &plain,
        ),
    );
    assert_eq!(texts(&r["result"]), "done", "{r}");

    // Asked first (no task yet), then long: a task after the retry.
    let (r, _) = rig.request(
        None,
        v2(
            4,
            "tools/call",
            json!({"name": "b__ask", "arguments": {}}),
            &meta,
        ),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"].get("taskId").is_none(), "{r}");
    let key = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    // The user takes a while: the first call's half second passes meanwhile.
    let asked = rig.m.platform().now_ms();
    rig.turn();
    assert!(rig.m.platform().now_ms() >= asked + tasks::TASK_AFTER_MS);
    let retry = json!({"name": "b__ask", "arguments": {}, "requestState": r["result"]["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}}});
    let (r, _) = rig.request(None, v2(5, "tools/call", retry, &meta));
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert!(r["result"].get("requestState").is_none(), "{r}");
    let done = poll_until(&mut rig, &r["result"]["taskId"], "completed", &meta);
    assert_eq!(texts(&done["result"]), "Hello, Alice!", "{done}");
}

/// An instance that lives for one request (the stock component) keeps no
/// tasks, so it offers none: no extension in `server/discover`, no `tasks` in a
/// 2025-11-25 `initialize`, and a long call's client gets the result.
#[test]
fn a_gateway_that_cannot_keep_tasks_offers_none() {
    let mut p = FakePlatform::new();
    p.serve("a", task_server);
    let options = ServeOptions {
        keeps_tasks: false,
        ..ServeOptions::default()
    };
    let mut rig = Rig::with(p, &["a"], "", options);
    rig.settle();
    let meta = tasks_meta();
    let (r, _) = rig.request(None, v2(1, "server/discover", json!({}), &meta));
    assert!(
        r["result"]["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_none(),
        "{r}"
    );
    let (r, _) = rig.request(
        None,
        v2(
            2,
            "tools/call",
            json!({"name": "a__slow", "arguments": {"text": "all of it"}}),
            &meta,
        ),
    );
    assert_eq!(texts(&r["result"]), "all of it", "{r}");
    let (r, _) = rig.request(
        None,
        v2(3, "tasks/get", json!({"taskId": "mcpbox-task-x"}), &meta),
    );
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let s = rig.initialize_as("2025-11-25", json!({}));
    let (r, _) = rig.request(Some(s), task_call(4, "a__slow", json!({"text": "plain"})));
    assert_eq!(texts(&r["result"]), "plain", "{r}");
}
