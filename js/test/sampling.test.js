// Sampling through the JavaScript host: the assertions of tests/tests/all/e2e/sampling.rs on
// the same guest .wasm. The fixture server's `sample` tool and server-everything's
// `trigger-sampling-request` send `sampling/createMessage` during the call and return
// the answer they got.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertConnected, call, fixtureEntry, nextEvent, npmBin, open, ready, within } from './support.js';

const answer = (text) => ({
  action: 'accept',
  content: { role: 'assistant', content: { type: 'text', text }, model: 'js-model' },
});

async function openBoth(t, sampling) {
  const box = await open(
    t,
    { fx: fixtureEntry(), everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] } },
    { sampling },
  );
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'everything');
  return box;
}

/** Starts a call; resolves with the call's promise and its sampling request. */
async function sample(box, tool, args, options) {
  const asked = nextEvent(box, (e) => e.type === 'sampling-requested');
  const pending = box.callTool(tool, args, options);
  pending.catch(() => {}); // awaited by the test; not unhandled meanwhile
  return { pending, request: await asked };
}

test('server-everything and the fixture get the embedder\'s answer', async (t) => {
  const box = await openBoth(t, true);
  const { pending, request } = await sample(box, 'mcp__everything__trigger-sampling-request', {
    prompt: 'What is 2+2?',
    maxTokens: 30,
  });
  assert.equal(request.server, 'everything');
  assert.equal(request.tool, 'mcp__everything__trigger-sampling-request');
  assert.equal(request.params.maxTokens, 30);
  assert.match(request.params.messages[0].content.text, /What is 2\+2\?/);
  await assert.rejects(box.answerInput(request.id, { action: 'accept', content: { text: '4' } }), (e) =>
    e.message.includes('`content`'),
  );
  await box.answerInput(request.id, answer('4'));
  const result = await within(pending, 'the sampling call answers');
  assert.equal(result.isError, false);
  assert.match(result.text, /"model": "js-model"/);

  const declined = await sample(box, 'mcp__fx__sample', { prompt: 'hi' });
  await box.answerInput(declined.request.id, { action: 'decline' });
  const refused = await within(declined.pending, 'the declined call answers');
  assert.equal(refused.isError, true);
  assert.match(refused.text, /User rejected sampling request/);

  const unanswered = await sample(box, 'mcp__fx__sample', { prompt: 'anyone?' }, { timeoutMs: 800 });
  const withdrawn = nextEvent(box, (e) => e.type === 'input-withdrawn' && e.id === unanswered.request.id);
  await assert.rejects(unanswered.pending, (e) => e.kind === 'timeout' && e.message.includes('not answered'));
  await withdrawn;
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'still here' })).text, 'still here');
});

test('without opting in servers are refused, naming the option', async (t) => {
  const box = await openBoth(t, false);
  const result = await call(box, 'mcp__fx__sample', { prompt: 'hi' });
  assert.equal(result.isError, true);
  assert.match(result.text, /-32601/);
  assert.match(result.text, /`sampling: true`/);
  assert.equal(
    box.tools().some((tool) => tool.name === 'mcp__everything__trigger-sampling-request'),
    false,
  );
});
