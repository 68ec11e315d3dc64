//! Prompts through [`Runtime`]: listed (`prompts/list`) and filled in
//! (`prompts/get`). How a request travels is [`super::request`]'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Runtime;
use super::request::{open_json, unexpected};
use crate::bindings::registry;
use crate::types::CallError;

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

impl Runtime {
    /// The prompts of `server`, or of every server that offers them.
    pub async fn list_prompts(&self, server: Option<&str>) -> Result<Vec<Prompt>, CallError> {
        let what = "prompts/list";
        match self
            .request(server, registry::ServerRequest::ListPrompts, None, what)
            .await?
        {
            (registry::RequestAnswer::Prompts(list), _) => {
                Ok(list.into_iter().map(prompt).collect())
            }
            _ => Err(unexpected(what)),
        }
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
        let what = format!("prompts/get {name}");
        let (answer, text) = self.request(Some(server), request, None, &what).await?;
        let registry::RequestAnswer::Prompt(got) = answer else {
            return Err(unexpected(&what));
        };
        let messages = got
            .messages
            .into_iter()
            .map(|m| {
                Ok(PromptMessage {
                    content: open_json(&what, "content", &m.content)?,
                    role: m.role,
                })
            })
            .collect::<Result<_, CallError>>()?;
        Ok(GetPrompt {
            description: got.description,
            messages,
            text,
        })
    }
}

fn prompt(p: registry::ListedPrompt) -> Prompt {
    Prompt {
        server: p.server,
        registry_name: p.registry_name,
        name: p.name,
        title: p.title,
        description: p.description,
        arguments: p
            .arguments
            .into_iter()
            .map(|a| PromptArgument {
                name: a.name,
                title: a.title,
                description: a.description,
                required: a.required,
            })
            .collect(),
    }
}
