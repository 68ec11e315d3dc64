//! Where the installed npm and Python peer servers live and how to start them.
//!
//! `scripts/install-peers` installs them under `tests/peers/` (`node_modules/` from
//! the committed `package-lock.json`, `.venv/` from `requirements.txt`). Every function
//! here checks that what it points at exists and otherwise panics with a message
//! naming that script, so a test on an unprepared machine fails with the fix in hand
//! rather than with a spawn error deep inside mcpbox.
//!
//! Commands are `(command, args)` with absolute paths, so they work from any working
//! directory and drop straight into an `.mcp.json` server entry.

use std::path::{Path, PathBuf};

/// The environment variable `server-memory` reads for its knowledge-graph file.
///
/// Without it the server writes `memory.jsonl` inside `node_modules`, shared by every
/// test; give each test its own file through the server entry's `env`.
pub const MEMORY_FILE_ENV: &str = "MEMORY_FILE_PATH";

/// `tests/peers/`: the pinned peer manifests and what `scripts/install-peers` installs.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// The executable an npm peer installs as `tests/peers/node_modules/.bin/NAME`,
/// for example `mcp-server-everything`.
///
/// # Panics
///
/// When it is not installed.
pub fn npm_bin(name: &str) -> PathBuf {
    require(peers_dir().join("node_modules").join(".bin").join(name))
}

/// The Python virtual environment holding the pinned `mcp` SDK, `tests/peers/.venv`.
///
/// # Panics
///
/// When it is not installed.
pub fn python_venv() -> PathBuf {
    let venv = peers_dir().join(".venv");
    require(venv.join("bin").join("python"));
    venv
}

/// Starts `tests/peers/fastmcp_server.py` (tools `greet`, `add`, `fail`) with the
/// venv's Python, over stdio.
///
/// # Panics
///
/// When the venv is not installed.
pub fn fastmcp_server_command() -> (String, Vec<String>) {
    let python = python_venv().join("bin").join("python");
    let script = require(peers_dir().join("fastmcp_server.py"));
    (display(&python), vec![display(&script)])
}

/// Starts `tests/peers/fastmcp_server.py` serving Streamable HTTP on `127.0.0.1:port`
/// at `/mcp`. With port 0 the OS picks the port, and the server's stderr line
/// `Uvicorn running on http://127.0.0.1:PORT` says which.
///
/// # Panics
///
/// When the venv is not installed.
pub fn fastmcp_http_command(port: u16) -> (String, Vec<String>) {
    let (python, mut args) = fastmcp_server_command();
    args.extend(["--http".to_owned(), port.to_string()]);
    (python, args)
}

/// Starts `tests/peers/ts_server.mjs`, a server on the TypeScript SDK v2
/// (`@modelcontextprotocol/server`, tools `greet`, `add`, `fail`, `unlock`), over stdio.
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn ts_server_command() -> (String, Vec<String>) {
    require(
        peers_dir()
            .join("node_modules")
            .join("@modelcontextprotocol")
            .join("server")
            .join("package.json"),
    );
    let script = require(peers_dir().join("ts_server.mjs"));
    ("node".to_owned(), vec![display(&script)])
}

/// Starts `tests/peers/task_server.mjs`, a server on the TypeScript SDK v1
/// (`@modelcontextprotocol/sdk`) whose tool `count` runs as a task when its
/// client asks (`execution.taskSupport: "optional"`), over stdio.
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn task_server_command() -> (String, Vec<String>) {
    require(
        peers_dir()
            .join("node_modules")
            .join("@modelcontextprotocol")
            .join("sdk")
            .join("package.json"),
    );
    let script = require(peers_dir().join("task_server.mjs"));
    ("node".to_owned(), vec![display(&script)])
}

/// Starts `tests/peers/ts_server.mjs` serving Streamable HTTP on `127.0.0.1:port` at
/// `/mcp`. With port 0 the OS picks the port, and the server's stderr line
/// `ts-peer listening on http://127.0.0.1:PORT/mcp` says which.
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn ts_http_command(port: u16) -> (String, Vec<String>) {
    let (node, mut args) = ts_server_command();
    args.extend(["--http".to_owned(), port.to_string()]);
    (node, args)
}

/// Starts `@modelcontextprotocol/server-everything` over stdio (it needs the `stdio`
/// argument; without one it also defaults to stdio).
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn everything_command() -> (String, Vec<String>) {
    (
        display(&npm_bin("mcp-server-everything")),
        vec!["stdio".to_owned()],
    )
}

/// Starts `@modelcontextprotocol/server-filesystem` allowed to reach `root` only.
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn filesystem_command(root: &Path) -> (String, Vec<String>) {
    (
        display(&npm_bin("mcp-server-filesystem")),
        vec![display(root)],
    )
}

/// Starts `@modelcontextprotocol/server-memory`. Set [`MEMORY_FILE_ENV`] in its
/// environment to a file of the test's own.
///
/// # Panics
///
/// When the npm peers are not installed.
pub fn memory_command() -> (String, Vec<String>) {
    (display(&npm_bin("mcp-server-memory")), Vec::new())
}

/// `path`, which `scripts/install-peers` installs.
///
/// # Panics
///
/// When it is missing, saying to run `scripts/install-peers`.
pub(crate) fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers first",
        path.display()
    );
    path
}

fn display(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
        .to_owned()
}
