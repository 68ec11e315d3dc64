// The driver on the caller's thread (`McpBox.open`'s default, `thread: 'main'`): the
// guest runs in turns from the event loop, so a call crosses no thread.
//
// A turn (one `turns.step`, driver.js) runs (from `setImmediate`) when something arrives
// for the guest: a caller's job, a server's items, an HTTP answer; and (from a timer) at
// the step's deadline. A step polls only while the guest waits on a remote server, and
// `poll` never blocks: when nothing in its list is ready it notes the nearest clock
// instant and reports the wake signal ready, which the guest takes as "the host has
// work" and returns: the contract's own way for a host to get its turn back. The guest
// polls nowhere else (`block` would freeze this thread, so it throws).
//
// What the driver posts for the host side's transport (`send`, `close`, `taken`, the
// HTTP requests) is handled at once, inside the turn, so a request reaches its server
// before the turn ends. What it posts for callers (snapshots, outcomes, events,
// `stopped`) is delivered as a microtask, after the turn: an embedder's event listener
// never runs inside the guest, and one that throws cannot trap it. The host answers
// `request`s (`open`, `diag`, the grants) synchronously.
//
// A turn that ran out of work keeps the loop polling for a moment (`busyPoll`, 50 µs by
// default): a chain of `setImmediate`s, while which libuv polls its pipes without sleeping.
// A server's answer or the caller's next job that comes then is taken without a wake-up,
// which on a VM whose idle vCPUs halt costs tens of microseconds. The window adapts as the
// Rust host's does (host/src/transport/readiness.rs): it shrinks to nothing while answers
// come later than it, so a runtime whose servers answer in milliseconds, or an idle one,
// sleeps.
//
// The cost of the design: guest code shares the caller's event loop (a turn takes tens
// of microseconds), and a guest that loops without returning would freeze it, not just
// the runtime. `thread: 'worker'` (driver_worker.js) keeps the caller's loop free of
// both, for four thread crossings per call.

import { createDriver } from './driver.js';
import { Hub } from './hub.js';

/** How long the loop polls after a turn by default, in microseconds (as the Rust host). */
export const DEFAULT_BUSY_POLL_US = 50;

/** The least window that is not none, in nanoseconds: it halves down to it and grows from it. */
const WINDOW_START = 10_000n;

/** A wait longer than this many busy-poll times shrinks the window. */
const LONG_WAIT = 4n;

/** What the driver posts for callers: delivered after the turn, never inside the guest. */
const TO_CALLERS = new Set(['loaded', 'update', 'adapted', 'reconnected', 'reloaded', 'answered', 'roots-set', 'stopped']);

class MainHub extends Hub {
  /** @type {{session: object, resolve: (reason: string) => void, reject: (error: unknown) => void} | null} */
  #serving = null;
  #scheduled = false;
  /** The nearest clock instant of a `poll` that found nothing ready, this turn. */
  #nextWake = null;
  #timer = null;
  /** The instant the timer is set for. */
  #timerAt = null;
  /** The most the loop polls after a turn, in nanoseconds (`busyPoll`), and now. */
  #busyPoll;
  #window;
  /** When the last turn that ran out of work ended, while the loop polls after it. */
  #idleSince = null;
  #spinning = false;

  /**
   * @param {(msg: object) => void} receive the host side's handler of the driver's messages
   * @param {(msg: object) => unknown} answer the host side's synchronous answer to a request
   * @param {number} busyPollUs `McpBox.open`'s `busyPoll`, checked there
   */
  constructor(receive, answer, busyPollUs) {
    super();
    this.receive = receive;
    this.answer = answer;
    this.#busyPoll = BigInt(Math.round(busyPollUs * 1000));
    this.#window = this.#busyPoll;
  }

  /** A message from the host side: sorted now, and the guest gets a turn. */
  deliver(msg) {
    if (!this.accept(msg)) {
      throw new Error(`mcpbox driver: unexpected message ${JSON.stringify(msg.t)}`);
    }
    this.#schedule();
  }

  /** Everything is sorted as it comes (`deliver`): nothing waits to be drained. */
  drain() {}

  post(msg) {
    if (TO_CALLERS.has(msg.t)) {
      queueMicrotask(() => this.receive(msg));
    } else {
      this.receive(msg);
    }
  }

  /** Answered by the host side at once. Its failure is a host bug: thrown, it traps the guest. */
  request(msg) {
    try {
      return this.answer(msg);
    } catch (error) {
      throw new Error(`mcpbox host: ${error?.stack ?? error}`, { cause: error });
    }
  }

  /**
   * `wasi:io/poll.poll`, without blocking: the indices of the ready pollables, or, when
   * none is, the wake signal's (the turn ends and the next is scheduled).
   *
   * @param {{ready(): boolean, instant?: bigint, wake?: boolean}[]} list
   * @returns {Uint32Array}
   */
  poll(list) {
    const ready = [];
    let wake = -1;
    let clock = null;
    for (let i = 0; i < list.length; i++) {
      const p = list[i];
      if (p.ready()) {
        ready.push(i);
      } else if (p.wake === true) {
        wake = i;
      } else if (p.instant !== undefined && (clock === null || p.instant < clock)) {
        clock = p.instant;
      }
    }
    if (ready.length > 0) {
      return Uint32Array.from(ready);
    }
    if (wake < 0) {
      throw new Error(
        "wasi:io/poll.poll would block the caller's thread: the guest waited without its wake signal " +
          "(McpBox.open's `thread: 'worker'` runs a guest that blocks)",
      );
    }
    if (clock !== null && (this.#nextWake === null || clock < this.#nextWake)) {
      this.#nextWake = clock;
    }
    return Uint32Array.of(wake);
  }

  /**
   * Runs turns of `session` until one returns why the runtime stopped (resolves with it)
   * or traps (rejects with the `Trap`).
   */
  serve(session) {
    return new Promise((resolve, reject) => {
      this.#serving = { session, resolve, reject };
      this.#schedule();
    });
  }

  #schedule() {
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#turn);
    }
  }

  #turn = () => {
    this.#scheduled = false;
    this.#adapt();
    const serving = this.#serving;
    if (serving === null) {
      // Between instances (a trapped guest is being replaced): the next `serve` schedules.
      return;
    }
    this.#nextWake = null;
    let next;
    try {
      next = serving.session.turn();
    } catch (error) {
      this.#finish();
      serving.reject(error);
      return;
    }
    if (typeof next === 'string') {
      this.#finish();
      serving.resolve(next);
    } else if (next.again || (next.polled && this.#nextWake === null)) {
      // Items wait that the step could not take, or a step that polled returned with
      // news before it ran out of things to do: go on at once.
      this.#schedule();
    } else {
      const at = [this.#nextWake, next.deadline].filter((t) => t !== null);
      if (at.length > 0) {
        this.#wakeAt(at.reduce((a, b) => (a < b ? a : b)));
      }
      this.#idle();
    }
  };

  /**
   * The turn ran out of work: for up to the window, the loop goes on without sleeping
   * (a chain of `setImmediate`s, while which libuv polls with no timeout), so a
   * server's answer or a caller's next job that comes within it is taken at once, not
   * after a wake-up.
   */
  #idle() {
    this.#idleSince = process.hrtime.bigint();
    if (this.#window > 0n && !this.#spinning) {
      this.#spinning = true;
      setImmediate(this.#spin);
    }
  }

  #spin = () => {
    const since = this.#idleSince;
    if (this.#scheduled || since === null || process.hrtime.bigint() - since >= this.#window) {
      this.#spinning = false;
      return;
    }
    setImmediate(this.#spin);
  };

  /**
   * Adapts the window, as the Rust host's driver does: what came within four busy-poll
   * times after the window doubles it (up to the busy poll); what came later halves it,
   * to nothing below 10 µs, so a server that answers in milliseconds is waited for
   * asleep after a few calls.
   */
  #adapt() {
    const since = this.#idleSince;
    this.#idleSince = null;
    if (since === null || this.#busyPoll === 0n) {
      return;
    }
    const waited = process.hrtime.bigint() - since;
    if (waited <= this.#window) {
      return;
    }
    if (waited > this.#busyPoll * LONG_WAIT) {
      this.#window /= 2n;
      if (this.#window < WINDOW_START) {
        this.#window = 0n;
      }
    } else {
      const doubled = this.#window * 2n;
      this.#window = doubled < WINDOW_START ? WINDOW_START : doubled > this.#busyPoll ? this.#busyPoll : doubled;
    }
  }

  /** Sets the timer for `instant`, unless it is set for that instant or sooner already. */
  #wakeAt(instant) {
    if (this.#timer !== null && this.#timerAt <= instant) {
      return;
    }
    clearTimeout(this.#timer);
    const ms = Math.max(0, Math.ceil(Number(instant - process.hrtime.bigint()) / 1e6));
    this.#timerAt = instant;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = null;
      this.#schedule();
    }, ms);
  }

  #finish() {
    this.#serving = null;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = null;
  }
}

/**
 * Starts a driver on this thread. Returns the function that delivers the host side's
 * messages to it; `receive` gets the driver's, `answer` answers its requests.
 *
 * @param {object} options as driver.js's `createDriver`
 * @param {(msg: object) => void} receive
 * @param {(msg: object) => unknown} answer
 * @returns {(msg: object) => void}
 */
export function startDriver(options, receive, answer) {
  const hub = new MainHub(receive, answer, options.busyPollUs);
  createDriver(hub, options).run((session) => hub.serve(session));
  return (msg) => hub.deliver(msg);
}
