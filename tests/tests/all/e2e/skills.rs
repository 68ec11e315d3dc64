//! Skills (`io.modelcontextprotocol/skills`) end to end, against a hostile server:
//! `hostile_skills_server.py` (a real process) serves one honest skill and four
//! that lie (a wrong digest, a wrong size, a frontmatter that differs from the
//! entry, a file past the extension's 16 MiB). Each lie is refused with an error
//! naming the server, the skill and the mismatch; nothing of a refused skill is
//! handed on, no file of a skill is read before it is loaded, and the honest
//! skill, the server's tools and the runtime go on. The conformance suite's
//! `sep-2640-client-*` scenarios (`tests/tests/all/conformance.rs`) judge the same
//! rules from the suite's side.

use std::path::Path;
use std::process::{Command, Stdio};

use mcpbox::{CallOptions, Options};
use serde_json::{Value, json};

use crate::{PATIENCE, assert_connected, ready};

fn hostile_entry() -> Value {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/e2e/hostile_skills_server.py");
    json!({ "command": "python3", "args": [script] })
}

async fn patient<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("answered in time")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_servers_lying_skills_are_refused_and_nothing_else_is_lost() {
    let text = json!({ "mcpServers": { "hs": hostile_entry() } }).to_string();
    let runtime = Options::from_config_text("test.mcp.json", text)
        .open()
        .await
        .unwrap();
    assert_connected(&ready(&runtime).await, "hs");
    let reads = || async {
        let result = runtime
            .call_tool_json("mcp__hs__reads", "{}".into(), CallOptions::default())
            .await
            .unwrap();
        result.text
    };

    let skills = patient(runtime.list_skills(None)).await.unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "good",
            "wrong-digest",
            "wrong-size",
            "wrong-front",
            "oversized"
        ]
    );
    assert!(skills.iter().all(|s| s.server == "hs"));
    assert_eq!(reads().await, "", "listing read no skill file");

    let refused = patient(runtime.read_skill_file("hs", "good", "references/notes.md"))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("is not loaded"), "{refused}");
    assert_eq!(reads().await, "", "no file of a skill not loaded is read");

    for (skill, mismatch) in [
        (
            "wrong-digest",
            "skill://wrong-digest/SKILL.md has digest sha256:",
        ),
        (
            "wrong-size",
            "skill://wrong-size/SKILL.md is 114 bytes, its entry says 94",
        ),
        (
            "wrong-front",
            "frontmatter field `description` is \"Exfiltrate credentials\" in SKILL.md but \"Follow the house rules\" in the entry",
        ),
        ("oversized", "past the extension's limit of 16777216"),
    ] {
        let e = patient(runtime.load_skill("hs", skill))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("server `hs`") && e.contains(skill) && e.contains(mismatch),
            "{skill}: {e}"
        );
        let files = patient(runtime.read_skill_file("hs", skill, "references/notes.md"))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            files.contains("is not loaded") || files.contains("cannot be loaded"),
            "{skill}: {files}"
        );
    }
    assert_eq!(
        reads().await,
        "skill://wrong-digest/SKILL.md\nskill://wrong-size/SKILL.md\nskill://wrong-front/SKILL.md",
        "each lying SKILL.md read once, the oversized skill declined before any read, no supporting file read"
    );

    // The honest skill loads, and its listed file reads; an unlisted one does not.
    let loaded = patient(runtime.load_skill("hs", "good")).await.unwrap();
    assert!(
        loaded.text.starts_with("---\nname: good\n"),
        "{}",
        loaded.text
    );
    assert_eq!(loaded.entry["uri"], "skill://good/SKILL.md");
    let notes = patient(runtime.read_skill_file("hs", "good", "references/notes.md"))
        .await
        .unwrap();
    assert_eq!(notes.text, "Notes for the skill.\n");
    let unlisted = patient(runtime.read_skill_file("hs", "good", "scripts/run.sh"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        unlisted.contains("lists no file skill://good/scripts/run.sh"),
        "{unlisted}"
    );
    let echo = runtime
        .call_tool_json(
            "mcp__hs__echo",
            r#"{"text":"still here"}"#.into(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text, "still here");
    runtime.shutdown().await;
}

#[test]
fn mcpbox_skills_lists_and_mcpbox_skill_loads_or_refuses() {
    let dir = std::env::temp_dir().join(format!("mcpbox-skills-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("mcp.json");
    let text = json!({ "mcpServers": { "hs": hostile_entry() } }).to_string();
    std::fs::write(&config, text).unwrap();
    let (cache, config_dir) = mcpbox_tests::compiled_guest::process_dirs();
    let mcpbox = |args: &[&str]| {
        Command::new(mcpbox_tests::mcpbox_program())
            .env("MCPBOX_TRUST_ALL", "1")
            .env("MCPBOX_CACHE_DIR", &cache)
            .env("MCPBOX_CONFIG_DIR", &config_dir)
            .arg("--config")
            .arg(&config)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("mcpbox runs")
    };
    let out = mcpbox(&["skills"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        listed.contains("hs/good") && listed.contains("skill://oversized/SKILL.md"),
        "{listed}"
    );

    let out = mcpbox(&["skill", "good", "--file", "references/notes.md"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Notes for the skill.\n"
    );

    let out = mcpbox(&["skill", "hs/wrong-front"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "nothing of a refused skill is printed"
    );
    assert!(
        stderr.contains("skill `wrong-front`")
            && stderr.contains("server `hs`")
            && stderr.contains("`description`"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
