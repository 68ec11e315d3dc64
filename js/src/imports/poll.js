// `wasi:io/poll`: the pollables every other import's readiness is built on, and `poll`,
// which is the hub's (driver_main.js never blocks in it, driver_worker.js does).

/**
 * The `wasi:io/poll` interface over `hub`: `Pollable`, the base class of every
 * import's pollable, and the interface's functions.
 *
 * @param {{poll(list: object[]): Uint32Array}} hub
 */
export function pollInterface(hub) {
  /** `wasi:io/poll.pollable`: level-triggered readiness of one source. */
  class Pollable {
    /** Whether the source is ready now. */
    ready() {
      return false;
    }

    /** Blocks until ready (a hub on the caller's thread refuses to). */
    block() {
      hub.poll([this]);
    }
  }

  return { Pollable, imports: { Pollable, poll: (list) => hub.poll(list) } };
}
