//! Tasks through the gateway: server-everything's `simulate-research-query`
//! requires a task (`execution.taskSupport: "required"`); the gateway's own
//! client runs it as one and polls it, so a downstream client that knows
//! nothing of tasks gets the report as a plain call's result, and one that runs
//! its calls as tasks (the TypeScript SDK's `callToolStream`) gets a task of the
//! gateway's, polled to the same report. A 2026-07-28 client that declares the
//! `io.modelcontextprotocol/tasks` extension gets the gateway's task in the
//! extension's form, polls it with `tasks/get` and answers its question with
//! `tasks/update`: rmcp's client (the one here with that extension; the
//! TypeScript SDK v2's has none), and the test itself over HTTP.

use std::time::{Duration, Instant};

use mcpbox_tests::everything_command;
use mcpbox_tests::gateway::{
    AUTHORIZATION, ConfigFile, SdkClient, Target, client_command, http, run_client, serve_http,
};
use serde_json::{Value, json};

use crate::{stdio_gateway, text};

/// The research query, plain and ambiguous (which asks for a clarification: the
/// client, with `--approve`, picks the first interpretation offered).
fn calls() -> [(&'static str, serde_json::Value); 2] {
    [
        (
            "everything__simulate-research-query",
            json!({"topic": "wasm"}),
        ),
        (
            "everything__simulate-research-query",
            json!({"topic": "wasm", "ambiguous": true}),
        ),
    ]
}

/// Both reports were written, the ambiguous one with the clarification asked.
fn check_reports(target: &Target, report: &serde_json::Value) {
    for call in 0..2 {
        assert_ne!(
            report["calls"][call]["isError"], true,
            "{target:?}: {report}"
        );
        assert!(
            text(&report["calls"][call]).starts_with("# Research Report: wasm"),
            "{target:?}: {report}"
        );
    }
    assert!(
        text(&report["calls"][1]).contains("**Clarification**: technical"),
        "{target:?}: the clarification reached the server: {report}"
    );
}

#[test]
fn a_client_without_tasks_gets_the_report_of_a_tool_that_requires_one() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
        let report = run_client(client_command(SdkClient::TsV1, &target, &calls(), true));
        check_reports(&target, &report);
    }
}

#[test]
fn a_client_with_tasks_polls_the_gateways_task_to_the_report() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    let stdio = stdio_gateway(&config.path, &[]);
    for target in [Target::Http(http.url.clone()), Target::Stdio(stdio.clone())] {
        let mut client = client_command(SdkClient::TsV1, &target, &calls(), true);
        client.env("MCPBOX_TEST_TASKS", "1");
        let report = run_client(client);
        for task in report["tasks"].as_array().unwrap() {
            assert!(
                task["taskId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("mcpbox-task-")),
                "{target:?}: the gateway's task: {report}"
            );
            assert_eq!(task["statuses"][0], "working", "{target:?}: {report}");
        }
        // The ambiguous query's task asked for its clarification.
        let statuses = report["tasks"][1]["statuses"].as_array().unwrap();
        assert!(
            statuses.iter().any(|s| s == "input_required"),
            "{target:?}: {report}"
        );
        check_reports(&target, &report);
    }
}

/// A 2026-07-28 request to the gateway at `url`, declaring the tasks extension
/// and form elicitation, with the headers the revision asks for; its response.
fn v2_request(url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"}
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(String::from);
    let mut headers = vec![
        AUTHORIZATION,
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = http(url, "POST", &headers, &body.to_string());
    response
        .messages()
        .into_iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer to {method}: {response:?}"))
}

/// What a user who takes the defaults answers an elicitation: each field's
/// default, or a required choice's first option.
fn defaults(request: &Value) -> Value {
    let schema = &request["params"]["requestedSchema"];
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    let mut content = serde_json::Map::new();
    for (key, spec) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(default) = spec.get("default") {
            content.insert(key.clone(), default.clone());
        } else if required.contains(&json!(key))
            && let Some(first) = spec["oneOf"][0]["const"]
                .as_str()
                .or(spec["enum"][0].as_str())
        {
            content.insert(key.clone(), json!(first));
        }
    }
    json!({"action": "accept", "content": content})
}

/// Polls the task to its end at the interval it suggests, answering its
/// questions with [`defaults`]; the final task and every status seen.
fn poll_to_the_end(url: &str, id: &str) -> (Value, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut statuses = Vec::new();
    while Instant::now() < deadline {
        let r = v2_request(url, "tasks/get", json!({"taskId": id}));
        let task = r["result"].clone();
        let status = task["status"].as_str().unwrap_or_else(|| panic!("{r}"));
        if statuses.last().map(String::as_str) != Some(status) {
            statuses.push(status.to_owned());
        }
        match status {
            "completed" | "failed" | "cancelled" => return (task, statuses),
            "input_required" => {
                let answers: serde_json::Map<String, Value> = task["inputRequests"]
                    .as_object()
                    .unwrap_or_else(|| panic!("questions: {task}"))
                    .iter()
                    .map(|(key, request)| (key.clone(), defaults(request)))
                    .collect();
                let r = v2_request(
                    url,
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": answers}),
                );
                assert_eq!(r["result"], json!({"resultType": "complete"}), "{r}");
            }
            _ => {}
        }
        // The protocol's own pacing: the interval the task suggests.
        let interval = task["pollIntervalMs"].as_u64().unwrap_or(1000).min(1000);
        std::thread::sleep(Duration::from_millis(interval));
    }
    panic!("task {id} never ended: {statuses:?}")
}

#[test]
fn a_2026_client_with_the_tasks_extension_polls_the_report_and_answers_its_question() {
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let r = v2_request(&gateway.url, "server/discover", json!({}));
    assert_eq!(
        r["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{r}"
    );
    let mut reports = Vec::new();
    for (name, arguments) in calls() {
        let r = v2_request(
            &gateway.url,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        let created = &r["result"];
        assert_eq!(created["resultType"], "task", "{r}");
        let id = created["taskId"].as_str().unwrap_or_else(|| panic!("{r}"));
        assert!(created["pollIntervalMs"].is_u64(), "{r}");
        let (task, statuses) = poll_to_the_end(&gateway.url, id);
        assert_eq!(task["status"], "completed", "{statuses:?}: {task}");
        reports.push((task["result"].clone(), statuses));
    }
    let calls: Vec<Value> = reports.iter().map(|(r, _)| r.clone()).collect();
    check_reports(&Target::Http(gateway.url.clone()), &json!({"calls": calls}));
    // The ambiguous query asked, and went on once answered.
    assert!(
        reports[1].1.iter().any(|s| s == "input_required"),
        "{:?}",
        reports[1].1
    );
}

/// rmcp's client, which has the tasks extension (`call_tool_once`, `get_task`,
/// `update_task`), in the 2026-07-28 era: the research query becomes a task of
/// the gateway's, whose question it answers with `tasks/update`; a quick tool
/// is answered plainly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_takes_the_gateways_tasks_in_the_2026_era() {
    use rmcp::handler::client::ClientHandler;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
        Implementation, ProtocolVersion, TaskPayload, UpdateTaskParams,
    };
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    struct TaskTaker;

    impl ClientHandler for TaskTaker {
        fn get_info(&self) -> ClientConfig {
            let capabilities: ClientCapabilities = serde_json::from_value(json!({
                "elicitation": {"form": {}},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }))
            .expect("client capabilities");
            ClientConfig::new(capabilities, Implementation::new("rmcp-tasks", "1.0.0"))
        }
    }

    // reqwest needs a process-wide TLS provider even for plain http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (command, args) = everything_command();
    let config = ConfigFile::new(&json!({"mcpServers": {
        "everything": {"command": command, "args": args},
    }}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = TaskTaker
        .serve_with_lifecycle(crate::rmcp_http(&gateway.url), lifecycle)
        .await
        .expect("rmcp connects");
    let arguments = |v: Value| v.as_object().cloned().unwrap_or_default();

    let quick = client
        .call_tool_once(
            CallToolRequestParams::new("everything__echo")
                .with_arguments(arguments(json!({"message": "hi"}))),
        )
        .await
        .expect("tools/call");
    assert!(
        matches!(quick, CallToolResponse::Complete(_)),
        "a quick call is answered plainly: {quick:?}"
    );

    let (_, ambiguous) = calls()[1].clone();
    let created = client
        .call_tool_once(
            CallToolRequestParams::new("everything__simulate-research-query")
                .with_arguments(arguments(ambiguous)),
        )
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = created else {
        panic!("a task: {created:?}");
    };
    let id = created.task.task_id.clone();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut asked = false;
    let result = loop {
        assert!(Instant::now() < deadline, "task {id} never ended");
        let got = client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        match got.task.payload {
            TaskPayload::Completed { result } => break Value::Object(result),
            TaskPayload::InputRequired { input_requests } => {
                asked = true;
                let answers = input_requests
                    .iter()
                    .map(|(key, request)| {
                        let request = serde_json::to_value(request).expect("a request");
                        (key.clone(), defaults(&request))
                    })
                    .collect();
                client
                    .update_task(UpdateTaskParams::new(id.clone(), answers))
                    .await
                    .expect("tasks/update");
            }
            TaskPayload::Working => {}
            other => panic!("task {id} ended so: {other:?}"),
        }
        let interval = got.task.task.poll_interval_ms.unwrap_or(1000).min(1000);
        tokio::time::sleep(Duration::from_millis(interval)).await;
    };
    assert!(asked, "the ambiguous query asks for a clarification");
    assert!(
        text(&result).contains("**Clarification**: technical"),
        "{result}"
    );
    client.cancel().await.expect("close");
}
