// A measurement of a JS host design, not the JS host: what a sequential call would cost
// with the guest on the main thread, driven from Node's event loop, so that a call
// crosses no thread (docs/PERFORMANCE.md, "Run of 2 December 2026, 15:00 UTC").
//
// The transpiled guest is instantiated here with stdio imports only (the fixture's pipes
// over stdio.js; `wasi:http`, grants and blobs are stubs that fail), and turns run from
// `setImmediate` when a line arrives or a call starts, and from a timer at the guest's
// next deadline. `poll` never blocks: when nothing in its list is ready it notes the
// clock pollable's instant and reports the wake signal ready, so `wait` returns (the
// contract's own way for a host to get its turn back). What the real host would add:
// remote servers, the embedder's callbacks, traps, `spawn` failures answered at once.
//
// Usage (from js/, after `npm run build` with --with-test-binaries, as latency.js):
//   node bench/single-thread.js [--calls N] [--warmup N] [--fixture PATH]
// Prints one JSON object in latency.js's shape, to compare side by side with it.

import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { resolveStdio } from '../src/endpoint.js';
import { Memo } from '../src/state.js';
import { StdioServer } from '../src/stdio.js';
import { measure } from './measure.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '5000' },
    fixture: { type: 'string' },
  },
});
const gen = new URL('../gen/', import.meta.url);
const fixture =
  values.fixture ?? JSON.parse(readFileSync(new URL('test-binaries.json', gen), 'utf8')).fixtureServer;
const modules = {};
for (const name of readdirSync(gen).filter((n) => n.endsWith('.wasm'))) {
  modules[name] = await WebAssembly.compile(readFileSync(new URL(name, gen)));
}
// As driver.js: jco's glue reads JCO_DEBUG on every crossing.
process.env = { ...process.env };
const { instantiate } = await import(new URL('mcpbox_guest.js', gen).href);

/** The nearest clock instant of the last `poll` that found nothing ready. */
let nextWake = null;

class Pollable {
  ready() {
    return false;
  }

  block() {
    throw new Error('a blocking wait: not part of this measurement');
  }
}

class ClockPollable extends Pollable {
  constructor(instant) {
    super();
    this.instant = instant;
  }

  ready() {
    return process.hrtime.bigint() >= this.instant;
  }
}

class WakePollable extends Pollable {}

class ConnectionPollable extends Pollable {
  constructor(connection) {
    super();
    this.connection = connection;
  }

  ready() {
    return this.connection.inbox.length > 0;
  }
}

function poll(list) {
  const ready = [];
  let wake = -1;
  let clock = null;
  list.forEach((p, i) => {
    if (p.ready()) {
      ready.push(i);
    } else if (p instanceof WakePollable) {
      wake = i;
    } else if (p instanceof ClockPollable && (clock === null || p.instant < clock)) {
      clock = p.instant;
    }
  });
  if (ready.length > 0) {
    return Uint32Array.from(ready);
  }
  if (wake < 0) {
    throw new Error('a poll without the wake signal: not part of this measurement');
  }
  nextWake = clock;
  return Uint32Array.from([wake]);
}

class ResultError {
  constructor(payload) {
    this.payload = payload;
  }
}

class Connection {
  static open(_server, endpoint) {
    const spec = resolveStdio(endpoint, (name) => process.env[name]);
    const child = spawn(spec.command, spec.args, { env: spec.env, cwd: spec.cwd, stdio: 'pipe', detached: true });
    const connection = new Connection();
    connection.server = new StdioServer(child, MAX_MESSAGE_BYTES, (items) => {
      connection.inbox.push(...items);
      schedule();
    });
    return connection;
  }

  inbox = [];
  taken = 0;

  send(message) {
    this.server.send(message);
  }

  receive() {
    const messages = [];
    while (this.inbox.length > 0 && this.inbox[0].message !== undefined) {
      messages.push(this.inbox.shift().message);
    }
    if (messages.length === 0 && this.inbox.length > 0) {
      throw new ResultError({ tag: 'closed', val: 'not part of this measurement' });
    }
    this.taken += messages.length;
    this.server.taken(this.taken);
    return messages;
  }

  subscribe() {
    return new ConnectionPollable(this);
  }

  diagnostics() {
    return this.server.diagnostics();
  }

  [Symbol.dispose || Symbol.for('dispose')]() {
    this.server.close();
  }
}

const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
const stub = () => class {};
const memo = new Memo(null);
const imports = {
  'mcpbox:runtime/transport': { Connection, maxMessageBytes: () => BigInt(MAX_MESSAGE_BYTES) },
  'mcpbox:runtime/control': { wakeSignal: () => new WakePollable() },
  'mcpbox:runtime/state': { get: (k) => memo.get(k), set: (k, v) => memo.set(k, v) },
  'mcpbox:runtime/blobs': {
    write: () => {
      throw new ResultError({ tag: 'denied', val: 'not part of this measurement' });
    },
  },
  'wasi:io/poll': { Pollable, poll },
  'wasi:clocks/monotonic-clock': {
    now: () => process.hrtime.bigint(),
    resolution: () => 1n,
    subscribeInstant: (when) => new ClockPollable(when),
    subscribeDuration: (duration) => new ClockPollable(process.hrtime.bigint() + duration),
  },
  'mcpbox:runtime/remote': { Grant: stub() },
  'wasi:http/outgoing-handler': {
    handle: () => {
      throw new Error('remote servers are not part of this measurement');
    },
  },
  'wasi:http/types': {
    Fields: stub(),
    FutureIncomingResponse: stub(),
    IncomingBody: stub(),
    IncomingResponse: stub(),
    OutgoingBody: stub(),
    OutgoingRequest: stub(),
    RequestOptions: stub(),
    httpErrorCode: () => undefined,
  },
  'wasi:io/error': { Error: stub() },
  'wasi:io/streams': { InputStream: stub(), OutputStream: stub() },
};

const { registry } = await instantiate((name) => modules[name], imports);
registry.loadConfig('bench', JSON.stringify({ mcpServers: { fx: { command: fixture } } }));
registry.start();

/** Calls in flight: the guest's handle → the caller's resolve. */
const pending = new Map();
let scheduled = false;
let timer = null;

function schedule() {
  if (!scheduled) {
    scheduled = true;
    setImmediate(turn);
  }
}

function turn() {
  scheduled = false;
  nextWake = null;
  const { completions } = registry.wait(60_000n);
  for (const { call, outcome } of completions) {
    pending.get(call)?.(outcome);
    pending.delete(call);
  }
  clearTimeout(timer);
  if (nextWake !== null) {
    timer = setTimeout(turn, Math.max(0, Number(nextWake - process.hrtime.bigint()) / 1e6));
  }
}

function echo(text) {
  const handle = registry.startCall('mcp__fx__echo', JSON.stringify({ text }), {});
  schedule();
  return new Promise((resolve) => pending.set(handle, resolve)).then((outcome) => {
    const result = outcome.tag === 'ok' ? outcome.val : null;
    if (result?.text !== text) {
      throw new Error(`unexpected outcome ${JSON.stringify(outcome.val)}`);
    }
  });
}

schedule();
for (let waited = 0; registry.servers()[0].state !== 'connected'; waited += 10) {
  if (waited > 30_000) {
    throw new Error(`the fixture server did not connect: ${registry.servers()[0].error}`);
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await measure({
  host: 'js, guest on the main thread (a measurement of the design)',
  fixture,
  calls: Number(values.calls),
  warmup: Number(values.warmup),
  echo,
});
process.exit(0);
