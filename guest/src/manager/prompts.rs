//! Prompts across servers: a prompt got without naming its server comes from
//! the first server, in configuration order, that has it (the gateway, serving
//! names without a server, needs it). The request and its fan-out are
//! [`super::request`]'s.

use super::resources::Answers;
use super::*;

/// A `prompts/get` sent to every server offering prompts: the first that has
/// it answers; when none has it, the error names each server's answer.
pub(super) fn merge_prompt(name: &str, answers: Answers) -> Result<CallResult, CallError> {
    let asked = answers.len();
    let mut errors = Vec::new();
    for (_, answer) in answers {
        match answer {
            Ok(result) => return Ok(result),
            Err(e) if asked == 1 => return Err(e),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(CallError::Protocol(format!(
        "prompts/get {name}: no server could get it ({})",
        errors.join("; ")
    )))
}
