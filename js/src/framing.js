// Newline-delimited JSON framing with a hard size cap, for a server's stdout and stderr.
//
// MCP's stdio transport sends one JSON-RPC message per line. A server that prints a
// 100 MB line, or never prints a newline, must not make the host buffer without bound:
// a line over the cap is consumed and dropped while only its size and its first and
// last bytes are kept. They go to the guest, which finds the JSON-RPC id there and
// fails the one request the line answered. This is a port of
// host/src/transport/framing.rs (same rules, same edge sizes) to Node's push-style
// streams.

/** Bytes kept from each end of an oversized line (the contract's "at most 256"). */
export const EDGE = 256;

/** Bytes Rust's `u8::is_ascii_whitespace` accepts: space, \t, \n, form feed, \r. */
const ASCII_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0c, 0x0d]);

/**
 * Splits a byte stream into lines of at most `cap` bytes.
 *
 * `push` returns the frames a chunk completed; `end` returns the last one when the
 * stream ends without a newline. A frame is `{ line: Buffer }` (without its line
 * terminator) or `{ oversized: { size, head, tail } }` (`size` in bytes, `head` and
 * `tail` its first and last `EDGE` bytes at most).
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
   * @returns {Array<{line: Buffer} | {oversized: {size: number, head: Buffer, tail: Buffer}}>}
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
 * What is kept of a line while it is being dropped: its size and its first and last
 * bytes, where the JSON-RPC id usually is (the guest looks for it there).
 */
class Oversized {
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

  /** `{ size, head, tail }`: the bytes counted and the edges (the tail without trailing blanks). */
  finish() {
    let end = this.tail.length;
    while (end > 0 && [0x0d, 0x20, 0x09].includes(this.tail[end - 1])) {
      end -= 1;
    }
    return { size: this.size, head: this.head, tail: this.tail.subarray(Math.max(0, end - EDGE), end) };
  }
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
