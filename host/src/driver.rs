//! The driver thread: the one owner of the guest's store.
//!
//! A WASI 0.2 store runs one export at a time, so every caller talks to the
//! guest through this thread. Callers queue [`Job`]s and raise the wake signal.
//! A turn is one guest entry, `turns.step`: the driver hands over the queued
//! jobs, what the stdio connections received and the time, and takes back
//! what to write to the pipes, the turn's results and the guest's next
//! deadline; then it waits on the child pipes, the job queue and that deadline
//! itself, on the thread's own poll ([`crate::transport::readiness`]), with no
//! tokio task between a pipe and the guest. The gateway's stdio client is read
//! and written there too when it comes as file descriptors
//! (`Runtime::serve_stdio_fds`): its lines join the turn's jobs, and what the
//! gateway sends is written right after the step. The thread enters the embedder's
//! tokio runtime for what still runs there (HTTP, OAuth, the servers'
//! supervisors). While the guest waits on remote servers (`wasi:http`
//! pollables only it holds) its steps block instead, polling the connections,
//! the deadline and the wake signal at once, so a new job is picked up within
//! microseconds either way (a step whose jobs the gateway answered at once
//! does not block: the guest returns it).
//! Server status and the tool list are republished as snapshots whenever the
//! guest reports a change, so reading them never has to enter the guest.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use wasmtime::Store;
use wasmtime::component::Resource;

use crate::audit::AuditLog;
use crate::bindings::{Mcpbox, gateway, registry, turns, wit};
use crate::gateway::PolledClient;
use crate::instance::{self, Factory};
use crate::metrics::Monitor;
use crate::store::{HostState, Wake};
use crate::transport::descendants::Subreaper;
use crate::transport::readiness::{Readiness, Waiter};
use crate::transport::stdio::CLOSING_CHECK;
use crate::transport::{Arrival, Connection};
use crate::types::{CallError, Event, InputAnswer, ReloadReport, ServerState, ServerStatus, Tool};

/// The longest a turn waits (the driver between steps, or a step that blocks)
/// without a reason to return. Only bounds how soon a caller that gave up on a
/// call gets that call cancelled.
const IDLE_WAIT_MS: u64 = 1_000;

/// How often the driver looks for calls whose callers gave up (see
/// `cancel_abandoned`); small next to [`IDLE_WAIT_MS`], which bounds it anyway.
const ABANDON_SCAN: Duration = Duration::from_millis(5);

/// The reply to one call.
/// A call's answer as the guest gave it: the caller turns it into a
/// [`crate::CallResult`] (parsing its JSON) on its own task, off the driver's.
pub(crate) type CallReply = oneshot::Sender<Result<registry::CallResult, CallError>>;

/// Work for the driver.
#[derive(Debug)]
pub(crate) enum Job {
    /// Start a tool call.
    Call {
        tool: String,
        /// The dialect a model called the tool in (`registry.start-adapted-call`).
        dialect: Option<String>,
        arguments: String,
        timeout: Option<Duration>,
        /// Run it as a task when its tool allows one ([`crate::CallOptions::task`]).
        task: bool,
        /// The permission profile it is made under (`call-options.profile`).
        profile: Option<String>,
        reply: CallReply,
    },
    /// Start a request beyond tools (`registry.start-request`); it completes
    /// like a call.
    Request {
        server: Option<String>,
        request: registry::ServerRequest,
        timeout: Option<Duration>,
        reply: CallReply,
    },
    /// Every tool in a dialect (`registry.adapted-tools`, page by page).
    AdaptedTools {
        dialect: String,
        reply: oneshot::Sender<Result<crate::types::AdaptedTools, String>>,
    },
    /// Close every connection and stop the driver.
    Shutdown { reply: oneshot::Sender<()> },
    /// Connect one server afresh and reset its failure count (`registry.reconnect`).
    Reconnect {
        server: String,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Apply a new configuration as a diff (`registry.reload-config`).
    Reload {
        origin: String,
        text: String,
        /// File-system events the watcher folded into this reload.
        file_events: u32,
        reply: oneshot::Sender<Result<ReloadReport, String>>,
    },
    /// Answer an input request (`registry.answer-input`).
    AnswerInput {
        id: u64,
        answer: InputAnswer,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Set the embedder's roots (`registry.set-roots`).
    SetRoots {
        roots: Option<Vec<crate::types::Root>>,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Start serving downstream clients (`gateway.serve`); signals go to `sink`.
    Serve {
        options: gateway::ServeOptions,
        sink: DownstreamSink,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// A downstream message (`gateway.receive`).
    Downstream(gateway::Inbound),
    /// A downstream client left an exchange (`gateway.exchange-closed`).
    ExchangeClosed(u64),
    /// A downstream client ended its session (`gateway.session-closed`).
    SessionClosed(u64),
    /// The gateway's HTTP rules applied to a request's head (`gateway.http-head`).
    /// It keeps no state, so it is answered at once, without ending the batch
    /// of a step.
    HttpHead {
        head: gateway::RequestHead,
        reply: oneshot::Sender<gateway::HttpDecision>,
    },
    /// Serve the gateway's stdio client on the driver's own poll
    /// (`Runtime::serve_stdio_fds`), once the gateway serves.
    AttachStdio(Box<PolledClient>),
    /// The future serving that client was dropped: close what it left open.
    DetachStdio,
}

/// What the driver hands the serving transport.
#[derive(Debug)]
pub(crate) enum Downstream {
    /// The gateway's signals, in order.
    Signals(Vec<wit::DownstreamSignal>),
    /// The guest was replaced: the exchanges up to `through` (those the old
    /// instance was handed) are gone unanswered; the sessions carry on, reopened
    /// in the new instance before it was handed anything else.
    Restarted { why: String, through: u64 },
    /// The runtime stopped: every session and exchange is gone.
    Stopped(String),
}

/// The sessions the gateway opened, by handle: how their client is connected
/// and the profile their `initialize` came under. Kept across a restart of the
/// guest, which reopens them (see `Driver::reopen_sessions`).
type Sessions = BTreeMap<u64, (gateway::TransportKind, Option<String>)>;

/// What the driver keeps while the gateway serves.
struct Serving {
    options: gateway::ServeOptions,
    sink: DownstreamSink,
    /// The stdio client the driver reads and writes itself; its signals go to
    /// it instead of `sink`.
    client: Option<Box<PolledClient>>,
    sessions: Sessions,
    /// The highest exchange handed to the current instance.
    through: u64,
}

/// Where the driver sends the gateway's signals.
pub(crate) type DownstreamSink = mpsc::UnboundedSender<Downstream>;

/// What the driver publishes for [`crate::Runtime`] to read.
#[derive(Debug)]
pub(crate) struct Published {
    /// The configuration's issues, as the last load or reload found them: set
    /// before `Reloaded` is sent, so a listener that sees the report reads them.
    pub issues: Arc<std::sync::Mutex<Vec<crate::types::ConfigIssue>>>,
    pub servers: watch::Sender<Arc<Vec<ServerStatus>>>,
    pub tools: watch::Sender<Arc<Vec<Tool>>>,
    pub events: crate::events::Events,
    /// `Some(reason)` once the driver has stopped.
    pub stopped: watch::Sender<Option<String>>,
}

/// A job's reply held over a trap (see `Driver::interrupted`).
enum Interrupted {
    Other(oneshot::Sender<Result<(), String>>),
    Reload(oneshot::Sender<Result<ReloadReport, String>>),
    /// The replies of a step's jobs.
    Step(Vec<StepReply>),
}

/// Where the outcome of one job of a step goes.
enum StepReply {
    Call(CallReply),
    Input(oneshot::Sender<Result<(), String>>),
    /// A cancel: nobody waits for it.
    None,
}

/// The embedder's jobs for the next `turns.step`, with their replies, in order.
#[derive(Default)]
struct Batch {
    jobs: Vec<turns::Job>,
    replies: Vec<StepReply>,
    /// How the downstream messages among the jobs came, by exchange: a session
    /// that one of them opens is remembered so (see `Serving::sessions`).
    inbounds: HashMap<u64, (gateway::TransportKind, Option<String>)>,
}

impl Batch {
    /// Takes a job that a step does (a call, a request, an answer, a
    /// downstream client's message or departure); gives back any other.
    fn add(&mut self, job: Job) -> Option<Job> {
        let (job, reply) = match job {
            Job::Call {
                tool,
                dialect,
                arguments,
                timeout,
                task,
                profile,
                reply,
            } => (
                turns::Job::Call(turns::CallJob {
                    tool,
                    dialect,
                    arguments,
                    options: call_options(timeout, task, profile),
                }),
                StepReply::Call(reply),
            ),
            Job::Request {
                server,
                request,
                timeout,
                reply,
            } => (
                turns::Job::Request(turns::RequestJob {
                    server,
                    request,
                    options: call_options(timeout, false, None),
                }),
                StepReply::Call(reply),
            ),
            Job::AnswerInput { id, answer, reply } => (
                turns::Job::AnswerInput(turns::AnswerJob {
                    id,
                    answer: (&answer).into(),
                }),
                StepReply::Input(reply),
            ),
            Job::Downstream(inbound) => {
                self.inbounds
                    .insert(inbound.exchange, (inbound.kind, inbound.profile.clone()));
                (turns::Job::Downstream(inbound), StepReply::None)
            }
            Job::ExchangeClosed(exchange) => {
                (turns::Job::ExchangeClosed(exchange), StepReply::None)
            }
            Job::SessionClosed(session) => (turns::Job::SessionClosed(session), StepReply::None),
            other => return Some(other),
        };
        self.jobs.push(job);
        self.replies.push(reply);
        None
    }

    fn cancel(&mut self, call: u64) {
        self.jobs.push(turns::Job::Cancel(call));
        self.replies.push(StepReply::None);
    }

    fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

fn call_options(
    timeout: Option<Duration>,
    task: bool,
    profile: Option<String>,
) -> registry::CallOptions {
    registry::CallOptions {
        // A timeout past u64 milliseconds (585 million years) is no timeout.
        timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        task,
        profile,
    }
}

pub(crate) struct Driver {
    factory: Factory,
    store: Store<HostState>,
    guest: Mcpbox,
    jobs: mpsc::UnboundedReceiver<Job>,
    wake: Arc<Wake>,
    published: Published,
    /// Calls started in the guest, by the guest's handle.
    pending: HashMap<u64, CallReply>,
    /// The reply of the job whose guest call trapped, answered once it is known
    /// whether the guest is replaced or the runtime stops.
    interrupted: Option<Interrupted>,
    /// When the guest last trapped, to tell a guest that keeps failing from a one-off.
    traps: Vec<Instant>,
    /// When `cancel_abandoned` last looked at every pending call.
    last_abandon_scan: Instant,
    /// The guest waits on pollables of its own (remote servers), so its
    /// steps block as `registry.wait` does instead of the driver waiting.
    blocking: bool,
    /// The guest's next deadline (its monotonic clock, ns), from the last step.
    deadline: Option<u64>,
    /// The audit trail's file, when one is named.
    audit: Option<Arc<AuditLog>>,
    /// The gateway's options, where its signals go and its sessions, once serving.
    serving: Option<Serving>,
    /// This runtime's use of the subreaper, if it has the option.
    subreaper: Option<Subreaper>,
    /// Counts what is published, with `Options::metrics`.
    monitor: Option<Arc<Monitor>>,
    /// The thread's poll, and what callers and connections share of it.
    waiter: Waiter,
    readiness: Arc<Readiness>,
    /// Connections to read in the next step, by number: their pipes became
    /// ready, or may still hold what no event will announce.
    due: Vec<u64>,
    /// Connections whose stdout ended, waiting for how they closed.
    closing: Vec<u64>,
    /// Every connection is read in the next step (after a step that blocked,
    /// in which the guest read pipes itself, and in a new instance).
    all_due: bool,
    /// The poll was asked since the last step gathered.
    polled: bool,
    /// The stdio client's input is watched from tokio (while steps block).
    watching: bool,
}

/// How long a shutdown waits for the servers to be gone: their grace period
/// between SIGTERM and SIGKILL, and time to reap them and their descendants.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// A guest that traps this many times within [`TRAP_WINDOW`] is not restarted again.
const MAX_TRAPS: usize = 3;
const TRAP_WINDOW: Duration = Duration::from_secs(60);

impl Driver {
    pub fn new(
        factory: Factory,
        store: Store<HostState>,
        guest: Mcpbox,
        jobs: mpsc::UnboundedReceiver<Job>,
        wake: Arc<Wake>,
        published: Published,
        (waiter, readiness): (Waiter, Arc<Readiness>),
    ) -> Self {
        Driver {
            waiter,
            readiness,
            due: Vec::new(),
            closing: Vec::new(),
            all_due: true,
            polled: false,
            watching: false,
            factory,
            store,
            guest,
            jobs,
            wake,
            published,
            pending: HashMap::new(),
            interrupted: None,
            traps: Vec::new(),
            last_abandon_scan: Instant::now(),
            blocking: false,
            deadline: None,
            audit: None,
            serving: None,
            subreaper: None,
            monitor: None,
        }
    }

    /// Releases `subreaper`, this runtime's use of the option, when it stops.
    pub fn with_subreaper(mut self, subreaper: Option<Subreaper>) -> Self {
        self.subreaper = subreaper;
        self
    }

    /// Counts the events it publishes in `monitor` (`Options::metrics`).
    pub fn with_monitor(mut self, monitor: Option<Arc<Monitor>>) -> Self {
        self.monitor = monitor;
        self
    }

    /// Appends audit records to `audit` (the first instance's; a replacement
    /// instance brings its own).
    pub fn with_audit(mut self, audit: Option<Arc<AuditLog>>) -> Self {
        self.audit = audit;
        self
    }

    /// Runs until shut down or until every runtime handle is dropped. A guest
    /// that traps is replaced by a fresh instance (its servers restart); only a
    /// guest that keeps trapping stops the runtime.
    pub async fn run(mut self) {
        // Who asked for the shutdown, answered once every server is gone.
        let mut shutdowns = Vec::new();
        let mut failed = true;
        let reason = loop {
            let trap = match self.serve().await {
                Ok(done) => {
                    shutdowns.extend(done);
                    failed = false;
                    break "it was shut down".to_owned();
                }
                // Out of memory, the usual cause, said plainly; the wasm
                // backtrace of the allocator's abort would not tell it.
                Err(trap) => match self.store.data().limits.out_of_memory() {
                    Some(message) => message,
                    None => format!("{trap:#}"),
                },
            };
            let now = Instant::now();
            self.traps.retain(|t| now.duration_since(*t) < TRAP_WINDOW);
            self.traps.push(now);
            if self.traps.len() >= MAX_TRAPS {
                // The callers in flight are told this, not that the guest restarted.
                break format!("the guest failed {MAX_TRAPS} times within a minute; last: {trap}");
            }
            match self.factory.start().await {
                Ok(started) => {
                    // The old store goes with its connections, which stops its servers.
                    self.store = started.store;
                    self.guest = started.guest;
                    self.audit = started.audit;
                    self.published.tools.send_replace(Arc::new(started.tools));
                    if let Some(monitor) = &self.monitor {
                        monitor.guest_restarted(&started.servers);
                    }
                    self.published
                        .servers
                        .send_replace(Arc::new(started.servers));
                    // Answered once the new snapshots are out, so a caller told of the
                    // restart that then waits for readiness waits for the new servers.
                    self.fail_pending(&format!("the guest failed and was restarted: {trap}"));
                    // Told after the new snapshots are out, so a listener that then
                    // waits for readiness waits for the new instance's servers.
                    let _ = self.published.events.send(Event::Warning(format!(
                        "the guest failed and was restarted: {trap}"
                    )));
                    // The new instance serves too, and reopens the old one's
                    // sessions before it is handed anything else: a trap one
                    // client caused ends nobody's session (what was in flight is lost).
                    if let Err(why) = self.reopen_sessions(&trap).await {
                        break format!("the guest failed ({trap}) and {why}");
                    }
                }
                Err(e) => {
                    break format!("the guest failed ({trap}) and could not be restarted: {e}");
                }
            }
        };
        if failed {
            self.published.tools.send_replace(Arc::new(Vec::new()));
        }
        // The reason is set while the last snapshot of the servers is written,
        // under its lock: the callers run on other threads than this one, and a
        // caller that sees the servers failed must see the runtime stopped (the
        // CLI's exit code), as one woken by the stop must see them failed.
        let stopped = &self.published.stopped;
        self.published.servers.send_modify(|servers| {
            if failed {
                // No server runs without the guest: say so where people look.
                let error = format!("the mcpbox runtime stopped: {reason}");
                let failed: Vec<ServerStatus> = servers
                    .iter()
                    .map(|s| ServerStatus {
                        state: ServerState::Failed,
                        error: Some(error.clone()),
                        tool_count: 0,
                        ..s.clone()
                    })
                    .collect();
                *servers = Arc::new(failed);
            }
            stopped.send_replace(Some(reason.clone()));
        });
        let _ = self.published.events.send(Event::Stopped(reason.clone()));
        // After the stop is published: a caller told its call ended with the
        // runtime sees the runtime stopped and its servers failed.
        self.fail_pending(&reason);
        if let Some(serving) = self.serving.take() {
            let why = format!("the mcpbox runtime stopped: {reason}");
            match serving.client {
                Some(mut client) => {
                    client.stopped(&why);
                    self.drop_client(client);
                }
                None => {
                    let _ = serving.sink.send(Downstream::Stopped(why));
                }
            }
        }
        self.jobs.close();
        while let Ok(job) = self.jobs.try_recv() {
            match job {
                Job::Call { reply, .. } | Job::Request { reply, .. } => {
                    let _ = reply.send(Err(CallError::Runtime(reason.clone())));
                }
                Job::Shutdown { reply } => shutdowns.push(reply),
                Job::AdaptedTools { reply, .. } => {
                    let _ = reply.send(Err(format!("the mcpbox runtime stopped: {reason}")));
                }
                Job::Reconnect { reply, .. }
                | Job::AnswerInput { reply, .. }
                | Job::SetRoots { reply, .. }
                | Job::Serve { reply, .. } => {
                    let _ = reply.send(Err(format!("the mcpbox runtime stopped: {reason}")));
                }
                Job::Reload { reply, .. } => {
                    let _ = reply.send(Err(format!("the mcpbox runtime stopped: {reason}")));
                }
                Job::AttachStdio(mut client) => {
                    client.stopped(&format!("the mcpbox runtime stopped: {reason}"));
                }
                Job::Downstream(_)
                | Job::ExchangeClosed(_)
                | Job::SessionClosed(_)
                | Job::HttpHead { .. }
                | Job::DetachStdio => {}
            }
        }
        // Dropping the store drops every connection, which stops every server;
        // then wait until they (and what they left behind) are gone.
        let Driver {
            store,
            factory,
            subreaper,
            ..
        } = self;
        drop(store);
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, factory.supervisors().all_stopped()).await;
        if let Some(subreaper) = subreaper {
            subreaper.release().await;
        }
        for reply in shutdowns {
            let _ = reply.send(());
        }
    }

    /// After a trap: tells the serving transport which exchanges are lost, serves
    /// again on the new instance and reopens every session in it (an inbound with
    /// the session's handle and no text; its answer, the end of exchange 0, is
    /// nobody's). Err says why the new instance cannot serve.
    async fn reopen_sessions(&mut self, trap: &str) -> Result<(), String> {
        let Some(serving) = self.serving.as_mut() else {
            return Ok(());
        };
        let why = format!("the guest failed and was restarted: {trap}");
        match serving.client.as_mut() {
            Some(client) => client.restarted(&why, serving.through),
            None => {
                let _ = serving.sink.send(Downstream::Restarted {
                    why,
                    through: serving.through,
                });
            }
        }
        let gateway = self.guest.mcpbox_runtime_gateway();
        let served = gateway.call_serve(&mut self.store, &serving.options).await;
        if !matches!(served, Ok(Ok(()))) {
            return Err("the new instance could not serve".into());
        }
        for (&handle, (kind, profile)) in &serving.sessions {
            let inbound = gateway::Inbound {
                session: Some(handle),
                exchange: 0,
                kind: *kind,
                profile: profile.clone(),
                headers: Vec::new(),
                text: String::new(),
            };
            if gateway
                .call_receive(&mut self.store, &inbound)
                .await
                .is_err()
            {
                return Err("the new instance failed reopening the sessions".into());
            }
        }
        Ok(())
    }

    /// Fails every call in flight, and the job whose guest call trapped.
    fn fail_pending(&mut self, reason: &str) {
        for (_, reply) in self.pending.drain() {
            let _ = reply.send(Err(CallError::Runtime(reason.to_owned())));
        }
        match self.interrupted.take() {
            Some(Interrupted::Other(reply)) => {
                let _ = reply.send(Err(reason.to_owned()));
            }
            Some(Interrupted::Reload(reply)) => {
                let _ = reply.send(Err(reason.to_owned()));
            }
            Some(Interrupted::Step(replies)) => {
                for reply in replies {
                    match reply {
                        StepReply::Call(reply) => {
                            let _ = reply.send(Err(CallError::Runtime(reason.to_owned())));
                        }
                        StepReply::Input(reply) => {
                            let _ = reply.send(Err(reason.to_owned()));
                        }
                        StepReply::None => {}
                    }
                }
            }
            None => {}
        }
    }

    /// Runs the guest until a shutdown (returning its reply, if a caller asked
    /// for it) or a trap.
    ///
    /// One turn: the queued jobs, what every stdio connection received and the
    /// time go into one `turns.step`, which returns what to write, the turn's
    /// results and the guest's next deadline; then the driver waits on the
    /// child pipes, the job queue and that deadline itself. While the guest has
    /// pollables of its own (remote servers), its steps block instead.
    async fn serve(&mut self) -> wasmtime::Result<Option<oneshot::Sender<()>>> {
        // A new instance knows nothing yet: its first step says.
        self.blocking = false;
        self.deadline = None;
        self.all_due = true;
        loop {
            // One budget covers a whole turn of the loop: the jobs, the step and
            // the snapshots. A guest stuck in a loop traps instead of hanging.
            instance::budget(&mut self.store, IDLE_WAIT_MS);
            let mut batch = Batch::default();
            loop {
                match self.jobs.try_recv() {
                    Ok(job) => {
                        self.wake.take();
                        let Some(job) = batch.add(job) else {
                            continue;
                        };
                        // Stateless: the jobs before it need not go first.
                        if let Job::HttpHead { head, reply } = job {
                            self.http_head(head, reply).await?;
                            continue;
                        }
                        // Jobs before it go first.
                        if !batch.is_empty() {
                            self.step(std::mem::take(&mut batch), 0).await?;
                        }
                        if let Some(done) = self.handle(job).await? {
                            self.shutdown().await?;
                            return Ok(Some(done));
                        }
                    }
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        self.step(batch, 0).await?;
                        self.shutdown().await?;
                        return Ok(None);
                    }
                }
            }
            self.cancel_abandoned(&mut batch);
            let timeout = if self.blocking { IDLE_WAIT_MS } else { 0 };
            self.step(batch, timeout).await?;
            if !self.blocking {
                self.idle().await?;
            }
        }
    }

    /// One `turns.step`: the batch's jobs and what the stdio connections
    /// received go in; what to write goes out to the pipes, and the turn's
    /// results to their callers.
    async fn step(&mut self, mut batch: Batch, timeout_ms: u64) -> wasmtime::Result<()> {
        // Every connection and the stdio client, now and then, whatever the
        // poll said (see `Waiter::take_sweep`).
        if self.waiter.take_sweep() {
            self.all_due = true;
        }
        self.read_client(&mut batch);
        if let Some(serving) = self.serving.as_mut() {
            for job in &batch.jobs {
                match job {
                    turns::Job::Downstream(inbound) => {
                        serving.through = serving.through.max(inbound.exchange);
                    }
                    turns::Job::SessionClosed(session) => {
                        serving.sessions.remove(session);
                    }
                    _ => {}
                }
            }
        }
        let arrived = self.gather();
        let now = self.now()?;
        let input = turns::TurnInput {
            now,
            jobs: batch.jobs,
            arrived,
            timeout_ms,
        };
        self.entered();
        let output = match self
            .guest
            .mcpbox_runtime_turns()
            .call_step(&mut self.store, &input)
            .await
        {
            Ok(output) => output,
            Err(trap) => {
                self.interrupted = Some(Interrupted::Step(batch.replies));
                return Err(trap);
            }
        };
        self.write(output.outgoing);
        // A step that blocked may have read pipes in the guest's own `receive`.
        self.all_due |= timeout_ms > 0 || output.blocking;
        self.blocking = output.blocking;
        self.deadline = output.deadline;
        self.watch_client();
        // Calls that did not start (refused, unknown) are answered after the
        // turn's events are out: a refusal's audit record comes first.
        let mut refused = Vec::new();
        for (reply, outcome) in batch.replies.into_iter().zip(output.jobs) {
            match (reply, outcome) {
                (StepReply::Call(reply), turns::JobOutcome::Started(Ok(call))) => {
                    self.pending.insert(call, reply);
                }
                (StepReply::Call(reply), turns::JobOutcome::Started(Err(e))) => {
                    refused.push((reply, e));
                }
                (StepReply::Input(reply), turns::JobOutcome::Answered(result)) => {
                    // A rejected answer leaves the request open: say so with the error.
                    let _ = reply.send(result);
                }
                _ => {}
            }
        }
        let turn = output.turn;
        // A session opens on the exchange of its `initialize`, at once.
        if let Some(serving) = self.serving.as_mut() {
            for signal in &turn.downstream {
                if let wit::DownstreamSignal::SessionOpened(o) = signal
                    && let Some(how) = batch.inbounds.get(&o.exchange)
                {
                    serving.sessions.insert(o.session, how.clone());
                }
            }
        }
        // A tool result does not depend on any server's status: answer it at
        // once, before the snapshots the events may call for. Failures are
        // answered after the events are published, so a caller whose call
        // failed because its server died also sees that server failed.
        self.forward(turn.downstream);
        let (results, failures): (Vec<_>, Vec<_>) =
            turn.finished.into_iter().partition(|c| c.outcome.is_ok());
        self.answer(results);
        self.publish(turn.events).await?;
        self.answer(failures);
        for (reply, e) in refused {
            let _ = reply.send(Err(e.into()));
        }
        Ok(())
    }

    /// Applies the gateway's HTTP rules to a request's head. A trap drops the
    /// reply: the request is answered `503`.
    async fn http_head(
        &mut self,
        head: gateway::RequestHead,
        reply: oneshot::Sender<gateway::HttpDecision>,
    ) -> wasmtime::Result<()> {
        self.entered();
        let decision = self
            .guest
            .mcpbox_runtime_gateway()
            .call_http_head(&mut self.store, &head)
            .await?;
        let _ = reply.send(decision);
        Ok(())
    }

    /// Counts one entry into the guest (see `Runtime::guest_crossings`).
    fn entered(&self) {
        self.store.data().crossed();
    }

    /// The guest's monotonic clock, as `wasi:clocks/monotonic-clock.now` reads it.
    fn now(&mut self) -> wasmtime::Result<u64> {
        use wasmtime_wasi::clocks::WasiClocksView as _;
        use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::Host as _;
        self.store.data_mut().clocks().now()
    }

    /// What the stdio connections received since the last step, read without
    /// waiting: those the poll found ready and those still due or closing.
    fn gather(&mut self) -> Vec<turns::Arrival> {
        if !std::mem::take(&mut self.polled) {
            let (jobs, wake) = (&self.jobs, &self.wake);
            self.waiter.wait(
                &self.readiness,
                || job_waiting(jobs, wake),
                Duration::ZERO,
                &mut self.due,
            );
        }
        let state = self.store.data_mut();
        let mut ids = std::mem::take(&mut self.due);
        if std::mem::take(&mut self.all_due) {
            ids.clear();
            ids.extend(state.connections.keys());
        } else {
            ids.append(&mut self.closing);
            ids.sort_unstable();
            ids.dedup();
        }
        self.closing.clear();
        let mut arrived = Vec::new();
        let hung_up = self.waiter.take_hung_up();
        for &connection in &ids {
            // A connection the guest dropped is gone from the map.
            let Some(&rep) = state.connections.get(&connection) else {
                continue;
            };
            let Ok(conn) = state
                .table
                .get_mut(&Resource::<Connection>::new_borrow(rep))
            else {
                continue;
            };
            if hung_up.contains(&connection) {
                conn.hung_up();
            }
            if let Some(arrival) = conn.gather() {
                let (messages, error, waiting) = match arrival {
                    Arrival::Handed(messages, error) => (messages, error, false),
                    Arrival::Waiting => (Vec::new(), None, true),
                };
                arrived.push(turns::Arrival {
                    connection,
                    messages,
                    error,
                    waiting,
                });
            }
            if conn.due() {
                self.due.push(connection);
            } else if conn.closing() {
                self.closing.push(connection);
            }
        }
        // The list's buffer serves the next turn.
        ids.clear();
        if self.due.is_empty() {
            self.due = ids;
        }
        arrived
    }

    /// Writes what a step returned for the stdio connections.
    fn write(&mut self, outgoing: Vec<turns::Outgoing>) {
        let state = self.store.data_mut();
        for out in outgoing {
            // A connection the guest dropped in the same step takes nothing.
            let Some(&rep) = state.connections.get(&out.connection) else {
                continue;
            };
            if let Ok(conn) = state
                .table
                .get_mut(&Resource::<Connection>::new_borrow(rep))
            {
                conn.write(&out.messages);
            }
        }
    }

    /// Waits until a stdio connection has something, a job is queued, or the
    /// guest's deadline (or [`IDLE_WAIT_MS`], for `cancel_abandoned`) comes, on
    /// the thread's poll.
    async fn idle(&mut self) -> wasmtime::Result<()> {
        if !self.due.is_empty() || self.all_due {
            return Ok(());
        }
        let mut sleep = Duration::from_millis(IDLE_WAIT_MS);
        if let Some(client) = self.serving.as_mut().and_then(|s| s.client.as_mut()) {
            if let Some(hung_up) = self.waiter.take_client() {
                client.ready(hung_up);
            }
            if client.due() {
                return Ok(());
            }
            if let Some(deadline) = client.deadline() {
                sleep = sleep.min(deadline.saturating_duration_since(Instant::now()));
            }
        }
        let now = self.now()?;
        if let Some(deadline) = self.deadline {
            sleep = sleep.min(Duration::from_nanos(deadline.saturating_sub(now)));
        }
        if !self.closing.is_empty() {
            sleep = sleep.min(CLOSING_CHECK);
        }
        if sleep.is_zero() {
            return Ok(());
        }
        let (jobs, wake) = (&self.jobs, &self.wake);
        self.waiter.wait(
            &self.readiness,
            || job_waiting(jobs, wake),
            sleep,
            &mut self.due,
        );
        self.polled = true;
        Ok(())
    }

    /// Hands the gateway's signals to the serving transport: the stdio client
    /// the driver serves itself takes them at once.
    fn forward(&mut self, signals: Vec<wit::DownstreamSignal>) {
        if signals.is_empty() {
            return;
        }
        if let Some(serving) = &mut self.serving {
            match &mut serving.client {
                Some(client) => client.deliver(signals),
                None => {
                    let _ = serving.sink.send(Downstream::Signals(signals));
                }
            }
        }
    }

    /// Reads the stdio client the driver serves (when its input is ready, or
    /// may be) into the turn's batch; once serving it is over, closes what it
    /// left open in the same batch and lets it go.
    fn read_client(&mut self, batch: &mut Batch) {
        let Some(client) = self.serving.as_mut().and_then(|s| s.client.as_mut()) else {
            return;
        };
        // After a step that blocked, the input may hold what no event announced.
        let ready = self.waiter.take_client();
        if ready.is_some() || self.all_due {
            client.ready(ready == Some(true));
        }
        let mut jobs = Vec::new();
        client.read(&mut jobs);
        let finished = client.finished(&mut jobs);
        for job in jobs {
            // Each is a job of a step.
            let _ = batch.add(job);
        }
        if finished && let Some(client) = self.serving.as_mut().and_then(|s| s.client.take()) {
            self.drop_client(client);
        }
    }

    /// Stops polling the stdio client and lets it go, which ends the future
    /// that serves it.
    fn drop_client(&mut self, client: Box<PolledClient>) {
        if std::mem::take(&mut self.watching) {
            self.wake.watch_client(None);
        }
        drop(client);
    }

    /// Watches the stdio client's input from tokio while the guest's steps
    /// block (see `crate::gateway`'s `stdio_fds`), and only then.
    fn watch_client(&mut self) {
        let client = self.serving.as_ref().and_then(|s| s.client.as_deref());
        let wanted = self.blocking && client.is_some_and(PolledClient::reading);
        if wanted && !self.watching {
            // Without it, a line waits for the blocked step's timeout.
            if let Some(watch) = client.and_then(PolledClient::watch) {
                self.wake.watch_client(Some(watch));
                self.watching = true;
            }
        } else if !wanted && self.watching {
            self.wake.watch_client(None);
            self.watching = false;
        }
    }

    fn answer(&mut self, finished: Vec<registry::FinishedCall>) {
        for call in finished {
            if let Some(reply) = self.pending.remove(&call.call) {
                let _ = reply.send(call.outcome.map_err(Into::into));
            }
        }
    }

    /// Takes the guest's queued events and publishes them.
    async fn publish_events(&mut self) -> wasmtime::Result<()> {
        let events = self
            .guest
            .mcpbox_runtime_registry()
            .call_events(&mut self.store)
            .await?;
        self.publish(events).await
    }

    /// Publishes events, and fresh snapshots first when one calls for them.
    async fn publish(&mut self, events: Vec<registry::Event>) -> wasmtime::Result<()> {
        // The host's own warnings (from opening connections) come with the turn.
        for notice in self.store.data().take_notices() {
            let _ = self.published.events.send(Event::Warning(notice));
        }
        if events.is_empty() {
            return Ok(());
        }
        let changed = events.iter().any(|e| {
            matches!(
                e,
                registry::Event::Status(_) | registry::Event::ToolsChanged(_)
            )
        });
        if changed {
            self.publish_snapshots().await?;
        }
        for event in events {
            let event = match event {
                registry::Event::CallCounted(count) => {
                    if let Some(monitor) = &self.monitor {
                        monitor.count(count);
                    }
                    continue;
                }
                event => match Event::from_wit(event) {
                    Some(event) => event,
                    None => continue,
                },
            };
            if let (Event::Audit(record), Some(log)) = (&event, &self.audit)
                && let Err(e) = log.write(record)
            {
                let _ = self.published.events.send(Event::Warning(e));
            }
            let event = match (event, &self.monitor) {
                (Event::Audit(record), Some(monitor)) => {
                    // The monitor keeps the record among the recent calls; it is
                    // copied only for subscribers, so that a runtime nobody
                    // listens to pays for no copy per call (docs/PERFORMANCE.md,
                    // "Metrics cost").
                    let copy = (self.published.events.receiver_count() > 0)
                        .then(|| Event::Audit(record.clone()));
                    monitor.recent(record);
                    match copy {
                        Some(copy) => copy,
                        None => continue,
                    }
                }
                (event, Some(monitor)) => {
                    monitor.observe(&event);
                    event
                }
                (event, None) => event,
            };
            // No subscribers is fine: events are for whoever listens.
            let _ = self.published.events.send(event);
        }
        Ok(())
    }

    /// Handles one job; returns the shutdown reply when the job asks to stop.
    async fn handle(&mut self, job: Job) -> wasmtime::Result<Option<oneshot::Sender<()>>> {
        // (`http_head` counts its own.)
        if !matches!(
            job,
            Job::Shutdown { .. } | Job::HttpHead { .. } | Job::AttachStdio(_) | Job::DetachStdio
        ) {
            self.entered();
        }
        match job {
            job @ (Job::Call { .. }
            | Job::Request { .. }
            | Job::AnswerInput { .. }
            | Job::Downstream(_)
            | Job::ExchangeClosed(_)
            | Job::SessionClosed(_)) => {
                let mut batch = Batch::default();
                // Taken: it is one of the jobs a step does.
                let _ = batch.add(job);
                self.step(batch, 0).await?;
                Ok(None)
            }
            Job::AdaptedTools { dialect, reply } => {
                // A trap drops the reply: the caller hears the runtime's reason.
                let registry = self.guest.mcpbox_runtime_registry();
                let adapted =
                    crate::instance::read_adapted_tools(registry, &mut self.store, dialect).await?;
                let _ = reply.send(adapted);
                Ok(None)
            }
            Job::Shutdown { reply } => Ok(Some(reply)),
            Job::AttachStdio(mut client) => {
                match self.serving.as_mut() {
                    Some(serving) if serving.client.is_none() => {
                        match client.register(&self.readiness) {
                            Ok(()) => serving.client = Some(client),
                            Err(e) => client.end(Err(e.into())),
                        }
                    }
                    Some(_) => client.end(Err(crate::gateway::ServeError::Refused(
                        "the gateway serves another stdio client already".into(),
                    ))),
                    None => client.end(Err(crate::gateway::ServeError::Refused(
                        "the gateway does not serve".into(),
                    ))),
                }
                self.watch_client();
                Ok(None)
            }
            Job::DetachStdio => {
                let mut batch = Batch::default();
                if let Some(mut client) = self.serving.as_mut().and_then(|s| s.client.take()) {
                    let mut jobs = Vec::new();
                    client.close(&mut jobs);
                    self.drop_client(client);
                    for job in jobs {
                        let _ = batch.add(job);
                    }
                }
                if !batch.is_empty() {
                    self.step(batch, 0).await?;
                }
                Ok(None)
            }
            Job::HttpHead { head, reply } => {
                self.http_head(head, reply).await?;
                Ok(None)
            }
            Job::Reload {
                origin,
                text,
                file_events,
                reply,
            } => {
                let registry = self.guest.mcpbox_runtime_registry();
                match registry
                    .call_reload_config(&mut self.store, &origin, &text)
                    .await
                {
                    Ok(Ok(report)) => {
                        // A guest replaced after a trap loads what is running now.
                        self.factory.set_config(origin.clone(), text);
                        let report = ReloadReport::from_wit(origin, report, file_events);
                        // The stopped and started servers' statuses come first, so
                        // a listener that sees the report sees the new snapshots.
                        self.publish_events().await?;
                        self.publish_snapshots().await?;
                        *self
                            .published
                            .issues
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) = report.issues.clone();
                        let _ = self.published.events.send(Event::Reloaded(report.clone()));
                        let _ = reply.send(Ok(report));
                        Ok(None)
                    }
                    Ok(Err(error)) => {
                        let _ = self.published.events.send(Event::ReloadFailed {
                            origin,
                            error: error.clone(),
                        });
                        let _ = reply.send(Err(error));
                        Ok(None)
                    }
                    Err(trap) => {
                        self.interrupted = Some(Interrupted::Reload(reply));
                        Err(trap)
                    }
                }
            }
            Job::Serve {
                options,
                sink,
                reply,
            } => {
                let gateway = self.guest.mcpbox_runtime_gateway();
                match gateway.call_serve(&mut self.store, &options).await {
                    Ok(result) => {
                        if result.is_ok() {
                            self.serving = Some(Serving {
                                options,
                                sink,
                                client: None,
                                sessions: Sessions::new(),
                                through: 0,
                            });
                        }
                        let _ = reply.send(result);
                        Ok(None)
                    }
                    Err(trap) => {
                        self.interrupted = Some(Interrupted::Other(reply));
                        Err(trap)
                    }
                }
            }
            Job::SetRoots { roots, reply } => {
                let registry = self.guest.mcpbox_runtime_registry();
                let wit: Option<Vec<_>> =
                    roots.as_ref().map(|r| r.iter().map(Into::into).collect());
                let result = registry
                    .call_set_roots(&mut self.store, wit.as_deref())
                    .await;
                if matches!(result, Ok(Ok(()))) {
                    self.factory.set_roots(roots);
                }
                // A server reconnected for its roots shows as starting.
                self.reply_after_events(result, reply).await
            }
            Job::Reconnect { server, reply } => {
                let registry = self.guest.mcpbox_runtime_registry();
                let result = registry.call_reconnect(&mut self.store, &server).await;
                self.reply_after_events(result, reply).await
            }
        }
    }

    /// Answers a job whose guest call may have restarted servers
    /// (`set-roots`, `reconnect`) once the events it queued are published, so
    /// the caller sees those servers starting when it hears back; over a trap
    /// the reply waits in `interrupted` like any other.
    async fn reply_after_events(
        &mut self,
        result: wasmtime::Result<Result<(), String>>,
        reply: oneshot::Sender<Result<(), String>>,
    ) -> wasmtime::Result<Option<oneshot::Sender<()>>> {
        match result {
            Ok(result) => {
                self.publish_events().await?;
                let _ = reply.send(result);
                Ok(None)
            }
            Err(trap) => {
                self.interrupted = Some(Interrupted::Other(reply));
                Err(trap)
            }
        }
    }

    /// Cancels calls whose callers stopped waiting (dropped the future), in
    /// the next step.
    ///
    /// Looks at most once per [`ABANDON_SCAN`]: with a thousand calls in flight a
    /// scan on every turn of the loop cost a few percent of the whole runtime's CPU.
    fn cancel_abandoned(&mut self, batch: &mut Batch) {
        if self.pending.is_empty() || self.last_abandon_scan.elapsed() < ABANDON_SCAN {
            return;
        }
        self.last_abandon_scan = Instant::now();
        if !self.pending.values().any(|reply| reply.is_closed()) {
            return;
        }
        let abandoned: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, reply)| reply.is_closed())
            .map(|(call, _)| *call)
            .collect();
        for call in abandoned {
            self.pending.remove(&call);
            batch.cancel(call);
        }
    }

    async fn shutdown(&mut self) -> wasmtime::Result<()> {
        let registry = self.guest.mcpbox_runtime_registry();
        registry.call_shutdown(&mut self.store).await?;
        let turn = registry.call_wait(&mut self.store, 0).await?;
        self.forward(turn.downstream);
        self.publish(turn.events).await?;
        self.answer(turn.finished);
        self.publish_snapshots().await
    }

    async fn publish_snapshots(&mut self) -> wasmtime::Result<()> {
        // `servers`, then the tools' pages: counted as two.
        self.entered();
        self.entered();
        let servers = self
            .guest
            .mcpbox_runtime_registry()
            .call_servers(&mut self.store)
            .await?;
        let tools = instance::read_tools(
            self.guest.mcpbox_runtime_registry(),
            &mut self.store,
            &servers,
        )
        .await?;
        // Tools first: a reader that sees a server settled must see its tools.
        self.published.tools.send_replace(Arc::new(tools));
        self.published
            .servers
            .send_replace(Arc::new(servers.into_iter().map(Into::into).collect()));
        Ok(())
    }
}

/// Whether a caller's job is in the queue, or the runtime is closing: what the
/// driver's wait looks for. The queue itself, not [`Wake`]'s count: a caller
/// counts its job before it queues it, and a driver that saw the count in
/// between would take a turn with nothing to do. A caller rings the waker only
/// after it queued (`Readiness::job_queued`), so a driver that found the queue
/// empty and slept is woken.
fn job_waiting(jobs: &mpsc::UnboundedReceiver<Job>, wake: &Wake) -> bool {
    !jobs.is_empty() || wake.is_closed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller between counting its job and queuing it leaves the driver's
    /// wait nothing to find: a driver that looked at the count would take a
    /// turn with an empty queue.
    #[test]
    fn a_job_counted_but_not_yet_queued_is_not_waiting() {
        let (tx, rx) = mpsc::unbounded_channel();
        let wake = Wake::default();
        wake.queue(|| {
            assert!(wake.pending(), "counted");
            assert!(!job_waiting(&rx, &wake), "waiting before it was queued");
            let (reply, _) = oneshot::channel();
            tx.send(Job::Shutdown { reply })
                .map_err(|_| "the driver is gone")
        })
        .unwrap();
        assert!(job_waiting(&rx, &wake));
    }

    #[test]
    fn a_closing_runtime_is_waited_for_with_an_empty_queue() {
        let (_tx, rx) = mpsc::unbounded_channel::<Job>();
        let wake = Wake::default();
        assert!(!job_waiting(&rx, &wake));
        wake.close();
        assert!(job_waiting(&rx, &wake));
    }
}
