// The messages between the host side (the main thread: processes, pipes, callers) and
// the driver (the guest), and the doorbell a worker driver sleeps on.
//
// A driver on the main thread (driver_main.js) gets these messages as calls, and
// answers its requests at once. A driver on a worker (driver_worker.js) blocks inside
// `wasi:io/poll.poll`, and while it blocks its thread cannot receive events, so it never
// returns to its event loop: it reads messages synchronously with
// `receiveMessageOnPort` and sleeps in `Atomics.wait` on a shared doorbell, which the
// main thread rings after every message it posts. Messages in the other direction are
// ordinary `postMessage`s that the main thread's event loop handles. One `MessagePort`
// pair carries everything, so messages stay in order.
//
// Main thread → driver (`port.postMessage` + `Doorbell.ring`):
//
// | `t`     | fields                    | meaning                                           |
// |---------|---------------------------|---------------------------------------------------|
// | `job`   | `job`                     | a caller's job: call, cancel, reconnect, shutdown |
// | `in`    | `conn`, `items`, `paused` | what a server sent (messages, oversized, closed); |
// |         |                           | `paused`: its reading stopped until `taken`       |
// | `reply` | `req`, `value` or `fault` | a worker's answer to one of its requests          |
// | `http-…`| see http_imports.js       | the answers to the guest's HTTP requests          |
//
// Driver → main thread (`port.postMessage`):
//
// | `t`       | fields                                  | meaning                              |
// |-----------|-----------------------------------------|--------------------------------------|
// | `open`    | `req`, `server`, `endpoint`             | start a server (answered by `reply`) |
// | `diag`    | `req`, `conn`                           | a connection's diagnostics (`reply`) |
// | `send`    | `conn`, `message`                       | write one message to a server        |
// | `close`   | `conn`                                  | the guest dropped the connection     |
// | `taken`   | `conn`, `count`                         | items taken from a paused connection |
// | `loaded`  | `issues`, `servers`, `tools` or `error` | the configuration was read           |
// | `update`  | `events`, `done`, `servers?`, `tools?`, | after each step: events, finished    |
// |           | `crossings`                             | calls, snapshots when they changed,  |
// |           |                                         | the count of guest crossings         |
// | `reconnected` | `id`, `error`                       | answers a `reconnect` job (`error`: null or why) |
// | `stopped` | `reason`                                | the driver ended; nothing follows    |
// | `grant`, `http`, … | see http_imports.js            | grants and HTTP requests             |
//
// When the guest traps, the driver closes the trapped instance's connections (`close`),
// starts a fresh instance and posts one `update` with its snapshots, a `warning` event
// and the failed calls; `loaded` is only ever posted once.

/** A counter in shared memory that one side bumps and the other sleeps on. */
export class Doorbell {
  /** @param {SharedArrayBuffer} [buffer] shared with the other side; a new one when absent */
  constructor(buffer = new SharedArrayBuffer(4)) {
    this.buffer = buffer;
    this.cell = new Int32Array(buffer);
  }

  /** Wakes the other side (call after posting a message). */
  ring() {
    Atomics.add(this.cell, 0, 1);
    Atomics.notify(this.cell, 0);
  }

  /** The current count; pass it to `sleep` after checking for work. */
  seen() {
    return Atomics.load(this.cell, 0);
  }

  /**
   * Blocks until the count differs from `seen` or `timeoutMs` passes. Returns at once
   * when it was rung since `seen` was read, so no ring between a check and the sleep
   * is lost.
   */
  sleep(seen, timeoutMs) {
    Atomics.wait(this.cell, 0, seen, timeoutMs);
  }
}
