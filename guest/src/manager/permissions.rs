//! The permission rules' state across loads: the configuration's rules with the
//! Claude Code settings' added, the settings files read since the last load (a
//! reload resolves them again against the new servers), and the warnings about
//! rules naming unlisted tools already given. What the rules decide is
//! [`crate::permissions`]'s; the tools they deny are kept on each slot.

use crate::prelude::*;
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
