//! `mcpbox serve` against real MCP clients: the official TypeScript SDK (v1 and v2)
//! and Python SDK clients and rmcp's, over stdio and Streamable HTTP, in both eras,
//! in front of upstream servers of both eras (the fixture, the TypeScript SDK v2
//! peer, the Python SDK peer); names, profiles and tool search; the HTTP safety
//! rules; other local users; faults; clients that misbehave on purpose, and one
//! client's attacks on the others (`isolation`).
//!
//! The gateway is the CLI itself (the `mcpbox` program of the
//! mcpbox-cli crate, `mcpbox_tests::mcpbox_program`).

mod adapters;
mod clients;
mod dashboard;
mod exposure;
mod faults;
mod hostile;
mod isolation;
mod local_users;
mod pins;
mod resources;
mod safety;
mod sampling;
mod subscriptions;
mod tasks;

use std::path::Path;

use mcpbox_tests::gateway::{AUTHORIZATION, ConfigFile, TOKEN};
use mcpbox_tests::{fastmcp_server_command, ts_server_command};
use serde_json::{Value, json};

/// The gateway program: this build's, or the one `MCPBOX_TEST_CLI` names (to see
/// a test fail against an earlier build).
pub fn cli() -> &'static str {
    static CLI: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CLI.get_or_init(|| {
        std::env::var("MCPBOX_TEST_CLI")
            .unwrap_or_else(|_| mcpbox_tests::mcpbox_program().to_owned())
    })
}

/// The fixture server program.
pub fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_fixture-server")
}

/// A configuration: the fixture (`fx`, 2025-11-25) and, with `peers`, the TypeScript
/// SDK v2 peer (`ts`) and the Python SDK peer (`py`), both 2026-07-28; `extra` is
/// merged into the top level (rules, profiles).
pub fn config(peers: bool, extra: Value) -> ConfigFile {
    let mut servers = json!({"fx": {"command": fixture(), "args": []}});
    if peers {
        let (node, args) = ts_server_command();
        servers["ts"] = json!({"command": node, "args": args});
        let (python, args) = fastmcp_server_command();
        servers["py"] = json!({"command": python, "args": args});
    }
    let mut config = json!({"mcpServers": servers});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            config[k] = v;
        }
    }
    ConfigFile::new(&config)
}

/// The command line of the stdio gateway over `config`, with `extra` serve
/// flags, in this test process's directories ([`with_process_env`]).
pub fn stdio_gateway(config: &Path, extra: &[&str]) -> Vec<String> {
    with_process_env(gateway_argv(config, extra))
}

/// The stdio gateway's own command line, `CLI --trust --config CONFIG serve
/// EXTRA…`, for a test that gives it directories of its own.
pub fn gateway_argv(config: &Path, extra: &[&str]) -> Vec<String> {
    let mut argv = vec![
        cli().to_owned(),
        // The configuration is the test's own (see `mcpbox trust`).
        "--trust".to_owned(),
        "--config".to_owned(),
        config.display().to_string(),
        "serve".to_owned(),
    ];
    argv.extend(extra.iter().map(|s| (*s).to_owned()));
    argv
}

/// `argv` run by `env` in this test process's cache and configuration
/// directories ([`process_env`](mcpbox_tests::compiled_guest::process_env)),
/// so its pins and trust stay out of the user's. They go on the command line:
/// the SDKs' stdio transports pass a program they start only a few variables
/// of their own environment (`HOME`, `PATH`), and `env` execs it in its place,
/// so the process is the gateway's.
pub fn with_process_env(argv: Vec<String>) -> Vec<String> {
    let dirs = mcpbox_tests::compiled_guest::process_env()
        .into_iter()
        .map(|(name, dir)| format!("{name}={}", dir.display()));
    std::iter::once("env".to_owned())
        .chain(dirs)
        .chain(argv)
        .collect()
}

/// The first text block of a tool result.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The 2026-07-28 `_meta` of a request.
pub fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {},
           "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}})
}

/// A 2026-07-28 `tools/call` body.
pub fn stateless_call(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments, "_meta": meta()}})
    .to_string()
}

/// The headers of a JSON POST that accepts either answer, with the gateway's token.
pub const POST: [(&str, &str); 3] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    AUTHORIZATION,
];

/// rmcp's Streamable HTTP client transport to the gateway at `url`, with its token.
pub fn rmcp_http(url: &str) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(TOKEN),
    )
}

/// rmcp's client lifecycles, labelled: the `initialize` handshake and
/// 2026-07-28 discovery.
pub fn rmcp_eras() -> [(&'static str, rmcp::ClientLifecycleMode); 2] {
    [
        ("legacy", rmcp::ClientLifecycleMode::Initialize),
        (
            "2026-07-28",
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        ),
    ]
}

/// The stdio gateway over `config` as an rmcp child-process transport.
pub fn rmcp_stdio(config: &Path) -> rmcp::transport::TokioChildProcess {
    let argv = stdio_gateway(config, &[]);
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    rmcp::transport::TokioChildProcess::new(command).expect("start the gateway")
}
