//! Tasks (MCP 2025-11-25) against the reference server that uses them:
//! server-everything's `simulate-research-query` requires a task
//! (`execution.taskSupport: "required"`), reports its stages as task statuses,
//! and, for an ambiguous query, asks for a clarification through `tasks/result`;
//! and against `tests/peers/task_server.mjs` (the same SDK's tasks), whose `count`
//! runs as a task when the caller asks (`taskSupport: "optional"`), and which
//! lists its tasks (`tasks/list`).

use mcpbox::{CallOptions, Event, InputAnswer, Options, Runtime};
use mcpbox_tests::{everything_command, task_server_command};
use serde_json::json;

use crate::{PATIENCE, assert_connected, next_event, ready};

const TOOL: &str = "mcp__everything__simulate-research-query";

async fn open_everything(input_requests: bool) -> Runtime {
    let (command, args) = everything_command();
    let text = json!({"mcpServers": {"everything": {"command": command, "args": args}}});
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .input_requests(input_requests)
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "everything");
    runtime
}

/// The statuses of `TOOL`'s task seen on `events` so far.
fn statuses(events: &mut tokio::sync::broadcast::Receiver<Event>) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::TaskStatus {
            tool,
            status,
            message,
            ..
        } = event
        {
            assert_eq!(tool, TOOL);
            seen.push(format!("{status}: {}", message.unwrap_or_default()));
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_requires_a_task_runs_to_its_report() {
    let runtime = open_everything(false).await;
    let mut events = runtime.events();
    let result = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool(TOOL, json!({"topic": "wasm"}), CallOptions::default()),
    )
    .await
    .expect("the task ends in time")
    .expect("the task gives a result");
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.text.starts_with("# Research Report: wasm"),
        "{result:?}"
    );
    let seen = statuses(&mut events);
    for stage in [
        "working: Gathering sources...",
        "working: Generating report...",
    ] {
        assert!(seen.iter().any(|s| s == stage), "{stage} in {seen:?}");
    }
    assert!(
        seen.last().is_some_and(|s| s.starts_with("completed")),
        "{seen:?}"
    );
    runtime.shutdown().await;
}

/// Calls `tool` as a task (`CallOptions::task`) on a tokio task of its own, so
/// the test can watch its events while it runs.
fn call_as_task(
    runtime: &Runtime,
    tool: &'static str,
    arguments: serde_json::Value,
) -> tokio::task::JoinHandle<Result<mcpbox::CallResult, mcpbox::CallError>> {
    let caller = runtime.clone();
    tokio::spawn(async move {
        let as_task = CallOptions {
            task: true,
            ..CallOptions::default()
        };
        caller.call_tool(tool, arguments, as_task).await
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ambiguous_query_asks_for_clarification_while_its_task_waits() {
    let runtime = open_everything(true).await;
    let mut events = runtime.events();
    let caller = runtime.clone();
    let call = tokio::spawn(async move {
        caller
            .call_tool(
                TOOL,
                json!({"topic": "wasm", "ambiguous": true}),
                CallOptions::default(),
            )
            .await
    });
    let Event::InputRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    assert_eq!(request.tool.as_deref(), Some(TOOL), "{request:?}");
    assert!(
        request.message.contains("multiple interpretations"),
        "{request:?}"
    );
    runtime
        .answer_input(
            request.id,
            InputAnswer::Accept(json!({"interpretation": "historical"})),
        )
        .await
        .expect("the answer fits the requested schema");
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task gives a result");
    assert!(
        result.text.contains("- **Clarification**: historical"),
        "{result:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_optional_tool_runs_as_a_task_when_the_caller_asks() {
    let (command, args) = task_server_command();
    let text = json!({"mcpServers": {"tasks": {"command": command, "args": args}}});
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "tasks");
    let mut events = runtime.events();
    let arguments = json!({"steps": 3, "ms": 150});
    let as_task = CallOptions {
        task: true,
        ..CallOptions::default()
    };
    let result = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool("mcp__tasks__count", arguments.clone(), as_task.clone()),
    )
    .await
    .expect("the task ends in time")
    .expect("the task gives a result");
    assert_eq!(result.text, "counted to 3", "{result:?}");
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::TaskStatus {
            status, message, ..
        } = event
        {
            seen.push(format!("{status}: {}", message.unwrap_or_default()));
        }
    }
    assert!(
        seen.contains(&"working: step 1 of 3".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.last().is_some_and(|s| s.starts_with("completed")),
        "{seen:?}"
    );

    // Not asked: a plain call, with the same result and no task of the caller's.
    let result = runtime
        .call_tool("mcp__tasks__count", arguments, CallOptions::default())
        .await
        .expect("the plain call gives a result");
    assert_eq!(result.text, "counted to 3", "{result:?}");
    while let Ok(event) = events.try_recv() {
        assert!(!matches!(event, Event::TaskStatus { .. }), "{event:?}");
    }

    // A tool that takes no task: refused, saying why, before anything is sent.
    let refused = runtime
        .call_tool("mcp__tasks__plain", json!({}), as_task)
        .await
        .expect_err("a tool that takes no task cannot run as one");
    assert!(
        refused.to_string().contains("cannot run as a task"),
        "{refused}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_tasks_are_listed_with_their_status() {
    let (command, args) = task_server_command();
    let text = json!({"mcpServers": {"tasks": {"command": command, "args": args}}});
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "tasks");
    let mut events = runtime.events();
    let call = call_as_task(
        &runtime,
        "mcp__tasks__count",
        json!({"steps": 4, "ms": 250}),
    );
    let Event::TaskStatus { task_id, .. } =
        next_event(&mut events, |e| matches!(e, Event::TaskStatus { .. })).await
    else {
        unreachable!()
    };
    let tasks = runtime
        .list_tasks(Some("tasks"))
        .await
        .expect("the server lists its tasks");
    let [task] = &tasks[..] else {
        panic!("{tasks:?}")
    };
    assert_eq!(
        (
            task.server.as_str(),
            task.task_id.as_str(),
            task.status.as_str()
        ),
        ("tasks", task_id.as_str(), "working"),
        "{task:?}"
    );
    assert!(task.status_message.is_some(), "{task:?}");
    tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task gives a result");
    // Ended, and still listed (for its ttl); every server offering tasks/list.
    let tasks = runtime
        .list_tasks(None)
        .await
        .expect("the tasks are listed");
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].status, "completed", "{tasks:?}");
    runtime.shutdown().await;
}

/// `mcpbox serve --http` in front of server-everything and the fixture server:
/// a 2026-07-28 server that offers the tasks extension and answers a call still
/// running after half a second with a task handle; and a runtime whose client
/// speaks to it (the bearer token in its headers), with input requests on.
async fn open_through_the_gateway() -> (
    mcpbox_tests::http::ServerProcess,
    mcpbox_tests::gateway::ConfigFile,
    Runtime,
) {
    use mcpbox_tests::gateway::{ConfigFile, serve_http};
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
        "fixture": crate::fixture_entry(&[]),
    }}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let runtime = open_on(&gateway.url).await;
    (gateway, config, runtime)
}

/// A runtime whose one server, `up`, is the gateway at `url` (or something in
/// front of it), with the gateway's token; connected.
async fn open_on(url: &str) -> Runtime {
    use mcpbox_tests::gateway::AUTHORIZATION;
    let text = json!({"mcpServers": {"up": {"type": "http", "url": url,
        "headers": {"Authorization": AUTHORIZATION.1}}}});
    let runtime = Options::from_config_text("test.mcp.json", text.to_string())
        .input_requests(true)
        .open()
        .await
        .expect("the runtime opens");
    assert_connected(&ready(&runtime).await, "up");
    runtime
}

/// mcpbox's own client against a 2026-07-28 server with the tasks extension
/// (mcpbox's gateway): the research query comes back as a task handle, which
/// the client polls with `tasks/get`, showing its statuses, to the inlined
/// report; the ambiguous one's question reaches the embedder and its answer
/// goes back with `tasks/update`; asking for a task is no longer refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_servers_task_handles_are_polled_to_the_report_and_their_questions_answered() {
    let (_gateway, _config, runtime) = open_through_the_gateway().await;
    let tool = "mcp__up__everything__simulate-research-query";
    let mut events = runtime.events();
    let as_task = CallOptions {
        task: true,
        ..CallOptions::default()
    };
    let result = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool(tool, json!({"topic": "wasm"}), as_task.clone()),
    )
    .await
    .expect("the task ends in time")
    .expect("the task gives a result");
    assert!(
        result.text.starts_with("# Research Report: wasm"),
        "{result:?}"
    );
    // The statuses, to the last (its event may follow the result by a moment).
    let mut seen = Vec::new();
    while seen.last().is_none_or(|s| s != "completed") {
        let Event::TaskStatus { status, .. } =
            next_event(&mut events, |e| matches!(e, Event::TaskStatus { .. })).await
        else {
            unreachable!()
        };
        seen.push(status);
    }
    assert_eq!(
        seen.first().map(String::as_str),
        Some("working"),
        "{seen:?}"
    );

    let caller = runtime.clone();
    let call = tokio::spawn(async move {
        let arguments = json!({"topic": "wasm", "ambiguous": true});
        caller.call_tool(tool, arguments, as_task).await
    });
    let Event::InputRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    assert_eq!(request.tool.as_deref(), Some(tool), "{request:?}");
    runtime
        .answer_input(
            request.id,
            InputAnswer::Accept(json!({"interpretation": "historical"})),
        )
        .await
        .expect("the answer fits the requested schema");
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task gives a result");
    assert!(
        result.text.contains("- **Clarification**: historical"),
        "{result:?}"
    );
    runtime.shutdown().await;
}

/// A 2026-07-28 task that stays `working` past the call's timeout: the call
/// ends at its timeout, saying so, and the server is sent `tasks/cancel`, which
/// the gateway passes on to the server that runs the call.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_task_that_never_ends_is_cancelled_at_the_calls_timeout() {
    let (_gateway, _config, runtime) = open_through_the_gateway().await;
    let mut events = runtime.events();
    let short = CallOptions {
        timeout: Some(std::time::Duration::from_secs(2)),
        task: true,
    };
    let ended = tokio::time::timeout(
        PATIENCE,
        runtime.call_tool("mcp__up__fixture__sleep", json!({"ms": 60_000}), short),
    )
    .await
    .expect("the call ends at its timeout")
    .expect_err("the call times out");
    let why = ended.to_string();
    assert!(
        why.contains("timed out") && why.contains("tasks/cancel"),
        "{why}"
    );
    assert!(
        std::iter::from_fn(|| events.try_recv().ok())
            .any(|e| matches!(e, Event::TaskStatus { .. })),
        "the call ran as a task"
    );
    // The fixture server saw its call cancelled: the cancel went all the way.
    mcpbox_tests::process::eventually_async(PATIENCE, async || {
        let seen = runtime
            .call_tool(
                "mcp__up__fixture__cancellations",
                json!({}),
                CallOptions::default(),
            )
            .await
            .map_err(|e| e.to_string())?;
        match seen.text.as_str() {
            "[]" => Err("no cancellation seen yet".to_owned()),
            _ => Ok(()),
        }
    })
    .await;
    runtime.shutdown().await;
}

/// A task that waits for the embedder's answer does not time out meanwhile:
/// the wait is the embedder's, not the server's. The ambiguous research query
/// (a 2026-07-28 task of the gateway's) asks its question; the embedder answers
/// only after twice the call's timeout, and the report still comes.
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_question_waiting_for_the_embedder_does_not_count_against_the_timeout() {
    const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
    let (_gateway, _config, runtime) = open_through_the_gateway().await;
    let tool = "mcp__up__everything__simulate-research-query";
    let mut events = runtime.events();
    let caller = runtime.clone();
    let call = tokio::spawn(async move {
        let arguments = json!({"topic": "wasm", "ambiguous": true});
        let short = CallOptions {
            // Long enough for the rest of the research after the answer, which
            // reports no status for a second or two (more under load).
            timeout: Some(TIMEOUT),
            task: true,
        };
        caller.call_tool(tool, arguments, short).await
    });
    let Event::InputRequested(request) =
        next_event(&mut events, |e| matches!(e, Event::InputRequested(_))).await
    else {
        unreachable!()
    };
    // The embedder takes its time: twice the call's timeout.
    tokio::time::sleep(2 * TIMEOUT).await;
    runtime
        .answer_input(
            request.id,
            InputAnswer::Accept(json!({"interpretation": "historical"})),
        )
        .await
        .expect("the question still waits for its answer");
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task gives a result");
    assert!(
        result.text.contains("- **Clarification**: historical"),
        "{result:?}"
    );
    runtime.shutdown().await;
}

/// A task outlives its server's reconnect: a call the gateway runs as a
/// 2026-07-28 task (whose id is not bound to a connection) is polled by the new
/// connection to its result after `reconnect`, while its caller waits on.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_outlives_its_servers_reconnect() {
    let (_gateway, _config, runtime) = open_through_the_gateway().await;
    let mut events = runtime.events();
    let call = call_as_task(&runtime, "mcp__up__fixture__sleep", json!({"ms": 3000}));
    let Event::TaskStatus { task_id, .. } =
        next_event(&mut events, |e| matches!(e, Event::TaskStatus { .. })).await
    else {
        unreachable!()
    };
    runtime
        .reconnect("up")
        .await
        .expect("the server reconnects");
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task's result reaches its caller after the reconnect");
    assert_eq!(result.text, "slept 3000", "{result:?}");
    // The same task, polled to its end on the new connection.
    let Event::TaskStatus {
        task_id: last,
        status,
        ..
    } = next_event(
        &mut events,
        |e| matches!(e, Event::TaskStatus { status, .. } if status == "completed"),
    )
    .await
    else {
        unreachable!()
    };
    assert_eq!((last, status.as_str()), (task_id, "completed"));
    runtime.shutdown().await;
}

/// A task outlives an outage between the client and its server: with the load
/// balancer in front of the gateway answering 502 for a while, the polls that
/// fail are tried again later, each with a warning naming the task and the
/// failure, and the task's result still reaches its caller once the server is
/// reachable again.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_outlives_an_outage_between_the_client_and_its_server() {
    use mcpbox_tests::gateway::{ConfigFile, serve_http};
    use mcpbox_tests::stock::RoundRobin;
    let config = ConfigFile::new(&json!({"mcpServers": {"fixture": crate::fixture_entry(&[])}}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let backend: std::net::SocketAddr = gateway
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("the gateway's address");
    let proxy = RoundRobin::start(vec![backend], "/mcp");
    let runtime = open_on(&proxy.url).await;
    let mut events = runtime.events();
    let call = call_as_task(&runtime, "mcp__up__fixture__sleep", json!({"ms": 4000}));
    next_event(&mut events, |e| matches!(e, Event::TaskStatus { .. })).await;
    proxy.set_down(true);
    let Event::Warning(warning) = next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("tasks/get")),
    )
    .await
    else {
        unreachable!()
    };
    assert!(
        warning.contains("502") && warning.contains("polling again"),
        "{warning}"
    );
    proxy.set_down(false);
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the task ends in time")
        .expect("the call runs")
        .expect("the task's result reaches its caller after the outage");
    assert_eq!(result.text, "slept 4000", "{result:?}");
    runtime.shutdown().await;
}
