//! The configuration's permission rules, read: the top-level `permissions` and
//! `profiles`, the servers' `enabledTools` / `disabledTools`, and a Claude Code
//! settings file's `permissions` → [`Permissions`], each rule resolved against
//! the configured servers. What the rules decide is [`crate::permissions`]'s.
//!
//! # Problems
//!
//! Every problem is a [`ConfigIssue`] naming the field (`permissions.deny[2]`),
//! the server when the rule names one, and the fix; the rest loads. A rule
//! naming a server that is not configured, an invalid pattern (`mcp__*`, a `*`
//! anywhere but `mcp__server__*`, which Claude Code skips too), a rule that is
//! not about an MCP tool, an unknown key: reported and skipped. Tools are known
//! only once a server lists them, so a rule naming a tool its server does not
//! have is reported then, as a warning ([`Permissions::unknown_tools`]).
//! An invalid `default` reads as `deny`: a typo must not open everything up.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;

use serde_json::Value;

use crate::config::ServerConfig;
use crate::config::types::{ConfigIssue, kind_of};
use crate::naming;
use crate::permissions::{Filter, MODES, Mode, Permissions, Rule, RuleSet, implicit_rule};

impl Permissions {
    /// Reads the top-level `permissions` and `profiles` values (`None` when
    /// absent) and the servers' tool filters; problems go to `issues`.
    pub fn read(
        origin: &str,
        permissions: Option<&Value>,
        profiles: Option<&Value>,
        servers: &[ServerConfig],
        issues: &mut Vec<ConfigIssue>,
    ) -> Permissions {
        let mut reader = Reader {
            origin,
            servers: Targets::new(servers),
            issues,
            named_tools: BTreeMap::new(),
            claude_settings: false,
        };
        let base = match permissions {
            None | Some(Value::Null) => RuleSet::default(),
            Some(value) => reader.rule_set("permissions", value),
        };
        let mut sets = BTreeMap::new();
        match profiles {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    let field = member_path("profiles", name);
                    if name.is_empty() {
                        reader.issue(None, field, "profile names must not be empty".into());
                        continue;
                    }
                    let set = reader.rule_set(&field, value);
                    sets.insert(name.clone(), set);
                }
            }
            Some(other) => reader.issue(
                None,
                "profiles".into(),
                format!(
                    "must be an object of profile names to rule sets, like \
                     {{\"readonly\": {{\"allow\": [\"mcp__fs__read_file\"], \"default\": \"deny\"}}}}, \
                     but is {}",
                    kind_of(other)
                ),
            ),
        }
        let mut filters = BTreeMap::new();
        for server in servers {
            let filter = reader.filter(server);
            if filter != Filter::default() {
                filters.insert(server.name.clone(), filter);
            }
        }
        Permissions {
            base,
            profiles: sets,
            filters,
            named_tools: reader.named_tools,
            implicit: implicit_rule(),
        }
    }

    /// Adds the `permissions` of a Claude Code settings file (`value`, the
    /// file's whole object; `origin` names it in rules and issues): its `allow`,
    /// `ask` and `deny` rules about MCP tools join the top-level rules (deny still
    /// wins over ask, ask over allow, whichever file a rule is in). Rules about
    /// Claude Code's own tools and its other keys (`defaultMode`, `env`, …) are
    /// skipped silently; a wrong MCP rule is an issue, as in the configuration.
    pub fn add_claude_settings(
        &mut self,
        origin: &str,
        value: &Value,
        servers: &[ServerConfig],
        issues: &mut Vec<ConfigIssue>,
    ) {
        let permissions = match value {
            Value::Object(map) => match map.get("permissions") {
                None | Some(Value::Null) => return,
                Some(p) => p,
            },
            other => {
                issues.push(ConfigIssue {
                    server: None,
                    field: None,
                    message: format!(
                        "{origin}: must be a JSON object (Claude Code settings), but is {}; its \
                         permissions are not read",
                        kind_of(other)
                    ),
                });
                return;
            }
        };
        let mut reader = Reader {
            origin,
            servers: Targets::new(servers),
            issues,
            named_tools: BTreeMap::new(),
            claude_settings: true,
        };
        let added = reader.rule_set("permissions", permissions);
        for (server, tools) in reader.named_tools {
            self.named_tools.entry(server).or_default().extend(tools);
        }
        for (server, rules) in added.servers {
            let mine = self.base.servers.entry(server).or_default();
            for i in 0..MODES.len() {
                if mine.whole[i].is_none() {
                    mine.whole[i] = rules.whole[i].clone();
                }
                for (tool, rule) in &rules.tools[i] {
                    mine.tools[i]
                        .entry(tool.clone())
                        .or_insert_with(|| rule.clone());
                }
            }
        }
    }
}

/// `profiles.readonly`, or `profiles["a.b"]` when the key would make the path ambiguous.
fn member_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", Value::String(key.to_string()))
    }
}

/// The names a rule may give for each configured server: its name and its
/// `toolPrefix`, as written and sanitised (as they appear in tool names).
struct Targets {
    /// Name a rule may use → the configured servers it names (in configuration
    /// order; several only when their names read the same once sanitised). A map,
    /// so a configuration of 10,000 servers builds it in one pass and a rule
    /// looks up only the prefixes that end at a `__`.
    names: BTreeMap<String, Vec<String>>,
}

impl Targets {
    fn new(servers: &[ServerConfig]) -> Targets {
        let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in servers {
            let mut add = |n: String| {
                if n.is_empty() {
                    return;
                }
                let servers = names.entry(n).or_default();
                if servers.last() != Some(&s.name) {
                    servers.push(s.name.clone());
                }
            };
            add(s.name.clone());
            add(naming::sanitize(&s.name));
            if let Some(prefix) = &s.tool_prefix {
                add(prefix.clone());
                add(naming::sanitize(prefix));
            }
        }
        Targets { names }
    }

    /// The servers `rest` (a rule after `mcp__`) names, and the tool it names
    /// (`None`: every tool). The longest name wins: a server named `a__b` over
    /// one named `a` for `mcp__a__b__tool`.
    fn resolve<'a>(&self, rest: &'a str) -> Option<(Vec<&str>, Option<&'a str>)> {
        let found = |name: &str, tool: Option<&'a str>| {
            let servers = self.names.get(name)?;
            Some((servers.iter().map(String::as_str).collect(), tool))
        };
        if let Some(whole) = found(rest, None) {
            return Some(whole);
        }
        // Every `__` in `rest`, rightmost first, overlapping ones included (`a___t`
        // is `a_` and `t`, or `a` and `_t`): the longer server name wins.
        let bytes = rest.as_bytes();
        (0..bytes.len().saturating_sub(1))
            .rev()
            .filter(|&i| bytes[i] == b'_' && bytes[i + 1] == b'_')
            .find_map(|i| {
                let tool = &rest[i + 2..];
                (i > 0 && !tool.is_empty())
                    .then(|| found(&rest[..i], Some(tool)))
                    .flatten()
            })
    }
}

/// Reads rule sets and filters, collecting issues.
struct Reader<'a> {
    origin: &'a str,
    servers: Targets,
    issues: &'a mut Vec<ConfigIssue>,
    named_tools: BTreeMap<String, Vec<(String, Rc<Rule>)>>,
    /// Reading a Claude Code settings file: what is not about MCP tools is
    /// Claude Code's, not a mistake.
    claude_settings: bool,
}

/// The keys of a rule set.
const RULE_SET_KEYS: [&str; 4] = ["allow", "ask", "deny", "default"];

impl Reader<'_> {
    fn issue(&mut self, server: Option<&str>, field: String, message: String) {
        self.issues.push(ConfigIssue {
            server: server.map(String::from),
            field: Some(field),
            message,
        });
    }

    fn rule(&self, source: String, text: &str) -> Rc<Rule> {
        Rc::new(Rule {
            source,
            text: text.to_string(),
            origin: self.origin.to_string(),
        })
    }

    /// `permissions` or one profile, at `field`.
    fn rule_set(&mut self, field: &str, value: &Value) -> RuleSet {
        let mut set = RuleSet::default();
        let Value::Object(map) = value else {
            self.issue(
                None,
                field.to_string(),
                format!(
                    "must be an object with `allow`, `ask`, `deny` lists and a `default`, like \
                     {{\"deny\": [\"mcp__fs__write_file\"]}}, but is {}",
                    kind_of(value)
                ),
            );
            return set;
        };
        for key in map.keys() {
            if RULE_SET_KEYS.contains(&key.as_str()) || self.claude_settings {
                continue;
            }
            let hint = match key.as_str() {
                "defaultMode" => {
                    "`defaultMode` is Claude Code's mode for its own tools; mcpbox ignores it \
                     (write `\"default\": \"allow\"`, `\"ask\"` or `\"deny\"` for MCP tools no rule names)"
                        .to_string()
                }
                "additionalDirectories" | "disableBypassPermissionsMode" => format!(
                    "`{key}` is a Claude Code setting for its own tools; mcpbox ignores it"
                ),
                "profiles" if field == "permissions" => "profiles are a top-level key: move \
                     `profiles` next to `permissions`"
                    .to_string(),
                _ => format!(
                    "unknown key `{key}`, ignored (a rule set has `allow`, `ask`, `deny` and `default`)"
                ),
            };
            self.issue(None, member_path(field, key), hint);
        }
        for mode in MODES {
            let key = mode.as_str();
            let Some(list) = map.get(key) else { continue };
            let list_field = format!("{field}.{key}");
            let items = match list {
                Value::Null => continue,
                Value::Array(items) => items,
                other => {
                    self.issue(
                        None,
                        list_field,
                        format!(
                            "must be a list of rules like [\"mcp__fs\", \"mcp__fs__write_file\"], but is {}",
                            kind_of(other)
                        ),
                    );
                    continue;
                }
            };
            for (i, item) in items.iter().enumerate() {
                let item_field = format!("{list_field}[{i}]");
                let Value::String(text) = item else {
                    self.issue(
                        None,
                        item_field,
                        format!(
                            "must be a rule (a string like \"mcp__fs__write_file\"), but is {}",
                            kind_of(item)
                        ),
                    );
                    continue;
                };
                self.add_rule(&mut set, mode, item_field, text);
            }
        }
        match map.get("default") {
            // Claude Code has no `default`: its `defaultMode` is for its own tools.
            _ if self.claude_settings => {}
            None | Some(Value::Null) => {}
            Some(Value::String(word)) if Mode::parse(word).is_some() => {
                let mode = Mode::parse(word).unwrap_or(Mode::Deny);
                set.default = Some((mode, self.rule(format!("{field}.default"), word)));
            }
            Some(other) => {
                let shown = match other {
                    Value::String(s) => format!("{s:?}"),
                    other => kind_of(other).to_string(),
                };
                self.issue(
                    None,
                    format!("{field}.default"),
                    format!(
                        "must be \"allow\", \"ask\" or \"deny\", but is {shown}; read as \"deny\" \
                         until it is fixed"
                    ),
                );
                set.default = Some((
                    Mode::Deny,
                    self.rule(format!("{field}.default"), "deny (invalid value)"),
                ));
            }
        }
        set
    }

    /// Files one rule of list `mode`, written at `field`, into `set`.
    fn add_rule(&mut self, set: &mut RuleSet, mode: Mode, field: String, text: &str) {
        let Some(rest) = text.strip_prefix("mcp__") else {
            if self.claude_settings {
                // `Bash(…)`, `Read(…)`: Claude Code's own tools.
                return;
            }
            let hint = if text.contains('(') {
                " (Claude Code rules for its own tools, like `Bash(…)`, do not apply to MCP tools)"
            } else {
                ""
            };
            self.issue(
                None,
                field,
                format!(
                    "{text:?} is not a rule about MCP tools, ignored{hint}; write \"mcp__server\", \
                     \"mcp__server__*\" or \"mcp__server__tool\""
                ),
            );
            return;
        };
        // `mcp__server__*` is `mcp__server`; any other `*` is not a pattern.
        let (rest, whole) = match rest.strip_suffix("__*") {
            Some(server) => (server, true),
            None => (rest, false),
        };
        if rest.is_empty() || rest.contains('*') {
            let fix = if mode == Mode::Deny || mode == Mode::Ask {
                format!(
                    "; to {} every tool no other rule names, write `\"default\": \"{}\"`",
                    mode.as_str(),
                    mode.as_str()
                )
            } else {
                String::new()
            };
            self.issue(
                None,
                field,
                format!(
                    "{text:?} is not a valid pattern, ignored: the only wildcard is a whole server, \
                     \"mcp__server\" or \"mcp__server__*\" (as in Claude Code){fix}"
                ),
            );
            return;
        }
        let resolved = self
            .servers
            .resolve(rest)
            .filter(|(_, tool)| !whole || tool.is_none());
        let Some((servers, tool)) = resolved else {
            let server = if whole {
                rest
            } else {
                rest.split("__").next().unwrap_or(rest)
            };
            self.issue(
                Some(server),
                field,
                format!(
                    "{text:?} names no configured server (no server is named `{server}` or has \
                     `toolPrefix` `{server}`), so it has no effect; fix the name or remove the rule"
                ),
            );
            return;
        };
        let rule = self.rule(field, text);
        for server in servers {
            let rules = set.servers.entry(server.to_string()).or_default();
            let i = mode.index();
            match tool {
                None => {
                    rules.whole[i].get_or_insert_with(|| rule.clone());
                }
                Some(tool) => {
                    rules.tools[i]
                        .entry(tool.to_string())
                        .or_insert_with(|| rule.clone());
                    self.named_tools
                        .entry(server.to_string())
                        .or_default()
                        .push((tool.to_string(), rule.clone()));
                }
            }
        }
    }

    /// A server's `enabledTools` / `disabledTools`.
    fn filter(&mut self, server: &ServerConfig) -> Filter {
        let mut filter = Filter::default();
        let base = member_path("mcpServers", &server.name);
        if let Some((key, names)) = &server.tools.enabled {
            let rule = self.rule(format!("{base}.{key}"), "");
            let names: BTreeSet<String> = names.iter().cloned().collect();
            for name in &names {
                self.named_tools
                    .entry(server.name.clone())
                    .or_default()
                    .push((name.clone(), rule.clone()));
            }
            filter.enabled = Some((names, rule));
        }
        if let Some((key, names)) = &server.tools.disabled {
            for (i, name) in names.iter().enumerate() {
                let rule = self.rule(format!("{base}.{key}[{i}]"), name);
                filter
                    .disabled
                    .entry(name.clone())
                    .or_insert_with(|| rule.clone());
                self.named_tools
                    .entry(server.name.clone())
                    .or_default()
                    .push((name.clone(), rule));
            }
        }
        filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    /// The permissions of `text` and its issues about them. The servers `a` and
    /// `a__b` (for the longest-name rule) can give the same tool names, which the
    /// configuration reports too: not a permission issue, left out.
    fn load(text: &str) -> (Permissions, Vec<ConfigIssue>) {
        let c = config::parse(".mcp.json", text).expect("parses");
        let issues = c
            .issues
            .into_iter()
            .filter(|i| !(i.field.is_none() && i.message.contains("can be the same as tool names")))
            .collect();
        (c.permissions, issues)
    }

    fn servers(extra: &str) -> String {
        format!(
            r#"{{"mcpServers": {{
                "fs": {{"command": "fs"}},
                "gh": {{"command": "gh", "toolPrefix": "github"}},
                "my.srv": {{"command": "m"}},
                "a__b": {{"command": "ab"}},
                "a": {{"command": "a"}}
            }}{extra}}}"#
        )
    }

    fn mode(p: &Permissions, server: &str, tool: &str) -> Mode {
        p.decide(server, tool, None).mode()
    }

    #[test]
    fn no_rules_allow_everything() {
        let (p, issues) = load(&servers(""));
        assert_eq!(issues, vec![]);
        assert!(p.is_empty());
        let d = p.decide("fs", "read_file", None);
        assert_eq!(d.mode(), Mode::Allow);
        assert_eq!(d.rule().source, "permissions.default");
    }

    #[test]
    fn deny_wins_over_ask_over_allow_in_any_order() {
        let (p, issues) = load(&servers(
            r#", "permissions": {
                "allow": ["mcp__fs", "mcp__fs__write_file", "mcp__fs__move_file"],
                "ask": ["mcp__fs__write_file", "mcp__fs__move_file"],
                "deny": ["mcp__fs__write_file"]
            }"#,
        ));
        assert_eq!(issues, vec![]);
        let d = p.decide("fs", "write_file", None);
        assert_eq!(d.mode(), Mode::Deny);
        assert_eq!(d.rule().source, "permissions.deny[0]");
        assert_eq!(
            d.rule().to_string(),
            "`mcp__fs__write_file` (permissions.deny[0] in .mcp.json)"
        );
        let d = p.decide("fs", "move_file", None);
        assert_eq!(d.mode(), Mode::Ask);
        assert_eq!(d.rule().source, "permissions.ask[1]");
        let d = p.decide("fs", "read_file", None);
        assert_eq!(d.mode(), Mode::Allow);
        assert_eq!(d.rule().source, "permissions.allow[0]");
    }

    #[test]
    fn a_whole_server_rule_and_the_default() {
        let (p, issues) = load(&servers(
            r#", "permissions": {"allow": ["mcp__fs__read_file"], "deny": ["mcp__gh__*"], "default": "ask"}"#,
        ));
        assert_eq!(issues, vec![]);
        assert_eq!(mode(&p, "gh", "search"), Mode::Deny);
        assert_eq!(mode(&p, "fs", "read_file"), Mode::Allow);
        let d = p.decide("fs", "write_file", None);
        assert_eq!(d.mode(), Mode::Ask);
        assert_eq!(d.rule().source, "permissions.default");
        assert_eq!(d.rule().text, "ask");
    }

    #[test]
    fn rules_name_servers_by_name_or_tool_prefix_raw_or_sanitised() {
        let (p, issues) = load(&servers(
            r#", "permissions": {"deny": ["mcp__github__search", "mcp__my_srv__x", "mcp__my.srv__y", "mcp__fs__get_file"]}"#,
        ));
        assert_eq!(issues, vec![]);
        assert_eq!(mode(&p, "gh", "search"), Mode::Deny);
        assert_eq!(mode(&p, "gh", "other"), Mode::Allow);
        assert_eq!(mode(&p, "my.srv", "x"), Mode::Deny);
        assert_eq!(mode(&p, "my.srv", "y"), Mode::Deny);
        // A rule may give the tool's name as it appears in tool names.
        assert_eq!(mode(&p, "fs", "get.file"), Mode::Deny);
    }

    #[test]
    fn the_longest_server_name_wins() {
        let (p, issues) = load(&servers(
            r#", "permissions": {"deny": ["mcp__a__b__t", "mcp__a__b"]}"#,
        ));
        assert_eq!(issues, vec![]);
        assert_eq!(mode(&p, "a__b", "t"), Mode::Deny);
        assert_eq!(
            mode(&p, "a__b", "other"),
            Mode::Deny,
            "mcp__a__b: all of a__b"
        );
        assert_eq!(mode(&p, "a", "b__t"), Mode::Allow);
        assert_eq!(mode(&p, "a", "b"), Mode::Allow);
    }

    /// Names that end in `_` meet the separator in a run of underscores:
    /// `mcp__a___t` is server `a_` and tool `t` when `a_` exists, else server `a`
    /// and tool `_t`.
    #[test]
    fn a_run_of_underscores_splits_at_the_longest_server_name() {
        let (p, issues) = load(
            r#"{"mcpServers": {"a": {"command": "a"}, "a_": {"command": "a"}},
                "permissions": {"deny": ["mcp__a___t"]}}"#,
        );
        assert_eq!(issues, vec![]);
        assert_eq!(mode(&p, "a_", "t"), Mode::Deny);
        assert_eq!(mode(&p, "a", "_t"), Mode::Allow);

        let (p, issues) = load(
            r#"{"mcpServers": {"a": {"command": "a"}},
                "permissions": {"deny": ["mcp__a___t"]}}"#,
        );
        assert_eq!(issues, vec![]);
        assert_eq!(mode(&p, "a", "_t"), Mode::Deny);
    }

    #[test]
    fn problems_are_issues_naming_the_field_and_the_rest_loads() {
        let (p, issues) = load(&servers(
            r#", "permissions": {
                "allow": ["mcp__*", "Bash(npm test)", "mcp__nope__x", 5, "mcp__fs__read_*", "mcp__fs__read_file"],
                "deny": "mcp__fs",
                "defaultMode": "acceptEdits",
                "colour": 1
            }"#,
        ));
        let fields: Vec<(Option<&str>, &str)> = issues
            .iter()
            .map(|i| (i.server.as_deref(), i.field.as_deref().unwrap()))
            .collect();
        assert_eq!(
            fields,
            [
                (None, "permissions.colour"),
                (None, "permissions.defaultMode"),
                (None, "permissions.deny"),
                (None, "permissions.allow[0]"),
                (None, "permissions.allow[1]"),
                (Some("nope"), "permissions.allow[2]"),
                (None, "permissions.allow[3]"),
                (None, "permissions.allow[4]"),
            ]
        );
        assert!(
            issues[0].message.contains("unknown key"),
            "{}",
            issues[0].message
        );
        assert!(
            issues[1].message.contains("Claude Code"),
            "{}",
            issues[1].message
        );
        assert!(
            issues[3].message.contains("not a valid pattern"),
            "{}",
            issues[3].message
        );
        assert!(
            issues[4].message.contains("`Bash(…)`"),
            "{}",
            issues[4].message
        );
        assert!(
            issues[5].message.contains("no configured server"),
            "{}",
            issues[5].message
        );
        // The valid rule still applies; the invalid deny list denies nothing.
        assert_eq!(
            p.decide("fs", "read_file", None).rule().source,
            "permissions.allow[5]"
        );
        assert_eq!(mode(&p, "fs", "write_file"), Mode::Allow);
    }

    #[test]
    fn an_invalid_deny_wildcard_says_how_to_deny_everything() {
        let (_, issues) = load(&servers(r#", "permissions": {"deny": ["mcp__*"]}"#));
        assert!(
            issues[0].message.contains(r#""default": "deny""#),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn an_invalid_default_reads_as_deny() {
        let (p, issues) = load(&servers(r#", "permissions": {"default": "denied"}"#));
        assert_eq!(issues[0].field.as_deref(), Some("permissions.default"));
        assert!(
            issues[0].message.contains("read as \"deny\""),
            "{}",
            issues[0].message
        );
        assert_eq!(mode(&p, "fs", "anything"), Mode::Deny);
    }

    #[test]
    fn enabled_and_disabled_tools() {
        let (p, issues) = load(
            r#"{"mcpServers": {
                "fs": {"command": "fs", "enabledTools": ["read_file", "list_directory", "write_file"],
                       "disabledTools": ["write_file"]},
                "cx": {"command": "cx", "disabled_tools": ["rm"]},
                "bad": {"command": "b", "enabledTools": "read_file"}
            }, "permissions": {"allow": ["mcp__fs__write_file"]}}"#,
        );
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].server.as_deref(), Some("bad"));
        assert_eq!(issues[0].field.as_deref(), Some("enabledTools"));
        assert_eq!(mode(&p, "fs", "read_file"), Mode::Allow);
        // Disabled wins over an allow rule.
        let d = p.decide("fs", "write_file", None);
        assert_eq!(d.mode(), Mode::Deny);
        assert_eq!(d.rule().source, "mcpServers.fs.disabledTools[0]");
        let d = p.decide("fs", "move_file", None);
        assert_eq!(d.mode(), Mode::Deny);
        assert_eq!(
            d.rule().to_string(),
            "mcpServers.fs.enabledTools in .mcp.json"
        );
        let d = p.decide("cx", "rm", None);
        assert_eq!(d.rule().source, "mcpServers.cx.disabled_tools[0]");
        assert_eq!(mode(&p, "cx", "ls"), Mode::Allow);
    }

    #[test]
    fn profiles_narrow_the_top_level_rules() {
        let (p, issues) = load(&servers(
            r#", "permissions": {"deny": ["mcp__fs__delete"], "ask": ["mcp__gh"]},
                "profiles": {
                    "readonly": {"allow": ["mcp__fs__read_file", "mcp__fs__delete", "mcp__gh__search"], "default": "deny"},
                    "open": {}
                }"#,
        ));
        assert_eq!(issues, vec![]);
        assert!(p.has_profile("readonly"));
        assert_eq!(p.profiles().collect::<Vec<_>>(), ["open", "readonly"]);
        let ro = Some("readonly");
        assert_eq!(p.decide("fs", "read_file", ro).mode(), Mode::Allow);
        assert_eq!(
            p.decide("fs", "read_file", ro).rule().source,
            "profiles.readonly.allow[0]"
        );
        let d = p.decide("fs", "write_file", ro);
        assert_eq!(
            (d.mode(), d.rule().source.as_str()),
            (Mode::Deny, "profiles.readonly.default")
        );
        // The profile cannot widen the top-level rules.
        let d = p.decide("fs", "delete", ro);
        assert_eq!(
            (d.mode(), d.rule().source.as_str()),
            (Mode::Deny, "permissions.deny[0]")
        );
        let d = p.decide("gh", "search", ro);
        assert_eq!(
            (d.mode(), d.rule().source.as_str()),
            (Mode::Ask, "permissions.ask[0]")
        );
        // An empty profile is the top-level rules.
        assert_eq!(p.decide("gh", "search", Some("open")).mode(), Mode::Ask);
        assert_eq!(p.decide("fs", "x", Some("open")).mode(), Mode::Allow);
        // An unknown profile denies, saying which exist.
        let d = p.decide("fs", "read_file", Some("nope"));
        assert_eq!(d.mode(), Mode::Deny);
        assert!(
            d.rule().to_string().contains("configured: open, readonly"),
            "{}",
            d.rule()
        );
    }

    #[test]
    fn profile_problems_are_issues() {
        let (_, issues) = load(&servers(
            r#", "profiles": {"ro": {"allow": ["mcp__zz"], "deny": 3}, "x": 4}"#,
        ));
        let fields: Vec<&str> = issues.iter().map(|i| i.field.as_deref().unwrap()).collect();
        assert_eq!(
            fields,
            ["profiles.ro.deny", "profiles.ro.allow[0]", "profiles.x"]
        );
        let (_, issues) = load(&servers(r#", "profiles": []"#));
        assert_eq!(issues[0].field.as_deref(), Some("profiles"));
        let (_, issues) = load(&servers(r#", "permissions": {"profiles": {}}"#));
        assert!(
            issues[0].message.contains("top-level"),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn rules_naming_unlisted_tools_are_reported_when_the_list_arrives() {
        let (p, _) = load(
            r#"{"mcpServers": {"fs": {"command": "fs", "disabledTools": ["wrte_file"]}},
                "permissions": {"deny": ["mcp__fs__move_file", "mcp__fs"]},
                "profiles": {"ro": {"allow": ["mcp__fs__read.file"]}}}"#,
        );
        let warnings = p.unknown_tools("fs", &["read.file", "move_file", "write_file"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`wrte_file` (mcpServers.fs.disabledTools[0] in .mcp.json)"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[0].contains("server `fs` lists no such tool"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[0].contains("read.file, move_file, write_file"),
            "{}",
            warnings[0]
        );
        assert!(p.unknown_tools("other", &[]).is_empty());
    }
}
