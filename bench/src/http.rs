//! The remote workloads (H1–H3): mcpbox over Streamable HTTP against the pinned
//! reference servers of `tests/peers` (installed by `scripts/install-peers`).
//!
//! These rows measure mcpbox alone: rmcp's HTTP client sits behind features this
//! crate does not build, and the point is to compare mcpbox with itself when its
//! HTTP path changes (before contract 0.2.0 the host spoke MCP over HTTP with
//! reqwest; since, the guest does, over `wasi:http`, and the host only moves the
//! bytes). The server starts before the clock, in the worker, one per sample;
//! only the client's time and CPU are measured (the server is another process).
//!
//! | id | server | era | workload |
//! |----|--------|-----|----------|
//! | H1 | `@modelcontextprotocol/server-everything` | 2025-11-25, a session, answers as event streams | 500 sequential `echo` calls |
//! | H2 | the same | the same | 200 `echo` calls in flight |
//! | H3 | `tests/peers/ts_server.mjs` (TypeScript SDK v2) | 2026-07-28, stateless, `Mcp-Method`/`Mcp-Name` headers | 500 sequential `greet` calls |

use std::sync::Arc;
use std::time::Instant;

use mcpbox_tests::http::{EverythingMode, everything_http, ts_http};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::worker::{BoxError, Job, Metrics, process_cpu};
use crate::{Side, Workload};

/// Sequential calls in H1 and H3.
pub const HTTP_SEQUENTIAL_CALLS: usize = 500;
/// Calls in flight at once in H2.
pub const HTTP_CONCURRENT_CALLS: usize = 200;
/// Calls before the clock starts (connections made, caches warm).
const HTTP_WARM_UP_CALLS: usize = 50;

/// What a workload's server is asked, and what it must answer.
struct Peer {
    tool: &'static str,
    protocol_version: &'static str,
    arguments: fn(&str) -> Value,
    answer: fn(&str) -> String,
}

const EVERYTHING: Peer = Peer {
    tool: "mcp__remote__echo",
    protocol_version: "2025-11-25",
    arguments: |text| json!({ "message": text }),
    answer: |text| format!("Echo: {text}"),
};

const TS_PEER: Peer = Peer {
    tool: "mcp__remote__greet",
    protocol_version: "2026-07-28",
    arguments: |text| json!({ "name": text }),
    answer: |text| format!("Hello, {text}!"),
};

/// Runs one sample of H1, H2 or H3.
pub async fn run(job: &Job) -> Result<Metrics, BoxError> {
    if job.side != Side::Mcpbox {
        return Err("the HTTP workloads measure mcpbox alone".into());
    }
    let workload = job.workload;
    // The helpers block until the server listens (and panic if it cannot start).
    let server = tokio::task::spawn_blocking(move || match workload {
        Workload::HttpStateless => ts_http(),
        _ => everything_http(EverythingMode::StreamableHttp),
    })
    .await
    .map_err(|e| format!("the server did not start: {e}"))?;
    let peer = match workload {
        Workload::HttpStateless => &TS_PEER,
        _ => &EVERYTHING,
    };
    let config = json!({ "mcpServers": { "remote": { "type": "http", "url": server.url } } });
    let runtime = mcpbox::Options::from_config_text("bench.mcp.json", config.to_string())
        .cache_dir(Some(job.cache_dir.clone()))
        .open()
        .await?;
    let servers = runtime.ready().await;
    let status = servers
        .iter()
        .find(|s| s.name == "remote")
        .ok_or("no server `remote`")?;
    if status.state != mcpbox::ServerState::Connected
        || status.protocol_version.as_deref() != Some(peer.protocol_version)
    {
        return Err(format!(
            "server `remote` is {:?} on {:?}, expected connected on {}: {}",
            status.state,
            status.protocol_version,
            peer.protocol_version,
            status.error.as_deref().unwrap_or("")
        )
        .into());
    }
    let runtime = Arc::new(runtime);
    for i in 0..HTTP_WARM_UP_CALLS {
        call(&runtime, peer, i).await?;
    }
    let mut metrics = Metrics::new();
    let cpu = process_cpu();
    let started = Instant::now();
    if workload == Workload::HttpConcurrent {
        let mut calls = JoinSet::new();
        for i in 0..HTTP_CONCURRENT_CALLS {
            let runtime = runtime.clone();
            calls.spawn(async move { call(&runtime, peer, i).await });
        }
        while let Some(done) = calls.join_next().await {
            done??;
        }
    } else {
        for i in 0..HTTP_SEQUENTIAL_CALLS {
            call(&runtime, peer, i).await?;
        }
    }
    let wall = started.elapsed();
    let cpu = process_cpu() - cpu;
    let n = if workload == Workload::HttpConcurrent {
        HTTP_CONCURRENT_CALLS
    } else {
        HTTP_SEQUENTIAL_CALLS
    } as f64;
    if workload == Workload::HttpConcurrent {
        metrics.insert("calls_per_s", n / wall.as_secs_f64());
    } else {
        metrics.insert("us_per_call", wall.as_secs_f64() * 1e6 / n);
    }
    metrics.insert("cpu_us_per_call", cpu.as_secs_f64() * 1e6 / n);
    match Arc::try_unwrap(runtime) {
        Ok(runtime) => runtime.shutdown().await,
        Err(_) => return Err("a call task outlived its workload".into()),
    }
    drop(server);
    Ok(metrics)
}

/// One call, its answer checked.
async fn call(runtime: &mcpbox::Runtime, peer: &Peer, i: usize) -> Result<(), BoxError> {
    let text = format!("hello {i}");
    let result = runtime
        .call_tool(
            peer.tool,
            (peer.arguments)(&text),
            mcpbox::CallOptions::default(),
        )
        .await?;
    let want = (peer.answer)(&text);
    if result.text == want {
        Ok(())
    } else {
        Err(format!("{} {text:?} answered {:?}", peer.tool, result.text).into())
    }
}
