// Newline-delimited JSON framing with a hard size cap, for a server's stdout and stderr.
//
// MCP's stdio transport sends one JSON-RPC message per line. A server that prints a
// 100 MB line, or never prints a newline, must not make the host buffer without bound:
// a line over the cap is consumed and dropped while only its first and last bytes are
// kept, so the JSON-RPC id can usually still be found and the one request it answers
// failed with a clear error. This is a port of host/src/transport/framing.rs (same
// rules, same edge sizes, same id search) to Node's push-style streams.

/** Bytes kept from each end of an oversized line to look for its id. */
const EDGE = 512;

/** Bytes Rust's `u8::is_ascii_whitespace` accepts: space, \t, \n, form feed, \r. */
const ASCII_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0c, 0x0d]);

/**
 * Splits a byte stream into lines of at most `cap` bytes.
 *
 * `push` returns the frames a chunk completed; `end` returns the last one when the
 * stream ends without a newline. A frame is `{ line: Buffer }` (without its line
 * terminator) or `{ oversized: { size, id } }` (`size` in bytes, `id` the JSON-RPC id
 * found at the line's top level as JSON text, or `null`).
 */
export class LineSplitter {
  /** @param {number} cap the longest line kept, in bytes */
  constructor(cap) {
    this.cap = cap;
    /** @type {Buffer[]} */
    this.parts = [];
    this.length = 0;
    /** @type {Oversized | null} */
    this.oversized = null;
  }

  /**
   * @param {Buffer} chunk
   * @returns {Array<{line: Buffer} | {oversized: {size: number, id: string | null}}>}
   */
  push(chunk) {
    const frames = [];
    let pos = 0;
    while (pos <= chunk.length) {
      const newline = chunk.indexOf(0x0a, pos);
      const segment = chunk.subarray(pos, newline === -1 ? chunk.length : newline);
      if (this.oversized) {
        this.oversized.push(segment);
      } else if (this.length + segment.length > this.cap) {
        this.oversized = new Oversized();
        this.oversized.push(Buffer.concat(this.parts, this.length));
        this.oversized.push(segment);
        this.parts = [];
        this.length = 0;
      } else if (segment.length > 0) {
        this.parts.push(segment);
        this.length += segment.length;
      }
      if (newline === -1) {
        break;
      }
      frames.push(this.#take());
      pos = newline + 1;
    }
    return frames;
  }

  /** The final line of a stream that did not end with a newline, if there is one. */
  end() {
    if (this.oversized || this.length > 0) {
      return [this.#take()];
    }
    return [];
  }

  #take() {
    let frame;
    if (this.oversized) {
      frame = { oversized: this.oversized.finish() };
    } else {
      frame = { line: trimCr(Buffer.concat(this.parts, this.length)) };
    }
    this.parts = [];
    this.length = 0;
    this.oversized = null;
    return frame;
  }
}

function trimCr(line) {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, -1) : line;
}

/**
 * What is kept of a message while it is being dropped: its size and its first and last
 * bytes, where the JSON-RPC id usually is. Shared with the HTTP transports (sse.js,
 * http.js), which drop oversized bodies and SSE events the same way.
 */
export class Oversized {
  constructor() {
    this.size = 0;
    this.head = Buffer.alloc(0);
    this.tail = Buffer.alloc(0);
  }

  push(chunk) {
    this.size += chunk.length;
    if (this.head.length < EDGE) {
      const take = Math.min(EDGE - this.head.length, chunk.length);
      this.head = Buffer.concat([this.head, chunk.subarray(0, take)]);
    }
    const start = Math.max(0, chunk.length - EDGE);
    this.tail = Buffer.concat([this.tail, chunk.subarray(start)]);
    if (this.tail.length > 2 * EDGE) {
      this.tail = this.tail.subarray(this.tail.length - EDGE);
    }
  }

  /** Appends another dropped part of the same message. */
  absorb(other) {
    this.size += other.size;
    if (this.head.length < EDGE) {
      const take = Math.min(EDGE - this.head.length, other.head.length);
      this.head = Buffer.concat([this.head, other.head.subarray(0, take)]);
    }
    this.tail = other.tail;
  }

  /** `{ size, id }`: the bytes counted and the JSON-RPC id found at the edges, if any. */
  finish() {
    let end = this.tail.length;
    while (end > 0 && [0x0d, 0x20, 0x09].includes(this.tail[end - 1])) {
      end -= 1;
    }
    const id = idAtStart(this.head) ?? idAtEnd(this.tail.subarray(0, end));
    return { size: this.size, id };
  }
}

/**
 * Finds `"id": <value>` among the top-level members at the start of an object,
 * stopping at the first nested value (the id of a response usually comes before
 * `result` or after it, never inside it).
 *
 * @param {Buffer} head
 * @returns {string | null}
 */
export function idAtStart(head) {
  let rest = stripPrefix(head.toString('utf8').trimStart(), '{');
  while (rest !== null) {
    rest = rest.trimStart();
    const key = jsonString(rest);
    if (!key) {
      return null;
    }
    let after = stripPrefix(key[1].trimStart(), ':');
    if (after === null) {
      return null;
    }
    const value = scalar(after.trimStart());
    if (!value) {
      return null;
    }
    if (key[0] === '"id"') {
      return value[0];
    }
    rest = stripPrefix(value[1].trimStart(), ',');
  }
  return null;
}

/**
 * Finds `"id": <value>` as the last member of an object: `…,"id":5}`.
 *
 * @param {Buffer} tail
 * @returns {string | null}
 */
export function idAtEnd(tail) {
  const text = tail.toString('utf8').trimEnd();
  if (!text.endsWith('}')) {
    return null;
  }
  const body = text.slice(0, -1).trimEnd();
  const keyAt = body.lastIndexOf('"id"');
  if (keyAt === -1) {
    return null;
  }
  const after = stripPrefix(body.slice(keyAt + 4).trimStart(), ':');
  if (after === null) {
    return null;
  }
  const value = scalar(after.trimStart());
  return value && value[1].trim() === '' ? value[0] : null;
}

function stripPrefix(text, prefix) {
  return text.startsWith(prefix) ? text.slice(prefix.length) : null;
}

/** Splits a JSON string token off the front of `s`, quotes included. */
function jsonString(s) {
  if (!s.startsWith('"')) {
    return null;
  }
  let i = 1;
  while (i < s.length) {
    if (s[i] === '\\') {
      i += 2;
    } else if (s[i] === '"') {
      return [s.slice(0, i + 1), s.slice(i + 1)];
    } else {
      i += 1;
    }
  }
  return null;
}

/** Splits a string, number, `true`, `false` or `null` off the front of `s`. */
function scalar(s) {
  if (s.startsWith('"')) {
    return jsonString(s);
  }
  const match = /^[A-Za-z0-9+.-]+/.exec(s);
  return match ? [match[0], s.slice(match[0].length)] : null;
}

/**
 * What a stdout line is: lines that cannot be JSON-RPC (a server logging to stdout by
 * mistake) are skipped; everything else is for the guest to parse.
 *
 * @param {Buffer} line
 * @returns {{message: string} | {blank: true} | {notJson: string}}
 */
export function classify(line) {
  const first = line.findIndex((b) => !ASCII_WHITESPACE.has(b));
  if (first === -1) {
    return { blank: true };
  }
  if (line[first] === 0x7b || line[first] === 0x5b) {
    return { message: line.toString('utf8') };
  }
  return { notJson: truncate(line, 200) };
}

/**
 * `bytes` as text, cut to at most `max` bytes on a character boundary and marked
 * with `…` when it was cut.
 *
 * @param {Buffer} bytes
 * @param {number} max
 */
export function truncate(bytes, max) {
  const text = bytes.toString('utf8');
  if (Buffer.byteLength(text) <= max) {
    return text;
  }
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (used + size > max) {
      break;
    }
    out += ch;
    used += size;
  }
  return `${out}…`;
}
