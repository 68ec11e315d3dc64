//! `mcpbox:runtime/state`: what the guest remembers across runs.
//!
//! Today that is the MCP era each server speaks (so a legacy server is not probed
//! with `server/discover` on every start). The entries are kept in one small JSON
//! file, `state.json`, in the cache directory, next to the compiled components.
//! It is a cache in every sense: a missing, unreadable, damaged or concurrently
//! rewritten file only costs the guest a probe, and the store is bounded so a
//! misbehaving guest cannot grow it without limit.
//!
//! The file is read at most once per runtime, when it opens, and never beyond
//! [`MAX_FILE`] bytes: a larger one (mcpbox never writes one) is ignored with a
//! warning and replaced at the next save, so a 400 MB file costs nothing. Like
//! the compiled components, it is used only from a directory and file of the
//! current user's that others cannot write ([`crate::user_files`]), and written
//! 0600 through a temporary file and a rename.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::bindings::state;
use crate::store::HostState;
use crate::user_files::{Refused, UserDir};

/// The file in the cache directory.
const FILE: &str = "state.json";
/// At most this many entries are kept; a new one beyond it replaces an old one
/// (servers on ever-changing ports, as in tests, would otherwise fill it).
const MAX_ENTRIES: usize = 4096;
/// Longest key or value kept, in bytes.
const MAX_TEXT: usize = 1024;
/// The largest file read, and written: old entries make way for new ones
/// beyond it (entries are era keys of some 50 bytes: thousands fit).
const MAX_FILE: usize = 1024 * 1024;

/// The store behind the `state` import; shared by every instance of a runtime.
#[derive(Debug, Default)]
pub(crate) struct StateStore {
    /// Where entries are saved; in memory only when none.
    dir: Option<UserDir>,
    entries: Mutex<BTreeMap<String, String>>,
}

impl StateStore {
    /// The store saved in `dir` (in memory only when `dir` is none), loaded now.
    /// The warning says why a file there was not used, when it was not.
    pub fn open(dir: Option<&Path>) -> (Arc<StateStore>, Option<String>) {
        let (dir, entries, warning) = match dir.map(UserDir::open) {
            None => (None, BTreeMap::new(), None),
            Some(Err(Refused::Unsafe(why))) => (
                None,
                BTreeMap::new(),
                Some(format!(
                    "{FILE} was not used (kept in memory instead): {why}"
                )),
            ),
            // No cache directory to be had (a read-only disk): in memory only.
            Some(Err(Refused::Io(_))) => (None, BTreeMap::new(), None),
            Some(Ok(dir)) => {
                let (entries, warning) = load(&dir);
                (Some(dir), entries, warning)
            }
        };
        let state_store = StateStore {
            dir,
            entries: Mutex::new(entries),
        };
        (Arc::new(state_store), warning)
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<String, String>) -> R) -> R {
        f(&mut self.entries.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<String> {
        self.with(|entries| entries.get(key).cloned())
    }

    /// Keeps `value` under `key` and saves the store.
    pub fn set(&self, key: &str, value: &str) {
        if key.len() > MAX_TEXT || value.len() > MAX_TEXT {
            return;
        }
        let text = self.with(|entries| {
            if entries.get(key).map(String::as_str) == Some(value) {
                return None;
            }
            if entries.len() >= MAX_ENTRIES
                && !entries.contains_key(key)
                && let Some(old) = entries.keys().next().cloned()
            {
                entries.remove(&old);
            }
            entries.insert(key.to_owned(), value.to_owned());
            self.dir.as_ref()?;
            loop {
                let text = serde_json::to_vec_pretty(entries).ok()?;
                if text.len() <= MAX_FILE {
                    return Some(text);
                }
                // Never write what would not be read back: the oldest entries
                // (by key) make way, about as many bytes as the excess.
                let mut excess = text.len() - MAX_FILE;
                while excess > 0 {
                    let old = entries.keys().find(|k| *k != key).cloned()?;
                    let value = entries.remove(&old).unwrap_or_default();
                    excess = excess.saturating_sub(old.len() + value.len() + 8);
                }
            }
        });
        if let (Some(text), Some(dir)) = (text, &self.dir) {
            let _ = dir.write(FILE, &text);
        }
    }
}

/// Reads the entries kept in `dir`: none, with a warning, when the file is not
/// the user's own or is larger than [`MAX_FILE`]; none, quietly, when it is
/// missing or damaged.
fn load(dir: &UserDir) -> (BTreeMap<String, String>, Option<String>) {
    let path = dir.path().join(FILE);
    let file = match dir.open_file(FILE, false) {
        Ok(Some(file)) => file,
        Ok(None) | Err(Refused::Io(_)) => return (BTreeMap::new(), None),
        Err(Refused::Unsafe(why)) => {
            let warning = format!("{why}, so it was not read (it is replaced at the next save)");
            return (BTreeMap::new(), Some(warning));
        }
    };
    let size = file.stat.st_size;
    if size > MAX_FILE as i64 {
        let warning = format!(
            "{} is {size} bytes, more than the {} KiB mcpbox ever writes there, so it was \
             not read (it is replaced at the next save)",
            path.display(),
            MAX_FILE / 1024
        );
        return (BTreeMap::new(), Some(warning));
    }
    match file.read_all(MAX_FILE as u64) {
        Ok(bytes) => (serde_json::from_slice(&bytes).unwrap_or_default(), None),
        Err(_) => (BTreeMap::new(), None),
    }
}

impl state::Host for HostState {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.state_store.get(&key))
    }

    fn set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.state_store.set(&key, &value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpbox-state_store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn entries_survive_a_new_store_and_stay_bounded() {
        let dir = temp("bounded");
        let (state_store, warning) = StateStore::open(Some(&dir));
        assert_eq!(warning, None);
        assert_eq!(state_store.get("era/a/1"), None);
        state_store.set("era/a/1", "legacy");
        state_store.set("era/b/2", "2026-07-28");
        state_store.set(&"k".repeat(MAX_TEXT + 1), "too long a key");
        let (again, _) = StateStore::open(Some(&dir));
        assert_eq!(again.get("era/a/1").as_deref(), Some("legacy"));
        assert_eq!(again.get("era/b/2").as_deref(), Some("2026-07-28"));
        assert_eq!(again.with(|e| e.len()), 2);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Full: a new entry replaces an old one.
        let (full, _) = StateStore::open(None);
        for i in 0..MAX_ENTRIES + 10 {
            full.set(&format!("k{i:05}"), "v");
        }
        assert_eq!(full.with(|e| e.len()), MAX_ENTRIES);
        assert_eq!(
            full.get(&format!("k{:05}", MAX_ENTRIES + 9)).as_deref(),
            Some("v")
        );
        // A damaged file is an empty store, not an error.
        std::fs::write(dir.join(FILE), "{not json").unwrap();
        assert_eq!(StateStore::open(Some(&dir)).0.get("era/a/1"), None);
        std::fs::remove_dir_all(&dir).unwrap();
        // Without a directory it keeps entries in memory only.
        let (state_store, _) = StateStore::open(None);
        state_store.set("k", "v");
        assert_eq!(state_store.get("k").as_deref(), Some("v"));
    }

    /// A huge `state.json` is not read (a warning says
    /// so), and the next save replaces it with a small one; what is written
    /// never exceeds what is read back.
    #[test]
    fn a_huge_state_file_is_not_read() {
        let dir = temp("huge");
        std::fs::create_dir_all(&dir).unwrap();
        // Sparse: 400 MB that take no disk space.
        let file = std::fs::File::create(dir.join(FILE)).unwrap();
        file.set_len(400_000_000).unwrap();
        let (state_store, warning) = StateStore::open(Some(&dir));
        let warning = warning.expect("a warning");
        assert!(
            warning.contains("400000000 bytes") && warning.contains("1024 KiB"),
            "{warning}"
        );
        assert_eq!(state_store.get("era/a/1"), None);
        state_store.set("era/a/1", "legacy");
        assert!(std::fs::metadata(dir.join(FILE)).unwrap().len() < 100);
        // Entries as large as allowed still fit the file, the oldest make way.
        state_store.with(|entries| {
            for i in 0..1000 {
                let key = format!("{i:04}{}", "k".repeat(MAX_TEXT - 4));
                entries.insert(key, "v".repeat(MAX_TEXT));
            }
        });
        state_store.set("era/b/2", "legacy");
        assert!(std::fs::metadata(dir.join(FILE)).unwrap().len() <= MAX_FILE as u64);
        let (again, warning) = StateStore::open(Some(&dir));
        assert_eq!(warning, None);
        assert!(again.with(|e| e.len()) > 100);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_state_file_others_can_write_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp("unsafe");
        let (state_store, _) = StateStore::open(Some(&dir));
        state_store.set("era/a/1", "legacy");
        std::fs::set_permissions(dir.join(FILE), std::fs::Permissions::from_mode(0o666)).unwrap();
        let (state_store, warning) = StateStore::open(Some(&dir));
        assert!(warning.unwrap().contains("may be written by anyone"));
        assert_eq!(state_store.get("era/a/1"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
