// Shared helpers for the JavaScript host's tests: where the workspace's binaries and
// the pinned peer servers are, how to open a runtime over a set of servers, and
// deadlines so that a hung test fails with a message instead of hanging the run.
//
// The binaries come from `npm test`'s pretest step (scripts/build.js
// --with-test-binaries); the peers from scripts/install-peers. Each path is checked,
// and a missing one fails the test with the command that provides it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { McpBox } from '../src/index.js';

/**
 * A WIT `template` as the guest hands it over (the guest alone parses `${VAR}`), written
 * as a tagged template: each `${ref('NAME')}` or `${ref('NAME', 'fallback')}` is a
 * reference, the rest literal text.
 */
export function tpl(strings, ...values) {
  const parts = [];
  let configured = '';
  let literal = '';
  const flush = () => {
    if (literal !== '') {
      parts.push({ tag: 'literal', val: literal });
      literal = '';
    }
  };
  strings.forEach((text, i) => {
    literal += text;
    configured += text;
    if (i >= values.length) {
      return;
    }
    const value = values[i];
    if (typeof value !== 'object') {
      // An ordinary interpolation (a port): literal text.
      literal += String(value);
      configured += String(value);
      return;
    }
    flush();
    const { name, fallback } = value;
    parts.push({ tag: 'variable', val: { name, fallback } });
    configured += fallback === undefined ? `\${${name}}` : `\${${name}:-${fallback}}`;
  });
  flush();
  return { configured, parts };
}

/** A reference in a `tpl` template. */
export function ref(name, fallback) {
  return { name, fallback };
}

/** Generous, like the wasmtime host's tests: they check behaviour, not speed. */
export const PATIENCE_MS = 60_000;

const jsDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const workspace = resolve(jsDir, '..');

function existing(path, fix) {
  assert.ok(existsSync(path), `${path} is missing: ${fix}`);
  return path;
}

/** The paths of the workspace binaries the tests run, as cargo reported them. */
function testBinaries() {
  const fix = 'run `npm test` (its pretest builds them) or `node scripts/build.js --with-test-binaries`';
  const record = existing(join(jsDir, 'gen', 'test-binaries.json'), fix);
  const binaries = JSON.parse(readFileSync(record, 'utf8'));
  return { fixtureServer: existing(binaries.fixtureServer, fix), mcpbox: existing(binaries.mcpbox, fix) };
}

/** The workspace's fixture server (tests/src/bin/fixture-server.rs). */
export function fixture() {
  return testBinaries().fixtureServer;
}

/** The wasmtime host's CLI, for comparing the two hosts. */
export function mcpboxCli() {
  return testBinaries().mcpbox;
}

/** A stdio server entry running the fixture server with `args`. */
export function fixtureEntry(args = []) {
  return { command: fixture(), args };
}

/** An executable an npm peer installs under tests/peers/node_modules/.bin. */
export function npmBin(name) {
  return existing(join(workspace, 'tests', 'peers', 'node_modules', '.bin', name), 'run scripts/install-peers first');
}

/** The pinned Python SDK server, tests/peers/fastmcp_server.py, over stdio. */
export function fastmcpEntry() {
  const peers = join(workspace, 'tests', 'peers');
  const python = existing(join(peers, '.venv', 'bin', 'python'), 'run scripts/install-peers first');
  return { command: python, args: [existing(join(peers, 'fastmcp_server.py'), 'it is part of the repository')] };
}

/** tests/peers/adapter_models_server.py: tools whose schemas are pydantic's (`$defs`, recursion, `anyOf` with null). */
export function adapterModelsEntry() {
  const peers = join(workspace, 'tests', 'peers');
  const python = existing(join(peers, '.venv', 'bin', 'python'), 'run scripts/install-peers first');
  return { command: python, args: [existing(join(peers, 'adapter_models_server.py'), 'it is part of the repository')] };
}

/** The TypeScript SDK v2 server, tests/peers/ts_server.mjs, over stdio. */
export function tsEntry() {
  const peers = join(workspace, 'tests', 'peers');
  existing(join(peers, 'node_modules', '@modelcontextprotocol', 'server', 'package.json'), 'run scripts/install-peers first');
  return { command: process.execPath, args: [existing(join(peers, 'ts_server.mjs'), 'it is part of the repository')] };
}

/** The entry of `tests/peers/task_server.mjs`, whose `count` runs as a task when asked. */
export function taskEntry() {
  const peers = join(workspace, 'tests', 'peers');
  existing(join(peers, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'run scripts/install-peers first');
  return { command: process.execPath, args: [existing(join(peers, 'task_server.mjs'), 'it is part of the repository')] };
}

/** The text of an `.mcp.json` with these servers (the value of `mcpServers`). */
export function configText(servers) {
  return JSON.stringify({ mcpServers: servers });
}

/**
 * Opens a runtime over `servers` and shuts it down when the test ends.
 *
 * @param {import('node:test').TestContext} t
 * @param {object} servers
 * @param {object} [options] more `McpBox.open` options
 */
export async function open(t, servers, options = {}) {
  const opening = McpBox.open({ configText: configText(servers), origin: 'test.mcp.json', ...options });
  const box = await within(opening, 'the runtime opens');
  t.after(() => box.shutdown());
  return box;
}

/** Rejects when `promise` takes longer than `PATIENCE_MS`. */
export async function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${PATIENCE_MS} ms`)), PATIENCE_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for every server to settle. */
export function ready(box) {
  return within(box.ready(), 'servers settle');
}

/** Calls a tool, failing the test if it takes longer than `PATIENCE_MS`. */
export function call(box, tool, args, options) {
  return within(box.callTool(tool, args, options), `${tool} answers`);
}

/** Calls a tool that must fail; returns its `CallError`. */
export async function callError(box, tool, args, options) {
  let result;
  try {
    result = await call(box, tool, args, options);
  } catch (error) {
    assert.ok(error.kind, `${tool} failed without a kind: ${error.stack}`);
    return error;
  }
  assert.fail(`${tool} should have failed, got ${JSON.stringify(result)}`);
}

/** The status of the server called `name`. */
export function status(servers, name) {
  const s = servers.find((x) => x.name === name);
  assert.ok(s, `no server ${name} in ${JSON.stringify(servers)}`);
  return s;
}

/** Asserts that a server connected, showing its error otherwise. */
export function assertConnected(servers, name) {
  const s = status(servers, name);
  assert.equal(s.state, 'connected', `${name} did not connect: ${JSON.stringify(s)}`);
}

/**
 * Resolves with the first event matching `pred` from now on. Call it before doing what
 * causes the event.
 */
export function nextEvent(box, pred) {
  return within(
    new Promise((resolve) => {
      const listener = (e) => {
        if (pred(e)) {
          box.off('event', listener);
          resolve(e);
        }
      };
      box.on('event', listener);
    }),
    'the event arrives',
  );
}

/** A loopback port that was free a moment ago (server-everything cannot pick its own). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `command` and resolves with `{ url, stop }` once a stderr line makes `ready`
 * return the URL; rejects with the stderr so far when `taken` says the port was taken.
 * The process is killed when the test ends. As `start` in tests/src/http.rs.
 */
function startServer(t, command, args, env, ready, taken) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let seen = '';
  return within(
    new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before listening:\n${seen}`)));
      child.stderr.on('data', (chunk) => {
        seen += chunk;
        for (const line of seen.split('\n')) {
          const url = ready(line);
          if (url) {
            resolve({ url, stop: () => child.kill('SIGKILL') });
            return;
          }
          if (taken(line)) {
            child.kill('SIGKILL');
            reject(new Error(seen));
            return;
          }
        }
      });
    }),
    `${command} starts listening`,
  );
}

/**
 * Starts server-everything in an HTTP mode (`streamableHttp` at /mcp or `sse` at /sse)
 * on a free loopback port; resolves with `{ url }`.
 */
export async function everythingHttp(t, mode) {
  const [path, banner] = mode === 'sse' ? ['/sse', 'running on port'] : ['/mcp', 'listening on port'];
  let last;
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}${path}`;
    try {
      return await startServer(
        t,
        npmBin('mcp-server-everything'),
        [mode],
        { PORT: String(port) },
        (line) => (line.includes(banner) ? url : null),
        (line) => line.includes('in use'),
      );
    } catch (error) {
      last = error;
    }
  }
  throw new Error(`server-everything found no free port in three tries: ${last?.message}`);
}

/** Starts tests/peers/fastmcp_server.py --http 0; resolves with `{ url }` (…/mcp). */
export function fastmcpHttp(t) {
  const { command, args } = fastmcpEntry();
  return startServer(
    t,
    command,
    [...args, '--http', '0'],
    {},
    (line) => {
      const m = /Uvicorn running on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      return m ? `http://127.0.0.1:${m[1]}/mcp` : null;
    },
    () => false,
  );
}

/**
 * Starts tests/peers/ts_server.mjs --http PORT (0: the OS picks); resolves with
 * `{ url, stop }` (…/mcp), or rejects with its stderr when the port is taken.
 */
export function tsHttp(t, port = 0) {
  const { command, args } = tsEntry();
  return startServer(
    t,
    command,
    [...args, '--http', String(port)],
    {},
    (line) => /ts-peer listening on (\S+)/.exec(line)?.[1] ?? null,
    (line) => line.includes('EADDRINUSE'),
  );
}

/** Whether `pid` is gone (reaped, or a zombie waiting for its new parent to reap it). */
export function gone(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/**
 * Resolves once `pid` is gone. A process that is not our child cannot be awaited, so
 * this checks /proc on every turn of a short timer until it is.
 */
export function whenGone(pid) {
  return within(
    new Promise((resolve) => {
      const check = () => (gone(pid) ? resolve() : setTimeout(check, 5));
      check();
    }),
    `process ${pid} is stopped`,
  );
}
