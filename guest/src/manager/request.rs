//! One request that is not a tool call, across servers: sent to the server it
//! names or fanned out to every server that offers it, and answered once
//! (see [`crate::client::Request`]). What is particular to resources, prompts
//! and log levels is in [`super::resources`], [`super::prompts`] and
//! [`super::logging`]; completions need nothing more than their server.
//!
//! # Names across servers
//!
//! A resource is named by its server and the server's own URI; a prompt by its
//! server and its own name. Lists carry both: every item of a list gets a
//! `"server"` field (the configured name) added to it, and a prompt a
//! `"registryName"` (`mcp__{server}__{prompt}`, made as tool names are). A request names its
//! server, or none:
//!
//! - a list with no server goes to every connected server that declared the
//!   capability, at once, and completes with every item, servers in
//!   configuration order; a server whose list fails is left out with a warning
//!   (its error is the result only when every server failed);
//! - a read with no server goes to every connected server offering resources,
//!   and the first in configuration order that has the URI answers (so `read
//!   URI` works without knowing the server, and a URI two servers have is read
//!   from the first); when none has it, the error names each server's answer;
//! - a prompt with no server is got as a read is: from the first server that
//!   has it (the gateway, serving names without a server, needs it); so is a
//!   skill's entry (`skills/get`), and when no server has it the request's
//!   arguments are wrong (the extension's `-32602`);
//! - a subscribe (unsubscribe) with no server goes to every connected server
//!   that declared `resources.subscribe`, and holds when one of them took it;
//! - completions and log levels need their server.
//!
//! Requests do not restart a lost server (calls do): a server that is not
//! connected fails them at once with `server-unavailable`.
//!
//! A read's result passes [`crate::output::limit_contents`]: contents past
//! the output limit go to host files, as large tool results do.

use super::prompts::{merge_prompt, merge_skill};
use super::resources::{merge_subscription, template_problem};
use super::*;
use crate::client::Request;

/// Requests in flight, by call handle.
#[derive(Default)]
pub(super) struct Requests {
    /// A request to one server: which, and what it asked.
    single: BTreeMap<u64, (String, Request)>,
    /// A request to several servers, by the handle returned for it.
    fanouts: BTreeMap<u64, Fanout>,
    /// Each part of a fan-out → the handle of the whole.
    parts: BTreeMap<u64, u64>,
    /// The configuration's `logLevel`, sent on connect: nobody waits for the
    /// answer; a refusal is a warning naming the server.
    pub(super) quiet: BTreeMap<u64, String>,
}

/// A server's answer to one part of a fan-out, once it is in.
pub(super) type Answer = Option<Result<CallResult, CallError>>;

/// One request sent to several servers.
struct Fanout {
    request: Request,
    /// The servers asked, in configuration order, with their part's handle and
    /// answer.
    answers: Vec<(String, u64, Answer)>,
}

impl<P: Platform> Manager<P> {
    /// Sends `request` to server `server` (its configured name), or for a list
    /// or a read with `None`, to every server that offers it (see the module
    /// docs). The result arrives through [`Manager::wait`] as the [`FinishedCall`] of the
    /// returned handle (see [`Request`] for what it holds). Errors known at once
    /// return here.
    pub fn start_request(
        &mut self,
        server: Option<&str>,
        request: Request,
        options: CallOptions,
    ) -> Result<u64, CallError> {
        let label = request.method();
        let targets: Vec<usize> = match server {
            Some(name) => {
                let Some(i) = self.slots.iter().position(|s| *s.config.name == *name) else {
                    let known: Vec<&str> = self.slots.iter().map(|s| &*s.config.name).collect();
                    return Err(CallError::ServerUnavailable(format!(
                        "{label}: no server named `{name}` is configured (servers: {})",
                        known.join(", ")
                    )));
                };
                let slot = &self.slots[i];
                let Some(client) = slot
                    .client
                    .as_ref()
                    .filter(|_| slot.state == ServerState::Connected)
                else {
                    return Err(CallError::ServerUnavailable(format!(
                        "{label}: server `{name}` is {}{}",
                        slot.state,
                        slot.error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    )));
                };
                if !client.offers().allow(&request) {
                    return Err(CallError::Protocol(format!(
                        "{label}: server `{name}` does not offer {} (its initialize/discover answer declares no `{}` capability)",
                        request.capability(),
                        request.capability()
                    )));
                }
                vec![i]
            }
            None => {
                if request.list_key().is_none()
                    && !matches!(
                        request,
                        Request::ReadResource { .. }
                            | Request::GetPrompt { .. }
                            | Request::GetSkill { .. }
                            | Request::Subscribe { .. }
                            | Request::Unsubscribe { .. }
                    )
                {
                    return Err(CallError::InvalidArguments(format!(
                        "{label} needs the name of the server to ask"
                    )));
                }
                (0..self.slots.len())
                    .filter(|&i| {
                        let slot = &self.slots[i];
                        slot.state == ServerState::Connected
                            && slot
                                .client
                                .as_ref()
                                .is_some_and(|c| c.offers().allow(&request))
                    })
                    .collect()
            }
        };
        let call = self.calls.take_next();
        let now = self.platform.now_ms();
        if server.is_some() && request.list_key().is_none() {
            let i = targets[0];
            let timeout = options
                .timeout_ms
                .unwrap_or(self.slots[i].config.tool_timeout_ms);
            self.requests.single.insert(
                call,
                (self.slots[i].config.name.to_string(), request.clone()),
            );
            self.send_part(i, call, request, timeout, now);
            return Ok(call);
        }
        if targets.is_empty() {
            if let Some(key) = request.list_key() {
                self.finished.push(FinishedCall {
                    call,
                    outcome: Ok(merge_lists(key, Vec::new()).0),
                });
                return Ok(call);
            }
            return Err(CallError::ServerUnavailable(format!(
                "{label}: no connected server offers {}",
                request.capability()
            )));
        }
        let mut fanout = Fanout {
            request: request.clone(),
            answers: Vec::new(),
        };
        let mut parts = Vec::new();
        for &i in &targets {
            let part = self.calls.take_next();
            fanout
                .answers
                .push((self.slots[i].config.name.to_string(), part, None));
            self.requests.parts.insert(part, call);
            parts.push((i, part));
        }
        self.requests.fanouts.insert(call, fanout);
        for (i, part) in parts {
            let timeout = options
                .timeout_ms
                .unwrap_or(self.slots[i].config.tool_timeout_ms);
            self.send_part(i, part, request.clone(), timeout, now);
        }
        Ok(call)
    }

    /// The optional capabilities server `server` declared, while it is connected.
    pub fn offers(&self, server: &str) -> Option<crate::client::Offers> {
        let slot = self.slots.iter().find(|s| *s.config.name == *server)?;
        (slot.state == ServerState::Connected)
            .then(|| slot.client.as_ref().map(Client::offers))
            .flatten()
    }

    fn send_part(&mut self, i: usize, call: u64, request: Request, timeout: u64, now: u64) {
        if let Some(client) = self.slots[i].client.as_mut() {
            client.start_request(call, request, timeout, now);
        }
        self.calls.route(call, i);
        self.flush(i);
        self.process(i);
        self.sync_statuses();
    }

    /// Cancels a fan-out's parts; false when `call` is not a fan-out.
    pub(super) fn cancel_fanout(&mut self, call: u64) -> bool {
        let Some(fanout) = self.requests.fanouts.get(&call) else {
            return false;
        };
        let parts: Vec<u64> = fanout
            .answers
            .iter()
            .filter(|(_, _, answer)| answer.is_none())
            .map(|(_, part, _)| *part)
            .collect();
        for part in parts {
            self.cancel(part);
        }
        true
    }

    /// A finished call on its way out of `wait`: a part of a fan-out is kept until
    /// the whole is in (`None` until then); a read's contents are limited.
    pub(super) fn finish_request(&mut self, c: FinishedCall) -> Option<FinishedCall> {
        if let Some(server) = self.requests.quiet.remove(&c.call) {
            if let Err(e) = c.outcome {
                self.events.push(Event::Warning(format!(
                    "server `{server}`: the configuration's logLevel was not applied: {e}"
                )));
            }
            return None;
        }
        if let Some((server, request)) = self.requests.single.remove(&c.call) {
            // The gateway's clients get contents whole: files on this host
            // would be out of their reach (the host's message cap still holds).
            let Request::ReadResource { uri } = &request else {
                return Some(c);
            };
            if self.serving {
                return Some(c);
            }
            let Ok(result) = c.outcome else {
                return Some(c);
            };
            let result = self.limit_read(result, &server, uri, c.call);
            return Some(FinishedCall {
                call: c.call,
                outcome: Ok(result),
            });
        }
        let Some(whole) = self.requests.parts.remove(&c.call) else {
            return Some(c);
        };
        let fanout = self.requests.fanouts.get_mut(&whole)?;
        if let Some(answer) = fanout.answers.iter_mut().find(|a| a.1 == c.call) {
            answer.2 = Some(c.outcome);
        }
        if fanout.answers.iter().any(|a| a.2.is_none()) {
            return None;
        }
        let fanout = self.requests.fanouts.remove(&whole)?;
        let outcome = self.merge(whole, fanout);
        Some(FinishedCall {
            call: whole,
            outcome,
        })
    }

    /// The one result of a fan-out whose every part is in.
    fn merge(&mut self, call: u64, fanout: Fanout) -> Result<CallResult, CallError> {
        let label = fanout.request.method();
        let answers: Vec<(String, Result<CallResult, CallError>)> = fanout
            .answers
            .into_iter()
            .map(|(server, _, answer)| (server, answer.unwrap_or(Err(CallError::Cancelled))))
            .collect();
        if answers
            .iter()
            .all(|(_, a)| matches!(a, Err(CallError::Cancelled)))
        {
            return Err(CallError::Cancelled);
        }
        match &fanout.request {
            Request::Subscribe { uri } | Request::Unsubscribe { uri } => {
                return merge_subscription(label, uri, answers);
            }
            Request::GetPrompt { name, .. } => return merge_prompt(name, answers),
            Request::GetSkill { uri } => return merge_skill(uri, answers),
            Request::ReadResource { uri } => return self.merge_read(call, uri, answers),
            _ => {}
        }
        let key = fanout.request.list_key().unwrap_or("resources");
        let mut lists = Vec::new();
        let mut errors = Vec::new();
        for (server, answer) in answers {
            match answer {
                Ok(result) => {
                    let segment = self
                        .slots
                        .iter()
                        .find(|s| *s.config.name == *server)
                        .map_or_else(|| server.clone(), |s| s.config.name_segment().to_string());
                    lists.push((server, segment, result.content));
                }
                Err(e) => errors.push(e),
            }
        }
        if lists.is_empty() {
            if errors.len() == 1 {
                return Err(errors.remove(0));
            }
            let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
            return Err(CallError::Protocol(format!(
                "{label}: every server failed ({})",
                all.join("; ")
            )));
        }
        for e in errors {
            self.events
                .push(Event::Warning(format!("{e}; the list leaves it out")));
        }
        let (result, warnings) = merge_lists(key, lists);
        self.events.extend(warnings.into_iter().map(Event::Warning));
        Ok(result)
    }
}

/// Every server's items in one list, each with `"server"` added (and a
/// prompt its `"registryName"`, `mcp__{server}__{prompt}` as tools are named);
/// `text` has one line per item (`server<TAB>uri`, or `server<TAB>name`).
/// `lists` holds (server, its name segment, its list).
fn merge_lists(key: &str, lists: Vec<(String, String, String)>) -> (CallResult, Vec<String>) {
    use serde_json::Value;
    let field = match key {
        "resources" => "uri",
        "resourceTemplates" => "uriTemplate",
        "skills" => "uri",
        "tasks" => "taskId",
        _ => "name",
    };
    let mut items = Vec::new();
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for (server, segment, content) in lists {
        let list: Vec<Value> = serde_json::from_str(&content).unwrap_or_default();
        for item in list {
            let Value::Object(mut map) = item else {
                warnings.push(format!(
                    "server `{server}` listed an item of `{key}` that is not an object; skipped"
                ));
                continue;
            };
            if !map.get(field).is_some_and(Value::is_string) {
                warnings.push(format!(
                    "server `{server}` listed an item of `{key}` without a string `{field}`; skipped"
                ));
                continue;
            }
            let id = map.get(field).and_then(Value::as_str).unwrap_or_default();
            if key == "resourceTemplates"
                && let Some(why) = template_problem(id)
            {
                warnings.push(format!(
                    "server `{server}` listed resource template {id:?}, which is not a URI template ({why}); skipped"
                ));
                continue;
            }
            lines.push(format!("{server}\t{id}"));
            if key == "prompts" {
                let name = crate::naming::tool_name(&segment, id);
                map.insert("registryName".into(), Value::String(name));
            }
            map.insert("server".into(), Value::String(server.clone()));
            items.push(Value::Object(map));
        }
    }
    let result = CallResult {
        is_error: false,
        text: lines.join("\n"),
        content: Value::Array(items).to_string(),
        structured_content: None,
    };
    (result, warnings)
}
