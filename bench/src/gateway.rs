//! The gateway's workloads (`mcpbox serve`): rmcp's client calling the
//! fixture server several ways, side by side in one run.
//!
//! | route | path |
//! |---|---|
//! | `direct` | rmcp → fixture (stdio) |
//! | `gw-stdio` | rmcp → `mcpbox serve` (stdio) → fixture |
//! | `relay` | rmcp → `mcpbox-bench relay` (copies bytes, understands nothing: the floor of any stdio gateway) → fixture |
//! | `rmcp-proxy` | rmcp → `mcpbox-bench rmcp-proxy` (a stdio gateway built on rmcp: native, no sandbox, no policy; G1, G2, G5) → fixture |
//! | `gw-http` | rmcp → `mcpbox serve --http 127.0.0.1:0` (Streamable HTTP, 2025 session) → fixture |
//! | `gw-http-lean` | the bench's lean HTTP client ([`crate::lean_http`]) → the same gateway → fixture (G1, G2) |
//! | `gw-http-lean@base` | the same, through another build of `mcpbox` (`MCPBOX_BENCH_BASE=path`; G1, G2) |
//! | `mcp-proxy` | rmcp → `mcp-proxy` (PyPI, pinned; Streamable HTTP) → fixture |
//!
//! ```text
//! cargo run --release -p mcpbox-bench -- --gateway [--reps N]
//! ```
//!
//! | id | workload | metric |
//! |----|----------|--------|
//! | G1 | 2,000 sequential `echo` calls | µs/call |
//! | G2 | 1,000 `echo` calls in flight, three rounds | calls/s |
//! | G1, G2 | the same, the process in the middle | its CPU µs (user + system) per call |
//! | G1, G2 | the same, the client (this process: rmcp, or the lean client) | its CPU µs per call |
//! | G3 | `tools/list` of 10,000 upstream tools | ms, peak RSS of the process in the middle |
//! | G4 | `search_tools` over 10,000 tools (`serve --tool-search`, stdio) | ms for the first search (builds the index), µs per search after |
//! | G5 | 2,000 sequential `ping`s (stdio routes) | µs per round trip, and the CPU of the middle per round trip |
//! | G6 | 200 sequential `echo` calls from FastMCP's client (Python) to `@modelcontextprotocol/server-everything`, `direct` and `gw-stdio` | µs/call |
//!
//! G6 is the gateway as a user meets it: a real Python client
//! (`tests/peers/fastmcp_echo_calls.py`, FastMCP pinned in
//! `tests/peers/requirements.txt`) and a real Node server, both from
//! `scripts/install-peers`; without them its row says so.
//!
//! G5 says what one turn of the process in the middle costs: the gateway
//! answers `ping` itself (one wake-up, no upstream call), as rmcp's server in
//! `rmcp-proxy` does, where the relay passes it to the fixture and back. A G1 call is two such turns of the gateway
//! plus the MCP work of the call.
//!
//! As in the rest of the bench, every sample is a process of its own
//! (`mcpbox-bench gateway-worker ROUTE WORKLOAD …`) that starts the route's
//! processes afresh, and the routes take turns going first. The gateway runs the
//! release CLI with the bench's warm component cache, as a user's would after
//! its first start. Every answer is checked (an echo returns its own text; a
//! search finds the tool it names), so a route that answers wrongly fails
//! rather than looks fast.
//!
//! `MCPBOX_BENCH_PERF=1` (for profiling; `perf` must be installed) attaches
//! `perf stat -p` to the process in the middle for the timed part of G1 and G2
//! and adds its instructions, task clock and context switches per call: counts
//! that, unlike the wall clock, do not move with the load of a shared machine.
//! `MCPBOX_BENCH_ROUNDS=N` repeats the timed part of G1 and G2 N times.
//!
//! Every route's processes are stopped as a client stops a server: the
//! client closes the stdin of the process it talks to (`SIGTERM` over HTTP),
//! which then has a minute to exit before it is killed. So a process in the
//! middle runs its own exit path, and a profiler it runs under writes what it
//! counted. Instructions per call of the process in the middle, counted by
//! callgrind (the machine's own counters need not be there, and the load of
//! other programs does not move these): one sample with 2,000 timed calls and
//! one with 4,000, of which the difference cancels start-up and warm-up.
//!
//! ```text
//! cargo build --release -p mcpbox-cli --bin mcpbox -p mcpbox-tests --bin fixture-server -p mcpbox-bench
//! export MCPBOX_BENCH_CACHE_DIR=/tmp/mcpbox-valgrind-cache
//! # valgrind hides some CPU features, so the guest compiles again for it: once, untraced
//! echo '{"mcpServers":{}}' > /tmp/empty.json
//! MCPBOX_CACHE_DIR=$MCPBOX_BENCH_CACHE_DIR valgrind --tool=none target/release/mcpbox --trust --config /tmp/empty.json tools
//! for n in 1 2; do MCPBOX_BENCH_ROUNDS=$n MCPBOX_BENCH_ROUTES=gw-stdio,rmcp-proxy,relay \
//!   valgrind --tool=callgrind --trace-children=yes --trace-children-skip='*/fixture-server' \
//!   --trace-children-skip-by-arg=worker --callgrind-out-file=/tmp/cg-$n.%p \
//!   target/release/mcpbox-bench --no-build --gateway --only G1 --reps 1; done
//! grep -H -e '^cmd:' -e '^totals:' /tmp/cg-*
//! ```
//!
//! Each traced process writes `/tmp/cg-N.PID`; the middle is the file whose
//! `cmd:` is `mcpbox … serve`, `mcpbox-bench rmcp-proxy …` or `mcpbox-bench
//! relay …`, and its instructions per call are `(totals₂ − totals₁) / 2,000`.
//! (The first traced run after the cache was filled does some one-time work:
//! take it again.) `callgrind_annotate --inclusive=yes` on a file gives the
//! inclusive cost per function; the guest's compiled code shows as addresses
//! (see docs/PERFORMANCE.md, "Profiling", for its names under `perf`).
//! `MCPBOX_BENCH_ROUTES=gw-http-lean,gw-http-lean@base` runs only the routes
//! named (comma-separated), to compare two gateway builds in less time.
//!
//! `mcp-proxy` runs from `bench/.venv` (`python3 -m venv bench/.venv &&
//! bench/.venv/bin/pip install -r bench/requirements.txt`), with its default
//! settings (stateful Streamable HTTP, log level INFO), as users run it; without
//! it its column is empty.
//!
//! rmcp's HTTP client spends over 200 µs of CPU per call on its own, which is
//! the whole budget of 10,000 calls/s on 2 cores, so `gw-http` measures rmcp's
//! client as much as the gateway. `gw-http-lean` sends the same session's
//! calls with less CPU per call (its own column of client CPU says how much
//! less), so it says what the gateway itself serves. `MCPBOX_BENCH_BASE=path`
//! adds the same route through another `mcpbox` binary (the one on `main`, say)
//! to compare a change to the gateway side by side in one run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, PingRequest, ServerResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::lean_http::LeanClient;
use crate::worker::process_cpu;
use crate::{Samples, cell, markdown_text, number};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Metrics of one sample, by name.
type Metrics = BTreeMap<&'static str, f64>;

/// Timed sequential calls (G1).
const SEQUENTIAL_CALLS: usize = 2_000;
/// Untimed calls first, so that connections and caches are warm.
const WARM_UP_CALLS: usize = 100;
/// Calls in flight at once (G2), and the timed rounds of them.
const CONCURRENT_CALLS: usize = 1_000;
const CONCURRENT_ROUNDS: usize = 3;
/// Upstream tools in G3 and G4 (the fixture's own plus echo-like `tool_N`).
const BIG_LIST: usize = 10_000;
/// Timed searches (G4), after the first.
const SEARCHES: usize = 200;
/// Timed sequential calls from FastMCP's client (G6), after one untimed.
const FASTMCP_CALLS: usize = 200;
/// The longest a sample may take before it counts as hung.
const PATIENCE: Duration = Duration::from_secs(180);

/// A gateway workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Workload {
    Sequential,
    Concurrent,
    BigList,
    Search,
    /// Sequential `ping`s: the cost of one turn of the process in the middle.
    Ping,
    /// Sequential `echo` calls from FastMCP's client to server-everything.
    FastMcp,
}

impl Workload {
    pub const ALL: [Workload; 6] = [
        Workload::Sequential,
        Workload::Concurrent,
        Workload::BigList,
        Workload::Search,
        Workload::Ping,
        Workload::FastMcp,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Workload::Sequential => "G1",
            Workload::Concurrent => "G2",
            Workload::BigList => "G3",
            Workload::Search => "G4",
            Workload::Ping => "G5",
            Workload::FastMcp => "G6",
        }
    }

    pub fn from_id(id: &str) -> Option<Workload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.id().eq_ignore_ascii_case(id))
    }

    /// The routes it runs on.
    fn routes(self) -> &'static [Route] {
        match self {
            Workload::Search => &[Route::GwStdio],
            Workload::FastMcp => &[Route::Direct, Route::GwStdio],
            Workload::Ping => &[
                Route::Direct,
                Route::GwStdio,
                Route::Relay,
                Route::RmcpProxy,
            ],
            // The lean client calls tools only.
            Workload::BigList => &[Route::Direct, Route::GwStdio, Route::GwHttp, Route::Proxy],
            _ => &Route::ALL,
        }
    }
}

/// How the client reaches the fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Route {
    Direct,
    GwStdio,
    /// Through `mcpbox-bench relay`: the floor of a stdio gateway.
    Relay,
    /// Through `mcpbox-bench rmcp-proxy`: a gateway built on rmcp.
    RmcpProxy,
    GwHttp,
    /// The lean client through the gateway over HTTP.
    GwHttpLean,
    /// The lean client through `MCPBOX_BENCH_BASE`'s gateway.
    GwHttpLeanBase,
    Proxy,
}

impl Route {
    const ALL: [Route; 8] = [
        Route::Direct,
        Route::GwStdio,
        Route::Relay,
        Route::RmcpProxy,
        Route::GwHttp,
        Route::GwHttpLean,
        Route::GwHttpLeanBase,
        Route::Proxy,
    ];

    fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::GwStdio => "gw-stdio",
            Route::Relay => "relay",
            Route::RmcpProxy => "rmcp-proxy",
            Route::GwHttp => "gw-http",
            Route::GwHttpLean => "gw-http-lean",
            Route::GwHttpLeanBase => "gw-http-lean@base",
            Route::Proxy => "mcp-proxy",
        }
    }

    fn from_name(name: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// The programs and files of a run.
#[derive(Debug, Clone)]
pub struct Programs {
    pub fixture: PathBuf,
    pub mcpbox: PathBuf,
    /// `bench/.venv/bin/mcp-proxy`, when installed.
    pub proxy: Option<PathBuf>,
    /// Another `mcpbox` to compare with (`MCPBOX_BENCH_BASE`), for `gw-http-lean@base`.
    pub base: Option<PathBuf>,
    /// The gateway's component cache (warm).
    pub cache_dir: PathBuf,
    /// Where the gateway's configurations are.
    pub work: PathBuf,
    /// How many tools the fixture lists on its own.
    pub builtin: usize,
}

impl Programs {
    /// Finds `mcp-proxy` and writes the gateway's configurations into `work`.
    pub fn new(
        fixture: PathBuf,
        mcpbox: PathBuf,
        cache_dir: PathBuf,
        work: PathBuf,
        builtin: usize,
    ) -> Result<Programs, String> {
        let proxy = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/mcp-proxy");
        let proxy = proxy.is_file().then_some(proxy);
        if proxy.is_none() {
            eprintln!(
                "note: bench/.venv/bin/mcp-proxy is missing, so the mcp-proxy column stays empty \
                 (python3 -m venv bench/.venv && bench/.venv/bin/pip install -r bench/requirements.txt)"
            );
        }
        std::fs::create_dir_all(&work)
            .map_err(|e| format!("cannot create {}: {e}", work.display()))?;
        let base = std::env::var_os("MCPBOX_BENCH_BASE").map(PathBuf::from);
        if let Some(base) = base.as_ref().filter(|b| !b.is_file()) {
            return Err(format!(
                "MCPBOX_BENCH_BASE={} is not a file",
                base.display()
            ));
        }
        let programs = Programs {
            fixture,
            mcpbox,
            proxy,
            base,
            cache_dir,
            work,
            builtin,
        };
        for big in [false, true] {
            // 10,000 tools is the default `limits.maxTools`: room above it.
            let config = json!({"mcpServers": {"fx": {
                "command": programs.fixture, "args": programs.fixture_args(big),
                "limits": {"maxTools": 2 * BIG_LIST}}}});
            let path = programs.config(big);
            std::fs::write(&path, config.to_string())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(programs)
    }

    fn config(&self, big: bool) -> PathBuf {
        self.work.join(if big {
            "gateway-big.json"
        } else {
            "gateway.json"
        })
    }

    fn fixture_args(&self, big: bool) -> Vec<String> {
        if big {
            vec![
                "--tools".into(),
                BIG_LIST.saturating_sub(self.builtin).to_string(),
            ]
        } else {
            Vec::new()
        }
    }

    /// The worker's command line after `gateway-worker ROUTE WORKLOAD`.
    fn worker_args(&self) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            path(&self.fixture),
            path(&self.mcpbox),
            self.proxy.as_deref().map(path).unwrap_or_default(),
            self.base.as_deref().map(path).unwrap_or_default(),
            path(&self.cache_dir),
            path(&self.work),
            self.builtin.to_string(),
        ]
    }

    fn from_worker_args(args: &mut impl Iterator<Item = String>) -> Programs {
        let mut next = || args.next().unwrap_or_default();
        Programs {
            fixture: next().into(),
            mcpbox: next().into(),
            proxy: Some(next()).filter(|p| !p.is_empty()).map(PathBuf::from),
            base: Some(next()).filter(|p| !p.is_empty()).map(PathBuf::from),
            cache_dir: next().into(),
            work: next().into(),
            builtin: next().parse().unwrap_or(0),
        }
    }
}

/// How long a process in the middle may take to exit once asked to (its stdin
/// closed, or `SIGTERM` on HTTP) before it is killed: long enough for one
/// running under callgrind to write its profile.
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// A gateway or proxy on HTTP, stopped when dropped: `SIGTERM`, then up to
/// [`STOP_PATIENCE`] to exit, and killed only after.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let until = Instant::now() + STOP_PATIENCE;
        while Instant::now() < until {
            match self.0.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                _ => return,
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` and waits for the stderr line that `ready` turns into its URL.
fn start(
    mut command: Command,
    ready: impl Fn(&str) -> Option<String>,
) -> Result<(Guard, String), BoxError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let guard = Guard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads stderr to its end, so the process never blocks writing it (mcp-proxy
    // logs a line per request).
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            return Err(format!(
                "{command:?} did not say where it listens: {}",
                seen.join(" | ")
            )
            .into());
        };
        if let Some(url) = ready(&line) {
            std::thread::spawn(move || while rx.recv().is_ok() {});
            return Ok((guard, url));
        }
        seen.push(line);
    }
}

/// The client of a route.
enum Client {
    Rmcp(RunningService<RoleClient, ()>),
    Lean(LeanClient),
}

impl Client {
    /// rmcp's client, for the workloads only it runs (G3, G4).
    fn rmcp(&self) -> Result<&RunningService<RoleClient, ()>, BoxError> {
        match self {
            Client::Rmcp(client) => Ok(client),
            Client::Lean(_) => Err("the lean client calls tools only".into()),
        }
    }

    /// One `ping`, answered (rmcp's client).
    async fn ping(&self) -> Result<(), BoxError> {
        let ping = PingRequest {
            method: Default::default(),
            extensions: Default::default(),
        };
        match self.rmcp()?.send_request(ping.into()).await? {
            ServerResult::EmptyResult(_) => Ok(()),
            other => Err(format!("ping answered with {other:?}").into()),
        }
    }

    /// One `echo` call whose answer is checked.
    async fn echo(&self, name: &str, i: usize) -> Result<(), BoxError> {
        match self {
            Client::Rmcp(client) => echo(client, name, i).await,
            Client::Lean(client) => client.echo(name, &format!("call {i}")).await,
        }
    }

    /// Ends the session; over stdio, that closes the child's stdin.
    async fn close(self) -> Result<(), BoxError> {
        if let Client::Rmcp(client) = self {
            client.cancel().await?;
        }
        Ok(())
    }
}

/// The bench's settings for an `mcpbox` process (the gateway, W1c's CLI), as
/// the workers take them: `MCPBOX_BENCH_GUEST=path.wasm` runs another build of
/// the guest (one with its name section, for profiles), and
/// `MCPBOX_BENCH_BUSY_POLL` sets `--busy-poll`.
pub(crate) fn with_bench_options(command: &mut Command) {
    if let Some(guest) = std::env::var_os("MCPBOX_BENCH_GUEST") {
        command.arg("--guest").arg(guest);
    }
    if let Some(busy_poll) = crate::worker::busy_poll() {
        command
            .arg("--busy-poll")
            .arg(busy_poll.as_micros().to_string());
    }
}

/// The bearer token the bench's HTTP gateways require (`MCPBOX_TOKEN`).
const TOKEN: &str = "mcpbox-bench-token";

/// Starts `mcpbox serve --http 127.0.0.1:0` (the program `mcpbox`), requiring
/// [`TOKEN`]; the guard and URL.
fn start_http_gateway(
    p: &Programs,
    mcpbox: &Path,
    big: bool,
    extra: &[&str],
) -> Result<(Guard, String), BoxError> {
    let mut command = Command::new(mcpbox);
    command
        .arg("--trust")
        .arg("--config")
        .arg(p.config(big))
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .env("MCPBOX_CACHE_DIR", &p.cache_dir)
        .env("MCPBOX_TOKEN", TOKEN);
    with_bench_options(&mut command);
    start(command, |l| {
        Some(l.split("listening on ").nth(1)?.trim().to_owned())
    })
}

/// A connected client and what keeps its route alive.
struct Connected {
    client: Client,
    /// The name the fixture's `echo` has on this route.
    prefix: &'static str,
    /// The process in the middle, if any: its pid for G3.
    middle: Option<u32>,
    /// The process the client talks to.
    server: Server,
}

/// The process a client talks to, stopped gently by [`Connected::close`] (and
/// killed if the sample fails before that).
enum Server {
    /// A child on stdio (the fixture, or a process in the middle): the client
    /// holds its pipes, so closing the client closes its stdin.
    Stdio(tokio::process::Child),
    /// A gateway or proxy on HTTP.
    Http(Guard),
}

impl Connected {
    /// Ends the session and stops the process it talks to as a user's client
    /// would: its stdin closed (over stdio) or `SIGTERM` (over HTTP), then up
    /// to [`STOP_PATIENCE`] to exit, killed only after. A process that exits
    /// on its own runs its exit path, so a profiler it runs under (callgrind)
    /// writes what it counted.
    async fn close(self) -> Result<(), BoxError> {
        let Connected { client, server, .. } = self;
        client.close().await?;
        match server {
            Server::Stdio(mut child) => {
                if tokio::time::timeout(STOP_PATIENCE, child.wait())
                    .await
                    .is_err()
                {
                    child.kill().await?;
                    return Err(format!(
                        "the process did not exit within {}s of its stdin closing",
                        STOP_PATIENCE.as_secs()
                    )
                    .into());
                }
            }
            Server::Http(guard) => drop(guard),
        }
        Ok(())
    }
}

/// rmcp's client (a 2025-11-25 session) over the stdio of `command`, which is the
/// fixture itself or, with `middle`, a process between the client and the fixture.
///
/// The bench starts the child itself, rather than through rmcp's
/// `TokioChildProcess` (which kills what is still running three seconds
/// after the client closes), so that [`Connected::close`] can give every
/// route the same gentle stop.
async fn over_stdio(
    mut command: tokio::process::Command,
    prefix: &'static str,
    middle: bool,
) -> Result<Connected, BoxError> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("the child has no stdio pipes".into());
    };
    let middle = if middle { child.id() } else { None };
    let client = ().serve_with_lifecycle((stdout, stdin), ClientLifecycleMode::Initialize).await?;
    Ok(Connected {
        client: Client::Rmcp(client),
        prefix,
        middle,
        server: Server::Stdio(child),
    })
}

async fn connect(
    p: &Programs,
    route: Route,
    big: bool,
    extra: &[&str],
) -> Result<Connected, BoxError> {
    // A 2025-11-25 session everywhere: what mcp-proxy and the fixture speak.
    let lifecycle = ClientLifecycleMode::Initialize;
    match route {
        Route::Direct => {
            let mut command = tokio::process::Command::new(&p.fixture);
            command.args(p.fixture_args(big));
            over_stdio(command, "", false).await
        }
        Route::GwStdio => {
            let mut command = tokio::process::Command::new(&p.mcpbox);
            // The bench wrote this configuration itself (see `mcpbox trust`).
            command
                .arg("--trust")
                .arg("--config")
                .arg(p.config(big))
                .arg("serve")
                .args(extra)
                .env("MCPBOX_CACHE_DIR", &p.cache_dir)
                .stderr(Stdio::null());
            with_bench_options(command.as_std_mut());
            over_stdio(command, "fx__", true).await
        }
        Route::Relay | Route::RmcpProxy => {
            // Both are this program's own subcommands, named as their routes.
            let mut command = tokio::process::Command::new(std::env::current_exe()?);
            command
                .arg(route.name())
                .arg(&p.fixture)
                .args(p.fixture_args(big));
            over_stdio(command, "", true).await
        }
        Route::GwHttp => {
            let (guard, url) = start_http_gateway(p, &p.mcpbox, big, extra)?;
            let middle = Some(guard.0.id());
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
            );
            let client = ().serve_with_lifecycle(transport, lifecycle).await?;
            Ok(Connected {
                client: Client::Rmcp(client),
                prefix: "fx__",
                middle,
                server: Server::Http(guard),
            })
        }
        Route::GwHttpLean | Route::GwHttpLeanBase => {
            let mcpbox = match route {
                Route::GwHttpLeanBase => p.base.as_deref().ok_or("MCPBOX_BENCH_BASE is not set")?,
                _ => &p.mcpbox,
            };
            let (guard, url) = start_http_gateway(p, mcpbox, big, extra)?;
            let middle = Some(guard.0.id());
            let client = LeanClient::connect(&url, TOKEN).await?;
            Ok(Connected {
                client: Client::Lean(client),
                prefix: "fx__",
                middle,
                server: Server::Http(guard),
            })
        }
        Route::Proxy => {
            let proxy = p.proxy.as_ref().ok_or("mcp-proxy is not installed")?;
            let mut command = Command::new(proxy);
            command
                .args(["--port", "0", "--host", "127.0.0.1", "--"])
                .arg(&p.fixture)
                .args(p.fixture_args(big));
            let (guard, url) = start(command, |l| {
                let rest = l.split("Uvicorn running on http://127.0.0.1:").nth(1)?;
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                Some(format!("http://127.0.0.1:{port}/mcp"))
            })?;
            let middle = Some(guard.0.id());
            let transport = StreamableHttpClientTransport::from_uri(url);
            let client = ().serve_with_lifecycle(transport, lifecycle).await?;
            Ok(Connected {
                client: Client::Rmcp(client),
                prefix: "",
                middle,
                server: Server::Http(guard),
            })
        }
    }
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// One `echo` call whose answer is checked.
async fn echo(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    i: usize,
) -> Result<(), BoxError> {
    let text = format!("call {i}");
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments(json!({"text": text})));
    let result = client.call_tool(params).await?;
    let got = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str());
    if got == Some(text.as_str()) && result.is_error != Some(true) {
        Ok(())
    } else {
        Err(format!("{name} answered {got:?}, not {text:?}").into())
    }
}

/// CPU time (user + system, every thread, those that ended too) a process has
/// used so far, in µs: its CPU-time clock (`clock_getcpuclockid`), which Linux
/// lets any process read, in nanoseconds. `/proc/PID/stat` counts in clock
/// ticks of 10 ms: G1's middle spends about 20 of them on its 2,000 calls, so
/// one tick more or less moved its ratio by 5 %, and G2's on its thousand
/// calls in flight one or two.
fn cpu_us(pid: u32) -> Result<f64, BoxError> {
    let pid = i32::try_from(pid)?;
    let clock = nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid))?;
    let spent = Duration::from(nix::time::clock_gettime(clock)?);
    Ok(spent.as_secs_f64() * 1e6)
}

/// The middle process's CPU µs per call over `calls`, from `before` (see [`cpu_us`]).
fn middle_cpu(
    c: &Connected,
    before: Option<f64>,
    calls: usize,
    metrics: &mut Metrics,
) -> Result<(), BoxError> {
    if let (Some(pid), Some(before)) = (c.middle, before) {
        metrics.insert("middle_cpu_us", (cpu_us(pid)? - before) / calls as f64);
    }
    Ok(())
}

/// Whether `MCPBOX_BENCH_ROUTES` (route names, comma-separated; every route
/// when unset) names `route`: for comparing two gateway builds without waiting
/// for the routes that do not change (`gw-http-lean,gw-http-lean@base`).
fn chosen(route: Route) -> bool {
    match std::env::var("MCPBOX_BENCH_ROUTES") {
        Ok(names) => names.split(',').any(|n| n.trim() == route.name()),
        Err(_) => true,
    }
}

/// For profiling (`MCPBOX_BENCH_ROUNDS=N`): repeat the timed part of G1 and G2
/// N times, so that a profile is not dominated by start-up.
fn rounds() -> usize {
    std::env::var("MCPBOX_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// `perf stat` attached to the process in the middle (`MCPBOX_BENCH_PERF=1`).
struct PerfStat {
    perf: Child,
    output: PathBuf,
}

/// The events counted, as `perf stat -e` takes them.
const PERF_EVENTS: &str = "instructions,task-clock,context-switches";

impl PerfStat {
    /// Attaches to `pid` (and the threads it starts) when `MCPBOX_BENCH_PERF` is set.
    async fn attach(pid: Option<u32>) -> Result<Option<PerfStat>, BoxError> {
        let (Some(pid), Some(_)) = (pid, std::env::var_os("MCPBOX_BENCH_PERF")) else {
            return Ok(None);
        };
        let output = std::env::temp_dir().join(format!(
            "mcpbox-bench-perf-{}-{pid}.csv",
            std::process::id()
        ));
        let perf = Command::new("perf")
            .args(["stat", "-x", ",", "-e", PERF_EVENTS, "-p"])
            .arg(pid.to_string())
            .arg("-o")
            .arg(&output)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("MCPBOX_BENCH_PERF: cannot start perf: {e}"))?;
        // perf says nothing once attached; it takes milliseconds, and what it
        // counts of the idle middle meanwhile is next to nothing.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(Some(PerfStat { perf, output }))
    }

    /// Stops counting; adds the counts per call to `metrics`.
    fn finish(mut self, calls: usize, metrics: &mut Metrics) -> Result<(), BoxError> {
        // SIGINT makes perf print its counts and exit.
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.perf.id() as i32).ok_or("no perf pid")?,
            rustix::process::Signal::INT,
        )?;
        self.perf.wait()?;
        let text = std::fs::read_to_string(&self.output)?;
        let _ = std::fs::remove_file(&self.output);
        // CSV lines: value,unit,event,…
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split(',').collect();
            let (Some(value), Some(event)) = (fields.first(), fields.get(2)) else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, scale) = match event.split(':').next().unwrap_or("") {
                "instructions" => ("perf_instructions_k", 1e-3),
                // In milliseconds.
                "task-clock" => ("perf_task_clock_us", 1e3),
                "context-switches" => ("perf_context_switches", 1.0),
                _ => continue,
            };
            metrics.insert(name, value * scale / calls as f64);
        }
        Ok(())
    }
}

/// What G1 and G5 send, one at a time.
#[derive(Clone, Copy)]
enum Exchange {
    Echo,
    Ping,
}

/// G1 (echo) and G5 (ping): µs per sequential exchange, and the CPU the middle
/// spends on each.
async fn sequential(c: &Connected, exchange: Exchange) -> Result<Metrics, BoxError> {
    let name = format!("{}echo", c.prefix);
    let name = name.as_str();
    let one = |i| async move {
        match exchange {
            Exchange::Echo => c.client.echo(name, i).await,
            Exchange::Ping => c.client.ping().await,
        }
    };
    for i in 0..WARM_UP_CALLS {
        one(i).await?;
    }
    let perf = PerfStat::attach(c.middle).await?;
    let calls = SEQUENTIAL_CALLS * rounds();
    let before = c.middle.map(cpu_us).transpose()?;
    let client_before = process_cpu();
    let started = Instant::now();
    for i in 0..calls {
        one(i).await?;
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let client_us = (process_cpu() - client_before).as_secs_f64() * 1e6 / calls as f64;
    let mut metrics = Metrics::from([("us_per_call", us), ("client_cpu_us", client_us)]);
    middle_cpu(c, before, calls, &mut metrics)?;
    if let Some(perf) = perf {
        perf.finish(calls, &mut metrics)?;
    }
    Ok(metrics)
}

/// 1,000 calls at once, every answer checked.
async fn round(client: &Arc<Client>, name: &Arc<str>) -> Result<(), BoxError> {
    let mut calls = JoinSet::new();
    for i in 0..CONCURRENT_CALLS {
        let (client, name) = (client.clone(), name.clone());
        calls.spawn(async move { client.echo(&name, i).await });
    }
    while let Some(done) = calls.join_next().await {
        done??;
    }
    Ok(())
}

/// G2: calls per second with 1,000 in flight. One untimed round first: over HTTP
/// it opens the client's connections (one per request in flight).
async fn concurrent(c: Connected) -> Result<Metrics, BoxError> {
    let name: Arc<str> = format!("{}echo", c.prefix).into();
    let Connected {
        client,
        middle,
        server,
        prefix,
    } = c;
    let client = Arc::new(client);
    round(&client, &name).await?;
    let perf = PerfStat::attach(middle).await?;
    let rounds = CONCURRENT_ROUNDS * self::rounds();
    let before = middle.map(cpu_us).transpose()?;
    let client_before = process_cpu();
    let started = Instant::now();
    for _ in 0..rounds {
        round(&client, &name).await?;
    }
    let calls = CONCURRENT_CALLS * rounds;
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    let client_us = (process_cpu() - client_before).as_secs_f64() * 1e6 / calls as f64;
    let mut metrics = Metrics::from([("calls_per_s", rate), ("client_cpu_us", client_us)]);
    if let (Some(pid), Some(before)) = (middle, before) {
        metrics.insert("middle_cpu_us", (cpu_us(pid)? - before) / calls as f64);
    }
    if let Some(perf) = perf {
        perf.finish(calls, &mut metrics)?;
    }
    if let Ok(client) = Arc::try_unwrap(client) {
        let c = Connected {
            client,
            prefix,
            middle,
            server,
        };
        c.close().await?;
    }
    Ok(metrics)
}

/// Peak RSS of a process in MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> Result<f64, BoxError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmHWM")?;
    Ok(kb / 1024.0)
}

/// G3: the time of a full `tools/list` of 10,000 tools (every page) and the
/// peak RSS of the process in the middle.
async fn big_list(c: &Connected) -> Result<Metrics, BoxError> {
    let started = Instant::now();
    let tools = c.client.rmcp()?.list_all_tools().await?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if tools.len() != BIG_LIST {
        return Err(format!("listed {} tools, not {BIG_LIST}", tools.len()).into());
    }
    let mut metrics = Metrics::from([("list_ms", ms)]);
    if let Some(pid) = c.middle {
        metrics.insert("peak_rss_mib", peak_rss_mib(pid)?);
    }
    Ok(metrics)
}

/// One `search_tools` call for the tool `fx__tool_{n}`, checked to rank it first.
async fn search(client: &RunningService<RoleClient, ()>, n: usize) -> Result<(), BoxError> {
    let params = CallToolRequestParams::new("search_tools")
        .with_arguments(arguments(json!({"query": format!("tool {n}"), "limit": 5})));
    let result = client.call_tool(params).await?;
    let want = format!("fx__tool_{n}");
    let first = result
        .structured_content
        .as_ref()
        .and_then(|s| s["tools"][0]["name"].as_str().map(str::to_owned));
    if first.as_deref() == Some(want.as_str()) {
        Ok(())
    } else {
        Err(format!("search_tools for {want:?} ranked {first:?} first").into())
    }
}

/// G4: `search_tools` over 10,000 tools: the first search (which indexes them) and
/// the ones after.
async fn search_big(c: &Connected, p: &Programs) -> Result<Metrics, BoxError> {
    let client = c.client.rmcp()?;
    let listed = client.list_all_tools().await?;
    if listed.len() != 2 {
        return Err(format!("search mode lists {} tools, not 2", listed.len()).into());
    }
    let started = Instant::now();
    search(client, 4_321).await?;
    let first_ms = started.elapsed().as_secs_f64() * 1e3;
    // The fixture's `tool_N`: 10,000 less its own tools.
    let tools = BIG_LIST.saturating_sub(p.builtin).max(1);
    let started = Instant::now();
    for i in 0..SEARCHES {
        search(client, (i * 7_919) % tools).await?;
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / SEARCHES as f64;
    Ok(Metrics::from([
        ("first_ms", first_ms),
        ("us_per_search", us),
    ]))
}

/// G6: FastMCP's client (`tests/peers/fastmcp_echo_calls.py`) calling
/// server-everything's `echo` over stdio, directly or through `mcpbox serve`:
/// µs per call, as the client timed them.
fn fastmcp(p: &Programs, route: Route) -> Result<Metrics, BoxError> {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers");
    let python = peers.join(".venv/bin/python");
    let everything = peers.join("node_modules/.bin/mcp-server-everything");
    if !python.is_file() || !everything.is_file() {
        return Err("the peers are not installed (scripts/install-peers)".into());
    }
    let mut command = Command::new(python);
    command
        .arg(peers.join("fastmcp_echo_calls.py"))
        .arg(FASTMCP_CALLS.to_string());
    match route {
        Route::Direct => {
            command.arg("echo").arg(&everything).arg("stdio");
        }
        Route::GwStdio => {
            let config = p.work.join("gateway-everything.json");
            let entry = json!({"mcpServers": {"everything": {
                "command": everything, "args": ["stdio"]}}});
            std::fs::write(&config, entry.to_string())?;
            command
                .arg("everything__echo")
                .arg(&p.mcpbox)
                .arg("--trust")
                .arg("--config")
                .arg(config)
                .arg("serve");
            with_bench_options(&mut command);
            command.env("MCPBOX_CACHE_DIR", &p.cache_dir);
        }
        other => return Err(format!("G6 does not run on {}", other.name()).into()),
    }
    let output = command.stdin(Stdio::null()).output()?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return Err(format!("fastmcp_echo_calls.py failed: {last}").into());
    }
    let report: Value = serde_json::from_slice(&output.stdout)?;
    let us = report["us_per_call"]
        .as_f64()
        .ok_or("fastmcp_echo_calls.py printed no us_per_call")?;
    Ok(Metrics::from([("us_per_call", us)]))
}

async fn sample(p: &Programs, route: Route, workload: Workload) -> Result<Metrics, BoxError> {
    if workload == Workload::FastMcp {
        return fastmcp(p, route);
    }
    let big = matches!(workload, Workload::BigList | Workload::Search);
    let extra: &[&str] = if workload == Workload::Search {
        &["--tool-search"]
    } else {
        &[]
    };
    let c = connect(p, route, big, extra).await?;
    let metrics = match workload {
        Workload::Sequential => sequential(&c, Exchange::Echo).await?,
        Workload::Ping => sequential(&c, Exchange::Ping).await?,
        // It closes its client itself (shared by the calls in flight).
        Workload::Concurrent => return concurrent(c).await,
        Workload::BigList => big_list(&c).await?,
        Workload::Search => search_big(&c, p).await?,
        Workload::FastMcp => fastmcp(p, route)?,
    };
    c.close().await?;
    Ok(metrics)
}

/// `mcpbox-bench gateway-worker ROUTE WORKLOAD FIXTURE MCPBOX PROXY CACHE WORK BUILTIN`:
/// one sample; its metrics as JSON on stdout.
pub fn worker_main(mut args: impl Iterator<Item = String>) -> Result<String, String> {
    let route = args
        .next()
        .and_then(|r| Route::from_name(&r))
        .ok_or("unknown route")?;
    let workload = args
        .next()
        .and_then(|w| Workload::from_id(&w))
        .ok_or("unknown workload")?;
    let programs = Programs::from_worker_args(&mut args);
    // reqwest (rmcp's HTTP client) needs a process-wide TLS provider even for http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start tokio: {e}"))?;
    let result = runtime.block_on(async {
        match tokio::time::timeout(PATIENCE, sample(&programs, route, workload)).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err(format!("hung: no result within {}s", PATIENCE.as_secs())),
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    let metrics = result?;
    serde_json::to_string(&metrics).map_err(|e| e.to_string())
}

/// Runs one sample in a fresh process.
fn run_sample(
    me: &Path,
    p: &Programs,
    route: Route,
    workload: Workload,
) -> Result<BTreeMap<String, f64>, String> {
    let output = Command::new(me)
        .arg("gateway-worker")
        .arg(route.name())
        .arg(workload.id())
        .args(p.worker_args())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start a worker: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(stderr
            .lines()
            .last()
            .unwrap_or("no message")
            .trim()
            .to_owned());
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("a worker printed garbage: {e}"))
}

/// The samples of every (workload, route).
pub type Results = BTreeMap<(Workload, &'static str), Samples>;

/// Runs repetition `rep` of `workloads`: each route of each workload once, the
/// routes in an order that turns with the repetition.
pub fn run_rep(me: &Path, p: &Programs, workloads: &[Workload], rep: usize, results: &mut Results) {
    for &workload in workloads {
        eprint!(" {}", workload.id());
        let mut routes = workload.routes().to_vec();
        let len = routes.len();
        routes.rotate_left(rep % len);
        for route in routes {
            if (route == Route::Proxy && p.proxy.is_none())
                || (route == Route::GwHttpLeanBase && p.base.is_none())
                || !chosen(route)
            {
                continue;
            }
            let entry = results.entry((workload, route.name())).or_default();
            match run_sample(me, p, route, workload) {
                Ok(metrics) => {
                    for (name, value) in metrics {
                        entry.metrics.entry(name).or_default().push(value);
                    }
                }
                Err(e) => {
                    // Said as it happens, as the workers' failures are (main.rs).
                    eprint!("\n  {} failed on {}: {e}\n ", workload.id(), route.name());
                    entry.failures.push(format!("{}: {e}", route.name()));
                }
            }
        }
    }
}

/// A line of the gateway table.
struct Row {
    workload: Workload,
    label: &'static str,
    metric: &'static str,
    unit: &'static str,
    target: Target,
}

/// A target of the gateway's workloads.
#[derive(Clone, Copy)]
enum Target {
    None,
    /// `route`'s median at most `limit` × `of`'s.
    RatioAtMost {
        route: Route,
        of: Route,
        limit: f64,
    },
    /// Each of `routes`' medians at least `value`, and at least `ratio` × `of`'s
    /// (judged and shown for each route: the same gateway behind two clients).
    AtLeast {
        routes: &'static [Route],
        value: f64,
        of: Route,
        ratio: f64,
    },
    /// The gateway's medians (both transports) at most `value`.
    GatewayAtMost(f64),
    /// No target: every route's median over `of`'s.
    Ratios {
        of: Route,
    },
}

const ROWS: &[Row] = &[
    Row {
        workload: Workload::Sequential,
        label: "G1 sequential echo",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::RatioAtMost {
            route: Route::GwStdio,
            of: Route::Direct,
            limit: 1.5,
        },
    },
    Row {
        workload: Workload::Sequential,
        label: "G1 CPU of the middle",
        metric: "middle_cpu_us",
        unit: "µs/call",
        // The sandboxed gateway costing no more than one written with rmcp.
        target: Target::RatioAtMost {
            route: Route::GwStdio,
            of: Route::RmcpProxy,
            limit: 1.0,
        },
    },
    Row {
        workload: Workload::Sequential,
        label: "G1 CPU of the client",
        metric: "client_cpu_us",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Sequential,
        label: "G1 middle: instructions (perf)",
        metric: "perf_instructions_k",
        unit: "k/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Sequential,
        label: "G1 middle: task clock (perf)",
        metric: "perf_task_clock_us",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Sequential,
        label: "G1 middle: context switches (perf)",
        metric: "perf_context_switches",
        unit: "/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 1,000 in flight",
        metric: "calls_per_s",
        unit: "calls/s",
        target: Target::AtLeast {
            routes: &[Route::GwHttp, Route::GwHttpLean],
            value: 10_000.0,
            of: Route::Proxy,
            ratio: 5.0,
        },
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 CPU of the middle",
        metric: "middle_cpu_us",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 CPU of the client",
        metric: "client_cpu_us",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 middle: instructions (perf)",
        metric: "perf_instructions_k",
        unit: "k/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 middle: task clock (perf)",
        metric: "perf_task_clock_us",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "G2 middle: context switches (perf)",
        metric: "perf_context_switches",
        unit: "/call",
        target: Target::None,
    },
    Row {
        workload: Workload::BigList,
        label: "G3 10,000-tool list",
        metric: "list_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::BigList,
        label: "G3 peak RSS (middle)",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::GatewayAtMost(64.0),
    },
    Row {
        workload: Workload::Search,
        label: "G4 first search_tools",
        metric: "first_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Search,
        label: "G4 search_tools after",
        metric: "us_per_search",
        unit: "µs",
        target: Target::None,
    },
    Row {
        workload: Workload::Ping,
        label: "G5 sequential ping",
        metric: "us_per_call",
        unit: "µs/ping",
        target: Target::None,
    },
    Row {
        workload: Workload::Ping,
        label: "G5 CPU of the middle",
        metric: "middle_cpu_us",
        unit: "µs/ping",
        target: Target::None,
    },
    Row {
        workload: Workload::Ping,
        label: "G5 middle: task clock (perf)",
        metric: "perf_task_clock_us",
        unit: "µs/ping",
        target: Target::None,
    },
    Row {
        workload: Workload::FastMcp,
        label: "G6 FastMCP client, echo",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::Ratios { of: Route::Direct },
    },
];

/// Writes the gateway table (Markdown) to `out`; returns the labels of missed targets.
pub fn table(
    reps: usize,
    workloads: &[Workload],
    results: &Results,
    out: &mut String,
) -> Vec<&'static str> {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "gateway: {reps} repetitions, interleaved; median (min–max) per route; rmcp's client except on gw-http-lean*"
    );
    let _ = writeln!(out);
    // One column per route, in `Route::ALL`'s order, as the cells below.
    let heads: Vec<&str> = Route::ALL
        .iter()
        .map(|r| match r {
            Route::GwHttp => "gw-http (rmcp)",
            r => r.name(),
        })
        .collect();
    let _ = writeln!(
        out,
        "| workload | {} | ratios | target | met? |",
        heads.join(" | ")
    );
    let _ = writeln!(out, "|---|{}---|---|---|", "---|".repeat(heads.len()));
    let mut missed = Vec::new();
    // The perf rows only when `MCPBOX_BENCH_PERF` gave them values.
    let measured = |row: &&Row| {
        results.iter().any(|((w, _), s)| {
            *w == row.workload && (s.metrics.contains_key(row.metric) || !s.failures.is_empty())
        })
    };
    for row in ROWS
        .iter()
        .filter(|r| workloads.contains(&r.workload))
        .filter(measured)
    {
        let mut medians = BTreeMap::new();
        let mut cells = Vec::new();
        for route in Route::ALL {
            let samples = results.get(&(row.workload, route.name()));
            let (text, median) = cell(samples, row.metric, row.unit);
            if let Some(m) = median {
                medians.insert(route, m);
            }
            cells.push(text);
        }
        let ratio = |a: Route, b: Route| Some(medians.get(&a)? / medians.get(&b)?);
        let failed = |route: Route| {
            results
                .get(&(row.workload, route.name()))
                .is_none_or(|s| !s.failures.is_empty())
        };
        let (ratios, target, met) = match row.target {
            Target::None => ("–".to_owned(), "–".to_owned(), None),
            Target::Ratios { of } => (ratios_text(&medians, of), "–".to_owned(), None),
            Target::RatioAtMost { route, of, limit } => {
                let r = ratio(route, of);
                let text = ratios_text(&medians, of);
                let met = r.map(|r| r <= limit && !failed(route));
                (
                    text,
                    format!("{} ≤ {limit}× {}", route.name(), of.name()),
                    met,
                )
            }
            Target::AtLeast {
                routes,
                value,
                of,
                ratio: want,
            } => {
                let verdicts: Vec<(Route, Option<bool>)> = routes
                    .iter()
                    .map(|&route| {
                        let r = ratio(route, of);
                        let met = medians
                            .get(&route)
                            .map(|&v| v >= value && r.is_some_and(|r| r >= want) && !failed(route));
                        (route, met)
                    })
                    .collect();
                let names: Vec<&str> = routes.iter().map(|r| r.name()).collect();
                let each: Vec<String> = verdicts
                    .iter()
                    .map(|(route, met)| {
                        let word = match met {
                            Some(true) => "yes",
                            Some(false) => "NO",
                            None => "–",
                        };
                        format!("{} {word}", route.name())
                    })
                    .collect();
                let met = verdicts
                    .iter()
                    .filter_map(|(_, met)| *met)
                    .reduce(|a, b| a && b);
                (
                    format!("{}; {}", ratios_text(&medians, of), each.join(", ")),
                    format!(
                        "{} ≥ {} and ≥ {want}× {}",
                        names.join(", "),
                        number(value),
                        of.name()
                    ),
                    met,
                )
            }
            Target::GatewayAtMost(limit) => {
                let gateway = [Route::GwStdio, Route::GwHttp];
                let met = gateway
                    .iter()
                    .map(|r| medians.get(r).map(|&v| v <= limit && !failed(*r)))
                    .collect::<Option<Vec<bool>>>()
                    .map(|all| all.iter().all(|&ok| ok));
                (
                    "–".to_owned(),
                    format!("gateway ≤ {} MiB", number(limit)),
                    met,
                )
            }
        };
        let met = match met {
            Some(true) => "yes",
            None => "–",
            Some(false) => {
                missed.push(row.label);
                "NO"
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {ratios} | {target} | {met} |",
            row.label,
            cells.join(" | ")
        );
    }
    // A list after the table, apart from it (a line right after a table would be
    // read as one more row).
    let mut first = true;
    for ((workload, route), samples) in results {
        for failure in samples.failures.iter().take(1) {
            if std::mem::take(&mut first) {
                let _ = writeln!(out);
            }
            let _ = writeln!(
                out,
                "- {} {route} failed: {}",
                workload.id(),
                markdown_text(failure)
            );
        }
    }
    missed
}

/// Every route's median over `of`'s: `gw-stdio 1.20×, …`.
fn ratios_text(medians: &BTreeMap<Route, f64>, of: Route) -> String {
    let Some(base) = medians.get(&of) else {
        return "–".into();
    };
    let parts: Vec<String> = medians
        .iter()
        .filter(|(r, _)| **r != of)
        .map(|(r, v)| format!("{} {:.2}×", r.name(), v / base))
        .collect();
    if parts.is_empty() {
        "–".into()
    } else {
        format!("{} (of {})", parts.join(", "), of.name())
    }
}
