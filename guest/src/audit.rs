//! The audit trail: one record per call, saying what the permission rules
//! decided and why, how an approval was answered, and how the call ended.
//!
//! Records are [`crate::manager::Event::Audit`] events, queued only when the
//! embedder turned them on (a host that writes the configured `audit.file` does);
//! the host stamps each with the wall-clock time (the guest has only a monotonic
//! clock) and writes it as one JSON line. Arguments are recorded only when
//! `audit.arguments` (or the embedder) asks. Nothing else is free text from
//! outside: no error message (a server's stderr may echo its environment), no
//! header, no resolved `${VAR}` — the guest never sees those anyway.
//!
//! ```json
//! "audit": { "file": "${HOME}/.mcpbox/audit.jsonl", "arguments": false }
//! ```

use crate::prelude::*;

use serde_json::Value;

use crate::config::types::{ConfigIssue, kind_of};

/// The configuration's `audit` object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Where the host writes the records, as written (`${VAR}` unresolved).
    pub file: Option<String>,
    /// Whether records carry the call's arguments.
    pub arguments: bool,
}

impl Settings {
    /// Reads the top-level `audit` object; problems are issues.
    pub fn read(value: Option<&Value>, issues: &mut Vec<ConfigIssue>) -> Settings {
        let mut settings = Settings::default();
        let mut issue = |field: &str, message: String| {
            issues.push(ConfigIssue {
                server: None,
                field: Some(field.into()),
                message,
            });
        };
        let map = match value {
            None | Some(Value::Null) => return settings,
            Some(Value::Object(map)) => map,
            Some(other) => {
                issue(
                    "audit",
                    format!(
                        "must be an object like {{\"file\": \"audit.jsonl\"}}, but is {}",
                        kind_of(other)
                    ),
                );
                return settings;
            }
        };
        for key in map.keys().filter(|k| *k != "file" && *k != "arguments") {
            issue(
                &format!("audit.{key}"),
                format!("unknown key `{key}`, ignored (audit has `file` and `arguments`)"),
            );
        }
        match map.get("file") {
            None | Some(Value::Null) => {}
            Some(Value::String(f)) if !f.is_empty() => settings.file = Some(f.clone()),
            Some(other) => issue(
                "audit.file",
                format!(
                    "must be a file name, like \"audit.jsonl\", but is {}; no audit trail is written",
                    kind_of(other)
                ),
            ),
        }
        match map.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => settings.arguments = *b,
            Some(other) => issue(
                "audit.arguments",
                format!(
                    "must be true or false, but is {}; arguments are not recorded",
                    kind_of(other)
                ),
            ),
        }
        settings
    }
}

/// One call, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// The call's handle; none when it was refused before it started.
    pub call: Option<u64>,
    /// The configured server name (empty when the tool is unknown).
    pub server: String,
    /// The registry name of the tool called.
    pub tool: String,
    /// The permission profile the caller used.
    pub profile: Option<String>,
    /// `allow`, `ask` or `deny`; none when no tool of that name was found.
    pub decision: Option<String>,
    /// The rule that decided, naming its field and file.
    pub rule: Option<String>,
    /// For `ask`: `once`, `session`, `session-earlier` (approved for the session
    /// before), `refused`, `unanswered` (the timeout passed), `withdrawn` (the
    /// call was cancelled or the runtime shut down) or `nobody` (no approver).
    pub approval: Option<String>,
    /// `ok`, `tool-error` (`isError`), or the call error's kind: `denied`,
    /// `unknown-tool`, `invalid-arguments`, `server-unavailable`, `timeout`,
    /// `cancelled`, `protocol`.
    pub outcome: String,
    /// From the call's start to its end, approval included, in milliseconds.
    pub duration_ms: u64,
    /// The arguments (JSON object text), when the trail records them.
    pub arguments: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_from_the_configuration() {
        let mut issues = Vec::new();
        let s = Settings::read(
            Some(&json!({"file": "a.jsonl", "arguments": true})),
            &mut issues,
        );
        assert_eq!(s.file.as_deref(), Some("a.jsonl"));
        assert!(s.arguments && issues.is_empty());
        let s = Settings::read(
            Some(&json!({"file": 3, "arguments": "yes", "x": 1})),
            &mut issues,
        );
        assert_eq!(s, Settings::default());
        let fields: Vec<_> = issues.iter().map(|i| i.field.clone().unwrap()).collect();
        assert_eq!(fields, ["audit.x", "audit.file", "audit.arguments"]);
        assert_eq!(Settings::read(None, &mut issues), Settings::default());
    }
}
