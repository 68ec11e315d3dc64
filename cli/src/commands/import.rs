//! `mcpbox import`: what the other clients configured, printed, optionally
//! written into a `.mcp.json` and optionally health-checked. With `--installed`,
//! also what is installed but configured nowhere ([`installed`]).

mod installed;

use std::io::Write;
use std::path::{Path, PathBuf};

use mcpbox::client_configs::{self, Discovery, Places, SourceOutcome, WriteOutcome};
use mcpbox::{Options, Policy, ServerState};

use crate::exit::Exit;

/// What `mcpbox import` was asked to do.
pub struct Request {
    /// `--write [PATH]`: where to write, when asked (what is taken: see
    /// [`installed::taken`]).
    pub write: Option<PathBuf>,
    /// `--check`: connect to every server taken (see [`installed::taken`]).
    pub check: bool,
    /// `--project DIR`: the project whose files are read (default: here).
    pub project: Option<PathBuf>,
    pub json: bool,
    pub policy: Policy,
    pub guest: Option<PathBuf>,
    /// `--trust` or `MCPBOX_TRUST_ALL`: `--check` may start servers found only
    /// in the project's files too.
    pub trusted: bool,
    /// `--installed [NAME,...]`: also list the servers installed but configured
    /// nowhere; the named ones are taken for `--check` and `--write`.
    pub installed: Option<Vec<String>>,
}

/// A one-line field (names and paths come from files other programs wrote),
/// escaped as the rest of the CLI's human output is.
fn shown(text: &str) -> String {
    mcpbox::terminal::escape(text, mcpbox::terminal::Lines::Escape).into_owned()
}

/// Runs the command; returns the exit code.
pub async fn run(request: Request) -> anyhow::Result<Exit> {
    let project = match &request.project {
        Some(p) => p.clone(),
        None => std::env::current_dir()?,
    };
    let places = Places::from_env(&project)?;
    let probing = request.installed.is_some();
    let (discovery, looked) = tokio::task::spawn_blocking({
        let places = places.clone();
        move || {
            let mut discovery = client_configs::discover(&places);
            let looked = probing.then(|| installed::probe(&places, &mut discovery));
            (discovery, looked)
        }
    })
    .await?;
    // What `--write` and `--check` take: what the clients configure, and the
    // installed servers named with `--installed`.
    let named = request.installed.as_deref().unwrap_or_default();
    let taken = installed::taken(&discovery.servers, named)?;

    let written = match &request.write {
        Some(path) => Some(client_configs::write(&taken, path, places.max_bytes)?),
        None => None,
    };

    // A project's files come with the project (a cloned repository can name any
    // program there): as for a configuration file, `--check` starts what only
    // they name once the user said to trust them. Servers also found in the
    // user's own files are the user's already. An installed server taken is
    // one the user named.
    let (checked, unchecked): (Vec<_>, Vec<_>) = taken.iter().cloned().partition(|s| {
        request.trusted
            || s.found_in.is_empty()
            || s.found_in
                .iter()
                .any(|l| l.scope != client_configs::Scope::Project)
    });
    let unchecked: Vec<String> = if request.check {
        unchecked.into_iter().map(|s| s.name).collect()
    } else {
        Vec::new()
    };
    let not_named = if request.check {
        installed::not_taken(&discovery.servers, named)
    } else {
        Vec::new()
    };
    let health = if request.check && !checked.is_empty() {
        let to_check = Discovery {
            sources: Vec::new(),
            servers: checked,
        };
        let mut options = Options::from_config_text("the imported servers", to_check.config_text())
            .policy(request.policy.clone());
        if let Some(guest) = &request.guest {
            options = options.guest_file(guest);
        }
        let runtime = options.open().await?;
        let servers = runtime.ready().await;
        runtime.shutdown().await;
        Some(servers)
    } else {
        None
    };

    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if request.json {
        let mut value = serde_json::json!({
            "sources": discovery.sources,
            "servers": discovery.servers.iter().map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["entry"] = s.entry();
                v
            }).collect::<Vec<_>>(),
            "written": written,
            "health": health.as_deref(),
            "unchecked": unchecked.iter().chain(&not_named).collect::<Vec<_>>(),
        });
        if let Some(looked) = &looked {
            value["installedSources"] = serde_json::to_value(looked)?;
        }
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        print_human(
            &mut out,
            &places,
            &discovery,
            looked.as_deref(),
            written.as_ref(),
            request.write.is_some(),
        )?;
        installed::print_how_to_take(&mut out, &discovery.servers, named, written.is_some())?;
        if let Some(health) = &health {
            writeln!(out, "\nHealth:")?;
            let width = health
                .iter()
                .map(|s| s.name.chars().count())
                .max()
                .unwrap_or(0);
            for s in health.iter() {
                let symbol = match s.state {
                    ServerState::Connected => "●",
                    ServerState::Starting => "○",
                    ServerState::Failed => "✗",
                    ServerState::Closed => "–",
                };
                let mut line = format!("  {symbol} {:width$}", shown(&s.name));
                match s.state {
                    ServerState::Connected => {
                        line.push_str(&format!("  {} tools", s.tool_count));
                        if let Some(v) = &s.protocol_version {
                            line.push_str(&format!("  {v}"));
                        }
                    }
                    _ => {
                        if let Some(e) = &s.error {
                            line.push_str(&format!("  {}", shown(e.lines().next().unwrap_or(""))));
                        }
                    }
                }
                writeln!(out, "{line}")?;
            }
        }
        if !unchecked.is_empty() {
            writeln!(
                out,
                "\nNot checked (found only in the project's files, which could start anything; \
                 pass --trust to check them too): {}",
                shown(&unchecked.join(", "))
            )?;
        }
        installed::print_not_named(&mut out, &not_named)?;
    }
    out.flush()?;
    let unhealthy = health
        .as_deref()
        .is_some_and(|h| h.iter().any(|s| s.state == ServerState::Failed));
    Ok(if unhealthy {
        Exit::Unavailable
    } else {
        Exit::Success
    })
}

fn place(path: &Path, places: &Places) -> String {
    match path.strip_prefix(&places.project) {
        Ok(rest) => shown(&rest.display().to_string()),
        Err(_) => shown(&client_configs::tilde(path, &places.home)),
    }
}

fn print_human(
    out: &mut impl Write,
    places: &Places,
    discovery: &Discovery,
    looked: Option<&[client_configs::installed::Looked]>,
    written: Option<&client_configs::WriteReport>,
    asked_to_write: bool,
) -> std::io::Result<()> {
    writeln!(out, "Sources:")?;
    let mut missing = Vec::new();
    for s in &discovery.sources {
        let what = format!(
            "{} ({}, {})",
            place(&s.path, places),
            s.client.label(),
            s.scope.label()
        );
        match &s.outcome {
            SourceOutcome::Missing => {
                let shown = place(&s.path, places);
                if !missing.contains(&shown) {
                    missing.push(shown);
                }
            }
            SourceOutcome::Read { servers, skipped } => {
                let plural = if *servers == 1 { "" } else { "s" };
                writeln!(out, "  {what}: {servers} server{plural}")?;
                for reason in skipped {
                    writeln!(out, "      skipped {}", shown(reason))?;
                }
            }
            SourceOutcome::Skipped { reason } => {
                writeln!(out, "  {what}: skipped: it {}", shown(reason))?;
            }
        }
    }
    if !missing.is_empty() {
        writeln!(out, "  not found: {}", missing.join(", "))?;
    }
    if let Some(looked) = looked {
        installed::print_looked(out, places, looked)?;
    }

    if discovery.servers.is_empty() {
        writeln!(out, "\nNo MCP servers found.")?;
        return Ok(());
    }
    writeln!(out, "\nServers:")?;
    let width = discovery
        .servers
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for s in &discovery.servers {
        let off = if s.enabled { "" } else { "  (disabled)" };
        writeln!(
            out,
            "  {:width$}  {:5}  {}{off}",
            shown(&s.name),
            s.transport.kind(),
            shown(&s.transport.summary())
        )?;
        let found: Vec<String> = s
            .found_in
            .iter()
            .map(|l| {
                format!(
                    "{} ({}) {}",
                    l.client.label(),
                    l.scope.label(),
                    place(&l.path, places)
                )
            })
            .collect();
        if !found.is_empty() {
            writeln!(out, "      found in: {}", found.join("; "))?;
        }
        installed::print_server(out, places, s)?;
        for secret in &s.secrets {
            writeln!(
                out,
                "      set {}: {} was written inline in {}; it is now ${{{}}}",
                secret.variable,
                shown(&secret.field),
                place(&secret.file, places),
                secret.variable
            )?;
        }
        for note in &s.notes {
            writeln!(out, "      note: {}", shown(note))?;
        }
    }

    match written {
        None if !asked_to_write => writeln!(
            out,
            "\nNothing written: `mcpbox import --write [PATH]` adds these servers to a .mcp.json."
        )?,
        None => {}
        Some(report) => {
            let target = place(&report.path, places);
            let names = |want: fn(&WriteOutcome) -> bool| -> Vec<String> {
                report
                    .servers
                    .iter()
                    .filter(|(_, o)| want(o))
                    .map(|(n, _)| shown(n))
                    .collect()
            };
            let added = names(|o| matches!(o, WriteOutcome::Added));
            let there = names(|o| matches!(o, WriteOutcome::AlreadyThere));
            if report.changed {
                let verb = if report.created { "Created" } else { "Updated" };
                writeln!(out, "\n{verb} {target}: added {}", added.join(", "))?;
            } else {
                writeln!(out, "\n{target} is unchanged")?;
            }
            if !there.is_empty() {
                writeln!(out, "  already there: {}", there.join(", "))?;
            }
            for (name, outcome) in &report.servers {
                if let WriteOutcome::Conflict { existing } = outcome {
                    writeln!(
                        out,
                        "  not written: `{}`: {target} already has a different server of that name \
                         ({}); rename one of them and run again",
                        shown(name),
                        shown(existing)
                    )?;
                }
            }
        }
    }
    Ok(())
}
