//! Newline-delimited JSON framing with a hard size cap.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. A server that
//! prints a 100 MB line, or never prints a newline, must not make the host buffer
//! without bound: a line over the cap is consumed and dropped while only its size
//! and its first and last [`EDGE`] bytes are kept. They go to the guest, which
//! finds the JSON-RPC id there and fails the one request the line answered.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Bytes kept from each end of an oversized line (the contract's "at most 256").
pub(crate) const EDGE: usize = 256;

/// One unit read from a newline-delimited stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A complete line, without its line terminator.
    Line(Vec<u8>),
    /// A line longer than the cap, dropped.
    Oversized {
        /// The line's full length in bytes.
        size: u64,
        /// Its first bytes (at most [`EDGE`]).
        head: Vec<u8>,
        /// Its last bytes (at most [`EDGE`]), without trailing whitespace.
        tail: Vec<u8>,
    },
    /// End of stream.
    Eof,
}

/// Splits a byte stream into lines as the bytes arrive, dropping lines over the
/// cap. Driven by whoever owns the stream: [`read_frame`] over an async reader,
/// or the stdio connection straight from a pipe.
#[derive(Debug)]
pub(crate) struct LineFramer {
    cap: usize,
    /// The line so far (while it is within the cap).
    buf: Vec<u8>,
    /// The line so far, once it went over the cap.
    oversized: Option<Oversized>,
}

impl LineFramer {
    /// A framer for lines of at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> LineFramer {
        LineFramer {
            cap,
            buf: Vec::new(),
            oversized: None,
        }
    }

    /// Takes bytes up to and including the first newline in `bytes`. Returns how
    /// many it took and the frame that newline completed, if there was one.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> (usize, Option<Frame>) {
        let newline = bytes.iter().position(|&b| b == b'\n');
        let chunk = &bytes[..newline.unwrap_or(bytes.len())];
        match &mut self.oversized {
            Some(o) => o.push(chunk),
            None if self.buf.len() + chunk.len() > self.cap => {
                let mut o = Oversized::start(&self.buf);
                o.push(chunk);
                // Do not keep a cap-sized scratch buffer for the connection's life.
                self.buf = Vec::new();
                self.oversized = Some(o);
            }
            None => self.buf.extend_from_slice(chunk),
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        (consumed, newline.map(|_| self.take()))
    }

    /// At the end of the stream: a last line without a newline, then `Eof`.
    pub(crate) fn finish(&mut self) -> Frame {
        if self.oversized.is_none() && self.buf.is_empty() {
            Frame::Eof
        } else {
            self.take()
        }
    }

    fn take(&mut self) -> Frame {
        match self.oversized.take() {
            Some(o) => o.finish(),
            None => Frame::Line(trim_cr(std::mem::take(&mut self.buf))),
        }
    }
}

/// Reads one frame from an async reader.
///
/// A final line without a trailing newline is still returned as a line.
pub(crate) async fn read_frame<R>(reader: &mut R, framer: &mut LineFramer) -> std::io::Result<Frame>
where
    R: AsyncBufRead + Unpin,
{
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(framer.finish());
        }
        let (consumed, frame) = framer.feed(available);
        reader.consume(consumed);
        if let Some(frame) = frame {
            return Ok(frame);
        }
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

/// What is kept of a line while it is being dropped: its size and its first
/// and last bytes, where the JSON-RPC id usually is.
#[derive(Debug)]
pub(crate) struct Oversized {
    size: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Oversized {
    /// Starts with the bytes kept so far.
    pub(crate) fn start(prefix: &[u8]) -> Self {
        let mut o = Oversized {
            size: 0,
            head: Vec::with_capacity(EDGE),
            tail: Vec::with_capacity(2 * EDGE),
        };
        o.push(prefix);
        o
    }

    /// Counts `chunk` and keeps its edges.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
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

    /// The frame reporting the dropped line.
    pub(crate) fn finish(mut self) -> Frame {
        while matches!(self.tail.last(), Some(b'\r' | b' ' | b'\t')) {
            self.tail.pop();
        }
        let start = self.tail.len().saturating_sub(EDGE);
        Frame::Oversized {
            size: self.size,
            head: self.head,
            tail: self.tail.split_off(start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8], cap: usize, buffer: usize) -> Vec<Frame> {
        let mut reader = BufReader::with_capacity(buffer, input);
        let mut framer = LineFramer::new(cap);
        let mut out = Vec::new();
        loop {
            let f = read_frame(&mut reader, &mut framer).await.unwrap();
            let eof = f == Frame::Eof;
            out.push(f);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_across_small_buffers() {
        let got = frames(b"{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":3}", 100, 3).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"{\"b\":2}".to_vec()),
                Frame::Line(b"{\"c\":3}".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn drops_oversized_line_and_keeps_going() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}",
            "x".repeat(10_000)
        );
        let input = format!("{big}\n{{\"ok\":true}}\n");
        let got = frames(input.as_bytes(), 1000, 64).await;
        assert_eq!(
            got,
            vec![
                Frame::Oversized {
                    size: big.len() as u64,
                    head: big.as_bytes()[..EDGE].to_vec(),
                    tail: big.as_bytes()[big.len() - EDGE..].to_vec(),
                },
                Frame::Line(b"{\"ok\":true}".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn line_exactly_at_cap_is_kept() {
        let got = frames(b"12345\n123456\n", 5, 2).await;
        assert_eq!(got[0], Frame::Line(b"12345".to_vec()));
        assert_eq!(
            got[1],
            Frame::Oversized {
                size: 6,
                head: b"123456".to_vec(),
                tail: b"123456".to_vec()
            }
        );
    }
}
