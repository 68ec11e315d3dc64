// A stdio server's `sandbox` in the JavaScript host. Node cannot confine a child before
// exec, so the sandbox is the wasmtime host's (tests/tests/all/e2e/sandbox.rs); here a
// sandbox that must be enforced is refused, never silently dropped, and
// `"require": false` runs the server unconfined with a warning and its `env` grant.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { resolveStdio } from '../src/endpoint.js';
import { assertConnected, call, nextEvent, npmBin, open, ready, status, tpl, within } from './support.js';

function filesystemEntry(sandbox) {
  return { command: npmBin('mcp-server-filesystem'), args: ['/tmp'], sandbox };
}

test('a sandboxed server is refused, naming the server and the way out', async (t) => {
  const box = await open(t, { fs: filesystemEntry({ read: ['/tmp'] }) });
  const fs = status(await ready(box), 'fs');
  assert.equal(fs.state, 'failed');
  assert.ok(
    fs.error.includes(
      'server `fs`: the sandbox cannot be enforced: the JavaScript host has no sandbox (Landlock confinement is the wasmtime host\'s',
    ) && fs.error.includes('"sandbox": {"require": false}'),
    fs.error,
  );
});

test('"require": false runs the real filesystem server unconfined, with a warning', async (t) => {
  const box = await open(t, { fs: filesystemEntry({ read: ['/tmp'], require: false }) });
  assertConnected(await ready(box), 'fs');
  // The first start's warning may come before a listener can be added: restart it.
  const warning = nextEvent(box, (e) => e.type === 'warning');
  await within(box.reconnect('fs'), 'the server restarts');
  assert.equal(
    (await warning).message,
    'server `fs`: runs unconfined: the JavaScript host has no sandbox, only the `env` grant applies ("require": false)',
  );
  assertConnected(await ready(box), 'fs');
  // Unconfined: what the wasmtime host's sandbox would refuse, this one reads.
  const r = await call(box, 'mcp__fs__list_allowed_directories', {});
  assert.ok(r.text.includes('/tmp'), r.text);
  assert.equal(box.diagnostics('fs').sandbox ?? null, null, 'no sandbox in force');
});

test("a sandbox's env grant names the only ambient variables that pass", () => {
  const env = { PATH: '/bin', HOME: '/home/me', API_TOKEN: 'secret' };
  const ep = { command: tpl`x`, args: [], env: [{ name: 'TOKEN', value: tpl`given` }], sandbox: { env: ['HOME', 'API_TOKEN'] } };
  assert.deepEqual(resolveStdio(ep, (n) => env[n]).env, { HOME: '/home/me', API_TOKEN: 'secret', TOKEN: 'given' });
  assert.deepEqual(resolveStdio({ ...ep, sandbox: undefined }, (n) => env[n]).env, {
    PATH: '/bin',
    HOME: '/home/me',
    TOKEN: 'given',
  });
});
