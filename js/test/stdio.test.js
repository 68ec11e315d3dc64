// The stdio transport (src/stdio.js) at its own level, without the guest: real child
// processes, and the item stream the driver would receive. Flow control, how a
// connection ends, the stderr tail and start-up failures, each with the wording of
// host/src/transport/stdio.rs.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { INBOUND_QUEUE, StdioServer, describeSystemError } from '../src/stdio.js';
import { within } from './support.js';

const shell = (script) => ({ command: '/bin/sh', args: ['-c', script], env: { PATH: process.env.PATH } });

/**
 * Starts `spec` and collects its items until `closed`. `consume(server, items,
 * paused)` plays the driver; by default it takes everything at once.
 */
async function run(spec, { maxMessageBytes = 1024 * 1024, consume } = {}) {
  const items = [];
  let server;
  let finish;
  const closed = new Promise((resolve) => {
    finish = resolve;
  });
  server = await StdioServer.start(spec, {
    maxMessageBytes,
    onItems: (batch, paused) => {
      items.push(...batch);
      if (consume) {
        consume(server, items, paused);
      } else {
        server.taken(items.length);
      }
      if (batch.some((item) => item.closed !== undefined)) {
        finish();
      }
    },
  });
  await within(closed, 'the connection closes');
  await within(server.exited, 'the process exits');
  return { server, items };
}

test('a flood is read at most INBOUND_QUEUE items ahead of the guest', async () => {
  const lines = 300_000;
  let outstanding = 0;
  let pauses = 0;
  const { items } = await run(shell(`yes '{}' | head -n ${lines}`), {
    consume: (server, items, paused) => {
      outstanding = Math.max(outstanding, server.delivered - server.takenByGuest);
      if (paused) {
        pauses += 1;
        // The guest takes everything a moment later, as the driver does.
        setImmediate(() => server.taken(items.length));
      }
    },
  });
  assert.equal(items.filter((i) => i.message === '{}').length, lines);
  assert.deepEqual(items.at(-1), { closed: 'exited (exit code 0)' });
  assert.ok(pauses > 0, 'reading paused');
  // Beyond the queue: the pipe read that crossed it (64 KiB of 3-byte lines), and one
  // more that Node reads whatever the pause when the process exits (it resumes a child's
  // stdio on exit so that nothing hangs).
  const pipeRead = 65536 / 3;
  assert.ok(outstanding <= INBOUND_QUEUE + 2 * pipeRead, `${outstanding} items were outstanding`);
});

test('a server that closes stdout but keeps running is stopped', async () => {
  const { server, items } = await run(shell('echo \'{"a":1}\'; exec 1>&-; sleep 300'));
  assert.deepEqual(items, [
    { message: '{"a":1}' },
    { closed: 'closed its stdout while still running, so it was stopped' },
  ]);
  assert.equal(server.diagnostics().exitStatus, 'signal 15');
});

test('the last line counts without a newline; non-JSON lines are skipped and counted', async () => {
  const { server, items } = await run(shell("printf 'hello\\n\\n{\"a\":1}\\n[2]'; exit 4"));
  assert.deepEqual(items, [{ message: '{"a":1}' }, { message: '[2]' }, { closed: 'exited (exit code 4)' }]);
  const d = server.diagnostics();
  assert.equal(d.skippedLines, 1n);
  assert.deepEqual(d.stderrTail, ['(stdout, skipped) hello']);
  assert.equal(d.exitStatus, 'exit code 4');
});

test('an oversized message is reported with its size and edges, once', async () => {
  const big = `{"jsonrpc":"2.0","id":12,"result":"${'x'.repeat(5000)}"}`;
  const { server, items } = await run(shell(`printf '%s\\n{"ok":1}\\n' '${big}'`), { maxMessageBytes: 1000 });
  const edge = (text) => Buffer.from(text);
  assert.deepEqual(items, [
    { tooLarge: { size: BigInt(big.length), cap: 1000n, head: edge(big.slice(0, 256)), tail: edge(big.slice(-256)) } },
    { message: '{"ok":1}' },
    { closed: 'exited (exit code 0)' },
  ]);
  assert.equal(server.diagnostics().oversizedMessages, 1n);
});

test('stderr keeps the last 20 lines, long lines as a marker', async () => {
  const script = `for i in $(seq 1 25); do echo "line $i" >&2; done; head -c 3000 /dev/zero | tr '\\0' x >&2; echo >&2`;
  const { server } = await run(shell(script));
  const tail = server.diagnostics().stderrTail;
  assert.equal(tail.length, 20);
  assert.equal(tail[0], 'line 7');
  assert.equal(tail.at(-2), 'line 25');
  assert.equal(tail.at(-1), '[a stderr line of 3000 bytes, not kept]');
});

test('a command that cannot start is unreachable, in the words of the wasmtime host', () => {
  const start = (spec) => StdioServer.start({ args: [], env: {}, ...spec }, { maxMessageBytes: 1024, onItems() {} });
  assert.throws(() => start({ command: '/nonexistent/server' }), {
    tag: 'unreachable',
    val: 'could not start `/nonexistent/server`: No such file or directory (os error 2)',
  });
  assert.throws(() => start({ command: '/bin/sh', cwd: '/nonexistent/dir' }), {
    tag: 'unreachable',
    val: 'could not start `/bin/sh` in /nonexistent/dir: No such file or directory (os error 2)',
  });
  assert.throws(() => start({ command: '/etc/passwd' }), {
    tag: 'unreachable',
    val: 'could not start `/etc/passwd`: Permission denied (os error 13)',
  });
});

test("the errno `start` reports at once is the one Node's spawn reports a tick later", async (t) => {
  // `start` must answer before Node hands over the errno, so spawnFailure works it out;
  // here each case's answer is checked against the error Node's own spawn emits.
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-spawn-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'not-executable'), '#!/bin/sh\n');
  mkdirSync(join(dir, 'bin', 'a-directory'), { recursive: true });
  writeFileSync(join(dir, 'bin', 'not-executable'), '#!/bin/sh\n');
  const cases = [
    { command: '/nonexistent/server' },
    { command: 'no-such-command-anywhere', env: { PATH: process.env.PATH } },
    { command: 'no-such-command', env: {} },
    { command: '/bin/sh', cwd: '/nonexistent/dir' },
    { command: '/bin/sh', cwd: join(dir, 'not-executable') },
    { command: join(dir, 'not-executable') },
    { command: './not-executable', cwd: dir },
    { command: join(dir, 'bin') },
    { command: 'a-directory', env: { PATH: join(dir, 'bin') } },
    { command: 'not-executable', env: { PATH: `/nonexistent:${join(dir, 'bin')}:/usr/bin` } },
    { command: 'sh', env: { PATH: `${join(dir, 'bin')}:/nonexistent` }, cwd: dir },
  ];
  for (const c of cases) {
    const spec = { args: [], env: {}, ...c };
    const node = await new Promise((resolve) => {
      let child;
      try {
        child = spawn(spec.command, spec.args, { env: spec.env, cwd: spec.cwd, stdio: 'ignore' });
      } catch (error) {
        resolve(error);
        return;
      }
      child.once('error', resolve);
      child.once('spawn', () => {
        child.kill();
        resolve(null);
      });
    });
    const label = JSON.stringify(c);
    const start = () => StdioServer.start(spec, { maxMessageBytes: 1024, onItems() {} });
    if (node === null) {
      assert.doesNotThrow(() => start().close(), label);
    } else {
      const place = spec.cwd === undefined ? '' : ` in ${spec.cwd}`;
      const val = `could not start \`${spec.command}\`${place}: ${describeSystemError(node)}`;
      assert.throws(start, { tag: 'unreachable', val }, label);
    }
  }
});
