// Input requests (elicitation) through the JavaScript host: the assertions of
// tests/tests/all/e2e/elicitation.rs (the wasmtime host's tests) on the same guest .wasm.
// The fixture server's `elicit` tool sends `elicitation/create` during the call and
// returns the answer it got.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertConnected, call, callError, fixtureEntry, nextEvent, open, ready, within } from './support.js';

async function openFixture(t, inputRequests) {
  const box = await open(t, { fx: fixtureEntry() }, { inputRequests });
  assertConnected(await ready(box), 'fx');
  return box;
}

/** Starts a call to `elicit`; resolves with the call's promise and its input request. */
async function elicit(box, options) {
  const asked = nextEvent(box, (e) => e.type === 'input-requested');
  const pending = box.callTool('mcp__fx__elicit', { message: 'Who?' }, options);
  pending.catch(() => {}); // awaited by the test; not unhandled meanwhile
  return { pending, request: await asked };
}

test('an accepted answer reaches the server with the defaults', async (t) => {
  const box = await openFixture(t, true);
  const { pending, request } = await elicit(box);
  assert.equal(request.server, 'fx');
  assert.equal(request.tool, 'mcp__fx__elicit');
  assert.equal(request.message, 'Who?');
  assert.equal(request.requestedSchema.properties.age.default, 36);
  await assert.rejects(box.answerInput(request.id, { action: 'accept', content: { color: 'blue' } }), (e) =>
    e.message.includes('server `fx`') && e.message.includes('/color'),
  );
  await box.answerInput(request.id, { action: 'accept', content: { color: 'red' } });
  const result = await within(pending, 'elicit answers');
  assert.equal(result.isError, false);
  assert.deepEqual(JSON.parse(result.text), {
    action: 'accept',
    content: { name: 'Ada', age: 36, color: 'red' },
  });
  await assert.rejects(box.answerInput(request.id, { action: 'decline' }), /no input request/);
});

test('decline reaches the server; an unanswered request ends with its timeout', async (t) => {
  const box = await openFixture(t, true);
  const first = await elicit(box);
  await box.answerInput(first.request.id, { action: 'decline' });
  assert.deepEqual(JSON.parse((await within(first.pending, 'elicit answers')).text), { action: 'decline' });

  const second = await elicit(box, { timeoutMs: 500 });
  const withdrawn = nextEvent(box, (e) => e.type === 'input-withdrawn' && e.id === second.request.id);
  await assert.rejects(second.pending, (e) => e.kind === 'timeout' && e.message.includes('not answered'));
  await withdrawn;
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'still here' })).text, 'still here');
});

test('without opting in the server is refused', async (t) => {
  const box = await openFixture(t, false);
  const result = await call(box, 'mcp__fx__elicit', {});
  assert.equal(result.isError, true);
  assert.match(result.text, /elicitation failed: method not found/);
  await assert.rejects(box.answerInput(1, { action: 'cancel' }), /no input request 1/);
  assert.equal((await callError(box, 'mcp__fx__nope', {})).kind, 'unknown-tool');
});
