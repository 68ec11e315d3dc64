// `wasi:clocks/monotonic-clock` over `process.hrtime`: the same clock in every thread,
// so the host side's instants and the driver's agree. `wasi:clocks/wall-clock` over
// `Date.now()` (a gateway task's `createdAt`).

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

/** The `wasi:clocks/wall-clock` interface: the date (a task's `createdAt`), from `Date.now()`. */
export const wallClock = {
  now: () => {
    const ms = Date.now();
    return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
  },
  resolution: () => ({ seconds: 0n, nanoseconds: 1_000_000 }),
};
