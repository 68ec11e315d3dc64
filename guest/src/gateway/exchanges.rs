//! Exchanges: one HTTP POST (or one stdio line) and the requests in it, from
//! when the host hands it in until every request in it is answered.
//!
//! Every request of an exchange is answered exactly once on it (a downstream
//! `notifications/cancelled` answers it with silence); when the last one is
//! answered the exchange ends ([`Signal::End`](super::Signal::End)) with the HTTP
//! status for an answer not yet streamed: the first error's own status, else
//! `200`, or `202` when nothing was answered (an exchange of notifications and
//! responses only). A `subscriptions/listen` request is never answered: its
//! exchange stays open until the client goes away.
//!
//! The **backlog** is here too: the messages of an exchange (a batch) not
//! handled yet because this turn's answers passed
//! [`FLUSH_BYTES`](super::FLUSH_BYTES), oldest first.

use crate::prelude::*;
use alloc::collections::{BTreeMap, VecDeque};

use crate::jsonrpc::Message;

use super::subscriptions::Listen;
use super::{Context, TransportKind};

/// An exchange with requests not yet answered.
#[derive(Debug, Clone)]
pub(super) struct Exchange {
    pub(super) session: Option<u64>,
    pub(super) kind: TransportKind,
    /// Requests not answered yet.
    pub(super) open: usize,
    /// Whether anything was answered (for the status of an empty exchange).
    pub(super) answered: bool,
    /// The HTTP status of the first error with one.
    pub(super) status: Option<u16>,
    /// The `subscriptions/listen` it carries.
    pub(super) listen: Option<Listen>,
}

/// The messages of an exchange not handled yet (see [`FLUSH_BYTES`](super::FLUSH_BYTES)).
#[derive(Debug)]
pub(super) struct Backlog {
    pub(super) ctx: Context,
    pub(super) rest: VecDeque<Message>,
}

/// The exchanges in flight, by number, and the backlog of their messages.
#[derive(Debug, Default)]
pub(super) struct Exchanges {
    open: BTreeMap<u64, Exchange>,
    backlog: VecDeque<Backlog>,
}

impl Exchanges {
    /// Notes exchange `exchange` (once: a later message of it changes nothing).
    pub(super) fn begin(&mut self, exchange: u64, session: Option<u64>, kind: TransportKind) {
        self.open.entry(exchange).or_insert(Exchange {
            session,
            kind,
            open: 0,
            answered: false,
            status: None,
            listen: None,
        });
    }

    pub(super) fn get(&self, exchange: &u64) -> Option<&Exchange> {
        self.open.get(exchange)
    }

    pub(super) fn get_mut(&mut self, exchange: &u64) -> Option<&mut Exchange> {
        self.open.get_mut(exchange)
    }

    pub(super) fn contains(&self, exchange: &u64) -> bool {
        self.open.contains_key(exchange)
    }

    pub(super) fn remove(&mut self, exchange: &u64) -> Option<Exchange> {
        self.open.remove(exchange)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&u64, &Exchange)> {
        self.open.iter()
    }

    /// Whether no exchange is in flight.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Exchange `exchange` holds `n` more requests to answer.
    pub(super) fn expect(&mut self, exchange: u64, n: usize) {
        if let Some(x) = self.open.get_mut(&exchange) {
            x.open += n;
        }
    }

    /// One request of `exchange` was answered; `status` is its error's HTTP
    /// status, if it has one (the first such one is the exchange's).
    pub(super) fn answered(&mut self, exchange: u64, status: Option<u16>) {
        if let Some(x) = self.open.get_mut(&exchange) {
            x.open = x.open.saturating_sub(1);
            x.answered = true;
            if x.status.is_none() {
                x.status = status;
            }
        }
    }

    /// One request of `exchange` ends without an answer (it was cancelled).
    pub(super) fn unanswered(&mut self, exchange: u64) {
        if let Some(x) = self.open.get_mut(&exchange) {
            x.open = x.open.saturating_sub(1);
        }
    }

    /// Ends `exchange` when nothing in it waits for an answer (and it carries no
    /// `subscriptions/listen`): its status, see the module docs.
    pub(super) fn end_if_done(&mut self, exchange: u64) -> Option<u16> {
        let x = self.open.get(&exchange)?;
        if x.open > 0 || x.listen.is_some() {
            return None;
        }
        let status = x.status.unwrap_or(if x.answered { 200 } else { 202 });
        self.open.remove(&exchange);
        Some(status)
    }

    /// The exchanges of session `session`.
    pub(super) fn of_session(&self, session: u64) -> Vec<u64> {
        self.open
            .iter()
            .filter(|(_, x)| x.session == Some(session))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Keeps `rest` of an exchange's messages for a later turn.
    pub(super) fn defer(&mut self, ctx: Context, rest: VecDeque<Message>) {
        self.backlog.push_back(Backlog { ctx, rest });
    }

    /// The oldest messages kept for later.
    pub(super) fn next_deferred(&mut self) -> Option<Backlog> {
        self.backlog.pop_front()
    }

    /// Whether messages wait for a later turn.
    pub(super) fn deferring(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// Drops the messages kept for later whose exchange `gone` says went.
    pub(super) fn forget_deferred(&mut self, gone: impl Fn(&Context) -> bool) {
        self.backlog.retain(|b| !gone(&b.ctx));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(exchange: u64, session: Option<u64>) -> Context {
        Context {
            exchange,
            session,
            kind: TransportKind::Http,
            profile: None,
            headers: Vec::new(),
        }
    }

    #[test]
    fn an_exchange_ends_when_its_last_request_is_answered_with_the_first_errors_status() {
        let mut x = Exchanges::default();
        x.begin(1, None, TransportKind::Http);
        x.expect(1, 3);
        x.answered(1, None);
        assert_eq!(x.end_if_done(1), None);
        x.answered(1, Some(404));
        x.answered(1, Some(400));
        assert_eq!(x.end_if_done(1), Some(404));
        assert!(x.is_empty());
        // Only answers and no error: 200.
        x.begin(2, None, TransportKind::Http);
        x.expect(2, 1);
        x.answered(2, None);
        assert_eq!(x.end_if_done(2), Some(200));
    }

    #[test]
    fn an_exchange_of_notifications_only_ends_at_once_with_202() {
        let mut x = Exchanges::default();
        x.begin(1, Some(7), TransportKind::Http);
        assert_eq!(x.end_if_done(1), Some(202));
        // A cancelled request answers with silence: still nothing answered.
        x.begin(2, Some(7), TransportKind::Http);
        x.expect(2, 1);
        x.unanswered(2);
        assert_eq!(x.end_if_done(2), Some(202));
        // An exchange it does not know ends nothing.
        assert_eq!(x.end_if_done(3), None);
    }

    #[test]
    fn a_second_message_of_an_exchange_keeps_what_the_first_began() {
        let mut x = Exchanges::default();
        x.begin(1, Some(5), TransportKind::Http);
        x.expect(1, 2);
        x.begin(1, None, TransportKind::Stdio);
        let e = x.get(&1).unwrap();
        assert_eq!(
            (e.session, e.kind, e.open),
            (Some(5), TransportKind::Http, 2)
        );
        x.begin(2, Some(5), TransportKind::Http);
        x.begin(3, Some(6), TransportKind::Http);
        assert_eq!(x.of_session(5), [1, 2]);
    }

    #[test]
    fn the_backlog_is_taken_oldest_first_and_forgotten_with_its_client() {
        let mut x = Exchanges::default();
        for (exchange, session) in [(1, Some(1)), (2, Some(2)), (3, Some(1))] {
            x.defer(ctx(exchange, session), VecDeque::new());
        }
        x.forget_deferred(|c| c.exchange == 2);
        assert!(x.deferring());
        assert_eq!(x.next_deferred().map(|b| b.ctx.exchange), Some(1));
        x.forget_deferred(|c| c.session == Some(1));
        assert!(x.next_deferred().is_none() && !x.deferring());
    }
}
