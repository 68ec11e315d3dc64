// A guest that traps is replaced, as in the wasmtime host (host/src/driver.rs;
// tests/tests/all/e2e/fixture.rs `a_trapping_guest_is_replaced_and_the_host_survives`).
// The traps are real, provoked the way the Rust test does it: with a small memory
// limit, an 8 MiB argument cannot be copied into the guest, whose allocation fails.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { McpBox } from '../src/index.js';
import {
  assertConnected,
  call,
  callError,
  configText,
  fixtureEntry,
  nextEvent,
  open,
  ready,
  whenGone,
  within,
} from './support.js';

/** Room for normal work, not for an 8 MiB argument. */
const SMALL = 4 * 1024 * 1024;
const HUGE = 'x'.repeat(8 * 1024 * 1024);

/** What the in-flight caller and the warning are told when the limit traps the guest. */
const OUT_OF_MEMORY =
  /^the guest failed and was restarted: the guest ran out of memory: 8\.0 MiB more on top of .* would exceed its memory limit of 4 MiB \(McpBox\.open's `memoryLimit` option raises it\)/;

/** Traps the guest with a call whose argument does not fit; returns its `CallError`. */
async function trap(box) {
  const err = await callError(box, 'mcp__fx__echo', { text: HUGE });
  assert.equal(err.kind, 'runtime', err.message);
  return err;
}

test('a trapping guest is replaced and the host survives', async (t) => {
  const box = await open(t, { fx: fixtureEntry(), other: fixtureEntry() }, { memoryLimit: SMALL });
  assertConnected(await ready(box), 'fx');
  const warned = nextEvent(box, (e) => e.type === 'warning');
  // A call in flight on another server when the guest traps fails with it.
  const sleeping = box.callTool('mcp__other__sleep', { ms: 30_000 });
  sleeping.catch(() => {});

  const err = await trap(box);
  assert.match(err.message, OUT_OF_MEMORY);
  const asleep = await within(sleeping.catch((e) => e), 'the sleeping call fails');
  assert.equal(asleep.kind, 'runtime');
  assert.equal(asleep.message, err.message);
  // The warning comes with the new instance's snapshots: its servers are starting.
  assert.equal((await warned).message, err.message);

  // A fresh guest reconnected the servers; calls work again.
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'other');
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'after' })).text, 'after');
  assert.equal((await call(box, 'mcp__other__sleep', { ms: 1 })).text, 'slept 1');
});

test("the trapped guest's servers and their children are stopped", async (t) => {
  const box = await open(t, { fx: fixtureEntry(['--spawn-child']) }, { memoryLimit: SMALL });
  assertConnected(await ready(box), 'fx');
  const before = JSON.parse((await call(box, 'mcp__fx__pids', {})).text);
  assert.equal(before.children.length, 1);

  await trap(box);
  await whenGone(before.pid);
  await whenGone(before.children[0]);

  assertConnected(await ready(box), 'fx');
  const after = JSON.parse((await call(box, 'mcp__fx__pids', {})).text);
  assert.notEqual(after.pid, before.pid);
});

test('the options are applied to the new guest', async (t) => {
  const box = await open(t, { fx: fixtureEntry() }, { memoryLimit: SMALL, inputRequests: true });
  assertConnected(await ready(box), 'fx');
  await trap(box);
  assertConnected(await ready(box), 'fx');

  // Input requests are still enabled.
  const asked = nextEvent(box, (e) => e.type === 'input-requested');
  const pending = box.callTool('mcp__fx__elicit', { message: 'Who?' });
  await box.answerInput((await asked).id, { action: 'accept', content: { color: 'red' } });
  assert.equal(JSON.parse((await within(pending, 'elicit answers')).text).action, 'accept');
  // And so is the memory limit.
  assert.match((await trap(box)).message, OUT_OF_MEMORY);
});

test('three traps within a minute stop the runtime', async (t) => {
  const box = await open(t, { fx: fixtureEntry() }, { memoryLimit: SMALL });
  assertConnected(await ready(box), 'fx');
  const pid = JSON.parse((await call(box, 'mcp__fx__pids', {})).text).pid;
  await trap(box);
  await ready(box);
  await trap(box);
  await ready(box);

  const last = await trap(box);
  const reason = /^the mcpbox runtime stopped: the guest failed 3 times within a minute; last: the guest ran out of memory: /;
  assert.match(last.message, reason);
  const later = await callError(box, 'mcp__fx__echo', { text: 'late' });
  assert.equal(later.kind, 'runtime');
  assert.equal(later.message, last.message);
  await assert.rejects(box.reconnect('fx'), (e) => reason.test(e.message));
  await within(box.shutdown(), 'shutdown');
  await whenGone(pid);
});

test('a memory limit too small for the guest to start is refused', async () => {
  await assert.rejects(
    McpBox.open({ configText: configText({}), memoryLimit: 1024 * 1024, cacheDir: null }),
    /^Error: the guest needs 1\.1 MiB of memory to start, more than the memory limit of 1 MiB/,
  );
  await assert.rejects(McpBox.open({ configText: '', memoryLimit: -1 }), TypeError);
});
