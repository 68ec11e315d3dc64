//! The guest's view of connections, the clock and blocking.
//!
//! A connection is either host-owned (a stdio child: the host owns the process
//! and the line framing) or the guest's own HTTP client over `wasi:http`
//! ([`crate::remote`]); either way the manager sees one [`Connection`], and the
//! guest owns JSON-RPC and MCP. Everything the MCP logic needs from the outside
//! world is behind the two traits here, so the same code runs against the real
//! imports in the component and against in-memory fakes with a hand-driven clock
//! in native unit tests. The plain types mirror `mcpbox:runtime/types` (plus
//! [`TransportError::RequestFailed`], which only the guest's HTTP transport
//! reports); generated types never leave the `component` module.

use crate::prelude::*;
use core::fmt;

use crate::jsonrpc::RpcError;

pub mod oversized;

/// One environment variable or header. Values may hold `${VAR}` references, which
/// the host resolves: secrets never enter the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The variable or header name.
    pub name: String,
    /// The value, possibly with unresolved `${VAR}` references.
    pub value: String,
}

/// Where a server lives and how to speak to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process speaking newline-delimited JSON on its stdio.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Explicit environment, on top of the host's allowlist.
        env: Vec<Pair>,
        /// Working directory; the host's own when absent.
        cwd: Option<String>,
        /// What its process may reach; unconfined when absent.
        sandbox: Option<crate::sandbox::Sandbox>,
    },
    /// Streamable HTTP.
    Http {
        /// The MCP endpoint URL.
        url: String,
        /// Extra request headers.
        headers: Vec<Pair>,
    },
    /// The deprecated HTTP+SSE transport.
    Sse {
        /// The SSE endpoint URL.
        url: String,
        /// Extra request headers.
        headers: Vec<Pair>,
    },
}

impl Endpoint {
    /// The transport kind as status displays name it: "stdio", "http" or "sse".
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::Stdio { .. } => "stdio",
            Endpoint::Http { .. } => "http",
            Endpoint::Sse { .. } => "sse",
        }
    }
}

/// A message dropped because it exceeded the size cap: by the host (stdio) or by
/// the guest's own HTTP reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oversized {
    /// Bytes seen when the reader gave up (at least `cap + 1`).
    pub size: u64,
    /// The cap in force.
    pub cap: u64,
    /// The message's first bytes (at most [`oversized::EDGE`]).
    pub head: Vec<u8>,
    /// The message's last bytes (at most [`oversized::EDGE`]).
    pub tail: Vec<u8>,
}

impl Oversized {
    /// The JSON-RPC id, as JSON text, when the message's edges show it: among
    /// the top-level members before the first nested value, or as the last one.
    pub fn id(&self) -> Option<String> {
        oversized::id_at_start(&self.head).or_else(|| oversized::id_at_end(&self.tail))
    }
}

/// Why one request got no result from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server's own JSON-RPC error.
    Rpc(RpcError),
    /// The exchange that carried it failed below JSON-RPC (an HTTP error status
    /// with the server's words, a stream that ended before the answer); the text
    /// says how, for the caller.
    Exchange(String),
    /// The server refused it (`401`, or `403` asking for more scopes) and the
    /// host, which runs OAuth, has no usable authorization for the server
    /// (`mcpbox:runtime/remote.grant.needs-authorization`).
    NeedsAuthorization {
        /// The configured server name.
        server: String,
        /// What the host said.
        failure: AuthorizationFailure,
    },
}

/// Why a remote server's requests go without a usable authorization, as the
/// host knows it (mirrors `remote.authorization-failure`). The text is the
/// host's and holds no credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizationFailure {
    /// A person must authorize mcpbox: `mcpbox login SERVER`.
    LoginRequired(String),
    /// The configured machine credentials got no token; the configuration
    /// must change.
    CredentialsRefused(String),
}

impl AuthorizationFailure {
    /// What it means for server `server`, as a predicate ("needs authorization
    /// (…): run `mcpbox login x`"): the manager puts "server `x`" before it.
    pub fn predicate(&self, server: &str) -> String {
        match self {
            AuthorizationFailure::LoginRequired(why) => {
                format!("needs authorization ({why}): run `mcpbox login {server}`")
            }
            AuthorizationFailure::CredentialsRefused(why) => {
                format!("could not be authorized: {why}")
            }
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Rpc(e) => e.fmt(f),
            Failure::Exchange(why) => f.write_str(why),
            Failure::NeedsAuthorization { server, failure } => {
                write!(f, "server `{server}` {}", failure.predicate(server))
            }
        }
    }
}

/// Transport failures the guest handles; host bugs trap instead.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportError {
    /// The host's policy does not allow this endpoint.
    Denied(String),
    /// The configuration could not become a transport (e.g. an unset `${VAR}`).
    InvalidEndpoint(String),
    /// The process could not start or the server could not be reached.
    Unreachable(String),
    /// The connection is gone for good.
    Closed(String),
    /// One message was too large and was dropped; the connection is still usable.
    TooLarge(Oversized),
    /// The request of this JSON-RPC id (JSON text) failed at the transport, not
    /// at the server's JSON-RPC layer: an HTTP exchange answered with an error
    /// status, or a stream that could not be resumed. Only that request fails;
    /// the connection is still usable. Reported by the guest's HTTP transport.
    RequestFailed {
        /// The request's id, as JSON text.
        id: String,
        /// What happened.
        failure: Failure,
    },
    /// Any other I/O failure.
    Io(String),
    /// The host does not implement this transport kind.
    Unsupported(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Denied(m) => write!(f, "denied by policy: {m}"),
            TransportError::InvalidEndpoint(m) => write!(f, "invalid endpoint: {m}"),
            // The host says how (spawn failed, connection refused); a prefix adds nothing.
            TransportError::Unreachable(m) => f.write_str(m),
            TransportError::Closed(m) => write!(f, "connection closed: {m}"),
            TransportError::TooLarge(o) => {
                write!(f, "message too large ({} bytes > cap {})", o.size, o.cap)
            }
            TransportError::RequestFailed { failure, .. } => failure.fmt(f),
            TransportError::Io(m) => write!(f, "I/O error: {m}"),
            TransportError::Unsupported(m) => write!(f, "unsupported transport: {m}"),
        }
    }
}

impl core::error::Error for TransportError {}

/// What the client says about an outgoing message, so that the HTTP transport
/// sets MCP's headers and matches answers without parsing the message again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendMeta {
    /// The JSON-RPC id of a request, as JSON text; none for notifications and
    /// responses.
    pub id: Option<String>,
    /// The JSON-RPC method; none for responses.
    pub method: Option<String>,
    /// The tool (prompt, resource) the request is about.
    pub name: Option<String>,
    /// The negotiated protocol version, once known.
    pub protocol_version: Option<String>,
    /// Arguments mirrored into `Mcp-Param-{name}` headers (SEP-2243): the
    /// `x-mcp-header` name without the prefix, and the argument as literal text.
    pub param_headers: Vec<Pair>,
}

/// Transport health, for status displays and error messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// The server's last stderr lines, oldest first.
    pub stderr_tail: Vec<String>,
    /// Non-JSON lines the host skipped.
    pub skipped_lines: u64,
    /// Messages dropped for exceeding the size cap.
    pub oversized_messages: u64,
    /// How the process ended, once it has ("exit code 1").
    pub exit_status: Option<String>,
    /// The sandbox the process runs in, as the host describes it; none when unconfined.
    pub sandbox: Option<String>,
}

impl Diagnostics {
    /// A suffix for error messages: `; last stderr: a | b`, or nothing when the
    /// server wrote nothing. Only the last few lines: the point is a hint, not a log.
    pub fn stderr_suffix(&self) -> String {
        const LINES: usize = 5;
        let lines: Vec<&str> = self
            .stderr_tail
            .iter()
            .map(|l| l.trim_end())
            .filter(|l| !l.is_empty())
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        let start = lines.len().saturating_sub(LINES);
        let mut suffix = format!("; last stderr: {}", lines[start..].join(" | "));
        // A permission error from a confined server usually means a missing grant.
        if let Some(sandbox) = &self.sandbox {
            suffix.push_str(&format!(
                " (it runs in a sandbox: {sandbox}; a permission error above may mean it needs \
                 another grant)"
            ));
        }
        suffix
    }
}

/// A live connection to one server.
pub trait Connection {
    /// Queues one JSON-RPC message; never blocks on the peer.
    fn send(&mut self, message: &str, meta: &SendMeta) -> Result<(), TransportError>;
    /// Takes every message received so far (possibly none); never blocks.
    fn receive(&mut self) -> Result<Vec<String>, TransportError>;
    /// Transport health.
    fn diagnostics(&self) -> Diagnostics;
    /// When the transport has work of its own to do (a reconnection delay, a
    /// timeout), so that whoever blocks wakes up for it and calls `receive`.
    fn next_deadline(&self) -> Option<u64> {
        None
    }
}

/// Whether a clock pollable for the instant `at` may serve a [`Platform::block`]
/// at `now_ms` until `deadline_ms`: it must not have fired yet (or the poll would
/// return at once, again and again) and must not fire late. It may fire early: a
/// call's deadline moves on with every call, and the pollable of an earlier one
/// then wakes the guest once for nothing (it looks, finds nothing, and blocks on
/// a fresh pollable), where making and dropping one per `block` cost two boundary
/// crossings every time.
#[cfg_attr(
    not(all(target_arch = "wasm32", not(feature = "stock"))),
    allow(dead_code)
)]
pub(crate) fn clock_reusable(at: u64, now_ms: u64, deadline_ms: u64) -> bool {
    now_ms < at && at <= deadline_ms
}

/// Why [`Platform::block`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// A connection has something to receive, or the deadline passed.
    Io,
    /// The embedder has queued work, and nothing else is ready: return to it at once.
    Signal,
    /// The embedder has queued work, and a connection or the deadline is ready too.
    SignalAndIo,
}

/// Opening connections, reading the clock and blocking: the rest of the world.
pub trait Platform {
    /// The connection type this platform opens.
    type Conn: Connection;
    /// Opens a connection to the named server.
    fn open(&mut self, server: &str, endpoint: &Endpoint) -> Result<Self::Conn, TransportError>;
    /// Monotonic time in milliseconds; only differences are meaningful.
    fn now_ms(&self) -> u64;
    /// The date, as milliseconds since the Unix epoch (`wasi:clocks/wall-clock`),
    /// for what the protocol stamps with a date (a task's `createdAt`); none on a
    /// platform without a wall clock.
    fn wall_clock_ms(&self) -> Option<u64> {
        None
    }
    /// Blocks until a connection in `conns` is ready, `deadline_ms` is reached, or the
    /// embedder's wake signal is ready, whichever comes first. `now_ms` is the
    /// caller's last reading of [`Platform::now_ms`]. A platform may wake early
    /// (reported as [`Woken::Io`]: the caller looks again and blocks anew), never late.
    fn block(&mut self, conns: &[&Self::Conn], now_ms: u64, deadline_ms: u64) -> Woken;
    /// The value the host keeps under `key` across runs (`mcpbox:runtime/state`);
    /// none on a platform that keeps nothing.
    fn memo_get(&self, key: &str) -> Option<String> {
        let _ = key;
        None
    }
    /// Keeps `value` under `key` across runs, where the platform can.
    fn memo_set(&mut self, key: &str, value: &str) {
        let _ = (key, value);
    }
    /// The pinned tool definitions the host kept for this configuration
    /// (`mcpbox:runtime/pins`), and whether the user accepted the changes they
    /// hold back since (`mcpbox trust`); none on a platform that keeps nothing.
    fn load_pins(&self) -> Option<(String, bool)> {
        None
    }
    /// Has the host keep the pinned tool definitions' text for this configuration.
    fn save_pins(&mut self, text: &str) {
        let _ = text;
    }
    /// Whether the pins saved outlive the runtime (the host writes them down
    /// for the configuration's next run); when not, the final shutdown pins
    /// nothing more.
    fn pins_kept_across_runs(&self) -> bool {
        false
    }
    /// What an earlier session learned of the 2026-07-28 server under `key`
    /// (its capabilities and tools), for a session that starts ready
    /// ([`Client::resume`](crate::client::Client::resume)); none on a platform
    /// that keeps no such thing (mcpbox's hosts: their gateway lives long and
    /// learns once) or when it is stale.
    fn known_server(&self, key: &str) -> Option<crate::client::KnownServer> {
        let _ = key;
        None
    }
    /// Keeps what a session learned of the server under `key`, or forgets it
    /// (`None`: the server failed, so the next session learns again).
    fn keep_server(&mut self, key: &str, known: Option<crate::client::KnownServer>) {
        let _ = (key, known);
    }
    /// Has the host write `data` to a new file (`mcpbox:runtime/blobs`): a
    /// result too large to pass on, or an image. `name` suggests the file name.
    fn write_blob(
        &mut self,
        server: &str,
        name: &str,
        mime_type: &str,
        data: &[u8],
    ) -> Result<Blob, BlobError> {
        let _ = (server, name, mime_type, data);
        Err(BlobError::Denied("this platform keeps no files".into()))
    }
}

/// A file the host wrote for the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Where it is, as a URI (`file:///…`).
    pub uri: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Why the host did not write a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobError {
    /// Its policy keeps no files, or no more of them.
    Denied(String),
    /// Larger than the host accepts (the limit, in bytes).
    TooLarge(u64),
    /// Writing failed.
    Io(String),
}

impl fmt::Display for BlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobError::Denied(m) => write!(f, "denied: {m}"),
            BlobError::TooLarge(limit) => {
                write!(f, "larger than the {limit} bytes the host keeps per file")
            }
            BlobError::Io(m) => write!(f, "{m}"),
        }
    }
}

/// Formats a duration for people: `30s`, `1.5s`, `250ms`.
pub fn format_ms(ms: u64) -> String {
    if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else if ms >= 1000 && ms.is_multiple_of(100) {
        format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
    } else {
        format!("{ms}ms")
    }
}

/// A size for people: `900 bytes`, `64 KiB`, `1.5 MiB`, `286.1 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let (mut unit, mut scale) = (0, 1024u64);
    while unit + 1 < UNITS.len() && bytes >= scale * 1024 {
        unit += 1;
        scale *= 1024;
    }
    let tenths = (u128::from(bytes) * 10).div_ceil(u128::from(scale));
    if tenths % 10 == 0 {
        format!("{} {}", tenths / 10, UNITS[unit])
    } else {
        format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_pollable_serves_until_it_fires_and_never_late() {
        // Kept for 1,000: serves any later deadline until 1,000 is reached.
        assert!(clock_reusable(1_000, 10, 1_000));
        assert!(clock_reusable(1_000, 999, 60_000));
        // Fired (or about to, within the millisecond): polling it would spin.
        assert!(!clock_reusable(1_000, 1_000, 60_000));
        assert!(!clock_reusable(1_000, 5_000, 60_000));
        // An earlier deadline needs a pollable of its own.
        assert!(!clock_reusable(1_000, 10, 999));
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(format_bytes(900), "900 bytes");
        assert_eq!(format_bytes(64 * 1024), "64 KiB");
        assert_eq!(format_bytes(1536 * 1024), "1.5 MiB");
        assert_eq!(format_bytes(16 * 1024 * 1024), "16 MiB");
        // Rounded up, so a size just over a limit never reads as the limit.
        assert_eq!(format_bytes(16 * 1024 * 1024 + 1), "16.1 MiB");
        assert_eq!(format_bytes(300_000_000), "286.2 MiB");
        assert_eq!(format_bytes(5 << 40), "5120 GiB");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_ms(30_000), "30s");
        assert_eq!(format_ms(1_500), "1.5s");
        assert_eq!(format_ms(250), "250ms");
        assert_eq!(format_ms(1_234), "1234ms");
    }

    #[test]
    fn stderr_suffix_keeps_the_last_lines() {
        let d = Diagnostics {
            stderr_tail: (1..=7).map(|i| format!("line {i}")).collect(),
            ..Diagnostics::default()
        };
        assert_eq!(
            d.stderr_suffix(),
            "; last stderr: line 3 | line 4 | line 5 | line 6 | line 7"
        );
        assert_eq!(Diagnostics::default().stderr_suffix(), "");
    }
}
