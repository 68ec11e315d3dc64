//! `mcpbox serve`: every configured server's tools as one MCP server, on
//! stdin/stdout or over Streamable HTTP (`--http`). The listener, its bearer
//! token and the lines that say where to connect ([`listen`]) serve `dashboard`
//! too.

use std::time::Duration;

use anyhow::Context;
use mcpbox::{Event, HttpOptions, Naming, Runtime, ServeOptions, ServerState};
use tokio::sync::broadcast::Receiver;

use crate::exit::Exit;
use crate::{Failure, block, fail, one};

/// The gateway's caps over HTTP that an operator may want to set (the rest are
/// `HttpOptions`' defaults).
#[derive(clap::Args, Debug)]
pub(crate) struct GatewayLimits {
    /// With --http: the most sessions kept at once; a new one past it ends the one
    /// used longest ago.
    #[arg(long, value_name = "N", default_value_t = HttpOptions::default().max_sessions,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_sessions: usize,
    /// With --http: seconds after which a session nobody uses (no request, no open
    /// stream) ends.
    #[arg(long, value_name = "SECS",
          default_value_t = HttpOptions::default().session_idle_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    session_idle_timeout: u64,
    /// With --http: the most connections open at once (at most 3/4 of the file
    /// descriptor limit); at it, a new connection closes the oldest idle one.
    #[arg(long, value_name = "N", default_value_t = HttpOptions::default().max_connections,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
}

impl GatewayLimits {
    fn apply(&self, http: &mut HttpOptions) {
        http.max_sessions = self.max_sessions;
        http.session_idle_timeout = Duration::from_secs(self.session_idle_timeout);
        http.max_connections = self.max_connections;
    }
}

/// The gateway's options from `--naming`, `--max-name-length`, `--tool-search`
/// and `--profile`.
pub(crate) fn options(
    naming: &str,
    max_name_length: usize,
    tool_search: bool,
    profile: Option<String>,
) -> Result<ServeOptions, Failure> {
    let naming = match naming {
        "prefixed" => Naming::Prefixed,
        "conditional" => Naming::Conditional,
        other => {
            return Err(fail(
                Exit::Usage,
                anyhow::anyhow!(
                    "--naming must be `prefixed` or `conditional`, not `{}`",
                    one(other)
                ),
            ));
        }
    };
    Ok(ServeOptions {
        naming,
        max_name_len: max_name_length,
        tool_search,
        profile,
        ..ServeOptions::default()
    })
}

/// `mcpbox serve`: MCP on stdin/stdout, or Streamable HTTP. Everything but the
/// protocol goes to stderr.
pub(crate) async fn serve(
    runtime: &Runtime,
    events: Receiver<Event>,
    options: ServeOptions,
    http: Option<&str>,
    allow_origin: &[String],
    insecure_no_token: bool,
    limits: &GatewayLimits,
) -> Result<Exit, Failure> {
    report_servers(events, "mcpbox serve");
    let Some(addr) = http else {
        let served = match stdio_streams() {
            StdioStreams::Polled(input, output) => {
                runtime.serve_stdio_fds(options, input, output).await
            }
            StdioStreams::Async(input, output) => runtime.serve_stdio(options, input, output).await,
        };
        served.map_err(|e| fail(Exit::Usage, e))?;
        return Ok(Exit::Success);
    };
    let (listener, mut http) = listen(
        "mcpbox serve",
        addr,
        allow_origin,
        "/mcp",
        insecure_no_token,
    )
    .await?;
    limits.apply(&mut http);
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT end it in `run`, through the runtime's shutdown.
    runtime
        .serve_http(options, http, listener)
        .await
        .map_err(|e| fail(Exit::Usage, e))?;
    Ok(Exit::Success)
}

/// Says on stderr when a server connects or fails, and every warning, while
/// serving: the `events` subscribed to before the runtime opened.
pub(crate) fn report_servers(mut events: Receiver<Event>, who: &'static str) {
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match event {
                Event::Warning(w) => eprintln!("{who}: warning: {}", block(&w, "  ")),
                Event::ToolChanged { reason, .. } => {
                    eprintln!("{who}: warning: {}", block(&reason, "  "))
                }
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
pub(crate) async fn listen(
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
                Exit::Usage,
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
                Exit::Usage,
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

/// stdin and stdout for `serve` on stdio. A pipe (what most clients spawn a
/// server with) or a Unix socket (Node's `child_process`, so the TypeScript
/// SDK's clients) is handed to the runtime as a file descriptor, which its
/// driver thread polls and reads with its servers' pipes: no thread hand-over
/// between the client and the guest. Anything else (a terminal, a file) goes
/// through tokio's `stdin`/`stdout`, which block on a thread of their own and
/// hand every read and write over to it: about two thread wake-ups per line
/// each way.
enum StdioStreams {
    Polled(std::os::fd::OwnedFd, std::os::fd::OwnedFd),
    Async(
        Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
    ),
}

fn stdio_streams() -> StdioStreams {
    use std::os::fd::AsFd;
    // A duplicate of the descriptor: the standard one stays open whatever is tried.
    let pollable = |fd: std::os::fd::BorrowedFd<'_>| {
        let (fifo, fd) = is_fifo(fd.try_clone_to_owned().ok()?);
        if fifo {
            return Some(fd);
        }
        // `local_addr` fails on any socket that is not a Unix one.
        let socket = std::os::unix::net::UnixStream::from(fd);
        socket.local_addr().ok()?;
        Some(socket.into())
    };
    match (
        pollable(std::io::stdin().as_fd()),
        pollable(std::io::stdout().as_fd()),
    ) {
        (Some(input), Some(output)) => StdioStreams::Polled(input, output),
        _ => StdioStreams::Async(Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout())),
    }
}

fn is_fifo(fd: std::os::fd::OwnedFd) -> (bool, std::os::fd::OwnedFd) {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(fd);
    let fifo = file.metadata().is_ok_and(|m| m.file_type().is_fifo());
    (fifo, file.into())
}
