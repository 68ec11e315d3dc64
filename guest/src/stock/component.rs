//! The stock component's WIT boundary: world `mcpbox:stock/stock` bound to
//! the plain logic of [`super::exchange`] (the exported `incoming-handler`)
//! and to one long-lived [`Manager`] (the exported `registry`, in [`registry`]).
//!
//! The [`Platform`] here reaches remote servers over `wasi:http/outgoing-handler`
//! through the same port as the mcpbox guest (`component/wasi_http.rs`, included
//! as it is), with the configured headers added to every request of a server
//! (what `remote.grant` does in mcpbox's hosts), and refuses stdio servers. The
//! exported `incoming-handler` reads the request, runs the exchange, and writes
//! the response as the exchange produces it.
//!
//! The exported `registry` is the mcpbox guest's own (`component/registry.rs`,
//! included as it is) on a manager that lives as long as the instance: a
//! component composed with this one calls `start`, `start-call` and `wait` as
//! an mcpbox host would, and `wait` blocks on `wasi:io/poll` over the
//! connections and the clock. The manager loads the configuration the gateway
//! reads (see [`Settings`]) when it is first used; `load-config` replaces it.

use crate::prelude::*;

use crate::remote::port::{ExchangeId, HttpError, HttpPort, Progress, Request};
use crate::remote::target::Target;
use crate::remote::{Kind, RemoteConnection};
use crate::transport::{Endpoint, Platform, TransportError, Woken};

use super::Settings;
use super::exchange::{self, HttpRequest, Responder};
use super::known::KnownServers;
use super::references::interpolate;
use crate::client::KnownServer;
use crate::gateway::Gateway;
use crate::manager::Manager;
use core::cell::RefCell;

#[path = "../component/wasi_http.rs"]
mod wasi_http;

#[path = "../component/registry.rs"]
mod registry;

// Generated code needs `unsafe` for the canonical ABI; confined to this module.
// One world or the other: `stock-config` adds `wasi:config/store` (see its WIT).
#[allow(unsafe_code, missing_docs)]
mod bindings {
    #[cfg(not(feature = "stock-config"))]
    wit_bindgen::generate!({
        path: "../wit-stock",
        world: "mcpbox:stock/stock",
        generate_all,
    });
    #[cfg(feature = "stock-config")]
    wit_bindgen::generate!({
        path: "../wit-stock",
        world: "mcpbox:stock/stock-config",
        generate_all,
    });

    use super::Stock;
    export!(Stock with_types_in self);
}

use bindings::exports::mcpbox::runtime::registry as wit;
use bindings::exports::mcpbox::runtime::types;
use bindings::exports::wasi::http::incoming_handler;
use bindings::wasi::cli::{environment, stderr};
use bindings::wasi::clocks::monotonic_clock;
use bindings::wasi::http::types::{
    Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use bindings::wasi::io::poll;
use bindings::wasi::io::streams::{OutputStream, StreamError};
use bindings::wasi::random::random;

/// The largest message a server may send, and the largest request body read:
/// the mcpbox host's default cap.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// `blocking-write-and-flush` takes at most this many bytes per call.
const WRITE_CHUNK: usize = 4096;

/// The configuration given at build time, if any (`MCPBOX_STOCK_CONFIG`).
const BAKED_CONFIG: Option<&str> = option_env!("MCPBOX_STOCK_CONFIG");

/// The platform of one request: the instance's environment, for `${VAR}`, and
/// what the instance knows of its servers.
struct StockHost {
    env: Vec<(String, String)>,
    /// `MCPBOX_TOOLS_MAX_AGE`, in milliseconds.
    known_max_age_ms: u64,
}

/// What the instance's requests learned of their servers (see
/// [`super::known`]): the one piece of state that outlives a request, for as
/// long as the runtime keeps the instance.
struct InstanceMemory(RefCell<KnownServers>);

// SAFETY: a component instance runs on one thread (wasm32-wasip2 has no
// threads), so the cell is never reached from two at once.
#[allow(unsafe_code)]
unsafe impl Sync for InstanceMemory {}

static KNOWN: InstanceMemory = InstanceMemory(RefCell::new(KnownServers::new()));

/// The `wasi:http` port with one server's configured headers on every request.
struct StockPort {
    http: wasi_http::WasiHttp,
    headers: Vec<(String, String)>,
}

impl HttpPort for StockPort {
    fn now_ms(&self) -> u64 {
        self.http.now_ms()
    }

    fn start(&mut self, mut request: Request) -> Result<ExchangeId, HttpError> {
        // The configuration's headers win over the transport's, as in the hosts.
        request
            .headers
            .retain(|(n, _)| !self.headers.iter().any(|(c, _)| c == n));
        request.headers.extend(self.headers.iter().cloned());
        self.http.start(request)
    }

    fn poll(&mut self, exchange: ExchangeId) -> Progress {
        self.http.poll(exchange)
    }

    fn close(&mut self, exchange: ExchangeId) {
        self.http.close(exchange);
    }
}

impl Platform for StockHost {
    type Conn = RemoteConnection<StockPort>;

    fn open(&mut self, server: &str, endpoint: &Endpoint) -> Result<Self::Conn, TransportError> {
        let (kind, url, headers) = match endpoint {
            Endpoint::Stdio { .. } => {
                return Err(TransportError::Unsupported(format!(
                    "server `{server}` is a stdio server (`command`), and the stock \
                     component runs no processes: give it a `url` (a remote MCP server), \
                     or serve it with `mcpbox serve`"
                )));
            }
            Endpoint::Http { url, headers } => (Kind::Streamable, url, headers),
            Endpoint::Sse { url, headers } => (Kind::LegacySse, url, headers),
        };
        let env = &self.env;
        let lookup = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let invalid = |why: String| TransportError::InvalidEndpoint(why);
        let real = interpolate(url, "url", &lookup).map_err(invalid)?;
        let target = Target::resolved(url, &real).map_err(invalid)?;
        let headers = headers
            .iter()
            .map(|p| {
                let field = format!("headers.{}", p.name);
                Ok((
                    p.name.to_ascii_lowercase(),
                    interpolate(&p.value, &field, &lookup)?,
                ))
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(invalid)?;
        let port = StockPort {
            http: wasi_http::WasiHttp::default(),
            headers,
        };
        Ok(RemoteConnection::open(
            kind,
            port,
            target,
            MAX_MESSAGE_BYTES,
        ))
    }

    fn now_ms(&self) -> u64 {
        monotonic_clock::now() / 1_000_000
    }

    fn memo_get(&self, key: &str) -> Option<String> {
        KNOWN.0.borrow().era(key)
    }

    fn memo_set(&mut self, key: &str, value: &str) {
        KNOWN.0.borrow_mut().set_era(key, value);
    }

    fn known_server(&self, key: &str) -> Option<KnownServer> {
        KNOWN
            .0
            .borrow_mut()
            .get(key, self.now_ms(), self.known_max_age_ms)
    }

    fn keep_server(&mut self, key: &str, known: Option<KnownServer>) {
        if self.known_max_age_ms > 0 || known.is_none() {
            KNOWN.0.borrow_mut().keep(key, known, self.now_ms());
        }
    }

    fn block(&mut self, conns: &[&Self::Conn], _now_ms: u64, deadline_ms: u64) -> Woken {
        let clock = monotonic_clock::subscribe_instant(deadline_ms.saturating_mul(1_000_000));
        let mut refs: Vec<&poll::Pollable> = Vec::with_capacity(conns.len() + 1);
        for conn in conns {
            conn.port().http.pollables(&mut refs);
        }
        refs.push(&clock);
        poll::poll(&refs);
        Woken::Io
    }
}

/// The response, set on the out-parameter when its head is known.
struct Response {
    outparam: Option<ResponseOutparam>,
    /// Declared before the body: a stream must be dropped before its body.
    stream: Option<OutputStream>,
    body: Option<OutgoingBody>,
}

impl Responder for Response {
    fn head(&mut self, status: u16, headers: &[(&str, String)]) {
        let Some(outparam) = self.outparam.take() else {
            return;
        };
        let entries: Vec<(String, Vec<u8>)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect();
        let fields = Fields::from_list(&entries).unwrap_or_else(|_| Fields::new());
        let response = OutgoingResponse::new(fields);
        let _ = response.set_status_code(status);
        self.body = response.body().ok();
        self.stream = self.body.as_ref().and_then(|b| b.write().ok());
        ResponseOutparam::set(outparam, Ok(response));
    }

    fn log(&mut self, line: &str) {
        write_stderr(line);
    }

    fn body(&mut self, bytes: &[u8]) -> bool {
        let Some(stream) = &self.stream else {
            return false;
        };
        for chunk in bytes.chunks(WRITE_CHUNK) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                self.stream = None;
                return false;
            }
        }
        true
    }
}

impl Response {
    fn finish(mut self) {
        if self.outparam.is_some() {
            self.head(500, &[]);
        }
        self.stream = None;
        if let Some(body) = self.body.take() {
            let _ = OutgoingBody::finish(body, None);
        }
    }
}

/// Writes a line to the platform's log (`wasi:cli/stderr`).
fn write_stderr(line: &str) {
    let stderr = stderr::get_stderr();
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    for chunk in text.as_bytes().chunks(WRITE_CHUNK) {
        if stderr.blocking_write_and_flush(chunk).is_err() {
            return;
        }
    }
}

/// Reads a request body, at most `MAX_MESSAGE_BYTES`; none when it is larger.
fn read_body(request: &IncomingRequest) -> Result<Vec<u8>, u16> {
    let body = request.consume().map_err(|()| 400u16)?;
    let mut data = Vec::new();
    {
        let stream = body.stream().map_err(|()| 400u16)?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(bytes) => {
                    if data.len() + bytes.len() > MAX_MESSAGE_BYTES {
                        return Err(413);
                    }
                    data.extend_from_slice(&bytes);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(400),
            }
        }
    }
    let _ = IncomingBody::finish(body);
    Ok(data)
}

fn method_name(method: Method) -> String {
    match method {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(other) => other,
    }
}

/// The gateway's `requestState` key when `MCPBOX_SECRET` is not set: random,
/// so only the instance that made a token can check it.
fn random_secret() -> String {
    random::get_random_bytes(32)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The variables the instance is given: its environment; with a warning for
/// the log when something could not be read.
#[cfg(not(feature = "stock-config"))]
fn variables() -> (Vec<(String, String)>, Option<String>) {
    (environment::get_environment(), None)
}

/// The variables the instance is given: `wasi:config/store`'s first, then the
/// environment's. Lookups take the first of a name, so a config key wins over
/// an environment variable.
#[cfg(feature = "stock-config")]
fn variables() -> (Vec<(String, String)>, Option<String>) {
    use bindings::wasi::config::store;
    let env = environment::get_environment();
    match store::get_all() {
        Ok(mut vars) => {
            vars.extend(env);
            (vars, None)
        }
        Err(store::Error::Upstream(why) | store::Error::Io(why)) => (
            env,
            Some(format!(
                "wasi:config/store could not be read ({why}); using the environment alone"
            )),
        ),
    }
}

/// The exported `wasi:http/incoming-handler` and `registry` (see [`registry`]).
struct Stock;

/// The name [`registry`] implements its export on.
type Component = Stock;

/// The registry's manager, for as long as the instance lives, and a gateway
/// that serves nobody (the registry's `wait` passes through it, as in the
/// mcpbox guest); made at the first registry call.
struct RegistryMemory(RefCell<Option<(Manager<StockHost>, Gateway)>>);

// SAFETY: as for `InstanceMemory`; exports do not re-enter one another, and a
// re-entrant borrow would trap in the `RefCell` rather than alias.
#[allow(unsafe_code)]
unsafe impl Sync for RegistryMemory {}

static REGISTRY: RegistryMemory = RegistryMemory(RefCell::new(None));

/// The headers for the answer that opens session `handle` through the
/// `registry` export: none, since this component's HTTP answers are made by
/// [`exchange`], which carries its sessions in their ids.
fn session_headers(_handle: u64) -> Vec<types::Pair> {
    Vec::new()
}

/// The registry's manager and gateway.
fn with_both<R>(f: impl FnOnce(&mut Manager<StockHost>, &mut Gateway) -> R) -> R {
    let mut slot = REGISTRY.0.borrow_mut();
    let (m, g) = slot.get_or_insert_with(open_registry);
    f(m, g)
}

/// The registry's manager.
fn with<R>(f: impl FnOnce(&mut Manager<StockHost>) -> R) -> R {
    with_both(|m, _| f(m))
}

/// A manager on this instance's platform, with the configuration the gateway
/// would read (`MCPBOX_CONFIG`, the built-in one, `wasi:config`) loaded; what
/// is wrong with it goes to the platform's log, as the gateway's does.
fn open_registry() -> (Manager<StockHost>, Gateway) {
    let (env, warning) = variables();
    let settings = Settings::from_env(&env, BAKED_CONFIG);
    let log = |line: &str| write_stderr(&format!("mcpbox registry: {line}"));
    for warning in warning.iter().chain(&settings.warnings) {
        log(warning);
    }
    let host = StockHost {
        env,
        known_max_age_ms: settings.known_max_age_ms,
    };
    let mut m = Manager::new(host);
    let mut g = Gateway::new();
    match &settings.config {
        Some((origin, text)) => match m.load_config(origin, text) {
            Ok(issues) => {
                g.configure();
                for issue in issues {
                    log(&format!("{origin}: {issue}"));
                }
            }
            Err(why) => log(&format!(
                "could not read its configuration ({origin}): {why}; call load-config"
            )),
        },
        None => log(&format!(
            "no configuration: {} is not set and none is built in \
             (MCPBOX_STOCK_CONFIG); the composed component must call load-config",
            super::CONFIG_VAR
        )),
    }
    (m, g)
}

impl incoming_handler::Guest for Stock {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let (env, warning) = variables();
        let mut settings = Settings::from_env(&env, BAKED_CONFIG);
        settings.warnings.extend(warning);
        if settings.secret.is_none() {
            settings.secret = Some(random_secret());
        }
        let mut response = Response {
            outparam: Some(response_out),
            stream: None,
            body: None,
        };
        let headers = request
            .headers()
            .entries()
            .into_iter()
            .map(|(n, v)| {
                (
                    n.to_ascii_lowercase(),
                    String::from_utf8_lossy(&v).into_owned(),
                )
            })
            .collect();
        let http = HttpRequest {
            method: method_name(request.method()),
            path: request.path_with_query().unwrap_or_else(|| "/".into()),
            headers,
            body: match read_body(&request) {
                Ok(body) => body,
                Err(status) => {
                    let why: &[u8] = if status == 413 {
                        b"the request body is larger than 64 MiB"
                    } else {
                        b"the request body could not be read"
                    };
                    response.head(
                        status,
                        &[("content-type", "text/plain; charset=utf-8".into())],
                    );
                    response.body(why);
                    return response.finish();
                }
            },
        };
        drop(request);
        let host = StockHost {
            env,
            known_max_age_ms: settings.known_max_age_ms,
        };
        exchange::handle(host, &settings, &http, &mut response);
        response.finish();
    }
}
