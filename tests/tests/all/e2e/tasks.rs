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
    let caller = runtime.clone();
    let call = tokio::spawn(async move {
        let as_task = CallOptions {
            task: true,
            ..CallOptions::default()
        };
        caller
            .call_tool("mcp__tasks__count", json!({"steps": 4, "ms": 250}), as_task)
            .await
    });
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
