//! Where a runtime's stdio servers run, and the directories the host keeps for
//! sandboxed servers alone.
//!
//! # The working directory
//!
//! A server runs in its entry's `cwd`; without one, in the directory of the
//! configuration file that names it, and a relative `cwd` is relative to that
//! directory too. Trust is given to a file at its canonical path
//! ([`crate::trust`]), so what a relative program (`python3 run.py`,
//! `python -m pkg`, `npx` preferring `./node_modules/.bin`, `./server`) names must
//! be decided by the file, not by wherever mcpbox was started: otherwise a trusted
//! user-level configuration started from a freshly cloned repository runs that
//! repository's `run.py`. For a project's `.mcp.json` at the project's root this
//! is where Claude Code runs it (the directory it was started in); a server that
//! should follow the caller's directory says so: `"cwd": "${PWD}"`. The file's
//! directory is taken from its canonical path (a symlinked `~/.mcp.json` runs its
//! servers beside its target), as trust is. Configuration text with no file
//! (`Options::from_config_text`) keeps the process's working directory: the
//! embedder chose both.
//!
//! # Private directories
//!
//! A sandboxed `npx` server gets an npm cache of its own, read and write, instead
//! of the shared `~/.npm`: `~/.npm/_npx/<hash>/node_modules` holds the code that
//! every `npx` of the user runs, sandboxed or not, so a writable shared cache
//! would let one confined server rewrite what others execute. The cache is
//! `servers/<name>-<key>/npm` in mcpbox's cache directory, where `<key>` is a
//! digest of the configuration's origin, the server's name, command and
//! arguments: another entry, or the same name in another configuration, never
//! shares it. Every directory on the way is created 0700 and must belong to the
//! user and be writable by no one else ([`UserDir`]); when there is no cache
//! directory, or it is refused, a private temporary directory (0700, removed with
//! the runtime) stands in. The first start of a package downloads it into the
//! private cache (a sandbox needs `"network": {"connect": [443]}` for that).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::endpoint::StdioSpec;
use crate::user_files::UserDir;

/// Where a runtime's stdio servers run and keep their private files.
#[derive(Debug, Default)]
pub(crate) struct Places {
    /// The configuration file's directory (canonical); `None` for configuration text.
    base: Option<PathBuf>,
    /// mcpbox's cache directory, for private directories.
    cache: Option<PathBuf>,
    /// The configuration's origin (its path as given, or the embedder's name), for keys.
    origin: String,
    /// The stand-in for `cache` when there is none or it is refused, made once.
    temporary: Mutex<Option<tempfile::TempDir>>,
}

impl Places {
    /// Places for servers of the configuration `origin`, read from the file at
    /// `file` (none: configuration text), with private directories under `cache`.
    pub fn new(origin: &str, file: Option<&Path>, cache: Option<PathBuf>) -> Places {
        Places {
            base: file.and_then(file_dir),
            cache,
            origin: origin.to_owned(),
            temporary: Mutex::new(None),
        }
    }

    /// The directory a server whose entry says `cwd` (resolved) runs in; `None`:
    /// this process's.
    pub fn working_dir(&self, cwd: Option<&Path>) -> Option<PathBuf> {
        match (cwd, &self.base) {
            (Some(cwd), Some(base)) if cwd.is_relative() => Some(base.join(cwd)),
            (Some(cwd), _) => Some(cwd.to_path_buf()),
            (None, base) => base.clone(),
        }
    }

    /// The directory `what` (say `npm`) of `server`, started as `spec`, which only
    /// that server uses: made when missing, 0700, every directory on the way
    /// checked. The error says where and why.
    pub fn private_dir(
        &self,
        server: &str,
        spec: &StdioSpec,
        what: &str,
    ) -> Result<PathBuf, String> {
        let mut digest = Sha256::new();
        for part in [self.origin.as_str(), server, spec.command.as_str()]
            .into_iter()
            .chain(spec.args.iter().map(String::as_str))
        {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part.as_bytes());
        }
        let key: String = digest.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let safe: String = server
            .chars()
            .take(40)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let below = Path::new("servers")
            .join(format!("{safe}-{key}"))
            .join(what);
        let refused = match &self.cache {
            Some(cache) => match make_private(cache, &below) {
                Ok(dir) => return Ok(dir),
                Err(e) => Some(e),
            },
            None => None,
        };
        let mut temporary = self.temporary.lock().unwrap_or_else(|p| p.into_inner());
        if temporary.is_none() {
            let made = tempfile::Builder::new()
                .prefix("mcpbox-servers-")
                .permissions(
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
                )
                .tempdir()
                .map_err(|e| format!("no private directory could be made for its {what}: {e}"))?;
            *temporary = Some(made);
        }
        let Some(root) = temporary.as_ref().map(|t| t.path().to_owned()) else {
            return Err(format!("no private directory could be made for its {what}"));
        };
        make_private(&root, &below).map_err(|e| match refused {
            Some(first) => format!("{first}; and in a temporary directory: {e}"),
            None => e,
        })
    }
}

/// `root/below`, every directory from `root` down created 0700 when missing and
/// checked to be the user's and writable by no one else.
fn make_private(root: &Path, below: &Path) -> Result<PathBuf, String> {
    let mut dir = root.to_path_buf();
    UserDir::open(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for part in below.components() {
        dir.push(part);
        UserDir::open(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(dir)
}

/// The directory of the configuration file at `file`, as trust names the file:
/// through its canonical path (its directory's, when the file does not exist).
fn file_dir(file: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(file).ok()?;
    if let Ok(canonical) = std::fs::canonicalize(&absolute) {
        return canonical.parent().map(Path::to_path_buf);
    }
    let parent = absolute.parent()?;
    Some(std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn spec(command: &str, args: &[&str]) -> StdioSpec {
        StdioSpec {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            cwd: None,
            sandbox: None,
        }
    }

    #[test]
    fn servers_run_beside_their_configuration_file() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let file = dir.join(".mcp.json");
        std::fs::write(&file, "{}").unwrap();
        let places = Places::new("x", Some(&file), None);
        assert_eq!(places.working_dir(None), Some(dir.clone()));
        assert_eq!(
            places.working_dir(Some(Path::new("sub"))),
            Some(dir.join("sub"))
        );
        assert_eq!(
            places.working_dir(Some(Path::new("/srv"))),
            Some(PathBuf::from("/srv"))
        );
        // Through a symlink: beside the file it names, as trust names it.
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&file, elsewhere.join("link.json")).unwrap();
        let linked = Places::new("x", Some(&elsewhere.join("link.json")), None);
        assert_eq!(linked.working_dir(None), Some(dir.clone()));
        // Text: the process's own.
        assert_eq!(Places::new("x", None, None).working_dir(None), None);
    }

    #[test]
    fn private_directories_are_per_server_and_0700() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let places = Places::new("a.json", None, Some(cache.clone()));
        let one = places
            .private_dir("fs", &spec("npx", &["-y", "pkg"]), "npm")
            .unwrap();
        assert!(one.starts_with(cache.join("servers")), "{}", one.display());
        for d in one.ancestors().take_while(|d| d.starts_with(&cache)) {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        let again = places
            .private_dir("fs", &spec("npx", &["-y", "pkg"]), "npm")
            .unwrap();
        assert_eq!(one, again);
        let other = places
            .private_dir("fs", &spec("npx", &["-y", "other"]), "npm")
            .unwrap();
        assert_ne!(one, other);
        let elsewhere = Places::new("b.json", None, Some(cache.clone()))
            .private_dir("fs", &spec("npx", &["-y", "pkg"]), "npm")
            .unwrap();
        assert_ne!(one, elsewhere);
        // A cache others may write is not used: a private temporary directory is.
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let fallback = places
            .private_dir("fs", &spec("npx", &["-y", "pkg"]), "npm")
            .unwrap();
        assert!(!fallback.starts_with(&cache), "{}", fallback.display());
        for d in fallback.ancestors().take(4) {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
    }
}
