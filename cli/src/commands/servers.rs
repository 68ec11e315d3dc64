//! `mcpbox servers`: the configured servers and their state; with `--watch`,
//! every change after that (status, tool lists, warnings, server logs, reloads)
//! until interrupted.

use std::io::Write;

use mcpbox::{Runtime, ServerState, ServerStatus};

use crate::exit::Exit;
use crate::{Failure, block, fail, one, settle, still_running};

pub(crate) async fn servers(runtime: &Runtime, json: bool) -> Result<Exit, Failure> {
    let servers = settle(runtime).await;
    if servers.is_empty() && !json {
        eprintln!("no servers configured (looked for `mcpServers` in the configuration)");
    }
    let needs_login = runtime.authorization_required();
    if json {
        // Each server as `ServerStatus` has it, plus `needsLogin` (the reason
        // and the command) for one that waits for `mcpbox login`, and `sandbox`
        // (its grants, every automatic one included) for a sandboxed one.
        let mut listing = serde_json::to_value(&*servers)?;
        for entry in listing.as_array_mut().into_iter().flatten() {
            let Some(name) = entry["name"].as_str().map(str::to_owned) else {
                continue;
            };
            if let Some(sandbox) = sandbox_of(runtime, &name) {
                entry["sandbox"] = serde_json::json!(sandbox);
            }
            if let Some(reason) = needs_login.get(&name) {
                entry["needsLogin"] = serde_json::json!({
                    "reason": reason,
                    "command": format!("mcpbox login {name}"),
                });
            }
        }
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &listing)?;
        writeln!(out)?;
    } else {
        print_servers(&servers, false, &|name| sandbox_of(runtime, name))?;
        for (server, reason) in needs_login {
            println!("needs login: {}: {}", one(&server), block(&reason, "  "));
        }
    }
    still_running(runtime)?;
    Ok(Exit::Success)
}

/// The sandbox a server runs in, described (its grants and every automatic one).
fn sandbox_of(runtime: &Runtime, server: &str) -> Option<String> {
    runtime.diagnostics(server).and_then(|d| d.sandbox)
}

/// The servers, one line each (and the sandbox of a sandboxed one below), or as JSON.
fn print_servers(
    servers: &[ServerStatus],
    json: bool,
    sandbox: &dyn Fn(&str) -> Option<String>,
) -> Result<(), Failure> {
    // One write for the whole listing, not one per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, servers)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    let width = servers
        .iter()
        .map(|s| one(&s.name).chars().count())
        .max()
        .unwrap_or(0);
    for s in servers {
        writeln!(out, "{}", status_line(s, width))?;
        if let Some(sandbox) = sandbox(&s.name) {
            writeln!(out, "    sandbox: {}", block(&sandbox, "    "))?;
        }
    }
    out.flush()?;
    Ok(())
}

/// One server as a line: state symbol, name, tool count, version, error below.
fn status_line(s: &ServerStatus, width: usize) -> String {
    let symbol = match s.state {
        ServerState::Connected => "●",
        ServerState::Starting => "○",
        ServerState::Failed => "✗",
        ServerState::Closed => "–",
    };
    let name = one(&s.name);
    // Padded by what is shown: an escaped name is wider than its characters.
    let mut line = format!("{symbol} {name:width$}  {:>3} tools", s.tool_count);
    if let Some(v) = &s.protocol_version {
        line.push_str(&format!("  {}", one(v)));
    }
    if let Some(name) = &s.server_name {
        line.push_str(&format!(
            "  {} {}",
            one(name),
            one(s.server_version.as_deref().unwrap_or(""))
        ));
    }
    let mut line = line.trim_end().to_owned();
    if let Some(error) = &s.error {
        line.push_str(&format!("\n    {}", block(error, "    ")));
    }
    line
}

/// Prints the servers, then every event until Ctrl-C, or until the runtime
/// stops by itself (then exit code 3).
/// `events` were subscribed to before the runtime opened, so no change falls
/// between them and the first listing, and a tool changed since the last run
/// is shown even when its server connected before this task ran.
pub(crate) async fn watch(
    runtime: &Runtime,
    mut events: tokio::sync::broadcast::Receiver<mcpbox::Event>,
    json: bool,
) -> Result<Exit, Failure> {
    use mcpbox::Event;
    print_servers(&runtime.servers(), json, &|name| sandbox_of(runtime, name))?;
    // Stopped before the subscription: its event was missed.
    still_running(runtime)?;
    // Until a signal ends the CLI (see `run`).
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                eprintln!("({n} events were dropped: the display fell behind)");
                continue;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(Exit::Success),
        };
        let mut out = std::io::stdout().lock();
        if json {
            let value = match &event {
                Event::Status(s) => serde_json::json!({ "event": "status", "server": s }),
                Event::ToolsChanged(server) => {
                    serde_json::json!({ "event": "toolsChanged", "server": server })
                }
                Event::Warning(text) => serde_json::json!({ "event": "warning", "message": text }),
                Event::Log {
                    server,
                    level,
                    message,
                } => {
                    serde_json::json!({ "event": "log", "server": server, "level": level, "message": message })
                }
                Event::Reloaded(report) => {
                    serde_json::json!({ "event": "reloaded", "report": report })
                }
                Event::ReloadFailed { origin, error } => {
                    serde_json::json!({ "event": "reloadFailed", "origin": origin, "error": error })
                }
                Event::Stopped(reason) => {
                    serde_json::json!({ "event": "stopped", "reason": reason })
                }
                Event::AuthorizationRequired { server, url } => {
                    serde_json::json!({ "event": "authorizationRequired", "server": server, "url": url })
                }
                Event::ResourceUpdated { server, uri } => {
                    serde_json::json!({ "event": "resourceUpdated", "server": server, "uri": uri })
                }
                Event::ResourcesChanged(server) => {
                    serde_json::json!({ "event": "resourcesChanged", "server": server })
                }
                Event::PromptsChanged(server) => {
                    serde_json::json!({ "event": "promptsChanged", "server": server })
                }
                Event::ToolChanged {
                    server,
                    tool,
                    name,
                    changed,
                    policy,
                    reason,
                } => serde_json::json!({
                    "event": "toolChanged", "server": server, "tool": tool, "name": name,
                    "changed": changed, "policy": policy, "reason": reason,
                }),
                other => serde_json::json!({ "event": format!("{other:?}") }),
            };
            writeln!(out, "{value}")?;
        } else {
            match &event {
                Event::Status(s) => writeln!(out, "{}", status_line(s, 0))?,
                Event::ToolsChanged(server) => {
                    writeln!(out, "  {}: tool list changed", one(server))?
                }
                Event::ResourcesChanged(server) => {
                    writeln!(out, "  {}: resource list changed", one(server))?
                }
                Event::PromptsChanged(server) => {
                    writeln!(out, "  {}: prompt list changed", one(server))?
                }
                Event::ToolChanged { server, reason, .. } => {
                    writeln!(out, "  {}: {}", one(server), block(reason, "    "))?
                }
                Event::ResourceUpdated { server, uri } => {
                    writeln!(out, "  {}: {} updated", one(server), one(uri))?
                }
                Event::Warning(text) => writeln!(out, "  warning: {}", block(text, "    "))?,
                Event::Log {
                    server,
                    level,
                    message,
                } => writeln!(
                    out,
                    "  {} [{}] {}",
                    one(server),
                    one(level),
                    block(message, "    ")
                )?,
                Event::Reloaded(report) => writeln!(out, "{}", reload_lines(report))?,
                Event::ReloadFailed { error, .. } => writeln!(
                    out,
                    "  reload failed, the running configuration stays: {}",
                    block(error, "    ")
                )?,
                Event::Stopped(reason) => writeln!(
                    out,
                    "✗ the mcpbox runtime stopped: {}",
                    block(reason, "    ")
                )?,
                // The CLI does not authorize on demand: no URL to show.
                Event::AuthorizationRequired { server, .. } => writeln!(
                    out,
                    "  {}: needs login: run `mcpbox login {}`",
                    one(server),
                    one(server)
                )?,
                other => writeln!(out, "  {}", one(&format!("{other:?}")))?,
            }
        }
        out.flush()?;
        drop(out);
        if let Event::Stopped(reason) = event {
            return Err(fail(
                Exit::Unavailable,
                anyhow::anyhow!("the mcpbox runtime stopped: {reason}"),
            ));
        }
    }
}

/// A reload as lines: what changed, what was kept, the problems.
fn reload_lines(report: &mcpbox::ReloadReport) -> String {
    let mut parts = Vec::new();
    for (what, names) in [
        ("added", &report.added),
        ("removed", &report.removed),
        ("restarted", &report.restarted),
        ("updated", &report.updated),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", one(&names.join(", "))));
        }
    }
    if parts.is_empty() {
        parts.push("nothing changed".into());
    }
    let mut text = format!("  reloaded {}: {}", one(&report.origin), parts.join("; "));
    if report.file_events > 1 {
        text.push_str(&format!(
            " ({} file changes applied at once)",
            report.file_events
        ));
    }
    if !report.kept.is_empty() {
        text.push_str(&format!(
            "\n    kept running as before (the new entry has a problem): {}",
            one(&report.kept.join(", "))
        ));
    }
    for issue in &report.issues {
        text.push_str(&format!(
            "\n    warning: {}",
            block(&issue.to_string(), "      ")
        ));
    }
    text
}
