//! `mcpbox import` against real configuration files in each client's own format
//! (`tests/tests/all/import/`: written from each client's documentation), with `HOME`
//! pointing at a temporary copy of them, and against broken ones.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/import")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Gives `home` the guest mcpbox compiled once for this test process, where
/// mcpbox looks for it by default (`~/.cache/mcpbox`, its key in
/// `~/.config/mcpbox`), so each world's first run does not compile it again.
fn seed_compiled_guest(home: &Path) {
    mcpbox_tests::compiled_guest::seed(&home.join(".cache/mcpbox"), &home.join(".config/mcpbox"));
}

/// A home and a project directory, fresh for one test.
struct World {
    home: PathBuf,
    project: PathBuf,
}

impl World {
    /// Empty home and project.
    fn empty(tag: &str) -> World {
        let root = std::env::temp_dir().join(format!("mcpbox-import-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let world = World {
            home: root.join("home"),
            project: root.join("project"),
        };
        std::fs::create_dir_all(&world.home).unwrap();
        std::fs::create_dir_all(&world.project).unwrap();
        seed_compiled_guest(&world.home);
        world
    }

    /// The files of `tests/tests/all/import/`: every client configured.
    fn configured(tag: &str) -> World {
        World::from(tag, &here())
    }

    /// The files of `tests/tests/all/import/credentials/`: credentials written inside
    /// values (URLs, headers in arguments, `-p`), in several clients' files.
    fn with_credentials(tag: &str) -> World {
        World::from(tag, &here().join("credentials"))
    }

    /// A home and a project copied from `from/home` and `from/project`.
    fn from(tag: &str, from: &Path) -> World {
        let world = World::empty(tag);
        copy_tree(&from.join("home"), &world.home);
        copy_tree(&from.join("project"), &world.project);
        // ~/.claude.json keys its local scope by the project's absolute path.
        let claude = world.home.join(".claude.json");
        if let Ok(text) = std::fs::read_to_string(&claude) {
            std::fs::write(
                &claude,
                text.replace("@PROJECT@", world.project.to_str().unwrap()),
            )
            .unwrap();
        }
        world
    }

    fn put(&self, file: &Path, broken: &str) {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::copy(here().join("broken").join(broken), file).unwrap();
    }

    fn mcpbox(&self, args: &[&str]) -> Output {
        Command::new(mcpbox_tests::mcpbox_program())
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("MCPBOX_CACHE_DIR")
            .env_remove("MCPBOX_CONFIG_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .env_remove("APPDATA")
            .env_remove("MCPBOX_TRUST_ALL")
            .stdin(Stdio::null())
            .output()
            .expect("mcpbox runs")
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json", "import"];
        all.extend_from_slice(args);
        let out = self.mcpbox(&all);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn server<'a>(found: &'a Value, name: &str) -> &'a Value {
    found["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {:#}", found["servers"]))
}

fn source<'a>(found: &'a Value, client: &str, scope: &str) -> &'a Value {
    found["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["client"] == client && s["scope"] == scope)
        .unwrap_or_else(|| panic!("no source {client}/{scope}"))
}

fn places(s: &Value) -> Vec<String> {
    s["foundIn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            format!(
                "{}/{}",
                l["client"].as_str().unwrap(),
                l["scope"].as_str().unwrap()
            )
        })
        .collect()
}

/// The values written inline in `tests/tests/all/import/`: none may ever be printed or written.
const INLINE_SECRETS: &[&str] = &[
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "sntrys_inline_secret_value_0001",
    "BSA-inline-brave-key-0002",
    "figd_inline_figma_key_0003",
    "inline-codex-token-0004",
    "hunter2-codex-0005",
];

#[test]
fn every_client_is_read_in_its_own_format() {
    let world = World::configured("formats");
    let found = world.json(&[]);

    let read = |client: &str, scope: &str| {
        let s = source(&found, client, scope);
        assert_eq!(s["status"], "read", "{s}");
        s["servers"].as_u64().unwrap()
    };
    assert_eq!(
        read("claude-code", "local"),
        1,
        "only this project's local scope"
    );
    assert_eq!(read("claude-code", "project"), 2);
    assert_eq!(read("claude-code", "user"), 2);
    assert_eq!(read("claude-desktop", "user"), 2);
    assert_eq!(read("cursor", "project"), 1);
    assert_eq!(read("cursor", "user"), 2);
    assert_eq!(read("vs-code", "project"), 3);
    assert_eq!(read("vs-code", "user"), 1);
    assert_eq!(read("windsurf", "user"), 3);
    assert_eq!(read("codex", "project"), 0);
    assert_eq!(read("codex", "user"), 4);

    // Claude Code: `${VAR:-default}` kept, the local scope of this project only.
    assert_eq!(
        server(&found, "memory")["entry"],
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
               "env": {"MEMORY_FILE_PATH": "${MEMORY_FILE:-/tmp/memory.json}"}})
    );
    assert_eq!(
        server(&found, "api")["entry"],
        json!({"type": "sse", "url": "${API_BASE_URL:-https://api.example.com}/sse",
               "headers": {"X-API-Key": "${API_KEY}"}})
    );
    assert_eq!(server(&found, "local-db")["entry"]["command"], "uvx");
    assert!(
        !found["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "not-this-project")
    );

    // The same server in Claude Code (npx -y) and Cursor (/usr/local/bin/npx): one.
    let github = server(&found, "github");
    assert_eq!(places(github), ["claude-code/user", "cursor/user"]);
    assert_eq!(
        github["entry"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "${GITHUB_PERSONAL_ACCESS_TOKEN}"
    );

    // Cursor: comments, trailing commas, ${env:…}, ${workspaceFolder}, ${userHome}, envFile.
    assert_eq!(
        server(&found, "linear")["entry"]["headers"]["Authorization"],
        "Bearer ${LINEAR_API_KEY}"
    );
    let docs = server(&found, "docs");
    let project = world.project.display().to_string();
    assert_eq!(
        docs["entry"]["args"],
        json!([
            format!("{project}/tools/docs-server.js"),
            "--root",
            "${HOME}/docs"
        ])
    );
    assert!(docs["notes"].to_string().contains("envFile"), "{docs}");

    // VS Code: `servers`, `type`, `inputs` → a variable named after the input.
    let perplexity = server(&found, "Perplexity");
    assert_eq!(
        perplexity["entry"]["env"]["PERPLEXITY_API_KEY"],
        "${PERPLEXITY_KEY}"
    );
    let notes = perplexity["notes"].to_string();
    assert!(
        notes.contains("set PERPLEXITY_KEY") && notes.contains("Perplexity API Key"),
        "{notes}"
    );
    assert_eq!(
        server(&found, "github-remote")["entry"],
        json!({"type": "http", "url": "https://api.githubcopilot.com/mcp/"})
    );
    assert_eq!(server(&found, "time")["foundIn"][0]["scope"], "user");

    // VS Code's `uvx mcp-server-fetch` and Windsurf's `uvx -q mcp-server-fetch`: one.
    assert_eq!(
        places(server(&found, "fetch")),
        ["vs-code/project", "windsurf/user"]
    );

    // Windsurf: serverUrl, disabled. Codex's figma has the same URL: one server.
    let figma = server(&found, "figma");
    assert_eq!(places(figma), ["windsurf/user", "codex/user"]);
    assert_eq!(
        figma["entry"]["url"],
        "https://mcp.figma.com/mcp?api_key=${FIGMA_API_KEY}"
    );
    assert!(
        figma["notes"].to_string().contains("different headers"),
        "{figma}"
    );
    assert_eq!(server(&found, "git")["entry"]["enabled"], false);

    // Claude Desktop: literal values; an inline key becomes a reference.
    assert_eq!(
        server(&found, "brave-search")["entry"]["env"]["BRAVE_API_KEY"],
        "${BRAVE_API_KEY}"
    );
    assert_eq!(
        server(&found, "filesystem")["entry"]["args"][3],
        "/Users/me/Downloads"
    );

    // Codex: its field names.
    assert_eq!(
        server(&found, "context7")["entry"],
        json!({"command": "npx", "args": ["-y", "@upstash/context7-mcp"],
               "env": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
               "startupTimeoutMs": 20000, "toolTimeoutMs": 45000,
               "enabledTools": ["resolve-library-id", "get-library-docs"]})
    );
    let devtools = server(&found, "chrome_devtools");
    assert_eq!(devtools["entry"]["enabled"], false);
    let notes = devtools["notes"].to_string();
    assert!(
        notes.contains("`required`") && notes.contains("`tools`"),
        "{notes}"
    );
    let legacy = server(&found, "legacy");
    assert_eq!(
        legacy["entry"],
        json!({"command": "legacy-mcp", "args": ["--token", "${LEGACY_TOKEN}"],
               "env": {"DB_PASSWORD": "${DB_PASSWORD}", "LOG_LEVEL": "info"},
               "cwd": "/srv/legacy"})
    );

    // A human-readable listing of the same.
    let out = world.mcpbox(&["import"]);
    assert_eq!(out.status.code(), Some(0));
    let shown = text(&out);
    assert!(
        shown.contains("~/.claude.json (Claude Code, user): 2 servers"),
        "{shown}"
    );
    assert!(
        shown.contains("set LEGACY_TOKEN: args[1] was written inline in ~/.codex/config.toml"),
        "{shown}"
    );
    assert!(shown.contains("Nothing written"), "{shown}");
}

#[test]
fn secrets_are_never_printed_or_written_in_clear() {
    let world = World::configured("secrets");
    let target = world.project.join("imported.json");
    let human = world.mcpbox(&["import", "--write", target.to_str().unwrap()]);
    let json = world.mcpbox(&["--json", "import"]);
    let written = std::fs::read_to_string(&target).unwrap();
    for secret in INLINE_SECRETS {
        for (what, shown) in [
            ("the listing", text(&human)),
            ("the JSON", text(&json)),
            ("the file", written.clone()),
        ] {
            assert!(!shown.contains(secret), "{secret} is in {what}:\n{shown}");
        }
    }
    let found: Value = serde_json::from_slice(&json.stdout).unwrap();
    let variables: Vec<&str> = found["servers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["secrets"].as_array().unwrap())
        .map(|s| s["variable"].as_str().unwrap())
        .collect();
    for v in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "SENTRY_TOKEN",
        "BRAVE_API_KEY",
        "FIGMA_API_KEY",
        "LEGACY_TOKEN",
        "DB_PASSWORD",
    ] {
        assert!(variables.contains(&v), "{v} not in {variables:?}");
    }
    // What was written is a configuration mcpbox reads.
    let config: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        config["mcpServers"]["sentry"]["headers"]["Authorization"],
        "Bearer ${SENTRY_TOKEN}"
    );
}

/// The values written inside other values in `tests/tests/all/import/credentials/`: none
/// may ever be printed or written.
const INSIDE_SECRETS: &[&str] = &[
    "mysql-env-pass-0101",
    "pg-arg-pass-0102",
    "YWRtaW46YmFzaWMtaGVhZGVyLTAxMDM",
    "slackwebhook0104secret",
    "discord-webhook-0105-secret",
    "pw-0106",
    "sk_live_0107abcdefghijklmnopqrst",
    "cookie2-secret-0108",
    "dXBzdHJlYW06MDEwOQ",
];

/// `import --json` over `tests/tests/all/import/credentials/`: the server `name`'s entry,
/// and the variables its secrets were moved into, with their fields.
fn moved(tag: &str, name: &str) -> (Value, Vec<(String, String)>) {
    let found = World::with_credentials(tag).json(&[]);
    let s = server(&found, name);
    let secrets = s["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["variable"].as_str().unwrap().to_owned(),
                x["field"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (s["entry"].clone(), secrets)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn a_url_password_in_an_env_value_is_moved_into_a_variable() {
    let (entry, secrets) = moved("env-url", "mysql");
    assert_eq!(
        entry["env"],
        json!({"DATABASE_URL": "mysql://root:${MYSQL_PASSWORD}@127.0.0.1:3306/shop",
               "ALLOW_INSERT_OPERATION": "false"})
    );
    assert_eq!(secrets, pairs(&[("MYSQL_PASSWORD", "env.DATABASE_URL")]));
}

#[test]
fn a_url_password_in_an_argument_is_moved_into_a_variable() {
    let (entry, secrets) = moved("arg-url", "postgres");
    assert_eq!(
        entry["args"][2],
        "postgresql://admin:${POSTGRES_PASSWORD}@localhost:5432/mydb"
    );
    assert_eq!(secrets, pairs(&[("POSTGRES_PASSWORD", "args[2]")]));
}

#[test]
fn webhook_urls_are_moved_into_variables() {
    let (entry, secrets) = moved("webhook-env", "slack-notify");
    assert_eq!(entry["env"]["SLACK_WEBHOOK_URL"], "${SLACK_WEBHOOK_URL}");
    assert_eq!(
        secrets,
        pairs(&[("SLACK_WEBHOOK_URL", "env.SLACK_WEBHOOK_URL")])
    );
    let (entry, secrets) = moved("webhook-arg", "discord-notify");
    assert_eq!(
        entry["args"][3],
        "https://discord.com/api/webhooks/${DISCORD_NOTIFY_WEBHOOK}"
    );
    assert_eq!(secrets, pairs(&[("DISCORD_NOTIFY_WEBHOOK", "args[3]")]));
}

#[test]
fn a_password_after_dash_p_beside_a_user_is_moved_into_a_variable() {
    let (entry, secrets) = moved("dash-p", "mysql_cli");
    assert_eq!(
        entry["args"],
        json!([
            "--host",
            "127.0.0.1",
            "--port",
            "3306",
            "-u",
            "root",
            "-p",
            "${MYSQL_CLI_PASSWORD}"
        ])
    );
    assert_eq!(secrets, pairs(&[("MYSQL_CLI_PASSWORD", "args[7]")]));
}

#[test]
fn basic_credentials_in_headers_are_moved_into_variables() {
    // mcp-remote's `--header "Authorization: Basic …"`.
    let (entry, secrets) = moved("basic-arg", "intranet");
    assert_eq!(entry["args"][3], "Authorization: Basic ${INTRANET_TOKEN}");
    assert_eq!(secrets, pairs(&[("INTRANET_TOKEN", "args[3]")]));
    // `Basic …` under a header name that says nothing.
    let (entry, secrets) = moved("basic-header", "gateway");
    assert_eq!(
        entry["headers"],
        json!({"X-Upstream": "Basic ${GATEWAY_UPSTREAM}"})
    );
    assert_eq!(
        secrets,
        pairs(&[("GATEWAY_UPSTREAM", "headers.X-Upstream")])
    );
}

#[test]
fn a_key_in_a_url_path_is_moved_into_a_variable() {
    let (entry, secrets) = moved("url-path", "payments");
    assert_eq!(
        entry["url"],
        "https://mcp.payments.example/${PAYMENTS_TOKEN}/mcp"
    );
    assert_eq!(secrets, pairs(&[("PAYMENTS_TOKEN", "url")]));
}

#[test]
fn a_cookie2_header_is_moved_into_a_variable() {
    let (entry, secrets) = moved("cookie2", "legacy-api");
    assert_eq!(
        entry["headers"],
        json!({"Cookie2": "${LEGACY_API_COOKIE2}"})
    );
    assert_eq!(secrets, pairs(&[("LEGACY_API_COOKIE2", "headers.Cookie2")]));
}

#[test]
fn credentials_inside_values_are_never_printed_or_written_in_clear() {
    let world = World::with_credentials("inside");
    let target = world.project.join("imported.json");
    let human = world.mcpbox(&["import", "--write", target.to_str().unwrap()]);
    assert_eq!(human.status.code(), Some(0), "{}", text(&human));
    let json = world.mcpbox(&["--json", "import"]);
    let written = std::fs::read_to_string(&target).unwrap();
    for secret in INSIDE_SECRETS {
        for (what, shown) in [
            ("the listing", text(&human)),
            ("the JSON", text(&json)),
            ("the file", written.clone()),
        ] {
            assert!(!shown.contains(secret), "{secret} is in {what}:\n{shown}");
        }
    }
    // The listing says what to set, and the file is a configuration with the references.
    assert!(
        text(&human).contains("set MYSQL_PASSWORD: env.DATABASE_URL was written inline"),
        "{}",
        text(&human)
    );
    let config: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        config["mcpServers"]["payments"]["url"],
        "https://mcp.payments.example/${PAYMENTS_TOKEN}/mcp"
    );
}

#[test]
fn write_adds_to_an_existing_file_without_clobbering() {
    let world = World::configured("write");
    // Another file (not one of the sources), with the project's `memory` and a
    // `github` that is another server than the one the clients configured.
    let existing = r#"{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": { "MEMORY_FILE_PATH": "${MEMORY_FILE:-/tmp/memory.json}" }
    },
    "github": { "command": "my-own-github-server" }
  },
  "permissions": { "deny": ["mcp__memory__delete_entities"] }
}
"#;
    let path = world.project.join("team.json");
    std::fs::write(&path, existing).unwrap();
    let out = world.mcpbox(&["--config", "team.json", "import", "--write"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("Updated team.json: added"), "{shown}");
    assert!(shown.contains("already there: memory"), "{shown}");
    assert!(
        shown.contains(
            "not written: `github`: team.json already has a different server of that name"
        ),
        "{shown}"
    );

    let written = std::fs::read_to_string(&path).unwrap();
    // What was there is there, byte for byte, up to the end of the old entries.
    let kept = &existing[..existing.find("\n  },\n  \"permissions\"").unwrap()];
    assert!(written.starts_with(kept), "{written}");
    let config: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        config["mcpServers"]["github"],
        json!({"command": "my-own-github-server"})
    );
    assert_eq!(
        config["permissions"]["deny"][0],
        "mcp__memory__delete_entities"
    );
    // Every other server was added.
    for name in ["linear", "figma", "context7", "legacy", "fetch", "api"] {
        assert!(
            config["mcpServers"].get(name).is_some(),
            "{name} missing: {written}"
        );
    }

    // A second run changes nothing.
    let again = world.mcpbox(&["--config", "team.json", "import", "--write"]);
    assert!(
        text(&again).contains("team.json is unchanged"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);

    // A target that is not JSON is left alone.
    let broken = world.project.join("broken.json");
    std::fs::write(&broken, "{ \"mcpServers\": ").unwrap();
    let out = world.mcpbox(&["import", "--write", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is not valid JSON (line 1, column"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&broken).unwrap(),
        "{ \"mcpServers\": "
    );
}

#[test]
fn broken_sources_are_reported_and_skipped() {
    let world = World::empty("broken");
    world.put(
        &world.home.join(".cursor/mcp.json"),
        "cursor-unterminated.json",
    );
    world.put(&world.project.join(".mcp.json"), "claude-array.json");
    world.put(
        &world.home.join(".codex/config.toml"),
        "codex-unterminated.toml",
    );
    world.put(
        &world.project.join(".codex/config.toml"),
        "codex-not-a-table.toml",
    );
    world.put(
        &world.home.join(".config/Claude/claude_desktop_config.json"),
        "desktop-not-utf8.json",
    );
    world.put(
        &world.home.join(".codeium/windsurf/mcp_config.json"),
        "windsurf-bad-entries.json",
    );
    // A directory where a file should be.
    std::fs::create_dir_all(world.project.join(".vscode/mcp.json")).unwrap();

    let found = world.json(&[]);
    let skipped = |client: &str, scope: &str| {
        let s = source(&found, client, scope);
        assert_eq!(s["status"], "skipped", "{s}");
        s["reason"].as_str().unwrap().to_string()
    };
    let r = skipped("cursor", "user");
    assert!(
        r.starts_with("is not valid JSON: line 2, column 17: Unterminated object"),
        "{r}"
    );
    let r = skipped("claude-code", "project");
    assert!(
        r.contains("`mcpServers` as an array") && r.contains("does not know"),
        "{r}"
    );
    let r = skipped("codex", "user");
    assert!(r.starts_with("is not valid TOML: line 2, column"), "{r}");
    let r = skipped("codex", "project");
    assert!(r.contains("`mcp_servers` as string"), "{r}");
    assert!(skipped("claude-desktop", "user").contains("not UTF-8"));
    assert!(skipped("vs-code", "project").contains("directory"));

    // Windsurf's file is fine; its broken entries are skipped one by one.
    let windsurf = source(&found, "windsurf", "user");
    assert_eq!(windsurf["status"], "read");
    assert_eq!(windsurf["servers"], 2, "{windsurf}");
    let reasons = windsurf["skipped"].to_string();
    for expected in [
        "`nothing`: has neither `command` nor `url`",
        "`socket`: has transport type \\\"websocket\\\"",
        "`text`: is a string, not an object",
        "`args-object`: has `args` that is an object",
        "`twice`: defined more than once; the last definition is used",
    ] {
        assert!(reasons.contains(expected), "{expected} not in {reasons}");
    }
    assert_eq!(server(&found, "twice")["entry"]["command"], "second");
    assert_eq!(found["servers"].as_array().unwrap().len(), 2);

    // The human listing says the same.
    let shown = text(&world.mcpbox(&["import"]));
    assert!(
        shown.contains("~/.cursor/mcp.json (Cursor, user): skipped: it is not valid JSON"),
        "{shown}"
    );
}

#[test]
fn a_source_over_the_size_cap_is_skipped() {
    let world = World::configured("cap");
    let mut places = mcpbox::client_configs::Places::from_env(&world.project).unwrap();
    places.home = world.home.clone();
    places.config_dir = world.home.join(".config");
    places.codex_home = None;
    places.max_bytes = 600;
    let found = mcpbox::client_configs::discover(&places);
    let claude = found
        .sources
        .iter()
        .find(|s| s.path.ends_with(".claude.json"))
        .unwrap();
    match &claude.outcome {
        mcpbox::client_configs::SourceOutcome::Skipped { reason } => {
            assert!(reason.contains("larger than 600 bytes"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // Smaller files still count.
    assert!(found.servers.iter().any(|s| s.name == "memory"));
}

#[test]
fn check_connects_to_each_server() {
    let world = World::empty("check");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/demo-server.py");
    std::fs::create_dir_all(world.home.join(".cursor")).unwrap();
    std::fs::write(
        world.home.join(".cursor/mcp.json"),
        json!({"mcpServers": {
            "demo": {"command": "python3", "args": [demo]},
            "gone": {"command": "/nonexistent/mcp-server"},
        }})
        .to_string(),
    )
    .unwrap();
    let out = world.mcpbox(&["import", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{shown}");
    assert!(shown.contains("● demo  4 tools"), "{shown}");
    assert!(
        shown.contains("✗ gone  server `gone` could not be started"),
        "{shown}"
    );

    let found = world.json(&[]);
    assert!(found["health"].is_null(), "no check unless asked");
}

/// A server only a project's files name is not started by `--check` unless the
/// user trusts them: a cloned repository can name any program.
#[test]
fn check_starts_project_only_servers_only_with_trust() {
    let world = World::empty("check-trust");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/demo-server.py");
    let marker = world.project.join("started");
    // The project's server leaves a mark when it is started at all.
    let script = format!(
        "touch '{}' && exec python3 '{}'",
        marker.display(),
        demo.display()
    );
    std::fs::create_dir_all(world.project.join(".cursor")).unwrap();
    std::fs::write(
        world.project.join(".cursor/mcp.json"),
        json!({"mcpServers": { "project": {"command": "sh", "args": ["-c", script]} }}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(world.home.join(".cursor")).unwrap();
    std::fs::write(
        world.home.join(".cursor/mcp.json"),
        json!({"mcpServers": { "mine": {"command": "python3", "args": [demo]} }}).to_string(),
    )
    .unwrap();

    let out = world.mcpbox(&["import", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("● mine  4 tools"), "{shown}");
    assert!(!shown.contains("● project"), "{shown}");
    assert!(
        shown.contains("Not checked (found only in the project's files")
            && shown.contains("pass --trust to check them too): project"),
        "{shown}"
    );
    assert!(!marker.exists(), "the project's server was started");
    let found = world.json(&["--check"]);
    assert_eq!(found["unchecked"], json!(["project"]), "{found:#}");
    assert!(!marker.exists(), "the project's server was started");

    let out = world.mcpbox(&["--trust", "import", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("● project  4 tools"), "{shown}");
    assert!(!shown.contains("Not checked"), "{shown}");
    assert!(marker.exists(), "--trust starts the project's server");
}

// `--installed`: servers installed on the machine but configured nowhere. The
// programs, tools and packages below are real installs in scratch directories;
// PATH holds only them.

/// Runs a setup command; its output when it fails.
fn setup(command: &mut Command) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?} did not start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{}",
            out.status,
            text(&out)
        ))
    }
}

fn write_program(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The Python interpreter that runs this machine's `python3` (PATH in the
/// tests holds only scratch directories, so scripts name it by its path).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
}

/// What a test puts on PATH besides the package managers' directories.
struct OnPath {
    /// Programs dropped by hand: `code-analysis-mcp` (a real MCP server, the
    /// demo server), `mcp-notes` (a shell script named like a server that is
    /// none) and look-alikes that are not programs or not named like servers.
    dropped: PathBuf,
    /// `npm`, `npx`, `uv`, `uvx` and `pipx` stand-ins: probing must run none.
    shims: PathBuf,
}

/// The programs that leave a mark (a file `ran-NAME` in `$HOME`) when run.
const MARKING: &[&str] = &["mcp-notes", "npm", "npx", "uv", "uvx", "pipx"];

impl OnPath {
    fn make(root: &Path) -> OnPath {
        let on_path = OnPath {
            dropped: root.join("dropped"),
            shims: root.join("shims"),
        };
        std::fs::create_dir_all(&on_path.dropped).unwrap();
        std::fs::create_dir_all(&on_path.shims).unwrap();
        let demo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("examples/demo-server.py");
        let demo = std::fs::read_to_string(demo).unwrap();
        let demo = demo.replacen("#!/usr/bin/env python3", &format!("#!{}", python()), 1);
        write_program(&on_path.dropped.join("code-analysis-mcp"), &demo);
        let marking = |name: &str| format!("#!/bin/sh\n: > \"$HOME/ran-{name}\"\nexit 1\n");
        write_program(&on_path.dropped.join("mcp-notes"), &marking("mcp-notes"));
        for shim in &MARKING[1..] {
            write_program(&on_path.shims.join(shim), &marking(shim));
        }
        // Named like a server but no program: not executable, a directory, a
        // dangling link. A program not named like one, and the SDK's own CLI name.
        std::fs::write(on_path.dropped.join("mcp-server-readme"), "not a program").unwrap();
        std::fs::create_dir_all(on_path.dropped.join("mcp-server-dir")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", on_path.dropped.join("mcp-server-gone"))
            .unwrap();
        write_program(&on_path.dropped.join("notes"), &marking("notes"));
        write_program(&on_path.dropped.join("mcp"), &marking("mcp"));
        on_path
    }
}

impl World {
    /// `mcpbox ARGS` with PATH set to `path` and none of the package managers'
    /// variables but `env`.
    fn probing(&self, args: &[&str], path: &[&Path], env: &[(&str, &Path)]) -> Output {
        let mut command = Command::new(mcpbox_tests::mcpbox_program());
        command
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("PATH", std::env::join_paths(path).unwrap());
        for var in [
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "MCPBOX_CACHE_DIR",
            "MCPBOX_CONFIG_DIR",
            "CODEX_HOME",
            "APPDATA",
            "MCPBOX_TRUST_ALL",
            "UV_TOOL_DIR",
            "PIPX_HOME",
            "PIPX_BIN_DIR",
            "PIPX_GLOBAL_HOME",
            "PIPX_GLOBAL_BIN_DIR",
            "npm_config_prefix",
            "NPM_CONFIG_PREFIX",
            "npm_config_userconfig",
            "NPM_CONFIG_USERCONFIG",
        ] {
            command.env_remove(var);
        }
        for (k, v) in env {
            command.env(k, v);
        }
        command.stdin(Stdio::null()).output().expect("mcpbox runs")
    }

    /// The programs of [`MARKING`] that ran.
    fn ran(&self) -> Vec<&'static str> {
        MARKING
            .iter()
            .copied()
            .filter(|name| self.home.join(format!("ran-{name}")).exists())
            .collect()
    }
}

fn json_of(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", text(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// The server whose program has the file name `program`.
fn by_program<'a>(found: &'a Value, program: &str) -> Option<&'a Value> {
    found["servers"].as_array().unwrap().iter().find(|s| {
        s["entry"]["command"]
            .as_str()
            .is_some_and(|c| Path::new(c).file_name().unwrap() == program)
    })
}

fn sightings(installed: &Value) -> Vec<String> {
    installed["foundBy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["by"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn programs_on_path_are_listed_by_name_and_never_run() {
    let world = World::empty("installed-path");
    let root = world.home.parent().unwrap().to_path_buf();
    let on_path = OnPath::make(&root);
    // A name that would drive a terminal if printed raw.
    write_program(
        &on_path.dropped.join("mcp-\u{1b}[31mred"),
        "#!/bin/sh\nexit 1\n",
    );
    let relative = Path::new("relative-dir");
    let path = [on_path.dropped.as_path(), &on_path.shims, relative];
    let probing = |args: &[&str]| world.probing(args, &path, &[]);

    let found = json_of(&probing(&["--json", "import", "--installed"]));
    let analysis = by_program(&found, "code-analysis-mcp").expect("the dropped server");
    assert_eq!(analysis["name"], "code-analysis");
    assert_eq!(analysis["foundIn"], json!([]));
    let it = &analysis["installed"][0];
    assert_eq!(it["certainty"], "name", "{it}");
    assert_eq!(it["why"], json!(["named `*-mcp`"]));
    assert_eq!(sightings(it), ["path"]);
    assert!(it["package"].is_null());
    assert_eq!(
        analysis["entry"],
        json!({"command": on_path.dropped.join("code-analysis-mcp")})
    );
    let notes = by_program(&found, "mcp-notes").expect("the look-alike, by its name");
    assert_eq!(notes["name"], "notes");
    assert_eq!(notes["installed"][0]["certainty"], "name");
    assert_eq!(
        by_program(&found, "mcp-\u{1b}[31mred").unwrap()["name"],
        "\u{1b}[31mred"
    );
    for other in [
        "mcp-server-readme",
        "mcp-server-dir",
        "mcp-server-gone",
        "notes",
        "mcp",
        "npm",
        "uv",
    ] {
        assert!(by_program(&found, other).is_none(), "{other} listed");
    }
    assert_eq!(found["servers"].as_array().unwrap().len(), 3, "{found:#}");
    let looked = found["installedSources"].as_array().unwrap();
    let relative_dir = looked.iter().find(|l| l["path"] == "relative-dir").unwrap();
    assert_eq!(relative_dir["status"], "skipped");
    // No node on PATH and no prefix set: npm's global packages are not guessed.
    let npm = looked.iter().find(|l| l["by"] == "npm").unwrap();
    assert!(
        npm["reason"].as_str().unwrap().contains("no node on PATH"),
        "{npm}"
    );

    // People see names escaped; the listing tells how sure and how to take one.
    let out = probing(&["import", "--installed"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("\\x1b[31mred"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "{shown}");
    assert!(shown.contains("why (name only): named `mcp-*`"), "{shown}");
    assert!(
        shown.contains(
            "installed, configured nowhere: nothing starts it unless named (--installed notes)"
        ),
        "{shown}"
    );

    // `--check` starts none of them unless named.
    let out = probing(&["import", "--installed", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!shown.contains("Health:"), "{shown}");
    assert!(
        shown.contains("Not checked (installed, configured nowhere") && shown.contains("notes"),
        "{shown}"
    );
    let out = probing(&["--trust", "import", "--installed", "--check"]);
    assert!(!text(&out).contains("Health:"), "{}", text(&out));
    let out = probing(&["import", "--installed", "code-analysis", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("● code-analysis  4 tools"), "{shown}");
    assert_eq!(world.ran(), Vec::<&str>::new(), "probing ran something");

    // `--write` adds only what is named.
    let target = world.project.join("picked.json");
    let out = probing(&[
        "import",
        "--installed",
        "code-analysis",
        "--write",
        target.to_str().unwrap(),
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("not written: \\x1b[31mred, notes: installed, configured nowhere"),
        "{shown}"
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"mcpServers": {"code-analysis": {"command": on_path.dropped.join("code-analysis-mcp")}}})
    );

    // A name that is no server: a clear error, nothing written.
    let out = probing(&["import", "--installed", "nosuch", "--write"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--installed nosuch: no server of that name was found; the installed servers found are: code-analysis, \\x1b[31mred, notes"),
        "{}",
        text(&out)
    );
    assert!(!world.project.join(".mcp.json").exists());
    assert_eq!(world.ran(), Vec::<&str>::new(), "probing ran something");

    // The marks are real: a named look-alike is started, and leaves one.
    let out = probing(&["import", "--installed", "notes", "--check"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(world.ran(), ["mcp-notes"]);
    setup(Command::new(on_path.shims.join("npm")).env("HOME", &world.home)).unwrap_err();
    assert_eq!(world.ran(), ["mcp-notes", "npm"]);
}

/// Real installs, made once per test run: `uv tool install` (mcp-server-time,
/// and cowsay, which is no MCP server) into uv's default places under a scratch
/// home, `pipx install mcp-server-time` into a scratch `$PIPX_HOME`, and
/// `npm install -g` of `@modelcontextprotocol/server-memory` (the version
/// tests/peers pins) and two packages of the test's own into a scratch prefix.
struct Installs {
    root: PathBuf,
    /// The home uv installed into: `.local/share/uv/tools`, `.local/bin`.
    home: PathBuf,
    pipx_home: PathBuf,
    pipx_bin: PathBuf,
    npm_prefix: PathBuf,
    memory_version: String,
    on_path: OnPath,
}

/// Runs an install step; false (said on stderr) when it failed because its
/// registry cannot be reached.
type Step = dyn Fn(&mut Command, &str, &mut Command) -> bool + Sync;

/// The installs, or `None` (said on stderr) when a package registry cannot be
/// reached.
fn installs() -> Option<&'static Installs> {
    static INSTALLS: OnceLock<Option<Installs>> = OnceLock::new();
    INSTALLS.get_or_init(Installs::make).as_ref()
}

impl Installs {
    fn make() -> Option<Installs> {
        // Downloads are kept between runs (`cache`); the installs are made anew
        // in a directory of this run's own, and those of runs that are over
        // (their process is gone) are removed.
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("import-installed");
        let cache = base.join("cache");
        for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if !Path::new("/proc").join(pid.to_string()).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let root = base.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let constraints = format!(
            "{} {}",
            here().join("installed/constraints.txt").display(),
            repo.join("tests/peers/requirements.txt").display()
        );
        let peers: Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("tests/peers/package.json")).unwrap(),
        )
        .unwrap();
        let memory_version = peers["dependencies"]["@modelcontextprotocol/server-memory"]
            .as_str()
            .unwrap()
            .to_string();
        let installs = Installs {
            home: root.join("home"),
            pipx_home: root.join("pipx"),
            pipx_bin: root.join("pipx-bin"),
            npm_prefix: root.join("npm"),
            memory_version,
            on_path: OnPath::make(&root),
            root,
        };
        std::fs::create_dir_all(&installs.home).unwrap();
        seed_compiled_guest(&installs.home);

        // A failed step whose registry answers is a failure of the test; one
        // whose registry does not is a skip.
        let step = |command: &mut Command, registry: &str, reachable: &mut Command| -> bool {
            let Err(failure) = setup(command) else {
                return true;
            };
            match setup(reachable) {
                Ok(()) => panic!("{failure}"),
                Err(unreachable) => {
                    eprintln!(
                        "skipped: the {registry} registry cannot be reached, so the installs of \
                         the `--installed` tests cannot be made:\n{failure}\n{unreachable}"
                    );
                    false
                }
            }
        };
        // The two ecosystems install side by side.
        let (python_ok, npm_ok) = std::thread::scope(|scope| {
            let npm = scope.spawn(|| installs.npm_installs(&cache, &step));
            let python_ok = installs.python_installs(&cache, &constraints, &step);
            (python_ok, npm.join().unwrap())
        });
        (python_ok && npm_ok).then_some(installs)
    }

    /// `uv` and `pipx` into a virtual environment of the test's own, then
    /// mcp-server-time and cowsay with them.
    fn python_installs(&self, cache: &Path, constraints: &str, step: &Step) -> bool {
        let pypi = || {
            let mut c = Command::new(python());
            c.args([
                "-m",
                "pip",
                "index",
                "versions",
                "uv",
                "--retries",
                "0",
                "--timeout",
                "20",
            ]);
            c
        };
        let venv = self.root.join("venv");
        // Without a pip of its own (seeding one costs seconds): this machine's
        // pip installs into it.
        setup(
            Command::new(python())
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv),
        )
        .unwrap();
        let venv_python = venv.join("bin/python3");
        let ok = step(
            Command::new(python())
                .args(["-m", "pip", "--python"])
                .arg(&venv_python)
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .arg("-c")
                .arg(here().join("installed/constraints.txt"))
                .args(["uv", "pipx"])
                .env("PIP_CACHE_DIR", cache.join("pip")),
            "PyPI",
            &mut pypi(),
        );
        if !ok {
            return false;
        }
        let python_tool = |program: &str| {
            let mut c = Command::new(venv.join("bin").join(program));
            c.env("HOME", &self.home)
                .env("UV_CACHE_DIR", cache.join("uv"))
                .env("UV_PYTHON_DOWNLOADS", "never")
                .env("UV_PYTHON", &venv_python)
                .env("UV_CONSTRAINT", constraints)
                .env("PIPX_HOME", &self.pipx_home)
                .env("PIPX_BIN_DIR", &self.pipx_bin)
                .env("PIPX_DEFAULT_BACKEND", "uv")
                .env_remove("XDG_DATA_HOME")
                .env_remove("XDG_BIN_HOME")
                .env_remove("UV_TOOL_DIR")
                .env_remove("UV_TOOL_BIN_DIR");
            c
        };
        for (program, args) in [
            ("uv", ["tool", "install", "mcp-server-time"]),
            ("uv", ["tool", "install", "cowsay"]),
        ] {
            if !step(python_tool(program).args(args), "PyPI", &mut pypi()) {
                return false;
            }
        }
        step(
            python_tool("pipx").args(["install", "mcp-server-time"]),
            "PyPI",
            &mut pypi(),
        )
    }

    /// `npm install -g` of server-memory and two packages of the test's own.
    fn npm_installs(&self, cache: &Path, step: &Step) -> bool {
        // Two packages of the test's own: one named like a server with nothing
        // about MCP in it, one that is neither.
        let sources = self.root.join("npm-src");
        for (name, bin) in [
            ("mcp-lookalike", "mcp-lookalike"),
            ("notes-helper", "notes"),
        ] {
            let dir = sources.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("package.json"),
                json!({"name": name, "version": "1.0.0", "description": "Notes for people",
                       "bin": {bin: "cli.js"}})
                .to_string(),
            )
            .unwrap();
            write_program(
                &dir.join("cli.js"),
                "#!/usr/bin/env node\nprocess.exit(1)\n",
            );
        }
        step(
            Command::new("npm")
                .args(["install", "--global", "--no-audit", "--no-fund", "--prefix"])
                .arg(&self.npm_prefix)
                .arg("--cache")
                .arg(cache.join("npm"))
                .arg(format!(
                    "@modelcontextprotocol/server-memory@{}",
                    self.memory_version
                ))
                .arg(sources.join("mcp-lookalike"))
                .arg(sources.join("notes-helper"))
                .env("HOME", &self.home)
                .env_remove("npm_config_prefix")
                .env_remove("NPM_CONFIG_PREFIX"),
            "npm",
            Command::new("npm").args(["ping"]),
        )
    }

    /// A fresh home for one test, whose `.local` is the installs' (uv's default
    /// places) and whose `.npmrc` names the npm prefix.
    fn world(&self, tag: &str) -> World {
        let world = World::empty(tag);
        std::os::unix::fs::symlink(self.home.join(".local"), world.home.join(".local")).unwrap();
        std::fs::write(
            world.home.join(".npmrc"),
            format!(
                "; the global prefix\nprefix = {}\n",
                self.npm_prefix.display()
            ),
        )
        .unwrap();
        world
    }

    /// PATH: the package managers' program directories, the dropped programs,
    /// the stand-ins, and node (which the npm server's `#!/usr/bin/env node` needs).
    fn path(&self) -> Vec<PathBuf> {
        let system = self.root.join("system");
        if !system.exists() {
            std::fs::create_dir_all(&system).unwrap();
            let node = String::from_utf8(
                Command::new("sh")
                    .args(["-c", "command -v node"])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap();
            let _ = std::os::unix::fs::symlink(node.trim(), system.join("node"));
        }
        vec![
            self.home.join(".local/bin"),
            self.pipx_bin.clone(),
            self.npm_prefix.join("bin"),
            self.on_path.dropped.clone(),
            self.on_path.shims.clone(),
            system,
        ]
    }

    fn probing(&self, world: &World, args: &[&str]) -> Output {
        let path = self.path();
        let path: Vec<&Path> = path.iter().map(PathBuf::as_path).collect();
        world.probing(
            args,
            &path,
            &[
                ("PIPX_HOME", &self.pipx_home),
                ("PIPX_BIN_DIR", &self.pipx_bin),
            ],
        )
    }
}

#[test]
fn servers_installed_by_uv_pipx_and_npm_are_found_from_their_metadata() {
    let Some(installs) = installs() else {
        eprintln!("skipped: the package registries cannot be reached (see above)");
        return;
    };
    let world = installs.world("installed-packages");
    let found = json_of(&installs.probing(&world, &["--json", "import", "--installed"]));
    let servers = found["servers"].as_array().unwrap();

    let time = server(&found, "time");
    let it = &time["installed"][0];
    assert_eq!(
        it["program"],
        installs
            .home
            .join(".local/bin/mcp-server-time")
            .to_str()
            .unwrap()
    );
    assert_eq!(sightings(it), ["uv-tool", "path"]);
    assert_eq!(
        it["package"],
        json!({"registry": "pypi", "name": "mcp-server-time", "version": "2026.10.19"})
    );
    assert_eq!(it["certainty"], "metadata");
    let why = it["why"].to_string();
    for reason in [
        "depends on the MCP SDK `mcp`",
        "summary says MCP server",
        "named `mcp-server-*`",
    ] {
        assert!(why.contains(reason), "{reason} not in {why}");
    }
    // The same package installed by pipx is another program: another server.
    let pipx = server(&found, "time-pipx");
    let it = &pipx["installed"][0];
    assert_eq!(
        it["program"],
        installs.pipx_bin.join("mcp-server-time").to_str().unwrap()
    );
    assert_eq!(sightings(it), ["pipx", "path"]);
    assert_eq!(it["package"]["version"], "2026.10.19");
    assert_eq!(it["certainty"], "metadata");

    let memory = server(&found, "memory");
    let it = &memory["installed"][0];
    assert_eq!(
        it["program"],
        installs
            .npm_prefix
            .join("bin/mcp-server-memory")
            .to_str()
            .unwrap()
    );
    assert_eq!(sightings(it), ["npm", "path"]);
    assert_eq!(
        it["package"],
        json!({"registry": "npm", "name": "@modelcontextprotocol/server-memory",
               "version": installs.memory_version})
    );
    assert_eq!(it["certainty"], "metadata");
    assert!(
        it["why"]
            .to_string()
            .contains("MCP registry name `io.github.modelcontextprotocol/server-memory`"),
        "{it}"
    );

    // Named like a server, nothing about MCP in its package: its name only.
    let lookalike = server(&found, "lookalike");
    assert_eq!(lookalike["installed"][0]["certainty"], "name");
    assert_eq!(sightings(&lookalike["installed"][0]), ["npm", "path"]);
    // Neither named like one nor said to be one: not listed.
    for other in ["cowsay", "notes", "mcp"] {
        assert!(by_program(&found, other).is_none(), "{other} listed");
    }
    assert_eq!(servers.len(), 6, "{found:#}");
    let looked = found["installedSources"].as_array().unwrap();
    let npm = looked.iter().find(|l| l["by"] == "npm").unwrap();
    assert_eq!(npm["chosenBy"], "the prefix in ~/.npmrc");
    assert_eq!(npm["servers"], 2);
    let uv = looked.iter().find(|l| l["by"] == "uv-tool").unwrap();
    assert_eq!(
        uv["path"],
        world.home.join(".local/share/uv/tools").to_str().unwrap()
    );
    assert_eq!(uv["servers"], 1);

    // Named, they are checked: started through the runtime, their tools listed.
    let out = installs.probing(
        &world,
        &[
            "import",
            "--installed",
            "time,memory",
            "--installed",
            "time-pipx",
            "--check",
        ],
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("● time       2 tools"), "{shown}");
    assert!(shown.contains("● time-pipx  2 tools"), "{shown}");
    assert!(shown.contains("● memory     9 tools"), "{shown}");
    assert!(
        shown.contains("installed: ~/.local/bin/mcp-server-time")
            || shown.contains(&format!(
                "installed: {}",
                installs.home.join(".local/bin/mcp-server-time").display()
            )),
        "{shown}"
    );
    assert_eq!(world.ran(), Vec::<&str>::new(), "probing ran something");
}

#[test]
fn an_installed_server_is_the_configured_server_that_runs_it() {
    let Some(installs) = installs() else {
        eprintln!("skipped: the package registries cannot be reached (see above)");
        return;
    };
    let world = installs.world("installed-configured");
    std::fs::create_dir_all(world.home.join(".cursor")).unwrap();
    std::fs::write(
        world.home.join(".cursor/mcp.json"),
        json!({"mcpServers": {
            "clock": {"command": "uvx", "args": ["mcp-server-time"]},
            "memory": {"command": "npx", "args": ["-y", format!(
                "@modelcontextprotocol/server-memory@{}", installs.memory_version)]},
            "analysis": {"command": "code-analysis-mcp"},
        }})
        .to_string(),
    )
    .unwrap();
    let found = json_of(&installs.probing(&world, &["--json", "import", "--installed"]));
    let installed_at = |name: &str| -> Vec<String> {
        server(&found, name)["installed"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has no installs: {found:#}"))
            .iter()
            .map(|i| i["program"].as_str().unwrap().to_string())
            .collect()
    };
    // `uvx mcp-server-time` is the uv tool's and pipx's mcp-server-time.
    assert_eq!(
        installed_at("clock"),
        [
            installs.home.join(".local/bin/mcp-server-time"),
            installs.pipx_bin.join("mcp-server-time")
        ]
        .map(|p| p.to_str().unwrap().to_string())
    );
    assert_eq!(
        installed_at("memory"),
        [installs
            .npm_prefix
            .join("bin/mcp-server-memory")
            .to_str()
            .unwrap()]
    );
    // A bare name is the program PATH finds.
    assert_eq!(
        installed_at("analysis"),
        [installs
            .on_path
            .dropped
            .join("code-analysis-mcp")
            .to_str()
            .unwrap()]
    );
    let configured_nowhere: Vec<&str> = found["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["foundIn"] == json!([]))
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(configured_nowhere, ["lookalike", "notes"], "{found:#}");
    assert_eq!(server(&found, "clock")["entry"]["command"], "uvx");

    // `--write` adds the configured servers, not what is only installed.
    let out = installs.probing(&world, &["import", "--installed", "--write", "team.json"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("not written: lookalike, notes"), "{shown}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(world.project.join("team.json")).unwrap())
            .unwrap();
    let names: Vec<&String> = written["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["analysis", "clock", "memory"]);
    assert_eq!(world.ran(), Vec::<&str>::new(), "probing ran something");
}

#[test]
fn installed_metadata_over_the_size_cap_is_skipped() {
    let Some(installs) = installs() else {
        eprintln!("skipped: the package registries cannot be reached (see above)");
        return;
    };
    let mut places = mcpbox::client_configs::installed::InstalledPlaces::from_env(&installs.home);
    places.path = Vec::new();
    places.pipx = Vec::new();
    places.npm_prefix = Some(installs.npm_prefix.clone());
    places.uv_tool_dir = installs.home.join(".local/share/uv/tools");
    // Larger than each receipt, package.json and cowsay's METADATA, smaller than
    // mcp-server-time's METADATA (the pins of tests/tests/all/import/installed fix the sizes).
    places.max_bytes = 8000;
    let probe = mcpbox::client_configs::installed::probe(&places);
    let uv = probe
        .looked
        .iter()
        .find(|l| l.path == places.uv_tool_dir)
        .unwrap();
    match &uv.outcome {
        mcpbox::client_configs::SourceOutcome::Read { servers, skipped } => {
            assert_eq!(*servers, 1, "{skipped:?}");
            assert_eq!(skipped.len(), 1, "{skipped:?}");
            assert!(
                skipped[0].starts_with("`mcp-server-time`: ")
                    && skipped[0].ends_with(
                        "METADATA is larger than 8000 bytes, the most mcpbox reads from a \
                         package's metadata"
                    ),
                "{skipped:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Its program is still listed, by its name.
    let time = probe
        .found
        .iter()
        .find(|i| i.command_name == "mcp-server-time")
        .unwrap();
    assert_eq!(
        time.certainty,
        mcpbox::client_configs::installed::Certainty::Name
    );
    assert_eq!(time.package.as_ref().unwrap().version, None);
}

// `mcpbox connect`: the other direction, on copies of the same files.

/// Every file `connect` can rewrite in `tests/import/`: the client and scope
/// as the command line names them, the file, and the source as `import --json`
/// names it.
const CONNECTABLE: &[(&str, &str, &str, &str, &str)] = &[
    ("claude-code", "user", ".claude.json", "claude-code", "user"),
    (
        "claude-code",
        "project",
        "@/.mcp.json",
        "claude-code",
        "project",
    ),
    (
        "claude-desktop",
        "user",
        ".config/Claude/claude_desktop_config.json",
        "claude-desktop",
        "user",
    ),
    ("cursor", "user", ".cursor/mcp.json", "cursor", "user"),
    (
        "cursor",
        "project",
        "@/.cursor/mcp.json",
        "cursor",
        "project",
    ),
    (
        "vscode",
        "user",
        ".config/Code/User/mcp.json",
        "vs-code",
        "user",
    ),
    (
        "vscode",
        "project",
        "@/.vscode/mcp.json",
        "vs-code",
        "project",
    ),
    (
        "windsurf",
        "user",
        ".codeium/windsurf/mcp_config.json",
        "windsurf",
        "user",
    ),
    ("codex", "user", ".codex/config.toml", "codex", "user"),
];

impl World {
    /// A file of [`CONNECTABLE`]: `@/` is the project, anything else is in the home.
    fn file(&self, at: &str) -> PathBuf {
        match at.strip_prefix("@/") {
            Some(rest) => self.project.join(rest),
            None => self.home.join(at),
        }
    }
}

/// The members of a JSON file's top-level object other than its servers, in order.
fn others(text: &str) -> Vec<(String, Value)> {
    let order: Vec<String> = {
        // serde_json's map sorts keys: take the order from the text.
        let value: Value = serde_json::from_str(text).unwrap();
        let mut keys: Vec<(usize, String)> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (text.find(&format!("\n  \"{k}\"")).unwrap_or(0), k.clone()))
            .collect();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    };
    let value: Value = serde_json::from_str(text).unwrap();
    order
        .into_iter()
        .filter(|k| k != "mcpServers" && k != "servers")
        .map(|k| (k.clone(), value[&k].clone()))
        .collect()
}

#[test]
fn connect_and_undo_every_client_format() {
    let world = World::configured("connect-formats");
    let config = world.project.join("box.json");
    std::fs::write(&config, "{\"mcpServers\": {}}\n").unwrap();
    let config_arg = config.to_str().unwrap();
    let before_import = world.json(&[]);
    for &(client, scope, at, source_client, source_scope) in CONNECTABLE {
        let file = world.file(at);
        let original = std::fs::read(&file).unwrap();
        let was = source(&before_import, source_client, source_scope)["servers"]
            .as_u64()
            .unwrap();
        assert!(was > 0, "{client} {scope} configures servers");

        let out = world.mcpbox(&["--config", config_arg, "connect", client, "--scope", scope]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(0), "{client} {scope}: {shown}");
        assert!(shown.contains("Replaces these servers"), "{shown}");
        for secret in INLINE_SECRETS {
            assert!(
                !shown.contains(secret),
                "{client}: {secret} printed: {shown}"
            );
        }
        let backup = PathBuf::from(format!("{}.mcpbox-backup", file.display()));
        assert_eq!(std::fs::read(&backup).unwrap(), original, "{client} backup");

        // Read back as mcpbox reads it: one server, mcpbox serving the config.
        let found = world.json(&[]);
        let s = source(&found, source_client, source_scope);
        assert_eq!(s["status"], "read", "{client} {scope}: {s}");
        assert_eq!(s["servers"], 1, "{client} {scope}: {s}");
        let mcpbox = server(&found, "mcpbox");
        assert_eq!(
            mcpbox["entry"],
            json!({"command": mcpbox_tests::mcpbox_program(),
                   "args": ["serve", "--config", config_arg]}),
            "{client} {scope}"
        );

        // Everything else in the file is as it was.
        let now = std::fs::read_to_string(&file).unwrap();
        let original_text = String::from_utf8(original.clone()).unwrap();
        if client == "codex" {
            let top = |t: &str| -> Vec<String> {
                t.lines()
                    .take_while(|l| !l.starts_with('['))
                    .map(String::from)
                    .collect()
            };
            assert_eq!(top(&now), top(&original_text), "{now}");
        } else if client != "vscode" && client != "cursor" {
            // (VS Code's and Cursor's files may hold comments, which serde_json
            // does not read; their text is compared by undo below.)
            assert_eq!(others(&now), others(&original_text), "{client}: {now}");
        }

        // A second connect is refused until undone.
        let out = world.mcpbox(&["--config", config_arg, "connect", client, "--scope", scope]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("connected already"), "{}", text(&out));

        let out = world.mcpbox(&["connect", "--undo", client, "--scope", scope]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(0), "{shown}");
        assert!(shown.contains("Restored"), "{shown}");
        assert_eq!(std::fs::read(&file).unwrap(), original, "{client} {scope}");
        assert!(!backup.exists());
        assert!(!PathBuf::from(format!("{}.mcpbox-connected", file.display())).exists());
    }
}

#[test]
fn connect_keeps_comments_and_the_other_keys_of_codex_and_vscode_files() {
    let world = World::empty("connect-comments");
    let config = world.project.join("box.json");
    std::fs::write(&config, "{\"mcpServers\": {}}\n").unwrap();
    let codex = world.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    let codex_text = "# my model\nmodel = \"o3\" # trailing\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n\n# profiles below\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    std::fs::write(&codex, codex_text).unwrap();
    let vscode = world.project.join(".vscode/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    let vscode_text = "{\n  // prompts\n  \"inputs\": [],\n  \"servers\": {\n    \"docs\": {\"type\": \"stdio\", \"command\": \"docs-mcp\"}, // mine\n  },\n  \"other\": true\n}\n";
    std::fs::write(&vscode, vscode_text).unwrap();

    let config_arg = config.to_str().unwrap();
    let out = world.mcpbox(&["--config", config_arg, "connect", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let now = std::fs::read_to_string(&codex).unwrap();
    assert!(!now.contains("docs-mcp"), "{now}");
    for kept in [
        "# my model\n",
        "model = \"o3\" # trailing\n",
        "# profiles below\n[profiles.fast]\nmodel = \"o4-mini\"\n",
    ] {
        assert!(now.contains(kept), "{kept:?} lost: {now}");
    }
    let out = world.mcpbox(&[
        "--config", config_arg, "connect", "vscode", "--scope", "project",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let now = std::fs::read_to_string(&vscode).unwrap();
    assert!(!now.contains("docs-mcp"), "{now}");
    assert!(
        now.starts_with("{\n  // prompts\n  \"inputs\": [],\n  \"servers\": {\n")
            && now.contains("\"type\": \"stdio\"")
            && now.ends_with("  },\n  \"other\": true\n}\n"),
        "{now}"
    );
    for (client, file, text_before) in [
        ("codex", &codex, codex_text),
        ("vscode", &vscode, vscode_text),
    ] {
        let mut args = vec!["connect", "--undo", client];
        if client == "vscode" {
            args.extend(["--scope", "project"]);
        }
        let out = world.mcpbox(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(std::fs::read_to_string(file).unwrap(), text_before);
    }
}

/// The whole way: a client's file with two real servers and other settings,
/// connected with `--import`; read back, the file holds one server, mcpbox,
/// which starts and serves the tools of both; undo gives the bytes back.
#[test]
fn a_connected_client_runs_mcpbox_serving_its_servers() {
    let world = World::empty("connect-run");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/demo-server.py");
    let claude = world.home.join(".claude.json");
    let original = serde_json::to_string_pretty(&json!({
        "numStartups": 12,
        "mcpServers": {
            "demo": {"type": "stdio", "command": "python3", "args": [demo]},
            "demo-b": {"command": "python3", "args": ["-B", demo]},
        },
        "projects": {"/elsewhere": {"mcpServers": {}}},
        "theme": "dark",
    }))
    .unwrap()
        + "\n";
    std::fs::write(&claude, &original).unwrap();
    // It holds a credential of its own (here none; often one inline): private.
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let config = world.home.join("mcpbox/servers.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let config_arg = config.to_str().unwrap();

    // Without --import, a configuration that does not exist is refused.
    let out = world.mcpbox(&["--config", config_arg, "connect", "claude-code"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("pass --import"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), original);

    // --dry-run writes nothing.
    let out = world.mcpbox(&[
        "--config",
        config_arg,
        "connect",
        "claude-code",
        "--import",
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Nothing written"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), original);
    assert!(!config.exists());

    let out = world.mcpbox(&["--config", config_arg, "connect", "claude-code", "--import"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("  - the entries demo, demo-b"), "{shown}");
    assert_eq!(mode(&claude), 0o600, "the file keeps its mode");
    assert_eq!(mode(&world.home.join(".claude.json.mcpbox-backup")), 0o600);
    assert_eq!(
        mode(&world.home.join(".claude.json.mcpbox-connected")),
        0o600
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let names: Vec<&String> = written["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["demo", "demo-b"], "{written:#}");

    let out = world.mcpbox(&["--config", config_arg, "trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = world.mcpbox(&["import", "--check"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("● mcpbox  8 tools"), "{shown}");
    let found = world.json(&[]);
    assert_eq!(found["servers"].as_array().unwrap().len(), 1, "{found:#}");
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(now["numStartups"], 12);
    assert_eq!(now["theme"], "dark");
    assert_eq!(now["projects"], json!({"/elsewhere": {"mcpServers": {}}}));

    // The client rewrites the rest of its file (Claude Code keeps its state
    // there): undo puts back the servers and keeps that change.
    let connected = std::fs::read_to_string(&claude).unwrap();
    std::fs::write(
        &claude,
        connected.replace("\"numStartups\": 12", "\"numStartups\": 13"),
    )
    .unwrap();
    let out = world.mcpbox(&["connect", "--undo", "claude-code"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("Restored the servers"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&claude).unwrap(),
        original.replace("\"numStartups\": 12", "\"numStartups\": 13")
    );
    assert_eq!(mode(&claude), 0o600);
    assert!(!world.home.join(".claude.json.mcpbox-backup").exists());

    // A change to the servers themselves: undo refuses, --force keeps it beside.
    std::fs::write(&claude, &original).unwrap();
    let out = world.mcpbox(&["--config", config_arg, "connect", "claude-code"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let changed = std::fs::read_to_string(&claude).unwrap().replace(
        "\"mcpbox\": {",
        "\"mine\": {\"command\": \"mine-mcp\"},\n    \"mcpbox\": {",
    );
    std::fs::write(&claude, &changed).unwrap();
    let out = world.mcpbox(&["connect", "--undo", "claude-code"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("changed since"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), changed);
    let out = world.mcpbox(&["connect", "--undo", "claude-code", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), original);
    assert_eq!(mode(&claude), 0o600);
    let undone = world.home.join(".claude.json.mcpbox-undone");
    assert_eq!(std::fs::read_to_string(undone).unwrap(), changed);
}

#[test]
fn connect_over_http_names_the_token_and_never_writes_it() {
    let world = World::empty("connect-http");
    for file in [
        ".claude.json",
        ".cursor/mcp.json",
        ".config/Code/User/mcp.json",
        ".codeium/windsurf/mcp_config.json",
    ] {
        let path = world.home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "{\"mcpServers\": {\"x\": {\"command\": \"x-mcp\"}}}\n",
        )
        .unwrap();
    }
    let codex = world.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&codex, "[mcp_servers.x]\ncommand = \"x-mcp\"\n").unwrap();
    let url = "http://127.0.0.1:8765/mcp";
    for client in ["claude-code", "cursor", "vscode", "windsurf", "codex"] {
        let out = world.mcpbox(&["connect", client, "--http", url]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(0), "{client}: {shown}");
        assert!(shown.contains("MCPBOX_TOKEN"), "{shown}");
    }
    let found = world.json(&[]);
    let servers = found["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "the same URL everywhere: {found:#}");
    assert_eq!(
        servers[0]["entry"],
        json!({"type": "http", "url": url,
               "headers": {"Authorization": "Bearer ${MCPBOX_TOKEN}"}}),
        "{found:#}"
    );
    assert_eq!(
        servers[0]["foundIn"].as_array().unwrap().len(),
        5,
        "{found:#}"
    );
    assert!(!world.home.join(".config/mcpbox/http-token").exists());

    // Claude Desktop's file runs programs only.
    let out = world.mcpbox(&["connect", "claude-desktop", "--http", url]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("local programs only"), "{}", text(&out));
}

#[test]
fn connect_refuses_a_file_it_cannot_parse_and_its_own_configuration() {
    let world = World::empty("connect-broken");
    let config = world.project.join("box.json");
    std::fs::write(&config, "{\"mcpServers\": {}}\n").unwrap();
    let config_arg = config.to_str().unwrap();
    for (client, file, broken) in [
        (
            "cursor",
            world.home.join(".cursor/mcp.json"),
            "cursor-unterminated.json",
        ),
        (
            "codex",
            world.home.join(".codex/config.toml"),
            "codex-unterminated.toml",
        ),
        (
            "claude-code",
            world.home.join(".claude.json"),
            "claude-array.json",
        ),
    ] {
        world.put(&file, broken);
        let before = std::fs::read(&file).unwrap();
        let out = world.mcpbox(&["--config", config_arg, "connect", client]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{client}: {shown}");
        assert!(shown.contains(file.to_str().unwrap()), "{shown}");
        assert!(shown.contains("nothing was written"), "{shown}");
        assert_eq!(std::fs::read(&file).unwrap(), before);
        assert!(!PathBuf::from(format!("{}.mcpbox-backup", file.display())).exists());
    }
    // A project's .mcp.json that is mcpbox's own configuration.
    let own = world.project.join(".mcp.json");
    std::fs::write(
        &own,
        "{\"mcpServers\": {\"x\": {\"command\": \"x-mcp\"}}}\n",
    )
    .unwrap();
    let out = world.mcpbox(&["connect", "claude-code", "--scope", "project"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("mcpbox's own configuration"),
        "{}",
        text(&out)
    );
}
