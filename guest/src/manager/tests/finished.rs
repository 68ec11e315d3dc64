//! What the manager does at a call's end: output limits, audit records and call
//! counts.

use super::*;
use crate::audit::AuditRecord;
use crate::manager::call_counts::{
    CallCount, CallOutcome, CountedTool, OTHER_UNKNOWN, UNKNOWN_NAMES,
};

fn audited(m: &mut Manager<FakePlatform>) -> Vec<AuditRecord> {
    m.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Audit(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn manager_with(text: &str) -> Manager<FakePlatform> {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        McpServer::with_tools(&["read_file", "write_file", "delete"]).on_call(|params, id, out| {
            let text = params["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.reply(30, id, json!({"content": [{"type": "text", "text": text}]}));
        })
    });
    let mut m = Manager::new(p);
    assert_eq!(m.load_config(".mcp.json", text).unwrap(), vec![]);
    m
}

const RULES: &str = r#"{"mcpServers": {"fs": {"command": "fs"}},
    "permissions": {"allow": ["mcp__fs__read_file"], "ask": ["mcp__fs__write_file"], "deny": ["mcp__fs__delete"]},
    "audit": {"file": "${HOME}/audit.jsonl", "arguments": true}}"#;

#[test]
fn every_call_decision_is_audited_with_its_rule_approval_and_outcome() {
    let mut m = manager_with(RULES);
    assert_eq!(m.audit_file(), Some("${HOME}/audit.jsonl"));
    m.enable_approvals();
    m.set_options(EmbedderOptions {
        audit: Some(true),
        ..EmbedderOptions::default()
    });
    connect(&mut m);
    m.events();

    let args = r#"{"text":"a"}"#;
    let read = m
        .start_call("mcp__fs__read_file", args, CallOptions::default())
        .unwrap();
    finished_calls(&mut m, 1);
    // `completions` drains events: the record is read from the next wait's events.
    let t0 = m.platform().now();
    let records = {
        let read2 = m
            .start_call("mcp__fs__read_file", args, CallOptions::default())
            .unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            done = m.wait(60_000);
        }
        assert_eq!(done[0].call, read2);
        audited(&mut m)
    };
    assert_eq!(
        records,
        vec![AuditRecord {
            call: Some(read + 1),
            server: "fs".into(),
            tool: "mcp__fs__read_file".into(),
            profile: None,
            decision: Some("allow".into()),
            rule: Some("`mcp__fs__read_file` (permissions.allow[0] in .mcp.json)".into()),
            approval: None,
            outcome: "ok".into(),
            duration_ms: m.platform().now() - t0,
            arguments: Some(args.into()),
        }]
    );
    assert_eq!(records[0].duration_ms, 30);

    // Denied at once: no handle, decision and rule recorded.
    assert!(
        m.start_call("mcp__fs__delete", args, CallOptions::default())
            .is_err()
    );
    let r = &audited(&mut m)[0];
    assert_eq!(
        (r.call, r.decision.as_deref(), r.outcome.as_str()),
        (None, Some("deny"), "denied")
    );
    assert_eq!(
        r.rule.as_deref(),
        Some("`mcp__fs__delete` (permissions.deny[0] in .mcp.json)")
    );

    // Asked, and refused.
    m.start_call("mcp__fs__write_file", args, CallOptions::default())
        .unwrap();
    let id = m
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::InputRequested(r) => Some(r.id),
            _ => None,
        })
        .unwrap();
    m.answer_input(id, &InputAnswer::Decline).unwrap();
    assert_eq!(m.wait(0).len(), 1);
    let r = &audited(&mut m)[0];
    assert_eq!(
        (
            r.decision.as_deref(),
            r.approval.as_deref(),
            r.outcome.as_str()
        ),
        (Some("ask"), Some("refused"), "denied")
    );

    // An unknown tool: no decision.
    assert!(
        m.start_call("mcp__fs__nope", "{}", CallOptions::default())
            .is_err()
    );
    let r = &audited(&mut m)[0];
    assert_eq!(
        (r.decision.as_deref(), r.outcome.as_str(), r.server.as_str()),
        (None, "unknown-tool", "")
    );
}

#[test]
fn arguments_are_recorded_only_when_asked_and_nothing_is_queued_when_off() {
    let mut m = manager_with(r#"{"mcpServers": {"fs": {"command": "fs"}}}"#);
    connect(&mut m);
    m.events();
    m.start_call(
        "mcp__fs__read_file",
        r#"{"text":"s"}"#,
        CallOptions::default(),
    )
    .unwrap();
    let mut done = Vec::new();
    while done.is_empty() {
        done = m.wait(60_000);
    }
    assert!(
        audited(&mut m).is_empty(),
        "audit events are off by default"
    );
    m.set_options(EmbedderOptions {
        audit: Some(true),
        ..EmbedderOptions::default()
    });
    m.start_call(
        "mcp__fs__read_file",
        r#"{"text":"s"}"#,
        CallOptions::default(),
    )
    .unwrap();
    let mut done = Vec::new();
    while done.is_empty() {
        done = m.wait(60_000);
    }
    let r = &audited(&mut m)[0];
    assert_eq!(r.arguments, None);
    assert_eq!(r.rule.as_deref(), Some("`allow` (permissions.default)"));
}

#[test]
fn an_oversized_result_is_cut_and_kept_in_a_host_file() {
    let mut m =
        manager_with(r#"{"mcpServers": {"fs": {"command": "fs"}}, "output": {"maxBytes": 2000}}"#);
    connect(&mut m);
    let big = "z".repeat(5_000);
    m.start_call(
        "mcp__fs__read_file",
        &json!({ "text": big }).to_string(),
        CallOptions::default(),
    )
    .unwrap();
    let done = finished_calls(&mut m, 1);
    let r = done[0].outcome.as_ref().unwrap();
    assert!(r.content.len() < 2_000, "{}", r.content.len());
    assert!(
        r.text
            .contains("[mcpbox: the result of mcp__fs__read_file was 5 KB"),
        "{}",
        r.text
    );
    assert!(r.content.contains("\"resource_link\""));
    let blobs = &m.platform().blobs;
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].0, "fs");
    assert_eq!(blobs[0].2, big.as_bytes());
    // The embedder's setting wins over the configuration's.
    m.set_options(EmbedderOptions {
        max_result_bytes: Some(10_000),
        ..EmbedderOptions::default()
    });
    m.start_call(
        "mcp__fs__read_file",
        &json!({ "text": big }).to_string(),
        CallOptions::default(),
    )
    .unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].outcome.as_ref().unwrap().text, big);
}

#[test]
fn a_call_in_flight_when_the_configuration_changes_is_recorded_under_its_own_server() {
    let two = r#"{"mcpServers": {"a": {"command": "fs"}, "fs": {"command": "fs"}}}"#;
    let mut m = manager_with(two);
    m.platform_mut()
        .serve("a", || McpServer::with_tools(&["other"]));
    m.set_options(EmbedderOptions {
        audit: Some(true),
        ..EmbedderOptions::default()
    });
    connect(&mut m);
    m.events();
    let call = m
        .start_call("mcp__fs__read_file", "{}", CallOptions::default())
        .unwrap();
    // The new configuration has one server: the old slot 1 is gone.
    m.load_config(".mcp.json", r#"{"mcpServers": {"b": {"command": "fs"}}}"#)
        .unwrap();
    let mut done = Vec::new();
    while done.is_empty() {
        done = m.wait(60_000);
    }
    assert_eq!(done[0].call, call);
    assert!(done[0].outcome.is_err());
    let r = &audited(&mut m)[0];
    assert_eq!((r.server.as_str(), r.call), ("fs", Some(call)));
}

fn counted(events: Vec<Event>) -> Vec<CallCount> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::CallCounted(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn call_counts_name_each_key_once_and_make_no_audit_records() {
    let mut m = manager_with(RULES);
    m.enable_call_counts();
    connect(&mut m);
    m.events();
    let args = r#"{"text":"a"}"#;
    let mut counts = Vec::new();
    for _ in 0..2 {
        m.start_call("mcp__fs__read_file", args, CallOptions::default())
            .unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            done = m.wait(60_000);
        }
        let events = m.events();
        assert!(!events.iter().any(|e| matches!(e, Event::Audit(_))));
        counts.extend(counted(events));
    }
    let named = CountedTool {
        server: "fs".into(),
        tool: "read_file".into(),
    };
    assert_eq!(
        counts,
        [
            CallCount {
                key: 0,
                names: Some(named),
                outcome: CallOutcome::Ok,
                duration_ms: 30
            },
            CallCount {
                key: 0,
                names: None,
                outcome: CallOutcome::Ok,
                duration_ms: 30
            },
        ]
    );

    // Refused at once: the rule's tool by its own name, an unknown one by the
    // name called.
    assert!(
        m.start_call("mcp__fs__delete", args, CallOptions::default())
            .is_err()
    );
    assert!(
        m.start_call("mcp__fs__nope", args, CallOptions::default())
            .is_err()
    );
    let refused = counted(m.events());
    let names: Vec<_> = refused
        .iter()
        .map(|c| {
            let n = c.names.as_ref().unwrap();
            (
                c.key,
                n.server.as_str(),
                n.tool.as_str(),
                c.outcome,
                c.duration_ms,
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            (1, "fs", "delete", CallOutcome::Denied, 0),
            (2, "", "mcp__fs__nope", CallOutcome::UnknownTool, 0),
        ]
    );
}

#[test]
fn made_up_tool_names_share_one_key_past_a_hundred() {
    let mut m = manager_with(RULES);
    m.enable_call_counts();
    connect(&mut m);
    m.events();
    for i in 0..UNKNOWN_NAMES + 5 {
        let name = format!("mcp__made_up__{i}");
        assert!(m.start_call(&name, "{}", CallOptions::default()).is_err());
    }
    let counts = counted(m.events());
    assert_eq!(counts.len(), UNKNOWN_NAMES + 5);
    let keys: alloc::collections::BTreeSet<u32> = counts.iter().map(|c| c.key).collect();
    assert_eq!(keys.len(), UNKNOWN_NAMES + 1);
    let others: Vec<_> = counts[UNKNOWN_NAMES..].iter().map(|c| c.key).collect();
    assert_eq!(others, [UNKNOWN_NAMES as u32; 5]);
    assert_eq!(
        counts[UNKNOWN_NAMES]
            .names
            .as_ref()
            .map(|n| n.tool.as_str()),
        Some(OTHER_UNKNOWN)
    );
    assert!(
        counts[UNKNOWN_NAMES + 1..]
            .iter()
            .all(|c| c.names.is_none())
    );
}

/// A denied tool counts under its own name, whatever its registry name: here a
/// `toolPrefix` makes it `mcp__files__delete`.
#[test]
fn a_denied_tool_counts_under_its_own_name() {
    let mut m = manager_with(
        r#"{"mcpServers": {"fs": {"command": "fs", "toolPrefix": "files"}},
            "permissions": {"deny": ["mcp__fs__delete"]}}"#,
    );
    m.enable_call_counts();
    connect(&mut m);
    m.events();
    let refused = m.start_call("mcp__files__delete", "{}", CallOptions::default());
    assert!(matches!(refused, Err(CallError::Denied(_))), "{refused:?}");
    let names: Vec<_> = counted(m.events())
        .into_iter()
        .map(|c| c.names.unwrap())
        .collect();
    assert_eq!(
        names,
        [CountedTool {
            server: "fs".into(),
            tool: "delete".into()
        }]
    );
}
