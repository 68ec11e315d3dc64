// The hub: what travels between the driver (the guest and its imports: driver.js,
// imports/) and the host side (processes, pipes, sockets, callers: index.js,
// transport.js, wasi_http.js), sorted as it arrives. Each thread's driver extends `Hub` with how
// messages travel and how the guest waits: driver_main.js on the caller's thread,
// driver_worker.js on a worker thread.

/** A first-in first-out queue with O(1) `shift`. */
export class Queue {
  #items = [];
  #head = 0;

  get length() {
    return this.#items.length - this.#head;
  }

  push(item) {
    this.#items.push(item);
  }

  /** Puts an item back at the front. */
  unshift(item) {
    if (this.#head > 0) {
      this.#head -= 1;
      this.#items[this.#head] = item;
    } else {
      this.#items.unshift(item);
    }
  }

  shift() {
    if (this.#head === this.#items.length) {
      return undefined;
    }
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}

/**
 * What arrives from the host side, sorted as it comes: callers' jobs, each server's
 * items, the answers to HTTP exchanges. Each thread's hub extends it with how messages
 * travel (`drain`, `post`, `request`) and how the guest waits (`poll`).
 */
export class Hub {
  /** Callers' jobs, in order. */
  jobs = new Queue();
  /** @type {Map<number, Queue>} items from each server, by connection id */
  #inboxes = new Map();
  /** Connections the guest dropped: items still in flight for them are discarded. */
  #dropped = new Set();
  /** Connections whose server the host stopped reading until the guest takes its items. */
  paused = new Set();
  /** Takes the `http-…` messages (set by imports/index.js: http_imports.js's `receive`). */
  http = null;

  /** Sorts one message from the host side; false when it is not one of these. */
  accept(msg) {
    switch (msg.t) {
      case 'job':
        this.jobs.push(msg.job);
        return true;
      case 'in':
        if (!this.#dropped.has(msg.conn)) {
          const inbox = this.inbox(msg.conn);
          for (const item of msg.items) {
            inbox.push(item);
          }
          if (msg.paused) {
            this.paused.add(msg.conn);
          }
        }
        return true;
      case 'http-head':
      case 'http-fail':
      case 'http-data':
      case 'http-end':
        this.http(msg);
        return true;
      default:
        return false;
    }
  }

  /** The items received from connection `conn` and not yet taken. */
  inbox(conn) {
    let inbox = this.#inboxes.get(conn);
    if (inbox === undefined) {
      inbox = new Queue();
      this.#inboxes.set(conn, inbox);
    }
    return inbox;
  }

  /** Forgets a connection the guest dropped. */
  drop(conn) {
    this.#inboxes.delete(conn);
    this.#dropped.add(conn);
    this.paused.delete(conn);
  }
}
