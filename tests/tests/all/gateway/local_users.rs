//! Other users of the same machine: loopback is no boundary between them, so
//! `mcpbox serve --http` and `mcpbox dashboard` require a bearer token there too.
//! The hostile client is `curl` run as another user (uid 65534, `nobody`, through
//! `setpriv`) where the tests run as root, as in CI; elsewhere it runs as the
//! same user without the token (and the test says so). The token is the one
//! `serve` keeps in `http-token` in its configuration directory.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mcpbox_tests::gateway::{ConfigFile, http};
use mcpbox_tests::http::{ServerProcess, start_with};
use mcpbox_tests::run_within;
use serde_json::json;

use crate::{POST, stateless_call, text};

/// What the server's entry holds, and the other user must never see.
const SECRET: &str = "ghp_0therUsersMustNotSeeThis0123456789ab";

/// The other user's id.
const NOBODY: &str = "65534";

/// Whether this process can run a program as another user (root, with `setpriv`).
fn can_switch_user() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(root && setpriv) {
        eprintln!(
            "\n*** the other user is played by this user without the token: a second uid \
             needs root and setpriv ***\n"
        );
    }
    root && setpriv
}

/// `program args…` as uid 65534 where the machine allows, else as this user.
fn as_other_user(program: &str, args: &[&str]) -> Command {
    if can_switch_user() {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--"])
            .arg(program)
            .args(args);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

/// Runs `curl ARGS… URL` as the other user: (HTTP status, body).
fn curl_as_other_user(args: &[&str], url: &str) -> (u16, String) {
    let mut all = vec!["-s", "-o", "-", "-w", "\n%{http_code}"];
    all.extend_from_slice(args);
    all.push(url);
    let mut command = as_other_user("curl", &all);
    let (status, out, err) = run_within(&mut command, Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{command:?}: {status:?}\n{out}\n{err}"
    );
    let (body, code) = out.rsplit_once('\n').unwrap_or(("", &out));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// A directory of the test's own under the temporary directory (0755, as a
/// home directory's parent is), removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("mcpbox-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The fixture, holding `SECRET` in its environment as a GitHub server would.
fn config() -> ConfigFile {
    ConfigFile::new(&json!({"mcpServers": {
        "fx": {"command": crate::fixture(), "args": [], "env": {"GITHUB_TOKEN": SECRET}}}}))
}

/// `mcpbox serve --http 127.0.0.1:0 EXTRA…` with `config_dir` as its
/// configuration directory and no `MCPBOX_TOKEN`.
fn serve(config: &Path, config_dir: &Path, extra: &[&str]) -> ServerProcess {
    let mut command = Command::new(crate::cli());
    command
        .arg("--trust")
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .envs(mcpbox_tests::compiled_guest::own_config_dir(config_dir))
        .env_remove("MCPBOX_TOKEN");
    start_with(command, &|line| {
        Some(line.split("listening on ").nth(1)?.trim().to_owned())
    })
}

/// The stderr line of `process` that contains `what`, waited for.
fn line_with(process: &ServerProcess, what: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(line) = process.stderr().into_iter().find(|l| l.contains(what)) {
            return line;
        }
        assert!(
            Instant::now() < until,
            "no line with {what:?} in {:#?}",
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What another user tries on a gateway: a tool call that reads the server's
/// environment, a server's details (stderr tail) and the recent calls.
fn another_user_tries(url: &str) -> Vec<(String, u16, String)> {
    let base = url.strip_suffix("/mcp").unwrap();
    let body = stateless_call(1, "fx__read_text", json!({"path": "/proc/self/environ"}));
    let call = curl_as_other_user(
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-H",
            "Accept: application/json, text/event-stream",
            "-H",
            "Mcp-Method: tools/call",
            "-H",
            "Mcp-Name: fx__read_text",
            "--data",
            &body,
        ],
        url,
    );
    let mut tries = vec![("tools/call".to_owned(), call.0, call.1)];
    for path in ["/api/servers/fx", "/api/calls", "/api/servers", "/metrics"] {
        let (status, body) = curl_as_other_user(&[], &format!("{base}{path}"));
        tries.push((path.to_owned(), status, body));
    }
    tries
}

#[test]
fn another_local_user_cannot_call_tools_or_read_the_dashboard() {
    let home = TempDir::new("local-users");
    let config_dir = home.0.join("config");
    let config = config();
    let gateway = serve(&config.path, &config_dir, &[]);

    for (what, status, body) in another_user_tries(&gateway.url) {
        assert_eq!(status, 401, "another user's {what}: {body}");
        assert!(!body.contains(SECRET), "another user's {what}: {body}");
        assert!(body.contains("bearer token is required"), "{what}: {body}");
    }

    // The token is kept where only this user can read it, and said where.
    let file = config_dir.join("http-token");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&config_dir), 0o700);
    let token = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert_eq!(token.len(), 32, "{token}");
    let told = line_with(&gateway, "Authorization: Bearer");
    assert!(told.contains(&file.display().to_string()), "{told}");
    let mut cat = as_other_user("cat", &[file.to_str().unwrap()]);
    let (status, out, _) = run_within(&mut cat, Duration::from_secs(30));
    if can_switch_user() {
        assert!(!status.is_some_and(|s| s.success()), "{out}");
        assert!(!out.contains(&token));
    }
    // The dashboard's URL, ready to open, carries it in its fragment.
    let dashboard = line_with(&gateway, "dashboard at ");
    assert!(
        dashboard.contains(&format!("/#token={token}")),
        "{dashboard}"
    );

    // The user's own client, with the token from the file, is served.
    let bearer = format!("Bearer {token}");
    let own: Vec<(&str, &str)> = POST[..2]
        .iter()
        .copied()
        .chain([("Authorization", bearer.as_str())])
        .collect();
    let r = http(
        &gateway.url,
        "POST",
        &own,
        &stateless_call(2, "fx__echo", json!({"text": "mine"})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(text(&r.messages()[0]["result"]), "mine");

    // The next run keeps the token, so a client configured once keeps working.
    drop(gateway);
    let again = serve(&config.path, &config_dir, &[]);
    let r = http(
        &again.url,
        "POST",
        &own,
        &stateless_call(3, "fx__echo", json!({"text": "again"})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn insecure_no_token_lets_every_local_user_in_and_says_so() {
    let home = TempDir::new("no-token");
    let config_dir = home.0.join("config");
    let config = config();
    let gateway = serve(&config.path, &config_dir, &["--insecure-no-token"]);
    let warning = line_with(&gateway, "--insecure-no-token");
    assert!(
        warning.starts_with("warning:") && warning.contains("every user of this machine"),
        "{warning}"
    );
    let tries = another_user_tries(&gateway.url);
    let (_, status, body) = &tries[0];
    assert_eq!(*status, 200, "{body}");
    assert!(
        body.contains("GITHUB_TOKEN"),
        "what the flag allows: {body}"
    );
    // No token was made or kept.
    assert!(!config_dir.join("http-token").exists());
}
