//! The guest compiled once per test process, copied into the fresh cache
//! directories tests make.
//!
//! A test that gives mcpbox a cache directory of its own (a fresh `HOME`, a
//! `MCPBOX_CACHE_DIR` under a temporary directory) makes it compile the guest
//! with Cranelift before anything else: about 4 s of CPU in a debug build, paid
//! again by every such test, for a component every test shares. [`seed`] copies
//! the compiled component and the key that signs it (see "The integrity of
//! cached components" in `host/src/engine.rs`) from a pair of directories that
//! one `mcpbox` run filled, so the test's own run loads it like any warm cache.
//!
//! A test that gives mcpbox only a configuration directory of its own (where
//! trust and pins are kept) runs with [`own_config_dir`]: the cache's signing
//! key lives there, so the directory gets the warm cache's key and the run
//! loads from the warm cache.
//!
//! What is copied is what mcpbox itself wrote: the files keep their integrity
//! check, and a test that is about the cache itself (a tampered file, a cache
//! others can write, the README's first run) does not seed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The file in the configuration directory that holds the cache's signing key.
const KEY_FILE: &str = "cache-key";

/// Fills `cache_dir` and `config_dir` (created `0700` when missing) with the
/// compiled guest and its signing key, as an earlier `mcpbox` run with these
/// directories would have left them. Existing files are left alone.
///
/// # Panics
///
/// When the warm-up run of `mcpbox` fails, or the files cannot be copied.
pub fn seed(cache_dir: &Path, config_dir: &Path) {
    let warm = warm();
    copy_files(&warm.join("config"), config_dir, |name| name == KEY_FILE);
    copy_files(&warm.join("cache"), cache_dir, |name| {
        Path::new(name).extension().is_some_and(|e| e == "cwasm")
    });
}

/// The cache and configuration directories of this test process, which one
/// `mcpbox servers` run filled:
/// a runtime opened on them loads the compiled guest at once, and what it
/// remembers there (a server's era, in `state.json`) stays within the process.
/// A server is remembered by its name and address, and tests reuse both (a
/// server `s` on a port the system picked, which an earlier run may have given
/// to a server of the other era): in a cache every run shares, one test's
/// server would decide how another's is first spoken to.
///
/// # Panics
///
/// When the warm-up run of `mcpbox` fails.
pub fn process_dirs() -> (PathBuf, PathBuf) {
    let warm = warm();
    (warm.join("cache"), warm.join("config"))
}

/// [`process_dirs`] as the environment of an `mcpbox` run: the compiled guest,
/// the pins and the trust it keeps stay in this test process's directories,
/// never the user's (whose pins file would grow by every run's servers).
pub fn process_env() -> [(&'static str, PathBuf); 2] {
    let (cache, config) = process_dirs();
    [("MCPBOX_CACHE_DIR", cache), ("MCPBOX_CONFIG_DIR", config)]
}

/// The environment of an `mcpbox` run with a configuration directory of its own
/// (`config_dir`, where trust and pins are kept): that directory, holding the
/// signing key of this process's warm cache, and that cache. The configuration
/// directory holds the key that signs cached components, so one of its own would
/// find no component it may load and compile the guest again: about 5 s of CPU in
/// a debug build, per directory. What the run remembers in the cache (a server's
/// era, in `state.json`) stays within the process, as [`process_dirs`] says.
///
/// # Panics
///
/// When the warm-up run of `mcpbox` fails, or the key cannot be copied.
pub fn own_config_dir(config_dir: &Path) -> [(&'static str, PathBuf); 2] {
    let (cache, warm_config) = process_dirs();
    copy_files(&warm_config, config_dir, |name| name == KEY_FILE);
    [
        ("MCPBOX_CONFIG_DIR", config_dir.to_path_buf()),
        ("MCPBOX_CACHE_DIR", cache),
    ]
}

/// The pair of directories one `mcpbox servers` run filled, per test process.
fn warm() -> &'static PathBuf {
    static WARM: OnceLock<PathBuf> = OnceLock::new();
    WARM.get_or_init(|| {
        let prefix = "mcpbox-tests-compiled-guest-";
        remove_those_of_ended_processes(prefix);
        let dir = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        private_dir(&dir);
        let config = dir.join("mcp.json");
        std::fs::write(&config, r#"{"mcpServers":{}}"#).expect("write the warm-up configuration");
        let out = Command::new(crate::mcpbox_program())
            .arg("--config")
            .arg(&config)
            .arg("servers")
            .env("MCPBOX_TRUST_ALL", "1")
            .env("MCPBOX_CACHE_DIR", dir.join("cache"))
            .env("MCPBOX_CONFIG_DIR", dir.join("config"))
            .stdin(Stdio::null())
            .output()
            .expect("run mcpbox to compile the guest");
        assert!(
            out.status.success(),
            "the warm-up `mcpbox servers` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

/// Removes the warm directories earlier test processes left (a `static` is
/// never dropped), those whose process is no longer running.
fn remove_those_of_ended_processes(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if Path::new("/proc").is_dir() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn copy_files(from: &Path, to: &Path, wanted: impl Fn(&str) -> bool) {
    private_dir(to);
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| wanted(n)) else {
            continue;
        };
        let dest = to.join(name);
        if dest.exists() {
            continue;
        }
        std::fs::copy(entry.path(), &dest).unwrap_or_else(|e| {
            panic!("copy {} to {}: {e}", entry.path().display(), dest.display())
        });
        set_mode(&dest, 0o600);
    }
}

/// Creates `dir` and its parents, the last one only its owner may enter, as
/// mcpbox requires of its own directories.
fn private_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    set_mode(dir, 0o700);
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) {}
