// `mcpbox:runtime/control`: the wake signal, over the hub's job queue.

/**
 * The `mcpbox:runtime/control` interface.
 *
 * @param {import('../hub.js').Hub & {drain(): void}} hub
 * @param {Function} Pollable the `wasi:io/poll` base class (poll.js)
 */
export function control(hub, Pollable) {
  /** `control.wake-signal`: ready while callers have queued jobs the driver has not taken. */
  class WakePollable extends Pollable {
    /** How driver_main.js's `poll` tells the wake signal from other pollables. */
    wake = true;

    ready() {
      hub.drain();
      return hub.jobs.length > 0;
    }
  }

  return { wakeSignal: () => new WakePollable() };
}
