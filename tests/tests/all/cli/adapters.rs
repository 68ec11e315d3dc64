//! `tools --format DIALECT` and `call --format DIALECT` against a real server whose
//! schemas are pydantic's (`tests/peers/adapter_models_server.py`: `$defs`,
//! recursion, `anyOf` with `null`, discriminated unions), the definitions checked
//! by the providers' own SDK types (`tests/peers/provider_check.py`).

use std::io::Write;

use super::*;

fn venv_python() -> PathBuf {
    let python = repo().join("tests/peers/.venv/bin/python");
    assert!(
        python.exists(),
        "the Python peers are missing: run scripts/install-peers first"
    );
    python
}

fn models_config(tag: &str) -> PathBuf {
    config(
        tag,
        json!({ "models": {
            "command": venv_python(),
            "args": [repo().join("tests/peers/adapter_models_server.py")],
        }}),
    )
}

/// `tools --format dialect --json`, parsed.
fn adapted(cfg: &Path, dialect: &str) -> Value {
    let out = mcpbox(cfg, &["--json", "tools", "--format", dialect]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("--json prints JSON")
}

/// Runs the providers' checker on `cases` (`{"id", "shape", "definition"}`); the
/// errors of each case that has any.
fn provider_errors(cases: &[Value]) -> Vec<Value> {
    let mut child = Command::new(venv_python())
        .arg(repo().join("tests/peers/provider_check.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(cases.to_vec()).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "provider_check.py: {}", stderr(&out));
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results.len(), cases.len(), "one result per case");
    results
        .into_iter()
        .filter(|r| r["errors"].as_array().is_some_and(|e| !e.is_empty()))
        .collect()
}

#[test]
fn tools_in_each_dialect_pass_the_providers_checks() {
    let cfg = models_config("adapters-check");
    let mut cases = Vec::new();
    for (dialect, shape) in [
        ("mcp", "mcp"),
        ("openai", "chat"),
        ("openai-strict", "chat"),
        ("anthropic", "anthropic"),
        ("gemini", "gemini"),
    ] {
        let listing = adapted(&cfg, dialect);
        assert_eq!(listing["dialect"], dialect);
        let tools = listing["tools"].as_array().unwrap();
        assert_eq!(
            tools.len() + listing["refused"].as_array().unwrap().len(),
            7,
            "every tool of the server, adapted or refused: {listing:#}"
        );
        for t in tools {
            cases.push(json!({
                "id": format!("{dialect} {}", t["name"]),
                "shape": shape,
                "definition": t["definition"],
            }));
            if let Some(responses) = t.get("responsesDefinition") {
                cases.push(json!({
                    "id": format!("{dialect} responses {}", t["name"]),
                    "shape": "responses",
                    "definition": responses,
                }));
            }
        }
    }
    assert!(cases.len() >= 35, "{} definitions", cases.len());
    let errors = provider_errors(&cases);
    assert!(
        errors.is_empty(),
        "refused by the providers' checks: {errors:#?}"
    );

    // The checker can fail: the MCP definitions are not Gemini declarations.
    let mcp = adapted(&cfg, "mcp");
    let wrong: Vec<Value> = mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!({"id": t["name"], "shape": "gemini", "definition": t["definition"]}))
        .collect();
    assert!(!provider_errors(&wrong).is_empty());
}

#[test]
fn tools_format_says_what_each_conversion_lost() {
    let cfg = models_config("adapters-notes");
    let gemini = adapted(&cfg, "gemini");
    let save_tree = gemini["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["registryName"] == "mcp__models__save_tree")
        .expect("save_tree in gemini");
    let declaration = &save_tree["definition"];
    assert!(
        !declaration.to_string().contains("$ref") && !declaration.to_string().contains("$defs"),
        "inlined: {declaration:#}"
    );
    assert!(
        save_tree["adapterNotes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "recursion-cut"),
        "{save_tree:#}"
    );

    // Human output: a line per tool, a note under it for each loss.
    let out = mcpbox(&cfg, &["tools", "--format", "gemini"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("mcp__models__save_tree") && l.contains("Stores a tree")),
        "{text}"
    );
    assert!(text.contains("  recursion-cut at /inputSchema"), "{text}");

    // A dialect that is none is refused with the list.
    let out = mcpbox(&cfg, &["tools", "--format", "gpt"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("openai-strict"), "{}", stderr(&out));
}

#[test]
fn call_format_openai_strict_maps_nulls_back() {
    let cfg = models_config("adapters-call");
    // What a model writes under strict mode: every property present, `null` for
    // the ones it would have left out, even where the server's schema has no null.
    let strict = json!({
        "person": {
            "name": "Ada",
            "email": null,
            "age": null,
            "home": {"street": "1 rue", "city": "Paris", "postcode": "75001", "country": null},
            "work": null,
            "tags": null,
        },
        "notify": null,
    })
    .to_string();
    let out = mcpbox(
        &cfg,
        &[
            "call",
            "--format",
            "openai-strict",
            "mcp__models__add_person",
            &strict,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "added Ada\n");

    // The same arguments as a plain call: the server's own schema refuses the nulls.
    let out = mcpbox(&cfg, &["call", "mcp__models__add_person", &strict]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("notify"), "{}", stderr(&out));

    // The original schema still decides: a bad argument stays bad.
    let bad = json!({"person": {"name": "Ada", "home": {"street": "1", "city": "P", "postcode": "x"}}, "notify": null});
    let out = mcpbox(
        &cfg,
        &[
            "call",
            "--format",
            "openai-strict",
            "mcp__models__add_person",
            &bad.to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("postcode"), "{}", stderr(&out));
}
