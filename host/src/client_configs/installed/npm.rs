//! Packages installed with `npm install -g`.
//!
//! npm installs global packages under its global prefix: `lib/node_modules/`
//! (`node_modules\` on Windows), with links to their programs in `bin/` (on
//! Windows, `.cmd` files in the prefix itself). The prefix is found the way npm
//! finds it, without running npm: `npm_config_prefix` in the environment, else
//! `prefix=` in the user's `.npmrc` (`npm_config_userconfig`), in the node
//! install's `etc/npmrc` or in npm's own `npmrc`, else the install of the `node`
//! on PATH (`/usr/local/bin/node` → `/usr/local`). Each package's `package.json`
//! says what it is (`mcpName`, `keywords`, `description`, `dependencies`) and
//! names its programs (`bin`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    Evidence, Finder, Installed, InstalledPlaces, Looked, Package, Registry, judge_package,
    list_dir, read_file, stdio, utf8,
};
use crate::client_configs::{SourceOutcome, tilde};

/// The MCP SDKs and frameworks on npm: a package that depends on one uses MCP.
const SDKS: &[&str] = &[
    "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/server",
    "fastmcp",
    "mcp-framework",
];

pub(super) fn read(places: &InstalledPlaces, looked: &mut Vec<Looked>, found: &mut Vec<Installed>) {
    let (prefix, chosen_by) = match global_prefix(places) {
        Ok(found) => found,
        Err(reason) => {
            looked.push(Looked {
                by: Finder::Npm,
                path: places.npm_userconfig.clone(),
                chosen_by: None,
                outcome: SourceOutcome::Skipped { reason },
            });
            return;
        }
    };
    let (modules, bin) = if cfg!(windows) {
        (prefix.join("node_modules"), prefix.clone())
    } else {
        (prefix.join("lib/node_modules"), prefix.join("bin"))
    };
    let outcome = match list_dir(&modules) {
        Err(outcome) => outcome,
        Ok(listing) => {
            let mut skipped = listing.skipped;
            let mut count = 0;
            let mut packages = Vec::new();
            for name in listing.names {
                if name.starts_with('.') {
                    continue;
                }
                if name.starts_with('@') {
                    match list_dir(&modules.join(&name)) {
                        Ok(scoped) => {
                            skipped.extend(scoped.skipped);
                            packages.extend(
                                scoped
                                    .names
                                    .into_iter()
                                    .filter(|n| !n.starts_with('.'))
                                    .map(|n| format!("{name}/{n}")),
                            );
                        }
                        Err(_) => continue,
                    }
                } else {
                    packages.push(name);
                }
            }
            for name in packages {
                match read_package(&modules.join(&name), &bin, places.max_bytes) {
                    Ok(listed) => {
                        count += listed.len();
                        found.extend(listed);
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
        by: Finder::Npm,
        path: modules,
        chosen_by: Some(chosen_by),
        outcome,
    });
}

/// npm's global prefix, and how it was chosen (for people).
fn global_prefix(places: &InstalledPlaces) -> Result<(PathBuf, String), String> {
    if let Some(prefix) = &places.npm_prefix {
        return Ok((prefix.clone(), "npm_config_prefix".into()));
    }
    let from_file = |file: &Path| -> Option<(PathBuf, String)> {
        let text = read_file(file, places.max_bytes).ok()??;
        let prefix = npmrc_prefix(&text, &places.home)?;
        Some((
            prefix,
            format!("the prefix in {}", tilde(file, &places.home)),
        ))
    };
    if let Some(found) = from_file(&places.npm_userconfig) {
        return Ok(found);
    }
    let Some(node) = node_on_path(places) else {
        return Err(format!(
            "npm's global prefix is unknown: npm_config_prefix is not set, {} sets no prefix, \
             and there is no node on PATH",
            tilde(&places.npm_userconfig, &places.home)
        ));
    };
    // `<prefix>/bin/node` on Unix, `<prefix>\node.exe` on Windows.
    let real = std::fs::canonicalize(&node).unwrap_or_else(|_| node.clone());
    let Some(bin) = real.parent() else {
        return Err(format!("{} has no parent directory", real.display()));
    };
    let node_prefix = if cfg!(windows) {
        bin.to_path_buf()
    } else {
        bin.parent().unwrap_or(bin).to_path_buf()
    };
    let npm_dir = if cfg!(windows) {
        node_prefix.join("node_modules/npm")
    } else {
        node_prefix.join("lib/node_modules/npm")
    };
    for file in [node_prefix.join("etc/npmrc"), npm_dir.join("npmrc")] {
        if let Some(found) = from_file(&file) {
            return Ok(found);
        }
    }
    Ok((
        node_prefix,
        format!(
            "the install of the node on PATH, {}",
            tilde(&node, &places.home)
        ),
    ))
}

/// The first `node` program on PATH (found, not run).
fn node_on_path(places: &InstalledPlaces) -> Option<PathBuf> {
    let name = if cfg!(windows) { "node.exe" } else { "node" };
    places
        .path
        .iter()
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// The `prefix` an `.npmrc` sets: ini lines, `;` and `#` comments, `${VAR}`
/// from the environment and a leading `~/` for the home directory, as npm reads
/// them. A relative prefix is not used.
fn npmrc_prefix(text: &str, home: &Path) -> Option<PathBuf> {
    let mut prefix = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with([';', '#']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "prefix" {
            continue;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        prefix = Some(expand(value, home));
    }
    prefix.filter(|p: &PathBuf| p.is_absolute())
}

/// `${VAR}` replaced by the variable (empty when unset), a leading `~/` by
/// the home directory.
fn expand(value: &str, home: &Path) -> PathBuf {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let name = rest[start + 2..start + end].trim_end_matches('?');
        out.push_str(&std::env::var(name).unwrap_or_default());
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    match out.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(out),
    }
}

/// One package's listed programs.
fn read_package(dir: &Path, bin: &Path, max_bytes: u64) -> Result<Vec<Installed>, String> {
    let file = dir.join("package.json");
    let text = read_file(&file, max_bytes)
        .map_err(|reason| format!("its package.json {reason}"))?
        .ok_or("has no package.json")?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("its package.json is not valid JSON: {e}"))?;
    let Some(name) = doc.get("name").and_then(Value::as_str) else {
        return Err("its package.json has no name".into());
    };
    let mut evidence = Evidence::default();
    if let Some(registry_name) = doc.get("mcpName").and_then(Value::as_str) {
        evidence.registry_name(registry_name);
    }
    if let Some(Value::Array(keywords)) = doc.get("keywords") {
        evidence.keywords(keywords.iter().filter_map(Value::as_str));
    }
    if let Some(description) = doc.get("description").and_then(Value::as_str) {
        evidence.description("description", description);
    }
    if let Some(Value::Object(deps)) = doc.get("dependencies") {
        for dep in deps.keys() {
            evidence.dependency(dep, SDKS);
        }
    }
    // `"bin": "path"` is a program named after the package; an object names each.
    let unscoped = name.rsplit('/').next().unwrap_or(name);
    let bins: Vec<(String, String)> = match doc.get("bin") {
        Some(Value::String(path)) => vec![(unscoped.to_string(), path.clone())],
        Some(Value::Object(bins)) => bins
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    let mut programs = Vec::new();
    let mut scripts = Vec::new();
    for (program, script) in &bins {
        // A program name with a path in it is not one npm links.
        if program.contains(['/', '\\']) || program.starts_with('.') {
            continue;
        }
        let link = if cfg!(windows) {
            bin.join(format!("{program}.cmd"))
        } else {
            bin.join(program)
        };
        let script = dir.join(script);
        let path = if std::fs::metadata(&link).is_ok() {
            link
        } else {
            script.clone()
        };
        if let Some(path) = utf8(&path) {
            programs.push((program.clone(), path));
            scripts.push((program.clone(), script));
        }
    }
    let package = Package {
        registry: Registry::Npm,
        name: name.to_string(),
        version: doc
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let mut listed = judge_package(package, &evidence, programs, Finder::Npm, &file);
    // `node <its script>` runs it too.
    for it in &mut listed {
        let Some((_, script)) = scripts.iter().find(|(p, _)| *p == it.command_name) else {
            continue;
        };
        let real = std::fs::canonicalize(script).ok();
        for s in std::iter::once(script).chain(real.as_ref()) {
            if let Some(s) = s.to_str() {
                let alias = stdio("node", &[s]);
                if !it.identities.contains(&alias) {
                    it.identities.push(alias);
                }
            }
        }
    }
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npmrc_prefix_as_npm_reads_it() {
        let home = Path::new("/home/me");
        assert_eq!(
            npmrc_prefix(
                "; comment\nregistry=https://r.example\nprefix = ~/.npm-global\n",
                home
            ),
            Some(PathBuf::from("/home/me/.npm-global"))
        );
        assert_eq!(
            npmrc_prefix("prefix=\"/opt/npm\"\n# prefix=/ignored\n", home),
            Some(PathBuf::from("/opt/npm"))
        );
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(
            expand("${PATH}/x", home),
            PathBuf::from(format!("{path}/x"))
        );
        assert_eq!(npmrc_prefix("prefix=relative/dir\n", home), None);
        assert_eq!(npmrc_prefix("cache=/tmp/c\n", home), None);
    }
}
