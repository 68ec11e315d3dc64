//! Builds the guest component and puts it in `OUT_DIR` for `include_bytes!`.
//!
//! The guest is a workspace member built for `wasm32-wasip2` by a nested
//! `cargo build` with a target directory of its own, `mcpbox-guest/` inside the
//! workspace's (the outer one would deadlock on cargo's build lock). Every build of
//! the default guest shares it: the debug and release hosts' and the JS host's
//! (`js/scripts/build.js`), so the guest, which takes minutes with the `guest`
//! profile's LTO, is built once for all of them. `MCPBOX_GUEST_WASM=/path/to/guest.wasm`
//! embeds a prebuilt component instead.

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use sha2::{Digest, Sha256};

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "guest";

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let embedded = out_dir.join("mcpbox_guest.wasm");

    println!("cargo:rerun-if-env-changed=MCPBOX_GUEST_WASM");
    if let Some(prebuilt) = env::var_os("MCPBOX_GUEST_WASM") {
        let prebuilt = PathBuf::from(prebuilt);
        println!("cargo:rerun-if-changed={}", prebuilt.display());
        fs::copy(&prebuilt, &embedded).unwrap_or_else(|e| {
            fail(&format!(
                "MCPBOX_GUEST_WASM={} could not be read: {e}",
                prebuilt.display()
            ))
        });
        write_digest(&embedded);
        return;
    }

    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    for path in [
        "guest/Cargo.toml",
        "guest/src",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }

    ensure_target_installed();

    let target_dir = guest_target_dir(&out_dir);
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--quiet", "-p", "mcpbox-guest", "--target", TARGET])
        .args(["--profile", PROFILE])
        .arg("--target-dir")
        .arg(&target_dir)
        // Flags meant for the host (for example `-C target-cpu=native`) must not
        // reach the wasm build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo to build the guest: {e}")));
    if !status.success() {
        fail("building the guest component failed (see the errors above)");
    }

    let built = target_dir
        .join(TARGET)
        .join(PROFILE)
        .join("mcpbox_guest.wasm");
    fs::copy(&built, &embedded).unwrap_or_else(|e| {
        fail(&format!(
            "{} is missing after the build: {e}",
            built.display()
        ))
    });
    write_digest(&embedded);
}

/// `mcpbox-guest/` in the directory cargo builds into (the nearest ancestor of
/// `OUT_DIR` holding the `CACHEDIR.TAG` cargo writes at its top), which
/// `js/scripts/build.js` uses too; `OUT_DIR/guest-target` where there is none.
fn guest_target_dir(out_dir: &std::path::Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map_or_else(
            || out_dir.join("guest-target"),
            |top| top.join("mcpbox-guest"),
        )
}

/// `rust-toolchain.toml` names the target, but rustup does not install it on its
/// own where `RUSTUP_AUTO_INSTALL=0`; install it here so a fresh clone builds.
fn ensure_target_installed() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == TARGET) => {}
        Ok(_) => {
            println!("cargo:warning=installing the {TARGET} target with rustup");
            let ok = Command::new("rustup")
                .args(["target", "add", TARGET])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                fail(&format!(
                    "the {TARGET} target is missing and `rustup target add {TARGET}` failed; run it by hand"
                ));
            }
        }
        // No rustup (a distribution toolchain): let cargo report a missing target.
        Err(_) => {}
    }
}

/// The guest's SHA-256 next to it, so the host's component cache key costs
/// nothing at start-up.
fn write_digest(wasm: &std::path::Path) {
    let bytes = fs::read(wasm).unwrap_or_else(|e| fail(&format!("{}: {e}", wasm.display())));
    let digest = Sha256::digest(&bytes);
    fs::write(wasm.with_extension("sha256"), digest)
        .unwrap_or_else(|e| fail(&format!("writing the guest's digest: {e}")));
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
