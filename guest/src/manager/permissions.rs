//! The permission rules' state across loads: the configuration's rules with the
//! Claude Code settings' added, the settings files read since the last load (a
//! reload resolves them again against the new servers), and the warnings about
//! rules naming unlisted tools already given. What the rules decide is
//! [`crate::permissions`]'s; the tools they deny are kept on each slot. The
//! manager's questions to them (`decide`, `denied_by`) and the loading of a
//! Claude Code settings file are here too.

use super::*;
use alloc::collections::BTreeSet;

use serde_json::Value;

use crate::config::{ConfigIssue, ServerConfig};
use crate::permissions::Permissions;

/// The rules in force and what they were built from.
#[derive(Default)]
pub(super) struct Rules {
    /// The configuration's permission rules, with those of the Claude Code
    /// settings files read since.
    pub(super) permissions: Permissions,
    /// The Claude Code settings files read since the last load (origin, value):
    /// a reload re-reads the configuration's rules and adds theirs again.
    pub(super) claude_settings: Vec<(String, Value)>,
    /// Warnings about rules naming unlisted tools, already given.
    pub(super) warned: BTreeSet<String>,
}

impl Rules {
    /// Adds the rules of the Claude Code settings file `origin` (its `value`),
    /// resolved against `servers`, and keeps it for the next reload.
    pub(super) fn add_claude_settings(
        &mut self,
        origin: &str,
        value: Value,
        servers: &[ServerConfig],
        issues: &mut Vec<ConfigIssue>,
    ) {
        self.permissions
            .add_claude_settings(origin, &value, servers, issues);
        self.claude_settings.push((origin.to_string(), value));
    }

    /// Adds the rules of every Claude Code settings file kept again, resolved
    /// against `servers` (after a reload replaced the configuration's rules).
    pub(super) fn readd_claude_settings(
        &mut self,
        servers: &[ServerConfig],
        issues: &mut Vec<ConfigIssue>,
    ) {
        for (settings, value) in &self.claude_settings {
            self.permissions
                .add_claude_settings(settings, value, servers, issues);
        }
    }

    /// Whether `warning` is given for the first time; notes it.
    pub(super) fn first_warning(&mut self, warning: &str) -> bool {
        self.warned.insert(warning.to_string())
    }
}

impl<P: Platform> Manager<P> {
    /// Adds the permission rules of a Claude Code settings file (its text;
    /// `origin` names it) to the configuration's (see
    /// [`Permissions::add_claude_settings`]). Kept until the next
    /// [`Manager::load_config`], which drops them: a host reads the file again
    /// after each load. A reload ([`Manager::reload_config`]) keeps them, resolved
    /// against the new servers. Text that is not JSON is one issue; nothing changes.
    pub fn load_claude_settings(&mut self, origin: &str, text: &str) -> Vec<ConfigIssue> {
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => {
                return vec![ConfigIssue {
                    server: None,
                    field: None,
                    message: format!(
                        "{origin}: not valid JSON ({e}); its permissions are not read"
                    ),
                }];
            }
        };
        let servers: Vec<_> = self.slots.iter().map(|s| s.config.clone()).collect();
        let mut issues = Vec::new();
        self.rules
            .add_claude_settings(origin, value, &servers, &mut issues);
        self.invalidate_registry();
        issues
    }

    /// The configuration's permission rules, for callers that filter by profile
    /// (the gateway).
    pub fn permissions(&self) -> &Permissions {
        &self.rules.permissions
    }

    /// The rule that keeps the tool of registry name `tool` out of the registry,
    /// when one does (a `deny` rule, or `enabledTools` / `disabledTools`).
    pub fn denied_by(&self, tool: &str) -> Option<Rc<crate::permissions::Rule>> {
        self.slots
            .iter()
            .find_map(|s| Some(s.denied.get(tool)?.rule.clone()))
    }

    /// What the permission rules say about the tool of registry name `tool` for
    /// a caller using `profile`; `None` when no such tool is offered.
    pub fn decide(&self, tool: &str, profile: Option<&str>) -> Option<Decision> {
        let entry = self.registry.current.get(tool)?;
        Some(
            self.rules
                .permissions
                .decide(&entry.server, &entry.tool.def.name, profile),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_settings_are_kept_to_add_again_and_warnings_given_once() {
        let config = r#"{"mcpServers": {"fs": {"command": "fs-server"}}}"#;
        let servers = crate::config::parse(".mcp.json", config).unwrap().servers;
        let settings = json!({"permissions": {"deny": ["mcp__fs__delete"]}});
        let mut rules = Rules::default();
        let mut issues = Vec::new();
        rules.add_claude_settings("settings.json", settings, &servers, &mut issues);
        assert!(issues.is_empty(), "{issues:?}");
        let with_settings = rules.permissions.clone();
        assert_ne!(with_settings, Permissions::default());
        // A reload replaces the configuration's rules; the settings come back.
        rules.permissions = Permissions::default();
        rules.readd_claude_settings(&servers, &mut issues);
        assert_eq!(rules.permissions, with_settings);
        assert!(rules.first_warning("rule names no tool"));
        assert!(!rules.first_warning("rule names no tool"));
    }
}
