//! A bare-hands MCP stdio client, for checking a server without mcpbox in between.
//!
//! [`StdioPeer`] spawns a server, writes JSON-RPC messages as lines to its stdin and
//! reads its stdout and stderr on threads, so that every read has a deadline and a
//! silent server fails the test instead of hanging it. The tests use it to pin down
//! what the fixture server and the real peers actually do, which is what mcpbox's
//! own tests then rely on.
//!
//! Everything here panics with a descriptive message on failure: it is test code.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one expected message may take by default: generous, for a loaded
/// 2-core CI machine starting Node or Python.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// One server process spoken to over stdio; killed when dropped.
#[derive(Debug)]
pub struct StdioPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    next_id: u64,
    /// How long each read waits before panicking.
    pub deadline: Duration,
}

impl StdioPeer {
    /// Spawns `command` with `args`, with piped stdin, stdout and stderr.
    ///
    /// # Panics
    ///
    /// When the process cannot be started.
    pub fn spawn<S: AsRef<str>>(command: &str, args: &[S]) -> Self {
        let mut command_line = Command::new(command);
        command_line.args(args.iter().map(AsRef::as_ref));
        Self::from_command(command_line)
    }

    /// Spawns a prepared [`Command`] (to set its environment or working directory);
    /// its stdio is replaced by pipes.
    ///
    /// # Panics
    ///
    /// When the process cannot be started.
    pub fn from_command(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdin = child.stdin.take();
        let stdout = read_lines(child.stdout.take().expect("piped stdout"));
        let stderr = read_lines(child.stderr.take().expect("piped stderr"));
        StdioPeer {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 1,
            deadline: DEFAULT_DEADLINE,
        }
    }

    /// Writes one line as is (no JSON check), for sending malformed input.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("writing to the server: {e}"));
    }

    /// Writes one JSON-RPC message.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request with the next free numeric id and returns that id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns its whole response (`result` or `error`),
    /// skipping whatever the server sends before it.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id).0
    }

    /// Reads until the response to request `id`; returns it and every message read
    /// before it (notifications, other responses), in order.
    pub fn response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.next_message();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// The next message on stdout.
    ///
    /// # Panics
    ///
    /// When the line is not JSON, or none arrives within the deadline.
    pub fn next_message(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("server wrote a non-JSON line ({e}): {line:?}"))
    }

    /// The next line on stdout, whatever it holds.
    ///
    /// # Panics
    ///
    /// When none arrives within the deadline or stdout closes.
    pub fn next_line(&mut self) -> String {
        match self.stdout.recv_timeout(self.deadline) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no line from the server within {:?}; stderr: {:?}",
                    self.deadline,
                    self.stderr_so_far()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "the server closed stdout; stderr: {:?}",
                    self.stderr_so_far()
                )
            }
        }
    }

    /// The next line on stderr.
    ///
    /// # Panics
    ///
    /// When none arrives within the deadline.
    pub fn stderr_line(&mut self) -> String {
        self.stderr
            .recv_timeout(self.deadline)
            .unwrap_or_else(|e| panic!("no stderr line within {:?}: {e}", self.deadline))
    }

    /// Reads stderr until a line contains `needle`; false when stderr closes or
    /// stays silent for the deadline first.
    pub fn stderr_until(&mut self, needle: &str) -> bool {
        while let Ok(line) = self.stderr.recv_timeout(self.deadline) {
            if line.contains(needle) {
                return true;
            }
        }
        false
    }

    /// Sends `initialize` asking for `protocol_version`, then
    /// `notifications/initialized`; returns the `initialize` result.
    ///
    /// # Panics
    ///
    /// When the server answers with an error.
    pub fn initialize(&mut self, protocol_version: &str) -> Value {
        let reply = self.request(
            "initialize",
            json!({
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "mcpbox-tests", "version": env!("CARGO_PKG_VERSION")},
            }),
        );
        let result = reply
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("initialize failed: {reply}"));
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// Every tool from `tools/list`, following `nextCursor` to the end.
    ///
    /// # Panics
    ///
    /// When the server answers with an error.
    pub fn list_tools(&mut self) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut params = json!({});
        loop {
            let reply = self.request("tools/list", params);
            let result = reply
                .get("result")
                .unwrap_or_else(|| panic!("tools/list failed: {reply}"));
            tools.extend(result["tools"].as_array().cloned().unwrap_or_default());
            match result.get("nextCursor") {
                Some(Value::String(cursor)) => params = json!({"cursor": cursor}),
                _ => return tools,
            }
        }
    }

    /// Calls a tool and returns its `result`.
    ///
    /// # Panics
    ///
    /// When the server answers with a JSON-RPC error.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        reply
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {name} failed: {reply}"))
    }

    /// The process id, to signal it.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Closes the server's stdin, the MCP stdio way of asking it to exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit by itself.
    ///
    /// # Panics
    ///
    /// When it is still running after the deadline.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + self.deadline;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {:?}",
                self.deadline
            );
            // std offers no wait-with-timeout on a child; poll briefly.
            thread::sleep(Duration::from_millis(5));
        }
    }

    fn stderr_so_far(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first text content block of a tool result.
///
/// # Panics
///
/// When the result has none.
pub fn first_text(result: &Value) -> &str {
    result["content"]
        .as_array()
        .and_then(|blocks| blocks.iter().find_map(|block| block["text"].as_str()))
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

/// The `name`s of a `tools/list` result's tools.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

fn read_lines(reader: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}
