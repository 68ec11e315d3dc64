//! Messages over the size cap: keeping their edges while they are dropped, and
//! finding their JSON-RPC id there.
//!
//! A server that sends a 100 MB answer must not make anyone buffer it: the reader
//! (the host for a stdio line, the guest's HTTP transport for a body or an SSE
//! event) drops it while keeping its size and its first and last [`EDGE`] bytes.
//! The id of a response is usually among the first members (`{"jsonrpc":"2.0",
//! "id":7,"result":…`) or the last (`…,"id":7}`), never inside the result, so the
//! one request it answers can still be failed with a clear error instead of
//! waiting for its timeout.
//!
//! A small scanner rather than a JSON parser: the edges are fragments, which no
//! parser accepts, and only a top-level scalar is wanted.

use crate::prelude::*;

use super::Oversized;

/// Bytes kept from each end of an oversized message.
pub const EDGE: usize = 256;

/// A message being dropped: its size so far and its edges.
#[derive(Debug, Clone, Default)]
pub struct Edges {
    size: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Edges {
    /// Starts with the bytes kept so far.
    pub fn start(prefix: &[u8]) -> Edges {
        let mut e = Edges::default();
        e.push(prefix);
        e
    }

    /// Counts `chunk` and keeps its edges.
    pub fn push(&mut self, chunk: &[u8]) {
        self.size += chunk.len() as u64;
        if self.head.len() < EDGE {
            let take = (EDGE - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        let start = chunk.len().saturating_sub(EDGE);
        self.tail.extend_from_slice(&chunk[start..]);
        if self.tail.len() > 2 * EDGE {
            self.tail.drain(..self.tail.len() - EDGE);
        }
    }

    /// Bytes counted so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The dropped message, for the client.
    pub fn finish(mut self, cap: u64) -> Oversized {
        while matches!(self.tail.last(), Some(b'\r' | b'\n' | b' ' | b'\t')) {
            self.tail.pop();
        }
        let start = self.tail.len().saturating_sub(EDGE);
        Oversized {
            size: self.size,
            cap,
            head: self.head,
            tail: self.tail.split_off(start),
        }
    }
}

/// Finds `"id": <value>` among the top-level members at the start of an object,
/// stopping at the first nested value.
pub fn id_at_start(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.trim_start().strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        let (key, after) = json_string(rest)?;
        let after = after.trim_start().strip_prefix(':')?.trim_start();
        let (value, after) = scalar(after)?;
        if key == "\"id\"" {
            return Some(value.to_string());
        }
        rest = after.trim_start().strip_prefix(',')?;
    }
}

/// Finds `"id": <value>` as the last member of an object: `…,"id":5}`.
pub fn id_at_end(tail: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(tail);
    let body = text.trim_end().strip_suffix('}')?.trim_end();
    let key_at = body.rfind("\"id\"")?;
    let after = body[key_at + 4..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let (value, rest) = scalar(after)?;
    rest.trim().is_empty().then(|| value.to_string())
}

/// Splits a JSON string token off the front of `s`, quotes included.
fn json_string(s: &str) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some((&s[..=i], &s[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// Splits a string, number, `true`, `false` or `null` off the front of `s`.
fn scalar(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('"') {
        return json_string(s);
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.')))
        .unwrap_or(s.len());
    (end > 0).then(|| s.split_at(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_ids_at_either_end() {
        assert_eq!(
            id_at_start(br#"{"jsonrpc":"2.0","id":"a\"b","result":{"#),
            Some(r#""a\"b""#.into())
        );
        assert_eq!(id_at_start(br#"{"result":{"id":3}"#), None);
        assert_eq!(
            id_at_end(br#"xx"}]},"jsonrpc":"2.0","id":42}"#),
            Some("42".into())
        );
        assert_eq!(id_at_end(br#"xx","id":42,"more":1}"#), None);
    }

    #[test]
    fn edges_keep_the_ends_of_a_long_message() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":\"{}\",\"id\":7}}\r\n",
            "x".repeat(10_000)
        );
        let mut e = Edges::start(&big.as_bytes()[..100]);
        for chunk in big.as_bytes()[100..].chunks(333) {
            e.push(chunk);
        }
        let o = e.finish(1000);
        assert_eq!(o.size, big.len() as u64);
        assert_eq!(o.cap, 1000);
        assert!(o.head.len() <= EDGE && o.tail.len() <= EDGE);
        assert!(o.tail.ends_with(b"\"id\":7}"), "trailing line end trimmed");
        assert_eq!(o.id().as_deref(), Some("7"));
        let front = format!("{{\"id\":\"q\",\"result\":\"{}\"}}", "y".repeat(5000));
        let o = Edges::start(front.as_bytes()).finish(10);
        assert_eq!(o.id().as_deref(), Some("\"q\""));
    }
}
