//! Requests beyond tools against scripted servers: resources (pages, templates,
//! text and blob reads, large blobs to files, oversized answers), prompts
//! (arguments), completions, log levels, in both eras, one server or many.

use super::*;
use crate::client::Request;
use crate::testing::{Behaviour, Out};

/// A server with resources in pages of two, a template, prompts and
/// completions; `stateless` speaks 2026-07-28.
struct Library {
    stateless: bool,
    resources: Vec<Value>,
    blob: String,
}

fn library(stateless: bool, prefix: &str, n: usize) -> Library {
    Library {
        stateless,
        resources: (0..n)
            .map(|i| json!({"uri": format!("{prefix}://r/{i}"), "name": format!("r{i}")}))
            .collect(),
        blob: String::new(),
    }
}

impl Behaviour for Library {
    fn on_message(&mut self, m: &Value, out: &mut Out<'_>) {
        let id = &m["id"];
        let caps = json!({"resources": {"subscribe": true}, "prompts": {}, "completions": {}, "logging": {}});
        let params = &m["params"];
        match m["method"].as_str() {
            Some("server/discover") if self.stateless => out.reply(
                0,
                id,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": caps}),
            ),
            Some("server/discover") => out.later(
                0,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            ),
            Some("initialize") => out.reply(
                0,
                id,
                json!({"protocolVersion": "2025-11-25", "capabilities": caps, "serverInfo": {"name": "lib", "version": "1"}}),
            ),
            Some("resources/list") => {
                let start: usize = params["cursor"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let end = (start + 2).min(self.resources.len());
                let mut result = json!({"resources": self.resources[start..end]});
                if end < self.resources.len() {
                    result["nextCursor"] = json!(end.to_string());
                }
                out.reply(0, id, result);
            }
            Some("resources/templates/list") => out.reply(
                0,
                id,
                json!({"resourceTemplates": [
                    {"uriTemplate": "lib://t/{id}", "name": "t"},
                    {"uriTemplate": "lib://broken/{id", "name": "broken"}
                ]}),
            ),
            Some("resources/read") => {
                let uri = params["uri"].as_str().unwrap_or_default();
                if uri == "lib://silent" {
                    return;
                }
                if uri == "lib://blob" {
                    return out.reply(
                        0,
                        id,
                        json!({"contents": [{"uri": uri, "mimeType": "image/png", "blob": self.blob}]}),
                    );
                }
                if self.resources.iter().any(|r| r["uri"] == uri) {
                    out.reply(0, id, json!({"contents": [{"uri": uri, "text": format!("text of {uri}")}]}));
                } else {
                    out.later(
                        0,
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": format!("Resource not found: {uri}")}}),
                    );
                }
            }
            Some("prompts/list") => out.reply(
                0,
                id,
                json!({"prompts": [{"name": "greet", "arguments": [{"name": "who", "required": true}]}]}),
            ),
            Some("prompts/get") => match params["arguments"]["who"].as_str() {
                Some(who) => out.reply(
                    0,
                    id,
                    json!({"description": "a greeting", "messages": [
                        {"role": "user", "content": {"type": "text", "text": format!("Hello, {who}")}}]}),
                ),
                None => out.later(
                    0,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "missing required argument `who`"}}),
                ),
            },
            Some("completion/complete") => out.reply(
                0,
                id,
                json!({"completion": {"values": ["alice", "alfred"], "total": 2, "hasMore": false}}),
            ),
            Some("logging/setLevel") => out.reply(0, id, json!({})),
            Some("resources/subscribe" | "resources/unsubscribe") => {
                out.reply(0, id, json!({}));
            }
            _ => {}
        }
    }
}

fn two_libraries(stateless: bool) -> Manager<FakePlatform> {
    let mut p = FakePlatform::new();
    p.serve("a", move || library(stateless, "a", 5));
    p.serve("b", move || library(stateless, "b", 1));
    let mut m = manager(p, &[("a", json!({})), ("b", json!({}))]);
    connect(&mut m);
    m
}

fn run(
    m: &mut Manager<FakePlatform>,
    server: Option<&str>,
    request: Request,
) -> Result<CallResult, CallError> {
    let call = m
        .start_request(server, request, CallOptions::default())
        .map_err(|e| panic!("refused at once: {e}"))
        .unwrap();
    let done = finished_calls(m, 1);
    assert_eq!(done[0].call, call);
    done[0].outcome.clone()
}

#[test]
fn resources_of_every_server_are_listed_through_every_page_in_both_eras() {
    for stateless in [false, true] {
        let mut m = two_libraries(stateless);
        let listed = run(&mut m, None, Request::ListResources).unwrap();
        let items: Vec<Value> = serde_json::from_str(&listed.content).unwrap();
        let uris: Vec<(&str, &str)> = items
            .iter()
            .map(|i| (i["server"].as_str().unwrap(), i["uri"].as_str().unwrap()))
            .collect();
        assert_eq!(
            uris,
            [
                ("a", "a://r/0"),
                ("a", "a://r/1"),
                ("a", "a://r/2"),
                ("a", "a://r/3"),
                ("a", "a://r/4"),
                ("b", "b://r/0")
            ],
            "stateless: {stateless}"
        );
        // Server a's five resources took three pages, the cursor passed back each time.
        let sim = m.platform().sim("a");
        let pages = sim.borrow().sent("resources/list");
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[2]["params"]["cursor"], "4");
        if stateless {
            assert_eq!(
                pages[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
        }
        let one = run(&mut m, Some("b"), Request::ListResources).unwrap();
        assert_eq!(one.text, "b\tb://r/0");
    }
}

#[test]
fn a_malformed_template_is_skipped_with_a_warning_naming_server_and_template() {
    let mut m = two_libraries(false);
    let listed = run(&mut m, Some("a"), Request::ListResourceTemplates).unwrap();
    assert_eq!(listed.text, "a\tlib://t/{id}");
    let warnings: Vec<String> = m
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    // `completions` drains events; ask once more to see them.
    let _ = warnings;
    let call = m
        .start_request(
            Some("a"),
            Request::ListResourceTemplates,
            CallOptions::default(),
        )
        .unwrap();
    let mut seen = Vec::new();
    let mut done = Vec::new();
    while done.is_empty() {
        done = m.wait(1000);
        seen.extend(m.events());
    }
    assert_eq!(done[0].call, call);
    assert!(
        seen.iter().any(|e| matches!(e, Event::Warning(w)
            if w.contains("server `a`") && w.contains("lib://broken/{id") && w.contains("never closed"))),
        "{seen:?}"
    );
}

#[test]
fn a_read_goes_to_the_server_that_has_the_uri_and_an_unknown_uri_names_every_answer() {
    for stateless in [false, true] {
        let mut m = two_libraries(stateless);
        let read = run(
            &mut m,
            None,
            Request::ReadResource {
                uri: "b://r/0".into(),
            },
        )
        .unwrap();
        assert_eq!(read.text, "text of b://r/0");
        if stateless {
            let sim = m.platform().sim("b");
            let sent = &sim.borrow().received;
            let (_, meta) = sent
                .iter()
                .rev()
                .find(|(msg, _)| msg["method"] == "resources/read")
                .unwrap();
            assert_eq!(
                meta.name.as_deref(),
                Some("b://r/0"),
                "Mcp-Name carries the URI"
            );
        }
        let missing = run(
            &mut m,
            None,
            Request::ReadResource {
                uri: "z://nope".into(),
            },
        )
        .unwrap_err();
        let text = missing.to_string();
        assert!(
            text.contains("server `a`")
                && text.contains("server `b`")
                && text.contains("Resource not found"),
            "{text}"
        );
    }
}

#[test]
fn a_large_blob_goes_to_a_host_file_and_the_caller_gets_a_note() {
    let mut p = FakePlatform::new();
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let blob = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
    p.serve("a", move || Library {
        blob: blob.clone(),
        ..library(false, "a", 1)
    });
    let mut m = manager(p, &[("a", json!({}))]);
    connect(&mut m);
    let read = run(
        &mut m,
        Some("a"),
        Request::ReadResource {
            uri: "lib://blob".into(),
        },
    )
    .unwrap();
    assert!(read.content.len() < 2_000, "{}", read.content);
    assert!(
        read.text.contains("300.0 KB") || read.text.contains("300 KB"),
        "{}",
        read.text
    );
    let items: Vec<Value> = serde_json::from_str(&read.content).unwrap();
    assert_eq!(items[0]["uri"], "lib://blob");
    assert_eq!(items[0]["_meta"]["mcpbox/file"]["mimeType"], "image/png");
    let file = items[0]["_meta"]["mcpbox/file"]["uri"].as_str().unwrap();
    assert!(read.text.contains(file));
    let blobs = &m.platform().blobs;
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].2, bytes, "the file holds the decoded bytes");
}

#[test]
fn an_oversized_read_answer_fails_that_read_with_the_size() {
    let mut p = FakePlatform::new();
    p.serve("a", || library(false, "a", 1));
    let mut m = manager(p, &[("a", json!({}))]);
    connect(&mut m);
    let call = m
        .start_request(
            Some("a"),
            Request::ReadResource {
                uri: "lib://silent".into(),
            },
            CallOptions::default(),
        )
        .unwrap();
    let sim = m.platform().sim("a");
    let id = sim.borrow().sent("resources/read")[0]["id"].to_string();
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"blob":""#);
    m.platform().emit(
        "a",
        0,
        Output::TooLarge(Oversized {
            size: 100_000_001,
            cap: 67_108_864,
            head: head.into_bytes(),
            tail: Vec::new(),
        }),
    );
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    let e = done[0].outcome.clone().unwrap_err().to_string();
    assert!(
        e.contains("resources/read lib://silent on server `a`") && e.contains("100000001 bytes"),
        "{e}"
    );
}

#[test]
fn prompts_get_sends_string_arguments_and_refuses_others_before_sending() {
    for stateless in [false, true] {
        let mut m = two_libraries(stateless);
        let listed = run(&mut m, None, Request::ListPrompts).unwrap();
        assert_eq!(listed.text, "a\tgreet\nb\tgreet");
        let items: Vec<Value> = serde_json::from_str(&listed.content).unwrap();
        assert_eq!(items[1]["registryName"], "mcp__b__greet");
        assert_eq!(items[1]["arguments"][0]["name"], "who");
        let got = run(
            &mut m,
            Some("a"),
            Request::GetPrompt {
                name: "greet".into(),
                arguments: Some(r#"{"who": "Ada"}"#.into()),
            },
        )
        .unwrap();
        assert_eq!(got.text, "Hello, Ada");
        assert!(got.structured_content.unwrap().contains("a greeting"));
        // A number where a string belongs: refused here, naming the argument.
        let bad = run(
            &mut m,
            Some("a"),
            Request::GetPrompt {
                name: "greet".into(),
                arguments: Some(r#"{"who": 7}"#.into()),
            },
        )
        .unwrap_err();
        assert!(
            matches!(&bad, CallError::InvalidArguments(t) if t.contains("argument `who`")),
            "{bad:?}"
        );
        // A missing required argument: the server's error, with the server's name.
        let missing = run(
            &mut m,
            Some("a"),
            Request::GetPrompt {
                name: "greet".into(),
                arguments: None,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("prompts/get greet on server `a`") && missing.contains("who"),
            "{missing}"
        );
    }
}

#[test]
fn completions_and_log_levels_need_a_server_and_reach_it() {
    let mut m = two_libraries(false);
    let refused = m.start_request(
        None,
        Request::SetLogLevel {
            level: "debug".into(),
        },
        CallOptions::default(),
    );
    assert!(matches!(refused, Err(CallError::InvalidArguments(_))));
    let done = run(
        &mut m,
        Some("a"),
        Request::Complete { params: r#"{"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "al"}}"#.into() },
    )
    .unwrap();
    assert_eq!(done.text, "alice\nalfred");
    run(
        &mut m,
        Some("b"),
        Request::SetLogLevel {
            level: "debug".into(),
        },
    )
    .unwrap();
    let sim = m.platform().sim("b");
    assert_eq!(
        sim.borrow().sent("logging/setLevel")[0]["params"]["level"],
        "debug"
    );
    let bad = run(
        &mut m,
        Some("b"),
        Request::SetLogLevel {
            level: "loud".into(),
        },
    )
    .unwrap_err();
    assert!(bad.to_string().contains("unknown log level"), "{bad}");
    let unknown = m
        .start_request(Some("zz"), Request::ListPrompts, CallOptions::default())
        .unwrap_err();
    assert!(
        unknown.to_string().contains("no server named `zz`"),
        "{unknown}"
    );
}

#[test]
fn a_server_without_the_capability_is_refused_by_name_and_left_out_of_lists() {
    let mut p = FakePlatform::new();
    p.serve("tools", || McpServer::with_tools(&["echo"]));
    p.serve("a", || library(false, "a", 1));
    let mut m = manager(p, &[("tools", json!({})), ("a", json!({}))]);
    connect(&mut m);
    let listed = run(&mut m, None, Request::ListResources).unwrap();
    assert_eq!(listed.text, "a\ta://r/0");
    let refused = m
        .start_request(
            Some("tools"),
            Request::ReadResource {
                uri: "x://y".into(),
            },
            CallOptions::default(),
        )
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("server `tools` does not offer resources"),
        "{refused}"
    );
    assert!(
        m.platform()
            .sim("tools")
            .borrow()
            .sent("resources/read")
            .is_empty()
    );
}

#[test]
fn the_configured_log_level_is_sent_on_connect_and_a_bad_one_is_an_issue() {
    let mut p = FakePlatform::new();
    p.serve("a", || library(false, "a", 1));
    p.serve("b", || library(true, "b", 1));
    let mut m = manager(
        p,
        &[
            ("a", json!({"logLevel": "warning"})),
            ("b", json!({"logLevel": "error"})),
        ],
    );
    connect(&mut m);
    // The answers come in a later round; nobody waits for them.
    let done = m.wait(1000);
    assert!(done.is_empty(), "{done:?}");
    let sent = m.platform().sim("a").borrow().sent("logging/setLevel");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["level"], "warning");
    // 2026-07-28 has no logging/setLevel: the level rides in each request's _meta.
    let sim = m.platform().sim("b");
    assert!(sim.borrow().sent("logging/setLevel").is_empty());
    run(&mut m, Some("b"), Request::ListResources).unwrap();
    let list = sim.borrow().sent("resources/list");
    assert_eq!(
        list[0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "error"
    );
    let (_, issues) =
        manager_with_issues(FakePlatform::new(), &[("c", json!({"logLevel": "loud"}))]);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].field.as_deref(), Some("logLevel"));
    assert!(
        issues[0].message.contains("not an MCP log level"),
        "{issues:?}"
    );
}

/// A subscription is the manager's to keep: a server that comes back (here
/// reconnected) is subscribed again, and updates are events naming the server.
#[test]
fn subscriptions_survive_a_reconnect_and_updates_name_their_server() {
    let mut m = two_libraries(false);
    let subscribe = Request::Subscribe {
        uri: "a://r/1".into(),
    };
    run(&mut m, Some("a"), subscribe).expect("subscribed");
    assert_eq!(
        m.platform().sim("a").borrow().sent("resources/subscribe")[0]["params"]["uri"],
        "a://r/1"
    );
    // With no server: every server offering subscriptions, holding when one took it.
    run(
        &mut m,
        None,
        Request::Subscribe {
            uri: "b://r/0".into(),
        },
    )
    .expect("taken");
    assert_eq!(
        m.platform()
            .sim("b")
            .borrow()
            .sent("resources/subscribe")
            .len(),
        1
    );

    m.reconnect("a").unwrap();
    for _ in 0..20 {
        m.wait(100);
    }
    // Both URIs `a` took (the second through the fan-out), in its new session.
    let again: Vec<Value> = m.platform().sim("a").borrow().sent("resources/subscribe");
    let uris: Vec<&str> = again
        .iter()
        .map(|r| r["params"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["a://r/1", "b://r/0"],
        "the new session is subscribed again"
    );
    m.events();

    m.platform().emit(
        "a",
        10,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "a://r/1"}})
                .to_string(),
        ),
    );
    m.platform().emit(
        "a",
        10,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}).to_string(),
        ),
    );
    m.wait(1000);
    let events = m.events();
    assert!(
        events.contains(&Event::ResourceUpdated(ResourceUpdate {
            server: "a".into(),
            uri: "a://r/1".into()
        })),
        "{events:?}"
    );
    assert!(
        events.contains(&Event::PromptsChanged("a".into())),
        "{events:?}"
    );

    // Unsubscribed, a reconnect leaves it out.
    run(
        &mut m,
        Some("a"),
        Request::Unsubscribe {
            uri: "a://r/1".into(),
        },
    )
    .unwrap();
    m.reconnect("a").unwrap();
    for _ in 0..20 {
        m.wait(100);
    }
    let again = m.platform().sim("a").borrow().sent("resources/subscribe");
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0]["params"]["uri"], "b://r/0");
}
