// The host side of `mcpbox:runtime/transport`, on the main thread: local servers,
// child processes speaking one JSON-RPC message per line (stdio.js). Remote servers do
// not come here: the guest reaches them through `wasi:http` (remote.js, wasi_http.js).
//
// The driver asks for connections to be opened, written to and closed; this
// table owns the processes, applies the policy and resolves `${VAR}` references from
// the environment, and forwards what each server sends to the driver. Error variants
// and their texts are those of host/src/transport/mod.rs.
//
// A stdio server's `sandbox` is the wasmtime host's to enforce (Landlock, in the child
// before exec); Node cannot run code between fork and exec, so this host confines
// nothing. A sandbox that must be enforced is refused (`denied`, naming the server and
// what to do), never silently dropped; with `"require": false` the server runs
// unconfined, with a warning, and only its `env` grant applies.

import { isAbsolute, join } from 'node:path';

import { EndpointError, resolveStdio } from './endpoint.js';
import { StdioServer } from './stdio.js';

/** Every connection of one runtime, by the id the driver knows it by. */
export class ConnectionTable {
  /** Servers closed but not yet exited. */
  #closing = new Set();
  /** Set by `closeAll`: the runtime is gone. */
  #closedAll = false;

  /**
   * @param {{allowProcesses: boolean, allowNetwork: boolean, maxMessageBytes: number, workingDir?: string | null}} policy
   *   `workingDir`: where servers run when their entry names no `cwd`, and what a
   *   relative `cwd` or program path is relative to (the configuration file's directory)
   * @param {(conn: number, items: object[], paused: boolean) => void} forward
   *   delivers a server's items to the driver; `paused` asks it to report when the guest
   *   has taken them (`taken`)
   * @param {(message: string) => void} [warn] reports what the embedder should know
   *   (a sandbox that is not enforced)
   */
  constructor(policy, forward, warn = () => {}) {
    this.policy = policy;
    this.forward = forward;
    this.warn = warn;
    /** @type {Map<number, StdioServer>} */
    this.servers = new Map();
    /** @type {Map<string, StdioServer>} each server's latest connection, by configured name */
    this.latest = new Map();
    this.nextId = 1;
  }

  /**
   * Starts the server `server` (a `stdio-endpoint`), synchronously (the driver may ask
   * from inside the guest's import call).
   *
   * @returns {{tag: 'ok', val: number} | {tag: 'err', val: object}} the WIT
   *   `result<connection, transport-error>`, with the connection as its id
   */
  open(server, endpoint) {
    if (!this.policy.allowProcesses) {
      return err(
        'denied',
        `server \`${server}\`: the policy does not allow starting processes (allow them with \`allowProcesses: true\`)`,
      );
    }
    const sandbox = endpoint.sandbox;
    if (sandbox !== undefined && sandbox.require) {
      return err(
        'denied',
        `server \`${server}\`: the sandbox cannot be enforced: the JavaScript host has no sandbox ` +
          '(Landlock confinement is the wasmtime host\'s: run this server with the mcpbox CLI or the Rust library); ' +
          'set "sandbox": {"require": false} to run it unconfined',
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
    const base = this.policy.workingDir ?? null;
    if (base !== null) {
      spec.cwd = spec.cwd === undefined ? base : isAbsolute(spec.cwd) ? spec.cwd : join(base, spec.cwd);
      if (spec.command.includes('/') && !isAbsolute(spec.command)) {
        spec.command = join(spec.cwd, spec.command);
      }
    }
    if (sandbox !== undefined) {
      this.warn(
        `server \`${server}\`: runs unconfined: the JavaScript host has no sandbox, only the \`env\` grant applies ("require": false)`,
      );
    }
    const id = this.nextId++;
    try {
      const running = StdioServer.start(spec, {
        maxMessageBytes: this.policy.maxMessageBytes,
        onItems: (items, paused) => this.forward(id, items, paused),
      });
      this.servers.set(id, running);
      this.latest.set(server, running);
      if (this.#closedAll) {
        // The runtime stopped before the driver asked: nobody will use this server.
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
