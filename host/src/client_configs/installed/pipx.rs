//! Applications installed with `pipx install`.
//!
//! pipx keeps each application in a virtual environment under `venvs/` of its
//! home, with `pipx_metadata.json` naming the package, its version, its programs
//! (`apps`, `app_paths`) and the suffix they were exposed with (`--suffix`);
//! packages added with `pipx inject --include-apps` are in `injected_packages`.
//! A program is started by the link pipx made in its bin directory, or from the
//! environment when that link is gone or leads elsewhere.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    Finder, Installed, InstalledPlaces, Looked, Package, PipxHome, Registry, judge_package,
    list_dir, python, read_file, utf8,
};
use crate::client_configs::SourceOutcome;

pub(super) fn read(places: &InstalledPlaces, looked: &mut Vec<Looked>, found: &mut Vec<Installed>) {
    for home in &places.pipx {
        let dir = home.home.join("venvs");
        let outcome = match list_dir(&dir) {
            Err(outcome) => outcome,
            Ok(listing) => {
                let mut skipped = listing.skipped;
                let mut count = 0;
                for name in listing.names {
                    let venv = dir.join(&name);
                    if name.starts_with('.') || !venv.is_dir() {
                        continue;
                    }
                    match read_venv(&venv, home, places.max_bytes) {
                        Ok((listed, notes)) => {
                            count += listed.len();
                            found.extend(listed);
                            skipped.extend(notes.into_iter().map(|n| format!("`{name}`: {n}")));
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
            by: Finder::Pipx,
            path: dir,
            chosen_by: None,
            outcome,
        });
    }
}

/// One environment's listed programs, and what could not be read of its
/// packages' metadata.
fn read_venv(
    venv: &Path,
    home: &PipxHome,
    max_bytes: u64,
) -> Result<(Vec<Installed>, Vec<String>), String> {
    let file = venv.join("pipx_metadata.json");
    let text = read_file(&file, max_bytes)
        .map_err(|reason| format!("its pipx_metadata.json {reason}"))?
        .ok_or("has no pipx_metadata.json")?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("its pipx_metadata.json is not valid JSON: {e}"))?;
    let unknown = || "its pipx_metadata.json has a shape this version of mcpbox does not know";
    let main = doc.get("main_package").ok_or_else(unknown)?;
    let mut packages = vec![main];
    if let Some(Value::Object(injected)) = doc.get("injected_packages") {
        packages.extend(
            injected
                .values()
                .filter(|p| p.get("include_apps").and_then(Value::as_bool) == Some(true)),
        );
    }
    let mut listed = Vec::new();
    let mut notes = Vec::new();
    for p in packages {
        let Some(name) = p.get("package").and_then(Value::as_str) else {
            return Err(unknown().into());
        };
        let suffix = p.get("suffix").and_then(Value::as_str).unwrap_or("");
        let mut programs = Vec::new();
        for app in p
            .get("app_paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // pipx writes paths as {"__type__": "Path", "__Path__": "..."}.
            let Some(path) = app.get("__Path__").and_then(Value::as_str) else {
                continue;
            };
            let path = PathBuf::from(path);
            let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let exposed = home.bin_dir.join(with_suffix(file_name, suffix));
            let program = if leads_to(&exposed, &path) {
                exposed
            } else {
                path.clone()
            };
            let command = file_name
                .strip_suffix(".exe")
                .unwrap_or(file_name)
                .to_string();
            if let Some(program) = utf8(&program) {
                programs.push((command, program));
            }
        }
        let dist = match python::find(venv, name, max_bytes) {
            Ok(dist) => dist.unwrap_or_default(),
            Err(reason) => {
                notes.push(reason);
                python::Dist::default()
            }
        };
        let version = p
            .get("package_version")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(dist.version);
        let package = Package {
            registry: Registry::Pypi,
            name: name.to_string(),
            version,
        };
        listed.extend(judge_package(
            package,
            &dist.evidence,
            programs,
            Finder::Pipx,
            &file,
        ));
    }
    Ok((listed, notes))
}

/// A program's exposed name: pipx puts `--suffix` at the end of the name,
/// before a Windows `.exe`.
fn with_suffix(name: &str, suffix: &str) -> String {
    match name.strip_suffix(".exe") {
        Some(stem) => format!("{stem}{suffix}.exe"),
        None => format!("{name}{suffix}"),
    }
}

/// Whether the link `exposed` exists and leads to `target` (on Windows, where
/// pipx copies, whether it exists).
fn leads_to(exposed: &Path, target: &Path) -> bool {
    if cfg!(windows) {
        return exposed.is_file();
    }
    match (
        std::fs::canonicalize(exposed),
        std::fs::canonicalize(target),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
