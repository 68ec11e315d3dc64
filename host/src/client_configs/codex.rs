//! Codex: `[mcp_servers.NAME]` tables in `$CODEX_HOME/config.toml` (default
//! `~/.codex/config.toml`) and in a trusted project's `.codex/config.toml`.
//!
//! | Codex field | mcpbox |
//! |---|---|
//! | `command`, `args`, `env`, `cwd` | the same |
//! | `env_vars = ["NAME", { name = "NAME" }]` (passed through from Codex's environment) | `env.NAME = "${NAME}"` |
//! | `url` | `url` (Streamable HTTP) |
//! | `bearer_token_env_var = "VAR"` | `headers.Authorization = "Bearer ${VAR}"` |
//! | `http_headers = { H = "v" }` | `headers.H = "v"` (credentials become references) |
//! | `env_http_headers = { H = "VAR" }` | `headers.H = "${VAR}"` |
//! | `bearer_token` (inline, older Codex) | `headers.Authorization = "Bearer ${NAME_TOKEN}"` |
//! | `enabled = false` | `enabled: false` |
//! | `enabled_tools`, `disabled_tools` | `enabledTools`, `disabledTools` |
//! | `startup_timeout_sec` (or `startup_timeout_ms`), `tool_timeout_sec` | `startupTimeoutMs`, `toolTimeoutMs` |
//!
//! Other fields (`required`, approval modes, OAuth settings) have no mcpbox
//! counterpart and are named in a note. Values are literal: Codex has no
//! `${…}` references of its own.

use std::path::Path;

use toml::{Table, Value};

use super::source::{self, Unusable};
use super::{
    Candidate, Client, Location, Places, Scope, SourceOutcome, SourceReport, Transport, secrets,
};

/// Fields that are read; any other is named in a note.
const KNOWN: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "bearer_token",
    "http_headers",
    "env_http_headers",
    "enabled",
    "enabled_tools",
    "disabled_tools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
];

pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    let home = places
        .codex_home
        .clone()
        .unwrap_or_else(|| places.home.join(".codex"));
    for (scope, path) in [
        (
            Scope::Project,
            places.project.join(".codex").join("config.toml"),
        ),
        (Scope::User, home.join("config.toml")),
    ] {
        let outcome = read_file(places, scope, &path, out);
        sources.push(SourceReport {
            client: Client::Codex,
            scope,
            path,
            outcome,
        });
    }
}

fn read_file(
    places: &Places,
    scope: Scope,
    path: &Path,
    out: &mut Vec<Candidate>,
) -> SourceOutcome {
    let text = match source::read_text(path, places.max_bytes) {
        Ok(text) => text,
        Err(Unusable::Missing) => return SourceOutcome::Missing,
        Err(Unusable::Skipped(reason)) => return SourceOutcome::Skipped { reason },
    };
    let table: Table = match text.parse() {
        Ok(table) => table,
        Err(e) => {
            // toml's message starts "TOML parse error at line L, column C" and
            // then draws the line; the first line and the reason are enough.
            let e: toml::de::Error = e;
            let reason = e.message().to_string();
            let position = e
                .span()
                .map(|span| {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                    format!("line {line}, column {column}: ")
                })
                .unwrap_or_default();
            return SourceOutcome::Skipped {
                reason: format!("is not valid TOML: {position}{reason}"),
            };
        }
    };
    let servers = match table.get("mcp_servers") {
        None => {
            return SourceOutcome::Read {
                servers: 0,
                skipped: Vec::new(),
            };
        }
        Some(Value::Table(servers)) => servers,
        Some(other) => {
            return SourceOutcome::Skipped {
                reason: format!(
                    "has `mcp_servers` as {}, not a table of servers: a format this version \
                     of mcpbox does not know",
                    other.type_str()
                ),
            };
        }
    };
    let mut skipped = Vec::new();
    let mut count = 0;
    for (name, entry) in servers {
        let location = Location {
            client: Client::Codex,
            scope,
            path: path.to_path_buf(),
            name: name.clone(),
        };
        match entry {
            Value::Table(fields) => match candidate(location, fields) {
                Ok(c) => {
                    out.push(c);
                    count += 1;
                }
                Err(reason) => skipped.push(format!("`{name}`: {reason}")),
            },
            other => skipped.push(format!("`{name}`: is {}, not a table", other.type_str())),
        }
    }
    SourceOutcome::Read {
        servers: count,
        skipped,
    }
}

fn string(fields: &Table, key: &str) -> Result<Option<String>, String> {
    match fields.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "has `{key}` that is {}, not a string",
            other.type_str()
        )),
    }
}

fn strings(fields: &Table, key: &str) -> Result<Option<Vec<String>>, String> {
    match fields.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("has `{key}[{i}]` that is {}", other.type_str())),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "has `{key}` that is {}, not an array",
            other.type_str()
        )),
    }
}

fn string_table(fields: &Table, key: &str) -> Result<Vec<(String, String)>, String> {
    match fields.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Table(t)) => t
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Integer(n) => Ok((k.clone(), n.to_string())),
                Value::Boolean(b) => Ok((k.clone(), b.to_string())),
                other => Err(format!("has `{key}.{k}` that is {}", other.type_str())),
            })
            .collect(),
        Some(other) => Err(format!(
            "has `{key}` that is {}, not a table",
            other.type_str()
        )),
    }
}

fn seconds_to_ms(fields: &Table, key: &str) -> Result<Option<u64>, String> {
    match fields.get(key) {
        None => Ok(None),
        Some(Value::Integer(n)) if *n >= 0 => Ok(Some((*n as u64).saturating_mul(1000))),
        Some(Value::Float(f)) if f.is_finite() && *f >= 0.0 => {
            Ok(Some((f * 1000.0).round() as u64))
        }
        Some(other) => Err(format!(
            "has `{key}` that is not a number of seconds ({other})"
        )),
    }
}

fn candidate(location: Location, fields: &Table) -> Result<Candidate, String> {
    let mut notes = Vec::new();
    let command = string(fields, "command")?;
    let url = string(fields, "url")?;
    let transport = match (command, url) {
        (Some(command), _) if !command.trim().is_empty() => {
            let args = strings(fields, "args")?.unwrap_or_default();
            let mut env = string_table(fields, "env")?;
            if let Some(Value::Array(names)) = fields.get("env_vars") {
                for (i, item) in names.iter().enumerate() {
                    let name = match item {
                        Value::String(n) => n.clone(),
                        Value::Table(t) => match t.get("name") {
                            Some(Value::String(n)) => {
                                if matches!(t.get("source"), Some(Value::String(s)) if s == "remote")
                                {
                                    notes.push(format!(
                                        "`env_vars[{i}]` ({n}) came from Codex's remote \
                                         executor; mcpbox reads it from its own environment"
                                    ));
                                }
                                n.clone()
                            }
                            _ => return Err(format!("has `env_vars[{i}]` without a `name`")),
                        },
                        other => {
                            return Err(format!(
                                "has `env_vars[{i}]` that is {}",
                                other.type_str()
                            ));
                        }
                    };
                    if !env.iter().any(|(n, _)| *n == name) {
                        env.push((name.clone(), format!("${{{name}}}")));
                    }
                }
            }
            Transport::Stdio {
                command,
                args,
                env,
                cwd: string(fields, "cwd")?,
            }
        }
        (Some(_), _) => return Err("has an empty `command`".into()),
        (None, Some(url)) if !url.trim().is_empty() => {
            let mut headers = string_table(fields, "http_headers")?;
            for (header, variable) in string_table(fields, "env_http_headers")? {
                headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&header));
                headers.push((header, format!("${{{variable}}}")));
            }
            if let Some(variable) = string(fields, "bearer_token_env_var")? {
                headers.retain(|(h, _)| !h.eq_ignore_ascii_case("authorization"));
                headers.push(("Authorization".into(), format!("Bearer ${{{variable}}}")));
            } else if let Some(token) = string(fields, "bearer_token")? {
                // Inline: becomes a reference like any other credential below.
                headers.retain(|(h, _)| !h.eq_ignore_ascii_case("authorization"));
                headers.push(("Authorization".into(), format!("Bearer {token}")));
            }
            Transport::Http { url, headers }
        }
        _ => return Err("has neither `command` nor `url`".into()),
    };
    let unknown: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN.contains(k))
        .collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "{} not imported: mcpbox has no such setting",
            unknown
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let enabled = !matches!(fields.get("enabled"), Some(Value::Boolean(false)));
    let startup_timeout_ms = match seconds_to_ms(fields, "startup_timeout_sec")? {
        Some(ms) => Some(ms),
        None => match fields.get("startup_timeout_ms") {
            Some(Value::Integer(n)) if *n >= 0 => Some(*n as u64),
            _ => None,
        },
    };
    let tool_timeout_ms = seconds_to_ms(fields, "tool_timeout_sec")?;
    let mut transport = transport;
    if let Transport::Stdio { command, args, .. } = &transport
        && std::iter::once(command)
            .chain(args)
            .any(|v| v.contains("${"))
    {
        notes.push(
            "the command line contains `${`, which mcpbox reads as a variable reference \
             (Codex did not)"
                .into(),
        );
    }
    let secrets = secrets::scrub(&location.name, &location.path, &mut transport);
    Ok(Candidate {
        location,
        transport,
        enabled,
        startup_timeout_ms,
        tool_timeout_ms,
        enabled_tools: strings(fields, "enabled_tools")?,
        disabled_tools: strings(fields, "disabled_tools")?,
        secrets,
        notes,
    })
}
