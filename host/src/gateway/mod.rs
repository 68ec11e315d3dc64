//! Serving the registry to downstream MCP clients: the host half of the gateway.
//!
//! The guest's `gateway` export holds every MCP rule of the server side; this
//! module only moves bytes and keeps transport facts. [`Runtime::serve_stdio`]
//! frames newline-delimited JSON on a reader and a writer, and
//! [`Runtime::serve_stdio_fds`] on a pair of file descriptors that the driver
//! thread polls and reads itself (stdin and stdout for `mcpbox serve`);
//! [`Runtime::serve_http`] runs Streamable HTTP on a listener
//! (`http`): each POST is an *exchange* whose answers stream back as JSON or SSE.
//! The rules of `/mcp` (routes, the bearer token, `Host` and `Origin`, sessions
//! and their ids, which headers reach the gateway) are the guest's, decided from
//! each request's head before its body is read (`gateway.http-head`); the host
//! keeps the sockets, the size and time limits, the buffers and the budgets of
//! the sessions the guest names. The token is required on every address,
//! loopback included (any user of the machine can reach loopback); `token` keeps
//! the CLI's in the user's configuration directory.
//!
//! Beside `/mcp`, the HTTP side serves the status dashboard (`dashboard`: a page,
//! its REST API and live events, `/metrics`), which [`Runtime::serve_dashboard`]
//! serves alone.
//!
//! One runtime serves one set of [`ServeOptions`]: the guest has one gateway.

mod connections;
mod dashboard;
mod http;
mod sse;
mod stdio;
mod stdio_fds;
mod token;

use std::os::fd::OwnedFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::Runtime;
use crate::bindings::gateway;
use crate::driver::{Downstream, Job};

pub use connections::raise_open_files_limit;
pub use http::HttpOptions;
pub(crate) use stdio_fds::{ClientWatch, PolledClient};
pub use token::{StoredToken, TOKEN_FILE, TokenFileError, is_valid_token, stored_token};

/// How registry tools are named for downstream clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Naming {
    /// `{server}__{tool}` (the registry name without `mcp__`; `toolPrefix` replaces
    /// the server's name).
    #[default]
    Prefixed,
    /// A tool's own name where no other server has a tool of that name (always,
    /// with one server), `{server}__{tool}` where names clash.
    Conditional,
}

/// How the registry is served.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How tools are named downstream.
    pub naming: Naming,
    /// The longest served tool name; longer ones are cut and given a stable hash
    /// suffix. The default, 51, leaves room for a client's `mcp__mcpbox__` prefix
    /// within 64 characters.
    pub max_name_len: usize,
    /// Serve two tools, `search_tools` and `call_tool`, instead of every tool.
    pub tool_search: bool,
    /// Items per page of `tools/list` and of the resource, template and prompt lists.
    pub page_size: usize,
    /// The profile (a named set of permission rules in the configuration) every
    /// client is served under: the stdio client, and over HTTP the clients of
    /// `/mcp` and `/mcp/NAME` alike (a path naming another profile is `403`).
    /// Without it, `/mcp` has the top-level rules only and `/mcp/NAME` chooses
    /// a profile.
    pub profile: Option<String>,
    /// Serve every tool's schemas in a model provider's dialect (one of
    /// [`crate::DIALECTS`]) for clients that forward them to the provider
    /// without converting; the arguments of their calls are mapped back before
    /// the servers' own schemas check them. `None`: as the servers wrote them.
    pub schema_dialect: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            naming: Naming::Prefixed,
            max_name_len: 64 - "mcp__mcpbox__".len(),
            tool_search: false,
            page_size: 500,
            profile: None,
            schema_dialect: None,
        }
    }
}

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The gateway refused the options (an unknown profile, say); the text says why.
    #[error("{0}")]
    Refused(String),
    /// Reading or writing the transport failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The runtime stopped.
    #[error("the mcpbox runtime stopped: {0}")]
    Stopped(String),
}

/// `n` random bytes as lowercase hex, from the operating system.
pub(crate) fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A bearer token for [`HttpOptions::token`]: 128 random bits as hex.
pub fn random_token() -> std::io::Result<String> {
    random_hex(16)
}

impl Runtime {
    /// Starts the guest's gateway; its signals arrive on the returned channel.
    async fn start_gateway(
        &self,
        options: &ServeOptions,
        http: Option<gateway::HttpRules>,
    ) -> Result<mpsc::UnboundedReceiver<Downstream>, ServeError> {
        let (sink, feed) = mpsc::unbounded_channel();
        let (reply, answer) = oneshot::channel();
        let options = gateway::ServeOptions {
            naming: match options.naming {
                Naming::Prefixed => "prefixed".into(),
                Naming::Conditional => "conditional".into(),
            },
            max_name_length: u32::try_from(options.max_name_len).unwrap_or(64),
            tool_search: options.tool_search,
            page_size: u32::try_from(options.page_size).unwrap_or(u32::MAX),
            secret: random_hex(32)?,
            profile: options.profile.clone(),
            schema_dialect: options.schema_dialect.clone(),
            http,
        };
        self.submit(Job::Serve {
            options,
            sink,
            reply,
        })
        .map_err(ServeError::Stopped)?;
        match answer.await {
            Ok(Ok(())) => Ok(feed),
            Ok(Err(why)) => Err(ServeError::Refused(why)),
            Err(_) => Err(ServeError::Stopped("it stopped".into())),
        }
    }

    /// Serves the registry as an MCP server on a byte stream pair: one JSON-RPC
    /// message per line in, one per line out (`mcpbox serve` uses stdin and
    /// stdout). When `input` ends, what was received is still answered, for at
    /// most 30 seconds; then what the client left running is cancelled upstream
    /// and this returns (dropping the future cancels it too). Lines longer than
    /// the policy's message cap are dropped (and said so on stderr).
    pub async fn serve_stdio<R, W>(
        &self,
        options: ServeOptions,
        input: R,
        output: W,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let feed = self.start_gateway(&options, None).await?;
        stdio::run(self, feed, options.profile, input, output).await
    }

    /// [`Runtime::serve_stdio`] on a pair of file descriptors, a pipe or a
    /// socket each (not a terminal or a regular file, which cannot be polled):
    /// the runtime's driver thread reads and writes them itself, beside its
    /// servers' pipes, which spares every message two thread hand-overs. The
    /// same rules hold; output the client does not read waits in a buffer, and
    /// a client that leaves more than 128 MiB unread is cut off (an error).
    pub async fn serve_stdio_fds(
        &self,
        options: ServeOptions,
        input: OwnedFd,
        output: OwnedFd,
    ) -> Result<(), ServeError> {
        let (done, finished) = oneshot::channel();
        let client = PolledClient::new(input, output, options.profile.clone(), done)?;
        // The gateway's signals go to the client, not to this channel.
        drop(self.start_gateway(&options, None).await?);
        self.submit(Job::AttachStdio(Box::new(client)))
            .map_err(ServeError::Stopped)?;
        // Dropped before the driver says serving ended: what the client left
        // open is cancelled upstream.
        let mut detach = stdio_fds::Detach {
            runtime: self,
            armed: true,
        };
        let outcome = finished.await;
        detach.armed = false;
        outcome.unwrap_or_else(|_| Err(ServeError::Stopped(self.stop_reason())))
    }

    /// Serves the registry over Streamable HTTP at `/mcp` and `/mcp/{profile}` (only
    /// [`ServeOptions::profile`]'s, when it is set) on `listener`, until the
    /// runtime stops or accepting fails. See [`HttpOptions`] for the safety rules:
    /// it refuses to start without [`HttpOptions::token`] unless
    /// [`HttpOptions::insecure_no_token`] is set on a loopback listener.
    pub async fn serve_http(
        &self,
        options: ServeOptions,
        http: HttpOptions,
        listener: TcpListener,
    ) -> Result<(), ServeError> {
        // The rules of `/mcp` are the guest's (`gateway.http-head`).
        let rules = gateway::HttpRules {
            token: http.token.clone(),
            insecure_no_token: http.insecure_no_token,
            allowed_origins: http.allowed_origins.clone(),
            loopback: listener.local_addr()?.ip().is_loopback(),
        };
        let feed = self.start_gateway(&options, Some(rules)).await?;
        http::run(self.clone(), Some(feed), http, options.profile, listener).await
    }

    /// Serves only the status dashboard (the page at `/`, `/api/…`, `/metrics`;
    /// see [`HttpOptions::dashboard`]) on `listener`, without serving MCP, under
    /// the same safety rules, until the runtime stops or accepting fails. What
    /// `mcpbox dashboard` runs. Open the runtime with
    /// [`Options::metrics`](crate::Options::metrics) for uptime, restarts, call
    /// counts and `/metrics`, and
    /// [`Options::audit_events`](crate::Options::audit_events) for the recent calls.
    pub async fn serve_dashboard(
        &self,
        http: HttpOptions,
        listener: TcpListener,
    ) -> Result<(), ServeError> {
        let http = HttpOptions {
            dashboard: true,
            ..http
        };
        http::run(self.clone(), None, http, None, listener).await
    }
}
