//! The permission rules as the manager applies them: what is offered, what is
//! refused and why, per profile.

use super::*;

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
    completions(&mut m, 1);
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
    completions(&mut m, 2);
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
