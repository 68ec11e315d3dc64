// The host side of `mcpbox:runtime/transport`, on the main thread: local servers,
// child processes speaking one JSON-RPC message per line (stdio.js). Remote servers do
// not come here: the guest reaches them through `wasi:http` (remote.js, wasi_http.js).
//
// The driver worker asks for connections to be opened, written to and closed; this
// table owns the processes, applies the policy and resolves `${VAR}` references from
// the environment, and forwards what each server sends to the driver. Error variants
// and their texts are those of host/src/transport/mod.rs.

import { EndpointError, resolveStdio } from './endpoint.js';
import { StdioServer } from './stdio.js';

/** Every connection of one runtime, by the id the driver knows it by. */
export class ConnectionTable {
  /** Servers closed but not yet exited. */
  #closing = new Set();
  /** Set by `closeAll`: the runtime is gone. */
  #closedAll = false;

  /**
   * @param {{allowProcesses: boolean, allowNetwork: boolean, maxMessageBytes: number}} policy
   * @param {(conn: number, items: object[], paused: boolean) => void} forward
   *   delivers a server's items to the driver; `paused` asks it to report when the guest
   *   has taken them (`taken`)
   */
  constructor(policy, forward) {
    this.policy = policy;
    this.forward = forward;
    /** @type {Map<number, StdioServer>} */
    this.servers = new Map();
    /** @type {Map<string, StdioServer>} each server's latest connection, by configured name */
    this.latest = new Map();
    this.nextId = 1;
  }

  /**
   * Starts the server `server` (a `stdio-endpoint`).
   *
   * @returns {Promise<{tag: 'ok', val: number} | {tag: 'err', val: object}>} the WIT
   *   `result<connection, transport-error>`, with the connection as its id
   */
  async open(server, endpoint) {
    if (!this.policy.allowProcesses) {
      return err(
        'denied',
        `server \`${server}\`: the policy does not allow starting processes (allow them with \`allowProcesses: true\`)`,
      );
    }
    let spec;
    try {
      spec = resolveStdio(endpoint, (name) => process.env[name]);
    } catch (error) {
      if (error instanceof EndpointError) {
        return err('invalid-endpoint', `server \`${server}\`: ${error.message}`);
      }
      throw error;
    }
    const id = this.nextId++;
    try {
      const running = await StdioServer.start(spec, {
        maxMessageBytes: this.policy.maxMessageBytes,
        onItems: (items, paused) => this.forward(id, items, paused),
      });
      this.servers.set(id, running);
      this.latest.set(server, running);
      if (this.#closedAll) {
        // The runtime stopped while this server was starting: nobody will use it.
        this.close(id);
      }
    } catch (error) {
      if (error && typeof error.tag === 'string') {
        return { tag: 'err', val: error };
      }
      throw error;
    }
    return { tag: 'ok', val: id };
  }

  send(id, message) {
    this.servers.get(id)?.send(message);
  }

  /** The guest has taken `count` items from connection `id` in all. */
  taken(id, count) {
    this.servers.get(id)?.taken(count);
  }

  /** The guest dropped the connection: stop its server. */
  close(id) {
    const server = this.servers.get(id);
    if (server) {
      this.servers.delete(id);
      server.close();
      this.#closing.add(server);
      server.exited.then(() => this.#closing.delete(server));
    }
  }

  diagnostics(id) {
    const server = this.servers.get(id) ?? null;
    if (server === null) {
      throw new Error(`mcpbox: diagnostics for unknown connection ${id}`);
    }
    return server.diagnostics();
  }

  /** The diagnostics of the latest process of the server called `name`, or `null`. */
  latestDiagnostics(name) {
    return this.latest.get(name)?.diagnostics() ?? null;
  }

  /** Stops every server, also any still starting, and resolves once each has exited. */
  async closeAll() {
    this.#closedAll = true;
    for (const id of [...this.servers.keys()]) {
      this.close(id);
    }
    await Promise.all([...this.#closing].map((s) => s.exited));
  }
}

function err(tag, val) {
  return { tag: 'err', val: { tag, val } };
}
