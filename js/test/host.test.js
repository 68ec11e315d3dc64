// The JavaScript host's own duties, end to end through the guest: process groups
// stopped on shutdown and cleared when a server exits, the message size cap, the
// capability policy, skipped stdout lines in error messages, and many calls at once.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { ScriptedServer } from './scripted.js';
import {
  assertConnected,
  call,
  callError,
  fixture,
  fixtureEntry,
  gone,
  open,
  ready,
  status,
  whenGone,
  within,
} from './support.js';

/**
 * A stdio entry that starts a `sleep` in the background (same process group), writes
 * its pid to a file, then becomes the fixture server with `args`.
 */
function withGrandchild(t, args) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-js-group-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pidFile = join(dir, 'sleep.pid');
  const quoted = [fixture(), ...args].map((a) => `'${a}'`).join(' ');
  return {
    entry: { command: '/bin/sh', args: ['-c', `sleep 300 & echo $! > '${pidFile}'; exec ${quoted}`] },
    sleepPid: () => Number(readFileSync(pidFile, 'utf8')),
  };
}

test('shutdown stops the whole process group', async (t) => {
  const { entry, sleepPid } = withGrandchild(t, []);
  const box = await open(t, { grouped: entry });
  assertConnected(await ready(box), 'grouped');
  const pid = sleepPid();
  assert.ok(!gone(pid), 'the background process runs while the server does');
  await within(box.shutdown(), 'shutdown');
  await whenGone(pid);
});

test("a server that exits takes the rest of its group with it", async (t) => {
  const { entry, sleepPid } = withGrandchild(t, ['--exit-on-init', '5']);
  const box = await open(t, { dies: entry });
  const servers = await ready(box);
  assert.equal(status(servers, 'dies').state, 'failed');
  assert.match(status(servers, 'dies').error, /exit code 5/);
  await whenGone(sleepPid());
});

test('a message over the size cap fails its call and the connection survives', async (t) => {
  const box = await open(t, { fx: fixtureEntry() }, { maxMessageBytes: 16384 });
  await ready(box);
  const error = await callError(box, 'mcp__fx__huge', { bytes: 100_000 });
  assert.equal(error.kind, 'protocol', error.message);
  assert.match(error.message, /mcp__fx__huge/);
  assert.match(error.message, /cap 16384/);
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'after' })).text, 'after');
});

test('the process policy does not apply to HTTP servers; bad HTTP endpoints fail alone', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const box = await open(
    t,
    {
      remote: { url: server.url },
      bad_url: { url: 'http://127.0.0.1:99999/mcp' },
      bad_header: { url: server.url, headers: { 'X A': 'v' } },
      fx: fixtureEntry(),
    },
    { allowProcesses: false },
  );
  const servers = await ready(box);
  assertConnected(servers, 'remote');
  assert.match(status(servers, 'bad_url').error, /`url` "http:\/\/127\.0\.0\.1:99999\/mcp" is not a URL: invalid port number/);
  assert.match(status(servers, 'bad_header').error, /`headers\.X A` is not a valid header name/);
  assert.match(status(servers, 'fx').error, /does not allow starting processes/);
});

test('the policy can refuse processes', async (t) => {
  const box = await open(t, { fx: fixtureEntry() }, { allowProcesses: false });
  const fx = status(await ready(box), 'fx');
  assert.equal(fx.state, 'failed');
  assert.match(fx.error, /the policy does not allow starting processes/);
});

test('the policy can refuse the network: remote servers fail naming their URL, unreached', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const sse = server.url.replace('/mcp', '/sse');
  const box = await open(
    t,
    { remote: { url: server.url }, old: { type: 'sse', url: sse }, fx: fixtureEntry() },
    { allowNetwork: false },
  );
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  for (const [name, url] of [['remote', server.url], ['old', sse]]) {
    const s = status(servers, name);
    assert.equal(s.state, 'failed');
    assert.ok(
      s.error.includes(`server \`${name}\`: the policy does not allow network connections, so ${url} was not contacted`),
      s.error,
    );
    assert.match(s.error, /allowNetwork: true/);
  }
  const error = await callError(box, 'mcp__remote__echo', { text: 'x' });
  assert.equal(error.kind, 'server-unavailable');
  assert.deepEqual(server.seen, []);
});

test('skipped stdout lines and stderr show in the error of a server that died', async (t) => {
  const box = await open(t, { noisy: fixtureEntry(['--garbage']) });
  await ready(box);
  const error = await callError(box, 'mcp__noisy__crash', { code: 9 });
  assert.equal(error.kind, 'server-unavailable');
  assert.match(error.message, /exit code 9/);
  assert.match(error.message, /\(stdout, skipped\) this line is not JSON \{\{\{/);
  assert.match(error.message, /fixture: crashing with exit code 9, as asked/);
});

test('many calls in flight at once, on two servers', async (t) => {
  const box = await open(t, { a: fixtureEntry(), b: fixtureEntry() });
  await ready(box);
  const calls = [];
  for (let i = 0; i < 100; i++) {
    const server = i % 2 === 0 ? 'a' : 'b';
    calls.push(call(box, `mcp__${server}__echo`, { text: `${server}${i}` }));
  }
  // A slow call does not hold up the others.
  const slow = call(box, 'mcp__a__sleep', { ms: 200 });
  const results = await Promise.all(calls);
  results.forEach((r, i) => assert.equal(r.text, `${i % 2 === 0 ? 'a' : 'b'}${i}`));
  assert.equal((await slow).text, 'slept 200');
});

test('a flood of messages is paced by the guest and loses nothing', async (t) => {
  const note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}';
  // Far more messages than the host reads ahead of the guest (1024), before the server
  // even answers `initialize`: reading must pause and resume as the guest catches up.
  const count = 5000;
  const flood = { command: '/bin/sh', args: ['-c', `yes '${note}' | head -n ${count}; exec '${fixture()}'`] };
  const box = await open(t, { flood });
  let logs = 0;
  box.on('event', (e) => {
    if (e.type === 'log' && e.server === 'flood' && e.message === 'flood') {
      logs += 1;
    }
  });
  assertConnected(await ready(box), 'flood');
  assert.equal((await call(box, 'mcp__flood__echo', { text: 'after the flood' })).text, 'after the flood');
  assert.equal(logs, count);
});
