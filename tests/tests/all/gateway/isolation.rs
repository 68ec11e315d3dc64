//! One client never costs another anything but CPU: each attack here comes from
//! a hostile client written in the test, against a real `mcpbox serve --http`
//! with the fixture server behind it, while a well-behaved client (the victim)
//! keeps its session and gets its answers.
//!
//! - a batch of thousands of requests, and large calls on a slow tool, held to
//!   the guest's memory budgets (batches refused where the negotiated revision has
//!   none, capped where it has; requests in flight `429` past the budget);
//! - JSON dense in values under the size cap, refused before the guest reads it,
//!   at the gateway and at `mcpbox call`;
//! - a trap one client causes (an answer larger than the guest's memory), after
//!   which the other client's session carries on (and on stdio, the client's own);
//! - sessions past the cap and replay buffers past their budget;
//! - idle connections past the descriptor limit.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use mcpbox_tests::gateway::{HttpResponse, TOKEN, http, serve_http};
use mcpbox_tests::http::{ServerProcess, start_with};
use mcpbox_tests::stdio::StdioPeer;
use serde_json::{Value, json};

use crate::{POST, config, fixture, stateless_call, text};

/// A 2025 client over raw HTTP: its session id.
struct Session {
    url: String,
    id: String,
    next: u64,
}

impl Session {
    /// `initialize` at `version`, then `notifications/initialized`.
    fn open(url: &str, version: &str) -> Session {
        let r = http(
            url,
            "POST",
            &POST,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "isolation", "version": "1"}}})
            .to_string(),
        );
        assert_eq!(r.status, 200, "{r:?}");
        let id = r.header("mcp-session-id").expect("a session id").to_owned();
        let session = Session {
            url: url.to_owned(),
            id,
            next: 1,
        };
        let r = session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(r.status, 202, "{r:?}");
        session
    }

    fn post(&self, message: &Value) -> HttpResponse {
        self.post_text(&message.to_string())
    }

    fn post_text(&self, body: &str) -> HttpResponse {
        let headers = [
            POST[0],
            POST[1],
            POST[2],
            ("Mcp-Session-Id", self.id.as_str()),
        ];
        http(&self.url, "POST", &headers, body)
    }

    /// Calls `fx__echo` with `said`: the response.
    fn echo(&mut self, said: &str) -> HttpResponse {
        self.next += 1;
        self.post(
            &json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": "fx__echo", "arguments": {"text": said}}}),
        )
    }

    /// Calls `fx__echo` and insists on the answer, naming `after`.
    fn still_answered(&mut self, after: &str) {
        let r = self.echo("still here");
        assert_eq!(r.status, 200, "after {after}: {r:?}");
        let messages = r.messages();
        let answer = messages
            .iter()
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("after {after}: no answer in {r:?}"));
        assert_eq!(text(&answer["result"]), "still here", "after {after}");
    }
}

/// `mcpbox --memory-limit MIB serve --http`.
fn serve_with_memory(config: &std::path::Path, mib: u32) -> ServerProcess {
    let mut command = Command::new(crate::cli());
    command
        .envs(mcpbox_tests::compiled_guest::process_env())
        .args(["--trust", "--memory-limit", &mib.to_string(), "--config"])
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", TOKEN);
    start_with(command, &|line| {
        Some(line.split("listening on ").nth(1)?.trim().to_owned())
    })
}

/// A response's status and the start of its body, for a failing test to show.
fn brief(r: &HttpResponse) -> String {
    let body: String = r.body.chars().take(300).collect();
    format!("{} {body}", r.status)
}

/// Whether the gateway said the guest failed.
fn trapped(gateway: &ServerProcess) -> bool {
    gateway
        .stderr()
        .iter()
        .any(|l| l.contains("the guest failed"))
}

/// The gateway's resident memory, in bytes.
fn rss(gateway: &ServerProcess) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", gateway.id()))
        .expect("the gateway's /proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

#[test]
fn a_batch_of_thousands_of_lists_is_refused_and_harms_no_other_session() {
    // 500 tools make each answer a list of 500.
    let config = config(
        false,
        json!({"mcpServers": {"fx": {"command": fixture(), "args": ["--tools", "500"]}}}),
    );
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    victim.still_answered("start-up");
    let batch = |n: usize| {
        Value::Array(
            (0..n)
                .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
                .collect(),
        )
    };
    // 4,000 lists in one POST (about 220 KB) on a session that negotiated a
    // revision without batches: refused whole, before anything is built.
    let attacker = Session::open(&gateway.url, "2025-06-18");
    let r = attacker.post(&batch(4000));
    assert_eq!(r.status, 400, "{}", brief(&r));
    let messages = r.messages();
    assert_eq!(messages.len(), 1, "{}", brief(&r));
    assert_eq!(messages[0]["error"]["code"], -32600);
    victim.still_answered("a batch on a 2025-06-18 session");
    // On a 2025-03-26 session, which has batches: refused past the cap ...
    let attacker = Session::open(&gateway.url, "2025-03-26");
    let r = attacker.post(&batch(4000));
    assert_eq!(r.status, 413, "{}", brief(&r));
    victim.still_answered("a batch over the cap");
    // ... and answered, streamed, within it.
    let r = attacker.post(&batch(64));
    assert_eq!(r.status, 200, "{}", brief(&r));
    let lists = r.messages();
    assert_eq!(lists.len(), 64);
    // A page is 500 tools.
    assert!(
        lists
            .iter()
            .all(|m| m["result"]["tools"].as_array().unwrap().len() == 500)
    );
    victim.still_answered("a batch of 64 lists");
    assert!(!trapped(&gateway), "{:?}", gateway.stderr());
}

#[test]
fn large_calls_in_flight_on_a_slow_tool_are_held_to_the_budget() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    victim.still_answered("start-up");
    // Thirty requests of nearly 4 MiB (the body cap) each, on a tool that takes
    // five seconds, all at once.
    let pad = "p".repeat(4 * 1024 * 1024 - 1024);
    let body = Arc::new(stateless_call(
        1,
        "fx__sleep",
        json!({"ms": 5000, "pad": pad}),
    ));
    let start = Arc::new(Barrier::new(31));
    let attackers: Vec<_> = (0..30)
        .map(|_| {
            let (url, body, start) = (gateway.url.clone(), body.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                http(&url, "POST", &POST, &body).status
            })
        })
        .collect();
    start.wait();
    // The victim is answered throughout.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        victim.still_answered("thirty large calls");
    }
    let statuses: Vec<u16> = attackers.into_iter().map(|a| a.join().unwrap()).collect();
    // Some were taken, the rest refused with 429: none trapped the guest.
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );
    victim.still_answered("the large calls ended");
    assert!(!trapped(&gateway), "{:?}", gateway.stderr());
}

/// `[0,0,0,…]` of `bytes` bytes.
fn zeros(bytes: usize) -> String {
    format!("[{}0]", "0,".repeat(bytes / 2 - 1))
}

#[test]
fn a_body_dense_in_values_under_the_size_cap_is_refused_and_harms_nobody() {
    let config = config(false, json!({}));
    // A guest of 64 MiB, which reading the body would surely outgrow.
    let gateway = serve_with_memory(&config.path, 64);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    victim.still_answered("start-up");
    // Nearly 4 MiB of zeros: two million values.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"fx__echo","arguments":{{"text":{}}}}}}}"#,
        zeros(4 * 1024 * 1024 - 256)
    );
    let attacker = Session::open(&gateway.url, "2025-11-25");
    let r = attacker.post_text(&body);
    assert_eq!(r.status, 413, "{}", brief(&r));
    let messages = r.messages();
    assert_eq!(messages[0]["error"]["code"], -32600, "{messages:?}");
    let message = messages[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("JSON values"), "{message}");
    victim.still_answered("a body dense in values");
    assert!(!trapped(&gateway), "{:?}", gateway.stderr());
}

#[test]
fn call_arguments_dense_in_values_fail_that_call_alone() {
    let config = config(false, json!({}));
    // 15 MiB of zeros, under the 16 MiB the arguments of a call may have.
    let arguments = format!(r#"{{"text":{}}}"#, zeros(15 * 1024 * 1024));
    let mut child = Command::new(crate::cli())
        .envs(mcpbox_tests::compiled_guest::process_env())
        .args(["--trust", "--config"])
        .arg(&config.path)
        .args(["call", "mcp__fx__echo", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpbox call");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(arguments.as_bytes());
    });
    let out = child.wait_with_output().expect("mcpbox call ends");
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Invalid arguments (2), saying why; not a guest that failed and restarted.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("JSON values"), "{stderr}");
    assert!(!stderr.contains("the guest failed"), "{stderr}");
}

#[test]
fn a_trap_one_client_causes_ends_no_other_clients_session() {
    let config = config(false, json!({}));
    // A guest of 8 MiB: an answer of 16 MiB (under the 64 MiB message cap)
    // outgrows it, and it traps. That is one client's doing.
    let gateway = serve_with_memory(&config.path, 8);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    victim.still_answered("start-up");
    let r = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(1, "fx__huge", json!({"bytes": 16 * 1024 * 1024})),
    );
    // The attacker's request is lost with the guest (its line on stderr may
    // come a moment after the answer).
    assert_eq!(r.status, 503, "{}", brief(&r));
    let until = Instant::now() + Duration::from_secs(10);
    while !trapped(&gateway) && Instant::now() < until {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(trapped(&gateway), "{:?}", gateway.stderr());
    // The victim's session carries on in the new guest, with the same id.
    victim.still_answered("another client's trap");
    victim.still_answered("another client's trap, twice");
}

#[test]
fn a_stdio_clients_session_carries_on_after_a_trap() {
    let config = config(false, json!({}));
    let mut argv = crate::gateway_argv(&config.path, &[]);
    argv.splice(1..1, ["--memory-limit".to_owned(), "8".to_owned()]);
    let argv = crate::with_process_env(argv);
    let mut peer = StdioPeer::spawn(&argv[0], &argv[1..]);
    peer.initialize("2025-11-25");
    let result = peer.call_tool("fx__echo", json!({"text": "before"}));
    assert_eq!(text(&result), "before");
    // Its own request traps the guest; that answer is lost with it.
    peer.send_request(
        "tools/call",
        json!({"name": "fx__huge", "arguments": {"bytes": 16 * 1024 * 1024}}),
    );
    assert!(peer.stderr_until("the guest failed"));
    // The session is the same one: no initialize again.
    let result = peer.call_tool("fx__echo", json!({"text": "after"}));
    assert_eq!(text(&result), "after");
    peer.close_stdin();
    assert!(peer.wait_exit().success());
}

#[test]
fn sessions_past_the_cap_end_the_least_recently_used_first() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &["--max-sessions", "50"]);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    let first = Session::open(&gateway.url, "2025-11-25");
    // Two hundred sessions opened and left; the victim keeps using its own.
    for round in 0..10 {
        for _ in 0..20 {
            let _ = Session::open(&gateway.url, "2025-11-25");
        }
        victim.still_answered(&format!("round {round} of new sessions"));
    }
    // The first one left went first.
    let r = first.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_eq!(r.status, 404, "{r:?}");
    victim.still_answered("two hundred sessions");
}

#[test]
fn replay_buffers_of_every_session_are_held_to_one_budget() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let mut victim = Session::open(&gateway.url, "2025-11-25");
    // Forty sessions that never read a stream: every log line a server writes
    // is kept for each of them, for resumption.
    let idle: Vec<Session> = (0..40)
        .map(|_| Session::open(&gateway.url, "2025-11-25"))
        .collect();
    victim.still_answered("start-up");
    let before = rss(&gateway);
    // One client has the server log twenty lines of 1 MiB.
    let mut attacker = Session::open(&gateway.url, "2025-11-25");
    let line = "l".repeat(1024 * 1024);
    for _ in 0..20 {
        attacker.next += 1;
        let r = attacker.post(&json!({"jsonrpc": "2.0", "id": attacker.next,
            "method": "tools/call", "params": {"name": "fx__log", "arguments": {"text": line}}}));
        assert_eq!(r.status, 200);
    }
    victim.still_answered("twenty lines of 1 MiB");
    // Kept for each of forty sessions, that would be 800 MB (16 MiB each before
    // a session's own cap); the budgets hold it to a small part.
    let grown = rss(&gateway).saturating_sub(before);
    assert!(
        grown < 200 * 1024 * 1024,
        "the gateway grew by {} MiB",
        grown >> 20
    );
    drop(idle);
}

/// Raises this process's soft descriptor limit (the test holds over a thousand
/// connections) to its hard one.
fn raise_own_descriptor_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum.or(Some(1 << 20)),
            maximum: limit.maximum,
        },
    );
}

/// `mcpbox serve --http` with the descriptor limits `soft` and `hard`.
fn serve_with_descriptors(config: &std::path::Path, soft: u64, hard: u64) -> ServerProcess {
    let mut command = Command::new(crate::cli());
    command
        .envs(mcpbox_tests::compiled_guest::process_env())
        .args(["--trust", "--config"])
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", TOKEN);
    // SAFETY: `setrlimit` is async-signal-safe; nothing else runs between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            rustix::process::setrlimit(
                rustix::process::Resource::Nofile,
                rustix::process::Rlimit {
                    current: Some(soft),
                    maximum: Some(hard),
                },
            )
            .map_err(std::io::Error::from)
        });
    }
    start_with(command, &|line| {
        Some(line.split("listening on ").nth(1)?.trim().to_owned())
    })
}

fn address(gateway: &ServerProcess) -> SocketAddr {
    gateway
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("a socket address")
}

/// Opens `n` connections that send nothing; those that connect within a second.
fn idle_connections(gateway: &ServerProcess, n: usize) -> Vec<TcpStream> {
    let address = address(gateway);
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok())
        .collect()
}

/// How long a new client's call takes to be answered.
fn new_client_call(gateway: &ServerProcess) -> Duration {
    let started = Instant::now();
    let r = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(5, "fx__echo", json!({"text": "new"})),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(text(&r.messages()[0]["result"]), "new");
    started.elapsed()
}

#[test]
fn idle_connections_past_the_descriptor_limit_keep_no_new_client_waiting() {
    raise_own_descriptor_limit();
    let config = config(false, json!({}));
    // A hard limit of 1,024 descriptors, which the gateway cannot raise: 1,100
    // idle connections would use every one of them.
    let gateway = serve_with_descriptors(&config.path, 1024, 1024);
    assert!(new_client_call(&gateway) < Duration::from_secs(5));
    for round in 0..2 {
        let idle = idle_connections(&gateway, 1100);
        assert!(idle.len() > 1000, "{} connected", idle.len());
        let took = new_client_call(&gateway);
        assert!(
            took < Duration::from_secs(5),
            "round {round}: a new client waited {took:?}"
        );
        // The oldest idle ones were closed to make room.
        let mut closed = 0;
        for mut c in idle.into_iter().take(100) {
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut buf = [0u8; 1];
            if matches!(c.read(&mut buf), Ok(0) | Err(_)) {
                closed += 1;
            }
        }
        assert!(closed > 0, "round {round}: no idle connection was closed");
    }
}

#[test]
fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let config = config(false, json!({}));
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .unwrap_or(1 << 20)
        .min(8192);
    if hard <= 1024 {
        // Nothing to raise here.
        return;
    }
    let gateway = serve_with_descriptors(&config.path, 1024, hard);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", gateway.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a descriptor limit");
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers, [hard, hard], "{line}");
    raise_own_descriptor_limit();
    let idle = idle_connections(&gateway, 1100);
    assert!(new_client_call(&gateway) < Duration::from_secs(5));
    drop(idle);
}
