//! Manager behaviour against scripted servers on the in-memory platform.

use serde_json::{Value, json};

use super::*;
use crate::client::CallResult;
use crate::testing::{FakePlatform, McpServer, Output};
use crate::transport::{Endpoint, Oversized};

/// `.mcp.json` text with the servers in the given order, each a stdio entry with
/// `extra` merged in.
fn config(servers: &[(&str, Value)]) -> String {
    let entries: Vec<String> = servers
        .iter()
        .map(|(name, extra)| {
            let mut entry = json!({"command": format!("{name}-server")});
            if let Value::Object(extra) = extra {
                for (k, v) in extra {
                    entry[k] = v.clone();
                }
            }
            format!("{}: {entry}", Value::String(name.to_string()))
        })
        .collect();
    format!("{{\"mcpServers\": {{{}}}}}", entries.join(", "))
}

fn manager(platform: FakePlatform, servers: &[(&str, Value)]) -> Manager<FakePlatform> {
    let mut m = Manager::new(platform);
    let issues = m
        .load_config("test", &config(servers))
        .expect("valid config");
    assert_eq!(issues, vec![]);
    m
}

/// Runs `wait` until no server is starting; returns every event seen.
fn connect(m: &mut Manager<FakePlatform>) -> Vec<Event> {
    m.start();
    let mut events = m.events();
    for _ in 0..100 {
        if m.servers().iter().all(|s| s.state != ServerState::Starting) {
            return events;
        }
        let done = m.wait(100_000);
        assert!(done.is_empty(), "no calls yet: {done:?}");
        events.extend(m.events());
    }
    panic!("servers never settled: {:?}", m.servers());
}

/// Waits until `n` calls completed (or 10 minutes of fake time passed).
fn completions(m: &mut Manager<FakePlatform>, n: usize) -> Vec<Completion> {
    let mut done = Vec::new();
    for _ in 0..1000 {
        if done.len() >= n {
            break;
        }
        done.extend(m.wait(600_000));
        m.events();
    }
    assert_eq!(done.len(), n, "calls did not complete: {done:?}");
    done
}

fn status<'a>(statuses: &'a [ServerStatus], name: &str) -> &'a ServerStatus {
    statuses
        .iter()
        .find(|s| s.name == name)
        .expect("configured")
}

fn text_result(outcome: &Result<CallResult, CallError>) -> &str {
    match outcome {
        Ok(r) => &r.text,
        Err(e) => panic!("call failed: {e:?}"),
    }
}

/// A handler that never answers.
fn silent(_: &Value, _: &Value, _: &mut crate::testing::Out<'_>) {}

#[test]
fn connects_lists_every_page_and_reports_status() {
    let mut p = FakePlatform::new();
    p.serve("demo", || {
        let names: Vec<String> = (0..7).map(|i| format!("tool{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        McpServer {
            page_size: 2,
            ..McpServer::with_tools(&refs)
        }
    });
    let mut m = manager(p, &[("demo", json!({}))]);
    assert_eq!(m.servers()[0].state, ServerState::Closed, "not started yet");
    let events = connect(&mut m);

    let tools = m.tools();
    assert_eq!(tools.len(), 7);
    assert_eq!(tools[0].name, "mcp__demo__tool0");
    assert_eq!(tools[6].name, "mcp__demo__tool6");
    assert_eq!(tools[3].description.as_deref(), Some("the tool3 tool"));
    let sim = m.platform().sim("demo");
    let lists = sim.borrow().sent("tools/list");
    assert_eq!(lists.len(), 4, "7 tools in pages of 2");
    assert_eq!(lists[3]["params"]["cursor"], "p6");

    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Connected);
    assert_eq!(s.tool_count, 7);
    assert_eq!(s.transport, "stdio");
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(s.server_name.as_deref(), Some("fake"));
    assert_eq!(s.server_version.as_deref(), Some("0.0.1"));
    assert_eq!(s.error, None);

    let states: Vec<ServerState> = events
        .iter()
        .filter_map(|e| match e {
            Event::Status(s) => Some(s.state),
            _ => None,
        })
        .collect();
    // Starting (maybe again, with the negotiated version), then connected.
    assert_eq!(states.first(), Some(&ServerState::Starting));
    assert_eq!(states.last(), Some(&ServerState::Connected));
    assert_eq!(
        states
            .iter()
            .filter(|s| **s == ServerState::Connected)
            .count(),
        1
    );
    assert_eq!(m.platform().now(), 0, "nothing waited for a timer");
}

#[test]
fn every_send_carries_its_meta() {
    let mut p = FakePlatform::new();
    p.serve("demo", || McpServer::with_tools(&["echo"]));
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    m.start_call("mcp__demo__echo", r#"{"text":"x"}"#, CallOptions::default())
        .unwrap();
    completions(&mut m, 1);
    let sim = m.platform().sim("demo");
    let sim = sim.borrow();
    let metas: Vec<(Option<&str>, Option<&str>, Option<&str>)> = sim
        .received
        .iter()
        .map(|(_, meta)| {
            (
                meta.method.as_deref(),
                meta.name.as_deref(),
                meta.protocol_version.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        metas,
        [
            (Some("initialize"), None, None),
            (Some("notifications/initialized"), None, Some("2025-11-25")),
            (Some("tools/list"), None, Some("2025-11-25")),
            (Some("tools/call"), Some("echo"), Some("2025-11-25")),
        ]
    );
}

#[test]
fn the_endpoint_reaches_the_platform_unresolved() {
    let mut p = FakePlatform::new();
    p.serve("demo", || McpServer::with_tools(&[]));
    let mut m = manager(
        p,
        &[(
            "demo",
            json!({"args": ["--key", "${KEY}"], "env": {"T": "${TOKEN:-x}"}}),
        )],
    );
    m.start();
    let (name, endpoint) = &m.platform().endpoints[0];
    assert_eq!(name, "demo");
    let Endpoint::Stdio {
        command, args, env, ..
    } = endpoint
    else {
        panic!("{endpoint:?}")
    };
    assert_eq!(command, "demo-server");
    assert_eq!(args, &["--key", "${KEY}"]);
    assert_eq!(env[0].value, "${TOKEN:-x}");
}

#[test]
fn a_call_completes_with_its_result() {
    let mut p = FakePlatform::new();
    p.serve("demo", || {
        McpServer::with_tools(&["echo"]).on_call(|params, id, out| {
            let text = params["arguments"]["text"].as_str().unwrap_or("").to_string();
            out.reply(
                250,
                id,
                json!({"content": [{"type": "text", "text": text}, {"type": "text", "text": "done"}], "structuredContent": {"len": text.len()}}),
            );
        })
    });
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    let call = m
        .start_call(
            "mcp__demo__echo",
            r#"{"text": "hello"}"#,
            CallOptions::default(),
        )
        .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(done[0].call, call);
    let r = done[0].outcome.as_ref().unwrap();
    assert_eq!(r.text, "hello\ndone");
    assert!(!r.is_error);
    assert_eq!(r.structured_content.as_deref(), Some(r#"{"len":5}"#));
    assert_eq!(m.platform().now(), 250);
}

#[test]
fn errors_known_at_once_are_returned_directly() {
    let mut p = FakePlatform::new();
    p.serve("demo", || McpServer::with_tools(&["echo"]));
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    assert_eq!(
        m.start_call("mcp__demo__nope", "{}", CallOptions::default()),
        Err(CallError::UnknownTool(
            "no tool named `mcp__demo__nope` (1 tools available)".into()
        ))
    );
    assert_eq!(
        m.start_call("mcp__demo__echo", r#"{"text": 5}"#, CallOptions::default()),
        Err(CallError::InvalidArguments(
            "invalid arguments for mcp__demo__echo: /text: want string, but got number".into()
        ))
    );
    assert!(matches!(
        m.start_call("mcp__demo__echo", "[]", CallOptions::default()),
        Err(CallError::InvalidArguments(_))
    ));
    // Empty arguments mean {}.
    assert!(
        m.start_call("mcp__demo__echo", "", CallOptions::default())
            .is_ok()
    );
    let sim = m.platform().sim("demo");
    assert_eq!(
        sim.borrow().sent("tools/call")[0]["params"]["arguments"],
        json!({})
    );
}

#[test]
fn timeout_sends_cancelled_with_the_request_id() {
    let mut p = FakePlatform::new();
    p.serve("slow", || McpServer::with_tools(&["wait"]).on_call(silent));
    let mut m = manager(p, &[("slow", json!({}))]);
    connect(&mut m);
    let start = m.platform().now();
    m.start_call("mcp__slow__wait", "{}", CallOptions::default())
        .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(
        done[0].outcome,
        Err(CallError::Timeout(
            "mcp__slow__wait timed out after 60s; the server was sent notifications/cancelled"
                .into()
        ))
    );
    assert_eq!(
        m.platform().now() - start,
        60_000,
        "the default tool timeout, exactly"
    );
    let sim = m.platform().sim("slow");
    let sim = sim.borrow();
    let call_id = sim.sent("tools/call")[0]["id"].clone();
    let cancelled = sim.sent("notifications/cancelled");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["params"]["requestId"], call_id);
    assert_eq!(cancelled[0]["params"]["reason"], "timed out after 60s");
    drop(sim);
    assert_eq!(
        m.servers()[0].state,
        ServerState::Connected,
        "a timeout does not hurt the server"
    );
}

#[test]
fn call_options_and_config_set_the_timeout() {
    let mut p = FakePlatform::new();
    p.serve("slow", || McpServer::with_tools(&["wait"]).on_call(silent));
    let mut m = manager(p, &[("slow", json!({"toolTimeoutMs": 2000}))]);
    connect(&mut m);
    m.start_call("mcp__slow__wait", "{}", CallOptions::default())
        .unwrap();
    m.start_call(
        "mcp__slow__wait",
        "{}",
        CallOptions {
            timeout_ms: Some(500),
        },
    )
    .unwrap();
    let done = completions(&mut m, 1);
    assert!(matches!(&done[0].outcome, Err(CallError::Timeout(m)) if m.contains("after 500ms")));
    assert_eq!(m.platform().now(), 500);
    let done = completions(&mut m, 1);
    assert!(matches!(&done[0].outcome, Err(CallError::Timeout(m)) if m.contains("after 2s")));
    assert_eq!(m.platform().now(), 2000);
}

#[test]
fn progress_pushes_the_deadline_back() {
    let mut p = FakePlatform::new();
    p.serve("slow", || {
        McpServer::with_tools(&["work"]).on_call(|params, id, out| {
            let token = params["_meta"]["progressToken"].clone();
            for (i, at) in [40_000, 80_000].into_iter().enumerate() {
                out.later(
                    at,
                    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": i}}),
                );
            }
            out.reply(110_000, id, json!({"content": [{"type": "text", "text": "finished"}]}));
        })
    });
    let mut m = manager(p, &[("slow", json!({}))]);
    connect(&mut m);
    m.start_call("mcp__slow__work", "{}", CallOptions::default())
        .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(text_result(&done[0].outcome), "finished");
    assert_eq!(m.platform().now(), 110_000, "past 60 s thanks to progress");
    assert!(
        m.platform()
            .sim("slow")
            .borrow()
            .sent("notifications/cancelled")
            .is_empty()
    );
}

#[test]
fn cancel_notifies_the_server_and_completes() {
    let mut p = FakePlatform::new();
    p.serve("slow", || McpServer::with_tools(&["wait"]).on_call(silent));
    let mut m = manager(p, &[("slow", json!({}))]);
    connect(&mut m);
    let call = m
        .start_call("mcp__slow__wait", "{}", CallOptions::default())
        .unwrap();
    m.cancel(call);
    m.cancel(call); // twice is harmless
    m.cancel(12345); // unknown too
    let done = m.wait(0);
    assert_eq!(
        done,
        vec![Completion {
            call,
            outcome: Err(CallError::Cancelled)
        }]
    );
    let sim = m.platform().sim("slow");
    let sim = sim.borrow();
    let cancelled = sim.sent("notifications/cancelled");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(
        cancelled[0]["params"]["requestId"],
        sim.sent("tools/call")[0]["id"]
    );
    assert_eq!(cancelled[0]["params"]["reason"], "cancelled by the caller");
}

#[test]
fn list_changed_relists_and_reports() {
    let mut p = FakePlatform::new();
    let tools = McpServer::with_tools(&["a"]).tools;
    let shared = tools.clone();
    p.serve("demo", move || McpServer {
        tools: shared.clone(),
        ..McpServer::with_tools(&[])
    });
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    assert_eq!(m.tools().len(), 1);

    tools
        .borrow_mut()
        .push(json!({"name": "b", "inputSchema": {"type": "object"}}));
    m.platform().emit(
        "demo",
        10,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string(),
        ),
    );
    assert!(m.wait(1000).is_empty());
    let events = m.events();
    assert!(
        events.contains(&Event::ToolsChanged("demo".into())),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Status(s) if s.tool_count == 2)),
        "the status reports the new count: {events:?}"
    );
    let names: Vec<String> = m.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__demo__a", "mcp__demo__b"]);
    assert_eq!(
        m.platform().sim("demo").borrow().sent("tools/list").len(),
        2
    );
}

#[test]
fn server_exit_fails_pending_calls_and_removes_its_tools() {
    let mut p = FakePlatform::new();
    p.serve("crashy", || {
        McpServer::with_tools(&["boom"]).on_call(silent)
    });
    p.serve("steady", || McpServer::with_tools(&["ok"]));
    let mut m = manager(p, &[("crashy", json!({})), ("steady", json!({}))]);
    connect(&mut m);
    let a = m
        .start_call("mcp__crashy__boom", "{}", CallOptions::default())
        .unwrap();
    let b = m
        .start_call("mcp__crashy__boom", "{}", CallOptions::default())
        .unwrap();
    m.platform().emit(
        "crashy",
        5,
        Output::Exit {
            status: "exit code 3".into(),
            stderr: vec!["starting".into(), "panic: out of cheese".into()],
        },
    );
    let done = completions(&mut m, 2);
    let expected =
        "server `crashy` exited (exit code 3); last stderr: starting | panic: out of cheese";
    for (c, call) in done.iter().zip([a, b]) {
        assert_eq!(c.call, call);
        assert_eq!(
            c.outcome,
            Err(CallError::ServerUnavailable(expected.into()))
        );
    }
    assert_eq!(m.platform().now(), 5, "at once, not at the timeout");
    let statuses = m.servers();
    let crashy = status(&statuses, "crashy");
    assert_eq!(crashy.state, ServerState::Failed);
    assert_eq!(crashy.error.as_deref(), Some(expected));
    assert_eq!(crashy.tool_count, 0);
    assert_eq!(status(&statuses, "steady").state, ServerState::Connected);
    let names: Vec<String> = m.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__steady__ok"]);
    assert!(
        m.platform().sim("crashy").borrow().dropped,
        "the connection was dropped"
    );
    // Calling the gone tool names the server's state rather than "unknown tool".
    match m.start_call("mcp__crashy__boom", "{}", CallOptions::default()) {
        Err(CallError::ServerUnavailable(msg)) => {
            assert!(msg.starts_with("mcp__crashy__boom is unavailable: server `crashy` is failed: server `crashy` exited"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn connect_timeout_fails_and_drops_the_connection() {
    let mut p = FakePlatform::new();
    p.serve("mute", || McpServer {
        answers_initialize: false,
        ..McpServer::with_tools(&[])
    });
    p.serve("fine", || McpServer::with_tools(&["t"]));
    let mut m = manager(
        p,
        &[
            ("mute", json!({"startupTimeoutMs": 5000})),
            ("fine", json!({})),
        ],
    );
    connect(&mut m);
    let statuses = m.servers();
    let mute = status(&statuses, "mute");
    assert_eq!(mute.state, ServerState::Failed);
    assert_eq!(
        mute.error.as_deref(),
        Some("server `mute` did not finish connecting within 5s")
    );
    assert_eq!(m.platform().now(), 5000);
    assert!(m.platform().sim("mute").borrow().dropped);
    assert_eq!(status(&statuses, "fine").state, ServerState::Connected);
}

#[test]
fn the_connect_deadline_covers_the_listing() {
    let mut p = FakePlatform::new();
    p.serve("slowlist", || McpServer {
        list_delay: 40_000,
        ..McpServer::with_tools(&["t"])
    });
    let mut m = manager(p, &[("slowlist", json!({}))]);
    connect(&mut m);
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Failed);
    assert_eq!(
        s.error.as_deref(),
        Some("server `slowlist` did not finish connecting within 30s")
    );
    assert_eq!(m.platform().now(), 30_000);
}

#[test]
fn one_failing_server_does_not_affect_the_others() {
    let mut p = FakePlatform::new();
    p.serve("good", || McpServer::with_tools(&["echo"]));
    p.refuse(
        "refused",
        TransportError::Unreachable("spawn nope: No such file or directory".into()),
    );
    p.serve("ancient", || McpServer {
        version: "1999-01-01".into(),
        ..McpServer::with_tools(&["x"])
    });
    p.serve("oldie", || McpServer {
        version: "2024-11-05".into(),
        ..McpServer::with_tools(&["y"])
    });
    p.serve("crash", || McpServer::with_tools(&["z"]));
    let mut m = manager(
        p,
        &[
            ("good", json!({})),
            ("refused", json!({})),
            ("ancient", json!({})),
            ("oldie", json!({})),
            ("crash", json!({})),
        ],
    );
    m.start();
    // Crashes during the handshake: garbage, then exit with stderr.
    m.platform()
        .emit("crash", 0, Output::Message("this is not json".into()));
    m.platform().emit(
        "crash",
        0,
        Output::Exit {
            status: "exit code 1".into(),
            stderr: vec!["Error: missing API_KEY".into()],
        },
    );
    connect(&mut m);
    let statuses = m.servers();
    assert_eq!(status(&statuses, "good").state, ServerState::Connected);
    assert_eq!(status(&statuses, "oldie").state, ServerState::Connected);
    assert_eq!(
        status(&statuses, "oldie").protocol_version.as_deref(),
        Some("2024-11-05")
    );
    let refused = status(&statuses, "refused");
    assert_eq!(refused.state, ServerState::Failed);
    assert_eq!(
        refused.error.as_deref(),
        Some(
            "server `refused` could not be started (stdio transport): spawn nope: No such file or directory"
        )
    );
    let ancient = status(&statuses, "ancient");
    assert_eq!(ancient.state, ServerState::Failed);
    assert_eq!(
        ancient.error.as_deref(),
        Some(
            "server `ancient` answered protocolVersion \"1999-01-01\", which mcpbox does not support \
             (supported: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25)"
        )
    );
    assert!(m.platform().sim("ancient").borrow().dropped);
    let crash = status(&statuses, "crash");
    assert_eq!(crash.state, ServerState::Failed);
    assert_eq!(
        crash.error.as_deref(),
        Some(
            "server `crash` exited (exit code 1) before it finished connecting; last stderr: Error: missing API_KEY"
        )
    );
    let names: Vec<String> = m.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__good__echo", "mcp__oldie__y"]);
    let call = m
        .start_call(
            "mcp__good__echo",
            r#"{"text":"still fine"}"#,
            CallOptions::default(),
        )
        .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(text_result(&done[0].outcome), "still fine");
}

#[test]
fn collisions_keep_the_earlier_server_in_config_order() {
    let mut p = FakePlatform::new();
    p.serve("z.srv", || McpServer::with_tools(&["t", "only_z"]));
    p.serve("z_srv", || McpServer::with_tools(&["t"]));
    // "z.srv" comes first in the file although "z_srv" sorts first by name.
    let mut m = manager(p, &[("z.srv", json!({})), ("z_srv", json!({}))]);
    let events = connect(&mut m);
    let warnings: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert!(warnings[0].contains("mcp__z_srv__t"));
    assert!(warnings[0].contains("`t` on server `z.srv`"));
    assert!(warnings[0].contains("skipping `t` on server `z_srv`"));
    assert_eq!(
        m.tools()
            .iter()
            .find(|t| t.name == "mcp__z_srv__t")
            .unwrap()
            .server,
        "z.srv"
    );
    let statuses = m.servers();
    assert_eq!(status(&statuses, "z.srv").tool_count, 2);
    assert_eq!(status(&statuses, "z_srv").tool_count, 0);
}

#[test]
fn tool_prefix_names_the_tools() {
    let mut p = FakePlatform::new();
    p.serve("github-enterprise", || McpServer::with_tools(&["search"]));
    let mut m = manager(p, &[("github-enterprise", json!({"toolPrefix": "gh"}))]);
    connect(&mut m);
    let tools = m.tools();
    assert_eq!(tools[0].name, "mcp__gh__search");
    assert_eq!(tools[0].server, "github-enterprise");
    assert_eq!(tools[0].tool, "search");
    m.start_call("mcp__gh__search", r#"{"text":"q"}"#, CallOptions::default())
        .unwrap();
    assert_eq!(text_result(&completions(&mut m, 1)[0].outcome), "q");
}

#[test]
fn disabled_servers_are_closed_and_never_opened() {
    let mut p = FakePlatform::new();
    p.serve("on", || McpServer::with_tools(&["t"]));
    p.serve("off", || McpServer::with_tools(&["t"]));
    let mut m = manager(p, &[("on", json!({})), ("off", json!({"disabled": true}))]);
    connect(&mut m);
    let statuses = m.servers();
    let off = status(&statuses, "off");
    assert_eq!(off.state, ServerState::Closed);
    assert_eq!(off.error.as_deref(), Some("disabled in configuration"));
    assert!(!m.platform().opened.contains_key("off"));
    assert_eq!(
        m.start_call("mcp__off__t", "{}", CallOptions::default()),
        Err(CallError::ServerUnavailable(
            "mcp__off__t is unavailable: server `off` is closed: disabled in configuration".into()
        ))
    );
}

#[test]
fn oversized_answers_fail_only_their_call() {
    let mut p = FakePlatform::new();
    p.serve("big", || {
        McpServer::with_tools(&["huge", "small"]).on_call(|params, id, out| {
            if params["name"] == "huge" {
                out.at(
                    0,
                    Output::TooLarge(Oversized {
                        size: 70_000_000,
                        cap: 67_108_864,
                        id: Some(id.to_string()),
                    }),
                );
            } else {
                out.reply(0, id, json!({"content": [{"type": "text", "text": "ok"}]}));
            }
        })
    });
    let mut m = manager(p, &[("big", json!({}))]);
    connect(&mut m);
    m.start_call("mcp__big__huge", "{}", CallOptions::default())
        .unwrap();
    let done = completions(&mut m, 1);
    assert_eq!(
        done[0].outcome,
        Err(CallError::Protocol(
            "mcp__big__huge: the server's answer was dropped: message too large (70000000 bytes > cap 67108864)".into()
        ))
    );
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    m.start_call("mcp__big__small", "{}", CallOptions::default())
        .unwrap();
    assert_eq!(text_result(&completions(&mut m, 1)[0].outcome), "ok");

    // Without an id it is only a warning.
    m.platform().emit(
        "big",
        0,
        Output::TooLarge(Oversized {
            size: 9,
            cap: 8,
            id: None,
        }),
    );
    assert!(m.wait(1000).is_empty());
    let events = m.events();
    assert!(
        matches!(&events[..], [Event::Warning(w)] if w.contains("message too large (9 bytes > cap 8)")),
        "{events:?}"
    );
}

#[test]
fn mismatched_ids_are_ignored_and_counted() {
    let mut p = FakePlatform::new();
    p.serve("liar", || {
        McpServer::with_tools(&["t"]).on_call(|_, id, out| {
            // The right digits as a string: not an answer to a numeric id.
            out.later(
                0,
                json!({"jsonrpc": "2.0", "id": id.to_string(), "result": {"content": []}}),
            );
        })
    });
    let mut m = manager(p, &[("liar", json!({"toolTimeoutMs": 1000}))]);
    connect(&mut m);
    m.start_call("mcp__liar__t", "{}", CallOptions::default())
        .unwrap();
    let done = completions(&mut m, 1);
    assert!(matches!(done[0].outcome, Err(CallError::Timeout(_))));
    assert_eq!(m.server_stats("liar").unwrap().unknown_responses, 1);
}

#[test]
fn server_requests_are_answered() {
    let mut p = FakePlatform::new();
    p.serve("asker", || McpServer::with_tools(&[]));
    let mut m = manager(p, &[("asker", json!({}))]);
    connect(&mut m);
    m.platform().emit(
        "asker",
        0,
        Output::Message(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}).to_string()),
    );
    m.platform().emit(
        "asker",
        0,
        Output::Message(json!({"jsonrpc": "2.0", "id": "r", "method": "roots/list"}).to_string()),
    );
    m.wait(10);
    let sim = m.platform().sim("asker");
    let sim = sim.borrow();
    let answers: Vec<&Value> = sim
        .received
        .iter()
        .map(|(v, _)| v)
        .filter(|v| v.get("method").is_none())
        .collect();
    assert_eq!(
        answers[0],
        &json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
    assert_eq!(answers[1]["error"]["code"], -32601);
    assert_eq!(answers[1]["id"], "r");
}

#[test]
fn logs_become_events() {
    let mut p = FakePlatform::new();
    p.serve("talker", || McpServer::with_tools(&[]));
    let mut m = manager(p, &[("talker", json!({}))]);
    connect(&mut m);
    m.platform().emit(
        "talker",
        3,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "error", "data": "db down"}})
                .to_string(),
        ),
    );
    assert!(m.wait(10_000).is_empty());
    assert_eq!(
        m.platform().now(),
        3,
        "returns as soon as an event is queued"
    );
    assert_eq!(
        m.events(),
        vec![Event::Log(LogEntry {
            server: "talker".into(),
            level: "error".into(),
            message: "db down".into()
        })]
    );
}

#[test]
fn wait_returns_on_wake_signal_or_timeout() {
    let mut p = FakePlatform::new();
    p.serve("idle", || McpServer::with_tools(&[]));
    let mut m = manager(p, &[("idle", json!({}))]);
    connect(&mut m);
    let t0 = m.platform().now();
    assert!(m.wait(1500).is_empty());
    assert_eq!(m.platform().now() - t0, 1500);
    assert!(m.events().is_empty());

    m.platform_mut().wake_at = Some(t0 + 2000);
    assert!(m.wait(10_000).is_empty());
    assert_eq!(
        m.platform().now() - t0,
        2000,
        "the wake signal cut the wait short"
    );
    // Level-triggered: still ready, so the next wait returns at once.
    assert!(m.wait(10_000).is_empty());
    assert_eq!(m.platform().now() - t0, 2000);
}

#[test]
fn wait_wakes_for_a_call_deadline_inside_a_longer_wait() {
    let mut p = FakePlatform::new();
    p.serve("slow", || McpServer::with_tools(&["w"]).on_call(silent));
    let mut m = manager(p, &[("slow", json!({"toolTimeoutMs": 700}))]);
    connect(&mut m);
    m.start_call("mcp__slow__w", "{}", CallOptions::default())
        .unwrap();
    let done = m.wait(5000);
    assert_eq!(done.len(), 1);
    assert_eq!(m.platform().now(), 700);
}

#[test]
fn shutdown_completes_pending_calls_and_closes() {
    let mut p = FakePlatform::new();
    p.serve("s", || McpServer::with_tools(&["w"]).on_call(silent));
    let mut m = manager(p, &[("s", json!({}))]);
    connect(&mut m);
    let call = m
        .start_call("mcp__s__w", "{}", CallOptions::default())
        .unwrap();
    m.shutdown();
    assert_eq!(
        m.wait(0),
        vec![Completion {
            call,
            outcome: Err(CallError::ServerUnavailable(
                "server `s` was shut down".into()
            ))
        }]
    );
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Closed);
    assert_eq!(s.error, None);
    assert!(m.tools().is_empty());
    assert!(m.platform().sim("s").borrow().dropped);
    assert!(
        m.events()
            .iter()
            .any(|e| matches!(e, Event::Status(s) if s.state == ServerState::Closed))
    );
    // And it can start again.
    connect(&mut m);
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    assert_eq!(m.platform().opened["s"].len(), 2);
}

#[test]
fn load_config_replaces_and_shuts_down() {
    let mut p = FakePlatform::new();
    p.serve("old", || McpServer::with_tools(&["t"]));
    p.serve("new", || McpServer::with_tools(&["u"]));
    let mut m = manager(p, &[("old", json!({}))]);
    connect(&mut m);
    let issues = m
        .load_config(
            "second.json",
            &config(&[("new", json!({})), ("bad", json!({"args": [1]}))]),
        )
        .unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].field.as_deref(), Some("args[0]"));
    assert!(m.platform().sim("old").borrow().dropped);
    let names: Vec<String> = m.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["new"]);
    assert!(m.tools().is_empty());
    connect(&mut m);
    assert_eq!(m.tools()[0].name, "mcp__new__u");
    // Unusable text changes nothing.
    assert!(
        m.load_config("x", "{oops")
            .unwrap_err()
            .starts_with("x:1:2:")
    );
    assert_eq!(m.servers()[0].state, ServerState::Connected);
}

#[test]
fn a_call_to_a_starting_server_says_so() {
    let mut p = FakePlatform::new();
    p.serve("a", || McpServer::with_tools(&["t"]));
    p.serve("late", || McpServer {
        list_delay: 1000,
        ..McpServer::with_tools(&["t"])
    });
    let mut m = manager(p, &[("a", json!({})), ("late", json!({}))]);
    m.start();
    m.wait(10);
    assert_eq!(
        m.start_call("mcp__late__t", "{}", CallOptions::default()),
        Err(CallError::ServerUnavailable(
            "mcp__late__t is unavailable: server `late` is still listing its tools".into()
        ))
    );
}

#[test]
fn an_uncompilable_schema_warns_once_and_calls_go_through() {
    let mut p = FakePlatform::new();
    p.serve("r", || {
        let s = McpServer::with_tools(&[]);
        s.tools.borrow_mut().push(
            json!({"name": "remote", "inputSchema": {"$ref": "https://schemas.example/x.json"}}),
        );
        s
    });
    let mut m = manager(p, &[("r", json!({}))]);
    let events = connect(&mut m);
    let warnings: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::Warning(_)))
        .collect();
    assert_eq!(warnings.len(), 1);
    assert!(
        m.start_call(
            "mcp__r__remote",
            r#"{"text": "anything"}"#,
            CallOptions::default()
        )
        .is_ok()
    );
}
