// Hot reload in the JavaScript host, against the fixture server: the assertions of
// tests/tests/all/e2e/reload.rs on the same guest .wasm — a diff applied with calls in
// flight, the watcher through bad saves, a storm of saves applied once.

import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { CallError, ConfigError, McpBox } from '../src/index.js';
import { ScriptedServer } from './scripted.js';
import { assertConnected, call, configText, fixtureEntry, nextEvent, ready, status, within } from './support.js';

/** A config file in a fresh directory, removed when the test ends. */
function configFile(t, servers) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-js-reload-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'mcp.json');
  writeFileSync(path, configText(servers));
  return path;
}

/** Saves as editors do: a new file renamed over the old one. */
function save(path, text) {
  writeFileSync(`${path}.swp`, text);
  renameSync(`${path}.swp`, path);
}

async function openFile(t, path, options = {}) {
  const box = await within(McpBox.open({ configFile: path, ...options }), 'the runtime opens');
  t.after(() => box.shutdown());
  return box;
}

const isReload = (e) => e.type === 'reloaded' || e.type === 'reload-failed';

test('a reload keeps unchanged servers and their calls', async (t) => {
  const sleepy = fixtureEntry(['--announce-sleeps']);
  const path = configFile(t, { keep: sleepy, gone: sleepy, change: sleepy });
  const box = await openFile(t, path);
  for (const name of ['keep', 'gone', 'change']) {
    assertConnected(await ready(box), name);
  }
  const sleeping = async (server) => {
    const started = nextEvent(box, (e) => e.type === 'log' && e.server === server && e.message === 'sleep started');
    const result = box.callTool(`mcp__${server}__sleep`, { ms: 3000 }).then(
      (r) => ({ ok: r }),
      (error) => ({ error }),
    );
    await started;
    // Wrapped: an async function returning the promise itself would wait for it.
    return { result };
  };
  const { result: keep } = await sleeping('keep');
  const { result: gone } = await sleeping('gone');
  const { result: change } = await sleeping('change');

  writeFileSync(
    path,
    configText({ keep: sleepy, change: fixtureEntry(['--announce-sleeps', '--name', 'changed']), new: fixtureEntry() }),
  );
  const announced = nextEvent(box, isReload);
  const report = await within(box.reload(), 'the reload applies');
  assert.deepEqual(report.unchanged, ['keep']);
  assert.deepEqual(report.removed, ['gone']);
  assert.deepEqual(report.restarted, ['change']);
  assert.deepEqual(report.added, ['new']);
  assert.equal(report.origin, path);
  assert.equal(report.fileEvents, 0);
  assert.deepEqual((await announced).report, report);

  for (const [outcome, why] of [
    [gone, /server `gone` was removed from the configuration by a reload of/],
    [change, /server `change` was restarted by a reload of/],
  ]) {
    const { error } = await within(outcome, 'the call ends');
    assert.ok(error instanceof CallError, `${error}`);
    assert.equal(error.kind, 'server-unavailable');
    assert.match(error.message, why);
  }
  const { ok } = await within(keep, 'the kept call ends');
  assert.equal(ok.text, 'slept 3000');

  const servers = await ready(box);
  assert.deepEqual(
    servers.map((s) => s.name),
    ['keep', 'change', 'new'],
  );
  assert.equal(status(servers, 'change').serverName, 'changed');
  assert.equal((await call(box, 'mcp__new__echo', { text: 'hi' })).text, 'hi');
});

test('the watcher applies saves and keeps running through bad ones', async (t) => {
  const path = configFile(t, { a: fixtureEntry() });
  const box = await openFile(t, path, { watchConfig: true });
  assertConnected(await ready(box), 'a');

  let next = nextEvent(box, isReload);
  save(path, configText({ a: fixtureEntry(), b: fixtureEntry() }));
  let e = await next;
  assert.equal(e.type, 'reloaded');
  assert.deepEqual(e.report.added, ['b']);
  assert.ok(e.report.fileEvents >= 1);
  assertConnected(await ready(box), 'b');

  next = nextEvent(box, isReload);
  save(path, '{\n  "mcpServers": {\n    "a": {"command": }\n  }\n}\n');
  e = await next;
  assert.equal(e.type, 'reload-failed');
  assert.match(e.error, /mcp\.json:3:/);
  assert.equal((await call(box, 'mcp__b__echo', { text: 'still' })).text, 'still');

  next = nextEvent(box, isReload);
  const a = JSON.stringify(fixtureEntry());
  save(path, `{"mcpServers": {"a": ${a}, "b": {"command": "/nonexistent"}, "b": ${a}}}`);
  e = await next;
  assert.deepEqual(e.report.unchanged, ['a', 'b']);
  assert.ok(e.report.issues.some((i) => i.server === 'b' && /more than once/.test(i.message)));
  assert.deepEqual(box.configIssues(), e.report.issues);

  next = nextEvent(box, isReload);
  unlinkSync(path);
  e = await next;
  assert.equal(e.type, 'reload-failed');
  assert.match(e.error, /was deleted/);
  assertConnected(box.servers(), 'a');

  next = nextEvent(box, isReload);
  writeFileSync(path, configText({ a: fixtureEntry() }));
  e = await next;
  assert.deepEqual(e.report.removed, ['b']);
  assert.deepEqual(e.report.unchanged, ['a']);
});

test('a storm of saves is applied once, as its last state', async (t) => {
  const path = configFile(t, { a: fixtureEntry() });
  // A quiet time well above the storm's gaps, so a slow machine does not split it.
  const box = await openFile(t, path, { watchConfig: true, watchDebounceMs: 1000 });
  assertConnected(await ready(box), 'a');
  const reloads = [];
  box.on('event', (e) => {
    if (isReload(e)) {
      reloads.push(e);
    }
  });
  const applied = nextEvent(box, isReload);
  // 100 saves in a second (the pacing makes the storm; nothing waits on it).
  for (let i = 0; i < 100; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    let text;
    if (i === 99) {
      text = configText({ a: fixtureEntry(), last: fixtureEntry() });
    } else if (i % 10 === 5) {
      text = '{ "mcpServers": ';
    } else {
      text = configText({ a: fixtureEntry(), [`s${i}`]: fixtureEntry() });
    }
    if (i % 2 === 0) {
      save(path, text);
    } else {
      writeFileSync(path, text);
    }
  }
  const e = await applied;
  assert.equal(e.type, 'reloaded');
  assert.deepEqual(e.report.added, ['last']);
  assert.ok(e.report.fileEvents >= 10, `${e.report.fileEvents} events folded`);
  // Nothing else was applied: a reload asked for now is the next one.
  const again = await box.reload();
  assert.deepEqual(again.added, []);
  assert.deepEqual(
    reloads.map((r) => r.type),
    ['reloaded', 'reloaded'],
  );
  const servers = await ready(box);
  assert.deepEqual(
    servers.map((s) => s.name),
    ['a', 'last'],
  );
});

test('reloadText, and a box opened from text', async (t) => {
  const box = await within(
    McpBox.open({ configText: configText({ a: fixtureEntry() }), origin: 'test.mcp.json' }),
    'the runtime opens',
  );
  t.after(() => box.shutdown());
  await assert.rejects(box.reload(), /use reloadText/);
  const report = await box.reloadText('edited.json', configText({ b: fixtureEntry() }));
  assert.deepEqual([report.added, report.removed], [['b'], ['a']]);
  await assert.rejects(box.reloadText('edited.json', '[1, 2'), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /^edited\.json:1:/);
    return true;
  });
  assertConnected(await ready(box), 'b');
});

test('a remote server entry reloads: a new URL moves the server, an unchanged one keeps its session', async (t) => {
  const first = await ScriptedServer.start();
  const second = await ScriptedServer.start();
  t.after(() => Promise.all([first.close(), second.close()]));
  const entry = (url) => ({ type: 'http', url, headers: { 'X-Entry': 'remote' } });
  const path = configFile(t, { r: entry(first.url), local: fixtureEntry() });
  const box = await openFile(t, path);
  assertConnected(await ready(box), 'r');
  assert.equal((await call(box, 'mcp__r__echo', { text: 'first' })).text, 'first');
  assert.equal(first.sessions, 1);

  // The same entry again: still the same session, nothing sent to the other server.
  let report = await within(box.reload(), 'the reload applies');
  assert.deepEqual(report.unchanged, ['r', 'local']);
  assert.equal((await call(box, 'mcp__r__echo', { text: 'same' })).text, 'same');
  assert.equal(first.sessions, 1);
  assert.equal(second.seen.length, 0);

  // Another URL: the server starts afresh at the new one.
  writeFileSync(path, configText({ r: entry(second.url), local: fixtureEntry() }));
  report = await within(box.reload(), 'the reload applies');
  assert.deepEqual(report.restarted, ['r']);
  assert.deepEqual(report.unchanged, ['local']);
  assertConnected(await ready(box), 'r');
  assert.equal((await call(box, 'mcp__r__echo', { text: 'second' })).text, 'second');
  assert.equal(second.rpc('tools/call').length, 1);
  assert.equal(second.rpc('tools/call')[0].headers['x-entry'], 'remote');
  assert.equal(first.rpc('tools/call').length, 2, 'nothing more went to the old URL');
});
