//! The status dashboard beside `/mcp`: one static page (`dashboard.html`, built
//! into the binary), the REST API it reads, its live events, and `/metrics`.
//!
//! | path | what |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /api/servers` | every server: state, tools, protocol version, uptime, restarts, last error |
//! | `GET /api/servers/{name}` | one server, with its tools, stderr tail and log messages |
//! | `GET /api/tools` | every tool with its description and schemas |
//! | `GET /api/calls` | the latest calls (their audit records) |
//! | `GET /api/timeline` | each server's calls second by second, for the chart |
//! | `GET /api/approvals` | the `ask` approvals waiting for an answer |
//! | `GET /api/events` | live events, as Server-Sent Events |
//! | `GET /metrics` | the Prometheus text format |
//! | `POST /api/servers/{name}/reconnect` | connects a server afresh |
//! | `POST /api/tools/{name}/call` | calls a tool, as any caller of the runtime does |
//! | `POST /api/approvals/{id}` | answers an approval: once, for the session, or deny |
//!
//! Everything here reads what the runtime already publishes (its server and tool
//! snapshots, its events, the counts and bounded tails of `Options::metrics`):
//! the dashboard adds no state of its own. Its actions are the runtime's own
//! (`Runtime::reconnect`, `Runtime::call_tool_as`, `Runtime::answer_input`), so a
//! call from the page meets the permission rules as any call does: a `deny` rule
//! refuses it, an `ask` rule holds it until someone answers its approval (the
//! page, or another page: the first answer wins). A gateway started with
//! `--profile` makes the page's calls under that profile, as it serves `/mcp`:
//! the page cannot call what its clients may not. The page is plain HTML and
//! JavaScript with no build step and no framework: tables, lists, a form built
//! from a tool's input schema and a chart drawn as inline SVG.
//!
//! The page is served with a strict `Content-Security-Policy`: its own inline
//! script and style (allowed by their SHA-256, computed from the page as built
//! in) and requests to its own origin, nothing else — no other script, no
//! inline event handlers or style attributes, no plugins, forms or `<base>` —
//! and `frame-ancestors 'none'` with `X-Frame-Options: DENY`, so no other site
//! can frame it (clickjacking). Text from servers is written into it escaped
//! (`esc` in the page); the policy is the second line if that ever failed.

use std::sync::{Arc, LazyLock};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

use super::http::{Guard, ResponseBody, Shared, Stream, percent_decode, plain, sse};
use super::sse::{Item, SseBody, stream};
use crate::metrics::{LATENCY_BUCKETS, MetricsSnapshot, PROMETHEUS_CONTENT_TYPE, ServerMetrics};
use crate::types::{CallError, Event, InputAnswer, ServerState, ServerStatus};
use crate::{CallOptions, Runtime};

/// The page, with its script and style inline.
const PAGE: &str = include_str!("dashboard.html");

/// The page's `Content-Security-Policy` (see the module docs).
static PAGE_POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    let script = inline_hashes(PAGE, "<script>", "</script>");
    let style = inline_hashes(PAGE, "<style>", "</style>");
    let policy = format!(
        "default-src 'none'; script-src {script}; style-src {style}; connect-src 'self'; \
         img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy)
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
});

/// `'sha256-…'` of the text of each `open`…`close` element of `page`, as CSP
/// matches inline scripts and styles; `'none'` when there is none.
fn inline_hashes(page: &str, open: &str, close: &str) -> String {
    let mut hashes = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else { break };
        let digest = Sha256::digest(&after.as_bytes()[..end]);
        hashes.push(format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        ));
        rest = &after[end + close.len()..];
    }
    if hashes.is_empty() {
        "'none'".into()
    } else {
        hashes.join(" ")
    }
}

/// Whether the request is for the page itself (which loads without the token).
pub(super) fn is_page(req: &Request<Incoming>) -> bool {
    req.method() == Method::GET && matches!(req.uri().path(), "/" | "/index.html")
}

/// Whether the path is the dashboard's (the page, `/api/…`, `/metrics`): the
/// host's to answer, under its own token and `Origin` checks.
pub(super) fn is_ours(req: &Request<Incoming>) -> bool {
    let path = req.uri().path();
    matches!(path, "/" | "/index.html" | "/metrics") || path.starts_with("/api/")
}

/// The dashboard's answer, or `None` when the path is not the dashboard's.
pub(super) fn handle(
    shared: &Arc<Shared>,
    req: &Request<Incoming>,
) -> Option<Response<ResponseBody>> {
    let path = req.uri().path();
    if !is_ours(req) {
        return None;
    }
    // The one action: reconnect a server. It passed the token and Origin checks
    // of every request but the page (`http::handle`), as a `/mcp` request does.
    if req.method() == Method::POST
        && let Some(name) = path
            .strip_prefix("/api/servers/")
            .and_then(|rest| rest.strip_suffix("/reconnect"))
            .filter(|name| !name.is_empty() && !name.contains('/'))
    {
        return Some(reconnect(shared, &percent_decode(name)));
    }
    if req.method() != Method::GET {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "the dashboard answers GET only (and POST to /api/servers/{name}/reconnect, \
             /api/tools/{name}/call and /api/approvals/{id})",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return Some(r);
    }
    let runtime = &shared.runtime;
    Some(match path {
        "/" | "/index.html" => {
            let mut r = body(PAGE.into(), "text/html; charset=utf-8");
            let h = r.headers_mut();
            h.insert(header::CONTENT_SECURITY_POLICY, PAGE_POLICY.clone());
            h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            h.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            r
        }
        "/metrics" => match runtime.metrics() {
            Some(snapshot) => body(snapshot.prometheus_text().into(), PROMETHEUS_CONTENT_TYPE),
            None => plain(
                StatusCode::NOT_FOUND,
                "metrics are off: open the runtime with Options::metrics(true) \
                 (`mcpbox serve --http` and `mcpbox dashboard` do)",
            ),
        },
        "/api/servers" => {
            let metrics = runtime.metrics();
            let servers: Vec<Value> = runtime
                .servers()
                .iter()
                .map(|s| server_json(s, metrics.as_ref()))
                .collect();
            json_body(&json!({"servers": servers, "metrics": metrics.is_some()}))
        }
        // Written straight from the snapshot: no `Value` in between (10,000 tools
        // with their schemas are megabytes).
        "/api/tools" => list_body("tools", &runtime.tools()),
        "/api/calls" => list_body("calls", &runtime.recent_calls()),
        "/api/timeline" => match runtime.monitor() {
            Some(monitor) => json_body(&json!({
                "seconds": crate::metrics::TIMELINE_SECONDS,
                "bucketsMs": LATENCY_BUCKETS.iter().map(|b| b * 1000.0).collect::<Vec<_>>(),
                "servers": monitor.timeline(),
            })),
            None => metrics_off(),
        },
        "/api/approvals" => match runtime.monitor() {
            Some(monitor) => list_body("approvals", &monitor.approvals()),
            None => metrics_off(),
        },
        "/api/events" => events(shared),
        _ => match path.strip_prefix("/api/servers/") {
            Some(name) if !name.is_empty() && !name.contains('/') => {
                server_detail(runtime, &percent_decode(name))
            }
            _ => plain(
                StatusCode::NOT_FOUND,
                "not found: the dashboard's API is /api/servers, /api/servers/{name}, \
                 /api/tools, /api/calls, /api/timeline, /api/approvals and /api/events",
            ),
        },
    })
}

fn metrics_off() -> Response<ResponseBody> {
    plain(
        StatusCode::NOT_FOUND,
        "metrics are off: open the runtime with Options::metrics(true) \
         (`mcpbox serve --http` and `mcpbox dashboard` do)",
    )
}

/// What a dashboard action is, from its method and path.
enum Action {
    /// `POST /api/tools/{name}/call`
    Call(String),
    /// `POST /api/approvals/{id}`
    Answer(String),
}

fn action(req: &Request<Incoming>) -> Option<Action> {
    if req.method() != Method::POST {
        return None;
    }
    let path = req.uri().path();
    let one = |s: &str| (!s.is_empty() && !s.contains('/')).then(|| percent_decode(s));
    if let Some(name) = path
        .strip_prefix("/api/tools/")
        .and_then(|rest| rest.strip_suffix("/call"))
    {
        return one(name).map(Action::Call);
    }
    path.strip_prefix("/api/approvals/")
        .and_then(one)
        .map(Action::Answer)
}

/// Whether the request is one of the actions that read a body (a tool call,
/// an approval's answer): [`act`] answers those.
pub(super) fn is_action(req: &Request<Incoming>) -> bool {
    action(req).is_some()
}

/// Answers an action (see [`is_action`]). It passed the token and Origin checks
/// of every request but the page (`http::handle`), as a `/mcp` request does; its
/// body must be JSON, within the size and time limits of `/mcp`'s.
pub(super) async fn act(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ResponseBody> {
    let Some(action) = action(&req) else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    if let Some(refusal) = super::http::not_json(&req) {
        return refusal;
    }
    let limit = shared.options.max_body_bytes;
    let timeout = shared.options.read_timeout;
    let body =
        match tokio::time::timeout(timeout, Limited::new(req.into_body(), limit).collect()).await {
            Err(_) => {
                return plain(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!(
                        "the request body did not arrive within {}s",
                        timeout.as_secs_f64()
                    ),
                );
            }
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the request body is over the limit of {limit} bytes"),
                );
            }
            Ok(Err(_)) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                );
            }
            Ok(Ok(body)) => body.to_bytes(),
        };
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not JSON: {e}"),
            );
        }
    };
    match action {
        Action::Call(name) => {
            let profile = shared.default_profile.as_deref();
            call(&shared.runtime, &name, value, profile).await
        }
        Action::Answer(id) => answer(&shared.runtime, &id, &value).await,
    }
}

/// `POST /api/tools/{name}/call` with the arguments (a JSON object) as the body:
/// `200 {result}` with the tool's result (`isError` set when the tool failed),
/// or `200 {error: {kind, message}}` when it produced none (`denied` by a rule or
/// an approval refused, `invalid-arguments`, `unknown-tool`, …). The answer waits
/// for the call, approval included (and for the tool, while its server is still
/// starting); a client that goes away cancels it. A gateway started with a
/// profile (`serve --profile`) binds the page too: its calls are made under that
/// profile, as `/mcp`'s are.
async fn call(
    runtime: &Runtime,
    name: &str,
    arguments: Value,
    profile: Option<&str>,
) -> Response<ResponseBody> {
    if !matches!(arguments, Value::Object(_)) {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "the body of POST /api/tools/{name}/call is the call's arguments, a JSON \
                 object (`{{}}` for none)"
            ),
        );
    }
    // A tool of a server still starting is waited for, as a client's
    // `tools/list` waits for the servers starting.
    let _ = runtime.wait_for_tool(name).await;
    match runtime
        .call_tool_as(name, arguments, CallOptions::default(), profile)
        .await
    {
        Ok(result) => json_body(&json!({"result": result})),
        Err(e) => {
            let kind = match &e {
                CallError::UnknownTool(_) => "unknown-tool",
                CallError::InvalidArguments(_) => "invalid-arguments",
                CallError::ServerUnavailable(_) => "server-unavailable",
                CallError::Timeout(_) => "timeout",
                CallError::Cancelled => "cancelled",
                CallError::Protocol(_) => "protocol",
                CallError::Denied(_) => "denied",
                _ => "runtime",
            };
            json_body(&json!({"error": {"kind": kind, "message": e.to_string()}}))
        }
    }
}

/// `POST /api/approvals/{id}` with `{"answer": "once" | "session" | "deny"}`:
/// answers the approval (`Runtime::answer_input`); `200 {answered}`. `404` when no
/// approval of that id waits: answered already (the first answer wins) or
/// withdrawn (its call ended).
async fn answer(runtime: &Runtime, id: &str, body: &Value) -> Response<ResponseBody> {
    let answer = match body.get("answer").and_then(Value::as_str) {
        Some("once") => InputAnswer::approve_once(),
        Some("session") => InputAnswer::approve_for_session(),
        Some("deny") => InputAnswer::Decline,
        _ => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!(
                    "the body of POST /api/approvals/{id} is {{\"answer\": \"once\"}}, \
                     {{\"answer\": \"session\"}} or {{\"answer\": \"deny\"}}, not {body}"
                ),
            );
        }
    };
    let gone = || {
        plain(
            StatusCode::NOT_FOUND,
            &format!(
                "no approval {id} is waiting: it was answered already, or its call ended \
                 (GET /api/approvals lists those that wait)"
            ),
        )
    };
    let Some(id) = id.parse::<u64>().ok().filter(|id| {
        runtime
            .monitor()
            .is_some_and(|m| m.approvals().iter().any(|a| a.id == *id))
    }) else {
        return gone();
    };
    match runtime.answer_input(id, answer).await {
        Ok(()) => json_body(&json!({"answered": id})),
        Err(_) => gone(),
    }
}

/// `POST /api/servers/{name}/reconnect`: connects the server afresh and forgives
/// its failures (`Runtime::reconnect`); `202` at once, the new status follows on
/// the event stream. `404` for a server that is not configured.
fn reconnect(shared: &Arc<Shared>, name: &str) -> Response<ResponseBody> {
    if !shared.runtime.servers().iter().any(|s| s.name == name) {
        return plain(
            StatusCode::NOT_FOUND,
            &format!("no server is named `{name}`"),
        );
    }
    let runtime = shared.runtime.clone();
    let server = name.to_owned();
    tokio::spawn(async move {
        // A refusal (a disabled server) shows as the server's status.
        let _ = runtime.reconnect(&server).await;
    });
    let mut r = json_body(&json!({"reconnecting": name}));
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn body(text: Bytes, content_type: &'static str) -> Response<ResponseBody> {
    let mut r = Response::new(Either::Left(Full::new(text)));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json_body(value: &Value) -> Response<ResponseBody> {
    body(value.to_string().into(), "application/json")
}

/// `{"NAME": [items…]}`.
fn list_body<T: serde::Serialize>(name: &str, items: &[T]) -> Response<ResponseBody> {
    let mut map = std::collections::BTreeMap::new();
    map.insert(name, items);
    match serde_json::to_vec(&map) {
        Ok(bytes) => body(bytes.into(), "application/json"),
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("writing the {name}: {e}"),
        ),
    }
}

/// The CLI's symbol for a state (`mcpbox servers`).
fn symbol(state: ServerState) -> &'static str {
    match state {
        ServerState::Connected => "●",
        ServerState::Starting => "○",
        ServerState::Failed => "✗",
        ServerState::Closed => "–",
    }
}

/// A server as the API shows it: its status and, with metrics on, its counts.
fn server_json(s: &ServerStatus, metrics: Option<&MetricsSnapshot>) -> Value {
    let mut v = json!(s);
    v["symbol"] = json!(symbol(s.state));
    let counts: Option<&ServerMetrics> =
        metrics.and_then(|m| m.servers.iter().find(|m| m.name == s.name));
    if let Some(m) = counts {
        v["uptimeSeconds"] = json!(m.uptime.map(|d| d.as_secs_f64()));
        v["restarts"] = json!(m.restarts);
        v["lastError"] = json!(m.last_error);
        v["lastRestart"] = json!(
            m.last_restart
                .map(|t| humantime::format_rfc3339_millis(t).to_string())
        );
    }
    v
}

fn server_detail(runtime: &Runtime, name: &str) -> Response<ResponseBody> {
    let servers = runtime.servers();
    let Some(status) = servers.iter().find(|s| s.name == name) else {
        return plain(
            StatusCode::NOT_FOUND,
            &format!(
                "no server is named `{name}` in the configuration (GET /api/servers lists them)"
            ),
        );
    };
    let mut v = server_json(status, runtime.metrics().as_ref());
    let tools: Vec<_> = runtime
        .tools()
        .iter()
        .filter(|t| t.server == name)
        .cloned()
        .collect();
    v["tools"] = json!(tools);
    let diagnostics = runtime.diagnostics(name).unwrap_or_default();
    v["stderrTail"] = json!(diagnostics.stderr_tail);
    v["log"] = json!(runtime.monitor().map(|m| m.logs(name)).unwrap_or_default());
    v["exitStatus"] = json!(diagnostics.exit_status);
    v["sandbox"] = json!(diagnostics.sandbox);
    json_body(&v)
}

/// An event as the page gets it, or `None` for those it does not show (a server's
/// input requests and authorization URLs are for the embedder's user, not a
/// status page; approvals of `ask` rules are for whoever answers first).
fn event_json(runtime: &Runtime, event: &Event) -> Option<Value> {
    Some(match event {
        Event::Status(s) => {
            json!({"type": "status", "server": server_json(s, runtime.metrics().as_ref())})
        }
        Event::ToolsChanged(server) => json!({"type": "tools", "server": server}),
        Event::ToolChanged {
            server,
            tool,
            name,
            changed,
            policy,
            reason,
        } => json!({
            "type": "toolChanged", "server": server, "tool": tool, "name": name,
            "changed": changed, "policy": policy, "reason": reason,
        }),
        Event::Audit(record) => json!({"type": "call", "call": record}),
        Event::Warning(message) => json!({"type": "warning", "message": message}),
        Event::Log {
            server,
            level,
            message,
        } => json!({"type": "log", "server": server, "level": level, "message": message}),
        Event::Reloaded(report) => json!({"type": "reloaded", "report": report}),
        Event::ReloadFailed { origin, error } => {
            json!({"type": "reloadFailed", "origin": origin, "error": error})
        }
        Event::Stopped(reason) => json!({"type": "stopped", "reason": reason}),
        Event::InputRequested(r) if r.approval.is_some() => {
            json!({"type": "approval", "approval": r})
        }
        Event::InputWithdrawn(id) | Event::InputAnswered(id) => {
            json!({"type": "approvalEnded", "id": id})
        }
        _ => return None,
    })
}

fn message(value: &Value) -> Item {
    Item::Message {
        id: None,
        text: Arc::from(value.to_string()),
    }
}

/// `GET /api/events`: the runtime's events from now on, one SSE event each. It
/// opens with `{"type":"hello"}`, after which the page reads the snapshots, so
/// nothing falls between. A client that fell behind the runtime's event queue
/// gets `{"type":"resync"}` (read the snapshots again); one that reads so
/// slowly that its events pass
/// [`HttpOptions::stream_buffer_bytes`](crate::HttpOptions::stream_buffer_bytes)
/// gets a closed stream (the page reconnects).
fn events(shared: &Arc<Shared>) -> Response<ResponseBody> {
    let runtime = shared.runtime.clone();
    let mut events = runtime.events();
    let (tx, rx) = stream(shared.options.stream_buffer_bytes);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = tx.closed() => return,
                event = events.recv() => event,
            };
            let mut last = false;
            let item = match event {
                Ok(event) => {
                    // The last event: the stream ends after it, and lets the runtime go.
                    last = matches!(event, Event::Stopped(_));
                    match event_json(&runtime, &event) {
                        Some(v) => message(&v),
                        None => continue,
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => message(&json!({"type": "resync"})),
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if tx.try_send(vec![item]).is_err() || last {
                // Dropping `tx` ends the stream; the page reconnects and reads afresh.
                return;
            }
        }
    });
    let guard = Guard {
        shared: shared.clone(),
        stream: Stream::Dashboard,
        attached: 0,
        armed: false,
    };
    sse(SseBody::new(
        vec![message(&json!({"type": "hello"}))],
        rx,
        guard,
    ))
}
