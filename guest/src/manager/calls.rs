//! The calls in flight across servers: the handle the next one gets, the slot
//! that runs each (so that a cancel reaches it and a configuration reload moves
//! it with its server), and what each call's end needs to know (see
//! `finished`). Tool calls, requests beyond tools and their parts, and calls
//! waiting for an approval all take a handle here.
//!
//! Starting a tool call is here too: its tool found in the registry (or among
//! the tools of a server that is not connected), the permission rules' and
//! `onToolChange`'s decision, an approval asked for, the arguments checked, and
//! the call sent, held for its server to (re)connect, or refused; and cancelling
//! one.

use super::*;
use alloc::collections::BTreeMap;

use super::finished::Flight;

/// The calls in flight and the next handle.
pub(super) struct Calls {
    /// The handle the next call gets.
    next: u64,
    /// Calls in flight → the slot that runs them.
    routes: BTreeMap<u64, usize>,
    /// Calls started and not yet completed, with what their end needs to know
    /// (see `finished`).
    pub(super) flight: BTreeMap<u64, Flight>,
}

impl Default for Calls {
    fn default() -> Calls {
        Calls {
            next: 1,
            routes: BTreeMap::new(),
            flight: BTreeMap::new(),
        }
    }
}

impl Calls {
    /// The handle the next call will get, without taking it: a call refused
    /// before it starts leaves it for the next.
    pub(super) fn peek_next(&self) -> u64 {
        self.next
    }

    /// Takes the next handle.
    pub(super) fn take_next(&mut self) -> u64 {
        let call = self.next;
        self.next += 1;
        call
    }

    /// Notes that slot `i` runs call `call`.
    pub(super) fn route(&mut self, call: u64, i: usize) {
        self.routes.insert(call, i);
    }

    /// The slot that runs call `call`, while it is in flight.
    pub(super) fn slot_of(&self, call: u64) -> Option<usize> {
        self.routes.get(&call).copied()
    }

    /// Call `call` is no longer in flight on any slot.
    pub(super) fn end(&mut self, call: u64) {
        self.routes.remove(&call);
    }

    /// How many calls are in flight.
    pub(super) fn len(&self) -> usize {
        self.routes.len()
    }

    /// Moves every call to its slot's new index (`moved_to[old]`); the calls of
    /// a slot that has none are forgotten (they completed as it closed).
    pub(super) fn renumber(&mut self, moved_to: &[Option<usize>]) {
        self.routes = core::mem::take(&mut self.routes)
            .into_iter()
            .filter_map(|(call, i)| Some((call, moved_to.get(i).copied().flatten()?)))
            .collect();
    }
}

impl<P: Platform> Manager<P> {
    /// Starts a call. Errors known at once return here; the result arrives
    /// through [`Manager::wait`].
    ///
    /// A tool of a server that was lost is recognised by the server's last tool
    /// list: the call restarts the server when its backoff has passed and waits
    /// for it, or fails at once with `server-unavailable` (see "Restarts").
    /// A tool the permission rules deny fails with `denied`, naming the rule.
    pub fn start_call(
        &mut self,
        tool: &str,
        arguments: &str,
        options: CallOptions,
    ) -> Result<u64, CallError> {
        self.start_call_as(tool, arguments, options, None)
    }

    /// [`Manager::start_call`] for a caller that uses the permission profile
    /// `profile` (see [`crate::permissions`]): the call must pass the profile's
    /// rules as well as the top-level ones.
    pub fn start_call_as(
        &mut self,
        tool: &str,
        arguments: &str,
        options: CallOptions,
        profile: Option<&str>,
    ) -> Result<u64, CallError> {
        let mut attempt = finished::Attempt::default();
        let started = self.begin_call(tool, arguments, options, profile, None, &mut attempt);
        if let Err(e) = &started {
            self.audit_refusal(tool, arguments, profile, attempt, e);
        }
        started
    }

    /// [`Manager::start_call_as`], noting what it decided in `attempt` for the
    /// audit record of a call refused at once.
    pub(super) fn begin_call(
        &mut self,
        tool: &str,
        arguments: &str,
        options: CallOptions,
        profile: Option<&str>,
        approved: Option<&'static str>,
        attempt: &mut finished::Attempt,
    ) -> Result<u64, CallError> {
        self.sync_registry();
        let (i, found) = match self.registry.current.get(tool) {
            Some(entry) => {
                let Some(i) = self
                    .slots
                    .iter()
                    .position(|s| *s.config.name == *entry.server)
                else {
                    return Err(CallError::UnknownTool(format!("no tool named `{tool}`")));
                };
                (i, entry.tool.clone())
            }
            None => {
                // A tool the rules deny, one of a lost server's kept tools, or unknown.
                let refused = self
                    .slots
                    .iter()
                    .find_map(|s| Some((s.config.name.clone(), s.denied.get(tool)?.clone())));
                if let Some((server, refused)) = refused {
                    attempt.server = Some(server);
                    attempt.denied_tool = Some(refused.own);
                    attempt.decision = Some(Decision::Deny(refused.rule.clone()));
                    return Err(denied(tool, &refused.rule));
                }
                if let Some(change) = self.slots.iter().find_map(|s| s.blocked.get(tool)) {
                    attempt.server = Some(change.server.clone());
                    attempt.denied_tool = Some(change.tool.clone());
                    return Err(CallError::Denied(change.reason()));
                }
                // The registry says which server owns a name it does not offer: the
                // same rule that decides collisions, whatever state the servers are in.
                let owner = self.registry.current.kept(tool).and_then(|entry| {
                    let i = self
                        .slots
                        .iter()
                        .position(|s| *s.config.name == *entry.server)?;
                    Some((i, entry.tool.clone()))
                });
                match owner {
                    Some(owner) => owner,
                    None => return Err(self.missing_tool(tool)),
                }
            }
        };
        let server = self.slots[i].config.name.clone();
        let mut decision = self
            .rules
            .permissions
            .decide(&server, &found.def.name, profile);
        if let (Decision::Allow(_), Some(change)) =
            (&decision, self.slots[i].asking.get(&found.def.name))
        {
            decision = Decision::Ask(Rc::new(Rule {
                source: format!("mcpServers.{server}.onToolChange"),
                text: change.reason(),
                origin: self.origin.clone(),
            }));
        }
        attempt.server = Some(server.clone());
        attempt.tool = Some(found.clone());
        attempt.decision = Some(decision.clone());
        if let Decision::Deny(rule) = &decision {
            return Err(denied(tool, rule));
        }
        let (arguments, warning) = found.check_arguments(&server, arguments);
        self.events.extend(warning.map(Event::Warning));
        let arguments = arguments.map_err(CallError::InvalidArguments)?;
        let now = self.platform.now_ms();
        let timeout_ms = options
            .timeout_ms
            .unwrap_or(self.slots[i].config.tool_timeout_ms);
        let call = self.calls.peek_next();
        let mut flight = finished::Flight {
            server: server.clone(),
            tool: found.clone(),
            decision: decision.clone(),
            profile: profile.map(String::from),
            approval: None,
            started_ms: now,
            arguments: self.audit.arguments.then(|| arguments.get().to_string()),
        };
        if let Decision::Ask(rule) = decision {
            if let Some(by) = approved {
                flight.approval = Some(by);
            } else if self.approvals.approved_for_session(tool, profile) {
                flight.approval = Some("session-earlier");
            } else {
                if !self.approvals.enabled {
                    attempt.approval = Some("nobody");
                }
                self.ask_approval(approvals::Pending {
                    call,
                    slot: i,
                    tool: found,
                    arguments,
                    timeout_ms,
                    deadline_ms: now.saturating_add(timeout_ms),
                    options,
                    rule,
                    profile: profile.map(String::from),
                })?;
                self.calls.flight.insert(call, flight);
                self.calls.take_next();
                return Ok(call);
            }
        }
        // Noted before sending: a call may complete within `dispatch`.
        self.calls.flight.insert(call, flight);
        let sent = self.dispatch(
            call,
            i,
            &found,
            arguments,
            timeout_ms,
            now,
            now.saturating_add(timeout_ms),
            options,
        );
        if sent.is_err() {
            self.calls.flight.remove(&call);
        }
        sent?;
        self.calls.take_next();
        Ok(call)
    }

    /// Sends call `call` of `tool` on slot `i`, or holds it until the server is
    /// (re)connected, restarting it if it may be. Err, with nothing started,
    /// when the server cannot take the call. `now` is the caller's reading of
    /// the clock (one less boundary crossing per call than reading it again).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch(
        &mut self,
        call: u64,
        i: usize,
        tool: &Rc<Tool>,
        arguments: Box<RawValue>,
        timeout_ms: u64,
        now: u64,
        deadline_ms: u64,
        options: CallOptions,
    ) -> Result<(), CallError> {
        let slot = &mut self.slots[i];
        let restart = slot.state == ServerState::Failed
            && slot.restartable()
            && matches!(slot.restarts.gate(now), Gate::Open);
        // A kept name of a server that is restarting: the registry gave it to this server.
        let holds = slot.state == ServerState::Starting;
        if let (ServerState::Connected, Some(client)) = (slot.state, slot.client.as_mut()) {
            client.start_call_until(
                call,
                &tool.name,
                &tool.def.name,
                arguments,
                timeout_ms,
                deadline_ms,
                options,
            );
            self.calls.route(call, i);
            self.flush(i);
            self.process(i);
            self.sync_statuses();
            return Ok(());
        }
        if restart {
            self.open(i);
            self.sync_statuses();
            let slot = &self.slots[i];
            if slot.state != ServerState::Starting {
                return Err(unavailable(&tool.name, slot, now));
            }
        } else if !holds {
            // A restart under way (`holds`) is waited for with the calls already waiting.
            return Err(unavailable(&tool.name, slot, now));
        }
        self.slots[i].held.push(Held {
            call,
            name: tool.name.clone(),
            arguments,
            timeout_ms,
            deadline_ms,
            options,
        });
        self.calls.route(call, i);
        Ok(())
    }

    /// An unknown name may belong to a server that is not connected: say so, since
    /// "no such tool" would send the caller looking in the wrong place. A server
    /// whose last tool list is known does not claim names outside that list, unless
    /// it is starting: then a name it could claim waits for its new list (see
    /// [`crate::registry`]).
    pub(super) fn missing_tool(&self, tool: &str) -> CallError {
        if let Some(refused) = self.slots.iter().find_map(|s| s.denied.get(tool)) {
            return denied(tool, &refused.rule);
        }
        if let Some(change) = self.slots.iter().find_map(|s| s.blocked.get(tool)) {
            return CallError::Denied(change.reason());
        }
        let owner = self.slots.iter().find(|s| {
            s.state != ServerState::Connected
                && (s.tools.is_empty() || s.state == ServerState::Starting)
                && tool.starts_with(&naming::space(s.config.name_segment()))
        });
        match owner {
            Some(slot) => unavailable(tool, slot, self.platform.now_ms()),
            None => CallError::UnknownTool(format!(
                "no tool named `{tool}` ({} tools available)",
                self.registry.current.len()
            )),
        }
    }

    /// Cancels a call in flight; it completes with `cancelled`. Unknown or
    /// finished calls are ignored.
    pub fn cancel(&mut self, call: u64) {
        if self.cancel_approval(call) || self.cancel_fanout(call) {
            return;
        }
        let Some(i) = self.calls.slot_of(call) else {
            return;
        };
        let held = &mut self.slots[i].held;
        if let Some(pos) = held.iter().position(|h| h.call == call) {
            held.remove(pos);
            self.complete(call, Err(CallError::Cancelled));
            return;
        }
        if self.slots[i].handed.remove(call) {
            self.complete(call, Err(CallError::Cancelled));
            return;
        }
        if let Some(client) = self.slots[i].client.as_mut() {
            client.cancel(call);
        }
        self.flush(i);
        self.process(i);
        self.sync_statuses();
    }

    pub(super) fn complete(&mut self, call: u64, outcome: Result<CallResult, CallError>) {
        self.calls.end(call);
        self.finished.push(FinishedCall { call, outcome });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_taken_in_order_and_routes_follow_their_slots() {
        let mut calls = Calls::default();
        assert_eq!(calls.peek_next(), 1);
        assert_eq!(calls.peek_next(), 1, "peeking takes nothing");
        assert_eq!(calls.take_next(), 1);
        assert_eq!(calls.take_next(), 2);
        calls.route(1, 0);
        calls.route(2, 2);
        calls.route(3, 1);
        assert_eq!(calls.len(), 3);
        calls.end(3);
        assert_eq!(calls.slot_of(3), None);
        // Slot 0 closed; slot 2 is now slot 0.
        calls.renumber(&[None, Some(1), Some(0)]);
        assert_eq!(calls.slot_of(1), None);
        assert_eq!(calls.slot_of(2), Some(0));
        assert_eq!(calls.len(), 1);
    }
}
