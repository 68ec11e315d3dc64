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

/// `mcpbox tools --format DIALECT`: the tools in a model provider's format.
/// Human output: the name the provider sees, the description's first line, and
/// a line for each thing the conversion lost; the tools the dialect cannot
/// represent follow, with why. `--json`: the runtime's [`mcpbox::AdaptedTools`],
/// each definition ready to hand the provider.
pub(crate) async fn adapted(
    runtime: &Runtime,
    server: Option<&str>,
    dialect: &str,
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
    let mut adapted = runtime
        .adapted_tools(dialect)
        .await
        .map_err(|e| fail(Exit::Unavailable, anyhow::anyhow!(e)))?;
    if let Some(server) = server {
        let tools = runtime.tools();
        let of_server = |name: &str| tools.iter().any(|t| t.name == name && t.server == server);
        adapted.tools.retain(|t| of_server(&t.registry_name));
        adapted.refused.retain(|r| of_server(&r.name));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &adapted)?;
        writeln!(out)?;
    } else {
        let descriptions = runtime.tools();
        let description = |name: &str| {
            descriptions
                .iter()
                .find(|t| t.name == name)
                .and_then(|t| t.description.as_deref())
                .and_then(|d| d.lines().next())
                .unwrap_or("")
                .to_owned()
        };
        let width = adapted
            .tools
            .iter()
            .map(|t| one(&t.name).chars().count())
            .max()
            .unwrap_or(0);
        for t in &adapted.tools {
            writeln!(
                out,
                "{:width$}  {}",
                one(&t.name),
                one(&description(&t.registry_name))
            )?;
            for n in &t.adapter_notes {
                writeln!(
                    out,
                    "  {} at {}: {}",
                    one(&n.kind),
                    one(&n.pointer),
                    one(&n.lost)
                )?;
            }
        }
        for r in &adapted.refused {
            writeln!(
                out,
                "{}  not offered as a {dialect} tool: {} (at {})",
                one(&r.name),
                one(&r.reason),
                one(&r.pointer)
            )?;
        }
    }
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
