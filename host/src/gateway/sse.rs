//! Server-sent events, as the gateway's HTTP streams and the dashboard's live
//! events send them: a stream per client that holds at most so many bytes the
//! client has not read ([`stream`]: a [`Sink`] for the sender, a [`Source`] for
//! the response body), and the response body that frames its messages as SSE
//! events ([`SseBody`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

use crate::bindings::wit;

/// What a stream's receiver gets.
#[derive(Debug)]
pub(super) enum Item {
    /// Headers to put on the answer (first, on an `initialize` exchange: the
    /// session's id, as the guest made it).
    Headers(Vec<wit::Pair>),
    /// An SSE event.
    Message { id: Option<String>, text: Arc<str> },
    /// The exchange is over, with the status for an answer not yet streamed.
    End(u16),
}

pub(super) type Items = Vec<Item>;

/// What an item weighs against [`HttpOptions::stream_buffer_bytes`]: its text
/// and about what the SSE framing adds.
fn weight(items: &Items) -> usize {
    items
        .iter()
        .map(|item| match item {
            Item::Message { text, .. } => text.len() + 48,
            Item::Headers(_) | Item::End(_) => 48,
        })
        .sum()
}

/// A stream's sending side: the dispatcher's end of one response stream, with
/// the bytes sent and not yet taken by the response body. A tokio bounded
/// channel counts batches, and a batch can be one notification or a thousand;
/// this counts what the client has not read.
#[derive(Debug)]
pub(super) struct Sink {
    tx: mpsc::UnboundedSender<Items>,
    waiting: Arc<AtomicUsize>,
    limit: usize,
    /// What every stream of the gateway holds, and the most it may.
    total: Option<(Arc<AtomicUsize>, usize)>,
}

/// Why [`Sink::try_send`] did not send.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The client is this many bytes behind already.
    Full,
    /// The response body is gone.
    Closed,
}

impl Sink {
    /// Whether the response body is gone.
    pub(super) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when the response body is gone.
    pub(super) async fn closed(&self) {
        self.tx.closed().await;
    }

    pub(super) fn try_send(&self, items: Items) -> Result<(), Refused> {
        let bytes = weight(&items);
        let waiting = self.waiting.load(Ordering::Acquire);
        if waiting > 0 && waiting + bytes > self.limit {
            return Err(Refused::Full);
        }
        // Every stream together: a stream that is behind already gives way.
        if let Some((total, limit)) = &self.total
            && waiting > 0
            && total.load(Ordering::Acquire) + bytes > *limit
        {
            return Err(Refused::Full);
        }
        self.waiting.fetch_add(bytes, Ordering::AcqRel);
        if let Some((total, _)) = &self.total {
            total.fetch_add(bytes, Ordering::AcqRel);
        }
        self.tx.send(items).map_err(|_| {
            self.waiting.fetch_sub(bytes, Ordering::AcqRel);
            if let Some((total, _)) = &self.total {
                total.fetch_sub(bytes, Ordering::AcqRel);
            }
            Refused::Closed
        })
    }
}

/// A stream's receiving side (the response body's).
#[derive(Debug)]
pub(super) struct Source {
    rx: mpsc::UnboundedReceiver<Items>,
    waiting: Arc<AtomicUsize>,
    total: Option<Arc<AtomicUsize>>,
}

impl Drop for Source {
    fn drop(&mut self) {
        // What the client never read no longer counts against every stream's
        // total. Closed first, so nothing is sent after the last is taken.
        self.rx.close();
        while let Ok(items) = self.rx.try_recv() {
            self.taken(&items);
        }
    }
}

impl Source {
    fn taken(&self, items: &Items) {
        let bytes = weight(items);
        self.waiting.fetch_sub(bytes, Ordering::AcqRel);
        if let Some(total) = &self.total {
            total.fetch_sub(bytes, Ordering::AcqRel);
        }
    }

    pub(super) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Items>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(items)) = &polled {
            self.taken(items);
        }
        polled
    }

    pub(super) async fn recv(&mut self) -> Option<Items> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }
}

/// A stream that holds at most `limit` bytes for its client (see [`Sink`]).
pub(super) fn stream(limit: usize) -> (Sink, Source) {
    counted_stream(limit, None)
}

/// [`stream`], also counted in `total`, which every stream of the gateway
/// shares, with the most it may hold.
pub(super) fn counted_stream(
    limit: usize,
    total: Option<(Arc<AtomicUsize>, usize)>,
) -> (Sink, Source) {
    let (tx, rx) = mpsc::unbounded_channel();
    let waiting = Arc::new(AtomicUsize::new(0));
    let counted = total.as_ref().map(|(t, _)| t.clone());
    (
        Sink {
            tx,
            waiting: waiting.clone(),
            limit,
            total,
        },
        Source {
            rx,
            waiting,
            total: counted,
        },
    )
}

/// What an SSE body's owner is told when the stream ends as it should (its
/// last item came, or the sending side ended it); dropped without it, the
/// client went away first.
pub(super) trait Finish {
    fn finished(&mut self);
}

/// An SSE response body fed by a [`Sink`]: each message one `event: message`
/// with its id, if any, and its JSON on one `data:` line.
pub(super) struct SseBody<G> {
    buffered: VecDeque<Bytes>,
    rx: Source,
    done: bool,
    guard: G,
}

impl<G: Finish> SseBody<G> {
    pub(super) fn new(first: Items, rx: Source, guard: G) -> SseBody<G> {
        let mut body = SseBody {
            buffered: VecDeque::new(),
            rx,
            done: false,
            guard,
        };
        body.push(first);
        body
    }

    fn push(&mut self, items: Items) {
        for item in items {
            match item {
                Item::Message { id, text } => {
                    let mut event = String::with_capacity(text.len() + 32);
                    if let Some(id) = id {
                        event.push_str("id: ");
                        event.push_str(&id);
                        event.push('\n');
                    }
                    event.push_str("event: message\n");
                    // JSON needs no line breaks between tokens; one `data:` line.
                    // (Most text has none: copied whole, not char by char.)
                    event.push_str("data: ");
                    if text.contains(['\n', '\r']) {
                        event.extend(
                            text.chars()
                                .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
                        );
                    } else {
                        event.push_str(&text);
                    }
                    event.push_str("\n\n");
                    self.buffered.push_back(Bytes::from(event));
                }
                Item::End(_) => self.done = true,
                Item::Headers(_) => {}
            }
        }
    }
}

impl<G: Finish + Unpin> Body for SseBody<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            if let Some(bytes) = self.buffered.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            if self.done {
                self.guard.finished();
                return Poll::Ready(None);
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(items)) => self.push(items),
                Poll::Ready(None) => {
                    // Cut off by the dispatcher (it told the guest), or a reset.
                    self.guard.finished();
                    self.done = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(n: usize) -> Items {
        vec![Item::Message {
            id: None,
            text: Arc::from("x".repeat(n)),
        }]
    }

    #[test]
    fn a_stream_holds_bytes_not_batches_for_its_client() {
        let (sink, mut source) = stream(10_000);
        // A hundred small batches fit (a count of batches would have refused them
        // long before their bytes did).
        for _ in 0..100 {
            assert_eq!(sink.try_send(note(50)), Ok(()));
        }
        // Past the budget the stream is refused; what the client reads makes room.
        assert_eq!(sink.try_send(note(200)), Err(Refused::Full));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        for _ in 0..10 {
            assert!(matches!(source.poll_recv(&mut cx), Poll::Ready(Some(_))));
        }
        assert_eq!(sink.try_send(note(200)), Ok(()));
        // One message larger than the whole budget goes through an empty stream.
        let (big, _source) = stream(100);
        assert_eq!(big.try_send(note(1_000)), Ok(()));
        assert_eq!(big.try_send(note(1)), Err(Refused::Full));
        // A stream whose body is gone says so.
        drop(source);
        assert_eq!(sink.try_send(note(1)), Err(Refused::Closed));
    }
}
