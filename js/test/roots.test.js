// Roots through the JavaScript host: the assertions of tests/tests/all/e2e/roots.rs on the
// same guest .wasm, against the reference filesystem server, which allows exactly the
// client's roots once it has asked for them.

import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';

import { McpBox } from '../src/index.js';
import { PATIENCE_MS, assertConnected, call, npmBin, ready, within } from './support.js';

function dir(t, tag, file) {
  // The filesystem server resolves symlinks; compare against the real path.
  const d = realpathSync(mkdtempSync(join(tmpdir(), `mcpbox-js-roots-${tag}-`)));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  writeFileSync(join(d, file), `in ${tag}`);
  return d;
}

async function openBox(t, config, options = {}) {
  const box = await within(
    McpBox.open({ configText: JSON.stringify(config), origin: 'roots.mcp.json', ...options }),
    'the runtime opens',
  );
  t.after(() => box.shutdown());
  assertConnected(await ready(box), 'fs');
  return box;
}

/** Waits until the server allows exactly `dirs` (it asks for roots on its own schedule). */
async function awaitAllowed(box, dirs) {
  const deadline = Date.now() + PATIENCE_MS;
  const want = [...dirs].sort();
  for (;;) {
    const text = (await call(box, 'mcp__fs__list_allowed_directories', {})).text;
    const have = text.split('\n').slice(1).sort();
    if (JSON.stringify(have) === JSON.stringify(want)) return;
    assert.ok(Date.now() < deadline, `the server never allowed ${want}; it allows ${text}`);
    await sleep(50);
  }
}

async function readable(box, path) {
  const r = await call(box, 'mcp__fs__read_text_file', { path });
  return !r.isError;
}

test('the filesystem server follows the configured roots and setRoots', async (t) => {
  const a = dir(t, 'a', 'a.txt');
  const b = dir(t, 'b', 'b.txt');
  const box = await openBox(t, {
    roots: [b],
    mcpServers: { fs: { command: npmBin('mcp-server-filesystem'), args: [a] } },
  });
  await awaitAllowed(box, [b]);
  assert.equal(await readable(box, join(b, 'b.txt')), true);
  assert.equal(await readable(box, join(a, 'a.txt')), false);

  await box.setRoots([{ uri: `file://${a}`, name: 'a' }]);
  await awaitAllowed(box, [a]);
  assert.equal(await readable(box, join(a, 'a.txt')), true);
  assert.equal(await readable(box, join(b, 'b.txt')), false);

  await box.setRoots(null);
  await awaitAllowed(box, [b]);
  await assert.rejects(box.setRoots(['relative/dir']), (e) => e.message.includes('root 0') && e.message.includes('absolute path'));
  await assert.rejects(box.setRoots('not a list'), TypeError);
  await awaitAllowed(box, [b]);
});

test('McpBox.open roots reach the first session, and a server without roots gains them', async (t) => {
  const a = dir(t, 'a', 'a.txt');
  const b = dir(t, 'b', 'b.txt');
  const fs = { command: npmBin('mcp-server-filesystem'), args: [a] };
  const opened = await openBox(t, { mcpServers: { fs } }, { roots: [b] });
  await awaitAllowed(opened, [b]);

  const plain = await openBox(t, { mcpServers: { fs } });
  await awaitAllowed(plain, [a]);
  await plain.setRoots([b]);
  await within(plain.ready(), 'the server reconnects');
  await awaitAllowed(plain, [b]);
});
