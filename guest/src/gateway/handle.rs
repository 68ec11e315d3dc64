//! A 2025 session's handle, which carries what the session negotiated.
//!
//! Over HTTP a session's `Mcp-Session-Id` is this handle signed with the host's
//! secret (`http::SignedSessions`); the host gets the handle from the guest's
//! rules (`gateway.http-head`) and hands it in with every request of that session.
//! When the guest traps and a new instance takes over, the host keeps its
//! sessions and hands each handle to the new gateway with no text; the new
//! gateway reopens the session from the handle alone (see `Gateway::reopen`), so
//! one client's trap ends nobody else's session. The handle is the session's
//! sequence number and, in its low bits, the facts its `initialize` settled: the
//! protocol version and the client's elicitation and sampling capabilities. (The
//! stock component, which has no host to keep sessions, carries the same facts in
//! the session id the client holds; see `http::CarriedSessions`.) Only the host hands in
//! handles, and only those the gateway gave: a client sees one in its session id,
//! but cannot name another without that id's MAC.

use crate::client::SUPPORTED_VERSIONS;

use super::sampling::Sampling;

/// Low bits of a handle that hold the facts.
const FACT_BITS: u32 = 8;

/// What a session's `initialize` settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The negotiated protocol version.
    pub version: &'static str,
    /// The client declared form-mode elicitation.
    pub elicitation: bool,
    /// What the client declared of sampling.
    pub sampling: Sampling,
}

/// The handle of the session numbered `sequence` (from 1) with these facts.
pub fn encode(sequence: u64, facts: &Facts) -> u64 {
    let version = SUPPORTED_VERSIONS
        .iter()
        .position(|v| *v == facts.version)
        .map_or(0, |i| i as u64 + 1);
    let bits = version
        | u64::from(facts.elicitation) << 3
        | u64::from(facts.sampling.declared) << 4
        | u64::from(facts.sampling.tools) << 5;
    sequence << FACT_BITS | bits
}

/// The facts a handle carries; none for a handle the gateway cannot have given.
pub fn decode(handle: u64) -> Option<Facts> {
    let version = (handle & 0b111) as usize;
    let version = SUPPORTED_VERSIONS.get(version.checked_sub(1)?)?;
    if sequence(handle) == 0 || handle & 0b1100_0000 != 0 {
        return None;
    }
    Some(Facts {
        version,
        elicitation: handle & 1 << 3 != 0,
        sampling: Sampling {
            declared: handle & 1 << 4 != 0,
            tools: handle & 1 << 5 != 0,
        },
    })
}

/// The sequence number of a handle.
pub fn sequence(handle: u64) -> u64 {
    handle >> FACT_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_gives_back_the_facts_it_was_made_with() {
        for version in SUPPORTED_VERSIONS {
            for bits in 0..8u8 {
                let facts = Facts {
                    version,
                    elicitation: bits & 1 != 0,
                    sampling: Sampling {
                        declared: bits & 2 != 0,
                        tools: bits & 4 != 0,
                    },
                };
                let handle = encode(7, &facts);
                assert_eq!(decode(handle), Some(facts));
                assert_eq!(sequence(handle), 7);
            }
        }
    }

    #[test]
    fn handles_the_gateway_cannot_have_given_decode_to_nothing() {
        assert_eq!(decode(0), None);
        // No version.
        assert_eq!(decode(1 << FACT_BITS), None);
        // A version past the list.
        assert_eq!(decode(1 << FACT_BITS | 7), None);
        // Sequence 0.
        assert_eq!(decode(1), None);
        // Bits no fact uses.
        assert_eq!(decode(1 << FACT_BITS | 1 | 1 << 7), None);
        assert_eq!(decode(u64::MAX), None);
    }
}
