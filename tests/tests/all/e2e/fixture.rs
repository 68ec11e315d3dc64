//! The registry against the workspace's fixture server: negotiation, paging,
//! naming, collisions, failures beside working servers, results, timeouts,
//! list changes and argument validation.

use std::time::Duration;

use mcpbox::{CallError, CallOptions, Event, ServerState};
use serde_json::json;

use crate::{
    PATIENCE, assert_connected, assert_no_guest_restart, call, fixture, fixture_entry, next_event,
    open, ready, status,
};

#[tokio::test(flavor = "multi_thread")]
async fn echo_round_trip_and_status() {
    let runtime = open(json!({ "fx": fixture_entry(&["--name", "fixture-one"]) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "fx");
    let fx = status(&servers, "fx");
    assert_eq!(fx.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(fx.server_name.as_deref(), Some("fixture-one"));
    assert_eq!(fx.transport, "stdio");
    assert_eq!(fx.tool_count as usize, runtime.tools().len());

    let result = call(&runtime, "mcp__fx__echo", json!({"text": "hello"}))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.text, "hello");
    let content: serde_json::Value = serde_json::from_str(result.content.get()).unwrap();
    assert_eq!(content, json!([{"type": "text", "text": "hello"}]));

    let sum = call(&runtime, "mcp__fx__add", json!({"a": 2, "b": 3.5}))
        .await
        .unwrap();
    assert_eq!(sum.structured_value().unwrap(), Some(json!({"sum": 5.5})));
    runtime.shutdown().await;
}

/// The driver runs on its own thread from the moment the runtime opens, so
/// its first servers may connect before the opener subscribes with
/// [`mcpbox::Runtime::events`]: a subscription made with the options sees their
/// events all the same. (Whether a later one misses them depends on when the
/// opener gets to subscribe: the server's status can show it connected a moment
/// before its event is sent, so only the early subscription's promise is checked.)
#[tokio::test(flavor = "multi_thread")]
async fn events_subscribed_before_opening_include_the_first_servers() {
    let text = json!({ "mcpServers": { "fx": fixture_entry(&[]) } }).to_string();
    let mut options = mcpbox::Options::from_config_text("early.mcp.json", text);
    let mut early = options.subscribe();
    let runtime = options.open().await.expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "fx");
    next_event(
        &mut early,
        |e| matches!(e, Event::Status(s) if s.name == "fx" && s.state == ServerState::Connected),
    )
    .await;
    runtime.shutdown().await;
}

/// A sequential call to a stdio server is two turns, each one entry into the
/// guest: the step that sends the request and the step that takes the answer.
/// The driver hands the guest what arrived and writes what it returned, so the
/// guest calls none of the `transport` imports (`send`, `receive`, `subscribe`).
/// And the driver reads each answer with one `read`: a read that leaves room in
/// its buffer emptied the pipe, and the driver's poll announces the next bytes,
/// so no second read waits to hear `WouldBlock`. Reads are counted on the driver
/// thread (`syscr` in `/proc/self/task/TID/io`), alone in a process so that the
/// one `mcpbox-driver` thread is this runtime's.
#[test]
fn a_sequential_call_crosses_into_the_guest_twice_and_reads_its_answer_once() {
    mcpbox_tests::process::alone(
        module_path!(),
        "a_sequential_call_crosses_into_the_guest_twice_and_reads_its_answer_once",
        || async {
            const CALLS: u64 = 200;
            let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
            assert_connected(&ready(&runtime).await, "fx");
            call(&runtime, "mcp__fx__echo", json!({"text": "warm"}))
                .await
                .unwrap();
            let (crossings_before, reads_before) = (runtime.guest_crossings(), driver_reads());
            for i in 0..CALLS {
                let text = format!("hello {i}");
                let result = call(&runtime, "mcp__fx__echo", json!({ "text": text }))
                    .await
                    .unwrap();
                assert_eq!(result.text, text);
            }
            let crossings = runtime.guest_crossings() - crossings_before;
            let reads = driver_reads() - reads_before;
            // A few more for a turn the idle timer or a partly read line may add.
            assert!(
                crossings <= 2 * CALLS + CALLS / 10,
                "{crossings} crossings for {CALLS} sequential calls, expected {}",
                2 * CALLS
            );
            assert!(
                reads <= CALLS + CALLS / 10,
                "the driver made {reads} reads for {CALLS} sequential calls, expected {CALLS}"
            );
            runtime.shutdown().await;
        },
    );
}

/// A remote server that failed while it connected leaves the driver asleep.
/// Its client still waited for its `server/discover` probe, whose deadline (five
/// seconds on) a failed server's client never handles; counted as the guest's
/// next deadline, it kept the driver taking empty turns for good, a whole CPU.
/// The driver's CPU is read in `/proc/self/task/TID/stat`, alone in a process so
/// that the one `mcpbox-driver` thread is this runtime's.
#[test]
fn a_runtime_whose_remote_server_failed_to_connect_sleeps() {
    mcpbox_tests::process::alone(
        module_path!(),
        "a_runtime_whose_remote_server_failed_to_connect_sleeps",
        || async {
            // A loopback port nothing listens on: the connection is refused.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .unwrap()
                .port();
            let url = format!("http://127.0.0.1:{port}/mcp");
            let runtime = open(json!({ "gone": { "type": "http", "url": url } })).await;
            let servers = ready(&runtime).await;
            assert_eq!(status(&servers, "gone").state, ServerState::Failed);
            // Past the probe's deadline.
            tokio::time::sleep(Duration::from_secs(6)).await;
            let before = driver_cpu_ticks();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let used = driver_cpu_ticks() - before;
            assert!(
                used < 10,
                "the driver used {used} clock ticks of CPU in a second with nothing to do"
            );
            runtime.shutdown().await;
        },
    );
}

/// The `/proc` directory of this process's one `mcpbox-driver` thread.
fn driver_task() -> std::path::PathBuf {
    let drivers: Vec<_> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let path = task.ok()?.path();
            let comm = std::fs::read_to_string(path.join("comm")).ok()?;
            (comm.trim() == "mcpbox-driver").then_some(path)
        })
        .collect();
    assert_eq!(drivers.len(), 1, "driver threads: {drivers:?}");
    drivers.into_iter().next().unwrap()
}

/// The CPU time (user and system, in clock ticks) of this process's one
/// `mcpbox-driver` thread so far.
fn driver_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string(driver_task().join("stat")).unwrap();
    // The fields after the command's closing parenthesis: utime is the 12th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| -> u64 {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("no field {i} in {stat}"))
    };
    field(11) + field(12)
}

/// The `read` system calls of this process's one `mcpbox-driver` thread so far.
fn driver_reads() -> u64 {
    let io = std::fs::read_to_string(driver_task().join("io")).unwrap();
    io.lines()
        .find_map(|line| line.strip_prefix("syscr:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no syscr in {io}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn negotiates_down_to_2024_11_05_and_rejects_unknown_versions() {
    let runtime = open(json!({
        "old": fixture_entry(&["--protocol", "2024-11-05"]),
        "future": fixture_entry(&["--protocol", "1999-01-01"]),
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "old");
    assert_eq!(
        status(&servers, "old").protocol_version.as_deref(),
        Some("2024-11-05")
    );
    let future = status(&servers, "future");
    assert_eq!(future.state, ServerState::Failed);
    let error = future.error.as_deref().unwrap_or_default();
    assert!(error.contains("1999-01-01"), "{error}");
    // The old server's tools work.
    let r = call(&runtime, "mcp__old__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(r.text, "x");
}

#[tokio::test(flavor = "multi_thread")]
async fn follows_every_page_of_tools() {
    let runtime =
        open(json!({ "paged": fixture_entry(&["--tools", "10", "--page-size", "3"]) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "paged");
    let names: Vec<String> = runtime.tools().iter().map(|t| t.name.clone()).collect();
    for i in 0..10 {
        assert!(
            names.contains(&format!("mcp__paged__tool_{i}")),
            "tool_{i} missing from {names:?}"
        );
    }
    assert!(names.contains(&"mcp__paged__echo".to_owned()));
    // Sorted by name, and every tool counted.
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(status(&servers, "paged").tool_count as usize, names.len());
}

/// The host reads the registry from the guest in pages of 256: a registry of
/// several pages (and one tool over) arrives whole, in order, each tool once.
#[tokio::test(flavor = "multi_thread")]
async fn a_registry_of_several_pages_reaches_the_host_whole() {
    let runtime = open(json!({ "many": fixture_entry(&["--tools", "700"]) })).await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "many");
    let tools = runtime.tools();
    let count = status(&servers, "many").tool_count as usize;
    assert!(count > 700 && !count.is_multiple_of(256), "{count} tools");
    assert_eq!(tools.len(), count);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    for i in [0, 255, 256, 511, 699] {
        assert!(
            names.contains(&format!("mcp__many__tool_{i}").as_str()),
            "tool_{i}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn names_are_sanitised_capped_and_still_callable() {
    let runtime = open(json!({ "w": fixture_entry(&["--weird-names"]) })).await;
    assert_connected(&ready(&runtime).await, "w");
    let tools = runtime.tools();
    for t in tools.iter() {
        assert!(t.name.len() <= 64, "{} is longer than 64", t.name);
        assert!(
            t.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            t.name
        );
    }
    let dotted = tools
        .iter()
        .find(|t| t.tool == "read.file")
        .expect("read.file listed");
    assert_eq!(dotted.name, "mcp__w__read_file");
    let long: Vec<_> = tools.iter().filter(|t| t.tool.len() > 60).collect();
    assert!(long.len() >= 2, "the fixture has two long names: {tools:?}");
    assert_ne!(
        long[0].name, long[1].name,
        "long names that share a prefix must stay distinct"
    );
    // A sanitised name routes to the original tool name on the server.
    let r = call(&runtime, &dotted.name, json!({})).await.unwrap();
    assert!(!r.is_error, "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn collisions_are_reported_and_the_later_tool_skipped() {
    let runtime = open(json!({ "c": fixture_entry(&["--collide"]) })).await;
    let mut events = runtime.events();
    assert_connected(&ready(&runtime).await, "c");
    let warning = next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("x.y") || w.contains("x_y")),
    )
    .await;
    let Event::Warning(text) = warning else {
        unreachable!()
    };
    assert!(
        text.contains("x.y") && text.contains("x_y"),
        "both tools are named: {text}"
    );
    let colliding: Vec<_> = runtime
        .tools()
        .iter()
        .filter(|t| t.name == "mcp__c__x_y")
        .map(|t| t.tool.clone())
        .collect();
    assert_eq!(
        colliding.len(),
        1,
        "exactly one of the colliding tools is registered"
    );
}

/// Server `x` with tool `y__ping` and server `x__y` with
/// tool `ping` both make `mcp__x__y__ping`. Whichever server starts slowly, a call
/// made as soon as the name is callable (as `mcpbox call` does) reaches the
/// server `tools` lists for it, and that is the one first in the file.
#[tokio::test(flavor = "multi_thread")]
async fn a_contested_name_reaches_the_listed_server_whichever_starts_first() {
    const NAME: &str = "mcp__x__y__ping";
    for slow in ["x", "x__y"] {
        let entry = |server: &str, tool: &str| {
            let mut args = vec!["--tool", tool];
            if server == slow {
                args.extend(["--start-delay-ms", "400"]);
            }
            fixture_entry(&args)
        };
        let runtime =
            open(json!({ "x": entry("x", "y__ping"), "x__y": entry("x__y", "ping") })).await;
        tokio::time::timeout(PATIENCE, runtime.wait_for_tool(NAME))
            .await
            .expect("the name becomes callable in time")
            .expect("the name is listed");
        // The echo-like tools answer with their own name.
        let reached = call(&runtime, NAME, json!({})).await.unwrap().text;
        ready(&runtime).await;
        let listed: Vec<_> = runtime
            .tools()
            .iter()
            .filter(|t| t.name == NAME)
            .cloned()
            .collect();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            (listed[0].server.as_str(), listed[0].tool.as_str()),
            ("x", "y__ping"),
            "{slow} slow"
        );
        assert_eq!(
            reached, "y__ping",
            "{slow} slow: the call reached `x__y`'s tool"
        );
        let issues: Vec<String> = runtime
            .config_issues()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert!(
            issues[0].starts_with("server `x__y`: its tool names (mcp__x__y__…) can be the same as tool names of server `x`"),
            "{issues:?}"
        );
        runtime.shutdown().await;
    }
}

/// A `structuredContent` deeper than serde_json's 128 levels, or holding a number
/// no f64 holds, must not become `null` on a successful result (nor such a
/// `content` make the result "malformed"): both reach the caller exactly as the
/// server wrote them, 10,000 levels deep included, and nothing deep crashes the
/// guest.
#[tokio::test(flavor = "multi_thread")]
async fn structured_content_passes_through_exactly_however_deep_or_large() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    let mut events = runtime.events();
    assert_connected(&ready(&runtime).await, "fx");
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for structured in [
        format!(r#"{{"deep": {deep}}}"#),
        r#"{"big": 1e999, "exact": 123456789012345678901234567890, "written": 1.0e2}"#.to_owned(),
        format!(r#"{{ "both" : [ {deep}, -1e999 ] }}"#),
    ] {
        let result = format!(
            r#"{{"content":[{{"type":"text","text":"ok"}}],"structuredContent":{structured}}}"#
        );
        let r = call(&runtime, "mcp__fx__raw_result", json!({ "result": result }))
            .await
            .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.text, "ok");
        // Serialised as it was received: the server's text, byte for byte.
        let received = serde_json::to_string(&r.structured_content).unwrap();
        assert!(
            received == structured,
            "{} became {}",
            &structured[..structured.len().min(80)],
            &received[..received.len().min(80)]
        );
    }
    // So does `content`, its text blocks found without building the others.
    let content = format!(
        r#"[{{"type":"text","text":"a"}},{{"type":"resource","resource":{{"uri":"x:y","deep":{deep},"n":1e999}}}}]"#
    );
    let result = format!(r#"{{"content":{content}}}"#);
    let r = call(&runtime, "mcp__fx__raw_result", json!({ "result": result }))
        .await
        .unwrap();
    assert_eq!(r.text, "a");
    assert!(serde_json::to_string(&r.content).unwrap() == content);
    // The guest is the same instance: nothing trapped.
    let r = call(&runtime, "mcp__fx__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(r.text, "still here");
    assert_no_guest_restart(&mut events);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_server_does_not_stop_the_others() {
    let runtime = open(json!({
        "good": fixture_entry(&[]),
        "missing": { "command": "/nonexistent/mcp-server" },
        "dies": fixture_entry(&["--exit-on-init", "7"]),
        "needs_var": { "command": fixture(), "env": { "TOKEN": "${MCPBOX_TEST_SURELY_UNSET}" } },
        "bad_ref": { "command": fixture(), "args": ["--x", "${NOT A NAME}"] },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "good");
    for name in ["missing", "dies", "needs_var", "bad_ref"] {
        assert_eq!(status(&servers, name).state, ServerState::Failed, "{name}");
    }
    let missing = status(&servers, "missing")
        .error
        .clone()
        .unwrap_or_default();
    assert!(missing.contains("/nonexistent/mcp-server"), "{missing}");
    let dies = status(&servers, "dies").error.clone().unwrap_or_default();
    assert!(
        dies.contains("exit code 7"),
        "the exit status is reported: {dies}"
    );
    let needs_var = status(&servers, "needs_var")
        .error
        .clone()
        .unwrap_or_default();
    assert!(
        needs_var.contains("MCPBOX_TEST_SURELY_UNSET"),
        "{needs_var}"
    );
    // A malformed reference is the guest's to find (it alone parses `${VAR}`),
    // named with the server and the field.
    let bad_ref = status(&servers, "bad_ref")
        .error
        .clone()
        .unwrap_or_default();
    assert!(
        bad_ref.contains(
            "server `bad_ref`: `args[1]` has an invalid variable reference `${NOT A NAME}`"
        ),
        "{bad_ref}"
    );

    let r = call(&runtime, "mcp__good__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(r.text, "still here");
    let err = call(&runtime, "mcp__dies__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::UnknownTool(_) | CallError::ServerUnavailable(_)
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_errors_are_results_not_failures() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let r = call(&runtime, "mcp__fx__fail", json!({"message": "it broke"}))
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(r.text.contains("it broke"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_cancels_on_the_server_and_the_server_keeps_working() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(300)),
        ..CallOptions::default()
    };
    let err = runtime
        .call_tool("mcp__fx__sleep", json!({"ms": 20_000}), options)
        .await
        .unwrap_err();
    let CallError::Timeout(message) = &err else {
        panic!("expected a timeout, got {err:?}")
    };
    assert!(message.contains("mcp__fx__sleep"), "{message}");

    // The server observed notifications/cancelled for that request.
    let seen = tokio::time::timeout(PATIENCE, async {
        loop {
            let r = call(&runtime, "mcp__fx__cancellations", json!({}))
                .await
                .unwrap();
            let ids: Vec<serde_json::Value> = serde_json::from_str(&r.text).unwrap();
            if !ids.is_empty() {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server sees the cancellation");
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_updates_the_registry() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let mut events = runtime.events();
    assert!(!runtime.tools().iter().any(|t| t.name == "mcp__fx__fresh"));
    call(&runtime, "mcp__fx__add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    next_event(
        &mut events,
        |e| matches!(e, Event::ToolsChanged(s) if s == "fx"),
    )
    .await;
    assert!(
        runtime.tools().iter().any(|t| t.name == "mcp__fx__fresh"),
        "{:?}",
        runtime.tools()
    );
    let count = runtime
        .servers()
        .iter()
        .find(|s| s.name == "fx")
        .unwrap()
        .tool_count as usize;
    assert_eq!(count, runtime.tools().len());
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_invalid_arguments_are_rejected_before_the_call() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let err = call(&runtime, "mcp__fx__echo", json!({"text": 5}))
        .await
        .unwrap_err();
    let CallError::InvalidArguments(message) = &err else {
        panic!("expected invalid arguments, got {err:?}")
    };
    assert!(
        message.contains("text"),
        "the message names the field: {message}"
    );
    let err = call(&runtime, "mcp__fx__echo", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidArguments(m) if m.contains("text")),
        "{err:?}"
    );
    let err = runtime
        .call_tool_json("mcp__fx__echo", "{not json".into(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments(_)), "{err:?}");
    let err = call(&runtime, "mcp__fx__nope", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_call_fails_the_call_and_marks_the_server() {
    let runtime = open(json!({ "fx": fixture_entry(&[]), "other": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    let err = call(&runtime, "mcp__fx__crash", json!({"code": 3}))
        .await
        .unwrap_err();
    let CallError::ServerUnavailable(message) = &err else {
        panic!("expected unavailable, got {err:?}")
    };
    assert!(message.contains("exit code 3"), "{message}");
    let servers = runtime.servers();
    let fx = status(&servers, "fx");
    assert_eq!(fx.state, ServerState::Failed);
    assert_eq!(fx.tool_count, 0);
    let error = fx.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("exit code 3")
            && error.contains("the next call restarts it after a 1s backoff"),
        "{error}"
    );
    // Its tools leave the registry, but a call to one is still recognised: it is
    // refused as unavailable (within the backoff), not as an unknown tool.
    assert!(!runtime.tools().iter().any(|t| t.server == "fx"));
    let err = call(&runtime, "mcp__fx__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ServerUnavailable(m) if m.contains("next restart allowed in")),
        "{err:?}"
    );
    let r = call(&runtime, "mcp__other__echo", json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_stdout_is_skipped() {
    let runtime = open(json!({ "noisy": fixture_entry(&["--garbage"]) })).await;
    assert_connected(&ready(&runtime).await, "noisy");
    let r = call(&runtime, "mcp__noisy__echo", json!({"text": "clean"}))
        .await
        .unwrap();
    assert_eq!(r.text, "clean");
}

#[tokio::test(flavor = "multi_thread")]
async fn disabled_servers_and_config_issues() {
    let runtime = open(json!({
        "off": { "command": fixture(), "enabled": false },
        "bad": { "command": 42 },
        "fine": fixture_entry(&[]),
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_eq!(status(&servers, "off").state, ServerState::Closed);
    assert_connected(&servers, "fine");
    let issue = runtime
        .config_issues()
        .into_iter()
        .find(|i| i.server.as_deref() == Some("bad"))
        .expect("bad is reported");
    assert_eq!(issue.field.as_deref(), Some("command"));
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_config_text_is_an_error_naming_the_origin() {
    let err = mcpbox::Options::from_config_text("broken.json", "{\"mcpServers\": ")
        .open()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("broken.json"), "{text}");
    assert!(
        text.starts_with("broken.json:1:"),
        "names the file, line and column: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_stops_servers_and_later_calls_fail_cleanly() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    ready(&runtime).await;
    runtime.shutdown().await;
    let err = call(&runtime, "mcp__fx__echo", json!({"text": "late"}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Runtime(_)), "{err:?}");
}

/// A runtime with one fixture server `fx` and room for normal work, but not for
/// a [`TRAPPING_BYTES`] answer: copying it into the guest exceeds the memory
/// limit and traps the guest. (Arguments that large are refused before they
/// enter the guest: see `oversized_arguments_are_refused_before_the_guest`.)
async fn trappable() -> mcpbox::Runtime {
    let text = json!({ "mcpServers": { "fx": fixture_entry(&[]) } }).to_string();
    mcpbox::Options::from_config_text("trap.json", text)
        .memory_limit(4 * 1024 * 1024)
        .open()
        .await
        .unwrap()
}

/// The size of a `huge` answer that traps a [`trappable`] guest.
const TRAPPING_BYTES: u64 = 8 * 1024 * 1024;

/// Arguments over the limit (1/16 of the guest's memory
/// limit) fail the call with `InvalidArguments` naming the size and the limit,
/// before they enter the guest: no trap, no restart.
#[tokio::test(flavor = "multi_thread")]
async fn oversized_arguments_are_refused_before_the_guest() {
    // As `trappable`, with results up to 1 MiB passed on whole: the echo below is
    // over the default output limit (`output.maxBytes`, 100,000 bytes).
    let text = json!({ "mcpServers": { "fx": fixture_entry(&[]) } }).to_string();
    let runtime = mcpbox::Options::from_config_text("trap.json", text)
        .memory_limit(4 * 1024 * 1024)
        .max_result_bytes(1024 * 1024)
        .open()
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "fx");
    let mut events = runtime.events();
    let err = call(
        &runtime,
        "mcp__fx__echo",
        json!({ "text": "x".repeat(8 * 1024 * 1024) }),
    )
    .await
    .unwrap_err();
    let CallError::InvalidArguments(message) = &err else {
        panic!("expected invalid arguments, got {err:?}")
    };
    assert!(
        message.contains("8388619 bytes")
            && message.contains("256 KiB")
            && message.contains("Options::memory_limit"),
        "{message}"
    );
    // Just under the limit still goes through.
    let text = "y".repeat(256 * 1024 - 100);
    let r = call(&runtime, "mcp__fx__echo", json!({ "text": text }))
        .await
        .unwrap();
    assert_eq!(r.text, text);
    // The guest was not restarted: no warning says so.
    while let Ok(event) = events.try_recv() {
        assert!(!matches!(event, Event::Warning(_)), "{event:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trapping_guest_is_replaced_and_the_host_survives() {
    let runtime = trappable().await;
    assert_connected(&ready(&runtime).await, "fx");
    let mut events = runtime.events();

    let err = call(
        &runtime,
        "mcp__fx__huge",
        json!({ "bytes": TRAPPING_BYTES }),
    )
    .await
    .unwrap_err();
    let CallError::Runtime(message) = &err else {
        panic!("expected a runtime error, got {err:?}")
    };
    assert!(message.contains("restarted"), "{message}");
    next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("restarted")),
    )
    .await;

    // A fresh guest reconnected the server; calls work again.
    assert_connected(&ready(&runtime).await, "fx");
    let r = call(&runtime, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text, "after");
}

/// The third trap within a minute stops the runtime, and the caller whose call
/// trapped it is told so (not that the guest was restarted).
#[tokio::test(flavor = "multi_thread")]
async fn three_traps_within_a_minute_stop_the_runtime() {
    let runtime = trappable().await;
    let mut events = runtime.events();
    for round in 1..=3 {
        assert_connected(&ready(&runtime).await, "fx");
        let err = call(
            &runtime,
            "mcp__fx__huge",
            json!({ "bytes": TRAPPING_BYTES }),
        )
        .await
        .unwrap_err();
        let CallError::Runtime(message) = &err else {
            panic!("expected a runtime error, got {err:?}")
        };
        if round < 3 {
            assert!(
                message.contains("the guest failed and was restarted"),
                "{message}"
            );
        } else {
            assert!(
                message.contains("the guest failed 3 times within a minute; last:")
                    && !message.contains("restarted"),
                "{message}"
            );
        }
    }
    let err = call(&runtime, "mcp__fx__echo", json!({ "text": "after" }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Runtime(m) if m.contains("3 times within a minute")),
        "{err:?}"
    );
    // The stop is visible without a call: the reason, the
    // servers failed with it (none runs without the guest), no tools, the event.
    let reason = runtime.stopped().expect("stopped");
    assert!(
        reason.contains("the guest ran out of memory") && reason.contains("4.0 MiB"),
        "the trap is told for what it is: {reason}"
    );
    let fx = status(&runtime.servers(), "fx").clone();
    assert_eq!(fx.state, ServerState::Failed);
    assert!(
        fx.error
            .as_deref()
            .unwrap_or_default()
            .contains("the mcpbox runtime stopped")
    );
    assert!(runtime.tools().is_empty());
    assert!(
        std::iter::from_fn(|| events.try_recv().ok()).any(|e| matches!(e, Event::Stopped(_))),
        "an Event::Stopped was sent"
    );
}

/// The driver runs on its own thread: a caller that reads the servers failed
/// because the runtime stopped reads the runtime stopped too (the CLI's exit
/// code depends on it), and one that reads it stopped reads the servers failed.
/// A reader on another thread looks at both as fast as it can while the guest
/// traps for the third time.
#[tokio::test(flavor = "multi_thread")]
async fn a_runtime_seen_stopped_in_its_servers_is_stopped() {
    let runtime = trappable().await;
    for _ in 1..=2 {
        assert_connected(&ready(&runtime).await, "fx");
        let _ = call(
            &runtime,
            "mcp__fx__huge",
            json!({ "bytes": TRAPPING_BYTES }),
        )
        .await;
    }
    assert_connected(&ready(&runtime).await, "fx");
    let reader = {
        let runtime = runtime.clone();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let said_so = |servers: &[mcpbox::ServerStatus]| {
                servers.iter().any(|s| {
                    s.error
                        .as_deref()
                        .is_some_and(|e| e.contains("the mcpbox runtime stopped"))
                })
            };
            let mut reads = 0u64;
            while std::time::Instant::now() < deadline {
                reads += 1;
                if said_so(&runtime.servers()) {
                    assert!(
                        runtime.stopped().is_some(),
                        "the servers said the runtime stopped, the runtime did not \
                         (after {reads} reads)"
                    );
                    return;
                }
                if runtime.stopped().is_some() {
                    assert!(
                        said_so(&runtime.servers()),
                        "the runtime said it stopped, its servers did not"
                    );
                    return;
                }
            }
            panic!("the runtime never stopped");
        })
    };
    let _ = call(
        &runtime,
        "mcp__fx__huge",
        json!({ "bytes": TRAPPING_BYTES }),
    )
    .await;
    // Woken by the stop, `ready` returns the servers failed.
    let servers = ready(&runtime).await;
    assert_eq!(status(&servers, "fx").state, ServerState::Failed);
    reader.join().expect("the reader saw one consistent stop");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_server_is_restarted_by_the_next_call_or_by_reconnect() {
    let runtime = open(json!({ "fx": fixture_entry(&[]) })).await;
    assert_connected(&ready(&runtime).await, "fx");
    let mut events = runtime.events();
    let is = |state: ServerState| move |e: &Event| matches!(e, Event::Status(s) if s.name == "fx" && s.state == state);

    let crashed = std::time::Instant::now();
    let err = call(&runtime, "mcp__fx__crash", json!({"code": 3}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ServerUnavailable(m) if m.contains("exit code 3")),
        "{err:?}"
    );
    // Within the 1 s backoff the call is refused at once, saying how long to wait.
    let err = call(&runtime, "mcp__fx__echo", json!({"text": "too soon"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ServerUnavailable(m)
            if m.contains("exit code 3") && m.contains("next restart allowed in")),
        "{err:?}"
    );
    assert_eq!(status(&runtime.servers(), "fx").state, ServerState::Failed);

    // Waiting out the backoff is the behaviour under test: then the next call
    // restarts the server, waits for it and runs.
    let backoff = Duration::from_millis(1_100);
    tokio::time::sleep(backoff.saturating_sub(crashed.elapsed())).await;
    let r = call(&runtime, "mcp__fx__echo", json!({"text": "restarted"}))
        .await
        .unwrap();
    assert_eq!(r.text, "restarted");
    assert_connected(&runtime.servers(), "fx");
    assert!(runtime.tools().iter().any(|t| t.name == "mcp__fx__echo"));
    // Every transition was an event, in order (what `servers --watch` prints).
    next_event(&mut events, is(ServerState::Failed)).await;
    next_event(&mut events, is(ServerState::Starting)).await;
    next_event(&mut events, is(ServerState::Connected)).await;

    // Crash again; an explicit reconnect does not wait for the backoff.
    let err = call(&runtime, "mcp__fx__crash", json!({"code": 3}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::ServerUnavailable(_)), "{err:?}");
    runtime.reconnect("fx").await.unwrap();
    let state = status(&runtime.servers(), "fx").state;
    assert!(
        matches!(state, ServerState::Starting | ServerState::Connected),
        "{state:?}"
    );
    let r = call(&runtime, "mcp__fx__echo", json!({"text": "reconnected"}))
        .await
        .unwrap();
    assert_eq!(r.text, "reconnected");

    let err = runtime.reconnect("nope").await.unwrap_err();
    assert!(err.contains("no server named `nope`"), "{err}");
}
