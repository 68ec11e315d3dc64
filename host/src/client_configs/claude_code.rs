//! Claude Code: the project's `.mcp.json` (project scope, checked in) and
//! `~/.claude.json`, which holds the user scope (`mcpServers` at the top) and,
//! per project, the local scope (`projects["/abs/project"].mcpServers`).
//!
//! Values may hold `${VAR}` and `${VAR:-default}` references, which mean the same
//! in mcpbox and are kept. Entries are `{"command", "args", "env"}` or
//! `{"type": "http" | "sse", "url", "headers"}`. Only the local scope of the
//! project being imported into is read; other projects' entries are theirs.

use super::entry::Interpolation;
use super::{Candidate, Client, JsonSource, Places, Scope, SourceReport, read_json_source};

/// Reads the three places, in the order Claude Code gives them precedence:
/// local, project, user.
pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    let claude_json = places.home.join(".claude.json");
    // The key is the project's absolute path as Claude Code saw it: try it as
    // given and with symbolic links resolved.
    let mut keys = vec![places.project.display().to_string()];
    if let Ok(real) = places.project.canonicalize() {
        let real = real.display().to_string();
        if !keys.contains(&real) {
            keys.push(real);
        }
    }
    let local: Vec<[&str; 3]> = keys
        .iter()
        .map(|k| ["projects", k.as_str(), "mcpServers"])
        .collect();
    let local: Vec<&[&str]> = local.iter().map(|p| p.as_slice()).collect();
    read_json_source(
        places,
        JsonSource {
            client: Client::ClaudeCode,
            scope: Scope::Local,
            path: claude_json.clone(),
            servers_at: &local,
            interpolation: Interpolation::Mcpbox,
        },
        sources,
        out,
    );
    read_json_source(
        places,
        JsonSource {
            client: Client::ClaudeCode,
            scope: Scope::Project,
            path: places.project.join(".mcp.json"),
            servers_at: &[&["mcpServers"]],
            interpolation: Interpolation::Mcpbox,
        },
        sources,
        out,
    );
    read_json_source(
        places,
        JsonSource {
            client: Client::ClaudeCode,
            scope: Scope::User,
            path: claude_json,
            servers_at: &[&["mcpServers"]],
            interpolation: Interpolation::Mcpbox,
        },
        sources,
        out,
    );
}
