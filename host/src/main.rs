//! `mcpbox`: list and call the tools of the MCP servers in a `.mcp.json`.
//!
//! Exit codes (also in `--help`): 0 ok; 1 the tool returned an error result;
//! 2 usage or configuration error, or a call the permission rules refuse; 3 server unavailable or timeout, or the
//! runtime stopped; 130 / 143 / 129 / 131 SIGINT / SIGTERM / SIGHUP / SIGQUIT.
//!
//! Human-readable output shows text from servers and configurations through
//! [`mcpbox::terminal::escape`] ([`one`] for one-line fields, [`block`] for text
//! that may span lines), so it cannot drive the terminal; `--json` output is exact.

mod cli_import;
mod cli_requests;

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mcpbox::terminal::{Lines, escape};
use mcpbox::trust::ConfigFile;
use mcpbox::{
    CallError, CallOptions, HttpOptions, InputAnswer, Naming, Options, Policy, Runtime,
    ServeOptions, ServerState, ServerStatus,
};

#[derive(Parser, Debug)]
#[command(
    name = "mcpbox",
    version,
    about = "Use the tools of MCP servers through a sandboxed WebAssembly component",
    after_help = "Exit codes: 0 ok; 1 the tool returned an error result; 2 usage or configuration \
                  error (also unknown tool, invalid or oversized arguments, an untrusted \
                  configuration, a call the permission rules deny or nobody approved); \
                  3 server unavailable or timeout, or the runtime stopped; \
                  130 / 143 / 129 / 131 interrupted by SIGINT / SIGTERM / SIGHUP / SIGQUIT, after \
                  every server was stopped.\n\n\
                  Environment: MCPBOX_TRUST_ALL=1 (as --trust); MCPBOX_TOKEN (serve --http, \
                  dashboard: the bearer token, instead of the one kept in http-token); \
                  MCPBOX_CACHE_DIR (compiled \
                  components, state.json; default $XDG_CACHE_HOME/mcpbox or ~/.cache/mcpbox); MCPBOX_CONFIG_DIR (the cache \
                  key, trusted configurations, http-token; default $XDG_CONFIG_HOME/mcpbox or ~/.config/mcpbox)."
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
    /// Trust the configuration file (`--config`) as it is now, so that its servers
    /// may start: shows what it runs and remembers the file by path and SHA-256.
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
        /// Approve the call if an `ask` permission rule covers it, without asking.
        /// Without it, a terminal is asked; with no terminal, the call is refused.
        #[arg(long, short = 'y')]
        yes: bool,
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
        /// never replacing an entry that is there.
        #[arg(long, value_name = "PATH", num_args = 0..=1)]
        write: Option<Option<PathBuf>>,
        /// Connect to every server found and report its health (exit code 3 when
        /// one fails).
        #[arg(long)]
        check: bool,
        /// The project whose files are read (default: the current directory).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
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

/// A failure with the exit code it maps to.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure {
            code: 2,
            error: error.into(),
        }
    }
}

fn fail(code: u8, error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code,
        error: error.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Not a plain drop, which would wait for a blocking read of stdin that a
    // signal interrupted. Dropping the tasks stops any server still running.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Failure { code, error }) => {
            eprintln!("error: {}", block(&format!("{error:#}"), "  "));
            ExitCode::from(code)
        }
    }
}

/// `MCPBOX_TRUST_ALL=1` (or `true`, `yes`): trust every configuration (for CI).
fn trust_all_from_env() -> bool {
    std::env::var("MCPBOX_TRUST_ALL")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// What a configuration would start and hand over, for the user to judge.
fn what_it_runs(config: &ConfigFile) -> String {
    let mut text: String = config
        .servers()
        .iter()
        .map(|s| format!("\n    {}", one(s)))
        .collect();
    let variables = config.variables();
    if !variables.is_empty() {
        text.push_str(&format!(
            "\n  and hand them these environment variables: {}",
            one(&variables.join(", "))
        ));
    }
    text
}

/// `path` as one shell word.
fn shell_word(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Starts nothing from a configuration the user has not trusted: on a terminal
/// asks (y/N), otherwise fails with exit code 2 saying what it would run and how
/// to trust it.
fn ensure_trusted(config: &ConfigFile) -> Result<(), Failure> {
    let config_dir = mcpbox::default_config_dir();
    if mcpbox::trust::check(config, config_dir.as_deref())?.is_some() {
        return Ok(());
    }
    let shown = config.canonical.as_deref().unwrap_or(&config.path);
    let runs = what_it_runs(config);
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprint!(
            "mcpbox has not run {} before. It would start:{runs}\nStart these servers \
             (and remember the file as it is now)? [y/N] ",
            one(&shown.display().to_string())
        );
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            if let Err(e) = mcpbox::trust::trust(config, config_dir.as_deref()) {
                eprintln!("warning: trusted for this run only: {e}");
            }
            return Ok(());
        }
    }
    Err(fail(
        2,
        anyhow::anyhow!(
            "{} is not trusted yet: mcpbox starts the servers of a configuration file only \
             once you have trusted it as it is. It would start:{runs}\n\
             If you trust it, run `mcpbox --config {} trust` first (or pass --trust, or set \
             MCPBOX_TRUST_ALL=1, for CI).",
            shown.display(),
            shell_word(shown)
        ),
    ))
}

/// For `servers --watch`: a changed file is applied only once it is trusted as
/// it is now, as a start would need. Trust was given to the file's contents, and
/// a project file can change under a running watch (a `git pull`, a checkout):
/// what runs should still be what the user agreed to. A change to a file the
/// user trusted again (`mcpbox trust` in another terminal) is applied at the
/// next save; one that names no server is always applied.
fn still_trusted(config: ConfigFile) -> impl Fn(&str) -> Result<(), String> + Send + Sync {
    let config_dir = mcpbox::default_config_dir();
    move |text: &str| {
        let changed = config.with_text(text.to_owned());
        match mcpbox::trust::check(&changed, config_dir.as_deref()) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(format!(
                "{} changed and is not trusted as it is now, so nothing of it was applied. It \
                 would start:{}\nIf you trust it, run `mcpbox --config {} trust` and save the \
                 file again.",
                changed.path.display(),
                what_it_runs(&changed),
                shell_word(&changed.path)
            )),
            Err(e) => Err(format!(
                "whether the changed file is trusted cannot be told: {e}"
            )),
        }
    }
}

/// `mcpbox trust`: shows what the configuration runs and remembers it.
fn trust_command(config: &ConfigFile) -> Result<u8, Failure> {
    let shown = config.canonical.as_deref().unwrap_or(&config.path);
    if config.servers().is_empty() {
        eprintln!(
            "{} names no server: nothing to trust",
            one(&shown.display().to_string())
        );
        return Ok(0);
    }
    mcpbox::trust::trust(config, mcpbox::default_config_dir().as_deref())?;
    println!(
        "trusted {} (sha256 {}), which starts:{}",
        one(&shown.display().to_string()),
        config.sha256_hex(),
        what_it_runs(config)
    );
    Ok(0)
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
    async fn next(&mut self) -> u8 {
        async fn maybe(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = self.interrupt.recv() => 130,
            _ = self.terminate.recv() => 143,
            () = maybe(&mut self.hangup) => 129,
            () = maybe(&mut self.quit) => 131,
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

async fn run(cli: Cli) -> Result<u8, Failure> {
    let trusted_all = cli.trust || trust_all_from_env();
    if let Command::Import {
        write,
        check,
        project,
    } = &cli.command
    {
        let request = cli_import::Request {
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
        };
        return Ok(cli_import::run(request).await?);
    }
    // Read once: what runs is what was checked.
    let config = ConfigFile::read(&cli.config)?;
    match &cli.command {
        Command::Trust => return trust_command(&config),
        // Removes local tokens only and contacts nobody: no trust needed.
        Command::Logout { server } => return logout(&config, server),
        _ => {}
    }
    if !trusted_all {
        ensure_trusted(&config)?;
    }
    if let Command::Login {
        server,
        timeout,
        no_browser,
    } = &cli.command
    {
        return login(&cli, &config, server, *timeout, *no_browser).await;
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
    if let Some(audit) = &cli.audit {
        options = options.audit_file(audit);
    }
    options = options.claude_settings(cli.claude_settings);
    // `call` answers approvals itself (a prompt, `--yes`, or a refusal that says why).
    options = options.approvals(matches!(cli.command, Command::Call { .. }));
    // The CLI starts no processes but servers: it can reap every orphan.
    options = options.subreaper(true);
    if matches!(
        cli.command,
        Command::Servers { watch: true } | Command::Serve { .. } | Command::Dashboard { .. }
    ) {
        // A long-running command follows the configuration file as it changes.
        options = options.watch_config(true);
        if !trusted_all {
            options = options.reload_check(still_trusted(config));
        }
    }
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
            Command::Servers { watch: false } => servers(&runtime, cli.json).await,
            Command::Servers { watch: true } => watch(&runtime, cli.json).await,
            Command::Tools { server } => tools(&runtime, server.as_deref(), cli.json).await,
            Command::Resources { server, templates } => {
                cli_requests::resources(&runtime, server.as_deref(), *templates, cli.json).await
            }
            Command::Read {
                uri,
                server,
                follow,
            } => cli_requests::read(&runtime, uri, server.as_deref(), *follow, cli.json).await,
            Command::Prompts { server } => {
                cli_requests::prompts(&runtime, server.as_deref(), cli.json).await
            }
            Command::Prompt { name, arguments } => {
                cli_requests::prompt(&runtime, name, arguments, cli.json).await
            }
            Command::Call {
                tool,
                arguments,
                timeout,
                yes,
            } => call(&runtime, tool, arguments, *timeout, *yes, cli.json).await,
            Command::Serve {
                http,
                profile,
                naming,
                max_name_length,
                tool_search,
                allow_origin,
                insecure_no_token,
                threads: _,
            } => {
                let naming = match naming.as_str() {
                    "prefixed" => Naming::Prefixed,
                    "conditional" => Naming::Conditional,
                    other => {
                        return Err(fail(
                            2,
                            anyhow::anyhow!(
                                "--naming must be `prefixed` or `conditional`, not `{}`",
                                one(other)
                            ),
                        ));
                    }
                };
                let options = ServeOptions {
                    naming,
                    max_name_len: *max_name_length,
                    tool_search: *tool_search,
                    profile: profile.clone(),
                    ..ServeOptions::default()
                };
                serve(
                    &runtime,
                    options,
                    http.as_deref(),
                    allow_origin,
                    *insecure_no_token,
                )
                .await
            }
            Command::Dashboard {
                http,
                allow_origin,
                insecure_no_token,
            } => {
                report_servers(&runtime, "mcpbox dashboard");
                let (listener, http) = listen(
                    "mcpbox dashboard",
                    http,
                    allow_origin,
                    "/",
                    *insecure_no_token,
                )
                .await?;
                runtime
                    .serve_dashboard(http, listener)
                    .await
                    .map_err(|e| fail(2, e))?;
                Ok(0)
            }
            // Handled before the runtime opens.
            Command::Trust
            | Command::Login { .. }
            | Command::Logout { .. }
            | Command::Import { .. } => Ok(0),
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

async fn servers(runtime: &Runtime, json: bool) -> Result<u8, Failure> {
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
    Ok(0)
}

/// `mcpbox login SERVER`. Only for a trusted configuration (the caller checks):
/// a login sends requests to the URL the file names (with its `${VAR}`s
/// resolved from the environment), registers a client there and opens the
/// browser on an authorization page that server chose.
async fn login(
    cli: &Cli,
    config: &ConfigFile,
    server: &str,
    timeout: u64,
    no_browser: bool,
) -> Result<u8, Failure> {
    let store = mcpbox::TokenStore::default_location();
    eprintln!("tokens will be stored in: {}", one(&store.describe()));
    let show = move |url: &str| {
        // Built from the server's metadata: shown escaped.
        eprintln!(
            "Open this URL in a browser to authorize mcpbox with `{}`:\n\n  {}\n",
            one(server),
            one(url)
        );
        if !no_browser && webbrowser::open(url).is_err() {
            eprintln!("(no browser could be opened here; open the URL yourself)");
        }
        eprintln!("waiting for the authorization (up to {timeout} s)…");
    };
    let login = mcpbox::oauth::login(
        &config.text,
        server,
        &store,
        &show,
        Duration::from_secs(timeout),
    )
    .await
    .map_err(|e| fail(3, e))?;
    if cli.json {
        println!(
            "{}",
            serde_json::json!({"server": server, "scopes": login.scopes, "storedIn": login.stored_in})
        );
    } else {
        let scopes = if login.scopes.is_empty() {
            "none reported".to_owned()
        } else {
            login.scopes.join(" ")
        };
        println!(
            "logged in to {} (scopes: {}); tokens stored in {}",
            one(server),
            one(&scopes),
            one(&login.stored_in)
        );
    }
    Ok(0)
}

/// `mcpbox logout SERVER`: removes the server's tokens from this machine. Needs
/// no trust: it contacts nobody and only forgets a credential of the user's.
fn logout(config: &ConfigFile, server: &str) -> Result<u8, Failure> {
    let store = mcpbox::TokenStore::default_location();
    let had = mcpbox::oauth::logout(&config.text, server, &store)?;
    let server = one(server);
    let place = store.describe();
    let place = one(&place);
    if had {
        println!("logged out of {server}: its tokens were removed from {place}");
    } else {
        println!("{server} had no tokens in {place}");
    }
    Ok(0)
}

/// A runtime that stopped by itself (its guest failed three times within a
/// minute) is an error the user must see: exit code 3 with the reason.
fn still_running(runtime: &Runtime) -> Result<(), Failure> {
    match runtime.stopped() {
        Some(reason) => Err(fail(
            3,
            anyhow::anyhow!("the mcpbox runtime stopped: {reason}"),
        )),
        None => Ok(()),
    }
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
async fn watch(runtime: &Runtime, json: bool) -> Result<u8, Failure> {
    use mcpbox::Event;
    // Subscribe before the first listing, so no change falls between the two.
    let mut events = runtime.events();
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
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(0),
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
                3,
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

async fn tools(runtime: &Runtime, server: Option<&str>, json: bool) -> Result<u8, Failure> {
    let servers = settle(runtime).await;
    if let Some(name) = server
        && !servers.iter().any(|s| s.name == name)
    {
        let known: Vec<String> = servers.iter().map(|s| one(&s.name).into_owned()).collect();
        return Err(fail(
            2,
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
    Ok(0)
}

async fn call(
    runtime: &Runtime,
    tool: &str,
    arguments: &str,
    timeout: Option<f64>,
    yes: bool,
    json: bool,
) -> Result<u8, Failure> {
    // A prompt needs stdin for the answer: not when it is a pipe, nor when it
    // carried the arguments.
    let who = if yes {
        Approver::Yes
    } else if arguments != "-" && std::io::stdin().is_terminal() {
        Approver::Terminal
    } else {
        Approver::Nobody
    };
    let arguments = if arguments == "-" {
        read_arguments(runtime, tool).await?
    } else {
        arguments.to_owned()
    };
    let timeout = timeout
        .map(parse_timeout)
        .transpose()
        .map_err(|e| fail(2, e))?;

    // Wait for this tool's server only, not for every slow server; when the tool
    // never appears, the registry's own error says why (its server failed, …).
    let spinner = Spinner::start(runtime);
    runtime.wait_for_tool(tool).await;
    spinner.finish();

    // Subscribed before the call starts, so its approval request is not missed.
    let approvals = tokio::spawn(answer_approvals(runtime.clone(), runtime.events(), who));
    let result = runtime
        .call_tool_json(tool, arguments, CallOptions { timeout })
        .await;
    approvals.abort();
    let result = match result {
        Ok(result) => result,
        Err(CallError::Denied(e)) if who == Approver::Nobody && e.contains("was not approved") => {
            return Err(fail(
                2,
                anyhow::anyhow!(
                    "{e}; nobody could be asked: stdin is not a terminal{}; pass --yes to approve it",
                    if std::io::stdin().is_terminal() {
                        " (it carried the arguments)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Err(e) => {
            let code = match e {
                CallError::UnknownTool(_)
                | CallError::InvalidArguments(_)
                | CallError::Denied(_) => 2,
                _ => 3,
            };
            return Err(fail(code, e));
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else if result.is_error {
        eprintln!("{}", escape(&result.text, Lines::Keep));
    } else {
        writeln!(out, "{}", escape(&result.text, Lines::Keep))?;
    }
    Ok(if result.is_error { 1 } else { 0 })
}

/// `mcpbox serve`: MCP on stdin/stdout, or Streamable HTTP. Everything but the
/// protocol goes to stderr.
/// Says on stderr when a server connects or fails, and every warning, while serving.
fn report_servers(runtime: &Runtime, who: &'static str) {
    use mcpbox::Event;
    let mut events = runtime.events();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match event {
                Event::Warning(w) => eprintln!("{who}: warning: {}", block(&w, "  ")),
                Event::Status(s) if s.state == ServerState::Failed => eprintln!(
                    "{who}: server `{}` failed: {}",
                    one(&s.name),
                    block(s.error.as_deref().unwrap_or("unknown error"), "  ")
                ),
                Event::Status(s) if s.state == ServerState::Connected => {
                    eprintln!(
                        "{who}: server `{}` connected ({} tools)",
                        one(&s.name),
                        s.tool_count
                    )
                }
                _ => {}
            }
        }
    });
}

/// Connections a listener holds before they are accepted (the kernel caps it at
/// `net.core.somaxconn`, 4,096 by default). tokio's `TcpListener::bind` asks for
/// 1,024: a thousand clients connecting at once, as the gateway's benchmark
/// does, overflowed it while the one serving thread was busy with a turn, and
/// every connection refused that way waited a full second for its SYN to be
/// sent again.
const LISTEN_BACKLOG: u32 = 4096;

/// Listens on the first address `addr` resolves to that can be bound.
async fn bind(addr: &str) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(addr).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }?;
        // As std's `TcpListener::bind` does: a restart need not wait out TIME_WAIT.
        socket.set_reuseaddr(true)?;
        match socket
            .bind(addr)
            .and_then(|()| socket.listen(LISTEN_BACKLOG))
        {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the address resolves to nothing",
        )
    }))
}

/// Binds `addr` for `serve --http` or `dashboard`, with the HTTP safety options.
///
/// The bearer token, required on every address (any user of the machine can
/// reach loopback): MCPBOX_TOKEN, else the one kept in `http-token` (0600) in
/// the configuration directory (made on first use, so clients configured once
/// keep working), else, where that directory cannot be used, one made up for
/// this run and printed. `--insecure-no-token` serves without one, on loopback
/// only. Says where the token is, `{who}: listening on http://ADDR{path}`, then
/// the dashboard's URL with the token in its fragment, ready to open.
async fn listen(
    who: &str,
    addr: &str,
    allow_origin: &[String],
    path: &str,
    insecure_no_token: bool,
) -> Result<(tokio::net::TcpListener, HttpOptions), Failure> {
    let listener = bind(addr)
        .await
        .with_context(|| format!("could not listen on {addr}"))?;
    let local = listener.local_addr()?;
    let token = if insecure_no_token {
        if !local.ip().is_loopback() {
            return Err(fail(
                2,
                anyhow::anyhow!(
                    "--insecure-no-token is for loopback addresses only: {local} is reachable \
                     from other machines, so it needs the token"
                ),
            ));
        }
        let what = if path == "/mcp" {
            "call every tool and read the dashboard"
        } else {
            "read the dashboard (servers' stderr, the recent calls)"
        };
        eprintln!(
            "warning: {who}: no bearer token (--insecure-no-token): every user of this machine, \
             and every program any of them runs, can {what} at http://{local}{path}"
        );
        None
    } else if let Some(token) = std::env::var("MCPBOX_TOKEN").ok().filter(|t| !t.is_empty()) {
        if !mcpbox::is_valid_token(&token) {
            return Err(fail(
                2,
                anyhow::anyhow!(
                    "MCPBOX_TOKEN must be one word of letters, digits, `-`, `_`, `.`, `~`, `+` \
                     or `/` (a bearer token sent as it is)"
                ),
            ));
        }
        eprintln!("{who}: every request needs `Authorization: Bearer $MCPBOX_TOKEN`");
        Some(token)
    } else {
        match mcpbox::default_config_dir()
            .ok_or_else(|| "no HOME or MCPBOX_CONFIG_DIR to keep it in".to_owned())
            .and_then(|dir| mcpbox::stored_token(&dir).map_err(|e| e.to_string()))
        {
            Ok(stored) => {
                let file = stored.path.display().to_string();
                eprintln!(
                    "{who}: every request needs `Authorization: Bearer TOKEN`, TOKEN being the \
                     contents of {} ({}; for a client: --header \"Authorization: Bearer $(cat {})\")",
                    one(&file),
                    if stored.created {
                        "made now, 0600, kept for the next runs"
                    } else {
                        "0600"
                    },
                    one(&file)
                );
                Some(stored.token)
            }
            Err(why) => {
                let made = mcpbox::random_token().context("making up a bearer token")?;
                eprintln!(
                    "warning: {who}: the bearer token could not be kept for the next runs: {}",
                    one(&why)
                );
                eprintln!("{who}: every request needs `Authorization: Bearer {made}` (this run's)");
                Some(made)
            }
        }
    };
    eprintln!("{who}: listening on http://{local}{path}");
    // The page reads the token from the URL's fragment, which the browser never sends.
    let fragment = token
        .as_deref()
        .map(|t| format!("#token={t}"))
        .unwrap_or_default();
    eprintln!("{who}: dashboard at http://{local}/{fragment}, Prometheus metrics at /metrics");
    let http = HttpOptions {
        token,
        insecure_no_token,
        allowed_origins: allow_origin.to_vec(),
        ..HttpOptions::default()
    };
    Ok((listener, http))
}

async fn serve(
    runtime: &Runtime,
    options: ServeOptions,
    http: Option<&str>,
    allow_origin: &[String],
    insecure_no_token: bool,
) -> Result<u8, Failure> {
    report_servers(runtime, "mcpbox serve");
    let Some(addr) = http else {
        let (input, output) = stdio_streams();
        runtime
            .serve_stdio(options, input, output)
            .await
            .map_err(|e| fail(2, e))?;
        return Ok(0);
    };
    let (listener, http) = listen(
        "mcpbox serve",
        addr,
        allow_origin,
        "/mcp",
        insecure_no_token,
    )
    .await?;
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT end it in `run`, through the runtime's shutdown.
    runtime
        .serve_http(options, http, listener)
        .await
        .map_err(|e| fail(2, e))?;
    Ok(0)
}

/// stdin and stdout for `serve` on stdio, read and written by the runtime's own
/// thread where the kernel allows it: a pipe (what most clients spawn a server
/// with) or a Unix socket (Node's `child_process`, so the TypeScript SDK's
/// clients) is made non-blocking and polled with everything else. Anything else
/// (a terminal, a file) goes through tokio's `stdin`/`stdout`, which block on a
/// thread of their own and hand every read and write over to it: about two
/// thread wake-ups per line each way.
fn stdio_streams() -> (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    // A duplicate of the descriptor: the standard one stays open whatever is tried.
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok().map(is_fifo);
    let unix_socket = |fd: std::os::fd::OwnedFd| {
        let socket = std::os::unix::net::UnixStream::from(fd);
        // `local_addr` fails on any socket that is not a Unix one.
        socket.local_addr().ok()?;
        socket.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(socket).ok()
    };
    let input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = match dup(std::io::stdin().as_fd()) {
        Some((true, fd)) => match pipe::Receiver::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        },
        Some((false, fd)) => match unix_socket(fd) {
            Some(socket) => Box::new(socket),
            None => Box::new(tokio::io::stdin()),
        },
        None => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = match dup(std::io::stdout().as_fd())
    {
        Some((true, fd)) => match pipe::Sender::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        },
        Some((false, fd)) => match unix_socket(fd) {
            Some(socket) => Box::new(socket),
            None => Box::new(tokio::io::stdout()),
        },
        None => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

fn is_fifo(fd: std::os::fd::OwnedFd) -> (bool, std::os::fd::OwnedFd) {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(fd);
    let fifo = file.metadata().is_ok_and(|m| m.file_type().is_fifo());
    (fifo, file.into())
}

/// Reads a call's arguments from stdin, keeping no more than a call may have:
/// beyond that the rest is only counted, for the error.
/// On a blocking thread, so that a signal is handled while stdin waits.
async fn read_arguments(runtime: &Runtime, tool: &str) -> Result<String, Failure> {
    let limit = runtime.max_arguments_bytes();
    let read = tokio::task::spawn_blocking(move || -> std::io::Result<(Vec<u8>, usize)> {
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        (&mut stdin)
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)?;
        let mut size = bytes.len();
        if size > limit {
            let rest = std::io::copy(&mut stdin, &mut std::io::sink())?;
            size = size.saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
        }
        Ok((bytes, size))
    });
    let (bytes, size) = read
        .await
        .context("reading the arguments from stdin")?
        .context("reading the arguments from stdin")?;
    runtime
        .check_arguments_size(tool, size)
        .map_err(|e| fail(2, e))?;
    String::from_utf8(bytes).map_err(|e| {
        fail(
            2,
            anyhow::anyhow!("the arguments on stdin are not UTF-8: {e}"),
        )
    })
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

/// Who answers approvals for `ask` permission rules in `call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approver {
    /// `--yes`: every approval is given.
    Yes,
    /// The user, at a prompt on stderr, answering on stdin.
    Terminal,
    /// Nobody: approvals are refused, and the error says how to give them.
    Nobody,
}

/// Answers every approval request until aborted.
async fn answer_approvals(
    runtime: Runtime,
    mut events: tokio::sync::broadcast::Receiver<mcpbox::Event>,
    who: Approver,
) {
    loop {
        let request = match events.recv().await {
            Ok(mcpbox::Event::InputRequested(request)) => request,
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(approval) = &request.approval else {
            continue;
        };
        let answer = match who {
            Approver::Yes => InputAnswer::approve_once(),
            Approver::Nobody => InputAnswer::Decline,
            Approver::Terminal => {
                let question = format!(
                    "{}\n  arguments: {}\nApprove? [y/N] ",
                    block(&request.message, "  "),
                    one(&approval.arguments.to_string())
                );
                prompt(question).await
            }
        };
        let _ = runtime.answer_input(request.id, answer).await;
    }
}

/// Asks on stderr and reads one line from stdin, on a thread of its own: a
/// blocking read left behind when the call ends elsewhere (its timeout) must not
/// hold the runtime's shutdown.
async fn prompt(question: String) -> InputAnswer {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        eprint!("{question}");
        let mut line = String::new();
        let answer = match std::io::stdin().read_line(&mut line) {
            Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                InputAnswer::approve_once()
            }
            _ => InputAnswer::Decline,
        };
        let _ = tx.send(answer);
    });
    rx.await.unwrap_or(InputAnswer::Decline)
}

/// `--timeout SECS` as a [`Duration`]: a positive, finite number of seconds that
/// a `Duration` can hold (`1e300` cannot; `Duration::from_secs_f64` would panic).
fn parse_timeout(secs: f64) -> anyhow::Result<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        anyhow::bail!("--timeout must be a positive number of seconds, not {secs}");
    }
    Duration::try_from_secs_f64(secs).map_err(|_| {
        anyhow::anyhow!(
            "--timeout {secs} is too large: at most {} seconds",
            Duration::MAX.as_secs()
        )
    })
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
