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
//! (`Connection::due`) until a read finds it empty, or, once the event said
//! the writer is gone, until a read finds the end ([`Waiter::take_hung_up`]).
//! Once a second every connection is read whatever the poll said
//! ([`Waiter::take_sweep`]).
//!
//! Before it sleeps, the driver busy-polls for a moment ([`Waiter::wait`],
//! `Options::busy_poll`, 50 µs by default): the answer to a request it just
//! wrote, or a caller's next job, usually comes within tens of microseconds,
//! and finding it awake spares both sides a wake-up. On a VM whose idle vCPUs
//! halt, a wake-up that crosses CPUs costs CPU on both sides (the sleeper about
//! 15 µs a round trip; docs/PERFORMANCE.md, "A sequential call").

use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Registry, Token, Waker};

/// The waker's token; a connection's token is its number, which never gets
/// this high.
const WAKER: Token = Token(usize::MAX);

/// The gateway's stdio client's token (its input and output alike).
const CLIENT: Token = Token(usize::MAX - 2);

/// The least busy-poll window that is not none: the window halves down to it,
/// and grows from it.
const WINDOW_START: Duration = Duration::from_micros(10);

/// A wait that slept longer than this many busy-poll times shrinks the window.
/// It ends after the wake-up, which takes 15–40 µs on a VM whose idle vCPUs
/// halt: an answer that a full window would have caught still looks late by
/// that much, and with a bound of one busy-poll time such answers shrank the
/// window to nothing, where every wait slept.
const LONG_WAIT: u32 = 4;

/// How often [`Waiter::take_sweep`] says to read everything.
const SWEEP: Duration = Duration::from_secs(1);

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
    /// The client's input's writer is gone (see [`Waiter::take_client`]).
    client_hung_up: bool,
    /// Connections whose stdout's writer is gone, by number, since
    /// [`Waiter::take_hung_up`].
    hung_up: Vec<u64>,
    /// The longest [`Waiter::wait`] polls before it sleeps.
    busy_poll: Duration,
    /// How long it polls now: at most `busy_poll`, less while what it waits
    /// for comes later than that.
    window: Duration,
    /// When [`Waiter::take_sweep`] last said yes, and how often it does.
    swept: Instant,
    sweep: Duration,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waiter")
    }
}

impl Readiness {
    /// The poll and what is shared of it; the driver busy-polls for up to
    /// `busy_poll` before each sleep.
    pub fn new(busy_poll: Duration) -> std::io::Result<(Waiter, Readiness)> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok((
            Waiter {
                poll,
                events: Events::with_capacity(256),
                client: false,
                client_hung_up: false,
                hung_up: Vec::new(),
                busy_poll,
                window: busy_poll,
                swept: Instant::now(),
                sweep: SWEEP,
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

    /// Wakes the driver if it sleeps, after a job was queued. The job is in
    /// the queue before this, and the driver sets `sleeping` before it looks
    /// at the queue, each side with a fence between its write and its read:
    /// one of the two sees the other's write, so no job waits unseen.
    pub fn job_queued(&self) {
        fence(Ordering::SeqCst);
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
    ///
    /// For up to its window (within `timeout`) it polls without sleeping, and
    /// looks at `pending` between polls: a caller's job found then rings no
    /// waker, and bytes found then wake nobody. The window adapts as haltpoll's
    /// does: a wait that slept but ended within [`LONG_WAIT`] busy-poll times
    /// doubles it (up to the busy-poll time), and a longer one halves it (to
    /// nothing below [`WINDOW_START`]). A server that answers in milliseconds is
    /// then waited for asleep, after a few calls that poll.
    pub fn wait(
        &mut self,
        readiness: &Readiness,
        pending: impl Fn() -> bool,
        timeout: Duration,
        due: &mut Vec<u64>,
    ) {
        if timeout.is_zero() {
            self.collect(Some(Duration::ZERO), due);
            return;
        }
        // Off (a busy poll of zero), a wait reads no clock: it is a plain sleep.
        let start = (!self.busy_poll.is_zero()).then(Instant::now);
        if self.busy_poll(&pending, timeout.min(self.window), due) {
            return;
        }
        readiness.sleeping.store(true, Ordering::SeqCst);
        // Pairs with the caller's in `Readiness::job_queued`.
        fence(Ordering::SeqCst);
        if pending() {
            readiness.sleeping.store(false, Ordering::SeqCst);
            self.collect(Some(Duration::ZERO), due);
            return self.adapt(true, start);
        }
        let came = self.collect(Some(timeout), due);
        readiness.sleeping.store(false, Ordering::SeqCst);
        self.adapt(came, start);
    }

    /// Adapts the window after a wait that slept, begun at `start` (none when
    /// the poll is off): `came` says whether something came rather than the
    /// timeout.
    fn adapt(&mut self, came: bool, start: Option<Instant>) {
        let Some(start) = start else {
            return;
        };
        if start.elapsed() > self.busy_poll * LONG_WAIT {
            self.window /= 2;
            if self.window < WINDOW_START {
                self.window = Duration::ZERO;
            }
        } else if came {
            self.window = (self.window * 2).max(WINDOW_START).min(self.busy_poll);
        }
    }

    /// Polls without sleeping until something is ready, a job is pending or
    /// `within` passes; whether it found something.
    fn busy_poll(
        &mut self,
        pending: &impl Fn() -> bool,
        within: Duration,
        due: &mut Vec<u64>,
    ) -> bool {
        if within.is_zero() {
            return false;
        }
        let start = Instant::now();
        loop {
            if pending() {
                self.collect(Some(Duration::ZERO), due);
                return true;
            }
            if self.collect(Some(Duration::ZERO), due) {
                return true;
            }
            if start.elapsed() >= within {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// One poll; whether it returned an event.
    fn collect(&mut self, timeout: Option<Duration>, due: &mut Vec<u64>) -> bool {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal: the loop comes back here if nothing else happened.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return false,
            // Nothing a retry would fix: wait out the time instead of spinning.
            Err(_) => {
                if let Some(timeout) = timeout {
                    std::thread::sleep(timeout.min(Duration::from_millis(10)));
                }
                return false;
            }
        }
        for event in &self.events {
            match event.token() {
                WAKER => {}
                CLIENT => {
                    self.client = true;
                    self.client_hung_up |= event.is_read_closed();
                }
                token => {
                    due.push(token.0 as u64);
                    if event.is_read_closed() {
                        self.hung_up.push(token.0 as u64);
                    }
                }
            }
        }
        !self.events.is_empty()
    }

    /// Whether the gateway's stdio client became ready since the last call:
    /// `Some(hung_up)`, where `hung_up` says its input's writer is gone (as
    /// [`Waiter::take_hung_up`] says of connections).
    pub fn take_client(&mut self) -> Option<bool> {
        std::mem::take(&mut self.client).then(|| std::mem::take(&mut self.client_hung_up))
    }

    /// Whether to read every connection and the gateway's stdio client now,
    /// whatever the poll said: yes once a [`SWEEP`].
    ///
    /// Each write is announced once, and a reader that emptied a pipe waits
    /// for the next announcement, so one lost would leave a call waiting for
    /// good. With the busy poll on, two flood tests sometimes hung so: the
    /// driver slept through its waits with no event while its server was
    /// blocked writing to it (whether the pipe held bytes then is not known).
    /// A read per connection a second bounds what a lost announcement costs
    /// to a second.
    pub fn take_sweep(&mut self) -> bool {
        if self.swept.elapsed() < self.sweep {
            return false;
        }
        self.swept = Instant::now();
        true
    }

    /// The connections whose stdout's writer is gone since the last call.
    ///
    /// The poll is edge-triggered, and a writer that wrote and closed before
    /// the poll looked is announced once, for both: a read that empties the
    /// pipe then finds the bytes but not the end, and no event will come for
    /// the end. Told of the hang-up, a reader reads on until it ends.
    pub fn take_hung_up(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.hung_up)
    }
}

fn token(connection: u64) -> Token {
    // Numbers count up from 1 in one store; far below the waker's.
    Token(usize::try_from(connection).unwrap_or(usize::MAX - 1))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// How often the calling thread has slept: its voluntary context switches.
    fn slept() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    /// Waits (for up to 10 s) on `waiter` for a byte written to a newly
    /// registered pipe `delay` from now; the connections found ready and how
    /// often this thread slept.
    fn wait_for_a_byte(
        waiter: &mut Waiter,
        readiness: &Readiness,
        delay: Duration,
    ) -> (Vec<u64>, u64) {
        let (mut tx, mut rx) = mio::unix::pipe::new().unwrap();
        readiness.register(7, &mut rx, None).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            tx.write_all(b"x").unwrap();
            tx
        });
        let before = slept();
        let mut due = Vec::new();
        waiter.wait(readiness, || false, Duration::from_secs(10), &mut due);
        let slept = slept() - before;
        drop(writer.join().unwrap());
        (due, slept)
    }

    #[test]
    fn bytes_that_come_while_the_driver_busy_polls_find_it_awake() {
        let (mut w, r) = Readiness::new(Duration::from_secs(5)).unwrap();
        let (due, slept) = wait_for_a_byte(&mut w, &r, Duration::from_millis(20));
        assert_eq!(due, [7]);
        assert_eq!(
            slept, 0,
            "the wait slept though the bytes came while it polled"
        );
        // Without a busy poll the same wait sleeps: the count above can fail.
        let (mut w, r) = Readiness::new(Duration::ZERO).unwrap();
        let (due, slept) = wait_for_a_byte(&mut w, &r, Duration::from_millis(20));
        assert_eq!(due, [7]);
        assert!(slept >= 1, "a wait without a busy poll did not sleep");
    }

    #[test]
    fn a_job_queued_while_the_driver_busy_polls_rings_no_waker() {
        let (mut waiter, readiness) = Readiness::new(Duration::from_secs(5)).unwrap();
        let readiness = Arc::new(readiness);
        let queued = Arc::new(AtomicBool::new(false));
        let caller = {
            let (readiness, queued) = (readiness.clone(), queued.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                queued.store(true, Ordering::SeqCst);
                readiness.job_queued();
            })
        };
        let before = slept();
        let mut due = Vec::new();
        waiter.wait(
            &readiness,
            || queued.load(Ordering::SeqCst),
            Duration::from_secs(10),
            &mut due,
        );
        assert_eq!(
            slept(),
            before,
            "the wait slept though the job came while it polled"
        );
        caller.join().unwrap();
        assert!(queued.load(Ordering::SeqCst));
        // The waker was not rung: the poll has no event for it.
        assert!(
            !waiter.collect(Some(Duration::ZERO), &mut due),
            "the waker was rung"
        );
        assert!(due.is_empty());
    }

    #[test]
    fn a_driver_whose_waits_last_far_past_its_busy_poll_stops_polling_until_answers_come_sooner() {
        let (mut waiter, readiness) = Readiness::new(Duration::from_millis(1)).unwrap();
        let mut due = Vec::new();
        // Nothing comes for 5 ms, wait after wait: the window halves to nothing.
        for _ in 0..10 {
            waiter.wait(&readiness, || false, Duration::from_millis(5), &mut due);
        }
        assert_eq!(waiter.window, Duration::ZERO);
        // A byte found as soon as the wait sleeps came within the busy-poll
        // time: the window starts again.
        let (mut tx, mut rx) = mio::unix::pipe::new().unwrap();
        readiness.register(7, &mut rx, None).unwrap();
        tx.write_all(b"x").unwrap();
        waiter.wait(&readiness, || false, Duration::from_secs(10), &mut due);
        assert_eq!(due, [7]);
        assert_eq!(waiter.window, WINDOW_START);
    }

    #[test]
    fn an_answer_that_comes_after_the_window_but_within_the_busy_poll_doubles_it() {
        let (mut waiter, readiness) = Readiness::new(Duration::from_millis(500)).unwrap();
        waiter.window = WINDOW_START;
        let (due, _) = wait_for_a_byte(&mut waiter, &readiness, Duration::from_millis(1));
        assert_eq!(due, [7]);
        assert_eq!(waiter.window, 2 * WINDOW_START);
    }

    #[test]
    fn a_sweep_comes_once_per_interval() {
        let (mut waiter, _readiness) = Readiness::new(Duration::ZERO).unwrap();
        waiter.sweep = Duration::from_millis(50);
        assert!(!waiter.take_sweep(), "a sweep before the interval");
        std::thread::sleep(Duration::from_millis(60));
        assert!(waiter.take_sweep(), "no sweep after the interval");
        assert!(!waiter.take_sweep(), "two sweeps in one interval");
    }

    #[test]
    fn an_answer_that_comes_just_after_a_full_window_keeps_it() {
        // The answer comes 10 ms after the 20 ms window ends; the wake-up
        // after it does not make it look late.
        let (mut waiter, readiness) = Readiness::new(Duration::from_millis(20)).unwrap();
        let (due, _) = wait_for_a_byte(&mut waiter, &readiness, Duration::from_millis(30));
        assert_eq!(due, [7]);
        assert_eq!(waiter.window, Duration::from_millis(20));
    }

    #[test]
    fn an_idle_driver_polls_no_longer_than_its_busy_poll_and_then_sleeps() {
        let (mut waiter, readiness) = Readiness::new(Duration::from_millis(1)).unwrap();
        let before = slept();
        let start = Instant::now();
        let mut due = Vec::new();
        waiter.wait(&readiness, || false, Duration::from_millis(30), &mut due);
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(due.is_empty());
        assert!(slept() > before, "the wait polled for its whole timeout");
    }
}
