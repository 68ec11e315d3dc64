//! Programs on PATH named like MCP servers.
//!
//! Each directory of PATH is listed (not searched recursively); an entry is a
//! candidate when its name follows a convention ([`super::name_convention`]) and
//! it is a file that can be run: the execute bit on Unix, an extension of
//! `PATHEXT` on Windows. Nothing is opened, let alone run. A relative directory in
//! PATH (`.`, `bin`) is skipped: what it holds depends on where mcpbox happens to
//! run, so a cloned repository could put anything there.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{Finder, Installed, InstalledPlaces, Looked, list_dir, name_convention, stdio, utf8};
use crate::client_configs::SourceOutcome;

pub(super) fn read(places: &InstalledPlaces, looked: &mut Vec<Looked>, found: &mut Vec<Installed>) {
    let mut seen: HashSet<&PathBuf> = HashSet::new();
    for dir in &places.path {
        if !seen.insert(dir) {
            continue;
        }
        if dir.as_os_str().is_empty() || dir.is_relative() {
            looked.push(Looked {
                by: Finder::Path,
                path: dir.clone(),
                chosen_by: None,
                outcome: SourceOutcome::Skipped {
                    reason: "is a relative directory: what it holds depends on the current \
                             directory, so nothing in it is listed"
                        .into(),
                },
            });
            continue;
        }
        let listing = match list_dir(dir) {
            Ok(listing) => listing,
            Err(outcome) => {
                looked.push(Looked {
                    by: Finder::Path,
                    path: dir.clone(),
                    chosen_by: None,
                    outcome,
                });
                continue;
            }
        };
        let mut skipped = listing.skipped;
        for name in listing.not_utf8 {
            let lossy = name.to_string_lossy();
            if name_convention(&lossy).is_some() {
                skipped.push(format!(
                    "`{lossy}`: its name is not UTF-8, so no configuration can name it"
                ));
            }
        }
        let mut count = 0;
        for name in listing.names {
            let Some(stem) = program_stem(&name, &places.path_ext) else {
                continue;
            };
            let Some(convention) = name_convention(stem) else {
                continue;
            };
            let file = dir.join(&name);
            // Follows links; a dangling one is not a program.
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if !meta.is_file() || !is_executable(&meta) {
                continue;
            }
            let Some(program) = utf8(&file) else {
                skipped.push(format!(
                    "`{name}`: its path is not UTF-8, so no configuration can name it"
                ));
                continue;
            };
            let mut it = Installed::new(program, stem, Finder::Path, dir.clone());
            it.why.push(format!("named `{convention}`"));
            found.push(it);
            count += 1;
        }
        looked.push(Looked {
            by: Finder::Path,
            path: dir.clone(),
            chosen_by: None,
            outcome: SourceOutcome::Read {
                servers: count,
                skipped,
            },
        });
    }
}

/// Adds to each program found the identity of its bare name, when that is
/// what PATH finds first under it: a configuration's `"command": "NAME"` runs it.
pub(super) fn add_bare_names(places: &InstalledPlaces, found: &mut [Installed]) {
    for it in found {
        let program = Path::new(&it.program);
        let Some(file) = program.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let first = places
            .path
            .iter()
            .filter(|d| d.is_absolute())
            .map(|d| d.join(file))
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && is_executable(&m)));
        let Some(first) = first else {
            continue;
        };
        if first != program && std::fs::canonicalize(&first).ok() != it.canonical {
            continue;
        }
        for name in [it.command_name.as_str(), file] {
            let bare = stdio(name, &[]);
            if !it.identities.contains(&bare) {
                it.identities.push(bare);
            }
        }
    }
}

/// The name a program is called by: on Windows without its `PATHEXT`
/// extension (and `None` without one), elsewhere the file name.
fn program_stem<'a>(name: &'a str, path_ext: &[String]) -> Option<&'a str> {
    if path_ext.is_empty() {
        return Some(name);
    }
    let dot = name.rfind('.')?;
    let ext = name[dot..].to_ascii_lowercase();
    path_ext.contains(&ext).then(|| &name[..dot])
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// On Windows the extension decides ([`program_stem`]).
#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_programs_are_named_without_their_extension() {
        let ext = [".exe".to_string(), ".cmd".to_string()];
        assert_eq!(program_stem("mcp-server-x.EXE", &ext), Some("mcp-server-x"));
        assert_eq!(program_stem("mcp-server-x.cmd", &ext), Some("mcp-server-x"));
        assert_eq!(program_stem("mcp-server-x.txt", &ext), None);
        assert_eq!(program_stem("mcp-server-x", &ext), None);
        assert_eq!(program_stem("mcp-server-x", &[]), Some("mcp-server-x"));
    }
}
