//! VS Code: the workspace's `.vscode/mcp.json` and the user profile's
//! `mcp.json` (`~/.config/Code/User/mcp.json` on Linux,
//! `~/Library/Application Support/Code/User/mcp.json` on macOS,
//! `%APPDATA%\Code\User\mcp.json` on Windows).
//!
//! Servers are under `servers` (not `mcpServers`), each with a `type`
//! (`stdio`, `http`, `sse`). `inputs` declares prompts (`promptString`, often
//! `"password": true`) that values use as `${input:id}`: mcpbox does not prompt,
//! so each becomes a variable named after the id (`api-key` → `${API_KEY}`) with
//! a note saying to set it. `${env:NAME}`, `${userHome}` and `${workspaceFolder}`
//! are converted as for Cursor. Comments and trailing commas are allowed.

use super::entry::Interpolation;
use super::{Candidate, Client, JsonSource, Places, Scope, SourceReport, read_json_source};

pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    for (scope, path) in [
        (
            Scope::Project,
            places.project.join(".vscode").join("mcp.json"),
        ),
        (
            Scope::User,
            places.config_dir.join("Code").join("User").join("mcp.json"),
        ),
    ] {
        read_json_source(
            places,
            JsonSource {
                client: Client::VsCode,
                scope,
                path,
                // `mcpServers` too: people paste entries from the other clients.
                servers_at: &[&["servers"], &["mcpServers"]],
                interpolation: Interpolation::Editor,
            },
            sources,
            out,
        );
    }
}
