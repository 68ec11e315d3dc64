//! Resources, prompts, completions and log levels: what servers offer beyond
//! tools, through [`Runtime`].
//!
//! Each method is one `registry.start-request` that completes like a call
//! (dropping its future cancels it). A resource is named by its server and the
//! server's own URI, a prompt by its server and its own name: lists carry the
//! `server` of every item, and a prompt also its `registry_name`
//! (`mcp__{server}__{prompt}`, made as tool names are). A list with no server
//! asks every connected server that offers it; a read with no server is
//! answered by the first server (in configuration order) that has the URI.
//! Subscriptions ([`Runtime::subscribe_resource`]) report changes as events.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use super::Runtime;
use crate::bindings::registry;
use crate::driver::Job;
use crate::types::{CallError, CallResult};

/// One resource a server lists (`resources/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The configured server that lists it.
    pub server: String,
    /// Its URI, as its server knows it.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Its `annotations`, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// One resource template a server lists (`resources/templates/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The configured server that lists it.
    pub server: String,
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One item of a `resources/read` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI of this item.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text item (or mcpbox's note, for an item written to a
    /// file: see [`ResourceContents::file`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64, for a blob item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// `_meta`, as sent (or mcpbox's `"mcpbox/file"`).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ResourceContents {
    /// Where mcpbox wrote this item because it was over the output limit: the
    /// file's URI, when it was.
    pub fn file(&self) -> Option<&str> {
        self.meta.as_ref()?.get("mcpbox/file")?.get("uri")?.as_str()
    }
}

/// A `resources/read` result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceRead {
    /// Its items.
    pub contents: Vec<ResourceContents>,
    /// The text items joined with "\n".
    pub text: String,
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// One prompt a server lists (`prompts/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The configured server that lists it.
    pub server: String,
    /// `mcp__{server}__{prompt}`, made as tool names are.
    pub registry_name: String,
    /// Its own name on its server.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// "user" or "assistant".
    pub role: String,
    /// Its content block, as sent.
    pub content: Value,
}

/// A `prompts/get` result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GetPrompt {
    /// What the prompt is, when the server says.
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
    /// The text blocks of the messages joined with "\n".
    pub text: String,
}

/// A `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompletionValues {
    /// The values, best first (at most 100).
    pub values: Vec<String>,
    /// How many there are in all, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// A malformed result: the guest passed on what the server sent, and it does
/// not have the shape MCP gives it.
fn malformed(what: &str, e: serde_json::Error) -> CallError {
    CallError::Protocol(format!("{what}: the server sent a malformed result ({e})"))
}

impl Runtime {
    async fn request(
        &self,
        server: Option<&str>,
        request: registry::ServerRequest,
        timeout: Option<Duration>,
    ) -> Result<CallResult, CallError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Request {
            server: server.map(String::from),
            request,
            timeout,
            reply,
        })
        .map_err(CallError::Runtime)?;
        match answer.await {
            Ok(outcome) => outcome.map(CallResult::from),
            Err(_) => Err(CallError::Runtime(self.stop_reason())),
        }
    }

    async fn list<T: serde::de::DeserializeOwned>(
        &self,
        server: Option<&str>,
        request: registry::ServerRequest,
        what: &str,
    ) -> Result<Vec<T>, CallError> {
        let result = self.request(server, request, None).await?;
        serde_json::from_str(result.content.get()).map_err(|e| malformed(what, e))
    }

    /// The resources of `server`, or of every server that offers them (all
    /// pages).
    pub async fn list_resources(&self, server: Option<&str>) -> Result<Vec<Resource>, CallError> {
        self.list(
            server,
            registry::ServerRequest::ListResources,
            "resources/list",
        )
        .await
    }

    /// The resource templates of `server`, or of every server that offers them;
    /// malformed templates are left out with a warning event.
    pub async fn list_resource_templates(
        &self,
        server: Option<&str>,
    ) -> Result<Vec<ResourceTemplate>, CallError> {
        self.list(
            server,
            registry::ServerRequest::ListResourceTemplates,
            "resources/templates/list",
        )
        .await
    }

    /// Reads `uri` from `server`, or from the first server that has it. Items
    /// past the output limit are in host files ([`ResourceContents::file`]).
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<ResourceRead, CallError> {
        let request = registry::ServerRequest::ReadResource(uri.to_string());
        let result = self.request(server, request, None).await?;
        let contents = serde_json::from_str(result.content.get())
            .map_err(|e| malformed(&format!("resources/read {uri}"), e))?;
        Ok(ResourceRead {
            contents,
            text: result.text,
        })
    }

    /// The prompts of `server`, or of every server that offers them.
    pub async fn list_prompts(&self, server: Option<&str>) -> Result<Vec<Prompt>, CallError> {
        self.list(server, registry::ServerRequest::ListPrompts, "prompts/list")
            .await
    }

    /// Gets prompt `name` (its own name) of `server`, filled in with `arguments`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<GetPrompt, CallError> {
        let arguments =
            (!arguments.is_empty()).then(|| serde_json::to_string(arguments).unwrap_or_default());
        let request = registry::ServerRequest::GetPrompt(registry::PromptRequest {
            name: name.to_string(),
            arguments,
        });
        let result = self.request(Some(server), request, None).await?;
        let what = format!("prompts/get {name}");
        let messages =
            serde_json::from_str(result.content.get()).map_err(|e| malformed(&what, e))?;
        let description = result
            .structured_value()
            .map_err(|e| malformed(&what, e))?
            .and_then(|v| v.get("description")?.as_str().map(String::from));
        Ok(GetPrompt {
            description,
            messages,
            text: result.text,
        })
    }

    /// Asks `server` to complete an argument (`completion/complete`): `params`
    /// is the request's params (`ref`, `argument`, maybe `context`).
    pub async fn complete(
        &self,
        server: &str,
        params: &Value,
    ) -> Result<CompletionValues, CallError> {
        let request = registry::ServerRequest::Complete(params.to_string());
        let result = self.request(Some(server), request, None).await?;
        let completion = result.structured_content.ok_or_else(|| {
            CallError::Protocol("completion/complete: no completion in the result".into())
        })?;
        serde_json::from_str(completion.get()).map_err(|e| malformed("completion/complete", e))
    }

    /// Follows the resource `uri` of `server` (`None`: every connected server
    /// that declared `resources.subscribe`; it holds when one of them took it):
    /// each change is an [`Event::ResourceUpdated`](crate::Event::ResourceUpdated).
    /// A 2025 server is sent `resources/subscribe`; a 2026-07-28 one gets the URI
    /// in the `resourceSubscriptions` of its `subscriptions/listen`, and this
    /// returns once the server acknowledged it. The subscription outlives
    /// reconnects: a restarted server is subscribed again. A server that did not
    /// declare `resources.subscribe` is refused with [`CallError::Protocol`].
    #[doc(alias = "resources/subscribe")]
    #[doc(alias = "subscriptions/listen")]
    pub async fn subscribe_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<(), CallError> {
        let request = registry::ServerRequest::SubscribeResource(uri.to_string());
        self.request(server, request, None).await.map(drop)
    }

    /// Stops following the resource `uri` (`resources/unsubscribe`, or a
    /// `subscriptions/listen` without it); `None` as for
    /// [`subscribe_resource`](Self::subscribe_resource).
    #[doc(alias = "resources/unsubscribe")]
    pub async fn unsubscribe_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<(), CallError> {
        let request = registry::ServerRequest::UnsubscribeResource(uri.to_string());
        self.request(server, request, None).await.map(drop)
    }

    /// Sets the lowest level of `notifications/message` log lines `server`
    /// sends (`logging/setLevel`: "debug" … "emergency").
    pub async fn set_log_level(&self, server: &str, level: &str) -> Result<(), CallError> {
        let request = registry::ServerRequest::SetLogLevel(level.to_string());
        self.request(Some(server), request, None).await.map(drop)
    }
}
