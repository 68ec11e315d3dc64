//! The gateway on a byte stream pair: newline-delimited JSON-RPC in and out.
//!
//! Every line is an exchange of its own; everything the gateway sends, whatever
//! stream it names, goes out as one line. The session the client opens with
//! `initialize` is handed back in with every later line, also after a restart of
//! the guest (which reopens it). When the input ends, the exchanges still open
//! and the session are closed, which cancels the client's calls upstream.

use std::collections::BTreeSet;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::Runtime;
use crate::bindings::{gateway, wit};
use crate::driver::{Downstream, Job};
use crate::transport::framing::{Frame, LineFramer, read_frame};

use super::ServeError;

/// The longest line read from the client; a longer one is dropped.
const MAX_LINE: usize = 64 * 1024 * 1024;

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
    let mut session: Option<u64> = None;
    let mut open: BTreeSet<u64> = BTreeSet::new();
    let mut next_exchange: u64 = 1;
    let mut out = Vec::with_capacity(64 * 1024);
    let submit = |job: Job| runtime.submit(job).map_err(ServeError::Stopped);
    loop {
        tokio::select! {
            frame = read_frame(&mut reader, &mut framer) => match frame? {
                Frame::Line(line) => {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let exchange = next_exchange;
                    next_exchange += 1;
                    open.insert(exchange);
                    submit(Job::Downstream(gateway::Inbound {
                        session,
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
                Frame::Eof => break,
            },
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
                                        open.remove(&end.exchange);
                                    }
                                    wit::DownstreamSignal::SessionOpened(s) => {
                                        session = Some(s.session);
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
                            open.retain(|x| *x > through);
                        }
                        Downstream::Stopped(why) => {
                            eprintln!("mcpbox serve: {why}");
                            session = None;
                            open.clear();
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
    // The client is gone: what it left running is cancelled upstream.
    for exchange in open {
        let _ = runtime.submit(Job::ExchangeClosed(exchange));
    }
    if let Some(s) = session {
        let _ = runtime.submit(Job::SessionClosed(s));
    }
    Ok(())
}
