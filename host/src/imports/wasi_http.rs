//! `wasi:http/outgoing-handler` for the guest: `wasmtime-wasi-http` implements
//! the interface, and its `send_request` hook is where the host's duties for
//! remote servers live.
//!
//! - A request must name a grant by its stand-in authority
//!   (`g<N>.mcpbox.internal`); anything else is refused (`http-request-denied`),
//!   so the guest reaches nothing but configured servers.
//! - It goes to the configured URL (same path and query as the stand-in) or to
//!   its path and query on the configured origin, placeholders replaced by their
//!   values ([`super::remote::Granted::target`]).
//! - The configured headers are added, replacing any of the same name: they go
//!   only to the configured origin, since nothing else can be reached. No
//!   `Referer` is sent and no redirect is followed: a `3xx` is the guest's to
//!   read (it follows same-origin `307`/`308` itself and refuses the rest).
//! - OAuth is [`crate::oauth`]'s: `oauth::send` adds the server's bearer token
//!   (or its DPoP-bound token and a proof) and handles a refusal (`401`, `403`
//!   with `insufficient_scope`), unless the configured headers hold an
//!   `Authorization` of their own.
//! - `HEAD` goes on a new connection, never a pooled one: the guest sends it to
//!   learn whether anything still serves HTTP at the URL after an exchange broke.
//! - The exchange runs on a task of its own: a request the guest drops before
//!   its answer (the `DELETE` that ends a session) is still sent, except a
//!   `POST`, which is abandoned and its connection closed (a 2026-07-28 client
//!   cancels a request over HTTP by closing its stream).
//!
//! The bodies are `reqwest`'s (rustls with the ring provider, HTTP/1.1), one
//! connection pool for every server.

use std::sync::OnceLock;
use std::time::Duration;

use http_body_util::BodyExt;
use reqwest::header::{HeaderName, REFERER};
use tokio::sync::oneshot;
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

use super::remote::{Grants, STAND_IN_DOMAIN};
use crate::store::HostState;

/// How long establishing a TCP (and TLS) connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The process-wide HTTP client: one connection pool for every server.
fn client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(true)).clone()
}

/// The client for `HEAD`: without a pool, so that every probe makes a new
/// connection rather than trying one the server may have dropped a moment ago.
fn probe_client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(false)).clone()
}

fn build_client(pooled: bool) -> Result<reqwest::Client, String> {
    // reqwest is built without a bundled crypto provider (ring builds in
    // seconds, aws-lc-rs in minutes); install ring unless the embedder
    // already chose one.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .user_agent(concat!("mcpbox/", env!("CARGO_PKG_VERSION")));
    if !pooled {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder
        .build()
        .map_err(|e| format!("could not create the HTTP client: {}", chain(&e)))
}

/// An error with its causes: reqwest's own text omits why a request failed.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = e.source();
    }
    text
}

/// What a failed send means in `wasi:http` terms: a connection that could not
/// be made, or one that broke.
fn send_error(e: &reqwest::Error) -> HttpError {
    let io = std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    })
    .find_map(|e| e.downcast_ref::<std::io::Error>());
    if e.is_connect() {
        return match io.map(std::io::Error::kind) {
            Some(std::io::ErrorKind::ConnectionRefused) => HttpError::ConnectionRefused,
            Some(std::io::ErrorKind::TimedOut) => HttpError::ConnectionTimeout,
            _ if e.is_timeout() => HttpError::ConnectionTimeout,
            _ if chain(e).contains("dns error") => HttpError::DestinationNotFound,
            _ => HttpError::DestinationUnavailable,
        };
    }
    if e.is_timeout() {
        return HttpError::ConnectionReadTimeout;
    }
    HttpError::ConnectionTerminated
}

/// The hooks: the grants the guest opened.
impl WasiHttpHooks for Grants {
    fn set_host_header(&mut self) -> bool {
        // The stand-in authority means nothing to the server: reqwest sets `Host`
        // from the real URL.
        false
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        // Resolved now, while the grant is surely open: the guest may drop it
        // (and this request's future) right after, as it does with `DELETE`.
        let (parts, body) = request.into_parts();
        let granted = parts
            .uri
            .host()
            .filter(|h| h.ends_with(STAND_IN_DOMAIN))
            .and_then(|host| self.get(host));
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let Some(url) = granted.as_ref().and_then(|g| g.target(&path)) else {
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        };
        let Some(granted) = granted else {
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        };
        let mut headers = parts.headers;
        headers.remove(REFERER);
        for name in granted.headers.keys() {
            headers.remove(name);
        }
        for (name, value) in &granted.headers {
            headers.append(HeaderName::clone(name), value.clone());
        }
        let method = parts.method;
        let auth = self.oauth.as_ref().and_then(|o| o.for_grant(&granted));
        let (mut tx, rx) = oneshot::channel();
        // A POST the guest drops before its answer came is abandoned, its
        // connection closed: over HTTP that is how a 2026-07-28 client cancels
        // a request. Anything else (the `DELETE` that ends a session) is sent.
        let abandon = method == http::Method::POST;
        tokio::spawn(async move {
            let work = async {
                let client = if method == http::Method::HEAD {
                    probe_client()
                } else {
                    client()
                }
                .map_err(|e| HttpError::InternalError(Some(e)))?;
                // The guest writes the body while this waits.
                let body = body
                    .collect()
                    .await
                    .map_err(|_| HttpError::HttpRequestBodySize(None))?
                    .to_bytes();
                // OAuth (a bearer token, a refusal handled) is crate::oauth's.
                let response = crate::oauth::send(auth, &client, method, url, headers, body)
                    .await
                    .map_err(|e| match e {
                        crate::oauth::SendError::Http(e) => send_error(&e),
                        crate::oauth::SendError::Proof(why) => HttpError::InternalError(Some(why)),
                    })?;
                let response: http::Response<reqwest::Body> = response.into();
                Ok::<_, HttpError>(response.map(|body| {
                    body.map_err(|e| {
                        if e.is_timeout() {
                            HttpError::ConnectionReadTimeout
                        } else {
                            HttpError::ConnectionTerminated
                        }
                    })
                    .boxed_unsync()
                }))
            };
            let result = if abandon {
                tokio::select! {
                    result = work => result,
                    () = tx.closed() => return,
                }
            } else {
                work.await
            };
            let _ = tx.send(result);
        });
        Box::new(async move {
            let response = rx
                .await
                .map_err(|_| HttpError::InternalError(Some("the request task ended".into())))??;
            let io: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((response, io))
        })
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.grants,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::pin::Pin;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};

    use super::*;
    use crate::store::{HostState, Policy};

    fn request(uri: &str, headers: &[(&str, &str)]) -> http::Request<WasiBody> {
        let mut r = http::Request::builder().method("GET").uri(uri);
        for (n, v) in headers {
            r = r.header(*n, *v);
        }
        r.body(Empty::<Bytes>::new().map_err(|e| match e {}).boxed_unsync())
            .unwrap()
    }

    async fn send(
        grants: &mut Grants,
        request: http::Request<WasiBody>,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        let future = grants.send_request(request, None, Box::new(async { Ok(()) }));
        Pin::from(future).await.map(|(response, _)| response)
    }

    #[tokio::test]
    async fn a_request_that_names_no_grant_is_refused() {
        let mut grants = Grants::default();
        for uri in [
            "http://127.0.0.1:1/mcp",
            "http://g0.mcpbox.internal/mcp",
            "http://mcpbox.internal.example/",
        ] {
            let result = send(&mut grants, request(uri, &[])).await;
            assert!(matches!(result, Err(HttpError::HttpRequestDenied)), "{uri}");
        }
    }

    /// The configured headers replace the guest's of the same name, a `Referer`
    /// is dropped, and the request goes to the configured URL with its values.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_granted_request_goes_to_the_configured_url_with_its_headers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut write = stream.try_clone().unwrap();
            let mut lines = Vec::new();
            for line in BufReader::new(stream).lines() {
                let line = line.unwrap();
                if line.is_empty() {
                    break;
                }
                lines.push(line.to_ascii_lowercase());
            }
            write
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .unwrap();
            lines
        });
        let mut state = HostState::new(
            Policy::default(),
            Default::default(),
            1 << 20,
            Default::default(),
        );
        let ep = crate::transport::endpoint::http_endpoint(
            &format!("http://127.0.0.1:{port}/mcp?key=${{KEY}}"),
            &[("Authorization", "Bearer ${KEY}")],
        );
        let lookup = |name: &str| (name == "KEY").then(|| "s3cret".to_owned());
        super::super::remote::open(&mut state, "s", &ep, &lookup).unwrap();
        let request = request(
            "http://g0.mcpbox.internal/mcp?key=mcpbox-ref-0",
            &[
                ("authorization", "guest-made"),
                ("referer", "http://g0.mcpbox.internal/"),
                ("x-guest", "1"),
            ],
        );
        let response = send(&mut state.grants, request).await.unwrap();
        assert_eq!(response.status(), 200);
        let lines = server.join().unwrap();
        assert_eq!(lines[0], "get /mcp?key=s3cret http/1.1");
        assert!(
            lines.contains(&"authorization: bearer s3cret".to_owned()),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("guest-made")), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("referer")), "{lines:?}");
        assert!(lines.contains(&"x-guest: 1".to_owned()), "{lines:?}");
        assert!(
            lines.contains(&format!("host: 127.0.0.1:{port}")),
            "{lines:?}"
        );
    }

    /// Resolved `${VAR}` values never reach the guest, the host's side:
    /// everything the host hands the guest for a remote server (a grant's
    /// stand-in URL, its answers, the errors of opening one, the hook's error
    /// codes) is free of resolved values, wherever the reference was: query,
    /// path, host, userinfo, a header. The guest's own messages are checked end
    /// to end
    /// (`security::a_secret_in_the_url_reaches_its_server_and_no_output`).
    #[tokio::test(flavor = "multi_thread")]
    async fn nothing_handed_to_the_guest_holds_a_resolved_value() {
        use crate::bindings::remote::HostGrant;
        use wasmtime::component::Resource;

        const SECRET: &str = "s3cret-5e6f";
        let lookup = |name: &str| match name {
            "KEY" => Some(SECRET.to_owned()),
            "HOST" => Some(format!("{SECRET}.invalid")),
            "NEWLINE" => Some(format!("{SECRET}\n")),
            _ => None,
        };
        // Nothing listens there: requests fail as a refused connection.
        let refused = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut state = HostState::new(
            Policy::default(),
            Default::default(),
            1 << 20,
            Default::default(),
        );
        let endpoint = |url: String, header: &str| {
            crate::transport::endpoint::http_endpoint(&url, &[("Authorization", header)])
        };
        let mut handed = Vec::new();
        for url in [
            format!("http://127.0.0.1:{refused}/mcp?key=${{KEY}}"),
            format!("http://127.0.0.1:{refused}/${{KEY}}/mcp"),
            format!("http://u:${{KEY}}@127.0.0.1:{refused}/mcp"),
            "http://${HOST}/mcp".to_owned(),
        ] {
            let grant = super::super::remote::open(
                &mut state,
                "s",
                &endpoint(url.clone(), "Bearer ${KEY}"),
                &lookup,
            )
            .unwrap();
            let this = state.table.push(grant).unwrap();
            let borrow = || Resource::<super::super::remote::Grant>::new_borrow(this.rep());
            let stand_in = state.url(borrow()).unwrap();
            assert!(stand_in.contains(".mcpbox.internal/"), "{stand_in}");
            handed.push(stand_in.clone());
            for other in [url.clone(), format!("http://{SECRET}.invalid/")] {
                handed.push(format!("{:?}", state.same_origin(borrow(), other)));
            }
            // Under the grant (the configured URL, another path), and naming none.
            for uri in [
                stand_in.clone(),
                stand_in.replace("/mcp", "/other"),
                format!("http://127.0.0.1:{refused}/mcp?key={SECRET}"),
            ] {
                match send(&mut state.grants, request(&uri, &[])).await {
                    Ok(r) => panic!("{uri}: nothing listens, yet {r:?}"),
                    Err(e) => handed.push(format!("{e:?} {e}")),
                }
            }
            HostGrant::drop(&mut state, this).unwrap();
        }
        for (url, header) in [
            ("http://127.0.0.1:1/mcp", "Bearer ${NEWLINE}"),
            ("${KEY}", "x"),
            ("http://127.0.0.1:1/?a=${KEY}&b=${UNSET}", "x"),
        ] {
            match super::super::remote::open(
                &mut state,
                "s",
                &endpoint(url.into(), header),
                &lookup,
            ) {
                Ok(_) => panic!("{url} {header}: opened"),
                Err(e) => handed.push(format!("{e:?}")),
            }
        }
        state.policy.allow_network = false;
        let url = "http://127.0.0.1:1/?a=${KEY}";
        match super::super::remote::open(&mut state, "s", &endpoint(url.into(), "x"), &lookup) {
            Ok(_) => panic!("opened against the policy"),
            Err(e) => handed.push(format!("{e:?}")),
        }
        assert_eq!(handed.len(), 4 * 6 + 4, "{handed:#?}");
        for text in &handed {
            assert!(!text.contains(SECRET), "handed to the guest: {text}");
        }
    }
}
