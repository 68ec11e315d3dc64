// `wasi:clocks/monotonic-clock` over `process.hrtime`: the same clock in every thread,
// so the host side's instants and the driver's agree.

/**
 * The `wasi:clocks/monotonic-clock` interface.
 *
 * @param {Function} Pollable the `wasi:io/poll` base class (poll.js)
 */
export function monotonicClock(Pollable) {
  /** Ready once the monotonic clock reaches `instant` (nanoseconds). */
  class ClockPollable extends Pollable {
    constructor(instant) {
      super();
      this.instant = instant;
    }

    ready() {
      return process.hrtime.bigint() >= this.instant;
    }
  }

  return {
    /** Nanoseconds on the host's monotonic clock. */
    now: () => process.hrtime.bigint(),
    resolution: () => 1n,
    subscribeInstant: (when) => new ClockPollable(when),
    subscribeDuration: (duration) => new ClockPollable(process.hrtime.bigint() + duration),
  };
}
