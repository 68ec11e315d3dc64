//! Prompts across servers: a prompt got without naming its server comes from
//! the first server, in configuration order, that has it (the gateway, serving
//! names without a server, needs it); a skill's entry too. The request and its
//! fan-out are [`super::request`]'s.

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

/// A `skills/get` sent to every server offering skills: the first that has it
/// answers. When every server answered that it has no such skill (`-32602`),
/// the URI names no skill served ([`CallError::InvalidArguments`]); when one
/// failed otherwise, the error is a protocol one. Either names each server's
/// answer.
pub(super) fn merge_skill(uri: &str, answers: Answers) -> Result<CallResult, CallError> {
    let mut errors = Vec::new();
    for (_, answer) in answers {
        match answer {
            Ok(result) => return Ok(result),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let unknown = errors.iter().all(|e| e.contains("-32602"));
    let why = format!(
        "skills/get {uri}: no server could get it ({})",
        errors.join("; ")
    );
    Err(if unknown {
        CallError::InvalidArguments(why)
    } else {
        CallError::Protocol(why)
    })
}
