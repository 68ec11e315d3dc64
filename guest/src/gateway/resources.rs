//! Resources, prompts, completions and skills, aggregated from every upstream
//! server and passed through (`resources/list`, `resources/templates/list`,
//! `resources/read`, `prompts/list`, `prompts/get`, `completion/complete`,
//! `skills/list`, `skills/get`, `resources/directory/read`).
//!
//! # Names
//!
//! - **Resources keep their URIs**: a client's `@` mention or a link in a tool
//!   result must still name the resource. Lists hold every server's resources
//!   (configuration order, every upstream page), served in pages of the
//!   gateway's page size with a `nextCursor`; a read goes to the first server, in
//!   configuration order, that has the URI (see [`crate::manager`]'s requests).
//! - **Prompts are named as tools are**: `{server}__{prompt}` in the `prefixed`
//!   naming, so two servers' `review` prompts stay apart and `prompts/get` knows
//!   the server from the name; with `conditional`, a prompt's own name where no
//!   other server lists one of that name. A name the gateway has not served
//!   (a client may get a prompt without listing) is read as
//!   `{server}__{prompt}`, and otherwise, with `conditional`, asked of every
//!   server offering prompts: the first in configuration order that has it
//!   answers.
//! - **Skills keep their URIs**, as resources do (`skill://…/SKILL.md` is a
//!   resource URI, and a skill's files are read with `resources/read`, which
//!   goes to the first server that has the URI). `skills/list` holds every
//!   server's skills, paged as the other lists; `skills/get` goes to the
//!   server that listed the URI (known from the lists served), else to every
//!   server offering skills, the first that has it answering; a URI no server
//!   serves is `-32602`. The gateway checks no digest: entries and files pass
//!   through unchanged, for the client to verify. `resources/directory/read`
//!   (declared as `directoryRead`) goes to the server that listed a skill in
//!   or under that directory, else to every server declaring `directoryRead`,
//!   their children merged; served in pages as lists are.
//! - **Completions** follow their reference: a `ref/prompt` by its served name,
//!   a `ref/resource` by the server that listed the template (known from the last
//!   `resources/templates/list` served), else the first server offering
//!   completions.
//!
//! Permission rules name tools: they do not filter resources or prompts (a
//! server a profile cannot see at all is still listed); see docs/gateway.md.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::client::{CallError, CallOptions, CallResult, FinishedCall, Request};
use crate::jsonrpc::INVALID_PARAMS;
use crate::manager::Manager;
use crate::methods;
use crate::transport::Platform;

use super::exposure::Naming;
use super::lifecycle::Refusal;
use super::{Gateway, Origin, json_text};

/// JSON-RPC: the resource does not exist (the MCP spec's code).
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A downstream request waiting for the manager.
#[derive(Debug)]
pub(super) struct DownRequest {
    pub(super) origin: Origin,
    /// The method asked, which says how to answer.
    method: &'static str,
    /// For a list: where the page starts (its `cursor`).
    start: usize,
}

impl Gateway {
    /// `resources/list`, `resources/templates/list`, `resources/read`,
    /// `prompts/list`, `prompts/get`, `completion/complete`, `skills/list`,
    /// `skills/get`, `resources/directory/read`; false when `method` is none
    /// of them.
    pub(super) fn beyond_tools<P: Platform>(
        &mut self,
        m: &mut Manager<P>,
        origin: &Origin,
        method: &str,
        params: &Value,
    ) -> bool {
        let invalid = |why: String| Refusal::new(INVALID_PARAMS, format!("Invalid params: {why}"));
        let known = [
            methods::RESOURCES_LIST,
            methods::RESOURCES_TEMPLATES_LIST,
            methods::RESOURCES_READ,
            methods::PROMPTS_LIST,
            methods::PROMPTS_GET,
            methods::COMPLETION_COMPLETE,
            methods::RESOURCES_SUBSCRIBE,
            methods::RESOURCES_UNSUBSCRIBE,
            methods::SKILLS_LIST,
            methods::SKILLS_GET,
            methods::RESOURCES_DIRECTORY_READ,
        ];
        if !known.contains(&method) {
            return false;
        }
        // The 2026-07-28 revision subscribes with `subscriptions/listen` only.
        let subscription = [methods::RESOURCES_SUBSCRIBE, methods::RESOURCES_UNSUBSCRIBE];
        if origin.stateless.is_some() && subscription.contains(&method) {
            return false;
        }
        // A list's page: the cursor is where it starts, as this gateway wrote it.
        let lists = [
            methods::RESOURCES_LIST,
            methods::RESOURCES_TEMPLATES_LIST,
            methods::PROMPTS_LIST,
            methods::SKILLS_LIST,
            methods::RESOURCES_DIRECTORY_READ,
        ];
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(c) if lists.contains(&method) => {
                match c.as_str().and_then(|c| c.parse::<usize>().ok()) {
                    Some(start) => start,
                    None => {
                        let why = format!("{method}: {c} is not a cursor this server gave");
                        self.answer(origin, Err(invalid(why)));
                        return true;
                    }
                }
            }
            Some(_) => 0,
        };
        // As `tools/list` is: a client that asks at once gets every server's answer.
        if m.starting() {
            self.held.hold(super::held::HeldRequest::Other(
                origin.clone(),
                method.to_string(),
                params.clone(),
            ));
            return true;
        }
        let (method, server, request) = match method {
            methods::RESOURCES_SUBSCRIBE => {
                self.subscribe(m, origin, params);
                return true;
            }
            methods::RESOURCES_UNSUBSCRIBE => {
                self.unsubscribe(m, origin, params);
                return true;
            }
            methods::RESOURCES_LIST => (methods::RESOURCES_LIST, None, Request::ListResources),
            methods::RESOURCES_TEMPLATES_LIST => (
                methods::RESOURCES_TEMPLATES_LIST,
                None,
                Request::ListResourceTemplates,
            ),
            methods::RESOURCES_READ => match params.get("uri").and_then(Value::as_str) {
                Some(uri) => (
                    methods::RESOURCES_READ,
                    None,
                    Request::ReadResource { uri: uri.into() },
                ),
                None => {
                    self.answer(
                        origin,
                        Err(invalid("resources/read needs a `uri` string".into())),
                    );
                    return true;
                }
            },
            methods::PROMPTS_LIST => (methods::PROMPTS_LIST, None, Request::ListPrompts),
            methods::SKILLS_LIST => (methods::SKILLS_LIST, None, Request::ListSkills),
            methods::SKILLS_GET => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    self.answer(
                        origin,
                        Err(invalid("skills/get needs a `uri` string".into())),
                    );
                    return true;
                };
                if !m
                    .servers()
                    .iter()
                    .any(|s| m.offers(&s.name).is_some_and(|o| o.skills))
                {
                    let why = format!("no server serves skill {uri}");
                    self.answer(origin, Err(invalid(why)));
                    return true;
                }
                (
                    methods::SKILLS_GET,
                    self.skill_servers.get(uri).cloned(),
                    Request::GetSkill { uri: uri.into() },
                )
            }
            methods::RESOURCES_DIRECTORY_READ => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    let why = "resources/directory/read needs a `uri` string";
                    self.answer(origin, Err(invalid(why.into())));
                    return true;
                };
                let reads = |name: &str| m.offers(name).is_some_and(|o| o.directory_read);
                if !m.servers().iter().any(|s| reads(&s.name)) {
                    let why =
                        format!("no server serves directory {uri}: none declares directoryRead");
                    self.answer(origin, Err(invalid(why)));
                    return true;
                }
                // The server that listed a skill in this directory, or under it.
                let server = self
                    .skill_servers
                    .iter()
                    .find(|(skill, server)| {
                        let dir = skill.strip_suffix("/SKILL.md").unwrap_or(skill);
                        let within = |a: &str, b: &str| {
                            a == b || a.strip_prefix(b).is_some_and(|r| r.starts_with('/'))
                        };
                        reads(server) && (within(dir, uri) || within(uri, dir))
                    })
                    .map(|(_, server)| server.clone());
                (
                    methods::RESOURCES_DIRECTORY_READ,
                    server,
                    Request::ReadDirectory { uri: uri.into() },
                )
            }
            methods::PROMPTS_GET => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let (server, prompt) = match self.prompt_of(m, name) {
                    Some((server, prompt)) => (Some(server), prompt),
                    None if self.options.naming == Naming::Conditional => (None, name.to_string()),
                    None => {
                        self.answer(origin, Err(invalid(format!("unknown prompt {name:?}"))));
                        return true;
                    }
                };
                let arguments = params
                    .get("arguments")
                    .filter(|a| !a.is_null())
                    .map(Value::to_string);
                (
                    methods::PROMPTS_GET,
                    server,
                    Request::GetPrompt {
                        name: prompt,
                        arguments,
                    },
                )
            }
            methods::COMPLETION_COMPLETE => {
                let mut params = params.clone();
                let server = match self.completion_server(m, &mut params) {
                    Ok(server) => server,
                    Err(why) => {
                        self.answer(origin, Err(invalid(why)));
                        return true;
                    }
                };
                if let Some(map) = params.as_object_mut() {
                    map.remove("_meta");
                }
                (
                    methods::COMPLETION_COMPLETE,
                    Some(server),
                    Request::Complete {
                        params: params.to_string(),
                    },
                )
            }
            _ => return false,
        };
        match m.start_request(server.as_deref(), request, CallOptions::default()) {
            Ok(call) => {
                self.requests.insert(
                    call,
                    DownRequest {
                        origin: origin.clone(),
                        method,
                        start,
                    },
                );
            }
            Err(e) => self.answer(origin, Err(refusal(method, e))),
        }
        true
    }

    /// A manager request of the gateway finished.
    pub(super) fn request_done(&mut self, c: FinishedCall) {
        let Some(r) = self.requests.remove(&c.call) else {
            return;
        };
        let outcome = match c.outcome {
            Ok(result) => {
                let mut text = self.result_of(r.method, result, r.start);
                if r.origin.stateless.is_some() && r.method != methods::COMPLETION_COMPLETE {
                    // Caching hints (2026-07-28): the gateway does not pass on
                    // resource or prompt list changes, so nothing may be kept.
                    text.pop();
                    text.push_str(r#","ttlMs":0,"cacheScope":"private"}"#);
                }
                Ok(text)
            }
            Err(CallError::Cancelled) => return self.answer_nothing(&r.origin),
            Err(e) => Err(refusal(r.method, e)),
        };
        self.answer(&r.origin, outcome);
    }

    /// The downstream result for the manager's.
    fn result_of(&mut self, method: &str, result: CallResult, start: usize) -> String {
        match method {
            methods::RESOURCES_LIST => self.served_page("resources", &result.content, "", start),
            methods::RESOURCES_TEMPLATES_LIST => {
                self.served_page("resourceTemplates", &result.content, "uriTemplate", start)
            }
            methods::PROMPTS_LIST => self.served_page("prompts", &result.content, "name", start),
            methods::SKILLS_LIST => self.served_page("skills", &result.content, "skill", start),
            methods::RESOURCES_DIRECTORY_READ => {
                self.served_page("resources", &result.content, "", start)
            }
            methods::SKILLS_GET => format!(r#"{{"skill":{}}}"#, result.content),
            methods::RESOURCES_READ => format!(r#"{{"contents":{}}}"#, result.content),
            // Only the prompt: the upstream's `resultType` and `_meta` are its
            // own era's and its own server's, not the gateway's.
            methods::PROMPTS_GET => {
                let description = result
                    .structured_content
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                    .and_then(|v| v.get("description").cloned())
                    .filter(Value::is_string);
                match description {
                    Some(d) => format!(r#"{{"description":{d},"messages":{}}}"#, result.content),
                    None => format!(r#"{{"messages":{}}}"#, result.content),
                }
            }
            methods::COMPLETION_COMPLETE => format!(
                r#"{{"completion":{}}}"#,
                result
                    .structured_content
                    .unwrap_or_else(|| r#"{"values":[]}"#.into())
            ),
            _ => "{}".into(),
        }
    }

    /// One page of a merged list, from `start`, at most the gateway's page size,
    /// with `nextCursor` (where the next page starts) while items remain. Each
    /// page is cut from the whole list as it is now (every server, every
    /// upstream page), so an item that appears meanwhile may shift the rest.
    fn served_page(&mut self, field: &str, content: &str, key: &str, start: usize) -> String {
        let items: Vec<Value> =
            serde_json::from_str(&self.served_items(content, key)).unwrap_or_default();
        let start = start.min(items.len());
        let end = start
            .saturating_add(self.options.page_size.max(1))
            .min(items.len());
        let mut page = Map::new();
        page.insert(field.into(), Value::Array(items[start..end].to_vec()));
        if end < items.len() {
            page.insert("nextCursor".into(), Value::String(end.to_string()));
        }
        json_text(&page)
    }

    /// A merged list as served: mcpbox's `server` and `registryName` fields
    /// taken off; a prompt renamed `{server}__{prompt}`; a template's server
    /// remembered for completions, a skill's for `skills/get` (`key` says
    /// which field to act on).
    fn served_items(&mut self, content: &str, key: &str) -> String {
        let items: Vec<Map<String, Value>> = serde_json::from_str(content).unwrap_or_default();
        let own = |item: &Map<String, Value>| {
            item.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        if key == "name" {
            for item in &items {
                *counts.entry(own(item)).or_default() += 1;
            }
        }
        let mut served = Vec::with_capacity(items.len());
        for mut item in items {
            let server = match item.remove("server") {
                Some(Value::String(s)) => s,
                _ => String::new(),
            };
            item.remove("registryName");
            match key {
                "name" => {
                    let own = own(&item);
                    let unique = counts.get(&own) == Some(&1);
                    let name = if self.options.naming == Naming::Conditional && unique {
                        own.clone()
                    } else {
                        format!("{server}__{own}")
                    };
                    self.served_prompts.insert(name.clone(), (server, own));
                    item.insert("name".into(), Value::String(name));
                }
                "uriTemplate" => {
                    if let Some(t) = item.get("uriTemplate").and_then(Value::as_str) {
                        self.template_servers.insert(t.to_string(), server);
                    }
                }
                "skill" => {
                    if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                        self.skill_servers.insert(uri.to_string(), server);
                    }
                }
                _ => {}
            }
            served.push(Value::Object(item));
        }
        json_text(&served)
    }

    /// The server and own name of served prompt `name` (`{server}__{prompt}`):
    /// the longest configured server name that prefixes it.
    fn prompt_of<P: Platform>(&self, m: &Manager<P>, name: &str) -> Option<(String, String)> {
        if let Some(served) = self.served_prompts.get(name) {
            return Some(served.clone());
        }
        m.servers()
            .into_iter()
            .filter_map(|s| {
                let rest = name.strip_prefix(s.name.as_str())?.strip_prefix("__")?;
                Some((s.name, rest.to_string()))
            })
            .max_by_key(|(server, _)| server.len())
    }

    /// Which server answers a `completion/complete`; a `ref/prompt`'s name is
    /// put back to the server's own.
    fn completion_server<P: Platform>(
        &self,
        m: &Manager<P>,
        params: &mut Value,
    ) -> Result<String, String> {
        let kind = params
            .pointer("/ref/type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match kind.as_str() {
            "ref/prompt" => {
                let name = params
                    .pointer("/ref/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some((server, own)) = self.prompt_of(m, name) {
                    params["ref"]["name"] = Value::String(own);
                    return Ok(server);
                }
                if self.options.naming != Naming::Conditional {
                    return Err(format!("unknown prompt {name:?}"));
                }
                first_completer(m)
            }
            "ref/resource" => {
                let uri = params
                    .pointer("/ref/uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(server) = self.template_servers.get(uri) {
                    return Ok(server.clone());
                }
                first_completer(m)
            }
            other => Err(format!(
                "completion/complete needs ref.type \"ref/prompt\" or \"ref/resource\", not {other:?}"
            )),
        }
    }
}

/// The first server, in configuration order, that offers completions.
fn first_completer<P: Platform>(m: &Manager<P>) -> Result<String, String> {
    m.servers()
        .into_iter()
        .find(|s| m.offers(&s.name).is_some_and(|o| o.completions))
        .map(|s| s.name)
        .ok_or_else(|| "no server offers completions".into())
}

/// The JSON-RPC error for a request that failed upstream.
fn refusal(method: &str, e: CallError) -> Refusal {
    match e {
        CallError::InvalidArguments(m) => {
            Refusal::new(INVALID_PARAMS, format!("Invalid params: {m}"))
        }
        CallError::Protocol(m) if method == methods::RESOURCES_READ && m.contains("-32002") => {
            Refusal::new(RESOURCE_NOT_FOUND, m)
        }
        CallError::Protocol(m) if m.contains("-32602") => Refusal::new(INVALID_PARAMS, m),
        other => Refusal::new(crate::jsonrpc::INTERNAL_ERROR, other.to_string()),
    }
}
