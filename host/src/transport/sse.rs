//! Server-sent events (the `text/event-stream` format), parsed as bytes arrive.
//!
//! Both HTTP transports carry JSON-RPC messages in SSE `data:` fields. This is a
//! push parser: [`SseParser::feed`] takes whatever chunk the network produced and
//! returns the events it completed, so it never waits and is tested without I/O.
//! It follows the WHATWG rules that matter here — `data` lines joined with `\n`,
//! one optional space after the colon, comments, `id` (the last event id, kept
//! across events for `Last-Event-ID`) and `retry` (the reconnection delay) — and
//! adds what a browser does not need: a size cap, so an event larger than the
//! host's message cap is dropped (keeping its edges to find the JSON-RPC id)
//! instead of being buffered without bound.
//!
//! Lines may end in `\n`, `\r\n` or a lone `\r`. An event cut off by the end of
//! the stream is discarded, as the standard says.
//!
//! A small hand parser rather than a crate: the ones on crates.io (`eventsource-stream`,
//! `sse-stream`) buffer an event without limit and hide `retry`/`id` behind a
//! stream adapter, while the host needs a hard cap and the raw fields.

use super::framing::{Frame, Oversized};

/// What the parser completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// A dispatched event. `data` may be empty (a priming event that only
    /// carries an `id` or a `retry`); callers skip those.
    Event {
        /// The `event` field, `message` when absent.
        event: String,
        /// The `data` lines joined with `\n`.
        data: String,
    },
    /// An event whose data exceeded the cap; dropped.
    Oversized {
        /// Bytes of data seen (at least `cap + 1`).
        size: u64,
        /// The JSON-RPC id found at the data's edges, as JSON text.
        id: Option<String>,
    },
}

/// Incremental `text/event-stream` parser with a cap on one event's data.
#[derive(Debug)]
pub(crate) struct SseParser {
    cap: usize,
    /// The line being read.
    line: Vec<u8>,
    /// Set while the current line is over the cap: only its edges are kept.
    long_line: Option<Oversized>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: String,
    data: Vec<u8>,
    /// The current event's data is over the cap.
    dropped: Option<Oversized>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser that drops events with more than `cap` bytes of data.
    pub fn new(cap: usize) -> SseParser {
        SseParser {
            cap,
            line: Vec::new(),
            long_line: None,
            after_cr: false,
            event: String::new(),
            data: Vec::new(),
            dropped: None,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// The last event id the stream set (for `Last-Event-ID` on reconnection).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the server asked for with `retry:`, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Forgets a half-read line and event (the stream broke); keeps the last
    /// event id and the retry delay, which outlive a connection.
    pub fn reset_stream(&mut self) {
        self.line.clear();
        self.long_line = None;
        self.after_cr = false;
        self.event.clear();
        self.data.clear();
        self.dropped = None;
    }

    /// Parses `chunk`, appending the events it completes to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseItem>) {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_line_bytes(&chunk[..end]);
            self.end_line(out);
            let cr = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.push_line_bytes(chunk);
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match &mut self.long_line {
            Some(o) => o.push(bytes),
            // The field name and colon are allowed on top of the cap.
            None if self.line.len() + bytes.len() > self.cap + 16 => {
                let mut o = Oversized::start(&self.line);
                o.push(bytes);
                self.line.clear();
                self.long_line = Some(o);
            }
            None => self.line.extend_from_slice(bytes),
        }
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        if let Some(long) = self.long_line.take() {
            // Only a `data` line can usefully be this long; whatever it was,
            // the event it belongs to is dropped.
            let size = long.size();
            self.drop_event(long, size);
            return;
        }
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // A comment (keep-alive).
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &b""[..]),
        };
        match field {
            b"data" => {
                if let Some(d) = &mut self.dropped {
                    d.push(value);
                } else if self.data.len() + value.len() + 1 > self.cap + 1 {
                    let mut o = Oversized::start(&self.data);
                    o.push(value);
                    let size = o.size();
                    self.data.clear();
                    self.drop_event(o, size);
                } else {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn drop_event(&mut self, o: Oversized, _size: u64) {
        match &mut self.dropped {
            Some(d) => d.absorb(o),
            None => self.dropped = Some(o),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = std::mem::take(&mut self.event);
        if let Some(dropped) = self.dropped.take() {
            self.data.clear();
            if let Frame::Oversized { size, id } = dropped.finish() {
                out.push(SseItem::Oversized { size, id });
            }
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.last() == Some(&b'\n') {
            data.pop();
        }
        out.push(SseItem::Event {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data: match String::from_utf8(data) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]], cap: usize) -> (Vec<SseItem>, SseParser) {
        let mut p = SseParser::new(cap);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        (out, p)
    }

    fn event(data: &str) -> SseItem {
        SseItem::Event {
            event: "message".into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_fields_and_line_endings() {
        let (out, p) = parse(
            &[
                b": keep-alive\n",
                b"id: 7\nretry: 500\ndata: \n\n",
                b"event: endpoint\ndata: /messages?s=1\r\n\r\n",
                b"data:{\"a\":\ndata: 1}\r",
                b"\r",
                b"data: x\rid: 9\r\r",
                b"data: cut off",
            ],
            1000,
        );
        assert_eq!(
            out,
            vec![
                event(""),
                SseItem::Event {
                    event: "endpoint".into(),
                    data: "/messages?s=1".into()
                },
                event("{\"a\":\n1}"),
                event("x"),
            ]
        );
        assert_eq!(p.last_event_id(), Some("9"));
        assert_eq!(p.retry_ms(), Some(500));
    }

    #[test]
    fn split_anywhere_gives_the_same_events() {
        let text = b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1}\r\n\r\ndata: two\n\n";
        let whole = parse(&[text], 100).0;
        for split in 0..text.len() {
            let (a, b) = text.split_at(split);
            assert_eq!(parse(&[a, b], 100).0, whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse(&bytes, 100).0, whole);
    }

    #[test]
    fn oversized_events_are_dropped_with_their_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":\"{}\"}}",
            "x".repeat(5000)
        );
        let text = format!("data: {big}\n\ndata: small\n\n");
        let (out, _) = parse(&[text.as_bytes()], 1000);
        assert_eq!(out.len(), 2, "{out:?}");
        match &out[0] {
            SseItem::Oversized { size, id } => {
                assert!(*size > 1000);
                assert_eq!(id.as_deref(), Some("42"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out[1], event("small"));
        // Many data lines that are small one by one but large together.
        let lines = "data: 0123456789\n".repeat(200);
        let (out, _) = parse(&[format!("{lines}\ndata: ok\n\n").as_bytes()], 1000);
        assert!(matches!(out[0], SseItem::Oversized { .. }), "{out:?}");
        assert_eq!(out[1], event("ok"));
    }
}
