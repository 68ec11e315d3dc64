//! `mcpbox-bench`: mcpbox side by side with rmcp, in one run, interleaved.
//!
//! ```text
//! cargo run --release -p mcpbox-bench -- [--quick] [--reps N] [--only W2,W3,G1] [--gateway]
//!     [--markdown PATH]
//! ```
//!
//! Both sides run the same workloads against the same fixture MCP server
//! (`tests/src/bin/fixture-server.rs`). Every sample is a fresh process (see
//! [`worker`]); samples alternate between the sides (mcpbox first in even
//! repetitions, rmcp first in odd ones) and repetitions go round every workload
//! before the next begins, so a burst of load from elsewhere hits both sides
//! alike. The table shows medians with their min–max spread, the mcpbox/rmcp
//! ratio of the medians and whether the target is met. docs/PERFORMANCE.md
//! explains the workloads, the targets and where the time goes.
//!
//! `--markdown PATH` also writes the run's tables to PATH as a Markdown page of
//! its own ([`markdown_page`]): the command line, the machine (CPU model, cores,
//! load average at start and end), the tables as printed, and which targets were
//! missed. It carries no date: the history of runs is git's. docs/benchmarks.md
//! is that page, written by `mcpbox-bench --markdown docs/benchmarks.md` on a
//! quiet machine.
//!
//! | id  | workload | metric |
//! |-----|----------|--------|
//! | W1  | spawn + initialize + tools/list, one server | ms |
//! | W1c | a cold `mcpbox tools` process (warm component cache) vs `rmcp-tools`, exec→exit | ms; peak RSS in a second, untimed run (`peak-rss`) |
//! | W2  | 2,000 sequential echo calls | µs/call, client CPU µs/call |
//! | W3  | 1,000 echo calls in flight at once | calls/s |
//! | W4  | spawn + initialize + tools/list of 10,000 tools | ms, peak RSS |
//! | W4a | mcpbox alone: W4, then the 10,000 tools converted into each provider dialect (`Runtime::adapted_tools`, first conversion, uncached) | ms per dialect, peak RSS listed and converted |
//! | W5  | 200 concurrent sleeps of 0–50 ms | ms until every (checked) answer |
//! | W6  | a 17.6 MB tools/list line | ms, peak RSS, or "hung" |
//! | H1–H3 | mcpbox alone over Streamable HTTP against the npm and TypeScript SDK reference servers ([`http`]) | µs/call or calls/s, client CPU µs/call |
//!
//! `--policy` adds a side, `mcpbox+policy`, and a second table comparing it with
//! plain mcpbox: W1 with the fixture in a sandbox (its set-up cost at spawn), the
//! other workloads with 1,000 permission rules (their cost per call).
//! `--metrics` adds a side, `mcpbox+metrics`: mcpbox with `Options::metrics` on
//! (every call counted, as the guest reports it), and a table comparing it with plain
//! mcpbox, the cost of metrics.
//! The gateway's workloads (`mcpbox serve`) come after, in a table of their own:
//! rmcp's client calling the fixture directly, through the gateway over stdio and
//! HTTP, and through `mcp-proxy` (see [`gateway`]).
//!
//! | id  | workload | metric |
//! |-----|----------|--------|
//! | G1  | 2,000 sequential echo calls | µs/call |
//! | G2  | 1,000 echo calls in flight at once | calls/s |
//! | G3  | tools/list of 10,000 upstream tools | ms, peak RSS of the gateway or proxy |
//! | G4  | search_tools over 10,000 tools | ms (first), µs/search |
//! | G5  | 2,000 sequential pings (what one turn of the gateway costs) | µs/ping, CPU of the middle |
//! | G6  | 200 sequential `echo` calls from FastMCP's client (Python) to server-everything, direct and through `mcpbox serve` (stdio) | µs/call |
//!
//! `--gateway` runs only the G workloads (`--only G1,G2` picks some).
//!
//! A third column, `raw`, is a hand-written minimal NDJSON client (no MCP
//! library, no sandbox): a reference for what the fixture server and the OS cost
//! on their own.
//!
//! For profiling (docs/PERFORMANCE.md has the recipes):
//! `MCPBOX_BENCH_GUEST=path.wasm` runs another build of the guest (one with its
//! name section, so perf shows guest function names); `MCPBOX_BENCH_ROUNDS=N`
//! repeats the timed part of W2 and W3; `MCPBOX_BENCH_SMAPS=1` prints a worker's
//! largest memory mappings (the guest's linear memory is one of them).
//! `MCPBOX_BENCH_ALLOCS=1` counts the client's heap allocations in W2's timed part
//! ([`allocations`]; a row of its own, `allocs/call`).
//! `MCPBOX_BENCH_CACHE_DIR=DIR` keeps the compiled guest in DIR from run to run
//! instead of a fresh directory per run: under valgrind, which hides some CPU
//! features, the guest compiles again for them, which takes minutes, so the
//! instruction counts of the gateway (see [`gateway`]) warm it once.

mod allocations;
mod gateway;
mod http;
mod lean_http;
mod relay;
mod rmcp_proxy;
mod worker;

#[global_allocator]
static ALLOCATOR: allocations::Counting = allocations::Counting;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    Mcpbox,
    Rmcp,
    /// A hand-written minimal NDJSON client: what the fixture and the OS cost alone.
    Raw,
    /// mcpbox with a policy feature configured (`--policy`): a sandboxed fixture
    /// in W1, 1,000 permission rules elsewhere (see [`worker::policy_config`]).
    Policy,
    /// mcpbox with `Options::metrics` on (`--metrics`).
    Metrics,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Mcpbox => "mcpbox",
            Side::Rmcp => "rmcp",
            Side::Raw => "raw",
            Side::Policy => "mcpbox+policy",
            Side::Metrics => "mcpbox+metrics",
        }
    }
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Workload {
    Connect,
    ColdProcess,
    Sequential,
    Concurrent,
    BigList,
    /// W4a: the big list converted into each provider dialect (mcpbox alone).
    Adapt,
    Sleeps,
    HugeList,
    /// H1: sequential calls over Streamable HTTP (2025-11-25, a session).
    HttpSequential,
    /// H2: calls in flight over Streamable HTTP.
    HttpConcurrent,
    /// H3: sequential calls over Streamable HTTP in the 2026-07-28 era.
    HttpStateless,
}

impl Workload {
    const ALL: [Workload; 11] = [
        Workload::Connect,
        Workload::ColdProcess,
        Workload::Sequential,
        Workload::Concurrent,
        Workload::BigList,
        Workload::Adapt,
        Workload::Sleeps,
        Workload::HugeList,
        Workload::HttpSequential,
        Workload::HttpConcurrent,
        Workload::HttpStateless,
    ];

    /// The remote workloads: mcpbox alone, against a reference server over HTTP.
    fn is_http(self) -> bool {
        matches!(
            self,
            Workload::HttpSequential | Workload::HttpConcurrent | Workload::HttpStateless
        )
    }

    fn id(self) -> &'static str {
        match self {
            Workload::Connect => "W1",
            Workload::ColdProcess => "W1c",
            Workload::Sequential => "W2",
            Workload::Concurrent => "W3",
            Workload::BigList => "W4",
            Workload::Adapt => "W4a",
            Workload::Sleeps => "W5",
            Workload::HugeList => "W6",
            Workload::HttpSequential => "H1",
            Workload::HttpConcurrent => "H2",
            Workload::HttpStateless => "H3",
        }
    }

    fn from_id(id: &str) -> Option<Workload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.id().eq_ignore_ascii_case(id))
    }
}

/// How a row's ratio (mcpbox/rmcp of the medians) or value is judged.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// Reported, not judged.
    None,
    RatioAtMost(f64),
    RatioAtLeast(f64),
    /// mcpbox's median at most this many times the raw client's (the floor).
    RawAtMost(f64),
    /// mcpbox's median itself at most this much.
    ValueAtMost(f64),
    /// mcpbox completes every sample.
    Completes,
}

/// One line of the results table.
#[derive(Debug)]
struct Row {
    workload: Workload,
    label: &'static str,
    metric: &'static str,
    unit: &'static str,
    target: Target,
}

const ROWS: &[Row] = &[
    Row {
        workload: Workload::Connect,
        label: "W1 spawn+init+list",
        metric: "ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Connect,
        label: "W1 peak RSS",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::None,
    },
    Row {
        workload: Workload::ColdProcess,
        label: "W1c cold `tools` process",
        metric: "ms",
        unit: "ms",
        target: Target::RatioAtMost(1.2),
    },
    Row {
        workload: Workload::ColdProcess,
        label: "W1c peak RSS",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::RatioAtMost(2.0),
    },
    Row {
        workload: Workload::Sequential,
        label: "W2 sequential echo",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::RatioAtMost(0.9),
    },
    Row {
        workload: Workload::Sequential,
        label: "W2 over the raw client",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::RawAtMost(1.25),
    },
    Row {
        workload: Workload::Sequential,
        label: "W2 client CPU",
        metric: "cpu_us_per_call",
        unit: "µs/call",
        target: Target::RatioAtMost(1.0),
    },
    Row {
        workload: Workload::Sequential,
        label: "W2 client allocations",
        metric: "allocs_per_call",
        unit: "allocs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::Concurrent,
        label: "W3 1,000 in flight",
        metric: "calls_per_s",
        unit: "calls/s",
        target: Target::RatioAtLeast(1.0),
    },
    Row {
        workload: Workload::Concurrent,
        label: "W3 client CPU",
        metric: "cpu_us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::BigList,
        label: "W4 10,000-tool list",
        metric: "ms",
        unit: "ms",
        target: Target::RatioAtMost(1.0),
    },
    Row {
        workload: Workload::BigList,
        label: "W4 peak RSS",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::RatioAtMost(0.5),
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a 10,000-tool list",
        metric: "ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a → openai",
        metric: "openai_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a → openai-strict",
        metric: "openai-strict_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a → anthropic",
        metric: "anthropic_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a → gemini",
        metric: "gemini_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a → openai again (cached)",
        metric: "cached_ms",
        unit: "ms",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a peak RSS listed",
        metric: "listed_rss_mib",
        unit: "MiB",
        target: Target::None,
    },
    Row {
        workload: Workload::Adapt,
        label: "W4a peak RSS converted",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::None,
    },
    Row {
        workload: Workload::Sleeps,
        label: "W5 200 sleeps 0-50 ms",
        metric: "ms",
        unit: "ms",
        target: Target::ValueAtMost(50.0 * 1.05),
    },
    Row {
        workload: Workload::HugeList,
        label: "W6 17.6 MB tools/list",
        metric: "ms",
        unit: "ms",
        target: Target::Completes,
    },
    Row {
        workload: Workload::HugeList,
        label: "W6 peak RSS",
        metric: "peak_rss_mib",
        unit: "MiB",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpSequential,
        label: "H1 HTTP sequential echo",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpSequential,
        label: "H1 client CPU",
        metric: "cpu_us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpConcurrent,
        label: "H2 HTTP 200 in flight",
        metric: "calls_per_s",
        unit: "calls/s",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpConcurrent,
        label: "H2 client CPU",
        metric: "cpu_us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpStateless,
        label: "H3 HTTP 2026-07-28 sequential",
        metric: "us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
    Row {
        workload: Workload::HttpStateless,
        label: "H3 client CPU",
        metric: "cpu_us_per_call",
        unit: "µs/call",
        target: Target::None,
    },
];

/// The samples of one side of one workload.
#[derive(Debug, Default)]
struct Samples {
    metrics: BTreeMap<String, Vec<f64>>,
    failures: Vec<String>,
}

#[derive(Debug)]
struct Args {
    reps: usize,
    only: Vec<Workload>,
    /// The gateway's workloads to run.
    gateway: Vec<gateway::Workload>,
    build: bool,
    /// Also run the raw client, the reference for what the fixture and the OS cost.
    raw: bool,
    /// Also run mcpbox with the policy features configured (`Side::Policy`).
    policy: bool,
    /// Also run mcpbox with metrics on (`Side::Metrics`).
    metrics: bool,
    /// Also write the tables as a Markdown page here.
    markdown: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        reps: 7,
        only: Workload::ALL.to_vec(),
        gateway: gateway::Workload::ALL.to_vec(),
        build: true,
        raw: true,
        policy: false,
        metrics: false,
        markdown: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => parsed.reps = 3,
            "--reps" => {
                parsed.reps = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps needs a positive number")?;
            }
            "--only" => {
                let list = args.next().ok_or("--only needs a list such as W2,W3,G1")?;
                parsed.only.clear();
                parsed.gateway.clear();
                for id in list.split(',').map(str::trim) {
                    if let Some(w) = Workload::from_id(id) {
                        parsed.only.push(w);
                    } else if let Some(g) = gateway::Workload::from_id(id) {
                        parsed.gateway.push(g);
                    } else {
                        return Err(format!("unknown workload {id}"));
                    }
                }
            }
            "--gateway" => {
                parsed.only.clear();
                parsed.gateway = gateway::Workload::ALL.to_vec();
            }
            "--no-build" => parsed.build = false,
            "--no-raw" => parsed.raw = false,
            "--policy" => parsed.policy = true,
            "--metrics" => parsed.metrics = true,
            "--markdown" => {
                let path = args
                    .next()
                    .ok_or("--markdown needs a path, such as docs/benchmarks.md")?;
                parsed.markdown = Some(PathBuf::from(path));
            }
            "--help" | "-h" => {
                return Err("usage: mcpbox-bench [--quick | --reps N] [--only W1,W1c,W2,W3,W4,W5,W6,H1,H2,H3,G1,G2,G3,G4,G5,G6] [--gateway] [--no-raw] [--policy] [--metrics] [--no-build] [--markdown PATH]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("worker") {
        args.next();
        return worker_main(args);
    }
    if args.peek().map(String::as_str) == Some("peak-rss") {
        args.next();
        return peak_rss_main(args);
    }
    if args.peek().map(String::as_str) == Some("relay") {
        args.next();
        return relay::main(args);
    }
    if args.peek().map(String::as_str) == Some("rmcp-proxy") {
        args.next();
        return rmcp_proxy::main(args);
    }
    if args.peek().map(String::as_str) == Some("gateway-worker") {
        args.next();
        return match gateway::worker_main(args) {
            Ok(metrics) => {
                println!("{metrics}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    let args: Vec<String> = args.collect();
    // As typed, for the Markdown page's record of how it was made.
    let command = command_line(&args);
    let args = match parse_args(args.into_iter()) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match harness(&args, &command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

/// `mcpbox-bench worker SIDE WORKLOAD FIXTURE CACHE_DIR`: one sample, metrics as JSON on stdout.
fn worker_main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let mut next = || args.next().unwrap_or_default();
    let side = match next().as_str() {
        "mcpbox" => Side::Mcpbox,
        "rmcp" => Side::Rmcp,
        "raw" => Side::Raw,
        "mcpbox+policy" => Side::Policy,
        "mcpbox+metrics" => Side::Metrics,
        other => {
            eprintln!("unknown side {other:?}");
            return ExitCode::from(2);
        }
    };
    let Some(workload) = Workload::from_id(&next()) else {
        eprintln!("unknown workload");
        return ExitCode::from(2);
    };
    let job = worker::Job {
        side,
        workload,
        fixture: PathBuf::from(next()),
        cache_dir: PathBuf::from(next()),
        builtin: next().parse().unwrap_or(0),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("could not start tokio: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(worker::run(job));
    // Do not wait for tasks a hung client left behind.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(metrics) => {
            println!("{}", serde_json::to_string(&metrics).unwrap_or_default());
            ExitCode::SUCCESS
        }
        // On stdout, which is the worker's alone: its fixture shares its stderr,
        // and what the fixture prints as the client gives up (a cancellation,
        // say) lands after the worker's own words.
        Err(e) => {
            println!("{}", serde_json::json!({ "error": e.to_string() }));
            ExitCode::from(1)
        }
    }
}

/// Paths the harness works with.
#[derive(Debug)]
struct Setup {
    me: PathBuf,
    fixture: PathBuf,
    mcpbox: PathBuf,
    rmcp_tools: PathBuf,
    work: PathBuf,
    cache_dir: PathBuf,
    /// How many tools the fixture lists on its own.
    builtin: usize,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

fn harness(args: &Args, command: &str) -> Result<(), String> {
    let setup = setup(args.build)?;
    let about = about_the_run(&setup, args);
    for line in &about {
        println!("{line}");
    }
    warm_cache(&setup)?;
    let programs = if args.gateway.is_empty() {
        None
    } else {
        Some(gateway::Programs::new(
            setup.fixture.clone(),
            setup.mcpbox.clone(),
            setup.cache_dir.clone(),
            setup.work.join("gateway"),
            setup.builtin,
        )?)
    };

    let mut samples: BTreeMap<(Workload, Side), Samples> = BTreeMap::new();
    let mut gateway_results = gateway::Results::new();
    for rep in 0..args.reps {
        eprint!("rep {}/{}:", rep + 1, args.reps);
        for &workload in &args.only {
            eprint!(" {}", workload.id());
            // mcpbox and rmcp alternate who goes first; the raw reference runs last.
            // The HTTP workloads measure mcpbox alone (see http.rs); mcpbox with policy
            // runs next to plain mcpbox, on either side of it.
            // mcpbox with metrics, likewise.
            let variants: Vec<Side> = [(args.policy, Side::Policy), (args.metrics, Side::Metrics)]
                .into_iter()
                .filter(|&(on, _)| on && workload != Workload::ColdProcess)
                .map(|(_, side)| side)
                .collect();
            let mut sides = if workload.is_http() || workload == Workload::Adapt {
                vec![Side::Mcpbox]
            } else if rep % 2 == 0 {
                let mut sides = variants.clone();
                sides.extend([Side::Mcpbox, Side::Rmcp]);
                sides
            } else {
                let mut sides = vec![Side::Rmcp, Side::Mcpbox];
                sides.extend(variants.iter().rev());
                sides
            };
            if args.raw
                && !matches!(workload, Workload::ColdProcess | Workload::Adapt)
                && !workload.is_http()
            {
                sides.push(Side::Raw);
            }
            for side in sides {
                let entry = samples.entry((workload, side)).or_default();
                match sample(&setup, workload, side) {
                    Ok(metrics) => {
                        for (name, value) in metrics {
                            entry.metrics.entry(name).or_default().push(value);
                        }
                    }
                    Err(e) => {
                        // Said as it happens: the table only counts a failure
                        // beside the other samples' median.
                        eprint!("\n  {} failed on {}: {e}\n ", workload.id(), side.name());
                        entry.failures.push(e);
                    }
                }
            }
        }
        if let Some(programs) = &programs {
            gateway::run_rep(
                &setup.me,
                programs,
                &args.gateway,
                rep,
                &mut gateway_results,
            );
        }
        eprintln!();
    }
    let mut tables = String::new();
    let mut missed = Vec::new();
    if !args.only.is_empty() {
        missed.extend(table(args, &samples, &mut tables));
    }
    if !args.gateway.is_empty() {
        missed.extend(gateway::table(
            args.reps,
            &args.gateway,
            &gateway_results,
            &mut tables,
        ));
    }
    let load_at_end = format!("load average at end: {}", load_average());
    let verdict = if missed.is_empty() {
        "every target met".to_owned()
    } else {
        format!("targets missed: {}", missed.join(", "))
    };
    print!("{tables}");
    println!();
    println!("{load_at_end}");
    println!("{verdict}");
    if let Some(path) = &args.markdown {
        let mut about = about;
        about.push(load_at_end);
        let page = markdown_page(command, &about, &tables, &verdict);
        std::fs::write(path, page)
            .map_err(|e| format!("cannot write the Markdown page {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn setup(build: bool) -> Result<Setup, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = me
        .parent()
        .ok_or("this program has no directory")?
        .to_path_buf();
    let release = dir.file_name().is_some_and(|n| n == "release");
    if !release {
        eprintln!("warning: not a release build; numbers will mean little (use --release)");
    }
    // The harness runs the CLI and the fixture as programs: build them with the same
    // profile, every time, so W1c never measures a stale `mcpbox` (a no-op when fresh).
    if let (true, Some(cargo)) = (build, std::env::var_os("CARGO")) {
        let mut command = Command::new(cargo);
        command.args([
            "build",
            "-p",
            "mcpbox-cli",
            "--bin",
            "mcpbox",
            "-p",
            "mcpbox-tests",
            "--bin",
            "fixture-server",
            "-p",
            "mcpbox-bench",
            "--bin",
            "rmcp-tools",
        ]);
        if release {
            command.arg("--release");
        }
        eprintln!("building the CLI, the fixture server and rmcp-tools…");
        let status = command
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err("building the programs failed".into());
        }
    }
    let program = |name: &str| {
        let path = dir.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} is missing; build it with `cargo build --release -p mcpbox-cli --bin mcpbox \
                 -p mcpbox-tests --bin fixture-server -p mcpbox-bench --bin rmcp-tools` \
                 or run this through `cargo run`",
                path.display()
            ))
        }
    };
    let work = std::env::temp_dir().join(format!("mcpbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let cache_dir = std::env::var_os("MCPBOX_BENCH_CACHE_DIR")
        .map_or_else(|| work.join("component-cache"), PathBuf::from);
    // Every mcpbox the bench runs (workers, the CLI, gateways) keeps its trust,
    // pins and the key that signs compiled components in a configuration
    // directory beside the cache, not the user's: a sample then reads only what
    // the bench wrote (a user's pins file of many configurations made W1c read
    // 640 KB more), and the user's files are left alone.
    if std::env::var_os("MCPBOX_CONFIG_DIR").is_none() {
        let config_dir = cache_dir.with_extension("config");
        std::fs::create_dir_all(&config_dir)
            .map_err(|e| format!("cannot create {}: {e}", config_dir.display()))?;
        // SAFETY: the harness has started no thread yet (`setup` is its first
        // step), so nothing reads the environment concurrently.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var("MCPBOX_CONFIG_DIR", &config_dir);
        }
    }
    let fixture = program("fixture-server")?;
    let builtin = list_tools(&fixture, &[])?.1;
    Ok(Setup {
        builtin,
        fixture,
        mcpbox: program("mcpbox")?,
        rmcp_tools: program("rmcp-tools")?,
        cache_dir,
        work,
        me,
    })
}

/// The first lines of a run: the machine, its load, and W6's list size.
fn about_the_run(setup: &Setup, args: &Args) -> Vec<String> {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = read("/proc/sys/kernel/osrelease");
    let mut lines = vec![
        format!("machine: {model}, {cores} cores, Linux {}", kernel.trim()),
        format!("load average at start: {}", load_average()),
    ];
    if args.only.contains(&Workload::HugeList) {
        lines.push(
            match list_tools(
                &setup.fixture,
                &worker::fixture_args(Workload::HugeList, setup.builtin),
            ) {
                Ok((bytes, _)) => format!(
                    "W6 tools/list line: {:.1} MB ({} tools)",
                    bytes as f64 / 1e6,
                    worker::HUGE_LIST_EXTRA_TOOLS + setup.builtin
                ),
                Err(e) => format!("W6 tools/list line: could not be measured ({e})"),
            },
        );
    }
    lines
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    if load.is_empty() {
        "unknown".into()
    } else {
        load.join(" ")
    }
}

/// The command as typed, to show in the Markdown page: `mcpbox-bench` and its
/// arguments, each quoted for a POSIX shell when it needs to be.
fn command_line(args: &[String]) -> String {
    let mut line = "mcpbox-bench".to_owned();
    for arg in args {
        line.push(' ');
        let plain = !arg.is_empty()
            && arg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./,=:@+".contains(&b));
        if plain {
            line.push_str(arg);
        } else {
            line.push_str(&format!("'{}'", arg.replace('\'', r"'\''")));
        }
    }
    line
}

/// The Markdown page `--markdown PATH` writes: what made it, on which machine,
/// the tables as printed, and the verdict. No date: git keeps the history.
fn markdown_page(command: &str, about: &[String], tables: &str, verdict: &str) -> String {
    let mut page = String::new();
    let _ = writeln!(page, "# Benchmark results");
    let _ = writeln!(page);
    let _ = writeln!(
        page,
        "Generated by `mcpbox-bench --markdown`; do not edit it by hand. Run the command \
         below again, on a quiet machine, to replace it. How the figures are taken, the \
         workloads, the targets and where the time goes: [PERFORMANCE.md](PERFORMANCE.md)."
    );
    let _ = writeln!(page);
    let _ = writeln!(page, "- command: `{command}`");
    for line in about {
        let _ = writeln!(page, "- {}", markdown_text(line));
    }
    // The tables begin with a blank line.
    page.push_str(tables);
    let _ = writeln!(page);
    let _ = writeln!(page, "{}", markdown_text(verdict));
    page
}

/// `text` made safe inside a Markdown table cell or list item: one line, no `|`
/// that would end the cell.
fn markdown_text(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', r"\|")
}

/// Asks the fixture for its tool list directly: the line's size and the tool count.
fn list_tools(fixture: &std::path::Path, args: &[String]) -> Result<(usize, usize), String> {
    let mut child = Command::new(fixture)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", fixture.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let mut line = Vec::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    BufReader::new(stdout)
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string())?;
    let _ = child.wait();
    let count = serde_json::from_slice::<serde_json::Value>(&line)
        .ok()
        .and_then(|v| v["result"]["tools"].as_array().map(Vec::len))
        .ok_or("the fixture did not answer tools/list")?;
    Ok((line.len(), count))
}

/// Compiles the guest into the bench's component cache, so every mcpbox sample
/// (in-process runtime and CLI alike) starts with a warm cache, as users do.
fn warm_cache(setup: &Setup) -> Result<(), String> {
    let mut round = SystemTime::now();
    cold_process(setup, Side::Mcpbox)?;
    // The CLI and this program are separate builds; warm the cache for both.
    sample(setup, Workload::Connect, Side::Mcpbox)?;
    // A user's cache is also stamped as checked: a compiled component is read
    // whole and its HMAC checked until a run at least two seconds after it was
    // written stamps it (host/src/engine.rs, "The integrity of cached
    // components"); after that, a run maps it without reading it. Samples taken
    // right after the compile would all measure the unstamped path.
    let started = Instant::now();
    while !all_stamped(&setup.cache_dir, round) {
        if started.elapsed() > Duration::from_secs(15) {
            return Err(format!(
                "the compiled components in {} were not stamped as checked within 15 s",
                setup.cache_dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
        round = SystemTime::now();
        cold_process(setup, Side::Mcpbox)?;
        sample(setup, Workload::Connect, Side::Mcpbox)?;
    }
    Ok(())
}

/// How long after a compiled component last changed a run that loads it
/// stamps it: host/src/engine.rs waits 2 s (`STAMP_AFTER`); one more second
/// covers the clocks' granularity.
const STAMPED_AFTER: Duration = Duration::from_secs(3);

/// Whether every compiled component in `dir` that this bench loads has its
/// `.verified` stamp, after a warming round that began at `round`.
///
/// A component still unstamped though it changed long enough before that
/// round for the round to stamp it is one no run of this bench loads: another
/// guest's (`MCPBOX_BENCH_GUEST`, an older build), or one that an `mcpbox`
/// with another configuration directory, and so another key, compiled and
/// this bench's runs have not loaded since. It is left out, not waited for.
fn all_stamped(dir: &Path, round: SystemTime) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let stamped = |name: &String| names.contains(&format!("{name}.verified"));
    let settled_before_round = |name: &String| {
        std::fs::metadata(dir.join(name))
            .ok()
            .and_then(|m| {
                use std::os::unix::fs::MetadataExt;
                let changed = SystemTime::UNIX_EPOCH
                    + Duration::new(
                        u64::try_from(m.ctime()).ok()?,
                        u32::try_from(m.ctime_nsec()).ok()?,
                    );
                round.duration_since(changed).ok()
            })
            .is_some_and(|age| age >= STAMPED_AFTER)
    };
    let compiled: Vec<&String> = names.iter().filter(|n| n.ends_with(".cwasm")).collect();
    !compiled.is_empty()
        && compiled.iter().any(|n| stamped(n))
        && compiled
            .iter()
            .all(|n| stamped(n) || settled_before_round(n))
}

fn sample(setup: &Setup, workload: Workload, side: Side) -> Result<BTreeMap<String, f64>, String> {
    if workload == Workload::ColdProcess {
        let (ms, peak_rss_mib) = cold_process(setup, side)?;
        return Ok(BTreeMap::from([
            ("ms".to_owned(), ms),
            ("peak_rss_mib".to_owned(), peak_rss_mib),
        ]));
    }
    let output = Command::new(&setup.me)
        .arg("worker")
        .arg(side.name())
        .arg(workload.id())
        .arg(&setup.fixture)
        .arg(&setup.cache_dir)
        .arg(setup.builtin.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start a worker: {e}"))?;
    if !output.status.success() {
        // A worker that failed says why on stdout; one that could not (it
        // crashed, say) left its last words on stderr.
        #[derive(serde::Deserialize)]
        struct Failed {
            error: String,
        }
        if let Ok(Failed { error }) = serde_json::from_slice(&output.stdout) {
            return Err(error);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message").trim();
        return Err(last.to_owned());
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("a worker printed garbage: {e}"))
}

/// W1c: `mcpbox tools` or `rmcp-tools`, exec to exit, output checked: the
/// milliseconds and the process's peak RSS in MiB.
fn cold_process(setup: &Setup, side: Side) -> Result<(f64, f64), String> {
    let mut command = match side {
        Side::Mcpbox => {
            let config = setup.work.join("w1c.mcp.json");
            if !config.is_file() {
                std::fs::write(
                    &config,
                    worker::mcpbox_config(&setup.fixture, Workload::ColdProcess, setup.builtin),
                )
                .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
            }
            let mut command = Command::new(&setup.mcpbox);
            command
                .arg("--config")
                .arg(&config)
                .arg("tools")
                // The bench wrote this configuration itself (see `mcpbox trust`).
                .arg("--trust")
                .env("MCPBOX_CACHE_DIR", &setup.cache_dir);
            // Same guest as the workers use (see `MCPBOX_BENCH_GUEST` in worker.rs).
            gateway::with_bench_options(&mut command);
            command
        }
        Side::Rmcp => {
            let mut command = Command::new(&setup.rmcp_tools);
            command.arg(&setup.fixture);
            command
        }
        Side::Raw | Side::Policy | Side::Metrics => {
            return Err(format!("W1c has no {} side", side.name()));
        }
    };
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("cannot start {}: {e}", side.name()))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let listed = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| l.starts_with("mcp__fixture__"))
        .count();
    if !output.status.success() || listed != setup.builtin {
        return Err(format!(
            "{} listed {listed} tools ({}): {}",
            side.name(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let peak_rss_mib = peak_rss_of(&command).map_err(|e| format!("{}: {e}", side.name()))?;
    Ok((ms, peak_rss_mib))
}

/// The peak RSS in MiB of `command` run once more to its end, through
/// `mcpbox-bench peak-rss` (see [`peak_rss_main`]), untimed.
fn peak_rss_of(command: &Command) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut spawner = Command::new(exe);
    spawner
        .arg("peak-rss")
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => spawner.env(name, value),
            None => spawner.env_remove(name),
        };
    }
    let output = spawner
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the peak-rss spawner: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    let kib: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("the peak-rss spawner printed {text:?}"))?;
    Ok(kib / 1024.0)
}

/// `mcpbox-bench peak-rss PROGRAM ARGS…`: runs the program with its output
/// discarded and prints its peak RSS in KiB, as GNU time's `%M` does.
///
/// `wait4`'s `ru_maxrss` is the only reading of a process that has exited, and
/// it is not the program's alone: at `exec` the kernel folds in the peak of
/// the memory the process had before (the parent's, for a child started with
/// `vfork`, as std starts them). Read by the harness, which holds every
/// workload's samples, a small program reported the harness's own 234 MiB. So
/// this small process, fresh from its own `exec`, starts the program and
/// reads it; its own peak, which the reading cannot go below, is checked to be
/// smaller. `rustix` wraps no `wait4`; libc's is one call.
fn peak_rss_main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let Some(program) = args.next() else {
        eprintln!("usage: mcpbox-bench peak-rss PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    match peak_rss_kib(&program, args) {
        Ok(kib) => {
            println!("{kib}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// Runs `program` to its end (no input, output discarded) and reads its peak
/// RSS in KiB with `wait4`, refused when it is not above this process's own
/// (see [`peak_rss_main`]).
fn peak_rss_kib(program: &str, args: impl Iterator<Item = String>) -> Result<f64, String> {
    let own_kib = worker::peak_rss_mib().map_or(f64::MAX, |mib| mib * 1024.0);
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| "a pid out of range".to_owned())?;
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills; `child` is ours, not yet
    // reaped, and not waited on again (std's `Child` does not wait on drop).
    #[allow(unsafe_code)]
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::wait4(pid, &mut status, 0, &mut usage), usage)
    };
    if reaped != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!("{program} failed (wait status {status:#x})"));
    }
    let peak_kib = usage.ru_maxrss as f64;
    if peak_kib <= own_kib {
        return Err(format!(
            "{program}'s peak RSS reads {peak_kib} KiB, not above this spawner's own {own_kib} KiB"
        ));
    }
    Ok(peak_kib)
}

/// Median, min and max.
fn summary(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Some((median, sorted[0], sorted[n - 1]))
}

fn number(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{value:.0}")
    } else if value >= 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn cell(samples: Option<&Samples>, metric: &str, unit: &str) -> (String, Option<f64>) {
    let Some(samples) = samples else {
        return ("–".into(), None);
    };
    let values = samples
        .metrics
        .get(metric)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let failed = samples.failures.len();
    let text = match summary(values) {
        Some((median, min, max)) => {
            let mut text = format!(
                "{} {unit} ({}–{})",
                number(median),
                number(min),
                number(max)
            );
            if failed > 0 {
                text.push_str(&format!(", {failed} failed"));
            }
            text
        }
        None => match samples.failures.first() {
            Some(first) => format!("{failed}/{failed} failed: {}", markdown_text(first)),
            None => "–".into(),
        },
    };
    (text, summary(values).map(|s| s.0))
}

/// Whether any sample of the row's workload carries its metric or failed: rows
/// of metrics only some runs take (`allocs_per_call`) are left out of the others.
fn reported(samples: &BTreeMap<(Workload, Side), Samples>, row: &Row) -> bool {
    samples.iter().any(|((workload, _), s)| {
        *workload == row.workload && (!s.failures.is_empty() || s.metrics.contains_key(row.metric))
    })
}

/// Writes the W table (Markdown) to `out`; returns the labels of missed targets.
fn table(
    args: &Args,
    samples: &BTreeMap<(Workload, Side), Samples>,
    out: &mut String,
) -> Vec<&'static str> {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} repetitions, interleaved; median (min–max) per side; ratio = mcpbox/rmcp of the medians",
        args.reps
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| workload | mcpbox | rmcp | ratio | target | met? | raw client |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let mut missed = Vec::new();
    for row in ROWS
        .iter()
        .filter(|r| args.only.contains(&r.workload) && reported(samples, r))
    {
        let mine = samples.get(&(row.workload, Side::Mcpbox));
        let theirs = samples.get(&(row.workload, Side::Rmcp));
        let (mine_text, mine_median) = cell(mine, row.metric, row.unit);
        let (theirs_text, theirs_median) = cell(theirs, row.metric, row.unit);
        let ratio = mine_median.zip(theirs_median).map(|(a, b)| a / b);
        let mine_failed = mine.is_none_or(|s| !s.failures.is_empty());
        let (raw, raw_median) = cell(
            samples.get(&(row.workload, Side::Raw)),
            row.metric,
            row.unit,
        );
        let (target, met) = match row.target {
            Target::None => ("–".to_owned(), None),
            Target::RatioAtMost(limit) => (format!("≤ {limit}"), ratio.map(|r| r <= limit)),
            Target::RawAtMost(limit) => match mine_median.zip(raw_median).map(|(a, b)| a / b) {
                Some(r) => (format!("≤ {limit}× raw ({r:.2})"), Some(r <= limit)),
                None => (format!("≤ {limit}× raw"), None),
            },
            Target::RatioAtLeast(limit) => (format!("≥ {limit}"), ratio.map(|r| r >= limit)),
            Target::ValueAtMost(limit) => (
                format!("mcpbox ≤ {} ms", number(limit)),
                mine_median.map(|v| v <= limit),
            ),
            Target::Completes => ("mcpbox completes".to_owned(), Some(!mine_failed)),
        };
        let met = match met {
            Some(true) if !mine_failed => "yes",
            None => "–",
            _ => {
                missed.push(row.label);
                "NO"
            }
        };
        let ratio = ratio.map_or("–".into(), |r| format!("{r:.2}"));
        let _ = writeln!(
            out,
            "| {} | {mine_text} | {theirs_text} | {ratio} | {target} | {met} | {raw} |",
            row.label
        );
    }
    if args.policy {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "policy: W1 with the fixture in a sandbox, the others with {} permission rules; \
             ratio = mcpbox+policy/mcpbox of the medians",
            worker::POLICY_RULES
        );
        side_table(args, samples, Side::Policy, out);
    }
    if args.metrics {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "metrics: mcpbox with Options::metrics on; ratio = mcpbox+metrics/mcpbox of the medians"
        );
        side_table(args, samples, Side::Metrics, out);
    }
    missed
}

/// Plain mcpbox against `side` (a variant of mcpbox), workload by workload.
fn side_table(
    args: &Args,
    samples: &BTreeMap<(Workload, Side), Samples>,
    side: Side,
    out: &mut String,
) {
    let _ = writeln!(out);
    let _ = writeln!(out, "| workload | mcpbox | {} | ratio |", side.name());
    let _ = writeln!(out, "|---|---|---|---|");
    for row in ROWS.iter().filter(|r| {
        args.only.contains(&r.workload)
            && r.workload != Workload::ColdProcess
            && reported(samples, r)
    }) {
        let (plain, plain_median) = cell(
            samples.get(&(row.workload, Side::Mcpbox)),
            row.metric,
            row.unit,
        );
        let (variant, variant_median) =
            cell(samples.get(&(row.workload, side)), row.metric, row.unit);
        let ratio = variant_median
            .zip(plain_median)
            .map_or("–".into(), |(a, b)| format!("{:.3}", a / b));
        let _ = writeln!(out, "| {} | {plain} | {variant} | {ratio} |", row.label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component this bench does not load (unstamped, and changed before a
    /// round that would have stamped it) is not waited for; one that may be
    /// this run's, changed since, is.
    #[test]
    fn components_no_run_loads_are_not_waited_for() {
        let dir = std::env::temp_dir().join(format!("mcpbox-bench-stamps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let now = SystemTime::now();
        assert!(!all_stamped(&dir, now), "nothing compiled yet");
        std::fs::write(dir.join("ours.cwasm"), "").unwrap();
        assert!(!all_stamped(&dir, now + STAMPED_AFTER), "none stamped");
        std::fs::write(dir.join("ours.cwasm.verified"), "").unwrap();
        assert!(all_stamped(&dir, now));
        std::fs::write(dir.join("foreign.cwasm"), "").unwrap();
        assert!(
            !all_stamped(&dir, now),
            "changed during the round: maybe ours"
        );
        assert!(all_stamped(
            &dir,
            now + STAMPED_AFTER + Duration::from_secs(1)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(summary(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(summary(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(summary(&[]), None);
    }

    #[test]
    fn sleep_plan_covers_the_range_in_a_fixed_order() {
        let plan = worker::sleep_plan();
        assert_eq!(plan.len(), worker::SLEEPS);
        assert_eq!(plan.iter().max(), Some(&worker::LONGEST_SLEEP_MS));
        assert_eq!(plan.iter().min(), Some(&0));
        assert_eq!(plan, worker::sleep_plan());
        assert_ne!(plan.last(), Some(&worker::LONGEST_SLEEP_MS));
    }

    #[test]
    fn the_policy_side_configures_a_sandbox_or_a_thousand_rules() {
        let fixture = std::path::Path::new("/bin/fixture");
        let w1: serde_json::Value =
            serde_json::from_str(&worker::policy_config(fixture, Workload::Connect, 20)).unwrap();
        assert_eq!(w1["mcpServers"]["fixture"]["sandbox"]["network"], false);
        assert!(w1.get("permissions").is_none());
        let w2: serde_json::Value =
            serde_json::from_str(&worker::policy_config(fixture, Workload::Sequential, 20))
                .unwrap();
        let rules: usize = ["allow", "ask", "deny"]
            .iter()
            .map(|k| w2["permissions"][k].as_array().unwrap().len())
            .sum();
        assert_eq!(rules, worker::POLICY_RULES);
        assert!(w2["mcpServers"]["fixture"].get("sandbox").is_none());
    }

    /// The page `--markdown` writes: the command, the machine, the tables as
    /// printed (medians, spreads, ratios, targets), a failure's text kept inside
    /// its cell, and the verdict.
    #[test]
    fn a_run_is_written_as_markdown() {
        let args = [
            "--reps",
            "3",
            "--only",
            "W2,W6",
            "--markdown",
            "docs/benchmarks.md",
        ];
        let command = command_line(&args.map(String::from));
        assert_eq!(
            command,
            "mcpbox-bench --reps 3 --only W2,W6 --markdown docs/benchmarks.md"
        );
        let args = parse_args(args.map(String::from).into_iter()).unwrap();
        assert_eq!(args.markdown, Some(PathBuf::from("docs/benchmarks.md")));
        let measured = |metric: &str, values: &[f64]| Samples {
            metrics: BTreeMap::from([(metric.to_owned(), values.to_vec())]),
            failures: Vec::new(),
        };
        let samples = BTreeMap::from([
            (
                (Workload::Sequential, Side::Mcpbox),
                measured("us_per_call", &[80.0, 90.5, 85.25]),
            ),
            (
                (Workload::Sequential, Side::Rmcp),
                measured("us_per_call", &[70.0, 75.0, 72.0]),
            ),
            (
                (Workload::Sequential, Side::Raw),
                measured("us_per_call", &[58.0, 60.0, 59.0]),
            ),
            (
                (Workload::HugeList, Side::Mcpbox),
                measured("ms", &[800.0, 820.0, 810.0]),
            ),
            (
                (Workload::HugeList, Side::Rmcp),
                Samples {
                    metrics: BTreeMap::new(),
                    failures: vec!["hung: no list | within 10 s".to_owned(); 3],
                },
            ),
        ]);
        let mut tables = String::new();
        let missed = table(&args, &samples, &mut tables);
        assert_eq!(missed, ["W2 sequential echo", "W2 over the raw client"]);
        let expected = "
3 repetitions, interleaved; median (min–max) per side; ratio = mcpbox/rmcp of the medians

| workload | mcpbox | rmcp | ratio | target | met? | raw client |
|---|---|---|---|---|---|---|
| W2 sequential echo | 85.25 µs/call (80.00–90.50) | 72.00 µs/call (70.00–75.00) | 1.18 | ≤ 0.9 | NO | 59.00 µs/call (58.00–60.00) |
| W2 over the raw client | 85.25 µs/call (80.00–90.50) | 72.00 µs/call (70.00–75.00) | 1.18 | ≤ 1.25× raw (1.44) | NO | 59.00 µs/call (58.00–60.00) |
| W6 17.6 MB tools/list | 810.0 ms (800.0–820.0) | 3/3 failed: hung: no list \\| within 10 s | – | mcpbox completes | yes | – |
| W6 peak RSS | – | 3/3 failed: hung: no list \\| within 10 s | – | – | – | – |
";
        assert_eq!(tables, expected);

        let about = [
            "machine: Some CPU, 2 cores, Linux 6.1".to_owned(),
            "load average at start: 0.10 0.20 0.30".to_owned(),
        ];
        let page = markdown_page(
            &command,
            &about,
            &tables,
            "targets missed: W2 sequential echo, W2 over the raw client",
        );
        let head = "# Benchmark results

Generated by `mcpbox-bench --markdown`; do not edit it by hand. Run the command below again, on a quiet machine, to replace it. How the figures are taken, the workloads, the targets and where the time goes: [PERFORMANCE.md](PERFORMANCE.md).

- command: `mcpbox-bench --reps 3 --only W2,W6 --markdown docs/benchmarks.md`
- machine: Some CPU, 2 cores, Linux 6.1
- load average at start: 0.10 0.20 0.30
";
        assert_eq!(
            page,
            format!(
                "{head}{expected}\ntargets missed: W2 sequential echo, W2 over the raw client\n"
            )
        );
    }

    /// W1c's peak RSS, read of real processes: a Python that fills 256 MiB
    /// reads about that (not the test process's own peak, which the kernel
    /// folds into a child's), and a program smaller than the test process is
    /// refused rather than reported as the test process's size.
    #[test]
    fn peak_rss_reads_the_program_not_its_parent() {
        let fill = |mib: usize| {
            let code = format!("b = bytearray({mib} << 20)\nb[::4096] = b'x' * len(b[::4096])");
            peak_rss_kib("python3", ["-c".to_owned(), code].into_iter())
        };
        let kib = fill(256).unwrap();
        assert!(
            (256.0 * 1024.0..320.0 * 1024.0).contains(&kib),
            "a 256 MiB Python read as {kib} KiB"
        );
        // Ballast, so the test process is surely larger than `true`.
        let ballast = vec![1u8; 64 << 20];
        let small = peak_rss_kib("true", std::iter::empty());
        assert!(small.is_err(), "`true` read as {small:?}");
        drop(ballast);
    }

    #[test]
    fn the_command_line_is_quoted_for_a_shell() {
        let args = ["--only", "W2", "--markdown", "my results.md", "it's"].map(String::from);
        assert_eq!(
            command_line(&args),
            r"mcpbox-bench --only W2 --markdown 'my results.md' 'it'\''s'"
        );
    }

    #[test]
    fn arguments_parse() {
        let args =
            parse_args(["--quick", "--only", "w2,W3"].map(String::from).into_iter()).unwrap();
        assert_eq!(args.reps, 3);
        assert_eq!(args.only, vec![Workload::Sequential, Workload::Concurrent]);
        assert!(args.gateway.is_empty());
        assert!(parse_args(["--only", "W9"].map(String::from).into_iter()).is_err());
        let args = parse_args(["--gateway"].map(String::from).into_iter()).unwrap();
        assert!(args.only.is_empty());
        assert_eq!(args.gateway, gateway::Workload::ALL);
        let args = parse_args(["--only", "W2,g2"].map(String::from).into_iter()).unwrap();
        assert_eq!(args.only, vec![Workload::Sequential]);
        assert_eq!(args.gateway, vec![gateway::Workload::Concurrent]);
    }
}
