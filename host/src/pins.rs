//! Where the guest's pinned tool definitions are kept between runs, and how
//! `mcpbox trust` accepts the changes they hold back.
//!
//! The guest pins each tool's definition when it first sees it and decides what
//! a later change means (its `manager::pins`); the host only keeps the text it
//! is handed, per configuration file, and hands it back when the guest starts
//! (`mcpbox:runtime/pins`). It never reads that text.
//!
//! The pins sit beside the trusted configurations ([`crate::trust`]), in
//! `pinned-tools.json` (0600) in the configuration directory, under the same
//! rules (`user_files`): a directory or file others could write is not
//! used. The file maps a configuration's canonical path to
//! `{"pins": TEXT, "acceptPending": BOOL}`; [`accept`] sets `acceptPending`,
//! and the guest's next save clears it, having made the changes it held back
//! the pinned definitions. Writers take `pinned-tools.lock` first, so two
//! mcpbox processes never lose each other's pins. The file stays small: a
//! configuration file that no longer exists loses its entry at the next save,
//! and past `MAX_CONFIGS` configurations the one saved longest ago makes way (its tools are
//! then pinned afresh, as new).
//!
//! A configuration given as text (not a file), or a runtime without a
//! configuration directory (or whose file could not be written), keeps its
//! pins in memory for the runtime's life:
//! changes during a session are still caught, and a guest re-instantiated after
//! a trap gets them back. Such a store says its pins are not kept across runs
//! (`PinStore::kept_across_runs`), so the guest makes none at its final
//! shutdown, where nobody would read them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::user_files::{Refused, UserDir};

/// The file in the configuration directory.
const FILE: &str = "pinned-tools.json";
/// Its lock.
const LOCK: &str = "pinned-tools.lock";
/// The largest file read and written (pins are a few hundred bytes a tool).
const MAX_FILE: u64 = 64 * 1024 * 1024;
/// The most configurations kept; past it the one saved longest ago makes way.
const MAX_CONFIGS: usize = 256;

/// What the host keeps for one configuration: the guest's text and whether
/// the user accepted its pending changes since.
type Kept = Option<(String, bool)>;

/// The store behind the `pins` import; shared by every instance of a runtime.
#[derive(Debug, Default)]
pub(crate) struct PinStore {
    /// The configuration directory and the configuration's key in the file;
    /// in memory only when none.
    file: Option<(UserDir, String)>,
    /// The last text saved or loaded, for a runtime that keeps no file (and
    /// for a file that could not be written).
    memory: Mutex<Kept>,
}

impl PinStore {
    /// The store of the configuration file `config` (canonical path) in
    /// `config_dir`; in memory only when either is missing. The warning says
    /// why a directory there was not used.
    pub fn open(
        config_dir: Option<&Path>,
        config: Option<&Path>,
    ) -> (Arc<PinStore>, Option<String>) {
        let (Some(dir), Some(config)) = (config_dir, config) else {
            return (Arc::default(), None);
        };
        let Ok(canonical) = std::fs::canonicalize(config) else {
            // A missing file starts nothing, so it has nothing to pin.
            return (Arc::default(), None);
        };
        match UserDir::open(dir) {
            Ok(dir) => {
                let key = canonical.to_string_lossy().into_owned();
                (
                    Arc::new(PinStore {
                        file: Some((dir, key)),
                        memory: Mutex::default(),
                    }),
                    None,
                )
            }
            Err(Refused::Unsafe(why)) => (
                Arc::default(),
                Some(format!(
                    "{FILE} was not used, so tool definitions are pinned for this run only: {why}"
                )),
            ),
            Err(Refused::Io(_)) => (Arc::default(), None),
        }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether what is saved outlives the runtime: a configuration file's pins
    /// are written down for its next run, the others kept in memory only.
    pub fn kept_across_runs(&self) -> bool {
        self.file.is_some()
    }

    /// What was kept for the configuration.
    pub fn load(&self) -> Kept {
        if let Some((dir, key)) = &self.file
            && let Ok(Some(entry)) = read_entry(dir, key)
        {
            let pins = entry.get("pins").and_then(Value::as_str)?.to_owned();
            let accept = entry.get("acceptPending").and_then(Value::as_bool) == Some(true);
            return Some((pins, accept));
        }
        self.memory().clone()
    }

    /// Keeps `text` for the configuration, clearing `acceptPending`. Taken by
    /// value: the text of 10,000 pins is 2 MB, kept without a second copy, and
    /// only where the file does not keep it: once written, the file is what
    /// [`PinStore::load`] reads (a copy beside it would be 13 MB for 71,000
    /// tools), so memory holds a text with no file to go to, or one it refused.
    pub fn save(&self, text: String) {
        let mut written = false;
        if let Some((dir, key)) = &self.file {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            written = update(dir, |configs| {
                configs.retain(|path, _| path == key || Path::new(path).exists());
                configs.insert(
                    key.clone(),
                    serde_json::json!({"pins": text, "acceptPending": false, "savedAt": now}),
                );
                while configs.len() > MAX_CONFIGS {
                    let oldest = configs
                        .iter()
                        .filter(|(path, _)| *path != key)
                        .min_by_key(|(_, entry)| entry["savedAt"].as_u64().unwrap_or(0))
                        .map(|(path, _)| path.clone());
                    match oldest {
                        Some(path) => configs.remove(&path),
                        None => break,
                    };
                }
            })
            .is_ok();
        }
        *self.memory() = (!written).then_some((text, false));
    }
}

/// The configurations' entries in `dir`'s file (none when it is missing).
fn read(dir: &UserDir) -> Result<Map<String, Value>, String> {
    match dir.read(FILE, MAX_FILE).map_err(|e| e.to_string())? {
        None => Ok(Map::new()),
        Some(bytes) => {
            let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} is not valid JSON ({e}); delete it to pin every tool afresh",
                    dir.path().join(FILE).display()
                )
            })?;
            Ok(match value.get("configs") {
                Some(Value::Object(configs)) => configs.clone(),
                _ => Map::new(),
            })
        }
    }
}

/// The entry of the configuration `key` in `dir`'s file, if it has one. Every
/// start reads it, and the file holds up to [`MAX_CONFIGS`] configurations' pins
/// as escaped JSON text: the other entries are skipped, never built (a file of
/// 254 entries, 528 KB, cost a cold `mcpbox tools` half its instructions when it
/// was read whole into a map and cloned).
fn read_entry(dir: &UserDir, key: &str) -> Result<Option<Value>, String> {
    #[derive(serde::Deserialize)]
    struct File<'a> {
        #[serde(borrow, default)]
        configs: std::collections::HashMap<std::borrow::Cow<'a, str>, &'a RawValue>,
    }
    let Some(bytes) = dir.read(FILE, MAX_FILE).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let file: File<'_> = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} is not valid JSON ({e}); delete it to pin every tool afresh",
            dir.path().join(FILE).display()
        )
    })?;
    file.configs
        .get(key)
        .map(|raw| serde_json::from_str(raw.get()).map_err(|e| e.to_string()))
        .transpose()
}

/// Changes the entries under the file's lock, and writes them back.
fn update(dir: &UserDir, change: impl FnOnce(&mut Map<String, Value>)) -> Result<(), String> {
    let lock = dir.lock_file(LOCK).map_err(|e| e.to_string())?;
    lock.lock()
        .map_err(|e| format!("{LOCK} could not be locked: {e}"))?;
    let mut configs = read(dir)?;
    change(&mut configs);
    let text = serde_json::to_vec(&serde_json::json!({ "configs": configs }))
        .map_err(|e| e.to_string())?;
    dir.write(FILE, &text).map_err(|e| e.to_string())
}

/// Accepts the tool definitions that changed since they were pinned for the
/// configuration file `config`, as mcpbox last saw them: the next start of its
/// servers pins them (a tool changed yet again is a new change). `Ok(false)`:
/// nothing is pinned for it yet.
pub fn accept(
    config: &Path,
    config_dir: Option<&Path>,
) -> Result<bool, crate::trust::error::TrustError> {
    let store = |why: String| crate::trust::error::TrustError::Store(why);
    let dir = config_dir.ok_or_else(|| {
        store("there is no configuration directory (set MCPBOX_CONFIG_DIR or HOME)".into())
    })?;
    let Ok(canonical) = std::fs::canonicalize(config) else {
        return Ok(false);
    };
    let key = canonical.to_string_lossy().into_owned();
    let dir = UserDir::open(dir).map_err(|e| store(e.to_string()))?;
    let mut found = false;
    update(&dir, |configs| {
        if let Some(Value::Object(entry)) = configs.get_mut(&key) {
            entry.insert("acceptPending".into(), Value::Bool(true));
            found = true;
        }
    })
    .map_err(store)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty directory of this test process's own, named by `tag`.
    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpbox-pins-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn pins_are_kept_per_configuration_and_accepted_once() {
        let dir = scratch("kept");
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        std::fs::write(&a, "{}").unwrap();
        std::fs::write(&b, "{}").unwrap();
        let config_dir = dir.join("config");
        let (store_a, warning) = PinStore::open(Some(&config_dir), Some(&a));
        assert_eq!(warning, None);
        let (store_b, _) = PinStore::open(Some(&config_dir), Some(&b));
        assert_eq!(store_a.load(), None);
        assert!(!accept(&a, Some(&config_dir)).unwrap());
        store_a.save("pins of a".into());
        store_b.save("pins of b".into());
        let (again, _) = PinStore::open(Some(&config_dir), Some(&a));
        assert_eq!(again.load(), Some(("pins of a".into(), false)));
        assert!(accept(&a, Some(&config_dir)).unwrap());
        assert_eq!(again.load(), Some(("pins of a".into(), true)));
        assert_eq!(store_b.load(), Some(("pins of b".into(), false)));
        // The guest's next save clears the mark.
        again.save("pins of a, accepted".into());
        assert_eq!(store_a.load(), Some(("pins of a, accepted".into(), false)));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(config_dir.join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A configuration that no longer exists makes way at the next save.
        std::fs::remove_file(&b).unwrap();
        again.save("pins of a, saved again".into());
        let (gone, _) = PinStore::open(Some(&config_dir), Some(&a));
        assert_eq!(gone.load().unwrap().0, "pins of a, saved again");
        let text = std::fs::read_to_string(config_dir.join(FILE)).unwrap();
        assert!(!text.contains("pins of b"), "{text}");
        // Without a file, in memory, and only for the runtime's life.
        assert!(again.kept_across_runs());
        let (memory, _) = PinStore::open(None, None);
        assert!(!memory.kept_across_runs());
        memory.save("kept".into());
        assert_eq!(memory.load(), Some(("kept".into(), false)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_saved_text_is_kept_in_memory_only_when_the_file_refused_it() {
        let dir = scratch("memory");
        let config = dir.join("mcp.json");
        std::fs::write(&config, "{}").unwrap();
        let config_dir = dir.join("config");
        let (store, _) = PinStore::open(Some(&config_dir), Some(&config));
        // Written: the file keeps it, and nothing else does.
        store.save("in the file".into());
        assert_eq!(store.load(), Some(("in the file".into(), false)));
        std::fs::remove_file(config_dir.join(FILE)).unwrap();
        assert_eq!(store.load(), None, "a copy stayed in memory");
        // A file that cannot be written (a directory in its place): kept in
        // memory, so a guest started again after a trap still gets it.
        std::fs::create_dir(config_dir.join(FILE)).unwrap();
        store.save("nowhere to go".into());
        assert_eq!(store.load(), Some(("nowhere to go".into(), false)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_configurations_entry_is_found_among_many_with_escaped_text() {
        let dir = scratch("many");
        // A name with a quote and a backslash: its key is escaped in the file.
        let config = dir.join("odd \"name\\.json");
        std::fs::write(&config, "{}").unwrap();
        let config_dir = dir.join("config");
        let (store, _) = PinStore::open(Some(&config_dir), Some(&config));
        store.save(r#"{"echo":{"description":"says \"hi\""}}"#.into());
        let key = std::fs::canonicalize(&config)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut configs: Map<String, Value> = (0..300)
            .map(|i| {
                let entry = serde_json::json!({"pins": format!(r#"{{"t{i}":"\"x\""}}"#)});
                (format!("/gone/{i}.json"), entry)
            })
            .collect();
        let mine = read(&UserDir::open(&config_dir).unwrap()).unwrap()[&key].clone();
        configs.insert(key, mine);
        let file = serde_json::json!({"configs": configs, "other": [1, {"a": null}]});
        std::fs::write(config_dir.join(FILE), file.to_string()).unwrap();
        let (again, _) = PinStore::open(Some(&config_dir), Some(&config));
        assert_eq!(
            again.load(),
            Some((r#"{"echo":{"description":"says \"hi\""}}"#.into(), false))
        );
        // A file that is not JSON keeps nothing: the pins start afresh.
        std::fs::write(config_dir.join(FILE), "{\"configs\": {").unwrap();
        let (broken, _) = PinStore::open(Some(&config_dir), Some(&config));
        assert_eq!(broken.load(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
