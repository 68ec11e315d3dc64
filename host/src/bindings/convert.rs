//! The WIT's records mapped to the public types of [`crate::types`] and back:
//! beside the bindings, so that the public types are a leaf that knows no
//! generated code (and a module that names them does not reach the bindings,
//! and through their `with:` mapping the transports, by naming them).

use serde_json::Value;
use serde_json::value::RawValue;

use super::registry as wit;
use crate::types::*;

impl ReloadReport {
    pub(crate) fn from_wit(origin: String, r: wit::ReloadReport, file_events: u32) -> Self {
        ReloadReport {
            origin,
            added: r.added,
            removed: r.removed,
            restarted: r.restarted,
            updated: r.updated,
            unchanged: r.unchanged,
            kept: r.kept,
            issues: r.issues.into_iter().map(Into::into).collect(),
            file_events,
        }
    }
}

impl From<&InputAnswer> for wit::InputAnswer {
    fn from(a: &InputAnswer) -> Self {
        match a {
            InputAnswer::Accept(content) => wit::InputAnswer::Accept(content.to_string()),
            InputAnswer::Decline => wit::InputAnswer::Decline,
            InputAnswer::Cancel => wit::InputAnswer::Cancel,
        }
    }
}

impl From<&Root> for wit::Root {
    fn from(r: &Root) -> Self {
        wit::Root {
            uri: r.uri.clone(),
            name: r.name.clone(),
        }
    }
}

impl From<wit::ServerState> for ServerState {
    fn from(s: wit::ServerState) -> Self {
        match s {
            wit::ServerState::Starting => ServerState::Starting,
            wit::ServerState::Connected => ServerState::Connected,
            wit::ServerState::Failed => ServerState::Failed,
            wit::ServerState::Closed => ServerState::Closed,
        }
    }
}

impl From<wit::ServerStatus> for ServerStatus {
    fn from(s: wit::ServerStatus) -> Self {
        ServerStatus {
            name: s.name,
            state: s.state.into(),
            transport: s.transport,
            error: s.error,
            tool_count: s.tool_count,
            protocol_version: s.protocol_version,
            server_name: s.server_name,
            server_version: s.server_version,
        }
    }
}

/// JSON text from the guest; the guest only passes on JSON it parsed, so a
/// failure here is a guest bug, reported as JSON `null` rather than a panic.
fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text)
        .unwrap_or_else(|_| RawValue::from_string("null".into()).expect("null is JSON"))
}

impl From<wit::ToolInfo> for Tool {
    fn from(t: wit::ToolInfo) -> Self {
        Tool {
            name: t.name,
            server: t.server,
            tool: t.tool,
            title: t.title,
            description: t.description,
            input_schema: raw(t.input_schema),
            output_schema: t.output_schema.map(raw),
            annotations: t.annotations.map(raw),
        }
    }
}

impl From<wit::CallResult> for CallResult {
    fn from(r: wit::CallResult) -> Self {
        CallResult {
            is_error: r.is_error,
            text: r.text,
            content: raw(r.content),
            structured_content: r.structured_content.map(raw),
        }
    }
}

impl From<wit::CallError> for CallError {
    fn from(e: wit::CallError) -> Self {
        match e {
            wit::CallError::UnknownTool(t) => CallError::UnknownTool(t),
            wit::CallError::InvalidArguments(m) => CallError::InvalidArguments(m),
            wit::CallError::ServerUnavailable(m) => CallError::ServerUnavailable(m),
            wit::CallError::Timeout(m) => CallError::Timeout(m),
            wit::CallError::Cancelled => CallError::Cancelled,
            wit::CallError::Protocol(m) => CallError::Protocol(m),
            wit::CallError::Denied(m) => CallError::Denied(m),
        }
    }
}

impl Event {
    /// The embedder's form of a guest event; none for a call count, which is
    /// the metrics' and not an event (the driver hands it to the monitor).
    pub(crate) fn from_wit(e: wit::Event) -> Option<Self> {
        Some(match e {
            wit::Event::Status(s) => Event::Status(s.into()),
            wit::Event::ToolsChanged(server) => Event::ToolsChanged(server),
            wit::Event::Warning(w) => Event::Warning(w),
            wit::Event::Log(l) => Event::Log {
                server: l.server,
                level: l.level,
                message: l.message,
            },
            // The JSON texts below are handed to the embedder whole as values
            // (a requested schema, a call's arguments, a sampling request's
            // params): parsed as any JSON, none of their fields read here.
            wit::Event::InputRequested(r) => Event::InputRequested(InputRequest {
                id: r.id,
                server: r.server,
                tool: r.tool,
                message: r.message,
                requested_schema: serde_json::from_str(&r.requested_schema).unwrap_or(Value::Null),
                approval: r.approval.map(|a| ApprovalRequest {
                    rule: a.rule,
                    arguments: serde_json::from_str(&a.arguments).unwrap_or(Value::Null),
                }),
            }),
            wit::Event::InputWithdrawn(id) => Event::InputWithdrawn(id),
            wit::Event::SamplingRequested(r) => Event::SamplingRequested(SamplingRequest {
                id: r.id,
                server: r.server,
                tool: r.tool,
                params: serde_json::from_str(&r.params).unwrap_or(Value::Null),
            }),
            wit::Event::ResourceUpdated(u) => Event::ResourceUpdated {
                server: u.server,
                uri: u.uri,
            },
            wit::Event::ResourcesChanged(server) => Event::ResourcesChanged(server),
            wit::Event::PromptsChanged(server) => Event::PromptsChanged(server),
            wit::Event::Audit(r) => Event::Audit(AuditRecord {
                time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                call: r.call,
                server: r.server,
                tool: r.tool,
                profile: r.profile,
                decision: r.decision,
                rule: r.rule,
                approval: r.approval,
                outcome: r.outcome,
                duration_ms: r.duration_ms,
                arguments: r
                    .arguments
                    .map(|a| serde_json::from_str(&a).unwrap_or(Value::String(a))),
            }),
            wit::Event::CallCounted(_) => return None,
            wit::Event::UrlElicitationRequested(r) => {
                Event::UrlElicitationRequested(UrlElicitationRequest {
                    id: r.id,
                    server: r.server,
                    tool: r.tool,
                    message: r.message,
                    url: r.url,
                    elicitation_id: r.elicitation_id,
                })
            }
            wit::Event::TaskStatus(t) => Event::TaskStatus {
                server: t.server,
                tool: t.tool,
                task_id: t.task_id,
                status: t.status,
                message: t.message,
            },
            wit::Event::ToolChanged(c) => Event::ToolChanged {
                server: c.server,
                tool: c.tool,
                name: c.name,
                changed: c.changed,
                policy: c.policy,
                reason: c.reason,
            },
        })
    }
}

impl From<wit::ConfigIssue> for ConfigIssue {
    fn from(i: wit::ConfigIssue) -> Self {
        ConfigIssue {
            server: i.server,
            field: i.field,
            message: i.message,
        }
    }
}

/// JSON text the guest made for an adapted tool; a guest that sent something
/// else is a bug, kept visible as a JSON string rather than a panic.
fn adapted_raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).unwrap_or_else(|e| {
        serde_json::value::to_raw_value(&format!("not JSON: {e}")).expect("a string serialises")
    })
}

impl AdaptedTools {
    /// Adds a page read from the guest.
    pub(crate) fn extend(&mut self, page: wit::AdaptedPage) {
        self.tools.extend(page.tools.into_iter().map(|t| {
            AdaptedTool {
                name: t.name,
                registry_name: t.registry_name,
                definition: adapted_raw(t.definition),
                responses_definition: t.responses_definition.map(adapted_raw),
                adapter_notes: t
                    .notes
                    .into_iter()
                    .map(|n| AdapterNote {
                        kind: n.kind,
                        pointer: n.pointer,
                        lost: n.lost,
                    })
                    .collect(),
            }
        }));
        self.refused
            .extend(page.refused.into_iter().map(|r| AdapterRefusal {
                name: r.name,
                pointer: r.pointer,
                reason: r.reason,
            }));
    }
}
