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
      /** What it received, and whether the guest was told it closed. */
      this.inbox = hub.inbox(id);
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
      hub.crossings += 1;
      if (this.inbox.closed !== null) {
        throw new ResultError({ tag: 'closed', val: this.inbox.closed });
      }
      hub.post({ t: 'send', conn: this.handle, message });
    }

    /**
     * Takes what arrived, in order: messages first; an error (`too-large` once per
     * oversized message, `closed` for good) only when no message precedes it. (A step
     * hands the same over in `arrived`, hub.js's `arrivals`.)
     */
    receive() {
      hub.crossings += 1;
      hub.drain();
      const { messages, error } = hub.take(this.handle, RECEIVE_BATCH);
      if (error !== null) {
        throw new ResultError(error);
      }
      return messages;
    }

    subscribe() {
      hub.crossings += 1;
      return new ConnectionPollable(this);
    }

    /** The host's number for the connection: how `turns.step` names it. */
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
