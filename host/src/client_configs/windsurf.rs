//! Windsurf: `~/.codeium/windsurf/mcp_config.json`.
//!
//! `mcpServers` entries are `{"command", "args", "env"}` or, for a remote server,
//! `{"serverUrl", "headers"}` (Windsurf's name for `url`); `"disabled": true`
//! switches one off. Values may use `${env:NAME}`, converted as for Cursor.

use super::entry::Interpolation;
use super::{Candidate, Client, JsonSource, Places, Scope, SourceReport, read_json_source};

pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    read_json_source(
        places,
        JsonSource {
            client: Client::Windsurf,
            scope: Scope::User,
            path: places
                .home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            servers_at: &[&["mcpServers"]],
            interpolation: Interpolation::Editor,
        },
        sources,
        out,
    );
}
