//! The driver thread's own readiness: one `mio::Poll` (epoll, kqueue) on which
//! the driver waits for every stdio server's pipes and for callers' jobs.
//!
//! The driver thread owns the [`mio::Poll`]; everything else holds a
//! [`Readiness`]: the registry, which each stdio connection's pipes are
//! registered with under the connection's number, and a [`mio::Waker`], which
//! a caller that queued a job uses only while the driver sleeps (a caller
//! beside a busy driver makes no system call). The gateway's stdio client,
//! when the driver serves it itself, is registered there too
//! ([`crate::gateway`]'s `stdio_fds`). Registrations are
//! edge-triggered, so a connection whose pipe may still hold bytes stays due
//! (`Connection::due`) until a read finds it empty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mio::{Events, Interest, Poll, Registry, Token, Waker};

/// The waker's token; a connection's token is its number, which never gets
/// this high.
const WAKER: Token = Token(usize::MAX);

/// The gateway's stdio client's token (its input and output alike).
const CLIENT: Token = Token(usize::MAX - 2);

/// What callers and connections share with the driver's poll.
#[derive(Debug)]
pub(crate) struct Readiness {
    registry: Registry,
    waker: Waker,
    /// The driver is about to wait, or waits, in [`Waiter::wait`].
    sleeping: AtomicBool,
}

/// The driver's side: the poll itself and its event buffer.
pub(crate) struct Waiter {
    poll: Poll,
    events: Events,
    /// The gateway's stdio client became ready since [`Waiter::take_client`].
    client: bool,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waiter")
    }
}

impl Readiness {
    pub fn new() -> std::io::Result<(Waiter, Readiness)> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok((
            Waiter {
                poll,
                events: Events::with_capacity(256),
                client: false,
            },
            Readiness {
                registry,
                waker,
                sleeping: AtomicBool::new(false),
            },
        ))
    }

    /// Watches a connection's stdout (readable) and stdin (writable).
    pub fn register(
        &self,
        connection: u64,
        stdout: &mut mio::unix::pipe::Receiver,
        stdin: Option<&mut mio::unix::pipe::Sender>,
    ) -> std::io::Result<()> {
        let token = token(connection);
        self.registry.register(stdout, token, Interest::READABLE)?;
        if let Some(stdin) = stdin {
            self.registry.register(stdin, token, Interest::WRITABLE)?;
        }
        Ok(())
    }

    /// Watches the gateway's stdio client: its input (readable, while it is
    /// open) and its output (writable).
    pub fn register_client(
        &self,
        mut input: Option<&mut mio::unix::pipe::Receiver>,
        output: &mut mio::unix::pipe::Sender,
    ) -> std::io::Result<()> {
        if let Some(input) = input.as_deref_mut() {
            self.registry.register(input, CLIENT, Interest::READABLE)?;
        }
        if let Err(e) = self.registry.register(output, CLIENT, Interest::WRITABLE) {
            if let Some(input) = input {
                self.deregister(input);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Stops watching a pipe (before it is closed).
    pub fn deregister(&self, source: &mut impl mio::event::Source) {
        let _ = self.registry.deregister(source);
    }

    /// Wakes the driver if it sleeps, after a job was queued. The job's count
    /// is raised before this, and the driver sets `sleeping` before it looks
    /// at the count: one of the two sees the other, so no job waits unseen.
    pub fn job_queued(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            let _ = self.waker.wake();
        }
    }

    /// Wakes the driver whatever it does (a server exited, or its stderr
    /// ended: what a closing connection waits for).
    pub fn nudge(&self) {
        let _ = self.waker.wake();
    }
}

impl Waiter {
    /// Waits until a registered pipe is ready, [`Readiness::nudge`] or a job
    /// (`pending` is read after `sleeping` is set), or `timeout` passes; adds
    /// the numbers of the connections that became ready to `due`.
    pub fn wait(
        &mut self,
        readiness: &Readiness,
        pending: impl Fn() -> bool,
        timeout: Duration,
        due: &mut Vec<u64>,
    ) {
        let timeout = (!timeout.is_zero()).then_some(timeout);
        if let Some(timeout) = timeout {
            readiness.sleeping.store(true, Ordering::SeqCst);
            if pending() {
                readiness.sleeping.store(false, Ordering::SeqCst);
                return self.collect(Some(Duration::ZERO), due);
            }
            self.collect(Some(timeout), due);
            readiness.sleeping.store(false, Ordering::SeqCst);
        } else {
            self.collect(Some(Duration::ZERO), due);
        }
    }

    fn collect(&mut self, timeout: Option<Duration>, due: &mut Vec<u64>) {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal: the loop comes back here if nothing else happened.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return,
            // Nothing a retry would fix: wait out the time instead of spinning.
            Err(_) => {
                if let Some(timeout) = timeout {
                    std::thread::sleep(timeout.min(Duration::from_millis(10)));
                }
                return;
            }
        }
        for event in &self.events {
            match event.token() {
                WAKER => {}
                CLIENT => self.client = true,
                token => due.push(token.0 as u64),
            }
        }
    }

    /// Whether the gateway's stdio client became ready since the last call.
    pub fn take_client(&mut self) -> bool {
        std::mem::take(&mut self.client)
    }
}

fn token(connection: u64) -> Token {
    // Numbers count up from 1 in one store; far below the waker's.
    Token(usize::try_from(connection).unwrap_or(usize::MAX - 1))
}
