//! `mcpbox`: list and call the tools of the MCP servers in a `.mcp.json`.
//!
//! Exit codes: 0 ok; 1 the tool returned an error result; 2 usage or
//! configuration error, or a call the permission rules refuse; 3 server
//! unavailable or timeout.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mcpbox::{
    CallError, CallOptions, InputAnswer, Options, Policy, Runtime, ServerState, ServerStatus,
};

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
    // One thread does: the CLI waits on the runtime, which waits on its servers.
    // Starting worker threads cost a cold `mcpbox tools` ~0.6 ms of its ~4.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(Failure { code, error }) => {
            eprintln!("error: {error:#}");
            ExitCode::from(code)
        }
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    let mut options = Options::from_config_file(&cli.config).policy(Policy {
        allow_network: !cli.no_network,
        allow_processes: !cli.no_processes,
        ..Policy::default()
    });
    if let Some(guest) = &cli.guest {
        options = options.guest_file(guest);
    }
    if let Some(audit) = &cli.audit {
        options = options.audit_file(audit);
    }
    options = options.claude_settings(cli.claude_settings);
    // `call` answers approvals itself (a prompt, `--yes`, or a refusal that says why).
    options = options.approvals(matches!(cli.command, Command::Call { .. }));
    let runtime = options.open().await?;
    for issue in runtime.config_issues() {
        eprintln!("warning: {}: {issue}", cli.config.display());
    }
    let code = dispatch(&cli, &runtime).await;
    // Also after a failure: the audit trail's last records go out on the way down.
    runtime.shutdown().await;
    code
}

async fn dispatch(cli: &Cli, runtime: &Runtime) -> Result<u8, Failure> {
    match &cli.command {
        Command::Servers { watch: false } => servers(runtime, cli.json).await,
        Command::Servers { watch: true } => watch(runtime, cli.json).await,
        Command::Tools { server } => tools(runtime, server.as_deref(), cli.json).await,
        Command::Call {
            tool,
            arguments,
            timeout,
            yes,
        } => call(runtime, tool, arguments, *timeout, *yes, cli.json).await,
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
    print_servers(&servers, json)?;
    Ok(0)
}

fn print_servers(servers: &[ServerStatus], json: bool) -> Result<(), Failure> {
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
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for s in servers {
        writeln!(out, "{}", status_line(s, width))?;
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
    let mut line = format!("{symbol} {:width$}  {:>3} tools", s.name, s.tool_count);
    if let Some(v) = &s.protocol_version {
        line.push_str(&format!("  {v}"));
    }
    if let Some(name) = &s.server_name {
        line.push_str(&format!(
            "  {name} {}",
            s.server_version.as_deref().unwrap_or("")
        ));
    }
    let mut line = line.trim_end().to_owned();
    if let Some(error) = &s.error {
        line.push_str(&format!("\n    {}", error.replace('\n', "\n    ")));
    }
    line
}

/// Prints the servers, then every event until Ctrl-C.
async fn watch(runtime: &Runtime, json: bool) -> Result<u8, Failure> {
    use mcpbox::Event;
    // Subscribe before the first listing, so no change falls between the two.
    let mut events = runtime.events();
    print_servers(&runtime.servers(), json)?;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let event = tokio::select! {
            _ = &mut interrupted => return Ok(0),
            event = events.recv() => event,
        };
        let event = match event {
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
                other => serde_json::json!({ "event": format!("{other:?}") }),
            };
            writeln!(out, "{value}")?;
        } else {
            match &event {
                Event::Status(s) => writeln!(out, "{}", status_line(s, 0))?,
                Event::ToolsChanged(server) => writeln!(out, "  {server}: tool list changed")?,
                Event::Warning(text) => writeln!(out, "  warning: {text}")?,
                Event::Log {
                    server,
                    level,
                    message,
                } => writeln!(out, "  {server} [{level}] {message}")?,
                other => writeln!(out, "  {other:?}")?,
            }
        }
        out.flush()?;
    }
}

async fn tools(runtime: &Runtime, server: Option<&str>, json: bool) -> Result<u8, Failure> {
    let servers = settle(runtime).await;
    if let Some(name) = server
        && !servers.iter().any(|s| s.name == name)
    {
        let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        return Err(fail(
            2,
            anyhow::anyhow!(
                "no server named `{name}` (configured: {})",
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
        let width = selected.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &selected {
            let description = t
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("");
            writeln!(out, "{:width$}  {description}", t.name)?;
        }
    }
    // Before the warnings on stderr, so a terminal shows them in that order.
    out.flush()?;
    for s in servers.iter().filter(|s| s.state == ServerState::Failed) {
        eprintln!(
            "warning: server `{}` failed: {}",
            s.name,
            s.error.as_deref().unwrap_or("unknown error")
        );
    }
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
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the arguments from stdin")?;
        text
    } else {
        arguments.to_owned()
    };
    let timeout = match timeout {
        Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(secs) => {
            return Err(fail(
                2,
                anyhow::anyhow!("--timeout must be a positive number of seconds, not {secs}"),
            ));
        }
        None => None,
    };

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
        eprintln!("{}", result.text);
    } else {
        writeln!(out, "{}", result.text)?;
    }
    Ok(if result.is_error { 1 } else { 0 })
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
                    escape_controls(&request.message),
                    approval.arguments
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

/// Text from a configuration or a server, made safe for a terminal.
fn escape_controls(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() && c != '\n' {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
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
                let starting: Vec<&str> = servers
                    .iter()
                    .filter(|s| s.state == ServerState::Starting)
                    .map(|s| s.name.as_str())
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

    fn finish(self) {
        if let Some(task) = self.task {
            task.abort();
        }
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
