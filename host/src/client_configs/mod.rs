//! Other MCP clients' configuration files: finding the servers they already
//! configured, so that nobody has to copy JSON between five formats by hand
//! (`mcpbox import`). Named apart from `imports/` (the guest's WIT imports).
//!
//! Every client keeps its servers in its own file, in its own dialect of the same
//! idea. [`discover`] reads each place below (when it exists), turns every entry
//! into an mcpbox `.mcp.json` entry, merges the same server found in several
//! places, and reports what it read, skipped and changed. [`write()`](fn@write) adds the
//! result to a `.mcp.json` without touching what is there.
//!
//! | client | places (project ones relative to the project directory) | module |
//! |---|---|---|
//! | Claude Code | `.mcp.json`; `~/.claude.json`: `projects[<project>].mcpServers` (local scope) and `mcpServers` (user scope) | [`claude_code`] |
//! | Cursor | `.cursor/mcp.json`; `~/.cursor/mcp.json` | [`cursor`] |
//! | VS Code | `.vscode/mcp.json`; the user profile's `mcp.json` | [`vscode`] |
//! | Windsurf | `~/.codeium/windsurf/mcp_config.json` | [`windsurf`] |
//! | Claude Desktop | `~/.config/Claude/claude_desktop_config.json` (Linux), `~/Library/Application Support/Claude/…` (macOS), `%APPDATA%\Claude\…` (Windows) | [`claude_desktop`] |
//! | Codex | `.codex/config.toml`; `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`) | [`codex`] |
//!
//! Three rules shape the result:
//!
//! - **Identity** ([`identity`]): two entries are the same server when they run
//!   the same program with the same arguments (launchers such as `npx` and `uvx`
//!   included, their "don't ask" flags not), or reach the same URL.
//! - **Secrets** ([`secrets`]): a credential written inline (an `env` value or
//!   header whose name looks like one, a bearer or basic credential, a URL's
//!   password or `?key=`, wherever the URL is written, a webhook URL, a password
//!   after `-p`, a value shaped like a known token) becomes a `${VAR}` reference
//!   and a note naming the variable to set. The value itself is never printed,
//!   returned or written.
//! - **Never clobber** ([`write()`](fn@write)): an entry already in the target file is left as
//!   it is; one of the same name but another identity is reported, not replaced.
//!
//! Every source is read with a size cap; a file that cannot be read, does not
//! parse, or has a shape this version does not know is reported and skipped.
//!
//! Servers installed on the machine but configured nowhere (on PATH, by
//! `uv tool`, `pipx`, `npm -g`) are found by [`installed::probe`], from names
//! and package metadata alone (nothing is run), and [`installed::merge`] adds
//! them: to the configured server that runs the same program
//! ([`Server::installed`]), or as servers of their own.
//!
//! [`connect`] is the other direction: it rewrites one client's file so that
//! the client runs mcpbox in place of the servers read there, and undoes that.

pub mod claude_code;
pub mod claude_desktop;
pub mod codex;
pub mod connect;
pub mod cursor;
mod entry;
pub mod identity;
pub mod installed;
pub mod secrets;
mod source;
pub mod vscode;
pub mod windsurf;
mod write;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use secrets::Secret;
pub use write::{WriteOutcome, WriteReport, write};

/// The largest source file read by default (`~/.claude.json` keeps history too,
/// so it can be large); a larger one is reported and skipped.
pub const DEFAULT_MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// Why importing failed as a whole (a single source failing is only reported).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// No home directory to look in.
    #[error("cannot find your home directory: set HOME")]
    NoHome,
    /// The file to write could not be read, parsed or written.
    #[error("{path}: {message}")]
    Write {
        /// The target file.
        path: PathBuf,
        /// What went wrong and how to fix it.
        message: String,
    },
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home directory (`~`).
    pub home: PathBuf,
    /// The project directory: project-scoped files are looked for here, and it
    /// selects the Claude Code local scope in `~/.claude.json`.
    pub project: PathBuf,
    /// Codex's home (`$CODEX_HOME`); `~/.codex` when `None`.
    pub codex_home: Option<PathBuf>,
    /// Claude Desktop's and VS Code's per-user configuration directory: on Linux
    /// `$XDG_CONFIG_HOME` (default `~/.config`), on macOS
    /// `~/Library/Application Support`, on Windows `%APPDATA%`.
    pub config_dir: PathBuf,
    /// The largest file read; see [`DEFAULT_MAX_SOURCE_BYTES`].
    pub max_bytes: u64,
}

impl Places {
    /// The places of this user (from `HOME` and friends) for the project `project`.
    pub fn from_env(project: impl Into<PathBuf>) -> Result<Places, ImportError> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = var("HOME")
            .or_else(|| var("USERPROFILE"))
            .map(PathBuf::from)
            .ok_or(ImportError::NoHome)?;
        let config_dir = if cfg!(target_os = "macos") {
            home.join("Library/Application Support")
        } else if cfg!(windows) {
            var("APPDATA")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join("AppData/Roaming"))
        } else {
            var("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".config"))
        };
        Ok(Places {
            codex_home: var("CODEX_HOME").map(PathBuf::from),
            config_dir,
            home,
            project: project.into(),
            max_bytes: DEFAULT_MAX_SOURCE_BYTES,
        })
    }
}

/// The MCP clients whose configurations are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// Cursor.
    Cursor,
    /// Visual Studio Code.
    VsCode,
    /// Windsurf (Codeium).
    Windsurf,
    /// Anthropic's Claude Desktop app.
    ClaudeDesktop,
    /// OpenAI's Codex.
    Codex,
}

impl Client {
    /// The client's name, for people.
    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Codex => "Codex",
        }
    }

    /// A short lowercase name, used to tell apart two servers of the same name.
    pub fn slug(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Windsurf => "windsurf",
            Client::ClaudeDesktop => "desktop",
            Client::Codex => "codex",
        }
    }
}

/// Where in a client's configuration a file sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// A file in the project, usually checked in.
    Project,
    /// Claude Code's private per-project entries in `~/.claude.json`.
    Local,
    /// The user's own configuration, for every project.
    User,
}

impl Scope {
    /// The scope's name, for people.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::User => "user",
        }
    }
}

/// One place a server was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Whose configuration.
    pub client: Client,
    /// Which of its scopes.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// The server's name there.
    pub name: String,
}

/// How to reach a server, in mcpbox's terms. Values may hold `${VAR}` references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Transport {
    /// A local program speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment, in file order.
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: Option<String>,
    },
    /// A Streamable HTTP server.
    Http {
        /// Its address.
        url: String,
        /// Extra request headers, in file order.
        headers: Vec<(String, String)>,
    },
    /// A legacy HTTP+SSE server.
    Sse {
        /// Its address.
        url: String,
        /// Extra request headers, in file order.
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Sse { .. } => "sse",
        }
    }

    /// The command line or the URL, for people (references, never secrets).
    pub fn summary(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
            Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
        }
    }
}

/// One server, merged from every place it was found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Server {
    /// The name it gets in mcpbox's configuration.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// What makes two entries the same server; see [`identity`].
    pub identity: String,
    /// False when the first place it was found switches it off.
    pub enabled: bool,
    /// Connect + initialise + list tools, in milliseconds, when a client set it.
    pub startup_timeout_ms: Option<u64>,
    /// Per call, in milliseconds, when a client set it.
    pub tool_timeout_ms: Option<u64>,
    /// The server's own tool names to offer (allowlist), when a client set it.
    pub enabled_tools: Option<Vec<String>>,
    /// The server's own tool names to hide (denylist), when a client set it.
    pub disabled_tools: Option<Vec<String>>,
    /// Every place it was found, in the order the places are read; empty for
    /// a server found only installed ([`installed`]).
    pub found_in: Vec<Location>,
    /// The credentials that were inline and are now `${VAR}` references.
    pub secrets: Vec<Secret>,
    /// What was changed or left out on the way, and why.
    pub notes: Vec<String>,
    /// Where it is installed, when [`installed::merge`] found it so.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<installed::Installed>,
}

impl Server {
    /// The server's entry in mcpbox's `.mcp.json` format, fields in a fixed order.
    pub fn entry(&self) -> serde_json::Value {
        write::entry_json(self)
    }
}

/// What happened to one place.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceReport {
    /// Whose configuration.
    pub client: Client,
    /// Which of its scopes.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// What was found there.
    #[serde(flatten)]
    pub outcome: SourceOutcome,
}

/// What reading one place gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum SourceOutcome {
    /// The file does not exist.
    Missing,
    /// Read; this many server entries were found (and this many skipped).
    Read {
        /// Entries turned into servers.
        servers: usize,
        /// Entries left out, each with why.
        skipped: Vec<String>,
    },
    /// The file exists but was not used: unreadable, too large, not parseable,
    /// or a shape this version does not know.
    Skipped {
        /// Why, with the fix where there is one.
        reason: String,
    },
}

/// Everything [`discover`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Discovery {
    /// Every place looked at, in the order they are read.
    pub sources: Vec<SourceReport>,
    /// The servers, merged, in the order first found.
    pub servers: Vec<Server>,
}

impl Discovery {
    /// A `.mcp.json` holding every server found.
    pub fn config_text(&self) -> String {
        write::fresh_text(&self.servers)
    }
}

/// A server entry as read from one place, before merging.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub location: Location,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout_ms: Option<u64>,
    pub tool_timeout_ms: Option<u64>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    pub secrets: Vec<Secret>,
    pub notes: Vec<String>,
}

/// One client's reader: its places into the source reports and candidates.
type Reader = fn(&Places, &mut Vec<SourceReport>, &mut Vec<Candidate>);

/// Reads every place, converts and merges what it finds. Never fails: a place
/// that cannot be used is reported in [`Discovery::sources`].
pub fn discover(places: &Places) -> Discovery {
    let mut sources = Vec::new();
    let mut candidates = Vec::new();
    let readers: [Reader; 6] = [
        claude_code::read,
        cursor::read,
        vscode::read,
        windsurf::read,
        claude_desktop::read,
        codex::read,
    ];
    for read in readers {
        read(places, &mut sources, &mut candidates);
    }
    let servers = merge(candidates);
    Discovery { sources, servers }
}

/// Folds candidates of the same identity into one server, gives servers of the
/// same name but another identity distinct names, and gives secrets read from
/// different values distinct variables.
fn merge(candidates: Vec<Candidate>) -> Vec<Server> {
    let mut servers: Vec<Server> = Vec::new();
    for c in candidates {
        let identity = identity::of(&c.transport);
        if let Some(server) = servers.iter_mut().find(|s| s.identity == identity) {
            absorb(server, c);
            continue;
        }
        let wanted = c.location.name.clone();
        let mut name = wanted.clone();
        if servers.iter().any(|s| s.name == name) {
            let base = format!("{wanted}-{}", c.location.client.slug());
            name = base.clone();
            let mut n = 2;
            while servers.iter().any(|s| s.name == name) {
                name = format!("{base}-{n}");
                n += 1;
            }
        }
        let mut notes = c.notes;
        if name != wanted {
            notes.push(format!(
                "named `{name}`: `{wanted}` is already the name of another server found earlier"
            ));
        }
        servers.push(Server {
            name,
            transport: c.transport,
            identity,
            enabled: c.enabled,
            startup_timeout_ms: c.startup_timeout_ms,
            tool_timeout_ms: c.tool_timeout_ms,
            enabled_tools: c.enabled_tools,
            disabled_tools: c.disabled_tools,
            found_in: vec![c.location],
            secrets: c.secrets,
            notes,
            installed: Vec::new(),
        });
    }
    secrets::separate_variables(&mut servers);
    servers
}

/// Adds a second sighting of a server: its place is recorded, and where its
/// settings differ from the first sighting's, the first wins and a note says so.
fn absorb(server: &mut Server, c: Candidate) {
    let place = describe(&c.location);
    let mut differs = Vec::new();
    if settings_of(&server.transport) != settings_of(&c.transport) {
        differs.push(match c.transport {
            Transport::Stdio { .. } => "env or cwd",
            _ => "headers",
        });
    }
    if server.enabled != c.enabled {
        differs.push("enabled");
    }
    if (server.startup_timeout_ms, server.tool_timeout_ms)
        != (c.startup_timeout_ms, c.tool_timeout_ms)
    {
        differs.push("timeouts");
    }
    if (&server.enabled_tools, &server.disabled_tools) != (&c.enabled_tools, &c.disabled_tools) {
        differs.push("tool lists");
    }
    if !differs.is_empty() {
        let first = describe(&server.found_in[0]);
        server.notes.push(format!(
            "{place} has different {}; the entry from {first} is used",
            differs.join(", ")
        ));
    }
    if c.location.name != server.name && !server.found_in.iter().any(|l| l.name == c.location.name)
    {
        server
            .notes
            .push(format!("also called `{}` in {place}", c.location.name));
    }
    server.found_in.push(c.location);
}

/// The parts of a transport that are not its identity.
fn settings_of(t: &Transport) -> (Vec<(String, String)>, Option<String>) {
    match t {
        Transport::Stdio { env, cwd, .. } => (env.clone(), cwd.clone()),
        Transport::Http { headers, .. } | Transport::Sse { headers, .. } => (headers.clone(), None),
    }
}

/// "Cursor (user) ~/.cursor/mcp.json", for notes.
pub(crate) fn describe(l: &Location) -> String {
    format!(
        "{} ({}) {}",
        l.client.label(),
        l.scope.label(),
        l.path.display()
    )
}

/// `path` shown with `~` for the home directory, for people.
pub fn tilde(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !home.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// A JSON source: where its servers are and how its values are written.
pub(crate) struct JsonSource<'a> {
    pub client: Client,
    pub scope: Scope,
    pub path: PathBuf,
    /// Where the servers object is, tried in order (`["mcpServers"]`, or
    /// `["projects", "/path", "mcpServers"]`).
    pub servers_at: &'a [&'a [&'a str]],
    pub interpolation: entry::Interpolation,
}

/// Reads one JSON source into `sources` and `candidates`.
pub(crate) fn read_json_source(
    places: &Places,
    src: JsonSource<'_>,
    sources: &mut Vec<SourceReport>,
    candidates: &mut Vec<Candidate>,
) {
    let outcome = (|| {
        let text = match source::read_text(&src.path, places.max_bytes) {
            Ok(text) => text,
            Err(source::Unusable::Missing) => return SourceOutcome::Missing,
            Err(source::Unusable::Skipped(reason)) => return SourceOutcome::Skipped { reason },
        };
        let document = match source::Document::parse(&text) {
            Ok(d) => d,
            Err(reason) => return SourceOutcome::Skipped { reason },
        };
        let mut entries = None;
        for path in src.servers_at {
            match document.at(path) {
                source::Found::Absent => continue,
                source::Found::Object(members) => {
                    entries = Some(members);
                    break;
                }
                source::Found::Other(kind) => {
                    return SourceOutcome::Skipped {
                        reason: format!(
                            "has `{}` as {kind}, not an object of servers: a format this \
                             version of mcpbox does not know",
                            path.join(".")
                        ),
                    };
                }
            }
        }
        let Some(entries) = entries else {
            return SourceOutcome::Read {
                servers: 0,
                skipped: Vec::new(),
            };
        };
        // VS Code's `inputs`: the prompts `${input:id}` stands for.
        let inputs: Vec<(String, String)> = match document.at(&[]) {
            source::Found::Object(top) => match source::get(&top, "inputs") {
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .filter_map(|i| {
                        let id = i.get("id")?.as_str()?.to_string();
                        let description = i
                            .get("description")
                            .and_then(|d| d.as_str())
                            .unwrap_or("")
                            .to_string();
                        Some((id, description))
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let location = Location {
            client: src.client,
            scope: src.scope,
            path: src.path.clone(),
            name: String::new(),
        };
        let dialect = entry::Dialect {
            interpolation: src.interpolation,
            workspace: &places.project,
            in_workspace: src.scope != Scope::User,
            inputs: &inputs,
        };
        let (found, skipped) = entry::read_all(&entries, &location, dialect);
        let servers = found.len();
        candidates.extend(found);
        SourceOutcome::Read { servers, skipped }
    })();
    sources.push(SourceReport {
        client: src.client,
        scope: src.scope,
        path: src.path,
        outcome,
    });
}
