//! Sampling forwarded (the gateway's side): an upstream server's
//! `sampling/createMessage` during a call goes to the downstream client that
//! made the call, when that client declared `sampling` (and `sampling.tools`
//! when the request carries tools, [`Sampling::covers`]); the client's result
//! goes back upstream as it is, and its error is a refusal. Otherwise the
//! request is declined. The round trip itself — a request on a 2025 client's
//! stream, or an `input_required` round a 2026-07-28 client retries — is the
//! one elicitation uses ([`super::elicitation`]). The client's side of sampling
//! (an upstream request to the embedder) is `crate::client::sampling`; the data
//! model, [`crate::sampling`].

use crate::prelude::*;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::elicitation::InputAnswer;
use crate::jsonrpc::RpcError;
use crate::methods;

/// The key prefix of a sampling request in an `inputRequests` round: its
/// answer is the client's result as it is, not an elicitation's.
pub(super) const ROUND_KEY: &str = "sampling";

/// What a client's `sampling` capability offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sampling {
    /// It declared `sampling`.
    pub declared: bool,
    /// It declared `sampling.tools`: requests may carry `tools` and `toolChoice`.
    pub tools: bool,
}

impl Sampling {
    /// Reads a `sampling` capability.
    pub fn declared(capability: Option<&Value>) -> Sampling {
        match capability {
            Some(Value::Object(c)) => Sampling {
                declared: true,
                tools: c.get("tools").is_some_and(Value::is_object),
            },
            _ => Sampling::default(),
        }
    }

    /// Whether a request with these params may be put to the client: one with
    /// `tools` or `toolChoice` only if it declared `sampling.tools`.
    pub fn covers(&self, params: &str) -> bool {
        let with_tools = serde_json::from_str::<Value>(params)
            .ok()
            .is_some_and(|p| p.get("tools").is_some() || p.get("toolChoice").is_some());
        self.declared && (self.tools || !with_tools)
    }
}

/// The request (method and params) that puts an upstream sampling request to a
/// client: `sampling/createMessage` with the server's params.
pub(super) fn create_message(params: &str) -> Value {
    let params: Value = serde_json::from_str(params).unwrap_or_else(|_| json!({}));
    json!({"method": methods::SAMPLING_CREATE_MESSAGE, "params": params})
}

/// What goes upstream for a 2025 client's response: its result as it is; its
/// error is a refusal.
pub(super) fn answer_of_response(outcome: &Result<Box<RawValue>, RpcError>) -> InputAnswer {
    match outcome {
        Ok(raw) => InputAnswer::Accept(raw.get().to_string()),
        Err(_) => InputAnswer::Decline,
    }
}
