//! A victim client's latency while another client attacks `mcpbox serve --http`.
//!
//! ```text
//! cargo build -p mcpbox-tests --bin fixture-server -p mcpbox-cli --bin mcpbox
//! cargo run -p mcpbox-bench --bin gateway-isolation -- --mcpbox target/debug/mcpbox [--calls N]
//! ```
//!
//! Each phase starts a fresh gateway (`--mcpbox`, any build: run it once with
//! this one and once with an earlier one to compare) in front of the fixture
//! server, lets a hostile client written here attack it, and has a victim make
//! `--calls` sequential `tools/call`s of the fixture's `echo` meanwhile (or as
//! many as a minute allows): the median and 99th percentile of their latency,
//! and how many failed (an error status, or a session that ended: the victim
//! then initializes again, as a client would). Phases:
//!
//! | phase | attack |
//! |---|---|
//! | quiet | none |
//! | batch | POSTs batching 4,000 `tools/list` over 500 tools, one after another, each on a fresh 2025-06-18 session |
//! | large calls | thirty 4 MiB `tools/call`s of a tool that sleeps 5 s, at once, again and again |
//! | sessions | `initialize` after `initialize` on two threads, never ended, from twenty seconds before the victim begins; and a server's log lines of 1 MiB kept for each of forty idle sessions |
//! | connections | 1,100 idle connections held open (reopened as the gateway closes them) to a gateway whose descriptor limit is 1,024 (soft and hard); the victim opens a connection per call, as a new client does, for the whole minute |
//!
//! The victim keeps one connection for its calls except in `connections`. The
//! last column is the gateway's peak resident memory (`VmHWM`) at the end of the
//! phase. Attackers go as fast as the gateway lets them (one refused at once
//! comes back at once), so their CPU is part of what the victim sees.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn usage() -> String {
    "usage: gateway-isolation --mcpbox PATH [--fixture PATH] [--calls N] [--only PHASE,…]".into()
}

struct Args {
    mcpbox: PathBuf,
    fixture: PathBuf,
    calls: usize,
    only: Option<Vec<String>>,
}

fn parse() -> Result<Args, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut mcpbox = None;
    let mut args = Args {
        mcpbox: PathBuf::new(),
        fixture: me.with_file_name("fixture-server"),
        calls: 400,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(usage);
        match arg.as_str() {
            "--mcpbox" => mcpbox = Some(PathBuf::from(value()?)),
            "--fixture" => args.fixture = PathBuf::from(value()?),
            "--calls" => {
                args.calls = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("--calls needs a positive number")?
            }
            "--only" => args.only = Some(value()?.split(',').map(String::from).collect()),
            _ => return Err(usage()),
        }
    }
    args.mcpbox = mcpbox.ok_or_else(usage)?;
    Ok(args)
}

/// A gateway process, killed when dropped.
struct Gateway {
    child: Child,
    address: SocketAddr,
    _config: PathBuf,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bearer token the gateway is started with and every client sends.
const TOKEN: &str = "gateway-isolation-token";

/// Starts `mcpbox serve --http` over the fixture (with `fixture_args`), with
/// the descriptor limit `descriptors` (soft and hard) when given.
fn gateway(args: &Args, fixture_args: &[&str], descriptors: Option<u64>) -> Gateway {
    let config = std::env::temp_dir().join(format!(
        "gateway-isolation-{}-{}.json",
        std::process::id(),
        fixture_args.len()
    ));
    let text = json!({"mcpServers": {"fx": {"command": args.fixture, "args": fixture_args}}});
    std::fs::write(&config, text.to_string()).expect("write the configuration");
    let mut command = Command::new(&args.mcpbox);
    command
        .args(["--trust", "--config"])
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(n) = descriptors {
        // SAFETY: `setrlimit` is async-signal-safe; nothing else runs before exec.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                rustix::process::setrlimit(
                    rustix::process::Resource::Nofile,
                    rustix::process::Rlimit {
                        current: Some(n),
                        maximum: Some(n),
                    },
                )
                .map_err(std::io::Error::from)
            });
        }
    }
    let mut child = command.spawn().expect("start the gateway");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let address = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("the gateway did not start");
        }
        if let Some(url) = line.split("listening on http://").nth(1) {
            break url
                .trim()
                .trim_end_matches("/mcp")
                .parse()
                .expect("an address");
        }
    };
    // Keep its stderr flowing (and quiet).
    thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink);
    });
    let gateway = Gateway {
        child,
        address,
        _config: config,
    };
    // Ready once the fixture answers.
    let mut victim = Victim::new(gateway.address, true);
    let until = Instant::now() + Duration::from_secs(30);
    while victim.call().is_err() && Instant::now() < until {
        thread::sleep(Duration::from_millis(50));
    }
    gateway
}

/// An answer: its status, its headers (names in lowercase) and its body.
type Answer = (u16, Vec<(String, String)>, String);

/// One HTTP/1.1 request on `stream`; the status and body (the gateway answers a
/// single message with a `Content-Length`; an SSE body is read to its end).
fn exchange(
    stream: &mut TcpStream,
    address: SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
    close: bool,
) -> std::io::Result<Answer> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if close {
        head.push_str("Connection: close\r\n");
    }
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
    let mut found = Vec::new();
    let mut length = None;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            let (n, v) = (n.trim().to_ascii_lowercase(), v.trim().to_owned());
            if n == "content-length" {
                length = v.parse::<usize>().ok();
            }
            found.push((n, v));
        }
    }
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            reader.read_exact(&mut body)?;
        }
        None => {
            // Chunked SSE: read the chunks until the empty one.
            loop {
                line.clear();
                reader.read_line(&mut line)?;
                let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                if n == 0 {
                    reader.read_line(&mut line)?;
                    break;
                }
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk)?;
                body.extend_from_slice(&chunk[..n]);
            }
        }
    }
    Ok((status, found, String::from_utf8_lossy(&body).into_owned()))
}

/// The victim: a 2025-11-25 session, on one connection (or one per call).
struct Victim {
    address: SocketAddr,
    fresh_connections: bool,
    stream: Option<TcpStream>,
    session: Option<String>,
    next: u64,
}

impl Victim {
    fn new(address: SocketAddr, fresh_connections: bool) -> Victim {
        Victim {
            address,
            fresh_connections,
            stream: None,
            session: None,
            next: 0,
        }
    }

    fn post(&mut self, body: &str) -> Result<Answer, String> {
        let fresh = self.fresh_connections;
        if fresh || self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.address, Duration::from_secs(60))
                .map_err(|e| e.to_string())?;
            let _ = s.set_nodelay(true);
            s.set_read_timeout(Some(Duration::from_secs(60)))
                .map_err(|e| e.to_string())?;
            self.stream = Some(s);
        }
        let address = self.address;
        let session = self.session.clone();
        let headers: Vec<(&str, &str)> = session
            .as_deref()
            .map(|s| ("Mcp-Session-Id", s))
            .into_iter()
            .collect();
        let stream = self.stream.as_mut().expect("a connection");
        let result = exchange(stream, address, &headers, body, fresh);
        if fresh || result.is_err() {
            self.stream = None;
        }
        result.map_err(|e| e.to_string())
    }

    fn initialize(&mut self) -> Result<(), String> {
        self.session = None;
        let (status, headers, _) = self.post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "victim", "version": "1"}}})
            .to_string(),
        )?;
        if status != 200 {
            return Err(format!("initialize: {status}"));
        }
        self.session = headers
            .into_iter()
            .find(|(n, _)| n == "mcp-session-id")
            .map(|(_, v)| v);
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())?;
        Ok(())
    }

    /// One echo call, answered right: Ok.
    fn call(&mut self) -> Result<(), String> {
        if self.session.is_none() {
            self.initialize()?;
        }
        self.next += 1;
        let said = format!("victim {}", self.next);
        let (status, _, body) = self.post(
            &json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
                "params": {"name": "fx__echo", "arguments": {"text": said}}})
            .to_string(),
        )?;
        if status == 404 {
            // Its session ended: a client initializes again.
            self.session = None;
            return Err("404".into());
        }
        let answer: Value = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .chain(Some(body.as_str()))
            .filter_map(|t| serde_json::from_str::<Value>(t).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::Null);
        if status == 200 && answer["result"]["content"][0]["text"] == said {
            Ok(())
        } else {
            Err(format!("{status}"))
        }
    }
}

/// The victim's figures in one phase.
struct Figures {
    median: Duration,
    p99: Duration,
    max: Duration,
    failed: usize,
    /// Calls made (fewer than asked when the phase ran out of time).
    made: usize,
}

/// The gateway's peak resident memory so far, in MiB (none once it exited).
fn peak_mib(gateway: &Gateway) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", gateway.child.id())).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024)
}

/// The most a phase's victim goes on for.
const PHASE: Duration = Duration::from_secs(60);

/// How long an attack runs before the victim begins, by default.
const SOON: Duration = Duration::from_millis(500);

fn measure(address: SocketAddr, calls: usize, fresh_connections: bool) -> Figures {
    let until = Instant::now() + PHASE;
    let mut victim = Victim::new(address, fresh_connections);
    // Untimed: the session, and the first calls' one-off costs.
    for _ in 0..20 {
        if Instant::now() < until {
            let _ = victim.call();
        }
    }
    let mut took = Vec::with_capacity(calls.min(100_000));
    let mut failed = 0;
    while took.len() < calls && Instant::now() < until {
        let started = Instant::now();
        if victim.call().is_err() {
            failed += 1;
        }
        took.push(started.elapsed());
    }
    took.sort();
    // None made in the whole phase: each took longer than all of it.
    let at = |i: usize| took.get(i).copied().unwrap_or(PHASE);
    Figures {
        median: at(took.len() / 2),
        p99: at((took.len() * 99 / 100).min(took.len().saturating_sub(1))),
        max: took.last().copied().unwrap_or(PHASE),
        failed,
        made: took.len(),
    }
}

/// Runs `attack` on threads of its own, from `lead` before the victim begins
/// until it is done.
fn under_attack(
    address: SocketAddr,
    calls: usize,
    fresh_connections: bool,
    (attackers, lead): (usize, Duration),
    attack: impl Fn(SocketAddr) + Send + Sync + 'static,
) -> Figures {
    let stop = Arc::new(AtomicBool::new(false));
    let attack = Arc::new(attack);
    let threads: Vec<_> = (0..attackers)
        .map(|_| {
            let (stop, attack) = (stop.clone(), attack.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    attack(address);
                }
            })
        })
        .collect();
    // Let the attack get going.
    thread::sleep(lead);
    let figures = measure(address, calls, fresh_connections);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    figures
}

/// One request on a connection of its own, answer ignored.
fn fire(
    address: SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Vec<(String, String)>> {
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    exchange(&mut s, address, headers, body, true)
        .ok()
        .map(|(_, h, _)| h)
}

/// A session at `version`: its id.
fn open_session(address: SocketAddr, version: &str) -> Option<String> {
    let headers = fire(
        address,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"}}})
        .to_string(),
    )?;
    let id = headers
        .into_iter()
        .find(|(n, _)| n == "mcp-session-id")
        .map(|(_, v)| v)?;
    fire(
        address,
        &[("Mcp-Session-Id", &id)],
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    Some(id)
}

fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {},
           "io.modelcontextprotocol/clientInfo": {"name": "attacker", "version": "1"}})
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // The attack on connections holds more than a thousand of them.
    let _ = mcpbox::raise_open_files_limit();
    let wanted = |phase: &str| {
        args.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == phase))
    };
    let calls = args.calls;
    let mut rows: Vec<(&str, Figures, Option<u64>)> = Vec::new();
    if wanted("quiet") {
        let g = gateway(&args, &[], None);
        let figures = measure(g.address, calls, false);
        rows.push(("quiet", figures, peak_mib(&g)));
        let figures = measure(g.address, calls, true);
        rows.push(("quiet, a connection per call", figures, peak_mib(&g)));
    }
    if wanted("batch") {
        let g = gateway(&args, &["--tools", "500"], None);
        let batch: Arc<str> = Value::Array(
            (0..4000)
                .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
                .collect(),
        )
        .to_string()
        .into();
        let figures = under_attack(g.address, calls, false, (1, SOON), move |address| {
            if let Some(id) = open_session(address, "2025-06-18") {
                fire(address, &[("Mcp-Session-Id", &id)], &batch);
            } else {
                thread::sleep(Duration::from_millis(100));
            }
        });
        rows.push(("batch of 4,000 lists", figures, peak_mib(&g)));
    }
    if wanted("large") {
        let g = gateway(&args, &[], None);
        let body: Arc<str> = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "fx__sleep", "arguments": {"ms": 5000, "pad": "p".repeat(4 * 1024 * 1024 - 1024)},
                       "_meta": stateless_meta()}})
        .to_string()
        .into();
        let figures = under_attack(g.address, calls, false, (30, SOON), move |address| {
            fire(
                address,
                &[("Mcp-Method", "tools/call"), ("Mcp-Name", "fx__sleep")],
                &body,
            );
        });
        rows.push(("thirty 4 MiB calls in flight", figures, peak_mib(&g)));
    }
    if wanted("sessions") {
        let g = gateway(&args, &[], None);
        // Twenty seconds of sessions opened before the victim begins.
        let lead = Duration::from_secs(20);
        let figures = under_attack(g.address, calls, false, (2, lead), |address| {
            let _ = open_session(address, "2025-11-25");
        });
        rows.push(("initialize after initialize", figures, peak_mib(&g)));
        drop(g);
        let g = gateway(&args, &[], None);
        let idle: Vec<String> = (0..40)
            .filter_map(|_| open_session(g.address, "2025-11-25"))
            .collect();
        let line = "l".repeat(1024 * 1024);
        let figures = under_attack(g.address, calls, false, (1, SOON), move |address| {
            let Some(id) = open_session(address, "2025-11-25") else {
                return;
            };
            for n in 0..20 {
                fire(
                    address,
                    &[("Mcp-Session-Id", &id)],
                    &json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                        "params": {"name": "fx__log", "arguments": {"text": line}}})
                    .to_string(),
                );
            }
        });
        rows.push(("1 MiB log lines, 40 idle sessions", figures, peak_mib(&g)));
        drop(idle);
    }
    if wanted("connections") {
        let g = gateway(&args, &[], Some(1024));
        // 1,100 connections held open: those the gateway closes are opened again.
        // Three seconds for the 1,100 to be open before the victim begins.
        let lead = Duration::from_secs(3);
        // The victim calls for the whole phase: the gateway closes the idle
        // connections after 30 s, and a victim done sooner might see nothing.
        let figures = under_attack(g.address, usize::MAX, true, (1, lead), |address| {
            let mut idle: Vec<TcpStream> = Vec::new();
            let until = Instant::now() + PHASE;
            while Instant::now() < until {
                idle.retain(|c| {
                    let _ = c.set_nonblocking(true);
                    let mut byte = [0u8; 1];
                    !matches!(c.peek(&mut byte), Ok(0))
                });
                while idle.len() < 1100 {
                    match TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
                        Ok(c) => idle.push(c),
                        Err(_) => break,
                    }
                }
                thread::sleep(Duration::from_millis(10));
            }
        });
        rows.push((
            "1,100 idle connections (limit 1,024)",
            figures,
            peak_mib(&g),
        ));
    }
    println!("{}", args.mcpbox.display());
    println!(
        "| phase | median | p99 | max | failed / calls | gateway peak RSS |\n\
         |---|---|---|---|---|---|"
    );
    for (phase, f, peak) in &rows {
        let peak = peak.map_or("(exited)".to_owned(), |mib| format!("{mib} MiB"));
        println!(
            "| {phase} | {:.2} ms | {:.2} ms | {:.0} ms | {} / {} | {peak} |",
            f.median.as_secs_f64() * 1e3,
            f.p99.as_secs_f64() * 1e3,
            f.max.as_secs_f64() * 1e3,
            f.failed,
            f.made
        );
    }
    ExitCode::SUCCESS
}
