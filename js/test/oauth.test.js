// OAuth in the JavaScript host: the embedder's `tokenProvider` (this host runs no OAuth
// flow of its own; the wasmtime host does, see docs/configuration.md). A real server-everything
// over Streamable HTTP sits behind a bearer-token gate in the test, which answers `401`
// with a `WWW-Authenticate` challenge to any other token, as a protected MCP server does.

import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import { test } from 'node:test';

import { assertConnected, call, everythingHttp, open, ready, status } from './support.js';

/**
 * A gate on a free port in front of `upstream` that lets through requests carrying
 * `Authorization: Bearer <accepted()>` and answers `401` to the rest; resolves with its
 * URL and the tokens it saw.
 */
async function gate(t, upstream, accepted) {
  const target = new URL(upstream);
  const seen = [];
  const server = createServer((req, res) => {
    const auth = req.headers.authorization ?? null;
    seen.push(auth);
    if (auth !== `Bearer ${accepted()}`) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Bearer realm="gate", error="invalid_token"', 'content-length': 0 });
      res.end();
      return;
    }
    const forward = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Streams held open (the session's GET) would keep `close` waiting: cut them first.
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${server.address().port}${target.pathname}`, seen };
}

/** Everything the embedder can see of the runtime, as text: no token may be in it. */
function visible(box, events) {
  return JSON.stringify([box.servers(), box.tools(), events, box.configIssues(), box.diagnostics('locked')]);
}

test('without a tokenProvider a protected server fails with its 401', async (t) => {
  const { url: upstream } = await everythingHttp(t, 'streamableHttp');
  const { url } = await gate(t, upstream, () => 'good');
  const box = await open(t, { locked: { type: 'http', url } });
  const servers = await ready(box);
  assert.equal(status(servers, 'locked').state, 'failed');
  assert.match(status(servers, 'locked').error, /401/);
});

test('the tokenProvider token reaches the server and never the guest', async (t) => {
  const { url: upstream } = await everythingHttp(t, 'streamableHttp');
  const { url, seen } = await gate(t, upstream, () => 'sekrit-good-token');
  const asked = [];
  const events = [];
  const box = await open(
    t,
    { locked: { type: 'http', url } },
    {
      tokenProvider: async (request) => {
        asked.push(request);
        return 'sekrit-good-token';
      },
    },
  );
  box.on('event', (e) => events.push(e));
  assertConnected(await ready(box), 'locked');
  assert.equal((await call(box, 'mcp__locked__echo', { message: 'through the gate' })).text, 'Echo: through the gate');
  assert.ok(seen.length > 0 && seen.every((auth) => auth === 'Bearer sekrit-good-token'), JSON.stringify(seen));
  assert.deepEqual(asked[0], { server: 'locked', url, refresh: false, wwwAuthenticate: null });
  assert.ok(!visible(box, events).includes('sekrit'), 'the token shows nowhere');
});

test('a refused token is refreshed once and the request sent again', async (t) => {
  const { url: upstream } = await everythingHttp(t, 'streamableHttp');
  let current = 'fresh-1';
  const { url, seen } = await gate(t, upstream, () => current);
  const asked = [];
  // The provider's cache holds a token the server no longer takes until it is told.
  let cached = 'stale-0';
  const box = await open(
    t,
    { locked: { type: 'http', url } },
    {
      tokenProvider: ({ refresh, wwwAuthenticate }) => {
        asked.push({ refresh, wwwAuthenticate });
        if (refresh) {
          cached = current;
        }
        return cached;
      },
    },
  );
  assertConnected(await ready(box), 'locked');
  assert.ok(seen.includes('Bearer stale-0') && seen.includes('Bearer fresh-1'), JSON.stringify(seen));
  const refreshes = asked.filter((a) => a.refresh);
  assert.ok(refreshes.length >= 1, JSON.stringify(asked));
  assert.match(refreshes[0].wwwAuthenticate, /Bearer realm="gate"/);
  // The server rotates its token: the next call is refused once, refreshed and succeeds.
  current = 'fresh-2';
  assert.equal((await call(box, 'mcp__locked__echo', { message: 'rotated' })).text, 'Echo: rotated');
  assert.ok(seen.includes('Bearer fresh-2'));
});

test('a provider that fails or answers garbage sends no token and says why', async (t) => {
  const { url: upstream } = await everythingHttp(t, 'streamableHttp');
  const { url, seen } = await gate(t, upstream, () => 'good');
  for (const [name, provider, why] of [
    ['throws', () => { throw new Error('vault is sealed'); }, /tokenProvider failed for server `locked`: vault is sealed/],
    ['garbage', () => 'two words\n', /not a bearer token/],
  ]) {
    const events = [];
    const box = await open(t, { locked: { type: 'http', url } }, { tokenProvider: provider });
    box.on('event', (e) => events.push(e));
    const servers = await ready(box);
    assert.equal(status(servers, 'locked').state, 'failed', name);
    assert.match(status(servers, 'locked').error, /401/, name);
    const warnings = events.filter((e) => e.type === 'warning').map((e) => e.message);
    assert.ok(warnings.some((m) => why.test(m)), `${name}: ${JSON.stringify(warnings)}`);
  }
  assert.ok(seen.every((auth) => auth === null), JSON.stringify(seen));
});

test('a server whose entry sets Authorization is left alone', async (t) => {
  const { url: upstream } = await everythingHttp(t, 'streamableHttp');
  const { url, seen } = await gate(t, upstream, () => 'configured');
  let asked = 0;
  const box = await open(
    t,
    { locked: { type: 'http', url, headers: { Authorization: 'Bearer configured' } } },
    {
      tokenProvider: () => {
        asked += 1;
        return 'provided';
      },
    },
  );
  assertConnected(await ready(box), 'locked');
  assert.equal(asked, 0);
  assert.ok(seen.every((auth) => auth === 'Bearer configured'), JSON.stringify(seen));
});
