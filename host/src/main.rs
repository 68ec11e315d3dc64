//! `mcpbox`: list and call the tools of the MCP servers in a `.mcp.json`.
//!
//! Exit codes: 0 ok; 1 the tool returned an error result; 2 usage or
//! configuration error; 3 server unavailable or timeout.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mcpbox::{
    CallError, CallOptions, HttpOptions, Naming, Options, Policy, Runtime, ServeOptions,
    ServerState, ServerStatus,
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
    },
    /// Serve every configured server's tools as one MCP server: on stdin/stdout
    /// (logs go to stderr), or over Streamable HTTP with --http.
    Serve {
        /// Serve Streamable HTTP at http://ADDR/mcp (and /mcp/PROFILE) instead of
        /// stdio, e.g. 127.0.0.1:8080 (port 0 picks a free port). Any address other
        /// than loopback needs a bearer token: MCPBOX_TOKEN, or one made up and
        /// printed on stderr.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Serve under the named profile of the configuration's "profiles" (a set
        /// of permission rules); over HTTP, for /mcp (the path /mcp/NAME picks another).
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
    // One thread does for the other commands: the CLI waits on the runtime, which
    // waits on its servers (worker threads cost a cold `mcpbox tools` ~0.6 ms of
    // its ~4). `serve` answers many clients while the guest works: two workers.
    let runtime = if matches!(cli.command, Command::Serve { .. }) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
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
    if matches!(cli.command, Command::Serve { .. }) {
        // Upstream servers may ask the gateway's clients for input.
        options = options.input_requests(true);
    }
    let runtime = options.open().await?;
    for issue in runtime.config_issues() {
        eprintln!("warning: {}: {issue}", cli.config.display());
    }
    let code = match &cli.command {
        Command::Servers { watch: false } => servers(&runtime, cli.json).await?,
        Command::Servers { watch: true } => watch(&runtime, cli.json).await?,
        Command::Tools { server } => tools(&runtime, server.as_deref(), cli.json).await?,
        Command::Call {
            tool,
            arguments,
            timeout,
        } => call(&runtime, tool, arguments, *timeout, cli.json).await?,
        Command::Serve {
            http,
            profile,
            naming,
            max_name_length,
            tool_search,
            allow_origin,
        } => {
            let naming = match naming.as_str() {
                "prefixed" => Naming::Prefixed,
                "conditional" => Naming::Conditional,
                other => {
                    return Err(fail(
                        2,
                        anyhow::anyhow!(
                            "--naming must be `prefixed` or `conditional`, not `{other}`"
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
            serve(&runtime, options, http.as_deref(), allow_origin).await?
        }
    };
    runtime.shutdown().await;
    Ok(code)
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
    json: bool,
) -> Result<u8, Failure> {
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

    let result = runtime
        .call_tool_json(tool, arguments, CallOptions { timeout })
        .await;
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            let code = match e {
                CallError::UnknownTool(_) | CallError::InvalidArguments(_) => 2,
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

/// `mcpbox serve`: MCP on stdin/stdout, or Streamable HTTP. Everything but the
/// protocol goes to stderr.
async fn serve(
    runtime: &Runtime,
    options: ServeOptions,
    http: Option<&str>,
    allow_origin: &[String],
) -> Result<u8, Failure> {
    use mcpbox::Event;
    let mut events = runtime.events();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match event {
                Event::Warning(w) => eprintln!("mcpbox serve: warning: {w}"),
                Event::Status(s) if s.state == ServerState::Failed => eprintln!(
                    "mcpbox serve: server `{}` failed: {}",
                    s.name,
                    s.error.as_deref().unwrap_or("unknown error")
                ),
                Event::Status(s) if s.state == ServerState::Connected => {
                    eprintln!(
                        "mcpbox serve: server `{}` connected ({} tools)",
                        s.name, s.tool_count
                    )
                }
                _ => {}
            }
        }
    });
    let Some(addr) = http else {
        runtime
            .serve_stdio(options, tokio::io::stdin(), tokio::io::stdout())
            .await
            .map_err(|e| fail(2, e))?;
        return Ok(0);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("could not listen on {addr}"))?;
    let local = listener.local_addr()?;
    let mut token = std::env::var("MCPBOX_TOKEN").ok().filter(|t| !t.is_empty());
    if token.is_none() && !local.ip().is_loopback() {
        let made = mcpbox::random_token().context("making up a bearer token")?;
        eprintln!("mcpbox serve: bearer token (set MCPBOX_TOKEN to choose one): {made}");
        token = Some(made);
    }
    eprintln!("mcpbox serve: listening on http://{local}/mcp");
    let http = HttpOptions {
        token,
        allowed_origins: allow_origin.to_vec(),
        ..HttpOptions::default()
    };
    tokio::select! {
        served = runtime.serve_http(options, http, listener) => {
            served.map_err(|e| fail(2, e))?;
        }
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(0)
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
