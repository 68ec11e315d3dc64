//! The exported `registry` interface, translated to the [`Manager`]: shared by
//! the mcpbox guest (`component.rs`, world `mcpbox:runtime/mcpbox`) and the stock
//! component (`stock/component.rs`, world `mcpbox:stock/stock`), which include
//! this file as their module `registry`. Both generate the same interface, so the
//! generated names are the same; what differs is the platform under the
//! manager, which the parent module supplies:
//!
//! - `wit`: the generated `exports::mcpbox::runtime::registry` module, and
//!   `types` the generated `mcpbox::runtime::types`;
//! - `Component`: the type the bindings export;
//! - `with` and `with_both`: the instance's one manager (and gateway).
//!
//! Nothing here but conversions: the logic is the manager's.

use crate::adapter::{Adaptation, Dialect, UnknownDialect};
use crate::client::{Answer, CallError, CallOptions, CallResult, FinishedCall, Request};
use crate::config::ConfigIssue;
use crate::config::describe::{Description, OAuthFields, Reach};
use crate::elicitation::{InputAnswer, InputRequest};
use crate::gateway::{Gateway, Signal, Target as DownstreamTarget};
use crate::manager::call_counts::CallOutcome;
use crate::manager::{Event, LogEntry, Manager, ReloadReport, ServerState, ServerStatus};
use crate::prelude::*;
use crate::registry::Entry;
use crate::transport::{Endpoint, Pair, Platform};
use alloc::collections::BTreeMap;
use core::cell::RefCell;

use super::{types, wit, with, with_both};

fn to_wit_state(s: ServerState) -> wit::ServerState {
    match s {
        ServerState::Starting => wit::ServerState::Starting,
        ServerState::Connected => wit::ServerState::Connected,
        ServerState::Failed => wit::ServerState::Failed,
        ServerState::Closed => wit::ServerState::Closed,
    }
}

fn to_wit_status(s: ServerStatus) -> wit::ServerStatus {
    wit::ServerStatus {
        name: s.name,
        state: to_wit_state(s.state),
        transport: s.transport,
        error: s.error,
        tool_count: s.tool_count,
        protocol_version: s.protocol_version,
        server_name: s.server_name,
        server_version: s.server_version,
    }
}

/// Copies a registry entry into the export's result (`Tool::info` copies each
/// field once; the canonical ABI frees them after the host reads them).
fn to_wit_tool(e: &Entry) -> wit::ToolInfo {
    let t = e.tool.info(&e.server);
    wit::ToolInfo {
        name: t.name,
        server: t.server,
        tool: t.tool,
        title: t.title,
        description: t.description,
        input_schema: t.input_schema,
        output_schema: t.output_schema,
        annotations: t.annotations,
    }
}

/// The tools of `page` (registry names, in registry order) in an adaptation, copied.
fn to_wit_adapted_page<'a>(
    adaptation: &Adaptation,
    page: impl Iterator<Item = &'a str>,
) -> wit::AdaptedPage {
    let mut out = wit::AdaptedPage {
        tools: Vec::new(),
        refused: Vec::new(),
    };
    for name in page {
        match adaptation.get(name) {
            Some(Ok(t)) => out.tools.push(wit::AdaptedTool {
                name: t.name.clone(),
                registry_name: t.registry_name.clone(),
                definition: t.definition().get().to_string(),
                responses_definition: t.responses_definition().map(|d| d.get().to_string()),
                notes: t
                    .notes
                    .iter()
                    .map(|n| wit::AdapterNote {
                        kind: n.kind.name().to_string(),
                        pointer: n.pointer.clone(),
                        lost: n.lost.clone(),
                    })
                    .collect(),
            }),
            Some(Err(r)) => out.refused.push(wit::AdapterRefusal {
                name: r.name.clone(),
                pointer: r.pointer.clone(),
                reason: r.reason.clone(),
            }),
            None => {}
        }
    }
    out
}

fn to_wit_issue(i: ConfigIssue) -> wit::ConfigIssue {
    wit::ConfigIssue {
        server: i.server,
        field: i.field,
        message: i.message,
    }
}

fn to_wit_reload_report(r: ReloadReport) -> wit::ReloadReport {
    wit::ReloadReport {
        added: r.added,
        removed: r.removed,
        restarted: r.restarted,
        updated: r.updated,
        unchanged: r.unchanged,
        kept: r.kept,
        issues: r.issues.into_iter().map(to_wit_issue).collect(),
    }
}

fn to_wit_call_error(e: CallError) -> wit::CallError {
    match e {
        CallError::UnknownTool(m) => wit::CallError::UnknownTool(m),
        CallError::InvalidArguments(m) => wit::CallError::InvalidArguments(m),
        CallError::ServerUnavailable(m) => wit::CallError::ServerUnavailable(m),
        CallError::Timeout(m) => wit::CallError::Timeout(m),
        CallError::Cancelled => wit::CallError::Cancelled,
        CallError::Protocol(m) => wit::CallError::Protocol(m),
        CallError::Denied(m) => wit::CallError::Denied(m),
    }
}

fn to_wit_result(r: CallResult, answer: Option<wit::RequestAnswer>) -> wit::CallResult {
    wit::CallResult {
        is_error: r.is_error,
        text: r.text,
        content: r.content,
        structured_content: r.structured_content,
        answer,
    }
}

/// The requests the embedder started (`start-request`) and not yet seen end:
/// what each asked and of which server, so that its end carries its answer
/// as records (`call-result.answer`).
struct Asked(RefCell<BTreeMap<u64, (Request, Option<String>)>>);

// SAFETY: as for the parent module's manager: one thread, and exports do not
// re-enter one another (a re-entrant borrow would trap in the `RefCell`).
#[allow(unsafe_code)]
unsafe impl Sync for Asked {}

static ASKED: Asked = Asked(RefCell::new(BTreeMap::new()));

fn to_wit_finished(c: FinishedCall) -> wit::FinishedCall {
    let asked = ASKED.0.borrow_mut().remove(&c.call);
    let outcome = match (c.outcome, asked) {
        (Ok(result), Some((request, server))) => {
            crate::client::read_answer(&request, server.as_deref(), &result)
                .map(|answer| to_wit_result(result, Some(to_wit_answer(answer))))
        }
        (Ok(result), None) => Ok(to_wit_result(result, None)),
        (Err(e), _) => Err(e),
    };
    wit::FinishedCall {
        call: c.call,
        outcome: outcome.map_err(to_wit_call_error),
    }
}

fn to_wit_item(i: crate::client::ResourceItem) -> wit::ResourceItem {
    wit::ResourceItem {
        uri: i.uri,
        mime_type: i.mime_type,
        text: i.text,
        blob: i.blob,
        meta: i.meta,
    }
}

fn to_wit_skill(e: crate::client::SkillEntry) -> wit::SkillEntry {
    wit::SkillEntry {
        server: e.server,
        uri: e.uri,
        frontmatter: e.frontmatter,
        resources: e.resources,
    }
}

fn to_wit_answer(a: Answer) -> wit::RequestAnswer {
    use wit::RequestAnswer as A;
    match a {
        Answer::Done => A::Done,
        Answer::Resources(list) => A::Resources(
            list.into_iter()
                .map(|r| wit::ListedResource {
                    server: r.server,
                    uri: r.uri,
                    name: r.name,
                    title: r.title,
                    description: r.description,
                    mime_type: r.mime_type,
                    size: r.size,
                    annotations: r.annotations,
                })
                .collect(),
        ),
        Answer::ResourceTemplates(list) => A::ResourceTemplates(
            list.into_iter()
                .map(|t| wit::ResourceTemplate {
                    server: t.server,
                    uri_template: t.uri_template,
                    name: t.name,
                    title: t.title,
                    description: t.description,
                    mime_type: t.mime_type,
                })
                .collect(),
        ),
        Answer::Contents(items) => A::Contents(items.into_iter().map(to_wit_item).collect()),
        Answer::Prompts(list) => A::Prompts(
            list.into_iter()
                .map(|p| wit::ListedPrompt {
                    server: p.server,
                    registry_name: p.registry_name,
                    name: p.name,
                    title: p.title,
                    description: p.description,
                    arguments: p
                        .arguments
                        .into_iter()
                        .map(|a| wit::PromptArgument {
                            name: a.name,
                            title: a.title,
                            description: a.description,
                            required: a.required,
                        })
                        .collect(),
                })
                .collect(),
        ),
        Answer::Prompt(p) => A::Prompt(wit::GotPrompt {
            description: p.description,
            messages: p
                .messages
                .into_iter()
                .map(|m| wit::PromptMessage {
                    role: m.role,
                    content: m.content,
                })
                .collect(),
        }),
        Answer::Completion(c) => A::Completion(wit::CompletionValues {
            values: c.values,
            total: c.total,
            has_more: c.has_more,
        }),
        Answer::Skills(list) => A::Skills(list.into_iter().map(to_wit_skill).collect()),
        Answer::Skill(entry) => A::Skill(to_wit_skill(entry)),
        Answer::LoadedSkill(contents, entry) => A::LoadedSkill(wit::LoadedSkill {
            contents: contents.into_iter().map(to_wit_item).collect(),
            entry: to_wit_skill(entry),
        }),
        Answer::Tasks(list) => A::Tasks(
            list.into_iter()
                .map(|t| wit::ListedTask {
                    server: t.server,
                    task_id: t.task_id,
                    status: t.status,
                    status_message: t.status_message,
                    created_at: t.created_at,
                    last_updated_at: t.last_updated_at,
                    ttl: t.ttl,
                    poll_interval: t.poll_interval,
                })
                .collect(),
        ),
    }
}

/// The export's view of an event; `None` for the ones the gateway keeps to itself.
fn to_wit_event(e: Event) -> Option<wit::Event> {
    Some(match e {
        Event::Status(s) => wit::Event::Status(to_wit_status(s)),
        Event::ToolsChanged(s) => wit::Event::ToolsChanged(s),
        Event::Warning(w) => wit::Event::Warning(w),
        Event::Log(LogEntry {
            server,
            level,
            message,
        }) => wit::Event::Log(wit::LogEntry {
            server,
            level,
            message,
        }),
        Event::InputRequested(InputRequest {
            id,
            server,
            call,
            tool,
            message,
            url: Some(url),
            ..
        }) => wit::Event::UrlElicitationRequested(wit::UrlElicitationRequest {
            id,
            server,
            call,
            tool,
            message,
            url: url.url,
            elicitation_id: url.elicitation_id,
        }),
        Event::InputRequested(InputRequest {
            id,
            server,
            call,
            tool,
            sampling: Some(params),
            ..
        }) => wit::Event::SamplingRequested(wit::SamplingRequest {
            id,
            server,
            call,
            tool,
            params,
        }),
        Event::InputRequested(InputRequest {
            id,
            server,
            call,
            tool,
            message,
            requested_schema,
            approval,
            sampling: None,
            url: None,
        }) => wit::Event::InputRequested(wit::InputRequest {
            id,
            server,
            call,
            tool,
            message,
            requested_schema,
            approval: approval.map(|a| wit::ApprovalRequest {
                rule: a.rule,
                arguments: a.arguments,
            }),
        }),
        Event::InputWithdrawn(id) => wit::Event::InputWithdrawn(id),
        Event::Audit(r) => wit::Event::Audit(wit::AuditRecord {
            call: r.call,
            server: r.server,
            tool: r.tool,
            profile: r.profile,
            decision: r.decision,
            rule: r.rule,
            approval: r.approval,
            outcome: r.outcome,
            duration_ms: r.duration_ms,
            arguments: r.arguments,
        }),
        Event::Progress(_) => return None,
        Event::ResourceUpdated(u) => wit::Event::ResourceUpdated(wit::ResourceUpdate {
            server: u.server,
            uri: u.uri,
        }),
        Event::ResourcesChanged(s) => wit::Event::ResourcesChanged(s),
        Event::PromptsChanged(s) => wit::Event::PromptsChanged(s),
        Event::TaskStatus(server, s) => wit::Event::TaskStatus(wit::TaskStatus {
            server,
            call: s.call,
            tool: s.tool,
            task_id: s.task_id,
            status: s.status,
            message: s.message,
        }),
        Event::ToolChanged(c) => wit::Event::ToolChanged(wit::ToolChange {
            reason: c.reason(),
            server: c.server,
            tool: c.tool,
            name: c.name,
            changed: c.changed,
            policy: c.policy.as_str().to_string(),
        }),
        Event::CallCounted(c) => wit::Event::CallCounted(wit::CallCount {
            key: c.key,
            names: c.names.map(|n| wit::CountedTool {
                server: n.server,
                tool: n.tool,
            }),
            outcome: to_wit_outcome(c.outcome),
            duration_ms: c.duration_ms,
        }),
    })
}

fn to_wit_outcome(o: CallOutcome) -> wit::CallOutcome {
    match o {
        CallOutcome::Ok => wit::CallOutcome::Ok,
        CallOutcome::ToolError => wit::CallOutcome::ToolError,
        CallOutcome::UnknownTool => wit::CallOutcome::UnknownTool,
        CallOutcome::InvalidArguments => wit::CallOutcome::InvalidArguments,
        CallOutcome::ServerUnavailable => wit::CallOutcome::ServerUnavailable,
        CallOutcome::Timeout => wit::CallOutcome::Timeout,
        CallOutcome::Cancelled => wit::CallOutcome::Cancelled,
        CallOutcome::Protocol => wit::CallOutcome::Protocol,
        CallOutcome::Denied => wit::CallOutcome::Denied,
    }
}

fn to_wit_signal(s: Signal) -> types::DownstreamSignal {
    match s {
        Signal::Message { target, text } => {
            types::DownstreamSignal::Message(types::DownstreamMessage {
                target: match target {
                    DownstreamTarget::Exchange(x) => types::DownstreamTarget::Exchange(x),
                    DownstreamTarget::Session(x) => types::DownstreamTarget::Session(x),
                },
                text,
            })
        }
        Signal::End { exchange, status } => {
            types::DownstreamSignal::End(types::ExchangeEnd { exchange, status })
        }
        Signal::SessionOpened { exchange, session } => {
            types::DownstreamSignal::SessionOpened(types::SessionOpened {
                exchange,
                session,
                answer_headers: super::session_headers(session),
            })
        }
    }
}

pub(super) fn take_signals(g: &mut Gateway) -> Vec<types::DownstreamSignal> {
    g.take_signals().into_iter().map(to_wit_signal).collect()
}

impl wit::Guest for super::Component {
    fn load_config(origin: String, text: String) -> Result<Vec<wit::ConfigIssue>, String> {
        with_both(|m, g| {
            let issues = m.load_config(&origin, &text)?;
            g.configure();
            Ok(issues)
        })
        .map(|issues| issues.into_iter().map(to_wit_issue).collect())
    }

    fn reload_config(origin: String, text: String) -> Result<wit::ReloadReport, String> {
        with_both(|m, g| {
            let report = m.reload_config(&origin, &text)?;
            g.configure();
            Ok(report)
        })
        .map(to_wit_reload_report)
    }

    fn load_claude_settings(origin: String, text: String) -> Vec<wit::ConfigIssue> {
        with(|m| m.load_claude_settings(&origin, &text))
            .into_iter()
            .map(to_wit_issue)
            .collect()
    }

    fn enable_input_requests() {
        with(Manager::enable_input_requests);
    }

    fn enable_sampling() {
        with(Manager::enable_sampling);
    }

    fn enable_url_elicitation() {
        with(Manager::enable_url_elicitation);
    }

    fn enable_approvals() {
        with(Manager::enable_approvals);
    }

    fn enable_call_counts() {
        with(Manager::enable_call_counts);
    }

    fn set_options(options: wit::EmbedderOptions) {
        let options = crate::manager::EmbedderOptions {
            max_result_bytes: options.max_result_bytes,
            inline_media: options.inline_media,
            audit: options.audit,
            audit_arguments: options.audit_arguments,
        };
        with(|m| m.set_options(options));
    }

    fn set_roots(roots: Option<Vec<wit::Root>>) -> Result<(), String> {
        let roots = roots
            .map(|roots| crate::roots::from_embedder(roots.into_iter().map(|r| (r.uri, r.name))))
            .transpose()?;
        with(|m| m.set_roots(roots));
        Ok(())
    }

    fn audit_file() -> Result<Option<types::Template>, String> {
        with(|m| m.audit_file().map(String::from))
            .map(|written| template(&written, "audit.file"))
            .transpose()
    }

    fn start() {
        with(Manager::start);
    }

    fn servers() -> Vec<wit::ServerStatus> {
        with(|m| m.servers())
            .into_iter()
            .map(to_wit_status)
            .collect()
    }

    fn tools(start: u32, max: u32) -> Vec<wit::ToolInfo> {
        with(|m| {
            let entries = m.tool_entries();
            let start = (start as usize).min(entries.len());
            let end = start.saturating_add(max as usize).min(entries.len());
            entries[start..end].iter().map(to_wit_tool).collect()
        })
    }

    fn start_call(
        tool: String,
        arguments: String,
        options: wit::CallOptions,
    ) -> Result<u64, wit::CallError> {
        let profile = options.profile;
        let options = CallOptions {
            timeout_ms: options.timeout_ms,
            task: options.task,
            ..CallOptions::default()
        };
        with(|m| m.start_call_as(&tool, &arguments, options, profile.as_deref()))
            .map_err(to_wit_call_error)
    }

    fn adapted_tools(dialect: String, start: u32, max: u32) -> Result<wit::AdaptedPage, String> {
        let dialect: Dialect = dialect.parse().map_err(|e: UnknownDialect| e.to_string())?;
        with(|m| {
            let adaptation = m.adapted_tools(dialect);
            let entries = m.tool_entries();
            let start = (start as usize).min(entries.len());
            let end = start.saturating_add(max as usize).min(entries.len());
            let page = entries[start..end].iter().map(|e| e.tool.name.as_str());
            Ok(to_wit_adapted_page(&adaptation, page))
        })
    }

    fn start_adapted_call(
        dialect: String,
        tool: String,
        arguments: String,
        options: wit::CallOptions,
    ) -> Result<u64, wit::CallError> {
        let dialect: Dialect = dialect
            .parse()
            .map_err(|e: UnknownDialect| wit::CallError::InvalidArguments(e.to_string()))?;
        let profile = options.profile;
        let options = CallOptions {
            timeout_ms: options.timeout_ms,
            task: options.task,
            ..CallOptions::default()
        };
        with(|m| m.start_adapted_call_as(dialect, &tool, &arguments, options, profile.as_deref()))
            .map_err(to_wit_call_error)
    }

    fn cancel(call: u64) {
        with(|m| m.cancel(call));
    }

    fn start_request(
        server: Option<String>,
        request: wit::ServerRequest,
        options: wit::CallOptions,
    ) -> Result<u64, wit::CallError> {
        let request = match request {
            wit::ServerRequest::ListResources => Request::ListResources,
            wit::ServerRequest::ListResourceTemplates => Request::ListResourceTemplates,
            wit::ServerRequest::ReadResource(uri) => Request::ReadResource { uri },
            wit::ServerRequest::ListPrompts => Request::ListPrompts,
            wit::ServerRequest::GetPrompt(p) => Request::GetPrompt {
                name: p.name,
                arguments: p.arguments,
            },
            wit::ServerRequest::Complete(params) => Request::Complete { params },
            wit::ServerRequest::SetLogLevel(level) => Request::SetLogLevel { level },
            wit::ServerRequest::SubscribeResource(uri) => Request::Subscribe { uri },
            wit::ServerRequest::UnsubscribeResource(uri) => Request::Unsubscribe { uri },
            wit::ServerRequest::ListSkills => Request::ListSkills,
            wit::ServerRequest::GetSkill(uri) => Request::GetSkill { uri },
            wit::ServerRequest::LoadSkill(skill) => Request::LoadSkill { skill },
            wit::ServerRequest::ReadSkillFile(f) => Request::ReadSkillFile {
                skill: f.skill,
                file: f.file,
            },
            wit::ServerRequest::ListTasks => Request::ListTasks,
        };
        let options = CallOptions {
            timeout_ms: options.timeout_ms,
            task: options.task,
            ..CallOptions::default()
        };
        let call = with(|m| m.start_request(server.as_deref(), request.clone(), options))
            .map_err(to_wit_call_error)?;
        ASKED.0.borrow_mut().insert(call, (request, server));
        Ok(call)
    }

    fn wait(timeout_ms: u64) -> wit::Turn {
        let (finished, events, downstream) = with_both(|m, g| {
            // Work the gateway can do now (a batch's rest, held requests) does not
            // wait for anything else; an approval that stops waiting wakes it.
            let timeout_ms = match g.next_deadline() {
                _ if g.busy(m) => 0,
                Some(due) => timeout_ms.min(due.saturating_sub(m.platform().now_ms())),
                None => timeout_ms,
            };
            let (finished, events) = (m.wait(timeout_ms), m.events());
            // The gateway takes its own calls' ends and events.
            let (finished, events) = g.absorb(m, finished, events);
            (finished, events, take_signals(g))
        });
        wit::Turn {
            finished: finished.into_iter().map(to_wit_finished).collect(),
            events: events.into_iter().filter_map(to_wit_event).collect(),
            downstream,
        }
    }

    fn events() -> Vec<wit::Event> {
        with(Manager::events)
            .into_iter()
            .filter_map(to_wit_event)
            .collect()
    }

    fn answer_input(id: u64, answer: wit::InputAnswer) -> Result<(), String> {
        let answer = match answer {
            wit::InputAnswer::Accept(content) => InputAnswer::Accept(content),
            wit::InputAnswer::Decline => InputAnswer::Decline,
            wit::InputAnswer::Cancel => InputAnswer::Cancel,
        };
        // The gateway's approvals of its clients' calls are offered to the host
        // too; the rest are the manager's.
        with_both(|m, g| {
            g.answer_approval(m, id, &answer)
                .unwrap_or_else(|| m.answer_input(id, &answer))
        })
    }

    fn shutdown() {
        with(Manager::shutdown);
    }

    fn reconnect(server: String) -> Result<(), String> {
        with(|m| m.reconnect(&server))
    }

    fn describe_config(
        origin: String,
        text: String,
    ) -> Result<Vec<wit::ServerDescription>, String> {
        Ok(crate::config::describe::describe(&origin, &text)?
            .into_iter()
            .map(to_wit_description)
            .collect())
    }
}

/// A described entry as the WIT carries it: its strings as templates.
fn to_wit_description(d: Description) -> wit::ServerDescription {
    let unreadable = |why: String| {
        wit::ServerReach::Unreadable(wit::UnreadableEntry {
            written: String::new(),
            why,
        })
    };
    let reach = match d.reach {
        Reach::Loaded(endpoint, oauth) => match &endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
                sandbox,
            } => match to_wit_stdio(command, args, env, cwd.as_deref(), sandbox.as_ref()) {
                Ok(stdio) => wit::ServerReach::Stdio(stdio),
                Err(why) => unreadable(why),
            },
            Endpoint::Http { url, headers } | Endpoint::Sse { url, headers } => {
                match to_wit_http(url, headers) {
                    Ok(http) => wit::ServerReach::Remote(wit::RemoteDescription {
                        transport: endpoint.kind().into(),
                        endpoint: http,
                        oauth: to_wit_oauth(*oauth),
                    }),
                    Err(why) => unreadable(why),
                }
            }
        },
        Reach::Unreadable { written, why } => {
            wit::ServerReach::Unreadable(wit::UnreadableEntry { written, why })
        }
    };
    wit::ServerDescription {
        name: d.name,
        enabled: d.enabled,
        reach,
        variables: d.variables,
    }
}

/// A stdio endpoint as the WIT carries it, its strings as templates.
pub(super) fn to_wit_stdio(
    command: &str,
    args: &[String],
    env: &[Pair],
    cwd: Option<&str>,
    sandbox: Option<&crate::sandbox::Sandbox>,
) -> Result<types::StdioEndpoint, String> {
    Ok(types::StdioEndpoint {
        command: template(command, "command")?,
        args: args
            .iter()
            .enumerate()
            .map(|(i, a)| template(a, &format!("args[{i}]")))
            .collect::<Result<_, _>>()?,
        cwd: cwd.map(|c| template(c, "cwd")).transpose()?,
        env: to_wit_pairs(env, "env")?,
        sandbox: sandbox.map(to_wit_sandbox).transpose()?,
    })
}

/// An HTTP or SSE endpoint as the WIT carries it, its strings as templates.
pub(super) fn to_wit_http(url: &str, headers: &[Pair]) -> Result<types::HttpEndpoint, String> {
    Ok(types::HttpEndpoint {
        url: template(url, "url")?,
        headers: to_wit_pairs(headers, "headers")?,
    })
}

fn to_wit_pairs(pairs: &[Pair], field: &str) -> Result<Vec<types::TemplatePair>, String> {
    pairs
        .iter()
        .map(|p| {
            Ok(types::TemplatePair {
                name: p.name.clone(),
                value: template(&p.value, &format!("{field}.{}", p.name))?,
            })
        })
        .collect()
}

fn to_wit_sandbox(s: &crate::sandbox::Sandbox) -> Result<types::Sandbox, String> {
    use crate::sandbox::Network;
    let paths = |key: &str, list: &[String]| {
        list.iter()
            .enumerate()
            .map(|(i, p)| template(p, &format!("sandbox.{key}[{i}]")))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(types::Sandbox {
        read: paths("read", &s.read)?,
        write: paths("write", &s.write)?,
        network: match &s.network {
            Network::None => types::NetworkGrant::None,
            Network::All => types::NetworkGrant::All,
            Network::Ports { connect, bind } => types::NetworkGrant::Ports(types::PortGrant {
                connect: connect.clone(),
                bind: bind.clone(),
            }),
        },
        env: s.env.clone(),
        require: s.require,
    })
}

fn to_wit_oauth(o: OAuthFields) -> wit::OauthFields {
    let t =
        |value: Option<String>, field: &str| value.map(|v| template(&v, &format!("oauth.{field}")));
    wit::OauthFields {
        client_secret: t(o.client_secret, "clientSecret"),
        private_key_file: t(o.private_key_file, "privateKeyFile"),
        private_key: t(o.private_key, "privateKey"),
        idp_id_token: t(o.idp_id_token, "idpIdToken"),
        idp_token_endpoint: t(o.idp_token_endpoint, "idpTokenEndpoint"),
        idp_issuer: t(o.idp_issuer, "idpIssuer"),
        idp_client_secret: t(o.idp_client_secret, "idpClientSecret"),
        identity_token_file: t(o.identity_token_file, "identityTokenFile"),
        identity_token: t(o.identity_token, "identityToken"),
        client_id: o.client_id,
        callback_port: o.callback_port,
        scopes: o.scopes,
        client_metadata_url: o.client_metadata_url,
        auth_server_metadata_url: o.auth_server_metadata_url,
        grant_type: o.grant_type,
        key_id: o.key_id,
        algorithm: o.algorithm,
        idp_client_id: o.idp_client_id,
    }
}

/// `text` as a WIT template: the `${VAR}` grammar is parsed in the guest
/// ([`crate::variables`]), and the host only looks the names up. `field` names
/// it in errors. Here because both components (`component`, `stock::component`)
/// share this file.
pub(super) fn template(text: &str, field: &str) -> Result<types::Template, String> {
    use crate::variables::Part;
    let parts = crate::variables::parse(text, field)?
        .into_iter()
        .map(|part| match part {
            Part::Literal(text) => types::TemplatePart::Literal(text),
            Part::Variable { name, fallback } => {
                types::TemplatePart::Variable(types::VariableReference { name, fallback })
            }
        })
        .collect();
    Ok(types::Template {
        configured: text.to_owned(),
        parts,
    })
}
