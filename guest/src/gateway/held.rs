//! Requests held while servers start.
//!
//! A client that asks at once (`tools/list` right after `initialize`) should get
//! every server's answer, not the few that were quick: so `tools/list`, a
//! `tools/call` of a tool not listed yet (its server may still be listing it),
//! and the resource, prompt, completion and `subscriptions/listen` requests wait
//! here until no server is starting. They are then released oldest first, lists
//! before calls before the rest, within a turn's
//! [`FLUSH_BYTES`](super::FLUSH_BYTES) (see `tools.rs`, `release_held`). A
//! client that goes away takes its held requests with it.

use crate::prelude::*;

use serde_json::Value;

use super::Origin;
use super::tools::Params;

/// A request held while servers start.
#[derive(Debug)]
pub(super) enum HeldRequest {
    /// `tools/list`, with its cursor.
    List(Origin, Option<String>),
    /// `tools/call` of a tool not listed yet (or `search_tools`).
    Call(Origin, Params),
    /// A resource, prompt, completion or `subscriptions/listen` request:
    /// (origin, method, params).
    Other(Origin, String, Value),
}

/// The requests held while servers start, by kind, each oldest first.
#[derive(Debug, Default)]
pub(super) struct Held {
    lists: Vec<(Origin, Option<String>)>,
    calls: Vec<(Origin, Params)>,
    others: Vec<(Origin, String, Value)>,
}

impl Held {
    /// Holds a request.
    pub(super) fn hold(&mut self, request: HeldRequest) {
        match request {
            HeldRequest::List(o, cursor) => self.lists.push((o, cursor)),
            HeldRequest::Call(o, params) => self.calls.push((o, params)),
            HeldRequest::Other(o, method, params) => self.others.push((o, method, params)),
        }
    }

    /// Whether any request is held.
    pub(super) fn any(&self) -> bool {
        !self.lists.is_empty() || !self.calls.is_empty() || !self.others.is_empty()
    }

    /// The next request to release: lists first, then calls, then the rest.
    pub(super) fn release(&mut self) -> Option<HeldRequest> {
        if !self.lists.is_empty() {
            let (o, cursor) = self.lists.remove(0);
            return Some(HeldRequest::List(o, cursor));
        }
        if !self.calls.is_empty() {
            let (o, params) = self.calls.remove(0);
            return Some(HeldRequest::Call(o, params));
        }
        if !self.others.is_empty() {
            let (o, method, params) = self.others.remove(0);
            return Some(HeldRequest::Other(o, method, params));
        }
        None
    }

    /// Forgets the requests whose client `gone` says went away.
    pub(super) fn forget(&mut self, gone: impl Fn(&Origin) -> bool) {
        self.lists.retain(|(o, _)| !gone(o));
        self.calls.retain(|(o, _)| !gone(o));
        self.others.retain(|(o, _, _)| !gone(o));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Id;

    fn origin(exchange: u64, session: Option<u64>) -> Origin {
        Origin {
            exchange: Some(exchange),
            session,
            id: Id::Other(exchange.to_string()),
            stateless: None,
            profile: None,
            task: None,
        }
    }

    fn exchange_of(r: &HeldRequest) -> Option<u64> {
        match r {
            HeldRequest::List(o, _) | HeldRequest::Call(o, _) | HeldRequest::Other(o, _, _) => {
                o.exchange
            }
        }
    }

    #[test]
    fn held_requests_go_lists_first_then_calls_then_the_rest_each_oldest_first() {
        let mut held = Held::default();
        assert!(!held.any());
        held.hold(HeldRequest::Other(
            origin(1, None),
            "prompts/list".into(),
            Value::Null,
        ));
        held.hold(HeldRequest::Call(origin(2, None), Params::read(None)));
        held.hold(HeldRequest::List(origin(3, None), None));
        held.hold(HeldRequest::List(origin(4, None), Some("c".into())));
        held.hold(HeldRequest::Call(origin(5, None), Params::read(None)));
        assert!(held.any());
        let order: Vec<Option<u64>> = core::iter::from_fn(|| held.release())
            .map(|r| exchange_of(&r))
            .collect();
        assert_eq!(order, [3, 4, 2, 5, 1].map(Some));
        assert!(!held.any());
    }

    #[test]
    fn a_client_that_went_away_takes_its_held_requests_with_it() {
        let mut held = Held::default();
        held.hold(HeldRequest::List(origin(1, Some(9)), None));
        held.hold(HeldRequest::Call(origin(2, Some(8)), Params::read(None)));
        held.hold(HeldRequest::Other(
            origin(3, Some(9)),
            "resources/list".into(),
            Value::Null,
        ));
        held.hold(HeldRequest::Other(
            origin(4, None),
            "prompts/list".into(),
            Value::Null,
        ));
        held.forget(|o| o.session == Some(9));
        held.forget(|o| o.exchange == Some(4));
        let left: Vec<Option<u64>> = core::iter::from_fn(|| held.release())
            .map(|r| exchange_of(&r))
            .collect();
        assert_eq!(left, [Some(2)]);
    }
}
