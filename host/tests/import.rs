//! `mcpbox import` against real configuration files in each client's own format
//! (`tests/import/`: written from each client's documentation), with `HOME`
//! pointing at a temporary copy of them, and against broken ones.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import")
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
        world
    }

    /// The files of `tests/import/`: every client configured.
    fn configured(tag: &str) -> World {
        World::from(tag, &here())
    }

    /// The files of `tests/import/credentials/`: credentials written inside
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
        Command::new(env!("CARGO_BIN_EXE_mcpbox"))
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
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

/// The values written inline in `tests/import/`: none may ever be printed or written.
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

/// The values written inside other values in `tests/import/credentials/`: none
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

/// `import --json` over `tests/import/credentials/`: the server `name`'s entry,
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
    let mut places = mcpbox::import::Places::from_env(&world.project).unwrap();
    places.home = world.home.clone();
    places.config_dir = world.home.join(".config");
    places.codex_home = None;
    places.max_bytes = 600;
    let found = mcpbox::import::discover(&places);
    let claude = found
        .sources
        .iter()
        .find(|s| s.path.ends_with(".claude.json"))
        .unwrap();
    match &claude.outcome {
        mcpbox::import::SourceOutcome::Skipped { reason } => {
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
