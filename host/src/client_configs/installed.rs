//! Finding the MCP servers installed on this machine that no client is
//! configured with (`mcpbox import --installed`).
//!
//! A server can be installed and wired up nowhere: a binary dropped on PATH, a
//! `uv tool install`, a `pipx install`, an `npm install -g`. [`probe`] looks in
//! these places and [`merge`] adds what it found to the servers the clients
//! configure:
//!
//! | installed by | what is read | module |
//! |---|---|---|
//! | anything on PATH | each directory's listing: executables named like MCP servers | `path` |
//! | `uv tool install` | `$UV_TOOL_DIR` (default `$XDG_DATA_HOME/uv/tools`, `~/.local/share/uv/tools`; `%APPDATA%\uv\data\tools` on Windows): each tool's `uv-receipt.toml` and its package's `*.dist-info/METADATA` | `uv` |
//! | `pipx install` | `$PIPX_HOME/venvs` (default `~/.local/share/pipx`, or the older `~/.local/pipx` where it exists) and the global `$PIPX_GLOBAL_HOME` (`/opt/pipx`): each `pipx_metadata.json` and its package's `METADATA` | `pipx` |
//! | `npm install -g` | `lib/node_modules` under npm's global prefix: `$npm_config_prefix`, else `prefix` in `~/.npmrc`, else in the node install's `etc/npmrc` or npm's own `npmrc`, else the install of the `node` on PATH; each package's `package.json` | `npm` |
//!
//! **Nothing runs.** A probe that ran every matching program with `--help` would
//! run code nobody chose, so the decision is made from names and package
//! metadata alone: directory listings, file metadata and links, and files read
//! with a size cap. Not even `npm`, `uv` or `pipx` is run: where they keep their
//! installs is worked out the way they work it out, from the environment and
//! their own files. Starting a found server is the health check's
//! (`import --check`), and the CLI does it only for a server the user names.
//!
//! **Why a program is thought to be an MCP server** ([`Installed::why`]), and how
//! sure ([`Certainty`]):
//!
//! - its package's metadata says it is one: the MCP registry's name (`mcpName` in
//!   `package.json`, `mcp-name:` in a Python package's description), a keyword
//!   `mcp-server`, a description or summary that says "MCP server" or "Model
//!   Context Protocol server";
//! - its package uses MCP: a keyword `mcp`, a dependency on an MCP SDK
//!   (`@modelcontextprotocol/sdk`, `mcp`, `fastmcp`, …). On its own this does not
//!   list a program (MCP clients depend on the SDKs too), but it makes one that is
//!   named like a server certain;
//! - its name follows a convention MCP servers use: `mcp-server-*`,
//!   `*-mcp-server`, `*-mcp`, `mcp-*` (or with `_`). A program found by its name
//!   alone is listed as [`Certainty::Name`]: a look-alike is possible.
//!
//! **Identity.** An installed program merges with a configured server (see
//! [`super::identity`]) when the configured entry runs it: by its path (the link
//! or what the link points to), by its bare name when it is the first of that
//! name on PATH, or through a launcher of its package: `uvx pkg`,
//! `uv tool run pkg`, `pipx run pkg` (with `--from`/`--spec` for a program named
//! otherwise) for a Python package, `npx pkg` and `npx -p pkg bin` for an npm
//! package, `node <its script>`; with the installed version (`pkg@1.2.0`) too.
//! The same program found twice (on PATH and by its package manager) is one.
//! What merges with nothing becomes a server of its own, named after its program
//! without the convention's affixes (`mcp-server-time` is `time`), with
//! [`Server::found_in`] empty.

mod npm;
mod path;
mod pipx;
mod python;
mod uv;

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Server, SourceOutcome, Transport, identity};

/// The largest metadata file (a receipt, `METADATA`, `package.json`) read by
/// default; a larger one is reported and skipped.
pub const DEFAULT_MAX_METADATA_BYTES: u64 = 4 * 1024 * 1024;

/// The most entries read from one directory (a PATH directory, the npm global
/// modules, a tool directory); the rest are reported as not read.
pub const MAX_DIRECTORY_ENTRIES: usize = 100_000;

/// Where to look; [`InstalledPlaces::from_env`] fills it in as the package
/// managers would.
#[derive(Debug, Clone)]
pub struct InstalledPlaces {
    /// The user's home directory (`~`).
    pub home: PathBuf,
    /// PATH's directories, in order.
    pub path: Vec<PathBuf>,
    /// The extensions that make a file a program (Windows' `PATHEXT`, lower
    /// case with the dot); empty elsewhere, where the execute bit decides.
    pub path_ext: Vec<String>,
    /// uv's tool directory (`uv tool dir`).
    pub uv_tool_dir: PathBuf,
    /// pipx's homes (their `venvs/` hold the installs), each with the
    /// directory it exposes programs in.
    pub pipx: Vec<PipxHome>,
    /// npm's global prefix when the environment sets it (`npm_config_prefix`).
    pub npm_prefix: Option<PathBuf>,
    /// npm's per-user configuration file (`npm_config_userconfig`, default
    /// `~/.npmrc`).
    pub npm_userconfig: PathBuf,
    /// The largest metadata file read; see [`DEFAULT_MAX_METADATA_BYTES`].
    pub max_bytes: u64,
}

/// One pipx home.
#[derive(Debug, Clone)]
pub struct PipxHome {
    /// `$PIPX_HOME` (its installs are in `venvs/`).
    pub home: PathBuf,
    /// `$PIPX_BIN_DIR`, where it links the programs it exposes.
    pub bin_dir: PathBuf,
}

impl InstalledPlaces {
    /// The places of this user, from `PATH` and the package managers'
    /// variables, with `home` as `~`.
    pub fn from_env(home: impl Into<PathBuf>) -> InstalledPlaces {
        let home = home.into();
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let path = var("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let path_ext = if cfg!(windows) {
            var("PATHEXT")
                .and_then(|v| v.into_string().ok())
                .unwrap_or_else(|| ".COM;.EXE;.BAT;.CMD".into())
                .split(';')
                .filter(|e| !e.is_empty())
                .map(|e| e.to_ascii_lowercase())
                .collect()
        } else {
            Vec::new()
        };
        let data_home = dir("XDG_DATA_HOME").unwrap_or_else(|| home.join(".local/share"));
        let uv_tool_dir = dir("UV_TOOL_DIR").unwrap_or_else(|| {
            if cfg!(windows) {
                dir("APPDATA")
                    .unwrap_or_else(|| home.join("AppData/Roaming"))
                    .join("uv/data/tools")
            } else {
                data_home.join("uv/tools")
            }
        });
        // pipx: $PIPX_HOME; else an older home where one exists; else the
        // platform's data directory.
        let pipx_home = dir("PIPX_HOME").unwrap_or_else(|| {
            let mut legacy = vec![home.join(".local/pipx")];
            if cfg!(windows) {
                legacy.push(home.join("pipx"));
            }
            legacy.into_iter().find(|p| p.exists()).unwrap_or_else(|| {
                if cfg!(windows) {
                    dir("LOCALAPPDATA")
                        .unwrap_or_else(|| home.join("AppData/Local"))
                        .join("pipx/pipx")
                } else if cfg!(target_os = "macos") {
                    home.join("Library/Application Support/pipx")
                } else {
                    data_home.join("pipx")
                }
            })
        });
        let mut pipx = vec![PipxHome {
            home: pipx_home,
            bin_dir: dir("PIPX_BIN_DIR").unwrap_or_else(|| home.join(".local/bin")),
        }];
        if !cfg!(windows) {
            pipx.push(PipxHome {
                home: dir("PIPX_GLOBAL_HOME").unwrap_or_else(|| PathBuf::from("/opt/pipx")),
                bin_dir: dir("PIPX_GLOBAL_BIN_DIR")
                    .unwrap_or_else(|| PathBuf::from("/usr/local/bin")),
            });
        }
        // npm reads its settings from the environment in any case.
        let npm_var = |name: &str| var(name).or_else(|| var(&name.to_ascii_uppercase()));
        InstalledPlaces {
            npm_prefix: npm_var("npm_config_prefix").map(PathBuf::from),
            npm_userconfig: npm_var("npm_config_userconfig")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".npmrc")),
            home,
            path,
            path_ext,
            uv_tool_dir,
            pipx,
            max_bytes: DEFAULT_MAX_METADATA_BYTES,
        }
    }
}

/// Who found an installed program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finder {
    /// A directory of PATH.
    Path,
    /// uv's tool directory.
    UvTool,
    /// A pipx home.
    Pipx,
    /// npm's global modules.
    Npm,
}

impl Finder {
    /// The finder's name, for people.
    pub fn label(self) -> &'static str {
        match self {
            Finder::Path => "PATH",
            Finder::UvTool => "uv tool",
            Finder::Pipx => "pipx",
            Finder::Npm => "npm -g",
        }
    }

    /// A short lowercase name, used to tell apart two servers of the same name.
    pub fn slug(self) -> &'static str {
        match self {
            Finder::Path => "path",
            Finder::UvTool => "uv",
            Finder::Pipx => "pipx",
            Finder::Npm => "npm",
        }
    }
}

/// How sure the probe is that a program is an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Certainty {
    /// Only its name says so: a look-alike is possible.
    Name,
    /// Its package's metadata says it is one, or that it uses MCP.
    Metadata,
}

impl Certainty {
    /// The certainty, for people.
    pub fn label(self) -> &'static str {
        match self {
            Certainty::Name => "name only",
            Certainty::Metadata => "package metadata",
        }
    }
}

/// The package registry a package comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Registry {
    /// The Python Package Index.
    Pypi,
    /// The npm registry.
    Npm,
}

/// The package an installed program belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Package {
    /// Where packages of its kind come from.
    pub registry: Registry,
    /// Its name there.
    pub name: String,
    /// The installed version, when its metadata says.
    pub version: Option<String>,
}

/// One place a program was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sighting {
    /// Who found it.
    pub by: Finder,
    /// The file that says so (a receipt, `pipx_metadata.json`, `package.json`)
    /// or, on PATH, the directory.
    pub path: PathBuf,
}

/// A program installed on this machine that is thought to be an MCP server.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The program as it is started: its path (a link is not resolved, so an
    /// upgrade that replaces what the link points to keeps it).
    pub program: String,
    /// Its name (on PATH, or in its package's list of programs).
    pub command_name: String,
    /// The package it belongs to, when a package manager installed it.
    pub package: Option<Package>,
    /// Every place it was found.
    pub found_by: Vec<Sighting>,
    /// How sure.
    pub certainty: Certainty,
    /// Why it is thought to be an MCP server, for people.
    pub why: Vec<String>,
    /// The identities of the configured entries that would run it.
    #[serde(skip)]
    identities: Vec<String>,
    /// Where its links lead, to tell the same program found twice.
    #[serde(skip)]
    canonical: Option<PathBuf>,
}

impl Installed {
    /// A program found at `program` (a UTF-8 path) by `by` in `at`.
    fn new(program: String, command_name: &str, by: Finder, at: PathBuf) -> Installed {
        let canonical = std::fs::canonicalize(&program).ok();
        let mut identities = vec![stdio(&program, &[])];
        if let Some(c) = canonical.as_ref().and_then(|c| c.to_str())
            && c != program
        {
            identities.push(stdio(c, &[]));
        }
        Installed {
            program,
            command_name: command_name.to_string(),
            package: None,
            found_by: vec![Sighting { by, path: at }],
            certainty: Certainty::Name,
            why: Vec::new(),
            identities,
            canonical,
        }
    }

    /// The name of its server when no configured one runs it: its program's name
    /// without the convention's affixes.
    fn server_name(&self) -> String {
        let name = self.command_name.as_str();
        let lower = name.to_ascii_lowercase().replace('_', "-");
        let stripped = ["mcp-server-", "mcp-"]
            .iter()
            .find_map(|p| lower.strip_prefix(p).map(|_| &name[p.len()..]))
            .or_else(|| {
                ["-mcp-server", "-mcp"]
                    .iter()
                    .find_map(|s| lower.strip_suffix(s).map(|_| &name[..name.len() - s.len()]))
            });
        match stripped {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => name.to_string(),
        }
    }

    /// Adds a second sighting of the same program.
    fn absorb(&mut self, other: Installed) {
        for s in other.found_by {
            if !self.found_by.contains(&s) {
                self.found_by.push(s);
            }
        }
        for w in other.why {
            if !self.why.contains(&w) {
                self.why.push(w);
            }
        }
        for i in other.identities {
            if !self.identities.contains(&i) {
                self.identities.push(i);
            }
        }
        self.certainty = self.certainty.max(other.certainty);
        if self.package.is_none() {
            self.package = other.package;
        }
    }

    /// Whether `other` is the same program.
    fn same_program(&self, other: &Installed) -> bool {
        self.program == other.program
            || (self.canonical.is_some() && self.canonical == other.canonical)
    }
}

/// The identity of `command args` run with no env or cwd.
fn stdio(command: &str, args: &[&str]) -> String {
    identity::of(&Transport::Stdio {
        command: command.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        cwd: None,
    })
}

/// What one place gave the probe.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Looked {
    /// Who looked.
    pub by: Finder,
    /// The directory.
    pub path: PathBuf,
    /// How the directory was chosen, when not by default (npm: "the prefix in
    /// ~/.npmrc"), for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
    /// What was found there (`servers` counts the programs listed).
    #[serde(flatten)]
    pub outcome: SourceOutcome,
}

/// Everything [`probe`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// Every place looked at, in order.
    pub looked: Vec<Looked>,
    /// The programs, the same program found twice already merged.
    pub found: Vec<Installed>,
}

/// Looks for installed MCP servers in every place of `places`. Reads only;
/// never runs anything; never fails: a place that cannot be used is reported in
/// [`Probe::looked`].
pub fn probe(places: &InstalledPlaces) -> Probe {
    let mut looked = Vec::new();
    let mut found = Vec::new();
    // The package managers first: what they say about a program is richer than
    // its name on PATH, which then joins it.
    uv::read(places, &mut looked, &mut found);
    pipx::read(places, &mut looked, &mut found);
    npm::read(places, &mut looked, &mut found);
    path::read(places, &mut looked, &mut found);
    let mut merged: Vec<Installed> = Vec::new();
    for it in found {
        match merged.iter_mut().find(|m| m.same_program(&it)) {
            Some(m) => m.absorb(it),
            None => merged.push(it),
        }
    }
    path::add_bare_names(places, &mut merged);
    Probe {
        looked,
        found: merged,
    }
}

/// Adds what [`probe`] found to `servers`: to each configured server that runs
/// the same program ([`Server::installed`]), or as a server of its own.
pub fn merge(servers: &mut Vec<Server>, found: Vec<Installed>) {
    for it in found {
        let mut joined = false;
        for s in servers.iter_mut() {
            if !s.found_in.is_empty() && it.identities.contains(&s.identity) {
                s.installed.push(it.clone());
                joined = true;
            }
        }
        if joined {
            continue;
        }
        let wanted = it.server_name();
        let mut name = wanted.clone();
        let mut notes = Vec::new();
        if servers.iter().any(|s| s.name == name) {
            let base = format!("{wanted}-{}", it.found_by[0].by.slug());
            name = base.clone();
            let mut n = 2;
            while servers.iter().any(|s| s.name == name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            notes.push(format!(
                "named `{name}`: `{wanted}` is already the name of another server found earlier"
            ));
        }
        let transport = Transport::Stdio {
            command: it.program.clone(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        };
        servers.push(Server {
            name,
            identity: identity::of(&transport),
            transport,
            enabled: true,
            startup_timeout_ms: None,
            tool_timeout_ms: None,
            enabled_tools: None,
            disabled_tools: None,
            found_in: Vec::new(),
            secrets: Vec::new(),
            notes,
            installed: vec![it],
        });
    }
}

/// The convention a program's name follows, when it is named like an MCP
/// server (`mcp-server-*`, …); the name without a Windows extension.
pub fn name_convention(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let dashed = lower.replace('_', "-");
    let underscored = dashed != lower;
    // The SDKs' own command-line tools, and mcpbox itself.
    if matches!(dashed.as_str(), "mcp" | "mcpbox") {
        return None;
    }
    let (server_prefix, server_suffix, suffix, prefix) = if underscored {
        ("mcp_server_*", "*_mcp_server", "*_mcp", "mcp_*")
    } else {
        ("mcp-server-*", "*-mcp-server", "*-mcp", "mcp-*")
    };
    let rest = |s: &str| !s.is_empty();
    if dashed.strip_prefix("mcp-server-").is_some_and(rest) {
        Some(server_prefix)
    } else if dashed.strip_suffix("-mcp-server").is_some_and(rest) {
        Some(server_suffix)
    } else if dashed.strip_suffix("-mcp").is_some_and(rest) {
        Some(suffix)
    } else if dashed.strip_prefix("mcp-").is_some_and(rest) {
        Some(prefix)
    } else {
        None
    }
}

/// What a package's metadata says about MCP.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Evidence {
    /// Reasons that say it is an MCP server.
    server: Vec<String>,
    /// Reasons that say it uses MCP (a client could too).
    uses: Vec<String>,
}

impl Evidence {
    /// Reads a keyword list.
    fn keywords<'a>(&mut self, keywords: impl IntoIterator<Item = &'a str>) {
        for k in keywords {
            let k = k.trim();
            let norm = k.to_ascii_lowercase().replace(['_', ' '], "-");
            match norm.as_str() {
                "mcp-server" | "mcp-servers" | "model-context-protocol-server" => {
                    self.server.push(format!("keyword `{k}`"))
                }
                "mcp" | "model-context-protocol" | "modelcontextprotocol" => {
                    self.uses.push(format!("keyword `{k}`"))
                }
                _ => {}
            }
        }
    }

    /// Reads a description or summary.
    fn description(&mut self, what: &str, text: &str) {
        let lower = text.to_ascii_lowercase();
        if lower.contains("mcp server")
            || lower.contains("mcp-server")
            || lower.contains("model context protocol server")
            || lower.contains("model context protocol (mcp) server")
        {
            self.server.push(format!("{what} says MCP server"));
        }
    }

    /// Reads the MCP registry's name for the package.
    fn registry_name(&mut self, name: &str) {
        self.server.push(format!("MCP registry name `{name}`"));
    }

    /// Reads a dependency.
    fn dependency(&mut self, name: &str, sdks: &[&str]) {
        if sdks.contains(&name) {
            self.uses.push(format!("depends on the MCP SDK `{name}`"));
        }
    }
}

/// MCP tooling that is not a server (SDKs, inspectors, frameworks' command
/// lines): its metadata says MCP, its programs are not servers to run.
const NOT_SERVERS: &[(Registry, &str)] = &[
    (Registry::Pypi, "mcp"),
    (Registry::Pypi, "fastmcp"),
    (Registry::Npm, "@modelcontextprotocol/sdk"),
    (Registry::Npm, "@modelcontextprotocol/inspector"),
    (Registry::Npm, "fastmcp"),
];

/// Decides which of a package's programs are listed, and turns them into
/// [`Installed`]s. `programs` are (name, path to start it) in the package's
/// order.
fn judge_package(
    package: Package,
    evidence: &Evidence,
    programs: Vec<(String, String)>,
    by: Finder,
    at: &Path,
) -> Vec<Installed> {
    if NOT_SERVERS.contains(&(package.registry, package.name.as_str())) {
        return Vec::new();
    }
    let named: Vec<bool> = programs
        .iter()
        .map(|(name, _)| name_convention(name).is_some())
        .collect();
    // A package said to be a server offers its programs named like one, or all
    // of them when none is; otherwise only a program named like one is listed.
    let any_named = named.iter().any(|n| *n);
    let only_program = programs.len() == 1;
    let mut out = Vec::new();
    for ((name, program), named) in programs.into_iter().zip(named) {
        if !(named || (!any_named && !evidence.server.is_empty())) {
            continue;
        }
        let mut it = Installed::new(program, &name, by, at.to_path_buf());
        it.why.extend(evidence.server.iter().cloned());
        it.why.extend(evidence.uses.iter().cloned());
        if let Some(convention) = name_convention(&name) {
            it.why.push(format!("named `{convention}`"));
        }
        if !evidence.server.is_empty() || !evidence.uses.is_empty() {
            it.certainty = Certainty::Metadata;
        }
        for alias in launcher_aliases(&package, &name, only_program) {
            if !it.identities.contains(&alias) {
                it.identities.push(alias);
            }
        }
        it.package = Some(package.clone());
        out.push(it);
    }
    out
}

/// The identities of the launcher command lines that run program `program` of
/// `package` (see the module docs).
fn launcher_aliases(package: &Package, program: &str, only_program: bool) -> Vec<String> {
    let name = package.name.as_str();
    let versioned = package.version.as_ref().map(|v| format!("{name}@{v}"));
    let mut out = Vec::new();
    match package.registry {
        Registry::Pypi => {
            if python::normalize(program) == python::normalize(name) {
                for pkg in std::iter::once(name).chain(versioned.as_deref()) {
                    out.push(stdio("uvx", &[pkg]));
                    out.push(stdio("uv", &["tool", "run", pkg]));
                }
                out.push(stdio("pipx", &["run", name]));
            }
            out.push(stdio("uvx", &["--from", name, program]));
            out.push(stdio("uv", &["tool", "run", "--from", name, program]));
            out.push(stdio("pipx", &["run", "--spec", name, program]));
        }
        Registry::Npm => {
            // `npx pkg` runs the package's only program, or the one named after it.
            let unscoped = name.rsplit('/').next().unwrap_or(name);
            if only_program || program == unscoped {
                for pkg in std::iter::once(name).chain(versioned.as_deref()) {
                    out.push(stdio("npx", &[pkg]));
                }
            }
            for pkg in std::iter::once(name).chain(versioned.as_deref()) {
                out.push(stdio("npx", &["-p", pkg, program]));
                out.push(stdio("npx", &["--package", pkg, program]));
                out.push(stdio("npx", &[&format!("--package={pkg}"), program]));
            }
        }
    }
    out
}

/// Lists a directory: at most [`MAX_DIRECTORY_ENTRIES`] entries, sorted by name
/// so that what is found comes in the same order on every run.
fn list_dir(dir: &Path) -> Result<Listing, SourceOutcome> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SourceOutcome::Missing),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(SourceOutcome::Skipped {
                reason: "is not a directory".into(),
            });
        }
        Err(e) => {
            return Err(SourceOutcome::Skipped {
                reason: format!("cannot be read: {e}"),
            });
        }
    };
    let mut listing = Listing::default();
    for (n, entry) in entries.enumerate() {
        if n == MAX_DIRECTORY_ENTRIES {
            listing.skipped.push(format!(
                "more than {MAX_DIRECTORY_ENTRIES} entries: the rest were not read"
            ));
            break;
        }
        let Ok(entry) = entry else { continue };
        match entry.file_name().into_string() {
            Ok(name) => listing.names.push(name),
            Err(name) => listing.not_utf8.push(name),
        }
    }
    listing.names.sort();
    Ok(listing)
}

/// A directory's entries.
#[derive(Default)]
struct Listing {
    names: Vec<String>,
    not_utf8: Vec<std::ffi::OsString>,
    skipped: Vec<String>,
}

/// A file's text, or why it was not read (for a `skipped` list).
fn read_file(path: &Path, max_bytes: u64) -> Result<Option<String>, String> {
    match super::source::read_text(path, max_bytes) {
        Ok(text) => Ok(Some(text)),
        Err(super::source::Unusable::Missing) => Ok(None),
        Err(super::source::Unusable::Skipped(reason)) => Err(reason.replace(
            "the most mcpbox reads from a configuration file",
            "the most mcpbox reads from a package's metadata",
        )),
    }
}

/// `path` as text, when it is UTF-8 (a command in a configuration must be).
fn utf8(path: &Path) -> Option<String> {
    path.to_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_like_mcp_servers() {
        for (name, convention) in [
            ("mcp-server-time", "mcp-server-*"),
            ("mcp_server_git", "mcp_server_*"),
            ("github-mcp-server", "*-mcp-server"),
            ("context7-mcp", "*-mcp"),
            ("code_analysis_mcp", "*_mcp"),
            ("mcp-notes", "mcp-*"),
            ("MCP-Server-Fetch", "mcp-server-*"),
            ("mcp-server", "mcp-*"),
        ] {
            assert_eq!(name_convention(name), Some(convention), "{name}");
        }
        for name in [
            "mcp",
            "mcpbox",
            "mcp-",
            "-mcp",
            "smcp",
            "mcpd",
            "notmcp",
            "server-memory",
            "cowsay",
        ] {
            assert_eq!(name_convention(name), None, "{name}");
        }
    }

    #[test]
    fn server_names_drop_the_conventions_affixes() {
        let named = |n: &str| Installed::new(n.into(), n, Finder::Path, PathBuf::new());
        for (program, name) in [
            ("mcp-server-time", "time"),
            ("mcp_server_git", "git"),
            ("github-mcp-server", "github"),
            ("context7-mcp", "context7"),
            ("mcp-notes", "notes"),
            ("Code-Analysis-MCP", "Code-Analysis"),
            ("serve", "serve"),
        ] {
            assert_eq!(named(program).server_name(), name, "{program}");
        }
    }

    #[test]
    fn launchers_of_the_same_package_are_the_same_server() {
        let pypi = Package {
            registry: Registry::Pypi,
            name: "mcp-server-time".into(),
            version: Some("2026.10.19".into()),
        };
        let aliases = launcher_aliases(&pypi, "mcp-server-time", true);
        for (command, args) in [
            ("uvx", &["mcp-server-time"][..]),
            ("/usr/bin/uvx", &["-q", "mcp-server-time@latest"]),
            ("uvx", &["mcp-server-time@2026.10.19"]),
            ("uv", &["tool", "run", "mcp-server-time"]),
            ("pipx", &["run", "-q", "mcp-server-time"]),
            ("uvx", &["--from", "mcp-server-time", "mcp-server-time"]),
        ] {
            assert!(
                aliases.contains(&stdio(command, args)),
                "{command} {args:?}"
            );
        }
        for (command, args) in [
            ("uvx", &["mcp-server-time@2026.1.1"][..]),
            ("npx", &["mcp-server-time"]),
            ("uvx", &["mcp-server-fetch"]),
        ] {
            assert!(
                !aliases.contains(&stdio(command, args)),
                "{command} {args:?}"
            );
        }

        let npm = Package {
            registry: Registry::Npm,
            name: "@modelcontextprotocol/server-memory".into(),
            version: Some("2026.8.31".into()),
        };
        let aliases = launcher_aliases(&npm, "mcp-server-memory", true);
        for args in [
            &["-y", "@modelcontextprotocol/server-memory"][..],
            &["@modelcontextprotocol/server-memory@latest"],
            &["--yes", "@modelcontextprotocol/server-memory@2026.8.31"],
            &[
                "-y",
                "-p",
                "@modelcontextprotocol/server-memory",
                "mcp-server-memory",
            ],
        ] {
            assert!(aliases.contains(&stdio("npx", args)), "{args:?}");
        }
        // With several programs, `npx pkg` runs the one named after the package.
        let aliases = launcher_aliases(&npm, "mcp-server-memory", false);
        assert!(!aliases.contains(&stdio("npx", &["@modelcontextprotocol/server-memory"])));
    }

    fn evidence(server: &[&str], uses: &[&str]) -> Evidence {
        Evidence {
            server: server.iter().map(|s| s.to_string()).collect(),
            uses: uses.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn judged(evidence: &Evidence, programs: &[&str]) -> Vec<(String, Certainty)> {
        let package = Package {
            registry: Registry::Npm,
            name: "pkg".into(),
            version: None,
        };
        let programs = programs
            .iter()
            .map(|p| (p.to_string(), format!("/bin/{p}")))
            .collect();
        judge_package(package, evidence, programs, Finder::Npm, Path::new("/x"))
            .into_iter()
            .map(|i| (i.command_name, i.certainty))
            .collect()
    }

    #[test]
    fn which_programs_of_a_package_are_listed() {
        let server = evidence(&["says so"], &[]);
        let uses = evidence(&[], &["depends on the SDK"]);
        let nothing = Evidence::default();
        // Said to be a server: its programs named like one, else all of them.
        assert_eq!(
            judged(&server, &["pkg-mcp", "pkg-admin"]),
            [("pkg-mcp".to_string(), Certainty::Metadata)]
        );
        assert_eq!(
            judged(&server, &["serve"]),
            [("serve".to_string(), Certainty::Metadata)]
        );
        // Uses MCP (a client could): only a program named like a server, and
        // then the metadata makes it certain.
        assert!(judged(&uses, &["gemini"]).is_empty());
        assert_eq!(
            judged(&uses, &["mcp-server-x"]),
            [("mcp-server-x".to_string(), Certainty::Metadata)]
        );
        // Nothing in the metadata: the name alone.
        assert!(judged(&nothing, &["notes"]).is_empty());
        assert_eq!(
            judged(&nothing, &["mcp-notes"]),
            [("mcp-notes".to_string(), Certainty::Name)]
        );
    }

    #[test]
    fn metadata_evidence() {
        let mut e = Evidence::default();
        e.keywords(["llm", "MCP", "time"]);
        e.description("summary", "A tool for timezones");
        assert!(e.server.is_empty());
        assert_eq!(e.uses, ["keyword `MCP`"]);
        let mut e = Evidence::default();
        e.keywords(["mcp server"]);
        e.description("description", "MCP server for memory");
        e.description(
            "summary",
            "A Model Context Protocol server providing tools for time",
        );
        assert_eq!(e.server.len(), 3, "{e:?}");
    }
}
