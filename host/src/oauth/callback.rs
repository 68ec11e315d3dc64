//! The loopback redirect listener (RFC 8252 §7.3): where the browser lands
//! after the user approves, with the authorization code in the query.
//!
//! It binds `127.0.0.1` (the configured callback port, or any free one) before
//! the authorization URL is shown, answers requests for `/callback` with a page
//! saying the window can be closed, and everything else (`/favicon.ico`) with
//! 404. Request heads are parsed by `httparse` (hyper's parser); a server
//! framework would rebuild hyper with its server features for one GET.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";

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

    /// Waits for the browser's request for the redirect URI and returns its
    /// full URL (with `code`, `state`, maybe `iss` or `error`).
    pub async fn wait(self, server: &str) -> std::io::Result<String> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            if let Some(target) = serve(stream, server).await {
                let origin = self.redirect_uri.trim_end_matches(CALLBACK_PATH);
                return Ok(format!("{origin}{target}"));
            }
        }
    }
}

/// Answers one connection; the request target when it was the callback.
async fn serve(mut stream: TcpStream, server: &str) -> Option<String> {
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
    let is_callback = target
        .as_deref()
        .is_some_and(|t| t == CALLBACK_PATH || t.starts_with(&format!("{CALLBACK_PATH}?")));
    let (status, body) = if is_callback {
        (
            "200 OK",
            format!(
                "<!doctype html><title>mcpbox</title><p>mcpbox received the authorization \
                 for server <b>{}</b>. You can close this window.</p>",
                escape(server)
            ),
        )
    } else {
        ("404 Not Found", "not found".to_owned())
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    if is_callback { target } else { None }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
