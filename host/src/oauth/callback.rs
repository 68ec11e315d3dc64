//! The loopback redirect listener (RFC 8252 §7.3): where the browser lands
//! after the user approves, with the authorization code in the query.
//!
//! It binds `127.0.0.1` (the configured callback port, or any free port) before
//! the authorization URL is shown, and waits until the deadline of the login
//! for the one redirect that carries the `state` of the authorization mcpbox
//! started: it answers that one with a page saying the window can be closed.
//! Any other request to the callback path (a forged or stale redirect: another
//! local program can connect to the port) gets `400` and changes nothing: the
//! listener keeps waiting, so one forged request cannot end a login in
//! progress. Everything else (`/favicon.ico`) gets 404. Connections are served
//! side by side, each with its own 10 s limit, so one that never sends a
//! request does not hold up the browser's. Request heads are parsed by
//! `httparse` (hyper's parser); a server framework would rebuild hyper with its
//! server features for one GET.

use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";

/// How many connections are served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 64;

/// A bound listener and the redirect URI that reaches it.
pub(crate) struct Callback {
    listener: TcpListener,
    /// `http://127.0.0.1:<port>/callback`.
    pub redirect_uri: String,
}

impl Callback {
    /// Binds the loopback listener; port 0 picks a free one.
    pub async fn bind(port: u16) -> std::io::Result<Callback> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Callback {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// Waits for the browser's request for the redirect URI with `state`, and
    /// returns its full URL (with `code`, `state`, maybe `iss` or `error`).
    /// Runs until such a request comes: the caller sets the deadline.
    pub async fn wait(self, server: &str, state: &str) -> std::io::Result<String> {
        let (found, mut redirect) = mpsc::channel(1);
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept(), if connections.len() < MAX_CONNECTIONS => {
                    let (stream, _) = accepted?;
                    let (found, server, state) = (found.clone(), server.to_owned(), state.to_owned());
                    connections.spawn(async move {
                        if let Some(target) = serve(stream, &server, &state).await {
                            let _ = found.send(target).await;
                        }
                    });
                }
                Some(target) = redirect.recv() => {
                    let origin = self.redirect_uri.trim_end_matches(CALLBACK_PATH);
                    return Ok(format!("{origin}{target}"));
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    }
}

/// What a request for the callback path carries.
enum Request {
    /// The redirect of the authorization mcpbox started.
    Redirect(String),
    /// A request for the callback path with another `state`, or none.
    Forged,
    /// Anything else.
    Other,
}

/// Answers one connection; the request target when it was the redirect with `state`.
async fn serve(mut stream: TcpStream, server: &str, state: &str) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let target = loop {
        let mut chunk = [0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 || buf.len() > 16 * 1024 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => break request.path.map(str::to_owned),
            Ok(httparse::Status::Partial) => continue,
            Err(_) => break None,
        }
    };
    let request = match target {
        Some(t) if t == CALLBACK_PATH || t.starts_with(&format!("{CALLBACK_PATH}?")) => {
            let carries = Url::parse(&format!("http://127.0.0.1{t}"))
                .ok()
                .and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                });
            if carries.as_deref() == Some(state) {
                Request::Redirect(t)
            } else {
                Request::Forged
            }
        }
        _ => Request::Other,
    };
    let (status, body) = match &request {
        Request::Redirect(_) => (
            "200 OK",
            format!(
                "<!doctype html><title>mcpbox</title><p>mcpbox received the authorization \
                 for server <b>{}</b>. You can close this window.</p>",
                escape(server)
            ),
        ),
        Request::Forged => (
            "400 Bad Request",
            "<!doctype html><title>mcpbox</title><p>This is not the redirect of the \
             authorization mcpbox is waiting for (its <code>state</code> does not match), \
             so it was ignored.</p>"
                .to_owned(),
        ),
        Request::Other => ("404 Not Found", "not found".to_owned()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    match request {
        Request::Redirect(target) => Some(target),
        _ => None,
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
