// Both drivers (`McpBox.open`'s `thread`): the rest of the suite runs on the default,
// the guest on the caller's thread (driver_main.js); here the same paths run on both,
// so the worker driver (driver_worker.js) stays tested too: a stdio server and its
// diagnostics (a request the host answers), a spawn failure, many calls at once, a
// timeout (the main driver's timer) and an abort, a remote server (grants and
// `wasi:http`), a trapped guest replaced, and the two guest entries of a sequential
// call (`turns.step`).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

// The main driver's busy poll (`busyPoll`): after a turn, the event loop polls for a
// moment instead of sleeping, so an answer that comes then wakes nobody. Counted as the
// wasmtime host's readiness tests count it: this thread's voluntary context switches,
// each one a sleep (the process's would count V8's compiler threads too). The fixture answers each call a millisecond late, so a loop that
// does not poll sleeps for every answer.
test('thread main: a busy poll takes answers without sleeping, and an idle runtime sleeps', async (t) => {
  const CALLS = 20;
  const sleeps = async (busyPoll) => {
    const box = await open(t, { fx: fixtureEntry() }, { busyPoll });
    assertConnected(await ready(box), 'fx');
    await call(box, 'mcp__fx__sleep', { ms: 1 });
    const before = slept();
    for (let i = 0; i < CALLS; i++) {
      await call(box, 'mcp__fx__sleep', { ms: 1 });
    }
    return [box, slept() - before];
  };
  const [, asleep] = await sleeps(0);
  // 20 ms: the answer comes within it even beside other tests.
  const [box, polling] = await sleeps(20_000);
  // Nearly every answer finds the loop asleep (one may come while it is still busy).
  assert.ok(asleep >= CALLS / 2, `without the poll, ${asleep} sleeps for ${CALLS} calls`);
  assert.ok(polling < asleep / 2, `with the poll, ${polling} sleeps for ${CALLS} calls (${asleep} without)`);
  // Idle, the poll ends: a second without calls costs far less than a second of CPU.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const cpu = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const { user, system } = process.cpuUsage(cpu);
  assert.ok(user + system < 300_000, `idle for a second, the process used ${(user + system) / 1000} ms of CPU`);
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'after' })).text, 'after');
});

/** How often this thread has slept: its voluntary context switches (Linux). */
function slept() {
  const status = readFileSync('/proc/thread-self/status', 'utf8');
  return Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)[1]);
}

test('busyPoll must be a number of microseconds', async () => {
  for (const busyPoll of [-1, Number.NaN, 'fast', 2_000_000]) {
    await assert.rejects(McpBox.open({ configText: '{"mcpServers":{}}', busyPoll }), (e) => {
      assert.ok(e instanceof TypeError && e.message.startsWith('busyPoll must be'), String(e));
      return true;
    });
  }
});
