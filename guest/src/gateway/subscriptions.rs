//! Telling clients what changed: tool, resource and prompt lists, and the
//! resources they subscribed to.
//!
//! The registry changes when an upstream server connects, fails or changes its
//! tools. Each profile's served list is compared by fingerprint with what each
//! client last saw: a 2025 session whose list changed gets
//! `notifications/tools/list_changed` on its standalone stream (stdout on stdio);
//! a 2026-07-28 client gets it on its open `subscriptions/listen` stream, tagged
//! with the subscription's id (the listen request's id), if its filter asked for
//! `toolsListChanged`. The listen stream opens with
//! `notifications/subscriptions/acknowledged`, which says the part of the filter
//! the gateway honours.
//!
//! An upstream server's `notifications/resources/list_changed` and
//! `notifications/prompts/list_changed` reach every 2025 session, and each listen
//! that asked for `resourcesListChanged` / `promptsListChanged`.
//!
//! # Resource subscriptions
//!
//! A 2025 session's `resources/subscribe` and a listen's `resourceSubscriptions`
//! make the client a *holder* of the URI. The first holder subscribes upstream
//! (the manager asks every connected server that declared `resources.subscribe`:
//! resources keep their URIs downstream, so the gateway does not know whose it
//! is), and the 2025 client's answer waits for it; later holders are answered at
//! once. `notifications/resources/updated` from upstream goes to each holder of
//! its URI (a listen's tagged with its subscription id). When the last holder
//! leaves — `resources/unsubscribe`, its session ending, its listen stream
//! closing — the gateway unsubscribes upstream.

use crate::methods;
use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::client::{CallError, CallOptions, FinishedCall, Request};
use crate::jsonrpc;
use crate::manager::Manager;
use crate::transport::Platform;

use super::lifecycle::{META_SERVER_INFO, META_SUBSCRIPTION_ID, Refusal, server_info};
use super::{Gateway, Origin, Signal, Target, json_text};

/// An open `subscriptions/listen`.
#[derive(Debug, Clone)]
pub(super) struct Listen {
    /// The request's id: the subscription's id.
    pub(super) id: Value,
    profile: Option<String>,
    /// The exposure fingerprint the client was last told about.
    notified: u64,
    /// Whether it asked for tool-list changes.
    tools: bool,
    /// Whether it asked for resource-list changes.
    resources: bool,
    /// Whether it asked for prompt-list changes.
    prompts: bool,
    /// The 2026-07-28 tasks whose status it follows (`taskIds`; see `tasks`).
    pub(super) tasks: alloc::collections::BTreeSet<String>,
}

/// A downstream client that holds a resource subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Holder {
    /// A 2025 session (`resources/subscribe`).
    Session(u64),
    /// A 2026-07-28 listen, by its exchange (`resourceSubscriptions`).
    Listen(u64),
}

/// The gateway's resource subscriptions: who holds each URI, and the upstream
/// subscribes and unsubscribes in flight.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    /// Resource URI → the clients subscribed to it.
    pub(super) holders: BTreeMap<String, BTreeSet<Holder>>,
    /// Manager requests that subscribe or unsubscribe upstream.
    pub(super) upstream: BTreeMap<u64, Upstream>,
}

/// An upstream subscribe or unsubscribe of the gateway's.
#[derive(Debug)]
pub(super) struct Upstream {
    uri: String,
    /// The 2025 `resources/subscribe` that waits for it, and its holder.
    waiting: Option<(Origin, Holder)>,
    /// An unsubscribe (nobody waits for it).
    unsubscribe: bool,
}

impl Gateway {
    pub(super) fn listen<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: Origin,
        params: &Value,
    ) {
        let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
            let refusal = Refusal::new(
                jsonrpc::INVALID_PARAMS,
                "Invalid params: subscriptions/listen needs a `notifications` filter object",
            )
            .status(400);
            return self.answer(&origin, Err(refusal));
        };
        // Its client may have gone while it was held.
        let Some(exchange) = origin.exchange.filter(|x| self.exchanges.contains(x)) else {
            return;
        };
        let id: Value = serde_json::from_str(&origin.id.to_json()).unwrap_or(Value::Null);
        let asks = |field: &str| filter.get(field).and_then(Value::as_bool) == Some(true);
        let (tools, resources, prompts) = (
            asks("toolsListChanged"),
            asks("resourcesListChanged"),
            asks("promptsListChanged"),
        );
        // Subscriptions are honoured when some server can take them.
        let can_subscribe = m
            .servers()
            .iter()
            .any(|s| m.offers(&s.name).is_some_and(|o| o.subscribe));
        let uris: Vec<String> = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .filter(|_| can_subscribe)
            .collect::<alloc::collections::BTreeSet<String>>()
            .into_iter()
            .collect();
        let named: Vec<&str> = filter
            .get("taskIds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let tasks: alloc::collections::BTreeSet<String> =
            self.listenable_tasks(&origin, &named).into_iter().collect();
        let mut honored = serde_json::Map::new();
        for (field, on) in [
            ("toolsListChanged", tools),
            ("resourcesListChanged", resources),
            ("promptsListChanged", prompts),
        ] {
            if on {
                honored.insert(field.into(), Value::Bool(true));
            }
        }
        if !uris.is_empty() {
            honored.insert("resourceSubscriptions".into(), json!(uris));
        }
        if !tasks.is_empty() {
            honored.insert("taskIds".into(), json!(tasks));
        }
        let nothing = honored.is_empty();
        self.out.push(Signal::Message {
            target: Target::Exchange(exchange),
            text: jsonrpc::notification(
                methods::SUBSCRIPTIONS_ACKNOWLEDGED,
                Some(&json!({"notifications": honored, "_meta": {META_SUBSCRIPTION_ID: id}})),
            ),
        });
        if nothing {
            // Nothing the gateway can deliver: the stream ends at once.
            let result =
                json!({"_meta": {META_SUBSCRIPTION_ID: id, META_SERVER_INFO: server_info()}});
            return self.answer(&origin, Ok(json_text(&result)));
        }
        let notified = self.exposure(m, origin.profile.as_deref()).fingerprint;
        if let Some(x) = self.exchanges.get_mut(&exchange) {
            x.listen = Some(Listen {
                id,
                profile: origin.profile.clone(),
                notified,
                tools,
                resources,
                prompts,
                tasks,
            });
        }
        for uri in uris {
            self.hold(m, uri, Holder::Listen(exchange), None);
        }
    }

    /// `resources/subscribe` of a 2025 session.
    pub(super) fn subscribe<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: &Origin,
        params: &Value,
    ) {
        let Some((uri, holder)) = self.holder_of(origin, params, methods::RESOURCES_SUBSCRIBE)
        else {
            return;
        };
        self.hold(m, uri.to_string(), holder, Some(origin.clone()));
    }

    /// `resources/unsubscribe` of a 2025 session.
    pub(super) fn unsubscribe<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: &Origin,
        params: &Value,
    ) {
        let Some((uri, holder)) = self.holder_of(origin, params, methods::RESOURCES_UNSUBSCRIBE)
        else {
            return;
        };
        self.release(m, uri, holder);
        self.answer(origin, Ok("{}".into()));
    }

    /// The `uri` a 2025 session's `method` names, and the session as a holder;
    /// `None` once the request is refused for want of either.
    fn holder_of<'p>(
        &mut self,
        origin: &Origin,
        params: &'p Value,
        method: &str,
    ) -> Option<(&'p str, Holder)> {
        match (params.get("uri").and_then(Value::as_str), origin.session) {
            (Some(uri), Some(session)) => Some((uri, Holder::Session(session))),
            _ => {
                let refusal = Refusal::new(
                    jsonrpc::INVALID_PARAMS,
                    format!("Invalid params: {method} needs a `uri` string"),
                );
                self.answer(origin, Err(refusal));
                None
            }
        }
    }

    /// Makes `holder` a holder of `uri`, subscribing upstream for the first
    /// one; `origin` (a 2025 `resources/subscribe`) is answered once that holds.
    fn hold<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        uri: String,
        holder: Holder,
        origin: Option<Origin>,
    ) {
        if let Some(holders) = self.subscriptions.holders.get_mut(&uri) {
            holders.insert(holder);
            if let Some(origin) = origin {
                self.answer(&origin, Ok("{}".into()));
            }
            return;
        }
        let request = Request::Subscribe { uri: uri.clone() };
        match m.start_request(None, request, CallOptions::default()) {
            Ok(call) => {
                self.subscriptions.upstream.insert(
                    call,
                    Upstream {
                        uri: uri.clone(),
                        waiting: origin.map(|o| (o, holder)),
                        unsubscribe: false,
                    },
                );
                // A listen holds at once: its acknowledgement is sent already.
                if matches!(holder, Holder::Listen(_)) {
                    self.subscriptions
                        .holders
                        .entry(uri)
                        .or_default()
                        .insert(holder);
                }
            }
            Err(e) => match origin {
                Some(origin) => self.answer(&origin, Err(subscribe_refusal(e))),
                None => self.warnings.push(format!(
                    "a client's subscription to {uri} could not be passed on: {e}"
                )),
            },
        }
    }

    /// `holder` no longer holds `uri`; the last one out unsubscribes upstream.
    fn release<P: Platform>(&mut self, m: &mut Manager<P>, uri: &str, holder: Holder) {
        let Some(holders) = self.subscriptions.holders.get_mut(uri) else {
            return;
        };
        holders.remove(&holder);
        if !holders.is_empty() {
            return;
        }
        self.subscriptions.holders.remove(uri);
        let request = Request::Unsubscribe { uri: uri.into() };
        if let Ok(call) = m.start_request(None, request, CallOptions::default()) {
            self.subscriptions.upstream.insert(
                call,
                Upstream {
                    uri: uri.into(),
                    waiting: None,
                    unsubscribe: true,
                },
            );
        }
    }

    /// Every subscription of a client that went away.
    pub(super) fn release_all<P: Platform>(&mut self, m: &mut Manager<P>, holder: Holder) {
        let uris: Vec<String> = self
            .subscriptions
            .holders
            .iter()
            .filter(|(_, h)| h.contains(&holder))
            .map(|(uri, _)| uri.clone())
            .collect();
        for uri in uris {
            self.release(m, &uri, holder);
        }
    }

    /// An upstream subscribe or unsubscribe of the gateway's completed.
    pub(super) fn upstream_done<P: Platform>(&mut self, m: &mut Manager<P>, c: FinishedCall) {
        let Some(up) = self.subscriptions.upstream.remove(&c.call) else {
            return;
        };
        if up.unsubscribe {
            return;
        }
        match (c.outcome, up.waiting) {
            (Ok(_), Some((origin, holder))) => {
                let alive = match holder {
                    Holder::Session(s) => self.sessions.open.contains_key(&s),
                    Holder::Listen(x) => self.exchanges.contains(&x),
                };
                if alive {
                    self.subscriptions
                        .holders
                        .entry(up.uri)
                        .or_default()
                        .insert(holder);
                } else if !self.subscriptions.holders.contains_key(&up.uri) {
                    // Its client left meanwhile: nobody holds it.
                    self.subscriptions
                        .holders
                        .insert(up.uri.clone(), Default::default());
                    self.release(m, &up.uri, holder);
                }
                self.answer(&origin, Ok("{}".into()));
            }
            (Ok(_), None) => {}
            (Err(CallError::Cancelled), Some((origin, _))) => self.answer_nothing(&origin),
            (Err(e), Some((origin, _))) => self.answer(&origin, Err(subscribe_refusal(e))),
            (Err(e), None) => self.warnings.push(format!(
                "a client's subscription to {} could not be passed on: {e}",
                up.uri
            )),
        }
    }

    /// `notifications/resources/updated` from upstream, to each holder of the URI.
    pub(super) fn resource_updated(&mut self, uri: &str) {
        let Some(holders) = self.subscriptions.holders.get(uri) else {
            return;
        };
        let mut out = Vec::new();
        for holder in holders {
            match *holder {
                Holder::Session(s) => {
                    if self.sessions.open.get(&s).is_some_and(|s| s.initialized) {
                        out.push(Signal::Message {
                            target: Target::Session(s),
                            text: jsonrpc::notification(
                                methods::RESOURCES_UPDATED,
                                Some(&json!({ "uri": uri })),
                            ),
                        });
                    }
                }
                Holder::Listen(x) => {
                    let Some(listen) = self.exchanges.get(&x).and_then(|e| e.listen.as_ref())
                    else {
                        continue;
                    };
                    let params = json!({"uri": uri, "_meta": {META_SUBSCRIPTION_ID: listen.id}});
                    out.push(Signal::Message {
                        target: Target::Exchange(x),
                        text: jsonrpc::notification(methods::RESOURCES_UPDATED, Some(&params)),
                    });
                }
            }
        }
        self.out.extend(out);
    }

    /// An upstream server's resource (`resources`) or prompt list changed: every
    /// 2025 session, and each listen that asked, is told.
    pub(super) fn list_changed(&mut self, resources: bool) {
        let method = if resources {
            methods::RESOURCES_LIST_CHANGED
        } else {
            methods::PROMPTS_LIST_CHANGED
        };
        let sessions: Vec<u64> = self
            .sessions
            .open
            .iter()
            .filter(|(_, s)| s.initialized)
            .map(|(id, _)| *id)
            .collect();
        for id in sessions {
            self.out.push(Signal::Message {
                target: Target::Session(id),
                text: jsonrpc::notification::<()>(method, None),
            });
        }
        let listens: Vec<(u64, Value)> = self
            .exchanges
            .iter()
            .filter_map(|(x, e)| {
                let l = e.listen.as_ref()?;
                let asked = if resources { l.resources } else { l.prompts };
                asked.then(|| (*x, l.id.clone()))
            })
            .collect();
        for (exchange, id) in listens {
            let params = json!({"_meta": {META_SUBSCRIPTION_ID: id}});
            self.out.push(Signal::Message {
                target: Target::Exchange(exchange),
                text: jsonrpc::notification(method, Some(&params)),
            });
        }
    }

    /// The registry changed: tell every client whose served list changed.
    pub(super) fn tools_changed<P: Platform>(&mut self, m: &Manager<P>) {
        self.served.seen_generation = m.tools_generation();
        let sessions: Vec<(u64, Option<String>)> = self
            .sessions
            .open
            .iter()
            .filter(|(_, s)| s.initialized)
            .map(|(id, s)| (*id, s.profile.clone()))
            .collect();
        for (id, profile) in sessions {
            let fingerprint = self.exposure(m, profile.as_deref()).fingerprint;
            let Some(s) = self.sessions.open.get_mut(&id) else {
                continue;
            };
            if s.notified != fingerprint {
                s.notified = fingerprint;
                self.out.push(Signal::Message {
                    target: Target::Session(id),
                    text: jsonrpc::notification::<()>(methods::TOOLS_LIST_CHANGED, None),
                });
            }
        }
        let listens: Vec<(u64, Option<String>)> = self
            .exchanges
            .iter()
            .filter_map(|(x, e)| {
                let l = e.listen.as_ref().filter(|l| l.tools)?;
                Some((*x, l.profile.clone()))
            })
            .collect();
        for (exchange, profile) in listens {
            let fingerprint = self.exposure(m, profile.as_deref()).fingerprint;
            let Some(listen) = self
                .exchanges
                .get_mut(&exchange)
                .and_then(|x| x.listen.as_mut())
            else {
                continue;
            };
            if listen.notified != fingerprint {
                listen.notified = fingerprint;
                let params = json!({"_meta": {META_SUBSCRIPTION_ID: listen.id}});
                self.out.push(Signal::Message {
                    target: Target::Exchange(exchange),
                    text: jsonrpc::notification(methods::TOOLS_LIST_CHANGED, Some(&params)),
                });
            }
        }
    }
}

/// The JSON-RPC error for a subscription no upstream server took.
fn subscribe_refusal(e: CallError) -> Refusal {
    match e {
        CallError::InvalidArguments(m) => {
            Refusal::new(jsonrpc::INVALID_PARAMS, format!("Invalid params: {m}"))
        }
        other => Refusal::new(jsonrpc::INTERNAL_ERROR, other.to_string()),
    }
}
