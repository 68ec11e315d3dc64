//! The HTTP listener's connections, counted and capped.
//!
//! Every open connection holds a file descriptor. A client that opens connections
//! and leaves them idle (or trickles a head into each) would, past the process's
//! descriptor limit, leave `accept` failing for everyone else until its
//! connections time out. So the listener keeps at most a cap of connections
//! ([`HttpOptions::max_connections`](super::HttpOptions::max_connections), and
//! never more than 3/4 of the descriptor limit): a connection accepted at the cap
//! closes the oldest *idle* connection (one with no request in progress and no
//! open stream, including one still sending its first head), and is closed
//! itself when none is idle. Idle connections go oldest first, so a client
//! whose requests are in progress keeps its connection whatever others open.
//! [`raise_open_files_limit`] lifts the process's soft descriptor limit to its
//! hard one, which `mcpbox` does at start-up.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// Raises the process's soft limit on open files to its hard limit (or to 2^20
/// where the hard limit is unlimited), and returns the soft limit now in force.
/// Servers that hold many connections or pipes want it; the default soft limit
/// (1,024 on most Linux systems) is kept for programs that `select(2)`.
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(1 << 20);
    match limit.current {
        Some(soft) if soft >= hard => return Ok(soft),
        None => return Ok(u64::MAX),
        Some(_) => {}
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    )?;
    Ok(hard)
}

/// The process's soft limit on open files (`u64::MAX` when unlimited).
fn open_files_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// The connections of one listener.
#[derive(Debug)]
pub(super) struct Connections {
    cap: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    clock: u64,
    open: BTreeMap<u64, Conn>,
}

#[derive(Debug)]
struct Conn {
    /// Requests in progress (a response still being sent counts).
    busy: usize,
    /// When it last became idle (or opened), as `Inner::clock` counts.
    idle_since: u64,
    close: Arc<Notify>,
}

/// What [`Connections::admit`] decided for a new connection.
pub(super) enum Admitted {
    /// Serve it; `close` is notified when it should close (it was the oldest
    /// idle one at the cap).
    Serve { id: u64, close: Arc<Notify> },
    /// At the cap with nothing idle: close it.
    Refuse,
}

impl Connections {
    /// At most `max` connections, and at most 3/4 of the descriptor limit.
    pub(super) fn new(max: usize) -> Connections {
        let descriptors = usize::try_from(open_files_limit() / 4 * 3).unwrap_or(usize::MAX);
        Connections {
            cap: max.min(descriptors).max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The cap in force.
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection was accepted: at the cap, the oldest idle one is told to
    /// close, or this one is refused when none is idle.
    pub(super) fn admit(&self) -> Admitted {
        let mut inner = self.inner();
        if inner.open.len() >= self.cap && !close_oldest_idle(&mut inner) {
            return Admitted::Refuse;
        }
        inner.next += 1;
        inner.clock += 1;
        let id = inner.next;
        let close = Arc::new(Notify::new());
        let idle_since = inner.clock;
        inner.open.insert(
            id,
            Conn {
                busy: 0,
                idle_since,
                close: close.clone(),
            },
        );
        Admitted::Serve { id, close }
    }

    /// Accepting failed (out of descriptors, say): the oldest idle connection
    /// makes room. Whether there was one.
    pub(super) fn make_room(&self) -> bool {
        close_oldest_idle(&mut self.inner())
    }

    /// Connection `id` closed.
    pub(super) fn closed(&self, id: u64) {
        self.inner().open.remove(&id);
    }

    /// A request on `id` began; it is busy until the returned guard goes (with
    /// the response's body).
    pub(super) fn begin(self: &Arc<Self>, id: u64) -> Busy {
        if let Some(c) = self.inner().open.get_mut(&id) {
            c.busy += 1;
        }
        Busy {
            connections: self.clone(),
            id,
        }
    }
}

/// Tells the oldest idle connection to close and forgets it; whether there was one.
fn close_oldest_idle(inner: &mut Inner) -> bool {
    let oldest = inner
        .open
        .iter()
        .filter(|(_, c)| c.busy == 0)
        .min_by_key(|(_, c)| c.idle_since)
        .map(|(id, _)| *id);
    let Some(id) = oldest.and_then(|id| inner.open.remove(&id)) else {
        return false;
    };
    id.close.notify_one();
    true
}

/// A request in progress on a connection (see [`Connections::begin`]).
#[derive(Debug)]
pub(super) struct Busy {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut inner = self.connections.inner();
        inner.clock += 1;
        let now = inner.clock;
        if let Some(c) = inner.open.get_mut(&self.id) {
            c.busy = c.busy.saturating_sub(1);
            if c.busy == 0 {
                c.idle_since = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let connections = Arc::new(Connections {
            cap: 3,
            inner: Mutex::new(Inner::default()),
        });
        let serve = |c: &Connections| match c.admit() {
            Admitted::Serve { id, close } => (id, close),
            Admitted::Refuse => panic!("refused"),
        };
        let (a, _) = serve(&connections);
        let (b, close_b) = serve(&connections);
        let (c, close_c) = serve(&connections);
        // `a` is busy; `b` became idle before `c`.
        let busy = connections.begin(a);
        drop(connections.begin(c));
        let (d, _) = serve(&connections);
        // `b` was told to close: its notification is stored for its task.
        assert!(told_to_close(&close_b));
        assert!(!told_to_close(&close_c));
        assert_eq!(connections.inner().open.len(), 3);
        // Then `c`, the oldest idle one; `a` never, while its request runs.
        let _ = serve(&connections);
        assert!(told_to_close(&close_c));
        drop(connections.begin(d));
        let _busy_d = connections.begin(d);
        let (e, _) = serve(&connections);
        let _busy_e = connections.begin(e);
        assert!(matches!(connections.admit(), Admitted::Refuse));
        drop(busy);
        assert!(matches!(connections.admit(), Admitted::Serve { .. }));
        assert!(!connections.inner().open.contains_key(&a));
        let _ = b;
    }

    /// Whether a `notify_one` is stored for `notify` (taking it).
    fn told_to_close(notify: &Notify) -> bool {
        let notified = notify.notified();
        let mut notified = std::pin::pin!(notified);
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        notified.as_mut().poll(&mut cx).is_ready()
    }
}
