// The guest's remote-server imports, on the driver's side: `mcpbox:runtime/remote`
// (grants), `wasi:http/outgoing-handler`, the `wasi:http/types` functions the guest
// calls, and the `wasi:io/streams` and `wasi:io/error` ones they need.
//
// They are proxies, as `transport.connection` is in imports/transport.js: grants are kept and
// requests sent on the host side (remote.js, wasi_http.js), which owns the
// environment (`${VAR}` values never reach the guest) and the sockets. A request is
// posted when the guest hands it to `handle` (so the host side maps it to its grant
// while the grant is surely open), its body when the guest finishes it; the answer
// comes back as messages that the driver's hub passes to `receive`, and the guest reads
// it without blocking (its head from the `future-incoming-response`, its body from an
// `input-stream`) between polls.
//
// A request body is kept here until it is finished: the wasmtime host also collects it
// before sending, so both send it with a `Content-Length`. `check-write` always grants
// `WRITE_BUDGET` bytes, so the guest writes a body in one go.
//
// | host side → driver   | fields                       | meaning                          |
// |----------------------|------------------------------|----------------------------------|
// | `http-head`          | `ex`, `status`, `headers`    | the answer's head                |
// | `http-fail`          | `ex`, `code`                 | no answer: a `wasi:http` error   |
// | `http-data`          | `ex`, `chunk`, `paused`      | body bytes; `paused`: reading    |
// |                      |                              | stopped until `http-taken`       |
// | `http-end`           | `ex`, `error`                | the body ended (`error`: broke)  |
//
// | driver → host side   | fields                                         | meaning               |
// |----------------------|------------------------------------------------|-----------------------|
// | `grant`              | `req`, `server`, `endpoint`                    | open a grant (`reply`)|
// | `same-origin`        | `req`, `authority`, `url`                      | `grant.same-origin`   |
// | `grant-drop`         | `authority`                                    | the grant was dropped |
// | `http`               | `ex`, `authority`, `method`, `pathWithQuery`,  | a request to send     |
// |                      | `headers`, `body`, `connectTimeoutMs`          |                       |
// | `http-body`          | `ex`, `body`                                   | its body (`null`: the |
// |                      |                                                | guest dropped it)     |
// | `http-taken`         | `ex`, `bytes`                                  | body bytes taken      |
// | `http-close`         | `ex`                                           | the guest holds none  |
// |                      |                                                | of it any more        |

import { TOKEN } from './remote.js';

const symbolDispose = Symbol.dispose || Symbol.for('dispose');

/** What `output-stream.check-write` grants every time. */
const WRITE_BUDGET = 1024 * 1024;

/**
 * Header names `fields.from-list` refuses (`forbidden`), as wasmtime-wasi-http's
 * defaults: the connection's own business.
 */
const FORBIDDEN = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'http2-settings',
]);

/** Bytes `http::HeaderValue::from_bytes` accepts: tab, and 0x20–0xff except DEL. */
function validValue(bytes) {
  for (const b of bytes) {
    if ((b < 0x20 && b !== 0x09) || b === 0x7f) {
      return false;
    }
  }
  return true;
}

/**
 * Fails an import with the error case of its `result`: thrown with the WIT value as
 * `payload`, as jco's glue expects it (not an `Error`: jco turns those into traps).
 */
function fail(val) {
  throw { payload: val };
}

/**
 * The remote imports for one driver.
 *
 * @param {object} hub the driver's channel: `post(msg)`, `request(msg)`, `drain()`
 * @param {Function} Pollable the driver's `wasi:io/poll` base class
 */
export function httpImports(hub, Pollable) {
  /** @type {Map<number, Answer>} answers of the exchanges the guest holds, by id */
  const answers = new Map();
  /** Stand-in authorities of the grants the guest holds. */
  const grants = new Set();
  let nextExchange = 1;

  /** A ready pollable, for what never makes the guest wait. */
  class ReadyPollable extends Pollable {
    ready() {
      return true;
    }
  }

  /** What came back for one exchange, and how many of the guest's resources refer to it. */
  class Answer {
    constructor(id) {
      this.id = id;
      /** @type {{status: number, headers: [string, string][]} | null} */
      this.head = null;
      /** An `error-code` instead of a head. */
      this.failure = null;
      /** @type {Uint8Array[]} body chunks not yet read, the first from `at` on */
      this.chunks = [];
      this.at = 0;
      this.ended = false;
      /** The `error-code` the body broke with, until the guest has read it. */
      this.broke = null;
      this.paused = false;
      this.taken = 0;
      this.holders = 1;
    }

    /** One of the guest's resources for it was dropped: tell the host when none is left. */
    release() {
      this.holders -= 1;
      if (this.holders === 0) {
        answers.delete(this.id);
        hub.post({ t: 'http-close', ex: this.id });
      }
    }
  }

  /** Takes the host side's message about an exchange (the hub calls it). */
  function receive(msg) {
    const answer = answers.get(msg.ex);
    if (answer === undefined) {
      return;
    }
    switch (msg.t) {
      case 'http-head':
        answer.head = { status: msg.status, headers: msg.headers };
        break;
      case 'http-fail':
        answer.failure = msg.code;
        break;
      case 'http-data':
        answer.chunks.push(msg.chunk);
        answer.paused ||= msg.paused;
        break;
      case 'http-end':
        answer.ended = true;
        answer.broke = msg.error;
        break;
      default:
        throw new Error(`mcpbox driver: unexpected message ${JSON.stringify(msg.t)}`);
    }
  }

  /** Forgets every exchange and grant of a trapped instance, so the host ends them too. */
  function closeAll() {
    for (const id of answers.keys()) {
      hub.post({ t: 'http-close', ex: id });
    }
    answers.clear();
    for (const authority of grants) {
      hub.post({ t: 'grant-drop', authority });
    }
    grants.clear();
  }

  // --- mcpbox:runtime/remote --------------------------------------------------------

  /** `remote.grant`: the guest's permission to reach one configured server. */
  class Grant {
    /** @private use `Grant.open` */
    constructor(authority, url) {
      this.authority = authority;
      this.standIn = url;
    }

    static open(server, endpoint) {
      const result = hub.request({ t: 'grant', server, endpoint });
      if (result.tag !== 'ok') {
        fail(result.val);
      }
      grants.add(result.val.authority);
      return new Grant(result.val.authority, result.val.url);
    }

    url() {
      return this.standIn;
    }

    sameOrigin(url) {
      return hub.request({ t: 'same-origin', authority: this.authority, url });
    }

    /** `grant.needs-authorization`: this host runs no OAuth, so it has nothing to add. */
    needsAuthorization() {
      return undefined;
    }

    [symbolDispose]() {
      grants.delete(this.authority);
      hub.post({ t: 'grant-drop', authority: this.authority });
    }
  }

  // --- wasi:http/types --------------------------------------------------------------

  /** `fields`: header names and values (bytes). */
  class Fields {
    /** @param {[string, Uint8Array][]} entries */
    constructor(entries = []) {
      this.list = entries;
    }

    static fromList(entries) {
      for (const [name, value] of entries) {
        if (!TOKEN.test(name) || !validValue(value)) {
          fail({ tag: 'invalid-syntax' });
        }
        if (FORBIDDEN.has(name.toLowerCase())) {
          fail({ tag: 'forbidden' });
        }
      }
      return new Fields(entries);
    }

    entries() {
      return this.list;
    }
  }

  /** `outgoing-request`: a request the guest builds, then hands to `handle`. */
  class OutgoingRequest {
    constructor(headers) {
      this.headers = headers.list;
      this.method = 'GET';
      this.authority = '';
      this.pathWithQuery = '/';
      /** @type {OutgoingBody | null} */
      this.outgoing = null;
    }

    setMethod(method) {
      if (method.tag === 'other') {
        if (!TOKEN.test(method.val)) {
          fail();
        }
        this.method = method.val;
      } else {
        this.method = method.tag.toUpperCase();
      }
      return undefined;
    }

    setScheme() {
      // The real URL's scheme is the grant's: the stand-in's means nothing.
      return undefined;
    }

    setAuthority(authority) {
      this.authority = authority ?? '';
      return undefined;
    }

    setPathWithQuery(path) {
      this.pathWithQuery = path ?? '/';
      return undefined;
    }

    body() {
      if (this.outgoing !== null) {
        fail();
      }
      this.outgoing = new OutgoingBody();
      return this.outgoing;
    }
  }

  /** `outgoing-body`: a request body, kept until it is finished. */
  class OutgoingBody {
    constructor() {
      /** @type {Uint8Array[]} */
      this.parts = [];
      this.streamTaken = false;
      this.finished = false;
      /** Dropped without `finish`. */
      this.abandoned = false;
      /** The exchange it belongs to, once its request was handed over. */
      this.ex = null;
    }

    write() {
      if (this.streamTaken) {
        fail();
      }
      this.streamTaken = true;
      return new OutputStream(this);
    }

    static finish(body) {
      body.finished = true;
      if (body.ex !== null) {
        hub.post({ t: 'http-body', ex: body.ex, body: concat(body.parts) });
      }
      return undefined;
    }

    /** Dropped without `finish`: the request fails. */
    [symbolDispose]() {
      if (this.finished) {
        return;
      }
      this.finished = true;
      this.abandoned = true;
      if (this.ex !== null) {
        hub.post({ t: 'http-body', ex: this.ex, body: null });
      }
    }
  }

  /** `output-stream`: writes into an outgoing body. */
  class OutputStream {
    constructor(body) {
      this.target = body;
    }

    checkWrite() {
      if (this.target.finished) {
        fail({ tag: 'closed' });
      }
      return BigInt(WRITE_BUDGET);
    }

    write(contents) {
      if (this.target.finished) {
        fail({ tag: 'closed' });
      }
      this.target.parts.push(contents);
      return undefined;
    }

    subscribe() {
      return new ReadyPollable();
    }
  }

  /** `request-options`: only the connect timeout is used. */
  class RequestOptions {
    constructor() {
      this.connectTimeoutMs = null;
    }

    setConnectTimeout(ns) {
      this.connectTimeoutMs = ns === undefined ? null : Number(ns / 1_000_000n);
      return undefined;
    }
  }

  /** `outgoing-handler.handle`: the only way out. */
  function handle(request, options) {
    const ex = nextExchange++;
    const body = request.outgoing;
    // Kept before the request goes out: a host on this thread may answer it at once.
    const answer = new Answer(ex);
    answers.set(ex, answer);
    hub.post({
      t: 'http',
      ex,
      authority: request.authority,
      method: request.method,
      pathWithQuery: request.pathWithQuery,
      headers: request.headers.map(([name, value]) => [name, Buffer.from(value).toString('latin1')]),
      body: body !== null,
      connectTimeoutMs: options?.connectTimeoutMs ?? null,
    });
    if (body !== null) {
      body.ex = ex;
      if (body.finished) {
        hub.post({ t: 'http-body', ex, body: body.abandoned ? null : concat(body.parts) });
      }
    }
    return new FutureIncomingResponse(answer);
  }

  /** Ready once a future's answer (its head or a failure) came. */
  class HeadPollable extends Pollable {
    constructor(answer) {
      super();
      this.answer = answer;
    }

    ready() {
      return this.answer.head !== null || this.answer.failure !== null;
    }
  }

  /** `future-incoming-response`: the answer to one request, once it comes. */
  class FutureIncomingResponse {
    constructor(answer) {
      this.answer = answer;
      this.taken = false;
    }

    subscribe() {
      return new HeadPollable(this.answer);
    }

    get() {
      hub.drain();
      const answer = this.answer;
      if (answer.head === null && answer.failure === null) {
        return undefined;
      }
      if (this.taken) {
        return { tag: 'err', val: undefined };
      }
      this.taken = true;
      if (answer.failure !== null) {
        return { tag: 'ok', val: { tag: 'err', val: answer.failure } };
      }
      answer.holders += 1;
      return { tag: 'ok', val: { tag: 'ok', val: new IncomingResponse(answer) } };
    }

    [symbolDispose]() {
      this.answer.release();
    }
  }

  /** `incoming-response`: an answer's head, and its body. */
  class IncomingResponse {
    constructor(answer) {
      this.answer = answer;
      this.consumed = false;
    }

    status() {
      return this.answer.head.status;
    }

    headers() {
      return new Fields(this.answer.head.headers.map(([name, value]) => [name, Buffer.from(value, 'latin1')]));
    }

    consume() {
      if (this.consumed) {
        fail();
      }
      this.consumed = true;
      this.answer.holders += 1;
      return new IncomingBody(this.answer);
    }

    [symbolDispose]() {
      this.answer.release();
    }
  }

  /** `incoming-body`: an answer's body. */
  class IncomingBody {
    constructor(answer) {
      this.answer = answer;
      this.streamed = false;
    }

    stream() {
      if (this.streamed) {
        fail();
      }
      this.streamed = true;
      this.answer.holders += 1;
      return new InputStream(this.answer);
    }

    [symbolDispose]() {
      this.answer.release();
    }
  }

  /** Ready while a body stream has bytes, its end or its failure to give. */
  class BodyPollable extends Pollable {
    constructor(answer) {
      super();
      this.answer = answer;
    }

    ready() {
      return this.answer.chunks.length > 0 || this.answer.ended;
    }
  }

  /** `input-stream`: an answer's body bytes, as they arrive. */
  class InputStream {
    constructor(answer) {
      this.answer = answer;
    }

    /** Up to `len` bytes; none while nothing has arrived; `closed` at the end. */
    read(len) {
      hub.drain();
      const answer = this.answer;
      if (answer.chunks.length === 0) {
        if (!answer.ended) {
          return new Uint8Array(0);
        }
        if (answer.broke !== null) {
          const error = new IoError(answer.broke);
          answer.broke = null;
          fail({ tag: 'last-operation-failed', val: error });
        }
        fail({ tag: 'closed' });
      }
      const bytes = take(answer, Number(len));
      answer.taken += bytes.length;
      if (answer.paused && answer.chunks.length === 0) {
        answer.paused = false;
        hub.post({ t: 'http-taken', ex: answer.id, bytes: answer.taken });
      }
      return bytes;
    }

    subscribe() {
      return new BodyPollable(this.answer);
    }

    [symbolDispose]() {
      this.answer.release();
    }
  }

  // --- wasi:io/error ----------------------------------------------------------------

  /** `wasi:io/error.error`: why a body stream broke, as an HTTP `error-code`. */
  class IoError {
    constructor(code) {
      this.code = code;
    }

    toDebugString() {
      return this.code.tag;
    }
  }

  return {
    receive,
    closeAll,
    imports: {
      'mcpbox:runtime/remote': { Grant },
      'wasi:http/outgoing-handler': { handle },
      'wasi:http/types': {
        Fields,
        FutureIncomingResponse,
        IncomingBody,
        IncomingResponse,
        OutgoingBody,
        OutgoingRequest,
        RequestOptions,
        httpErrorCode: (error) => error.code,
      },
      'wasi:io/error': { Error: IoError },
      'wasi:io/streams': { InputStream, OutputStream },
    },
  };
}

/** The body parts as one array. */
function concat(parts) {
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

/** Takes up to `len` bytes from the front of an answer's chunks, several chunks at once. */
function take(answer, len) {
  const first = answer.chunks[0];
  if (answer.at === 0 && first.length <= len && answer.chunks.length === 1) {
    answer.chunks.length = 0;
    return first;
  }
  const out = [];
  let size = 0;
  while (answer.chunks.length > 0 && size < len) {
    const chunk = answer.chunks[0];
    const end = Math.min(chunk.length, answer.at + (len - size));
    out.push(chunk.subarray(answer.at, end));
    size += end - answer.at;
    if (end === chunk.length) {
      answer.chunks.shift();
      answer.at = 0;
    } else {
      answer.at = end;
    }
  }
  return Buffer.concat(out, size);
}
