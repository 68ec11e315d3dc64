// Remote servers over HTTP: Streamable HTTP (MCP 2025-03-26 and later, the stateless
// 2026-07-28 revision included) and the deprecated HTTP+SSE transport of 2024-11-05.
//
// A port of host/src/transport/http.rs, with the same rules and the same texts; read its
// module documentation for the why. In short:
//
// **Streamable HTTP.** Every message is a POST to the endpoint with
// `Accept: application/json, text/event-stream`; the answer is one JSON body or an event
// stream that may carry server requests and notifications before the response. Requests
// are posted side by side; notifications and responses in order, each accepted before
// the next. `Mcp-Session-Id` from the `initialize` answer goes on every later request; a
// 404 to a request carrying it means the server ended the session, and the host
// re-initialises once, transparently (replaying the guest's `initialize` under an id of
// its own, then `notifications/initialized`) and posts the message again.
// `MCP-Protocol-Version` carries the version the guest negotiated, and from 2026-07-28
// on `Mcp-Method` / `Mcp-Name` name the method and the tool (`=?base64?…?=` when not
// plain ASCII). A response stream that ends before its answer is resumed with a GET
// carrying `Last-Event-ID`, after the server's `retry:` delay. After the handshake the
// optional GET stream for server-initiated messages is opened (405: the server has
// none). Closing the connection sends `DELETE` with the session id. HTTP failures become
// JSON-RPC errors for the request they concern; a server that cannot be reached on the
// first message closes the connection. So does a server that goes away later: an
// exchange fails below HTTP (refused, broken) and a new connection to the URL gets no
// HTTP answer either — the exchange was itself a refused connection, or a `HEAD` probe
// on a fresh connection right after it is refused or dropped unanswered (`#goneAfter`).
//
// **HTTP+SSE (legacy).** A GET opens the event stream; its first `endpoint` event names
// the URL to POST messages to; every answer arrives on the stream.
//
// The wire is `node:http`/`node:https` rather than the global `fetch`: fetch refuses the
// WHATWG "bad ports" (6000, 6665–6669, 10080, …) and adds headers of its own
// (`sec-fetch-mode`, `accept-language`, compression), where the wasmtime host's client
// connects anywhere and sends only what it is told; no dependency is needed either way.

import { Agent as HttpAgent, STATUS_CODES, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

import { debugString } from './endpoint.js';
import { Oversized } from './framing.js';
import { SseParser } from './sse.js';
import { describeSystemError } from './stdio.js';

/** Items read ahead of the guest; beyond this, reading pauses until the guest takes some. */
export const INBOUND_QUEUE = 1024;
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a POST carrying a notification or a response may take to be accepted. */
const ACK_TIMEOUT_MS = 30_000;
const DELETE_TIMEOUT_MS = 5_000;
/** How long the `HEAD` probe after a broken exchange may take before it proves nothing. */
const PROBE_TIMEOUT_MS = 5_000;
/** How long the first GET stream may take to be answered before messages go on. */
const GET_OPEN_WAIT_MS = 2_000;
/** Reconnection delay when the server gave no `retry:`. */
const DEFAULT_RETRY_MS = 1_000;
/** Consecutive failed reconnections after which a stream is given up. */
const MAX_RECONNECTS = 5;
/** How much of an HTTP error body is read for the error message. */
const ERROR_BODY_CAP = 64 * 1024;
/** The protocol revision from which `Mcp-Method` / `Mcp-Name` are sent. */
const HEADERS_FROM_VERSION = '2026-07-28';
const STDERR_LINES = 20;
const EVENT_STREAM = 'text/event-stream';
const ACCEPT_BOTH = 'application/json, text/event-stream';
/** The wasmtime host's `User-Agent` is `mcpbox/<crate version>`; this is that version. */
const USER_AGENT = 'mcpbox/0.1.0';

/** One connection pool per scheme for every server, as the wasmtime host's one client. */
const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };

/** Which HTTP transport. */
export const Kind = Object.freeze({ STREAMABLE: 'http', LEGACY_SSE: 'sse' });

/** A header name as `http::HeaderName` accepts it (an RFC 9110 token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value as `http::HeaderValue::from_str` accepts it: visible ASCII, space, tab. */
const VISIBLE = /^[\t\x20-\x7e]*$/;

/** Thrown by `HttpServer.open` for an endpoint that cannot be used (`invalid-endpoint`). */
export class InvalidHttpEndpoint extends Error {}

/** `StatusCode`'s `Display` in the wasmtime host: "404 Not Found". */
function statusText(status) {
  return `${status} ${STATUS_CODES[status] ?? '<unknown status code>'}`;
}

/** A request error in the words of reqwest's error chain, as far as Node lets us tell. */
function describeRequestError(error, url) {
  const prefix = `error sending request for url (${url})`;
  if (error?.mcpboxConnectTimeout) {
    return `${prefix}: client error (Connect): tcp connect error: deadline has elapsed`;
  }
  if (error?.syscall === 'getaddrinfo') {
    return `${prefix}: client error (Connect): dns error: failed to lookup address information: ${
      error.code === 'ENOTFOUND' ? 'Name or service not known' : describeSystemError(error)
    }`;
  }
  if (error?.syscall === 'connect') {
    return `${prefix}: client error (Connect): tcp connect error: ${describeSystemError(error)}`;
  }
  if (error?.code === 'ECONNRESET' || error?.code === 'EPIPE') {
    return `${prefix}: connection closed before message completed`;
  }
  return `${prefix}: ${error?.message ?? String(error)}`;
}

/** Whether a request error happened while connecting (reqwest's `is_connect`). */
function isConnectError(error) {
  return error?.mcpboxConnectTimeout === true || error?.syscall === 'connect' || error?.syscall === 'getaddrinfo';
}

/** The innermost cause of a request error, as the wasmtime host's `root_cause` words it. */
function rootCause(error) {
  if (error?.mcpboxConnectTimeout) {
    return 'deadline has elapsed';
  }
  if (error?.syscall === 'getaddrinfo' && error.code === 'ENOTFOUND') {
    return 'Name or service not known';
  }
  if (typeof error?.errno === 'number') {
    return describeSystemError(error);
  }
  if (error?.code === 'ECONNRESET') {
    return 'connection closed before message completed';
  }
  return error?.message ?? String(error);
}

/**
 * A POST that got no HTTP answer: `why` for the guest, and the request error behind it
 * (none when re-initialising a session failed). Its string form is `why`.
 */
class PostFailure {
  constructor(why, transport = null) {
    this.why = why;
    this.transport = transport;
  }

  toString() {
    return this.why;
  }
}

/** Reading a body failed, in reqwest's words. */
function describeBodyError(error) {
  return `error decoding response body: ${error?.code === 'ECONNRESET' ? 'connection reset' : error?.message ?? error}`;
}

/**
 * One HTTP exchange: resolves with the response once its head arrived, or rejects with a
 * request error. `signal` aborts it (and a body still being read).
 */
function exchange(method, url, headers, body, signal, { fresh = false } = {}) {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const flat = {};
    for (const [name, value] of headers) {
      (flat[name] ??= []).push(value);
    }
    if (body !== null) {
      flat['content-length'] = [String(Buffer.byteLength(body))];
    }
    let req;
    try {
      // `fresh`: a connection of its own, never one from the pool.
      req = send(url, { method, headers: flat, agent: fresh ? false : agents[url.protocol], signal });
    } catch (error) {
      reject(error);
      return;
    }
    const timer = setTimeout(() => {
      const error = new Error('connect timeout');
      error.mcpboxConnectTimeout = true;
      req.destroy(error);
    }, CONNECT_TIMEOUT_MS);
    req.once('socket', (socket) => {
      if (!socket.connecting) {
        clearTimeout(timer);
      } else {
        socket.once('connect', () => clearTimeout(timer));
      }
    });
    req.once('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body ?? undefined);
  });
}

/** A response's content type, lower-cased ("" when absent). */
function contentType(res) {
  return String(res.headers['content-type'] ?? '').toLowerCase();
}

function isSuccess(status) {
  return status >= 200 && status < 300;
}

/** Drops the rest of a body we do not need, keeping the connection reusable. */
function discard(res) {
  res.resume();
  res.on('error', () => {});
}

/**
 * The parts of a JSON-RPC message the transport looks at: `{ id, method }`, `id` as JSON
 * text (undefined when absent or null), both undefined when the text is not a message.
 */
export function peek(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return {};
  }
  return peekValue(value) ?? {};
}

function peekValue(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return null;
  }
  if (value.method !== undefined && value.method !== null && typeof value.method !== 'string') {
    return null;
  }
  const id = value.id === undefined || value.id === null ? undefined : JSON.stringify(value.id);
  return { id, method: value.method ?? undefined };
}

/** The id of a request (not a response or a notification), as JSON text. */
function requestId(p) {
  return p.id !== undefined && p.method !== undefined ? p.id : undefined;
}

/** Whether `text` (a message or a batch) holds the response to request `id`. */
export function answers(text, id) {
  const isAnswer = (p) => p !== null && p.method === undefined && p.id === id;
  if (text.trimStart().startsWith('[')) {
    let batch;
    try {
      batch = JSON.parse(text);
    } catch {
      return false;
    }
    if (!Array.isArray(batch)) {
      return false;
    }
    const peeks = batch.map(peekValue);
    return !peeks.includes(null) && peeks.some(isAnswer);
  }
  return isAnswer(peek(text));
}

/** A JSON-RPC error response to request `id` (JSON text), made by the host. */
export function errorResponse(id, message) {
  return `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":${JSON.stringify(message)}}}`;
}

/**
 * A header value as SEP-2243 encodes it: plain when visible ASCII without surrounding
 * spaces, `=?base64?…?=` otherwise, and also when the plain value would itself read as
 * that wrapper (so the server decodes back what was meant).
 */
export function encodedHeader(value) {
  const bytes = Buffer.from(value, 'utf8');
  const plain =
    bytes.every((b) => b >= 0x20 && b <= 0x7e) &&
    value.trim() === value &&
    !(value.startsWith('=?base64?') && value.endsWith('?='));
  return plain ? value : `=?base64?${bytes.toString('base64')}?=`;
}

/** The first `n` characters (Unicode scalar values) of `text`. */
function chars(text, n) {
  return Array.from(text).slice(0, n).join('');
}

/**
 * One remote server. Items for the guest are delivered through `onItems(items, paused)`
 * as for stdio servers (stdio.js): `{ message }`, `{ tooLarge }` or `{ closed }`; a third
 * argument `true` (with no items) says the transport stopped taking messages. At most
 * `INBOUND_QUEUE` items are read ahead of the guest; `taken(count)` reports its progress.
 */
export class HttpServer {
  /**
   * Checks the endpoint and starts the transport. Nothing goes on the wire until the
   * first message (legacy SSE: the event stream is opened at once).
   *
   * @param {'http' | 'sse'} kind
   * @param {{url: string, headers: [string, string][]}} spec resolved by endpoint.js
   * @param {{maxMessageBytes: number, onItems: (items: object[], paused: boolean, writerEnded?: boolean) => void}} options
   * @throws {InvalidHttpEndpoint}
   */
  static open(kind, spec, { maxMessageBytes, onItems }) {
    let url;
    try {
      url = new URL(spec.url);
    } catch {
      throw new InvalidHttpEndpoint(`\`url\` ${debugString(spec.url)} is not a URL: ${urlProblem(spec.url)}`);
    }
    const headers = [];
    for (const [name, value] of spec.headers) {
      if (!TOKEN.test(name)) {
        throw new InvalidHttpEndpoint(`\`headers.${name}\` is not a valid header name`);
      }
      if (!VISIBLE.test(value)) {
        throw new InvalidHttpEndpoint(
          `\`headers.${name}\` has a value that cannot be sent in an HTTP header (control characters or non-ASCII)`,
        );
      }
      headers.push([name, value]);
    }
    return new HttpServer(kind, url, headers, maxMessageBytes, onItems);
  }

  /** @private use `HttpServer.open` */
  constructor(kind, url, headers, cap, onItems) {
    this.url = url;
    this.headers = headers;
    this.cap = cap;
    this.onItems = onItems;
    this.stderrTail = [];
    this.oversizedMessages = 0;
    /** Set when the guest dropped the connection: everything stops. */
    this.closed = false;
    this.abort = new AbortController();
    this.session = { id: null, protocolVersion: null, initialize: null, listening: false };
    /** Held while the session is re-initialised, so it happens once. */
    this.reinit = Promise.resolve();
    /** Some request got an HTTP answer: the server exists. */
    this.reached = false;
    /** The server went away and the connection was closed for it. */
    this.gone = false;
    this.replays = 0;
    this.delivered = 0;
    this.takenByGuest = 0;
    /** Deliveries waiting for the guest to catch up. */
    this.waiters = [];
    /** Messages from the guest not yet handled by the writer, and its wake-up. */
    this.outbound = [];
    this.wakeWriter = null;
    /** Set once the writer stopped taking messages (legacy SSE that failed). */
    this.writerEnded = false;
    const writer = kind === Kind.STREAMABLE ? this.#streamable() : this.#legacy();
    /** Resolves once the transport is done (after `DELETE` when it closes). */
    this.exited = writer.then(
      () => {},
      (error) => this.#note(`the transport failed: ${error?.stack ?? error}`),
    );
  }

  /** Queues one message. Never blocks on the server. */
  send(message, meta) {
    if (this.closed || this.writerEnded) {
      return;
    }
    this.outbound.push({ message, meta });
    this.wakeWriter?.();
  }

  /** The guest has taken `count` items in all. */
  taken(count) {
    this.takenByGuest = count;
    if (this.delivered - this.takenByGuest < INBOUND_QUEUE) {
      this.#release();
    }
  }

  /** The guest dropped the connection: stop everything (the session ends with `DELETE`). */
  close() {
    if (this.closed) {
      return;
    }
    this.closed = true;
    this.abort.abort();
    this.#release();
    this.wakeWriter?.();
  }

  diagnostics() {
    return {
      stderrTail: [...this.stderrTail],
      skippedLines: 0n,
      oversizedMessages: BigInt(this.oversizedMessages),
      exitStatus: undefined,
    };
  }

  #release() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) {
      resolve();
    }
  }

  /** Keeps a line for diagnostics (shown as the server's "last stderr"). */
  #note(line) {
    if (this.stderrTail.length === STDERR_LINES) {
      this.stderrTail.shift();
    }
    this.stderrTail.push(`http: ${line}`);
  }

  /** Hands one item to the guest; false once the connection was dropped. */
  async #deliver(item) {
    if (this.closed) {
      return false;
    }
    this.delivered += 1;
    const full = this.delivered - this.takenByGuest >= INBOUND_QUEUE;
    this.onItems([item], full);
    while (!this.closed && this.delivered - this.takenByGuest >= INBOUND_QUEUE) {
      await new Promise((resolve) => this.waiters.push(resolve));
    }
    return !this.closed;
  }

  /** The closing item; with `writerEnded`, no message will be taken any more either. */
  async #deliverClosed(why, { writerEnded = false } = {}) {
    await this.#deliver({ closed: why });
    if (writerEnded) {
      this.#endWriter();
    }
  }

  /**
   * The writer stopped (as the wasmtime host's writer task returns): from now on the
   * guest's `send` fails with `closed`.
   */
  #endWriter() {
    if (!this.writerEnded && !this.closed) {
      this.writerEnded = true;
      this.onItems([], false, true);
    }
  }

  /** The next message from the guest, or null once the connection was dropped. */
  async #next() {
    while (this.outbound.length === 0 && !this.closed) {
      await new Promise((resolve) => {
        this.wakeWriter = resolve;
      });
      this.wakeWriter = null;
    }
    return this.closed ? null : this.outbound.shift();
  }

  /** Waits `ms`; false when the connection was dropped meanwhile. */
  #sleep(ms) {
    if (this.closed) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(!this.closed);
      };
      const timer = setTimeout(done, ms);
      this.abort.signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Headers for one request: the configured ones, then the protocol's, then `extra`;
   * each of those replaces a configured header of its name.
   */
  #headers(accept, meta, extra = []) {
    const headers = new Map();
    const set = (name, value) => headers.set(name.toLowerCase(), [[name, value]]);
    for (const [name, value] of this.headers) {
      const key = name.toLowerCase();
      headers.set(key, [...(headers.get(key) ?? []), [name, value]]);
    }
    if (!headers.has('user-agent')) {
      set('user-agent', USER_AGENT);
    }
    set('accept', accept);
    if (this.session.id !== null && VISIBLE.test(this.session.id)) {
      set('mcp-session-id', this.session.id);
    }
    const version = meta ? meta.protocolVersion : this.session.protocolVersion;
    if (typeof version === 'string' && VISIBLE.test(version)) {
      set('mcp-protocol-version', version);
    }
    if (meta && typeof version === 'string' && version >= HEADERS_FROM_VERSION) {
      if (typeof meta.method === 'string') {
        set('mcp-method', encodedHeader(meta.method));
      }
      if (typeof meta.name === 'string') {
        set('mcp-name', encodedHeader(meta.name));
      }
      // Tool arguments mirrored as `Mcp-Param-<Name>` (SEP-2243); the guest checked
      // each name is an HTTP token, and a name that is not (a guest bug) is left out.
      for (const { name, value } of meta.paramHeaders ?? []) {
        if (TOKEN.test(name)) {
          set(`Mcp-Param-${name}`, encodedHeader(value));
        }
      }
    }
    for (const [name, value] of extra) {
      set(name, value);
    }
    return [...headers.values()].flat();
  }

  async #post(out, url = this.url) {
    const headers = this.#headers(ACCEPT_BOTH, out.meta, [['content-type', 'application/json']]);
    const res = await exchange('POST', url, headers, out.message, this.abort.signal);
    this.reached = true;
    const id = res.headers['mcp-session-id'];
    if (typeof id === 'string' && id !== this.session.id) {
      this.session.id = id;
    }
    return res;
  }

  #get(lastEventId) {
    const resume = lastEventId !== null && VISIBLE.test(lastEventId) ? [['last-event-id', lastEventId]] : [];
    const headers = this.#headers(EVENT_STREAM, null, resume);
    return exchange('GET', this.url, headers, null, this.abort.signal);
  }

  /**
   * Posts `out`; when the server says the session is gone (404 to a request that carried
   * its id), re-initialises once and posts again. Rejects with the reason as a string.
   */
  async #postInSession(out) {
    const describe = (e) =>
      new PostFailure(`could not reach ${this.url.href}: ${describeRequestError(e, this.url.href)}`, e);
    const stale = this.session.id;
    let res;
    try {
      res = await this.#post(out);
    } catch (e) {
      throw describe(e);
    }
    const isInitialize = out.meta?.method === 'initialize';
    if (res.statusCode !== 404 || stale === null || isInitialize) {
      return res;
    }
    discard(res);
    this.#note(`the server answered 404 to session ${stale}; it ended the session: re-initialising`);
    try {
      await this.#reinitialize(stale);
    } catch (why) {
      throw new PostFailure(String(why));
    }
    try {
      return await this.#post(out);
    } catch (e) {
      throw describe(e);
    }
  }

  /** Starts a new session by replaying the guest's `initialize` and `notifications/initialized`. */
  #reinitialize(stale) {
    const run = this.reinit.then(() => this.#reinitializeNow(stale));
    this.reinit = run.catch(() => {});
    return run;
  }

  async #reinitializeNow(stale) {
    if (this.session.id !== stale) {
      return; // Another message already started a new session.
    }
    this.session.id = null;
    this.session.listening = false;
    const template = this.session.initialize;
    const version = this.session.protocolVersion;
    if (template === null) {
      throw 'the server ended the session before it was initialised';
    }
    let message;
    try {
      message = JSON.parse(template.message);
    } catch (e) {
      throw e.message;
    }
    message.id = `mcpbox-reinitialize-${this.replays++}`;
    const failed = (e) => `re-initialising failed: ${describeRequestError(e, this.url.href)}`;
    let res;
    try {
      res = await this.#post({ message: JSON.stringify(message), meta: template.meta });
    } catch (e) {
      throw failed(e);
    }
    if (!isSuccess(res.statusCode)) {
      discard(res);
      throw `the server ended the session and refused a new one (HTTP ${statusText(res.statusCode)})`;
    }
    // Read the answer to the end (it may be a stream) and drop it.
    await drain(res);
    const initialized = {
      message: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      meta: { method: 'notifications/initialized', name: undefined, protocolVersion: version ?? undefined },
    };
    try {
      res = await this.#post(initialized);
    } catch (e) {
      throw failed(e);
    }
    await drain(res);
  }

  /**
   * After an exchange failed with `error`: whether the server went away (see the top of
   * this file), in which case the connection is closed, once, with the reason. A
   * connection error proves it at once; any other failure is checked with a `HEAD` to
   * the URL on a fresh connection, which any live server answers somehow (405 will do).
   */
  async #goneAfter(error) {
    if (this.gone || this.closed) {
      return true;
    }
    let cause;
    if (isConnectError(error)) {
      cause = rootCause(error);
    } else {
      const headers = this.#headers(ACCEPT_BOTH, null);
      const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
      try {
        discard(await exchange('HEAD', this.url, headers, null, signal, { fresh: true }));
        return false; // Answered, with any status: it is there.
      } catch (e) {
        if (this.closed) {
          return true;
        }
        if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
          return false; // Still thinking: that proves nothing.
        }
        // Refused, or accepted and dropped unanswered: nothing serves HTTP there.
        cause = rootCause(e);
      }
    }
    if (this.gone) {
      return true;
    }
    this.gone = true;
    const why = this.reached
      ? `went away: ${this.url.href} cannot be reached any more (${cause})`
      : `could not reach ${this.url.href}: ${cause}`;
    // Not noted in the diagnostics: the reason is the error itself.
    await this.#deliverClosed(why);
    return true;
  }

  /** Reads a whole body, giving up past `cap` bytes: `{ text }` or `{ tooLarge: { size, id } }`. */
  async #readBody(res, cap) {
    const parts = [];
    let length = 0;
    for await (const chunk of res) {
      if (length + chunk.length > cap) {
        const o = new Oversized();
        o.push(Buffer.concat(parts, length));
        o.push(chunk);
        res.destroy();
        return { tooLarge: o.finish() };
      }
      parts.push(chunk);
      length += chunk.length;
    }
    return { text: Buffer.concat(parts, length).toString('utf8') };
  }

  /**
   * Handles the answer to a POST. `request` is the id of the request it carried, if any:
   * that request gets a JSON-RPC error when the exchange fails.
   */
  async #readReply(res, request, what) {
    const status = res.statusCode;
    const ctype = contentType(res);
    if (status === 202 || status === 204) {
      discard(res);
      return;
    }
    if (isSuccess(status) && ctype.startsWith(EVENT_STREAM)) {
      const parser = new SseParser(this.cap);
      const answered = { value: false };
      const end = await this.#pump(res, parser, request, answered);
      if (end === 'ended' && request !== undefined && !answered.value) {
        await this.#resume(parser, request);
      }
      return;
    }
    let body;
    try {
      body = await this.#readBody(res, isSuccess(status) ? this.cap : ERROR_BODY_CAP);
    } catch (e) {
      if (await this.#goneAfter(e)) {
        return;
      }
      await this.#fail(request, `reading the answer to ${what} failed: ${describeBodyError(e)}`);
      return;
    }
    let text;
    if (body.tooLarge !== undefined) {
      if (isSuccess(status)) {
        this.oversizedMessages += 1;
        const { size, id } = body.tooLarge;
        await this.#deliver({ tooLarge: { size: BigInt(size), cap: BigInt(this.cap), id: id ?? undefined } });
        return;
      }
      text = '';
    } else {
      text = body.text;
    }
    if (isSuccess(status) && ctype.startsWith('application/json')) {
      if (text.trim() !== '') {
        await this.#deliver({ message: text });
      }
      return;
    }
    if (isSuccess(status)) {
      await this.#fail(
        request,
        `the server answered ${what} with content type ${debugString(ctype)}, not JSON or an event stream`,
      );
      return;
    }
    // An error status. A JSON-RPC error in the body says more than the status.
    if (request !== undefined) {
      if (answers(text, request)) {
        await this.#deliver({ message: text });
        return;
      }
      let error = null;
      try {
        error = JSON.parse(text);
      } catch {
        // Not JSON: the status and the text say it.
      }
      if (error !== null && typeof error === 'object' && !Array.isArray(error)) {
        const inner = error.error;
        if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
          // Servers that fail before reading the request answer with `id: null`.
          error.id = JSON.parse(request);
          error.jsonrpc = '2.0';
          await this.#deliver({ message: JSON.stringify(error) });
          return;
        }
      }
    }
    let snippet = chars(text.trim(), 200);
    if (snippet === '') {
      snippet = STATUS_CODES[status] ?? 'no reason given';
    }
    await this.#fail(request, `HTTP ${status} from the server for ${what}: ${snippet}`);
  }

  /** A failed exchange: the request's error if it was a request, else only a note. */
  async #fail(request, why) {
    this.#note(why);
    if (request !== undefined) {
      await this.#deliver({ message: errorResponse(request, why) });
    }
  }

  /**
   * Reads an event stream, delivering `message` events and passing others to `other`,
   * until it ends (`'ended'`) or the connection is dropped (`'stopped'`).
   */
  async #pump(res, parser, request, answered, other = () => {}) {
    try {
      for await (const chunk of res) {
        for (const item of parser.feed(chunk)) {
          let delivered = true;
          if (item.oversized !== undefined) {
            const { size, id } = item.oversized;
            if (request !== undefined && id === request) {
              answered.value = true;
            }
            this.oversizedMessages += 1;
            delivered = await this.#deliver({
              tooLarge: { size: BigInt(size), cap: BigInt(this.cap), id: id ?? undefined },
            });
          } else if (item.event === 'message') {
            if (item.data.trim() === '') {
              continue; // A priming event: only its id and retry matter.
            }
            if (request !== undefined && answers(item.data, request)) {
              answered.value = true;
            }
            delivered = await this.#deliver({ message: item.data });
          } else {
            other(item.event, item.data);
          }
          if (!delivered) {
            res.destroy();
            return 'stopped';
          }
        }
        if (this.closed) {
          res.destroy();
          return 'stopped';
        }
      }
    } catch (e) {
      if (this.closed) {
        return 'stopped';
      }
      this.#note(`an event stream broke: ${describeBodyError(e)}`);
      return (await this.#goneAfter(e)) ? 'stopped' : 'ended';
    }
    return this.closed ? 'stopped' : 'ended';
  }

  /** Waits the server's `retry:` delay; false when the connection was dropped meanwhile. */
  #pause(parser) {
    return this.#sleep(parser.retryMs ?? DEFAULT_RETRY_MS);
  }

  /**
   * A response stream ended before the answer to `request`: reconnect with GET and
   * `Last-Event-ID` until the answer arrives, or fail the request.
   */
  async #resume(parser, request) {
    const answered = { value: false };
    let failures = 0;
    while (!answered.value && failures < MAX_RECONNECTS) {
      const last = parser.lastEventId;
      if (last === null) {
        break; // The server gave no event ids: the stream cannot be resumed.
      }
      if (!(await this.#pause(parser))) {
        return;
      }
      let res;
      try {
        res = await this.#get(last);
      } catch (e) {
        if (this.closed) {
          return;
        }
        this.#note(`resuming after event ${debugString(last)} failed: ${describeRequestError(e, this.url.href)}`);
        if (await this.#goneAfter(e)) {
          return;
        }
        failures += 1;
        continue;
      }
      if (!(isSuccess(res.statusCode) && contentType(res).startsWith(EVENT_STREAM))) {
        discard(res);
        this.#note(`resuming after event ${debugString(last)}: HTTP ${statusText(res.statusCode)}`);
        if (res.statusCode === 405 || res.statusCode === 404) {
          break;
        }
        failures += 1;
        continue;
      }
      parser.resetStream();
      const before = parser.lastEventId;
      if ((await this.#pump(res, parser, request, answered)) === 'stopped') {
        return;
      }
      failures = parser.lastEventId === before ? failures + 1 : 0;
    }
    if (!answered.value) {
      await this.#fail(
        request,
        "the server's event stream ended before it answered, and it could not be resumed",
      );
    }
  }

  /**
   * The GET stream for server-initiated messages, kept open while the connection lives.
   * A 405 (or 404) means the server offers none. `opened` is called once the first GET
   * has been answered (or failed).
   */
  async #listen(opened) {
    const parser = new SseParser(this.cap);
    let failures = 0;
    let first = true;
    for (;;) {
      const last = parser.lastEventId;
      let res = null;
      let error = null;
      try {
        res = await this.#get(last);
      } catch (e) {
        error = e;
      }
      if (this.closed) {
        if (res !== null) {
          discard(res);
        }
        return;
      }
      if (first) {
        first = false;
        opened();
      }
      if (error !== null) {
        this.#note(`the GET stream failed: ${describeRequestError(error, this.url.href)}`);
        if (await this.#goneAfter(error)) {
          return;
        }
        failures += 1;
      } else if (isSuccess(res.statusCode) && contentType(res).startsWith(EVENT_STREAM)) {
        parser.resetStream();
        if ((await this.#pump(res, parser, undefined, { value: false })) === 'stopped') {
          return;
        }
        failures = parser.lastEventId === last ? failures + 1 : 0;
      } else if (res.statusCode === 405 || res.statusCode === 404) {
        discard(res);
        return;
      } else {
        discard(res);
        this.#note(`the GET stream was refused: HTTP ${statusText(res.statusCode)}`);
        failures += 1;
      }
      if (failures >= MAX_RECONNECTS) {
        this.#note('gave up on the GET stream for server-initiated messages');
        return;
      }
      if (!(await this.#pause(parser))) {
        return;
      }
    }
  }

  /** Ends the session on the server, if there is one. */
  async #deleteSession() {
    if (this.session.id === null) {
      return;
    }
    const headers = this.#headers(ACCEPT_BOTH, null);
    try {
      const res = await exchange('DELETE', this.url, headers, null, AbortSignal.timeout(DELETE_TIMEOUT_MS));
      discard(res);
    } catch {
      // The session ends on the server's own schedule instead.
    }
  }

  /** Streamable HTTP: posts the guest's messages as they come. */
  async #streamable() {
    for (let out = await this.#next(); out !== null; out = await this.#next()) {
      const p = peek(out.message);
      const request = requestId(p);
      if (typeof out.meta?.protocolVersion === 'string') {
        this.session.protocolVersion = out.meta.protocolVersion;
      }
      if (p.method === 'initialize') {
        this.session.initialize = out;
      }
      const what = p.method ?? 'a response';
      if (request !== undefined) {
        // Requests run side by side; their answers may take a while.
        this.#postRequest(out, request, what);
        continue;
      }
      // Notifications and responses go in order, each accepted before the next.
      let ok = false;
      let timer;
      const late = new Promise((resolve) => {
        timer = setTimeout(() => resolve('late'), ACK_TIMEOUT_MS);
      });
      const posted = this.#postInSession(out).then(
        (res) => ({ res }),
        (why) => ({ why }),
      );
      const outcome = await Promise.race([posted, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        posted.then(({ res }) => res && discard(res));
        this.#note(`the server did not accept ${what} within ${ACK_TIMEOUT_MS / 1000}s`);
      } else if (outcome.why !== undefined) {
        if (!this.closed) {
          this.#note(String(outcome.why));
          if (outcome.why?.transport) {
            await this.#goneAfter(outcome.why.transport);
          }
        }
      } else {
        const res = outcome.res;
        ok = isSuccess(res.statusCode);
        if (contentType(res).startsWith(EVENT_STREAM)) {
          // Unusual for a notification; read it without holding up the queue.
          this.#readReply(res, undefined, what);
        } else {
          await this.#readReply(res, undefined, what);
        }
      }
      if (ok && p.method === 'notifications/initialized' && !this.session.listening) {
        this.session.listening = true;
        // Open the GET stream before the next message goes out, so that a server which
        // routes answers to "the" GET stream finds it open, and a later GET resuming a
        // response stream is not mistaken for it.
        let opened;
        const isOpen = new Promise((resolve) => {
          opened = resolve;
        });
        this.#listen(opened);
        let wait;
        await Promise.race([
          isOpen,
          new Promise((resolve) => {
            wait = setTimeout(resolve, GET_OPEN_WAIT_MS);
          }),
        ]);
        clearTimeout(wait);
      }
    }
    // The guest dropped the connection.
    await this.#deleteSession();
  }

  async #postRequest(out, request, what) {
    const first = !this.reached;
    let res;
    try {
      res = await this.#postInSession(out);
    } catch (why) {
      if (this.closed) {
        return;
      }
      if (first && !this.reached) {
        // Nothing ever answered: the server is not there.
        if (!this.gone) {
          this.gone = true;
          this.#note(String(why));
          await this.#deliverClosed(String(why));
        }
      } else if (!(why?.transport && (await this.#goneAfter(why.transport)))) {
        await this.#fail(request, String(why));
      }
      return;
    }
    await this.#readReply(res, request, what);
  }

  /** The deprecated HTTP+SSE transport. */
  async #legacy() {
    let res;
    try {
      res = await this.#get(null);
    } catch (e) {
      if (this.closed) {
        return;
      }
      const why = `could not reach ${this.url.href}: ${describeRequestError(e, this.url.href)}`;
      this.#note(why);
      await this.#deliverClosed(why, { writerEnded: true });
      return;
    }
    if (!(isSuccess(res.statusCode) && contentType(res).startsWith(EVENT_STREAM))) {
      discard(res);
      const why = `GET ${this.url.href} answered HTTP ${statusText(res.statusCode)} (${contentType(res)}), not an event stream`;
      this.#note(why);
      await this.#deliverClosed(why, { writerEnded: true });
      return;
    }
    let found;
    const endpoint = new Promise((resolve) => {
      found = resolve;
    });
    const onEvent = (event, data) => {
      if (event === 'endpoint' && found !== null) {
        const done = found;
        found = null;
        try {
          done({ url: new URL(data.trim(), this.url) });
        } catch {
          done({ why: `the server's endpoint event ${debugString(data)} is not a URL: ${urlProblem(data.trim())}` });
        }
      }
    };
    const reader = (async () => {
      const parser = new SseParser(this.cap);
      if ((await this.#pump(res, parser, undefined, { value: false }, onEvent)) === 'ended') {
        await this.#deliverClosed('the server closed its event stream');
      }
      found?.(null); // The stream ended first; the reader reported it.
    })();
    const target = await endpoint;
    if (target === null) {
      this.#endWriter();
      return;
    }
    if (target.why !== undefined) {
      this.#note(target.why);
      res.destroy();
      await this.#deliverClosed(target.why, { writerEnded: true });
      return;
    }
    for (let out = await this.#next(); out !== null; out = await this.#next()) {
      const request = requestId(peek(out.message));
      const what = out.meta?.method ?? 'a response';
      let reply;
      try {
        reply = await this.#post(out, target.url);
      } catch (e) {
        if (this.closed) {
          break;
        }
        // The event stream ending closes the connection too; whichever notices first says so.
        if (await this.#goneAfter(e)) {
          continue;
        }
        await this.#fail(request, `could not reach ${target.url.href}: ${describeRequestError(e, target.url.href)}`);
        continue;
      }
      if (isSuccess(reply.statusCode)) {
        await drain(reply);
      } else {
        let text = '';
        try {
          text = (await this.#readBody(reply, Infinity)).text;
        } catch {
          // The status says enough.
        }
        await this.#fail(request, `HTTP ${reply.statusCode} from the server for ${what}: ${chars(text.trim(), 200)}`);
      }
    }
    res.destroy();
    await reader;
  }
}

/** Reads a body to its end and drops it; errors are ignored. */
async function drain(res) {
  try {
    for await (const _ of res) {
      // Dropped.
    }
  } catch {
    // Dropped too.
  }
}

/**
 * Why a URL does not parse, in the words of the `url` crate where they can be told apart
 * (WHATWG's parser in Node only says "Invalid URL").
 */
function urlProblem(text) {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/.exec(text);
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)) {
    return 'relative URL without a base';
  }
  if (m) {
    const authority = m[2].slice(m[2].lastIndexOf('@') + 1);
    if (authority === '') {
      return 'empty host';
    }
    const port = /:([^\]:]*)$/.exec(authority);
    if (port && !/^\d*$/.test(port[1])) {
      return 'invalid port number';
    }
    if (port && Number(port[1]) > 65535) {
      return 'invalid port number';
    }
    if (authority.startsWith('[')) {
      return 'invalid IPv6 address';
    }
  }
  return 'invalid international domain name';
}
