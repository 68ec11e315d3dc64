//! The audit trail's file: one JSON line per call, as the guest reports it in
//! `audit` events, stamped with the wall-clock time the host received it.
//!
//! The guest decides what a record holds (see its `audit` module: never a
//! value from the environment or a header, arguments only when asked); the host
//! only adds the time and appends the line. The file is opened for appending,
//! created if missing, when the runtime opens, so a path that cannot be written
//! is an error then rather than a trail silently missing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::bindings::wit::Template;
use crate::types::AuditRecord;

/// An open audit trail.
#[derive(Debug)]
pub(crate) struct AuditLog {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    /// Opens (or creates) `path` for appending.
    pub fn open(path: &Path) -> Result<AuditLog, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "the audit file's directory {} cannot be created: {e}",
                    dir.display()
                )
            })?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("the audit file {} cannot be opened: {e}", path.display()))?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Appends one record as a line; the error says which file failed.
    pub fn write(&self, record: &AuditRecord) -> Result<(), String> {
        let mut line = serde_json::to_vec(record).map_err(|e| e.to_string())?;
        line.push(b'\n');
        // One write per line, so concurrent runtimes appending to one file do
        // not interleave within a line.
        self.file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_all(&line)
            .map_err(|e| format!("writing the audit file {} failed: {e}", self.path.display()))
    }
}

/// The configuration's `audit.file` as a path: `${VAR}` resolved from the host's
/// environment (the guest split the text), a relative path taken from the
/// configuration file's directory.
pub(crate) fn resolve_path(origin: &str, written: &Template) -> Result<PathBuf, String> {
    let resolved = crate::transport::endpoint::resolve(written, "audit.file", &|name| {
        std::env::var(name).ok()
    })?;
    let path = PathBuf::from(resolved);
    if path.is_absolute() {
        return Ok(path);
    }
    let config = Path::new(origin);
    Ok(match config.parent().filter(|_| config.is_file()) {
        Some(dir) => dir.join(path),
        None => path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> Template {
        crate::transport::endpoint::parse(text, "audit.file").unwrap()
    }

    #[test]
    fn relative_paths_are_taken_from_the_configuration_file() {
        let dir = std::env::temp_dir().join(format!("mcpbox-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("mcp.json");
        std::fs::write(&config, "{}").unwrap();
        let origin = config.display().to_string();
        assert_eq!(
            resolve_path(&origin, &template("a.jsonl")).unwrap(),
            dir.join("a.jsonl")
        );
        assert_eq!(
            resolve_path(&origin, &template("/x/a.jsonl")).unwrap(),
            PathBuf::from("/x/a.jsonl")
        );
        assert_eq!(
            resolve_path("inline text", &template("${MCPBOX_SURELY_UNSET:-b}.jsonl")).unwrap(),
            PathBuf::from("b.jsonl")
        );
        assert!(
            resolve_path(&origin, &template("${MCPBOX_SURELY_UNSET}"))
                .unwrap_err()
                .contains("audit.file")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
