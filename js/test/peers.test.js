// The registry against the servers users actually run, by the JavaScript host: the npm
// reference servers and servers on the official Python and TypeScript (v2) SDKs, at the
// versions pinned in tests/peers/ — the assertions of tests/tests/all/e2e/peers.rs and era.rs.

import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  assertConnected,
  call,
  callError,
  fastmcpEntry,
  nextEvent,
  npmBin,
  open,
  ready,
  status,
  taskEntry,
  tsEntry,
  tsHttp,
  within,
} from './support.js';

test('npm reference servers', async (t) => {
  // The filesystem server resolves symlinks; compare against the real path.
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcpbox-js-fs-root-')));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'hello.txt'), 'hello from disk\n');
  const box = await open(t, {
    everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] },
    fs: { command: npmBin('mcp-server-filesystem'), args: [root] },
    memory: { command: npmBin('mcp-server-memory'), env: { MEMORY_FILE_PATH: join(root, 'memory.jsonl') } },
  });
  const servers = await ready(box);
  for (const name of ['everything', 'fs', 'memory']) {
    assertConnected(servers, name);
    assert.ok(status(servers, name).toolCount > 0, `${name} has tools`);
  }
  const echo = box.tools().find((tool) => tool.name === 'mcp__everything__echo');
  assert.ok(echo, "everything's echo is listed");
  assert.equal(echo.inputSchema.properties.message.type, 'string');

  assert.equal((await call(box, 'mcp__everything__echo', { message: 'hi' })).text, 'Echo: hi');

  let r = await call(box, 'mcp__fs__read_text_file', { path: join(root, 'hello.txt') });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.match(r.text, /hello from disk/);
  // Outside the allowed root: the server refuses, as a tool error.
  r = await call(box, 'mcp__fs__read_text_file', { path: '/etc/hostname' });
  assert.equal(r.isError, true, JSON.stringify(r));

  await call(box, 'mcp__memory__create_entities', {
    entities: [{ name: 'mcpbox', entityType: 'project', observations: ['runs MCP servers in wasm'] }],
  });
  const graph = await call(box, 'mcp__memory__read_graph', {});
  assert.match(graph.text, /runs MCP servers in wasm/);
});

test("a server sees the allowlisted environment and its entry's env, nothing else", async (t) => {
  process.env.MCPBOX_JS_TEST_SECRET_TOKEN = 'ambient-secret';
  process.env.MCPBOX_JS_TEST_NAMED = 'named-value';
  t.after(() => {
    delete process.env.MCPBOX_JS_TEST_SECRET_TOKEN;
    delete process.env.MCPBOX_JS_TEST_NAMED;
  });
  const box = await open(t, {
    everything: {
      command: npmBin('mcp-server-everything'),
      args: ['stdio'],
      env: { FROM_CONFIG: '${MCPBOX_JS_TEST_NAMED}', WITH_DEFAULT: '${MCPBOX_JS_TEST_UNSET:-fallback}' },
    },
  });
  assertConnected(await ready(box), 'everything');
  const env = JSON.parse((await call(box, 'mcp__everything__get-env', {})).text);
  assert.equal(env.FROM_CONFIG, 'named-value');
  assert.equal(env.WITH_DEFAULT, 'fallback');
  assert.equal(env.PATH, process.env.PATH);
  assert.ok(!('MCPBOX_JS_TEST_SECRET_TOKEN' in env), 'ambient variables outside the allowlist stay out');
  assert.ok(!('MCPBOX_JS_TEST_NAMED' in env));
});

test('python SDK server', async (t) => {
  const box = await open(t, { py: fastmcpEntry() });
  const servers = await ready(box);
  assertConnected(servers, 'py');
  assert.ok(status(servers, 'py').protocolVersion);

  assert.equal((await call(box, 'mcp__py__greet', { name: 'Ada' })).text, 'Hello, Ada!');
  const sum = await call(box, 'mcp__py__add', { a: 2, b: 40 });
  assert.equal(sum.text, '42');
  assert.deepEqual(sum.structuredContent, { result: 42 });
  const failed = await call(box, 'mcp__py__fail', { message: 'nope' });
  assert.equal(failed.isError, true);
  assert.match(failed.text, /nope/);
  // The schema FastMCP generated is enforced before the call leaves mcpbox.
  const error = await callError(box, 'mcp__py__add', { a: 'two', b: 1 });
  assert.equal(error.kind, 'invalid-arguments');
});

test('a 2026-07-28 server on the TypeScript SDK v2, over stdio and HTTP', async (t) => {
  const { url } = await tsHttp(t);
  const box = await open(t, { ts: tsEntry(), tshttp: { type: 'http', url } });
  const servers = await ready(box);
  for (const name of ['ts', 'tshttp']) {
    assertConnected(servers, name);
    const s = status(servers, name);
    assert.equal(s.protocolVersion, '2026-07-28', JSON.stringify(s));
    assert.equal(s.serverName, 'ts-peer');
    assert.equal(s.toolCount, 8);
  }
  for (const server of ['ts', 'tshttp']) {
    const tool = (name) => `mcp__${server}__${name}`;
    const add = box.tools().find((x) => x.name === tool('add'));
    assert.equal(add.outputSchema.properties.sum.type, 'number');
    const r = await call(box, tool('add'), { a: 20, b: 22 });
    assert.equal(r.text, '42');
    assert.deepEqual(r.structuredContent, { sum: 42 });
    const failed = await call(box, tool('fail'), { message: 'no' });
    assert.ok(failed.isError && failed.text === 'no', JSON.stringify(failed));
    // A tool-list change arrives over subscriptions/listen.
    const changed = nextEvent(box, (e) => e.type === 'tools-changed' && e.server === server);
    await call(box, tool('unlock'), {});
    await changed;
    assert.equal((await call(box, tool('secret'), {})).text, 'the secret is 42');
  }
});

test("server-everything's research tool, which requires a task, runs to its report", async (t) => {
  const box = await open(t, { everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] } });
  assertConnected(await ready(box), 'everything');
  const statuses = [];
  box.on('event', (e) => {
    if (e.type === 'task-status') {
      statuses.push(`${e.status}: ${e.message ?? ''}`);
    }
  });
  const result = await call(box, 'mcp__everything__simulate-research-query', { topic: 'wasm' });
  assert.ok(result.text.startsWith('# Research Report: wasm'), result.text);
  assert.ok(statuses.includes('working: Gathering sources...'), statuses.join('\n'));
});

test('a tool that allows a task runs as one when the caller asks, and plainly otherwise; the tasks are listed', async (t) => {
  const box = await open(t, { tasks: taskEntry() });
  assertConnected(await ready(box), 'tasks');
  const statuses = [];
  box.on('event', (e) => {
    if (e.type === 'task-status') {
      statuses.push(`${e.status}: ${e.message ?? ''}`);
    }
  });
  const args = { steps: 2, ms: 150 };
  assert.equal((await call(box, 'mcp__tasks__count', args, { task: true })).text, 'counted to 2');
  assert.ok(statuses.includes('working: step 1 of 2'), statuses.join('\n'));
  statuses.length = 0;
  assert.equal((await call(box, 'mcp__tasks__count', args)).text, 'counted to 2');
  assert.deepEqual(statuses, []);
  const refused = await callError(box, 'mcp__tasks__plain', {}, { task: true });
  assert.equal(refused.kind, 'invalid-arguments');
  assert.match(refused.message, /cannot run as a task/);
  // Both calls ran as tasks of the server (the SDK runs a plain call of the tool as
  // one too), and it lists them.
  const tasks = await within(box.listTasks('tasks'), 'tasks/list');
  assert.equal(tasks.length, 2, JSON.stringify(tasks));
  assert.ok(tasks.every((task) => task.server === 'tasks' && task.status === 'completed'), JSON.stringify(tasks));
});

test('a URL a server asks the user to open reaches the embedder, and only the action goes back', async (t) => {
  const box = await open(
    t,
    { everything: { command: npmBin('mcp-server-everything'), args: ['stdio'] } },
    { urlElicitation: true },
  );
  assertConnected(await ready(box), 'everything');
  const asked = nextEvent(box, (e) => e.type === 'url-elicitation-requested');
  const calling = call(box, 'mcp__everything__trigger-url-elicitation', {
    url: 'https://pay.example/checkout?order=7',
    message: 'Pay for order 7',
  });
  const request = await asked;
  assert.equal(request.url, 'https://pay.example/checkout?order=7');
  assert.equal(request.message, 'Pay for order 7');
  await box.answerInput(request.id, { action: 'decline' });
  assert.match((await calling).text, /User declined to open the URL/);
});
