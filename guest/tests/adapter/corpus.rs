//! The corpus in every dialect, and the providers' SDKs on the result.

use super::{Tool, corpus};
use mcpbox_guest::adapter::{self, Dialect, NoteKind, ToolInput};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Each tool's registry name.
fn registry_names(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .map(|t| mcpbox_guest::naming::tool_name(&t.server, &t.name))
        .collect()
}

fn tool_inputs<'a>(tools: &'a [Tool], names: &'a [String]) -> Vec<ToolInput<'a>> {
    tools
        .iter()
        .zip(names)
        .map(|(t, name)| ToolInput {
            name,
            description: t.description.as_deref(),
            input_schema: &t.input_schema,
            output_schema: t.output_schema.as_deref(),
        })
        .collect()
}

/// Tools of the corpus a dialect cannot represent: none today. Pinned, so that a
/// change is seen.
fn expected_refusals(_dialect: Dialect) -> &'static [&'static str] {
    &[]
}

#[test]
fn every_corpus_tool_converts_in_every_dialect() {
    let tools = corpus();
    let names = registry_names(&tools);
    let inputs = tool_inputs(&tools, &names);
    for dialect in Dialect::ALL {
        let adaptation = adapter::adapt(dialect, &inputs);
        let refused: Vec<&str> = adaptation.refused.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            refused,
            expected_refusals(dialect),
            "{dialect}: {:#?}",
            adaptation.refused
        );
        let mut kinds = std::collections::BTreeMap::new();
        for (adapted, tool) in adaptation.tools.iter().zip(&tools) {
            assert_eq!(
                adaptation.registry_name(&adapted.name),
                Some(adapted.registry_name.as_str())
            );
            for note in &adapted.notes {
                *kinds.entry(note.kind).or_insert(0) += 1;
                if note.pointer == "/name" {
                    continue;
                }
                assert!(
                    tool.definition.pointer(&note.pointer).is_some(),
                    "{dialect}: {}: {note} points at nothing in the original",
                    adapted.registry_name
                );
            }
            // Every converted schema is one the guest's validator compiles.
            if let Some(p) = &adapted.parameters {
                let schema = if dialect == Dialect::Gemini {
                    super::properties::gemini_as_json_schema(
                        &serde_json::from_str(p.get()).unwrap(),
                    )
                    .to_string()
                } else {
                    p.get().to_string()
                };
                mcpbox_guest::schema::Validator::compile(&schema)
                    .unwrap_or_else(|e| panic!("{dialect}: {}: {e}", adapted.registry_name));
            }
        }
        println!(
            "{dialect}: {} tools, notes {kinds:?}",
            adaptation.tools.len()
        );
        if matches!(dialect, Dialect::Mcp | Dialect::Anthropic) {
            assert!(kinds.is_empty(), "{dialect} loses nothing: {kinds:?}");
        }
    }
}

/// The pydantic server's tools lose what Gemini and strict mode do not take, and
/// say so; the `$defs` are gone for Gemini and kept for strict mode.
#[test]
fn pydantic_defs_convert_for_gemini_and_strict_mode() {
    let tools = corpus();
    let tool = tools
        .iter()
        .find(|t| t.server == "python-pydantic-models" && t.name == "search_people")
        .expect("search_people in the corpus");
    let input = ToolInput {
        name: "mcp__py__search_people",
        description: tool.description.as_deref(),
        input_schema: &tool.input_schema,
        output_schema: tool.output_schema.as_deref(),
    };
    let gemini = adapter::adapt_tool(Dialect::Gemini, &input).unwrap();
    let parameters = gemini.parameters.as_ref().unwrap().get();
    assert!(
        !parameters.contains("$ref") && !parameters.contains("$defs"),
        "{parameters}"
    );
    assert!(
        gemini
            .notes
            .iter()
            .any(|n| n.kind == NoteKind::Widened && n.pointer == "/inputSchema/$defs/Level/enum"),
        "{:#?}",
        gemini.notes
    );
    let strict = adapter::adapt_tool(Dialect::OpenAiStrict, &input).unwrap();
    let parameters: Value =
        serde_json::from_str(strict.parameters.as_ref().unwrap().get()).unwrap();
    assert_eq!(
        parameters["properties"]["filters"]["anyOf"][0]["$ref"],
        "#/$defs/Filters"
    );
    assert_eq!(
        parameters["$defs"]["Filters"]["additionalProperties"],
        false
    );
}

/// `tests/peers/.venv/bin/python`, or `None` (with a message) where the peers are not
/// installed.
fn python() -> Option<std::path::PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/.venv/bin/python");
    if python.exists() {
        Some(python)
    } else {
        eprintln!(
            "SKIPPED: {} is missing; run scripts/install-peers to check the adapters' output with the providers' SDKs",
            python.display()
        );
        None
    }
}

/// Runs `tests/peers/provider_check.py` on the cases; its errors per case id.
fn check(python: &Path, cases: &[Value]) -> Vec<(String, Vec<String>)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/provider_check.py");
    let mut child = Command::new(python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the provider checker");
    let input = serde_json::to_vec(cases).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "provider_check.py failed (run scripts/install-peers if an SDK is missing):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    results
        .into_iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                serde_json::from_value(r["errors"].clone()).unwrap(),
            )
        })
        .collect()
}

fn parsed(raw: &serde_json::value::RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap()
}

#[test]
fn the_providers_sdks_accept_every_converted_corpus_tool() {
    let Some(python) = python() else { return };
    let tools = corpus();
    let names = registry_names(&tools);
    let inputs = tool_inputs(&tools, &names);
    let mut cases = Vec::new();
    for dialect in Dialect::ALL {
        let adaptation = adapter::adapt(dialect, &inputs);
        for tool in &adaptation.tools {
            let id = |shape: &str| format!("{dialect} {shape} {}", tool.registry_name);
            let shape = match dialect {
                Dialect::Mcp => "mcp",
                Dialect::OpenAi | Dialect::OpenAiStrict => "chat",
                Dialect::Anthropic => "anthropic",
                Dialect::Gemini => "gemini",
            };
            cases.push(
                json!({"id": id(shape), "shape": shape, "definition": parsed(&tool.definition())}),
            );
            if let Some(responses) = tool.responses_definition() {
                cases.push(json!({"id": id("responses"), "shape": "responses", "definition": parsed(&responses)}));
            }
        }
    }
    let results = check(&python, &cases);
    assert_eq!(results.len(), cases.len());
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, errors)| !errors.is_empty())
        .map(|(id, errors)| format!("{id}:\n  {}", errors.join("\n  ")))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    println!("{} definitions accepted", cases.len());
}

/// The checker is not vacuous: the corpus's own schemas, put unconverted into each
/// provider's envelope, are refused where the provider refuses them, and so are
/// the shapes the issue trackers report.
#[test]
fn the_provider_checker_refuses_what_providers_refuse() {
    let Some(python) = python() else { return };
    let tools = corpus();
    let pydantic = tools
        .iter()
        .find(|t| t.server == "python-pydantic-models" && t.name == "search_people")
        .unwrap();
    let raw: Value = serde_json::from_str(&pydantic.input_schema).unwrap();
    let zod = tools
        .iter()
        .find(|t| t.server == "zod" && t.name == "label_issue")
        .unwrap();
    let zod_raw: Value = serde_json::from_str(&zod.input_schema).unwrap();
    let object = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false});
    let cases = vec![
        // Gemini: `$defs`/`$ref` (gemini-cli's "rejects MCP tool schemas with $defs").
        json!({"id": "gemini $defs", "shape": "gemini", "definition": {"name": "t", "parameters": raw}}),
        // zod-to-json-schema's `$ref` into `#/properties/...`, `format: uri`, a type array.
        json!({"id": "gemini zod", "shape": "gemini", "definition": {"name": "t", "parameters": zod_raw}}),
        json!({"id": "gemini type array", "shape": "gemini", "definition": {"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}}}),
        json!({"id": "gemini integer enum", "shape": "gemini", "definition": {"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}}}),
        json!({"id": "gemini const", "shape": "gemini", "definition": {"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string", "const": "x"}}}}}),
        json!({"id": "gemini empty object", "shape": "gemini", "definition": {"name": "t", "parameters": {"type": "object", "properties": {}}}}),
        json!({"id": "gemini name", "shape": "gemini", "definition": {"name": "9 lives", "parameters": object}}),
        json!({"id": "gemini parameter name", "shape": "gemini", "definition": {"name": "t", "parameters": {"type": "object", "properties": {"file-path": {"type": "string"}}}}}),
        // OpenAI strict: pydantic's schema as it is (optional properties, open objects).
        json!({"id": "strict pydantic", "shape": "chat", "definition": {"type": "function", "function": {"name": "t", "parameters": raw, "strict": true}}}),
        json!({"id": "strict root anyOf", "shape": "chat", "definition": {"type": "function", "function": {"name": "t", "parameters": {"anyOf": [object, object]}, "strict": true}}}),
        json!({"id": "openai root", "shape": "chat", "definition": {"type": "function", "function": {"name": "t", "parameters": {"type": "array", "items": {}}}}}),
        json!({"id": "openai name", "shape": "chat", "definition": {"type": "function", "function": {"name": "a.b", "parameters": object}}}),
        json!({"id": "responses without strict", "shape": "responses", "definition": {"type": "function", "name": "t", "parameters": object}}),
        json!({"id": "anthropic root", "shape": "anthropic", "definition": {"name": "t", "input_schema": {"type": "string"}}}),
        json!({"id": "anthropic long name", "shape": "anthropic", "definition": {"name": "x".repeat(65), "input_schema": object}}),
        json!({"id": "anthropic envelope", "shape": "anthropic", "definition": {"name": "t", "parameters": object}}),
    ];
    // The same shapes, well formed, pass: the refusals above are for what they say.
    let good = [
        json!({"id": "gemini", "shape": "gemini", "definition": {"name": "t", "parameters": object.as_object().unwrap().iter().filter(|(k, _)| *k != "additionalProperties").map(|(k, v)| (k.clone(), v.clone())).collect::<serde_json::Map<_, _>>()}}),
        json!({"id": "strict", "shape": "chat", "definition": {"type": "function", "function": {"name": "t", "parameters": object, "strict": true}}}),
        json!({"id": "responses", "shape": "responses", "definition": {"type": "function", "name": "t", "parameters": object, "strict": false}}),
        json!({"id": "anthropic", "shape": "anthropic", "definition": {"name": "t", "input_schema": raw}}),
    ];
    let bad = cases.len();
    let all: Vec<Value> = cases.into_iter().chain(good).collect();
    let results = check(&python, &all);
    for (id, errors) in &results[..bad] {
        assert!(!errors.is_empty(), "the checker accepted `{id}`");
        println!("{id}: {}", errors[0]);
    }
    for (id, errors) in &results[bad..] {
        assert!(errors.is_empty(), "{id}: {errors:?}");
    }
}
