//! Writing what was found into a `.mcp.json`, without clobbering anything.
//!
//! A new file gets every server. An existing file is edited in place through its
//! syntax tree, so its formatting, order and other members stay as they are:
//! a server already there under the same name and identity is left alone, one of
//! the same name but another identity is reported and not written, and the rest
//! are appended to `mcpServers` (created when absent). The file is replaced
//! atomically (written beside it, then renamed), so an interrupted write never
//! leaves half a configuration.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde::Serialize;
use serde_json::Value;

use super::entry::{Dialect, Interpolation, read_all};
use super::{Client, ImportError, Location, Scope, Server, Transport, identity, source};

/// What happened to one server when writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum WriteOutcome {
    /// Written as a new entry.
    Added,
    /// The file already has it (same name, same identity): left as it is.
    AlreadyThere,
    /// The file has another server of that name: left as it is, this one not
    /// written.
    Conflict {
        /// The identity of the entry already in the file.
        existing: String,
    },
}

/// What [`write()`](fn@write) did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteReport {
    /// The file written (or that would have been, when nothing changed).
    pub path: PathBuf,
    /// Whether the file was created.
    pub created: bool,
    /// Whether anything was written at all.
    pub changed: bool,
    /// Per server, by its name.
    pub servers: Vec<(String, WriteOutcome)>,
}

/// The ordered fields of a server's mcpbox entry.
fn fields(server: &Server) -> Vec<(&'static str, CstInputValue)> {
    let pairs = |pairs: &[(String, String)]| {
        CstInputValue::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), CstInputValue::String(v.clone())))
                .collect(),
        )
    };
    let list = |items: &[String]| {
        CstInputValue::Array(
            items
                .iter()
                .map(|s| CstInputValue::String(s.clone()))
                .collect(),
        )
    };
    let mut out: Vec<(&'static str, CstInputValue)> = Vec::new();
    match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            out.push(("command", command.as_str().into()));
            if !args.is_empty() {
                out.push(("args", list(args)));
            }
            if !env.is_empty() {
                out.push(("env", pairs(env)));
            }
            if let Some(cwd) = cwd {
                out.push(("cwd", cwd.as_str().into()));
            }
        }
        Transport::Http { url, headers } | Transport::Sse { url, headers } => {
            out.push(("type", server.transport.kind().into()));
            out.push(("url", url.as_str().into()));
            if !headers.is_empty() {
                out.push(("headers", pairs(headers)));
            }
        }
    }
    if !server.enabled {
        out.push(("enabled", false.into()));
    }
    if let Some(ms) = server.startup_timeout_ms {
        out.push(("startupTimeoutMs", CstInputValue::Number(ms.to_string())));
    }
    if let Some(ms) = server.tool_timeout_ms {
        out.push(("toolTimeoutMs", CstInputValue::Number(ms.to_string())));
    }
    if let Some(tools) = &server.enabled_tools {
        out.push(("enabledTools", list(tools)));
    }
    if let Some(tools) = &server.disabled_tools {
        out.push(("disabledTools", list(tools)));
    }
    out
}

fn object(fields: Vec<(&'static str, CstInputValue)>) -> CstInputValue {
    CstInputValue::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn to_value(input: &CstInputValue) -> Value {
    match input {
        CstInputValue::Null => Value::Null,
        CstInputValue::Bool(b) => Value::Bool(*b),
        CstInputValue::Number(n) => serde_json::from_str(n).unwrap_or(Value::Null),
        CstInputValue::String(s) => Value::String(s.clone()),
        CstInputValue::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        CstInputValue::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

/// A server's entry as JSON.
pub(crate) fn entry_json(server: &Server) -> Value {
    to_value(&object(fields(server)))
}

/// A whole new `.mcp.json` holding `servers`, in order.
pub(crate) fn fresh_text(servers: &[Server]) -> String {
    let root = CstRootNode::parse("", &ParseOptions::default()).expect("empty text parses");
    let servers = CstInputValue::Object(
        servers
            .iter()
            .map(|s| (s.name.clone(), object(fields(s))))
            .collect(),
    );
    root.set_value(CstInputValue::Object(vec![("mcpServers".into(), servers)]));
    let mut text = root.to_string();
    text.push('\n');
    text
}

/// Adds `servers` to the `.mcp.json` at `path` (created when missing), never
/// replacing an entry that is there. `max_bytes` caps how much of an existing
/// file is read.
pub fn write(servers: &[Server], path: &Path, max_bytes: u64) -> Result<WriteReport, ImportError> {
    let failed = |message: String| ImportError::Write {
        path: path.to_path_buf(),
        message,
    };
    let existing = match source::read_text(path, max_bytes) {
        Ok(text) => Some(text),
        Err(source::Unusable::Missing) => None,
        Err(source::Unusable::Skipped(reason)) => return Err(failed(reason)),
    };
    let Some(existing) = existing.filter(|t| !t.trim().is_empty()) else {
        let text = fresh_text(servers);
        replace(path, &text).map_err(failed)?;
        return Ok(WriteReport {
            path: path.to_path_buf(),
            created: true,
            changed: true,
            servers: servers
                .iter()
                .map(|s| (s.name.clone(), WriteOutcome::Added))
                .collect(),
        });
    };

    // Strict JSON: mcpbox reads this file, and it takes no comments.
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let root = CstRootNode::parse(&existing, &strict).map_err(|e| {
        failed(format!(
            "is not valid JSON (line {}, column {}: {}); fix it first, nothing was written",
            e.line_display(),
            e.column_display(),
            e.kind()
        ))
    })?;
    let Some(top) = root.object_value() else {
        return Err(failed(
            "does not hold a JSON object; fix it first, nothing was written".into(),
        ));
    };
    let key = if top.get("mcpServers").is_none() && top.get("servers").is_some() {
        "servers"
    } else {
        "mcpServers"
    };
    if let Some(prop) = top.get(key)
        && prop.value().and_then(|v| v.as_object()).is_none()
    {
        return Err(failed(format!(
            "has `{key}` that is not an object; fix it first, nothing was written"
        )));
    }
    let entries = top.object_value_or_set(key);

    // The identities of what is there, read as mcpbox reads it.
    let members: Vec<(String, Value)> = entries
        .properties()
        .into_iter()
        .filter_map(|p| Some((p.decoded_name()?, p.value()?.to_serde_value()?)))
        .collect();
    let here = Location {
        client: Client::ClaudeCode,
        scope: Scope::Project,
        path: path.to_path_buf(),
        name: String::new(),
    };
    let project = path.parent().unwrap_or(Path::new("."));
    let (present, _) = read_all(
        &members,
        &here,
        Dialect {
            interpolation: Interpolation::Mcpbox,
            workspace: project,
            in_workspace: true,
            inputs: &[],
        },
    );

    let mut report = WriteReport {
        path: path.to_path_buf(),
        created: false,
        changed: false,
        servers: Vec::new(),
    };
    for server in servers {
        let outcome = if let Some(existing) = members.iter().find(|(n, _)| *n == server.name) {
            let existing_identity = present
                .iter()
                .find(|c| c.location.name == existing.0)
                .map(|c| identity::of(&c.transport));
            match existing_identity {
                Some(id) if id == server.identity => WriteOutcome::AlreadyThere,
                Some(id) => WriteOutcome::Conflict { existing: id },
                None => WriteOutcome::Conflict {
                    existing: "an entry mcpbox cannot read".into(),
                },
            }
        } else {
            entries.append(&server.name, object(fields(server)));
            report.changed = true;
            WriteOutcome::Added
        };
        report.servers.push((server.name.clone(), outcome));
    }
    if report.changed {
        let mut text = root.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        replace(path, &text).map_err(failed)?;
    }
    Ok(report)
}

/// Writes `text` beside `path` and renames it over `path`.
fn replace(path: &Path, text: &str) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".mcp.json".into());
    let temp = dir.join(format!(".{name}.mcpbox-import-{}", std::process::id()));
    std::fs::write(&temp, text).map_err(|e| format!("cannot be written: {e}"))?;
    // Keep the permissions of the file being replaced.
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot be replaced: {e}")
    })
}
