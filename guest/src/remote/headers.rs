//! MCP's HTTP headers, as the client sets them on each request.
//!
//! - `Mcp-Session-Id`: the session the server assigned (Streamable HTTP, before
//!   2026-07-28), sent back on every later request;
//! - `MCP-Protocol-Version`: the version the client negotiated, once it has one;
//! - from 2026-07-28 on, `Mcp-Method` and `Mcp-Name` name the method and the
//!   tool (prompt, resource) a request is about, and `Mcp-Param-<Name>` mirrors
//!   each tool argument the tool's schema annotates with `x-mcp-header` (SEP-2243),
//!   so that proxies can route without reading bodies. Values that are not plain
//!   visible ASCII go as `=?base64?…?=`.

use crate::prelude::*;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::client::STATELESS_VERSION;
use crate::transport::SendMeta;

/// The session a Streamable HTTP server assigned.
pub const SESSION_ID: &str = "mcp-session-id";
/// The negotiated protocol version.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The last event id seen, when resuming an event stream.
pub const LAST_EVENT_ID: &str = "last-event-id";
/// The JSON-RPC method (2026-07-28 on).
pub const MCP_METHOD: &str = "mcp-method";
/// The tool, prompt or resource a request is about (2026-07-28 on).
pub const MCP_NAME: &str = "mcp-name";
/// Prefixes the `x-mcp-header` name of a mirrored tool argument (SEP-2243).
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// A header value as SEP-2243 encodes it: plain when it is visible ASCII without
/// surrounding spaces, `=?base64?…?=` otherwise, and also when the plain value
/// would itself read as that wrapper (so the server decodes back what was meant).
pub fn encoded(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_string()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(value.as_bytes()))
    }
}

/// Whether `name` is an HTTP token (RFC 9110), as a header name must be.
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The protocol headers for one request: `MCP-Protocol-Version` when `version`
/// is known, and from 2026-07-28 on the method, name and param headers of `meta`.
pub fn protocol(meta: Option<&SendMeta>, version: Option<&str>) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    let Some(version) = version else {
        return headers;
    };
    headers.push((PROTOCOL_VERSION.to_string(), version.to_string()));
    let Some(meta) = meta else {
        return headers;
    };
    if version < STATELESS_VERSION {
        return headers;
    }
    if let Some(method) = &meta.method {
        headers.push((MCP_METHOD.to_string(), encoded(method)));
    }
    if let Some(name) = &meta.name {
        headers.push((MCP_NAME.to_string(), encoded(name)));
    }
    // The client checked each name is a token; one that is not (a bug) is left
    // out rather than failing the request.
    for param in &meta.param_headers {
        if is_token(&param.name) {
            let name = format!("{MCP_PARAM_PREFIX}{}", param.name.to_ascii_lowercase());
            headers.push((name, encoded(&param.value)));
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Pair;

    #[test]
    fn values_are_plain_or_base64() {
        assert_eq!(encoded("tools/call"), "tools/call");
        assert_eq!(encoded("my-tool"), "my-tool");
        assert_eq!(encoded(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encoded("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encoded("a\nb"), "=?base64?YQpi?=");
        assert_eq!(encoded("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encoded(""), "");
        // A plain value that looks encoded is encoded, so it reads back as itself.
        assert_eq!(
            encoded("=?base64?SGk=?="),
            "=?base64?PT9iYXNlNjQ/U0drPT89?="
        );
    }

    #[test]
    fn only_2026_requests_name_method_and_params() {
        let meta = SendMeta {
            id: Some("3".into()),
            method: Some("tools/call".into()),
            name: Some("wéather".into()),
            protocol_version: None,
            param_headers: vec![
                Pair {
                    name: "Region".into(),
                    value: "eu".into(),
                },
                Pair {
                    name: "bad name".into(),
                    value: "x".into(),
                },
            ],
        };
        assert_eq!(protocol(Some(&meta), None), vec![]);
        assert_eq!(
            protocol(Some(&meta), Some("2025-11-25")),
            vec![("mcp-protocol-version".into(), "2025-11-25".into())]
        );
        assert_eq!(
            protocol(Some(&meta), Some("2026-07-28")),
            vec![
                ("mcp-protocol-version".into(), "2026-07-28".into()),
                ("mcp-method".into(), "tools/call".into()),
                ("mcp-name".into(), "=?base64?d8OpYXRoZXI=?=".into()),
                ("mcp-param-region".into(), "eu".into()),
            ]
        );
        assert_eq!(protocol(None, Some("2026-07-28")).len(), 1);
    }
}
