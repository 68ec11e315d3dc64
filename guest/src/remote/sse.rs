//! Server-sent events (the `text/event-stream` format), parsed as bytes arrive.
//!
//! Both HTTP transports carry JSON-RPC messages in SSE `data:` fields. This is a
//! push parser: [`SseParser::feed`] takes whatever chunk the network produced and
//! returns the events it completed, so it never waits and is tested without I/O.
//! It follows the WHATWG rules that matter here — `data` lines joined with `\n`,
//! one optional space after the colon, comments, `id` (the last event id, kept
//! across events for `Last-Event-ID`) and `retry` (the reconnection delay).
//!
//! Lines may end in `\n`, `\r\n` or a lone `\r`. An event cut off by the end of
//! the stream is discarded, as the standard says.
//!
//! Hand-written rather than `eventsource-stream` (which builds `no_std` too and
//! agrees with this parser: see the differential test below) for one reason:
//! bounded buffering. The crate buffers an event of any size; a server that sends
//! a 1 GB event would exhaust the guest's memory, and with it every other
//! server's connection. Here an event whose data exceeds the cap is dropped while
//! only its size and edges are kept ([`SseItem::Oversized`]), so the one request
//! it answered fails with a clear error and the stream goes on.

use crate::prelude::*;

use crate::transport::Oversized;
use crate::transport::oversized::Edges;

/// What the parser completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event. `data` may be empty (a priming event that only
    /// carries an `id` or a `retry`); callers skip those.
    Event {
        /// The `event` field, `message` when absent.
        event: String,
        /// The `data` lines joined with `\n`.
        data: String,
    },
    /// An event whose data exceeded the cap; dropped.
    Oversized(Oversized),
}

/// Incremental `text/event-stream` parser with a cap on one event's data.
#[derive(Debug)]
pub struct SseParser {
    cap: usize,
    /// The line being read.
    line: Vec<u8>,
    /// Set while the current line is over the cap: only its edges are kept.
    long_line: Option<Edges>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: String,
    data: Vec<u8>,
    /// The current event's data is over the cap.
    dropped: Option<Edges>,
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
            Some(e) => e.push(bytes),
            // The field name and colon are allowed on top of the cap.
            None if self.line.len() + bytes.len() > self.cap + 16 => {
                // Keep the edges of the value, not of `data: `.
                let (in_line, in_bytes) = value_start(&self.line, bytes);
                let mut e = Edges::start(&self.line[in_line..]);
                e.push(&bytes[in_bytes..]);
                self.line.clear();
                self.long_line = Some(e);
            }
            None => self.line.extend_from_slice(bytes),
        }
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        if let Some(long) = self.long_line.take() {
            // Only a `data` line can usefully be this long; whatever it was,
            // the event it belongs to is dropped.
            self.drop_event(long);
            return;
        }
        let line = core::mem::take(&mut self.line);
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
                    let mut e = Edges::start(&self.data);
                    e.push(value);
                    self.data.clear();
                    self.drop_event(e);
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
                self.retry_ms = core::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn drop_event(&mut self, e: Edges) {
        match &mut self.dropped {
            // The head stays the first part's; the new part carries the tail.
            Some(d) => d.push(&e.finish(0).tail),
            None => self.dropped = Some(e),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = core::mem::take(&mut self.event);
        if let Some(dropped) = self.dropped.take() {
            self.data.clear();
            out.push(SseItem::Oversized(dropped.finish(self.cap as u64)));
            return;
        }
        let mut data = core::mem::take(&mut self.data);
        if data.last() == Some(&b'\n') {
            data.pop();
        }
        out.push(SseItem::Event {
            event: if event.is_empty() {
                "message".to_string()
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

/// Where a line's value starts when the line is `line` followed by `more`:
/// after `field:` and one optional space, as offsets into each.
fn value_start(line: &[u8], more: &[u8]) -> (usize, usize) {
    let after_colon = match line.iter().position(|&b| b == b':') {
        Some(colon) => (colon + 1, 0),
        None => match more.iter().position(|&b| b == b':') {
            Some(colon) => (line.len(), colon + 1),
            None => return (0, 0),
        },
    };
    match after_colon {
        (l, 0) if line.get(l) == Some(&b' ') => (l + 1, 0),
        (l, 0) if l == line.len() && more.first() == Some(&b' ') => (l, 1),
        (l, m) if more.get(m) == Some(&b' ') => (l, m + 1),
        other => other,
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
            SseItem::Oversized(o) => {
                assert!(o.size > 1000);
                assert_eq!(o.cap, 1000);
                assert_eq!(o.id().as_deref(), Some("42"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out[1], event("small"));
        // Many data lines that are small one by one but large together.
        let lines = "data: 0123456789\n".repeat(200);
        let (out, _) = parse(&[format!("{lines}\ndata: ok\n\n").as_bytes()], 1000);
        assert!(matches!(out[0], SseItem::Oversized(_)), "{out:?}");
        assert_eq!(out[1], event("ok"));
    }

    /// One dispatched event as both parsers see it: its type, its data, the
    /// last event id when it was dispatched, and a retry delay (the reference:
    /// the one set in this event; this parser: the one in force).
    type Seen = (String, String, String, Option<u64>);

    /// What `eventsource-stream` makes of `chunks` (it skips events without data).
    fn reference(chunks: &[Vec<u8>]) -> Vec<Seen> {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, core::convert::Infallible>(c.clone())),
        )
        .eventsource();
        futures::executor::block_on(stream.collect::<Vec<_>>())
            .into_iter()
            .map(|e| {
                let e = e.expect("valid UTF-8 input");
                let retry = e.retry.map(|r| r.as_millis() as u64);
                (e.event, e.data, e.id, retry)
            })
            .filter(|(_, data, _, _)| !data.is_empty())
            .collect()
    }

    /// What this parser makes of `text`, fed a byte at a time so the id and
    /// retry in force can be read at each event; events without data are
    /// skipped, as the reference does (the transports skip them too).
    fn this_parser(text: &[u8]) -> Vec<Seen> {
        let mut p = SseParser::new(1 << 20);
        let (mut out, mut seen) = (Vec::new(), Vec::new());
        for b in text {
            p.feed(core::slice::from_ref(b), &mut out);
            for item in out.drain(..) {
                if let SseItem::Event { event, data } = item {
                    let id = p.last_event_id().unwrap_or_default().to_string();
                    if !data.is_empty() {
                        seen.push((event, data, id, p.retry_ms()));
                    }
                }
            }
        }
        seen
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    /// Random streams of fields, comments and line endings, split into random
    /// chunks: this parser and `eventsource-stream` dispatch the same events with
    /// the same data, event ids and retry delays.
    #[test]
    fn agrees_with_eventsource_stream() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let endings = ["\n", "\r\n", "\r"];
        let values = [
            "",
            "x",
            " spaced",
            "{\"jsonrpc\":\"2.0\",\"id\":1}",
            "a:b",
            "é",
        ];
        for round in 0..2000 {
            let mut text = String::new();
            let end = rng.pick(&endings);
            for _ in 0..(1 + rng.next() % 5) {
                for _ in 0..(1 + rng.next() % 4) {
                    let line = match rng.next() % 7 {
                        0 => format!("event: {}", rng.pick(&["ping", "endpoint", "message"])),
                        1 => format!("id: {}", rng.next() % 100),
                        2 => format!("retry: {}", rng.next() % 5000),
                        3 => format!(": {}", rng.pick(&values)),
                        4 => format!("data:{}", rng.pick(&values)),
                        _ => format!("data: {}", rng.pick(&values)),
                    };
                    text.push_str(&line);
                    text.push_str(end);
                }
                text.push_str(end);
            }
            // A last `\r` might be the start of `\r\n`: the reference waits for
            // the next byte before it dispatches, so the stream goes on a little.
            text.push_str(":end\n");
            let bytes = text.as_bytes();
            let mut chunks = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                let mut to = (at + 1 + (rng.next() % 16) as usize).min(bytes.len());
                // The reference decodes each chunk's UTF-8 on its own.
                while !text.is_char_boundary(to) {
                    to += 1;
                }
                chunks.push(bytes[at..to].to_vec());
                at = to;
            }
            let want = reference(&chunks);
            let got = this_parser(bytes);
            assert_eq!(got.len(), want.len(), "round {round}: {text:?}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (&g.0, &g.1, &g.2),
                    (&w.0, &w.1, &w.2),
                    "round {round}: {text:?}"
                );
                if w.3.is_some() {
                    assert_eq!(g.3, w.3, "round {round}: {text:?}");
                }
            }
            // Split anywhere, the same events.
            let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let got: Vec<(String, String)> = parse(&slices, 1 << 20)
                .0
                .into_iter()
                .filter_map(|i| match i {
                    SseItem::Event { event, data } if !data.is_empty() => Some((event, data)),
                    _ => None,
                })
                .collect();
            let want: Vec<(String, String)> = want.into_iter().map(|(e, d, _, _)| (e, d)).collect();
            assert_eq!(got, want, "round {round}, chunked: {text:?}");
        }
    }
}
