//! `mcpbox:runtime/blobs`: files the host writes for the guest — tool results too
//! large to pass on whole, and the images and audio in results.
//!
//! They go to one directory per runtime ([`Results`]), made on the first write:
//! by default `results/<unix seconds>-<pid>` in the cache directory
//! (`Options::results_dir` chooses another, or none: then every write is
//! `denied` and the guest passes on what it can). The host names each file
//! (the guest's suggestion, made safe, with a number in front so that names
//! never collide) and enforces three limits: one file at most the policy's
//! message cap (a result cannot be larger anyway), and all of a runtime's
//! files together at most [`Policy::max_result_files_bytes`](crate::Policy) and
//! [`Policy::max_result_files`](crate::Policy) files. (The guest caps the files
//! of one result: `output.maxFiles`.)
//!
//! Result files may hold what a tool read for the user, so they are kept as the
//! cache is ([`crate::user_files`]): every directory is the user's, 0700 when
//! made and writable by no one else, `results` and the runtime's directory are
//! opened without following a symbolic link, and files are created 0600, never
//! over an existing one. When there is no cache directory, or it is refused, the
//! files go to a private temporary directory instead (0700, kept after the
//! runtime ends, so that the links handed out still work) and a warning says
//! why. A directory the embedder chose that fails the checks is refused: every
//! write is `denied`, saying why.
//!
//! The default layout is pruned: when a runtime makes its directory, the
//! directories of other runtimes in `results` that were not written for
//! [`DEFAULT_RETENTION`] (`Options::results_retention`) and whose process is gone
//! are removed.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::bindings::blobs;
use crate::store::HostState;
use crate::user_files::UserDir;

/// How long the result directory of an ended runtime is kept, since its last write.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Where result files go.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    /// Nowhere: every write is denied.
    Nowhere,
    /// A directory the embedder chose.
    Chosen(PathBuf),
    /// `results/<unix seconds>-<pid>` in the cache directory (`None`: there is
    /// none), else a private temporary directory.
    Default(Option<PathBuf>),
}

/// What one runtime may write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The largest file.
    pub max_file: u64,
    /// All files together.
    pub max_total: u64,
    /// How many files.
    pub max_files: u64,
    /// How long the directories of ended runtimes are kept (default layout).
    pub retention: Duration,
}

/// The result directory of one runtime and what it holds.
#[derive(Debug)]
pub(crate) struct Results {
    place: Place,
    limits: Limits,
    state: Mutex<Written>,
}

#[derive(Debug, Default)]
struct Written {
    files: u64,
    bytes: u64,
    /// The directory, once opened, or why it cannot be used.
    dir: Option<Result<UserDir, String>>,
    /// A warning for the embedder, given once (the cache directory refused).
    note: Option<String>,
}

impl Results {
    /// Files in `place`, within `limits`.
    pub fn new(place: Place, limits: Limits) -> Results {
        Results {
            place,
            limits,
            state: Mutex::default(),
        }
    }

    /// No files at all.
    pub fn none() -> Results {
        Results::new(
            Place::Nowhere,
            Limits {
                max_file: 0,
                max_total: 0,
                max_files: 0,
                retention: DEFAULT_RETENTION,
            },
        )
    }

    /// Writes one file; see the module docs.
    pub fn write(
        &self,
        server: &str,
        name: &str,
        data: &[u8],
    ) -> Result<blobs::Blob, blobs::BlobError> {
        if matches!(self.place, Place::Nowhere) {
            return Err(blobs::BlobError::Denied(
                "no result directory is configured (Options::results_dir)".into(),
            ));
        }
        let size = data.len() as u64;
        if size > self.limits.max_file {
            return Err(blobs::BlobError::TooLarge(self.limits.max_file));
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.bytes.saturating_add(size) > self.limits.max_total {
            return Err(blobs::BlobError::Denied(format!(
                "this runtime's result files reached their limit of {} bytes \
                 (Policy::max_result_files_bytes)",
                self.limits.max_total
            )));
        }
        if state.files >= self.limits.max_files {
            return Err(blobs::BlobError::Denied(format!(
                "this runtime's result files reached their limit of {} files \
                 (Policy::max_result_files)",
                self.limits.max_files
            )));
        }
        if state.dir.is_none() {
            let (dir, note) = self.open();
            state.dir = Some(dir);
            state.note = note;
        }
        let dir = match &state.dir {
            Some(Ok(dir)) => dir,
            Some(Err(why)) => return Err(blobs::BlobError::Denied(why.clone())),
            None => unreachable!("opened above"),
        };
        let file_name = format!("{:04}-{}", state.files + 1, safe_name(server, name));
        let path = dir.path().join(&file_name);
        let io = |e: &dyn std::fmt::Display| {
            blobs::BlobError::Io(format!(
                "could not write a file in {}: {e}",
                dir.path().display()
            ))
        };
        match dir.create(&file_name, data) {
            Ok(true) => {}
            Ok(false) => return Err(io(&format!("{file_name} exists already"))),
            Err(e) => return Err(io(&e)),
        }
        state.files += 1;
        state.bytes += size;
        let uri = url::Url::from_file_path(&path)
            .map(String::from)
            .map_err(|()| blobs::BlobError::Io(format!("{} is not absolute", path.display())))?;
        Ok(blobs::Blob { uri, size })
    }

    /// A warning about where the files go, once.
    pub fn take_note(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note
            .take()
    }

    /// Opens (making it) the runtime's directory, and a warning when the files
    /// do not go where they should have.
    fn open(&self) -> (Result<UserDir, String>, Option<String>) {
        match &self.place {
            Place::Nowhere => (Err("no result directory is configured".into()), None),
            Place::Chosen(dir) => (
                UserDir::open(dir).map_err(|e| {
                    format!("the result directory {} is not used: {e}", dir.display())
                }),
                None,
            ),
            Place::Default(cache) => {
                let refused = match cache {
                    Some(cache) => match UserDir::open(cache).and_then(|c| c.subdir("results")) {
                        Ok(results) => {
                            let own = format!("{}-{}", unix_seconds(), std::process::id());
                            prune(&results, &own, self.limits.retention);
                            match results.subdir(&own) {
                                Ok(dir) => return (Ok(dir), None),
                                Err(e) => Some(e.to_string()),
                            }
                        }
                        Err(e) => Some(e.to_string()),
                    },
                    None => None,
                };
                let temporary = tempfile::Builder::new()
                    .prefix("mcpbox-results-")
                    .permissions(
                        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(
                            0o700,
                        ),
                    )
                    .tempdir()
                    .map(tempfile::TempDir::keep)
                    .map_err(|e| e.to_string())
                    .and_then(|dir| UserDir::open(&dir).map_err(|e| e.to_string()));
                match temporary {
                    Ok(dir) => {
                        let note = refused.map(|why| {
                            format!(
                                "result files go to the private directory {}: the cache \
                                 directory is not used for them: {why}",
                                dir.path().display()
                            )
                        });
                        (Ok(dir), note)
                    }
                    Err(e) => (
                        Err(format!(
                            "no result directory could be made{}: {e}",
                            refused
                                .map(|why| format!(" (the cache directory: {why})"))
                                .unwrap_or_default()
                        )),
                        None,
                    ),
                }
            }
        }
    }
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Removes the directories of other runtimes in `results` (named
/// `<unix seconds>-<pid>`, not `own`) that are directories of the user's, were
/// last written more than `retention` ago, and whose process is gone. What
/// cannot be removed stays; nothing here fails a write.
fn prune(results: &UserDir, own: &str, retention: Duration) {
    use rustix::fs::{AtFlags, FileType};
    let Ok(entries) = std::fs::read_dir(results.path()) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((secs, pid)) = name.split_once('-') else {
            continue;
        };
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if name == own || !numeric(secs) || !numeric(pid) {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(results.fd(), name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let modified =
            SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(stat.st_mtime).unwrap_or(0));
        let stale = now
            .duration_since(modified)
            .is_ok_and(|age| age > retention);
        let running = std::path::Path::new("/proc").join(pid).exists();
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory
            && stat.st_uid == me
            && stale
            && !running
        {
            // Never follows a symbolic link inside (std's removal opens each
            // directory without following one).
            let _ = std::fs::remove_dir_all(results.path().join(name));
        }
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
        let written = self.results.write(&server, &name, &data);
        if let Some(note) = self.results.take_note() {
            self.notice(vec![note]);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("mcpbox-blobs-{tag}-{}", std::process::id()))
    }

    fn limits(max_file: u64, max_total: u64, max_files: u64) -> Limits {
        Limits {
            max_file,
            max_total,
            max_files,
            retention: DEFAULT_RETENTION,
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    fn file_of(blob: &blobs::Blob) -> PathBuf {
        url::Url::parse(&blob.uri).unwrap().to_file_path().unwrap()
    }

    #[test]
    fn files_get_safe_unique_names_and_file_uris() {
        let d = dir("names");
        let _ = std::fs::remove_dir_all(&d);
        let results = Results::new(Place::Chosen(d.clone()), limits(1_000, 10_000, 10));
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
        let path = file_of(&a);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        assert_eq!(path.parent().unwrap(), d);
        // Private: the directory 0700, the files 0600.
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&path), 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn limits_and_no_directory_are_refusals() {
        let d = dir("limits");
        let _ = std::fs::remove_dir_all(&d);
        let results = Results::new(Place::Chosen(d.clone()), limits(10, 15, 10));
        assert!(matches!(
            results.write("s", "n", &[0; 11]),
            Err(blobs::BlobError::TooLarge(10))
        ));
        results.write("s", "n", &[0; 10]).unwrap();
        assert!(matches!(
            results.write("s", "n", &[0; 6]),
            Err(blobs::BlobError::Denied(m)) if m.contains("limit of 15 bytes")
        ));
        assert!(matches!(
            Results::none().write("s", "n", b"x"),
            Err(blobs::BlobError::Denied(_))
        ));
        std::fs::remove_dir_all(&d).unwrap();
        // The number of files.
        let results = Results::new(Place::Chosen(d.clone()), limits(10, 1_000, 3));
        for _ in 0..3 {
            results.write("s", "n", b"x").unwrap();
        }
        assert!(matches!(
            results.write("s", "n", b"x"),
            Err(blobs::BlobError::Denied(m))
                if m.contains("limit of 3 files (Policy::max_result_files)")
        ));
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A cache directory others may write is not used for results: they go to
    /// a private temporary directory, with a warning; a planted `results`
    /// symlink in a good cache directory is not followed either.
    #[test]
    fn an_unsafe_cache_or_a_planted_symlink_sends_results_elsewhere() {
        let d = dir("unsafe");
        let _ = std::fs::remove_dir_all(&d);
        let cache = d.join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let results = Results::new(Place::Default(Some(cache.clone())), limits(10, 100, 10));
        let blob = results.write("s", "n.txt", b"secret").unwrap();
        let path = file_of(&blob);
        assert!(!path.starts_with(&d), "{}", path.display());
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let note = results.take_note().expect("a warning");
        assert!(note.contains("may be written by anyone"), "{note}");
        assert!(!cache.join("results").exists());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();

        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
        let target = d.join("attacker");
        std::fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, cache.join("results")).unwrap();
        let results = Results::new(Place::Default(Some(cache.clone())), limits(10, 100, 10));
        let blob = results.write("s", "n.txt", b"secret").unwrap();
        let path = file_of(&blob);
        assert!(!path.starts_with(&d), "{}", path.display());
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
        let note = results.take_note().expect("a warning");
        assert!(note.contains("is a symbolic link"), "{note}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The default layout: `results/<secs>-<pid>`; directories of ended
    /// runtimes past the retention go, the rest stay.
    #[test]
    fn old_result_directories_of_ended_runtimes_are_pruned() {
        let d = dir("prune");
        let _ = std::fs::remove_dir_all(&d);
        let results_dir = d.join("results");
        std::fs::create_dir_all(&results_dir).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&results_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        let make = |name: &str, when: SystemTime| {
            let p = results_dir.join(name);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("0001-x.txt"), "x").unwrap();
            std::fs::File::open(&p).unwrap().set_modified(when).unwrap();
            p
        };
        // No process has pid 4194305 (above Linux's pid_max).
        let gone_old = make("1000-4194305", old);
        let gone_new = make("1001-4194305", SystemTime::now());
        let alive_old = make(&format!("1002-{}", std::process::id()), old);
        let other = make("notes", old);
        let results = Results::new(
            Place::Default(Some(d.clone())),
            Limits {
                retention: Duration::from_secs(60),
                ..limits(10, 100, 10)
            },
        );
        let blob = results.write("s", "n.txt", b"x").unwrap();
        let own = file_of(&blob);
        assert_eq!(own.parent().unwrap().parent().unwrap(), results_dir);
        assert!(!gone_old.exists(), "an old directory of an ended runtime");
        assert!(gone_new.exists() && alive_old.exists() && other.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
