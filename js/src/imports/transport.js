// `mcpbox:runtime/transport`: the guest's stdio connections, as proxies. The servers
// themselves (processes, pipes, framing) live on the host side (../transport.js,
// ../stdio.js); this side keeps what each has received until the guest takes it.

import { ResultError } from './errors.js';

/**
 * At most this many messages are handed over per `receive`, so one busy server cannot
 * starve the others of the guest's attention.
 */
const RECEIVE_BATCH = 256;

const symbolDispose = Symbol.dispose || Symbol.for('dispose');

/**
 * The `mcpbox:runtime/transport` interface over `hub`.
 *
 * @param {import('../hub.js').Hub & {drain(): void, post(msg: object): void, request(msg: object): any}} hub
 * @param {Function} Pollable the `wasi:io/poll` base class (poll.js)
 * @param {number} maxMessageBytes the size cap of one message
 * @returns {{imports: object, closeAll(): void}} `closeAll` closes every connection the
 *   current instance holds open
 */
export function transport(hub, Pollable, maxMessageBytes) {
  /**
   * The connections the current guest instance holds open, by id. When the instance
   * traps nobody drops them, so the driver closes them (stopping their servers) before
   * a fresh instance opens its own.
   */
  const live = new Set();

  /** Ready while a connection has something for `receive` (messages or an error). */
  class ConnectionPollable extends Pollable {
    constructor(connection) {
      super();
      this.inbox = connection.inbox;
    }

    ready() {
      hub.drain();
      return this.inbox.length > 0;
    }
  }

  /**
   * `transport.connection`: the guest's handle on one server. The server itself lives on
   * the host side; this side keeps what it has received until the guest takes it.
   */
  class Connection {
    /** @private use `Connection.open` */
    constructor(id) {
      this.handle = id;
      this.inbox = hub.inbox(id);
      /** Set once `closed` was returned: `send` fails with it from then on. */
      this.closed = null;
      /** Items taken by the guest, reported to the host when it paused reading. */
      this.taken = 0;
    }

    static open(server, endpoint) {
      const result = hub.request({ t: 'open', server, endpoint });
      if (result.tag !== 'ok') {
        throw new ResultError(result.val);
      }
      live.add(result.val);
      return new Connection(result.val);
    }

    send(message) {
      if (this.closed !== null) {
        throw new ResultError({ tag: 'closed', val: this.closed });
      }
      hub.post({ t: 'send', conn: this.handle, message });
    }

    /**
     * Takes what arrived, in order: messages first; an error (`too-large` once per
     * oversized message, `closed` for good) only when no message precedes it.
     */
    receive() {
      hub.drain();
      const result = this.#take();
      if (hub.paused.has(this.handle) && this.inbox.length === 0) {
        hub.paused.delete(this.handle);
        hub.post({ t: 'taken', conn: this.handle, count: this.taken });
      }
      if (result instanceof ResultError) {
        throw result;
      }
      return result;
    }

    /** The messages to return, or the error to throw. */
    #take() {
      const messages = [];
      while (messages.length < RECEIVE_BATCH) {
        const item = this.inbox.shift();
        if (item === undefined) {
          break;
        }
        this.taken += 1;
        if (item.message !== undefined) {
          messages.push(item.message);
        } else if (messages.length > 0) {
          // Deliver what came before the error first; the error comes next time.
          this.inbox.unshift(item);
          this.taken -= 1;
          break;
        } else if (item.tooLarge !== undefined) {
          return new ResultError({ tag: 'too-large', val: item.tooLarge });
        } else {
          this.closed = item.closed;
          this.inbox.unshift(item);
          this.taken -= 1;
          return new ResultError({ tag: 'closed', val: item.closed });
        }
      }
      return messages;
    }

    subscribe() {
      return new ConnectionPollable(this);
    }

    /**
     * The host's number for the connection (`turns.step` names it so). This host
     * drives the guest with `registry.wait` and never calls `turns.step`.
     */
    id() {
      return BigInt(this.handle);
    }

    diagnostics() {
      return hub.request({ t: 'diag', conn: this.handle });
    }

    [symbolDispose]() {
      live.delete(this.handle);
      hub.drop(this.handle);
      hub.post({ t: 'close', conn: this.handle });
    }
  }

  return {
    imports: { Connection, maxMessageBytes: () => BigInt(maxMessageBytes) },
    closeAll() {
      for (const id of live) {
        hub.drop(id);
        hub.post({ t: 'close', conn: id });
      }
      live.clear();
    },
  };
}
