//! The `mcpbox` command line, run as a user runs it, against the bundled
//! Python demo server (`examples/demo-server.py`, stdlib only) and, for the
//! 2026-07-28 era, the TypeScript SDK v2 peer `tests/peers/ts_server.mjs`
//! (installed by `scripts/install-peers`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcpbox_tests::compiled_guest::process_env;
use mcpbox_tests::process::{ChildGuard, eventually};
use serde_json::{Value, json};

mod adapters;
mod pins;

/// How long a `servers --watch` or `serve` the test reads from may run before it
/// is killed, so that a line that never comes ends the read (at end of file)
/// instead of hanging the test.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(60);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn demo_entry() -> Value {
    json!({ "command": "python3", "args": [repo().join("examples/demo-server.py")] })
}

/// Writes `servers` as a config file in a fresh directory and returns its path.
fn config(tag: &str, servers: Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// The `mcpbox` binary, trusting every configuration (`MCPBOX_TRUST_ALL=1`): the
/// tests write their configurations themselves. The trust check has tests of its own.
/// It keeps its pins and cache in this test process's directories, never the user's.
fn mcpbox_command() -> Command {
    let mut command = Command::new(mcpbox_tests::mcpbox_program());
    command.env("MCPBOX_TRUST_ALL", "1").envs(process_env());
    command
}

fn mcpbox(config: &Path, args: &[&str]) -> Output {
    mcpbox_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mcpbox runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// On x86-64 Linux with glibc 2.36 or later, `cli/build.rs` links `mcpbox` with
/// its relative relocations packed (`.relr.dyn`): the loader then reads a few KB
/// at each start instead of about 1 MB of `RELA` entries. (Every other test runs
/// the binary, so it starts.)
#[test]
fn the_binary_packs_its_relative_relocations_where_glibc_reads_them() {
    use object::{Object as _, ObjectSection as _};
    let glibc = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    let recent = glibc
        .strip_prefix("glibc 2.")
        .and_then(|minor| minor.split('.').next()?.parse::<u32>().ok())
        .is_some_and(|minor| minor >= 36);
    if !(cfg!(all(target_arch = "x86_64", target_env = "gnu")) && recent) {
        println!("not x86-64 with glibc 2.36 or later ({glibc:?}): relocations stay RELA");
        return;
    }
    let bytes = std::fs::read(mcpbox_tests::mcpbox_program()).unwrap();
    let binary = object::File::parse(&*bytes).unwrap();
    let size = |name: &str| binary.section_by_name(name).map(|s| s.size());
    let (relr, rela) = (size(".relr.dyn"), size(".rela.dyn").unwrap_or(0));
    assert!(relr.is_some(), "no .relr.dyn in mcpbox ({glibc})");
    assert!(rela < 64 * 1024, ".rela.dyn still holds {rela} bytes");
}

#[test]
fn the_readme_command_works_from_the_repository_root() {
    // As on a fresh machine: nothing trusted yet, no MCPBOX_TRUST_ALL.
    let fresh = std::env::temp_dir().join(format!("mcpbox-cli-fresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let out = Command::new(mcpbox_tests::mcpbox_program())
        .env_remove("MCPBOX_TRUST_ALL")
        .env("MCPBOX_CONFIG_DIR", fresh.join("config"))
        .env("MCPBOX_CACHE_DIR", fresh.join("cache"))
        .current_dir(repo())
        .args(["call", "mcp__demo__echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    let _ = std::fs::remove_dir_all(&fresh);
}

#[test]
fn servers_tools_and_calls() {
    let cfg = config("basic", json!({ "demo": demo_entry() }));

    let out = mcpbox(&cfg, &["servers"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("● demo"), "{text}");
    assert!(text.contains("mcpbox-demo"), "{text}");

    let out = mcpbox(&cfg, &["tools"]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("mcp__demo__echo ")),
        "{}",
        stdout(&out)
    );

    let out = mcpbox(&cfg, &["--json", "tools", "--server", "demo"]);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__demo__echo")
        .unwrap();
    assert_eq!(echo["server"], "demo");
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["inputSchema"]["type"], "object");

    let out = mcpbox(
        &cfg,
        &["--json", "call", "mcp__demo__add", r#"{"a": 2, "b": 3}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["isError"], false);
    assert_eq!(result["text"], "5");
    assert!(result["content"].is_array());
}

#[test]
fn exit_codes() {
    let cfg = config(
        "codes",
        json!({ "demo": demo_entry(), "gone": { "command": "/nonexistent/server" } }),
    );
    // 1: the tool reported an error.
    let out = mcpbox(&cfg, &["call", "mcp__demo__divide", r#"{"a": 1, "b": 0}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("zero"), "{}", stderr(&out));
    // 2: unknown tool, invalid arguments, bad usage.
    assert_eq!(
        mcpbox(&cfg, &["call", "mcp__demo__nope"]).status.code(),
        Some(2)
    );
    let out = mcpbox(&cfg, &["call", "mcp__demo__echo", r#"{"text": 1}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("text"), "{}", stderr(&out));
    assert_eq!(
        mcpbox(&cfg, &["call", "mcp__demo__echo", "{oops"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        mcpbox(&cfg, &["tools", "--server", "nope"]).status.code(),
        Some(2)
    );
    // 3: the server is unavailable.
    let out = mcpbox(&cfg, &["call", "mcp__gone__anything"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent/server"),
        "{}",
        stderr(&out)
    );
    // The failed server shows in `servers` with its error.
    let text = stdout(&mcpbox(&cfg, &["servers"]));
    assert!(text.lines().any(|l| l.starts_with("✗ gone")), "{text}");
}

#[test]
fn arguments_from_stdin() {
    let cfg = config("stdin", json!({ "demo": demo_entry() }));
    let mut child = mcpbox_command()
        .arg("--config")
        .arg(&cfg)
        .args(["call", "mcp__demo__reverse", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text": "abc"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "cba\n");
}

#[test]
fn configuration_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.json");
    std::fs::write(&path, "{ \"mcpServers\": { \"a\": ").unwrap();
    let out = mcpbox(&path, &["servers"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broken.json"), "{}", stderr(&out));

    // One bad entry is reported and skipped; the rest load.
    let cfg = config(
        "partial",
        json!({ "demo": demo_entry(), "bad": { "args": ["x"] } }),
    );
    let out = mcpbox(&cfg, &["servers"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("bad"), "{}", stderr(&out));
    assert!(stdout(&out).contains("● demo"), "{}", stdout(&out));

    // A missing file is an empty configuration.
    let out = mcpbox(&dir.join("absent.json"), &["tools"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
}

/// A configuration past the caps (100,000 entries; a 300 MB file) is refused with
/// the cap in the message, rather than taking the guest past its deadline (a trap
/// and a backtrace) or copying the file into the guest until it runs out of memory.
#[test]
fn an_oversized_configuration_is_refused_with_its_limit() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let entries: Vec<String> = (0..100_000)
        .map(|i| format!(r#""s{i}": {{"command": "srv", "disabled": true}}"#))
        .collect();
    let many = dir.join("many.json");
    std::fs::write(
        &many,
        format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(", ")),
    )
    .unwrap();
    let out = mcpbox(&many, &["servers"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {} configures 100000 servers under `mcpServers`; at most 10000 are supported \
             (split the configuration, or remove entries that are not used)\n",
            many.display()
        )
    );

    // Past the size cap by one byte: the host stops reading there.
    let big = dir.join("big.json");
    let mut text = r#"{"mcpServers": {}}"#.to_owned();
    text.push_str(&" ".repeat(mcpbox::MAX_CONFIG_BYTES + 1 - text.len()));
    std::fs::write(&big, text).unwrap();
    let out = mcpbox(&big, &["tools"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {} is larger than 16 MiB, the most a configuration may be; is this the right file?\n",
            big.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn servers_watch_follows_the_configuration_file() {
    use std::io::{BufRead, BufReader};
    let cfg = config("watch-reload", json!({ "demo": demo_entry() }));
    let mut child = ChildGuard::spawn(
        mcpbox_command()
            .arg("--config")
            .arg(&cfg)
            .args(["servers", "--watch"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .kill_after(WATCHDOG);
    // Ends it even if the expected lines never come (see the test above).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut wait_for = |what: &str| {
        for line in lines.by_ref() {
            let line = line.unwrap();
            seen.push(line.clone());
            if line.contains(what) {
                return;
            }
        }
        panic!("no line with {what:?} in {seen:#?}");
    };
    wait_for("● demo");
    // A save with a syntax error: said, and nothing stops.
    std::fs::write(&cfg, "{\n  \"mcpServers\": {\n").unwrap();
    wait_for("reload failed, the running configuration stays:");
    // A save that renames the server: the change is applied and printed.
    std::fs::write(
        &cfg,
        json!({ "mcpServers": { "renamed": demo_entry() } }).to_string(),
    )
    .unwrap();
    wait_for("reloaded");
    wait_for("● renamed");
    let _ = child.kill();
    let _ = child.wait();
    let text = seen.join("\n");
    assert!(
        text.contains("mcp.json:3:"),
        "the error has its line: {text}"
    );
    assert!(
        text.contains("added renamed; removed demo"),
        "the reload says what changed: {text}"
    );
    assert!(
        text.contains("– demo") && text.contains("removed from the configuration by a reload"),
        "{text}"
    );
}

#[test]
fn servers_watch_prints_changes_as_they_happen() {
    use std::io::{BufRead, BufReader};
    let cfg = config("watch", json!({ "demo": demo_entry() }));
    let mut child = ChildGuard::spawn(
        mcpbox_command()
            .arg("--config")
            .arg(&cfg)
            .args(["--json", "servers", "--watch"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .kill_after(WATCHDOG);
    // Ends it even if the expected lines never come. (Not `timeout 60 mcpbox`:
    // killing `timeout` would leave mcpbox running.)
    // The first listing, then status events until the demo server is connected.
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut states = Vec::new();
    for line in lines {
        let line = line.unwrap();
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["event"] == "status" {
            states.push(event["server"]["state"].as_str().unwrap().to_owned());
            if event["server"]["state"] == "connected" {
                assert_eq!(event["server"]["toolCount"], 4);
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        states.first().map(String::as_str),
        Some("starting"),
        "{states:?}"
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("connected"),
        "{states:?}"
    );
}

/// `tests/peers/ts_server.mjs` (TypeScript SDK v2) over stdio; needs
/// `scripts/install-peers`.
fn ts_peer_entry() -> Value {
    let peers = repo().join("tests/peers");
    assert!(
        peers
            .join("node_modules/@modelcontextprotocol/server/package.json")
            .exists(),
        "the TypeScript SDK peer is missing: run scripts/install-peers first"
    );
    json!({ "command": "node", "args": [peers.join("ts_server.mjs")] })
}

/// The same peer serving Streamable HTTP on a port the OS picks; killed on drop.
struct TsHttp {
    child: std::process::Child,
    url: String,
}

impl TsHttp {
    fn start() -> TsHttp {
        use std::io::{BufRead, BufReader};
        let entry = ts_peer_entry();
        let mut child = Command::new("node")
            .arg(entry["args"][0].as_str().unwrap())
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        // The first line is the banner; a server that fails to start ends stderr.
        let line = lines.next().and_then(Result::ok).unwrap_or_default();
        let url = line
            .split("ts-peer listening on ")
            .nth(1)
            .unwrap_or_else(|| panic!("ts_server.mjs --http 0 did not start: {line}"))
            .trim()
            .to_owned();
        std::thread::spawn(move || lines.for_each(drop));
        TsHttp { child, url }
    }
}

impl Drop for TsHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_2026_07_28_server_on_the_typescript_sdk() {
    let http = TsHttp::start();
    let cfg = config(
        "ts",
        json!({ "ts": ts_peer_entry(), "tshttp": { "type": "http", "url": http.url } }),
    );
    let out = mcpbox(&cfg, &["servers"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in ["ts", "tshttp"] {
        let line = stdout(&out)
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no {name} in {}", stdout(&out)));
        assert!(line.starts_with('●'), "{line}");
        assert!(line.contains("2026-07-28"), "{line}");
        assert!(line.contains("ts-peer"), "{line}");
    }

    let out = mcpbox(&cfg, &["tools"]);
    let text = stdout(&out);
    for tool in ["greet", "add", "fail", "unlock"] {
        for server in ["ts", "tshttp"] {
            let name = format!("mcp__{server}__{tool} ");
            assert!(text.lines().any(|l| l.starts_with(&name)), "{name}: {text}");
        }
    }
    for server in ["ts", "tshttp"] {
        let tool = format!("mcp__{server}__add");
        let out = mcpbox(&cfg, &["--json", "call", &tool, r#"{"a": 2, "b": 40}"#]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["text"], "42");
        assert_eq!(result["structuredContent"], json!({"sum": 42}));
        let tool = format!("mcp__{server}__fail");
        let out = mcpbox(&cfg, &["call", &tool, r#"{"message": "refused"}"#]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    }
}

#[test]
fn no_network_and_no_processes() {
    // A listener nobody answers on: whether mcpbox tried to connect shows in its
    // backlog, with nothing to race.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let cfg = config(
        "policy",
        json!({ "demo": demo_entry(), "remote": { "type": "http", "url": url } }),
    );

    let out = mcpbox(&cfg, &["--no-network", "servers"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("● demo"), "{text}");
    assert!(text.contains("✗ remote"), "{text}");
    assert!(
        text.contains(&format!(
            "the policy does not allow network connections, so {url} was not contacted"
        )) && text.contains("--no-network"),
        "{text}"
    );
    let out = mcpbox(&cfg, &["--no-network", "call", "mcp__remote__anything"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&url), "{}", stderr(&out));
    let out = mcpbox(
        &cfg,
        &[
            "--no-network",
            "call",
            "mcp__demo__echo",
            r#"{"text":"local"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "local\n");
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing connected to {url}"
    );

    // (The remote entry would wait out its startup timeout on that silent listener.)
    let cfg = config("policy-processes", json!({ "demo": demo_entry() }));
    let out = mcpbox(&cfg, &["--no-processes", "servers"]);
    let text = stdout(&out);
    assert!(text.contains("✗ demo"), "{text}");
    assert!(
        text.contains("the policy does not allow starting processes")
            && text.contains("--no-processes"),
        "{text}"
    );
    let out = mcpbox(
        &cfg,
        &[
            "--no-processes",
            "call",
            "mcp__demo__echo",
            r#"{"text":"x"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

/// Writes a whole configuration (servers and rules) in a fresh directory.
fn config_text(tag: &str, config: Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn permission_rules() {
    let cfg = config_text(
        "rules",
        json!({
            "mcpServers": { "demo": demo_entry() },
            "permissions": { "deny": ["mcp__demo__divide", "mcp__demo__nope"], "allow": ["mcp__*"] },
        }),
    );
    // Denied tools are not listed; the configuration problems are warnings naming the field.
    let out = mcpbox(&cfg, &["tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("mcp__demo__divide"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("mcp__demo__add"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("permissions.allow[0]")
            && stderr(&out).contains("not a valid pattern"),
        "{}",
        stderr(&out)
    );
    // A denied call exits 2, naming the rule.
    let out = mcpbox(&cfg, &["call", "mcp__demo__divide", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`mcp__demo__divide` (permissions.deny[0] in"),
        "{}",
        stderr(&out)
    );
    let out = mcpbox(&cfg, &["call", "mcp__demo__add", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A configuration where `add` needs approval.
fn asking_config(tag: &str) -> PathBuf {
    config_text(
        tag,
        json!({
            "mcpServers": { "demo": demo_entry() },
            "permissions": { "ask": ["mcp__demo__add"] },
        }),
    )
}

#[test]
fn ask_rules_need_yes_or_a_terminal() {
    let cfg = asking_config("ask");
    let add = ["call", "mcp__demo__add", r#"{"a": 1, "b": 2}"#];
    // No terminal and no --yes: refused, exit 2, saying how to approve.
    let out = mcpbox(&cfg, &add);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("mcp__demo__add was not approved"), "{err}");
    assert!(err.contains("permissions.ask[0]"), "{err}");
    assert!(
        err.contains("stdin is not a terminal") && err.contains("--yes"),
        "{err}"
    );
    // --yes approves.
    let out = mcpbox(
        &cfg,
        &["call", "--yes", "mcp__demo__add", r#"{"a": 1, "b": 2}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "3");
    // Tools without a rule are not asked about.
    let out = mcpbox(&cfg, &["call", "mcp__demo__echo", r#"{"text": "hi"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Runs `mcpbox --config cfg args…` on a pseudo-terminal (util-linux `script`),
/// typing `typed` into it; returns the exit code and everything the terminal showed.
fn on_a_terminal(cfg: &Path, args: &str, typed: &str) -> (Option<i32>, String) {
    use std::io::Write;
    let line = format!(
        "{} --config {} {args}",
        mcpbox_tests::mcpbox_program(),
        cfg.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        // The configuration is the test's own (see `mcpbox_command`).
        .env("MCPBOX_TRUST_ALL", "1")
        .envs(process_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn a_terminal_is_asked() {
    let cfg = asking_config("tty");
    let add = r#"call mcp__demo__add '{"a": 2, "b": 5}'"#;
    let (code, shown) = on_a_terminal(&cfg, add, "y\n");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("Allow mcp__demo__add"), "{shown}");
    assert!(shown.contains(r#"arguments: {"a":2,"b":5}"#), "{shown}");
    assert!(shown.contains("Approve? [y/N]"), "{shown}");
    // The answer is printed after the question (the typed `y` was echoed earlier).
    assert!(shown.trim_end().ends_with("[y/N] 7"), "{shown}");
    let (code, shown) = on_a_terminal(&cfg, add, "n\n");
    assert_eq!(code, Some(2), "{shown}");
    assert!(shown.contains("was not approved"), "{shown}");
    assert!(
        !shown.contains("--yes"),
        "a refusal at the prompt is the user's: {shown}"
    );
}

#[test]
fn sandboxed_servers() {
    let script = repo().join("examples/demo-server.py");
    let cfg = config(
        "sandbox",
        json!({
            // python3 may be a version manager's shim: its installation is granted too.
            "demo": { "command": "python3", "args": [script], "sandbox": { "read": [script] } },
            "blind": { "command": "python3", "args": [script], "sandbox": {} },
        }),
    );
    let out = mcpbox(
        &cfg,
        &["call", "mcp__demo__echo", r#"{"text": "confined"}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "confined");
    // Without its script the server cannot start, and the error says why.
    let out = mcpbox(&cfg, &["call", "mcp__blind__echo", r#"{"text": "x"}"#]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("it runs in a sandbox: Landlock ABI"), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
}

#[test]
fn the_audit_flag_appends_a_line_per_call() {
    let cfg = config_text(
        "audit",
        json!({
            "mcpServers": { "demo": demo_entry() },
            "permissions": { "deny": ["mcp__demo__divide"] },
        }),
    );
    let file = cfg.parent().unwrap().join("audit.jsonl");
    let _ = std::fs::remove_file(&file);
    let audit = file.to_str().unwrap();
    let out = mcpbox(
        &cfg,
        &[
            "--audit",
            audit,
            "call",
            "mcp__demo__add",
            r#"{"a": 1, "b": 2}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = mcpbox(
        &cfg,
        &[
            "--audit",
            audit,
            "call",
            "mcp__demo__divide",
            r#"{"a": 1, "b": 2}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["tool"], "mcp__demo__add");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["decision"], "deny");
    assert_eq!(lines[1]["outcome"], "denied");
    assert!(lines[0].get("arguments").is_none());
}

#[test]
fn claude_code_settings_next_to_the_configuration_apply_when_asked() {
    let cfg = config_text("claude", json!({ "mcpServers": { "demo": demo_entry() } }));
    let claude = cfg.parent().unwrap().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({ "permissions": {
            "allow": ["Bash(cargo test:*)"],
            "deny": ["Read(./.env)", "mcp__demo__divide"],
            "defaultMode": "acceptEdits",
        } })
        .to_string(),
    )
    .unwrap();
    let args = ["call", "mcp__demo__divide", r#"{"a": 6, "b": 3}"#];
    // Off unless asked for.
    let out = mcpbox(&cfg, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = mcpbox(&cfg, &[&["--claude-settings"][..], &args[..]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "mcp__demo__divide is denied by the permission rule `mcp__demo__divide` (permissions.deny[1] in {})",
            claude.join("settings.json").display()
        )),
        "{err}"
    );
    // Claude Code's own rules are not mistakes.
    assert!(!err.contains("warning"), "{err}");
    std::fs::remove_dir_all(&claude).unwrap();
    let out = mcpbox(&cfg, &["--claude-settings", "tools"]);
    assert!(
        stderr(&out)
            .contains("no Claude Code settings were read: there is no .claude/settings.json"),
        "{}",
        stderr(&out)
    );
}

/// A `${VAR}` in a URL is resolved by the host for the
/// request, and every output shows the URL as configured, never the value: the
/// status (`servers`, `--json servers`, the `--watch` stream of events), the
/// tool list, a call's result and a call's error on stderr, for a server that
/// works (the TypeScript SDK peer over HTTP) and one that cannot be reached.
#[test]
fn a_secret_in_the_url_never_shows() {
    use std::io::{BufRead, BufReader};
    const SECRET: &str = "s3cret-4f9a0c";
    let http = TsHttp::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    // Nothing listens there any more: the server fails, and says why.
    let gone = format!("http://127.0.0.1:{port}/mcp?api_key=${{MCPBOX_TEST_API_KEY}}");
    let works = format!("{}?api_key=${{MCPBOX_TEST_API_KEY}}", http.url);
    let cfg = config(
        "secret-url",
        json!({
            "remote": { "type": "http", "url": gone },
            "works": { "type": "http", "url": works,
                       "headers": { "Authorization": "Bearer ${MCPBOX_TEST_API_KEY}" } },
        }),
    );
    let command = |args: &[&str]| {
        let mut command = mcpbox_command();
        command
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .env("MCPBOX_TEST_API_KEY", SECRET)
            .stdin(Stdio::null());
        command
    };
    let mut outputs = Vec::new();
    for (args, names) in [
        (&["servers"][..], true),
        (&["--json", "servers"], true),
        (&["tools"], false),
        (&["--json", "tools"], false),
        (&["call", "mcp__works__add", r#"{"a": 1, "b": 2}"#], false),
        (&["call", "mcp__works__fail", r#"{"message": "no"}"#], false),
        (&["call", "mcp__remote__anything"], true),
    ] {
        let out = command(args).output().expect("mcpbox runs");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        if names {
            assert!(all.contains(&gone), "{args:?}: {all}");
        }
        outputs.push((format!("{args:?}"), all));
    }
    assert!(outputs[0].1.contains("● works"), "{}", outputs[0].1);
    assert!(outputs[4].1.contains('3'), "{}", outputs[4].1);

    // The event stream, until both servers have settled.
    let mut child = ChildGuard::spawn(
        command(&["--json", "servers", "--watch"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .kill_after(WATCHDOG);
    let mut settled = std::collections::BTreeSet::new();
    let mut watched = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        watched.push_str(&line);
        watched.push('\n');
        if let Ok(event) = serde_json::from_str::<Value>(&line)
            && event["event"] == "status"
            && matches!(
                event["server"]["state"].as_str(),
                Some("connected" | "failed")
            )
        {
            settled.insert(
                event["server"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            if settled.len() == 2 {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(settled.len(), 2, "{watched}");
    assert!(watched.contains(&gone), "{watched}");
    outputs.push(("--watch".into(), watched));

    for (args, all) in &outputs {
        assert!(!all.contains(SECRET), "{args}: {all}");
    }
}

/// A `--timeout` too large for a `Duration` (or not a
/// positive finite number) is a usage error, exit 2, never a panic.
#[test]
fn timeout_out_of_range_is_a_usage_error() {
    let cfg = config("timeout", json!({ "demo": demo_entry() }));
    for value in ["1e300", "inf", "NaN", "-1", "0"] {
        let flag = format!("--timeout={value}");
        let out = mcpbox(&cfg, &["call", "mcp__demo__echo", r#"{"text":"x"}"#, &flag]);
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("--timeout"),
            "{value}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

/// `tests/tests/all/misbehaving_server.py` with `flags`.
fn misbehaving_entry(flags: &[&str]) -> Value {
    let mut args = vec![json!(repo().join("tests/tests/all/misbehaving_server.py"))];
    args.extend(flags.iter().map(|f| json!(f)));
    json!({ "command": "python3", "args": args })
}

/// The escapes `misbehaving_server.py --escapes` puts everywhere.
const ESCAPES: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[H\u{9b}31m\x7f\u{202e}evil\u{202c}";

/// Fails if `text` holds a character that a terminal would act on rather than show:
/// C0 controls other than newline and tab, DEL, C1 controls, bidi controls.
fn assert_terminal_safe(what: &str, text: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(raw.is_empty(), "{what} has raw {raw:?}: {text:?}");
}

/// What servers say reaches the terminal with its control
/// characters escaped (`\x1b`, `\u{202e}`), in every human-readable output; JSON
/// output keeps the exact text.
#[test]
fn terminal_escapes_from_servers_are_shown_escaped() {
    let cfg = config(
        "escapes",
        json!({
            "evil": misbehaving_entry(&["--escapes"]),
            "dead": misbehaving_entry(&["--exit-at-start", "3"]),
            "na\u{1b}[2Jme": misbehaving_entry(&[]),
        }),
    );
    let out = mcpbox(&cfg, &["servers"]);
    let text = stdout(&out);
    assert_terminal_safe("servers", &text);
    assert_terminal_safe("servers (stderr)", &stderr(&out));
    assert!(
        text.contains(r"evil\x1b]0;pwned\x07\x1b[2J\x1b[H\x9b31m\x7f\u{202e}evil\u{202c}"),
        "{text}"
    );
    assert!(
        text.contains(r"fatal\x1b]0;pwned"),
        "the stderr tail: {text}"
    );
    assert!(text.contains(r"na\x1b[2Jme"), "the server's name: {text}");
    // A server that never connected shows no protocol version.
    let dead = text.lines().find(|l| l.starts_with("✗ dead")).unwrap();
    assert!(!dead.contains("20"), "{dead}");

    let out = mcpbox(&cfg, &["tools"]);
    assert_terminal_safe("tools", &stdout(&out));
    assert_terminal_safe("tools (stderr)", &stderr(&out));
    assert!(
        stdout(&out).contains(r"Echoes.\x1b]0;pwned"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(r"fatal\x1b]0;pwned"),
        "{}",
        stderr(&out)
    );

    let out = mcpbox(&cfg, &["call", "mcp__evil__shout"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_terminal_safe("a tool error", &stderr(&out));
    assert!(
        stderr(&out).contains(r"failed\x1b]0;pwned"),
        "{}",
        stderr(&out)
    );

    let out = mcpbox(
        &cfg,
        &[
            "call",
            "mcp__evil__echo",
            &json!({"text": ESCAPES}).to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_terminal_safe("a tool result", &stdout(&out));

    let out = mcpbox(&cfg, &["call", "mcp__dead__echo"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_terminal_safe("an unavailable server", &stderr(&out));
    assert!(
        stderr(&out).contains(r"fatal\x1b]0;pwned"),
        "{}",
        stderr(&out)
    );

    // JSON stays exact.
    let out = mcpbox(&cfg, &["--json", "servers"]);
    let servers: Value = serde_json::from_slice(&out.stdout).unwrap();
    let evil = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "evil")
        .unwrap();
    assert_eq!(evil["serverName"], format!("evil{ESCAPES}"), "{evil}");
    let out = mcpbox(
        &cfg,
        &[
            "--json",
            "call",
            "mcp__evil__echo",
            &json!({"text": ESCAPES}).to_string(),
        ],
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], ESCAPES);

    // --watch: the log notification the server sends once initialised.
    use std::io::{BufRead, BufReader};
    let mut child = ChildGuard::spawn(
        mcpbox_command()
            .arg("--config")
            .arg(&cfg)
            .args(["servers", "--watch"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .kill_after(WATCHDOG);
    let mut seen = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if line.contains("[info]") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_terminal_safe("servers --watch", &seen);
    assert!(seen.contains(r"log\x1b]0;pwned"), "{seen}");
}

/// Runs mcpbox with `input` on its stdin (written by a thread, since mcpbox may
/// stop reading early).
fn mcpbox_with_stdin(config: &Path, args: &[&str], input: String) -> Output {
    use std::io::Write;
    let mut child = mcpbox_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Arguments too large for the guest are refused before
/// they enter it (exit 2, with the size, the limit and how to raise it), rather
/// than trapping the guest and restarting every server.
#[test]
fn oversized_arguments_are_refused_before_the_guest() {
    // The 20 MiB echo below passes on whole: above the default output limit
    // (`output.maxBytes`), a result would be cut to a head and a file.
    let cfg = config_text(
        "big-args",
        json!({
            "mcpServers": { "demo": demo_entry() },
            "output": { "maxBytes": 32 * 1024 * 1024 },
        }),
    );
    let text = "x".repeat(40 * 1024 * 1024);
    let arguments = json!({ "text": text }).to_string();
    let out = mcpbox_with_stdin(&cfg, &["call", "mcp__demo__echo", "-"], arguments);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(
        message.contains(&format!("{} bytes", text.len() + 11))
            && message.contains("16 MiB")
            && message.contains("--memory-limit"),
        "{message}"
    );
    assert!(!message.contains("wasm"), "{message}");

    // A larger memory limit raises the limit.
    let big = json!({ "text": "y".repeat(20 * 1024 * 1024) }).to_string();
    let out = mcpbox_with_stdin(&cfg, &["call", "mcp__demo__echo", "-"], big.clone());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = mcpbox_with_stdin(
        &cfg,
        &["--memory-limit", "512", "call", "mcp__demo__echo", "-"],
        big,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout.len(), 20 * 1024 * 1024 + 1);
}

/// The component cache's integrity, as a user meets it: a cached compiled component that
/// others may write, or that changed since mcpbox wrote it, is not loaded; the
/// command still works and says why on stderr.
#[test]
fn a_tampered_component_cache_is_not_loaded() {
    use std::os::unix::fs::PermissionsExt;
    let cfg = config("cache", json!({ "demo": demo_entry() }));
    let root = cfg.parent().unwrap().join("dirs");
    let _ = std::fs::remove_dir_all(&root);
    let run = || {
        mcpbox_command()
            .env("MCPBOX_CACHE_DIR", root.join("cache"))
            .env("MCPBOX_CONFIG_DIR", root.join("config"))
            .arg("--config")
            .arg(&cfg)
            .args(["call", "mcp__demo__echo", r#"{"text":"hi"}"#])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let cwasm = std::fs::read_dir(root.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a compiled component was cached");

    std::fs::set_permissions(&cwasm, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    assert!(
        stderr(&out).contains("warning: ") && stderr(&out).contains("may be written by anyone"),
        "{}",
        stderr(&out)
    );

    let mut bytes = std::fs::read(&cwasm).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&cwasm, &bytes).unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    assert!(
        stderr(&out).contains("failed its integrity check"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Waits until process `pid` no longer runs: gone, or a zombie whose parent has
/// yet to reap it. False after 30 s.
fn stops_running(pid: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat)
                if stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) if std::time::Instant::now() > deadline => return false,
            // Polling /proc: the process is not ours to wait for.
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// Starts mcpbox with `args` over a server that ignores SIGTERM and the end of
/// its stdin, has a child in its process group and a grandchild that left the
/// group with setsid and a cleared environment; waits until the server wrote
/// its pids (so mcpbox is running), sends `signal` to mcpbox and returns its
/// exit code and the three pids.
fn signalled(tag: &str, args: &[&str], signal: &str) -> (Option<i32>, Vec<u64>) {
    signalled_with(tag, args, signal, false)
}

/// [`signalled`]; with `nohup`, mcpbox starts under `nohup` (SIGHUP ignored), must
/// still run a moment after `signal`, and is then sent SIGTERM.
fn signalled_with(tag: &str, args: &[&str], signal: &str, nohup: bool) -> (Option<i32>, Vec<u64>) {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pids.json");
    let _ = std::fs::remove_file(&pid_file);
    let pid_file_arg = pid_file.to_str().unwrap();
    let cfg = config(
        tag,
        json!({ "m": misbehaving_entry(&[
            "--spawn-child", "--escapee-clean-env", "--ignore-term", "--ignore-stdin-eof",
            "--pid-file", pid_file_arg,
        ]) }),
    );
    // Under nohup, SIGHUP ignored. Otherwise the dispositions a command run from
    // a terminal has: a test run started in a shell's background job has SIGINT
    // and SIGQUIT ignored, which mcpbox would keep ignoring, as it keeps nohup's.
    let mut command = Command::new(if nohup { "nohup" } else { "env" });
    if !nohup {
        command.arg("--default-signal=HUP,INT,QUIT,TERM");
    }
    command
        .arg(mcpbox_tests::mcpbox_program())
        .env("MCPBOX_TRUST_ALL", "1")
        .envs(process_env());
    let mut child = command
        .arg("--config")
        .arg(&cfg)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids: Value = eventually(WATCHDOG, || {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            return Ok(serde_json::from_str(&text).unwrap());
        }
        assert!(child.try_wait().unwrap().is_none(), "mcpbox ended early");
        Err("the server never started".to_owned())
    });
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    if nohup {
        // The kernel still has SIGHUP as ignored (no handler took it over), so the
        // one just sent did nothing.
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let ignored = status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
            .unwrap();
        assert_eq!(ignored & 1, 1, "SIGHUP is no longer ignored: {status}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "mcpbox under nohup ended on SIGHUP"
        );
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let code = eventually(WATCHDOG, || {
        child
            .try_wait()
            .unwrap()
            .ok_or_else(|| format!("{tag}: mcpbox is still running after {signal}"))
    })
    .code();
    let pids = ["pid", "child", "escapee"]
        .iter()
        .map(|k| {
            pids[k]
                .as_u64()
                .unwrap_or_else(|| panic!("no {k} in {pids}"))
        })
        .collect();
    (code, pids)
}

/// SIGTERM or Ctrl-C (SIGINT) to the CLI stops every
/// server first: one that ignores SIGTERM and its stdin closing (killed after
/// the grace period), its child in its process group, and a grandchild that
/// left the group with setsid and an empty environment (found because the CLI
/// is the subreaper of its servers' descendants). Exit codes 143 and 130.
#[test]
fn signals_to_the_cli_stop_every_server_process() {
    let (code, pids) = signalled("sigterm", &["--json", "servers", "--watch"], "-TERM");
    assert_eq!(code, Some(143));
    for pid in pids {
        assert!(
            stops_running(pid),
            "process {pid} survived SIGTERM to mcpbox"
        );
    }
    let (code, pids) = signalled(
        "sigint",
        &["call", "mcp__m__sleep", r#"{"seconds": 600}"#],
        "-INT",
    );
    assert_eq!(code, Some(130));
    for pid in pids {
        assert!(
            stops_running(pid),
            "process {pid} survived SIGINT to mcpbox"
        );
    }
}

/// SIGHUP (the terminal closed, an ssh session dropped) and SIGQUIT end every
/// long-running command as SIGTERM does: the server, its child and the
/// grandchild that left with setsid and an empty environment are all stopped
/// (exit codes 129 and 131). Under `nohup`, which ignores SIGHUP, mcpbox keeps
/// ignoring it.
#[test]
fn hangup_and_quit_to_the_cli_stop_every_server_process() {
    for (tag, args, signal, code) in [
        (
            "sighup-serve",
            &["serve", "--http", "127.0.0.1:0"][..],
            "-HUP",
            129,
        ),
        (
            "sighup-call",
            &["call", "mcp__m__sleep", r#"{"seconds": 600}"#][..],
            "-HUP",
            129,
        ),
        (
            "sigquit-watch",
            &["--json", "servers", "--watch"][..],
            "-QUIT",
            131,
        ),
    ] {
        let (exit, pids) = signalled(tag, args, signal);
        assert_eq!(exit, Some(code), "{tag}");
        for pid in pids {
            assert!(
                stops_running(pid),
                "{tag}: process {pid} survived {signal} to mcpbox"
            );
        }
    }
    // Started with SIGHUP ignored (what `nohup` does): it stays running.
    let (exit, pids) = signalled_with(
        "sighup-nohup",
        &["--json", "servers", "--watch"],
        "-HUP",
        true,
    );
    assert_eq!(
        exit,
        Some(143),
        "ended by the SIGTERM after the ignored SIGHUP"
    );
    for pid in pids {
        assert!(
            stops_running(pid),
            "process {pid} survived SIGTERM to mcpbox"
        );
    }
}

/// mcpbox without `MCPBOX_TRUST_ALL`, with its own (fresh) configuration
/// directory, which loads the guest's compiled component from the process's cache.
fn untrusting(config_dir: &Path) -> Command {
    let mut command = Command::new(mcpbox_tests::mcpbox_program());
    command
        .env_remove("MCPBOX_TRUST_ALL")
        .envs(mcpbox_tests::compiled_guest::own_config_dir(config_dir))
        .stdin(Stdio::null());
    command
}

/// A configuration file mcpbox has not run before starts
/// nothing (no process, no connection, no `${VAR}` resolved) until the user
/// trusts it; exit 2 with what it would run and how to trust it. `mcpbox trust`
/// remembers it; a change asks again; `--trust` and `MCPBOX_TRUST_ALL=1` skip
/// the check.
#[test]
fn an_untrusted_configuration_starts_nothing_until_trusted() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config_dir = dir.join("config");
    let started = dir.join("started.json");
    // A listener nobody answers on: whether mcpbox connected shows in its backlog.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!(
        "http://{}/mcp?k=${{AWS_SECRET_ACCESS_KEY}}",
        listener.local_addr().unwrap()
    );
    let cfg = dir.join(".mcp.json");
    let write = |extra: &str| {
        let mut project = misbehaving_entry(&["--pid-file", started.to_str().unwrap()]);
        project["env"] = json!({ "NOTE": extra });
        let text = json!({ "mcpServers": {
            "project": project,
            "exfiltrate": { "type": "http", "url": url, "startupTimeoutMs": 300 },
        } });
        std::fs::write(&cfg, text.to_string()).unwrap();
    };
    write("first");

    let out = untrusting(&config_dir)
        .current_dir(&dir)
        .args(["tools"])
        .output()
        .unwrap();
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(
        message.contains("is not trusted yet")
            && message.contains("project: runs `python3 ")
            && message.contains(&format!("exfiltrate: connects to {url}"))
            && message.contains("AWS_SECRET_ACCESS_KEY")
            && message.contains("mcpbox --config ")
            && message.contains(" trust`"),
        "{message}"
    );
    assert!(!started.exists(), "the project's server was started");
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "mcpbox connected to the configured URL"
    );

    // `mcpbox trust` (default --config: ./.mcp.json), then it runs.
    let out = untrusting(&config_dir)
        .current_dir(&dir)
        .args(["trust"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("project: runs `python3 "),
        "{}",
        stdout(&out)
    );
    let trusted = config_dir.join("trusted-configs.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&trusted).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = untrusting(&config_dir)
        .current_dir(&dir)
        .args(["call", "mcp__project__echo", r#"{"text":"ok"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert!(started.exists());

    // A changed file asks again; --trust and MCPBOX_TRUST_ALL=1 skip the question.
    write("second");
    let out = untrusting(&config_dir)
        .current_dir(&dir)
        .args(["tools"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    for (flag, env) in [(Some("--trust"), None), (None, Some("1"))] {
        let mut command = untrusting(&config_dir);
        command.current_dir(&dir);
        if let Some(value) = env {
            command.env("MCPBOX_TRUST_ALL", value);
        }
        command
            .args(flag)
            .args(["call", "mcp__project__echo", r#"{"text":"ci"}"#]);
        let out = command.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag:?} {env:?}: {}",
            stderr(&out)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A number like `1e999` (or nesting deeper than 128 levels) anywhere in a server
/// entry made the trust check, which read the file into a `serde_json::Value`,
/// take it for a file naming no server, while the guest read it and started the
/// server without a question.
#[test]
fn a_configuration_serde_json_cannot_hold_is_not_trusted_by_mistake() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-unholdable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let started = dir.join("started.json");
    let entry = misbehaving_entry(&["--pid-file", started.to_str().unwrap()]);
    let cfg = dir.join("unholdable.json");
    let entry = entry.to_string();
    let entry = format!("{}, \"x\": 1e999}}", &entry[..entry.len() - 1]);
    std::fs::write(&cfg, format!(r#"{{"mcpServers": {{"project": {entry}}}}}"#)).unwrap();
    let out = untrusting(&dir.join("config"))
        .arg("--config")
        .arg(&cfg)
        .args(["servers"])
        .output()
        .unwrap();
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(
        message.contains("is not trusted yet") && message.contains("project: "),
        "{message}"
    );
    assert!(!started.exists(), "the project's server was started");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A trusted configuration runs the programs beside it, wherever mcpbox is
/// started: `python3 run.py` with no `cwd`, started from a freshly cloned
/// repository with a `run.py` of its own, runs the trusted file's `run.py`
/// (the configuration's directory is the working directory), and the trust
/// listing says where each server runs.
#[test]
fn a_trusted_configuration_runs_the_program_beside_it_wherever_mcpbox_starts() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-cwd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (user, clone) = (dir.join("user"), dir.join("clone"));
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(&clone).unwrap();
    let (user, clone) = (user.canonicalize().unwrap(), clone.canonicalize().unwrap());
    std::fs::copy(repo().join("examples/demo-server.py"), user.join("run.py")).unwrap();
    let cfg = user.join("servers.json");
    std::fs::write(
        &cfg,
        json!({ "mcpServers": { "demo": { "command": "python3", "args": ["run.py"] } } })
            .to_string(),
    )
    .unwrap();
    // The repository's own run.py: leaves a mark and serves nothing.
    let mark = dir.join("the-repository-ran");
    std::fs::write(
        clone.join("run.py"),
        format!("open({:?}, 'w').write('ran')\n", mark.display().to_string()),
    )
    .unwrap();
    let config_dir = dir.join("config");
    let out = untrusting(&config_dir)
        .current_dir(&clone)
        .arg("--config")
        .arg(&cfg)
        .arg("trust")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "demo: runs `python3 run.py` in {}",
            user.display()
        )),
        "{}",
        stdout(&out)
    );
    let out = untrusting(&config_dir)
        .current_dir(&clone)
        .arg("--config")
        .arg(&cfg)
        .args(["call", "mcp__demo__echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!mark.exists(), "the working directory's run.py ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a sandboxed server may reach is shown before it starts (`trust`) and
/// while it runs (`servers`, `--json` too): its grants and every automatic one.
#[test]
fn a_sandbox_and_its_automatic_grants_are_shown_before_and_after_start() {
    let script = repo().join("examples/demo-server.py");
    let script_text = script.display().to_string();
    let cfg = config(
        "sandbox-shown",
        json!({ "demo": {
            "command": "python3", "args": [script_text],
            "sandbox": { "read": [script_text] },
        }}),
    );
    let config_dir = cfg.with_file_name("config");
    let out = untrusting(&config_dir)
        .arg("--config")
        .arg(&cfg)
        .arg("trust")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains(&format!(
            "sandboxed (read {script_text}; write nothing; network: false; also read: the \
             system's programs and libraries"
        )),
        "{text}"
    );
    let out = mcpbox(&cfg, &["servers"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains("    sandbox: Landlock ABI ")
            && text.contains(&format!(
                "read {script_text}; write nothing; also read: the system's"
            )),
        "{text}"
    );
    let out = mcpbox(&cfg, &["--json", "servers"]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        listing[0]["sandbox"]
            .as_str()
            .is_some_and(|s| s.contains("also read: the system's programs")),
        "{listing}"
    );
}

/// The bundled demo runs without a question only while both its configuration
/// and the server it runs are exactly what this build ships.
#[test]
fn the_bundled_demo_is_trusted_only_as_shipped() {
    let dir = std::env::temp_dir().join(format!("mcpbox-cli-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::copy(repo().join(".mcp.json"), dir.join(".mcp.json")).unwrap();
    let server = dir.join("examples/demo-server.py");
    std::fs::copy(repo().join("examples/demo-server.py"), &server).unwrap();
    let call = || {
        untrusting(&dir.join("config"))
            .current_dir(&dir)
            .args(["call", "mcp__demo__echo", r#"{"text":"hi"}"#])
            .output()
            .unwrap()
    };
    let out = call();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut text = std::fs::read_to_string(&server).unwrap();
    text.push_str("\n# changed\n");
    std::fs::write(&server, text).unwrap();
    let out = call();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not trusted yet"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the host shows when the guest keeps failing: a guest that fails three times
/// within a minute stops the runtime. `servers` then shows every server failed
/// with the reason and exits 3, `servers --watch` prints it and exits 3, and a
/// call fails with the reason (exit 3). Here a server's 8 MiB log line is more
/// than a 4 MiB guest can take, every time it is started again.
#[test]
fn a_stopped_runtime_is_visible() {
    let cfg = config(
        "stopped",
        json!({ "big": misbehaving_entry(&["--huge-log", "8388608"]) }),
    );
    let out = mcpbox(&cfg, &["--memory-limit", "4", "servers"]);
    let (text, message) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{text}{message}");
    assert!(
        message.contains("the mcpbox runtime stopped: the guest failed 3 times within a minute")
            && message.contains("the guest ran out of memory")
            && message.contains("--memory-limit"),
        "{message}"
    );
    assert!(text.starts_with("✗ big"), "{text}");
    assert!(text.contains("the mcpbox runtime stopped"), "{text}");

    let out = mcpbox(&cfg, &["--memory-limit", "4", "call", "mcp__big__echo"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the mcpbox runtime stopped"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("wasm backtrace"), "{}", stderr(&out));

    // Killed if it never stops by itself. (Not `timeout 60 mcpbox`: killing
    // `timeout` would leave mcpbox running.)
    let child = ChildGuard::spawn(
        mcpbox_command()
            .arg("--config")
            .arg(&cfg)
            .args(["--memory-limit", "4", "--json", "servers", "--watch"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .kill_after(WATCHDOG);
    let out = child.wait_with_output();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "stopped", "{}", stdout(&out));
    assert!(
        last["reason"].as_str().unwrap().contains("3 times"),
        "{last}"
    );
}

#[test]
fn servers_watch_applies_a_changed_file_only_once_it_is_trusted_again() {
    use std::io::{BufRead, BufReader};
    let cfg = config("watch-trust", json!({ "demo": demo_entry() }));
    let home = cfg.with_extension("trust-dir");
    let _ = std::fs::remove_dir_all(&home);
    let untrusting = |args: &[&str]| {
        let mut command = Command::new(mcpbox_tests::mcpbox_program());
        command
            .env_remove("MCPBOX_TRUST_ALL")
            .envs(mcpbox_tests::compiled_guest::own_config_dir(&home))
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .stdin(Stdio::null());
        command
    };
    let trusted = untrusting(&["trust"]).output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    let mut child = ChildGuard::spawn(
        untrusting(&["servers", "--watch"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .kill_after(WATCHDOG);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut wait_for = |what: &str| {
        for line in lines.by_ref() {
            let line = line.unwrap();
            seen.push(line.clone());
            if line.contains(what) {
                return;
            }
        }
        panic!("no line with {what:?} in {seen:#?}");
    };
    wait_for("● demo");
    // A change nobody trusted (a `git pull`): nothing of it is applied.
    let changed = json!({ "mcpServers": { "other": demo_entry() } }).to_string();
    std::fs::write(&cfg, &changed).unwrap();
    wait_for("is not trusted as it is now");
    // Trusted from another terminal, then saved again: applied.
    let trusted = untrusting(&["trust"]).output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    std::fs::write(&cfg, &changed).unwrap();
    wait_for("reloaded");
    let _ = child.kill();
    let _ = child.wait();
    let text = seen.join("\n");
    assert!(
        !text.contains("○ other") || text.find("○ other") > text.find("is not trusted"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// `read --follow` subscribes and reads again at every update: the TS peer over
/// HTTP publishes `touch`'s update on every listen stream of its process, so a
/// second `mcpbox call` (another client) makes the first read again. SIGINT ends
/// it with 130.
#[test]
fn read_follow_reads_again_at_every_update() {
    use std::io::{BufRead, BufReader};
    let http = TsHttp::start();
    let cfg = config(
        "follow",
        json!({ "tshttp": { "type": "http", "url": http.url } }),
    );
    let mut child = ChildGuard::spawn(
        mcpbox_command()
            .arg("--config")
            .arg(&cfg)
            .args(["read", "--follow", "ts://readme"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .kill_after(WATCHDOG);
    let pid = child.id().to_string();
    let stderr_pipe = child.stderr.take().unwrap();
    let errors =
        std::thread::spawn(move || std::io::read_to_string(stderr_pipe).unwrap_or_default());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(first, "ts-peer readme");
    // Subscribed before that first read: the update reaches it.
    let out = mcpbox(
        &cfg,
        &["call", "mcp__tshttp__touch", r#"{"uri": "ts://readme"}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(again, "ts-peer readme", "read again after the update");
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", errors.join().unwrap());
}

/// server-everything (`tests/peers`, pinned; needs `scripts/install-peers`).
fn everything_entry() -> Value {
    let bin = repo().join("tests/peers/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "server-everything is missing: run scripts/install-peers first"
    );
    json!({ "command": bin, "args": ["stdio"] })
}

#[test]
fn a_tool_that_requires_a_task_runs_to_its_report_showing_its_progress() {
    let cfg = config("task", json!({ "everything": everything_entry() }));
    let out = mcpbox(
        &cfg,
        &[
            "call",
            "mcp__everything__simulate-research-query",
            r#"{"topic":"wasm"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("# Research Report: wasm"),
        "{}",
        stdout(&out)
    );
    // Each stage the task reported, on stderr while the call waited.
    let progress = stderr(&out);
    for stage in [
        "mcp__everything__simulate-research-query: working: Gathering sources...",
        "mcp__everything__simulate-research-query: working: Generating report...",
    ] {
        assert!(progress.lines().any(|l| l == stage), "{stage}: {progress}");
    }
}

#[test]
fn task_runs_an_optional_tool_as_a_task_showing_its_progress() {
    let (command, args) = mcpbox_tests::task_server_command();
    let cfg = config(
        "optional-task",
        json!({ "tasks": {"command": command, "args": args} }),
    );
    let arguments = r#"{"steps": 2, "ms": 150}"#;
    let out = mcpbox(&cfg, &["call", "--task", "mcp__tasks__count", arguments]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "counted to 2");
    let progress = stderr(&out);
    for stage in [
        "mcp__tasks__count: working: step 1 of 2",
        "mcp__tasks__count: working: step 2 of 2",
    ] {
        assert!(progress.lines().any(|l| l == stage), "{stage}: {progress}");
    }
    // Without --task the same call runs plainly: no task to show.
    let out = mcpbox(&cfg, &["call", "mcp__tasks__count", arguments]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "counted to 2");
    assert!(!stderr(&out).contains("working"), "{}", stderr(&out));
    // A tool that takes no task: a usage error that says what to do.
    let out = mcpbox(&cfg, &["call", "--task", "mcp__tasks__plain"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("call it without asking for a task"),
        "{}",
        stderr(&out)
    );
}

/// `call --task` against a 2026-07-28 server that offers the tasks extension
/// (`mcpbox serve --http`, in front of the fixture server): accepted, the call
/// comes back as a task handle, and its statuses show while it is polled.
#[test]
fn task_against_a_2026_server_with_the_tasks_extension_runs_and_shows_its_progress() {
    use mcpbox_tests::gateway::{AUTHORIZATION, ConfigFile, serve_http};
    let upstream = ConfigFile::new(&json!({"mcpServers": {
        "fixture": {"command": crate::fixture(), "args": []},
    }}));
    let gateway = serve_http(crate::cli(), &upstream.path, &[]);
    let cfg = config(
        "task-2026",
        json!({ "up": {"type": "http", "url": gateway.url,
            "headers": {"Authorization": AUTHORIZATION.1}} }),
    );
    let out = mcpbox(
        &cfg,
        &[
            "call",
            "--task",
            "mcp__up__fixture__sleep",
            r#"{"ms": 1500}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "slept 1500");
    let progress = stderr(&out);
    assert!(
        progress
            .lines()
            .any(|l| l.starts_with("mcp__up__fixture__sleep: working")),
        "{progress}"
    );
}

#[test]
fn a_url_a_server_asks_the_user_to_open_is_shown_and_never_opened() {
    let cfg = config(
        "url-elicitation",
        json!({ "everything": everything_entry() }),
    );
    let tool = "mcp__everything__trigger-url-elicitation";
    let arguments =
        r#"{"url": "https://pay.example/checkout?order=7", "message": "Pay for order 7"}"#;
    // --yes: shown, and the call goes on.
    let out = mcpbox(&cfg, &["call", "--yes", tool, arguments]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("User completed the URL elicitation flow"),
        "{}",
        stdout(&out)
    );
    let shown = stderr(&out);
    assert!(
        shown.contains("https://pay.example/checkout?order=7") && shown.contains("Pay for order 7"),
        "{shown}"
    );
    // Nobody to ask: shown, and declined, saying how to go on.
    let out = mcpbox(&cfg, &["call", tool, arguments]);
    assert!(
        stdout(&out).contains("User declined to open the URL"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
    // The error path (URLElicitationRequiredError): the call fails naming the URL
    // to open before calling again.
    let out = mcpbox(
        &cfg,
        &[
            "call",
            tool,
            r#"{"url": "https://pay.example/x", "errorPath": true}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("needs the user to open a URL first")
            && said.contains("https://modelcontextprotocol.io (Open this link"),
        "{said}"
    );
}
