//! Resources across servers: a read answered by the first server that has the
//! URI, its contents held to the output limits; a subscription that holds when
//! one server took it; resource templates checked before they are listed. The
//! request and its fan-out are [`super::request`]'s.

use super::*;

/// Every server's answer to one request, in configuration order.
pub(super) type Answers = Vec<(String, Result<CallResult, CallError>)>;

impl<P: Platform> Manager<P> {
    /// A read's result with its contents past the output limit written to host
    /// files ([`crate::output::limit_contents`]), as large tool results are.
    pub(super) fn limit_read(
        &mut self,
        result: CallResult,
        server: &str,
        uri: &str,
        call: u64,
    ) -> CallResult {
        let (result, warnings) = crate::output::limit_contents(
            result,
            &self.output,
            server,
            uri,
            call,
            &mut self.platform,
        );
        self.events.extend(warnings.into_iter().map(Event::Warning));
        result
    }

    /// A read sent to every server offering resources: the first that has the
    /// URI answers; when none has it, the error names each server's answer.
    pub(super) fn merge_read(
        &mut self,
        call: u64,
        uri: &str,
        answers: Answers,
    ) -> Result<CallResult, CallError> {
        let mut errors = Vec::new();
        let asked = answers.len();
        for (server, answer) in answers {
            match answer {
                Ok(result) if self.serving => return Ok(result),
                Ok(result) => return Ok(self.limit_read(result, &server, uri, call)),
                Err(e) if asked == 1 => return Err(e),
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(CallError::Protocol(format!(
            "resources/read {uri}: no server could read it ({})",
            errors.join("; ")
        )))
    }
}

/// A subscribe (unsubscribe) sent to every server offering subscriptions (the
/// URI's server is not known): it holds when one took it.
pub(super) fn merge_subscription(
    label: &str,
    uri: &str,
    answers: Answers,
) -> Result<CallResult, CallError> {
    let mut errors = Vec::new();
    let mut taken = None;
    for (server, answer) in answers {
        match answer {
            Ok(result) => taken = taken.or(Some(result)),
            Err(e) => errors.push(format!("`{server}`: {e}")),
        }
    }
    taken.ok_or_else(|| {
        CallError::Protocol(format!(
            "{label} {uri}: no server took it ({})",
            errors.join("; ")
        ))
    })
}

/// Why `template` is not an RFC 6570 URI template mcpbox can pass on: braces
/// that do not pair, or an expression with no variable name.
pub(super) fn template_problem(template: &str) -> Option<String> {
    let mut open = None;
    for (at, c) in template.char_indices() {
        match (c, open) {
            ('{', None) => open = Some(at),
            ('{', Some(_)) => return Some(format!("`{{` at {at} inside an expression")),
            ('}', None) => return Some(format!("`}}` at {at} closes nothing")),
            ('}', Some(start)) => {
                let body =
                    template[start + 1..at].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
                if body.split(',').any(|v| v.trim_end_matches('*').is_empty()) {
                    return Some(format!("an expression at {start} names no variable"));
                }
                open = None;
            }
            _ => {}
        }
    }
    open.map(|start| format!("`{{` at {start} is never closed"))
}
