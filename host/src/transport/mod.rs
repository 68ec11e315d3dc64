//! Connections to MCP servers: the host side of `mcpbox:runtime/transport`.
//!
//! | endpoint | module   | wire                                              |
//! |----------|----------|---------------------------------------------------|
//! | `stdio`  | [`stdio`] | child process, one JSON-RPC message per line     |
//! | `http`   | [`http`] | Streamable HTTP: POST per message, JSON or SSE answers, sessions, resumption |
//! | `sse`    | [`http`] | the deprecated HTTP+SSE transport: one event stream, POSTs to its `endpoint` |
//!
//! [`sse`] parses event streams for both HTTP transports; [`framing`] splits
//! stdio lines; [`endpoint`] resolves `${VAR}` references in the host.
//!
//! Every transport feeds one [`Connection`]: [`Inbound`] items that the guest
//! drains with `receive` and waits on with `subscribe`, and outgoing messages
//! that `send` takes without ever blocking on the peer. A stdio connection reads
//! and writes the child's pipes in place; the HTTP transports run tasks that
//! pass messages through channels.

pub(crate) mod descendants;
pub(crate) mod endpoint;
pub(crate) mod framing;
pub(crate) mod http;
pub(crate) mod sse;
pub(crate) mod stdio;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::bindings::{transport, wit};
use crate::store::HostState;

/// At most this many messages are handed over per `receive`, so one busy server
/// cannot starve the others of the guest's attention.
const RECEIVE_BATCH: usize = 256;

/// One item from a server, in arrival order.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A complete JSON-RPC message.
    Message(String),
    /// A message over the size cap, dropped.
    TooLarge(wit::Oversized),
    /// The connection ended; the text says how. Always the last item.
    Closed(String),
}

/// One message for a server, with what the guest said about it (for HTTP headers).
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub message: String,
    pub meta: wit::SendMeta,
}

/// What a transport knows about its own health.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    pub stderr_tail: stdio::StderrTail,
    pub skipped_lines: u64,
    pub oversized_messages: u64,
    pub exit_status: Option<String>,
}

/// A live connection, stored in the store's resource table.
#[derive(Debug)]
pub struct Connection {
    link: Link,
    /// Items read or taken off the inbound queue but not yet by `receive`.
    stash: VecDeque<Inbound>,
    /// Set once `Closed` was seen: every later `receive` reports it again.
    closed: Option<String>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    /// Stops the process group when the connection is dropped (stdio only; an
    /// HTTP session ends when `outbound` closes).
    _process: Option<stdio::ProcessGuard>,
}

/// How a connection moves its messages.
#[derive(Debug)]
enum Link {
    /// A child's pipes, read and written in place.
    Pipes(Box<stdio::Pipes>),
    /// Tasks do the I/O (HTTP, SSE); messages pass through these channels.
    Tasks {
        inbound: mpsc::Receiver<Inbound>,
        outbound: mpsc::UnboundedSender<Outgoing>,
    },
}

const READER_ENDED: &str = "stopped responding (its reader ended)";

impl Link {
    /// Puts what has arrived into `stash`, without waiting.
    fn fill(&mut self, stash: &mut VecDeque<Inbound>) {
        match self {
            Link::Pipes(pipes) => pipes.fill(stash),
            Link::Tasks { inbound, .. } => match inbound.try_recv() {
                Ok(item) => stash.push_back(item),
                Err(mpsc::error::TryRecvError::Empty) => {}
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    stash.push_back(Inbound::Closed(READER_ENDED.into()));
                }
            },
        }
    }
}

impl Connection {
    fn new(
        link: Link,
        diagnostics: Arc<Mutex<Diagnostics>>,
        process: Option<stdio::ProcessGuard>,
    ) -> Connection {
        Connection {
            link,
            stash: VecDeque::new(),
            closed: None,
            diagnostics,
            _process: process,
        }
    }

    fn send(&mut self, message: String, meta: wit::SendMeta) -> Result<(), wit::TransportError> {
        if let Some(reason) = &self.closed {
            return Err(wit::TransportError::Closed(reason.clone()));
        }
        match &mut self.link {
            Link::Pipes(pipes) => pipes.send(&message),
            Link::Tasks { outbound, .. } => {
                outbound.send(Outgoing { message, meta }).map_err(|_| {
                    wit::TransportError::Closed(
                        "stopped accepting messages (its writer ended)".into(),
                    )
                })
            }
        }
    }

    fn receive(&mut self) -> Result<Vec<String>, wit::TransportError> {
        let mut messages = Vec::new();
        while messages.len() < RECEIVE_BATCH {
            if self.stash.is_empty() {
                self.link.fill(&mut self.stash);
            }
            let Some(item) = self.stash.pop_front() else {
                break;
            };
            match item {
                Inbound::Message(m) => messages.push(m),
                other if !messages.is_empty() => {
                    // Deliver what came before the error first; the error comes next time.
                    self.stash.push_front(other);
                    break;
                }
                Inbound::TooLarge(o) => return Err(wit::TransportError::TooLarge(o)),
                Inbound::Closed(reason) => {
                    self.closed = Some(reason.clone());
                    self.stash.push_front(Inbound::Closed(reason.clone()));
                    return Err(wit::TransportError::Closed(reason));
                }
            }
        }
        Ok(messages)
    }

    fn diagnostics(&self) -> wit::Diagnostics {
        let d = self.diagnostics.lock().unwrap_or_else(|p| p.into_inner());
        wit::Diagnostics {
            stderr_tail: d.stderr_tail.iter().cloned().collect(),
            skipped_lines: d.skipped_lines,
            oversized_messages: d.oversized_messages,
            exit_status: d.exit_status.clone(),
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Connection {
    /// Cancel-safe: an item received here is stashed for the next `receive`.
    async fn ready(&mut self) {
        if !self.stash.is_empty() {
            return;
        }
        match &mut self.link {
            Link::Pipes(pipes) => pipes.ready(&mut self.stash).await,
            Link::Tasks { inbound, .. } => {
                let item = inbound.recv().await;
                self.stash
                    .push_back(item.unwrap_or_else(|| Inbound::Closed(READER_ENDED.into())));
            }
        }
    }
}

/// Opens a connection for `server`, applying the policy (`allow_processes` for stdio,
/// `allow_network` for HTTP and SSE).
fn open(
    state: &HostState,
    server: &str,
    endpoint: wit::Endpoint,
) -> Result<Connection, wit::TransportError> {
    match endpoint {
        wit::Endpoint::Stdio(ep) => {
            if !state.policy.allow_processes {
                return Err(wit::TransportError::Denied(format!(
                    "server `{server}`: the policy does not allow starting processes (allow them \
                     with `Policy::allow_processes`, or run the CLI without `--no-processes`)"
                )));
            }
            let spec =
                endpoint::resolve_stdio(&ep, &|name| std::env::var(name).ok()).map_err(|e| {
                    wit::TransportError::InvalidEndpoint(format!("server `{server}`: {e}"))
                })?;
            let diagnostics = track_diagnostics(state, server);
            let spawned = stdio::spawn(
                &spec,
                state.policy.max_message_bytes,
                diagnostics.clone(),
                &state.supervisors,
            )?;
            Ok(Connection::new(
                Link::Pipes(Box::new(spawned.pipes)),
                diagnostics,
                Some(spawned.process),
            ))
        }
        wit::Endpoint::Http(ep) => open_http(state, server, http::Kind::Streamable, &ep),
        wit::Endpoint::Sse(ep) => open_http(state, server, http::Kind::LegacySse, &ep),
    }
}

/// Fresh diagnostics for a new connection of `server`, published for
/// [`crate::Runtime::diagnostics`] in place of the previous connection's.
fn track_diagnostics(state: &HostState, server: &str) -> Arc<Mutex<Diagnostics>> {
    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    state
        .diagnostics
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(server.to_owned(), diagnostics.clone());
    diagnostics
}

/// Opens a Streamable HTTP or legacy SSE connection.
fn open_http(
    state: &HostState,
    server: &str,
    kind: http::Kind,
    ep: &wit::HttpEndpoint,
) -> Result<Connection, wit::TransportError> {
    if !state.policy.allow_network {
        // The URL as configured, before `${VAR}` resolution: no secret goes in a message.
        return Err(wit::TransportError::Denied(format!(
            "server `{server}`: the policy does not allow network connections, so {} was not \
             contacted (allow them with `Policy::allow_network`, or run the CLI without \
             `--no-network`)",
            ep.url
        )));
    }
    let spec = endpoint::resolve_http(ep, &|name| std::env::var(name).ok())
        .map_err(|e| wit::TransportError::InvalidEndpoint(format!("server `{server}`: {e}")))?;
    let diagnostics = track_diagnostics(state, server);
    let spawned = http::connect(
        kind,
        &spec,
        state.policy.max_message_bytes,
        diagnostics.clone(),
    )?;
    let link = Link::Tasks {
        inbound: spawned.inbound,
        outbound: spawned.outbound,
    };
    Ok(Connection::new(link, diagnostics, None))
}

impl transport::Host for HostState {}

impl transport::HostConnection for HostState {
    fn open(
        &mut self,
        server: String,
        endpoint: wit::Endpoint,
    ) -> wasmtime::Result<Result<Resource<Connection>, wit::TransportError>> {
        match open(self, &server, endpoint) {
            Ok(connection) => Ok(Ok(self.table.push(connection)?)),
            Err(e) => Ok(Err(e)),
        }
    }

    fn send(
        &mut self,
        this: Resource<Connection>,
        message: String,
        meta: wit::SendMeta,
    ) -> wasmtime::Result<Result<(), wit::TransportError>> {
        Ok(self.table.get_mut(&this)?.send(message, meta))
    }

    fn receive(
        &mut self,
        this: Resource<Connection>,
    ) -> wasmtime::Result<Result<Vec<String>, wit::TransportError>> {
        Ok(self.table.get_mut(&this)?.receive())
    }

    fn subscribe(&mut self, this: Resource<Connection>) -> wasmtime::Result<Resource<DynPollable>> {
        subscribe(&mut self.table, this)
    }

    fn diagnostics(&mut self, this: Resource<Connection>) -> wasmtime::Result<wit::Diagnostics> {
        Ok(self.table.get(&this)?.diagnostics())
    }

    fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}
