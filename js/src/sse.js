// Server-sent events (the `text/event-stream` format), parsed as bytes arrive.
//
// Both HTTP transports carry JSON-RPC messages in SSE `data:` fields. This is a push
// parser: `feed` takes whatever chunk the network produced and returns the events it
// completed, so it never waits and is tested without I/O. It follows the WHATWG rules
// that matter here — `data` lines joined with `\n`, one optional space after the colon,
// comments, `id` (the last event id, kept across events for `Last-Event-ID`) and `retry`
// (the reconnection delay) — and adds a size cap, so an event larger than the host's
// message cap is dropped (keeping its edges to find the JSON-RPC id) instead of being
// buffered without bound. Lines may end in `\n`, `\r\n` or a lone `\r`; an event cut off
// by the end of the stream is discarded. A port of host/src/transport/sse.rs: same rules,
// same cap arithmetic.

import { Oversized } from './framing.js';

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

/**
 * Incremental `text/event-stream` parser with a cap on one event's data. `feed` returns
 * items `{ event, data }` (a dispatched event; `event` is `message` when absent, `data`
 * may be empty for a priming event) or `{ oversized: { size, id } }` (an event whose data
 * exceeded the cap, dropped).
 */
export class SseParser {
  /** @param {number} cap the most data bytes one event may have */
  constructor(cap) {
    this.cap = cap;
    /** @type {Buffer[]} the line being read */
    this.line = [];
    this.lineLength = 0;
    /** @type {Oversized | null} set while the current line is over the cap */
    this.longLine = null;
    /** The previous chunk ended in `\r`: a `\n` starting the next one belongs to it. */
    this.afterCr = false;
    this.event = '';
    /** @type {Buffer[]} the current event's data, each line followed by `\n` */
    this.data = [];
    this.dataLength = 0;
    /** @type {Oversized | null} the current event's data is over the cap */
    this.dropped = null;
    /** @type {string | null} the last event id the stream set (for `Last-Event-ID`) */
    this.lastEventId = null;
    /** @type {number | null} the reconnection delay the server asked for, in ms */
    this.retryMs = null;
  }

  /** Forgets a half-read line and event (the stream broke); keeps the id and retry delay. */
  resetStream() {
    this.line = [];
    this.lineLength = 0;
    this.longLine = null;
    this.afterCr = false;
    this.event = '';
    this.data = [];
    this.dataLength = 0;
    this.dropped = null;
  }

  /**
   * Parses `chunk`, returning the items it completed.
   *
   * @param {Uint8Array} bytes
   */
  feed(bytes) {
    const out = [];
    let chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (this.afterCr) {
      this.afterCr = false;
      if (chunk.length > 0 && chunk[0] === LF) {
        chunk = chunk.subarray(1);
      }
    }
    for (;;) {
      let end = -1;
      for (let i = 0; i < chunk.length; i++) {
        if (chunk[i] === LF || chunk[i] === CR) {
          end = i;
          break;
        }
      }
      if (end === -1) {
        break;
      }
      this.#pushLineBytes(chunk.subarray(0, end));
      this.#endLine(out);
      const cr = chunk[end] === CR;
      chunk = chunk.subarray(end + 1);
      if (cr) {
        if (chunk.length === 0) {
          this.afterCr = true;
        } else if (chunk[0] === LF) {
          chunk = chunk.subarray(1);
        }
      }
    }
    this.#pushLineBytes(chunk);
    return out;
  }

  #pushLineBytes(bytes) {
    if (bytes.length === 0) {
      return;
    }
    if (this.longLine !== null) {
      this.longLine.push(bytes);
    } else if (this.lineLength + bytes.length > this.cap + 16) {
      // The field name and colon are allowed on top of the cap.
      const o = new Oversized();
      o.push(Buffer.concat(this.line, this.lineLength));
      o.push(bytes);
      this.line = [];
      this.lineLength = 0;
      this.longLine = o;
    } else {
      // Copied: the network may reuse the chunk's memory.
      this.line.push(Buffer.from(bytes));
      this.lineLength += bytes.length;
    }
  }

  #endLine(out) {
    if (this.longLine !== null) {
      // Only a `data` line can usefully be this long; whatever it was, the event it
      // belongs to is dropped.
      const long = this.longLine;
      this.longLine = null;
      this.#dropEvent(long);
      return;
    }
    const line = Buffer.concat(this.line, this.lineLength);
    this.line = [];
    this.lineLength = 0;
    if (line.length === 0) {
      this.#dispatch(out);
      return;
    }
    if (line[0] === COLON) {
      return; // A comment (keep-alive).
    }
    const colon = line.indexOf(COLON);
    let field;
    let value;
    if (colon === -1) {
      field = line.toString('latin1');
      value = Buffer.alloc(0);
    } else {
      field = line.subarray(0, colon).toString('latin1');
      value = line.subarray(colon + 1);
      if (value.length > 0 && value[0] === 0x20) {
        value = value.subarray(1);
      }
    }
    switch (field) {
      case 'data':
        if (this.dropped !== null) {
          this.dropped.push(value);
        } else if (this.dataLength + value.length + 1 > this.cap + 1) {
          const o = new Oversized();
          o.push(Buffer.concat(this.data, this.dataLength));
          o.push(value);
          this.data = [];
          this.dataLength = 0;
          this.#dropEvent(o);
        } else {
          this.data.push(value, Buffer.from('\n'));
          this.dataLength += value.length + 1;
        }
        break;
      case 'event':
        this.event = value.toString('utf8');
        break;
      case 'id':
        if (!value.includes(0)) {
          this.lastEventId = value.toString('utf8');
        }
        break;
      case 'retry':
        if (value.length > 0 && value.every((b) => b >= 0x30 && b <= 0x39)) {
          const ms = Number(value.toString('latin1'));
          // Rust parses into a u64: a value too large for one is ignored (None).
          this.retryMs = ms <= Number.MAX_SAFE_INTEGER ? ms : null;
        }
        break;
      default:
        break;
    }
  }

  #dropEvent(o) {
    if (this.dropped === null) {
      this.dropped = o;
    } else {
      this.dropped.absorb(o);
    }
  }

  #dispatch(out) {
    const event = this.event;
    this.event = '';
    if (this.dropped !== null) {
      const dropped = this.dropped;
      this.dropped = null;
      this.data = [];
      this.dataLength = 0;
      out.push({ oversized: dropped.finish() });
      return;
    }
    let data = Buffer.concat(this.data, this.dataLength);
    this.data = [];
    this.dataLength = 0;
    if (data.length > 0 && data[data.length - 1] === LF) {
      data = data.subarray(0, -1);
    }
    out.push({ event: event === '' ? 'message' : event, data: data.toString('utf8') });
  }
}
