//! Entry points for the fuzz targets in `fuzz/`: everything a server or a user
//! can hand the guest, driven through the same code the component runs.
//!
//! The fuzzer (`cargo +nightly fuzz run <target>` in `guest/`) finds inputs;
//! the unit test below replays every committed corpus file on every
//! `cargo test`, so a crash once found stays fixed without nightly in CI.

use crate::client::Client;
use crate::prelude::*;
use crate::schema::Validator;
use crate::{config, jsonrpc};

/// What servers send: each line is one message to a client that has finished
/// its handshake and has a call in flight; deadlines fire at the end.
pub fn messages(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let _ = jsonrpc::parse(text);
    let mut client = connected_client();
    client.start_call(1, "mcp__fuzz__echo", "echo", r#"{"text":"x"}"#, 60_000, 0);
    for (n, line) in text.lines().enumerate() {
        client.handle_text(line, n as u64);
        let _ = client.take_outbox();
        let _ = client.take_events();
    }
    client.tick(u64::MAX / 2);
    let _ = client.take_outbox();
    let _ = client.take_events();
}

/// `.mcp.json` text.
pub fn config(data: &[u8]) {
    if let Ok(text) = core::str::from_utf8(data) {
        let _ = config::parse("fuzz.json", text);
    }
}

/// An input schema and an instance, separated by the first NUL byte.
pub fn schema(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let (schema, instance) = text.split_once('\0').unwrap_or((text, "{}"));
    if let (Ok(validator), Ok(instance)) = (
        Validator::compile(schema),
        serde_json::from_str::<serde_json::Value>(instance),
    ) {
        let _ = validator.validate(&instance);
    }
}

/// A client past `initialize` and `tools/list`, answered by a well-behaved server.
fn connected_client() -> Client {
    let mut client = Client::new("fuzz");
    client.begin();
    for _ in 0..4 {
        for out in client.take_outbox() {
            let Ok(request) = serde_json::from_str::<serde_json::Value>(&out.text) else {
                continue;
            };
            let id = request["id"].to_string();
            let result = match request["method"].as_str() {
                Some("initialize") => {
                    r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fuzz","version":"1"}}"#
                }
                Some("tools/list") => {
                    r#"{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}"#
                }
                _ => continue,
            };
            client.handle_text(
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
                0,
            );
        }
        let _ = client.take_events();
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Phase;

    #[test]
    fn the_fuzz_client_is_past_its_handshake() {
        assert_eq!(connected_client().phase(), Phase::Ready);
    }

    type Target = fn(&[u8]);

    /// Replays every committed corpus file (and any crash artefact kept as a
    /// regression) through its target.
    #[test]
    fn corpora_replay_cleanly() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        let targets: [(&str, Target); 3] = [
            ("messages", messages),
            ("config", config),
            ("schema", schema),
        ];
        for (name, target) in targets {
            let dir = root.join(name);
            let entries =
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let mut count = 0;
            for entry in entries {
                let path = entry.unwrap().path();
                target(&std::fs::read(&path).unwrap());
                count += 1;
            }
            assert!(count > 0, "the {name} corpus is empty");
        }
    }
}
