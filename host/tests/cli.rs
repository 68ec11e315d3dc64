//! The `mcpbox` command line, run as a user runs it, against the bundled
//! Python demo server (`examples/demo-server.py`, stdlib only) and, for the
//! 2026-07-28 era, the TypeScript SDK v2 peer `tests/peers/ts_server.mjs`
//! (installed by `scripts/install-peers`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

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

fn mcpbox(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpbox"))
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

#[test]
fn the_readme_command_works_from_the_repository_root() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpbox"))
        .current_dir(repo())
        .args(["call", "mcp__demo__echo", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpbox"))
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

#[test]
fn servers_watch_prints_changes_as_they_happen() {
    use std::io::{BufRead, BufReader};
    let cfg = config("watch", json!({ "demo": demo_entry() }));
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpbox"))
        .arg("--config")
        .arg(&cfg)
        .args(["--json", "servers", "--watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Ends it even if the expected lines never come. (Not `timeout 60 mcpbox`:
    // killing `timeout` would leave mcpbox running.)
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        let _ = Command::new("kill").arg(&pid).status();
    });
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
        env!("CARGO_BIN_EXE_mcpbox"),
        cfg.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
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
