// Permission rules through the JavaScript host: the assertions of
// tests/tests/all/e2e/permissions.rs (the wasmtime host's tests) on the same guest .wasm,
// against the fixture server and the Python and TypeScript SDK peers.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { McpBox } from '../src/index.js';
import {
  assertConnected,
  call,
  callError,
  fastmcpEntry,
  fixtureEntry,
  nextEvent,
  ready,
  tsEntry,
  within,
} from './support.js';

/** Opens a runtime over a whole configuration and shuts it down when the test ends. */
async function openConfig(t, config, options = {}) {
  const box = await within(
    McpBox.open({ configText: JSON.stringify(config), origin: 'test.mcp.json', ...options }),
    'the runtime opens',
  );
  t.after(() => box.shutdown());
  return box;
}

const names = (box, server) => box.tools().filter((tool) => tool.server === server).map((tool) => tool.name);

test('denied and disabled tools are not offered and calls to them are refused', async (t) => {
  const box = await openConfig(t, {
    mcpServers: { fx: { ...fixtureEntry(), disabledTools: ['add'] } },
    permissions: { deny: ['mcp__fx__crash'], ask: ['mcp__fx__sleep'] },
  });
  assertConnected(await ready(box), 'fx');
  const offered = names(box, 'fx');
  assert.ok(offered.includes('mcp__fx__echo') && offered.includes('mcp__fx__sleep'), offered);
  assert.ok(!offered.includes('mcp__fx__crash') && !offered.includes('mcp__fx__add'), offered);
  let error = await callError(box, 'mcp__fx__crash', {});
  assert.equal(error.kind, 'denied');
  assert.equal(
    error.message,
    'mcp__fx__crash is denied by the permission rule `mcp__fx__crash` (permissions.deny[0] in test.mcp.json)',
  );
  error = await callError(box, 'mcp__fx__add', { a: 1, b: 2 });
  assert.ok(error.kind === 'denied' && error.message.includes('mcpServers.fx.disabledTools[0]'), error.message);
  error = await callError(box, 'mcp__fx__sleep', { ms: 1 });
  assert.ok(error.kind === 'denied' && error.message.includes('needs approval'), error.message);
  assert.equal((await call(box, 'mcp__fx__echo', { text: 'still here' })).text, 'still here');
});

test('rule problems are configuration issues naming the field', async (t) => {
  const box = await openConfig(t, {
    mcpServers: { fx: fixtureEntry() },
    permissions: { allow: ['mcp__*', 'mcp__nope__x'], colour: 1 },
  });
  assert.deepEqual(
    box.configIssues().map((i) => [i.server, i.field]),
    [
      [null, 'permissions.colour'],
      [null, 'permissions.allow[0]'],
      ['nope', 'permissions.allow[1]'],
    ],
  );
});

test('the SDK peers are filtered by rules and tool lists', async (t) => {
  const box = await openConfig(t, {
    mcpServers: { py: fastmcpEntry(), ts: { ...tsEntry(), enabledTools: ['greet', 'add'] } },
    permissions: { deny: ['mcp__py__add'] },
  });
  const servers = await ready(box);
  assertConnected(servers, 'py');
  assertConnected(servers, 'ts');
  assert.deepEqual(names(box, 'py'), ['mcp__py__fail', 'mcp__py__greet']);
  assert.deepEqual(names(box, 'ts'), ['mcp__ts__add', 'mcp__ts__greet']);
  assert.equal((await callError(box, 'mcp__py__add', { a: 1, b: 2 })).kind, 'denied');
  assert.ok((await callError(box, 'mcp__ts__fail', { message: 'm' })).message.includes('enabledTools'));
  assert.equal((await call(box, 'mcp__ts__add', { a: 2, b: 3 })).text, '5');
});

/** A runtime where the fixture's `echo` and every tool of the TypeScript peer need approval. */
async function asking(t, approvals) {
  const box = await openConfig(
    t,
    {
      mcpServers: { fx: fixtureEntry(), ts: tsEntry() },
      permissions: { ask: ['mcp__fx__echo', 'mcp__ts'] },
    },
    { approvals },
  );
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'ts');
  return box;
}

/** Starts a call; resolves with its promise and the approval request it made. */
async function ask(box, tool, args, options) {
  const asked = nextEvent(box, (e) => e.type === 'input-requested');
  const pending = box.callTool(tool, args, options);
  pending.catch(() => {}); // awaited by the test
  return { pending, request: await asked };
}

test('an approved call goes out, a refused one is denied, a session approval sticks', async (t) => {
  const box = await asking(t, true);
  let { pending, request } = await ask(box, 'mcp__fx__echo', { text: 'approved' });
  assert.equal(request.server, 'fx');
  assert.equal(request.tool, 'mcp__fx__echo');
  assert.deepEqual(request.approval, {
    rule: '`mcp__fx__echo` (permissions.ask[0] in test.mcp.json)',
    arguments: { text: 'approved' },
  });
  await box.answerInput(request.id, { action: 'accept', content: {} });
  assert.equal((await within(pending, 'echo answers')).text, 'approved');

  ({ pending, request } = await ask(box, 'mcp__ts__greet', { name: 'Ada' }));
  await box.answerInput(request.id, { action: 'decline' });
  await assert.rejects(pending, (e) => e.kind === 'denied' && e.message.includes('was not approved'));

  ({ pending, request } = await ask(box, 'mcp__ts__greet', { name: 'Bo' }));
  await box.answerInput(request.id, { action: 'accept', content: { approve: 'session' } });
  assert.equal((await within(pending, 'greet answers')).text, 'Hello, Bo!');
  assert.equal((await call(box, 'mcp__ts__greet', { name: 'Cy' })).text, 'Hello, Cy!');
});

test('an unanswered approval ends with the call timeout; without approvals the call is refused', async (t) => {
  const box = await asking(t, true);
  const { pending, request } = await ask(box, 'mcp__fx__echo', { text: 'late' }, { timeoutMs: 300 });
  const withdrawn = nextEvent(box, (e) => e.type === 'input-withdrawn' && e.id === request.id);
  await assert.rejects(pending, (e) => e.kind === 'timeout' && e.message.includes('was not approved within'));
  await withdrawn;

  const refusing = await asking(t, false);
  const error = await callError(refusing, 'mcp__fx__echo', { text: 'x' });
  assert.ok(error.kind === 'denied' && error.message.includes('nobody can be asked'), error.message);
});

test('the MCP rules of Claude Code settings next to the configuration apply when asked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-js-claude-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = join(dir, '.mcp.json');
  writeFileSync(configFile, JSON.stringify({ mcpServers: { fx: fixtureEntry(), ts: tsEntry() } }));
  mkdirSync(join(dir, '.claude'));
  const settings = join(dir, '.claude', 'settings.json');
  writeFileSync(
    settings,
    JSON.stringify({ permissions: { allow: ['Bash(npm test)'], deny: ['mcp__fx__add', 'mcp__ts__greet'], defaultMode: 'plan' } }),
  );
  const plain = await within(McpBox.open({ configFile }), 'the runtime opens');
  t.after(() => plain.shutdown());
  assertConnected(await ready(plain), 'fx');
  assert.equal((await call(plain, 'mcp__fx__add', { a: 1, b: 2 })).text, '3', 'off unless asked for');

  const box = await within(McpBox.open({ configFile, claudeSettings: true }), 'the runtime opens');
  t.after(() => box.shutdown());
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'ts');
  assert.deepEqual(box.configIssues(), [], "Claude Code's own rules are not mistakes");
  assert.ok(!names(box, 'ts').includes('mcp__ts__greet'));
  const error = await callError(box, 'mcp__fx__add', { a: 1, b: 2 });
  assert.equal(error.kind, 'denied');
  assert.equal(
    error.message,
    `mcp__fx__add is denied by the permission rule \`mcp__fx__add\` (permissions.deny[0] in ${settings})`,
  );
});
