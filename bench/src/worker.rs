//! One measurement, run in a process of its own.
//!
//! The harness re-executes itself as `mcpbox-bench worker SIDE WORKLOAD …` for
//! every sample, so that each sample starts from a fresh process (fresh
//! allocator, fresh tokio runtime, nothing left over from the other side) and
//! its peak RSS (`VmHWM`) is its own. The worker prints one JSON object of
//! metrics on stdout, or an error on stderr with a non-zero exit.
//!
//! Both sides talk to the same fixture server binary with the same arguments,
//! on a tokio multi-thread runtime with default settings, through their public
//! client APIs: mcpbox through [`mcpbox::Runtime`] (the guest component, as an
//! embedder runs it), rmcp through `().serve(TokioChildProcess)`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::{Side, Workload};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Metrics of one sample, by name.
pub type Metrics = BTreeMap<&'static str, f64>;

/// What a worker needs to know.
#[derive(Debug, Clone)]
pub struct Job {
    pub side: Side,
    pub workload: Workload,
    pub fixture: PathBuf,
    pub cache_dir: PathBuf,
    /// How many tools the fixture lists without `--tools` (its built-in ones).
    pub builtin: usize,
}

/// Calls in the sequential workload (W2).
pub const SEQUENTIAL_CALLS: usize = 2_000;
/// Calls in flight at once (W3).
pub const CONCURRENT_CALLS: usize = 1_000;
/// Concurrent sleeps (W5) and the longest of them in ms.
pub const SLEEPS: usize = 200;
pub const LONGEST_SLEEP_MS: u64 = 50;
/// Tools in the big list (W4): the fixture's built-in tools plus echo-like ones.
pub const BIG_LIST_TOOLS: usize = 10_000;
/// Echo-like tools for the huge list (W6): one `tools/list` line of 17.6 MB.
pub const HUGE_LIST_EXTRA_TOOLS: usize = 71_000;
/// How long the huge list may take before a side is reported as hung.
pub const HUGE_LIST_PATIENCE: Duration = Duration::from_secs(10);
/// Warm-up calls before the timed part of W2 and W3.
const WARM_UP_CALLS: usize = 100;

/// The fixture's arguments for a workload.
pub fn fixture_args(workload: Workload, builtin: usize) -> Vec<String> {
    match workload {
        Workload::BigList | Workload::Adapt => vec![
            "--tools".into(),
            BIG_LIST_TOOLS.saturating_sub(builtin).to_string(),
        ],
        Workload::HugeList => vec!["--tools".into(), HUGE_LIST_EXTRA_TOOLS.to_string()],
        _ => Vec::new(),
    }
}

/// The tool count a side must see for a workload.
fn expected_tools(workload: Workload, builtin: usize) -> usize {
    match workload {
        Workload::BigList | Workload::Adapt => BIG_LIST_TOOLS.max(builtin),
        Workload::HugeList => builtin + HUGE_LIST_EXTRA_TOOLS,
        _ => builtin,
    }
}

/// The `.mcp.json` that points mcpbox at the fixture.
pub fn mcpbox_config(fixture: &std::path::Path, workload: Workload, builtin: usize) -> String {
    let mut entry = json!({
        "command": fixture.display().to_string(),
        "args": fixture_args(workload, builtin),
    });
    if workload == Workload::HugeList {
        // 71,000 tools in 17.6 MB are past the default limits (10,000 tools,
        // 16 MiB), as a user with such a server would raise them.
        entry["limits"] = json!({"maxTools": 100_000, "maxListBytes": 32 << 20});
    }
    json!({"mcpServers": {"fixture": entry}}).to_string()
}

/// How many permission rules `mcpbox+policy` configures.
pub const POLICY_RULES: usize = 1_000;

/// The `.mcp.json` of `mcpbox+policy`: [`mcpbox_config`] with the policy feature
/// whose cost the workload shows. W1 (a server's start): the fixture in a sandbox
/// (no paths granted, no network). Every other workload (calls): [`POLICY_RULES`]
/// permission rules — allow, ask and deny rules for tools the fixture does not
/// have, and an allow rule for the server, which decides every call.
pub fn policy_config(fixture: &std::path::Path, workload: Workload, builtin: usize) -> String {
    let mut config: Value = serde_json::from_str(&mcpbox_config(fixture, workload, builtin))
        .expect("mcpbox_config is JSON");
    if workload == Workload::Connect {
        config["mcpServers"]["fixture"]["sandbox"] = json!({ "network": false });
        return config.to_string();
    }
    let rules = |kind: &str, n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!("mcp__fixture__{kind}_{i}"))
            .collect()
    };
    let third = (POLICY_RULES - 1) / 3;
    let mut allow = rules("allowed", POLICY_RULES - 1 - 2 * third);
    allow.push("mcp__fixture".into());
    config["permissions"] = json!({
        "allow": allow,
        "ask": rules("asked", third),
        "deny": rules("denied", third),
    });
    config.to_string()
}

/// Runs one sample and returns its metrics.
pub async fn run(job: Job) -> Result<Metrics, BoxError> {
    let mut metrics = match job.side {
        _ if job.workload.is_http() => crate::http::run(&job).await?,
        _ if job.workload == Workload::Adapt => adapt(&job).await?,
        Side::Mcpbox | Side::Policy | Side::Metrics => Mcpbox::run(&job).await?,
        Side::Rmcp => Rmcp::run(&job).await?,
        Side::Raw => Raw::run(&job).await?,
    };
    metrics.insert("peak_rss_mib", peak_rss_mib()?);
    if std::env::var_os("MCPBOX_BENCH_SMAPS").is_some() {
        print_largest_mappings();
    }
    Ok(metrics)
}

/// The operations every workload needs, on either side.
trait Client: Sized + Send + Sync + 'static {
    /// Starts the server, initialises it and lists its tools; returns the tool count.
    async fn connect(job: &Job) -> Result<(Self, usize), BoxError>;
    /// Calls the fixture's `echo` tool and returns the text.
    fn echo(
        self: &Arc<Self>,
        text: String,
    ) -> impl Future<Output = Result<String, BoxError>> + Send;
    /// Calls the fixture's `sleep` tool and returns the text.
    fn sleep(self: &Arc<Self>, ms: u64) -> impl Future<Output = Result<String, BoxError>> + Send;
    /// Closes the connection.
    async fn close(self) -> Result<(), BoxError>;

    async fn run(job: &Job) -> Result<Metrics, BoxError> {
        let mut metrics = Metrics::new();
        let started = Instant::now();
        let connected = if job.workload == Workload::HugeList {
            tokio::time::timeout(HUGE_LIST_PATIENCE, Self::connect(job))
                .await
                .map_err(|_| {
                    format!(
                        "hung: no tool list within {} s",
                        HUGE_LIST_PATIENCE.as_secs()
                    )
                })?
        } else {
            Self::connect(job).await
        };
        let (client, tools) = connected?;
        let connect_ms = started.elapsed().as_secs_f64() * 1e3;
        let expected = expected_tools(job.workload, job.builtin);
        if tools != expected {
            return Err(format!("listed {tools} tools, expected {expected}").into());
        }
        let client = Arc::new(client);
        match job.workload {
            Workload::Connect => {
                metrics.insert("ms", connect_ms);
            }
            Workload::BigList | Workload::HugeList => {
                metrics.insert("ms", connect_ms);
                // Then one call, on every side, before the peak is read: mcpbox
                // pins a server's first list in the turn after it, which a
                // runtime in use always takes and one closed at once may skip
                // (its pins then kept by nobody), so without a call the peak
                // depended on which came first, the close or that turn.
                check_echo(&client, 0).await?;
            }
            Workload::Sequential => {
                for i in 0..WARM_UP_CALLS {
                    check_echo(&client, i).await?;
                }
                let counting = crate::allocations::start();
                let allocations = crate::allocations::count();
                let cpu = process_cpu();
                let started = Instant::now();
                for i in 0..SEQUENTIAL_CALLS * rounds() {
                    check_echo(&client, i).await?;
                }
                let wall = started.elapsed();
                let cpu = process_cpu() - cpu;
                let allocations = crate::allocations::count() - allocations;
                let n = (SEQUENTIAL_CALLS * rounds()) as f64;
                metrics.insert("us_per_call", wall.as_secs_f64() * 1e6 / n);
                metrics.insert("cpu_us_per_call", cpu.as_secs_f64() * 1e6 / n);
                if counting {
                    metrics.insert("allocs_per_call", allocations as f64 / n);
                }
            }
            Workload::Concurrent => {
                for i in 0..WARM_UP_CALLS {
                    check_echo(&client, i).await?;
                }
                let cpu = process_cpu();
                let started = Instant::now();
                for _ in 0..rounds() {
                    let mut calls = JoinSet::new();
                    for i in 0..CONCURRENT_CALLS {
                        let client = client.clone();
                        calls.spawn(async move { check_echo(&client, i).await });
                    }
                    while let Some(done) = calls.join_next().await {
                        done??;
                    }
                }
                let wall = started.elapsed();
                let cpu = process_cpu() - cpu;
                let n = (CONCURRENT_CALLS * rounds()) as f64;
                metrics.insert("calls_per_s", n / wall.as_secs_f64());
                metrics.insert("cpu_us_per_call", cpu.as_secs_f64() * 1e6 / n);
            }
            Workload::Sleeps => {
                let started = Instant::now();
                let mut calls = JoinSet::new();
                for ms in sleep_plan() {
                    let client = client.clone();
                    calls.spawn(async move {
                        let text = client.sleep(ms).await?;
                        if text == format!("slept {ms}") {
                            Ok(())
                        } else {
                            Err(BoxError::from(format!("sleep {ms} answered {text:?}")))
                        }
                    });
                }
                while let Some(done) = calls.join_next().await {
                    done??;
                }
                metrics.insert("ms", started.elapsed().as_secs_f64() * 1e3);
            }
            Workload::ColdProcess => return Err("W1c is measured by the harness".into()),
            Workload::Adapt => return Err("W4a runs in `adapt`".into()),
            Workload::HttpSequential | Workload::HttpConcurrent | Workload::HttpStateless => {
                return Err("the HTTP workloads run in http.rs".into());
            }
        }
        match Arc::try_unwrap(client) {
            Ok(client) => client.close().await?,
            Err(_) => return Err("a call task outlived its workload".into()),
        }
        Ok(metrics)
    }
}

/// W4a: the big list as W4 lists it, then converted into each provider dialect,
/// each timed (the first conversion of each is uncached), and openai once more
/// (cached); the peak RSS once listed, and (by [`run`]) once converted.
async fn adapt(job: &Job) -> Result<Metrics, BoxError> {
    let mut metrics = Metrics::new();
    let started = Instant::now();
    let (client, tools) = Mcpbox::connect(job).await?;
    metrics.insert("ms", started.elapsed().as_secs_f64() * 1e3);
    metrics.insert("listed_rss_mib", peak_rss_mib()?);
    for (dialect, metric) in [
        ("openai", "openai_ms"),
        ("openai-strict", "openai-strict_ms"),
        ("anthropic", "anthropic_ms"),
        ("gemini", "gemini_ms"),
        ("openai", "cached_ms"),
    ] {
        let started = Instant::now();
        let adapted = client.0.adapted_tools(dialect).await?;
        metrics.insert(metric, started.elapsed().as_secs_f64() * 1e3);
        let seen = adapted.tools.len() + adapted.refused.len();
        if seen != tools {
            return Err(
                format!("{dialect}: {seen} tools adapted or refused, {tools} listed").into(),
            );
        }
    }
    client.close().await?;
    Ok(metrics)
}

async fn check_echo<C: Client>(client: &Arc<C>, i: usize) -> Result<(), BoxError> {
    let text = format!("hello {i}");
    let answer = client.echo(text.clone()).await?;
    if answer == text {
        Ok(())
    } else {
        Err(format!("echo {text:?} answered {answer:?}").into())
    }
}

/// For profiling (`MCPBOX_BENCH_ROUNDS=N`): repeat the timed part of W2 and W3
/// N times, so that a profile is not dominated by start-up.
fn rounds() -> usize {
    std::env::var("MCPBOX_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// Sleep lengths 0…LONGEST_SLEEP_MS spread evenly, in a fixed shuffled order (the
/// same on both sides), so the longest sleep is not always the last one sent.
pub fn sleep_plan() -> Vec<u64> {
    let mut plan: Vec<u64> = (0..SLEEPS)
        .map(|i| i as u64 * LONGEST_SLEEP_MS / (SLEEPS as u64 - 1))
        .collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..plan.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = (state >> 33) as usize % (i + 1);
        plan.swap(i, j);
    }
    plan
}

/// CPU time of this whole process (every thread), user and system.
pub fn process_cpu() -> Duration {
    // The clock exists on every Linux this runs on; a failure would be a bug.
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map_or(Duration::ZERO, Duration::from)
}

/// The peak resident set of this process, from `/proc/self/status`.
pub(crate) fn peak_rss_mib() -> Result<f64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmHWM in /proc/self/status")?;
    Ok(kib / 1024.0)
}

/// Diagnostics (`MCPBOX_BENCH_SMAPS=1`): the mappings holding the most resident
/// memory now, on stderr, to tell the host's heap from the guest's linear memory.
fn print_largest_mappings() {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut mappings: Vec<(u64, String)> = Vec::new();
    let mut current = String::new();
    for line in smaps.lines() {
        if let Some(kib) = line.strip_prefix("Rss:") {
            let kib = kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            mappings.push((kib, current.clone()));
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|w| w.contains('-'))
        {
            current = line.to_owned();
        }
    }
    mappings.sort_by_key(|m| std::cmp::Reverse(m.0));
    let total: u64 = mappings.iter().map(|m| m.0).sum();
    eprintln!("resident now: {total} KiB; largest mappings:");
    for (kib, mapping) in mappings.iter().take(8) {
        eprintln!("{kib:>8} KiB  {mapping}");
    }
}

/// mcpbox through its embedding API.
struct Mcpbox(mcpbox::Runtime);

impl Client for Mcpbox {
    async fn connect(job: &Job) -> Result<(Self, usize), BoxError> {
        let config = if job.side == Side::Policy {
            policy_config(&job.fixture, job.workload, job.builtin)
        } else {
            mcpbox_config(&job.fixture, job.workload, job.builtin)
        };
        let mut options = mcpbox::Options::from_config_text("bench.mcp.json", config)
            .cache_dir(Some(job.cache_dir.clone()))
            .metrics(job.side == Side::Metrics);
        // For profiling: a guest built with its name section, so that perf shows
        // the guest's function names (see docs/PERFORMANCE.md).
        if let Some(guest) = std::env::var_os("MCPBOX_BENCH_GUEST") {
            options = options.guest_file(guest);
        }
        if let Some(busy_poll) = busy_poll() {
            options = options.busy_poll(busy_poll);
        }
        let runtime = options.open().await?;
        let servers = runtime.ready().await;
        if let Some(failed) = servers
            .iter()
            .find(|s| s.state != mcpbox::ServerState::Connected)
        {
            return Err(format!(
                "server {} is {:?}: {}",
                failed.name,
                failed.state,
                failed.error.as_deref().unwrap_or("")
            )
            .into());
        }
        let tools = runtime.tools().len();
        Ok((Mcpbox(runtime), tools))
    }

    fn echo(
        self: &Arc<Self>,
        text: String,
    ) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move {
            let result = this
                .0
                .call_tool(
                    "mcp__fixture__echo",
                    json!({ "text": text }),
                    mcpbox::CallOptions::default(),
                )
                .await?;
            Ok(result.text)
        }
    }

    fn sleep(self: &Arc<Self>, ms: u64) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move {
            let result = this
                .0
                .call_tool(
                    "mcp__fixture__sleep",
                    json!({ "ms": ms }),
                    mcpbox::CallOptions::default(),
                )
                .await?;
            Ok(result.text)
        }
    }

    async fn close(self) -> Result<(), BoxError> {
        // With metrics on, they must have counted the calls: the side measures them.
        if let Some(metrics) = self.0.metrics() {
            let counted: u64 = metrics.calls.iter().map(|c| c.count).sum();
            if counted == 0 {
                return Err("metrics are on but counted no call".into());
            }
        }
        self.0.shutdown().await;
        Ok(())
    }
}

/// rmcp's client over its child-process transport.
struct Rmcp(RunningService<RoleClient, ()>);

impl Rmcp {
    async fn call(&self, tool: &'static str, arguments: Value) -> Result<String, BoxError> {
        let Value::Object(arguments) = arguments else {
            return Err("arguments must be an object".into());
        };
        let result = self
            .0
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
            .await?;
        let text: Vec<&str> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        Ok(text.join("\n"))
    }
}

impl Client for Rmcp {
    async fn connect(job: &Job) -> Result<(Self, usize), BoxError> {
        let args = fixture_args(job.workload, job.builtin);
        let command = tokio::process::Command::new(&job.fixture).configure(|c| {
            c.args(&args);
        });
        let client = ().serve(TokioChildProcess::new(command)?).await?;
        let tools = client.list_all_tools().await?.len();
        Ok((Rmcp(client), tools))
    }

    fn echo(
        self: &Arc<Self>,
        text: String,
    ) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move { this.call("echo", json!({ "text": text })).await }
    }

    fn sleep(self: &Arc<Self>, ms: u64) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move { this.call("sleep", json!({ "ms": ms })).await }
    }

    async fn close(self) -> Result<(), BoxError> {
        self.0.cancel().await?;
        Ok(())
    }
}

/// The reference: a hand-written minimal client (no MCP library, no sandbox) that
/// writes NDJSON to the fixture and routes answers to callers by id. It shows how
/// much of each workload the fixture server and the OS cost on their own.
struct Raw {
    outbound: mpsc::UnboundedSender<String>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next_id: std::sync::atomic::AtomicU64,
    child: tokio::process::Child,
}

impl Raw {
    async fn request(&self, method: &str, params: Value) -> Result<Value, BoxError> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.waiting
            .lock()
            .map_err(|_| "poisoned")?
            .insert(id, reply);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.outbound.send(message.to_string())?;
        let response = answer.await?;
        response
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method} failed: {response}").into())
    }

    async fn call(&self, tool: &str, arguments: Value) -> Result<String, BoxError> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        let text: Vec<&str> = result["content"]
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
            .unwrap_or_default();
        Ok(text.join("\n"))
    }
}

impl Client for Raw {
    async fn connect(job: &Job) -> Result<(Self, usize), BoxError> {
        let mut child = tokio::process::Command::new(&job.fixture)
            .args(fixture_args(job.workload, job.builtin))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (outbound, mut queue) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            while let Some(first) = queue.recv().await {
                batch.clear();
                let mut next = Some(first);
                while let Some(line) = next {
                    batch.extend_from_slice(line.as_bytes());
                    batch.push(b'\n');
                    next = queue.try_recv().ok();
                }
                if stdin.write_all(&batch).await.is_err() {
                    return;
                }
            }
        });
        let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
        let routes = waiting.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::with_capacity(64 * 1024, stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = message.get("id").and_then(Value::as_u64) else {
                    continue;
                };
                let reply = routes.lock().ok().and_then(|mut w| w.remove(&id));
                if let Some(reply) = reply {
                    let _ = reply.send(message);
                }
            }
        });
        let client = Raw {
            outbound,
            waiting,
            next_id: std::sync::atomic::AtomicU64::new(1),
            child,
        };
        client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}),
            )
            .await?;
        client
            .outbound
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())?;
        let tools = client.request("tools/list", json!({})).await?;
        let count = tools["tools"].as_array().map_or(0, Vec::len);
        Ok((client, count))
    }

    fn echo(
        self: &Arc<Self>,
        text: String,
    ) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move { this.call("echo", json!({ "text": text })).await }
    }

    fn sleep(self: &Arc<Self>, ms: u64) -> impl Future<Output = Result<String, BoxError>> + Send {
        let this = self.clone();
        async move { this.call("sleep", json!({ "ms": ms })).await }
    }

    async fn close(mut self) -> Result<(), BoxError> {
        drop(self.outbound);
        self.child.wait().await?;
        Ok(())
    }
}

/// `MCPBOX_BENCH_BUSY_POLL=MICROSECONDS`: mcpbox's busy poll in workers and
/// gateway routes (`Options::busy_poll`, `--busy-poll`), to compare it with the
/// default in one build.
pub(crate) fn busy_poll() -> Option<std::time::Duration> {
    let micros = std::env::var("MCPBOX_BENCH_BUSY_POLL").ok()?;
    match micros.trim().parse() {
        Ok(micros) => Some(std::time::Duration::from_micros(micros)),
        Err(_) => {
            eprintln!(
                "note: MCPBOX_BENCH_BUSY_POLL={micros:?} is not a number of microseconds; \
                 mcpbox runs with its default"
            );
            None
        }
    }
}
