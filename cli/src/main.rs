//! `mcpbox`: list and call the tools of the MCP servers in a `.mcp.json`.
//!
//! The command line of the `mcpbox` library: this file holds what clap reads
//! ([`Cli`], [`Command`]), [`run`] (the trust check, the runtime's options for
//! each command, signals and shutdown) and the helpers the commands share; each
//! subcommand is a file of [`commands`]. Exit codes: [`exit::Exit`], which
//! `--help` and docs/cli.md list. The reference docs/cli.md is generated from
//! the definitions below (`reference`).
//!
//! Human-readable output shows text from servers and configurations through
//! [`mcpbox::terminal::escape`] ([`one`] for one-line fields, [`block`] for text
//! that may span lines), so it cannot drive the terminal; `--json` output is exact.

#[cfg(test)]
mod book;
mod commands;
mod exit;
#[cfg(test)]
mod reference;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use exit::Exit;
use indicatif::{ProgressBar, ProgressStyle};
use mcpbox::terminal::{Lines, escape};
use mcpbox::trust::ConfigFile;
use mcpbox::{Options, Policy, Runtime, ServerState, ServerStatus};

use commands::serve::GatewayLimits;

#[derive(Parser, Debug)]
#[command(
    name = "mcpbox",
    version,
    about = "Use the tools of MCP servers through a sandboxed WebAssembly component"
)]
struct Cli {
    /// The configuration file (the `.mcp.json` format of Claude Code, Cursor and VS Code).
    #[arg(long, global = true, default_value = ".mcp.json", value_name = "PATH")]
    config: PathBuf,
    /// Load this guest component instead of the embedded one.
    #[arg(long, global = true, value_name = "PATH")]
    guest: Option<PathBuf>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Do not contact remote servers (`http`, `sse`): they fail as denied by the policy.
    #[arg(long, global = true)]
    no_network: bool,
    /// Do not start stdio servers (child processes): they fail as denied by the policy.
    #[arg(long, global = true)]
    no_processes: bool,
    /// Append the audit trail (one JSON line per call) to this file, instead of
    /// the configuration's `audit.file`.
    #[arg(long, global = true, value_name = "PATH")]
    audit: Option<PathBuf>,
    /// Also apply the MCP permission rules of the Claude Code settings next to the
    /// configuration (.claude/settings.json, .claude/settings.local.json).
    #[arg(long, global = true)]
    claude_settings: bool,
    /// Start the servers of the configuration without checking that it is trusted
    /// (for CI; also `MCPBOX_TRUST_ALL=1`).
    #[arg(long, global = true)]
    trust: bool,
    /// The most memory the guest component may use, in MiB (default 256); a call's
    /// arguments may be 1/16 of it.
    #[arg(long, global = true, value_name = "MIB", value_parser = clap::value_parser!(u32).range(1..=4096))]
    memory_limit: Option<u32>,
    /// How long the runtime polls its servers' pipes before it sleeps, in
    /// microseconds (default 50, what was measured; 0 sleeps at once).
    /// Polling spares a wake-up when an answer follows within it; it polls less
    /// while answers come later.
    #[arg(long, global = true, value_name = "MICROSECONDS", value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    busy_poll: Option<u32>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List configured servers and their state.
    Servers {
        /// Keep running and print every change (status, tool lists, warnings,
        /// server logs) as it happens, until interrupted.
        #[arg(long)]
        watch: bool,
    },
    /// List the tools of every connected server.
    Tools {
        /// Only this server's tools.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// The tools in a model provider's format, names and schemas converted,
        /// with a note for everything a conversion lost (`--json`: the
        /// provider-ready definitions with `adapterNotes`, and the tools the
        /// dialect cannot represent with why).
        #[arg(long, value_name = "DIALECT", value_parser = clap::builder::PossibleValuesParser::new(mcpbox::DIALECTS))]
        format: Option<String>,
    },
    /// List the resources of every connected server that offers them (all pages).
    Resources {
        /// Only this server's resources.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// List resource templates instead.
        #[arg(long)]
        templates: bool,
    },
    /// Read a resource by URI and print its text (`--json`: every item, blobs
    /// as base64). Without --server, the first server that has the URI answers.
    Read {
        /// The resource's URI, as `mcpbox resources` shows it.
        uri: String,
        /// The server to read it from.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// Subscribe to it and read it again at every update, until Ctrl-C.
        #[arg(long)]
        follow: bool,
    },
    /// List the prompts of every connected server that offers them.
    Prompts {
        /// Only this server's prompts.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Get a prompt filled in with arguments and print its messages.
    Prompt {
        /// The prompt as `mcpbox prompts` names it (mcp__{server}__{prompt}), or
        /// SERVER/PROMPT.
        name: String,
        /// Its arguments, KEY=VALUE each.
        arguments: Vec<String>,
    },
    /// List the skills of every connected server that serves them (the skills
    /// extension); no skill file is read.
    Skills {
        /// Only this server's skills.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Load a skill and print its SKILL.md, verified against the server's entry
    /// (size, SHA-256 digest, frontmatter); with --file, read one of its files.
    Skill {
        /// The skill's name (as `mcpbox skills` shows it, with or without its
        /// SERVER/), or its SKILL.md URI.
        name: String,
        /// The server that serves it.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// A file of the skill to read once it is loaded: its path in the skill
        /// (references/FORMS.md) or its URI.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
    },
    /// Trust the configuration file (`--config`) as it is now, so that its servers
    /// may start: shows what it runs and remembers the file by path and SHA-256.
    /// Also accepts its tools' definitions that changed since they were pinned
    /// (held back by a server's `onToolChange`), as mcpbox last saw them.
    Trust,
    /// Call a tool and print its result.
    Call {
        /// The namespaced tool name, e.g. mcp__demo__echo.
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from stdin.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Give up after this many seconds (overrides the server's tool timeout).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Approve the call if an `ask` permission rule covers it, and go on past a
        /// URL a server asks the user to open (printed, never opened), without
        /// asking. Without it, a terminal is asked; with no terminal, the call is
        /// refused (and such a URL declined).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Run the call as a task, when its tool allows one (`execution.taskSupport:
        /// optional`; one that requires a task always runs as one): the task's
        /// statuses are shown on stderr while the call waits. To a 2026-07-28
        /// server with the tasks extension, the call declares it and runs as a task.
        #[arg(long)]
        task: bool,
        /// The tool name and arguments are a model's, made under `tools --format
        /// DIALECT`: the name maps back to the registry's and the arguments to
        /// what the server's own schema expects, which then checks them.
        #[arg(long, value_name = "DIALECT", value_parser = clap::builder::PossibleValuesParser::new(mcpbox::DIALECTS))]
        format: Option<String>,
    },
    /// Authorize mcpbox with a remote server that uses OAuth: opens the
    /// authorization page in the browser (or prints its URL) and waits for the
    /// redirect to a listener on 127.0.0.1.
    Login {
        /// The server's name in the configuration.
        server: String,
        /// Give up waiting for the browser after this many seconds.
        #[arg(long, value_name = "SECS", default_value = "300")]
        timeout: u64,
        /// Only print the URL; do not open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the OAuth tokens of a remote server.
    Logout {
        /// The server's name in the configuration.
        server: String,
    },
    /// Find the MCP servers configured for Claude Code, Claude Desktop, Cursor,
    /// VS Code, Windsurf and Codex, and print them (nothing is written unless asked).
    Import {
        /// Add the servers found to this .mcp.json (default: the --config file),
        /// never replacing an entry that is there (installed ones: only if named).
        #[arg(long, value_name = "PATH", num_args = 0..=1)]
        write: Option<Option<PathBuf>>,
        /// Connect to every server found and report its health (exit code 3 when
        /// one fails; installed ones: only if named).
        #[arg(long)]
        check: bool,
        /// The project whose files are read (default: the current directory).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Also list the servers installed but configured nowhere (on PATH, by
        /// uv tool, pipx, npm -g), judged by names and package metadata: nothing
        /// is run. --check and --write take only the ones named here.
        #[arg(long, value_name = "NAME", num_args = 0..=1, value_delimiter = ',')]
        installed: Option<Vec<String>>,
    },
    /// Make a client run mcpbox in place of the servers its configuration file
    /// names (the ones `import` reads there): prints what changes, keeps the
    /// original beside the file (.mcpbox-backup), then writes. Over stdio the
    /// client runs `mcpbox serve --config` with this --config; with --http it
    /// connects to that URL, reading the token from MCPBOX_TOKEN.
    Connect {
        /// The client.
        #[arg(value_enum)]
        client: commands::connect::ClientName,
        /// Which of its files (default: the user's).
        #[arg(long, value_enum, value_name = "SCOPE")]
        scope: Option<commands::connect::ScopeName>,
        /// The project whose files are meant by --scope project (default: the
        /// current directory).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Point the client at this `mcpbox serve --http` URL (e.g.
        /// http://127.0.0.1:8080/mcp) instead of having it start mcpbox.
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// First add the servers it replaces to the --config file, as
        /// `import --write` does (never replacing an entry there).
        #[arg(long)]
        import: bool,
        /// Print what would change and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Put back the file as it was before `connect` (only its servers, when the
        /// client changed the rest since), refusing when its servers changed since.
        #[arg(long, conflicts_with_all = ["http", "import", "dry_run"])]
        undo: bool,
        /// With --undo: restore it even though it changed since (that version is
        /// kept beside it as .mcpbox-undone).
        #[arg(long, requires = "undo")]
        force: bool,
    },
    /// Serve every configured server's tools as one MCP server: on stdin/stdout
    /// (logs go to stderr), or over Streamable HTTP with --http.
    Serve {
        /// Serve Streamable HTTP at http://ADDR/mcp (and /mcp/PROFILE) instead of
        /// stdio, e.g. 127.0.0.1:8080 (port 0 picks a free port). Every request
        /// needs `Authorization: Bearer TOKEN`: MCPBOX_TOKEN, else the token kept
        /// in http-token (0600) in the configuration directory, made on first use.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Serve under the named profile of the configuration's "profiles" (a set
        /// of permission rules); over HTTP, every client (a path naming another
        /// profile is refused; without --profile, /mcp/NAME picks one).
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        /// Tool names: `prefixed` ({server}__{tool}) or `conditional` (a tool's own
        /// name unless another server has one of that name).
        #[arg(long, value_name = "MODE", default_value = "prefixed")]
        naming: String,
        /// The longest tool name served (51 leaves room for a client's
        /// `mcp__mcpbox__` within 64).
        #[arg(long, value_name = "N", default_value_t = 51)]
        max_name_length: usize,
        /// Serve two tools, search_tools and call_tool, instead of every tool.
        #[arg(long)]
        tool_search: bool,
        /// Serve every tool's input schema converted for this model provider, for
        /// clients that hand schemas to it unconverted (Gemini CLI: `gemini`);
        /// arguments of calls are mapped back. Tools it cannot represent are not
        /// served, with a warning that says why.
        #[arg(long, value_name = "DIALECT", value_parser = clap::builder::PossibleValuesParser::new(mcpbox::DIALECTS))]
        schema_dialect: Option<String>,
        /// Accept this Origin besides loopback ones (repeatable).
        #[arg(long, value_name = "ORIGIN")]
        allow_origin: Vec<String>,
        /// With --http on a loopback address: require no token, so that every
        /// user of this machine, and every program any of them runs, can call
        /// every tool and read the dashboard.
        #[arg(long, requires = "http")]
        insecure_no_token: bool,
        /// Threads that serve HTTP (with --http). One spends the least CPU per
        /// call (the guest runs on one thread anyway); more let hyper's work
        /// use more cores of a machine that has them to spare.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u16).range(1..))]
        threads: u16,
        #[command(flatten)]
        limits: GatewayLimits,
    },
    /// Show the servers, their tools and recent calls in a browser, with
    /// Prometheus metrics at /metrics, without serving MCP (`serve --http`
    /// serves the same dashboard beside /mcp).
    Dashboard {
        /// Listen on this address (port 0 picks a free port). Every request but
        /// the page's needs `Authorization: Bearer TOKEN` (the printed URL's
        /// #token= gives it to the page): MCPBOX_TOKEN, else the token kept in
        /// http-token (0600) in the configuration directory.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        http: String,
        /// Accept this Origin besides loopback ones (repeatable).
        #[arg(long, value_name = "ORIGIN")]
        allow_origin: Vec<String>,
        /// On a loopback address: require no token, so that every user of this
        /// machine can read the dashboard (servers' stderr, recent calls).
        #[arg(long)]
        insecure_no_token: bool,
    },
}

/// The environment the CLI reads, for the end of `--help`.
const ENVIRONMENT: &str = "Environment: MCPBOX_TRUST_ALL=1 (as --trust); MCPBOX_TOKEN (serve \
     --http, dashboard: the bearer token, instead of the one kept in http-token); \
     MCPBOX_CACHE_DIR (compiled components, state.json; default $XDG_CACHE_HOME/mcpbox or \
     ~/.cache/mcpbox); MCPBOX_CONFIG_DIR (the cache key, trusted configurations, http-token; \
     default $XDG_CONFIG_HOME/mcpbox or ~/.config/mcpbox).";

/// The command line as clap reads it and `--help` shows it: [`Cli`], ending
/// with the exit codes and the environment.
fn cli_command() -> clap::Command {
    Cli::command().after_help(format!("{}\n\n{ENVIRONMENT}", Exit::help()))
}

/// A failure with the exit code it maps to.
struct Failure {
    code: Exit,
    error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure {
            code: Exit::Usage,
            error: error.into(),
        }
    }
}

fn fail(code: Exit, error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code,
        error: error.into(),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&cli_command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // A gateway holds a descriptor per connection, a runtime three per server:
    // the soft limit (often 1,024) goes up to the hard one. Best effort.
    let _ = mcpbox::raise_open_files_limit();
    // One thread does for most commands: the CLI waits on the runtime, which
    // waits on its servers (worker threads cost a cold `mcpbox tools` ~0.6 ms of
    // its ~4). `serve` too, on stdio and by default over HTTP: the requests,
    // the driver and the answers take turns on one thread, so a call is not
    // handed between threads, and over HTTP a call costs a quarter less CPU
    // than on two workers (docs/PERFORMANCE.md, "The gateway"); `--threads N`
    // gives HTTP more. The dashboard alone answers a browser or a scraper,
    // not a load: two workers, as before.
    let workers = match &cli.command {
        Command::Serve {
            http: Some(_),
            threads,
            ..
        } => usize::from(*threads),
        Command::Dashboard { .. } => 2,
        _ => 1,
    };
    let runtime = if workers > 1 {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return Exit::Usage.into();
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Not a plain drop, which would wait for a blocking read of stdin that a
    // signal interrupted. Dropping the tasks stops any server still running.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code.into(),
        Err(Failure { code, error }) => {
            eprintln!("error: {}", block(&format!("{error:#}"), "  "));
            code.into()
        }
    }
}

/// `MCPBOX_TRUST_ALL=1` (or `true`, `yes`): trust every configuration (for CI).
fn trust_all_from_env() -> bool {
    std::env::var("MCPBOX_TRUST_ALL")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed, an ssh session
/// dropped) and SIGQUIT (Ctrl-\), which end the CLI through the runtime's
/// shutdown, so that no server outlives it: their default action would end
/// mcpbox at once and leave what its servers started running. Exit code 128 +
/// the signal: 130, 143, 129, 131. A signal that was ignored when mcpbox started
/// (`nohup` ignores SIGHUP) stays ignored.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: Option<tokio::signal::unix::Signal>,
    quit: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn install() -> Result<Signals, Failure> {
        use tokio::signal::unix::{SignalKind, signal};
        let ignored = ignored_signals();
        let unless_ignored = |kind: SignalKind, name: &str| {
            if ignored & (1 << (kind.as_raw_value() - 1)) != 0 {
                return Ok(None);
            }
            signal(kind)
                .map(Some)
                .with_context(|| format!("handling {name}"))
        };
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt()).context("handling SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("handling SIGTERM")?,
            hangup: unless_ignored(SignalKind::hangup(), "SIGHUP")?,
            quit: unless_ignored(SignalKind::quit(), "SIGQUIT")?,
        })
    }

    /// The exit code of the next signal.
    async fn next(&mut self) -> Exit {
        async fn maybe(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = self.interrupt.recv() => Exit::Interrupted,
            _ = self.terminate.recv() => Exit::Terminated,
            () = maybe(&mut self.hangup) => Exit::HungUp,
            () = maybe(&mut self.quit) => Exit::Quit,
        }
    }
}

/// The signals this process ignores (bit `n - 1` for signal `n`), as the kernel
/// reports them in `/proc/self/status`; none where that cannot be read.
fn ignored_signals() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("SigIgn:"))
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        })
        .unwrap_or(0)
}

async fn run(cli: Cli) -> Result<Exit, Failure> {
    let trusted_all = cli.trust || trust_all_from_env();
    if let Command::Import {
        write,
        check,
        project,
        installed,
    } = &cli.command
    {
        let request = commands::import::Request {
            write: write
                .clone()
                .map(|path| path.unwrap_or_else(|| cli.config.clone())),
            check: *check,
            project: project.clone(),
            json: cli.json,
            policy: Policy {
                allow_network: !cli.no_network,
                allow_processes: !cli.no_processes,
                ..Policy::default()
            },
            guest: cli.guest.clone(),
            trusted: trusted_all,
            installed: installed.clone(),
        };
        return Ok(commands::import::run(request).await?);
    }
    if let Command::Connect {
        client,
        scope,
        project,
        http,
        import,
        dry_run,
        undo,
        force,
    } = &cli.command
    {
        let request = commands::connect::Request {
            client: *client,
            scope: *scope,
            project: project.clone(),
            config: cli.config.clone(),
            http: http.clone(),
            import: *import,
            dry_run: *dry_run,
            undo: *undo,
            force: *force,
            json: cli.json,
        };
        return Ok(commands::connect::run(request).await?);
    }
    // Read once: what runs is what was checked.
    let config = ConfigFile::read(&cli.config)?;
    match &cli.command {
        Command::Trust => return commands::trust::trust(&config),
        // Removes local tokens only and contacts nobody: no trust needed.
        Command::Logout { server } => return commands::logout::logout(&config, server),
        _ => {}
    }
    if !trusted_all {
        commands::trust::ensure_trusted(&config)?;
    }
    if let Command::Login {
        server,
        timeout,
        no_browser,
    } = &cli.command
    {
        return commands::login::login(cli.json, &config, server, *timeout, *no_browser).await;
    }
    // Before any server starts: from here on a signal stops them first.
    let mut signals = Signals::install()?;
    let mut options =
        Options::from_config_file_read(&cli.config, config.text.clone()).policy(Policy {
            allow_network: !cli.no_network,
            allow_processes: !cli.no_processes,
            ..Policy::default()
        });
    if let Some(guest) = &cli.guest {
        options = options.guest_file(guest);
    }
    if matches!(cli.command, Command::Serve { .. }) {
        // Upstream servers may ask the gateway's clients for input, and for
        // messages from their model (forwarded to clients that declare sampling).
        options = options.input_requests(true).sampling(true);
    }
    if matches!(
        cli.command,
        Command::Serve { http: Some(_), .. } | Command::Dashboard { .. }
    ) {
        // For the dashboard's uptime, restarts and calls, and /metrics; audit
        // records for its recent calls (who decided, how long).
        options = options.metrics(true).audit_events(true);
    }
    if let Some(mib) = cli.memory_limit {
        options = options.memory_limit(mib as usize * 1024 * 1024);
    }
    if let Some(us) = cli.busy_poll {
        options = options.busy_poll(std::time::Duration::from_micros(u64::from(us)));
    }
    if let Some(audit) = &cli.audit {
        options = options.audit_file(audit);
    }
    options = options.claude_settings(cli.claude_settings);
    // `call` answers approvals itself (a prompt, `--yes`, or a refusal that says why),
    // and shows the URLs servers ask the user to open. The dashboard answers the
    // approvals of the calls made from its page (`serve` asks them already:
    // input requests imply approvals).
    options = options
        .approvals(matches!(
            cli.command,
            Command::Call { .. } | Command::Dashboard { .. }
        ))
        .url_elicitation(matches!(cli.command, Command::Call { .. }));
    // The CLI starts no processes but servers: it can reap every orphan.
    options = options.subreaper(true);
    if matches!(
        cli.command,
        Command::Servers { watch: true } | Command::Serve { .. } | Command::Dashboard { .. }
    ) {
        // A long-running command follows the configuration file as it changes.
        options = options.watch_config(true);
        if !trusted_all {
            options = options.reload_check(commands::trust::still_trusted(config));
        }
    }
    // A command that shows events subscribes before the runtime opens: from
    // then on it runs on its own thread, and the first servers' events (a
    // tool changed since the last run) may come before this task reads on.
    let mut subscribed = matches!(
        cli.command,
        Command::Servers { watch: true } | Command::Serve { .. } | Command::Dashboard { .. }
    )
    .then(|| options.subscribe());
    let runtime = tokio::select! {
        runtime = options.open() => runtime?,
        code = signals.next() => return Ok(code),
    };
    for warning in runtime.startup_warnings() {
        eprintln!("warning: {}", block(warning, "  "));
    }
    for issue in runtime.config_issues() {
        eprintln!(
            "warning: {}: {}",
            one(&cli.config.display().to_string()),
            block(&issue.to_string(), "  ")
        );
    }
    let command = async {
        match &cli.command {
            Command::Servers { watch: false } => {
                commands::servers::servers(&runtime, cli.json).await
            }
            Command::Servers { watch: true } => {
                let events = subscribed.take().unwrap_or_else(|| runtime.events());
                commands::servers::watch(&runtime, events, cli.json).await
            }
            Command::Tools { server, format } => match format {
                None => commands::tools::tools(&runtime, server.as_deref(), cli.json).await,
                Some(dialect) => {
                    commands::tools::adapted(&runtime, server.as_deref(), dialect, cli.json).await
                }
            },
            Command::Resources { server, templates } => {
                commands::resources::resources(&runtime, server.as_deref(), *templates, cli.json)
                    .await
            }
            Command::Read {
                uri,
                server,
                follow,
            } => {
                commands::resources::read(&runtime, uri, server.as_deref(), *follow, cli.json).await
            }
            Command::Prompts { server } => {
                commands::prompts::prompts(&runtime, server.as_deref(), cli.json).await
            }
            Command::Prompt { name, arguments } => {
                commands::prompts::prompt(&runtime, name, arguments, cli.json).await
            }
            Command::Skills { server } => {
                commands::skills::skills(&runtime, server.as_deref(), cli.json).await
            }
            Command::Skill { name, server, file } => {
                commands::skills::skill(
                    &runtime,
                    name,
                    server.as_deref(),
                    file.as_deref(),
                    cli.json,
                )
                .await
            }
            Command::Call {
                tool,
                arguments,
                timeout,
                yes,
                task,
                format,
            } => {
                let call = commands::call::Call {
                    tool,
                    dialect: format.as_deref(),
                    arguments,
                    timeout: *timeout,
                    yes: *yes,
                    task: *task,
                };
                commands::call::call(&runtime, call, cli.json).await
            }
            Command::Serve {
                http,
                profile,
                naming,
                max_name_length,
                tool_search,
                schema_dialect,
                allow_origin,
                insecure_no_token,
                threads: _,
                limits,
            } => {
                let mut options = commands::serve::options(
                    naming,
                    *max_name_length,
                    *tool_search,
                    profile.clone(),
                )?;
                options.schema_dialect = schema_dialect.clone();
                commands::serve::serve(
                    &runtime,
                    subscribed.take().unwrap_or_else(|| runtime.events()),
                    options,
                    http.as_deref(),
                    allow_origin,
                    *insecure_no_token,
                    limits,
                )
                .await
            }
            Command::Dashboard {
                http,
                allow_origin,
                insecure_no_token,
            } => {
                let events = subscribed.take().unwrap_or_else(|| runtime.events());
                commands::dashboard::dashboard(
                    &runtime,
                    events,
                    http,
                    allow_origin,
                    *insecure_no_token,
                )
                .await
            }
            // Handled before the runtime opens.
            Command::Trust
            | Command::Login { .. }
            | Command::Logout { .. }
            | Command::Import { .. }
            | Command::Connect { .. } => Ok(Exit::Success),
        }
    };
    let outcome = tokio::select! {
        outcome = command => outcome,
        code = signals.next() => Ok(code),
    };
    // On every way out: servers stopped (SIGTERM, then SIGKILL after a grace
    // period) and reaped, and what they left behind killed. A second signal
    // cuts the grace period short.
    tokio::select! {
        () = runtime.shutdown() => outcome,
        code = signals.next() => Ok(code),
    }
}

/// Waits for every server to settle, with a spinner on a terminal.
async fn settle(runtime: &Runtime) -> std::sync::Arc<Vec<ServerStatus>> {
    let spinner = Spinner::start(runtime);
    let servers = runtime.ready().await;
    spinner.finish();
    servers
}

/// A runtime that stopped by itself (its guest failed three times within a
/// minute) is an error the user must see: exit code 3 with the reason.
fn still_running(runtime: &Runtime) -> Result<(), Failure> {
    match runtime.stopped() {
        Some(reason) => Err(fail(
            Exit::Unavailable,
            anyhow::anyhow!("the mcpbox runtime stopped: {reason}"),
        )),
        None => Ok(()),
    }
}

/// A one-line field from a server or the configuration (a name, a version, a
/// description's first line), with every control character escaped.
fn one(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, Lines::Escape)
}

/// Text that may span lines (an error, a log message), escaped, with every line
/// after the first indented by `indent`, so no line of it can pass for a line of
/// the CLI's own.
fn block(text: &str, indent: &str) -> String {
    escape(text, Lines::Keep).replace('\n', &format!("\n{indent}"))
}

/// A spinner on stderr while servers connect, shown only on a terminal.
struct Spinner {
    bar: Option<ProgressBar>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    fn start(runtime: &Runtime) -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner {
                bar: None,
                task: None,
            };
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(80));
        let (shown, runtime) = (bar.clone(), runtime.clone());
        let task = tokio::spawn(async move {
            loop {
                let servers = runtime.servers();
                let starting: Vec<String> = servers
                    .iter()
                    .filter(|s| s.state == ServerState::Starting)
                    .map(|s| one(&s.name).into_owned())
                    .collect();
                shown.set_message(format!(
                    "connecting to {} of {} servers: {}",
                    starting.len(),
                    servers.len(),
                    starting.join(", ")
                ));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Spinner {
            bar: Some(bar),
            task: Some(task),
        }
    }

    fn finish(self) {}
}

impl Drop for Spinner {
    /// Also when a signal ends the command mid-way: the terminal line is cleared.
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
