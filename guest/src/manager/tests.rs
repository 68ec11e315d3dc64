//! Manager behaviour against scripted servers on the in-memory platform.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{Value, json};

use super::*;
use crate::client::{CallResult, LEGACY_KEPT_MS};
use crate::elicitation::InputAnswer;
use crate::permissions::Mode;
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

/// A manager whose configuration has issues: the issues come with it.
fn manager_with_issues(
    platform: FakePlatform,
    servers: &[(&str, Value)],
) -> (Manager<FakePlatform>, Vec<ConfigIssue>) {
    let mut m = Manager::new(platform);
    let issues = m
        .load_config("test", &config(servers))
        .expect("valid config");
    (m, issues)
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
fn finished_calls(m: &mut Manager<FakePlatform>, n: usize) -> Vec<FinishedCall> {
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
    finished_calls(&mut m, 1);
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
            // The era probe goes first (a fake legacy server refuses it).
            (Some("server/discover"), None, Some("2026-07-28")),
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
    let done = finished_calls(&mut m, 1);
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
    let done = finished_calls(&mut m, 1);
    assert_eq!(
        done[0].outcome,
        Err(CallError::Timeout(
            "mcp__slow__wait timed out after 60s; the server was told to cancel it".into()
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
            ..CallOptions::default()
        },
    )
    .unwrap();
    let done = finished_calls(&mut m, 1);
    assert!(matches!(&done[0].outcome, Err(CallError::Timeout(m)) if m.contains("after 500ms")));
    assert_eq!(m.platform().now(), 500);
    let done = finished_calls(&mut m, 1);
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
    let done = finished_calls(&mut m, 1);
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
        vec![FinishedCall {
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
    let done = finished_calls(&mut m, 2);
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
    assert_eq!(
        crashy.error.as_deref(),
        Some(
            format!(
                "{expected}; the next call restarts it after a 1s backoff (failure 1 of 5 before the circuit opens)"
            )
            .as_str()
        )
    );
    assert_eq!(crashy.tool_count, 0);
    assert_eq!(status(&statuses, "steady").state, ServerState::Connected);
    // Its tools leave the list an agent is offered...
    let names: Vec<String> = m.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__steady__ok"]);
    assert!(
        m.platform().sim("crashy").borrow().dropped,
        "the connection was dropped"
    );
    // ...but a call to one is still recognised: not "unknown tool", and within the
    // backoff not a restart either.
    assert_eq!(
        m.start_call("mcp__crashy__boom", "{}", CallOptions::default()),
        Err(CallError::ServerUnavailable(format!(
            "mcp__crashy__boom is unavailable: {expected}; next restart allowed in 1s"
        )))
    );
    assert_eq!(m.platform().opened["crashy"].len(), 1);
    // A name the lost server never listed is unknown.
    assert!(matches!(
        m.start_call("mcp__crashy__nope", "{}", CallOptions::default()),
        Err(CallError::UnknownTool(_))
    ));
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
        Some("server `mute` did not finish connecting within 5s (it had not answered initialize)")
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
        Some(
            "server `slowlist` did not finish connecting within 30s (it had not answered tools/list)"
        )
    );
    assert_eq!(m.platform().now(), 30_000);
}

/// A server shows a protocol version only once one was
/// negotiated, not the one being probed (`server/discover`), and not after it
/// failed before connecting.
#[test]
fn no_protocol_version_before_one_is_negotiated() {
    let mut p = FakePlatform::new();
    // Ignores `server/discover`, so the probe is still under way.
    p.serve("mute", || McpServer {
        refuses_unknown: false,
        ..McpServer::with_tools(&["x"])
    });
    let mut m = manager(p, &[("mute", json!({}))]);
    m.start();
    m.wait(0);
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Starting);
    assert_eq!(s.protocol_version, None, "{s:?}");
    m.platform().emit(
        "mute",
        0,
        Output::Exit {
            status: "exit code 1".into(),
            stderr: vec![],
        },
    );
    connect(&mut m);
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Failed);
    assert_eq!(s.protocol_version, None, "{s:?}");
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
    // No protocol version was negotiated with these.
    assert_eq!(ancient.protocol_version, None);
    let crash = status(&statuses, "crash");
    assert_eq!(crash.state, ServerState::Failed);
    assert_eq!(crash.protocol_version, None, "it never connected");
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
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(text_result(&done[0].outcome), "still fine");
}

#[test]
fn collisions_keep_the_earlier_server_in_config_order() {
    let mut p = FakePlatform::new();
    p.serve("z.srv", || McpServer::with_tools(&["t", "only_z"]));
    p.serve("z_srv", || McpServer::with_tools(&["t"]));
    // "z.srv" comes first in the file although "z_srv" sorts first by name.
    let (mut m, issues) = manager_with_issues(p, &[("z.srv", json!({})), ("z_srv", json!({}))]);
    assert_eq!(issues.len(), 1, "the names can collide: {issues:?}");
    assert_eq!(issues[0].server.as_deref(), Some("z_srv"));
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
    assert_eq!(text_result(&finished_calls(&mut m, 1)[0].outcome), "q");
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
                        head: format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{", id)
                            .into_bytes(),
                        tail: Vec::new(),
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
    let done = finished_calls(&mut m, 1);
    assert_eq!(
        done[0].outcome,
        Err(CallError::Protocol(
            "mcp__big__huge: the server's answer was dropped: message too large (70000000 bytes > cap 67108864)".into()
        ))
    );
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    m.start_call("mcp__big__small", "{}", CallOptions::default())
        .unwrap();
    assert_eq!(text_result(&finished_calls(&mut m, 1)[0].outcome), "ok");

    // Without an id it is only a warning.
    m.platform().emit(
        "big",
        0,
        Output::TooLarge(Oversized {
            size: 9,
            cap: 8,
            head: b"garbage".to_vec(),
            tail: Vec::new(),
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
    let done = finished_calls(&mut m, 1);
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
        vec![FinishedCall {
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
    // Past the era probe and the handshake, into the (slow) listing.
    for _ in 0..5 {
        m.wait(10);
    }
    assert_eq!(
        m.start_call("mcp__late__t", "{}", CallOptions::default()),
        Err(CallError::ServerUnavailable(
            "mcp__late__t is unavailable: server `late` is still listing its tools".into()
        ))
    );
}

#[test]
fn an_uncompilable_schema_warns_at_the_first_call_only_and_calls_go_through() {
    let mut p = FakePlatform::new();
    p.serve("r", || {
        let s = McpServer::with_tools(&[]);
        s.tools.borrow_mut().push(
            json!({"name": "remote", "inputSchema": {"$ref": "https://schemas.example/x.json"}}),
        );
        s
    });
    let mut m = manager(p, &[("r", json!({}))]);
    let warnings = |events: &[Event]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Warning(w) => Some(w.clone()),
                _ => None,
            })
            .collect()
    };
    // Listing compiles nothing, so it says nothing.
    assert_eq!(warnings(&connect(&mut m)), Vec::<String>::new());
    for _ in 0..2 {
        assert!(
            m.start_call(
                "mcp__r__remote",
                r#"{"text": "anything"}"#,
                CallOptions::default()
            )
            .is_ok()
        );
    }
    let said = warnings(&m.events());
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("mcp__r__remote (server `r`)"), "{said:?}");
    assert!(
        said[0].contains("passed to the server unchecked"),
        "{said:?}"
    );
}

// ---------------------------------------------------------------------------
// Restarts: backoff, held calls, the circuit, reconnect.

/// A server with `echo` (answers at once) and `crash` (exits with code 3 at once).
fn crashing() -> McpServer {
    McpServer::with_tools(&["echo", "crash"]).on_call(|params, id, out| {
        if params["name"] == "crash" {
            out.at(
                0,
                Output::Exit {
                    status: "exit code 3".into(),
                    stderr: vec![],
                },
            );
        } else {
            let text = params["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.reply(0, id, json!({"content": [{"type": "text", "text": text}]}));
        }
    })
}

const EXITED: &str = "server `fx` exited (exit code 3)";

/// Calls `mcp__fx__crash` and waits for it to fail with the exit.
fn crash(m: &mut Manager<FakePlatform>) {
    m.start_call("mcp__fx__crash", "{}", CallOptions::default())
        .expect("fx is connected");
    let done = finished_calls(m, 1);
    assert_eq!(
        done[0].outcome,
        Err(CallError::ServerUnavailable(EXITED.into()))
    );
}

/// Lets `ms` of fake time pass with nothing to do.
fn pass(m: &mut Manager<FakePlatform>, ms: u64) {
    m.events();
    let t0 = m.platform().now();
    assert!(m.wait(ms).is_empty());
    assert_eq!(m.platform().now(), t0 + ms, "nothing happened meanwhile");
}

fn echo(m: &mut Manager<FakePlatform>, text: &str) -> Result<u64, CallError> {
    m.start_call(
        "mcp__fx__echo",
        &json!({ "text": text }).to_string(),
        CallOptions::default(),
    )
}

fn states(events: &[Event], server: &str) -> Vec<ServerState> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Status(s) if s.name == server => Some(s.state),
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_after_the_backoff_restarts_the_server_and_succeeds() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    m.events();
    crash(&mut m);
    pass(&mut m, 1_000);

    let call = echo(&mut m, "again").expect("the call restarts fx");
    assert_eq!(m.platform().opened["fx"].len(), 2, "a fresh connection");
    assert_eq!(m.servers()[0].state, ServerState::Starting);
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(text_result(&done[0].outcome), "again");

    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Connected);
    assert_eq!(s.error, None);
    assert_eq!(s.tool_count, 2);
    assert_eq!(m.tools().len(), 2, "its tools are offered again");
    // The held call went out on the new connection only after it was ready.
    let sim = m.platform().sim("fx");
    let methods: Vec<Value> = sim
        .borrow()
        .received
        .iter()
        .map(|(v, _)| v["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
}

#[test]
fn restarts_report_every_transition() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    m.events();
    m.start_call("mcp__fx__crash", "{}", CallOptions::default())
        .unwrap();
    let mut events = Vec::new();
    let mut done = Vec::new();
    while done.is_empty() {
        done.extend(m.wait(10_000));
        events.extend(m.events());
    }
    assert_eq!(states(&events, "fx"), [ServerState::Failed]);
    pass(&mut m, 1_000);
    echo(&mut m, "x").unwrap();
    events = m.events();
    let mut done = Vec::new();
    while done.is_empty() {
        done.extend(m.wait(10_000));
        events.extend(m.events());
    }
    let seen = states(&events, "fx");
    assert_eq!(seen.first(), Some(&ServerState::Starting), "{events:?}");
    assert_eq!(seen.last(), Some(&ServerState::Connected), "{events:?}");
}

#[test]
fn a_call_within_the_backoff_fails_at_once_with_the_wait() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    pass(&mut m, 300);
    assert_eq!(
        echo(&mut m, "x"),
        Err(CallError::ServerUnavailable(format!(
            "mcp__fx__echo is unavailable: {EXITED}; next restart allowed in 0.7s"
        )))
    );
    assert_eq!(m.platform().opened["fx"].len(), 1, "no restart");
    // Arguments are still checked against the kept schema, first.
    assert!(matches!(
        m.start_call("mcp__fx__echo", r#"{"text": 5}"#, CallOptions::default()),
        Err(CallError::InvalidArguments(_))
    ));
    pass(&mut m, 699);
    assert!(
        matches!(echo(&mut m, "x"), Err(CallError::ServerUnavailable(e)) if e.ends_with("in 0.1s"))
    );
    pass(&mut m, 1);
    assert!(echo(&mut m, "x").is_ok(), "exactly 1 s after the failure");
}

#[test]
fn each_failure_in_a_row_doubles_the_wait_and_five_open_the_circuit() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    for failure in 1..=4u32 {
        let wait = backoff_ms(failure);
        let s = &m.servers()[0];
        assert_eq!(
            s.error.as_deref(),
            Some(
                format!(
                    "{EXITED}; the next call restarts it after a {}s backoff (failure {failure} of 5 before the circuit opens)",
                    wait / 1000
                )
                .as_str()
            )
        );
        assert_eq!(
            echo(&mut m, "x"),
            Err(CallError::ServerUnavailable(format!(
                "mcp__fx__echo is unavailable: {EXITED}; next restart allowed in {}s",
                wait / 1000
            )))
        );
        pass(&mut m, wait);
        // The crash call itself restarts the server and crashes it again: the
        // count is not reset by connecting, only by an answer.
        let call = m
            .start_call("mcp__fx__crash", "{}", CallOptions::default())
            .unwrap();
        let done = finished_calls(&mut m, 1);
        assert_eq!(done[0].call, call);
        assert_eq!(
            done[0].outcome,
            Err(CallError::ServerUnavailable(EXITED.into()))
        );
        assert_eq!(m.platform().opened["fx"].len(), failure as usize + 1);
    }
    // Five failures in a row: the circuit is open.
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Failed);
    assert_eq!(
        s.error.as_deref(),
        Some(
            format!(
                "{EXITED}; circuit open after 5 failures in a row: not restarted until the \
                 configuration is reloaded or the server is reconnected"
            )
            .as_str()
        )
    );
    let open = CallError::ServerUnavailable(format!(
        "mcp__fx__echo is unavailable: {EXITED}; the circuit is open after 5 failures in a \
         row: reload the configuration or reconnect `fx` to try again"
    ));
    assert_eq!(echo(&mut m, "x"), Err(open.clone()));
    // However long it has been.
    pass(&mut m, 3_600_000);
    assert_eq!(echo(&mut m, "x"), Err(open));
    assert_eq!(
        m.platform().opened["fx"].len(),
        5,
        "no connection was opened for the refused calls"
    );
}

#[test]
fn failed_connects_count_and_fail_the_held_call() {
    let mut p = FakePlatform::new();
    let opens = Rc::new(Cell::new(0));
    let counter = opens.clone();
    p.serve("fx", move || {
        counter.set(counter.get() + 1);
        // Only the first process ever answers `initialize`.
        McpServer {
            answers_initialize: counter.get() == 1,
            ..crashing()
        }
    });
    let mut m = manager(p, &[("fx", json!({"startupTimeoutMs": 2000}))]);
    connect(&mut m);
    crash(&mut m);
    for failure in 2..=5u32 {
        pass(&mut m, backoff_ms(failure - 1));
        let call = echo(&mut m, "x").expect("held while fx restarts");
        let done = finished_calls(&mut m, 1);
        assert_eq!(
            done[0],
            FinishedCall {
                call,
                outcome: Err(CallError::ServerUnavailable(
                    "mcp__fx__echo is unavailable: server `fx` did not finish connecting within 2s (it had not answered initialize)"
                        .into()
                ))
            }
        );
        let error = m.servers()[0].error.clone().unwrap();
        if failure < 5 {
            assert!(
                error.contains(&format!("(failure {failure} of 5")),
                "{error}"
            );
        } else {
            assert!(error.contains("circuit open after 5 failures"), "{error}");
        }
    }
    assert_eq!(opens.get(), 5);
    assert!(
        matches!(echo(&mut m, "x"), Err(CallError::ServerUnavailable(e)) if e.contains("circuit is open"))
    );
}

#[test]
fn a_refused_open_on_restart_fails_the_call_at_once() {
    let mut p = FakePlatform::new();
    let opens = Rc::new(Cell::new(0));
    let counter = opens.clone();
    p.serve("fx", move || {
        counter.set(counter.get() + 1);
        crashing()
    });
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    m.platform_mut().refuse(
        "fx",
        TransportError::Unreachable("spawn fx-server: No such file or directory".into()),
    );
    pass(&mut m, 1_000);
    assert_eq!(
        echo(&mut m, "x"),
        Err(CallError::ServerUnavailable(
            "mcp__fx__echo is unavailable: server `fx` could not be started (stdio transport): \
             spawn fx-server: No such file or directory; next restart allowed in 2s"
                .into()
        ))
    );
    let s = &m.servers()[0];
    assert_eq!(s.state, ServerState::Failed);
    assert!(
        s.error.as_deref().unwrap().contains("failure 2 of 5"),
        "{s:?}"
    );
}

#[test]
fn calls_during_a_restart_wait_for_it_and_may_time_out_or_be_cancelled() {
    let mut p = FakePlatform::new();
    p.serve("fx", || McpServer {
        list_delay: 5_000,
        ..crashing()
    });
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    pass(&mut m, 1_000);
    let t0 = m.platform().now();
    let first = echo(&mut m, "one").unwrap();
    let second = echo(&mut m, "two").unwrap();
    let short = m
        .start_call(
            "mcp__fx__echo",
            r#"{"text": "short"}"#,
            CallOptions {
                timeout_ms: Some(500),
                ..CallOptions::default()
            },
        )
        .unwrap();
    let cancelled = echo(&mut m, "never").unwrap();
    assert_eq!(m.platform().opened["fx"].len(), 2, "one restart for all");
    m.cancel(cancelled);
    assert_eq!(
        m.wait(0),
        vec![FinishedCall {
            call: cancelled,
            outcome: Err(CallError::Cancelled)
        }]
    );
    let done = finished_calls(&mut m, 1);
    assert_eq!(
        done[0],
        FinishedCall {
            call: short,
            outcome: Err(CallError::ServerUnavailable(
                "mcp__fx__echo is unavailable: server `fx` did not reconnect within the call's timeout of 500ms"
                    .into()
            ))
        }
    );
    assert_eq!(m.platform().now(), t0 + 500);
    let mut done = finished_calls(&mut m, 2);
    done.sort_by_key(|c| c.call);
    assert_eq!(done[0].call, first);
    assert_eq!(text_result(&done[0].outcome), "one");
    assert_eq!(done[1].call, second);
    assert_eq!(text_result(&done[1].outcome), "two");
    assert_eq!(
        m.platform().now(),
        t0 + 5_000,
        "sent once fx listed its tools"
    );
    let sim = m.platform().sim("fx");
    let texts: Vec<Value> = sim
        .borrow()
        .sent("tools/call")
        .iter()
        .map(|c| c["params"]["arguments"]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        ["one", "two"],
        "neither the expired nor the cancelled call"
    );
}

#[test]
fn a_held_call_is_checked_against_the_fresh_tool_list() {
    let mut p = FakePlatform::new();
    let tools = crashing().tools;
    let shared = tools.clone();
    p.serve("fx", move || McpServer {
        tools: shared.clone(),
        ..crashing()
    });
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    // The restarted server no longer has `echo`.
    tools.borrow_mut().retain(|t| t["name"] != "echo");
    pass(&mut m, 1_000);
    let call = echo(&mut m, "x").unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(
        done[0],
        FinishedCall {
            call,
            outcome: Err(CallError::UnknownTool(
                "no tool named `mcp__fx__echo`: server `fx` was restarted and no longer lists it"
                    .into()
            ))
        }
    );
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    assert!(
        m.platform()
            .sim("fx")
            .borrow()
            .sent("tools/call")
            .is_empty()
    );
}

#[test]
fn an_answer_resets_the_failure_count() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    pass(&mut m, 1_000);
    // Restarted and answered: forgiven.
    echo(&mut m, "x").unwrap();
    finished_calls(&mut m, 1);
    crash(&mut m);
    assert!(
        m.servers()[0]
            .error
            .as_deref()
            .unwrap()
            .contains("after a 1s backoff (failure 1 of 5"),
        "{:?}",
        m.servers()[0]
    );
    assert!(
        matches!(echo(&mut m, "x"), Err(CallError::ServerUnavailable(e)) if e.ends_with("next restart allowed in 1s"))
    );
}

#[test]
fn an_error_answer_also_resets_the_count_but_a_timeout_does_not() {
    let mut p = FakePlatform::new();
    p.serve("fx", || {
        McpServer::with_tools(&["crash", "bad", "mute"]).on_call(|params, id, out| {
            match params["name"].as_str() {
                Some("crash") => out.at(
                    0,
                    Output::Exit {
                        status: "exit code 3".into(),
                        stderr: vec![],
                    },
                ),
                Some("bad") => out.later(
                    0,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "nope"}}),
                ),
                _ => {}
            }
        })
    });
    let mut m = manager(p, &[("fx", json!({"toolTimeoutMs": 100}))]);
    connect(&mut m);
    let failures = |m: &Manager<FakePlatform>| m.slots[0].restarts.failures;
    crash(&mut m);
    assert_eq!(failures(&m), 1);
    pass(&mut m, 1_000);
    m.start_call("mcp__fx__mute", "{}", CallOptions::default())
        .unwrap();
    assert!(matches!(
        finished_calls(&mut m, 1)[0].outcome,
        Err(CallError::Timeout(_))
    ));
    assert_eq!(failures(&m), 1, "a timeout is no answer");
    m.start_call("mcp__fx__bad", "{}", CallOptions::default())
        .unwrap();
    assert!(matches!(
        finished_calls(&mut m, 1)[0].outcome,
        Err(CallError::Protocol(_))
    ));
    assert_eq!(failures(&m), 0, "an error answer is an answer");
}

/// Crashes fx five times in a row, waiting out each backoff.
fn trip(m: &mut Manager<FakePlatform>) {
    crash(m);
    for failure in 1..5 {
        pass(m, backoff_ms(failure));
        m.start_call("mcp__fx__crash", "{}", CallOptions::default())
            .unwrap();
        finished_calls(m, 1);
    }
    assert!(
        matches!(echo(m, "x"), Err(CallError::ServerUnavailable(e)) if e.contains("circuit is open"))
    );
}

#[test]
fn reconnect_closes_the_circuit() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    p.serve("off", crashing);
    let mut m = manager(p, &[("fx", json!({})), ("off", json!({"enabled": false}))]);
    connect(&mut m);
    trip(&mut m);
    let opened = m.platform().opened["fx"].len();
    m.events();

    m.reconnect("fx").unwrap();
    assert_eq!(m.platform().opened["fx"].len(), opened + 1, "connects now");
    assert_eq!(states(&m.events(), "fx"), [ServerState::Starting]);
    // A call meanwhile waits for the connection, then runs.
    echo(&mut m, "back").unwrap();
    assert_eq!(text_result(&finished_calls(&mut m, 1)[0].outcome), "back");
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    // The count started again from 0.
    crash(&mut m);
    assert!(
        m.servers()[0]
            .error
            .as_deref()
            .unwrap()
            .contains("(failure 1 of 5")
    );

    assert_eq!(
        m.reconnect("nope"),
        Err("no server named `nope` in test (configured: fx, off)".into())
    );
    assert_eq!(
        m.reconnect("off"),
        Err("server `off` is disabled in the configuration".into())
    );
    assert!(!m.platform().opened.contains_key("off"));
}

#[test]
fn reconnecting_a_connected_server_starts_it_fresh() {
    let mut p = FakePlatform::new();
    p.serve("fx", || {
        McpServer::with_tools(&["echo", "wait"]).on_call(|params, id, out| {
            if params["name"] == "echo" {
                let text = params["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                out.reply(0, id, json!({"content": [{"type": "text", "text": text}]}));
            }
        })
    });
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    let waiting = m
        .start_call("mcp__fx__wait", "{}", CallOptions::default())
        .unwrap();
    m.reconnect("fx").unwrap();
    assert!(
        m.platform().opened["fx"][0].borrow().dropped,
        "the old process is stopped"
    );
    assert_eq!(m.platform().opened["fx"].len(), 2);
    assert_eq!(
        m.wait(0),
        vec![FinishedCall {
            call: waiting,
            outcome: Err(CallError::ServerUnavailable(
                "server `fx` was reconnected before the call finished".into()
            ))
        }]
    );
    assert_eq!(m.servers()[0].state, ServerState::Starting);
    assert!(m.tools().is_empty(), "not offered while it reconnects");
    echo(&mut m, "fresh").unwrap();
    assert_eq!(text_result(&finished_calls(&mut m, 1)[0].outcome), "fresh");
    assert_eq!(m.tools().len(), 2);
}

#[test]
fn load_config_resets_every_circuit() {
    let mut p = FakePlatform::new();
    p.serve("fx", crashing);
    let text = config(&[("fx", json!({}))]);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    trip(&mut m);
    m.load_config("test", &text).unwrap();
    let s = &m.servers()[0];
    assert_eq!((s.state, s.error.as_deref()), (ServerState::Closed, None));
    // Nothing of the old server is kept: its tools are not recognised before it
    // connects again.
    assert!(
        matches!(echo(&mut m, "x"), Err(CallError::ServerUnavailable(e)) if e.ends_with("is closed"))
    );
    connect(&mut m);
    assert_eq!(m.servers()[0].state, ServerState::Connected);
    crash(&mut m);
    assert!(
        m.servers()[0]
            .error
            .as_deref()
            .unwrap()
            .contains("(failure 1 of 5")
    );
}

#[test]
fn a_server_that_never_connected_is_not_restarted_by_calls() {
    let mut p = FakePlatform::new();
    p.refuse(
        "gone",
        TransportError::Unreachable("spawn gone-server: not found".into()),
    );
    let mut m = manager(p, &[("gone", json!({}))]);
    connect(&mut m);
    pass(&mut m, 60_000);
    assert_eq!(
        m.start_call("mcp__gone__t", "{}", CallOptions::default()),
        Err(CallError::ServerUnavailable(
            "mcp__gone__t is unavailable: server `gone` is failed: server `gone` could not be \
             started (stdio transport): spawn gone-server: not found"
                .into()
        ))
    );
    assert_eq!(m.platform().endpoints.len(), 1, "opened once, at start");
}

#[test]
fn shutdown_fails_held_calls() {
    let mut p = FakePlatform::new();
    p.serve("fx", || McpServer {
        list_delay: 5_000,
        ..crashing()
    });
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    crash(&mut m);
    pass(&mut m, 1_000);
    let call = echo(&mut m, "x").unwrap();
    m.shutdown();
    assert_eq!(
        m.wait(0),
        vec![FinishedCall {
            call,
            outcome: Err(CallError::ServerUnavailable(
                "mcp__fx__echo is unavailable: server `fx` was shut down".into()
            ))
        }]
    );
    assert_eq!(m.servers()[0].state, ServerState::Closed);
}

#[test]
fn the_era_is_detected_per_server_and_remembered() {
    let serve = |p: &mut FakePlatform| {
        p.serve("modern", || McpServer {
            stateless: true,
            ..McpServer::with_tools(&["t"])
        });
        p.serve("old", || McpServer::with_tools(&["u"]));
    };
    let mut p = FakePlatform::new();
    serve(&mut p);
    let mut m = manager(p, &[("modern", json!({})), ("old", json!({}))]);
    connect(&mut m);
    let servers = m.servers();
    let modern = status(&servers, "modern");
    assert_eq!(modern.state, ServerState::Connected, "{modern:?}");
    assert_eq!(modern.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(modern.server_version.as_deref(), Some("0.0.2"));
    let old = status(&servers, "old");
    assert_eq!(old.state, ServerState::Connected);
    assert_eq!(old.protocol_version.as_deref(), Some("2025-11-25"));
    let call = m
        .start_call(
            "mcp__modern__t",
            r#"{"text":"stateless"}"#,
            CallOptions::default(),
        )
        .unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(text_result(&done[0].outcome), "stateless");
    let sim = m.platform().sim("modern");
    assert!(sim.borrow().sent("initialize").is_empty());
    assert_eq!(sim.borrow().sent("subscriptions/listen").len(), 1);

    // What was found is kept, per server and endpoint.
    let memo = m.platform().memo.clone();
    let mut eras: Vec<(&str, &str)> = memo
        .iter()
        .map(|(k, v)| (k.split('/').nth(1).unwrap(), v.as_str()))
        .collect();
    eras.sort();
    let found = m.platform().wall_clock_ms().unwrap();
    let dated = format!("legacy@{found}");
    assert_eq!(eras, [("modern", "2026-07-28"), ("old", dated.as_str())]);

    // The next run starts the legacy server with initialize, without a probe.
    let mut p = FakePlatform::new();
    serve(&mut p);
    p.memo = memo;
    let mut m = manager(p, &[("modern", json!({})), ("old", json!({}))]);
    connect(&mut m);
    assert_eq!(m.servers()[1].state, ServerState::Connected);
    let first = |name: &str| m.platform().sim(name).borrow().received[0].0["method"].clone();
    assert_eq!(first("old"), "initialize");
    assert_eq!(first("modern"), "server/discover");
    // Still within its time, the memo is not written again.
    assert_eq!(m.platform().memo, memo_of(&m, "old", &dated));

    // A legacy verdict too old to hold, or undated (as memos were once kept), is
    // probed again, and the legacy era found again is kept with a new date.
    for kept in [
        format!("legacy@{}", found - LEGACY_KEPT_MS),
        "legacy".to_string(),
    ] {
        let mut p = FakePlatform::new();
        serve(&mut p);
        p.memo = memo_of(&m, "old", &kept);
        let mut m = manager(p, &[("modern", json!({})), ("old", json!({}))]);
        connect(&mut m);
        assert_eq!(m.servers()[1].state, ServerState::Connected);
        let old = m.platform().sim("old");
        assert_eq!(old.borrow().received[0].0["method"], "server/discover");
        let now = m.platform().wall_clock_ms().unwrap();
        assert_eq!(
            m.platform().memo,
            memo_of(&m, "old", &format!("legacy@{now}"))
        );
    }
}

/// The platform's memo with the entry of `server` set to `value`.
fn memo_of(m: &Manager<FakePlatform>, server: &str, value: &str) -> BTreeMap<String, String> {
    let mut memo = m.platform().memo.clone();
    for (key, kept) in &mut memo {
        if key.split('/').nth(1) == Some(server) {
            *kept = value.to_string();
        }
    }
    memo
}

/// A short-lived manager (the stock component's, one per HTTP request) keeps
/// what it learned of a 2026-07-28 server; the next one starts that server
/// ready and sends it the call alone; a failure or an error answer forgets it.
#[test]
fn short_lived_managers_resume_known_stateless_servers() {
    let serve = |p: &mut FakePlatform| {
        p.serve("modern", || {
            McpServer {
                stateless: true,
                ..McpServer::with_tools(&["t"])
            }
            .on_call(|params, id, out| {
                if params["arguments"]["text"] == "fail" {
                    out.later(
                        0,
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Unknown tool"}}),
                    );
                } else {
                    out.reply(0, id, json!({"content": [{"type": "text", "text": "ok"}]}));
                }
            })
        });
        p.serve("old", || McpServer::with_tools(&["u"]));
    };
    let servers = [("modern", json!({})), ("old", json!({}))];
    let mut p = FakePlatform::new();
    serve(&mut p);
    let mut m = manager(p, &servers);
    m.short_lived();
    connect(&mut m);
    // The first learns by asking, and opens no subscription stream.
    let sim = m.platform().sim("modern");
    assert_eq!(sim.borrow().sent("server/discover").len(), 1);
    assert_eq!(sim.borrow().sent("tools/list").len(), 1);
    assert!(sim.borrow().sent("subscriptions/listen").is_empty());
    let known = m.platform().known.clone();
    let kept: Vec<&str> = known.keys().map(|k| k.split('/').nth(1).unwrap()).collect();
    // A legacy server's session is its own: only its era is kept (memo).
    assert_eq!(kept, ["modern"]);
    let memo = m.platform().memo.clone();

    let next = |known, memo| {
        let mut p = FakePlatform::new();
        serve(&mut p);
        p.known = known;
        p.memo = memo;
        let mut m = manager(p, &servers);
        m.short_lived();
        m.start();
        m
    };
    let mut m = next(known.clone(), memo.clone());
    // Ready at once: the registry has its tools before anything was received.
    assert_eq!(status(&m.servers(), "modern").state, ServerState::Connected);
    assert_eq!(status(&m.servers(), "modern").tool_count, 1);
    m.start_call("mcp__modern__t", r#"{"text":"x"}"#, CallOptions::default())
        .unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(text_result(&done[0].outcome), "ok");
    let sim = m.platform().sim("modern");
    let methods: Vec<Value> = sim
        .borrow()
        .received
        .iter()
        .map(|(m, _)| m["method"].clone())
        .collect();
    assert_eq!(methods, [json!("tools/call")]);
    assert_eq!(m.platform().known.len(), 1);

    // An error answer: the next manager asks again.
    let mut m = next(known.clone(), memo.clone());
    m.start_call(
        "mcp__modern__t",
        r#"{"text":"fail"}"#,
        CallOptions::default(),
    )
    .unwrap();
    let done = finished_calls(&mut m, 1);
    assert!(
        matches!(done[0].outcome, Err(CallError::Protocol(_))),
        "{done:?}"
    );
    assert!(m.platform().known.is_empty());

    // A server that cannot be reached: forgotten too.
    let mut p = FakePlatform::new();
    serve(&mut p);
    p.refuse(
        "modern",
        TransportError::Unreachable("connection refused".into()),
    );
    p.known = known;
    let mut m = manager(p, &servers);
    m.short_lived();
    connect(&mut m);
    assert_eq!(status(&m.servers(), "modern").state, ServerState::Failed);
    assert!(m.platform().known.is_empty());
}

/// A call handler that asks for input and never answers the call itself.
fn eliciting(_params: &Value, id: &Value, out: &mut crate::testing::Out<'_>) {
    out.later(
        0,
        json!({"jsonrpc": "2.0", "id": format!("ask-{id}"), "method": "elicitation/create",
            "params": {"message": "Sure?", "requestedSchema": {"type": "object",
                "properties": {"ok": {"type": "boolean", "default": true}}}}}),
    );
}

#[test]
fn input_requests_get_instance_wide_ids_and_end_with_their_calls() {
    let mut p = FakePlatform::new();
    p.serve("a", || McpServer::with_tools(&["ask"]).on_call(eliciting));
    p.serve("b", || McpServer::with_tools(&["ask"]).on_call(eliciting));
    let mut m = manager(p, &[("a", json!({})), ("b", json!({}))]);
    m.enable_input_requests();
    connect(&mut m);
    let ca = m
        .start_call("mcp__a__ask", "{}", CallOptions::default())
        .unwrap();
    let cb = m
        .start_call("mcp__b__ask", "{}", CallOptions::default())
        .unwrap();
    let mut asked = Vec::new();
    for _ in 0..10 {
        m.wait(1_000);
        asked.extend(m.events().into_iter().filter_map(|e| match e {
            Event::InputRequested(r) => Some(r),
            _ => None,
        }));
        if asked.len() == 2 {
            break;
        }
    }
    asked.sort_by_key(|r| r.id);
    assert_eq!(
        asked
            .iter()
            .map(|r| (r.id, r.server.as_str(), r.call))
            .collect::<Vec<_>>(),
        [(1, "a", Some(ca)), (2, "b", Some(cb))]
    );
    m.answer_input(1, &InputAnswer::Accept("{}".into()))
        .unwrap();
    let sim = m.platform().sim("a");
    let answer = sim.borrow().received.last().unwrap().0.clone();
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"ok": true}})
    );
    let e = m.answer_input(1, &InputAnswer::Decline).unwrap_err();
    assert!(e.contains("no input request 1 is waiting"), "{e}");
    // Cancelling b's call withdraws its request, and b is told `cancel`.
    m.cancel(cb);
    assert!(m.events().contains(&Event::InputWithdrawn(2)));
    let sim = m.platform().sim("b");
    let told = sim
        .borrow()
        .received
        .iter()
        .any(|(msg, _)| msg["result"]["action"] == "cancel");
    assert!(told);
    let e = m.answer_input(2, &InputAnswer::Decline).unwrap_err();
    assert!(e.contains("withdrawn"), "{e}");
}

#[test]
fn without_opting_in_no_input_capability_is_declared_and_requests_are_refused() {
    let mut p = FakePlatform::new();
    p.serve("a", || McpServer::with_tools(&["ask"]).on_call(eliciting));
    let mut m = manager(p, &[("a", json!({}))]);
    connect(&mut m);
    m.start_call("mcp__a__ask", "{}", CallOptions::default())
        .unwrap();
    m.wait(1_000);
    assert!(
        !m.events()
            .iter()
            .any(|e| matches!(e, Event::InputRequested(_)))
    );
    let sim = m.platform().sim("a");
    let sim = sim.borrow();
    assert_eq!(
        sim.sent("initialize")[0]["params"]["capabilities"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}})
    );
    let refusal = &sim.received.last().unwrap().0;
    assert_eq!(refusal["error"]["code"], -32601, "{refusal}");
}

// The registry in a provider dialect, and calls mapped back.
mod adapted;

// Permission rules: denied tools, profiles, approvals.
mod permissions;

// What happens at a call's end: output limits, audit records.
mod finished;

// Pinned tool definitions: a server that changes its tools after they were first seen.
mod pins;
// ---------------------------------------------------------------------------
// A colliding name reaches the server `tools` lists for it.

/// `x` lists `y__echo` and `x__y` lists `echo`: both are `mcp__x__y__echo`.
const CONTESTED: &str = "mcp__x__y__echo";

/// A server whose tools answer with the server's own name, so a test sees which
/// server a call reached.
fn answering_with_its_name(server: &'static str, tools: &[&str], list_delay: u64) -> McpServer {
    McpServer {
        list_delay,
        ..McpServer::with_tools(tools).on_call(move |_, id, out| {
            out.reply(
                0,
                id,
                json!({"content": [{"type": "text", "text": server}]}),
            );
        })
    }
}

#[test]
fn a_contested_name_routes_to_the_listed_server_whatever_connects_first() {
    for run in 0..20u64 {
        // Either server may be the slow one, by varying amounts, and either may
        // come first in the file.
        let slow = 1 + run * 37 % 500;
        let (x_delay, xy_delay) = if run % 2 == 0 { (slow, 0) } else { (0, slow) };
        let x_first = run % 4 < 2;
        let mut p = FakePlatform::new();
        p.serve("x", move || {
            answering_with_its_name("x", &["y__echo"], x_delay)
        });
        p.serve("x__y", move || {
            answering_with_its_name("x__y", &["echo"], xy_delay)
        });
        let mut entries = vec![("x", json!({})), ("x__y", json!({}))];
        if !x_first {
            entries.reverse();
        }
        let (mut m, issues) = manager_with_issues(p, &entries);
        assert_eq!(issues.len(), 1, "run {run}: {issues:?}");
        assert_eq!(issues[0].server.as_deref(), Some("x__y"), "run {run}");
        m.start();
        // What `mcpbox call` does: wait until the name is callable, or until no
        // server is starting any more; then call at once.
        while !m.tools().iter().any(|t| t.name == CONTESTED)
            && m.servers().iter().any(|s| s.state == ServerState::Starting)
        {
            assert!(m.wait(100_000).is_empty());
            m.events();
        }
        m.start_call(CONTESTED, "{}", CallOptions::default())
            .unwrap_or_else(|e| panic!("run {run}: {e:?}"));
        let reached = text_result(&finished_calls(&mut m, 1)[0].outcome).to_string();
        connect(&mut m);
        let listed: Vec<ToolInfo> = m
            .tools()
            .into_iter()
            .filter(|t| t.name == CONTESTED)
            .collect();
        assert_eq!(listed.len(), 1, "run {run}: {listed:?}");
        assert_eq!(
            reached, listed[0].server,
            "run {run}: the call reached another server than `tools` lists"
        );
        // The winner does not depend on who connected first.
        assert_eq!(reached, if x_first { "x" } else { "x__y" }, "run {run}");
    }
}

#[test]
fn a_lost_server_keeps_its_contested_name_and_the_call_restarts_it() {
    let mut p = FakePlatform::new();
    p.serve("x", || {
        McpServer::with_tools(&["y__echo", "crash"]).on_call(|params, id, out| {
            if params["name"] == "crash" {
                let status = "exit code 3".to_string();
                out.at(
                    0,
                    Output::Exit {
                        status,
                        stderr: vec![],
                    },
                );
            } else {
                out.reply(0, id, json!({"content": [{"type": "text", "text": "x"}]}));
            }
        })
    });
    p.serve("x__y", || answering_with_its_name("x__y", &["echo"], 0));
    let (mut m, _) = manager_with_issues(p, &[("x", json!({})), ("x__y", json!({}))]);
    connect(&mut m);
    m.start_call("mcp__x__crash", "{}", CallOptions::default())
        .unwrap();
    finished_calls(&mut m, 1);
    // `x` is down: its name is not offered, and not handed to `x__y` either.
    assert!(!m.tools().iter().any(|t| t.name == CONTESTED));
    pass(&mut m, BACKOFF_BASE_MS);
    m.start_call(CONTESTED, "{}", CallOptions::default())
        .unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(text_result(&done[0].outcome), "x");
    assert_eq!(m.platform().opened["x"].len(), 2, "the call restarted `x`");
}

// ---------------------------------------------------------------------------
// A large configuration starts in linear time.

#[test]
fn starting_thousands_of_servers_rebuilds_the_registry_once_per_round() {
    let entries: Vec<(String, Value)> = (0..config::MAX_SERVERS)
        .map(|i| (format!("s{i}"), json!({})))
        .collect();
    let entries: Vec<(&str, Value)> = entries
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    // Half of them cannot be opened (as under `--no-processes`), half connect.
    let mut p = FakePlatform::new();
    for i in (0..config::MAX_SERVERS).step_by(2) {
        p.serve(&format!("s{i}"), || McpServer::with_tools(&["t"]));
    }
    let mut m = manager(p, &entries);
    let before = m.registry.current.rebuilds();
    m.start();
    assert_eq!(
        m.registry.current.rebuilds() - before,
        1,
        "one rebuild for 5,000 failed opens"
    );
    let mut rounds = 0;
    while m.servers().iter().any(|s| s.state == ServerState::Starting) {
        m.wait(1000);
        m.events();
        rounds += 1;
    }
    assert_eq!(m.tools().len(), config::MAX_SERVERS / 2);
    assert!(
        m.registry.current.rebuilds() - before <= 1 + rounds,
        "{} rebuilds in {rounds} rounds",
        m.registry.current.rebuilds() - before
    );
}

// ---------------------------------------------------------------------------
// What one server's tool list may cost.

/// A server listing `n` tools `t0` … in pages of `page_size`.
fn listing(n: usize, page_size: usize) -> McpServer {
    let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    McpServer {
        page_size,
        ..McpServer::with_tools(&refs)
    }
}

fn error_of(m: &Manager<FakePlatform>, server: &str) -> String {
    let statuses = m.servers();
    let s = status(&statuses, server);
    assert_eq!(s.state, ServerState::Failed, "{s:?}");
    s.error.clone().unwrap_or_default()
}

#[test]
fn a_server_past_a_limit_fails_alone_saying_which_and_how_to_raise_it() {
    let mut p = FakePlatform::new();
    p.serve("many", || listing(30, 7));
    p.serve("bulky", || listing(60, 25));
    p.serve("fat", || {
        let s = McpServer::with_tools(&["ok"]);
        s.tools.borrow_mut().push(
            json!({"name": "fat", "description": "d".repeat(3000), "inputSchema": {"type": "object"}}),
        );
        s
    });
    p.serve("raised", || listing(30, 7));
    p.serve("good", || McpServer::with_tools(&["echo"]));
    let mut m = manager(
        p,
        &[
            ("many", json!({"limits": {"maxTools": 20}})),
            ("bulky", json!({"limits": {"maxListBytes": 4000}})),
            ("fat", json!({"limits": {"maxToolBytes": 2048}})),
            ("raised", json!({"limits": {"maxTools": 30}})),
            ("good", json!({})),
        ],
    );
    connect(&mut m);
    assert_eq!(
        error_of(&m, "many"),
        "server `many` lists more than 20 tools (its `limits.maxTools`); if it should, raise the \
         limit in its configuration entry: \"limits\": {\"maxTools\": 40}"
    );
    assert_eq!(
        error_of(&m, "bulky"),
        "server `bulky` lists more than 4000 bytes of tools (its `limits.maxListBytes`); if it \
         should, raise the limit in its configuration entry: \"limits\": {\"maxListBytes\": 8000}"
    );
    let fat = error_of(&m, "fat");
    assert!(
        fat.starts_with("server `fat` lists a tool of 3 KiB (`fat`), more than its limit of 2 KiB per tool (its `limits.maxToolBytes`)"),
        "{fat}"
    );
    assert!(
        fat.ends_with("\"limits\": {\"maxToolBytes\": 4096}"),
        "{fat}"
    );
    // The limit is inclusive, and the others are untouched.
    let statuses = m.servers();
    assert_eq!(status(&statuses, "raised").tool_count, 30);
    assert_eq!(status(&statuses, "good").tool_count, 1);
    m.start_call(
        "mcp__good__echo",
        r#"{"text":"fine"}"#,
        CallOptions::default(),
    )
    .unwrap();
    assert_eq!(text_result(&finished_calls(&mut m, 1)[0].outcome), "fine");
    // Listing stopped at the page that went past the limit.
    let sim = m.platform().sim("many");
    assert_eq!(
        sim.borrow().sent("tools/list").len(),
        3,
        "pages of 7: 7, 14, 21 > 20"
    );
    assert!(
        sim.borrow().dropped,
        "the failed server's connection is closed"
    );
}

#[test]
fn a_list_change_past_a_limit_fails_the_server_too() {
    let mut p = FakePlatform::new();
    let tools = Rc::new(std::cell::RefCell::new(Vec::new()));
    let shared = tools.clone();
    p.serve("grows", move || {
        let s = listing(5, usize::MAX);
        *shared.borrow_mut() = s.tools.borrow().clone();
        McpServer {
            tools: shared.clone(),
            ..s
        }
    });
    let mut m = manager(p, &[("grows", json!({"limits": {"maxTools": 5}}))]);
    connect(&mut m);
    assert_eq!(m.tools().len(), 5);
    tools
        .borrow_mut()
        .push(json!({"name": "one_more", "inputSchema": {"type": "object"}}));
    m.platform().emit(
        "grows",
        0,
        Output::Message(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string(),
        ),
    );
    for _ in 0..10 {
        m.wait(1000);
        m.events();
    }
    assert!(
        error_of(&m, "grows").starts_with("server `grows` lists more than 5 tools"),
        "{}",
        error_of(&m, "grows")
    );
}

// Requests beyond tools: resources, prompts, completions, log levels.
mod request;

/// A server that exits as soon as it is spoken to: `initialize` is never answered.
struct ExitsAtOnce;

impl crate::testing::Behaviour for ExitsAtOnce {
    fn on_message(&mut self, _: &Value, out: &mut crate::testing::Out<'_>) {
        out.at(
            0,
            Output::Exit {
                status: "exit code 1".into(),
                stderr: vec![],
            },
        );
    }
}

/// A server that failed while starting leaves no deadline behind: its client's
/// `initialize` was still waiting, but a failed server's client is not driven,
/// so a deadline of it would pass and stay due, and a host that waits for the
/// next deadline would wake at once, again and again.
#[test]
fn a_server_that_failed_while_starting_leaves_no_deadline() {
    let mut p = FakePlatform::new();
    p.serve("fx", || ExitsAtOnce);
    let mut m = manager(p, &[("fx", json!({}))]);
    connect(&mut m);
    assert_eq!(m.servers()[0].state, ServerState::Failed);
    assert_eq!(m.next_deadline(), None);
    // Time passes with nothing to do (the fake platform fails a guest that
    // spins in `block`).
    pass(&mut m, 120_000);
}
