//! Applying a new configuration to a running manager as a diff (hot reload).
//!
//! Reloading is registry logic, so it lives here in the guest and every host
//! gets the same rules. The new text is parsed first; text that is not a JSON
//! object changes nothing. Then each server is compared by name with the
//! running configuration:
//!
//! | the entry | what happens | reported as |
//! |---|---|---|
//! | the same | nothing: the server keeps running, its calls in flight untouched | `unchanged` |
//! | changed only in `startupTimeoutMs` / `toolTimeoutMs` / `roots` | the new values apply from the next connect / call (new roots at once, as `notifications/roots/list_changed`); the connection is kept | `updated` |
//! | changed otherwise (where it lives, `enabled`, `toolPrefix`, anything else) | the old connection is closed, its calls in flight fail with `server-unavailable` naming the reload, and the new entry starts (unless disabled); calls *waiting* for a restart wait for the new connection | `restarted` |
//! | new | started (unless disabled) | `added` |
//! | gone | shut down, its calls fail naming the reload | `removed` |
//! | now broken (the entry has a problem) | the running definition is kept as it is | `kept` |
//!
//! Servers keep the order of the new text (the order decides which of two
//! colliding tool names wins); kept ones follow. A reload also closes the
//! circuit of an unchanged server that failed too often (as `reconnect` does),
//! without starting it: the next call to one of its tools does.

use alloc::collections::{BTreeMap, BTreeSet};

use crate::prelude::*;

use super::{CallError, ConfigIssue, Event, Manager, ServerState, Slot, config};
use crate::transport::Platform;

/// What a reload changed; each list holds server names in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Not configured before: started unless disabled.
    pub added: Vec<String>,
    /// No longer configured: shut down.
    pub removed: Vec<String>,
    /// Their entry changed: the old connection closed, the new entry started.
    pub restarted: Vec<String>,
    /// Their entry changed only in settings a running server takes as they are.
    pub updated: Vec<String>,
    /// Their entry is the same: still running, calls in flight untouched.
    pub unchanged: Vec<String>,
    /// Their new entry has a problem (see `issues`): the running one is kept.
    pub kept: Vec<String>,
    /// Every problem in the new configuration, as `load_config` reports them.
    pub issues: Vec<ConfigIssue>,
}

impl ReloadReport {
    /// Whether the reload changed any server.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.restarted.is_empty()
            && self.updated.is_empty())
    }
}

/// What became of one old slot.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Removed,
    Restarted,
    Stays,
}

/// Whether `new` can take over `old`'s connection: only timeouts or roots differ.
fn applies_live(old: &config::ServerConfig, new: &config::ServerConfig) -> bool {
    let mut same = old.clone();
    same.startup_timeout_ms = new.startup_timeout_ms;
    same.tool_timeout_ms = new.tool_timeout_ms;
    // New roots reach a running server as `notifications/roots/list_changed`.
    same.roots.clone_from(&new.roots);
    same == *new
}

impl<P: Platform> Manager<P> {
    /// Applies a new configuration as a diff (see the module docs). On `Err`
    /// (text that is not a JSON object, with its line and column) nothing
    /// changes.
    pub fn reload_config(&mut self, origin: &str, text: &str) -> Result<ReloadReport, String> {
        let parsed = config::parse(origin, text)?;
        let mut report = ReloadReport {
            issues: parsed.issues,
            ..ReloadReport::default()
        };
        // The rules and limits apply from the next call on; calls in flight keep
        // the decision they started with. Approvals "for the session" end here.
        let rules_changed =
            parsed.permissions != self.rules.permissions || !self.rules.claude_settings.is_empty();
        self.rules.permissions = parsed.permissions;
        self.output = parsed.output;
        self.roots.configured = parsed.roots;
        if parsed.audit != self.audit.settings {
            report.issues.push(ConfigIssue {
                server: None,
                field: Some("audit".into()),
                message: "the `audit` settings changed; they apply from the next start of \
                          mcpbox (the audit trail in use is kept)"
                    .into(),
            });
        }
        self.apply_options();
        self.rules.warned.clear();
        self.approvals.session.clear();
        // What becomes of each old slot, decided before anything moves. Lookups
        // by name go through maps: a configuration may hold 10,000 entries.
        let fates: Vec<Fate> = {
            let mut new_by_name: BTreeMap<&str, &config::ServerConfig> = BTreeMap::new();
            for server in &parsed.servers {
                new_by_name.entry(server.name.as_str()).or_insert(server);
            }
            let broken: BTreeSet<&str> = report
                .issues
                .iter()
                .filter_map(|i| i.server.as_deref())
                .filter(|name| !new_by_name.contains_key(name))
                .collect();
            self.slots
                .iter()
                .map(|slot| {
                    let name = slot.config.name.as_str();
                    match new_by_name.get(name) {
                        Some(new) if !applies_live(&slot.config, new) => Fate::Restarted,
                        Some(_) => Fate::Stays,
                        None if broken.contains(name) => Fate::Stays,
                        None => Fate::Removed,
                    }
                })
                .collect()
        };

        // Close what goes while the indices still hold: calls complete, input
        // requests are withdrawn, and each old slot is left without a connection.
        let mut held = BTreeMap::new();
        for (i, fate) in fates.iter().enumerate() {
            let name = self.slots[i].config.name.clone();
            let why = match fate {
                Fate::Stays => continue,
                Fate::Removed => {
                    format!(
                        "server `{name}` was removed from the configuration by a reload of {origin}"
                    )
                }
                Fate::Restarted => format!(
                    "server `{name}` was restarted by a reload of {origin} (its entry changed)"
                ),
            };
            let slot = &mut self.slots[i];
            if let Some(client) = slot.client.as_mut() {
                client.abort_calls(|tool| {
                    CallError::ServerUnavailable(format!(
                        "{tool} is unavailable: {why} before the call finished"
                    ))
                });
            }
            if *fate == Fate::Removed {
                self.fail_held(i, |_| why.clone());
            }
            self.process(i);
            let slot = &mut self.slots[i];
            slot.conn = None;
            slot.connect_deadline = None;
            if *fate == Fate::Restarted {
                // Calls waiting for a restart wait for the new connection instead.
                held.insert(name, core::mem::take(&mut slot.held));
            }
        }

        // The new slots, in the new order, then the kept ones.
        let mut old_by_name: BTreeMap<String, usize> = BTreeMap::new();
        for (i, slot) in self.slots.iter().enumerate() {
            old_by_name.entry(slot.config.name.clone()).or_insert(i);
        }
        let mut old: Vec<Option<Slot<P::Conn>>> = core::mem::take(&mut self.slots)
            .into_iter()
            .map(Some)
            .collect();
        let mut moved_to = vec![None; old.len()];
        let mut slots: Vec<Slot<P::Conn>> = Vec::with_capacity(parsed.servers.len());
        let mut to_open = Vec::new();
        for new in parsed.servers {
            let before = old_by_name
                .get(&new.name)
                .copied()
                .filter(|&i| old[i].is_some());
            let name = new.name.clone();
            match before.map(|i| (i, fates[i])) {
                Some((i, Fate::Stays)) => {
                    let mut slot = old[i].take().expect("each old slot is taken once");
                    if slot.config == new {
                        report.unchanged.push(name);
                    } else {
                        report.updated.push(name);
                    }
                    slot.config = new;
                    // A reload closes the circuit, as the docs of `Restarts` say.
                    if slot.state == ServerState::Failed {
                        slot.restarts.failures = 0;
                    }
                    moved_to[i] = Some(slots.len());
                    slots.push(slot);
                }
                other => {
                    let restarted = matches!(other, Some((_, Fate::Restarted)));
                    let mut slot = Slot::new(new);
                    if restarted {
                        if let Some(calls) = held.remove(&name) {
                            slot.held = calls;
                        }
                        // Its calls waiting for a restart move with it.
                        if let Some((i, _)) = other {
                            moved_to[i] = Some(slots.len());
                            old[i] = None;
                        }
                        report.restarted.push(name);
                    } else {
                        report.added.push(name);
                    }
                    // Report its state from the first change on, like `load_config`.
                    slot.reported = Some(super::Reported::now(&slot, &self.registry.current));
                    if slot.config.enabled {
                        to_open.push(slots.len());
                    }
                    slots.push(slot);
                }
            }
        }
        for (i, slot) in old.iter_mut().enumerate() {
            if fates[i] == Fate::Stays
                && let Some(slot) = slot.take()
            {
                report.kept.push(slot.config.name.clone());
                moved_to[i] = Some(slots.len());
                slots.push(slot);
            }
        }
        for (i, slot) in old.into_iter().enumerate() {
            if let Some(slot) = slot {
                report.removed.push(slot.config.name.clone());
                let mut status = super::status_of(&slot, &self.registry.current);
                status.state = ServerState::Closed;
                status.tool_count = 0;
                status.error = Some(format!(
                    "removed from the configuration by a reload of {origin}"
                ));
                self.events.push(Event::Status(status));
                debug_assert!(moved_to[i].is_none());
            }
        }

        // Calls and input requests follow their slot to its new index; those of
        // closed slots completed above.
        self.slots = slots;
        self.calls.renumber(&moved_to);
        self.input.waiting = core::mem::take(&mut self.input.waiting)
            .into_iter()
            .filter_map(|(id, (i, key))| Some((id, (moved_to.get(i).copied().flatten()?, key))))
            .collect();
        self.origin = origin.to_string();
        // Claude Code settings read at load keep applying, resolved against the
        // new servers.
        let servers: Vec<_> = self.slots.iter().map(|s| s.config.clone()).collect();
        self.rules
            .readd_claude_settings(&servers, &mut report.issues);
        self.rebuild_registry();
        if rules_changed {
            // A server's tools are filtered as its list arrives: the servers that
            // stay connected list theirs again under the new rules (a tool the new
            // rules deny is refused from now on, whatever the registry still shows).
            for slot in &mut self.slots {
                if slot.state == ServerState::Connected
                    && let Some(client) = slot.client.as_mut()
                {
                    client.relist();
                }
            }
        }
        // Roots changed in the file reach the servers that stay.
        self.apply_roots();
        for i in to_open {
            self.open(i);
        }
        self.sync_statuses();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::client::{CallOptions, FinishedCall};
    use crate::testing::{FakePlatform, McpServer, Output};

    /// `.mcp.json` text: each server a stdio entry running `command`, with `extra`.
    /// Servers in the order given (a `serde_json` map would sort them).
    fn text(servers: &[(&str, &str, Value)]) -> String {
        let entries: Vec<String> = servers
            .iter()
            .map(|(name, command, extra)| {
                let mut entry = json!({ "command": command });
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

    /// Servers that answer `slow` after 10 s of fake time and `echo` at once.
    fn platform(names: &[&str]) -> FakePlatform {
        let mut p = FakePlatform::new();
        for name in names {
            p.serve(name, || {
                McpServer::with_tools(&["echo", "slow"]).on_call(|params, id, out| {
                    let delay = if params["name"] == "slow" { 10_000 } else { 0 };
                    out.reply(
                        delay,
                        id,
                        json!({"content": [{"type": "text", "text": "done"}]}),
                    );
                })
            });
        }
        p
    }

    fn settle(m: &mut Manager<FakePlatform>) -> Vec<FinishedCall> {
        let mut done = Vec::new();
        for _ in 0..100 {
            if m.servers().iter().all(|s| s.state != ServerState::Starting) {
                return done;
            }
            done.extend(m.wait(1_000));
            m.events();
        }
        panic!("servers never settled: {:?}", m.servers());
    }

    fn started(p: FakePlatform, servers: &[(&str, &str, Value)]) -> Manager<FakePlatform> {
        let mut m = Manager::new(p);
        assert_eq!(m.load_config("one.json", &text(servers)).unwrap(), vec![]);
        m.start();
        settle(&mut m);
        m.events();
        m
    }

    /// Waits until `n` calls completed (or ten minutes of fake time passed).
    fn finished_calls(m: &mut Manager<FakePlatform>, n: usize) -> Vec<FinishedCall> {
        let mut done = Vec::new();
        for _ in 0..100 {
            if done.len() >= n {
                break;
            }
            done.extend(m.wait(6_000));
            m.events();
        }
        done.sort_by_key(|c| c.call);
        done
    }

    fn call(m: &mut Manager<FakePlatform>, tool: &str) -> u64 {
        m.start_call(tool, r#"{"text": "x"}"#, CallOptions::default())
            .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
    }

    fn opened(m: &Manager<FakePlatform>, name: &str) -> usize {
        m.platform().opened.get(name).map_or(0, Vec::len)
    }

    #[test]
    fn a_reload_is_a_diff() {
        let p = platform(&["same", "gone", "changed", "timeouts", "new"]);
        let mut m = started(
            p,
            &[
                ("same", "same-server", json!({})),
                ("gone", "gone-server", json!({})),
                ("changed", "changed-server", json!({})),
                ("timeouts", "t-server", json!({})),
            ],
        );
        let same = call(&mut m, "mcp__same__slow");
        let gone = call(&mut m, "mcp__gone__slow");
        let changed = call(&mut m, "mcp__changed__slow");
        let timeouts = call(&mut m, "mcp__timeouts__slow");

        let report = m
            .reload_config(
                "two.json",
                &text(&[
                    ("new", "new-server", json!({})),
                    ("same", "same-server", json!({})),
                    ("changed", "changed-server", json!({"args": ["--v2"]})),
                    ("timeouts", "t-server", json!({"toolTimeoutMs": 90000})),
                ]),
            )
            .unwrap();
        assert_eq!(report.added, ["new"]);
        assert_eq!(report.removed, ["gone"]);
        assert_eq!(report.restarted, ["changed"]);
        assert_eq!(report.updated, ["timeouts"]);
        assert_eq!(report.unchanged, ["same"]);
        assert!(report.kept.is_empty() && report.issues.is_empty());

        // The closed servers' calls fail at once, naming the reload.
        let mut done = m.wait(0);
        done.sort_by_key(|c| c.call);
        assert_eq!(done.len(), 2, "{done:?}");
        for (c, call, why) in [
            (
                &done[0],
                gone,
                "server `gone` was removed from the configuration by a reload of two.json",
            ),
            (
                &done[1],
                changed,
                "server `changed` was restarted by a reload of two.json (its entry changed)",
            ),
        ] {
            assert_eq!(c.call, call);
            match &c.outcome {
                Err(CallError::ServerUnavailable(m)) => assert!(m.contains(why), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        // The removed server's connection is dropped; the changed one reconnects.
        assert!(m.platform().sim("gone").borrow().dropped);
        assert_eq!(opened(&m, "changed"), 2);
        assert_eq!(opened(&m, "same"), 1);
        assert_eq!(opened(&m, "timeouts"), 1);
        let events = m.events();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Status(s) if s.name == "gone"
                && s.state == ServerState::Closed
                && s.error.as_deref().is_some_and(|e| e.contains("removed")))),
            "{events:?}"
        );

        // The servers that stayed finish their calls; the order is the new one.
        let rest = finished_calls(&mut m, 2);
        assert_eq!(
            rest.iter().map(|c| c.call).collect::<Vec<_>>(),
            [same, timeouts]
        );
        assert!(rest.iter().all(|c| c.outcome.is_ok()), "{rest:?}");
        let names: Vec<String> = m.servers().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["new", "same", "changed", "timeouts"]);
        assert!(
            m.servers()
                .iter()
                .all(|s| s.state == ServerState::Connected)
        );
        // The new and the restarted servers' tools are in the registry.
        let echo = call(&mut m, "mcp__changed__echo");
        let new = call(&mut m, "mcp__new__echo");
        let done = finished_calls(&mut m, 2);
        assert_eq!(done.iter().map(|c| c.call).collect::<Vec<_>>(), [echo, new]);
        assert!(matches!(
            m.start_call("mcp__gone__echo", "{}", CallOptions::default()),
            Err(CallError::UnknownTool(_))
        ));
    }

    #[test]
    fn text_that_does_not_parse_changes_nothing() {
        let mut m = started(platform(&["a"]), &[("a", "a-server", json!({}))]);
        let before = m.servers();
        let error = m
            .reload_config(
                "c.json",
                "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n",
            )
            .unwrap_err();
        assert!(error.starts_with("c.json:4:"), "{error}");
        assert_eq!(m.servers(), before);
        assert_eq!(opened(&m, "a"), 1);
        assert!(m.events().is_empty());
    }

    #[test]
    fn a_broken_entry_keeps_the_running_definition() {
        let mut m = started(
            platform(&["a", "b"]),
            &[("a", "a-server", json!({})), ("b", "b-server", json!({}))],
        );
        let broken =
            r#"{"mcpServers": {"a": {"command": 42}, "b": {"command": "b-server"}, "c": {}}}"#;
        let report = m.reload_config("c.json", broken).unwrap();
        assert_eq!(report.kept, ["a"]);
        assert_eq!(report.unchanged, ["b"]);
        assert!(report.added.is_empty() && report.removed.is_empty());
        assert_eq!(report.issues.len(), 2, "{:?}", report.issues);
        assert_eq!(opened(&m, "a"), 1);
        assert!(
            m.servers()
                .iter()
                .all(|s| s.state == ServerState::Connected)
        );
        // Calls to the kept server still work.
        call(&mut m, "mcp__a__echo");
        assert_eq!(finished_calls(&mut m, 1).len(), 1);
    }

    #[test]
    fn a_duplicate_entry_uses_the_last_definition() {
        let mut m = started(platform(&["a"]), &[("a", "a-server", json!({}))]);
        let twice = r#"{"mcpServers": {"a": {"command": "old"}, "a": {"command": "a-server"}}}"#;
        let report = m.reload_config("c.json", twice).unwrap();
        assert_eq!(report.unchanged, ["a"]);
        assert_eq!(report.issues.len(), 1);
        assert!(report.issues[0].message.contains("more than once"));
        assert_eq!(opened(&m, "a"), 1);
    }

    #[test]
    fn calls_waiting_for_a_restart_move_to_the_new_connection() {
        let mut m = started(platform(&["a"]), &[("a", "a-server", json!({}))]);
        // The server exits; after its backoff a call holds, waiting for a restart.
        m.platform().emit(
            "a",
            0,
            Output::Exit {
                status: "exit code 1".into(),
                stderr: vec![],
            },
        );
        m.wait(0);
        m.events();
        assert_eq!(m.servers()[0].state, ServerState::Failed);
        let backoff_over = m.platform().now() + 1_500;
        while m.platform().now() < backoff_over {
            m.wait(1_500);
            m.events();
        }
        let held = call(&mut m, "mcp__a__echo");
        assert_eq!(m.servers()[0].state, ServerState::Starting);
        let report = m
            .reload_config(
                "c.json",
                &text(&[("a", "a-server", json!({"args": ["-v"]}))]),
            )
            .unwrap();
        assert_eq!(report.restarted, ["a"]);
        let done = finished_calls(&mut m, 1);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].call, held);
        assert!(done[0].outcome.is_ok(), "{:?}", done[0].outcome);
        assert_eq!(
            opened(&m, "a"),
            3,
            "first, the call's restart, the reload's"
        );
    }

    #[test]
    fn a_reload_closes_the_circuit_of_an_unchanged_failed_server() {
        let mut m = started(platform(&["a"]), &[("a", "a-server", json!({}))]);
        m.slots[0].state = ServerState::Failed;
        m.slots[0].restarts.failures = super::super::CIRCUIT_THRESHOLD;
        let report = m
            .reload_config("c.json", &text(&[("a", "a-server", json!({}))]))
            .unwrap();
        assert_eq!(report.unchanged, ["a"]);
        assert_eq!(m.slots[0].restarts.failures, 0);
        assert!(!report.changed());
    }

    #[test]
    fn a_reload_applies_new_permission_rules_to_running_servers() {
        let p = platform(&["fs"]);
        let denying = r#"{"mcpServers": {"fs": {"command": "fs"}},
            "permissions": {"deny": ["mcp__fs__slow"]}}"#;
        let mut m = Manager::new(p);
        assert_eq!(m.load_config("one.json", denying).unwrap(), vec![]);
        m.start();
        settle(&mut m);
        let names = |m: &Manager<FakePlatform>| -> Vec<String> {
            m.tools().into_iter().map(|t| t.name).collect()
        };
        assert_eq!(names(&m), ["mcp__fs__echo"]);

        // The rule moves from `slow` to `echo`: `echo` is refused at once, and
        // `slow` is offered once the server listed its tools again.
        let flipped = r#"{"mcpServers": {"fs": {"command": "fs"}},
            "permissions": {"deny": ["mcp__fs__echo"]}}"#;
        let report = m.reload_config("one.json", flipped).unwrap();
        assert_eq!(report.unchanged, ["fs"]);
        assert_eq!(opened(&m, "fs"), 1, "the server kept running");
        match m.start_call("mcp__fs__echo", "{}", CallOptions::default()) {
            Err(CallError::Denied(why)) => assert!(why.contains("permissions.deny[0]"), "{why}"),
            other => panic!("echo after the reload: {other:?}"),
        }
        for _ in 0..10 {
            m.wait(100);
        }
        assert_eq!(names(&m), ["mcp__fs__slow"]);
        assert!(
            m.events()
                .iter()
                .any(|e| matches!(e, Event::ToolsChanged(s) if s == "fs"))
        );
    }

    fn root_uris(m: &Manager<FakePlatform>, name: &str) -> Vec<String> {
        m.roots_of(name)
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect()
    }

    fn initialize_roots(m: &Manager<FakePlatform>, name: &str) -> Vec<Value> {
        m.platform()
            .sim(name)
            .borrow()
            .sent("initialize")
            .iter()
            .map(|i| i["params"]["capabilities"]["roots"].clone())
            .collect()
    }

    #[test]
    fn roots_come_from_the_entry_the_embedder_or_the_file_and_reach_running_servers() {
        let p = platform(&["top", "own", "boxed", "none"]);
        let mut m = Manager::new(p);
        let text = |top: &str| {
            let servers = text(&[
                ("top", "top", json!({})),
                ("own", "own", json!({"roots": ["/own"]})),
                (
                    "boxed",
                    "boxed",
                    json!({"sandbox": {"read": ["/data/in", "${HOME}/x"]}}),
                ),
                ("none", "none", json!({"roots": []})),
            ]);
            format!("{{\"roots\": [\"{top}\", \"/data\"], {}", &servers[1..])
        };
        assert_eq!(m.load_config("one.json", &text("/a")).unwrap(), vec![]);
        m.start();
        settle(&mut m);
        m.events();
        assert_eq!(root_uris(&m, "top"), ["file:///a", "file:///data"]);
        assert_eq!(root_uris(&m, "own"), ["file:///own"]);
        // At most its grants: `/data` narrows to `/data/in`; `/a` and the
        // `${HOME}` grant (not comparable in the guest) give nothing.
        assert_eq!(root_uris(&m, "boxed"), ["file:///data/in"]);
        assert!(root_uris(&m, "none").is_empty());
        let declared = || json!({"listChanged": true});
        assert_eq!(initialize_roots(&m, "top"), [declared()]);
        assert_eq!(initialize_roots(&m, "boxed"), [declared()]);
        assert_eq!(initialize_roots(&m, "none"), [Value::Null]);

        // A reload that changes the top-level roots keeps every connection and
        // tells the servers whose roots changed.
        let report = m.reload_config("one.json", &text("/b")).unwrap();
        assert_eq!(report.unchanged, ["top", "own", "boxed", "none"]);
        let changed = |m: &Manager<FakePlatform>, name: &str| {
            m.platform()
                .sim(name)
                .borrow()
                .sent("notifications/roots/list_changed")
                .len()
        };
        assert_eq!(changed(&m, "top"), 1);
        assert_eq!(changed(&m, "own") + changed(&m, "boxed"), 0);
        assert_eq!(root_uris(&m, "top"), ["file:///b", "file:///data"]);

        // The embedder's roots replace the file's top-level ones, not an
        // entry's own; a server offered none before gets a new session.
        let embedder = vec![crate::roots::Root::new("/data/in/deep", None).unwrap()];
        m.set_roots(Some(embedder));
        settle(&mut m);
        assert_eq!(changed(&m, "top"), 2);
        assert_eq!(changed(&m, "boxed"), 1);
        assert_eq!(root_uris(&m, "boxed"), ["file:///data/in/deep"]);
        assert_eq!(changed(&m, "own"), 0);
        assert_eq!(opened(&m, "top"), 1);
        // An entry's own `roots: []` holds; back to the file's roots, then
        // give `none` some in the file: it is reconnected to be offered them.
        m.set_roots(None);
        settle(&mut m);
        assert_eq!(root_uris(&m, "top"), ["file:///b", "file:///data"]);
        let report = m
            .reload_config(
                "one.json",
                &text("/b").replace("\"roots\":[]", "\"roots\":[\"/n\"]"),
            )
            .unwrap();
        assert_eq!(report.updated, ["none"]);
        settle(&mut m);
        assert_eq!(opened(&m, "none"), 2);
        // (Each connection is a fresh fake: this is the second one's.)
        assert_eq!(initialize_roots(&m, "none"), [declared()]);
        assert!(
            m.servers()
                .iter()
                .all(|s| s.state == ServerState::Connected),
            "{:?}",
            m.servers()
        );
    }
}
