//! What happens when a call ends, before its [`FinishedCall`] leaves `wait`: its result
//! is limited ([`crate::output`]: oversized results and media go to host files)
//! and, when audit events are on, its [`AuditRecord`] is queued; when call counts
//! are on, its [`super::call_counts::CallCount`].
//!
//! Each call started is noted in `calls::Calls::flight` with what its end needs: its
//! server (by name: a configuration loaded meanwhile renumbers the slots) and
//! tool, what the permission rules decided, how an approval was answered, when
//! it started, and its arguments when the audit trail records them. A call
//! refused at once never gets a handle; its record is queued by
//! [`Manager::start_call_as`] from an [`Attempt`].

use super::call_counts::CallOutcome;
use super::*;
use crate::audit::AuditRecord;

/// What the audit trail records, as the configuration and the embedder set it.
#[derive(Default)]
pub(super) struct Audit {
    /// The configuration's `audit` object.
    pub(super) settings: crate::audit::Settings,
    /// Whether every call's end queues an [`Event::Audit`].
    pub(super) events: bool,
    /// Whether audit records carry the arguments.
    pub(super) arguments: bool,
}

/// A call in flight, as its end needs to know it.
pub(super) struct Flight {
    /// The configured server name.
    pub server: String,
    pub tool: Rc<Tool>,
    pub decision: Decision,
    pub profile: Option<String>,
    /// How its approval was answered (see [`AuditRecord::approval`]).
    pub approval: Option<&'static str>,
    pub started_ms: u64,
    /// Checked arguments, when audit records carry them.
    pub arguments: Option<String>,
}

/// What a call that was refused at once had got to.
#[derive(Default)]
pub(super) struct Attempt {
    pub server: Option<String>,
    /// The tool, once the registry found it.
    pub tool: Option<Rc<Tool>>,
    /// The own name of a tool the permission rules keep out of the registry.
    pub denied_tool: Option<String>,
    pub decision: Option<Decision>,
    pub approval: Option<&'static str>,
}

impl<P: Platform> Manager<P> {
    /// Limits a completed call's result and queues its audit record and count.
    pub(super) fn finish(&mut self, mut c: FinishedCall) -> FinishedCall {
        let Some(flight) = self.calls.flight.remove(&c.call) else {
            return c;
        };
        if let Ok(result) = c.outcome {
            let (result, warnings) = crate::output::limit(
                result,
                &self.output,
                &flight.server,
                &flight.tool.name,
                c.call,
                &mut self.platform,
            );
            self.events.extend(warnings.into_iter().map(Event::Warning));
            c.outcome = Ok(result);
        }
        let outcome = CallOutcome::of(&c.outcome);
        let duration_ms = if self.audit.events || self.call_counts.is_some() {
            self.platform.now_ms().saturating_sub(flight.started_ms)
        } else {
            0
        };
        self.count_call(&flight.server, &flight.tool.def.name, outcome, duration_ms);
        if self.audit.events {
            let rule = flight.decision.rule().to_string();
            self.events.push(Event::Audit(AuditRecord {
                call: Some(c.call),
                server: flight.server,
                tool: flight.tool.name.clone(),
                profile: flight.profile,
                decision: Some(flight.decision.mode().as_str().to_string()),
                rule: Some(rule),
                approval: flight.approval.map(String::from),
                outcome: outcome.as_str().to_string(),
                duration_ms,
                arguments: flight.arguments,
            }));
        }
        c
    }

    /// Queues the audit record and the count of a call refused at once (`error`).
    pub(super) fn audit_refusal(
        &mut self,
        tool: &str,
        arguments: &str,
        profile: Option<&str>,
        attempt: Attempt,
        error: &CallError,
    ) {
        let outcome = CallOutcome::of_error(error);
        if self.call_counts.is_some() {
            let server = attempt.server.as_deref().unwrap_or_default();
            // A tool no server has counts under the name called.
            let own = match (&attempt.tool, &attempt.denied_tool) {
                (Some(found), _) => found.def.name.as_str(),
                (None, Some(own)) => own.as_str(),
                (None, None) => tool,
            };
            self.count_call(server, own, outcome, 0);
        }
        if !self.audit.events {
            return;
        }
        let (decision, rule) = match &attempt.decision {
            Some(d) => (
                Some(d.mode().as_str().to_string()),
                Some(d.rule().to_string()),
            ),
            None => (None, None),
        };
        self.events.push(Event::Audit(AuditRecord {
            call: None,
            server: attempt.server.unwrap_or_default(),
            tool: tool.to_string(),
            profile: profile.map(String::from),
            decision,
            rule,
            approval: attempt.approval.map(String::from),
            outcome: outcome.as_str().to_string(),
            duration_ms: 0,
            // As the caller gave them: they may not have been valid JSON.
            arguments: self.audit.arguments.then(|| arguments.to_string()),
        }));
    }
}
