//! Lifecycle: how a downstream request is placed in an era and a session.
//!
//! - **2025-11-25 and older**: `initialize` opens a session (the host gives it a
//!   `Mcp-Session-Id` over HTTP); the version offered is echoed when the gateway
//!   speaks it, else the newest it speaks is answered; `notifications/initialized`
//!   follows. Every later request of the client names the session.
//! - **2026-07-28, stateless**: no handshake and no session. Every request carries
//!   `_meta` with `io.modelcontextprotocol/protocolVersion` and
//!   `io.modelcontextprotocol/clientCapabilities` (and should carry `clientInfo`);
//!   `server/discover` says what the gateway supports. Over HTTP the
//!   `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must agree with
//!   the body. Errors of this era carry an HTTP status (400 for bad parameters and
//!   mismatches, 404 for unknown methods), which the host applies to the exchange.

use crate::methods;
use crate::prelude::*;

use serde_json::{Map, Value, json};

use super::sampling::Sampling;
use crate::client::{OFFERED_VERSION, STATELESS_VERSION, SUPPORTED_VERSIONS};
use crate::jsonrpc::{INVALID_PARAMS, RpcError};
use crate::transport::Pair;

/// `_meta` key of the protocol version (2026-07-28).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities (2026-07-28).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's name and version on results (2026-07-28).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of the lowest log level a request wants (2026-07-28).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a `subscriptions/listen` stream's id (2026-07-28).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// JSON-RPC: the request's HTTP headers disagree with its body (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// JSON-RPC: a protocol version the server does not speak (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC: the request needs a capability the client did not declare on it
/// (2026-07-28).
pub const MISSING_REQUIRED_CAPABILITY: i64 = -32021;
/// The tasks extension's identifier (2026-07-28; see `tasks.rs`).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// What a 2026-07-28 request says about its client, from its `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMeta {
    /// The client declared `elicitation` (form mode) for this request.
    pub elicitation: bool,
    /// The client declared `sampling` for this request.
    pub sampling: Sampling,
    /// The lowest log level the client wants on this request's stream, as a rank
    /// (see [`super::logging::rank`]); `None`: no log messages.
    pub log_level: Option<u8>,
    /// The client declared the tasks extension ([`TASKS_EXTENSION`]) for this
    /// request: a `tools/call` may be answered with a task.
    pub tasks: bool,
}

/// An error for the downstream client, with the HTTP status it carries (none:
/// the exchange's usual status).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The JSON-RPC error.
    pub error: RpcError,
    /// The HTTP status of a 2026-07-28 error (400, 404).
    pub status: Option<u16>,
}

impl Refusal {
    /// An error without a particular HTTP status.
    pub fn new(code: i64, message: impl Into<String>) -> Refusal {
        Refusal {
            error: RpcError::new(code, message),
            status: None,
        }
    }

    /// The same, with an HTTP status.
    pub fn status(mut self, status: u16) -> Refusal {
        self.status = Some(status);
        self
    }

    /// The same, with `data`.
    pub fn data(mut self, data: Value) -> Refusal {
        self.error.data = Some(data);
        self
    }
}

/// The value of a request header, by case-insensitive name, without the
/// whitespace HTTP allows around it.
pub fn header<'a>(headers: &'a [Pair], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .map(|p| p.value.trim())
}

/// Whether a request without a session is meant as a 2026-07-28 one.
pub fn claims_stateless(method: &str, meta: Option<&Map<String, Value>>, headers: &[Pair]) -> bool {
    method == methods::SERVER_DISCOVER
        || meta.is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
        || header(headers, "mcp-protocol-version") == Some(STATELESS_VERSION)
}

/// Checks a 2026-07-28 request's `_meta` and headers; what it says of the client.
pub fn check_stateless(
    method: &str,
    params: &Value,
    headers: &[Pair],
    http: bool,
) -> Result<RequestMeta, Refusal> {
    let invalid = |why: &str| {
        Refusal::new(
            INVALID_PARAMS,
            format!(
                "Invalid params: {why} (a 2026-07-28 request carries _meta with \
                 {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES})"
            ),
        )
        .status(400)
    };
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return Err(invalid("_meta is missing"));
    };
    let Some(version) = meta.get(META_PROTOCOL_VERSION).and_then(Value::as_str) else {
        return Err(invalid("_meta has no protocol version"));
    };
    let Some(capabilities) = meta
        .get(META_CLIENT_CAPABILITIES)
        .and_then(Value::as_object)
    else {
        return Err(invalid("_meta has no client capabilities object"));
    };
    let mismatch = |what: String| {
        Refusal::new(HEADER_MISMATCH, format!("Header mismatch: {what}")).status(400)
    };
    // Headers first: a body that disagrees with its headers is refused as such,
    // whatever version it names.
    if let Some(h) = header(headers, "mcp-protocol-version")
        && h != version
    {
        return Err(mismatch(format!(
            "MCP-Protocol-Version is {h:?} but _meta says {version:?}"
        )));
    }
    if version != STATELESS_VERSION {
        return Err(Refusal::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version {version:?}; this server speaks {STATELESS_VERSION} (and 2025-11-25 and older through initialize)"),
        )
        .data(json!({"supported": [STATELESS_VERSION], "requested": version}))
        .status(400));
    }
    // Over HTTP every request names its method, and a request about a named
    // tool (resource, prompt) names it, in headers (SEP-2243).
    match header(headers, "mcp-method") {
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method is {h:?} but the method is {method:?}"
            )));
        }
        None if http => {
            return Err(mismatch(format!(
                "the Mcp-Method header is missing (the method is {method:?})"
            )));
        }
        _ => {}
    }
    // Only these name what they are about in `Mcp-Name` (SEP-2243, and the
    // tasks extension for its methods' `taskId`); `skills/get` has a `uri` and
    // no such header.
    let named = [
        methods::TOOLS_CALL,
        methods::RESOURCES_READ,
        methods::PROMPTS_GET,
    ];
    let tasks = [
        methods::TASKS_GET,
        methods::TASKS_UPDATE,
        methods::TASKS_CANCEL,
    ];
    let name = if tasks.contains(&method) {
        params.get("taskId").and_then(Value::as_str)
    } else {
        params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .filter(|_| named.contains(&method))
    };
    match (header(headers, "mcp-name"), name) {
        (Some(h), name) if name != Some(h) => {
            return Err(mismatch(format!(
                "Mcp-Name is {h:?} but the request names {}",
                name.map_or("nothing".to_string(), |n| format!("{n:?}"))
            )));
        }
        (None, Some(name)) if http => {
            return Err(mismatch(format!(
                "the Mcp-Name header is missing (the request names {name:?})"
            )));
        }
        _ => {}
    }
    Ok(RequestMeta {
        elicitation: declares_form_elicitation(capabilities.get("elicitation")),
        sampling: Sampling::declared(capabilities.get("sampling")),
        log_level: meta
            .get(META_LOG_LEVEL)
            .and_then(Value::as_str)
            .and_then(super::logging::rank),
        tasks: capabilities
            .get("extensions")
            .and_then(|e| e.get(TASKS_EXTENSION))
            .is_some_and(Value::is_object),
    })
}

/// Whether an `elicitation` capability covers form mode: `{}` (the form before
/// modes existed) or `{"form": {}}`.
pub fn declares_form_elicitation(capability: Option<&Value>) -> bool {
    match capability {
        Some(Value::Object(modes)) => modes.is_empty() || modes.contains_key("form"),
        _ => false,
    }
}

/// The protocol version to answer an `initialize` that offered `offered`.
pub fn negotiate(offered: Option<&str>) -> &'static str {
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| Some(**v) == offered)
        .copied()
        .unwrap_or(OFFERED_VERSION)
}

/// `serverInfo`.
pub fn server_info() -> Value {
    json!({"name": "mcpbox", "version": env!("CARGO_PKG_VERSION")})
}

/// The `initialize` result for a client offered `version`; `tasks`: the gateway
/// keeps tasks (see `tasks.rs`).
pub fn initialize_result(version: &str, tasks: bool) -> Value {
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "logging": {},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            // Skills pass through as resources do (see resources.rs).
            "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}
        },
        "serverInfo": server_info(),
        "instructions": "mcpbox: the tools of several MCP servers behind one gateway. Tool names are {server}__{tool}."
    });
    // Tasks came with 2025-11-25: the gateway keeps its clients' (see tasks.rs).
    if tasks && version == super::tasks::TASKS_VERSION {
        result["capabilities"]["tasks"] = json!({
            "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}
        });
    }
    result
}

/// The `server/discover` result; `tasks`: the gateway keeps tasks, and declares
/// the tasks extension.
pub fn discover_result(tasks: bool) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}
        },
        // The gateway's capabilities never change while it runs; the answer is
        // the same for every client.
        "ttlMs": 3_600_000,
        "cacheScope": "public",
        "_meta": {META_SERVER_INFO: server_info()}
    });
    // Tasks: the gateway keeps its clients' (see tasks.rs).
    if tasks {
        result["capabilities"]["extensions"][TASKS_EXTENSION] = json!({});
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Value {
        json!({"_meta": {META_PROTOCOL_VERSION: STATELESS_VERSION, META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn stateless_requests_are_checked() {
        assert_eq!(
            check_stateless("tools/list", &meta(), &[], false),
            Ok(RequestMeta::default())
        );
        let e = check_stateless("tools/list", &json!({}), &[], false).unwrap_err();
        assert_eq!((e.error.code, e.status), (INVALID_PARAMS, Some(400)));
        let mut old = meta();
        old["_meta"][META_PROTOCOL_VERSION] = json!("v9");
        let e = check_stateless("tools/list", &old, &[], false).unwrap_err();
        assert_eq!(e.error.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.error.data.unwrap()["requested"], "v9");
        let h = |n: &str, v: &str| Pair {
            name: n.into(),
            value: v.into(),
        };
        let e = check_stateless(
            "tools/list",
            &meta(),
            &[h("Mcp-Method", "tools/call")],
            false,
        )
        .unwrap_err();
        assert_eq!(e.error.code, HEADER_MISMATCH);
        let mut call = meta();
        call["name"] = json!("a");
        assert!(check_stateless("tools/call", &call, &[h("mcp-name", " a ")], false).is_ok());
        assert!(check_stateless("tools/call", &call, &[h("mcp-name", "b")], false).is_err());
        // Over HTTP the headers are required.
        let e = check_stateless("tools/call", &call, &[h("mcp-name", "a")], true).unwrap_err();
        assert_eq!((e.error.code, e.status), (HEADER_MISMATCH, Some(400)));
        let both = [h("Mcp-Method", "tools/call"), h("Mcp-Name", "a")];
        assert!(check_stateless("tools/call", &call, &both, true).is_ok());
    }

    #[test]
    fn task_requests_name_their_task_and_the_extension_is_read_from_meta() {
        let h = |n: &str, v: &str| Pair {
            name: n.into(),
            value: v.into(),
        };
        let mut get = meta();
        get["taskId"] = json!("t-1");
        let named = [h("Mcp-Method", "tasks/get"), h("Mcp-Name", "t-1")];
        assert!(check_stateless("tasks/get", &get, &named, true).is_ok());
        let wrong = [h("Mcp-Method", "tasks/get"), h("Mcp-Name", "t-2")];
        let e = check_stateless("tasks/get", &get, &wrong, true).unwrap_err();
        assert_eq!((e.error.code, e.status), (HEADER_MISMATCH, Some(400)));
        let e = check_stateless(
            "tasks/cancel",
            &get,
            &[h("Mcp-Method", "tasks/cancel")],
            true,
        )
        .unwrap_err();
        assert_eq!(
            e.error.code, HEADER_MISMATCH,
            "Mcp-Name is required over HTTP"
        );
        assert!(
            !check_stateless("tasks/get", &get, &[], false)
                .unwrap()
                .tasks
        );
        get["_meta"][META_CLIENT_CAPABILITIES] = json!({"extensions": {TASKS_EXTENSION: {}}});
        assert!(
            check_stateless("tasks/get", &get, &[], false)
                .unwrap()
                .tasks
        );
        assert_eq!(
            discover_result(true)["capabilities"]["extensions"][TASKS_EXTENSION],
            json!({})
        );
        assert!(discover_result(false)["capabilities"]["extensions"][TASKS_EXTENSION].is_null());
    }

    #[test]
    fn versions_are_negotiated() {
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("1999-01-01")), OFFERED_VERSION);
        assert_eq!(negotiate(None), OFFERED_VERSION);
        assert!(declares_form_elicitation(Some(&json!({}))));
        assert!(declares_form_elicitation(Some(
            &json!({"form": {}, "url": {}})
        )));
        assert!(!declares_form_elicitation(Some(&json!({"url": {}}))));
        assert!(!declares_form_elicitation(None));
    }
}
