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
 * What one connection received and the guest has not taken yet, in order: items
 * `{ message }`, `{ tooLarge }` or `{ closed }` (stdio.js).
 */
class Inbox extends Queue {
  /** Items the guest has taken in all, reported to the host side when it paused reading. */
  taken = 0;
  /** Why the connection closed, once the guest was told (it stays told). */
  closed = null;
}

/**
 * What arrives from the host side, sorted as it comes: callers' jobs, each server's
 * items, the answers to HTTP exchanges. Each thread's hub extends it with how messages
 * travel (`drain`, `post`, `request`) and how the guest waits (`poll`).
 */
export class Hub {
  /** Callers' jobs, in order. */
  jobs = new Queue();
  /** @type {Map<number, Inbox>} items from each server, by connection id */
  #inboxes = new Map();
  /** Connections the guest dropped: items still in flight for them are discarded. */
  #dropped = new Set();
  /** Connections whose server the host stopped reading until the guest takes its items. */
  paused = new Set();
  /** Takes the `http-…` messages (set by imports/index.js: http_imports.js's `receive`). */
  http = null;
  /** Set by every message sorted: the driver clears it when a turn gathers its input. */
  fresh = false;
  /**
   * Entries into the guest and its calls of the `transport` imports that move messages
   * (`McpBox.guestCrossings`), counted on the driver's side and posted with every update.
   */
  crossings = 0;

  /** Sorts one message from the host side; false when it is not one of these. */
  accept(msg) {
    this.fresh = true;
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
      inbox = new Inbox();
      this.#inboxes.set(conn, inbox);
    }
    return inbox;
  }

  /**
   * Takes what connection `conn` received, as `transport.receive` returns it: the
   * messages, in order, up to `max`; or, when no message precedes it, the error
   * (`too-large` once per oversized message, `closed` for good). Tells the host side how
   * many items the guest has taken once the inbox of a connection it paused is empty.
   *
   * @returns {{messages: string[], error: object | null}}
   */
  take(conn, max) {
    const inbox = this.inbox(conn);
    const messages = [];
    let error = null;
    while (messages.length < max) {
      const item = inbox.shift();
      if (item === undefined) {
        break;
      }
      if (item.message !== undefined) {
        messages.push(item.message);
        inbox.taken += 1;
        continue;
      }
      if (messages.length > 0) {
        // Deliver what came before the error first; the error comes next time.
        inbox.unshift(item);
      } else if (item.tooLarge !== undefined) {
        inbox.taken += 1;
        error = { tag: 'too-large', val: item.tooLarge };
      } else {
        // Closed for good: said again on every `receive`.
        inbox.closed = item.closed;
        inbox.unshift(item);
        error = { tag: 'closed', val: item.closed };
      }
      break;
    }
    if (this.paused.has(conn) && inbox.length === 0) {
      this.paused.delete(conn);
      this.post({ t: 'taken', conn, count: inbox.taken });
    }
    return { messages, error };
  }

  /**
   * What every connection received since the guest last took from it, for
   * `turns.step`'s `arrived`: per connection the messages, or an error no message
   * precedes (what follows an error waits for the next step: `unread`). A connection
   * the guest knows closed is left out. Everything is handed in (`waiting` is never
   * set): a JS string handed over is the garbage collector's to free either way.
   */
  arrivals() {
    const arrived = [];
    for (const [conn, inbox] of this.#inboxes) {
      if (inbox.length > 0 && inbox.closed === null) {
        const { messages, error } = this.take(conn, Infinity);
        arrived.push({
          connection: BigInt(conn),
          messages,
          error: error ?? undefined,
          waiting: false,
        });
      }
    }
    return arrived;
  }

  /** Whether a connection holds items `arrivals` has not handed over yet. */
  unread() {
    for (const inbox of this.#inboxes.values()) {
      if (inbox.length > 0 && inbox.closed === null) {
        return true;
      }
    }
    return false;
  }

  /** Forgets a connection the guest dropped. */
  drop(conn) {
    this.#inboxes.delete(conn);
    this.#dropped.add(conn);
    this.paused.delete(conn);
  }
}
