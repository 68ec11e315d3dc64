//! `mcpbox:runtime/state`: what the guest remembers across runs.
//!
//! Today that is the MCP era each server speaks (so a legacy server is not probed
//! with `server/discover` on every start). The entries are kept in one small JSON
//! file, `state.json`, in the cache directory, next to the compiled components.
//! It is a cache in every sense: a missing, unreadable or concurrently rewritten
//! file only costs the guest a probe, so errors are ignored, and the store is
//! bounded so a misbehaving guest cannot grow it without limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::bindings::state;
use crate::store::HostState;

/// The file in the cache directory.
const FILE: &str = "state.json";
/// At most this many entries are kept; a new one beyond it replaces an old one
/// (servers on ever-changing ports, as in tests, would otherwise fill it).
const MAX_ENTRIES: usize = 4096;
/// Longest key or value kept, in bytes.
const MAX_TEXT: usize = 1024;

/// The store behind the `state` import; shared by every instance of a runtime.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Where entries are saved; in memory only when none.
    path: Option<PathBuf>,
    /// Loaded on first use.
    entries: Mutex<Option<BTreeMap<String, String>>>,
}

impl Memo {
    /// A store saved in `dir` (in memory only when `dir` is none).
    pub fn in_dir(dir: Option<&Path>) -> Arc<Memo> {
        Arc::new(Memo {
            path: dir.map(|d| d.join(FILE)),
            entries: Mutex::new(None),
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<String, String>) -> R) -> R {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entries = entries.get_or_insert_with(|| {
            self.path
                .as_deref()
                .and_then(|p| std::fs::read(p).ok())
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .unwrap_or_default()
        });
        f(entries)
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
            self.path.as_ref()?;
            serde_json::to_vec_pretty(entries).ok()
        });
        if let (Some(text), Some(path)) = (text, &self.path) {
            let _ = save(path, &text);
        }
    }
}

/// Writes through a temporary file and a rename, so readers never see half a file.
fn save(path: &Path, text: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

impl state::Host for HostState {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.memo.get(&key))
    }

    fn set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.memo.set(&key, &value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_new_store_and_stay_bounded() {
        let dir = std::env::temp_dir().join(format!("mcpbox-memo-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let memo = Memo::in_dir(Some(&dir));
        assert_eq!(memo.get("era/a/1"), None);
        memo.set("era/a/1", "legacy");
        memo.set("era/b/2", "2026-07-28");
        memo.set(&"k".repeat(MAX_TEXT + 1), "too long a key");
        let again = Memo::in_dir(Some(&dir));
        assert_eq!(again.get("era/a/1").as_deref(), Some("legacy"));
        assert_eq!(again.get("era/b/2").as_deref(), Some("2026-07-28"));
        assert_eq!(again.with(|e| e.len()), 2);
        // Full: a new entry replaces an old one.
        let full = Memo::in_dir(None);
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
        assert_eq!(Memo::in_dir(Some(&dir)).get("era/a/1"), None);
        std::fs::remove_dir_all(&dir).unwrap();
        // Without a directory it keeps entries in memory only.
        let memo = Memo::in_dir(None);
        memo.set("k", "v");
        assert_eq!(memo.get("k").as_deref(), Some("v"));
    }
}
