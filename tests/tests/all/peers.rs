//! The pinned npm and Python peers start and behave as mcpbox's tests assume.
//!
//! Spoken to over raw stdio, without mcpbox: when one of these fails, the peer or
//! its installation changed, not mcpbox. Needs `scripts/install-peers` (which
//! `scripts/test` runs).

use std::path::PathBuf;
use std::process::Command;

use mcpbox_tests::peers::MEMORY_FILE_ENV;
use mcpbox_tests::stdio::{StdioPeer, first_text, tool_names};
use mcpbox_tests::{
    everything_command, fastmcp_server_command, filesystem_command, memory_command,
};
use serde_json::json;

/// A directory of its own under the system temp dir, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mcpbox-tests-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spawn((command, args): (String, Vec<String>)) -> StdioPeer {
    StdioPeer::spawn(&command, &args)
}

#[test]
fn server_everything() {
    let mut peer = spawn(everything_command());
    let init = peer.initialize("2025-11-25");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "mcp-servers/everything");
    let names = tool_names(&peer.list_tools());
    for tool in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    assert_eq!(
        first_text(&peer.call_tool("echo", json!({"message": "hi"}))),
        "Echo: hi"
    );
}

#[test]
fn server_filesystem() {
    let root = ScratchDir::new("filesystem");
    std::fs::write(root.0.join("hello.txt"), "hello from disk").expect("write");
    let mut peer = spawn(filesystem_command(&root.0));
    assert_eq!(
        peer.initialize("2025-06-18")["protocolVersion"],
        "2025-06-18"
    );
    let names = tool_names(&peer.list_tools());
    assert!(names.iter().any(|n| n == "read_text_file"), "{names:?}");
    let path = root.0.join("hello.txt");
    let read = peer.call_tool("read_text_file", json!({"path": path}));
    assert_eq!(first_text(&read), "hello from disk");
    let outside = peer.call_tool("read_text_file", json!({"path": "/etc/hostname"}));
    assert_eq!(outside["isError"], true, "{outside}");
}

#[test]
fn server_memory() {
    let scratch = ScratchDir::new("memory");
    let (command, args) = memory_command();
    let mut command_line = Command::new(command);
    command_line
        .args(args)
        .env(MEMORY_FILE_ENV, scratch.0.join("memory.jsonl"));
    let mut peer = StdioPeer::from_command(command_line);
    peer.initialize("2025-11-25");
    let names = tool_names(&peer.list_tools());
    assert!(
        names.iter().any(|n| n == "create_entities") && names.iter().any(|n| n == "read_graph"),
        "{names:?}"
    );
    let entity = json!({"name": "mcpbox", "entityType": "project", "observations": ["sandboxed"]});
    let created = peer.call_tool("create_entities", json!({"entities": [entity]}));
    assert_ne!(created["isError"], true, "{created}");
    let graph = peer.call_tool("read_graph", json!({}));
    assert!(first_text(&graph).contains("sandboxed"), "{graph}");
}

#[test]
fn fastmcp_server() {
    let mut peer = spawn(fastmcp_server_command());
    assert_eq!(
        peer.initialize("2025-11-25")["serverInfo"]["name"],
        "fastmcp-peer"
    );
    assert_eq!(tool_names(&peer.list_tools()), ["greet", "add", "fail"]);
    assert_eq!(
        first_text(&peer.call_tool("greet", json!({"name": "Ann"}))),
        "Hello, Ann!"
    );
    let sum = peer.call_tool("add", json!({"a": 2, "b": 3}));
    assert_eq!(sum["structuredContent"], json!({"result": 5}));
    let failed = peer.call_tool("fail", json!({"message": "boom"}));
    assert_eq!(failed["isError"], true);
    assert!(first_text(&failed).contains("boom"), "{failed}");
}
