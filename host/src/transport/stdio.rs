//! Local servers as child processes speaking newline-delimited JSON on stdio.
//!
//! Each server runs in its own process group so that it and everything it
//! spawned can be stopped together: on close the group gets SIGTERM, then
//! SIGKILL after a grace period, and the child is always reaped (no zombies).
//! Three tasks serve a child: a writer (stdin), a reader (stdout, framed with a
//! size cap) and a supervisor (exit status, stopping). stderr is kept as a short
//! tail for error messages.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, mpsc, watch};

use super::endpoint::StdioSpec;
use super::framing::{Frame, read_frame};
use super::{Diagnostics, Inbound, Outgoing};
use crate::bindings::wit;

/// How many stderr lines are kept for diagnostics.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept, in bytes.
const STDERR_LINE_CAP: usize = 2048;
/// Messages read ahead of the guest; beyond this the reader stops reading and
/// the server blocks on its stdout, which bounds memory under a flood.
const INBOUND_QUEUE: usize = 1024;
/// Time between SIGTERM and SIGKILL when a server is stopped.
const GRACE: Duration = Duration::from_secs(2);
/// How long to wait for an exit status after a server closes its stdout.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(500);

/// The running parts of one stdio server, handed to [`super::Connection`].
pub(crate) struct Spawned {
    pub inbound: mpsc::Receiver<Inbound>,
    pub outbound: mpsc::UnboundedSender<Outgoing>,
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

/// Starts the server. Must be called inside a tokio runtime.
pub(crate) fn spawn(
    spec: &StdioSpec,
    max_message: usize,
    diagnostics: Arc<Mutex<Diagnostics>>,
) -> Result<Spawned, wit::TransportError> {
    let mut command = Command::new(&spec.command);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|e| {
        let place = spec
            .cwd
            .as_ref()
            .map(|c| format!(" in {c}"))
            .unwrap_or_default();
        wit::TransportError::Unreachable(format!("could not start `{}`{place}: {e}", spec.command))
    })?;
    let pgid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr), Some(pgid)) = (stdin, stdout, stderr, pgid)
    else {
        return Err(wit::TransportError::Io(
            "the child's pipes were not set up".into(),
        ));
    };

    let stop = Arc::new(Notify::new());
    let (exit_tx, exit_rx) = watch::channel(None);
    let (in_tx, in_rx) = mpsc::channel(INBOUND_QUEUE);
    let (out_tx, out_rx) = mpsc::unbounded_channel();

    tokio::spawn(supervise(
        child,
        pgid,
        stop.clone(),
        exit_tx,
        diagnostics.clone(),
    ));
    tokio::spawn(write_messages(stdin, out_rx));
    tokio::spawn(read_messages(
        stdout,
        max_message,
        in_tx,
        exit_rx,
        stop.clone(),
        diagnostics.clone(),
    ));
    tokio::spawn(read_stderr(stderr, diagnostics));

    Ok(Spawned {
        inbound: in_rx,
        outbound: out_tx,
        process: ProcessGuard { stop },
    })
}

/// Kills the whole group with SIGKILL if dropped while armed, which happens
/// when the tokio runtime shuts down with the server still running.
struct GroupKiller {
    pgid: Pid,
    armed: bool,
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        if self.armed {
            let _ = kill_process_group(self.pgid, Signal::KILL);
        }
    }
}

/// Waits for the child to exit, or stops it when asked; always reaps it and
/// clears the rest of its process group.
async fn supervise(
    mut child: Child,
    pgid: Pid,
    stop: Arc<Notify>,
    exit_tx: watch::Sender<Option<String>>,
    diagnostics: Arc<Mutex<Diagnostics>>,
) {
    let mut killer = GroupKiller { pgid, armed: true };
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
    // The leader is gone; anything it left behind in its group goes with it.
    let _ = kill_process_group(pgid, Signal::KILL);
    killer.armed = false;
    let described = match status {
        Ok(status) => describe(status),
        Err(e) => format!("could not be waited for: {e}"),
    };
    diagnostics
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .exit_status = Some(described.clone());
    let _ = exit_tx.send(Some(described));
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// Writes queued messages, one per line, batching whatever is queued into one flush.
async fn write_messages(stdin: ChildStdin, mut queue: mpsc::UnboundedReceiver<Outgoing>) {
    let mut writer = BufWriter::with_capacity(64 * 1024, stdin);
    while let Some(first) = queue.recv().await {
        let mut message = Some(first);
        while let Some(m) = message {
            if writer.write_all(m.message.as_bytes()).await.is_err()
                || writer.write_all(b"\n").await.is_err()
            {
                return;
            }
            message = queue.try_recv().ok();
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    // The connection was dropped: closing stdin tells a well-behaved server to exit.
    let _ = writer.shutdown().await;
}

/// Reads framed messages from stdout until it closes, then reports how the
/// server ended as the last item.
async fn read_messages(
    stdout: ChildStdout,
    max_message: usize,
    inbound: mpsc::Sender<Inbound>,
    mut exit: watch::Receiver<Option<String>>,
    stop: Arc<Notify>,
    diagnostics: Arc<Mutex<Diagnostics>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::new();
    let read_error = loop {
        let item = match read_frame(&mut reader, max_message, &mut buf).await {
            Ok(Frame::Line(line)) => match classify(line) {
                Line::Message(m) => Inbound::Message(m),
                Line::Blank => continue,
                Line::NotJson(text) => {
                    let mut d = diagnostics.lock().unwrap_or_else(|p| p.into_inner());
                    d.skipped_lines += 1;
                    d.push_stderr(format!("(stdout, skipped) {text}"));
                    continue;
                }
            },
            Ok(Frame::Oversized { size, id }) => {
                diagnostics
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .oversized_messages += 1;
                Inbound::TooLarge(wit::Oversized {
                    size,
                    cap: max_message as u64,
                    id,
                })
            }
            Ok(Frame::Eof) => break None,
            Err(e) => break Some(e),
        };
        if inbound.send(item).await.is_err() {
            return; // The connection is gone; nobody is listening.
        }
    };

    let still_running = tokio::time::timeout(EXIT_AFTER_EOF, exit.wait_for(Option::is_some))
        .await
        .is_err();
    let reason = if still_running {
        stop.notify_one();
        let how = match read_error {
            Some(e) => format!("failed to be read from ({e})"),
            None => "closed its stdout".to_owned(),
        };
        let _ = exit.wait_for(Option::is_some).await;
        format!("{how} while still running, so it was stopped")
    } else {
        let status = exit.borrow().clone().unwrap_or_default();
        format!("exited ({status})")
    };
    let _ = inbound.send(Inbound::Closed(reason)).await;
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
    let mut buf = Vec::new();
    loop {
        let line = match read_frame(&mut reader, STDERR_LINE_CAP, &mut buf).await {
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
