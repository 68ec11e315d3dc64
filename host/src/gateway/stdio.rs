//! The gateway on a byte stream pair: newline-delimited JSON-RPC in and out.
//!
//! Every line is an exchange of its own; everything the gateway sends, whatever
//! stream it names, goes out as one line. The session the client opens with
//! `initialize` is handed back in with every later line, also after a restart of
//! the guest (which reopens it).
//!
//! # When the input ends
//!
//! A client that pipes its requests in and closes stdin (`printf … | mcpbox
//! serve`) still wants the answers: what was received is answered first, for at
//! most [`DRAIN`], and then the exchanges still open and the session are closed,
//! which cancels what is left upstream. A client that stops waiting sooner ends
//! the gateway with a signal (the MCP SDKs send SIGTERM two seconds after closing
//! stdin); the same cancellations go upstream then, as the serving future is
//! dropped ([`Client`]'s `Drop`).
//!
//! This is the path of any pair of async streams; a pair of file descriptors
//! is better served by the driver thread itself ([`super::stdio_fds`]), with
//! the same rules.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::Runtime;
use crate::bindings::{gateway, wit};
use crate::driver::{Downstream, Job};
use crate::transport::framing::{Frame, LineFramer, read_frame};

use super::ServeError;

/// The longest line read from the client; a longer one is dropped.
pub(super) const MAX_LINE: usize = 64 * 1024 * 1024;

/// How long the gateway goes on answering what it received once its input ended.
pub(super) const DRAIN: Duration = Duration::from_secs(30);

/// What the client left open: its exchanges not answered yet and its session.
/// Dropped, it closes them, which cancels the calls still running upstream (also
/// when serving is cut short, by a signal say).
struct Client<'a> {
    runtime: &'a Runtime,
    session: Option<u64>,
    open: BTreeSet<u64>,
}

impl Drop for Client<'_> {
    fn drop(&mut self) {
        for exchange in std::mem::take(&mut self.open) {
            let _ = self.runtime.submit(Job::ExchangeClosed(exchange));
        }
        if let Some(s) = self.session.take() {
            let _ = self.runtime.submit(Job::SessionClosed(s));
        }
    }
}

pub(super) async fn run<R, W>(
    runtime: &Runtime,
    mut feed: mpsc::UnboundedReceiver<Downstream>,
    profile: Option<String>,
    input: R,
    mut output: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut framer = LineFramer::new(MAX_LINE);
    let mut client = Client {
        runtime,
        session: None,
        open: BTreeSet::new(),
    };
    // Set once the input ended: answering goes on until it fires.
    let mut draining: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let mut next_exchange: u64 = 1;
    let mut out = Vec::with_capacity(64 * 1024);
    let submit = |job: Job| runtime.submit(job).map_err(ServeError::Stopped);
    loop {
        if draining.is_some() && client.open.is_empty() {
            break;
        }
        tokio::select! {
            frame = read_frame(&mut reader, &mut framer), if draining.is_none() => match frame? {
                Frame::Line(line) => {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let exchange = next_exchange;
                    next_exchange += 1;
                    client.open.insert(exchange);
                    submit(Job::Downstream(gateway::Inbound {
                        session: client.session,
                        exchange,
                        kind: gateway::TransportKind::Stdio,
                        profile: profile.clone(),
                        headers: Vec::new(),
                        text: String::from_utf8_lossy(&line).into_owned(),
                    }))?;
                }
                Frame::Oversized { size, .. } => {
                    eprintln!(
                        "mcpbox serve: dropped a message of {size} bytes from the client \
                         (the limit is {MAX_LINE} bytes)"
                    );
                }
                Frame::Eof => draining = Some(Box::pin(tokio::time::sleep(DRAIN))),
            },
            () = async { draining.as_mut().expect("draining").await }, if draining.is_some() => {
                eprintln!(
                    "mcpbox serve: the input ended and {} request(s) were not answered \
                     within {} s: cancelled",
                    client.open.len(),
                    DRAIN.as_secs()
                );
                break;
            }
            signals = feed.recv() => {
                let Some(signals) = signals else { break };
                // Take whatever else is ready too: one write and flush for all of it.
                let mut batch = vec![signals];
                while let Ok(more) = feed.try_recv() {
                    batch.push(more);
                }
                for item in batch {
                    match item {
                        Downstream::Signals(signals) => {
                            for signal in signals {
                                match signal {
                                    wit::DownstreamSignal::Message(m) => {
                                        out.extend_from_slice(m.text.as_bytes());
                                        out.push(b'\n');
                                    }
                                    wit::DownstreamSignal::End(end) => {
                                        client.open.remove(&end.exchange);
                                    }
                                    wit::DownstreamSignal::SessionOpened(s) => {
                                        client.session = Some(s.session);
                                    }
                                }
                            }
                        }
                        Downstream::Restarted { why, through } => {
                            // The session carries on; what was in flight is lost.
                            eprintln!(
                                "mcpbox serve: {why}; the session carries on, requests in \
                                 flight were lost"
                            );
                            client.open.retain(|x| *x > through);
                        }
                        Downstream::Stopped(why) => {
                            eprintln!("mcpbox serve: {why}");
                            client.session = None;
                            client.open.clear();
                        }
                    }
                }
                if !out.is_empty() {
                    output.write_all(&out).await?;
                    output.flush().await?;
                    out.clear();
                }
            }
        }
    }
    // The client is gone: what it left running is cancelled upstream (`Client`'s drop).
    drop(client);
    Ok(())
}
