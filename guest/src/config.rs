//! `.mcp.json` configuration text → server entries.
//!
//! The host reads the file (only where its policy allows) and hands the guest the
//! text, so every embedding gets the same semantics. The format is the one Claude
//! Code, Claude Desktop and Cursor share (`mcpServers`), plus the dialects people
//! paste from elsewhere: VS Code's `servers`, `env` as a `KEY=VALUE` list, Gemini
//! CLI's `timeout` and `httpUrl`, `disabled: true`. `${VAR}` references stay as
//! written: the host resolves them when it opens the transport, so secrets never
//! enter the sandbox.
//!
//! A problem inside one entry becomes a [`ConfigIssue`] naming the server and the
//! field as a path (`args[2]`, `env.API_KEY`) with a message that says how to fix
//! it; that entry is skipped and the others load. Only text that is not a JSON
//! object at all is an error. Entries keep the order they have in the file, since
//! that order decides which of two colliding tool names wins; entries whose tool
//! names can collide at all (`x` and `x__y`) are reported too, as issues that do
//! not skip them.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

pub mod describe;
mod permissions;
pub(crate) mod types;

use types::Json;
pub use types::{ConfigIssue, Limits};
pub(crate) use types::{Members, kind_of};

use crate::naming;
use crate::permissions::{Permissions, ToolFilter};
use crate::sandbox::{self, Sandbox};
use crate::transport::{Endpoint, Pair, format_bytes};

/// The largest configuration text accepted. Real files are a few KiB; the limit
/// keeps a runaway file from costing the guest its memory (hosts refuse to read
/// more than this, so the text never crosses into the guest).
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;

/// The most server entries a configuration may have (every entry counts:
/// disabled and broken ones too). Each server is a process or a remote session;
/// far fewer than this are ever useful at once.
pub const MAX_SERVERS: usize = 10_000;

/// How long a server may take to connect, initialise and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// How long a tool call may run before it is cancelled.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;

/// One server entry that loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key under `mcpServers`.
    pub name: String,
    /// How to reach it.
    pub endpoint: Endpoint,
    /// False for `enabled: false` or `disabled: true`.
    pub enabled: bool,
    /// Budget for open + initialize + the full tool listing.
    pub startup_timeout_ms: u64,
    /// Default per-call timeout.
    pub tool_timeout_ms: u64,
    /// Replaces the server's name in tool names.
    pub tool_prefix: Option<String>,
    /// `enabledTools` / `disabledTools` (see [`crate::permissions`]).
    pub tools: ToolFilter,
    /// What its tool list may hold (`limits`).
    pub limits: Limits,
    /// `logLevel`: sent as `logging/setLevel` once it connects, when it
    /// offers logging.
    pub log_level: Option<String>,
    /// `roots`: this server's own roots, instead of the embedder's or the
    /// top-level ones (see [`crate::roots`]); `Some(empty)` gives it none.
    pub roots: Option<Vec<crate::roots::Root>>,
    /// `onToolChange`: what happens when one of its tools no longer matches
    /// the definition pinned when it was first seen (see `manager::pins`).
    pub on_tool_change: OnToolChange,
}

/// A server's `onToolChange`: what a tool definition that changed since it was
/// pinned (its description, schemas or behaviour hints) does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnToolChange {
    /// `warn` (the default): a `tool-changed` event, and the new definition is
    /// pinned in place of the old one.
    #[default]
    Warn,
    /// `ask`: a `tool-changed` event; every call of the tool asks for approval
    /// until `mcpbox trust` accepts the new definition.
    Ask,
    /// `block`: a `tool-changed` event; the tool is neither listed nor callable
    /// until `mcpbox trust` accepts the new definition.
    Block,
}

impl OnToolChange {
    /// Its name in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            OnToolChange::Warn => "warn",
            OnToolChange::Ask => "ask",
            OnToolChange::Block => "block",
        }
    }
}

impl ServerConfig {
    /// The text that goes in the `{server}` segment of tool names.
    pub fn name_segment(&self) -> &str {
        self.tool_prefix.as_deref().unwrap_or(&self.name)
    }
}

/// A parsed configuration: the entries that loaded, and every problem found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Loaded entries, in file order.
    pub servers: Vec<ServerConfig>,
    /// Problems. An entry with a problem is not in `servers`, except for names
    /// that can collide with another entry's, which are only reported.
    pub issues: Vec<ConfigIssue>,
    /// The top-level `permissions` and `profiles` and the servers' tool filters,
    /// resolved against `servers`.
    pub permissions: Permissions,
    /// The top-level `output`: how large results and media are limited.
    pub output: crate::output::Settings,
    /// The top-level `audit`: where the audit trail goes.
    pub audit: crate::audit::Settings,
    /// The top-level `roots`: the directories servers are told they may work in
    /// (see [`crate::roots`]).
    pub roots: Option<Vec<crate::roots::Root>>,
}

/// The items of a JSON array, each unread; `None` when `raw` is not an array.
/// One level deep, so no item's depth matters.
fn items(raw: &RawValue) -> Option<Vec<Box<RawValue>>> {
    serde_json::from_str(raw.get()).ok()
}

/// A policy object (`permissions`, `profiles`, `output`, `audit`, a `sandbox`, a
/// tool list), built whole as a `serde_json::Value`: they are small, and read
/// with `Value`'s API. One that serde_json cannot build (nested past 128 levels,
/// a number like `1e999`) is an issue naming the field, never read as absent.
fn whole_value(
    raw: &RawValue,
    server: Option<&str>,
    field: &str,
    issues: &mut Vec<ConfigIssue>,
) -> Option<Value> {
    match serde_json::from_str(raw.get()) {
        Ok(value) => Some(value),
        Err(e) => {
            issues.push(ConfigIssue {
                server: server.map(String::from),
                field: Some(field.to_string()),
                message: format!("cannot be read ({e}), ignored; write it as plain JSON"),
            });
            None
        }
    }
}

/// `env.API_KEY`, or `env["a.b"]` when the key would make the path ambiguous.
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

/// Parses configuration text. `origin` names it in messages (usually its path).
///
/// Err for text that is not a JSON object, text over [`MAX_CONFIG_BYTES`] and
/// more than [`MAX_SERVERS`] entries. Everything else is linear in the size of
/// the text (up to the `O(n log n)` of finding duplicate and colliding names).
pub fn parse(origin: &str, text: &str) -> Result<Config, String> {
    parse_capped(origin, text, MAX_SERVERS)
}

/// [`parse`] with another cap on the number of entries, so a test can measure
/// that loading stays linear beyond the cap.
pub(crate) fn parse_capped(origin: &str, text: &str, max_servers: usize) -> Result<Config, String> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{origin} is {}, more than the {} a configuration may be; \
             is this the right file?",
            format_bytes(text.len() as u64),
            format_bytes(MAX_CONFIG_BYTES as u64)
        ));
    }
    let mut config = Config::default();
    if text.trim().is_empty() {
        return Ok(config);
    }
    let top: Members = serde_json::from_str(text).map_err(|e| {
        // serde_json appends " at line L column C"; we put the position first,
        // where editors and people look for it.
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(head, _)| head);
        if e.is_data() {
            // A well-formed value of the wrong type: point at where it starts.
            let (line, column) = start_of_value(text);
            format!("{origin}:{line}:{column}: the configuration is not a JSON object: {msg}")
        } else {
            format!(
                "{origin}:{}:{}: the configuration is not valid JSON: {msg}",
                e.line(),
                e.column()
            )
        }
    })?;

    let (key, servers) = match (top.get("mcpServers"), top.get("servers")) {
        (Some(s), other) => {
            if other.is_some() {
                config.issues.push(ConfigIssue {
                    server: None,
                    field: Some("servers".into()),
                    message: "ignored because `mcpServers` is present; move these entries into `mcpServers`".into(),
                });
            }
            ("mcpServers", s)
        }
        (None, Some(s)) => ("servers", s),
        (None, None) => {
            if !top.0.is_empty() {
                config.issues.push(ConfigIssue {
                    server: None,
                    field: None,
                    message: format!(
                        "{origin} has no `mcpServers` object, so no server is configured; \
                         write {{\"mcpServers\": {{\"name\": {{\"command\": \"…\"}}}}}}"
                    ),
                });
            }
            return Ok(config);
        }
    };
    let Some(entries) = Members::read(servers) else {
        config.issues.push(ConfigIssue {
            server: None,
            field: Some(key.into()),
            message: format!(
                "must be an object mapping server names to entries, but is {}",
                Json::read(servers).kind()
            ),
        });
        return Ok(config);
    };

    if entries.0.len() > max_servers {
        return Err(format!(
            "{origin} configures {} servers under `{key}`; at most {max_servers} are supported \
             (split the configuration, or remove entries that are not used)",
            entries.0.len()
        ));
    }
    // Where each name is defined last: a repeated name keeps its last definition.
    let mut last = BTreeMap::new();
    for (i, (name, _)) in entries.0.iter().enumerate() {
        last.insert(name.as_str(), i);
    }
    for (i, (name, raw)) in entries.0.iter().enumerate() {
        if last.get(name.as_str()) != Some(&i) {
            config.issues.push(ConfigIssue {
                server: Some(name.clone()),
                field: None,
                message: "is defined more than once; the last definition is used".into(),
            });
            continue;
        }
        let mut entry = Entry {
            server: name,
            issues: Vec::new(),
            notes: Vec::new(),
        };
        let parsed = entry.parse(raw);
        if entry.issues.is_empty()
            && let Some(server) = parsed
        {
            config.servers.push(server);
        }
        config.issues.append(&mut entry.issues);
        config.issues.append(&mut entry.notes);
    }
    let mut whole = |key: &str| {
        top.get(key)
            .and_then(|raw| whole_value(raw, None, key, &mut config.issues))
    };
    let (permissions, profiles) = (whole("permissions"), whole("profiles"));
    let (output, audit) = (whole("output"), whole("audit"));
    let roots = whole("roots");
    config.permissions = Permissions::read(
        origin,
        permissions.as_ref(),
        profiles.as_ref(),
        &config.servers,
        &mut config.issues,
    );
    config.output = crate::output::Settings::read(output.as_ref(), &mut config.issues);
    config.audit = crate::audit::Settings::read(audit.as_ref(), &mut config.issues);
    config.roots = roots.as_ref().and_then(|roots| {
        crate::roots::parse_list(roots, "roots", &mut |field, message| {
            config.issues.push(ConfigIssue {
                server: None,
                field: Some(field),
                message,
            })
        })
    });
    config.issues.extend(rival_names(&config.servers));
    Ok(config)
}

/// A warning for every loaded entry some of whose tool names could also be
/// another entry's: `x__y`'s `mcp__x__y__…` names are names server `x` can give
/// too. The entries still load (the registry decides such a collision by file
/// order), but the user should know a tool can be shadowed.
fn rival_names(servers: &[ServerConfig]) -> Vec<ConfigIssue> {
    let segments: Vec<&str> = servers.iter().map(ServerConfig::name_segment).collect();
    naming::rivals(&segments)
        .into_iter()
        .map(|(j, i)| {
            let (server, rival) = (&servers[j], &servers[i]);
            let (this, other) = (
                naming::space(server.name_segment()),
                naming::space(rival.name_segment()),
            );
            let winner = if i < j { &rival.name } else { &server.name };
            ConfigIssue {
                server: Some(server.name.clone()),
                field: server
                    .tool_prefix
                    .as_ref()
                    .map(|_| "toolPrefix".to_string()),
                message: format!(
                    "its tool names ({this}…) can be the same as tool names of server `{}` \
                     ({other}…); where they are, the tool of `{winner}` (earlier in the file) \
                     keeps the name and the other cannot be called by it; rename one of the \
                     servers, or give one a `toolPrefix`, so that their names cannot meet",
                    rival.name
                ),
            }
        })
        .collect()
}

/// The 1-based line and column of the first non-whitespace character.
fn start_of_value(text: &str) -> (usize, usize) {
    let (mut line, mut column) = (1, 1);
    for c in text.chars() {
        match c {
            '\n' => {
                line += 1;
                column = 1;
            }
            c if c.is_whitespace() => column += 1,
            _ => break,
        }
    }
    (line, column)
}

/// Parses one server entry, collecting every problem rather than stopping at the
/// first: one round of fixes should be enough.
struct Entry<'a> {
    server: &'a str,
    issues: Vec<ConfigIssue>,
    /// Problems that do not skip the entry (an unknown key in a `sandbox`).
    notes: Vec<ConfigIssue>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

impl Entry<'_> {
    fn issue(&mut self, field: Option<String>, message: impl Into<String>) {
        self.issues.push(ConfigIssue {
            server: Some(self.server.to_string()),
            field,
            message: message.into(),
        });
    }

    fn parse(&mut self, raw: &RawValue) -> Option<ServerConfig> {
        if self.server.is_empty() {
            self.issue(
                None,
                "server names must not be empty; give the entry a name",
            );
        }
        let Some(fields) = Members::read(raw) else {
            self.issue(
                None,
                format!(
                    "must be an object like {{\"command\": \"…\"}} or {{\"url\": \"…\"}}, but is {}",
                    Json::read(raw).kind()
                ),
            );
            return None;
        };

        let kind = self.kind(&fields)?;
        let endpoint = match kind {
            Kind::Stdio => self.stdio(&fields),
            Kind::Http | Kind::Sse => self.http(&fields, kind),
        };

        let mut enabled = true;
        if let Some(v) = self.boolean(&fields, "enabled") {
            enabled &= v;
        }
        if let Some(v) = self.boolean(&fields, "disabled") {
            enabled &= !v;
        }
        let startup_timeout_ms = self
            .millis(&fields, "startupTimeoutMs")
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS);
        let tool_timeout_ms = match fields.get("toolTimeoutMs") {
            Some(_) => self.millis(&fields, "toolTimeoutMs"),
            None => self.millis(&fields, "timeout"),
        }
        .unwrap_or(DEFAULT_TOOL_TIMEOUT_MS);
        let tool_prefix = self.string(&fields, "toolPrefix");
        if tool_prefix.as_deref() == Some("") {
            self.issue(
                Some("toolPrefix".into()),
                "must not be empty; remove it to use the server name",
            );
        }

        let tools = ToolFilter {
            enabled: self.tool_list(&fields, "enabledTools", "enabled_tools"),
            disabled: self.tool_list(&fields, "disabledTools", "disabled_tools"),
        };

        let limits = self.limits(&fields);
        let log_level = self.string(&fields, "logLevel");
        let log_level = match log_level {
            Some(level) if !crate::client::LOG_LEVELS.contains(&level.as_str()) => {
                self.issue(
                    Some("logLevel".into()),
                    format!(
                        "{level:?} is not an MCP log level; use one of {}. Ignored",
                        crate::client::LOG_LEVELS.join(", ")
                    ),
                );
                None
            }
            other => other,
        };
        let roots = fields.get("roots").and_then(|raw| {
            let server = self.server.to_string();
            let value = whole_value(raw, Some(&server), "roots", &mut self.notes)?;
            let notes = &mut self.notes;
            crate::roots::parse_list(&value, "roots", &mut |field, message| {
                notes.push(ConfigIssue {
                    server: Some(server.clone()),
                    field: Some(field),
                    message,
                })
            })
        });
        let on_tool_change = match self.string(&fields, "onToolChange").as_deref() {
            None | Some("warn") => OnToolChange::Warn,
            Some("ask") => OnToolChange::Ask,
            Some("block") => OnToolChange::Block,
            Some(other) => {
                // Skipped rather than read as `warn`: a misspelt `block` must not
                // quietly let changed tools through.
                self.issue(
                    Some("onToolChange".into()),
                    format!("{other:?} is not a policy; use \"warn\", \"ask\" or \"block\""),
                );
                return None;
            }
        };
        Some(ServerConfig {
            name: self.server.to_string(),
            endpoint: endpoint?,
            enabled,
            startup_timeout_ms,
            tool_timeout_ms,
            tool_prefix,
            tools,
            limits,
            log_level,
            roots,
            on_tool_change,
        })
    }

    /// `enabledTools` / `disabledTools` (or Codex's snake_case spelling): the key
    /// found and its tool names. A malformed list skips the entry, as any other
    /// problem does: a server whose tool filter cannot be read is not started
    /// with none.
    fn tool_list(
        &mut self,
        fields: &Members,
        camel: &str,
        snake: &str,
    ) -> Option<(String, Vec<String>)> {
        let key = match (fields.get(camel), fields.get(snake)) {
            (Some(_), Some(_)) => {
                self.issue(
                    Some(snake.into()),
                    format!("ignored because `{camel}` is present; keep one of the two"),
                );
                camel
            }
            (Some(_), None) => camel,
            (None, Some(_)) => snake,
            (None, None) => return None,
        };
        let server = self.server.to_string();
        let raw = fields.get(key)?;
        match whole_value(raw, Some(&server), key, &mut self.issues) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let mut names = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::String(s) => names.push(s),
                        other => self.issue(
                            Some(format!("{key}[{i}]")),
                            format!("must be a tool name (a string), but is {}", kind_of(&other)),
                        ),
                    }
                }
                Some((key.to_string(), names))
            }
            Some(other) => {
                self.issue(
                    Some(key.into()),
                    format!(
                        "must be a list of the server's tool names, like [\"read_file\"], but is {}",
                        kind_of(&other)
                    ),
                );
                None
            }
        }
    }

    fn kind(&mut self, fields: &Members) -> Option<Kind> {
        match fields.get("type").map(Json::read) {
            Some(Json::Str(t)) => match t.to_ascii_lowercase().as_str() {
                "stdio" => Some(Kind::Stdio),
                "http" | "streamable-http" | "streamablehttp" | "streamable_http" => {
                    Some(Kind::Http)
                }
                "sse" => Some(Kind::Sse),
                _ => {
                    self.issue(
                        Some("type".into()),
                        format!("unknown transport type {t:?}; use \"stdio\", \"http\" or \"sse\""),
                    );
                    None
                }
            },
            Some(other) => {
                self.issue(
                    Some("type".into()),
                    format!(
                        "must be a string (\"stdio\", \"http\" or \"sse\"), but is {}",
                        other.kind()
                    ),
                );
                None
            }
            None if fields.get("command").is_some() => Some(Kind::Stdio),
            None if fields.get("url").is_some() || fields.get("httpUrl").is_some() => {
                Some(Kind::Http)
            }
            None => {
                self.issue(
                    None,
                    "has neither `command` (a local server) nor `url` (a remote server); add one",
                );
                None
            }
        }
    }

    fn stdio(&mut self, fields: &Members) -> Option<Endpoint> {
        let command = self.string(fields, "command");
        match command.as_deref() {
            None if fields.get("command").is_none() => {
                self.issue(
                    Some("command".into()),
                    "is required for a stdio server; set it to the program to run, like \"npx\"",
                );
            }
            Some("") => self.issue(
                Some("command".into()),
                "must not be empty; set it to the program to run",
            ),
            _ => {}
        }
        let args = match fields.get("args") {
            None => Vec::new(),
            Some(raw) => match (Json::read(raw), items(raw)) {
                (Json::Null, _) => Vec::new(),
                (_, Some(items)) => {
                    let mut args = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        match Json::read(item) {
                            Json::Str(s) => args.push(s),
                            other => self.issue(
                                Some(format!("args[{i}]")),
                                format!(
                                    "must be a string, but is {}; quote it, like \"{}\"",
                                    other.kind(),
                                    other.unquoted()
                                ),
                            ),
                        }
                    }
                    args
                }
                (other, None) => {
                    self.issue(
                        Some("args".into()),
                        format!(
                            "must be an array of strings, like [\"-y\", \"package\"], but is {}",
                            other.kind()
                        ),
                    );
                    Vec::new()
                }
            },
        };
        let env = self.env(fields);
        let cwd = self.string(fields, "cwd");
        let sandbox = self.sandbox(fields);
        Some(Endpoint::Stdio {
            command: command?,
            args,
            env,
            cwd,
            sandbox,
        })
    }

    fn http(&mut self, fields: &Members, kind: Kind) -> Option<Endpoint> {
        let key = if fields.get("url").is_none() && fields.get("httpUrl").is_some() {
            "httpUrl"
        } else {
            "url"
        };
        let url = self.string(fields, key);
        match url.as_deref() {
            None if fields.get(key).is_none() => self.issue(
                Some("url".into()),
                "is required for a remote server; set it to the server's address, like \"https://example.com/mcp\"",
            ),
            Some(u) if !(u.starts_with("http://") || u.starts_with("https://") || u.starts_with("${")) => {
                self.issue(
                    Some(key.into()),
                    format!("{u:?} is not an http:// or https:// URL; write the full address, like \"https://example.com/mcp\""),
                )
            }
            _ => {}
        }
        let headers = self.string_map(fields, "headers", "header values");
        if fields.get("sandbox").is_some() {
            let note = ConfigIssue {
                server: Some(self.server.to_string()),
                field: Some("sandbox".into()),
                message: "ignored: a sandbox confines a local (stdio) server's process, and this \
                          server is remote"
                    .into(),
            };
            self.notes.push(note);
        }
        let url = url?;
        Some(if kind == Kind::Sse {
            Endpoint::Sse { url, headers }
        } else {
            Endpoint::Http { url, headers }
        })
    }

    /// The `sandbox` block (see [`crate::sandbox`]): a bad grant skips the entry,
    /// an unknown key is only reported.
    fn sandbox(&mut self, fields: &Members) -> Option<Sandbox> {
        let server = self.server.to_string();
        let value = whole_value(
            fields.get("sandbox")?,
            Some(&server),
            "sandbox",
            &mut self.issues,
        )?;
        let (issues, notes) = (&mut self.issues, &mut self.notes);
        sandbox::parse(&value, &mut |field, message, fatal| {
            let issue = ConfigIssue {
                server: Some(server.clone()),
                field: Some(field),
                message,
            };
            if fatal {
                issues.push(issue);
            } else {
                notes.push(issue);
            }
        })
    }

    fn env(&mut self, fields: &Members) -> Vec<Pair> {
        let Some(raw) = fields.get("env") else {
            return Vec::new();
        };
        if let Some(items) = items(raw) {
            let mut env = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let field = Some(format!("env[{i}]"));
                match Json::read(item) {
                    Json::Str(s) => match s.split_once('=') {
                        Some(("", _)) => {
                            self.issue(field, format!("{s:?} has an empty variable name; write \"NAME=value\""))
                        }
                        Some((name, value)) => env.push(Pair {
                            name: name.to_string(),
                            value: value.to_string(),
                        }),
                        None => self.issue(
                            field,
                            format!("{s:?} has no `=`; write \"NAME=value\" (or use an object: {{\"NAME\": \"value\"}})"),
                        ),
                    },
                    other => self.issue(
                        field,
                        format!("must be a string like \"NAME=value\", but is {}", other.kind()),
                    ),
                }
            }
            return env;
        }
        self.string_map(fields, "env", "environment values")
    }

    /// An object whose values must all be strings (`env`, `headers`).
    fn string_map(&mut self, fields: &Members, key: &str, what: &str) -> Vec<Pair> {
        let Some(raw) = fields.get(key) else {
            return Vec::new();
        };
        let Some(members) = Members::read(raw) else {
            match Json::read(raw) {
                Json::Null => {}
                other => self.issue(
                    Some(key.into()),
                    format!(
                        "must be an object of names to string values, like {{\"NAME\": \"value\"}}, but is {}",
                        other.kind()
                    ),
                ),
            }
            return Vec::new();
        };
        let mut pairs = Vec::new();
        for (name, raw) in members.0 {
            let field = Some(member_path(key, &name));
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                self.issue(field, format!("{name:?} is not a valid name"));
                continue;
            }
            match Json::read(&raw) {
                Json::Str(s) => pairs.push(Pair { name, value: s }),
                other => self.issue(
                    field,
                    format!(
                        "{what} must be strings, but this is {}; quote it, like \"{}\"",
                        other.kind(),
                        other.unquoted()
                    ),
                ),
            }
        }
        pairs
    }

    fn string(&mut self, fields: &Members, key: &str) -> Option<String> {
        match fields.get(key).map(Json::read) {
            None | Some(Json::Null) => None,
            Some(Json::Str(s)) => Some(s),
            Some(other) => {
                self.issue(
                    Some(key.into()),
                    format!("must be a string, but is {}", other.kind()),
                );
                None
            }
        }
    }

    fn boolean(&mut self, fields: &Members, key: &str) -> Option<bool> {
        match fields.get(key).map(Json::read) {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(b),
            Some(other) => {
                self.issue(
                    Some(key.into()),
                    format!("must be true or false, but is {}", other.kind()),
                );
                None
            }
        }
    }

    /// `limits`: an object of positive whole numbers, each optional; unknown
    /// names are reported (a misspelt limit would silently keep the default).
    fn limits(&mut self, fields: &Members) -> Limits {
        let mut limits = Limits::DEFAULT;
        let Some(raw) = fields.get("limits") else {
            return limits;
        };
        let Some(members) = Members::read(raw) else {
            match Json::read(raw) {
                Json::Null => {}
                other => self.issue(
                    Some("limits".into()),
                    format!(
                        "must be an object like {{\"maxTools\": 20000}}, but is {}",
                        other.kind()
                    ),
                ),
            }
            return limits;
        };
        for (name, raw) in &members.0 {
            let field = member_path("limits", name);
            let slot = match name.as_str() {
                "maxTools" => &mut limits.max_tools,
                "maxListBytes" => &mut limits.max_list_bytes,
                "maxToolBytes" => &mut limits.max_tool_bytes,
                _ => {
                    self.issue(
                        Some(field),
                        "is not a limit; the limits are maxTools, maxListBytes and maxToolBytes",
                    );
                    continue;
                }
            };
            match Json::read(raw) {
                Json::Num(n) => match n.parse::<usize>() {
                    Ok(value) if value > 0 => *slot = value,
                    _ => self.issue(
                        Some(field),
                        format!("must be a positive whole number, like 20000, but is {n}"),
                    ),
                },
                other => self.issue(
                    Some(field),
                    format!(
                        "must be a positive whole number, like 20000, but is {}",
                        other.kind()
                    ),
                ),
            }
        }
        limits
    }

    fn millis(&mut self, fields: &Members, key: &str) -> Option<u64> {
        let v = fields.get(key).map(Json::read)?;
        let ms = match &v {
            Json::Null => return None,
            // Written as an integer, or as a whole number of another form (`3e4`);
            // `1e999` parses as infinity, which is not a number of milliseconds.
            Json::Num(n) => n.parse::<u64>().ok().or_else(|| {
                n.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && crate::schema::is_whole(*f) && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        match ms {
            Some(ms) if ms > 0 => Some(ms),
            _ => {
                self.issue(
                    Some(key.into()),
                    format!(
                        "must be a positive whole number of milliseconds, like 30000, but is {}",
                        match &v {
                            Json::Num(n) => n.clone(),
                            other => other.kind(),
                        }
                    ),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Config {
        parse("test.json", text).expect("parses")
    }

    fn pair(name: &str, value: &str) -> Pair {
        Pair {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn empty_text_and_empty_object_mean_no_servers() {
        assert_eq!(ok(""), Config::default());
        assert_eq!(ok("  \n"), Config::default());
        assert_eq!(ok("{}"), Config::default());
        assert_eq!(ok(r#"{"mcpServers":{}}"#), Config::default());
    }

    #[test]
    fn invalid_json_names_origin_line_and_column() {
        let err = parse("/p/.mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {,\n").unwrap_err();
        assert!(
            err.starts_with("/p/.mcp.json:3:11: the configuration is not valid JSON"),
            "{err}"
        );
        let err = parse("cfg", "[1, 2]").unwrap_err();
        assert!(
            err.starts_with("cfg:1:1: the configuration is not a JSON object"),
            "{err}"
        );
        assert!(
            parse("cfg", "\n  \"text\"")
                .unwrap_err()
                .starts_with("cfg:2:3:")
        );
    }

    #[test]
    fn parses_every_stdio_field() {
        let c = ok(r#"{"mcpServers": {"fs": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@mcp/server-filesystem", "${HOME}"],
            "env": {"API_KEY": "${API_KEY:-none}", "MODE": "fast"},
            "cwd": "/tmp",
            "startupTimeoutMs": 5000,
            "toolTimeoutMs": 7000,
            "toolPrefix": "files",
            "unknownField": {"ignored": true}
        }}}"#);
        assert_eq!(c.issues, vec![]);
        assert_eq!(
            c.servers,
            vec![ServerConfig {
                name: "fs".into(),
                endpoint: Endpoint::Stdio {
                    command: "npx".into(),
                    args: vec![
                        "-y".into(),
                        "@mcp/server-filesystem".into(),
                        "${HOME}".into()
                    ],
                    env: vec![pair("API_KEY", "${API_KEY:-none}"), pair("MODE", "fast")],
                    cwd: Some("/tmp".into()),
                    sandbox: None,
                },
                enabled: true,
                startup_timeout_ms: 5000,
                tool_timeout_ms: 7000,
                tool_prefix: Some("files".into()),
                tools: ToolFilter::default(),
                limits: Limits::DEFAULT,
                log_level: None,
                roots: None,
                on_tool_change: OnToolChange::Warn,
            }]
        );
        assert_eq!(c.servers[0].name_segment(), "files");
    }

    #[test]
    fn parses_remote_servers_and_defaults() {
        let c = ok(r#"{"mcpServers": {
            "a": {"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "b": {"type": "sse", "url": "http://b.example/sse"},
            "c": {"type": "streamable-http", "url": "https://c.example"},
            "d": {"type": "streamableHttp", "url": "https://d.example"},
            "e": {"httpUrl": "https://e.example", "timeout": 1234}
        }}"#);
        assert_eq!(c.issues, vec![]);
        let kinds: Vec<_> = c.servers.iter().map(|s| s.endpoint.kind()).collect();
        assert_eq!(kinds, ["http", "sse", "http", "http", "http"]);
        assert_eq!(
            c.servers[0].endpoint,
            Endpoint::Http {
                url: "https://a.example/mcp".into(),
                headers: vec![pair("Authorization", "Bearer ${TOKEN}")],
            }
        );
        assert_eq!(c.servers[0].startup_timeout_ms, DEFAULT_STARTUP_TIMEOUT_MS);
        assert_eq!(c.servers[0].tool_timeout_ms, DEFAULT_TOOL_TIMEOUT_MS);
        assert_eq!(c.servers[4].tool_timeout_ms, 1234);
        assert_eq!(c.servers[0].name_segment(), "a");
    }

    #[test]
    fn tool_timeout_wins_over_gemini_timeout() {
        let c =
            ok(r#"{"mcpServers": {"a": {"command": "x", "toolTimeoutMs": 10, "timeout": 20}}}"#);
        assert_eq!(c.servers[0].tool_timeout_ms, 10);
    }

    #[test]
    fn env_as_a_list_of_assignments() {
        let c = ok(r#"{"mcpServers": {"a": {"command": "x", "env": ["A=1", "B=two=2", "C="]}}}"#);
        assert_eq!(c.issues, vec![]);
        let Endpoint::Stdio { env, .. } = &c.servers[0].endpoint else {
            panic!()
        };
        assert_eq!(env, &[pair("A", "1"), pair("B", "two=2"), pair("C", "")]);
    }

    #[test]
    fn type_is_inferred() {
        let c = ok(r#"{"mcpServers": {"s": {"command": "x"}, "h": {"url": "https://h"}}}"#);
        assert_eq!(c.servers[0].endpoint.kind(), "stdio");
        assert_eq!(c.servers[1].endpoint.kind(), "http");
    }

    #[test]
    fn keeps_file_order() {
        let c = ok(
            r#"{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}, "mid": {"command": "m"}}}"#,
        );
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
    }

    #[test]
    fn vs_code_servers_alias() {
        let c = ok(
            r#"{"inputs": [], "servers": {"gh": {"type": "http", "url": "https://api.example/mcp"}}}"#,
        );
        assert_eq!(c.issues, vec![]);
        assert_eq!(c.servers[0].name, "gh");
    }

    #[test]
    fn disabled_entries() {
        let c = ok(r#"{"mcpServers": {
            "a": {"command": "x", "enabled": false},
            "b": {"command": "x", "disabled": true},
            "c": {"command": "x", "disabled": false},
            "d": {"command": "x"}
        }}"#);
        let enabled: Vec<_> = c.servers.iter().map(|s| s.enabled).collect();
        assert_eq!(enabled, [false, false, true, true]);
    }

    fn issue(server: &str, field: Option<&str>) -> (Option<String>, Option<String>) {
        (Some(server.into()), field.map(String::from))
    }

    #[test]
    fn bad_entries_are_skipped_with_server_and_field() {
        let c = ok(r#"{"mcpServers": {
            "good": {"command": "ok"},
            "args": {"command": "x", "args": ["a", "b", 8080]},
            "env": {"command": "x", "env": {"API_KEY": 12}},
            "envlist": {"command": "x", "env": ["OK=1", "BROKEN"]},
            "timeout": {"command": "x", "startupTimeoutMs": "30s"},
            "type": {"type": "websocket", "url": "ws://x"},
            "nothing": {"name": "x"},
            "notobj": 5,
            "url": {"type": "http", "url": "example.com"},
            "nourl": {"type": "sse"},
            "dotted": {"url": "https://x", "headers": {"a.b": 1}},
            "also good": {"url": "https://x"}
        }}"#);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good", "also good"]);
        let where_: Vec<_> = c
            .issues
            .iter()
            .map(|i| (i.server.clone(), i.field.clone()))
            .collect();
        assert_eq!(
            where_,
            vec![
                issue("args", Some("args[2]")),
                issue("env", Some("env.API_KEY")),
                issue("envlist", Some("env[1]")),
                issue("timeout", Some("startupTimeoutMs")),
                issue("type", Some("type")),
                issue("nothing", None),
                issue("notobj", None),
                issue("url", Some("url")),
                issue("nourl", Some("url")),
                issue("dotted", Some("headers[\"a.b\"]")),
            ]
        );
        // Messages say how to fix the problem.
        assert!(
            c.issues[0].message.contains("quote it, like \"8080\""),
            "{}",
            c.issues[0].message
        );
        assert!(c.issues[2].message.contains("NAME=value"));
        assert!(c.issues[3].message.contains("like 30000"));
        assert!(
            c.issues[4]
                .message
                .contains("\"stdio\", \"http\" or \"sse\"")
        );
        assert_eq!(
            c.issues[0].to_string(),
            format!("server `args`, args[2]: {}", c.issues[0].message)
        );
    }

    #[test]
    fn top_level_problems_are_issues_not_errors() {
        let c = ok(r#"{"mcpServers": []}"#);
        assert_eq!(c.servers, vec![]);
        assert_eq!(c.issues[0].field.as_deref(), Some("mcpServers"));
        let c = ok(r#"{"mcp_servers": {"a": {"command": "x"}}}"#);
        assert_eq!(c.servers, vec![]);
        assert!(c.issues[0].message.contains("no `mcpServers`"));
    }

    #[test]
    fn duplicate_names_keep_the_last() {
        let c = ok(r#"{"mcpServers": {"a": {"command": "first"}, "a": {"command": "second"}}}"#);
        assert_eq!(c.servers.len(), 1);
        assert!(
            matches!(&c.servers[0].endpoint, Endpoint::Stdio { command, .. } if command == "second")
        );
        assert_eq!(c.issues.len(), 1);
    }

    #[test]
    fn empty_prefix_and_bad_booleans_are_reported() {
        let c = ok(
            r#"{"mcpServers": {"a": {"command": "x", "toolPrefix": ""}, "b": {"command": "x", "enabled": "no"}}}"#,
        );
        assert_eq!(c.servers, vec![]);
        assert_eq!(c.issues[0].field.as_deref(), Some("toolPrefix"));
        assert_eq!(c.issues[1].field.as_deref(), Some("enabled"));
    }

    #[test]
    fn names_whose_tools_can_collide_are_reported_and_still_load() {
        let c = ok(r#"{"mcpServers": {
            "x__y": {"command": "a"},
            "x": {"command": "b"},
            "gh": {"command": "c", "toolPrefix": "x"},
            "fine": {"command": "d"}
        }}"#);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["x__y", "x", "gh", "fine"]);
        let where_: Vec<_> = c
            .issues
            .iter()
            .map(|i| (i.server.clone(), i.field.clone()))
            .collect();
        assert_eq!(
            where_,
            [issue("x__y", None), issue("gh", Some("toolPrefix"))]
        );
        assert_eq!(
            c.issues[0].to_string(),
            "server `x__y`: its tool names (mcp__x__y__…) can be the same as tool names of \
             server `x` (mcp__x__…); where they are, the tool of `x__y` (earlier in the file) \
             keeps the name and the other cannot be called by it; rename one of the servers, \
             or give one a `toolPrefix`, so that their names cannot meet"
        );
        assert!(
            c.issues[1].message.contains("server `x`"),
            "{}",
            c.issues[1]
        );
        assert!(
            c.issues[1].message.contains("tool of `x` (earlier"),
            "{}",
            c.issues[1]
        );
    }

    /// `n` stdio entries `s0` … `s{n-1}`, then `extra` (text of more entries).
    fn many(n: usize, extra: &str) -> String {
        let mut entries: Vec<String> = (0..n)
            .map(|i| format!(r#""s{i}": {{"command": "srv", "args": ["--n", "{i}"]}}"#))
            .collect();
        if !extra.is_empty() {
            entries.push(extra.to_string());
        }
        format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(", "))
    }

    /// Loading is linear in the number of entries (a quadratic duplicate check
    /// once took 100,000 past the guest's 10 s deadline; measured, not asserted:
    /// see the printed time), and a configuration beyond the caps is refused with
    /// a message that says so.
    #[test]
    fn a_configuration_of_100k_entries_loads_in_one_pass_and_beyond_the_caps_is_refused() {
        // One name defined twice, once early and once at the end: the last wins.
        let text = many(100_000, r#""s5": {"command": "again"}"#);
        let started = std::time::Instant::now();
        let c = parse_capped("big.json", &text, usize::MAX).unwrap();
        std::eprintln!("100,000 entries loaded in {:?}", started.elapsed());
        assert_eq!(c.servers.len(), 100_000);
        assert_eq!(
            c.issues.len(),
            1,
            "{:?}",
            &c.issues[..c.issues.len().min(3)]
        );
        assert_eq!(c.issues[0].server.as_deref(), Some("s5"));
        assert!(
            matches!(&c.servers.last().unwrap().endpoint, Endpoint::Stdio { command, .. } if command == "again")
        );

        assert_eq!(
            parse("big.json", &text).unwrap_err(),
            "big.json configures 100001 servers under `mcpServers`; at most 10000 are supported \
             (split the configuration, or remove entries that are not used)"
        );
        assert_eq!(ok(&many(MAX_SERVERS, "")).servers.len(), MAX_SERVERS);

        let mut padded = many(1, "");
        padded.insert_str(1, &" ".repeat(MAX_CONFIG_BYTES));
        assert_eq!(
            parse("padded.json", &padded).unwrap_err(),
            "padded.json is 16.1 MiB, more than the 16 MiB a configuration may be; \
             is this the right file?"
        );
    }

    /// A value serde_json cannot build (deeper than 128 levels, a number beyond
    /// f64) is reported, never read as `null`: otherwise `args` nested 200 deep
    /// would load a server with no arguments at all, and `1e999` ms would keep the
    /// default timeout, without a word. Nothing deep is built: 10,000 levels in an
    /// unknown field are skipped without recursion.
    #[test]
    fn values_too_deep_or_too_large_are_reported_never_dropped() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let text = format!(
            r#"{{"mcpServers": {{
            "args": {{"command": "x", "args": {args}}},
            "arg": {{"command": "x", "args": ["ok", {args}]}},
            "env": {{"command": "x", "env": {{"A": {args}}}}},
            "envlist": {{"command": "x", "env": ["A=1", {args}]}},
            "command": {{"command": {args}}},
            "startup": {{"command": "x", "startupTimeoutMs": 1e999}},
            "tool": {{"command": "x", "toolTimeoutMs": -1e999}},
            "enabled": {{"command": "x", "enabled": 1e999}},
            "ignored": {{"command": "x", "unknownField": {{"deep": {ignored}}}}}
        }}}}"#,
            args = deep(200),
            ignored = deep(10_000),
        );
        let c = ok(&text);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ignored"]);
        let where_: Vec<_> = c
            .issues
            .iter()
            .map(|i| (i.server.clone(), i.field.clone()))
            .collect();
        assert_eq!(
            where_,
            [
                issue("args", Some("args[0]")),
                issue("arg", Some("args[1]")),
                issue("env", Some("env.A")),
                issue("envlist", Some("env[1]")),
                issue("command", Some("command")),
                issue("startup", Some("startupTimeoutMs")),
                issue("tool", Some("toolTimeoutMs")),
                issue("enabled", Some("enabled")),
            ]
        );
        let messages: Vec<String> = c.issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages[0],
            "server `args`, args[0]: must be a string, but is an array; quote it, like \"…\""
        );
        assert!(messages[1].ends_with("must be a string, but is an array; quote it, like \"…\""));
        assert!(messages[2].ends_with(
            "environment values must be strings, but this is an array; quote it, like \"…\""
        ));
        assert!(messages[4].ends_with("must be a string, but is an array"));
        assert!(messages[5].ends_with(
            "must be a positive whole number of milliseconds, like 30000, but is 1e999"
        ));
        assert!(messages[6].ends_with("but is -1e999"));
        assert!(messages[7].ends_with("must be true or false, but is a number"));
    }

    #[test]
    fn limits_are_read_per_server_and_checked() {
        let c = ok(r#"{"mcpServers": {
            "big": {"command": "x", "limits": {"maxTools": 100000, "maxListBytes": 67108864}},
            "plain": {"command": "x"},
            "typo": {"command": "x", "limits": {"maxTool": 5}},
            "zero": {"command": "x", "limits": {"maxTools": 0, "maxToolBytes": "1 MiB"}},
            "list": {"command": "x", "limits": [1]}
        }}"#);
        let big = &c.servers[0];
        assert_eq!(
            big.limits,
            Limits {
                max_tools: 100_000,
                max_list_bytes: 64 << 20,
                ..Limits::DEFAULT
            }
        );
        assert_eq!(c.servers[1].limits, Limits::DEFAULT);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["big", "plain"]);
        let messages: Vec<String> = c.issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "server `typo`, limits.maxTool: is not a limit; the limits are maxTools, maxListBytes and maxToolBytes",
                "server `zero`, limits.maxTools: must be a positive whole number, like 20000, but is 0",
                "server `zero`, limits.maxToolBytes: must be a positive whole number, like 20000, but is a string",
                "server `list`, limits: must be an object like {\"maxTools\": 20000}, but is an array",
            ]
        );
    }
}
