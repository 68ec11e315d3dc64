//! HTTP peers for the end-to-end tests.
//!
//! - [`everything_http`], [`fastmcp_http`] and [`ts_http`] start the pinned npm and PyPI servers
//!   in their HTTP modes on loopback ports found at run time (never fixed ones) and
//!   return once they listen; [`ServerProcess`] kills them when dropped.
//! - [`ScriptedServer`] is a small Streamable HTTP MCP server in the test process,
//!   on `127.0.0.1:0`, whose faults a test switches on: 500s, a response stream cut
//!   before its answer (resumable with `Last-Event-ID`), a session the server ends,
//!   a redirect. It records every HTTP request it gets, headers included.
//! - [`LegacyServer`] is a hostile legacy HTTP+SSE server: its `endpoint` event
//!   names whatever URL the test chooses.
//! - [`Recorder`] is "another origin": it records every request that reaches it
//!   and answers as a server would, so that a request sent there by mistake
//!   would look like success.
//!
//! Everything here panics with a descriptive message on failure: it is test code.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::peers::{fastmcp_http_command, npm_bin, ts_http_command};

/// How long a server may take to start listening: Node and Python on a busy
/// two-core machine.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// A loopback port that was free a moment ago, for servers that cannot be told
/// to pick one themselves (server-everything reads `PORT` and cannot report it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free loopback port")
        .port()
}

/// A server process; killed (and reaped) when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Its stderr lines so far (the last 2,000), for a failing test to show.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The MCP endpoint (Streamable HTTP) or the event-stream URL (legacy SSE).
    pub url: String,
}

impl ServerProcess {
    /// Kills it now and waits until it is gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its stderr lines so far.
    pub fn stderr(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` and waits until a stderr line makes `ready` return the URL.
/// `None` from `retry` on a line means "start again" (the port was taken).
fn start(
    mut command: Command,
    ready: &dyn Fn(&str) -> Option<String>,
    taken: &dyn Fn(&str) -> bool,
) -> Result<ServerProcess, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let until = Instant::now() + START_DEADLINE;
    let mut seen = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(url) = ready(&line) {
                    // Keep draining stderr so the server never blocks on a full pipe.
                    let log = std::sync::Arc::new(std::sync::Mutex::new(seen));
                    let kept = log.clone();
                    thread::spawn(move || {
                        while let Ok(line) = rx.recv() {
                            let mut lines = kept.lock().unwrap_or_else(|p| p.into_inner());
                            if lines.len() == 2000 {
                                lines.remove(0);
                            }
                            lines.push(line);
                        }
                    });
                    return Ok(ServerProcess { child, log, url });
                }
                let port_taken = taken(&line);
                seen.push(line);
                if port_taken {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(seen.join("\n"));
                }
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{command:?} did not start listening; stderr:\n{}",
                    seen.join("\n")
                );
            }
        }
    }
}

/// Starts `command` and waits until one of its stderr lines gives `ready` the URL.
///
/// # Panics
///
/// When it does not start listening within [`START_DEADLINE`].
pub fn start_with(command: Command, ready: &dyn Fn(&str) -> Option<String>) -> ServerProcess {
    start(command, ready, &|_| false).unwrap_or_else(|e| panic!("{e}"))
}

/// The transports `@modelcontextprotocol/server-everything` serves over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EverythingMode {
    /// Streamable HTTP at `/mcp`.
    StreamableHttp,
    /// The legacy HTTP+SSE transport: `GET /sse`, `POST /message`.
    Sse,
}

/// Starts server-everything in an HTTP mode on a free loopback port.
///
/// # Panics
///
/// When it is not installed or does not start.
pub fn everything_http(mode: EverythingMode) -> ServerProcess {
    let mut last = String::new();
    for _ in 0..3 {
        match everything_http_at(mode, free_port()) {
            Ok(server) => return server,
            Err(stderr) => last = stderr,
        }
    }
    panic!("server-everything found no free port in three tries:\n{last}");
}

/// Starts server-everything in an HTTP mode on `port`, for a server that comes
/// back on the port it had. `Err` holds its stderr when the port is taken.
///
/// # Panics
///
/// When it is not installed or does not start.
pub fn everything_http_at(mode: EverythingMode, port: u16) -> Result<ServerProcess, String> {
    let (arg, path, banner) = match mode {
        EverythingMode::StreamableHttp => ("streamableHttp", "/mcp", "listening on port"),
        EverythingMode::Sse => ("sse", "/sse", "running on port"),
    };
    let mut command = Command::new(npm_bin("mcp-server-everything"));
    command.arg(arg).env("PORT", port.to_string());
    let url = format!("http://127.0.0.1:{port}{path}");
    start(
        command,
        &|line| line.contains(banner).then(|| url.clone()),
        &|line| line.contains("in use"),
    )
}

/// Starts `tests/peers/fastmcp_server.py --http 0` (port chosen by the OS).
///
/// # Panics
///
/// When the venv is not installed or the server does not start.
pub fn fastmcp_http() -> ServerProcess {
    let (python, args) = fastmcp_http_command(0);
    let mut command = Command::new(python);
    command.args(args);
    let ready = |line: &str| {
        let rest = line.split("Uvicorn running on http://127.0.0.1:").nth(1)?;
        let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some(format!("http://127.0.0.1:{port}/mcp"))
    };
    start(command, &ready, &|_| false).unwrap_or_else(|e| panic!("{e}"))
}

/// Starts `tests/peers/ts_server.mjs --http 0` (TypeScript SDK v2, port chosen by
/// the OS).
///
/// # Panics
///
/// When the npm peers are not installed or the server does not start.
pub fn ts_http() -> ServerProcess {
    ts_http_at(0).unwrap_or_else(|e| panic!("{e}"))
}

/// Starts `tests/peers/ts_server.mjs --http PORT`, for a server that comes back on
/// the port it had. `Err` holds its stderr when the port is taken.
///
/// # Panics
///
/// When the npm peers are not installed or the server does not start.
pub fn ts_http_at(port: u16) -> Result<ServerProcess, String> {
    let (node, args) = ts_http_command(port);
    let mut command = Command::new(node);
    command.args(args);
    let ready = |line: &str| {
        let url = line.split("ts-peer listening on ").nth(1)?;
        Some(url.trim().to_owned())
    };
    start(command, &ready, &|line| line.contains("EADDRINUSE"))
}

/// One HTTP request the scripted server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST` or `DELETE`.
    pub method: String,
    /// The request target: path and query.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body of a POST.
    pub body: Option<Value>,
}

impl Seen {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC method of a POST.
    pub fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }
}

/// What the scripted server does wrong, set by the test.
#[derive(Debug, Default)]
struct Script {
    /// The next this many `tools/call`s are answered with HTTP 500.
    fail_calls: usize,
    /// The next `tools/call` gets an event stream that ends after a log
    /// notification, before the answer; the answer waits for a resumption.
    cut_next_call: bool,
    /// The session is forgotten: requests carrying it get 404.
    forget_session: bool,
    /// The next `tools/call` gets this redirect status to this location.
    redirect_next_call: Option<(u16, String)>,
    session: Option<String>,
    sessions: usize,
    /// Answers waiting for a GET with `Last-Event-ID` equal to the key.
    parked: Vec<(String, String)>,
    seen: Vec<Seen>,
}

/// A Streamable HTTP MCP server with switchable faults; see the module docs.
/// Serves one tool, `echo` (`{"text": string}` → that text). Stops when dropped.
#[derive(Debug)]
pub struct ScriptedServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    script: Arc<Mutex<Script>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    port: u16,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl ScriptedServer {
    /// Starts the server on `127.0.0.1:0`.
    pub fn start() -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let script = Arc::new(Mutex::new(Script::default()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (script, stop) = (script.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let script = script.clone();
                    thread::spawn(move || serve(stream, &script));
                }
            });
        }
        ScriptedServer {
            url: format!("http://127.0.0.1:{port}/mcp"),
            script,
            stop,
            port,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Script) -> R) -> R {
        f(&mut self.script.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Answers the next `n` `tools/call`s with HTTP 500 and the body `boom`.
    pub fn fail_next_calls(&self, n: usize) {
        self.with(|s| s.fail_calls = n);
    }

    /// Cuts the next `tools/call`'s event stream after a log notification
    /// ("before the cut"); its answer comes on a GET resuming after that event.
    pub fn cut_next_call(&self) {
        self.with(|s| s.cut_next_call = true);
    }

    /// Answers the next `tools/call` with HTTP `status` (`307`, `308`, …) and
    /// `Location: location`, verbatim.
    pub fn redirect_next_call(&self, status: u16, location: &str) {
        self.with(|s| s.redirect_next_call = Some((status, location.to_owned())));
    }

    /// `http://127.0.0.1:PORT`, the server's origin.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Ends the current session: requests carrying its id get 404 from now on.
    pub fn end_session(&self) {
        self.with(|s| s.forget_session = true);
    }

    /// How many sessions were started (`initialize` requests answered).
    pub fn sessions(&self) -> usize {
        self.with(|s| s.sessions)
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.with(|s| s.seen.clone())
    }
}

/// An HTTP request as read: method, path and query, headers (names
/// lower-cased), body.
type Request = (String, String, Vec<(String, String)>, Vec<u8>);

fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    stream.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        stream.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).ok()?;
    Some((method, path, headers, body))
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &str) {
    let mut text = format!(
        "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        text.push_str(&format!("{n}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    let _ = stream.write_all(text.as_bytes());
}

fn event_stream(stream: &mut TcpStream, session: Option<&str>, events: &[String]) {
    let mut text = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n".to_owned();
    if let Some(s) = session {
        text.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    text.push_str("\r\n");
    for e in events {
        text.push_str(e);
    }
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}

fn serve(stream: TcpStream, script: &Mutex<Script>) {
    let Ok(write) = stream.try_clone() else {
        return;
    };
    let mut write = write;
    let mut reader = BufReader::new(stream);
    let Some((method, path, headers, body)) = read_request(&mut reader) else {
        return;
    };
    let body: Option<Value> = serde_json::from_slice(&body).ok();
    let mut s = script.lock().unwrap_or_else(|p| p.into_inner());
    s.seen.push(Seen {
        method: method.clone(),
        path,
        headers: headers.clone(),
        body: body.clone(),
    });
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    match method.as_str() {
        "DELETE" => return respond(&mut write, "200 OK", &[], ""),
        "GET" => {
            let last = header("last-event-id");
            let parked = last.and_then(|id| {
                let i = s.parked.iter().position(|(after, _)| *after == id)?;
                Some(s.parked.remove(i).1)
            });
            drop(s);
            return match parked {
                Some(answer) => {
                    event_stream(&mut write, None, &[format!("id: e3\ndata: {answer}\n\n")])
                }
                None => respond(&mut write, "405 Method Not Allowed", &[], ""),
            };
        }
        _ => {}
    }
    let Some(body) = body else {
        return respond(&mut write, "400 Bad Request", &[], "not JSON");
    };
    let rpc = body["method"].as_str().unwrap_or_default().to_owned();
    let id = body["id"].clone();
    if rpc == "initialize" {
        s.sessions += 1;
        let session = format!("session-{}", s.sessions);
        s.session = Some(session.clone());
        s.forget_session = false;
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "scripted", "version": "1.0.0"}
        }});
        return respond(
            &mut write,
            "200 OK",
            &[
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", &session),
            ],
            &answer.to_string(),
        );
    }
    let sent_session = header("mcp-session-id");
    if s.forget_session || sent_session != s.session {
        return respond(&mut write, "404 Not Found", &[], "no such session");
    }
    if id.is_null() {
        return respond(&mut write, "202 Accepted", &[], "");
    }
    let json = |value: Value| value.to_string();
    match rpc.as_str() {
        "tools/list" => {
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
                "name": "echo", "description": "Returns the text it is given.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
            }]}});
            respond(
                &mut write,
                "200 OK",
                &[("Content-Type", "application/json")],
                &json(answer),
            );
        }
        "tools/call" if s.redirect_next_call.is_some() => {
            let (status, location) = s.redirect_next_call.take().unwrap_or_default();
            // The reason phrase means nothing to clients.
            let status = format!("{status} Redirect");
            respond(&mut write, &status, &[("Location", &location)], "");
        }
        "tools/call" if s.fail_calls > 0 => {
            s.fail_calls -= 1;
            respond(
                &mut write,
                "500 Internal Server Error",
                &[("Content-Type", "text/plain")],
                "boom",
            );
        }
        "tools/call" => {
            let text = body["params"]["arguments"]["text"].clone();
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}});
            if std::mem::take(&mut s.cut_next_call) {
                s.parked.push(("e2".into(), json(answer)));
                let session = s.session.clone();
                drop(s);
                let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "before the cut"}});
                // The stream ends here, before the answer: the client must resume.
                event_stream(
                    &mut write,
                    session.as_deref(),
                    &[
                        "id: e1\nretry: 100\ndata: \n\n".into(),
                        format!("id: e2\ndata: {log}\n\n"),
                    ],
                );
            } else {
                let session = s.session.clone();
                drop(s);
                let events = [format!("id: c1\ndata: {}\n\n", json(answer))];
                event_stream(&mut write, session.as_deref(), &events);
            }
        }
        _ => {
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}});
            respond(
                &mut write,
                "200 OK",
                &[("Content-Type", "application/json")],
                &json(answer),
            );
        }
    }
}

/// Another origin: records every request that reaches it (headers included)
/// and answers any JSON-RPC request with a result, as a real server would.
#[derive(Debug)]
pub struct Recorder {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    /// Starts it on `127.0.0.1:0`. It lives as long as the test process.
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let record = record.clone();
                thread::spawn(move || {
                    let Ok(mut write) = stream.try_clone() else {
                        return;
                    };
                    let mut reader = BufReader::new(stream);
                    let Some((method, path, headers, body)) = read_request(&mut reader) else {
                        return;
                    };
                    let body: Option<Value> = serde_json::from_slice(&body).ok();
                    let id = body.as_ref().map_or(Value::Null, |b| b["id"].clone());
                    record.lock().unwrap_or_else(|p| p.into_inner()).push(Seen {
                        method,
                        path,
                        headers,
                        body,
                    });
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": "stolen"}]}});
                    respond(
                        &mut write,
                        "200 OK",
                        &[("Content-Type", "application/json")],
                        &answer.to_string(),
                    );
                });
            }
        });
        Recorder {
            origin: format!("http://127.0.0.1:{port}"),
            seen,
        }
    }

    /// Every request that reached it.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A legacy HTTP+SSE server whose `endpoint` event names `endpoint`, verbatim;
/// it keeps the event stream open and records every request. Stops when dropped.
#[derive(Debug)]
pub struct LegacyServer {
    /// `http://127.0.0.1:PORT/sse`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    port: u16,
}

impl Drop for LegacyServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl LegacyServer {
    /// Starts it on `127.0.0.1:0`.
    pub fn start(endpoint: &str) -> LegacyServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (seen, stop, endpoint) = (seen.clone(), stop.clone(), endpoint.to_owned());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let (seen, endpoint) = (seen.clone(), endpoint.clone());
                    thread::spawn(move || {
                        let Ok(mut write) = stream.try_clone() else {
                            return;
                        };
                        let mut reader = BufReader::new(stream);
                        let Some((method, path, headers, body)) = read_request(&mut reader) else {
                            return;
                        };
                        let body: Option<Value> = serde_json::from_slice(&body).ok();
                        let get = method == "GET";
                        seen.lock().unwrap_or_else(|p| p.into_inner()).push(Seen {
                            method,
                            path,
                            headers,
                            body,
                        });
                        if !get {
                            return respond(&mut write, "202 Accepted", &[], "");
                        }
                        event_stream(
                            &mut write,
                            None,
                            &[format!("event: endpoint\ndata: {endpoint}\n\n")],
                        );
                        // The stream stays open until the client hangs up.
                        let mut rest = Vec::new();
                        let _ = reader.read_to_end(&mut rest);
                    });
                }
            });
        }
        LegacyServer {
            url: format!("http://127.0.0.1:{port}/sse"),
            seen,
            stop,
            port,
        }
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
