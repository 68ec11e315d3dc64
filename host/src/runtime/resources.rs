//! Resources through [`Runtime`]: listed (`resources/list`,
//! `resources/templates/list`), read (`resources/read`) and followed
//! (`resources/subscribe`, or `subscriptions/listen` in 2026-07-28). How a
//! request travels is [`super::request`]'s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Runtime;
use super::request::{open_json_opt, unexpected};
use crate::bindings::registry;
use crate::types::CallError;

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

/// The items of a `resources/read` (or a skill's file), as the guest read them.
pub(super) fn contents(
    what: &str,
    items: Vec<registry::ResourceItem>,
) -> Result<Vec<ResourceContents>, CallError> {
    items
        .into_iter()
        .map(|i| {
            Ok(ResourceContents {
                meta: open_json_opt(what, "_meta", i.meta)?,
                uri: i.uri,
                mime_type: i.mime_type,
                text: i.text,
                blob: i.blob,
            })
        })
        .collect()
}

impl Runtime {
    /// The resources of `server`, or of every server that offers them (all
    /// pages).
    pub async fn list_resources(&self, server: Option<&str>) -> Result<Vec<Resource>, CallError> {
        let what = "resources/list";
        let request = registry::ServerRequest::ListResources;
        let (registry::RequestAnswer::Resources(list), _) =
            self.request(server, request, None, what).await?
        else {
            return Err(unexpected(what));
        };
        list.into_iter()
            .map(|r| {
                Ok(Resource {
                    annotations: open_json_opt(what, "annotations", r.annotations)?,
                    server: r.server,
                    uri: r.uri,
                    name: r.name,
                    title: r.title,
                    description: r.description,
                    mime_type: r.mime_type,
                    size: r.size,
                })
            })
            .collect()
    }

    /// The resource templates of `server`, or of every server that offers them;
    /// malformed templates are left out with a warning event.
    pub async fn list_resource_templates(
        &self,
        server: Option<&str>,
    ) -> Result<Vec<ResourceTemplate>, CallError> {
        let what = "resources/templates/list";
        let request = registry::ServerRequest::ListResourceTemplates;
        match self.request(server, request, None, what).await? {
            (registry::RequestAnswer::ResourceTemplates(list), _) => Ok(list
                .into_iter()
                .map(|t| ResourceTemplate {
                    server: t.server,
                    uri_template: t.uri_template,
                    name: t.name,
                    title: t.title,
                    description: t.description,
                    mime_type: t.mime_type,
                })
                .collect()),
            _ => Err(unexpected(what)),
        }
    }

    /// Reads `uri` from `server`, or from the first server that has it. Items
    /// past the output limit are in host files ([`ResourceContents::file`]).
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<ResourceRead, CallError> {
        let what = format!("resources/read {uri}");
        let request = registry::ServerRequest::ReadResource(uri.to_string());
        let (registry::RequestAnswer::Contents(items), text) =
            self.request(server, request, None, &what).await?
        else {
            return Err(unexpected(&what));
        };
        Ok(ResourceRead {
            contents: contents(&what, items)?,
            text,
        })
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
        self.request(server, request, None, "resources/subscribe")
            .await
            .map(drop)
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
        self.request(server, request, None, "resources/unsubscribe")
            .await
            .map(drop)
    }
}
