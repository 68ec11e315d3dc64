// Resources, prompts and completions by the JavaScript host, against the same real
// servers as tests/tests/all/e2e/resources.rs: server-everything (2025 era), the
// TypeScript and Python SDK peers (2026-07-28) and the fixture's blobs.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertConnected, call, fastmcpEntry, fixtureEntry, nextEvent, npmBin, open, ready, tsEntry } from './support.js';

test('server-everything: resources, templates, prompts and completions', async (t) => {
  const box = await open(t, { everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] } });
  assertConnected(await ready(box), 'everything');
  const resources = await box.listResources();
  assert.ok(resources.length >= 5, JSON.stringify(resources));
  assert.ok(resources.every((r) => r.server === 'everything'));
  const doc = resources.find((r) => r.uri.endsWith('architecture.md'));
  const read = await box.readResource(doc.uri);
  assert.equal(read.contents[0].uri, doc.uri);
  assert.ok(read.text.length > 0);
  const templates = await box.listResourceTemplates('everything');
  const blob = templates.find((tpl) => tpl.uriTemplate.includes('/blob/'));
  const blobRead = await box.readResource(blob.uriTemplate.replace('{resourceId}', '3'), 'everything');
  assert.ok(blobRead.contents[0].blob.length > 0);
  const prompts = await box.listPrompts();
  const argsPrompt = prompts.find((p) => p.name === 'args-prompt');
  assert.equal(argsPrompt.registryName, 'mcp__everything__args-prompt');
  const got = await box.getPrompt('everything', 'args-prompt', { city: 'Paris' });
  assert.match(got.text, /Paris/);
  await assert.rejects(box.getPrompt('everything', 'args-prompt', { city: 7 }), (e) => {
    assert.equal(e.kind, 'invalid-arguments');
    assert.match(e.message, /argument `city`/);
    return true;
  });
  const completion = await box.complete('everything', {
    ref: { type: 'ref/prompt', name: 'completable-prompt' },
    argument: { name: 'department', value: 'E' },
  });
  assert.ok(completion.values.includes('Engineering'), JSON.stringify(completion));
  await box.setLogLevel('everything', 'debug');
});

test('SDK peers (2026-07-28): resources and prompts of two servers, read by URI alone', async (t) => {
  const box = await open(t, { py: fastmcpEntry(), ts: tsEntry() });
  const servers = await ready(box);
  assertConnected(servers, 'py');
  assertConnected(servers, 'ts');
  const named = (await box.listResources()).map((r) => `${r.server} ${r.uri}`);
  assert.deepEqual(named, ['py py://readme', 'ts ts://readme', 'ts ts://logo']);
  assert.equal((await box.readResource('py://readme')).text, 'py-peer readme');
  const logo = await box.readResource('ts://logo');
  assert.equal(logo.contents[0].blob, 'iVBORw==');
  assert.equal((await box.readResource('ts://item/7', 'ts')).text, 'item 7');
  const prompts = (await box.listPrompts()).map((p) => p.registryName);
  assert.deepEqual(prompts, ['mcp__py__review', 'mcp__ts__greeting']);
  assert.equal((await box.getPrompt('ts', 'greeting', { name: 'Ada', tone: 'dry' })).text, 'Say hello to Ada (dry)');
});

test('a 100 MB blob fails that read alone, with the sizes', async (t) => {
  const box = await open(t, { fx: fixtureEntry(['--blob-resources']) });
  assertConnected(await ready(box), 'fx');
  await assert.rejects(box.readResource('fixture://blob/100000000', 'fx'), (e) => {
    assert.match(e.message, /resources\/read fixture:\/\/blob\/100000000 on server `fx`.*message too large/);
    return true;
  });
  const small = await box.readResource('fixture://blob/3', 'fx');
  assert.equal(small.contents[0].blob, 'AAAA');
  await assert.rejects(box.listPrompts('fx'), /server `fx` does not offer prompts/);
});

test('subscriptions: updates of a subscribed resource and list changes, both eras', async (t) => {
  const box = await open(t, {
    everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] },
    ts: tsEntry(),
  });
  const servers = await ready(box);
  assertConnected(servers, 'everything');
  assertConnected(servers, 'ts');
  const events = [];
  box.on('event', (e) => events.push(e));
  // 2025: resources/subscribe; server-everything's toggle sends an update at once.
  const doc = 'demo://resource/static/document/architecture.md';
  await box.subscribeResource(doc, 'everything');
  const updated = nextEvent(box, (e) => e.type === 'resource-updated' && e.uri === doc);
  await call(box, 'mcp__everything__toggle-subscriber-updates', {});
  assert.deepEqual(await updated, { type: 'resource-updated', server: 'everything', uri: doc });
  // 2026-07-28: the URI rides on subscriptions/listen.
  await box.subscribeResource('ts://readme', 'ts');
  const tsUpdated = nextEvent(box, (e) => e.type === 'resource-updated' && e.server === 'ts');
  const resources = nextEvent(box, (e) => e.type === 'resources-changed' && e.server === 'ts');
  const prompts = nextEvent(box, (e) => e.type === 'prompts-changed' && e.server === 'ts');
  await call(box, 'mcp__ts__touch', { uri: 'ts://readme' });
  assert.equal((await tsUpdated).uri, 'ts://readme');
  await resources;
  await prompts;
  await box.unsubscribeResource('ts://readme', 'ts');
  events.length = 0;
  await call(box, 'mcp__ts__touch', { uri: 'ts://readme' });
  await box.listResources('ts');
  assert.ok(!events.some((e) => e.type === 'resource-updated' && e.server === 'ts'), JSON.stringify(events));
  await assert.rejects(box.subscribeResource(7), TypeError);
});
