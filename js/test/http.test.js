// Remote servers through the JavaScript host: the guest speaks Streamable HTTP and
// legacy HTTP+SSE over this host's `wasi:http` (src/wasi_http.js) under its grants
// (src/remote.js), against the pinned npm and PyPI servers in their HTTP modes, and
// HTTP faults against a scripted server — the assertions of tests/tests/all/e2e/http.rs.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';

import { LegacyServer, Recorder, ScriptedServer } from './scripted.js';
import {
  PATIENCE_MS,
  assertConnected,
  call,
  callError,
  everythingHttp,
  fastmcpHttp,
  freePort,
  open,
  ready,
  nextEvent,
  status,
  tsHttp,
  within,
} from './support.js';

async function scripted(t) {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  return server;
}

test('streamable HTTP: server-everything', async (t) => {
  const { url } = await everythingHttp(t, 'streamableHttp');
  const box = await open(t, { everything: { type: 'http', url } });
  const servers = await ready(box);
  assertConnected(servers, 'everything');
  const s = status(servers, 'everything');
  assert.equal(s.transport, 'http');
  assert.ok(s.toolCount > 5, JSON.stringify(s));
  assert.equal(s.protocolVersion, '2025-11-25');

  assert.equal((await call(box, 'mcp__everything__echo', { message: 'over http' })).text, 'Echo: over http');
  // Progress notifications interleaved with the answer on one event stream.
  const long = await call(box, 'mcp__everything__trigger-long-running-operation', { duration: 1, steps: 3 });
  assert.match(long.text, /completed/);
  assert.match((await call(box, 'mcp__everything__get-sum', { a: 2, b: 40 })).text, /42/);
});

test('streamable HTTP: the Python SDK server', async (t) => {
  const { url } = await fastmcpHttp(t);
  const box = await open(t, { py: { url } });
  const servers = await ready(box);
  assertConnected(servers, 'py');
  assert.equal(status(servers, 'py').transport, 'http', 'inferred from `url`');
  assert.equal(status(servers, 'py').serverName, 'fastmcp-peer');

  assert.equal((await call(box, 'mcp__py__greet', { name: 'Ada' })).text, 'Hello, Ada!');
  assert.deepEqual((await call(box, 'mcp__py__add', { a: 2, b: 40 })).structuredContent, { result: 42 });
  const failed = await call(box, 'mcp__py__fail', { message: 'nope' });
  assert.ok(failed.isError && /nope/.test(failed.text), JSON.stringify(failed));
  // Concurrent calls share the session.
  const sums = await Promise.all([...Array(8).keys()].map((i) => call(box, 'mcp__py__add', { a: i, b: 1 })));
  assert.deepEqual(
    sums.map((r) => r.text),
    [...Array(8).keys()].map((i) => String(i + 1)),
  );
});

test('legacy SSE: server-everything', async (t) => {
  const { url } = await everythingHttp(t, 'sse');
  const box = await open(t, { old: { type: 'sse', url } });
  const servers = await ready(box);
  assertConnected(servers, 'old');
  assert.equal(status(servers, 'old').transport, 'sse');
  assert.equal((await call(box, 'mcp__old__echo', { message: 'over sse' })).text, 'Echo: over sse');
  assert.match((await call(box, 'mcp__old__get-sum', { a: 1, b: 2 })).text, /3/);
});

test('session headers, configured headers and DELETE on close', async (t) => {
  const server = await scripted(t);
  const box = await open(t, {
    s: { type: 'http', url: server.url, headers: { 'X-Home': '${HOME}', 'X-Fixed': 'plain' } },
  });
  assertConnected(await ready(box), 's');
  assert.equal((await call(box, 'mcp__s__echo', { text: 'hi' })).text, 'hi');
  await box.shutdown();
  // DELETE is sent as the connection closes; shutdown waits for it.
  const deletes = server.seen.filter((s) => s.method === 'DELETE');
  assert.equal(deletes.length, 1, JSON.stringify(server.seen.map((s) => s.method)));
  for (const request of server.seen) {
    assert.equal(request.headers['x-home'], process.env.HOME ?? '', JSON.stringify(request));
    assert.equal(request.headers['x-fixed'], 'plain');
    assert.equal(request.headers['user-agent'], 'mcpbox/0.1.0');
  }
  const [init] = server.rpc('initialize');
  assert.equal(init.headers['mcp-session-id'], undefined);
  assert.equal(init.headers['mcp-protocol-version'], undefined, 'nothing negotiated yet');
  assert.match(init.headers.accept, /text\/event-stream/);
  assert.match(init.headers.accept, /application\/json/);
  assert.equal(init.headers['content-type'], 'application/json');
  const [list] = server.rpc('tools/list');
  assert.equal(list.headers['mcp-session-id'], 'session-1');
  assert.equal(list.headers['mcp-protocol-version'], '2025-11-25');
  assert.equal(list.headers['mcp-method'], undefined, 'only from 2026-07-28 on');
  assert.equal(deletes[0].headers['mcp-session-id'], 'session-1');
});

test('HTTP 500 fails only that call', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 's');
  server.failCalls = 1;
  const error = await callError(box, 'mcp__s__echo', { text: 'x' });
  assert.equal(error.kind, 'protocol', error.message);
  assert.match(error.message, /HTTP 500/);
  assert.match(error.message, /boom/);
  assert.equal((await call(box, 'mcp__s__echo', { text: 'after' })).text, 'after');
  assertConnected(box.servers(), 's');
});

test('a cut stream is resumed without loss or duplicates', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 's');
  let logs = 0;
  box.on('event', (e) => {
    logs += e.type === 'log' && e.message === 'before the cut' ? 1 : 0;
  });
  server.cutNextCall = true;
  assert.equal((await call(box, 'mcp__s__echo', { text: 'resumed' })).text, 'resumed');
  const resume = server.seen.find((s) => s.method === 'GET' && s.headers['last-event-id'] !== undefined);
  assert.ok(resume, 'a GET resuming the stream');
  assert.equal(resume.headers['last-event-id'], 'e2', 'resumes after the last event seen');
  assert.equal(resume.headers.accept, 'text/event-stream');
  // One more call, then check the log line was delivered exactly once.
  await call(box, 'mcp__s__echo', { text: 'again' });
  assert.equal(logs, 1, 'the log line before the cut arrives once');
});

test('an answer streams to the guest as it arrives', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 's');
  const release = server.holdNextCall();
  const held = nextEvent(box, (e) => e.type === 'log' && e.message === 'held');
  const answer = call(box, 'mcp__s__echo', { text: 'after the log' });
  // The log line reaches the guest while its stream is still open (it stays open
  // until the test has seen the line), and the answer follows on the same stream.
  await within(held, 'the log line, while its stream is open');
  release();
  assert.equal((await answer).text, 'after the log');
});

test('an ended session is re-initialised once, transparently', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 's');
  assert.equal(server.sessions, 1);
  server.forgetSession = true;
  assert.equal((await call(box, 'mcp__s__echo', { text: 'new session' })).text, 'new session');
  assert.equal(server.sessions, 2, 're-initialised exactly once');
  const calls = server.rpc('tools/call');
  assert.equal(calls.length, 2, 'the call was retried once');
  assert.equal(calls[0].headers['mcp-session-id'], 'session-1');
  assert.equal(calls[1].headers['mcp-session-id'], 'session-2');
  assert.equal(server.rpc('notifications/initialized').length, 2);
  assertConnected(box.servers(), 's');
});

test('MCP 2026 headers name the method and the tool', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 's');
  // The guest probes with `server/discover` under the 2026-07-28 revision first.
  const probe = server.rpc('server/discover')[0];
  if (probe !== undefined) {
    assert.equal(probe.headers['mcp-protocol-version'], '2026-07-28');
    assert.equal(probe.headers['mcp-method'], 'server/discover');
  }
});

/**
 * A minimal 2026-07-28 server on 127.0.0.1:0 with one tool whose parameters carry
 * `x-mcp-header`; records the headers of every `tools/call`.
 */
async function paramHeaderServer(t) {
  const calls = [];
  const http = createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      const { id, method } = JSON.parse(Buffer.concat(parts).toString('utf8'));
      const answer = (result) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } }));
      };
      if (method === 'server/discover') {
        answer({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'p', version: '1' } });
      } else if (method === 'tools/list') {
        const schema = {
          type: 'object',
          properties: {
            region: { type: 'string', 'x-mcp-header': 'Region' },
            n: { type: 'integer', 'x-mcp-header': 'N' },
            on: { type: 'boolean', 'x-mcp-header': 'On' },
            gone: { type: 'string', 'x-mcp-header': 'Gone' },
            plain: { type: 'string' },
          },
        };
        answer({ tools: [{ name: 'where', inputSchema: schema }], ttlMs: 0, cacheScope: 'private' });
      } else if (method === 'tools/call') {
        calls.push(req.headers);
        answer({ content: [{ type: 'text', text: 'ok' }] });
      } else {
        res.writeHead(202).end();
      }
    });
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    http.closeAllConnections();
    return new Promise((resolve) => http.close(resolve));
  });
  return { url: `http://127.0.0.1:${http.address().port}/mcp`, calls };
}

test('x-mcp-header arguments become Mcp-Param headers (SEP-2243)', async (t) => {
  const server = await paramHeaderServer(t);
  const box = await open(t, { p: { type: 'http', url: server.url } });
  assertConnected(await ready(box), 'p');
  await call(box, 'mcp__p__where', { region: ' Zürich ', n: 42, on: false, gone: null, plain: 'x' });
  const [headers] = server.calls;
  assert.equal(headers['mcp-param-region'], `=?base64?${Buffer.from(' Zürich ').toString('base64')}?=`);
  assert.equal(headers['mcp-param-n'], '42');
  assert.equal(headers['mcp-param-on'], 'false');
  assert.equal(headers['mcp-param-gone'], undefined, 'null means absent');
  assert.equal(headers['mcp-param-plain'], undefined, 'not annotated');
  assert.equal(headers['mcp-name'], 'where');
});

test('an unreachable server fails with the reason', async (t) => {
  const port = await freePort();
  const box = await open(t, {
    gone: { type: 'http', url: `http://127.0.0.1:${port}/mcp` },
    'gone-sse': { type: 'sse', url: `http://127.0.0.1:${port}/sse` },
  });
  const servers = await ready(box);
  for (const name of ['gone', 'gone-sse']) {
    const s = status(servers, name);
    assert.equal(s.state, 'failed', JSON.stringify(s));
    assert.ok(s.error.includes(`127.0.0.1:${port}`), s.error);
    assert.match(s.error.toLowerCase(), /connection refused/);
  }
  // The guest keeps a remote server's notes (they end up in its error); the host has none.
  assert.equal(box.diagnostics('gone'), null);
});

test('an unset header variable fails that server only', async (t) => {
  const server = await scripted(t);
  const box = await open(t, {
    bad: { url: server.url, headers: { Authorization: 'Bearer ${MCPBOX_TEST_SURELY_UNSET}' } },
    good: { url: server.url },
  });
  const servers = await ready(box);
  assertConnected(servers, 'good');
  const bad = status(servers, 'bad');
  assert.equal(bad.state, 'failed');
  assert.match(bad.error, /headers\.Authorization/);
  assert.match(bad.error, /MCPBOX_TEST_SURELY_UNSET/);
});

test('an oversized event fails its call; the connection stays usable', { timeout: PATIENCE_MS }, async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { url: server.url } }, { maxMessageBytes: 600 });
  assertConnected(await ready(box), 's');
  // The guest reads the answer under the host's cap (`transport.max-message-bytes`) and
  // finds its id at the dropped event's edges.
  const error = await callError(box, 'mcp__s__echo', { text: 'x'.repeat(2000) });
  assert.equal(error.kind, 'protocol', error.message);
  assert.match(error.message, /cap 600/);
  assert.equal((await call(box, 'mcp__s__echo', { text: 'small' })).text, 'small');
});

test('a server that goes away fails, and a call reconnects it once it is back', async (t) => {
  const server = await tsHttp(t);
  const url = server.url;
  const box = await open(t, { s: { type: 'http', url } });
  assertConnected(await ready(box), 's');
  assert.equal((await call(box, 'mcp__s__add', { a: 1, b: 2 })).text, '3');

  // Found through the subscriptions/listen stream it held open: no call needed.
  const failed = nextEvent(box, (e) => e.type === 'status' && e.status.name === 's' && e.status.state === 'failed');
  server.stop();
  const { status: s } = await failed;
  assert.ok(s.error.includes(`server \`s\` went away: ${url} cannot be reached any more`), s.error);
  const error = await callError(box, 'mcp__s__add', { a: 1, b: 2 });
  assert.equal(error.kind, 'server-unavailable');
  assert.ok(error.message.includes(url), error.message);

  // Back on its port: the next call allowed by the backoff reconnects it.
  await tsHttp(t, Number(new URL(url).port));
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    try {
      assert.equal((await call(box, 'mcp__s__add', { a: 2, b: 2 })).text, '4');
      break;
    } catch (e) {
      assert.ok(/next restart allowed in/.test(e.message) && Date.now() < deadline, e.stack);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  assertConnected(box.servers(), 's');
});

/** Starts a server of `kind` (`Recorder`, `LegacyServer`) and closes it when the test ends. */
async function started(t, kind, ...args) {
  const server = await kind.start(...args);
  t.after(() => server.close());
  return server;
}

// A redirect to another origin is not followed, so neither the
// configured headers (credentials) nor the request reach it, and the call fails naming
// both origins and the fix. No `Referer` goes anywhere.
test('a redirect to another origin is refused and nothing reaches it', async (t) => {
  const server = await scripted(t);
  const elsewhere = await started(t, Recorder);
  const box = await open(t, {
    s: { type: 'http', url: `${server.url}?key=k`, headers: { 'X-API-Key': 'secret-key', Authorization: 'Bearer secret-token' } },
  });
  assertConnected(await ready(box), 's');
  server.redirectNextCall = `${elsewhere.origin}/mcp`;
  const error = await callError(box, 'mcp__s__echo', { text: 'x' });
  assert.equal(error.kind, 'protocol', error.message);
  for (const part of [`${server.url}?key=k`, elsewhere.origin, 'configure its new URL']) {
    assert.ok(error.message.includes(part), error.message);
  }
  assert.deepEqual(elsewhere.seen, []);
  // The connection is still good, and nothing carried a Referer.
  assert.equal((await call(box, 'mcp__s__echo', { text: 'after' })).text, 'after');
  assert.ok(server.seen.every((r) => r.headers.referer === undefined));
});

test('a same-origin redirect is followed with the configured headers', async (t) => {
  const server = await scripted(t);
  const box = await open(t, { s: { type: 'http', url: server.url, headers: { 'X-API-Key': 'secret-key' } } });
  assertConnected(await ready(box), 's');
  server.redirectNextCall = '/mcp-moved';
  assert.equal((await call(box, 'mcp__s__echo', { text: 'moved' })).text, 'moved');
  const calls = server.rpc('tools/call');
  assert.equal(calls.length, 2, 'the call, then the same call after the 307');
  assert.deepEqual(calls[0].body, calls[1].body);
  assert.equal(calls[1].path, '/mcp-moved');
  assert.ok(calls.every((c) => c.headers['x-api-key'] === 'secret-key'));
});

// A legacy SSE server whose `endpoint` event names another origin
// fails with a clear error, and nothing (no message, no header) is sent there.
test('a legacy endpoint on another origin fails the server and nothing reaches it', async (t) => {
  const elsewhere = await started(t, Recorder);
  const server = await started(t, LegacyServer, `${elsewhere.origin}/messages?sessionId=1`);
  const box = await open(t, { old: { type: 'sse', url: server.url, headers: { Authorization: 'Bearer secret-token' } } });
  const s = status(await ready(box), 'old');
  assert.equal(s.state, 'failed', JSON.stringify(s));
  for (const part of [elsewhere.origin, server.url, 'nothing was sent']) {
    assert.ok(s.error.includes(part), s.error);
  }
  assert.deepEqual(elsewhere.seen, []);
  assert.ok(server.seen.every((r) => r.method === 'GET'));
  // The stream itself, on the configured origin, got the configured header.
  assert.equal(server.seen[0].headers.authorization, 'Bearer secret-token');
});

// A `${VAR}` in the URL is resolved by the host for the request, but
// every message names the URL as configured.
test('a variable in the URL reaches the server but no message', async (t) => {
  const home = process.env.HOME;
  assert.ok(home, 'HOME is set');
  const server = await scripted(t);
  const gone = `http://127.0.0.1:${await freePort()}/mcp?key=\${HOME}`;
  const box = await open(t, { s: { type: 'http', url: `${server.url}?key=\${HOME}` }, gone: { type: 'http', url: gone } });
  const servers = await ready(box);
  assertConnected(servers, 's');
  assert.equal((await call(box, 'mcp__s__echo', { text: 'x' })).text, 'x');
  assert.ok(
    server.seen.every((r) => r.path === `/mcp?key=${home}`),
    JSON.stringify(server.seen.map((r) => r.path)),
  );
  const error = status(servers, 'gone').error;
  assert.ok(error.includes(gone) && !error.includes(`key=${home}`), error);
  const failed = await callError(box, 'mcp__gone__anything', {});
  assert.ok(!failed.message.includes(`key=${home}`), failed.message);
});
