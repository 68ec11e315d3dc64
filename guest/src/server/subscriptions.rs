//! Telling clients the served tool list changed.
//!
//! The registry changes when an upstream server connects, fails or changes its
//! tools. Each profile's served list is compared by fingerprint with what each
//! client last saw: a 2025 session whose list changed gets
//! `notifications/tools/list_changed` on its standalone stream (stdout on stdio);
//! a 2026-07-28 client gets it on its open `subscriptions/listen` stream, tagged
//! with the subscription's id (the listen request's id), if its filter asked for
//! `toolsListChanged`. The listen stream opens with
//! `notifications/subscriptions/acknowledged`, which says the part of the filter
//! the gateway honours (tool-list changes only).

use crate::methods;
use crate::prelude::*;

use serde_json::{Value, json};

use crate::jsonrpc;
use crate::manager::Manager;
use crate::transport::Platform;

use super::lifecycle::{META_SERVER_INFO, META_SUBSCRIPTION_ID, Refusal, server_info};
use super::{Gateway, Origin, Signal, Target, json_text};

/// An open `subscriptions/listen`.
#[derive(Debug, Clone)]
pub(super) struct Listen {
    /// The request's id: the subscription's id.
    id: Value,
    profile: Option<String>,
    /// The exposure fingerprint the client was last told about.
    notified: u64,
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
        let Some(exchange) = origin.exchange else {
            return;
        };
        let id: Value = serde_json::from_str(&origin.id.to_json()).unwrap_or(Value::Null);
        let tools = filter.get("toolsListChanged").and_then(Value::as_bool) == Some(true);
        let honored = if tools {
            json!({"toolsListChanged": true})
        } else {
            json!({})
        };
        self.out.push(Signal::Message {
            target: Target::Exchange(exchange),
            text: jsonrpc::notification(
                methods::SUBSCRIPTIONS_ACKNOWLEDGED,
                Some(&json!({"notifications": honored, "_meta": {META_SUBSCRIPTION_ID: id}})),
            ),
        });
        if !tools {
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
            });
        }
    }

    /// The registry changed: tell every client whose served list changed.
    pub(super) fn tools_changed<P: Platform>(&mut self, m: &Manager<P>) {
        self.seen_generation = m.tools_generation();
        let sessions: Vec<(u64, Option<String>)> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.initialized)
            .map(|(id, s)| (*id, s.profile.clone()))
            .collect();
        for (id, profile) in sessions {
            let fingerprint = self.exposure(m, profile.as_deref()).fingerprint;
            let Some(s) = self.sessions.get_mut(&id) else {
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
            .filter_map(|(x, e)| e.listen.as_ref().map(|l| (*x, l.profile.clone())))
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
