//! The wasmtime engine and the guest component, compiled once and cached on disk.
//!
//! Compiling the guest with Cranelift takes seconds of CPU (3.5 s in a release
//! build, 4.3 s in a test build, spread over the cores); loading a cached
//! compilation takes milliseconds (a whole `mcpbox servers` run, 20 ms). The
//! cache key is a SHA-256 over the wasm bytes and the engine's compatibility
//! hash (wasmtime version, target, settings), so a new guest or a new wasmtime
//! never loads a stale artefact. Cached files are native code, so they are
//! checked before they are loaded: see "The integrity of cached components".

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use crate::Error;
use crate::user_files::{Refused, UserDir};

/// The guest built with this crate (see `build.rs`).
/// The SHA-256 of [`EMBEDDED_GUEST`], computed by `build.rs`.
pub(crate) static EMBEDDED_GUEST_SHA256: &[u8; 32] =
    include_bytes!(concat!(env!("OUT_DIR"), "/mcpbox_guest.sha256"));

pub(crate) static EMBEDDED_GUEST: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/mcpbox_guest.wasm"));

/// How often the engine's epoch advances; deadlines for the guest are counted in these.
pub(crate) const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// The engine every runtime of this process shares, with one thread that
/// advances its epoch so that a runaway guest can be stopped.
pub(crate) fn engine() -> Result<Engine, Error> {
    static ENGINE: std::sync::OnceLock<Result<Engine, String>> = std::sync::OnceLock::new();
    let engine = ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        config.epoch_interruption(true);
        // For profiling: `MCPBOX_PERF_MAP=1` writes /tmp/perf-PID.map, so `perf
        // report` names the guest's functions (docs/PERFORMANCE.md).
        if std::env::var_os("MCPBOX_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine =
            Engine::new(&config).map_err(|e| format!("could not create the wasm engine: {e}"))?;
        let ticking = engine.clone();
        std::thread::Builder::new()
            .name("mcpbox-epoch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                }
            })
            .map_err(|e| format!("could not start the epoch thread: {e}"))?;
        Ok(engine)
    });
    engine.clone().map_err(Error::Guest)
}

/// Where compiled components are cached unless the embedder says otherwise:
/// `$MCPBOX_CACHE_DIR`, else `$XDG_CACHE_HOME/mcpbox`, else `~/.cache/mcpbox`.
pub fn default_cache_dir() -> Option<PathBuf> {
    user_dir("MCPBOX_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
}

/// Where mcpbox keeps the user's own files that are not a cache (the key that
/// signs compiled components, the trusted project configurations) unless the
/// embedder says otherwise: `$MCPBOX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/mcpbox`,
/// else `~/.config/mcpbox`.
pub fn default_config_dir() -> Option<PathBuf> {
    user_dir("MCPBOX_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
}

fn user_dir(own: &str, xdg: &str, under_home: &str) -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(own)
        .or_else(|| var(xdg).map(|d| d.join("mcpbox")))
        .or_else(|| var("HOME").map(|d| d.join(under_home).join("mcpbox")))
}

/// Where a runtime caches compiled components: the cache directory, and the
/// directory of the key that signs them.
#[derive(Debug, Clone)]
pub(crate) struct CacheDirs {
    pub cache: PathBuf,
    pub key: PathBuf,
}

// # The integrity of cached components
//
// A cached component is native code: wasmtime maps it executable after checking
// only its header (`Component::deserialize` is `unsafe` for that reason), so
// whoever can write the file can run code as the user of the next mcpbox. Two
// defences, against two threats:
//
// - **Another local user** (a cache under `/tmp`, a group-writable `~/.cache`, a
//   file planted in a directory others may write): the cache directory and each
//   file must belong to the current user and not be writable by group or others
//   (`user_files`), as ssh requires of `~/.ssh`. Otherwise the cache is not used
//   (the guest is compiled in memory) and a warning says why.
// - **Someone who can write the cache but not read the user's configuration
//   directory** (a cache directory on a shared or network disk, a cache copied
//   or restored from elsewhere, a container volume mounted from another machine)
//   and plain corruption: every file carries an HMAC-SHA256 over its name and
//   contents, keyed by 32 random bytes kept 0600 in the configuration directory
//   (`cache-key`), never in the cache. A file that fails the check is not loaded:
//   it is compiled afresh and replaced, with a warning.
//
//   Checking 2 MB costs about 1 ms (SHA-NI) and reading it into memory as much
//   again: half of a cold `mcpbox tools`. So a file that passed is stamped: a
//   `.verified` file beside it holds an HMAC over the file's identity and change
//   time (device, inode, size, mtime, ctime). A later run whose `fstat` gives the
//   same values loads the file without reading it (wasmtime maps it lazily).
//   Writing or replacing the file changes its ctime or inode, which no user but
//   root can set back, so a changed file always gets the full check. What is
//   not covered here: a hostile file server, which reports the ctime it likes,
//   and the instant between the `fstat` and wasmtime's own `open` of the path,
//   in which only the directory's owner could swap the file.
//
// Not covered: **the user's own account**. A program running as the user can read
// the key and write the cache, but it can equally edit `~/.bashrc` or the mcpbox
// binary itself; no file check helps against that.

/// The file in the key directory that holds the HMAC key.
const KEY_FILE: &str = "cache-key";
const KEY_LEN: usize = 32;
const TAG_LEN: usize = 32;
/// The largest compiled component read back (the guest compiles to about 2 MB).
const MAX_CWASM: u64 = 256 * 1024 * 1024;
/// Part of every cache key: files of an earlier format get other names and are
/// never read.
const CACHE_FORMAT: &[u8] = b"mcpbox cwasm v2: wasmtime serialization + HMAC-SHA256";

type HmacSha256 = Hmac<Sha256>;

/// The HMAC of a cache file called `name` holding `body`.
fn tag(key: &[u8; KEY_LEN], name: &str, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(CACHE_FORMAT);
    mac.update(&(name.len() as u64).to_le_bytes());
    mac.update(name.as_bytes());
    mac.update(body);
    mac
}

/// The HMAC saying that the cache file `name` with this status passed the full check.
fn stamp(key: &[u8; KEY_LEN], name: &str, stat: &rustix::fs::Stat) -> HmacSha256 {
    let mut mac = tag(key, name, b"verified");
    // The fields' types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    for field in [
        stat.st_dev as u64,
        stat.st_ino as u64,
        stat.st_size as u64,
        stat.st_mtime as u64,
        stat.st_mtime_nsec as u64,
        stat.st_ctime as u64,
        stat.st_ctime_nsec as u64,
    ] {
        mac.update(&field.to_le_bytes());
    }
    mac
}

/// A file changed less than this long ago is not stamped: file times are kept
/// at the kernel's clock tick (a few milliseconds), so a change right after the
/// check could leave the times the stamp covers as they were.
const STAMP_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Stamps the cache file `name` as checked (see [`stamp`]), unless it changed
/// within [`STAMP_AFTER`]: then a later run checks it in full and stamps it.
fn write_stamp(dir: &UserDir, key: &[u8; KEY_LEN], name: &str) -> Result<(), Refused> {
    if let Some(file) = dir.open_file(name, false)? {
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(file.stat.st_ctime).unwrap_or(0),
                u32::try_from(file.stat.st_ctime_nsec).unwrap_or(0),
            );
        let settled = std::time::SystemTime::now()
            .duration_since(changed)
            .is_ok_and(|age| age >= STAMP_AFTER);
        if !settled {
            return Ok(());
        }
        let stamp = stamp(key, name, &file.stat).finalize().into_bytes();
        dir.write(&format!("{name}.verified"), &stamp)?;
    }
    Ok(())
}

/// The user's cache key, made on first use.
fn cache_key_secret(dir: &Path) -> Result<[u8; KEY_LEN], Refused> {
    let dir = UserDir::open(dir)?;
    if dir.read_secret(KEY_FILE, 64)?.is_none() {
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| {
            Refused::Io(std::io::Error::other(format!(
                "no random bytes for the cache key: {e}"
            )))
        })?;
        // Whoever creates it first wins; everyone then reads the same key.
        dir.create(KEY_FILE, &key)?;
    }
    let bytes = dir.read_secret(KEY_FILE, 64)?.unwrap_or_default();
    bytes.try_into().map_err(|bytes: Vec<u8>| {
        Refused::Unsafe(format!(
            "{} holds {} bytes, not a key of {KEY_LEN}; delete it and mcpbox makes a new one",
            dir.path().join(KEY_FILE).display(),
            bytes.len()
        ))
    })
}

/// Loads a component from the cache, or compiles it and stores the result.
/// A cache that cannot be read or written only costs time, never correctness;
/// one that may have been tampered with is not used, and `warnings` says why.
/// `digest` is the SHA-256 of `wasm` ([`wasm_digest`]).
pub(crate) fn load_component(
    engine: &Engine,
    wasm: &[u8],
    digest: &[u8],
    cache: Option<&CacheDirs>,
    warnings: &mut Vec<String>,
) -> Result<Component, Error> {
    let compile = || {
        Component::new(engine, wasm)
            .map_err(|e| Error::Guest(format!("the guest component is not valid: {e:#}")))
    };
    let Some(cache) = cache else {
        return compile();
    };
    let not_used = |why: &dyn std::fmt::Display| {
        format!(
            "the compiled-component cache was not used: {why}; the guest was compiled in memory"
        )
    };
    let key = match cache_key_secret(&cache.key) {
        Ok(key) => key,
        Err(Refused::Unsafe(why)) => {
            warnings.push(not_used(&why));
            return compile();
        }
        Err(Refused::Io(_)) => return compile(),
    };
    let dir = match UserDir::open(&cache.cache) {
        Ok(dir) => dir,
        Err(Refused::Unsafe(why)) => {
            warnings.push(not_used(&why));
            return compile();
        }
        Err(Refused::Io(_)) => return compile(),
    };
    let name = format!("{}.cwasm", cache_key(engine, digest, &key));
    let path = dir.path().join(&name);
    let file = dir.open_file(&name, false);
    if let Ok(Some(file)) = &file
        && let Ok(Some(stamped)) = dir.read(&format!("{name}.verified"), TAG_LEN as u64)
        && stamp(&key, &name, &file.stat)
            .verify_slice(&stamped)
            .is_ok()
    {
        // SAFETY: this file passed the full check below and has not changed
        // since: its stamp, an HMAC under a key only this user can read, covers
        // its inode and change time (see "The integrity of cached components").
        // The file's body is what `store` serialized with this engine
        // configuration; wasmtime maps up to its length, ignoring the tag at the
        // end, and checks the header and engine compatibility again.
        #[allow(unsafe_code)]
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &path) } {
            no_huge_pages(&component);
            return Ok(component);
        }
    }
    match file.and_then(|file| file.map(|f| f.read_all(MAX_CWASM)).transpose()) {
        Ok(Some(bytes)) if bytes.len() >= TAG_LEN => {
            let (body, expected) = bytes.split_at(bytes.len() - TAG_LEN);
            if tag(&key, &name, body).verify_slice(expected).is_ok() {
                // SAFETY: `body` is exactly what `store` below serialized with this
                // engine configuration: its HMAC, under a key only this user can
                // read, proves it (see "The integrity of cached components"). It
                // was read into memory, so it cannot change between the check and
                // the load. wasmtime checks its header and engine compatibility.
                #[allow(unsafe_code)]
                if let Ok(component) = unsafe { Component::deserialize(engine, body) } {
                    let _ = write_stamp(&dir, &key, &name);
                    return Ok(component);
                }
            } else {
                warnings.push(format!(
                    "{} failed its integrity check (it changed since mcpbox wrote it) and was \
                     not loaded; the guest was compiled afresh and the file replaced",
                    path.display()
                ));
            }
        }
        // Too short to hold a tag: half-written by a crashed writer of old, say.
        Ok(Some(_)) | Ok(None) | Err(Refused::Io(_)) => {}
        Err(Refused::Unsafe(why)) => warnings.push(format!(
            "{why}, so it was not loaded; the guest was compiled afresh and the file replaced"
        )),
    }
    let component = compile()?;
    let _ = store(&component, &dir, &name, &key);
    Ok(component)
}

/// Keeps the kernel from mapping a component loaded from its file 2 MiB at a
/// time. The file was written in one piece, so its page-cache folios are large,
/// and Linux maps such a folio whole (a PMD) on the first fault in it when the
/// mapping is aligned for it: a cold `mcpbox tools` had 2 MiB of the guest's
/// code resident for the few hundred KiB it runs. Refused huge pages, a fault
/// maps what fault-around maps (docs/PERFORMANCE.md, "A cold process").
fn no_huge_pages(component: &Component) {
    #[cfg(target_os = "linux")]
    {
        let image = component.image_range();
        // SAFETY: advice about the pages of a mapping wasmtime made for this
        // component and keeps while it lives; MADV_NOHUGEPAGE changes how the
        // pages are mapped, never what they hold. A kernel without it refuses
        // the advice, which changes nothing.
        #[allow(unsafe_code)]
        let _ = unsafe {
            rustix::mm::madvise(
                image.start.cast_mut().cast(),
                image.end as usize - image.start as usize,
                rustix::mm::Advice::LinuxNoHugepage,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = component;
}

fn store(
    component: &Component,
    dir: &UserDir,
    name: &str,
    key: &[u8; KEY_LEN],
) -> Result<(), Refused> {
    let mut bytes = component
        .serialize()
        .map_err(|e| Refused::Io(std::io::Error::other(e)))?;
    let mac = tag(key, name, &bytes).finalize().into_bytes();
    bytes.extend_from_slice(&mac);
    dir.write(name, &bytes)?;
    write_stamp(dir, key, name)
}

/// The SHA-256 of a component's bytes.
pub(crate) fn wasm_digest(wasm: &[u8]) -> [u8; 32] {
    Sha256::digest(wasm).into()
}

/// The file name of a compiled component: a hash of the wasm's, the engine's
/// compatibility hash and the key (so that runtimes with different keys, say
/// under different `MCPBOX_CONFIG_DIR`s, keep apart rather than take each
/// other's files for tampered ones).
fn cache_key(engine: &Engine, wasm_digest: &[u8], key: &[u8; KEY_LEN]) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            unreachable!("only used to feed the digest")
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = ShaHasher(Sha256::new());
    hasher.0.update(CACHE_FORMAT);
    hasher.0.update(wasm_digest);
    hasher.0.update(key);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let digest = hasher.0.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's only ways to the world are the host's transport and grants
    /// (with `wasi:http` under them): it must not import files, sockets,
    /// environment, arguments or randomness.
    #[test]
    fn guest_imports_nothing_but_the_contract_io_clocks_and_http() {
        let engine = engine().unwrap();
        let component = load_component(
            &engine,
            EMBEDDED_GUEST,
            EMBEDDED_GUEST_SHA256,
            None,
            &mut Vec::new(),
        )
        .unwrap();
        let imports: Vec<String> = component
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        assert!(
            imports
                .iter()
                .any(|i| i.starts_with("mcpbox:runtime/transport@")),
            "{imports:?}"
        );
        // wasi:http reaches only what a `remote` grant names (the host's hook
        // refuses anything else).
        let allowed = [
            "mcpbox:runtime/",
            "wasi:io/",
            "wasi:clocks/monotonic-clock@",
            "wasi:clocks/wall-clock@",
            "wasi:http/types@",
            "wasi:http/outgoing-handler@",
        ];
        let unexpected: Vec<&String> = imports
            .iter()
            .filter(|i| !allowed.iter().any(|a| i.starts_with(a)))
            .collect();
        assert!(
            unexpected.is_empty(),
            "the guest imports more than it may: {unexpected:?}"
        );
    }

    #[test]
    fn the_build_time_digest_is_the_guests() {
        assert_eq!(&wasm_digest(EMBEDDED_GUEST), EMBEDDED_GUEST_SHA256);
    }

    fn temp_dirs(tag: &str) -> (PathBuf, CacheDirs) {
        let root = std::env::temp_dir().join(format!("mcpbox-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dirs = CacheDirs {
            cache: root.join("cache"),
            key: root.join("config"),
        };
        (root, dirs)
    }

    /// The empty component (magic, version 0x0d, component layer). The cache
    /// does not depend on what it holds, and this one compiles in microseconds
    /// where the guest takes 10–20 s in a debug build on a busy machine: with
    /// the guest, these tests took minutes of every test run.
    const SMALL: &[u8] = b"\0asm\x0d\x00\x01\x00";

    /// Loads [`SMALL`] through `dirs`, returning the warnings.
    fn load(dirs: &CacheDirs) -> Vec<String> {
        let mut warnings = Vec::new();
        load_component(
            &engine().unwrap(),
            SMALL,
            &wasm_digest(SMALL),
            Some(dirs),
            &mut warnings,
        )
        .unwrap();
        warnings
    }

    fn cwasm(dirs: &CacheDirs) -> PathBuf {
        let files: Vec<_> = std::fs::read_dir(&dirs.cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// The stamped fast path hands wasmtime the whole file, tag included.
    #[test]
    fn wasmtime_loads_a_file_with_the_tag_after_it() {
        let engine = engine().unwrap();
        let (root, dirs) = temp_dirs("tail");
        load(&dirs);
        let file = cwasm(&dirs);
        #[allow(unsafe_code)]
        // SAFETY: written by `store` just now, in a private temporary directory.
        let loaded = unsafe { Component::deserialize_file(&engine, &file) };
        assert!(loaded.is_ok(), "{:?}", loaded.err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A component mapped from its cached file refuses huge pages (`nh` in
    /// its mapping's `VmFlags`), so a fault in its code maps 64 KiB, not 2 MiB.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_component_mapped_from_its_file_refuses_huge_pages() {
        let engine = engine().unwrap();
        let (root, dirs) = temp_dirs("no-huge-pages");
        load(&dirs);
        #[allow(unsafe_code)]
        // SAFETY: written by `store` just now, in a private temporary directory.
        let component = unsafe { Component::deserialize_file(&engine, cwasm(&dirs)) }.unwrap();
        no_huge_pages(&component);
        let start = component.image_range().start as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut here = false;
        let mut flags = None;
        for line in smaps.lines() {
            let range = line.split(' ').next().and_then(|r| r.split_once('-'));
            if let Some((from, to)) = range
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                here = (from..to).contains(&start);
            } else if here && let Some(f) = line.strip_prefix("VmFlags:") {
                flags = Some(f.to_owned());
            }
        }
        let flags = flags.expect("the component's mapping is in /proc/self/smaps");
        assert!(flags.split_whitespace().any(|f| f == "nh"), "{flags}");
        drop(component);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn cache_round_trips_and_keys_on_content() {
        let engine = engine().unwrap();
        let (root, dirs) = temp_dirs("round-trip");
        assert!(load(&dirs).is_empty());
        let file = cwasm(&dirs);
        assert_eq!(mode(&dirs.cache), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dirs.key.join(KEY_FILE)), 0o600);
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        // A second load comes from the cache (the file is not rewritten) and works.
        assert!(load(&dirs).is_empty());
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            written
        );
        assert_ne!(
            cache_key(&engine, EMBEDDED_GUEST_SHA256, &[0; KEY_LEN]),
            cache_key(&engine, &wasm_digest(b"\0asm other"), &[0; KEY_LEN])
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A compiled component changed after mcpbox wrote it
    /// (here one byte in its middle, where the machine code is) is not loaded.
    #[test]
    fn a_patched_cwasm_is_detected_and_replaced() {
        let (root, dirs) = temp_dirs("patched");
        load(&dirs);
        let file = cwasm(&dirs);
        let good = std::fs::read(&file).unwrap();
        let mut bytes = good.clone();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&file, &bytes).unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1 && warnings[0].contains("failed its integrity check"),
            "{warnings:?}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), good, "rewritten as it was");
        // Too short to hold a tag (cut off by a full disk, say): compiled afresh.
        std::fs::write(&file, &good[..10]).unwrap();
        assert!(load(&dirs).is_empty());
        assert_eq!(std::fs::read(&file).unwrap(), good);
        // Under another key (another MCPBOX_CONFIG_DIR, a cache copied from
        // elsewhere) the file has another name: the two never overwrite each other.
        std::fs::write(dirs.key.join(KEY_FILE), [7u8; KEY_LEN]).unwrap();
        assert!(load(&dirs).is_empty());
        let names = std::fs::read_dir(&dirs.cache)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "cwasm")
            })
            .count();
        assert_eq!(names, 2);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A stamped file (checked in full once, then loaded on its stamp) that is
    /// patched afterwards gets the full check again and fails it.
    #[test]
    fn a_stamped_cwasm_that_is_patched_is_detected() {
        let (root, dirs) = temp_dirs("stamped");
        load(&dirs);
        let file = cwasm(&dirs);
        let stamp = file.with_extension("cwasm.verified");
        // Not the ordering of two events but the passing of time itself: a file
        // is stamped only once its change time is STAMP_AFTER old.
        std::thread::sleep(STAMP_AFTER);
        assert!(load(&dirs).is_empty());
        assert!(stamp.exists(), "checked in full and stamped");
        assert!(load(&dirs).is_empty(), "loaded on its stamp");
        let mut bytes = std::fs::read(&file).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&file, &bytes).unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1 && warnings[0].contains("failed its integrity check"),
            "{warnings:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A cache file or directory that others may write is
    /// not used; the guest is compiled in memory and the run goes on.
    #[test]
    fn a_cache_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let (root, dirs) = temp_dirs("world-writable");
        load(&dirs);
        let file = cwasm(&dirs);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1 && warnings[0].contains("may be written by anyone"),
            "{warnings:?}"
        );
        assert_eq!(mode(&file), 0o600, "replaced by a private file");

        std::fs::set_permissions(&dirs.cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1
                && warnings[0].contains("the compiled-component cache was not used")
                && warnings[0].contains("directory"),
            "{warnings:?}"
        );
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            before,
            "nothing written"
        );

        std::fs::set_permissions(&dirs.cache, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(
            dirs.key.join(KEY_FILE),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1 && warnings[0].contains("may be read by others"),
            "a key others can read lets them sign: {warnings:?}"
        );
        std::fs::set_permissions(
            dirs.key.join(KEY_FILE),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::fs::set_permissions(&dirs.key, std::fs::Permissions::from_mode(0o777)).unwrap();
        let warnings = load(&dirs);
        assert!(
            warnings.len() == 1 && warnings[0].contains("config"),
            "{warnings:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
