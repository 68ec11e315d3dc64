//! The registry in a provider dialect: converted once per registry, and calls
//! made under it mapped back before the server's own schema checks them.

use super::*;
use crate::adapter::Dialect;

/// A server whose one tool, `note`, takes `text` and optional `style` options (an
/// optional boolean `loud`), and answers with the arguments it was sent, as JSON text.
fn note_server() -> McpServer {
    let server = McpServer::with_tools(&["note"]).on_call(|params, id, out| {
        let sent = params["arguments"].to_string();
        out.reply(0, id, json!({"content": [{"type": "text", "text": sent}]}));
    });
    *server.tools.borrow_mut() = vec![json!({"name": "note", "inputSchema": {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "style": {"type": "object", "properties": {"loud": {"type": "boolean"}}},
        },
        "required": ["text"],
    }})];
    server
}

#[test]
fn a_dialect_is_converted_once_per_registry() {
    let mut p = FakePlatform::new();
    p.serve("demo", note_server);
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    let first = m.adapted_tools(Dialect::OpenAiStrict);
    assert_eq!(first.tools.len(), 1);
    assert!(Rc::ptr_eq(&first, &m.adapted_tools(Dialect::OpenAiStrict)));
    let gemini = m.adapted_tools(Dialect::Gemini);
    assert!(!Rc::ptr_eq(&first, &gemini), "a dialect of its own");
    assert_eq!(
        gemini.get("mcp__demo__note").unwrap().unwrap().name,
        "mcp__demo__note"
    );
}

#[test]
fn a_strict_mode_null_is_mapped_back_before_the_check() {
    let mut p = FakePlatform::new();
    p.serve("demo", note_server);
    let mut m = manager(p, &[("demo", json!({}))]);
    connect(&mut m);
    let strict = r#"{"text":"hi","style":{"loud":null}}"#;
    // As it came, `loud: null` is not a boolean: the server's schema refuses it.
    let refused = m.start_call("mcp__demo__note", strict, CallOptions::default());
    assert!(
        matches!(&refused, Err(CallError::InvalidArguments(e)) if e.contains("loud")),
        "{refused:?}"
    );
    m.start_adapted_call(
        Dialect::OpenAiStrict,
        "mcp__demo__note",
        strict,
        CallOptions::default(),
    )
    .expect("mapped back, the call is valid");
    let done = finished_calls(&mut m, 1);
    assert_eq!(text_result(&done[0].outcome), r#"{"style":{},"text":"hi"}"#);
    // Dialects that change nothing about instances pass the arguments as they came.
    let (name, arguments) = m.map_adapted_call(Dialect::OpenAi, "mcp__demo__note", strict);
    assert_eq!(
        (name.as_str(), arguments.as_str()),
        ("mcp__demo__note", strict)
    );
}
