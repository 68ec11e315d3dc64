//! `mcpbox:runtime/blobs`: files the host writes for the guest — tool results too
//! large to pass on whole, and the images and audio in results.
//!
//! They go to one directory per runtime ([`Results`]), made on the first write:
//! by default `results/<unix seconds>-<pid>` in the cache directory
//! (`Options::results_dir` chooses another, or none: then every write is
//! `denied` and the guest passes on what it can). The host names each file
//! (the guest's suggestion, made safe, with a number in front so that names
//! never collide) and enforces two limits: one file at most the policy's
//! message cap (a result cannot be larger anyway), and all of a runtime's
//! files together at most [`Policy::max_result_files_bytes`](crate::Policy).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::bindings::blobs;
use crate::store::HostState;

/// The result directory of one runtime and what it holds.
#[derive(Debug)]
pub(crate) struct Results {
    /// None: no files are kept.
    dir: Option<PathBuf>,
    max_file: u64,
    max_total: u64,
    state: Mutex<Written>,
}

#[derive(Debug, Default)]
struct Written {
    files: u64,
    bytes: u64,
    created: bool,
}

impl Results {
    /// Files in `dir` (none: no files), within the two limits.
    pub fn new(dir: Option<PathBuf>, max_file: u64, max_total: u64) -> Results {
        Results {
            dir,
            max_file,
            max_total,
            state: Mutex::default(),
        }
    }

    /// The default directory: `results/<unix seconds>-<pid>` under `base`.
    pub fn default_dir(base: &std::path::Path) -> PathBuf {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        base.join("results")
            .join(format!("{secs}-{}", std::process::id()))
    }

    /// Writes one file; see the module docs.
    pub fn write(
        &self,
        server: &str,
        name: &str,
        data: &[u8],
    ) -> Result<blobs::Blob, blobs::BlobError> {
        let Some(dir) = &self.dir else {
            return Err(blobs::BlobError::Denied(
                "no result directory is configured (Options::results_dir)".into(),
            ));
        };
        let size = data.len() as u64;
        if size > self.max_file {
            return Err(blobs::BlobError::TooLarge(self.max_file));
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.bytes.saturating_add(size) > self.max_total {
            return Err(blobs::BlobError::Denied(format!(
                "this runtime's result files reached their limit of {} bytes \
                 (Policy::max_result_files_bytes)",
                self.max_total
            )));
        }
        let io = |what: &str, e: std::io::Error| {
            blobs::BlobError::Io(format!("{what} {}: {e}", dir.display()))
        };
        if !state.created {
            std::fs::create_dir_all(dir).map_err(|e| io("could not create", e))?;
            state.created = true;
        }
        let file_name = format!("{:04}-{}", state.files + 1, safe_name(server, name));
        let path = dir.join(&file_name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io("could not write a file in", e))?;
        file.write_all(data)
            .map_err(|e| io("could not write a file in", e))?;
        state.files += 1;
        state.bytes += size;
        let uri = url::Url::from_file_path(&path)
            .map(String::from)
            .map_err(|()| blobs::BlobError::Io(format!("{} is not absolute", path.display())))?;
        Ok(blobs::Blob { uri, size })
    }
}

/// `{server}-{name}` with every character outside `[A-Za-z0-9._-]` made `_`, at
/// most 120 characters, never starting with a dot.
fn safe_name(server: &str, name: &str) -> String {
    let joined = if name.starts_with("mcp__") {
        name.to_owned()
    } else {
        format!("{server}-{name}")
    };
    let mut safe: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.len() > 120 {
        // Keep the end: it holds the extension.
        safe = safe[safe.len() - 120..].to_owned();
    }
    safe.trim_start_matches('.').to_owned()
}

impl blobs::Host for HostState {
    fn write(
        &mut self,
        server: String,
        name: String,
        _mime_type: String,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<blobs::Blob, blobs::BlobError>> {
        Ok(self.results.write(&server, &name, &data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("mcpbox-blobs-{tag}-{}", std::process::id()))
    }

    #[test]
    fn files_get_safe_unique_names_and_file_uris() {
        let d = dir("names");
        let _ = std::fs::remove_dir_all(&d);
        let results = Results::new(Some(d.clone()), 1_000, 10_000);
        let a = results
            .write("fs", "mcp__fs__read_file-1.txt", b"hello")
            .unwrap();
        let b = results
            .write("my server", "../../etc/x y.png", b"png")
            .unwrap();
        assert_eq!(a.size, 5);
        assert!(
            a.uri.starts_with("file:///") && a.uri.ends_with("/0001-mcp__fs__read_file-1.txt"),
            "{}",
            a.uri
        );
        assert!(
            b.uri.ends_with("/0002-my_server-.._.._etc_x_y.png"),
            "{}",
            b.uri
        );
        let path = url::Url::parse(&a.uri).unwrap().to_file_path().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        assert_eq!(path.parent().unwrap(), d);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn limits_and_no_directory_are_refusals() {
        let d = dir("limits");
        let _ = std::fs::remove_dir_all(&d);
        let results = Results::new(Some(d.clone()), 10, 15);
        assert!(matches!(
            results.write("s", "n", &[0; 11]),
            Err(blobs::BlobError::TooLarge(10))
        ));
        results.write("s", "n", &[0; 10]).unwrap();
        assert!(matches!(
            results.write("s", "n", &[0; 6]),
            Err(blobs::BlobError::Denied(m)) if m.contains("limit of 15 bytes")
        ));
        let none = Results::new(None, 10, 10);
        assert!(matches!(
            none.write("s", "n", b"x"),
            Err(blobs::BlobError::Denied(_))
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
