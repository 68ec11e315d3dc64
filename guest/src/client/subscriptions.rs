//! Resource subscriptions and the list changes beyond tools, both eras.
//!
//! - **2025 sessions**: [`Request::Subscribe`] is `resources/subscribe` (sent
//!   only to a server that declared `resources.subscribe`), [`Request::Unsubscribe`]
//!   `resources/unsubscribe`; each completes with the server's answer.
//! - **2026-07-28**: there is no `resources/subscribe`; the client names the
//!   resources it follows in the `resourceSubscriptions` filter of its one
//!   `subscriptions/listen` (beside `toolsListChanged`, `promptsListChanged`
//!   and `resourcesListChanged`, each asked for when the server declared it).
//!   A change of the set opens a new listen with the whole filter and cancels
//!   the old one (over HTTP, the transport closes its stream); a subscribe
//!   completes when the server's `notifications/subscriptions/acknowledged`
//!   for the new listen comes, and fails if the acknowledged filter leaves its
//!   URI out. Notifications tagged with another subscription's id (the old
//!   stream, until it closes) are dropped, so nothing is reported twice.
//!
//! A listen whose exchange fails in transit (its HTTP stream broke and could
//! not be resumed, or it ended with a message over the cap) is opened again
//! after [`RELISTEN_FIRST_MS`], doubling with each failure in a row up to
//! [`RELISTEN_MAX_MS`]: a stream that drops does not end the notifications for
//! the rest of the session, and over HTTP the new listen is what finds out that
//! a server which left no trace has gone away. A listen the server refuses (a
//! JSON-RPC error) is not asked for again.
//!
//! Either way the set of subscribed URIs outlives the session: the manager
//! hands it to the next client of the server ([`Client::set_initial_subscriptions`]),
//! which subscribes again once it is ready (2025: one `resources/subscribe`
//! each, a refusal being a warning; 2026: the first listen's filter).
//!
//! What arrives — `notifications/resources/updated`,
//! `notifications/resources/list_changed`, `notifications/prompts/list_changed`
//! — becomes a [`ClientEvent`]; nothing is re-listed here, since resources and
//! prompts are listed when someone asks, never kept.

use crate::prelude::*;
use alloc::collections::BTreeSet;

use serde_json::Value;
use serde_json::value::RawValue;

use super::request::PendingRequest;
use super::wire::{ListenFilter, ListenParams};
use super::{CallError, CallResult, Client, ClientEvent, Era, Pending, Phase, Request};
use crate::jsonrpc::Id;
use crate::methods;
use crate::transport::{Failure, format_ms};

/// The delay before a listen that failed in transit is opened again, the first
/// time in a row.
pub(super) const RELISTEN_FIRST_MS: u64 = 1_000;
/// The longest delay before a listen that failed in transit is opened again.
pub(super) const RELISTEN_MAX_MS: u64 = 60_000;

/// The `_meta` key that tags a listen stream's notifications with its id.
const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What the session follows: the resources, and the one `subscriptions/listen`
/// stream (2026-07-28) with its reopening after failures in transit.
#[derive(Debug)]
pub(super) struct Subscriptions {
    /// The resources followed.
    pub(super) resources: BTreeSet<String>,
    /// Whether `subscriptions/listen` may be opened (see [`Client::forgo_subscriptions`]).
    pub(super) may_listen: bool,
    /// The open `subscriptions/listen` (2026-07-28), by request id.
    pub(super) listen_id: Option<Id>,
    /// When a `subscriptions/listen` that failed in transit is opened again.
    pub(super) relisten_at: Option<u64>,
    /// Listens in a row that failed in transit since the last acknowledged one.
    pub(super) listen_failures: u32,
}

impl Default for Subscriptions {
    fn default() -> Subscriptions {
        Subscriptions {
            resources: BTreeSet::new(),
            may_listen: true,
            listen_id: None,
            relisten_at: None,
            listen_failures: 0,
        }
    }
}

/// An open `subscriptions/listen` (2026-07-28).
#[derive(Debug, Default)]
pub(super) struct Listen {
    /// Whether its filter asks for tool-list changes.
    pub(super) tools: bool,
    /// Subscribe and unsubscribe requests that complete with its acknowledgement.
    pub(super) waiting: Vec<PendingRequest>,
}

impl Client {
    /// The resources this client follows (kept across sessions by the manager).
    pub fn subscriptions(&self) -> &BTreeSet<String> {
        &self.subscriptions.resources
    }

    /// The resources a new session of the server follows once it is ready;
    /// call before the session starts.
    pub fn set_initial_subscriptions(&mut self, uris: BTreeSet<String>) {
        self.subscriptions.resources = uris;
    }

    /// A subscribe or unsubscribe the server took: the set follows.
    pub(super) fn subscribed(&mut self, request: &Request) {
        match request {
            Request::Subscribe { uri } => {
                self.subscriptions.resources.insert(uri.clone());
            }
            Request::Unsubscribe { uri } => {
                self.subscriptions.resources.remove(uri);
            }
            _ => {}
        }
    }

    /// The session is ready: listen for changes (2026-07-28), or subscribe
    /// again to what an earlier session followed (2025).
    pub(super) fn on_ready(&mut self) {
        if self.era == Era::Stateless {
            if self.subscriptions.may_listen {
                self.listen(Vec::new());
            }
            return;
        }
        if !self.offers.subscribe {
            if !self.subscriptions.resources.is_empty() {
                self.warn(format!(
                    "server `{}` no longer declares resources.subscribe; its subscriptions to {} resources were dropped",
                    self.server,
                    self.subscriptions.resources.len()
                ));
                self.subscriptions.resources.clear();
            }
            return;
        }
        let uris: Vec<String> = self.subscriptions.resources.iter().cloned().collect();
        for uri in uris {
            self.request(
                methods::RESOURCES_SUBSCRIBE,
                Some(uri.as_str()),
                Some(&serde_json::json!({ "uri": uri })),
                Pending::Resubscribe(uri.clone()),
            );
        }
    }

    /// The answer to a `resources/subscribe` sent again after a reconnect.
    pub(super) fn on_resubscribed(&mut self, uri: String, outcome: Result<Box<RawValue>, Failure>) {
        if let Err(e) = outcome {
            self.subscriptions.resources.remove(&uri);
            self.warn(format!(
                "server `{}` refused the subscription to {uri} again after reconnecting ({e}); it is dropped",
                self.server
            ));
        }
    }

    /// The filter the next listen asks for.
    fn filter(&self) -> ListenFilter {
        let subscribe = self.offers.subscribe && !self.subscriptions.resources.is_empty();
        ListenFilter {
            tools_list_changed: self.tools.list_changed,
            prompts_list_changed: self.offers.prompts_list_changed,
            resources_list_changed: self.offers.resources_list_changed,
            resource_subscriptions: subscribe
                .then(|| self.subscriptions.resources.iter().cloned().collect()),
        }
    }

    /// Opens a `subscriptions/listen` with the current filter (when it asks for
    /// anything) and cancels the one open before; `waiting` complete with its
    /// acknowledgement.
    fn listen(&mut self, waiting: Vec<PendingRequest>) {
        let filter = self.filter();
        let old = self.subscriptions.listen_id.take();
        self.subscriptions.relisten_at = None;
        if filter.is_empty() {
            for r in waiting {
                self.finish(r.call, Ok(empty()), true);
            }
        } else {
            let tools = filter.tools_list_changed;
            let params = ListenParams {
                notifications: filter,
                meta: self.request_meta(None),
            };
            let id = self.request(
                methods::SUBSCRIPTIONS_LISTEN,
                None,
                Some(&params),
                Pending::Listen(Listen { tools, waiting }),
            );
            self.subscriptions.listen_id = Some(id);
        }
        if let Some(old) = old
            && let Some(Pending::Listen(listen)) = self.slots.pending.remove(&old)
        {
            self.abandon(
                old,
                "replaced by a subscriptions/listen with another filter",
            );
            // Acknowledged by the new listen instead.
            for r in listen.waiting {
                self.finish(r.call, Ok(empty()), true);
            }
        }
    }

    /// A subscribe or unsubscribe in the 2026-07-28 era: the set changes and a
    /// new listen carries it.
    pub(super) fn listen_for(&mut self, r: PendingRequest) {
        if !self.subscriptions.may_listen {
            let why = format!(
                "server `{}` is reached by a client that lives for one exchange; it cannot follow resources",
                self.server
            );
            return self.finish(r.call, Err(CallError::Protocol(why)), true);
        }
        match &r.request {
            Request::Subscribe { uri } => {
                if self.subscriptions.resources.contains(uri)
                    && self.subscriptions.listen_id.is_some()
                {
                    return self.finish(r.call, Ok(empty()), true);
                }
                self.subscriptions.resources.insert(uri.clone());
            }
            Request::Unsubscribe { uri } => {
                if !self.subscriptions.resources.remove(uri) {
                    return self.finish(r.call, Ok(empty()), true);
                }
            }
            _ => return,
        }
        self.listen(vec![r]);
    }

    /// `notifications/subscriptions/acknowledged`: the listen it names is open,
    /// with the filter the server honours.
    fn on_acknowledged(&mut self, params: &Value) {
        let Some(id) = self.subscriptions.listen_id.clone() else {
            return;
        };
        if subscription_of(params).is_some_and(|s| s != id) {
            return;
        }
        let Some(Pending::Listen(listen)) = self.slots.pending.get_mut(&id) else {
            return;
        };
        let waiting = core::mem::take(&mut listen.waiting);
        self.subscriptions.listen_failures = 0;
        let honoured: BTreeSet<&str> = params
            .pointer("/notifications/resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut refused = Vec::new();
        for r in waiting {
            let outcome = match &r.request {
                Request::Subscribe { uri } if !honoured.contains(uri.as_str()) => {
                    refused.push(uri.clone());
                    Err(CallError::Protocol(format!(
                        "{}: the server acknowledged subscriptions/listen without it in resourceSubscriptions",
                        r.label(&self.server)
                    )))
                }
                _ => Ok(empty()),
            };
            self.finish(r.call, outcome, true);
        }
        for uri in refused {
            self.subscriptions.resources.remove(&uri);
        }
    }

    /// The listen ended: with an error (a refusal), or with its result (the
    /// server closed it). What waited for it fails.
    pub(super) fn on_listen_ended(
        &mut self,
        id: &Id,
        listen: Listen,
        outcome: Result<Box<RawValue>, Failure>,
    ) {
        let current = self.subscriptions.listen_id.as_ref() == Some(id);
        if current {
            self.subscriptions.listen_id = None;
        }
        let why = match &outcome {
            Err(e) => format!("the server refused subscriptions/listen ({e})"),
            Ok(_) => "the server ended subscriptions/listen before acknowledging it".to_string(),
        };
        let had_waiting = !listen.waiting.is_empty();
        for r in listen.waiting {
            if let Request::Subscribe { uri } = &r.request {
                self.subscriptions.resources.remove(uri);
            }
            let e = CallError::Protocol(format!("{}: {why}", r.label(&self.server)));
            self.finish(r.call, Err(e), true);
        }
        if let (Err(Failure::Exchange(e)), true) = (&outcome, current) {
            return self.relisten_later(e);
        }
        if let Err(e) = outcome
            && !had_waiting
        {
            self.warn(format!(
                "server `{}` refused subscriptions/listen ({e}); its tool list is refreshed only when it goes stale, and its resource and prompt changes are not reported",
                self.server
            ));
        }
    }

    /// The current listen failed in transit (`why`): it is opened again later.
    fn relisten_later(&mut self, why: &str) {
        let delay = RELISTEN_FIRST_MS
            .saturating_mul(1 << self.subscriptions.listen_failures.min(16))
            .min(RELISTEN_MAX_MS);
        if self.subscriptions.listen_failures == 0 {
            self.warn(format!(
                "server `{}` lost its subscriptions/listen stream ({why}); listening again in {}",
                self.server,
                format_ms(delay)
            ));
        }
        self.subscriptions.listen_failures = self.subscriptions.listen_failures.saturating_add(1);
        self.subscriptions.relisten_at = Some(self.now_ms.saturating_add(delay));
    }

    /// Opens the listen again once its delay has passed (see [`Client::relisten_later`]).
    pub(super) fn relisten_if_due(&mut self, now_ms: u64) {
        if self.subscriptions.relisten_at.is_none_or(|t| t > now_ms) {
            return;
        }
        self.subscriptions.relisten_at = None;
        if self.phase == Phase::Ready && self.subscriptions.listen_id.is_none() {
            self.listen(Vec::new());
        }
    }

    /// The change notifications (both eras); false for any other method.
    pub(super) fn on_change(&mut self, method: &str, params: &Value) -> bool {
        let known = [
            methods::RESOURCES_UPDATED,
            methods::RESOURCES_LIST_CHANGED,
            methods::PROMPTS_LIST_CHANGED,
            methods::TOOLS_LIST_CHANGED,
            methods::SUBSCRIPTIONS_ACKNOWLEDGED,
        ];
        if !known.contains(&method) {
            return false;
        }
        // A notification of a listen replaced by a newer one: the new one
        // reports it too.
        if let Some(s) = subscription_of(params)
            && self.era == Era::Stateless
            && self.subscriptions.listen_id.as_ref() != Some(&s)
        {
            return true;
        }
        match method {
            methods::RESOURCES_UPDATED => match params.get("uri").and_then(Value::as_str) {
                Some(uri) => self.events.push(ClientEvent::ResourceUpdated(uri.into())),
                None => self.warn(format!(
                    "server `{}` sent notifications/resources/updated without a `uri` string; ignored",
                    self.server
                )),
            },
            methods::RESOURCES_LIST_CHANGED => self.events.push(ClientEvent::ResourcesChanged),
            methods::PROMPTS_LIST_CHANGED => self.events.push(ClientEvent::PromptsChanged),
            methods::TOOLS_LIST_CHANGED => self.on_list_changed(),
            _ => self.on_acknowledged(params),
        }
        true
    }

    /// Subscribe and unsubscribe requests waiting for an acknowledgement whose
    /// deadline passed fail; the listen stays (a late acknowledgement finds
    /// nothing to complete).
    pub(super) fn expire_listen_waits(&mut self, now_ms: u64) {
        let Some(listen) = self.open_listen_mut() else {
            return;
        };
        if !listen.waiting.iter().any(|r| r.deadline_ms <= now_ms) {
            return;
        }
        let (expired, rest): (Vec<_>, Vec<_>) = core::mem::take(&mut listen.waiting)
            .into_iter()
            .partition(|r| r.deadline_ms <= now_ms);
        listen.waiting = rest;
        for r in expired {
            let why = format!(
                "{} timed out after {}: the server did not acknowledge subscriptions/listen",
                r.label(&self.server),
                format_ms(r.timeout_ms)
            );
            self.finish(r.call, Err(CallError::Timeout(why)), true);
        }
    }

    /// The deadlines of requests waiting for an acknowledgement.
    pub(super) fn listen_deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.open_listen()
            .into_iter()
            .flat_map(|l| l.waiting.iter().map(|r| r.deadline_ms))
    }

    /// The open `subscriptions/listen`. There is at most one, under `listen_id`
    /// (`listen` replaces the one before): found by its id, not by walking every
    /// request in flight on every turn.
    fn open_listen(&self) -> Option<&Listen> {
        match self
            .slots
            .pending
            .get(self.subscriptions.listen_id.as_ref()?)
        {
            Some(Pending::Listen(listen)) => Some(listen),
            _ => None,
        }
    }

    fn open_listen_mut(&mut self) -> Option<&mut Listen> {
        match self
            .slots
            .pending
            .get_mut(self.subscriptions.listen_id.as_ref()?)
        {
            Some(Pending::Listen(listen)) => Some(listen),
            _ => None,
        }
    }

    /// Cancels a subscribe waiting for an acknowledgement; false if none is `call`.
    pub(super) fn cancel_listen_wait(&mut self, call: u64) -> bool {
        if let Some(listen) = self.open_listen_mut()
            && let Some(at) = listen.waiting.iter().position(|r| r.call == call)
        {
            listen.waiting.remove(at);
            self.events.push(ClientEvent::Finished(super::FinishedCall {
                call,
                outcome: Err(CallError::Cancelled),
            }));
            return true;
        }
        false
    }

    /// Whether a listen reports tool-list changes.
    pub(super) fn listening(&self) -> bool {
        self.open_listen().is_some_and(|l| l.tools)
    }
}

/// The subscription a notification is tagged with, if any.
fn subscription_of(params: &Value) -> Option<Id> {
    params
        .pointer("/_meta")
        .and_then(|m| m.get(META_SUBSCRIPTION_ID))
        .map(|id| Id::from_json(&id.to_string()))
}

/// The empty result of a subscribe or unsubscribe.
fn empty() -> CallResult {
    CallResult {
        is_error: false,
        text: String::new(),
        content: "[]".into(),
        structured_content: None,
    }
}
