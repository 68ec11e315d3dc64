//! The permission rules as the manager applies them: what is offered, what is
//! refused and why, per profile.

use super::*;
use crate::elicitation::InputRequest;

/// A manager for `text` (a whole configuration), with no configuration issues.
fn manager_for(platform: FakePlatform, text: &str) -> Manager<FakePlatform> {
    let mut m = Manager::new(platform);
    let issues = m.load_config(".mcp.json", text).expect("valid config");
    assert_eq!(issues, vec![]);
    m
}

fn fs_platform() -> FakePlatform {
    let mut p = FakePlatform::new();
    p.serve("fs", || {
        McpServer::with_tools(&["read_file", "write_file", "delete", "list"])
    });
    p
}

fn names(m: &Manager<FakePlatform>) -> Vec<String> {
    m.tools().into_iter().map(|t| t.name).collect()
}

fn call(m: &mut Manager<FakePlatform>, tool: &str) -> Result<u64, CallError> {
    m.start_call(tool, r#"{"text":"x"}"#, CallOptions::default())
}

fn denial(result: Result<u64, CallError>) -> String {
    match result {
        Err(CallError::Denied(m)) => m,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn denied_and_disabled_tools_are_not_offered_and_are_refused_naming_the_rule() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs", "disabledTools": ["delete"]}},
            "permissions": {"deny": ["mcp__fs__write_file"]}}"#,
    );
    connect(&mut m);
    assert_eq!(names(&m), ["mcp__fs__list", "mcp__fs__read_file"]);
    assert_eq!(m.servers()[0].tool_count, 2);
    assert_eq!(
        denial(call(&mut m, "mcp__fs__write_file")),
        "mcp__fs__write_file is denied by the permission rule `mcp__fs__write_file` \
         (permissions.deny[0] in .mcp.json)"
    );
    assert_eq!(
        denial(call(&mut m, "mcp__fs__delete")),
        "mcp__fs__delete is denied by the permission rule `delete` \
         (mcpServers.fs.disabledTools[0] in .mcp.json)"
    );
    // Refused before the arguments are even looked at.
    assert!(matches!(
        m.start_call("mcp__fs__delete", "[not json", CallOptions::default()),
        Err(CallError::Denied(_))
    ));
    call(&mut m, "mcp__fs__read_file").expect("allowed");
    finished_calls(&mut m, 1);
    let sim = m.platform().sim("fs");
    let sent: Vec<Value> = sim
        .borrow()
        .sent("tools/call")
        .iter()
        .map(|c| c["params"]["name"].clone())
        .collect();
    assert_eq!(sent, ["read_file"], "nothing denied reached the server");
}

#[test]
fn enabled_tools_is_an_allowlist() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs", "enabledTools": ["read_file", "list"]}}}"#,
    );
    connect(&mut m);
    assert_eq!(names(&m), ["mcp__fs__list", "mcp__fs__read_file"]);
    let e = denial(call(&mut m, "mcp__fs__write_file"));
    assert!(e.contains("mcpServers.fs.enabledTools in .mcp.json"), "{e}");
}

#[test]
fn a_denied_tool_of_a_lost_server_is_still_refused_as_denied() {
    let mut p = FakePlatform::new();
    p.serve("fx", super::crashing);
    let mut m = manager_for(
        p,
        r#"{"mcpServers": {"fx": {"command": "fx"}}, "permissions": {"deny": ["mcp__fx__echo"]}}"#,
    );
    connect(&mut m);
    super::crash(&mut m);
    assert_eq!(m.servers()[0].state, ServerState::Failed);
    assert!(matches!(
        call(&mut m, "mcp__fx__echo"),
        Err(CallError::Denied(_))
    ));
    assert!(matches!(
        call(&mut m, "mcp__fx__nope"),
        Err(CallError::UnknownTool(_))
    ));
}

#[test]
fn rules_naming_tools_the_server_lacks_are_warned_about_once() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs"}},
            "permissions": {"deny": ["mcp__fs__wrte_file", "mcp__fs__write_file"]}}"#,
    );
    let events = connect(&mut m);
    let warnings: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("`mcp__fs__wrte_file` (permissions.deny[0] in .mcp.json)"),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("server `fs` lists no such tool"));
    m.reconnect("fs").unwrap();
    let again = connect(&mut m);
    assert!(
        !again.iter().any(|e| matches!(e, Event::Warning(_))),
        "{again:?}"
    );
}

#[test]
fn a_profile_narrows_what_its_caller_may_call() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs"}},
            "permissions": {"deny": ["mcp__fs__delete"]},
            "profiles": {"readonly": {"allow": ["mcp__fs__read_file", "mcp__fs__list"], "default": "deny"}}}"#,
    );
    connect(&mut m);
    // The registry holds what the top-level rules allow; the profile filters it.
    assert_eq!(
        names(&m),
        ["mcp__fs__list", "mcp__fs__read_file", "mcp__fs__write_file"]
    );
    let modes: Vec<(String, Mode)> = m
        .tools()
        .into_iter()
        .map(|t| {
            let mode = m.decide(&t.name, Some("readonly")).unwrap().mode();
            (t.name, mode)
        })
        .collect();
    assert_eq!(
        modes,
        [
            ("mcp__fs__list".into(), Mode::Allow),
            ("mcp__fs__read_file".into(), Mode::Allow),
            ("mcp__fs__write_file".into(), Mode::Deny)
        ]
    );
    assert_eq!(
        m.decide("mcp__fs__write_file", None).unwrap().mode(),
        Mode::Allow
    );
    assert_eq!(m.decide("mcp__fs__nope", None), None);
    let e = m
        .start_call_as(
            "mcp__fs__write_file",
            "{}",
            CallOptions::default(),
            Some("readonly"),
        )
        .unwrap_err();
    assert_eq!(
        e,
        CallError::Denied(
            "mcp__fs__write_file is denied by the permission rule `deny` \
             (profiles.readonly.default in .mcp.json)"
                .into()
        )
    );
    m.start_call_as(
        "mcp__fs__read_file",
        "{}",
        CallOptions::default(),
        Some("readonly"),
    )
    .expect("the profile allows it");
    call(&mut m, "mcp__fs__write_file").expect("no profile: the top-level rules allow it");
    finished_calls(&mut m, 2);
}

#[test]
fn an_ask_rule_without_anyone_to_ask_is_refused() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs"}}, "permissions": {"ask": ["mcp__fs__write_file"]}}"#,
    );
    connect(&mut m);
    assert!(
        names(&m).contains(&"mcp__fs__write_file".to_string()),
        "ask tools are offered"
    );
    let e = denial(call(&mut m, "mcp__fs__write_file"));
    assert!(e.contains("needs approval"), "{e}");
    assert!(e.contains("permissions.ask[0]"), "{e}");
}

// ---------------------------------------------------------------------------
// Approvals for `ask` rules.

const ASK_WRITE: &str = r#"{"mcpServers": {"fs": {"command": "fs"}},
    "permissions": {"ask": ["mcp__fs__write_file"]},
    "profiles": {"ro": {}}}"#;

/// A connected manager whose `write_file` needs approval, with approvals on.
fn asking() -> Manager<FakePlatform> {
    let mut m = manager_for(fs_platform(), ASK_WRITE);
    m.enable_approvals();
    connect(&mut m);
    m
}

fn approval_request(m: &mut Manager<FakePlatform>) -> InputRequest {
    let mut requests: Vec<InputRequest> = m
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::InputRequested(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.remove(0)
}

fn calls_sent(m: &Manager<FakePlatform>) -> usize {
    m.platform().sim("fs").borrow().sent("tools/call").len()
}

#[test]
fn an_ask_call_waits_for_its_approval_and_goes_out_once_approved() {
    let mut m = asking();
    let call = call(&mut m, "mcp__fs__write_file").expect("asks");
    let request = approval_request(&mut m);
    assert_eq!(request.call, Some(call));
    assert_eq!(request.server, "fs");
    assert_eq!(request.tool.as_deref(), Some("mcp__fs__write_file"));
    let approval = request.approval.clone().expect("an approval");
    assert_eq!(approval.arguments, r#"{"text":"x"}"#);
    assert_eq!(
        approval.rule,
        "`mcp__fs__write_file` (permissions.ask[0] in .mcp.json)"
    );
    assert!(
        request.message.contains("Allow mcp__fs__write_file"),
        "{}",
        request.message
    );
    // Nothing goes out while it waits; waiting does not complete it.
    assert!(m.wait(1_000).is_empty());
    assert_eq!(calls_sent(&m), 0);
    // A wrong answer is refused and the question stays open.
    let e = m
        .answer_input(
            request.id,
            &InputAnswer::Accept(r#"{"approve":"always"}"#.into()),
        )
        .unwrap_err();
    assert!(e.contains("/approve"), "{e}");
    m.answer_input(request.id, &InputAnswer::Accept("{}".into()))
        .unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(text_result(&done[0].outcome), "x");
    assert_eq!(calls_sent(&m), 1);
    assert!(m.answer_input(request.id, &InputAnswer::Decline).is_err());
    // Once means once: the next call asks again.
    call_write(&mut m);
    approval_request(&mut m);
}

#[test]
fn approval_for_the_session_covers_later_calls_of_that_tool_and_profile() {
    let mut m = asking();
    call(&mut m, "mcp__fs__write_file").unwrap();
    let request = approval_request(&mut m);
    m.answer_input(
        request.id,
        &InputAnswer::Accept(r#"{"approve":"session"}"#.into()),
    )
    .unwrap();
    finished_calls(&mut m, 1);
    call(&mut m, "mcp__fs__write_file").unwrap();
    assert!(
        !m.events()
            .iter()
            .any(|e| matches!(e, Event::InputRequested(_))),
        "not asked again"
    );
    finished_calls(&mut m, 1);
    assert_eq!(calls_sent(&m), 2);
    // Another profile's caller is asked.
    m.start_call_as(
        "mcp__fs__write_file",
        "{}",
        CallOptions::default(),
        Some("ro"),
    )
    .unwrap();
    let other = approval_request(&mut m);
    m.answer_input(other.id, &InputAnswer::Decline).unwrap();
    finished_calls(&mut m, 1);
    // Reloading forgets it.
    m.load_config(".mcp.json", ASK_WRITE).unwrap();
    connect(&mut m);
    m.events();
    call(&mut m, "mcp__fs__write_file").unwrap();
    approval_request(&mut m);
}

#[test]
fn a_refused_approval_denies_the_call_naming_the_rule() {
    let mut m = asking();
    let call = call(&mut m, "mcp__fs__write_file").unwrap();
    let request = approval_request(&mut m);
    m.answer_input(request.id, &InputAnswer::Decline).unwrap();
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    assert_eq!(
        done[0].outcome,
        Err(CallError::Denied(
            "mcp__fs__write_file was not approved (the permission rule `mcp__fs__write_file` \
             (permissions.ask[0] in .mcp.json) asks first)"
                .into()
        ))
    );
    assert_eq!(calls_sent(&m), 0);
}

#[test]
fn an_unanswered_approval_times_out_and_a_cancelled_one_is_withdrawn() {
    let mut m = asking();
    let t0 = m.platform().now();
    let call = m
        .start_call(
            "mcp__fs__write_file",
            "{}",
            CallOptions {
                timeout_ms: Some(500),
                ..CallOptions::default()
            },
        )
        .unwrap();
    let request = approval_request(&mut m);
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].call, call);
    let Err(CallError::Timeout(message)) = &done[0].outcome else {
        panic!("{:?}", done[0].outcome)
    };
    assert!(
        message.contains("was not approved within the call's timeout of 500ms"),
        "{message}"
    );
    assert_eq!(
        m.platform().now(),
        t0 + 500,
        "the timeout ran while it waited"
    );
    // `completions` drained the events; answer now fails.
    assert!(
        m.answer_input(request.id, &InputAnswer::Accept("{}".into()))
            .is_err()
    );

    let call = call_write(&mut m);
    let request = approval_request(&mut m);
    m.cancel(call);
    let events = m.events();
    assert!(
        events.contains(&Event::InputWithdrawn(request.id)),
        "{events:?}"
    );
    let done = finished_calls(&mut m, 1);
    assert_eq!(done[0].outcome, Err(CallError::Cancelled));
    assert_eq!(calls_sent(&m), 0);

    // Shutting down withdraws a waiting approval too.
    let call = call_write(&mut m);
    let request = approval_request(&mut m);
    m.shutdown();
    let events = m.events();
    assert!(
        events.contains(&Event::InputWithdrawn(request.id)),
        "{events:?}"
    );
    let done = m.wait(0);
    assert_eq!(done[0].call, call);
    assert!(matches!(
        done[0].outcome,
        Err(CallError::ServerUnavailable(_))
    ));
}

fn call_write(m: &mut Manager<FakePlatform>) -> u64 {
    call(m, "mcp__fs__write_file").unwrap()
}

#[test]
fn input_requests_imply_approvals() {
    let mut m = manager_for(fs_platform(), ASK_WRITE);
    m.enable_input_requests();
    connect(&mut m);
    call(&mut m, "mcp__fs__write_file").expect("asks rather than refusing");
    assert!(approval_request(&mut m).approval.is_some());
}

#[test]
fn a_claude_code_settings_file_adds_its_mcp_rules_and_skips_the_rest() {
    let mut m = manager_for(
        fs_platform(),
        r#"{"mcpServers": {"fs": {"command": "fs"}},
            "permissions": {"allow": ["mcp__fs__delete"]}}"#,
    );
    let settings = r#"{
        "permissions": {
            "allow": ["Bash(npm run test:*)", "mcp__fs__list"],
            "ask": ["mcp__fs__write_file"],
            "deny": ["Read(./.env)", "mcp__fs__delete", "mcp__github"],
            "defaultMode": "acceptEdits"
        },
        "env": {"X": "1"}
    }"#;
    let issues = m.load_claude_settings(".claude/settings.json", settings);
    // Claude Code's own rules and keys are not mistakes; an MCP rule naming a
    // server mcpbox does not have is.
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].server.as_deref(), Some("github"));
    assert_eq!(issues[0].field.as_deref(), Some("permissions.deny[2]"));
    connect(&mut m);
    // Deny wins whichever file it is in.
    assert!(!names(&m).contains(&"mcp__fs__delete".to_string()));
    assert_eq!(
        denial(call(&mut m, "mcp__fs__delete")),
        "mcp__fs__delete is denied by the permission rule `mcp__fs__delete` \
         (permissions.deny[1] in .claude/settings.json)"
    );
    assert!(denial(call(&mut m, "mcp__fs__write_file")).contains("needs approval"));
    assert!(call(&mut m, "mcp__fs__read_file").is_ok());
    assert!(finished_calls(&mut m, 1)[0].outcome.is_ok());

    assert_eq!(
        m.load_claude_settings(".claude/settings.json", "{not json")
            .len(),
        1
    );
    // A new configuration drops them.
    m.load_config(".mcp.json", r#"{"mcpServers": {"fs": {"command": "fs"}}}"#)
        .unwrap();
    connect(&mut m);
    assert!(names(&m).contains(&"mcp__fs__delete".to_string()));
}
