//! The gateway's stdio client served by the driver thread itself, when the
//! client's stdin and stdout are file descriptors the thread can poll (a pipe
//! or a socket): [`crate::Runtime::serve_stdio_fds`], what `mcpbox serve` uses.
//!
//! The driver registers both descriptors with its own poll
//! ([`crate::transport::readiness`]) beside the upstream servers' pipes, reads
//! complete lines there and hands them to the guest in the turn's batch, and
//! writes what the gateway sends right after the step, without blocking: what
//! a client does not read yet waits in a buffer (and the driver waits for the
//! descriptor to be writable), and a client that leaves more than
//! [`OUTPUT_LIMIT`] unread is cut off. No task and no channel sit between the
//! client and the guest, so a message costs no thread hand-over beyond the
//! pipe's own wake-up. The rules are those of [`super::stdio`]: blank lines
//! skipped, invalid UTF-8 replaced, oversized lines dropped and said so, the
//! drain when the input ends, and the cancellation upstream of what the client
//! left open when serving ends ([`Detach`] when the serving future is dropped).
//!
//! While the guest's steps block (it waits on remote servers' pollables, which
//! only it holds), the driver's poll is not asked; the input is then watched by
//! a tokio registration ([`ClientWatch`]) that ends the guest's wait through
//! its wake signal. It exists only while steps block: otherwise each message
//! would also wake a tokio worker. Output a slow client left waiting goes on
//! at the next turn then (within a second), not as soon as it has room.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use mio::unix::pipe;
use tokio::sync::oneshot;

use super::ServeError;
use super::stdio::{DRAIN, MAX_LINE};
use crate::Runtime;
use crate::bindings::{gateway, wit};
use crate::driver::Job;
use crate::transport::framing::{Frame, LineFramer};
use crate::transport::readiness::Readiness;

/// Bytes read from the client at a time.
const READ_CHUNK: usize = 64 * 1024;
/// Bytes read from the client in one turn at most; the rest in the next.
const READ_PER_TURN: usize = 16 * READ_CHUNK;
/// The most output a client may leave unread before it is cut off: twice the
/// longest line it may send, room for a few of the largest results.
pub(crate) const OUTPUT_LIMIT: usize = 2 * MAX_LINE;

/// How serving ended, for the future that waits on it.
pub(crate) type Done = oneshot::Sender<Result<(), ServeError>>;

/// The stdio client the driver serves on its own poll.
pub(crate) struct PolledClient {
    /// `None` once the input ended.
    input: Option<pipe::Receiver>,
    output: pipe::Sender,
    /// The driver's poll, once both descriptors are registered with it.
    readiness: Option<Arc<Readiness>>,
    /// The last read emptied the input (it left room in the chunk, or found
    /// nothing); the poll is edge-triggered, so until then it may hold bytes no
    /// event announces.
    drained: bool,
    /// The input's writer is gone: it is read to its end, which no event
    /// announces after its last bytes.
    hung_up: bool,
    framer: LineFramer,
    chunk: Box<[u8]>,
    /// What the gateway sent that the client did not take yet, from `out[written..]`.
    out: Vec<u8>,
    written: usize,
    /// [`OUTPUT_LIMIT`], smaller in tests.
    output_limit: usize,
    profile: Option<String>,
    session: Option<u64>,
    open: BTreeSet<u64>,
    next_exchange: u64,
    /// Set once the input ended: answering goes on until then.
    draining: Option<Instant>,
    /// Serving ends in the next turn, with this outcome.
    ending: Option<Result<(), ServeError>>,
    done: Option<Done>,
}

impl std::fmt::Debug for PolledClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolledClient")
            .field("open", &self.open.len())
            .field("unread", &(self.out.len() - self.written))
            .finish_non_exhaustive()
    }
}

impl Drop for PolledClient {
    fn drop(&mut self) {
        // Before the descriptors close: the process's own stdin and stdout
        // keep what they name open, and with it a registration left behind.
        if let Some(readiness) = self.readiness.take() {
            if let Some(input) = &mut self.input {
                readiness.deregister(input);
            }
            readiness.deregister(&mut self.output);
        }
        // Whatever ended it, the future waiting on it returns.
        if let Some(done) = self.done.take() {
            let _ = done.send(self.ending.take().unwrap_or(Ok(())));
        }
    }
}

impl PolledClient {
    /// Takes the client's input and output, made non-blocking.
    pub(crate) fn new(
        input: OwnedFd,
        output: OwnedFd,
        profile: Option<String>,
        done: Done,
    ) -> std::io::Result<Self> {
        let input = pipe::Receiver::from(input);
        input.set_nonblocking(true)?;
        let output = pipe::Sender::from(output);
        output.set_nonblocking(true)?;
        Ok(PolledClient {
            input: Some(input),
            output,
            readiness: None,
            drained: false,
            hung_up: false,
            framer: LineFramer::new(MAX_LINE),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            out: Vec::new(),
            written: 0,
            output_limit: OUTPUT_LIMIT,
            profile,
            session: None,
            open: BTreeSet::new(),
            next_exchange: 1,
            draining: None,
            ending: None,
            done: Some(done),
        })
    }

    /// Registers the input (readable) and the output (writable) with the
    /// driver's poll.
    pub(crate) fn register(&mut self, readiness: &Arc<Readiness>) -> std::io::Result<()> {
        readiness.register_client(self.input.as_mut(), &mut self.output)?;
        self.readiness = Some(readiness.clone());
        Ok(())
    }

    /// The poll said the input or the output is ready; `hung_up`, that the
    /// input's writer is gone, so that it is read to its end (see
    /// `Waiter::take_hung_up`).
    pub(crate) fn ready(&mut self, hung_up: bool) {
        self.drained = false;
        self.hung_up |= hung_up;
        self.flush();
    }

    /// Whether the driver must turn again before it waits: the input may hold
    /// bytes, or serving is to end.
    pub(crate) fn due(&self) -> bool {
        (self.input.is_some() && !self.drained)
            || self.ending.is_some()
            || (self.draining.is_some() && self.open.is_empty())
    }

    /// When the drain ends, if the input ended.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.draining.map(|since| since + DRAIN)
    }

    /// Whether the input is open.
    pub(crate) fn reading(&self) -> bool {
        self.input.is_some()
    }

    /// A watch on the input for the time the guest's steps block, while the
    /// input is open. Must be called inside a tokio runtime.
    pub(crate) fn watch(&self) -> Option<ClientWatch> {
        let fd = self.input.as_ref()?.as_fd().try_clone_to_owned().ok()?;
        let fd = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(fd).ok()?;
        Some(ClientWatch { fd })
    }

    /// Reads what the input has now, without waiting: the lines become jobs
    /// of this turn.
    pub(crate) fn read(&mut self, jobs: &mut Vec<Job>) {
        let mut budget = READ_PER_TURN;
        while let Some(input) = &mut self.input {
            if self.drained || self.ending.is_some() {
                return;
            }
            if budget == 0 {
                // Stays due: the next turn reads on.
                return;
            }
            match input.read(&mut self.chunk) {
                Ok(0) => {
                    let last = self.framer.finish();
                    self.frame(last, jobs);
                    self.input_ended();
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    let mut at = 0;
                    while at < n {
                        let (used, frame) = self.framer.feed(&self.chunk[at..n]);
                        at += used;
                        if let Some(frame) = frame {
                            self.frame(frame, jobs);
                        }
                    }
                    // Room left in the chunk: the input is empty until the
                    // poll (edge-triggered) announces more, as in `Pipes::fill`
                    // (and, as there, not its end once its writer is gone).
                    if n < self.chunk.len() && !self.hung_up {
                        self.drained = true;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.drained = true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.end(Err(e.into())),
            }
        }
    }

    fn input_ended(&mut self) {
        if let (Some(readiness), Some(input)) = (&self.readiness, &mut self.input) {
            readiness.deregister(input);
        }
        self.input = None;
        self.draining = Some(Instant::now());
    }

    fn frame(&mut self, frame: Frame, jobs: &mut Vec<Job>) {
        match frame {
            Frame::Line(line) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                let exchange = self.next_exchange;
                self.next_exchange += 1;
                self.open.insert(exchange);
                let text = match String::from_utf8(line) {
                    Ok(text) => text,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                };
                jobs.push(Job::Downstream(gateway::Inbound {
                    session: self.session,
                    exchange,
                    kind: gateway::TransportKind::Stdio,
                    profile: self.profile.clone(),
                    headers: Vec::new(),
                    text,
                }));
            }
            Frame::Oversized { size, .. } => {
                eprintln!(
                    "mcpbox serve: dropped a message of {size} bytes from the client \
                     (the limit is {MAX_LINE} bytes)"
                );
            }
            Frame::Eof => {}
        }
    }

    /// Takes the gateway's signals: messages are written at once, as far as
    /// the client takes them.
    pub(crate) fn deliver(&mut self, signals: Vec<wit::DownstreamSignal>) {
        for signal in signals {
            match signal {
                wit::DownstreamSignal::Message(m) => {
                    if self.ending.is_none() {
                        self.out.extend_from_slice(m.text.as_bytes());
                        self.out.push(b'\n');
                    }
                }
                wit::DownstreamSignal::End(end) => {
                    self.open.remove(&end.exchange);
                }
                wit::DownstreamSignal::SessionOpened(s) => {
                    self.session = Some(s.session);
                }
            }
        }
        self.flush();
        let unread = self.out.len() - self.written;
        if unread > self.output_limit && self.ending.is_none() {
            let limit = self.output_limit;
            self.end(Err(ServeError::Io(std::io::Error::other(format!(
                "the client did not read its output: {unread} bytes waited for it \
                 (the limit is {limit} bytes); it was cut off"
            )))));
        }
    }

    /// The guest was replaced: what it was handed up to `through` is lost.
    pub(crate) fn restarted(&mut self, why: &str, through: u64) {
        eprintln!("mcpbox serve: {why}; the session carries on, requests in flight were lost");
        self.open.retain(|x| *x > through);
    }

    /// The runtime stopped: every session and exchange is gone.
    pub(crate) fn stopped(&mut self, why: &str) {
        eprintln!("mcpbox serve: {why}");
        self.session = None;
        self.open.clear();
        self.end(Ok(()));
    }

    /// Serving ends in the next turn, with `outcome` (the first one set).
    pub(crate) fn end(&mut self, outcome: Result<(), ServeError>) {
        if self.ending.is_none() {
            self.ending = Some(outcome);
        }
    }

    /// Writes what waits until the output is full.
    fn flush(&mut self) {
        while self.written < self.out.len() && self.ending.is_none() {
            match self.output.write(&self.out[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.end(Err(e.into())),
            }
        }
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
            // A large message once does not keep a large buffer for good.
            self.out.shrink_to(READ_CHUNK);
        }
    }

    /// Whether serving is over (an error, the runtime stopped, the drain is
    /// done or ran out of time): the jobs that close what the client left
    /// open are added, and the client is to be dropped.
    pub(crate) fn finished(&mut self, jobs: &mut Vec<Job>) -> bool {
        if self.ending.is_none() {
            let Some(since) = self.draining else {
                return false;
            };
            if !self.open.is_empty() {
                if since.elapsed() < DRAIN {
                    return false;
                }
                eprintln!(
                    "mcpbox serve: the input ended and {} request(s) were not answered \
                     within {} s: cancelled",
                    self.open.len(),
                    DRAIN.as_secs()
                );
            }
            self.ending = Some(Ok(()));
        }
        self.close(jobs);
        true
    }

    /// The jobs that close the client's open exchanges and its session, which
    /// cancels what it left running upstream.
    pub(crate) fn close(&mut self, jobs: &mut Vec<Job>) {
        jobs.extend(
            std::mem::take(&mut self.open)
                .into_iter()
                .map(Job::ExchangeClosed),
        );
        if let Some(session) = self.session.take() {
            jobs.push(Job::SessionClosed(session));
        }
    }
}

/// Watches the client's input from tokio while the guest's steps block, so
/// that the guest's wake signal fires when a line comes (see the module docs).
#[derive(Debug)]
pub(crate) struct ClientWatch {
    /// A duplicate of the input's descriptor (a pipe or a socket), registered
    /// with tokio's reactor; never read through.
    fd: tokio::net::unix::pipe::Receiver,
}

impl ClientWatch {
    /// Returns once the input had something to read (or ended) since the
    /// last time; the driver's next read finds out which.
    pub(crate) async fn readable(&self) {
        if self.fd.ready(tokio::io::Interest::READABLE).await.is_err() {
            return std::future::pending().await;
        }
        // Taken: the next wait is for what comes after (the driver reads
        // through its own descriptor, so this one never finds it empty).
        let _ = self
            .fd
            .try_io(|| Err::<(), _>(std::io::Error::from(ErrorKind::WouldBlock)));
    }
}

/// Closes what the client left open when the serving future is dropped (a
/// signal ends `mcpbox serve`, say): the driver cancels it upstream.
pub(super) struct Detach<'a> {
    pub runtime: &'a Runtime,
    pub armed: bool,
}

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.runtime.submit(Job::DetachStdio);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> (PolledClient, std::io::PipeWriter, std::io::PipeReader) {
        let (input_read, input_write) = std::io::pipe().expect("a pipe");
        let (output_read, output_write) = std::io::pipe().expect("a pipe");
        let (done, _) = oneshot::channel();
        let client = PolledClient::new(input_read.into(), output_write.into(), None, done)
            .expect("a client");
        (client, input_write, output_read)
    }

    /// The `read` system calls this thread made so far (`syscr`).
    fn reads_of_this_thread() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").expect("task I/O accounting");
        io.lines()
            .find_map(|line| line.strip_prefix("syscr:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("a syscr line")
    }

    #[test]
    fn a_line_that_leaves_room_in_the_chunk_is_read_with_one_read() {
        let (mut client, mut input, _output) = client();
        input.write_all(b"{\"a\":1}\n").unwrap();
        // Reading the counter costs reads of its own: as many each time.
        let first = reads_of_this_thread();
        let own = reads_of_this_thread() - first;
        let before = reads_of_this_thread();
        let mut jobs = Vec::new();
        client.read(&mut jobs);
        let reads = reads_of_this_thread() - before - own;
        assert_eq!(jobs.len(), 1);
        assert_eq!(reads, 1, "no second read to hear WouldBlock");
        // Empty until the poll says otherwise; then read again.
        assert!(!client.due());
        input.write_all(b"{\"b\":2}\n").unwrap();
        client.ready(false);
        client.read(&mut jobs);
        assert_eq!(jobs.len(), 2);
    }

    /// A client that wrote its last line and closed its end before the
    /// driver's poll looked: the poll announces both in one event, and the
    /// input is read on to its end though the read that took the line left
    /// room in the chunk.
    #[test]
    fn an_input_that_ended_before_the_poll_looked_is_read_to_its_end() {
        let (mut client, mut input, _output) = client();
        let (mut waiter, readiness) = Readiness::new(std::time::Duration::ZERO).unwrap();
        let readiness = Arc::new(readiness);
        client.register(&readiness).unwrap();
        input.write_all(b"{\"a\":1}\n").unwrap();
        drop(input);
        let mut due = Vec::new();
        waiter.wait(
            &readiness,
            || false,
            std::time::Duration::from_secs(5),
            &mut due,
        );
        assert_eq!(
            waiter.take_client(),
            Some(true),
            "the event says the writer is gone"
        );
        client.ready(true);
        let mut jobs = Vec::new();
        client.read(&mut jobs);
        assert_eq!(jobs.len(), 1);
        // No event will come for the end: it is read now, or the client is still due.
        if client.reading() {
            assert!(client.due(), "the end was left unread");
            client.read(&mut jobs);
        }
        assert!(!client.reading(), "the end was not read");
    }

    #[test]
    fn lines_become_jobs_and_blank_ones_are_skipped() {
        let (mut client, mut input, _output) = client();
        input
            .write_all(b"{\"a\":1}\n\n  \n{\"b\":\xff}\r\n")
            .unwrap();
        let mut jobs = Vec::new();
        client.read(&mut jobs);
        let texts: Vec<_> = jobs
            .iter()
            .map(|j| match j {
                Job::Downstream(i) => (i.exchange, i.text.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                (1, "{\"a\":1}".to_owned()),
                (2, "{\"b\":\u{fffd}}".to_owned())
            ]
        );
        assert!(
            !client.due(),
            "the read left room in the chunk: the input is empty"
        );
    }

    #[test]
    fn a_client_that_does_not_read_is_cut_off_past_the_limit() {
        let (mut client, _input, _output) = client();
        client.output_limit = 1 << 20;
        let big = "x".repeat(1 << 18);
        for _ in 0..5 {
            client.deliver(vec![wit::DownstreamSignal::Message(
                wit::DownstreamMessage {
                    target: wit::DownstreamTarget::Exchange(1),
                    text: big.clone(),
                },
            )]);
        }
        assert!(client.due());
        let mut jobs = Vec::new();
        assert!(client.finished(&mut jobs));
        let Some(Err(e)) = client.ending.take() else {
            panic!("not cut off");
        };
        assert!(e.to_string().contains("did not read its output"), "{e}");
    }
}
