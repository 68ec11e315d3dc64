//! Links the `mcpbox` binary with packed relative relocations (`DT_RELR`, lld's
//! `-z pack-relative-relocs`) where the C library that loads it reads them.
//!
//! A position-independent Rust binary holds tens of thousands of relative
//! relocations (every pointer in its read-only data: vtables, string slices),
//! about 1 MB as `RELA` entries, which the dynamic loader reads whole at every
//! start. As `RELR` they take about 12 KB, and a cold `mcpbox tools` has about
//! 2.4 MiB less resident at its peak (docs/PERFORMANCE.md, "A cold process").
//!
//! glibc reads `RELR` from 2.36 on, and lld marks the binary as needing it
//! (`GLIBC_ABI_DT_RELR`), so a binary linked so against an older glibc would not
//! start on the machine that built it. So the flag is given only for the target
//! whose default linker is lld (`x86_64-unknown-linux-gnu`), built on that same
//! machine (host and target alike), when its glibc is 2.36 or later.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == "x86_64-unknown-linux-gnu" && host == target && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bin=mcpbox=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is 2.36 or later, as `getconf GNU_LIBC_VERSION`
/// says (`glibc 2.36`); `false` when it cannot say.
fn glibc_reads_relr() -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    matches!(
        (parts.next().flatten(), parts.next().flatten()),
        (Some(major), Some(minor)) if (major, minor) >= (2, 36)
    )
}
