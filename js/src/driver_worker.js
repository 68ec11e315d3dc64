// The driver on a worker thread (`McpBox.open({ thread: 'worker' })`): the guest runs
// here, and the caller's event loop never runs guest code.
//
// This thread never returns to its event loop after start-up: it reads the main
// thread's messages with `receiveMessageOnPort` and sleeps in `Atomics.wait` on the
// doorbell the main thread rings after every message (channel.js), between steps
// (`idle`) and in `poll` alike, which is why either can block here without losing an
// event. A call crosses the thread four times (the
// job, the request to the server, its answer, the outcome), which is what the main
// thread's driver (driver_main.js) saves.

import { receiveMessageOnPort, workerData } from 'node:worker_threads';

import { Doorbell } from './channel.js';
import { createDriver } from './driver.js';
import { Hub } from './hub.js';

/** The worker's side of the channel: a `MessagePort` and the doorbell. */
class WorkerHub extends Hub {
  /** @type {Map<number, object>} answers to `request`, by request id */
  #replies = new Map();
  #nextRequest = 1;

  /**
   * @param {import('node:worker_threads').MessagePort} port
   * @param {Doorbell} bell
   */
  constructor(port, bell) {
    super();
    this.port = port;
    this.bell = bell;
  }

  /** Takes every message the main thread has posted so far. Never blocks. */
  drain() {
    for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
      const msg = m.message;
      if (msg.t === 'reply') {
        this.#replies.set(msg.req, msg);
      } else if (!this.accept(msg)) {
        throw new Error(`mcpbox driver: unexpected message ${JSON.stringify(msg.t)}`);
      }
    }
  }

  /** Posts a message that needs no answer. */
  post(msg) {
    this.port.postMessage(msg);
  }

  /**
   * Posts a request and blocks until the main thread answers it, sorting whatever else
   * arrives meanwhile. A `fault` answer is a host bug: it is thrown, which traps the guest.
   */
  request(msg) {
    const req = this.#nextRequest++;
    this.port.postMessage({ ...msg, req });
    for (;;) {
      const seen = this.bell.seen();
      this.drain();
      const reply = this.#replies.get(req);
      if (reply !== undefined) {
        this.#replies.delete(req);
        if (reply.fault !== undefined) {
          throw new Error(`mcpbox host: ${reply.fault}`);
        }
        return reply.value;
      }
      this.bell.sleep(seen, Infinity);
    }
  }

  /**
   * Blocks until the main thread posts something for the guest or the monotonic clock
   * reaches `deadline` (nanoseconds; null: no deadline).
   *
   * @param {bigint | null} deadline
   */
  idle(deadline) {
    for (;;) {
      const seen = this.bell.seen();
      this.drain();
      if (this.fresh) {
        return;
      }
      const timeoutMs = deadline === null ? Infinity : Number(deadline - process.hrtime.bigint()) / 1e6;
      if (timeoutMs <= 0) {
        return;
      }
      this.bell.sleep(seen, timeoutMs);
    }
  }

  /**
   * `wasi:io/poll.poll`: blocks until at least one pollable is ready and returns the
   * indices of every ready one. Sleeps on the doorbell, bounded by the nearest clock
   * pollable, and re-checks after every ring.
   *
   * @param {{ready(): boolean, instant?: bigint}[]} list
   * @returns {Uint32Array}
   */
  poll(list) {
    if (list.length === 0) {
      throw new Error('wasi:io/poll.poll called with no pollables');
    }
    for (;;) {
      const seen = this.bell.seen();
      this.drain();
      const ready = [];
      let deadline = null;
      for (let i = 0; i < list.length; i++) {
        const p = list[i];
        if (p.ready()) {
          ready.push(i);
        } else if (p.instant !== undefined && (deadline === null || p.instant < deadline)) {
          deadline = p.instant;
        }
      }
      if (ready.length > 0) {
        return Uint32Array.from(ready);
      }
      const timeoutMs = deadline === null ? Infinity : Number(deadline - process.hrtime.bigint()) / 1e6;
      this.bell.sleep(seen, Math.max(0, timeoutMs));
    }
  }
}

const { port, bell, ...options } = workerData;
const hub = new WorkerHub(port, new Doorbell(bell));
// Turns run back to back: between two, this thread sleeps until something arrives or
// the guest's deadline passes (a step that polled has waited already).
await createDriver(hub, options).run(async (session) => {
  for (;;) {
    const next = session.turn();
    if (typeof next === 'string') {
      return next;
    }
    if (!next.again && !next.polled) {
      hub.idle(next.deadline);
    }
  }
});
