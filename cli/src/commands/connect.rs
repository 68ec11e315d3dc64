//! `mcpbox connect CLIENT`: rewrite a client's configuration file so that it
//! runs mcpbox in place of the servers `mcpbox import` reads there, printing
//! what changes first and keeping a backup; `--undo` puts the backup back
//! ([`client_configs::connect`] does the work).

use std::io::Write;
use std::path::PathBuf;

use mcpbox::client_configs::connect::{self, Target, Via};
use mcpbox::client_configs::{self, Client, Places, Scope, WriteOutcome};

use crate::exit::Exit;

/// The clients `connect` writes, as the command line names them.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ClientName {
    /// `~/.claude.json` (`mcpServers`), or the project's `.mcp.json`.
    ClaudeCode,
    /// `claude_desktop_config.json` (stdio only).
    ClaudeDesktop,
    /// `~/.cursor/mcp.json`, or the project's `.cursor/mcp.json`.
    Cursor,
    /// The user profile's `mcp.json` (`servers`), or the project's `.vscode/mcp.json`.
    Vscode,
    /// `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// `~/.codex/config.toml` (`$CODEX_HOME`), or the project's `.codex/config.toml`.
    Codex,
}

impl ClientName {
    fn client(self) -> Client {
        match self {
            ClientName::ClaudeCode => Client::ClaudeCode,
            ClientName::ClaudeDesktop => Client::ClaudeDesktop,
            ClientName::Cursor => Client::Cursor,
            ClientName::Vscode => Client::VsCode,
            ClientName::Windsurf => Client::Windsurf,
            ClientName::Codex => Client::Codex,
        }
    }
}

/// Which of a client's files.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScopeName {
    /// The user's own file, for every project.
    User,
    /// The project's file (in the --project directory).
    Project,
}

/// What `mcpbox connect` was asked to do.
pub struct Request {
    pub client: ClientName,
    pub scope: Option<ScopeName>,
    pub project: Option<PathBuf>,
    /// mcpbox's configuration (`--config`): what `mcpbox serve` serves.
    pub config: PathBuf,
    pub http: Option<String>,
    pub import: bool,
    pub dry_run: bool,
    pub undo: bool,
    pub force: bool,
    pub json: bool,
}

fn shown(text: &str) -> String {
    mcpbox::terminal::escape(text, mcpbox::terminal::Lines::Escape).into_owned()
}

/// Runs the command; returns the exit code.
pub async fn run(request: Request) -> anyhow::Result<Exit> {
    let project = match &request.project {
        Some(p) => std::path::absolute(p)?,
        None => std::env::current_dir()?,
    };
    let places = Places::from_env(&project)?;
    let scope = request.scope.map(|s| match s {
        ScopeName::User => Scope::User,
        ScopeName::Project => Scope::Project,
    });
    let client = request.client.client();
    let target = Target::of(&places, client, scope)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());

    if request.undo {
        let undone = connect::undo(&target.path, request.force, places.max_bytes)?;
        if request.json {
            serde_json::to_writer_pretty(&mut out, &undone)?;
            writeln!(out)?;
        } else {
            let path = shown(&undone.path.display().to_string());
            if undone.servers_only {
                writeln!(
                    out,
                    "Restored the servers of {path} as they were before `mcpbox connect` ({}); \
                     the rest of the file changed since and is kept as it is now.",
                    client.label()
                )?;
            } else if undone.restored {
                writeln!(
                    out,
                    "Restored {path} as it was before `mcpbox connect` ({}).",
                    client.label()
                )?;
            } else {
                writeln!(
                    out,
                    "Removed {path}: it did not exist before `mcpbox connect`."
                )?;
            }
            if let Some(saved) = &undone.saved {
                writeln!(
                    out,
                    "It had changed since; that version is kept as {}.",
                    shown(&saved.display().to_string())
                )?;
            }
        }
        out.flush()?;
        return Ok(Exit::Success);
    }

    let config = std::path::absolute(&request.config)?;
    let via = match &request.http {
        Some(url) => Via::Http { url: url.clone() },
        None => Via::Stdio {
            program: std::env::current_exe()?,
            config: config.clone(),
        },
    };
    if request.http.is_none() && !request.import && !config.exists() {
        anyhow::bail!(
            "{}: mcpbox's configuration does not exist, so `mcpbox serve` would have nothing \
             to serve: pass --import to write the replaced servers there first, or name \
             another one with --config",
            config.display()
        );
    }
    let discovery = tokio::task::spawn_blocking({
        let places = places.clone();
        move || client_configs::discover(&places)
    })
    .await?;
    let plan = connect::plan(&places, target, &via, &discovery)?;

    if request.import && !request.dry_run && !plan.replaced.is_empty() {
        let report = client_configs::write(&plan.replaced, &config, places.max_bytes)?;
        let conflicts: Vec<String> = report
            .servers
            .iter()
            .filter(|(_, o)| matches!(o, WriteOutcome::Conflict { .. }))
            .map(|(n, _)| shown(n))
            .collect();
        if !conflicts.is_empty() {
            anyhow::bail!(
                "{}: already has other servers named {}; rename them there and run again \
                 (the client's file was not changed)",
                config.display(),
                conflicts.join(", ")
            );
        }
    }

    if request.json {
        let value = serde_json::json!({
            "path": plan.target.path,
            "client": plan.target.client,
            "scope": plan.target.scope,
            "created": plan.before.is_none(),
            "replaced": plan.replaced.iter().map(|s| serde_json::json!({
                "name": s.name,
                "entry": s.entry(),
                "secrets": s.secrets,
            })).collect::<Vec<_>>(),
            "kept": plan.kept,
            "backup": plan.before.as_ref().map(|_| connect::backup_path(&plan.target.path)),
            "written": !request.dry_run,
        });
        if !request.dry_run {
            connect::apply(&plan)?;
        }
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(Exit::Success);
    }

    let path = shown(&client_configs::tilde(&plan.target.path, &places.home));
    writeln!(
        out,
        "{} ({}): {path}{}",
        client.label(),
        plan.target.scope.label(),
        if plan.before.is_none() {
            " (does not exist: created)"
        } else {
            ""
        }
    )?;
    if plan.replaced.is_empty() {
        writeln!(out, "\nIt configures no servers mcpbox can read.")?;
    } else {
        let config_shown = shown(&client_configs::tilde(&config, &places.home));
        let verb = if request.import && !request.dry_run {
            "added to"
        } else {
            "to be kept, they must be in"
        };
        writeln!(
            out,
            "\nReplaces these servers (their names in mcpbox; {verb} {config_shown}):"
        )?;
        for s in &plan.replaced {
            writeln!(
                out,
                "  {}  {}  {}",
                shown(&s.name),
                s.transport.kind(),
                shown(&s.transport.summary())
            )?;
            for secret in &s.secrets {
                writeln!(
                    out,
                    "      set {} for mcpbox: {} was written inline in the client's file",
                    secret.variable,
                    shown(&secret.field)
                )?;
            }
        }
        if !request.import {
            writeln!(
                out,
                "  (`mcpbox import --write {config_shown}`, or connect --import, adds them)"
            )?;
        }
    }
    if !plan.kept.is_empty() {
        writeln!(
            out,
            "\nKeeps these entries, which mcpbox cannot read: {}",
            shown(&plan.kept.join(", "))
        )?;
    }
    writeln!(out, "\nChanges (nothing else in the file changes):")?;
    if !plan.removed.is_empty() {
        writeln!(out, "  - the entries {}", shown(&plan.removed.join(", ")))?;
    }
    for line in plan.added.lines() {
        writeln!(out, "  + {}", shown(line))?;
    }
    if request.dry_run {
        writeln!(out, "\nNothing written (--dry-run).")?;
        out.flush()?;
        return Ok(Exit::Success);
    }
    connect::apply(&plan)?;
    if plan.before.is_some() {
        writeln!(
            out,
            "\nWrote {path}; the original is kept as {}. `mcpbox connect --undo {}` puts it back.",
            shown(
                &connect::backup_path(&plan.target.path)
                    .display()
                    .to_string()
            ),
            connect::slug(client)
        )?;
    } else {
        writeln!(
            out,
            "\nWrote {path}. `mcpbox connect --undo {}` removes it.",
            connect::slug(client)
        )?;
    }
    match &via {
        Via::Stdio { config, .. } => writeln!(
            out,
            "{} starts `mcpbox serve`, which serves a trusted configuration only: run \
             `mcpbox trust --config {}` if you have not since it last changed.",
            client.label(),
            shown(&config.display().to_string())
        )?,
        Via::Http { .. } => {
            let token = mcpbox::default_config_dir()
                .map(|d| d.join("http-token").display().to_string())
                .unwrap_or_else(|| "http-token in mcpbox's configuration directory".into());
            writeln!(
                out,
                "The entry reads the bearer token from {}: start {} with it set to the token \
                 `mcpbox serve --http` uses (kept in {}), e.g. {}=$(cat {}).",
                connect::TOKEN_VARIABLE,
                client.label(),
                shown(&token),
                connect::TOKEN_VARIABLE,
                shown(&token)
            )?;
        }
    }
    out.flush()?;
    Ok(Exit::Success)
}
