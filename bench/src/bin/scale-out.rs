//! Throughput as instances are added behind HAProxy, beside one instance alone,
//! and HAProxy's own cost per request as a hop (as the `relay` route measures
//! the floor of a stdio gateway).
//!
//! ```text
//! scripts/install-peers && cargo build --release -p mcpbox-cli -p mcpbox-bench
//! cargo run --release -p mcpbox-bench --bin scale-out -- [--seconds S] [--rounds R] [--concurrency C]
//! ```
//!
//! HAProxy runs the configurations shipped in `docs/deploy/` (their `bind`,
//! `stats socket` and server addresses changed, as the tests run them: request
//! log and health checks included). The instances, each requiring a bearer
//! token that every request carries: `mcpbox serve --http` (the release build
//! beside this program) and the stock component under `wasmtime serve --max-instance-reuse-count 1000` (the
//! deployment `docs/PLATFORMS.md` recommends), all in front of the TypeScript SDK
//! v2 peer over HTTP.
//!
//! | setup | path of a request |
//! |---|---|
//! | upstream direct | the peer itself (`tools/call` only): the floor |
//! | native direct | one `mcpbox serve --http` |
//! | native ×N | HAProxy (`haproxy-native.cfg`) → N of them |
//! | stock direct | one `wasmtime serve` |
//! | stock ×N | HAProxy (`haproxy-stock.cfg`) → N of them |
//!
//! Requests, both 2026-07-28 (no session, so no affinity is involved):
//! `tools/call` of the peer's `add` (the gateway calls the peer) and
//! `server/discover` (answered by the gateway alone: what the gateway tier itself
//! serves). Every answer is checked.
//!
//! Throughput: C connections kept alive, each with one request at a time, for
//! S seconds after a second of warm-up; requests per second, and the CPU each
//! process spent per request (user + system, from its CPU-time clock, in the
//! timed window). The hop: the same with one connection (a request at a time), direct
//! and through HAProxy to that one instance; the difference of the mean times is
//! what HAProxy adds to a request, and its CPU per request what it costs.
//! "Cores busy" is the CPU of the four parts per second of the sample: how much
//! of the machine they used (other load on a shared machine is not in it).
//! Rounds alternate the setups, so the load of a shared machine falls on all of
//! them; the tables show medians over rounds.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use mcpbox_tests::gateway::TOKEN;
use mcpbox_tests::haproxy::{Haproxy, shipped};
use mcpbox_tests::http::{START_DEADLINE, ts_http};
use mcpbox_tests::stock::{StockServer, stock_component};
use serde_json::json;
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> String {
    "usage: scale-out [--seconds S] [--rounds R] [--concurrency C]".into()
}

struct Args {
    seconds: u64,
    rounds: usize,
    concurrency: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seconds: 5,
        rounds: 3,
        concurrency: 16,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(usage)?;
        match arg.as_str() {
            "--seconds" => args.seconds = value,
            "--rounds" => args.rounds = value as usize,
            "--concurrency" => args.concurrency = value as usize,
            _ => return Err(usage()),
        }
    }
    Ok(args)
}

/// One kind of request, ready to send to any setup.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Call,
    Discover,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Call => "tools/call",
            Kind::Discover => "server/discover",
        }
    }
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Where requests go and what they are.
struct Target {
    authority: String,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Bytes,
    /// What every answer must contain.
    expect: &'static str,
}

impl Target {
    fn new(url: &str, kind: Kind, tool: &str, token: bool) -> Target {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
        let mut headers = vec![
            ("content-type", "application/json".to_owned()),
            ("accept", "application/json, text/event-stream".to_owned()),
            ("mcp-protocol-version", "2026-07-28".to_owned()),
        ];
        if token {
            headers.push(("authorization", format!("Bearer {TOKEN}")));
        }
        let (body, expect) = match kind {
            Kind::Call => {
                headers.push(("mcp-method", "tools/call".into()));
                headers.push(("mcp-name", tool.to_owned()));
                (
                    format!(
                        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"a":2,"b":3}},{META}}}}}"#
                    ),
                    r#""sum":5"#,
                )
            }
            Kind::Discover => {
                headers.push(("mcp-method", "server/discover".into()));
                (
                    format!(
                        r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#
                    ),
                    "supportedVersions",
                )
            }
        };
        Target {
            authority: authority.to_owned(),
            path: path.to_owned(),
            headers,
            body: Bytes::from(body),
            expect,
        }
    }
}

/// One connection sending requests one at a time until `stop`, counting answers.
async fn connection(
    target: Arc<Target>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> Result<(), BoxError> {
    let mut sender = None;
    while !stop.load(Ordering::Relaxed) {
        let mut send = match sender.take() {
            Some(s) => s,
            None => {
                let stream = TcpStream::connect(&target.authority).await?;
                stream.set_nodelay(true)?;
                let (send, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                tokio::spawn(conn);
                send
            }
        };
        if send.ready().await.is_err() {
            // The server closed it (keep-alive timeout): another.
            continue;
        }
        let mut request =
            Request::post(target.path.as_str()).header(header::HOST, target.authority.as_str());
        for (name, value) in &target.headers {
            request = request.header(*name, value.as_str());
        }
        let response = send
            .send_request(request.body(Full::new(target.body.clone()))?)
            .await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let text = String::from_utf8_lossy(&body);
        if status != StatusCode::OK || !text.contains(target.expect) {
            return Err(format!("HTTP {status}: {}", &text[..text.len().min(300)]).into());
        }
        done.fetch_add(1, Ordering::Relaxed);
        sender = Some(send);
    }
    Ok(())
}

/// CPU seconds (user + system, every thread) a process has spent: its CPU-time
/// clock (`clock_getcpuclockid`), in nanoseconds, as `mcpbox-bench` reads a
/// gateway's. `/proc/PID/stat` counts 10 ms ticks, a coarse grain for HAProxy,
/// which spends little per request. A process that is gone counts nothing.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(pid) = i32::try_from(pid) else {
        return 0.0;
    };
    nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid))
        .and_then(nix::time::clock_gettime)
        .map_or(0.0, |spent| std::time::Duration::from(spent).as_secs_f64())
}

/// What one sample measured.
struct Sample {
    per_second: f64,
    /// CPU µs per request, by part (`client`, `haproxy`, `instances`, `upstream`).
    cpu: BTreeMap<&'static str, f64>,
}

/// The processes of a setup, by part, for CPU accounting.
struct Parts {
    haproxy: Vec<u32>,
    instances: Vec<u32>,
    upstream: Vec<u32>,
}

/// Runs `connections` connections against `target` for `seconds` after a
/// second of warm-up.
async fn sample(
    target: Arc<Target>,
    connections: usize,
    seconds: u64,
    parts: &Parts,
) -> Result<Sample, BoxError> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        tasks.spawn(connection(target.clone(), stop.clone(), done.clone()));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu = |pids: &[u32]| pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>();
    let me = std::process::id();
    let before = [
        cpu(&[me]),
        cpu(&parts.haproxy),
        cpu(&parts.instances),
        cpu(&parts.upstream),
    ];
    let (start, counted) = (Instant::now(), done.load(Ordering::Relaxed));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let (elapsed, requests) = (
        start.elapsed().as_secs_f64(),
        done.load(Ordering::Relaxed) - counted,
    );
    let after = [
        cpu(&[me]),
        cpu(&parts.haproxy),
        cpu(&parts.instances),
        cpu(&parts.upstream),
    ];
    stop.store(true, Ordering::Relaxed);
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    let per_request = |i: usize| (after[i] - before[i]) * 1e6 / requests.max(1) as f64;
    let cpu = ["client", "haproxy", "instances", "upstream"]
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, per_request(i)))
        .collect();
    Ok(Sample {
        per_second: requests as f64 / elapsed,
        cpu,
    })
}

/// A child process killed when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mcpbox serve --http` (the release build beside this program) with `config`,
/// requiring the tests' token (as the stock instances do); the guard and its MCP
/// URL.
fn native(config: &Path) -> Result<(Guard, String), String> {
    let cli = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name("mcpbox");
    if !cli.exists() {
        return Err(format!(
            "{} is missing: run `cargo build --release -p mcpbox` first",
            cli.display()
        ));
    }
    let mut child = Command::new(&cli)
        .arg("--trust")
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", cli.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let guard = Guard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + START_DEADLINE;
    loop {
        let line = rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .map_err(|_| "mcpbox serve did not start listening".to_string())?;
        if let Some(url) = line.split("listening on ").nth(1) {
            return Ok((guard, url.trim().to_owned()));
        }
    }
}

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    rest.split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {url}"))
}

/// A setup: a name, where requests go, the tool's name there, whether the
/// token is sent, and its processes.
struct Setup {
    name: String,
    url: String,
    tool: &'static str,
    token: bool,
    parts: Parts,
    kinds: Vec<Kind>,
    /// In the table of one request at a time (direct, and ×1 behind HAProxy).
    hop: bool,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run(args: &Args) -> Result<(), BoxError> {
    let ts = ts_http();
    let ts_pid = ts.id();
    let dir = std::env::temp_dir().join(format!("scale-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config_path: PathBuf = dir.join("mcp.json");
    let config = json!({"mcpServers": {"ts": {"url": ts.url}}}).to_string();
    std::fs::write(&config_path, &config)?;

    let mut natives = Vec::new();
    for _ in 0..3 {
        natives.push(native(&config_path)?);
    }
    eprintln!("building the stock component…");
    let component = stock_component();
    let stocks: Vec<StockServer> = (0..3)
        .map(|_| {
            StockServer::wasmtime_with(
                &component,
                &["--max-instance-reuse-count", "1000"],
                &[("MCPBOX_CONFIG", &config)],
            )
        })
        .collect();
    let native_addrs: Vec<SocketAddr> = natives.iter().map(|(_, u)| addr_of(u)).collect();
    let stock_addrs: Vec<SocketAddr> = stocks.iter().map(|s| s.addr).collect();
    let native_pids: Vec<u32> = natives.iter().map(|(g, _)| g.0.id()).collect();
    let stock_pids: Vec<u32> = stocks.iter().map(StockServer::id).collect();
    let mut balancers = Vec::new();
    let mut setups = vec![Setup {
        name: "upstream direct".into(),
        url: ts.url.clone(),
        tool: "add",
        token: false,
        parts: Parts {
            haproxy: vec![],
            instances: vec![],
            upstream: vec![ts_pid],
        },
        kinds: vec![Kind::Call],
        hop: true,
    }];
    for (family, file, addrs, pids) in [
        ("native", "haproxy-native.cfg", &native_addrs, &native_pids),
        ("stock", "haproxy-stock.cfg", &stock_addrs, &stock_pids),
    ] {
        setups.push(Setup {
            name: format!("{family} direct"),
            url: format!("http://{}/mcp", addrs[0]),
            tool: "ts__add",
            token: true,
            parts: Parts {
                haproxy: vec![],
                instances: vec![pids[0]],
                upstream: vec![ts_pid],
            },
            kinds: vec![Kind::Call, Kind::Discover],
            hop: true,
        });
        for n in 1..=3 {
            let lb = Haproxy::start(&shipped(file), &addrs[..n]);
            lb.wait_for("every instance passes its health check", |s| {
                s.iter().all(|s| s.up())
            });
            setups.push(Setup {
                name: format!("{family} ×{n} behind HAProxy"),
                url: lb.url.clone(),
                tool: "ts__add",
                token: true,
                parts: Parts {
                    haproxy: vec![lb.id()],
                    instances: pids[..n].to_vec(),
                    upstream: vec![ts_pid],
                },
                kinds: vec![Kind::Call, Kind::Discover],
                hop: n == 1,
            });
            balancers.push(lb);
        }
    }

    let load_before = load_average();
    // Throughput, then the hop (one connection), each a table.
    for (title, connections, seconds) in [
        ("throughput", args.concurrency, args.seconds),
        ("one request at a time", 1, args.seconds.min(3)),
    ] {
        let mut results: BTreeMap<(usize, Kind), Vec<Sample>> = BTreeMap::new();
        for round in 0..args.rounds {
            // Each round in another order, so load from elsewhere falls on all.
            let mut order: Vec<usize> = (0..setups.len()).collect();
            order.rotate_left(round % setups.len());
            if round % 2 == 1 {
                order.reverse();
            }
            for &i in &order {
                let setup = &setups[i];
                if connections == 1 && !setup.hop {
                    continue;
                }
                for &kind in &setup.kinds {
                    let target = Arc::new(Target::new(&setup.url, kind, setup.tool, setup.token));
                    let s = sample(target, connections, seconds, &setup.parts)
                        .await
                        .map_err(|e| format!("{} {}: {e}", setup.name, kind.name()))?;
                    eprintln!(
                        "{title}, round {}: {} {}: {:.0}/s",
                        round + 1,
                        setup.name,
                        kind.name(),
                        s.per_second
                    );
                    results.entry((i, kind)).or_default().push(s);
                }
            }
        }
        println!(
            "\n{title}: {connections} connection(s), {seconds} s × {} rounds, medians; load average {}\n",
            args.rounds,
            load_average()
        );
        println!(
            "| setup | request | requests/s | µs/request | × direct | CPU µs/request: client, HAProxy, instances, upstream | cores busy |"
        );
        println!("|---|---|---|---|---|---|---|");
        for kind in [Kind::Call, Kind::Discover] {
            let mut direct = 0.0;
            for (i, setup) in setups.iter().enumerate() {
                let Some(samples) = results.get(&(i, kind)) else {
                    continue;
                };
                let rate = median(&mut samples.iter().map(|s| s.per_second).collect::<Vec<_>>());
                if setup.name.ends_with("direct") && setup.name != "upstream direct" {
                    direct = rate;
                }
                let cpu = |part: &str| {
                    median(
                        &mut samples
                            .iter()
                            .map(|s| s.cpu.get(part).copied().unwrap_or(0.0))
                            .collect::<Vec<_>>(),
                    )
                };
                let ratio = if direct > 0.0 && setup.name != "upstream direct" {
                    format!("{:.2}", rate / direct)
                } else {
                    "–".into()
                };
                let parts = ["client", "haproxy", "instances", "upstream"].map(cpu);
                println!(
                    "| {} | {} | {rate:.0} | {:.0} | {ratio} | {:.0}, {:.0}, {:.0}, {:.0} | {:.2} |",
                    setup.name,
                    kind.name(),
                    1e6 * connections as f64 / rate,
                    parts[0],
                    parts[1],
                    parts[2],
                    parts[3],
                    parts.iter().sum::<f64>() * rate / 1e6,
                );
            }
        }
    }
    println!(
        "\nload average before: {load_before}, after: {}",
        load_average()
    );
    drop(balancers);
    drop(natives);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("scale-out: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scale-out: {e}");
            ExitCode::FAILURE
        }
    }
}
