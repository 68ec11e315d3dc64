// The audit trail through the JavaScript host: the assertions of tests/tests/all/e2e/audit.rs
// (the wasmtime host's tests) on the same guest .wasm, against the fixture server and the
// Python SDK peer, and the line format compared with the wasmtime host's CLI.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { McpBox } from '../src/index.js';
import {
  assertConnected,
  call,
  callError,
  fastmcpEntry,
  fixtureEntry,
  mcpboxCli,
  nextEvent,
  open,
  ready,
  within,
} from './support.js';

let dirs = 0;
/** A fresh directory, removed when the test ends. */
function scratch(t) {
  const dir = join(tmpdir(), `mcpbox-js-audit-${process.pid}-${++dirs}`);
  rmSync(dir, { recursive: true, force: true });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const lines = (file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

test('every call decision is a line in the configured file and an audit event', async (t) => {
  const dir = scratch(t);
  const config = {
    mcpServers: { fx: fixtureEntry(), py: fastmcpEntry() },
    permissions: { deny: ['mcp__fx__crash'], ask: ['mcp__fx__add'] },
    // `${VAR}` works; a relative path is taken from the configuration file's directory.
    audit: { file: '${MCPBOX_SURELY_UNSET:-trail}/audit.jsonl', arguments: true },
  };
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'mcp.json');
  writeFileSync(configFile, JSON.stringify(config));
  const box = await within(McpBox.open({ configFile, approvals: true }), 'the runtime opens');
  t.after(() => box.shutdown());
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'py');
  const audits = [];
  box.on('event', (e) => e.type === 'audit' && audits.push(e.record));

  await call(box, 'mcp__fx__echo', { text: 'logged' });
  assert.equal((await callError(box, 'mcp__fx__crash', {})).kind, 'denied');
  const asked = nextEvent(box, (e) => e.type === 'input-requested');
  const add = box.callTool('mcp__fx__add', { a: 1, b: 2 });
  await box.answerInput((await asked).id, { action: 'accept', content: {} });
  assert.equal((await within(add, 'add answers')).text, '3');
  assert.equal((await call(box, 'mcp__py__fail', { message: 'boom' })).isError, true);
  await box.shutdown();

  const records = lines(join(dir, 'trail', 'audit.jsonl'));
  assert.equal(records.length, 4, JSON.stringify(records));
  assert.deepEqual(records, audits, 'the events are the lines');
  const [echo, crash, added, failed] = records;
  assert.deepEqual(Object.keys(echo), [
    'time',
    'call',
    'server',
    'tool',
    'decision',
    'rule',
    'outcome',
    'durationMs',
    'arguments',
  ]);
  assert.equal(echo.server, 'fx');
  assert.equal(echo.decision, 'allow');
  assert.equal(echo.rule, '`allow` (permissions.default)');
  assert.equal(echo.outcome, 'ok');
  assert.deepEqual(echo.arguments, { text: 'logged' });
  assert.match(echo.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepEqual([crash.decision, crash.outcome, crash.call], ['deny', 'denied', null]);
  assert.equal(crash.rule, `\`mcp__fx__crash\` (permissions.deny[0] in ${configFile})`);
  assert.deepEqual([added.decision, added.approval, added.outcome], ['ask', 'once', 'ok']);
  assert.deepEqual([failed.server, failed.outcome], ['py', 'tool-error']);
});

test('the auditFile option wins, arguments stay out by default, and no secret is written', async (t) => {
  const dir = scratch(t);
  const file = join(dir, 'embedder.jsonl');
  process.env.MCPBOX_AUDIT_TEST_SECRET = 'hunter2-from-the-environment';
  t.after(() => delete process.env.MCPBOX_AUDIT_TEST_SECRET);
  const box = await open(
    t,
    // The secret reaches the server's environment, and the server's stderr; never the trail.
    { fx: { ...fixtureEntry(), env: { TOKEN: '${MCPBOX_AUDIT_TEST_SECRET}' } } },
    { auditFile: file },
  );
  assertConnected(await ready(box), 'fx');
  const audited = nextEvent(box, (e) => e.type === 'audit');
  assert.equal((await call(box, 'mcp__fx__fail', { message: 'secret-ish' })).isError, true);
  await audited;
  await box.shutdown();
  const text = readFileSync(file, 'utf8');
  const [record] = lines(file);
  assert.equal(record.outcome, 'tool-error');
  assert.ok(!('arguments' in record), text);
  assert.ok(!text.includes('secret-ish') && !text.includes('hunter2'), text);
});

test('audit events without a file; an audit file that cannot be opened fails the open', async (t) => {
  const box = await open(t, { fx: fixtureEntry() }, { auditEvents: true, auditArguments: true });
  assertConnected(await ready(box), 'fx');
  const audited = nextEvent(box, (e) => e.type === 'audit');
  await call(box, 'mcp__fx__echo', { text: 'e' });
  const { record } = await audited;
  assert.deepEqual([record.tool, record.arguments], ['mcp__fx__echo', { text: 'e' }]);

  await assert.rejects(
    McpBox.open({ configText: JSON.stringify({ mcpServers: {}, audit: { file: '/proc/mcpbox-cannot/a.jsonl' } }) }),
    (e) => e.name === 'ConfigError' && e.message.includes('/proc/mcpbox-cannot'),
  );
});

test('the JavaScript and the wasmtime host write the same line', async (t) => {
  const dir = scratch(t);
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'mcp.json');
  writeFileSync(
    configFile,
    JSON.stringify({ mcpServers: { fx: fixtureEntry() }, permissions: { deny: ['mcp__fx__crash'] } }),
  );
  const cli = join(dir, 'cli.jsonl');
  const js = join(dir, 'js.jsonl');
  const run = promisify(execFile);
  await run(mcpboxCli(), ['--trust', '--config', configFile, '--audit', cli, 'call', 'mcp__fx__echo', '{"text":"x"}']);
  await assert.rejects(run(mcpboxCli(), ['--trust', '--config', configFile, '--audit', cli, 'call', 'mcp__fx__crash', '{}']));
  const box = await within(McpBox.open({ configFile, auditFile: js }), 'the runtime opens');
  t.after(() => box.shutdown());
  assertConnected(await ready(box), 'fx');
  await call(box, 'mcp__fx__echo', { text: 'x' });
  await callError(box, 'mcp__fx__crash', {});
  await box.shutdown();
  // Equal but for the time, the call handle and the duration.
  const strip = ({ time, call: _, durationMs, ...rest }) => {
    assert.ok(typeof time === 'string' && Number.isInteger(durationMs));
    return rest;
  };
  assert.deepEqual(lines(js).map(strip), lines(cli).map(strip));
});
