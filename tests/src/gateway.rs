//! `mcpbox serve` for the gateway tests, and the real MCP clients that talk to it.
//!
//! The gateway runs as the CLI itself: the `mcpbox` program of the mcpbox-cli
//! crate (`cli/`), which a test finds with [`crate::mcpbox_program`]. The clients are the official SDKs' own:
//! `tests/peers/ts_client.mjs` on the TypeScript SDK v1 (`@modelcontextprotocol/sdk`)
//! or v2 (`@modelcontextprotocol/client`), and `tests/peers/py_client.py` on the
//! Python SDK (`mcp`), each pinned in `tests/peers/`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::http::ServerProcess;
use crate::peers::{peers_dir, python_venv};

/// How long one client run may take: Node or Python start-up plus a gateway and
/// its servers starting, on a busy two-core machine.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(120);

/// The bearer token every gateway of the tests requires (`MCPBOX_TOKEN`, as
/// [`serve_http`] starts them); their clients send it.
pub const TOKEN: &str = "mcpbox-gateway-tests-token";

/// The header that carries [`TOKEN`].
pub const AUTHORIZATION: (&str, &str) = ("Authorization", "Bearer mcpbox-gateway-tests-token");

/// A configuration file of the test's own, removed when dropped.
#[derive(Debug)]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
}

impl ConfigFile {
    /// Writes `config` (the whole `.mcp.json` value) to a fresh file.
    pub fn new(config: &Value) -> ConfigFile {
        static N: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "mcpbox-gateway-{}-{}.json",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, config.to_string()).expect("write the configuration");
        ConfigFile { path }
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts `CLI --config CONFIG serve --http 127.0.0.1:0 EXTRA…`, requiring
/// [`TOKEN`], in this test process's cache and configuration directories
/// ([`process_env`](crate::compiled_guest::process_env)), and waits for its
/// `listening on http://ADDR/mcp` line; the process's URL is that endpoint.
///
/// # Panics
///
/// When it does not start listening.
pub fn serve_http(cli: &str, config: &Path, extra: &[&str]) -> ServerProcess {
    let mut command = Command::new(cli);
    command
        // The configuration is the test's own (see `mcpbox trust`).
        .arg("--trust")
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .envs(crate::compiled_guest::process_env())
        .env("MCPBOX_TOKEN", TOKEN);
    crate::http::start_with(command, &|line| {
        let url = line.split("listening on ").nth(1)?;
        Some(url.trim().to_owned())
    })
}

/// Which SDK client to run, and in which era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdkClient {
    /// TypeScript SDK v1 (`@modelcontextprotocol/sdk` 1.x): `initialize`, 2025-11-25.
    TsV1,
    /// TypeScript SDK v2 (`@modelcontextprotocol/client`), the legacy handshake.
    TsV2Legacy,
    /// TypeScript SDK v2, pinned to 2026-07-28 (stateless).
    TsV2Stateless,
    /// Python SDK (`mcp` 2.x), the legacy handshake.
    PyLegacy,
    /// Python SDK, 2026-07-28.
    PyStateless,
}

impl SdkClient {
    /// Every client and era.
    pub const ALL: [SdkClient; 5] = [
        SdkClient::TsV1,
        SdkClient::TsV2Legacy,
        SdkClient::TsV2Stateless,
        SdkClient::PyLegacy,
        SdkClient::PyStateless,
    ];

    /// Whether it speaks the 2026-07-28 revision.
    pub fn stateless(self) -> bool {
        matches!(self, SdkClient::TsV2Stateless | SdkClient::PyStateless)
    }
}

/// Where a client finds the gateway.
#[derive(Debug, Clone)]
pub enum Target {
    /// Streamable HTTP at this URL (the client sends [`TOKEN`]).
    Http(String),
    /// A program to start and speak stdio with: command and arguments.
    Stdio(Vec<String>),
}

/// The command line that runs `client` against `target`, making `calls`
/// (tool name, arguments) after listing the tools.
pub fn client_command(
    client: SdkClient,
    target: &Target,
    calls: &[(&str, Value)],
    approve: bool,
) -> Command {
    let mut command = match client {
        SdkClient::PyLegacy | SdkClient::PyStateless => {
            let mut c = Command::new(python_venv().join("bin").join("python"));
            c.arg(peers_dir().join("py_client.py"));
            c.args([
                "--era",
                if client.stateless() {
                    "2026-07-28"
                } else {
                    "legacy"
                },
            ]);
            c
        }
        _ => {
            let mut c = Command::new("node");
            c.arg(peers_dir().join("ts_client.mjs"));
            let sdk = if client == SdkClient::TsV1 {
                "v1"
            } else {
                "v2"
            };
            c.args(["--sdk", sdk]);
            c.args([
                "--era",
                if client.stateless() {
                    "2026-07-28"
                } else {
                    "legacy"
                },
            ]);
            if approve {
                c.arg("--approve");
            }
            c
        }
    };
    for (name, args) in calls {
        command.args(["--call", name, &args.to_string()]);
    }
    match target {
        Target::Http(url) => {
            command.args(["--token", TOKEN, "--http", url]);
        }
        Target::Stdio(argv) => {
            command.arg("--stdio").args(argv);
        }
    }
    command
}

/// Runs a client to its end; its JSON report (`{protocolVersion, tools, calls}`).
///
/// # Panics
///
/// When it fails or takes longer than [`CLIENT_DEADLINE`], with its output.
pub fn run_client(mut command: Command) -> Value {
    let (status, out, err) = crate::run_within(&mut command, CLIENT_DEADLINE);
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!("{command:?} failed ({s}):\nstdout:\n{out}\nstderr:\n{err}"),
        None => panic!(
            "{command:?} took longer than {CLIENT_DEADLINE:?}:\nstdout:\n{out}\nstderr:\n{err}"
        ),
    }
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!("{command:?} printed no report ({e}):\nstdout:\n{out}\nstderr:\n{err}")
    })
}

/// An HTTP response as a test sees it.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body, read to its end (the connection is closed after one request).
    pub body: String,
}

impl HttpResponse {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages in the body: the body itself, or the `data:` of each
    /// SSE event.
    pub fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str(d).ok())
                .collect()
        } else {
            serde_json::from_str(&self.body).into_iter().collect()
        }
    }
}

/// One HTTP/1.1 request by hand (`Connection: close`), for the tests that need
/// headers a client library would not send (a foreign `Origin`, no token, a huge
/// body) or that drop the connection on purpose.
#[derive(Debug)]
pub struct RawRequest {
    stream: TcpStream,
}

impl RawRequest {
    /// Sends the request to the `http://HOST:PORT/PATH` of `url` with `method`;
    /// `headers` besides `Host`, `Content-Length` and `Connection`.
    pub fn send(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> RawRequest {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (authority, path) = rest
            .split_once('/')
            .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
        let mut stream = TcpStream::connect(authority).expect("connect to the gateway");
        stream
            .set_read_timeout(Some(CLIENT_DEADLINE))
            .expect("a read timeout");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {authority}\r\n"));
        }
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        // A 2026-07-28 request carries its method and name in headers too
        // (SEP-2243), as a real client sends them, unless the test set its own.
        let given = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if let Ok(message) = serde_json::from_str::<Value>(body)
            && message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string()
        {
            if let (Some(method), false) = (message["method"].as_str(), given("mcp-method")) {
                head.push_str(&format!("Mcp-Method: {method}\r\n"));
            }
            if let (Some(name), false) = (message["params"]["name"].as_str(), given("mcp-name")) {
                head.push_str(&format!("Mcp-Name: {name}\r\n"));
            }
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("send the head");
        stream.write_all(body.as_bytes()).expect("send the body");
        RawRequest { stream }
    }

    /// Reads the status line and headers, then up to the first SSE event's `data:`
    /// line, leaving the connection open: (status, the event's `id:` if it had one,
    /// its data). The data is empty when the response ended first.
    pub fn first_event(&mut self) -> (u16, Option<String>, String) {
        let mut reader = BufReader::new(&mut self.stream);
        let mut line = String::new();
        reader.read_line(&mut line).expect("a status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut id = None;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return (status, id, String::new());
            }
            let l = line.trim_end();
            if let Some(i) = l.strip_prefix("id: ") {
                id = Some(i.to_owned());
            }
            if let Some(data) = l.strip_prefix("data: ") {
                return (status, id, data.to_owned());
            }
        }
    }

    /// After [`RawRequest::first_event`]: the JSON-RPC messages of the rest of
    /// the stream, read until the server closes it (each event's `data:` line).
    pub fn rest_messages(self) -> Vec<Value> {
        let mut raw = Vec::new();
        let mut stream = self.stream;
        let _ = stream.read_to_end(&mut raw);
        String::from_utf8_lossy(&raw)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }

    /// Reads the whole response (the server closes the connection after it).
    pub fn response(self) -> HttpResponse {
        let mut raw = Vec::new();
        let mut stream = self.stream;
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        };
        HttpResponse {
            status,
            headers,
            body,
        }
    }
}

/// Undoes `Transfer-Encoding: chunked`.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A request and its whole response.
pub fn http(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> HttpResponse {
    RawRequest::send(url, method, headers, body).response()
}
