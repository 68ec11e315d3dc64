// The main thread's side of `wasi:http/outgoing-handler`: the requests the guest hands
// to `handle`, sent with node:http, their answers streamed back to the driver.
//
// This is where the host's duties for remote servers live, as in the wasmtime host's
// `send_request` hook (host/src/imports/wasi_http.rs):
//
// - A request must name a grant by its stand-in authority (`g<N>.mcpbox.internal`);
//   anything else is refused (`HTTP-request-denied`), so the guest reaches nothing but
//   configured servers.
// - It goes to the configured URL (same path and query as the stand-in) or to its path
//   and query on the configured origin, placeholders replaced by their values
//   (remote.js `Granted.target`).
// - The configured headers are added, replacing any of the same name: they go only to
//   the configured origin, since nothing else can be reached. No `Referer` is sent and
//   no redirect is followed (node:http follows none): a `3xx` is the guest's to read.
// - `HEAD` goes on a new connection, never a pooled one: the guest sends it to learn
//   whether anything still serves HTTP at the URL after an exchange broke.
// - A request the guest drops before its answer (the `DELETE` that ends a session) is
//   still sent; `closeAll` waits a little for such requests' answers.
// - Failures are reported as the `wasi:http` error codes the wasmtime host gives for
//   reqwest's errors: `connection-refused`, `connection-timeout`,
//   `destination-not-found`, `destination-unavailable` while connecting (the guest
//   reads them as "nothing serves HTTP there"), `connection-terminated` after.
//
// node:http rather than `fetch`: `fetch` (undici) follows redirects unless told not to
// but then hides the `Location` of cross-origin ones behind an opaque response, always
// pools `HEAD`, cannot bound the connect phase alone, and reports every failure as one
// `TypeError("fetch failed")` whose cause differs between undici versions.
//
// Answers flow incrementally (an SSE stream is a long-lived answer): each chunk goes to
// the driver as it arrives, and at most `READ_AHEAD` bytes are read ahead of the guest
// before the response is paused until the guest has taken them.

import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

import { STAND_IN_DOMAIN } from './remote.js';

/** How long establishing a connection may take unless the request options say otherwise. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Response bytes read ahead of the guest; beyond this, reading pauses. */
export const READ_AHEAD = 1024 * 1024;
/** How long `closeAll` waits for the answers to requests the guest dropped. */
const DROPPED_PATIENCE_MS = 5_000;
/** What reqwest sends unless the request says otherwise (the wasmtime host's client). */
const USER_AGENT = 'mcpbox/0.1.0';

/** One connection pool per scheme for every server, as the wasmtime host's one client. */
const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };

/** A `wasi:http` `error-code` with no payload. */
const code = (tag) => ({ tag });

/**
 * What a failed request means in `wasi:http` terms, as the wasmtime host maps reqwest's
 * errors: a connection that could not be made (by cause), or one that broke.
 *
 * @param {Error & {code?: string, syscall?: string}} error
 * @param {boolean} connected whether the connection (TCP and TLS) was established
 */
export function errorCode(error, connected) {
  if (error?.mcpboxConnectTimeout) {
    return code('connection-timeout');
  }
  if (!connected) {
    if (error?.code === 'ECONNREFUSED') {
      return code('connection-refused');
    }
    if (error?.code === 'ETIMEDOUT') {
      return code('connection-timeout');
    }
    if (error?.syscall === 'getaddrinfo') {
      return code('destination-not-found');
    }
    return code('destination-unavailable');
  }
  return code('connection-terminated');
}

/** One request the guest handed over, and its answer while it streams. */
class Exchange {
  constructor(id) {
    this.id = id;
    /** @type {import('node:http').ClientRequest | null} */
    this.request = null;
    /** @type {import('node:http').IncomingMessage | null} */
    this.response = null;
    /** The guest holds nothing of it any more. */
    this.dropped = false;
    /** Its outcome was reported (failure, or the end of the answer). */
    this.over = false;
    this.delivered = 0;
    this.taken = 0;
    this.paused = false;
    /** Resolves once it is over (answered and read, failed, or destroyed). */
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
  }
}

/**
 * The embedder's source of OAuth access tokens for remote servers (`McpBox.open`'s
 * `tokenProvider`): called before each request with the server's configured name and
 * URL, and once more with `refresh: true` (and the server's `WWW-Authenticate`) after
 * the server refused the token with `401`. Returns the access token, or `null` for
 * none.
 *
 * @typedef {(request: {server: string, url: string, refresh: boolean,
 *   wwwAuthenticate: string | null}) => string | null | Promise<string | null>} TokenProvider
 */

/** Every exchange of one runtime, by the id the driver knows it by. */
export class HttpExchanges {
  /** @type {Map<number, Exchange>} */
  #exchanges = new Map();
  /** Requests waiting for their body, by exchange id. */
  #waiting = new Map();

  /**
   * @param {import('./remote.js').Grants} grants
   * @param {(msg: object) => void} forward posts a message to the driver
   * @param {{tokenProvider?: TokenProvider | null, warn?: (message: string) => void}} [auth]
   *   the embedder's OAuth access tokens (see `authorize` below)
   */
  constructor(grants, forward, { tokenProvider = null, warn = () => {} } = {}) {
    this.grants = grants;
    this.forward = forward;
    this.tokenProvider = tokenProvider;
    this.warn = warn;
  }

  /**
   * The embedder's bearer token for a request to `granted`'s server, or `null`: asked
   * for every request (the embedder caches), never for a server whose entry configures
   * its own `Authorization` header. A provider that throws, or answers with something
   * that is not a usable header value, gives no token, and the embedder is warned: the
   * request goes without one and the server's `401` reaches the guest as it would.
   * The token stays on this thread: the guest sees the server's answers, never it.
   *
   * @param {import('./remote.js').Granted} granted
   * @param {{rejected?: string, wwwAuthenticate?: string | null}} [retry] after a `401`
   * @returns {Promise<string | null>}
   */
  async authorize(granted, retry) {
    if (this.tokenProvider === null || granted.headers.some(([name]) => name.toLowerCase() === 'authorization')) {
      return null;
    }
    let token;
    try {
      token = await this.tokenProvider({
        server: granted.server,
        url: granted.url.href,
        refresh: retry !== undefined,
        wwwAuthenticate: retry?.wwwAuthenticate ?? null,
      });
    } catch (error) {
      this.warn(`the tokenProvider failed for server \`${granted.server}\`: ${error?.message ?? error}; sending no token`);
      return null;
    }
    if (token === null || token === undefined || token === '') {
      return null;
    }
    if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
      this.warn(`the tokenProvider gave server \`${granted.server}\` something that is not a bearer token (a string of visible ASCII); sending no token`);
      return null;
    }
    return token;
  }

  /**
   * `outgoing-handler.handle`: maps the request to its grant's server now, while the
   * grant is surely open (the guest may drop it right after), and sends it once its
   * body is complete.
   *
   * @param {{ex: number, authority: string, method: string, pathWithQuery: string,
   *   headers: [string, string][], body: boolean, connectTimeoutMs: number | null}} msg
   *   header values as latin1 text; `body`: a body follows (`body` below)
   */
  start(msg) {
    const ex = new Exchange(msg.ex);
    this.#exchanges.set(msg.ex, ex);
    const authority = msg.authority.toLowerCase();
    const granted = authority.endsWith(STAND_IN_DOMAIN) ? this.grants.get(authority) : undefined;
    const url = granted?.target(msg.pathWithQuery) ?? null;
    if (url === null) {
      this.#fail(ex, code('HTTP-request-denied'));
      return;
    }
    const send = async (body) => {
      const headers = headersFor(msg.headers, granted.headers);
      const request = { url, method: msg.method, headers, body, connectTimeoutMs: msg.connectTimeoutMs ?? CONNECT_TIMEOUT_MS };
      const token = await this.authorize(granted);
      if (token === null) {
        this.#send(ex, request);
        return;
      }
      headers.authorization = `Bearer ${token}`;
      // A `401` to a token the provider gave: it is asked once more (`refresh`), and the
      // request is sent again if it gives another token; else the `401` goes on.
      this.#send(ex, request, async (wwwAuthenticate) => {
        const again = await this.authorize(granted, { rejected: token, wwwAuthenticate });
        if (again === null || again === token) {
          return null;
        }
        return { ...request, headers: { ...headers, authorization: `Bearer ${again}` } };
      });
    };
    if (msg.body) {
      this.#waiting.set(msg.ex, send);
    } else {
      send(null);
    }
  }

  /** The request body of exchange `id` is complete (`null`: the guest dropped it unfinished). */
  body(id, bytes) {
    const send = this.#waiting.get(id);
    this.#waiting.delete(id);
    const ex = this.#exchanges.get(id);
    if (send === undefined || ex === undefined) {
      return;
    }
    if (bytes === null) {
      this.#fail(ex, code('HTTP-request-body-size'));
    } else {
      send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    }
  }

  /** The guest has taken `bytes` of exchange `id`'s answer in all: read on if it caught up. */
  taken(id, bytes) {
    const ex = this.#exchanges.get(id);
    if (ex === undefined) {
      return;
    }
    ex.taken = bytes;
    if (ex.paused && ex.delivered - ex.taken < READ_AHEAD) {
      ex.paused = false;
      ex.response?.resume();
    }
  }

  /**
   * The guest dropped everything of exchange `id`. A request not yet answered still
   * goes (its answer is dropped when it comes); an answer being read is cut off.
   */
  close(id) {
    const ex = this.#exchanges.get(id);
    if (ex === undefined) {
      return;
    }
    ex.dropped = true;
    if (ex.response !== null || ex.over) {
      this.#destroy(ex);
    }
  }

  /**
   * Ends every exchange: waits (a little) for the answers to requests the guest dropped
   * before they were answered, such as a session's `DELETE`, and cuts off the rest.
   */
  async closeAll() {
    const pending = [];
    for (const ex of this.#exchanges.values()) {
      if (ex.dropped && ex.response === null && !ex.over) {
        pending.push(ex.settled);
      } else {
        this.#destroy(ex);
      }
    }
    if (pending.length > 0) {
      let timer;
      await Promise.race([
        Promise.all(pending),
        new Promise((resolve) => {
          timer = setTimeout(resolve, DROPPED_PATIENCE_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    for (const ex of this.#exchanges.values()) {
      this.#destroy(ex);
    }
    this.#exchanges.clear();
    this.#waiting.clear();
  }

  /**
   * Sends one request of exchange `ex`. `onUnauthorized`, when given, is asked on a
   * `401` for a request to send instead (once); `null` passes the `401` on.
   */
  #send(ex, { url, method, headers, body, connectTimeoutMs }, onUnauthorized = null) {
    const https = url.protocol === 'https:';
    const request = (https ? httpsRequest : httpRequest)(url, {
      method,
      headers,
      // A probe must not reuse a connection the server may have dropped a moment ago.
      agent: method === 'HEAD' ? false : agents[url.protocol],
    });
    ex.request = request;
    let connected = false;
    let timer = null;
    request.once('socket', (socket) => {
      if (!socket.connecting) {
        connected = true;
        return;
      }
      timer = setTimeout(() => {
        request.destroy(Object.assign(new Error('connecting timed out'), { mcpboxConnectTimeout: true }));
      }, connectTimeoutMs);
      socket.once(https ? 'secureConnect' : 'connect', () => {
        connected = true;
        clearTimeout(timer);
      });
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      if (ex.response === null) {
        this.#fail(ex, errorCode(error, connected));
      }
    });
    request.once('response', async (response) => {
      clearTimeout(timer);
      if (response.statusCode === 401 && onUnauthorized !== null && !ex.dropped) {
        const challenge = response.headers['www-authenticate'] ?? null;
        // Held until the provider answers: paused, so nothing is lost if it goes on.
        response.pause();
        const retry = await onUnauthorized(Array.isArray(challenge) ? challenge.join(', ') : challenge);
        if (retry !== null && !ex.dropped) {
          response.resume();
          response.destroy();
          this.#send(ex, retry);
          return;
        }
        response.resume();
      }
      ex.response = response;
      if (ex.dropped) {
        this.#destroy(ex);
        return;
      }
      const names = response.rawHeaders;
      const fields = [];
      for (let i = 0; i + 1 < names.length; i += 2) {
        fields.push([names[i].toLowerCase(), names[i + 1]]);
      }
      this.forward({ t: 'http-head', ex: ex.id, status: response.statusCode, headers: fields });
      response.on('data', (chunk) => {
        ex.delivered += chunk.length;
        if (!ex.paused && ex.delivered - ex.taken >= READ_AHEAD) {
          ex.paused = true;
          response.pause();
        }
        this.forward({ t: 'http-data', ex: ex.id, chunk, paused: ex.paused });
      });
      response.once('end', () => this.#end(ex, null));
      // A broken answer is reported by 'close' below.
      response.on('error', () => {});
      response.once('close', () => {
        // Closed before its end: the connection broke mid-answer.
        if (!response.complete) {
          this.#end(ex, code('connection-terminated'));
        }
      });
    });
    request.end(body ?? undefined);
  }

  /** Reports a request that got no answer. */
  #fail(ex, error) {
    if (ex.over) {
      return;
    }
    ex.over = true;
    if (!ex.dropped) {
      this.forward({ t: 'http-fail', ex: ex.id, code: error });
    }
    this.#forget(ex);
  }

  /** Reports the end of an answer (`error`: how it broke). */
  #end(ex, error) {
    if (ex.over) {
      return;
    }
    ex.over = true;
    if (!ex.dropped) {
      this.forward({ t: 'http-end', ex: ex.id, error });
    }
    this.#forget(ex);
  }

  /** Cuts the exchange off, whatever its state. */
  #destroy(ex) {
    ex.over = true;
    ex.request?.destroy();
    this.#forget(ex);
  }

  /** It is over: forgotten once the guest holds nothing of it either. */
  #forget(ex) {
    if (ex.dropped) {
      this.#exchanges.delete(ex.id);
      this.#waiting.delete(ex.id);
    }
    ex.settle();
  }
}

/**
 * The headers to send: the guest's, less any `Referer` and any it shares a name with
 * a configured header, then the configured ones; reqwest's `User-Agent` and `Accept`
 * where the guest set none.
 *
 * @param {[string, string][]} guest
 * @param {[string, string][]} configured
 * @returns {Record<string, string | string[]>}
 */
function headersFor(guest, configured) {
  const replaced = new Set(configured.map(([name]) => name.toLowerCase()));
  const headers = {};
  const add = (name, value) => {
    const key = name.toLowerCase();
    const had = headers[key];
    headers[key] = had === undefined ? value : [had, value].flat();
  };
  for (const [name, value] of guest) {
    const key = name.toLowerCase();
    if (key !== 'referer' && !replaced.has(key)) {
      add(key, value);
    }
  }
  for (const [name, value] of configured) {
    add(name, value);
  }
  headers['user-agent'] ??= USER_AGENT;
  headers.accept ??= '*/*';
  return headers;
}
