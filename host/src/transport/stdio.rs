//! Local servers as child processes speaking newline-delimited JSON on stdio.
//!
//! Each server runs in its own process group so that it and everything it
//! spawned can be stopped together: on close the group gets SIGTERM, then
//! SIGKILL after a grace period, and the child is always reaped (no zombies).
//! The child's stdin and stdout are [`Pipes`], written and read by the driver
//! thread that runs the guest itself, and registered with that thread's own
//! poll ([`super::readiness`]): no task sits between the guest and the server,
//! so a request and its answer cost no thread hand-over beyond the pipe's own
//! wake-up (measured: W2 in docs/PERFORMANCE.md). Two tokio tasks serve the
//! rest: a supervisor (exit status, stopping) and a stderr reader that keeps a
//! short tail for error messages; each wakes the driver when it is done, which
//! a closing connection waits for.
//!
//! Descendants that leave the process group (`setsid`) are found and stopped
//! by [`super::descendants`] when the server stops. [`Supervisors`] lets a
//! runtime's shutdown wait until every server it started is gone.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mio::unix::pipe;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::BufReader;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::descendants;
use super::endpoint::StdioSpec;
use super::framing::{Frame, LineFramer, read_frame};
use super::readiness::Readiness;
use super::{Diagnostics, Inbound};
use crate::bindings::wit;

/// How many stderr lines are kept for diagnostics.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept, in bytes.
const STDERR_LINE_CAP: usize = 2048;
/// Bytes read from stdout at a time. Nothing more is read until the guest has
/// taken what these held, so a flooding server blocks on its full pipe and
/// memory stays bounded.
const READ_CHUNK: usize = 64 * 1024;
/// Queued bytes that are written at once rather than at the end of the turn.
const WRITE_BATCH: usize = 64 * 1024;
/// How often the driver looks at a connection whose stdout ended, for the
/// time limits below (the exit status and the end of stderr wake it anyway).
pub(crate) const CLOSING_CHECK: Duration = Duration::from_millis(10);
/// Time between SIGTERM and SIGKILL when a server is stopped.
const GRACE: Duration = Duration::from_secs(2);
/// How long to wait for an exit status after a server closes its stdout.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(500);
/// How long to wait, once a server exited, for the rest of its stderr (its
/// last words are the most useful part of the error). A grandchild that keeps
/// the pipe open must not hold the error back for longer.
const STDERR_AFTER_EXIT: Duration = Duration::from_millis(200);

/// What confines a child: a prepared Landlock ruleset (Linux only).
#[cfg(target_os = "linux")]
pub(crate) type Confinement = super::sandbox::Prepared;
#[cfg(not(target_os = "linux"))]
pub(crate) type Confinement = std::convert::Infallible;

/// The running parts of one stdio server, handed to [`super::Connection`].
pub(crate) struct Spawned {
    pub pipes: Pipes,
    pub process: ProcessGuard,
}

/// Stops the server's process group when dropped.
pub(crate) struct ProcessGuard {
    stop: Arc<Notify>,
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

impl std::fmt::Debug for ProcessGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProcessGuard")
    }
}

/// The server processes of one runtime that are not stopped and reaped yet,
/// so that its shutdown can wait for them.
#[derive(Debug, Default)]
pub(crate) struct Supervisors {
    live: std::sync::atomic::AtomicUsize,
    idle: Notify,
}

impl Supervisors {
    fn enter(self: &Arc<Self>) -> Supervising {
        self.live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Supervising(self.clone())
    }

    /// Waits until every server process started so far is stopped and reaped
    /// (and its escaped descendants killed).
    pub async fn all_stopped(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.live.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// One supervisor at work; counted out when it ends, or is dropped with the
/// tokio runtime.
struct Supervising(Arc<Supervisors>);

impl Drop for Supervising {
    fn drop(&mut self) {
        if self
            .0
            .live
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            == 1
        {
            self.0.idle.notify_waiters();
        }
    }
}

/// Starts the server. Must be called inside a tokio runtime.
/// `sandbox`, when given, confines the child before it runs the command.
pub(crate) fn spawn(
    spec: &StdioSpec,
    max_message: usize,
    diagnostics: Arc<Mutex<Diagnostics>>,
    sandbox: Option<Confinement>,
    supervisors: &Arc<Supervisors>,
    readiness: Option<Arc<Readiness>>,
) -> Result<Spawned, wit::TransportError> {
    let marker = descendants::new_marker();
    // Before the fork: a subreaper then keeps all this server leaves behind in its tree.
    let adopted = descendants::is_subreaper();
    let mut command = Command::new(&spec.command);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        // Last, so a configuration cannot set it: it finds what the server leaves behind.
        .env(descendants::MARKER_VAR, &marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    if let Some(prepared) = sandbox {
        super::sandbox::confine_before_exec(&mut command, prepared);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = sandbox;
    let mut child = {
        // From fork to registering the pid, so the reaper never takes this
        // server's exit status from tokio (see `descendants`).
        let mut leaders = descendants::leaders();
        let child = command.spawn().map_err(|e| {
            let place = spec
                .cwd
                .as_ref()
                .map(|c| format!(" in {}", c.display()))
                .unwrap_or_default();
            wit::TransportError::Unreachable(format!(
                "could not start `{}`{place}: {e}",
                spec.command
            ))
        })?;
        if let Some(pid) = child.id() {
            leaders.get_or_insert_default().insert(pid as i32);
        }
        child
    };
    let pgid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr), Some(pgid)) = (stdin, stdout, stderr, pgid)
    else {
        return Err(wit::TransportError::Io(
            "the child's pipes were not set up".into(),
        ));
    };

    let pipe_error = |e: std::io::Error| {
        wit::TransportError::Io(format!("the child's pipes could not be set up: {e}"))
    };
    let stdin = pipe::Sender::from(stdin.into_owned_fd().map_err(pipe_error)?);
    stdin.set_nonblocking(true).map_err(pipe_error)?;
    let stdout = pipe::Receiver::from(stdout.into_owned_fd().map_err(pipe_error)?);
    stdout.set_nonblocking(true).map_err(pipe_error)?;
    let stop = Arc::new(Notify::new());
    let (exit_tx, exit_rx) = watch::channel(None);
    let diagnostics_for_stderr = diagnostics.clone();
    let diagnostics_for_supervisor = diagnostics.clone();
    let stop_for_supervisor = stop.clone();
    let supervising = supervisors.enter();

    let nudge = readiness.clone();
    tokio::spawn(async move {
        supervise(
            child,
            Leftovers {
                pgid,
                marker,
                adopted,
                armed: true,
            },
            stop_for_supervisor,
            exit_tx,
            diagnostics_for_supervisor,
            supervising,
            nudge.as_deref(),
        )
        .await;
    });
    let (stderr_tx, stderr_rx) = watch::channel(false);
    let nudge = readiness.clone();
    tokio::spawn(async move {
        read_stderr(stderr, diagnostics_for_stderr).await;
        let _ = stderr_tx.send(true);
        // A closing connection waits for the rest of stderr.
        if let Some(readiness) = nudge {
            readiness.nudge();
        }
    });

    Ok(Spawned {
        pipes: Pipes {
            stdin: Some(stdin),
            backlog: Vec::new(),
            written: 0,
            wrote_this_turn: false,
            write_error: None,
            stdout,
            drained: false,
            hung_up: false,
            readiness,
            framer: LineFramer::new(max_message),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            ended: None,
            exited_at: None,
            stop_sent: false,
            exit: exit_rx,
            stderr_done: stderr_rx,
            stop: stop.clone(),
            diagnostics,
            max_message,
        },
        process: ProcessGuard { stop },
    })
}

/// What a server may leave behind: its process group, and descendants that
/// left the group but carry its marker. Killed with SIGKILL if dropped while
/// armed, which happens when the tokio runtime shuts down with the server
/// still running (the supervisor is dropped mid-way).
struct Leftovers {
    pgid: Pid,
    marker: String,
    /// Started while this process was the subreaper (see `descendants::kill_marked`).
    adopted: bool,
    armed: bool,
}

impl Leftovers {
    /// Kills the group and, reading `/proc` on a blocking thread, the marked
    /// descendants outside it.
    async fn kill(&mut self) {
        let _ = kill_process_group(self.pgid, Signal::KILL);
        let (marker, adopted) = (self.marker.clone(), self.adopted);
        let _ =
            tokio::task::spawn_blocking(move || descendants::kill_marked(&marker, adopted)).await;
        self.armed = false;
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if self.armed {
            let _ = kill_process_group(self.pgid, Signal::KILL);
            descendants::kill_marked(&self.marker, self.adopted);
        }
    }
}

/// Waits for the child to exit, or stops it when asked; always reaps it and
/// clears the rest of its process group and its marked descendants.
async fn supervise(
    mut child: Child,
    mut leftovers: Leftovers,
    stop: Arc<Notify>,
    exit_tx: watch::Sender<Option<String>>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    _supervising: Supervising,
    nudge: Option<&Readiness>,
) {
    let pgid = leftovers.pgid;
    let status = tokio::select! {
        status = child.wait() => status,
        () = stop.notified() => {
            let _ = kill_process_group(pgid, Signal::TERM);
            match tokio::time::timeout(GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    let _ = kill_process_group(pgid, Signal::KILL);
                    child.wait().await
                }
            }
        }
    };
    // Reaped by tokio: from now on the pid may belong to anyone.
    descendants::forget_leader(pgid.as_raw_nonzero().get());
    // The leader is gone; anything it left behind goes with it. The group at
    // once; the marked descendants once the exit is reported (reading /proc
    // takes a millisecond or so), before this supervisor counts as done.
    let _ = kill_process_group(pgid, Signal::KILL);
    let described = match status {
        Ok(status) => describe(status),
        Err(e) => format!("could not be waited for: {e}"),
    };
    diagnostics
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .exit_status = Some(described.clone());
    let _ = exit_tx.send(Some(described));
    // A closing connection waits for the exit status.
    if let Some(readiness) = nudge {
        readiness.nudge();
    }
    leftovers.kill().await;
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// A child's stdin and stdout, for the connection to write and read in place.
pub(crate) struct Pipes {
    /// `None` once writing failed.
    stdin: Option<pipe::Sender>,
    /// Bytes queued by `send`, or that a full pipe did not take yet, from
    /// `backlog[written..]`.
    backlog: Vec<u8>,
    written: usize,
    /// A message went out since the guest last received or waited: the next
    /// ones wait for that, to go out together.
    wrote_this_turn: bool,
    /// Why writing stopped, once it did.
    write_error: Option<String>,
    stdout: pipe::Receiver,
    /// The last read of stdout emptied it (it left room in the chunk, or
    /// found nothing). The driver's poll is edge-triggered: until then the pipe
    /// may hold bytes no event announces.
    drained: bool,
    /// The poll said stdout's writer is gone: a read that empties the pipe is
    /// not the last, the end still is to be read (no event will announce it).
    hung_up: bool,
    /// The driver thread's poll, which the pipes are registered with.
    readiness: Option<Arc<Readiness>>,
    framer: LineFramer,
    chunk: Box<[u8]>,
    /// When stdout ended, and the read error that ended it, if any.
    ended: Option<(Instant, Option<String>)>,
    /// When the exit status was first seen after stdout ended.
    exited_at: Option<Instant>,
    /// The server was told to stop because it closed stdout but kept running.
    stop_sent: bool,
    exit: watch::Receiver<Option<String>>,
    /// True once stderr was read to its end.
    stderr_done: watch::Receiver<bool>,
    stop: Arc<Notify>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    max_message: usize,
}

impl std::fmt::Debug for Pipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipes")
            .field("backlog", &self.backlog.len())
            .field("ended", &self.ended.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Pipes {
    /// What is still queued goes out if the pipe has room (a `cancelled`
    /// notification sent just before the connection is closed, say).
    fn drop(&mut self) {
        self.flush();
        if let Some(readiness) = &self.readiness {
            readiness.deregister(&mut self.stdout);
            if let Some(stdin) = &mut self.stdin {
                readiness.deregister(stdin);
            }
        }
    }
}

impl Pipes {
    /// Sends one message and its newline; never blocks.
    ///
    /// The first message since the guest last received from or waited on this
    /// connection is written at once, so the server starts on it while the guest
    /// finishes its turn. Later ones are queued and written together when the
    /// guest next receives or waits (a thousand calls started in one turn cost
    /// two writes, and wake the server twice, not a thousand times), or at once
    /// past [`WRITE_BATCH`] bytes.
    pub(crate) fn send(&mut self, message: &str) -> Result<(), wit::TransportError> {
        if let Some(e) = &self.write_error {
            return Err(wit::TransportError::Closed(format!(
                "stopped accepting messages ({e})"
            )));
        }
        self.backlog.extend_from_slice(message.as_bytes());
        self.backlog.push(b'\n');
        if !std::mem::replace(&mut self.wrote_this_turn, true)
            || self.backlog.len() - self.written >= WRITE_BATCH
        {
            self.flush();
        }
        Ok(())
    }

    /// Sends messages that a step returned together: one write for all of
    /// them (what the pipe does not take goes out as it makes room).
    pub(crate) fn send_all(&mut self, messages: &[String]) {
        if self.write_error.is_some() {
            return;
        }
        for message in messages {
            self.backlog.extend_from_slice(message.as_bytes());
            self.backlog.push(b'\n');
        }
        self.flush();
    }

    /// Registers the pipes with the driver's poll under `connection`'s number.
    pub(crate) fn register(&mut self, connection: u64) -> std::io::Result<()> {
        match &self.readiness {
            Some(readiness) => {
                readiness.register(connection, &mut self.stdout, self.stdin.as_mut())
            }
            None => Ok(()),
        }
    }

    /// Whether the driver must read this connection again before it waits:
    /// stdout may hold bytes no event will announce.
    pub(crate) fn due(&self) -> bool {
        !self.drained && self.ended.is_none()
    }

    /// Whether the last read emptied stdout: nothing more until the poll
    /// announces it.
    pub(crate) fn drained(&self) -> bool {
        self.drained
    }

    /// The poll said stdout's writer is gone: read on to the end.
    pub(crate) fn hung_up(&mut self) {
        self.hung_up = true;
        self.drained = false;
    }

    /// Whether stdout ended and the connection waits for the exit status or
    /// the rest of stderr, which the driver is nudged for (or looks at again
    /// after [`CLOSING_CHECK`]).
    pub(crate) fn closing(&self) -> bool {
        self.ended.is_some()
    }

    /// Writes what the backlog holds until the pipe is full.
    fn flush(&mut self) {
        while let Some(stdin) = &mut self.stdin {
            if self.written == self.backlog.len() {
                self.written = 0;
                self.backlog.clear();
                // A large message once does not keep a large buffer for good.
                self.backlog.shrink_to(WRITE_BATCH);
                return;
            }
            match stdin.write(&self.backlog[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.broke(&e),
            }
        }
    }

    fn broke(&mut self, e: &std::io::Error) {
        self.write_error = Some(format!("writing to its stdin failed: {e}"));
        if let (Some(readiness), Some(stdin)) = (&self.readiness, &mut self.stdin) {
            readiness.deregister(stdin);
        }
        self.stdin = None;
        self.backlog = Vec::new();
        self.written = 0;
    }

    /// Reads what stdout has now, without waiting, until `stash` has something.
    pub(crate) fn fill(&mut self, stash: &mut VecDeque<Inbound>) {
        self.flush();
        self.wrote_this_turn = false;
        while stash.is_empty() && self.ended.is_none() {
            self.drained = false;
            match self.stdout.read(&mut self.chunk) {
                Ok(0) => {
                    self.frame(None, stash);
                    self.end(None);
                }
                Ok(n) => {
                    self.frame(Some(n), stash);
                    // A read that left room in the chunk emptied the pipe, and
                    // the poll's registration is edge-triggered: the next bytes
                    // are announced, so no read waits to hear `WouldBlock`
                    // before then (tokio reads its pipes and sockets so too).
                    // Not so once the writer is gone: its end is announced with
                    // its last bytes or not at all, so the reads go on to it.
                    if n < self.chunk.len() && !self.hung_up {
                        self.drained = true;
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.drained = true;
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.end(Some(e.to_string())),
            }
        }
        if stash.is_empty()
            && let Some((at, _)) = self.ended
        {
            self.closing_now(at, stash);
        }
    }

    /// stdout ended (with a read error, or none).
    fn end(&mut self, error: Option<String>) {
        self.ended = Some((Instant::now(), error));
        // At its end a pipe stays readable: the driver's poll is done with it.
        if let Some(readiness) = &self.readiness {
            readiness.deregister(&mut self.stdout);
        }
    }

    /// stdout ended at `at`: says how the connection closed once that is
    /// known, without waiting. The same rules as [`Pipes::closed`], which waits:
    /// the exit status within [`EXIT_AFTER_EOF`] (else the server is stopped),
    /// then the rest of stderr within [`STDERR_AFTER_EXIT`].
    fn closing_now(&mut self, at: Instant, stash: &mut VecDeque<Inbound>) {
        let now = Instant::now();
        let status = self.exit.borrow().clone();
        match status {
            Some(status) => {
                if self.stop_sent {
                    stash.push_back(Inbound::Closed(self.stopped_reason()));
                    return;
                }
                let exited_at = *self.exited_at.get_or_insert(now);
                if *self.stderr_done.borrow() || now >= exited_at + STDERR_AFTER_EXIT {
                    stash.push_back(Inbound::Closed(exit_reason(&status)));
                }
            }
            None if now >= at + EXIT_AFTER_EOF && !self.stop_sent => {
                self.stop_sent = true;
                self.stop.notify_one();
            }
            None => {}
        }
    }

    /// How a server that closed its stdout but kept running is reported.
    fn stopped_reason(&self) -> String {
        let how = match self.ended.as_ref().and_then(|(_, e)| e.as_deref()) {
            Some(e) => format!("failed to be read from ({e})"),
            None => "closed its stdout".to_owned(),
        };
        format!("{how} while still running, so it was stopped")
    }

    /// Waits until `stash` has something: a message, an oversized one, or how
    /// the connection ended. Cancel-safe: nothing read is lost if dropped.
    pub(crate) async fn ready(&mut self, stash: &mut VecDeque<Inbound>) {
        loop {
            self.fill(stash);
            if !stash.is_empty() {
                return;
            }
            if let Some((at, _)) = &self.ended {
                let at = *at;
                return self.closed(at, stash).await;
            }
            // The guest waits here only while it polls remote servers too (its
            // step blocks): copies of the pipes' descriptors are watched by
            // tokio's reactor for as long.
            let backlog = self.written < self.backlog.len();
            let stdin = self
                .stdin
                .as_ref()
                .filter(|_| backlog)
                .map(|stdin| stdin.as_fd().try_clone_to_owned());
            let writable = async {
                match stdin {
                    Some(fd) => {
                        tokio::net::unix::pipe::Sender::from_owned_fd(fd?)?
                            .writable()
                            .await
                    }
                    None => std::future::pending().await,
                }
            };
            let stdout = self.stdout.as_fd().try_clone_to_owned();
            let readable = async {
                tokio::net::unix::pipe::Receiver::from_owned_fd(stdout?)?
                    .readable()
                    .await
            };
            let ready = tokio::select! {
                readable = readable => readable,
                // Room in stdin: the backlog is written by the next `fill`.
                writable = writable => writable,
            };
            if let Err(e) = ready {
                self.end(Some(e.to_string()));
            }
        }
    }

    /// stdout ended at `at`: waits a little for the exit status, and stops a
    /// server that keeps running without its stdout.
    async fn closed(&mut self, at: Instant, stash: &mut VecDeque<Inbound>) {
        let exited =
            tokio::time::timeout_at(at + EXIT_AFTER_EOF, self.exit.wait_for(Option::is_some))
                .await
                .is_ok();
        let reason = if exited && !self.stop_sent {
            let rest_of_stderr = self.stderr_done.wait_for(|done| *done);
            let _ = tokio::time::timeout(STDERR_AFTER_EXIT, rest_of_stderr).await;
            exit_reason(self.exit.borrow().as_deref().unwrap_or_default())
        } else {
            if !std::mem::replace(&mut self.stop_sent, true) {
                self.stop.notify_one();
            }
            let _ = self.exit.wait_for(Option::is_some).await;
            self.stopped_reason()
        };
        stash.push_back(Inbound::Closed(reason));
    }

    /// Frames the first `n` bytes of the chunk (`None`: the end of the stream).
    fn frame(&mut self, n: Option<usize>, stash: &mut VecDeque<Inbound>) {
        let Pipes {
            framer,
            chunk,
            diagnostics,
            max_message,
            ..
        } = self;
        let mut deliver = |frame: Frame| {
            let item = match frame {
                Frame::Line(line) => match classify(line) {
                    Line::Message(m) => Inbound::Message(m),
                    Line::Blank => return,
                    Line::NotJson(text) => {
                        let mut d = diagnostics.lock().unwrap_or_else(|p| p.into_inner());
                        d.skipped_lines += 1;
                        d.push_stderr(format!("(stdout, skipped) {text}"));
                        return;
                    }
                },
                Frame::Oversized { size, head, tail } => {
                    diagnostics
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .oversized_messages += 1;
                    Inbound::TooLarge(wit::Oversized {
                        size,
                        cap: *max_message as u64,
                        head,
                        tail,
                    })
                }
                Frame::Eof => return,
            };
            stash.push_back(item);
        };
        let Some(n) = n else {
            return deliver(framer.finish());
        };
        let mut bytes = &chunk[..n];
        while !bytes.is_empty() {
            let (used, frame) = framer.feed(bytes);
            bytes = &bytes[used..];
            if let Some(frame) = frame {
                deliver(frame);
            }
        }
    }
}

/// How a server that exited is reported, for example "exited (exit code 3)".
fn exit_reason(status: &str) -> String {
    format!("exited ({status})")
}

enum Line {
    Message(String),
    Blank,
    NotJson(String),
}

/// Lines that cannot be JSON-RPC (a server logging to stdout by mistake) are
/// skipped here; everything else is for the guest to parse.
fn classify(line: Vec<u8>) -> Line {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        None => Line::Blank,
        Some(b'{' | b'[') => Line::Message(match String::from_utf8(line) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
        Some(_) => {
            let mut text = String::from_utf8_lossy(&line).into_owned();
            truncate(&mut text, 200);
            Line::NotJson(text)
        }
    }
}

async fn read_stderr(stderr: tokio::process::ChildStderr, diagnostics: Arc<Mutex<Diagnostics>>) {
    let mut reader = BufReader::new(stderr);
    let mut framer = LineFramer::new(STDERR_LINE_CAP);
    loop {
        let line = match read_frame(&mut reader, &mut framer).await {
            Ok(Frame::Line(line)) => String::from_utf8_lossy(&line).into_owned(),
            Ok(Frame::Oversized { size, .. }) => {
                format!("[a stderr line of {size} bytes, not kept]")
            }
            Ok(Frame::Eof) | Err(_) => return,
        };
        if !line.trim().is_empty() {
            diagnostics
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_stderr(line);
        }
    }
}

impl Diagnostics {
    /// Keeps `line` in the tail, dropping the oldest beyond [`STDERR_LINES`].
    pub(crate) fn push_stderr(&mut self, line: String) {
        if self.stderr_tail.len() == STDERR_LINES {
            self.stderr_tail.pop_front();
        }
        self.stderr_tail.push_back(line);
    }
}

fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

/// Keeps the ring type visible to the parent module.
pub(crate) type StderrTail = VecDeque<String>;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A server that printed a line and exited before the driver's poll
    /// looked: the poll announces its line and its end in one event, and the
    /// connection reads on to the end, though the read that took the line
    /// emptied the pipe.
    #[tokio::test]
    async fn a_server_that_wrote_and_exited_before_the_poll_looked_is_read_to_its_end() {
        let (mut waiter, readiness) = Readiness::new(Duration::ZERO).unwrap();
        let readiness = Arc::new(readiness);
        let spec = StdioSpec {
            command: "sh".into(),
            args: vec!["-c".into(), r#"printf '{"a":1}\n'"#.into()],
            env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            cwd: None,
            sandbox: None,
        };
        let supervisors = Arc::new(Supervisors::default());
        let Spawned { mut pipes, process } = spawn(
            &spec,
            1 << 20,
            Arc::default(),
            None,
            &supervisors,
            Some(readiness.clone()),
        )
        .unwrap();
        // Its line and its end are both in the pipe before the poll looks.
        let mut exit = pipes.exit.clone();
        exit.wait_for(Option::is_some).await.unwrap();
        pipes.register(7).unwrap();
        let mut due = Vec::new();
        waiter.wait(&readiness, || false, Duration::from_secs(5), &mut due);
        // Its stdout's event, and its stdin's (the server closed its end).
        due.dedup();
        assert_eq!(due, [7]);
        assert_eq!(
            waiter.take_hung_up(),
            [7],
            "the event says the writer is gone"
        );
        pipes.hung_up();
        let mut stash = VecDeque::new();
        pipes.fill(&mut stash);
        assert!(matches!(stash.pop_front(), Some(Inbound::Message(m)) if m == r#"{"a":1}"#));
        // No event will come for the end: the connection must still be due.
        assert!(pipes.due(), "the end was left unread");
        pipes.fill(&mut stash);
        assert!(pipes.closing(), "the end was not read");
        drop(process);
    }
}
