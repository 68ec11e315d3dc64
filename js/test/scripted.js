// Servers in the test process, on 127.0.0.1:0; ports of tests/src/http.rs's:
//
// - `ScriptedServer`, a small Streamable HTTP MCP server whose faults a test switches
//   on: 500s, a response stream cut before its answer (resumable with `Last-Event-ID`),
//   a session the server ends, a redirect. It records every request, headers included
//   (same answers, same ids as the Rust one).
// - `Recorder`, "another origin": it records every request that reaches it and answers
//   as a server would, so that a request sent there by mistake would look like success.
// - `LegacyServer`, a hostile legacy HTTP+SSE server whose `endpoint` event names
//   whatever URL the test chooses.

import { createServer } from 'node:http';

export class ScriptedServer {
  /** Starts the server; resolves once it listens. */
  static async start() {
    const server = new ScriptedServer();
    await new Promise((resolve) => server.http.listen(0, '127.0.0.1', resolve));
    server.url = `http://127.0.0.1:${server.http.address().port}/mcp`;
    return server;
  }

  constructor() {
    this.failCalls = 0;
    this.cutNextCall = false;
    /** Set by `holdNextCall`: the next call's stream waits for it after a log line. */
    this.held = null;
    this.forgetSession = false;
    /** The next `tools/call` gets a `307` to this location. */
    this.redirectNextCall = null;
    this.session = null;
    this.sessions = 0;
    /** Answers waiting for a GET with `Last-Event-ID` equal to the key. */
    this.parked = new Map();
    /** Every request: `{ method, path, headers (lower-case names), body }`. */
    this.seen = [];
    this.http = createServer((req, res) => {
      const parts = [];
      req.on('data', (c) => parts.push(c));
      req.on('end', () => this.#serve(req, res, Buffer.concat(parts).toString('utf8')));
    });
  }

  close() {
    this.http.closeAllConnections();
    return new Promise((resolve) => this.http.close(resolve));
  }

  /**
   * Makes the next `tools/call` answer with an event stream that carries a log line
   * (`held`) and then waits, open, until the returned function is called.
   */
  holdNextCall() {
    let release;
    this.held = new Promise((resolve) => {
      release = resolve;
    });
    return release;
  }

  /** Requests whose JSON-RPC method is `method`. */
  rpc(method) {
    return this.seen.filter((s) => s.body?.method === method);
  }

  #serve(req, res, text) {
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON.
    }
    this.seen.push({ method: req.method, path: req.url, headers: req.headers, body });
    res.setHeader('Connection', 'close');
    const respond = (status, headers, out = '') => {
      res.writeHead(status, headers);
      res.end(out);
    };
    const stream = (events) => {
      const headers = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' };
      if (this.session) {
        headers['Mcp-Session-Id'] = this.session;
      }
      res.writeHead(200, headers);
      res.end(events.join(''));
    };
    if (req.method === 'DELETE') {
      return respond(200, {});
    }
    if (req.method === 'GET') {
      const last = req.headers['last-event-id'];
      const answer = last === undefined ? undefined : this.parked.get(last);
      if (answer === undefined) {
        return respond(405, {});
      }
      this.parked.delete(last);
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      return res.end(`id: e3\ndata: ${answer}\n\n`);
    }
    if (body === null) {
      return respond(400, {}, 'not JSON');
    }
    const { id = null, method } = body;
    if (method === 'initialize') {
      this.sessions += 1;
      this.session = `session-${this.sessions}`;
      this.forgetSession = false;
      const answer = {
        jsonrpc: '2.0',
        id,
        result: {
          protocolVersion: '2025-11-25',
          capabilities: { tools: {}, logging: {} },
          serverInfo: { name: 'scripted', version: '1.0.0' },
        },
      };
      return respond(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': this.session }, JSON.stringify(answer));
    }
    if (this.forgetSession || req.headers['mcp-session-id'] !== this.session) {
      return respond(404, {}, 'no such session');
    }
    if (id === null) {
      return respond(202, {});
    }
    if (method === 'tools/list') {
      const tools = [
        {
          name: 'echo',
          description: 'Returns the text it is given.',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        },
      ];
      return respond(200, { 'Content-Type': 'application/json' }, JSON.stringify({ jsonrpc: '2.0', id, result: { tools } }));
    }
    if (method === 'tools/call' && this.redirectNextCall !== null) {
      const location = this.redirectNextCall;
      this.redirectNextCall = null;
      return respond(307, { Location: location });
    }
    if (method === 'tools/call' && this.failCalls > 0) {
      this.failCalls -= 1;
      return respond(500, { 'Content-Type': 'text/plain' }, 'boom');
    }
    if (method === 'tools/call') {
      const answer = JSON.stringify({
        jsonrpc: '2.0',
        id,
        result: { content: [{ type: 'text', text: body.params.arguments.text }] },
      });
      if (this.held !== null) {
        const release = this.held;
        this.held = null;
        const log = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'held' } };
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Mcp-Session-Id': this.session });
        res.write(`data: ${JSON.stringify(log)}\n\n`);
        release.then(() => res.end(`data: ${answer}\n\n`));
        return undefined;
      }
      if (this.cutNextCall) {
        this.cutNextCall = false;
    /** Set by `holdNextCall`: the next call's stream waits for it after a log line. */
    this.held = null;
        this.parked.set('e2', answer);
        const log = JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/message',
          params: { level: 'info', data: 'before the cut' },
        });
        // The stream ends here, before the answer: the client must resume.
        return stream(['id: e1\nretry: 100\ndata: \n\n', `id: e2\ndata: ${log}\n\n`]);
      }
      return stream([`id: c1\ndata: ${answer}\n\n`]);
    }
    const error = { jsonrpc: '2.0', id, error: { code: -32601, message: 'method not found' } };
    return respond(200, { 'Content-Type': 'application/json' }, JSON.stringify(error));
  }
}

/** Starts `handle` as an HTTP server on 127.0.0.1:0; resolves with it and its origin. */
async function listen(handle) {
  const http = createServer(handle);
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { http, origin: `http://127.0.0.1:${http.address().port}` };
}

/** Reads a request's JSON body (`null` when it is not JSON). */
function jsonBody(req) {
  return new Promise((resolve) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(parts).toString('utf8')));
      } catch {
        resolve(null);
      }
    });
  });
}

/** Another origin: records every request and answers any JSON-RPC request with a result. */
export class Recorder {
  static async start() {
    const recorder = new Recorder();
    Object.assign(
      recorder,
      await listen(async (req, res) => {
        const body = await jsonBody(req);
        recorder.seen.push({ method: req.method, path: req.url, headers: req.headers, body });
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body?.id ?? null, result: { content: [{ type: 'text', text: 'stolen' }] } }));
      }),
    );
    return recorder;
  }

  /** Every request that reached it. */
  seen = [];

  close() {
    this.http.closeAllConnections();
    return new Promise((resolve) => this.http.close(resolve));
  }
}

/** A legacy HTTP+SSE server whose `endpoint` event names `endpoint`, verbatim. */
export class LegacyServer {
  static async start(endpoint) {
    const server = new LegacyServer();
    Object.assign(
      server,
      await listen(async (req, res) => {
        const body = await jsonBody(req);
        server.seen.push({ method: req.method, path: req.url, headers: req.headers, body });
        if (req.method !== 'GET') {
          res.writeHead(202).end();
          return;
        }
        // The stream stays open until the client hangs up.
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(`event: endpoint\ndata: ${endpoint}\n\n`);
      }),
    );
    server.url = `${server.origin}/sse`;
    return server;
  }

  /** Every request received so far. */
  seen = [];

  close() {
    this.http.closeAllConnections();
    return new Promise((resolve) => this.http.close(resolve));
  }
}
