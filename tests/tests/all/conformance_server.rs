//! The official MCP conformance suite's **server** scenarios
//! (`@modelcontextprotocol/conformance`, pinned in `tests/conformance/`), run
//! against an upstream server directly and against `mcpbox serve` in front of it.
//!
//! The upstream is `tests/peers/conformance_server.mjs` (TypeScript SDK v2): the
//! tools, resources, prompts, completions and skills the scenarios ask for, as
//! their descriptions say. It is run directly over
//! Streamable HTTP, and by the gateway over stdio (`serve --http --naming
//! conditional`, so its tools and prompts keep their own names, which the
//! scenarios call; `--insecure-no-token`, since the runner cannot send one). Every
//! scenario the suite lists for a spec revision runs at both revisions, against
//! both: one runner process per revision and server (`--suite all`), all four
//! at once. The extensions' scenarios (`[extension]` in the suite's list: skills,
//! tasks), which no `--spec-version` selects, run one runner process each
//! (`--scenario`), directly and through the gateway, beside them, a few at a
//! time ([`EXTENSION_LANES`]).
//!
//! The rule: a scenario that passes directly passes through the gateway, except
//! those in [`THROUGH_GATEWAY_FAILS`], each with its reason; the test also fails
//! when a listed one starts passing, so the list stays true. Scenarios that fail
//! directly as well are reported in the table but not judged: they test what the
//! upstream does not do (resource subscriptions; sampling; push-style requests on
//! its HTTP entry, which answers each POST with plain JSON). An extension's
//! scenario that fails directly must be in [`EXTENSIONS_UPSTREAM_LACKS`], with
//! what the upstream lacks, and one listed there must fail directly.
//!
//! The tasks extension's scenarios are the gateway's own: the upstream has no
//! tasks (it runs their fixtures as plain calls), the gateway serves its tasks to
//! the runner. So a `tasks-*` scenario that fails directly must pass through the
//! gateway, unless it is in [`TASKS_THROUGH_GATEWAY_FAILS`] with what the suite
//! or the upstream lacks; one listed there that passes fails the test too.

use std::process::Command;
use std::time::Duration;

use mcpbox_tests::conformance::{self, Outcomes, runner};
use mcpbox_tests::gateway::{ConfigFile, serve_http};
use mcpbox_tests::http::start_with;
use mcpbox_tests::peers_dir;
use serde_json::json;

/// The spec revisions the gateway serves, as the suite names them.
const SPEC_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Scenarios that pass directly but not through the gateway: (version, scenario, why).
/// None now: `tools-call-with-logging` at 2025-11-25 was one until the gateway asked
/// its 2026-07-28 upstream for the log level its 2025 client wants (a 2026 server
/// logs during a call only at the `_meta` `logLevel` the call asks for).
const THROUGH_GATEWAY_FAILS: &[(&str, &str, &str)] = &[];

/// What the upstream lacks for the tasks extension's scenarios.
const NO_TASKS_EXTENSION: &str = "conformance_server.mjs (TypeScript SDK v2) offers no \
    io.modelcontextprotocol/tasks extension: it runs the scenario's fixtures (greet, \
    slow_compute, failing_job, …) as plain calls";

/// `tasks-*` scenarios that fail directly and through the gateway too:
/// (scenario, what the suite or the upstream lacks).
const TASKS_THROUGH_GATEWAY_FAILS: &[(&str, &str)] = &[(
    "tasks-required-task-error",
    "the upstream cannot declare failing_job `required`: a 2026-07-28 server's tools carry no \
     execution.taskSupport, and it has no tasks to require. Nor would the gateway refuse the \
     call: -32021 is for a server that cannot answer without a task, and the gateway answers \
     any call plainly to a client without the extension (it polls upstream on its behalf)",
)];

/// Extension scenarios that fail directly: (scenario, what the upstream lacks).
/// The skills scenarios run their checks directly and through the gateway: both
/// declare the `io.modelcontextprotocol/skills` extension and its
/// `directoryRead` (the test fails when either skips them for want of it).
/// `tasks-status-notifications` passes with its one check skipped by the suite
/// itself (pending a rewrite for `subscriptions/listen`).
const EXTENSIONS_UPSTREAM_LACKS: &[(&str, &str)] = &[
    ("tasks-lifecycle", NO_TASKS_EXTENSION),
    ("tasks-capability-negotiation", NO_TASKS_EXTENSION),
    ("tasks-wire-fields", NO_TASKS_EXTENSION),
    ("tasks-request-state-removal", NO_TASKS_EXTENSION),
    ("tasks-mrtr-input", NO_TASKS_EXTENSION),
    ("tasks-request-headers", NO_TASKS_EXTENSION),
    ("tasks-dispatch-and-envelope", NO_TASKS_EXTENSION),
    ("tasks-required-task-error", NO_TASKS_EXTENSION),
    ("tasks-mrtr-composition", NO_TASKS_EXTENSION),
];

/// One extension scenario may take this long, runner start-up included.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(120);

/// A whole suite run may take this long, runner start-up included (the runner
/// gives each scenario 30 s of its own; two of them wait that long for what the
/// upstream does not do).
const SUITE_DEADLINE: Duration = Duration::from_secs(600);

fn scenarios(version: &str) -> Vec<String> {
    let output = runner(&["list", "--server", "--spec-version", version])
        .output()
        .expect("run the suite's `list`");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The extensions' server scenarios (`[extension]` in `list`).
fn extension_scenarios() -> Vec<String> {
    let output = runner(&["list", "--server"])
        .output()
        .expect("run the suite's `list`");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|rest| rest.ends_with("[extension]"))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Runs one scenario against `url` in a runner process of its own.
fn run_one(url: &str, scenario: &str) -> (bool, String) {
    let args = ["server", "--url", url, "--scenario", scenario];
    match conformance::run(&args, SCENARIO_DEADLINE) {
        (Some(status), output) => (status.success(), output),
        (None, output) => (
            false,
            format!("timed out after {SCENARIO_DEADLINE:?}\n{output}"),
        ),
    }
}

/// How many extension scenarios run at once, each directly then through the
/// gateway. Most of a tasks scenario's time is the runner waiting for a task the
/// upstream does not have (up to 22 s each, 70 s for all of them directly), so
/// one at a time would make this the slowest test of all; the suites beside
/// them run four more runners.
const EXTENSION_LANES: usize = 4;

/// Runs each of `scenarios` directly against `direct` and through `gateway`,
/// [`EXTENSION_LANES`] at a time; the outcomes in the order of `scenarios`.
fn run_extensions(
    scenarios: &[String],
    direct: &str,
    gateway: &str,
) -> Vec<((bool, String), (bool, String))> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut outcomes: Vec<_> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..EXTENSION_LANES)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(scenario) = scenarios.get(i) else {
                            return done;
                        };
                        done.push((i, (run_one(direct, scenario), run_one(gateway, scenario))));
                    }
                })
            })
            .collect();
        lanes
            .into_iter()
            .flat_map(|lane| lane.join().expect("an extension lane panicked"))
            .collect()
    });
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

/// Runs every scenario of `version` (`--suite all`: what `list` names) against
/// `url` in one runner process ([`conformance::run_scenarios`]).
fn run(url: &str, version: &str) -> Outcomes {
    let args = [
        "server",
        "--url",
        url,
        "--spec-version",
        version,
        "--suite",
        "all",
    ];
    conformance::run_scenarios(&args, "server-", SUITE_DEADLINE)
}

#[test]
fn server_scenarios_through_the_gateway() {
    let script = peers_dir().join("conformance_server.mjs");
    let mut direct = Command::new("node");
    direct.arg(&script).args(["--http", "0"]);
    let direct = start_with(direct, &|line| {
        Some(
            line.split("conformance-upstream listening on ")
                .nth(1)?
                .trim()
                .to_owned(),
        )
    });
    let config = ConfigFile::new(&json!({"mcpServers": {
        "conformance": {"command": "node", "args": [script.display().to_string()]}}}));
    // The runner sends no header of the test's choosing, so no token: on loopback,
    // for this test's own gateway.
    let gateway = serve_http(
        mcpbox_tests::mcpbox_program(),
        &config.path,
        &["--naming", "conditional", "--insecure-no-token"],
    );

    // Every extension scenario, directly and through the gateway, in
    // [`EXTENSION_LANES`] at a time beside the suites.
    let extensions = extension_scenarios();
    assert!(
        extensions.iter().any(|s| s.starts_with("tasks-"))
            && extensions.iter().any(|s| s.starts_with("sep-2640-")),
        "the suite lists no tasks or skills server scenarios: {extensions:?}"
    );
    let extension_runs = {
        let (direct, gateway) = (direct.url.clone(), gateway.url.clone());
        let extensions = extensions.clone();
        std::thread::spawn(move || run_extensions(&extensions, &direct, &gateway))
    };
    // Every revision's whole suite, directly and through the gateway, at once.
    let runs: Vec<_> = SPEC_VERSIONS
        .iter()
        .flat_map(|v| [(*v, direct.url.clone()), (*v, gateway.url.clone())])
        .map(|(version, url)| std::thread::spawn(move || run(&url, version)))
        .collect();
    let mut outcomes: Vec<Outcomes> = runs
        .into_iter()
        .map(|r| r.join().expect("a suite run failed"))
        .collect();
    let mut results = Vec::new();
    for (i, version) in SPEC_VERSIONS.iter().enumerate() {
        let listed = scenarios(version);
        assert!(!listed.is_empty(), "the suite lists no server scenarios");
        let [alone, gated] = &mut outcomes[2 * i..2 * i + 2] else {
            unreachable!("two runs per revision")
        };
        for scenario in listed {
            let (Some((passed_alone, _)), Some((passed_gated, output))) =
                (alone.get(&scenario), gated.get(&scenario))
            else {
                panic!("the runner reported nothing for {version} {scenario}, which `list` names")
            };
            results.push((
                *version,
                scenario.clone(),
                *passed_alone,
                *passed_gated,
                output.clone(),
            ));
        }
    }
    let extension_runs = extension_runs.join().expect("the extension runs failed");
    let mut lacking = Vec::new();
    let mut skipped = Vec::new();
    for (scenario, ((alone, direct_output), (gated, output))) in
        extensions.iter().zip(extension_runs)
    {
        // The suite skips a skills scenario's checks where the extension is not
        // declared, and the directory scenario's where `directoryRead` is not.
        let undeclared = [
            "did not declare the io.modelcontextprotocol/skills extension",
            "declared the skills extension but not directoryRead",
        ];
        for (side, text) in [
            ("directly", &direct_output),
            ("through the gateway", &output),
        ] {
            for why in undeclared {
                if scenario.starts_with("sep-2640-") && text.contains(why) {
                    skipped.push(format!("{scenario} {side}: {why}"));
                }
            }
        }
        let listed = EXTENSIONS_UPSTREAM_LACKS
            .iter()
            .find(|(s, _)| s == scenario);
        match (alone, listed) {
            (false, None) => lacking.push(format!(
                "{scenario} fails directly: list it in EXTENSIONS_UPSTREAM_LACKS with what the upstream lacks"
            )),
            (true, Some(_)) => lacking.push(format!(
                "{scenario} passes directly now: remove it from EXTENSIONS_UPSTREAM_LACKS"
            )),
            _ => {}
        }
        if scenario.starts_with("tasks-") && !alone {
            let listed = TASKS_THROUGH_GATEWAY_FAILS
                .iter()
                .find(|(s, _)| s == scenario);
            match (gated, listed) {
                (false, None) => lacking.push(format!(
                    "{scenario} fails through the gateway, which serves the tasks extension:\n{output}"
                )),
                (true, Some(_)) => lacking.push(format!(
                    "{scenario} passes through the gateway now: remove it from TASKS_THROUGH_GATEWAY_FAILS"
                )),
                _ => {}
            }
        }
        results.push(("extension", scenario.clone(), alone, gated, output));
    }
    results.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));

    let mut table = vec![format!(
        "{:<11} {:<46} {:<7} gateway",
        "version", "scenario", "direct"
    )];
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for (version, scenario, alone, gated, output) in &results {
        let listed = THROUGH_GATEWAY_FAILS
            .iter()
            .find(|(v, s, _)| v == version && s == scenario);
        let mark = |p: bool| if p { "pass" } else { "fail" };
        let lacks = EXTENSIONS_UPSTREAM_LACKS
            .iter()
            .find(|(s, _)| *version == "extension" && s == scenario);
        let gateway_lacks = TASKS_THROUGH_GATEWAY_FAILS
            .iter()
            .find(|(s, _)| *version == "extension" && s == scenario);
        let note = match (alone, gated, listed, lacks) {
            (true, false, Some((_, _, why)), _) => format!("  (expected: {why})"),
            (false, false, _, _) if gateway_lacks.is_some() => {
                format!("  (expected: {})", gateway_lacks.map_or("", |(_, why)| why))
            }
            (false, _, _, Some((_, why))) => format!("  (upstream lacks it: {why})"),
            _ => String::new(),
        };
        table.push(format!(
            "{version:<11} {scenario:<46} {:<7} {}{note}",
            mark(*alone),
            mark(*gated)
        ));
        match (alone, gated, listed) {
            (true, false, None) => unexpected.push(format!("{version} {scenario}:\n{output}")),
            (true, true, Some(_)) => stale.push(format!("{version} {scenario}")),
            _ => {}
        }
    }
    eprintln!(
        "conformance (server scenarios, direct vs through mcpbox serve):\n{}",
        table.join("\n")
    );
    assert!(
        unexpected.is_empty(),
        "scenarios that pass directly but fail through the gateway:\n\n{}",
        unexpected.join("\n\n")
    );
    assert!(
        stale.is_empty(),
        "these pass through the gateway now; remove them from THROUGH_GATEWAY_FAILS: {stale:?}"
    );
    assert!(lacking.is_empty(), "{}", lacking.join("\n"));
    assert!(
        skipped.is_empty(),
        "skills scenarios skipped:\n{}",
        skipped.join("\n")
    );
}
