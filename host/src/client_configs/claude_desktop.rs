//! Claude Desktop: `claude_desktop_config.json` in the app's configuration
//! directory — `~/Library/Application Support/Claude/` on macOS,
//! `%APPDATA%\Claude\` on Windows, and `~/.config/Claude/` (or
//! `$XDG_CONFIG_HOME/Claude/`) on Linux, where community builds keep it.
//!
//! Its `mcpServers` entries are local programs (`command`, `args`, `env`); values
//! are literal, with no variable references.

use super::entry::Interpolation;
use super::{Candidate, Client, JsonSource, Places, Scope, SourceReport, read_json_source};

pub(crate) fn read(places: &Places, sources: &mut Vec<SourceReport>, out: &mut Vec<Candidate>) {
    read_json_source(
        places,
        JsonSource {
            client: Client::ClaudeDesktop,
            scope: Scope::User,
            path: places
                .config_dir
                .join("Claude")
                .join("claude_desktop_config.json"),
            servers_at: &[&["mcpServers"]],
            interpolation: Interpolation::Literal,
        },
        sources,
        out,
    );
}
