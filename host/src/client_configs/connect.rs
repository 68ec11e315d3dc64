//! `mcpbox connect`: the other half of importing. A client's configuration
//! file is rewritten so that the client runs one server, mcpbox (`mcpbox serve
//! --config <abs path>` over stdio, or the URL of `mcpbox serve --http`), in
//! place of the servers [`discover`](super::discover) read from that file.
//!
//! Only the servers object changes: every other member of a JSON file stays
//! as it was, in its order, with its comments (edited through `jsonc-parser`'s
//! syntax tree), and Codex's `config.toml` is edited with `toml_edit`, which
//! keeps comments and layout. Entries the import skipped (it could not read
//! them) stay too, and are reported.
//!
//! Before writing, the original bytes are kept beside the file as
//! `<file>.mcpbox-backup`, and what was written as `<file>.mcpbox-connected`;
//! [`undo`] puts the backup back when the file is still what connect wrote;
//! when a JSON file changed only outside its servers object (a client keeping
//! its state there), it puts back the original servers object alone and keeps
//! the rest; otherwise it refuses unless forced (keeping the file as it was
//! then as `<file>.mcpbox-undone`).
//! A file that does not parse is refused, never rewritten.
//!
//! Over HTTP the entry names the bearer token by the variable `MCPBOX_TOKEN`
//! (each client's own reference syntax), never by value: the client must be
//! started with it set, and `mcpbox serve --http` uses the same variable.
//! Claude Desktop's file runs local programs only, so it connects over stdio.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde::Serialize;

use super::{Client, Discovery, Places, Scope, Server, source};

/// The name of the entry connect writes.
pub const ENTRY_NAME: &str = "mcpbox";

/// The variable the HTTP entries read the bearer token from.
pub const TOKEN_VARIABLE: &str = "MCPBOX_TOKEN";

/// Why connecting or undoing failed; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The client's file (or its backup) cannot be used; says why and the fix.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The request cannot be carried out as asked.
    #[error("{0}")]
    Refused(String),
}

fn file_error(path: &Path, message: impl Into<String>) -> ConnectError {
    ConnectError::File {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Which client file to connect.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// Whose file.
    pub client: Client,
    /// Its scope.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
}

impl Target {
    /// The file of `client` in `scope` (`None`: the user's own file).
    pub fn of(
        places: &Places,
        client: Client,
        scope: Option<Scope>,
    ) -> Result<Target, ConnectError> {
        let scope = scope.unwrap_or(Scope::User);
        let project = &places.project;
        let path = match (client, scope) {
            (Client::ClaudeCode, Scope::User) => places.home.join(".claude.json"),
            (Client::ClaudeCode, Scope::Project) => project.join(".mcp.json"),
            (Client::Cursor, Scope::User) => places.home.join(".cursor/mcp.json"),
            (Client::Cursor, Scope::Project) => project.join(".cursor/mcp.json"),
            (Client::VsCode, Scope::User) => places.config_dir.join("Code/User/mcp.json"),
            (Client::VsCode, Scope::Project) => project.join(".vscode/mcp.json"),
            (Client::Windsurf, Scope::User) => {
                places.home.join(".codeium/windsurf/mcp_config.json")
            }
            (Client::ClaudeDesktop, Scope::User) => places
                .config_dir
                .join("Claude")
                .join("claude_desktop_config.json"),
            (Client::Codex, Scope::User) => places
                .codex_home
                .clone()
                .unwrap_or_else(|| places.home.join(".codex"))
                .join("config.toml"),
            (Client::Codex, Scope::Project) => project.join(".codex/config.toml"),
            (client, scope) => {
                return Err(ConnectError::Refused(format!(
                    "{} has no {} scope mcpbox can connect; leave out --scope",
                    client.label(),
                    scope.label()
                )));
            }
        };
        Ok(Target {
            client,
            scope,
            path,
        })
    }
}

/// How the client reaches mcpbox.
#[derive(Debug, Clone)]
pub enum Via {
    /// The client starts `program serve --config config`.
    Stdio {
        /// The mcpbox program, as an absolute path.
        program: PathBuf,
        /// mcpbox's configuration, as an absolute path.
        config: PathBuf,
    },
    /// The client connects to a running `mcpbox serve --http`.
    Http {
        /// Its `/mcp` URL.
        url: String,
    },
}

/// What connecting will do (nothing is written until [`apply`]).
#[derive(Debug, Clone)]
pub struct Plan {
    /// The file.
    pub target: Target,
    /// Its text now (`None`: it does not exist and will be created).
    pub before: Option<String>,
    /// Its text after.
    pub after: String,
    /// The servers taken out of the file, as the import read them (their names
    /// in mcpbox's configuration may differ from their names in the file).
    pub replaced: Vec<Server>,
    /// The entries of the servers object left in the file because the import
    /// could not read them, by name.
    pub kept: Vec<String>,
    /// The names of the entries taken out, as the file names them.
    pub removed: Vec<String>,
    /// The entry added, as written in the file. (What is taken out is not
    /// shown as text: a client's file may hold credentials inline.)
    pub added: String,
}

fn backup_of(path: &Path) -> PathBuf {
    beside(path, "mcpbox-backup")
}

fn record_of(path: &Path) -> PathBuf {
    beside(path, "mcpbox-connected")
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// Where the original of `path` is kept while connected.
pub fn backup_path(path: &Path) -> PathBuf {
    backup_of(path)
}

/// Works out what connecting `target` to mcpbox through `via` changes, from
/// what `discovery` (of the same places) read there.
pub fn plan(
    places: &Places,
    target: Target,
    via: &Via,
    discovery: &Discovery,
) -> Result<Plan, ConnectError> {
    let path = &target.path;
    if let Via::Stdio { config, .. } = via
        && same_file(path, config)
    {
        return Err(ConnectError::Refused(format!(
            "{} is mcpbox's own configuration (--config): connecting it would make mcpbox \
             start itself; pass the configuration that holds the servers with --config",
            path.display()
        )));
    }
    if matches!(via, Via::Http { .. }) && target.client == Client::ClaudeDesktop {
        return Err(ConnectError::Refused(
            "Claude Desktop's configuration file runs local programs only: connect it \
             without --http (it then starts `mcpbox serve` itself)"
                .into(),
        ));
    }
    if backup_of(path).exists() || record_of(path).exists() {
        return Err(file_error(
            path,
            format!(
                "is connected already (its backup is {}): `mcpbox connect --undo {}` first",
                backup_of(path).display(),
                slug(target.client)
            ),
        ));
    }
    let before = match source::read_text(path, places.max_bytes) {
        Ok(text) => Some(text),
        Err(source::Unusable::Missing) => None,
        Err(source::Unusable::Skipped(reason)) => {
            return Err(file_error(path, format!("{reason}; nothing was written")));
        }
    };
    // The entries the import read from this very file and scope.
    let mut names = Vec::new();
    let mut replaced = Vec::new();
    for server in &discovery.servers {
        let here: Vec<&str> = server
            .found_in
            .iter()
            .filter(|l| l.client == target.client && l.scope == target.scope && l.path == *path)
            .map(|l| l.name.as_str())
            .collect();
        if !here.is_empty() {
            names.extend(here.iter().map(|n| n.to_string()));
            replaced.push(server.clone());
        }
    }
    if names.iter().any(|n| n == ENTRY_NAME) {
        return Err(file_error(
            path,
            format!(
                "already has a server named `{ENTRY_NAME}`: rename or remove it first, \
                 nothing was written"
            ),
        ));
    }
    let (after, kept, added) = match target.client {
        Client::Codex => edit_toml(path, before.as_deref().unwrap_or(""), &names, via)?,
        client => edit_json(path, client, before.as_deref(), &names, via)?,
    };
    Ok(Plan {
        target,
        before,
        after,
        replaced,
        kept,
        removed: names,
        added,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The client's name on the command line.
pub fn slug(client: Client) -> &'static str {
    match client {
        Client::ClaudeCode => "claude-code",
        Client::Cursor => "cursor",
        Client::VsCode => "vscode",
        Client::Windsurf => "windsurf",
        Client::ClaudeDesktop => "claude-desktop",
        Client::Codex => "codex",
    }
}

/// The mcpbox entry in `client`'s JSON dialect.
fn json_entry(client: Client, via: &Via) -> CstInputValue {
    let s = |v: &str| CstInputValue::String(v.to_string());
    let mut fields: Vec<(String, CstInputValue)> = Vec::new();
    match via {
        Via::Stdio { program, config } => {
            if client == Client::VsCode {
                fields.push(("type".into(), s("stdio")));
            }
            fields.push(("command".into(), s(&program.display().to_string())));
            fields.push((
                "args".into(),
                CstInputValue::Array(vec![
                    s("serve"),
                    s("--config"),
                    s(&config.display().to_string()),
                ]),
            ));
        }
        Via::Http { url } => {
            // Claude Code expands `${VAR}`; the editors write `${env:VAR}`.
            let token = match client {
                Client::ClaudeCode => format!("Bearer ${{{TOKEN_VARIABLE}}}"),
                _ => format!("Bearer ${{env:{TOKEN_VARIABLE}}}"),
            };
            match client {
                Client::ClaudeCode | Client::VsCode => {
                    fields.push(("type".into(), s("http")));
                    fields.push(("url".into(), s(url)));
                }
                Client::Windsurf => fields.push(("serverUrl".into(), s(url))),
                _ => fields.push(("url".into(), s(url))),
            }
            fields.push((
                "headers".into(),
                CstInputValue::Object(vec![("Authorization".into(), s(&token))]),
            ));
        }
    }
    CstInputValue::Object(fields)
}

fn edit_json(
    path: &Path,
    client: Client,
    before: Option<&str>,
    names: &[String],
    via: &Via,
) -> Result<(String, Vec<String>, String), ConnectError> {
    let keys: &[&str] = if client == Client::VsCode {
        &["servers", "mcpServers"]
    } else {
        &["mcpServers"]
    };
    let text = before.unwrap_or("");
    let root = if text.trim().is_empty() {
        CstRootNode::parse("{}", &ParseOptions::default()).expect("`{}` parses")
    } else {
        CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
            file_error(
                path,
                format!(
                    "is not valid JSON (line {}, column {}: {}); fix it first, nothing was written",
                    e.line_display(),
                    e.column_display(),
                    e.kind()
                ),
            )
        })?
    };
    let Some(top) = root.object_value() else {
        return Err(file_error(
            path,
            "does not hold a JSON object; fix it first, nothing was written",
        ));
    };
    let key = keys
        .iter()
        .find(|k| top.get(k).is_some())
        .copied()
        .unwrap_or(keys[0]);
    if let Some(prop) = top.get(key)
        && prop.value().and_then(|v| v.as_object()).is_none()
    {
        return Err(file_error(
            path,
            format!("has `{key}` that is not an object; fix it first, nothing was written"),
        ));
    }
    let entries = top.object_value_or_set(key);
    let mut kept = Vec::new();
    for prop in entries.properties() {
        let Some(name) = prop.decoded_name() else {
            continue;
        };
        if names.contains(&name) {
            prop.remove();
        } else {
            kept.push(name);
        }
    }
    if kept.iter().any(|n| n == ENTRY_NAME) {
        return Err(file_error(
            path,
            format!(
                "has an entry `{ENTRY_NAME}` mcpbox cannot read: rename or remove it first, \
                 nothing was written"
            ),
        ));
    }
    let added = entries
        .append(ENTRY_NAME, json_entry(client, via))
        .to_string();
    // The property's text starts at its name: indent it as its closing brace.
    let indent: String = added
        .lines()
        .last()
        .unwrap_or("")
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    let added = format!("{indent}{added}");
    let mut after = root.to_string();
    if !after.ends_with('\n') {
        after.push('\n');
    }
    Ok((after, kept, added))
}

fn edit_toml(
    path: &Path,
    before: &str,
    names: &[String],
    via: &Via,
) -> Result<(String, Vec<String>, String), ConnectError> {
    let mut doc: toml_edit::DocumentMut = before.parse().map_err(|e: toml_edit::TomlError| {
        file_error(
            path,
            format!(
                "is not valid TOML ({}); fix it first, nothing was written",
                e.message()
            ),
        )
    })?;
    if !doc.contains_key("mcp_servers") {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        doc.insert("mcp_servers", toml_edit::Item::Table(table));
    }
    let Some(servers) = doc["mcp_servers"].as_table_like_mut() else {
        return Err(file_error(
            path,
            "has `mcp_servers` that is not a table; fix it first, nothing was written",
        ));
    };
    for name in names {
        servers.remove(name);
    }
    let kept: Vec<String> = servers.iter().map(|(k, _)| k.to_string()).collect();
    if kept.iter().any(|n| n == ENTRY_NAME) {
        return Err(file_error(
            path,
            format!(
                "has an entry `mcp_servers.{ENTRY_NAME}` mcpbox cannot read: rename or remove \
                 it first, nothing was written"
            ),
        ));
    }
    let mut entry = toml_edit::Table::new();
    match via {
        Via::Stdio { program, config } => {
            entry["command"] = toml_edit::value(program.display().to_string());
            let mut args = toml_edit::Array::new();
            args.push("serve");
            args.push("--config");
            args.push(config.display().to_string());
            entry["args"] = toml_edit::value(args);
        }
        Via::Http { url } => {
            entry["url"] = toml_edit::value(url.as_str());
            entry["bearer_token_env_var"] = toml_edit::value(TOKEN_VARIABLE);
        }
    }
    let mut shown = toml_edit::DocumentMut::new();
    let mut parent = toml_edit::Table::new();
    parent.set_implicit(true);
    parent.insert(ENTRY_NAME, toml_edit::Item::Table(entry.clone()));
    shown.insert("mcp_servers", toml_edit::Item::Table(parent));
    servers.insert(ENTRY_NAME, toml_edit::Item::Table(entry));
    Ok((doc.to_string(), kept, shown.to_string()))
}

/// Writes the plan: the backup and the record first, then the file (atomically).
pub fn apply(plan: &Plan) -> Result<(), ConnectError> {
    let path = &plan.target.path;
    let failed =
        |what: &Path, e: std::io::Error| file_error(what, format!("cannot be written: {e}"));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| failed(parent, e))?;
    }
    let backup = backup_of(path);
    if plan.before.is_some() {
        // A copy keeps the original's permissions.
        std::fs::copy(path, &backup).map_err(|e| {
            let _ = std::fs::remove_file(&backup);
            failed(&backup, e)
        })?;
    }
    let record = record_of(path);
    // A failure leaves the file as it was, and no sign of being connected.
    let undo_marks = || {
        let _ = std::fs::remove_file(&backup);
        let _ = std::fs::remove_file(&record);
    };
    replace(&record, &plan.after, path).map_err(|e| {
        undo_marks();
        failed(&record, e)
    })?;
    replace(path, &plan.after, path).map_err(|e| {
        undo_marks();
        failed(path, e)
    })
}

/// Writes `text` beside `path` and renames it over `path`, with the
/// permissions of `like` when it exists.
fn replace(path: &Path, text: &str, like: &Path) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.mcpbox-connect-{}", std::process::id()));
    std::fs::write(&temp, text)?;
    if let Ok(meta) = std::fs::metadata(like) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// What [`undo`] did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Undone {
    /// The file.
    pub path: PathBuf,
    /// True when the original was put back; false when there was none (the file
    /// did not exist before connect) and the file was removed.
    pub restored: bool,
    /// Where the file as it was before undoing is kept, when it had changed
    /// since connect and `force` was given.
    pub saved: Option<PathBuf>,
    /// True when the file changed since connect outside its servers object:
    /// only the servers object was put back, the other changes kept.
    pub servers_only: bool,
}

/// Puts back what [`apply`] replaced in `path`. Refuses when the file changed
/// since (the client or its user edited it), unless `force`.
pub fn undo(path: &Path, force: bool, max_bytes: u64) -> Result<Undone, ConnectError> {
    let backup = backup_of(path);
    let record = record_of(path);
    let written = match source::read_text(&record, max_bytes) {
        Ok(text) => text,
        Err(source::Unusable::Missing) => {
            return Err(file_error(
                path,
                format!(
                    "is not connected: there is no {} (what `mcpbox connect` wrote)",
                    record.display()
                ),
            ));
        }
        Err(source::Unusable::Skipped(reason)) => {
            return Err(file_error(&record, reason));
        }
    };
    let now = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(file_error(path, format!("cannot be read: {e}"))),
    };
    let mut saved = None;
    if now.as_deref() != Some(written.as_bytes()) {
        // A client that rewrites its file (Claude Code keeps its state in
        // ~/.claude.json) leaves the servers object as connect wrote it: put
        // back the original servers object only, keeping the client's changes.
        let original = std::fs::read_to_string(&backup).ok();
        let merged = match (&now, &original) {
            (Some(now), Some(original)) => std::str::from_utf8(now)
                .ok()
                .and_then(|now| splice_servers(now, &written, original)),
            _ => None,
        };
        if let Some(merged) = merged {
            replace(path, &merged, path)
                .map_err(|e| file_error(path, format!("cannot be written: {e}")))?;
            let _ = std::fs::remove_file(&backup);
            let _ = std::fs::remove_file(&record);
            return Ok(Undone {
                path: path.to_path_buf(),
                restored: true,
                saved: None,
                servers_only: true,
            });
        }
        if !force {
            return Err(file_error(
                path,
                "changed since `mcpbox connect` wrote it (the client or you edited it): \
                 nothing was restored; --force restores the backup anyway and keeps the \
                 file as it is now beside it as .mcpbox-undone",
            ));
        }
        if now.is_some() {
            let undone = beside(path, "mcpbox-undone");
            std::fs::copy(path, &undone)
                .map_err(|e| file_error(&undone, format!("cannot be written: {e}")))?;
            saved = Some(undone);
        }
    }
    let restored = backup.exists();
    if restored {
        std::fs::rename(&backup, path)
            .map_err(|e| file_error(path, format!("cannot be restored from its backup: {e}")))?;
    } else if now.is_some() {
        std::fs::remove_file(path)
            .map_err(|e| file_error(path, format!("cannot be removed: {e}")))?;
    }
    let _ = std::fs::remove_file(&record);
    Ok(Undone {
        path: path.to_path_buf(),
        restored,
        saved,
        servers_only: false,
    })
}

/// `now` with its servers object replaced by `original`'s, when `now` is JSON
/// whose servers object is still the one connect `written`, and `original`
/// has one under the same key; `None` otherwise.
fn splice_servers(now: &str, written: &str, original: &str) -> Option<String> {
    let options = ParseOptions::default();
    let collect = jsonc_parser::CollectOptions::default();
    let parse = |text| {
        jsonc_parser::parse_to_ast(text, &collect, &options)
            .ok()?
            .value
    };
    let (now_ast, written_ast, original_ast) = (parse(now)?, parse(written)?, parse(original)?);
    let (now_top, written_top, original_top) = (
        now_ast.as_object()?,
        written_ast.as_object()?,
        original_ast.as_object()?,
    );
    let key = ["servers", "mcpServers"].into_iter().find(|k| {
        written_top
            .get_object(k)
            .is_some_and(|o| o.get(ENTRY_NAME).is_some())
    })?;
    let slice = |text: &str, top: &jsonc_parser::ast::Object<'_>| {
        let range = top.get_object(key)?.range;
        Some((
            range.start,
            range.end,
            text[range.start..range.end].to_string(),
        ))
    };
    let (start, end, now_servers) = slice(now, now_top)?;
    let (_, _, written_servers) = slice(written, written_top)?;
    let (_, _, original_servers) = slice(original, original_top)?;
    let value = |text: &str| -> Option<serde_json::Value> {
        Some(
            jsonc_parser::parse_to_ast(text, &collect, &options)
                .ok()?
                .value?
                .into(),
        )
    };
    if value(&now_servers)? != value(&written_servers)? {
        return None;
    }
    Some(format!(
        "{}{original_servers}{}",
        &now[..start],
        &now[end..]
    ))
}
