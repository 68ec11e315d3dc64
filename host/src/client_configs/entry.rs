//! One server entry of the JSON clients (Claude Code, Claude Desktop, Cursor,
//! VS Code, Windsurf) turned into mcpbox's terms.
//!
//! The five share the shape (`command`, `args`, `env`, or `url` and `headers`)
//! and differ in details: Windsurf calls the URL `serverUrl`, VS Code insists on
//! `type`, and each writes references in its own way. A [`Dialect`] says which.

use std::path::Path;

use serde_json::Value;

use super::source::{Members, kind_of};
use super::{Candidate, Location, Transport, secrets};

/// How a client writes variable references in its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interpolation {
    /// `${VAR}` and `${VAR:-default}`, as mcpbox itself (Claude Code's `.mcp.json`).
    Mcpbox,
    /// The editors' `${env:VAR}`, `${input:id}`, `${userHome}`,
    /// `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}`
    /// (VS Code, Cursor, Windsurf).
    Editor,
    /// None: every value is literal (Claude Desktop).
    Literal,
}

/// What a client's entries look like.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialect<'a> {
    pub interpolation: Interpolation,
    /// The project folder `${workspaceFolder}` stands for, when the file is a
    /// project's; a user-level file's `${workspaceFolder}` becomes the project
    /// being imported into, with a note.
    pub workspace: &'a Path,
    /// Whether the file belongs to that workspace (rather than the user).
    pub in_workspace: bool,
    /// VS Code's `inputs`: id and description.
    pub inputs: &'a [(String, String)],
}

/// Reads every entry of a servers object. Entries that cannot be used are
/// returned as reasons instead ("`name`: …").
pub(crate) fn read_all(
    entries: &Members,
    location: &Location,
    dialect: Dialect<'_>,
) -> (Vec<Candidate>, Vec<String>) {
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    for (i, (name, value)) in entries.iter().enumerate() {
        if entries[i + 1..].iter().any(|(later, _)| later == name) {
            skipped.push(format!(
                "`{name}`: defined more than once; the last definition is used"
            ));
            continue;
        }
        let location = Location {
            name: name.clone(),
            ..location.clone()
        };
        match read(value, location, dialect) {
            Ok(c) => candidates.push(c),
            Err(reason) => skipped.push(format!("`{name}`: {reason}")),
        }
    }
    (candidates, skipped)
}

/// One entry; `Err` says why it cannot be imported.
fn read(value: &Value, location: Location, dialect: Dialect<'_>) -> Result<Candidate, String> {
    if location.name.trim().is_empty() {
        return Err("has an empty name".into());
    }
    let Value::Object(fields) = value else {
        return Err(format!("is {}, not an object", kind_of(value)));
    };
    let mut notes = Vec::new();
    let mut convert = |text: &str, field: &str| convert(text, field, dialect, &mut notes);

    let url_key = ["url", "serverUrl", "httpUrl"]
        .into_iter()
        .find(|k| fields.contains_key(*k));
    let kind = match fields.get("type") {
        Some(Value::String(t)) => match t.to_ascii_lowercase().as_str() {
            "stdio" | "local" => "stdio",
            "http" | "streamable-http" | "streamablehttp" | "streamable_http" | "remote" => "http",
            "sse" => "sse",
            other => {
                return Err(format!(
                    "has transport type {other:?}, which mcpbox does not speak (stdio, http, sse)"
                ));
            }
        },
        Some(other) => return Err(format!("has a `type` that is {}", kind_of(other))),
        None if fields.contains_key("command") => "stdio",
        None if url_key.is_some() => "http",
        None => return Err("has neither `command` nor `url`".into()),
    };

    let transport = if kind == "stdio" {
        let command = match fields.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => convert(c, "command"),
            Some(Value::String(_)) => return Err("has an empty `command`".into()),
            Some(other) => return Err(format!("has a `command` that is {}", kind_of(other))),
            None => return Err("is a stdio server without `command`".into()),
        };
        let args = match fields.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(convert(s, &format!("args[{i}]"))),
                    Value::Number(n) => Ok(n.to_string()),
                    Value::Bool(b) => Ok(b.to_string()),
                    other => Err(format!("has `args[{i}]` that is {}", kind_of(other))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(format!(
                    "has `args` that is {}, not an array",
                    kind_of(other)
                ));
            }
        };
        let env = string_map(fields.get("env"), "env", &mut convert)?;
        let cwd = match fields.get("cwd") {
            Some(Value::String(c)) if !c.is_empty() => Some(convert(c, "cwd")),
            _ => None,
        };
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        }
    } else {
        let key = url_key.ok_or("is a remote server without `url`")?;
        let url = match &fields[key] {
            Value::String(u) if !u.trim().is_empty() => convert(u, key),
            other => return Err(format!("has a `{key}` that is {}", kind_of(other))),
        };
        let headers = string_map(fields.get("headers"), "headers", &mut convert)?;
        if kind == "sse" {
            Transport::Sse { url, headers }
        } else {
            Transport::Http { url, headers }
        }
    };
    if let Some(Value::String(file)) = fields.get("envFile") {
        notes.push(format!(
            "`envFile` ({file}) is not read by mcpbox: put its variables in `env` or in \
             mcpbox's environment"
        ));
    }

    let enabled = !matches!(fields.get("disabled"), Some(Value::Bool(true)))
        && !matches!(fields.get("enabled"), Some(Value::Bool(false)));
    let millis = |key: &str| fields.get(key).and_then(Value::as_u64);
    let startup_timeout_ms = millis("startupTimeoutMs");
    let tool_timeout_ms = millis("toolTimeoutMs").or_else(|| millis("timeout"));
    let names = |key: &str| match fields.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>(),
        _ => None,
    };
    let enabled_tools = names("enabledTools");
    let disabled_tools = names("disabledTools");

    let mut transport = transport;
    let secrets = secrets::scrub(&location.name, &location.path, &mut transport);
    Ok(Candidate {
        location,
        transport,
        enabled,
        startup_timeout_ms,
        tool_timeout_ms,
        enabled_tools,
        disabled_tools,
        secrets,
        notes,
    })
}

/// An object of strings (`env`, `headers`), each value converted. Numbers and
/// booleans are taken as their text (clients accept them); anything else is an
/// error.
fn string_map(
    value: Option<&Value>,
    key: &str,
    convert: &mut impl FnMut(&str, &str) -> String,
) -> Result<Vec<(String, String)>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, v)| {
                let field = format!("{key}.{name}");
                match v {
                    Value::String(s) => Ok((name.clone(), convert(s, &field))),
                    Value::Number(n) => Ok((name.clone(), n.to_string())),
                    Value::Bool(b) => Ok((name.clone(), b.to_string())),
                    other => Err(format!("has `{field}` that is {}", kind_of(other))),
                }
            })
            .collect(),
        // Some clients accept env as ["KEY=value", …]; so does mcpbox.
        Some(Value::Array(items)) if key == "env" => items
            .iter()
            .enumerate()
            .map(
                |(i, item)| match item.as_str().and_then(|s| s.split_once('=')) {
                    Some((name, v)) if !name.is_empty() => {
                        Ok((name.to_string(), convert(v, &format!("env.{name}"))))
                    }
                    _ => Err(format!("has `env[{i}]` that is not \"NAME=value\"")),
                },
            )
            .collect(),
        Some(other) => Err(format!(
            "has `{key}` that is {}, not an object",
            kind_of(other)
        )),
    }
}

/// Rewrites a client's references into mcpbox's `${VAR}`; notes what it could
/// not carry over as it was.
fn convert(text: &str, field: &str, dialect: Dialect<'_>, notes: &mut Vec<String>) -> String {
    match dialect.interpolation {
        Interpolation::Mcpbox => text.to_string(),
        Interpolation::Literal => {
            if text.contains("${") {
                notes.push(format!(
                    "`{field}` contains `${{`, which mcpbox reads as a variable reference \
                     (this client did not)"
                ));
            }
            text.to_string()
        }
        Interpolation::Editor => editor_references(text, field, dialect, notes),
    }
}

fn editor_references(
    text: &str,
    field: &str,
    dialect: Dialect<'_>,
    notes: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let reference = &after[..end];
        let workspace = dialect.workspace.display().to_string();
        match reference.split_once(':') {
            Some(("env", name)) => out.push_str(&format!("${{{name}}}")),
            Some(("input", id)) => {
                let variable = secrets::variable_part(id);
                let description = dialect
                    .inputs
                    .iter()
                    .find(|(i, _)| i == id)
                    .map(|(_, d)| format!(" (\"{d}\")"))
                    .unwrap_or_default();
                notes.push(format!(
                    "`{field}` asked for input `{id}`{description} each time; mcpbox reads it \
                     from ${{{variable}}}: set {variable}"
                ));
                out.push_str(&format!("${{{variable}}}"));
            }
            _ => match reference {
                "userHome" => out.push_str("${HOME}"),
                "workspaceFolder" | "workspaceRoot" => {
                    if !dialect.in_workspace {
                        notes.push(format!(
                            "`{field}` used ${{{reference}}} in a user-level file: it is now \
                             {workspace}, the project imported into"
                        ));
                    }
                    out.push_str(&workspace);
                }
                "workspaceFolderBasename" => out.push_str(
                    &dialect
                        .workspace
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                "pathSeparator" | "/" => out.push(std::path::MAIN_SEPARATOR),
                _ => {
                    notes.push(format!(
                        "`{field}` uses ${{{reference}}}, which mcpbox does not know; it is left \
                         as written and mcpbox will read it as an environment variable"
                    ));
                    out.push_str(&rest[start..start + 2 + end + 1]);
                }
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_references_become_mcpbox_ones() {
        let inputs = vec![("api-key".to_string(), "Your API key".to_string())];
        let dialect = Dialect {
            interpolation: Interpolation::Editor,
            workspace: Path::new("/work/p"),
            in_workspace: true,
            inputs: &inputs,
        };
        let mut notes = Vec::new();
        let out = convert(
            "${env:TOKEN} ${input:api-key} ${userHome}/x ${workspaceFolder}/y \
             ${workspaceFolderBasename} ${config:editor.x} ${unclosed",
            "args[0]",
            dialect,
            &mut notes,
        );
        assert_eq!(
            out,
            "${TOKEN} ${API_KEY} ${HOME}/x /work/p/y p ${config:editor.x} ${unclosed"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("set API_KEY"), "{notes:?}");
        assert!(notes[0].contains("Your API key"), "{notes:?}");
        assert!(notes[1].contains("config:editor.x"), "{notes:?}");
    }
}
