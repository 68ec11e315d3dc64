//! Tools installed with `uv tool install`.
//!
//! uv keeps each tool in a virtual environment of its own under its tool
//! directory, with a receipt, `uv-receipt.toml`, that names what was asked for
//! and the programs it exposed:
//!
//! ```toml
//! [tool]
//! requirements = [{ name = "mcp-server-time", specifier = "==2026.10.19" }]
//! entrypoints = [
//!     { name = "mcp-server-time", install-path = "/home/me/.local/bin/mcp-server-time", from = "mcp-server-time" },
//! ]
//! ```
//!
//! The package is the first requirement (the others came with `--with`); a
//! program is started by its `install-path` (the link uv made), or from the
//! environment's `bin/` when that link is gone.

use std::path::Path;

use super::{
    Finder, Installed, InstalledPlaces, Looked, Package, Registry, judge_package, list_dir, python,
    read_file, utf8,
};
use crate::client_configs::SourceOutcome;

pub(super) fn read(places: &InstalledPlaces, looked: &mut Vec<Looked>, found: &mut Vec<Installed>) {
    let dir = &places.uv_tool_dir;
    let outcome = match list_dir(dir) {
        Err(outcome) => outcome,
        Ok(listing) => {
            let mut skipped = listing.skipped;
            let mut count = 0;
            for name in listing.names {
                let tool = dir.join(&name);
                if name.starts_with('.') || !tool.is_dir() {
                    continue;
                }
                match read_tool(&tool, places.max_bytes) {
                    Ok((listed, note)) => {
                        count += listed.len();
                        found.extend(listed);
                        skipped.extend(note.map(|n| format!("`{name}`: {n}")));
                    }
                    Err(reason) => skipped.push(format!("`{name}`: {reason}")),
                }
            }
            SourceOutcome::Read {
                servers: count,
                skipped,
            }
        }
    };
    looked.push(Looked {
        by: Finder::UvTool,
        path: dir.clone(),
        chosen_by: None,
        outcome,
    });
}

/// One tool's listed programs, and what could not be read of its package's
/// metadata (its programs are then judged by their names).
fn read_tool(tool: &Path, max_bytes: u64) -> Result<(Vec<Installed>, Option<String>), String> {
    let receipt = tool.join("uv-receipt.toml");
    let text = read_file(&receipt, max_bytes)
        .map_err(|reason| format!("its uv-receipt.toml {reason}"))?
        .ok_or("has no uv-receipt.toml")?;
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("its uv-receipt.toml is not valid TOML: {e}"))?;
    let unknown = || "its uv-receipt.toml has a shape this version of mcpbox does not know";
    let table = doc
        .get("tool")
        .and_then(|t| t.as_table())
        .ok_or_else(unknown)?;
    let package = table
        .get("requirements")
        .and_then(|r| r.as_array())
        .and_then(|r| r.first())
        .and_then(|r| r.get("name"))
        .and_then(|n| n.as_str())
        .ok_or_else(unknown)?
        .to_string();
    let entrypoints = table
        .get("entrypoints")
        .and_then(|e| e.as_array())
        .ok_or_else(unknown)?;
    let mut programs = Vec::new();
    for e in entrypoints {
        let Some(name) = e.get("name").and_then(|n| n.as_str()) else {
            continue;
        };
        // Programs of the packages added with `--with` are theirs, not the tool's.
        if let Some(from) = e.get("from").and_then(|f| f.as_str())
            && python::normalize(from) != python::normalize(&package)
        {
            continue;
        }
        let linked = e
            .get("install-path")
            .and_then(|p| p.as_str())
            .map(Path::new)
            .filter(|p| p.is_absolute() && std::fs::metadata(p).is_ok());
        let program = match linked {
            Some(p) => p.to_path_buf(),
            None if cfg!(windows) => tool.join("Scripts").join(format!("{name}.exe")),
            None => tool.join("bin").join(name),
        };
        if let Some(program) = utf8(&program) {
            programs.push((name.to_string(), program));
        }
    }
    let (dist, note) = match python::find(tool, &package, max_bytes) {
        Ok(dist) => (dist.unwrap_or_default(), None),
        Err(reason) => (python::Dist::default(), Some(reason)),
    };
    let package = Package {
        registry: Registry::Pypi,
        name: package,
        version: dist.version,
    };
    let listed = judge_package(package, &dist.evidence, programs, Finder::UvTool, &receipt);
    Ok((listed, note))
}
