// Shared helpers for the JavaScript host's tests: where the workspace's binaries and
// the pinned peer servers are, how to open a runtime over a set of servers, and
// deadlines so that a hung test fails with a message instead of hanging the run.
//
// The binaries come from `npm test`'s pretest step (scripts/build.js
// --with-test-binaries); the peers from scripts/install-peers. Each path is checked,
// and a missing one fails the test with the command that provides it.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { McpBox } from '../src/index.js';

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
