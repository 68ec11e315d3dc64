//! The wasmtime engine and the guest component, compiled once and cached on disk.
//!
//! Compiling the guest with Cranelift takes tens of milliseconds (seconds in an
//! unoptimised build); loading a cached compilation takes well under one. The
//! cache key is a SHA-256 over the wasm bytes and the engine's compatibility
//! hash (wasmtime version, target, settings), so a new guest or a new wasmtime
//! never loads a stale artefact.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use crate::Error;

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
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("MCPBOX_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("mcpbox")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("mcpbox")))
}

/// Loads a component from the cache, or compiles it and stores the result.
/// A cache that cannot be read or written only costs time, never correctness.
/// `digest` is the SHA-256 of `wasm` ([`wasm_digest`]).
pub(crate) fn load_component(
    engine: &Engine,
    wasm: &[u8],
    digest: &[u8],
    cache_dir: Option<&Path>,
) -> Result<Component, Error> {
    let compile = || {
        Component::new(engine, wasm)
            .map_err(|e| Error::Guest(format!("the guest component is not valid: {e:#}")))
    };
    let Some(dir) = cache_dir else {
        return compile();
    };
    let path = dir.join(format!("{}.cwasm", cache_key(engine, digest)));
    if path.is_file() {
        // SAFETY: the file was written by `store` below into mcpbox's own cache
        // directory, under a name derived from the wasm bytes and the engine's
        // compatibility hash, via a rename so it is never seen half-written;
        // wasmtime checks its header and the engine compatibility again.
        #[allow(unsafe_code)]
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok(component);
        }
    }
    let component = compile()?;
    let _ = store(&component, dir, &path);
    Ok(component)
}

fn store(component: &Component, dir: &Path, path: &Path) -> std::io::Result<()> {
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    // Unique per writer, so concurrent first runs never interleave in one file.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The SHA-256 of a component's bytes.
pub(crate) fn wasm_digest(wasm: &[u8]) -> [u8; 32] {
    Sha256::digest(wasm).into()
}

fn cache_key(engine: &Engine, wasm_digest: &[u8]) -> String {
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
    hasher.0.update(wasm_digest);
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
        let component =
            load_component(&engine, EMBEDDED_GUEST, EMBEDDED_GUEST_SHA256, None).unwrap();
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

    #[test]
    fn cache_round_trips_and_keys_on_content() {
        let engine = engine().unwrap();
        let dir = std::env::temp_dir().join(format!("mcpbox-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        load_component(&engine, EMBEDDED_GUEST, EMBEDDED_GUEST_SHA256, Some(&dir)).unwrap();
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(files.len(), 1);
        // A second load comes from the cache and still works.
        load_component(&engine, EMBEDDED_GUEST, EMBEDDED_GUEST_SHA256, Some(&dir)).unwrap();
        assert_ne!(
            cache_key(&engine, EMBEDDED_GUEST_SHA256),
            cache_key(&engine, &wasm_digest(b"\0asm other"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
