//! Local servers: the host side of `mcpbox:runtime/transport`, child processes
//! speaking one JSON-RPC message per line ([`stdio`], [`framing`]), confined by
//! their `sandbox` grants on Linux (`sandbox`: Landlock, applied in the child).
//!
//! [`endpoint`] resolves `${VAR}` references in the host, for stdio servers
//! here and for remote ones in `crate::imports::remote`, whose grants the
//! guest's `wasi:http` requests go under (`crate::imports::wasi_http`). The host
//! knows no MCP rule over HTTP: the guest speaks Streamable HTTP and HTTP+SSE
//! itself (its `remote` module).
//!
//! A stdio [`Connection`] holds [`Inbound`] items that the guest drains with
//! `receive` and waits on with `subscribe`, and takes outgoing messages with
//! `send` without ever blocking on the peer: it reads and writes the child's
//! pipes in place.

pub(crate) mod descendants;
pub(crate) mod endpoint;
pub(crate) mod framing;
pub(crate) mod places;
pub(crate) mod readiness;
#[cfg(target_os = "linux")]
pub(crate) mod sandbox;
pub(crate) mod stdio;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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

/// What a transport knows about its own health.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    pub stderr_tail: stdio::StderrTail,
    pub skipped_lines: u64,
    pub oversized_messages: u64,
    pub exit_status: Option<String>,
    /// The sandbox the process runs in, described; none when unconfined.
    pub sandbox: Option<String>,
}

/// A live connection, stored in the store's resource table.
#[derive(Debug)]
pub struct Connection {
    /// The host's number for it (`connection.id`), set when the table takes it.
    id: u64,
    /// The child's pipes, read and written in place.
    pipes: Box<stdio::Pipes>,
    /// Items read or taken off the inbound queue but not yet by `receive`.
    stash: VecDeque<Inbound>,
    /// Set once `Closed` was seen: every later `receive` reports it again.
    closed: Option<String>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    /// Stops the process group when the connection is dropped.
    _process: stdio::ProcessGuard,
}

/// Messages larger than this in all are not handed in with a step but left
/// for the guest's `receive` ([`Arrival::Waiting`]): a step's input lives
/// until the step returns, so a message handed in is held twice while the
/// guest parses it (a 17.6 MB tool list raised the peak by its size), and one
/// taken through `receive` is freed once it is in the guest's memory. The
/// crossing this costs is nothing beside a copy of a megabyte.
const HAND_IN_BYTES: usize = 1 << 20;

/// What one stdio connection received since the last turn, for `turns.step`.
#[derive(Debug)]
pub(crate) enum Arrival {
    /// The messages, then at most one error that came after them.
    Handed(Vec<String>, Option<wit::TransportError>),
    /// Messages over [`HAND_IN_BYTES`], kept for the guest's `receive`.
    Waiting,
}

impl Connection {
    /// What arrived since the last call (or `receive`), read without waiting;
    /// `None` when nothing did. How the connection closed is said once.
    pub(crate) fn gather(&mut self) -> Option<Arrival> {
        if self.closed.is_some() {
            return None;
        }
        let (messages, error) = match self.receive() {
            Ok(messages) if messages.iter().map(String::len).sum::<usize>() > HAND_IN_BYTES => {
                // Back where `receive` takes them from, in order (moved, not
                // copied); an error after them stays behind them.
                for message in messages.into_iter().rev() {
                    self.stash.push_front(Inbound::Message(message));
                }
                return Some(Arrival::Waiting);
            }
            Ok(messages) => {
                // An error that came right after the messages goes with them.
                let error = match self.stash.front() {
                    Some(Inbound::Message(_)) | None => None,
                    Some(_) => self.receive().err(),
                };
                (messages, error)
            }
            Err(e) => (Vec::new(), Some(e)),
        };
        (!messages.is_empty() || error.is_some()).then_some(Arrival::Handed(messages, error))
    }

    /// Whether [`Connection::gather`] may have something at once, with no
    /// event of the driver's poll to come for it: more than one batch arrived,
    /// or the last read of stdout filled its chunk (so more may wait).
    pub(crate) fn due(&self) -> bool {
        self.closed.is_none() && (!self.stash.is_empty() || self.pipes.due())
    }

    /// The poll said the server's stdout's writer is gone: it is read to its end.
    pub(crate) fn hung_up(&mut self) {
        self.pipes.hung_up();
    }

    /// Whether stdout ended and the connection waits for the exit status (see
    /// `stdio::CLOSING_CHECK`).
    pub(crate) fn closing(&self) -> bool {
        self.closed.is_none() && self.stash.is_empty() && self.pipes.closing()
    }

    /// Writes messages the guest's step returned, one line each; never blocks
    /// (what the pipe does not take waits for the next turn). A connection
    /// that closed drops them: the guest hears it closed.
    pub(crate) fn write(&mut self, messages: &[String]) {
        if self.closed.is_none() {
            self.pipes.send_all(messages);
        }
    }

    fn send(&mut self, message: String) -> Result<(), wit::TransportError> {
        if let Some(reason) = &self.closed {
            return Err(wit::TransportError::Closed(reason.clone()));
        }
        self.pipes.send(&message)
    }

    fn receive(&mut self) -> Result<Vec<String>, wit::TransportError> {
        let mut messages = Vec::new();
        let mut read = false;
        while messages.len() < RECEIVE_BATCH {
            if self.stash.is_empty() {
                // Read to the end of the pipe, not past it: a pipe this call
                // found empty waits for the poll's next event. (Only this
                // call's read counts: an event since an earlier one may have
                // announced more.)
                if read && self.pipes.drained() {
                    break;
                }
                self.pipes.fill(&mut self.stash);
                read = true;
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
            sandbox: d.sandbox.clone(),
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
        self.pipes.ready(&mut self.stash).await;
    }
}

/// Starts a stdio server for `server`, if the policy allows processes.
fn open(
    state: &HostState,
    server: &str,
    ep: wit::StdioEndpoint,
) -> Result<Connection, wit::TransportError> {
    if !state.policy.allow_processes {
        return Err(wit::TransportError::Denied(format!(
            "server `{server}`: the policy does not allow starting processes (allow them \
             with `Policy::allow_processes`, or run the CLI without `--no-processes`)"
        )));
    }
    let mut spec = endpoint::resolve_stdio(&ep, &|name| std::env::var(name).ok())
        .map_err(|e| wit::TransportError::InvalidEndpoint(format!("server `{server}`: {e}")))?;
    // Relative programs and paths name what is beside the configuration file
    // (see `places`), whatever directory mcpbox was started in.
    spec.cwd = state.places.working_dir(spec.cwd.as_deref());
    if let Some(cwd) = &spec.cwd
        && spec.command.contains('/')
        && std::path::Path::new(&spec.command).is_relative()
    {
        spec.command = cwd.join(&spec.command).to_string_lossy().into_owned();
    }
    let diagnostics = track_diagnostics(state, server);
    let own_npm_cache = ep
        .env
        .iter()
        .any(|pair| pair.name.eq_ignore_ascii_case(NPM_CACHE_VAR));
    let confined = confine(state, server, &mut spec, own_npm_cache, &diagnostics)?;
    let spawned = stdio::spawn(
        &spec,
        state.policy.max_message_bytes,
        diagnostics.clone(),
        confined,
        &state.supervisors,
        state.wake.readiness().cloned(),
    )?;
    Ok(Connection {
        id: 0,
        pipes: Box::new(spawned.pipes),
        stash: VecDeque::new(),
        closed: None,
        diagnostics,
        _process: spawned.process,
    })
}

/// The variable that points npm at its cache.
const NPM_CACHE_VAR: &str = "npm_config_cache";

/// Prepares the sandbox of a stdio server that has one: its description goes to
/// the diagnostics, its warnings to the notices; a grant the kernel cannot
/// enforce (and `require`s) is `denied`. A sandboxed `npx` gets a private npm
/// cache (`places`), unless its entry's `env` names one (`own_npm_cache`: then
/// only its grants apply).
#[cfg(target_os = "linux")]
fn confine(
    state: &HostState,
    server: &str,
    spec: &mut endpoint::StdioSpec,
    own_npm_cache: bool,
    diagnostics: &Mutex<Diagnostics>,
) -> Result<Option<sandbox::Prepared>, wit::TransportError> {
    let Some(grants) = &spec.sandbox else {
        return Ok(None);
    };
    let mut private = Vec::new();
    if sandbox::runs_npx(&spec.command) && !own_npm_cache {
        let cache = state.places.private_dir(server, spec, "npm").map_err(|e| {
            wit::TransportError::Io(format!(
                "server `{server}`: its private npm cache could not be made: {e}"
            ))
        })?;
        // npm reads its variables in any case: one name is left, pointing here.
        spec.env
            .retain(|(name, _)| !name.eq_ignore_ascii_case(NPM_CACHE_VAR));
        spec.env.push((
            NPM_CACHE_VAR.to_owned(),
            cache.to_string_lossy().into_owned(),
        ));
        private.push(cache);
    }
    let mut prepared = sandbox::prepare(
        server,
        grants,
        &spec.command,
        &spec.env,
        spec.cwd.as_deref(),
        &private,
    )
    .map_err(|e| match e {
        sandbox::SandboxError::Unsupported { .. } => wit::TransportError::Denied(e.to_string()),
        sandbox::SandboxError::Setup { .. } => wit::TransportError::Io(e.to_string()),
    })?;
    diagnostics
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .sandbox = Some(prepared.description.clone());
    state.notice(std::mem::take(&mut prepared.warnings));
    Ok(Some(prepared))
}

/// Other systems have no Landlock: a sandbox that must be enforced is refused.
#[cfg(not(target_os = "linux"))]
fn confine(
    state: &HostState,
    server: &str,
    spec: &mut endpoint::StdioSpec,
    _: bool,
    _: &Mutex<Diagnostics>,
) -> Result<Option<std::convert::Infallible>, wit::TransportError> {
    match &spec.sandbox {
        None => Ok(None),
        Some(s) if s.require => Err(wit::TransportError::Denied(format!(
            "server `{server}`: the sandbox cannot be enforced: it needs Linux (Landlock); set \
             \"sandbox\": {{\"require\": false}} to run it unconfined"
        ))),
        Some(_) => {
            state.notice(vec![format!(
                "server `{server}`: runs unconfined: sandboxes need Linux (Landlock) (\"require\": false)"
            )]);
            Ok(None)
        }
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

impl transport::Host for HostState {
    fn max_message_bytes(&mut self) -> wasmtime::Result<u64> {
        Ok(self.policy.max_message_bytes as u64)
    }
}

impl transport::HostConnection for HostState {
    fn open(
        &mut self,
        server: String,
        endpoint: wit::StdioEndpoint,
    ) -> wasmtime::Result<Result<Resource<Connection>, wit::TransportError>> {
        match open(self, &server, endpoint) {
            Ok(mut connection) => {
                connection.id = self.next_connection_id();
                let id = connection.id;
                if let Err(e) = connection.pipes.register(id) {
                    return Ok(Err(wit::TransportError::Io(format!(
                        "server `{server}`: its pipes could not be watched: {e}"
                    ))));
                }
                let resource = self.table.push(connection)?;
                self.connections.insert(id, resource.rep());
                Ok(Ok(resource))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn send(
        &mut self,
        this: Resource<Connection>,
        message: String,
    ) -> wasmtime::Result<Result<(), wit::TransportError>> {
        self.crossed();
        Ok(self.table.get_mut(&this)?.send(message))
    }

    fn receive(
        &mut self,
        this: Resource<Connection>,
    ) -> wasmtime::Result<Result<Vec<String>, wit::TransportError>> {
        self.crossed();
        Ok(self.table.get_mut(&this)?.receive())
    }

    fn subscribe(&mut self, this: Resource<Connection>) -> wasmtime::Result<Resource<DynPollable>> {
        self.crossed();
        subscribe(&mut self.table, this)
    }

    fn diagnostics(&mut self, this: Resource<Connection>) -> wasmtime::Result<wit::Diagnostics> {
        Ok(self.table.get(&this)?.diagnostics())
    }

    fn id(&mut self, this: Resource<Connection>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&this)?.id)
    }

    fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        let connection = self.table.delete(this)?;
        self.connections.remove(&connection.id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint::StdioSpec;
    use super::readiness::Readiness;
    use super::stdio::{Spawned, Supervisors, spawn};
    use super::*;
    use std::time::Duration;

    /// A connection on `sh -c script`.
    fn connection_to(script: &str) -> Connection {
        let (_, readiness) = Readiness::new(Duration::ZERO).unwrap();
        let spec = StdioSpec {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            cwd: None,
            sandbox: None,
        };
        let Spawned { pipes, process } = spawn(
            &spec,
            4 << 20,
            Arc::default(),
            None,
            &Arc::new(Supervisors::default()),
            Some(Arc::new(readiness)),
        )
        .unwrap();
        Connection {
            id: 1,
            pipes: Box::new(pipes),
            stash: VecDeque::new(),
            closed: None,
            diagnostics: Arc::default(),
            _process: process,
        }
    }

    /// What the connection has next, once it has something.
    async fn next(conn: &mut Connection) -> Arrival {
        for _ in 0..5_000 {
            if let Some(arrival) = conn.gather() {
                return arrival;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("nothing arrived in 5 s");
    }

    /// Messages over a megabyte in all stay with the host for the guest's
    /// `receive`, whole and in order, with what follows them after them;
    /// smaller ones are handed in with the step.
    #[tokio::test]
    async fn messages_over_a_megabyte_wait_for_receive() {
        let big =
            r#"printf '{"x":"'; head -c 2000000 /dev/zero | tr '\0' x; printf '"}\n{"a":1}\n'"#;
        let mut conn = connection_to(big);
        assert!(matches!(next(&mut conn).await, Arrival::Waiting));
        let mut messages = conn.receive().unwrap();
        assert_eq!(messages[0].len(), 2_000_008);
        assert!(messages[0].starts_with(r#"{"x":"xx"#));
        while messages.len() < 2 {
            match next(&mut conn).await {
                Arrival::Handed(more, _) => messages.extend(more),
                Arrival::Waiting => panic!("a small message was kept back"),
            }
        }
        assert_eq!(messages[1], r#"{"a":1}"#);

        let mut conn = connection_to(r#"printf '{"a":1}\n'"#);
        assert!(matches!(next(&mut conn).await, Arrival::Handed(m, _) if m == [r#"{"a":1}"#]));
    }
}
