//! What an installed Python package's metadata says: its `*.dist-info/METADATA`
//! in a virtual environment's `site-packages` (the core metadata format: mail-style
//! headers, then the description).

use std::path::{Path, PathBuf};

use super::{Evidence, list_dir, read_file};

/// The MCP SDKs on PyPI: a package that depends on one uses MCP.
const SDKS: &[&str] = &["mcp", "fastmcp"];

/// A package as its metadata describes it.
#[derive(Debug, Default)]
pub(super) struct Dist {
    /// `Version:`.
    pub version: Option<String>,
    /// What it says about MCP.
    pub evidence: Evidence,
}

/// A package name as PyPI compares them: lower case, runs of `-`, `_` and `.`
/// as one `-`.
pub(super) fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The metadata of `package` installed in the virtual environment `venv`:
/// `Ok(None)` when it is not there, `Err` (for people) when its file cannot be
/// used.
pub(super) fn find(venv: &Path, package: &str, max_bytes: u64) -> Result<Option<Dist>, String> {
    let want = normalize(package);
    for dir in site_packages(venv) {
        let Ok(listing) = list_dir(&dir) else {
            continue;
        };
        for name in listing.names {
            let Some(stem) = name.strip_suffix(".dist-info") else {
                continue;
            };
            // `name-version`, the name with `-` written as `_`.
            let project = stem.split_once('-').map_or(stem, |(p, _)| p);
            if normalize(project) != want {
                continue;
            }
            let file = dir.join(&name).join("METADATA");
            return match read_file(&file, max_bytes) {
                Ok(Some(text)) => Ok(Some(parse_metadata(&text))),
                Ok(None) => Err(format!("{} is missing", file.display())),
                Err(reason) => Err(format!("{} {reason}", file.display())),
            };
        }
    }
    Ok(None)
}

/// The `site-packages` directories of a virtual environment (Unix:
/// `lib/pythonX.Y/site-packages`; Windows: `Lib/site-packages`).
fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(listing) = list_dir(&venv.join("lib")) {
        for name in listing.names {
            if name.starts_with("python") || name.starts_with("pypy") {
                out.push(venv.join("lib").join(name).join("site-packages"));
            }
        }
    }
    out.push(venv.join("Lib").join("site-packages"));
    out
}

/// Reads a `METADATA` file.
pub(super) fn parse_metadata(text: &str) -> Dist {
    let mut dist = Dist::default();
    let mut body = "";
    let mut headers: Vec<(&str, String)> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, next) = rest.split_once('\n').unwrap_or((rest, ""));
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            body = next;
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = headers.last_mut() {
                value.push('\n');
                value.push_str(line.trim());
            }
        } else if let Some((key, value)) = line.split_once(':') {
            headers.push((key.trim(), value.trim().to_string()));
        }
        rest = next;
    }
    for (key, value) in &headers {
        match key.to_ascii_lowercase().as_str() {
            "version" => dist.version = Some(value.clone()),
            "summary" => dist.evidence.description("summary", value),
            "keywords" => {
                if value.contains(',') {
                    dist.evidence.keywords(value.split(','));
                } else {
                    dist.evidence.keywords(value.split_whitespace());
                }
            }
            "requires-dist" => {
                let (requirement, marker) = value.split_once(';').unwrap_or((value, ""));
                // A dependency of an optional extra is not what the package needs.
                if marker.contains("extra") {
                    continue;
                }
                let name: String = requirement
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                    .collect();
                dist.evidence.dependency(&normalize(&name), SDKS);
            }
            "description" => {
                if let Some(name) = registry_name(value) {
                    dist.evidence.registry_name(&name);
                }
            }
            _ => {}
        }
    }
    if let Some(name) = registry_name(body) {
        dist.evidence.registry_name(&name);
    }
    dist
}

/// The MCP registry's `mcp-name: io.github.owner/name` in a description.
fn registry_name(text: &str) -> Option<String> {
    let at = text.find("mcp-name:")?;
    let name: String = text[at + "mcp-name:".len()..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_'))
        .collect();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_read_from_its_headers_and_description() {
        let text = "Metadata-Version: 2.5\r\nName: mcp-server-time\r\nVersion: 2026.10.19\r\n\
                    Summary: A Model Context Protocol server providing tools for time\r\n\
                    Keywords: llm,mcp,time,timezone\r\nRequires-Dist: mcp<3,>=2.3\r\n\
                    Requires-Dist: pydantic>=2.0.0\r\n\
                    Requires-Dist: fastmcp; extra == \"dev\"\r\n\r\n\
                    # Time MCP Server\r\n\r\n<!-- mcp-name: io.github.modelcontextprotocol/server-time -->\r\n";
        let dist = parse_metadata(text);
        assert_eq!(dist.version.as_deref(), Some("2026.10.19"));
        assert_eq!(
            dist.evidence.server,
            [
                "summary says MCP server",
                "MCP registry name `io.github.modelcontextprotocol/server-time`"
            ]
        );
        assert_eq!(
            dist.evidence.uses,
            ["keyword `mcp`", "depends on the MCP SDK `mcp`"]
        );

        let plain = parse_metadata(
            "Name: cowsay\nVersion: 6.1\nSummary: The famous cowsay\nKeywords: cow mcp-free\n\n\
             Requires mcp-name only in prose: none here\n",
        );
        assert_eq!(plain.evidence, Evidence::default());
        assert_eq!(normalize("MCP_Server..Time"), "mcp-server-time");
    }
}
