//! Cursor: the project's `.cursor/mcp.json` and the user's `~/.cursor/mcp.json`.
//!
//! `mcpServers` entries are `{"command", "args", "env", "envFile"}` or
//! `{"url", "headers"}`; values may use `${env:NAME}`, `${userHome}`,
//! `${workspaceFolder}`, `${workspaceFolderBasename}` and `${pathSeparator}`,
//! which become `${NAME}`, `${HOME}` and the project's path. Comments are allowed.

use super::entry::Interpolation;
use super::{Candidate, Client, JsonSource, Places, Scope, SourceReport, read_json_source};

pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    for (scope, path) in [
        (
            Scope::Project,
            places.project.join(".cursor").join("mcp.json"),
        ),
        (Scope::User, places.home.join(".cursor").join("mcp.json")),
    ] {
        read_json_source(
            places,
            JsonSource {
                client: Client::Cursor,
                scope,
                path,
                servers_at: &[&["mcpServers"]],
                interpolation: Interpolation::Editor,
            },
            sources,
            out,
        );
    }
}
