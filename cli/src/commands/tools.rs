//! `mcpbox tools`: the tools of every connected server (or one), by their
//! namespaced names.

use std::io::Write;

use mcpbox::{Runtime, ServerState};

use crate::exit::Exit;
use crate::{Failure, block, fail, one, settle, still_running};

pub(crate) async fn tools(
    runtime: &Runtime,
    server: Option<&str>,
    json: bool,
) -> Result<Exit, Failure> {
    let servers = settle(runtime).await;
    if let Some(name) = server
        && !servers.iter().any(|s| s.name == name)
    {
        let known: Vec<String> = servers.iter().map(|s| one(&s.name).into_owned()).collect();
        return Err(fail(
            Exit::Usage,
            anyhow::anyhow!(
                "no server named `{}` (configured: {})",
                one(name),
                known.join(", ")
            ),
        ));
    }
    let tools = runtime.tools();
    let selected: Vec<&mcpbox::Tool> = tools
        .iter()
        .filter(|t| server.is_none_or(|s| t.server == s))
        .collect();
    // One write for the whole listing, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &selected)?;
        writeln!(out)?;
    } else {
        let width = selected
            .iter()
            .map(|t| one(&t.name).chars().count())
            .max()
            .unwrap_or(0);
        for t in &selected {
            let description = t
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("");
            writeln!(out, "{:width$}  {}", one(&t.name), one(description))?;
        }
    }
    // Before the warnings on stderr, so a terminal shows them in that order.
    out.flush()?;
    for s in servers.iter().filter(|s| s.state == ServerState::Failed) {
        eprintln!(
            "warning: server `{}` failed: {}",
            one(&s.name),
            block(s.error.as_deref().unwrap_or("unknown error"), "  ")
        );
    }
    still_running(runtime)?;
    Ok(Exit::Success)
}
