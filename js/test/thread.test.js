// Both drivers (`McpBox.open`'s `thread`): the rest of the suite runs on the default,
// the guest on the caller's thread (driver_main.js); here the same paths run on both,
// so the worker driver (driver_worker.js) stays tested too: a stdio server and its
// diagnostics (a request the host answers), a spawn failure, many calls at once, a
// timeout (the main driver's timer) and an abort, a remote server (grants and
// `wasi:http`), a trapped guest replaced, and the two guest entries of a sequential
// call (`turns.step`).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { McpBox } from '../src/index.js';
import { ScriptedServer } from './scripted.js';
import { assertConnected, call, callError, fixtureEntry, open, ready, status, within } from './support.js';

for (const thread of ['main', 'worker']) {
  test(`thread ${thread}: stdio calls, a spawn failure, many calls at once, diagnostics`, async (t) => {
    const box = await open(t, { fx: fixtureEntry(), missing: { command: '/nonexistent/server' } }, { thread });
    const servers = await ready(box);
    assertConnected(servers, 'fx');
    assert.equal(
      status(servers, 'missing').error,
      'server `missing` could not be started (stdio transport): could not start `/nonexistent/server`: No such file or directory (os error 2)',
    );
    const texts = Array.from({ length: 64 }, (_, i) => `call ${i}`);
    const results = await within(
      Promise.all(texts.map((text) => box.callTool('mcp__fx__echo', { text }))),
      'the calls answer',
    );
    assert.deepEqual(
      results.map((r) => r.text),
      texts,
    );
    // The exit status and stderr line come from the connection's diagnostics, which the
    // guest asks the host for.
    const error = await callError(box, 'mcp__fx__crash', { code: 3 });
    assert.equal(error.kind, 'server-unavailable', error.message);
    assert.equal(error.message, 'server `fx` exited (exit code 3); last stderr: fixture: crashing with exit code 3, as asked');
  });

  // As the wasmtime host's `a_sequential_call_crosses_into_the_guest_twice`: the step
  // that sends the request and the step that takes the answer, and none of the
  // `transport` imports (the driver hands the guest what arrived and writes what it
  // returned).
  test(`thread ${thread}: a sequential call crosses into the guest twice`, async (t) => {
    const CALLS = 50;
    const box = await open(t, { fx: fixtureEntry() }, { thread });
    assertConnected(await ready(box), 'fx');
    assert.equal((await call(box, 'mcp__fx__echo', { text: 'warm' })).text, 'warm');
    const before = box.guestCrossings();
    for (let i = 0; i < CALLS; i++) {
      assert.equal((await call(box, 'mcp__fx__echo', { text: `hello ${i}` })).text, `hello ${i}`);
    }
    const crossings = box.guestCrossings() - before;
    // A few more for a turn a timer or a partly read line may add.
    assert.ok(crossings >= 2 * CALLS && crossings <= 2 * CALLS + CALLS / 10, `${crossings} crossings for ${CALLS} calls`);
  });

  test(`thread ${thread}: a timeout and an abort cancel on the server`, async (t) => {
    const box = await open(t, { fx: fixtureEntry() }, { thread });
    await ready(box);
    const late = await callError(box, 'mcp__fx__sleep', { ms: 20_000 }, { timeoutMs: 300 });
    assert.equal(late.kind, 'timeout', late.message);
    const controller = new AbortController();
    const pending = callError(box, 'mcp__fx__sleep', { ms: 20_000 }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    assert.equal((await pending).kind, 'cancelled');
    const r = await call(box, 'mcp__fx__cancellations', {});
    assert.equal(JSON.parse(r.text).length, 2, r.text);
  });

  test(`thread ${thread}: a remote server`, async (t) => {
    const server = await ScriptedServer.start();
    t.after(() => server.close());
    const box = await open(t, { s: { type: 'http', url: server.url } }, { thread });
    assertConnected(await ready(box), 's');
    assert.equal((await call(box, 'mcp__s__echo', { text: 'over http' })).text, 'over http');
  });

  test(`thread ${thread}: a trapped guest is replaced`, async (t) => {
    const box = await open(t, { fx: fixtureEntry() }, { thread, memoryLimit: 4 * 1024 * 1024 });
    await ready(box);
    const error = await callError(box, 'mcp__fx__echo', { text: 'x'.repeat(8 * 1024 * 1024) });
    assert.match(error.message, /^the guest failed and was restarted: the guest ran out of memory/);
    assertConnected(await ready(box), 'fx');
    assert.equal((await call(box, 'mcp__fx__echo', { text: 'after' })).text, 'after');
  });
}

test('`thread` is checked', async () => {
  await assert.rejects(McpBox.open({ configText: '{}', thread: 'other' }), {
    name: 'TypeError',
    message: "thread must be 'main' or 'worker', not \"other\"",
  });
});
