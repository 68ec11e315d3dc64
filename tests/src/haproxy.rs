//! HAProxy (Debian's `haproxy`, installed by `scripts/install-peers`) as the load
//! balancer of the scale-out tests, run from the configurations shipped in
//! `docs/deploy/` so that what a user copies is what the tests run.
//!
//! - [`haproxy_cli`] finds the program (`MCPBOX_HAPROXY`, `PATH`, `/usr/sbin`).
//! - [`Haproxy::start`] runs a shipped configuration with three changes only: its
//!   `bind` moves to a free loopback port, its `stats socket` into a directory of
//!   the test's own, and its `server` lines point at the test's instances (the
//!   first N kept). It logs to its stdout (`log stdout`), which the guard keeps.
//! - [`Haproxy::servers`] reads each server's state and counters from the stats
//!   socket (`show stat`): whether its health checks pass, how many requests it
//!   holds now, how many it was sent and answered. [`Haproxy::command`] sends any
//!   other command (`show table BACKEND` lists the sessions a stick table holds).
//!
//! The process is killed when the guard is dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::http::{START_DEADLINE, free_port};

/// How long the tests wait for HAProxy to see a change (a server that passes or
/// fails its health checks): the shipped checks run every 2 s and need two in a
/// row, so this leaves room for a loaded machine.
pub const CHECK_DEADLINE: Duration = Duration::from_secs(30);

/// Lines of its log a guard keeps (the last ones).
const LOG_LINES: usize = 5000;

/// The `haproxy` program: `$MCPBOX_HAPROXY`, else `haproxy` on `PATH`, else
/// Debian's `/usr/sbin/haproxy`; `Err` says how to install it.
pub fn haproxy_cli() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("MCPBOX_HAPROXY") {
        return Ok(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|p| p.is_file());
    on_path.ok_or_else(|| {
        "haproxy is not installed: run scripts/install-peers (Debian: apt-get install haproxy), \
         or set MCPBOX_HAPROXY to its executable"
            .to_owned()
    })
}

/// A configuration shipped in `docs/deploy/`.
pub fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/deploy")
        .join(name)
}

/// `haproxy -c -f CONFIG`: its exit status was success, and what it printed.
pub fn check_config(config: &Path) -> (bool, String) {
    let haproxy = haproxy_cli().unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(&haproxy)
        .arg("-c")
        .arg("-f")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", haproxy.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The shipped configuration `text` with its `bind` on `127.0.0.1:PORT`, its
/// `stats socket` at `socket`, and its `server` lines at `servers` (the first
/// `servers.len()` lines kept, the rest dropped).
///
/// # Panics
///
/// When the text has not exactly one `bind`, no `stats socket`, or fewer
/// `server` lines than `servers`: the shipped file changed shape.
pub fn adapt(text: &str, port: u16, socket: &Path, servers: &[SocketAddr]) -> String {
    let (mut binds, mut sockets, mut next) = (0, 0, 0);
    let mut out = String::new();
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["bind", ..] => {
                binds += 1;
                out.push_str(&format!("{indent}bind 127.0.0.1:{port}\n"));
            }
            ["stats", "socket", _, rest @ ..] => {
                sockets += 1;
                let rest = rest.join(" ");
                out.push_str(&format!(
                    "{indent}stats socket {} {rest}\n",
                    socket.display()
                ));
            }
            ["server", name, _, rest @ ..] => {
                if let Some(addr) = servers.get(next) {
                    let rest = rest.join(" ");
                    out.push_str(&format!("{indent}server {name} {addr} {rest}\n"));
                }
                next += 1;
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert_eq!(
        binds, 1,
        "the configuration should have one `bind`:\n{text}"
    );
    assert_eq!(sockets, 1, "the configuration should have a `stats socket`");
    assert!(
        next >= servers.len(),
        "the configuration has {next} `server` lines, the test {} servers",
        servers.len()
    );
    out
}

/// One server as `show stat` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStat {
    /// Its name in the configuration (`mcpbox1`, …).
    pub name: String,
    /// `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `no check`.
    pub status: String,
    /// The last health check's outcome: `L7OK` (passed), `L4CON` (refused), …
    pub check_status: String,
    /// Requests it holds now (`scur`).
    pub current: u64,
    /// Times the balancer chose it (`lbtot`), including requests that then could
    /// not connect and went elsewhere.
    pub chosen: u64,
    /// Responses it gave, by class (`hrsp_1xx` … `hrsp_5xx`).
    pub responses: [u64; 5],
    /// Connection errors (`econ`): attempts it refused.
    pub connect_errors: u64,
    /// Requests sent to another server after it refused them (`wredis`).
    pub redispatched: u64,
}

impl ServerStat {
    /// Every response it gave.
    pub fn answered(&self) -> u64 {
        self.responses.iter().sum()
    }

    /// Whether its health checks pass (`UP`, not going down).
    pub fn up(&self) -> bool {
        self.status == "UP"
    }
}

/// A `haproxy` process; killed when dropped.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    log: Arc<Mutex<VecDeque<String>>>,
    /// The MCP endpoint through it: `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its backend's name in the configuration (the one `server` lines are in).
    pub backend: String,
    socket: PathBuf,
    dir: PathBuf,
}

impl Haproxy {
    /// Runs the shipped configuration `config` (see [`adapt`]) in front of
    /// `servers`, and waits until its stats socket answers.
    ///
    /// # Panics
    ///
    /// When HAProxy is missing, refuses the configuration, or does not start
    /// within [`START_DEADLINE`] (three free ports tried).
    pub fn start(config: &Path, servers: &[SocketAddr]) -> Haproxy {
        let haproxy = haproxy_cli().unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(config)
            .unwrap_or_else(|e| panic!("read {}: {e}", config.display()));
        let backend = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("backend "))
            .unwrap_or_else(|| panic!("{}: no backend section", config.display()))
            .trim()
            .to_owned();
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcpbox-haproxy-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a directory for haproxy");
        let socket = dir.join("stats.sock");
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let path = dir.join("haproxy.cfg");
            std::fs::write(&path, adapt(&text, port, &socket, servers)).expect("write haproxy.cfg");
            // -db: in the foreground, its log on stdout.
            let mut child = Command::new(&haproxy)
                .arg("-db")
                .arg("-f")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", haproxy.display()));
            // A line per request: a queue, so that keeping the last ones costs
            // nothing per line (a benchmark runs through this too).
            let log = Arc::new(Mutex::new(VecDeque::new()));
            for stream in [
                Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
                Box::new(child.stderr.take().expect("piped")),
            ] {
                let log = log.clone();
                thread::spawn(move || {
                    for line in BufReader::new(stream).lines().map_while(Result::ok) {
                        let mut lines = log.lock().unwrap_or_else(|p| p.into_inner());
                        if lines.len() == LOG_LINES {
                            lines.pop_front();
                        }
                        lines.push_back(line);
                    }
                });
            }
            let mut proxy = Haproxy {
                child,
                log,
                url: format!("http://127.0.0.1:{port}/mcp"),
                backend: backend.clone(),
                socket: socket.clone(),
                dir: dir.clone(),
            };
            let until = Instant::now() + START_DEADLINE;
            loop {
                if let Ok(Some(status)) = proxy.child.try_wait() {
                    last = format!("haproxy exited ({status}):\n{}", proxy.log().join("\n"));
                    break;
                }
                if proxy.try_command("show info").is_ok() {
                    return proxy;
                }
                assert!(
                    Instant::now() < until,
                    "haproxy did not start within {START_DEADLINE:?}:\n{}",
                    proxy.log().join("\n")
                );
                thread::sleep(Duration::from_millis(50));
            }
            // The port was taken between free_port and haproxy's bind: try another.
            let _ = std::fs::remove_file(&socket);
            proxy.dir = PathBuf::new();
        }
        panic!("haproxy did not start in three tries:\n{last}");
    }

    /// A command on the stats socket, and its answer.
    fn try_command(&self, command: &str) -> std::io::Result<String> {
        let mut stream = UnixStream::connect(&self.socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(format!("{command}\n").as_bytes())?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    /// A command on the stats socket (`show table BACKEND`, …), and its answer.
    ///
    /// # Panics
    ///
    /// When the socket does not answer.
    pub fn command(&self, command: &str) -> String {
        self.try_command(command)
            .unwrap_or_else(|e| panic!("haproxy's stats socket: {command}: {e}"))
    }

    /// The backend's servers, in the configuration's order.
    pub fn servers(&self) -> Vec<ServerStat> {
        let csv = self.command("show stat");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .unwrap_or_else(|| panic!("show stat has no column {name}: {header:?}"))
        };
        let (px, sv, status, check) = (
            column("pxname"),
            column("svname"),
            column("status"),
            column("check_status"),
        );
        let (scur, lbtot) = (column("scur"), column("lbtot"));
        let (econ, wredis) = (column("econ"), column("wredis"));
        let classes = ["hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx"].map(column);
        lines
            .map(|l| l.split(',').collect::<Vec<&str>>())
            .filter(|f| {
                f.len() > px && f[px] == self.backend && !["BACKEND", "FRONTEND"].contains(&f[sv])
            })
            .map(|f| {
                let n = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
                ServerStat {
                    name: f[sv].to_owned(),
                    status: f[status].to_owned(),
                    check_status: f[check].to_owned(),
                    current: n(scur),
                    chosen: n(lbtot),
                    responses: classes.map(n),
                    connect_errors: n(econ),
                    redispatched: n(wredis),
                }
            })
            .collect()
    }

    /// Waits until `done` holds for the servers (checked every 100 ms); them.
    ///
    /// # Panics
    ///
    /// After [`CHECK_DEADLINE`], saying `what` and showing the servers and the log.
    pub fn wait_for(&self, what: &str, done: impl Fn(&[ServerStat]) -> bool) -> Vec<ServerStat> {
        let until = Instant::now() + CHECK_DEADLINE;
        loop {
            let servers = self.servers();
            if done(&servers) {
                return servers;
            }
            assert!(
                Instant::now() < until,
                "HAProxy: {what}: not within {CHECK_DEADLINE:?}; servers: {servers:#?}\nlog:\n{}",
                self.log().join("\n")
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// The sessions a stick table holds: (key, server name).
    pub fn stuck(&self) -> Vec<(String, String)> {
        // 0x…: key=ID use=0 exp=… shard=0 server_id=1 server_key=mcpbox1
        let table = self.command(&format!("show table {}", self.backend));
        table
            .lines()
            .filter_map(|l| {
                let field = |name: &str| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix(name))
                        .map(str::to_owned)
                };
                Some((field("key=")?, field("server_key=")?))
            })
            .collect()
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its log so far (stdout and stderr lines, the last 5,000).
    pub fn log(&self) -> Vec<String> {
        let lines = self.log.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().cloned().collect()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
