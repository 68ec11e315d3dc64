//! The gateway's seam with the permission rules: which tools a downstream client
//! may see and call, per profile.
//!
//! The rules themselves (their syntax in the configuration and their evaluation)
//! belong to the policy work (`permissions` with `allow` / `ask` / `deny`, and the
//! per-server `enabledTools` / `disabledTools`); the gateway consumes one decision
//! per tool: [`Decision::Allow`], [`Decision::Ask`] or [`Decision::Deny`], each
//! naming the rule that decided. Until that work lands here, this file holds a
//! minimal evaluator of the same shape, so that the gateway's side (filtering
//! `tools/list`, refusing denied calls, asking the client before an `ask` call)
//! is built and tested against the interface it will keep.
//!
//! # Profiles
//!
//! A profile is a named set of rules a downstream client is served under
//! (`mcpbox serve --profile NAME`, or the path `/mcp/NAME` over HTTP):
//!
//! ```json
//! { "mcpServers": { … },
//!   "permissions": { "deny": ["mcp__fs__write_file"] },
//!   "profiles": {
//!     "readonly": { "allow": ["mcp__fs__read_file"], "default": "deny" }
//!   } }
//! ```
//!
//! A profile is a rule set of the same shape as `permissions`, as the policy work
//! writes it (so a configuration written for the gateway today keeps its meaning
//! when that evaluator replaces this one).
//!
//! The top-level `permissions` apply to every client; a profile's rules are
//! evaluated after them, so a profile can only narrow what the top level allows
//! (a `deny` anywhere wins, then `ask`, then `allow`). A pattern is
//! `mcp__{server}` or `mcp__{server}__*` (every tool of the server) or
//! `mcp__{server}__{tool}`, with the server's configured name and the tool's own
//! name, as in Claude Code's settings. `default` (`allow`, `ask` or `deny`;
//! `allow` when absent) decides the tools no rule names.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::Value;

use crate::config::ConfigIssue;

/// What the rules say about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Listed and callable.
    Allow,
    /// Listed; a call waits for the client's approval. The text names the rule.
    Ask(String),
    /// Not listed, and refused if called. The text names the rule.
    Deny(String),
}

/// One `permissions` object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Permissions {
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
    /// `default`, when given.
    default: Option<Default>,
    /// Where it came from, for rule names: `permissions` or `profiles.NAME`.
    origin: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Default {
    Allow,
    Ask,
    Deny,
}

/// The rules of a configuration: the top level and every profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    top: Permissions,
    profiles: BTreeMap<String, Permissions>,
}

/// Whether `pattern` names the tool `tool` of server `server`.
fn matches(pattern: &str, server: &str, tool: &str) -> bool {
    let Some(rest) = pattern.strip_prefix("mcp__") else {
        return false;
    };
    match rest.split_once("__") {
        None => rest == server,
        Some((s, "*")) => s == server,
        Some((s, t)) => s == server && t == tool,
    }
}

impl Permissions {
    fn read(origin: &str, value: &Value, issues: &mut Vec<ConfigIssue>) -> Permissions {
        let mut p = Permissions {
            origin: origin.to_string(),
            ..Permissions::default()
        };
        let Some(object) = value.as_object() else {
            issues.push(issue(
                origin,
                "must be an object with `allow`, `ask`, `deny` lists",
            ));
            return p;
        };
        for (key, list) in [
            ("allow", &mut p.allow),
            ("ask", &mut p.ask),
            ("deny", &mut p.deny),
        ] {
            let Some(v) = object.get(key) else { continue };
            let Some(items) = v.as_array() else {
                issues.push(issue(
                    &format!("{origin}.{key}"),
                    "must be a list of patterns",
                ));
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if s.starts_with("mcp__") && s.len() > 5 => list.push(s.to_string()),
                    _ => issues.push(issue(
                        &format!("{origin}.{key}[{i}]"),
                        "is not a pattern of the form mcp__{server}, mcp__{server}__* or mcp__{server}__{tool}; skipped",
                    )),
                }
            }
        }
        match object.get("default").map(|d| d.as_str()) {
            None => {}
            Some(Some("allow")) => p.default = Some(Default::Allow),
            Some(Some("ask")) => p.default = Some(Default::Ask),
            Some(Some("deny")) => p.default = Some(Default::Deny),
            Some(_) => issues.push(issue(
                &format!("{origin}.default"),
                "must be \"allow\", \"ask\" or \"deny\"; ignored",
            )),
        }
        p
    }

    fn decide(&self, server: &str, tool: &str) -> Decision {
        let rule = |kind: &str, pattern: &str| format!("{}.{kind}: {pattern}", self.origin);
        if let Some(p) = self.deny.iter().find(|p| matches(p, server, tool)) {
            return Decision::Deny(rule("deny", p));
        }
        if let Some(p) = self.ask.iter().find(|p| matches(p, server, tool)) {
            return Decision::Ask(rule("ask", p));
        }
        if self.allow.iter().any(|p| matches(p, server, tool)) {
            return Decision::Allow;
        }
        match self.default {
            Some(Default::Deny) => Decision::Deny(format!("{}.default: deny", self.origin)),
            Some(Default::Ask) => Decision::Ask(format!("{}.default: ask", self.origin)),
            _ => Decision::Allow,
        }
    }
}

fn issue(field: &str, message: &str) -> ConfigIssue {
    ConfigIssue {
        server: None,
        field: Some(field.to_string()),
        message: message.to_string(),
    }
}

impl Rules {
    /// Reads `permissions` and `profiles` from configuration text; the rest of it
    /// is the manager's. Problems are issues; the rules that read still apply.
    pub fn parse(text: &str) -> (Rules, Vec<ConfigIssue>) {
        let mut issues = Vec::new();
        let mut rules = Rules::default();
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
            return (rules, issues);
        };
        if let Some(p) = top.get("permissions") {
            rules.top = Permissions::read("permissions", p, &mut issues);
        } else {
            rules.top.origin = "permissions".to_string();
        }
        match top.get("profiles") {
            None => {}
            Some(Value::Object(profiles)) => {
                for (name, profile) in profiles {
                    let origin = format!("profiles.{name}");
                    let permissions = Permissions::read(&origin, profile, &mut issues);
                    rules.profiles.insert(name.clone(), permissions);
                }
            }
            Some(_) => issues.push(issue("profiles", "must be an object of named profiles")),
        }
        (rules, issues)
    }

    /// Whether a profile of that name is configured.
    pub fn has_profile(&self, name: &str) -> bool {
        self.profiles.contains_key(name)
    }

    /// The configured profile names.
    pub fn profile_names(&self) -> Vec<&str> {
        self.profiles.keys().map(String::as_str).collect()
    }

    /// The decision for the tool `tool` (its own name) of server `server` (its
    /// configured name) for a client under `profile`.
    pub fn decide(&self, profile: Option<&str>, server: &str, tool: &str) -> Decision {
        let top = self.top.decide(server, tool);
        let Some(p) = profile.and_then(|p| self.profiles.get(p)) else {
            return top;
        };
        match (top, p.decide(server, tool)) {
            (Decision::Deny(r), _) | (_, Decision::Deny(r)) => Decision::Deny(r),
            (Decision::Ask(r), _) | (_, Decision::Ask(r)) => Decision::Ask(r),
            _ => Decision::Allow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_wins_over_ask_over_allow_and_profiles_narrow() {
        let (rules, issues) = Rules::parse(
            r#"{"permissions": {"allow": ["mcp__fs"], "ask": ["mcp__fs__write"], "deny": ["mcp__fs__rm"]},
                "profiles": {"ro": {"allow": ["mcp__fs__read"], "default": "deny"},
                             "bad": {"allow": ["fs"], "default": "maybe"}}}"#,
        );
        assert_eq!(issues.len(), 2, "{issues:?}");
        assert_eq!(rules.decide(None, "fs", "read"), Decision::Allow);
        assert_eq!(
            rules.decide(None, "fs", "write"),
            Decision::Ask("permissions.ask: mcp__fs__write".into())
        );
        assert_eq!(
            rules.decide(None, "fs", "rm"),
            Decision::Deny("permissions.deny: mcp__fs__rm".into())
        );
        assert_eq!(rules.decide(None, "other", "x"), Decision::Allow);
        assert_eq!(rules.decide(Some("ro"), "fs", "read"), Decision::Allow);
        assert_eq!(
            rules.decide(Some("ro"), "other", "x"),
            Decision::Deny("profiles.ro.default: deny".into())
        );
        // The top level's ask still holds inside a profile that allows.
        assert!(matches!(
            rules.decide(Some("ro"), "fs", "write"),
            Decision::Deny(_) | Decision::Ask(_)
        ));
        assert!(rules.has_profile("ro") && !rules.has_profile("rw"));
        assert!(matches("mcp__fs__*", "fs", "anything"));
        assert!(!matches("mcp__fsx", "fs", "a"));
    }
}
