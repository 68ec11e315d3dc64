// The two hosts side by side: the same configuration through the wasmtime host's CLI
// (`mcpbox --json`) and through the JavaScript host must give the same servers, the
// same tools, the same results and the same error texts. Any difference is a host bug
// (the guest is the same .wasm in both), so the comparison is exact.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { McpBox } from '../src/index.js';
import { ScriptedServer } from './scripted.js';
import { configText, everythingHttp, fixture, fixtureEntry, freePort, mcpboxCli, ready, within } from './support.js';

/** Runs the wasmtime host's CLI (`--trust`: the configurations are the test's own); resolves with its exit code, stdout and stderr. */
function cli(config, args) {
  return within(
    new Promise((resolve, reject) => {
      execFile(mcpboxCli(), ['--trust', '--config', config, ...args], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(error);
        } else {
          resolve({ code: error ? error.code : 0, stdout, stderr });
        }
      });
    }),
    `mcpbox ${args.join(' ')}`,
  );
}

/** Opens both hosts' view of `servers`: the config file for the CLI and a JS runtime. */
async function both(t, servers) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpbox-js-parity-'));
  const config = join(dir, '.mcp.json');
  writeFileSync(config, configText(servers));
  const box = await within(McpBox.open({ configFile: config }), 'the runtime opens');
  t.after(async () => {
    await box.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  return { config, box };
}

/** Calls `tool` in both hosts; returns the CLI's and the JS host's outcome. */
async function callBoth(config, box, tool, args, timeoutMs) {
  const flags = timeoutMs === undefined ? [] : ['--timeout', String(timeoutMs / 1000)];
  const viaCli = await cli(config, ['--json', 'call', tool, JSON.stringify(args), ...flags]);
  let viaJs;
  try {
    viaJs = { ok: await within(box.callTool(tool, args, { timeoutMs }), `${tool} answers`) };
  } catch (error) {
    viaJs = { error };
  }
  return { viaCli, viaJs };
}

test('servers and tools are the same in both hosts', async (t) => {
  const { config, box } = await both(t, {
    fx: fixtureEntry(['--name', 'fixture-one']),
    paged: fixtureEntry(['--tools', '10', '--page-size', '3']),
    weird: fixtureEntry(['--weird-names']),
    collide: fixtureEntry(['--collide']),
    old: fixtureEntry(['--protocol', '2024-11-05']),
    future: fixtureEntry(['--protocol', '1999-01-01']),
    dies: fixtureEntry(['--exit-on-init', '7', '--stderr-lines', '3']),
    missing: { command: '/nonexistent/mcp-server' },
    needs_var: { command: fixture(), env: { TOKEN: '${MCPBOX_TEST_SURELY_UNSET}' } },
    bad_cwd: { command: fixture(), cwd: '/nonexistent/dir' },
    off: { command: fixture(), enabled: false },
  });
  const servers = await ready(box);
  const cliServers = await cli(config, ['--json', 'servers']);
  assert.equal(cliServers.code, 0, cliServers.stderr);
  assert.deepEqual(servers, JSON.parse(cliServers.stdout));

  const cliTools = await cli(config, ['--json', 'tools']);
  assert.equal(cliTools.code, 0, cliTools.stderr);
  assert.deepEqual(box.tools(), JSON.parse(cliTools.stdout));
  assert.ok(box.tools().length > 50, `every server's tools are compared (${box.tools().length})`);
});

test('results and call errors are the same in both hosts', async (t) => {
  // `crashy` serves only the crash, so its stderr tail is the same in both hosts whatever
  // else happened: the CLI starts afresh for every call while the JS runtime lives on,
  // and the CLI remembers each server's MCP era across runs (so skips the probe).
  const { config, box } = await both(t, { fx: fixtureEntry(), crashy: fixtureEntry() });
  await ready(box);
  const results = [
    ['mcp__fx__echo', { text: 'hello' }],
    ['mcp__fx__add', { a: 2, b: 3.5 }],
    ['mcp__fx__fail', { message: 'it broke' }],
    ['mcp__fx__multi', { parts: ['one', 'two'] }],
    ['mcp__fx__image', {}],
  ];
  for (const [tool, args] of results) {
    const { viaCli, viaJs } = await callBoth(config, box, tool, args);
    assert.ok(viaJs.ok, `${tool}: ${viaJs.error}`);
    assert.equal(viaCli.code, viaJs.ok.isError ? 1 : 0, viaCli.stderr);
    assert.deepEqual(viaJs.ok, JSON.parse(viaCli.stdout), tool);
  }

  const failures = [
    ['mcp__fx__echo', { text: 5 }, undefined, 'invalid-arguments'],
    ['mcp__fx__nope', {}, undefined, 'unknown-tool'],
    ['mcp__fx__sleep', { ms: 20_000 }, 300, 'timeout'],
    // Last: the crash ends the server (in the CLI's own copy too).
    ['mcp__crashy__crash', { code: 3 }, undefined, 'server-unavailable'],
  ];
  for (const [tool, args, timeoutMs, kind] of failures) {
    const { viaCli, viaJs } = await callBoth(config, box, tool, args, timeoutMs);
    assert.ok(viaJs.error, `${tool} should fail`);
    assert.equal(viaJs.error.kind, kind, viaJs.error.message);
    assert.equal(viaCli.stderr, `error: ${viaJs.error.message}\n`, tool);
  }
});

test('remote servers, their failures and their errors are the same in both hosts', async (t) => {
  const streamable = await everythingHttp(t, 'streamableHttp');
  const sse = await everythingHttp(t, 'sse');
  const scripted = await ScriptedServer.start();
  t.after(() => scripted.close());
  const port = await freePort();
  const { config, box } = await both(t, {
    everything: { type: 'http', url: streamable.url },
    old: { type: 'sse', url: sse.url },
    s: { url: scripted.url, headers: { 'X-Fixed': 'plain' } },
    gone: { type: 'http', url: `http://127.0.0.1:${port}/mcp` },
    bad_name: { url: scripted.url, headers: { 'X A': 'v' } },
    bad_value: { url: scripted.url, headers: { 'X-A': 'a\u0001b' } },
    bad_var: { url: scripted.url, headers: { Authorization: 'Bearer ${MCPBOX_TEST_SURELY_UNSET}' } },
    bad_port: { url: 'http://127.0.0.1:99999/mcp' },
  });
  const servers = await ready(box);
  const cliServers = await cli(config, ['--json', 'servers']);
  assert.equal(cliServers.code, 0, cliServers.stderr);
  assert.deepEqual(servers, JSON.parse(cliServers.stdout));
  const cliTools = await cli(config, ['--json', 'tools']);
  assert.deepEqual(box.tools(), JSON.parse(cliTools.stdout));

  for (const [tool, args] of [
    ['mcp__everything__echo', { message: 'hi' }],
    ['mcp__everything__get-sum', { a: 2, b: 40 }],
    ['mcp__old__echo', { message: 'hi' }],
    ['mcp__s__echo', { text: 'hi' }],
  ]) {
    const { viaCli, viaJs } = await callBoth(config, box, tool, args);
    assert.ok(viaJs.ok, `${tool}: ${viaJs.error}`);
    assert.deepEqual(viaJs.ok, JSON.parse(viaCli.stdout), tool);
  }
  // An HTTP 500: the same error text. (Each host's call meets one failure.)
  scripted.failCalls = 1;
  const viaCli = await cli(config, ['--json', 'call', 'mcp__s__echo', '{"text":"x"}']);
  scripted.failCalls = 1;
  const viaJs = await within(box.callTool('mcp__s__echo', { text: 'x' }), 'the call fails').catch((e) => e);
  assert.equal(viaJs.kind, 'protocol', viaJs.message);
  assert.equal(viaCli.stderr, `error: ${viaJs.message}\n`);
});
