//! Restarts and the circuit: how many times in a row a server failed, and
//! whether a call may restart it now (see the manager's "# Restarts").

use crate::prelude::*;

/// The wait before the first restart.
pub const BACKOFF_BASE_MS: u64 = 1_000;

/// The longest wait between restarts.
pub const BACKOFF_CAP_MS: u64 = 30_000;

/// Failures in a row after which a server is no longer restarted (the circuit
/// opens) until it is reconnected or the configuration is reloaded.
pub const CIRCUIT_THRESHOLD: u32 = 5;

/// How long after its `failures`-th failure in a row a server may be restarted:
/// [`BACKOFF_BASE_MS`], doubling with every failure, at most [`BACKOFF_CAP_MS`].
pub fn backoff_ms(failures: u32) -> u64 {
    match failures {
        0 => 0,
        n => BACKOFF_BASE_MS
            .saturating_mul(1 << (n - 1).min(16))
            .min(BACKOFF_CAP_MS),
    }
}

/// A wait for people, rounded up to a tenth of a second: `0.7s`, `2s`, `12.5s`.
pub(super) fn format_wait(ms: u64) -> String {
    let tenths = ms.div_ceil(100).max(1);
    if tenths.is_multiple_of(10) {
        format!("{}s", tenths / 10)
    } else {
        format!("{}.{}s", tenths / 10, tenths % 10)
    }
}

/// Whether a failed server may be restarted now.
pub(super) enum Gate {
    /// Yes.
    Open,
    /// Not for this many milliseconds.
    Wait(u64),
    /// Never: the circuit is open.
    Tripped,
}

/// One server's failures in a row, which decide its backoff and its circuit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Restarts {
    /// Failures in a row: lost connections and failed connects since a call last
    /// got an answer (or since `reconnect` / `load_config`).
    pub(super) failures: u32,
    /// When the last failure happened; the backoff counts from here.
    pub(super) failed_at: u64,
}

impl Restarts {
    /// One more failure in a row, at `now`.
    pub(super) fn failed(&mut self, now: u64) {
        self.failures = self.failures.saturating_add(1);
        self.failed_at = now;
    }

    /// Whether the circuit is open: nothing restarts the server.
    pub(super) fn tripped(&self) -> bool {
        self.failures >= CIRCUIT_THRESHOLD
    }

    /// Whether a call may restart the server at `now`.
    pub(super) fn gate(&self, now: u64) -> Gate {
        if self.tripped() {
            return Gate::Tripped;
        }
        let at = self.failed_at.saturating_add(backoff_ms(self.failures));
        if now >= at {
            Gate::Open
        } else {
            Gate::Wait(at - now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_up_to_thirty() {
        let waits: Vec<u64> = (0..=8).map(backoff_ms).collect();
        assert_eq!(
            waits,
            [
                0, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000
            ]
        );
        assert_eq!(backoff_ms(u32::MAX), 30_000);
    }
}
