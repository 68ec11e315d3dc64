// The `state` import: what the guest remembers about servers (their MCP era) is kept in
// `state.json` in the cache directory, in the wasmtime host's format, so both hosts
// share it and a second run does not probe again.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { StateStore, defaultCacheDir, serialize } from '../src/state.js';
import { ScriptedServer } from './scripted.js';
import { assertConnected, open, ready } from './support.js';

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-js-state-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the cache directory is found as the wasmtime host finds it', () => {
  assert.equal(defaultCacheDir({ MCPBOX_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x', HOME: '/h' }), '/c');
  assert.equal(defaultCacheDir({ MCPBOX_CACHE_DIR: '', XDG_CACHE_HOME: '/x', HOME: '/h' }), '/x/mcpbox');
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: '', HOME: '/h' }), '/h/.cache/mcpbox');
  assert.equal(defaultCacheDir({ HOME: '' }), null);
  assert.equal(defaultCacheDir({}), null);
});

test('entries survive a new store, stay bounded and are written as serde_json writes them', (t) => {
  const dir = join(tempDir(t), 'nested');
  const stateStore = new StateStore(dir);
  assert.equal(stateStore.get('era/a/1'), undefined);
  stateStore.set('era/b/2', '2026-07-28');
  stateStore.set('era/a/1', 'legacy');
  stateStore.set('k'.repeat(1025), 'too long a key');
  stateStore.set('10', 'a key that looks like an index');
  const text = readFileSync(join(dir, 'state.json'), 'utf8');
  assert.equal(
    text,
    '{\n  "10": "a key that looks like an index",\n  "era/a/1": "legacy",\n  "era/b/2": "2026-07-28"\n}',
  );
  const again = new StateStore(dir);
  assert.equal(again.get('era/a/1'), 'legacy');
  assert.equal(again.get('era/b/2'), '2026-07-28');
  // A damaged file is an empty store, not an error.
  writeFileSync(join(dir, 'state.json'), '{not json');
  assert.equal(new StateStore(dir).get('era/a/1'), undefined);
  // Without a directory it keeps entries in memory only.
  const inMemory = new StateStore(null);
  inMemory.set('k', 'v');
  assert.equal(inMemory.get('k'), 'v');
  assert.equal(serialize(new Map()), '{}');
});

test("a server's era is remembered across runtimes: the second run does not probe", async (t) => {
  const cacheDir = tempDir(t);
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const first = await open(t, { s: { url: server.url } }, { cacheDir });
  assertConnected(await ready(first), 's');
  await first.shutdown();
  const probes = server.rpc('server/discover').length;
  assert.ok(probes > 0, 'the first run probes the 2026 era');
  const state = JSON.parse(readFileSync(join(cacheDir, 'state.json'), 'utf8'));
  assert.ok(Object.keys(state).some((k) => k.startsWith('era/s/')), JSON.stringify(state));

  const second = await open(t, { s: { url: server.url } }, { cacheDir });
  assertConnected(await ready(second), 's');
  assert.equal(server.rpc('server/discover').length, probes, 'the second run knows the era');
  assert.equal(server.rpc('initialize').length, 2);
});
