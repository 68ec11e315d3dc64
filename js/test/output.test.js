// Output limits through the JavaScript host: the assertions of tests/tests/all/e2e/output.rs
// (the wasmtime host's tests) on the same guest .wasm, against the fixture server and
// the TypeScript SDK peer. The guest cuts and links; this host writes the files
// (src/blobs.js).

import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { McpBox } from '../src/index.js';
import { assertConnected, call, fixtureEntry, open, ready, tsEntry, within } from './support.js';

let dirs = 0;
/** A fresh result directory, removed when the test ends. */
function resultsDir(t) {
  const dir = join(tmpdir(), `mcpbox-js-results-${process.pid}-${++dirs}`);
  rmSync(dir, { recursive: true, force: true });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The bytes of the file a `resource_link` block points to. */
function linked(block) {
  assert.equal(block.type, 'resource_link', JSON.stringify(block));
  return readFileSync(fileURLToPath(block.uri));
}

test('a large result is cut and kept whole in a file of the result directory', async (t) => {
  const dir = resultsDir(t);
  const box = await open(t, { fx: fixtureEntry() }, { resultsDir: dir });
  assertConnected(await ready(box), 'fx');
  const r = await call(box, 'mcp__fx__huge', { bytes: 300_000 });
  assert.equal(r.content.length, 3);
  const head = r.content[0].text;
  assert.equal(head.length, 100_000 - 1024);
  assert.match(head, /^x+$/);
  const note = r.content[1].text;
  assert.ok(
    note.startsWith(
      '[mcpbox: the result of mcp__fx__huge was 300 KB (over the 100 KB limit), so the first 98976 bytes of its text are above; the whole result is in file://',
    ),
    note,
  );
  const whole = linked(r.content[2]);
  assert.equal(whole.length, 300_000);
  assert.equal(r.content[2].size, 300_000);
  assert.ok(fileURLToPath(r.content[2].uri).startsWith(dir), r.content[2].uri);
  assert.equal(r.text, `${head}\n${note}`);
});

test('images go to files unless the embedder wants them inline', async (t) => {
  const dir = resultsDir(t);
  const box = await open(t, { fx: fixtureEntry() }, { resultsDir: dir });
  assertConnected(await ready(box), 'fx');
  const r = await call(box, 'mcp__fx__image', {});
  assert.equal(r.content[0].text, 'a red pixel');
  assert.equal(r.content[1].mimeType, 'image/png');
  const png = linked(r.content[1]);
  assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'the image, decoded');
  assert.ok(!JSON.stringify(r.content).includes('iVBOR'), 'no base64 passes');

  const inline = await open(t, { fx: fixtureEntry() }, { inlineMedia: true, resultsDir: null });
  assertConnected(await ready(inline), 'fx');
  assert.equal((await call(inline, 'mcp__fx__image', {})).content[1].type, 'image');
});

test('maxResultBytes overrides the configuration; without a directory the rest is dropped', async (t) => {
  const box = await within(
    McpBox.open({
      configText: JSON.stringify({ mcpServers: { ts: tsEntry(), fx: fixtureEntry() }, output: { maxBytes: 50 } }),
      origin: 'test.mcp.json',
      maxResultBytes: 5000,
      resultsDir: null,
    }),
    'the runtime opens',
  );
  t.after(() => box.shutdown());
  const servers = await ready(box);
  assertConnected(servers, 'fx');
  assertConnected(servers, 'ts');
  const r = await call(box, 'mcp__fx__huge', { bytes: 6_000 });
  assert.ok(
    r.text.endsWith(
      'the rest is gone: the host did not keep it (denied: no result directory is configured (the resultsDir option))]',
    ),
    r.text,
  );
  assert.equal(r.content.length, 2);
  assert.equal((await call(box, 'mcp__fx__huge', { bytes: 4_000 })).text.length, 4_000, 'under the limit: untouched');
  // A real SDK server's small result passes untouched too (the configuration's 50 bytes lost).
  assert.equal((await call(box, 'mcp__ts__greet', { name: 'Ada' })).text, 'Hello, Ada!');
});

test('result files stop at maxResultFilesBytes', async (t) => {
  const dir = resultsDir(t);
  const box = await open(t, { fx: fixtureEntry() }, { resultsDir: dir, maxResultBytes: 1000, maxResultFilesBytes: 5000 });
  assertConnected(await ready(box), 'fx');
  const first = await call(box, 'mcp__fx__huge', { bytes: 4_000 });
  assert.equal(linked(first.content[2]).length, 4_000);
  const second = await call(box, 'mcp__fx__huge', { bytes: 4_000 });
  assert.ok(second.text.includes("this runtime's result files reached their limit of 5000 bytes"), second.text);
});
