//! The data of the guest's store: its WASI context, its resources, its
//! limits, the capability policy and the wake signal.
//!
//! The imports the guest calls are implemented on [`HostState`] in
//! [`crate::imports`], one file per WIT interface.
//!
//! The WASI context is deliberately empty: no preopened directories, no
//! environment, no arguments, no sockets. The guest reaches the world only
//! through `mcpbox:runtime/transport` and `remote` (which check [`Policy`]) and
//! `wasi:http` under the grants `remote` opened.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::transport::Diagnostics;
use crate::transport::readiness::Readiness;

/// The diagnostics of each server's latest connection, by server name. Shared
/// with [`crate::Runtime`], so reading them never has to enter the guest.
pub(crate) type DiagnosticsMap = Arc<Mutex<BTreeMap<String, Arc<Mutex<Diagnostics>>>>>;

/// What the host lets the guest's configuration reach.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Whether stdio servers (child processes) may be started.
    pub allow_processes: bool,
    /// Whether remote servers (`http`, `sse`) may be contacted. When false, such a
    /// server fails with a `denied` error naming it and its URL, before anything
    /// goes on the network.
    pub allow_network: bool,
    /// Largest message accepted from a server, in bytes; larger ones are dropped
    /// with a clear error for the request they answer. Also the largest result
    /// file (see [`Options::results_dir`](crate::Options::results_dir)).
    pub max_message_bytes: usize,
    /// The most bytes of result files (oversized results, images, audio) one
    /// runtime writes; past it, results are cut and media passed on inline.
    pub max_result_files_bytes: u64,
    /// The most result files one runtime writes (default 10,000); past it, the
    /// same. The guest caps the files of one result (`output.maxFiles`).
    pub max_result_files: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allow_processes: true,
            allow_network: true,
            max_message_bytes: 64 * 1024 * 1024,
            max_result_files_bytes: 1024 * 1024 * 1024,
            max_result_files: 10_000,
        }
    }
}

/// Ready while the embedder has queued work for the guest.
///
/// A counter of queued jobs, a `Notify` (the guest's `wake-signal`, while a
/// step blocks in its `poll`) and the driver thread's waker: senders count a
/// job before it enters the queue and wake after ([`Wake::queue`]), the driver
/// uncounts each job it took out, so no wake-up is ever lost. The count is for
/// the step that blocks ([`Wake::ready`]); the driver's own wait between turns
/// looks at the queue itself (`driver::job_waiting`).
///
/// The count never drops below the jobs still queued, and never wraps: a take
/// cannot come before the add of its job (the job was not in the queue yet),
/// and a take with nothing counted stays at zero. A counter that wrapped below
/// zero would read as a queue forever full, and the driver, which does not
/// sleep while `pending()`, would spin.
///
/// While the driver serves the gateway's stdio client itself and the guest's
/// steps block, the client's input is ready too ([`Wake::watch_client`]).
#[derive(Debug, Default)]
pub(crate) struct Wake {
    queued: AtomicUsize,
    closed: AtomicBool,
    notify: Notify,
    /// The gateway's stdio client's input, watched while the steps block.
    client: std::sync::Mutex<Option<Arc<crate::gateway::ClientWatch>>>,
    /// The driver thread's poll, woken while it sleeps; also where stdio
    /// connections register their pipes. None only in tests of single imports.
    readiness: Option<Arc<Readiness>>,
}

impl Wake {
    /// A wake signal for a driver that waits on `readiness`.
    pub fn new(readiness: Arc<Readiness>) -> Self {
        Wake {
            readiness: Some(readiness),
            ..Wake::default()
        }
    }

    /// The driver thread's poll, for connections to register with.
    pub fn readiness(&self) -> Option<&Arc<Readiness>> {
        self.readiness.as_ref()
    }

    /// Queues a job with `send` (which puts it in the driver's queue) and
    /// wakes the driver. The job is counted before `send`, so the driver can
    /// never take it (and uncount it) before it was counted; a failed `send`
    /// uncounts it.
    pub fn queue<E>(&self, send: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = send() {
            self.take();
            return Err(e);
        }
        // The guest's `wake-signal`, while a step blocks in its `poll`.
        self.notify.notify_waiters();
        if let Some(readiness) = &self.readiness {
            readiness.job_queued();
        }
        Ok(())
    }

    /// The driver took a job out of the queue. Saturates at zero: a take
    /// with nothing counted (a defect) cannot wrap the counter.
    pub fn take(&self) {
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Every handle to the runtime is gone: wake the driver so it can stop.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        if let Some(readiness) = &self.readiness {
            readiness.nudge();
        }
    }

    /// Returns once work is queued, the watched client's input has something
    /// or the runtime is closing.
    pub async fn ready(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register interest before checking, so a wake between the check and
            // the await is not missed.
            notified.as_mut().enable();
            if self.pending() {
                return;
            }
            let client = self
                .client
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            match client {
                Some(client) => tokio::select! {
                    () = notified => {}
                    () = client.readable() => return,
                },
                None => notified.await,
            }
        }
    }

    /// Sets (or, with `None`, ends) the watch on the gateway's stdio client's
    /// input, which makes [`Wake::ready`] ready when a line comes.
    pub fn watch_client(&self, watch: Option<crate::gateway::ClientWatch>) {
        *self.client.lock().unwrap_or_else(|p| p.into_inner()) = watch.map(Arc::new);
    }

    pub fn pending(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > 0 || self.is_closed()
    }

    /// Every handle to the runtime is gone ([`Wake::close`]).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The data of the guest's store.
pub(crate) struct HostState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limits: GuestLimits,
    pub policy: Policy,
    pub wake: Arc<Wake>,
    pub diagnostics: DiagnosticsMap,
    /// The `state` import's store; in memory unless the runtime gives it a file.
    pub state_store: Arc<crate::imports::state::StateStore>,
    /// The `pins` import's store; in memory unless the runtime gives it a file.
    pub pin_store: Arc<crate::pins::PinStore>,
    /// Warnings from the host's own imports (a sandbox grant dropped or skipped),
    /// published by the driver as warning events after each guest call.
    pub notices: Mutex<Vec<String>>,
    /// Where the `blobs` import writes (none by default: every write is denied).
    pub results: Arc<crate::imports::blobs::Results>,
    /// `wasi:http`'s context.
    pub http: wasmtime_wasi_http::WasiHttpCtx,
    /// The remote servers the guest may reach (`remote.grant`), for the
    /// `wasi:http` hook.
    pub grants: crate::imports::remote::Grants,
    /// The runtime's server processes, counted until stopped (shared by its instances).
    pub supervisors: Arc<crate::transport::stdio::Supervisors>,
    /// Where its stdio servers run and keep private files (shared by its instances).
    pub places: Arc<crate::transport::places::Places>,
    /// The live stdio connections: their number (`connection.id`) and where
    /// the table keeps them, for the driver to read and wait on between steps.
    pub connections: BTreeMap<u64, u32>,
    /// The number the last connection got.
    pub last_connection_id: u64,
    /// The boundary crossings the host counts: the driver's entries into the
    /// guest and the guest's calls of `transport` (`Runtime::guest_crossings`).
    pub crossings: Arc<std::sync::atomic::AtomicU64>,
}

impl HostState {
    /// Queues warnings for the embedder (see `notices`).
    pub fn notice(&self, warnings: Vec<String>) {
        if !warnings.is_empty() {
            self.notices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(warnings);
        }
    }

    /// Counts one crossing (see `crossings`).
    pub fn crossed(&self) {
        self.crossings.fetch_add(1, Ordering::Relaxed);
    }

    /// A number no other connection of this store had.
    pub fn next_connection_id(&mut self) -> u64 {
        self.last_connection_id += 1;
        self.last_connection_id
    }

    /// Takes the queued warnings.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn new(
        policy: Policy,
        wake: Arc<Wake>,
        memory_limit: usize,
        diagnostics: DiagnosticsMap,
    ) -> Self {
        HostState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: GuestLimits {
                limits: wasmtime::StoreLimitsBuilder::new()
                    .memory_size(memory_limit)
                    .instances(4)
                    .build(),
                memory_limit,
                refused: None,
            },
            policy,
            wake,
            diagnostics,
            state_store: Arc::default(),
            pin_store: Arc::default(),
            notices: Mutex::default(),
            results: Arc::new(crate::imports::blobs::Results::none()),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            grants: crate::imports::remote::Grants::default(),
            supervisors: Arc::default(),
            places: Arc::default(),
            connections: BTreeMap::new(),
            last_connection_id: 0,
            crossings: Arc::default(),
        }
    }
}

/// The store's limits, remembering a refused memory growth so that the trap it
/// leads to (the guest's allocator aborts) can be told for what it is.
#[derive(Debug)]
pub(crate) struct GuestLimits {
    limits: StoreLimits,
    memory_limit: usize,
    /// The size the guest last asked its memory to grow to, and was refused.
    refused: Option<usize>,
}

impl GuestLimits {
    /// "the guest ran out of memory: …" when a growth was refused, for a trap's
    /// message; `None` otherwise.
    pub fn out_of_memory(&self) -> Option<String> {
        let asked = self.refused?;
        let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
        Some(format!(
            "the guest ran out of memory: growing it to {:.1} MiB would exceed its memory \
             limit of {:.1} MiB (Options::memory_limit, or the CLI's --memory-limit, raises it)",
            mib(asked),
            mib(self.memory_limit)
        ))
    }
}

impl wasmtime::ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if !allowed {
            self.refused = Some(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A take with nothing counted leaves the counter at zero: the driver,
    /// which does not sleep while `pending()`, would otherwise spin for good.
    #[test]
    fn a_take_without_a_job_does_not_leave_the_driver_pending() {
        let wake = Wake::default();
        wake.take();
        assert!(!wake.pending());
        wake.queue(|| Ok::<(), ()>(())).unwrap();
        wake.take();
        wake.take();
        assert!(!wake.pending());
        assert_eq!(wake.queued.load(Ordering::SeqCst), 0);
    }

    /// A send that fails (the driver is gone) leaves nothing counted.
    #[test]
    fn a_failed_send_is_not_counted() {
        let wake = Wake::default();
        assert_eq!(wake.queue(|| Err("gone")), Err("gone"));
        assert!(!wake.pending());
    }

    /// The worst interleaving, step by step: the driver takes a job the
    /// moment it is in the queue, before its sender has returned. Counted
    /// after the send, its take would come first and wrap the counter (or,
    /// saturating, leave a job counted that is not there): either way
    /// `pending()` would stay true and the driver would spin.
    #[test]
    fn a_job_taken_before_its_sender_returns_leaves_nothing_pending() {
        let wake = Wake::default();
        let (tx, rx) = std::sync::mpsc::channel();
        wake.queue(|| {
            tx.send(())?;
            // The driver, on its thread, at this very moment.
            rx.try_recv().expect("the job is in the queue");
            wake.take();
            let queued = wake.queued.load(Ordering::SeqCst);
            assert!(queued <= 1, "the count wrapped: {queued}");
            Ok::<(), std::sync::mpsc::SendError<()>>(())
        })
        .unwrap();
        assert!(
            !wake.pending(),
            "the job was taken, yet the driver would not sleep"
        );
    }

    /// Senders on four threads and a driver taking jobs as fast as they come:
    /// the driver can take a job the moment it is in the queue, before the
    /// sender has returned, yet the count never exceeds the jobs sent (it
    /// would read as a wrapped, huge number had a take come first) and is
    /// zero once every job was taken, so the driver goes back to sleep.
    #[test]
    fn the_count_never_wraps_when_the_driver_takes_a_job_at_once() {
        const SENDERS: usize = 4;
        const JOBS: usize = 100_000;
        let wake = Arc::new(Wake::default());
        let (tx, rx) = std::sync::mpsc::channel::<usize>();
        let senders: Vec<_> = (0..SENDERS)
            .map(|_| {
                let (wake, tx) = (wake.clone(), tx.clone());
                std::thread::spawn(move || {
                    for i in 0..JOBS {
                        wake.queue(|| tx.send(i)).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut taken = 0;
        let mut most = 0;
        // Spinning, as a busy driver takes jobs: a job is taken the moment it
        // is in the queue.
        loop {
            match rx.try_recv() {
                Ok(_job) => {
                    wake.take();
                    taken += 1;
                    most = most.max(wake.queued.load(Ordering::SeqCst));
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
            }
        }
        for sender in senders {
            sender.join().unwrap();
        }
        assert_eq!(taken, SENDERS * JOBS);
        assert!(
            most <= SENDERS * JOBS,
            "the count wrapped: {most} jobs queued at most, of {} sent",
            SENDERS * JOBS
        );
        assert!(
            !wake.pending(),
            "every job was taken, yet the driver would not sleep"
        );
    }
}
