//! Sandboxed stdio servers: the kernel (Landlock, `no_new_privs`) confines a real
//! server's process to its grants, and mcpbox keeps going when the server runs
//! into them.

use std::path::{Path, PathBuf};

use mcpbox::{Event, Runtime, ServerState};
use serde_json::{Value, json};

use crate::{assert_connected, call, fixture, open, ready, show, status, tempdir};

/// A tool result's text, which must be an error.
async fn refused(runtime: &Runtime, tool: &str, args: Value) -> String {
    let r = call(runtime, tool, args).await.expect("a tool result");
    assert!(r.is_error, "{tool} should have failed: {}", r.text);
    r.text
}

#[tokio::test(flavor = "multi_thread")]
async fn the_filesystem_server_reaches_only_its_grants() {
    let (granted, writable, other) = (
        tempdir("sandbox-read"),
        tempdir("sandbox-write"),
        tempdir("sandbox-other"),
    );
    std::fs::write(granted.join("notes.txt"), "granted text").unwrap();
    let (command, _) = mcpbox_tests::filesystem_command(&granted);
    // The server itself would allow all four directories: only the kernel says no.
    let runtime = open(json!({ "fs": {
        "command": command,
        "args": [show(&granted), show(&writable), show(&other), "/etc"],
        // `${VAR}` works in grants; this one falls back to its default.
        "sandbox": {
            "read": [format!("${{MCPBOX_TEST_SURELY_UNSET:-{}}}", show(&granted))],
            "write": [show(&writable)],
        },
    }}))
    .await;
    assert_connected(&ready(&runtime).await, "fs");
    let read = |path: PathBuf| json!({ "path": show(&path) });

    let ok = call(
        &runtime,
        "mcp__fs__read_text_file",
        read(granted.join("notes.txt")),
    )
    .await
    .unwrap();
    assert_eq!(ok.text, "granted text");
    let e = refused(
        &runtime,
        "mcp__fs__read_text_file",
        json!({"path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(e, "EACCES: permission denied, open '/etc/passwd'");
    let write = |dir: &Path| json!({ "path": show(&dir.join("new.txt")), "content": "x" });
    let e = refused(&runtime, "mcp__fs__write_file", write(&other)).await;
    assert!(e.starts_with("EACCES: permission denied"), "{e}");
    let e = refused(&runtime, "mcp__fs__write_file", write(&granted)).await;
    assert!(
        e.starts_with("EACCES: permission denied"),
        "read-only grant: {e}"
    );
    assert!(!granted.join("new.txt").exists() && !other.join("new.txt").exists());
    let ok = call(&runtime, "mcp__fs__write_file", write(&writable))
        .await
        .unwrap();
    assert!(!ok.is_error, "{}", ok.text);
    assert_eq!(
        std::fs::read_to_string(writable.join("new.txt")).unwrap(),
        "x"
    );

    // mcpbox goes on, and says the server is confined.
    assert_connected(&runtime.servers(), "fs");
    let sandbox = runtime
        .diagnostics("fs")
        .unwrap()
        .sandbox
        .expect("described");
    assert!(sandbox.starts_with("Landlock ABI "), "{sandbox}");
    assert!(
        sandbox.contains(&format!(
            "read {}; write {}",
            show(&granted),
            show(&writable)
        )),
        "{sandbox}"
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn network_grants_decide_who_may_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let entry = |network: Value| json!({ "command": fixture(), "sandbox": { "network": network } });
    let runtime = open(json!({
        "none": entry(json!(false)),
        "port": entry(json!({ "connect": [port] })),
        "elsewhere": entry(json!({ "connect": [port.wrapping_add(1).max(1)] })),
        "all": entry(json!(true)),
    }))
    .await;
    let servers = ready(&runtime).await;
    for name in ["none", "port", "elsewhere", "all"] {
        assert_connected(&servers, name);
    }
    let connect = json!({ "port": port });
    for denied in ["none", "elsewhere"] {
        let e = refused(
            &runtime,
            &format!("mcp__{denied}__connect"),
            connect.clone(),
        )
        .await;
        assert!(
            e.contains("Permission denied (os error 13)"),
            "{denied}: {e}"
        );
    }
    for allowed in ["port", "all"] {
        let r = call(
            &runtime,
            &format!("mcp__{allowed}__connect"),
            connect.clone(),
        )
        .await
        .unwrap();
        assert_eq!(
            r.text,
            format!("connected to 127.0.0.1:{port}"),
            "{allowed}"
        );
    }
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_escape_attempt_gets_the_kernels_error_and_mcpbox_goes_on() {
    let runtime = open(json!({
        "fx": { "command": fixture(), "sandbox": { "read": ["/proc"] } },
        "free": { "command": fixture() },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "fx");
    let e = refused(
        &runtime,
        "mcp__fx__read_text",
        json!({"path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(
        e,
        "cannot read /etc/passwd: Permission denied (os error 13)"
    );
    // no_new_privs is set: a setuid program would run without its privileges.
    let status = call(
        &runtime,
        "mcp__fx__read_text",
        json!({"path": "/proc/self/status"}),
    )
    .await
    .unwrap();
    assert!(status.text.contains("NoNewPrivs:\t1"), "{}", status.text);
    // An unconfined server beside it is not affected.
    let free = call(
        &runtime,
        "mcp__free__read_text",
        json!({"path": "/proc/self/status"}),
    )
    .await
    .unwrap();
    assert!(free.text.contains("NoNewPrivs:\t0"), "{}", free.text);
    assert_eq!(
        status_of(&runtime, "fx"),
        ServerState::Connected,
        "still connected"
    );
    assert!(runtime.diagnostics("fx").unwrap().sandbox.is_some());
    assert_eq!(runtime.diagnostics("free").unwrap().sandbox, None);
    runtime.shutdown().await;
}

fn status_of(runtime: &Runtime, name: &str) -> ServerState {
    status(&runtime.servers(), name).state
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_peers_run_sandboxed_with_their_files_granted() {
    let peers = mcpbox_tests::peers_dir();
    let (py, py_args) = mcpbox_tests::fastmcp_server_command();
    let (ts, ts_args) = mcpbox_tests::ts_server_command();
    let runtime = open(json!({
        // The script is an argument, not the command: it is granted by hand. The
        // interpreter, its installation and the venv are granted automatically.
        "py": { "command": py, "args": py_args.clone(), "sandbox": { "read": py_args } },
        "ts": { "command": ts, "args": ts_args.clone(),
                "sandbox": { "read": [show(&peers.join("node_modules")), ts_args[0].clone()] } },
        "ts_bare": { "command": ts, "args": ts_args, "sandbox": {} },
    }))
    .await;
    let servers = ready(&runtime).await;
    assert_connected(&servers, "py");
    assert_connected(&servers, "ts");
    let r = call(&runtime, "mcp__py__greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, Ada!");
    let r = call(&runtime, "mcp__ts__greet", json!({"name": "Bo"}))
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, Bo!");
    // Without its files the server cannot start; the error says it is confined.
    let bare = status(&servers, "ts_bare");
    assert_eq!(bare.state, ServerState::Failed);
    let error = bare.error.as_deref().unwrap();
    assert!(
        error.contains("it runs in a sandbox: Landlock ABI"),
        "{error}"
    );
    assert!(error.contains("may mean it needs another grant"), "{error}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_path_that_does_not_exist_is_skipped_with_a_warning() {
    let runtime = open(json!({ "fx": {
        "command": fixture(),
        "sandbox": { "read": ["/nonexistent/mcpbox-grant"] },
    }}))
    .await;
    assert_connected(&ready(&runtime).await, "fx");
    // A warning event says so as the server starts (before anyone could listen
    // here); the diagnostics keep saying it.
    let sandbox = runtime.diagnostics("fx").unwrap().sandbox.unwrap();
    assert!(
        sandbox.contains("; the sandbox grant /nonexistent/mcpbox-grant is skipped: "),
        "{sandbox}"
    );
    // The warning event, seen by a listener when the server starts again.
    let mut events = runtime.events();
    runtime.reconnect("fx").await.unwrap();
    let warning = crate::next_event(
        &mut events,
        |e| matches!(e, Event::Warning(w) if w.contains("/nonexistent/mcpbox-grant")),
    )
    .await;
    let Event::Warning(w) = warning else {
        unreachable!()
    };
    assert!(
        w.starts_with("server `fx`: the sandbox grant /nonexistent/mcpbox-grant is skipped"),
        "{w}"
    );
    runtime.shutdown().await;
}

/// A fake home directory with a private key, an npm cache whose `_npx`
/// directory holds another server's code, and cargo's credentials, for the
/// escapes below.
struct Home {
    dir: PathBuf,
    key: PathBuf,
    victim: PathBuf,
}

impl Home {
    fn new(tag: &str) -> Home {
        let dir = tempdir(tag);
        let key = dir.join(".ssh/id_ed25519");
        std::fs::create_dir_all(key.parent().unwrap()).unwrap();
        std::fs::write(&key, "PRIVATE KEY").unwrap();
        std::fs::create_dir_all(dir.join(".cargo")).unwrap();
        std::fs::write(dir.join(".cargo/credentials.toml"), "token = \"secret\"").unwrap();
        let victim = dir.join(".npm/_npx/0123abcd/node_modules/victim/dist/index.js");
        std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
        std::fs::write(&victim, "console.log('the real server')").unwrap();
        Home { dir, key, victim }
    }

    /// The fixture server installed as `relative` (say `bin/tool`) under the
    /// home directory, as a symlink: what the sandbox sees is that path.
    fn install(&self, relative: &str) -> PathBuf {
        let path = self.dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fixture(), &path).unwrap();
        path
    }
}

/// A server at `~/bin/tool` (or `~/.cargo/bin/tool`) whose grants say "read
/// nothing" reads nothing of the home directory: the automatic installation
/// grant never opens the home directory or an unrecognised prefix.
#[tokio::test(flavor = "multi_thread")]
async fn a_program_in_the_home_directory_cannot_read_the_home_directory() {
    let home = Home::new("sandbox-home");
    let entry = |command: &Path| {
        json!({
            "command": show(command),
            "env": { "HOME": show(&home.dir) },
            "sandbox": { "read": [] },
        })
    };
    let runtime = open(json!({
        "bin": entry(&home.install("bin/tool")),
        "cargo": entry(&home.install(".cargo/bin/tool")),
    }))
    .await;
    let servers = ready(&runtime).await;
    for (name, secret) in [
        ("bin", home.key.clone()),
        ("cargo", home.key.clone()),
        ("cargo", home.dir.join(".cargo/credentials.toml")),
    ] {
        assert_connected(&servers, name);
        let e = refused(
            &runtime,
            &format!("mcp__{name}__read_text"),
            json!({ "path": show(&secret) }),
        )
        .await;
        assert!(
            e.ends_with("Permission denied (os error 13)"),
            "{name}: {e}"
        );
    }
    // The description lists what it got without asking: the program, not its home.
    let sandbox = runtime.diagnostics("bin").unwrap().sandbox.unwrap();
    assert!(
        sandbox.contains("also read: the system's programs and libraries")
            && sandbox.contains(&show(&home.dir.join("bin/tool"))),
        "{sandbox}"
    );
    assert!(
        !sandbox.contains(&format!("{}, ", show(&home.dir)))
            && !sandbox.contains(&format!("{};", show(&home.dir))),
        "{sandbox}"
    );
    runtime.shutdown().await;
}

/// A sandboxed `npx` server that may write nothing cannot rewrite the code in
/// the shared npm cache that other servers and the user's own `npx` run: it
/// gets a private cache of its own (0700), `npm_config_cache` points there, and
/// its description lists it.
#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_npx_server_cannot_rewrite_the_shared_npm_cache() {
    let home = Home::new("sandbox-npx");
    let npx = home.install("tools/npx");
    let cache = tempdir("sandbox-npx-cache");
    let text = json!({ "mcpServers": { "npx": {
        "command": show(&npx),
        "env": { "HOME": show(&home.dir) },
        "sandbox": {},
    }}})
    .to_string();
    let options = mcpbox::Options::from_config_text("npx.mcp.json", text);
    let runtime = crate::with_cache(options, &cache).open().await.unwrap();
    assert_connected(&ready(&runtime).await, "npx");
    let e = refused(
        &runtime,
        "mcp__npx__write_text",
        json!({ "path": show(&home.victim), "text": "console.log('pwned')" }),
    )
    .await;
    assert!(e.ends_with("Permission denied (os error 13)"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&home.victim).unwrap(),
        "console.log('the real server')"
    );
    // Its own cache, where npx unpacks what it runs, is writable and private.
    let own = call(
        &runtime,
        "mcp__npx__env_var",
        json!({"name": "npm_config_cache"}),
    )
    .await
    .unwrap()
    .text;
    let own = PathBuf::from(own);
    assert!(own.starts_with(cache.join("servers")), "{}", own.display());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&own).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let ok = call(
        &runtime,
        "mcp__npx__write_text",
        json!({ "path": show(&own.join("x")), "text": "x" }),
    )
    .await
    .unwrap();
    assert!(!ok.is_error, "{}", ok.text);
    let sandbox = runtime.diagnostics("npx").unwrap().sandbox.unwrap();
    assert!(
        sandbox.contains(&format!("also write: {} (its own)", show(&own))),
        "{sandbox}"
    );
    runtime.shutdown().await;
}
