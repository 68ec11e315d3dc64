// Unit tests of grants (src/remote.js), `${VAR}` resolution of remote endpoints
// (src/endpoint.js) and the `wasi:http` hook (src/wasi_http.js): the cases of
// host/src/imports/remote.rs's, host/src/imports/wasi_http.rs's and
// host/src/transport/endpoint.rs's tests, the hook against a real server on 127.0.0.1:0.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';

import { resolveHttp } from '../src/endpoint.js';
import { Grants } from '../src/remote.js';
import { HttpExchanges, READ_AHEAD, errorCode } from '../src/wasi_http.js';

import { freePort, ref, tpl, within } from './support.js';

const env = (name) => ({ HOME: '/home/me', API_TOKEN: 'secret', API_KEY: 's3cret', KEY: 's3cret' })[name];

const ep = (url, headers = [{ name: 'Authorization', value: tpl`Bearer ${ref('API_KEY')}` }]) => ({ url, headers });

test('the guest sees placeholders for references in the URL', () => {
  const spec = resolveHttp(ep(tpl`https://h.example/api/${ref('API_TOKEN')}/mcp?key=${ref('API_TOKEN')}&x=1#f`, []), env);
  assert.equal(spec.url, 'https://h.example/api/secret/mcp?key=secret&x=1#f');
  assert.equal(spec.pathWithPlaceholders, '/api/mcpbox-ref-0/mcp?key=mcpbox-ref-1&x=1');
  assert.deepEqual(spec.values, ['secret', 'secret']);
  assert.equal(resolveHttp(ep(tpl`http://${ref('HOME')}:1`, []), env).pathWithPlaceholders, '/');
  assert.equal(resolveHttp(ep(tpl`http://h?q=${ref('API_TOKEN')}`, []), env).pathWithPlaceholders, '/?q=mcpbox-ref-0');
  const port = resolveHttp(ep(tpl`http://127.0.0.1:${ref('PORT', '8080')}/mcp`), env);
  assert.equal(port.url, 'http://127.0.0.1:8080/mcp');
  assert.deepEqual(port.values, ['8080']);
  assert.deepEqual(port.headers, [['Authorization', 'Bearer s3cret']]);
  // The origin itself from a variable: nothing of the URL is shown.
  const hidden = resolveHttp(ep(tpl`${ref('URL', 'http://x.example/secret-path')}`, []), env);
  assert.equal(hidden.url, 'http://x.example/secret-path');
  assert.equal(hidden.pathWithPlaceholders, null);
  // A URL that does not resolve to http(s) is named as configured.
  assert.throws(
    () => resolveHttp(ep(tpl`${ref('API_TOKEN')}`, []), env),
    (e) => e.message.includes('${API_TOKEN}') && !e.message.includes('secret'),
  );
  assert.throws(() => resolveHttp(ep(tpl`ftp://x`, []), env), /http:\/\//);
  assert.throws(() => resolveHttp(ep(tpl`https://x`, [{ name: 'X-Key', value: tpl`${ref('NOPE')}` }]), env), /headers\.X-Key/);
});

test('the guest gets a stand-in and the host keeps the values', () => {
  const grants = new Grants({ allowNetwork: true });
  const opened = grants.open('x', ep(tpl`https://h.example/a/mcp?key=${ref('API_KEY')}`), env);
  assert.deepEqual(opened, {
    tag: 'ok',
    val: { authority: 'g0.mcpbox.internal', url: 'http://g0.mcpbox.internal/a/mcp?key=mcpbox-ref-0' },
  });
  const g = grants.get('g0.mcpbox.internal');
  assert.equal(g.target('/a/mcp?key=mcpbox-ref-0').href, 'https://h.example/a/mcp?key=s3cret');
  assert.equal(g.target('/messages?s=1').href, 'https://h.example/messages?s=1');
  // A path cannot name another origin: it stays on the configured one, or is refused.
  assert.equal(g.target('//evil.example/x').href, 'https://h.example//evil.example/x');
  assert.equal(g.target('@evil.example/x'), null);
  assert.deepEqual(g.headers, [['Authorization', 'Bearer s3cret']]);
  assert.ok(grants.sameOrigin('g0.mcpbox.internal', 'https://H.example:443/elsewhere'));
  assert.ok(!grants.sameOrigin('g0.mcpbox.internal', 'http://h.example/a'));
  assert.ok(!grants.sameOrigin('g0.mcpbox.internal', 'https://evil.example/a'));
  // Each grant its own authority; a dropped one names nothing.
  const other = grants.open('y', ep(tpl`http://127.0.0.1:1/`), env);
  assert.equal(other.val.authority, 'g1.mcpbox.internal');
  grants.drop('g0.mcpbox.internal');
  assert.equal(grants.get('g0.mcpbox.internal'), undefined);
  assert.ok(!grants.sameOrigin('g0.mcpbox.internal', 'https://h.example/'));
  // Normalised as a URL parser writes it.
  assert.equal(grants.open('z', ep(tpl`http://h.example`), env).val.url, 'http://g2.mcpbox.internal/');
  assert.equal(grants.open('z', ep(tpl`http://${ref('HOME')}:1/x`), env).val.url, 'http://g3.mcpbox.internal/x');
});

test('denials and errors name the URL as configured', () => {
  const url = 'https://h.example/mcp?key=${API_KEY}';
  const denied = new Grants({ allowNetwork: false }).open('x', ep(tpl`https://h.example/mcp?key=${ref('API_KEY')}`), env);
  assert.equal(denied.val.tag, 'denied');
  assert.ok(denied.val.val.includes(url) && denied.val.val.includes('server `x`'), denied.val.val);
  const grants = new Grants({ allowNetwork: true });
  const bad = grants.open('x', ep(tpl`${ref('API_KEY')}`), env);
  assert.equal(bad.val.tag, 'invalid-endpoint');
  assert.ok(bad.val.val.includes('${API_KEY}') && !bad.val.val.includes('s3cret'), bad.val.val);
  assert.deepEqual(grants.open('p', ep(tpl`http://127.0.0.1:${ref('PORT', '99999')}/mcp`, []), env).val, {
    tag: 'invalid-endpoint',
    val: 'server `p`: `url` "http://127.0.0.1:${PORT:-99999}/mcp" is not a URL: invalid port number',
  });
  assert.deepEqual(grants.open('n', ep(tpl`http://h/`, [{ name: 'X A', value: tpl`v` }]), env).val, {
    tag: 'invalid-endpoint',
    val: 'server `n`: `headers.X A` is not a valid header name',
  });
  assert.match(grants.open('v', ep(tpl`http://h/`, [{ name: 'X-A', value: tpl`a\u0001b` }]), env).val.val, /cannot be sent/);
});

/** The hook over `grants`; resolves the driver's messages for exchange 1 until it is over. */
function exchange(grants, request) {
  const messages = [];
  let done;
  const over = new Promise((resolve) => {
    done = resolve;
  });
  const http = new HttpExchanges(grants, (msg) => {
    messages.push(msg);
    if (msg.t === 'http-fail' || msg.t === 'http-end') {
      done(messages);
    }
  });
  http.start({ ex: 1, method: 'GET', headers: [], body: false, connectTimeoutMs: null, ...request });
  return { http, over: within(over, 'the exchange ends') };
}

test('a request that names no grant is refused', async () => {
  const grants = new Grants({ allowNetwork: true });
  for (const authority of ['127.0.0.1:1', 'g0.mcpbox.internal', 'mcpbox.internal.example']) {
    const { over } = exchange(grants, { authority, pathWithQuery: '/mcp' });
    assert.deepEqual(await over, [{ t: 'http-fail', ex: 1, code: { tag: 'HTTP-request-denied' } }], authority);
  }
});

test('a granted request goes to the configured URL with its headers, and nowhere else', async (t) => {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.rawHeaders });
    req.resume();
    req.on('end', () => {
      res.writeHead(307, { location: 'http://elsewhere.example/', 'x-answer': 'yes' });
      res.end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = server.address().port;
  const grants = new Grants({ allowNetwork: true });
  const { val } = grants.open(
    's',
    ep(tpl`http://127.0.0.1:${port}/mcp?key=${ref('KEY')}`, [{ name: 'Authorization', value: tpl`Bearer ${ref('KEY')}` }]),
    env,
  );
  const { over } = exchange(grants, {
    authority: val.authority,
    method: 'POST',
    pathWithQuery: '/mcp?key=mcpbox-ref-0',
    headers: [
      ['authorization', 'guest-made'],
      ['referer', `http://${val.authority}/`],
      ['x-guest', '1'],
    ],
    body: false,
  });
  const messages = await over;
  assert.equal(messages[0].t, 'http-head');
  assert.equal(messages[0].status, 307, 'no redirect is followed');
  assert.ok(messages[0].headers.some(([n, v]) => n === 'x-answer' && v === 'yes'));
  assert.equal(Buffer.concat(messages.filter((m) => m.t === 'http-data').map((m) => m.chunk)).toString(), 'ok');
  assert.deepEqual(messages.at(-1), { t: 'http-end', ex: 1, error: null });
  assert.equal(seen.length, 1);
  assert.equal(seen[0].url, '/mcp?key=s3cret');
  const headers = seen[0].headers.map((h, i) => (i % 2 === 0 ? h.toLowerCase() : h));
  const value = (name) => headers.filter((_, i) => i % 2 === 1 && headers[i - 1] === name);
  assert.deepEqual(value('authorization'), ['Bearer s3cret']);
  assert.deepEqual(value('referer'), []);
  assert.deepEqual(value('x-guest'), ['1']);
  assert.deepEqual(value('host'), [`127.0.0.1:${port}`]);
  assert.deepEqual(value('user-agent'), ['mcpbox/0.1.0']);
});

test('nothing listening is connection-refused; a broken answer is connection-terminated', async (t) => {
  const grants = new Grants({ allowNetwork: true });
  const port = await freePort();
  const gone = grants.open('gone', ep(tpl`http://127.0.0.1:${port}/mcp`, []), env).val;
  const refused = await exchange(grants, { authority: gone.authority, pathWithQuery: '/mcp' }).over;
  assert.deepEqual(refused, [{ t: 'http-fail', ex: 1, code: { tag: 'connection-refused' } }]);

  // Promises 100 bytes, sends 5, and hangs up.
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('short', () => res.socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const cut = grants.open('cut', ep(tpl`http://127.0.0.1:${server.address().port}/`, []), env).val;
  const broken = await exchange(grants, { authority: cut.authority, pathWithQuery: '/' }).over;
  assert.equal(broken[0].t, 'http-head');
  assert.deepEqual(broken.at(-1), { t: 'http-end', ex: 1, error: { tag: 'connection-terminated' } });

  assert.deepEqual(errorCode({ syscall: 'getaddrinfo', code: 'ENOTFOUND' }, false), { tag: 'destination-not-found' });
  assert.deepEqual(errorCode({ syscall: 'connect', code: 'EHOSTUNREACH' }, false), { tag: 'destination-unavailable' });
  assert.deepEqual(errorCode({ code: 'ECONNRESET' }, true), { tag: 'connection-terminated' });
});

test('an answer is read at most READ_AHEAD bytes ahead of the guest', async (t) => {
  const total = 4 * READ_AHEAD;
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': String(total) });
    res.end(Buffer.alloc(total, 0x61));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const grants = new Grants({ allowNetwork: true });
  const { val } = grants.open('big', ep(tpl`http://127.0.0.1:${server.address().port}/`, []), env);
  let delivered = 0;
  const pauses = [];
  let done;
  const over = new Promise((resolve) => {
    done = resolve;
  });
  const http = new HttpExchanges(grants, (msg) => {
    if (msg.t === 'http-data') {
      delivered += msg.chunk.length;
      if (msg.paused) {
        pauses.push(delivered);
        // The guest takes everything, later: reading resumes.
        setImmediate(() => http.taken(1, delivered));
      }
    } else if (msg.t === 'http-end' || msg.t === 'http-fail') {
      done(msg);
    }
  });
  http.start({ ex: 1, authority: val.authority, method: 'GET', pathWithQuery: '/', headers: [], body: false });
  assert.deepEqual(await within(over, 'the answer ends'), { t: 'http-end', ex: 1, error: null });
  assert.equal(delivered, total, 'nothing lost');
  assert.ok(pauses.length >= 3, `reading paused (${pauses})`);
  // Each pause came as soon as READ_AHEAD bytes were outstanding (one socket read more at most).
  let taken = 0;
  for (const at of pauses) {
    assert.ok(at - taken >= READ_AHEAD && at - taken < READ_AHEAD + 256 * 1024, `${at - taken} bytes outstanding`);
    taken = at;
  }
});
