//! Files mcpbox keeps for the user between runs: compiled components,
//! `state.json`, result files and sandboxed servers' private npm caches in the
//! cache directory; the cache key, the trusted configurations and the gateway's
//! `http-token` in the configuration directory; the OAuth token file
//! (`oauth/store.rs`) and its lock.
//!
//! Some of them are trusted as code: a compiled component is native code that
//! wasmtime loads without checking it (`Component::deserialize` is `unsafe` for
//! that reason), and a trusted configuration starts programs. So, as ssh does
//! for `~/.ssh`, a directory or file that another user could have written is
//! not used: it must belong to the current user and not be writable by group or
//! others. Directories are created 0700 and files written 0600, through a
//! temporary file and a rename, so no reader ever sees half a file.
//!
//! Every check is made on an open descriptor (`fstat`), and files are opened
//! relative to the checked directory's descriptor (`openat`, never following a
//! symlink), so nothing can be swapped between the check and the use. The
//! directory's own path may go through symlinks and directories of others (a
//! `/tmp/…` cache, a symlinked `~/.cache`): what is checked is the directory
//! reached, whose entries then only its owner (and root) can change.

use std::fmt;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

/// Why a directory or file was not used.
#[derive(Debug)]
pub(crate) enum Refused {
    /// It belongs to another user, or others may write it: it could hold
    /// anything, so it is not used (a warning, not an error).
    Unsafe(String),
    /// It could not be created, opened, read or written (a read-only disk, a
    /// missing home directory); it only costs what it would have saved.
    Io(std::io::Error),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Unsafe(why) => f.write_str(why),
            Refused::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<std::io::Error> for Refused {
    fn from(e: std::io::Error) -> Self {
        Refused::Io(e)
    }
}

impl From<rustix::io::Errno> for Refused {
    fn from(e: rustix::io::Errno) -> Self {
        Refused::Io(e.into())
    }
}

/// A directory that only the current user can change, open.
#[derive(Debug)]
pub(crate) struct UserDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl UserDir {
    /// Opens `path`, creating it (and its parents) 0700 when it is missing, and
    /// checks that it is the current user's and not writable by group or others.
    pub fn open(path: &Path) -> Result<UserDir, Refused> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(path)?;
                rustix::fs::open(path, flags, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        check_owner_and_mode(&stat, "directory", path)?;
        Ok(UserDir {
            path: path.to_owned(),
            fd,
        })
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory, for calls relative to it (`*at`).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// The directory `name` in this one, created 0700 when missing, with the
    /// checks of [`open`](UserDir::open); a symbolic link is refused, not followed.
    pub fn subdir(&self, name: &str) -> Result<UserDir, Refused> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let path = self.path.join(name);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                return Err(Refused::Unsafe(format!(
                    "{} is a symbolic link or not a directory",
                    path.display()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        check_owner_and_mode(&stat, "directory", &path)?;
        Ok(UserDir { path, fd })
    }

    /// Reads the file `name`: `Ok(None)` when it does not exist; refused when it
    /// is not a regular file of the current user's that others cannot write, or
    /// when it is larger than `max` bytes (read no further than that).
    pub fn read(&self, name: &str, max: u64) -> Result<Option<Vec<u8>>, Refused> {
        match self.open_file(name, false)? {
            Some(file) => file.read_all(max).map(Some),
            None => Ok(None),
        }
    }

    /// Like [`read`](UserDir::read), for a secret: also refused when group or
    /// others may read it.
    pub fn read_secret(&self, name: &str, max: u64) -> Result<Option<Vec<u8>>, Refused> {
        match self.open_file(name, true)? {
            Some(file) => file.read_all(max).map(Some),
            None => Ok(None),
        }
    }

    /// Opens the file `name` for reading after the checks of [`read`](UserDir::read)
    /// (and, for a `secret`, of [`read_secret`](UserDir::read_secret)).
    pub fn open_file(&self, name: &str, secret: bool) -> Result<Option<UserFile>, Refused> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let path = self.path.join(name);
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(Refused::Unsafe(format!(
                    "{} is a symbolic link",
                    path.display()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Refused::Unsafe(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        check_owner_and_mode(&stat, "file", &path)?;
        if secret && stat.st_mode & 0o044 != 0 {
            return Err(Refused::Unsafe(format!(
                "the file {} holds a secret but may be read by others (mode {:04o}); \
                 `chmod 600` it",
                path.display(),
                stat.st_mode & 0o7777
            )));
        }
        Ok(Some(UserFile {
            file: std::fs::File::from(fd),
            stat,
            path,
        }))
    }

    /// Replaces the file `name` with `bytes`, written 0600 to a temporary file
    /// that is then renamed over it.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), Refused> {
        let tmp = self.write_temporary(name, bytes)?;
        rustix::fs::renameat(&self.fd, &tmp, &self.fd, name).map_err(|e| {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
            Refused::from(e)
        })
    }

    /// Creates the file `name` with `bytes` unless it exists: `Ok(false)` then.
    /// Two processes racing to create it never see each other's half-written file.
    pub fn create(&self, name: &str, bytes: &[u8]) -> Result<bool, Refused> {
        let tmp = self.write_temporary(name, bytes)?;
        let linked = rustix::fs::linkat(&self.fd, &tmp, &self.fd, name, AtFlags::empty());
        let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
        match linked {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn write_temporary(&self, name: &str, bytes: &[u8]) -> Result<String, Refused> {
        // Unique per writer, so concurrent writers never interleave in one file.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = format!(".{name}.tmp.{}.{n}", std::process::id());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, &tmp, flags, Mode::from_raw_mode(0o600))?;
        let mut file = std::fs::File::from(fd);
        if let Err(e) = file.write_all(bytes) {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
            return Err(e.into());
        }
        Ok(tmp)
    }

    /// Like [`write`](UserDir::write), with the new contents on the disk
    /// before the rename (for a file that is not a cache: the OAuth tokens).
    pub fn write_synced(&self, name: &str, bytes: &[u8]) -> Result<(), Refused> {
        let tmp = self.write_temporary(name, bytes)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let synced = rustix::fs::openat(&self.fd, &tmp, flags, Mode::empty())
            .and_then(|fd| rustix::fs::fsync(&fd));
        let renamed = synced.and_then(|()| rustix::fs::renameat(&self.fd, &tmp, &self.fd, name));
        renamed.map_err(|e| {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
            Refused::from(e)
        })
    }

    /// Opens the file `name` for locking, creating it empty (0600) when it is
    /// missing; refused, as [`read`](UserDir::read) refuses, when it is a
    /// symbolic link, not a regular file, another user's or writable by
    /// others. Nothing is created or opened through a link.
    pub fn lock_file(&self, name: &str) -> Result<std::fs::File, Refused> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let path = self.path.join(name);
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP) => {
                return Err(Refused::Unsafe(format!(
                    "{} is a symbolic link",
                    path.display()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Refused::Unsafe(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        check_owner_and_mode(&stat, "file", &path)?;
        Ok(std::fs::File::from(fd))
    }
}

/// A file of the user's, open, as [`UserDir::open_file`] checked it.
#[derive(Debug)]
pub(crate) struct UserFile {
    file: std::fs::File,
    /// Its status when it was checked.
    pub stat: Stat,
    /// Where it is.
    pub path: PathBuf,
}

impl UserFile {
    /// Everything in it; refused beyond `max` bytes (read no further than that).
    pub fn read_all(self, max: u64) -> Result<Vec<u8>, Refused> {
        let size = u64::try_from(self.stat.st_size).unwrap_or(0);
        let too_large = |what: &str| {
            Refused::Io(std::io::Error::other(format!(
                "{} {what} more than the {max} bytes expected",
                self.path.display()
            )))
        };
        if size > max {
            return Err(too_large(&format!("is {size} bytes,")));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        // Bounded again while reading: the file may grow after the fstat.
        (&self.file)
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(too_large("grew while it was read to"));
        }
        Ok(bytes)
    }
}

/// Refuses what belongs to another user or is writable by group or others.
fn check_owner_and_mode(stat: &Stat, what: &str, path: &Path) -> Result<(), Refused> {
    let me = rustix::process::geteuid().as_raw();
    if stat.st_uid != me {
        return Err(Refused::Unsafe(format!(
            "the {what} {} belongs to user {}, not to the current user ({me})",
            path.display(),
            stat.st_uid
        )));
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Refused::Unsafe(format!(
            "the {what} {} may be written by {} (mode {mode:04o}); `chmod go-w` it",
            path.display(),
            if mode & 0o002 != 0 {
                "anyone"
            } else {
                "its group"
            },
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpbox-user-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn creates_private_directories_and_files() {
        let dir = temp("create");
        let user = UserDir::open(&dir.join("a/b")).unwrap();
        assert_eq!(mode(&dir.join("a/b")), 0o700);
        user.write("f", b"one").unwrap();
        assert_eq!(mode(&dir.join("a/b/f")), 0o600);
        assert_eq!(user.read("f", 10).unwrap().as_deref(), Some(&b"one"[..]));
        assert!(user.read("absent", 10).unwrap().is_none());
        assert!(!user.create("f", b"two").unwrap());
        assert!(user.create("g", b"two").unwrap());
        assert_eq!(user.read("g", 10).unwrap().as_deref(), Some(&b"two"[..]));
        assert!(matches!(user.read("f", 2), Err(Refused::Io(_))));
        // Nothing temporary is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_what_others_can_write() {
        let dir = temp("refuse");
        let user = UserDir::open(&dir).unwrap();
        user.write("f", b"x").unwrap();
        std::fs::set_permissions(dir.join("f"), std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = user.read("f", 10).unwrap_err();
        assert!(
            matches!(&err, Refused::Unsafe(m) if m.contains("anyone") && m.contains("0666")),
            "{err}"
        );
        std::fs::set_permissions(dir.join("f"), std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(matches!(user.read("f", 10), Err(Refused::Unsafe(m)) if m.contains("its group")));
        std::os::unix::fs::symlink(dir.join("f"), dir.join("link")).unwrap();
        assert!(
            matches!(user.read("link", 10), Err(Refused::Unsafe(m)) if m.contains("symbolic link"))
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(UserDir::open(&dir), Err(Refused::Unsafe(m)) if m.contains("directory")));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(
            matches!(UserDir::open(&dir), Err(Refused::Unsafe(_))),
            "sticky is not enough"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
