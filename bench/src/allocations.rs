//! The client's heap allocations per call (`MCPBOX_BENCH_ALLOCS=1`), beside the
//! times. Load from elsewhere does not change what a call allocates, only
//! scheduling does: rmcp's count is the same every sample, mcpbox's varies with
//! how its tasks and threads meet (docs/PERFORMANCE.md, "Dashboard and metrics").
//!
//! Hand-written because it is a counter in front of the system allocator and
//! nothing more; the crates that count (`stats_alloc`, `dhat`) are not in this
//! workspace's dependencies, and a profiler's allocator would slow the timed
//! samples of the other workloads too. Counting is off unless the variable is
//! set, so ordinary runs pay one relaxed load per allocation. Only the host
//! process's allocations are counted: the guest allocates inside its own linear
//! memory, which grows rarely and is not the system allocator's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The worker's allocator: the system's, counted while [`start`] said it counts.
#[derive(Debug)]
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Starts counting when `MCPBOX_BENCH_ALLOCS` is set; says whether it did.
pub fn start() -> bool {
    let on = std::env::var_os("MCPBOX_BENCH_ALLOCS").is_some_and(|v| v != "0");
    COUNTING.store(on, Ordering::Relaxed);
    on
}

/// Allocations and reallocations so far (0 unless counting).
pub fn count() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

fn note() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method hands its arguments to `System` unchanged and returns what
// `System` returns, so `System`'s guarantees are this allocator's.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}
