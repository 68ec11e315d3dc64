//! Resource bounds, measured in a process of their own (a child of the test
//! binary, [`mcpbox_tests::process::alone_in_a_process`]) so that no other test
//! disturbs the numbers: peak memory with a 400 MB `state.json` and on a 100 MB
//! line, memory under a flood of notifications, zombies and file descriptors
//! after 1,000 server life cycles, and memory over 100,000 calls through one
//! runtime.
//!
//! Each test runs in a process of its own because it reads process-wide
//! counters (`VmHWM`, `VmRSS`, `/proc/self/fd`); so they run side by side with
//! the others.

use std::time::{Duration, Instant};

use mcpbox::{CallOptions, Event, Options, Runtime};
use mcpbox_tests::fixture::SLEEP_STARTED;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(120);

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_fixture-server")
}

async fn open(servers: Value) -> Runtime {
    let text = json!({ "mcpServers": servers }).to_string();
    let runtime = Options::from_config_text("limits.json", text)
        .open()
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .unwrap();
    runtime
}

async fn call(
    runtime: &Runtime,
    tool: &str,
    args: Value,
) -> Result<mcpbox::CallResult, mcpbox::CallError> {
    tokio::time::timeout(
        PATIENCE,
        runtime.call_tool(tool, args, CallOptions::default()),
    )
    .await
    .unwrap()
}

/// A `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Children of this process that have exited but were not reaped.
fn zombies() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid …; comm may hold spaces, so split after ')'.
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let mut fields = rest.split_whitespace();
            fields.next() == Some("Z") && fields.next() == Some(me.as_str())
        })
        .count()
}

/// Runs `step` alone in a child process of the test binary, on a runtime of
/// its own: the step reads its process's counters, which no other test moves.
fn alone<F: std::future::Future<Output = ()>>(name: &str, step: impl FnOnce() -> F) {
    mcpbox_tests::process::alone(module_path!(), name, step);
}

#[test]
fn a_huge_state_file_is_not_read() {
    alone("a_huge_state_file_is_not_read", huge_state_file);
}

#[test]
fn a_hundred_megabyte_line_is_refused_within_bounded_memory() {
    alone(
        "a_hundred_megabyte_line_is_refused_within_bounded_memory",
        hundred_megabyte_line,
    );
}

#[test]
fn a_notification_flood_does_not_grow_memory() {
    alone(
        "a_notification_flood_does_not_grow_memory",
        notification_flood,
    );
}

#[test]
fn a_thousand_server_life_cycles_leave_no_zombie_and_no_descriptor() {
    alone(
        "a_thousand_server_life_cycles_leave_no_zombie_and_no_descriptor",
        life_cycles,
    );
}

#[test]
fn a_hundred_thousand_calls_do_not_grow_memory() {
    alone("a_hundred_thousand_calls_do_not_grow_memory", soak);
}

#[test]
fn calls_in_flight_on_a_crashing_server_fail_promptly() {
    alone(
        "calls_in_flight_on_a_crashing_server_fail_promptly",
        crash_with_calls_in_flight,
    );
}

/// A 400 MB `state.json` in the cache directory is not
/// read: opening a runtime over it costs no more memory than over a small one,
/// a warning says why, and the servers work.
async fn huge_state_file() {
    let root = std::env::temp_dir().join(format!("mcpbox-limits-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let text = json!({ "mcpServers": { "fx": { "command": fixture() } } }).to_string();
    let open = || {
        Options::from_config_text("limits.json", text.clone())
            .cache_dir(Some(root.join("cache")))
            .config_dir(Some(root.join("config")))
            .open()
    };
    // The first open compiles the guest into the cache: its peak is not the file's.
    let runtime = open().await.unwrap();
    tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .unwrap();
    call(&runtime, "mcp__fx__echo", json!({"text": "warm"}))
        .await
        .unwrap();
    runtime.shutdown().await;
    // Sparse: 400 MB that take no disk space.
    std::fs::File::create(root.join("cache/state.json"))
        .unwrap()
        .set_len(400_000_000)
        .unwrap();
    let before = status_kib("VmHWM:");
    let runtime = open().await.unwrap();
    tokio::time::timeout(PATIENCE, runtime.ready())
        .await
        .unwrap();
    let echoed = call(&runtime, "mcp__fx__echo", json!({"text": "ok"}))
        .await
        .unwrap();
    let peak_growth_mib = (status_kib("VmHWM:") - before) / 1024;
    println!("400 MB state.json: peak RSS grew by {peak_growth_mib} MiB");
    assert_eq!(echoed.text, "ok");
    assert!(
        runtime
            .startup_warnings()
            .iter()
            .any(|w| w.contains("400000000 bytes")),
        "{:?}",
        runtime.startup_warnings()
    );
    assert!(
        peak_growth_mib < 64,
        "peak memory grew by {peak_growth_mib} MiB"
    );
    runtime.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
}

/// A 100 MB line is refused with a clear error, and the host's peak memory grows
/// by less than twice the (default, 64 MiB) cap while it is read and dropped.
async fn hundred_megabyte_line() {
    let runtime = open(json!({ "big": { "command": fixture() } })).await;
    call(&runtime, "mcp__big__echo", json!({"text": "warm"}))
        .await
        .unwrap();
    let before = status_kib("VmHWM:");
    let err = call(&runtime, "mcp__big__huge", json!({"bytes": 100_000_000}))
        .await
        .unwrap_err();
    let peak_growth_mib = (status_kib("VmHWM:") - before) / 1024;
    let message = err.to_string();
    println!("100 MB line: {message}; peak RSS grew by {peak_growth_mib} MiB");
    assert!(
        message.contains("too large") && message.contains("100000"),
        "{message}"
    );
    assert!(
        peak_growth_mib < 128,
        "peak memory grew by {peak_growth_mib} MiB"
    );
    assert_eq!(
        call(&runtime, "mcp__big__echo", json!({"text": "ok"}))
            .await
            .unwrap()
            .text,
        "ok"
    );
    runtime.shutdown().await;
}

/// Floods of log notifications pass through bounded queues: memory after the
/// second flood is about what it was after the first.
async fn notification_flood() {
    let runtime = open(json!({ "flood": { "command": fixture() } })).await;
    let _slow_listener = runtime.events(); // never read: it lags, nothing piles up
    call(&runtime, "mcp__flood__flood", json!({"count": 100_000}))
        .await
        .unwrap();
    let after_first = status_kib("VmRSS:");
    for _ in 0..3 {
        call(&runtime, "mcp__flood__flood", json!({"count": 100_000}))
            .await
            .unwrap();
    }
    let after_more = status_kib("VmRSS:");
    println!("flood: RSS {after_first} KiB after 100k notifications, {after_more} KiB after 400k");
    assert!(
        after_more < after_first + after_first / 10,
        "{after_first} KiB → {after_more} KiB"
    );
    runtime.shutdown().await;
}

/// 1,000 servers started, crashed and cleaned up leave no zombie and no
/// growth in open file descriptors.
async fn life_cycles() {
    const CYCLES: usize = 1000;
    const AT_ONCE: usize = 8;
    let cycle = || async {
        let runtime = open(json!({ "c": { "command": fixture() } })).await;
        let err = call(&runtime, "mcp__c__crash", json!({"code": 3}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("exit code 3"), "{err}");
        runtime.shutdown().await;
    };
    // Warm up: the engine, the epoch thread and tokio's own descriptors exist now.
    for _ in 0..AT_ONCE {
        cycle().await;
    }
    let fds_before = open_fds();
    let started = Instant::now();
    for _ in 0..CYCLES / AT_ONCE {
        let batch: Vec<_> = (0..AT_ONCE).map(|_| tokio::spawn(cycle())).collect();
        for task in batch {
            task.await.unwrap();
        }
    }
    // Reaping happens on the supervisors' tasks after `shutdown` returns, and no
    // event reports a reaped child or a closed descriptor: poll the counts until
    // they settle, under a deadline (the interval orders nothing, it only paces).
    let settled = tokio::time::timeout(PATIENCE, async {
        while zombies() > 0 || open_fds() > fds_before {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let (z, fds) = (zombies(), open_fds());
    println!(
        "{CYCLES} start/crash cycles in {:.1} s: {z} zombies, {fds_before} → {fds} open fds",
        started.elapsed().as_secs_f64()
    );
    assert!(
        settled.is_ok(),
        "{z} zombies and {fds} fds (was {fds_before}) after {CYCLES} cycles"
    );
}

/// 100,000 calls through one runtime (8 callers at once): resident memory after
/// warm-up grows by at most 5%.
async fn soak() {
    const CALLS: usize = 100_000;
    const CALLERS: usize = 8;
    const SAMPLE_EVERY: usize = 10_000;
    let runtime = open(json!({ "soak": { "command": fixture() } })).await;
    let started = Instant::now();
    let mut curve = Vec::new();
    for round in 0..CALLS / SAMPLE_EVERY {
        let callers: Vec<_> = (0..CALLERS)
            .map(|c| {
                let runtime = runtime.clone();
                tokio::spawn(async move {
                    for i in 0..SAMPLE_EVERY / CALLERS {
                        let text = format!("{round}/{c}/{i}");
                        let r = runtime.call_tool(
                            "mcp__soak__echo",
                            json!({ "text": text }),
                            CallOptions::default(),
                        );
                        assert_eq!(r.await.unwrap().text, text);
                    }
                })
            })
            .collect();
        for caller in callers {
            tokio::time::timeout(PATIENCE, caller)
                .await
                .unwrap()
                .unwrap();
        }
        curve.push(status_kib("VmRSS:"));
    }
    let elapsed = started.elapsed();
    println!(
        "soak: {CALLS} calls in {:.1} s ({:.0} µs/call); RSS KiB every {SAMPLE_EVERY} calls: {curve:?}",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / CALLS as f64
    );
    let warm = curve[1];
    let last = *curve.last().unwrap();
    assert!(
        last <= warm + warm / 20,
        "RSS grew from {warm} KiB to {last} KiB after warm-up: {curve:?}"
    );
    runtime.shutdown().await;
}

/// When a server dies, every call pending on it fails promptly with the exit
/// reason. The time is printed (measured, not asserted: the guarantee tested is
/// the outcome).
async fn crash_with_calls_in_flight() {
    const CALLS: usize = 10;
    let runtime =
        open(json!({ "c": { "command": fixture(), "args": ["--announce-sleeps"] } })).await;
    let mut events = runtime.events();
    let pending: Vec<_> = (0..CALLS)
        .map(|_| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let r = runtime
                    .call_tool(
                        "mcp__c__sleep",
                        json!({"ms": 60_000}),
                        CallOptions::default(),
                    )
                    .await;
                (Instant::now(), r)
            })
        })
        .collect();
    // Every sleep reached the server before it crashes: it said so for each.
    tokio::time::timeout(PATIENCE, async {
        let mut started = 0;
        while started < CALLS {
            match events.recv().await {
                Ok(Event::Log {
                    server, message, ..
                }) if server == "c" && message == SLEEP_STARTED => {
                    started += 1;
                }
                Ok(_) => {}
                Err(e) => panic!("the event stream failed: {e}"),
            }
        }
    })
    .await
    .expect("every sleep call reaches the server");
    let crashed_at = Instant::now();
    let _ = call(&runtime, "mcp__c__crash", json!({"code": 3})).await;
    let mut slowest = Duration::ZERO;
    for task in pending {
        let (at, result) = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
        let err = result.unwrap_err();
        assert!(err.to_string().contains("exit code 3"), "{err}");
        slowest = slowest.max(at.duration_since(crashed_at));
    }
    println!(
        "crash: {CALLS} pending calls failed within {:.1} ms of the crash call",
        slowest.as_secs_f64() * 1e3
    );
    runtime.shutdown().await;
}
