//! What a request beyond tools answered, read into plain records: the shapes
//! of MCP's results (a resource, a prompt, a completion, a skill entry, a
//! task) are the guest's to know, so a host maps these records to its own
//! types and parses no MCP result itself.
//!
//! The request's [`CallResult`] (built by [`super::request`] and the
//! concept modules, fanned out and merged by the manager) is read once more
//! when it leaves the guest: [`read_answer`] checks every item and names the
//! server, the item and the field of the first that does not fit. Fields
//! that are open JSON in the protocol (a resource's `annotations` and
//! `_meta`, a prompt message's content block, a skill's frontmatter and
//! files) stay JSON text.

use crate::prelude::*;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{CallError, CallResult, Request};

/// A request's answer, by what it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`:
    /// nothing but that it was done.
    Done,
    /// `resources/list`.
    Resources(Vec<ListedResource>),
    /// `resources/templates/list`.
    ResourceTemplates(Vec<ResourceTemplate>),
    /// `resources/read`, or a skill's file.
    Contents(Vec<ResourceItem>),
    /// `prompts/list`.
    Prompts(Vec<ListedPrompt>),
    /// `prompts/get`.
    Prompt(GotPrompt),
    /// `completion/complete`.
    Completion(CompletionValues),
    /// `skills/list`.
    Skills(Vec<SkillEntry>),
    /// `skills/get`.
    Skill(SkillEntry),
    /// A skill loaded: its `SKILL.md` items and the entry they were verified
    /// against.
    LoadedSkill(Vec<ResourceItem>, SkillEntry),
    /// `tasks/list`.
    Tasks(Vec<ListedTask>),
}

/// One resource of `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedResource {
    /// The configured server that lists it.
    pub server: String,
    /// Its URI, as its server knows it.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// Its `annotations`, JSON text as sent.
    #[serde(default, deserialize_with = "open_json")]
    pub annotations: Option<String>,
}

/// One template of `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The configured server that lists it.
    pub server: String,
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// The MIME type of what it names.
    #[serde(default)]
    pub mime_type: Option<String>,
}

/// One item of a `resources/read` result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceItem {
    /// The URI of this item.
    pub uri: String,
    /// Its MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Its text, for a text item (or the note of an item written to a file).
    #[serde(default)]
    pub text: Option<String>,
    /// Its bytes, base64, for a blob item.
    #[serde(default)]
    pub blob: Option<String>,
    /// `_meta`, JSON text as sent (or with mcpbox's `"mcpbox/file"`).
    #[serde(default, rename = "_meta", deserialize_with = "open_json")]
    pub meta: Option<String>,
}

/// One prompt of `prompts/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedPrompt {
    /// The configured server that lists it.
    pub server: String,
    /// `mcp__{server}__{prompt}`, made as tool names are.
    pub registry_name: String,
    /// Its own name on its server.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// A `prompts/get` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GotPrompt {
    /// What the prompt is, when the server says.
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PromptMessage {
    /// "user" or "assistant".
    pub role: String,
    /// Its content block, JSON text as sent.
    #[serde(deserialize_with = "required_open_json")]
    pub content: String,
}

/// A `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionValues {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many there are in all, when the server says.
    #[serde(default)]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default)]
    pub has_more: Option<bool>,
}

/// One skill entry (`skills/list`, `skills/get`, a loaded skill's entry).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SkillEntry {
    /// The configured server that lists it (empty in a loaded skill's entry).
    #[serde(default)]
    pub server: String,
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its frontmatter, JSON text.
    #[serde(deserialize_with = "required_open_json")]
    pub frontmatter: String,
    /// Its files, or `"dynamic"`: JSON text.
    #[serde(deserialize_with = "required_open_json")]
    pub resources: String,
}

/// One task of `tasks/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTask {
    /// The configured server that lists it.
    #[serde(default)]
    pub server: String,
    /// The server's id for it.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// What it is doing, in the server's words.
    #[serde(default)]
    pub status_message: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created_at: Option<String>,
    /// When its status last changed (RFC 3339).
    #[serde(default)]
    pub last_updated_at: Option<String>,
    /// How long the server keeps it, in milliseconds; none for no limit.
    #[serde(default)]
    pub ttl: Option<u64>,
    /// How often the server suggests polling it, in milliseconds.
    #[serde(default)]
    pub poll_interval: Option<u64>,
}

/// An open JSON field, kept as its text; `null` reads as none.
fn open_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let raw: Option<Box<RawValue>> = Deserialize::deserialize(d)?;
    Ok(raw
        .filter(|raw| raw.get() != "null")
        .map(|raw| raw.get().to_string()))
}

/// An open JSON field that must be there, kept as its text.
fn required_open_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let raw: Box<RawValue> = Deserialize::deserialize(d)?;
    Ok(raw.get().to_string())
}

/// Reads the result of `request`, asked of `server` (none: of every server
/// that offers it), into its [`Answer`]. Err ([`CallError::Protocol`]) names
/// the request, the server, the item and the field that do not fit.
pub fn read_answer(
    request: &Request,
    server: Option<&str>,
    result: &CallResult,
) -> Result<Answer, CallError> {
    let label = request.label();
    let from = |item_server: Option<&str>| match item_server.or(server) {
        Some(s) => format!("server `{s}`"),
        None => "the server".to_string(),
    };
    let malformed = |what: &str, whose: Option<&str>, e: serde_json::Error| {
        CallError::Protocol(format!(
            "{label}: {} sent a malformed {what} ({e})",
            from(whose)
        ))
    };
    // The items of a list, each read as `T`; a list merged from many servers
    // names the server of the item that does not fit.
    fn items<T: for<'de> Deserialize<'de>>(
        text: &str,
        what: &str,
        malformed: &dyn Fn(&str, Option<&str>, serde_json::Error) -> CallError,
    ) -> Result<Vec<T>, CallError> {
        let list: Vec<&RawValue> =
            serde_json::from_str(text).map_err(|e| malformed("list", None, e))?;
        list.into_iter()
            .enumerate()
            .map(|(i, item)| {
                serde_json::from_str(item.get()).map_err(|e| {
                    #[derive(Deserialize)]
                    struct Whose {
                        server: Option<String>,
                    }
                    let whose = serde_json::from_str::<Whose>(item.get())
                        .ok()
                        .and_then(|w| w.server);
                    malformed(&format!("{what} (item {i})"), whose.as_deref(), e)
                })
            })
            .collect()
    }
    let one = |what: &str, text: &str| -> Result<SkillEntry, CallError> {
        serde_json::from_str(text).map_err(|e| malformed(what, None, e))
    };
    Ok(match request {
        Request::SetLogLevel { .. } | Request::Subscribe { .. } | Request::Unsubscribe { .. } => {
            Answer::Done
        }
        // A directory's children are listed as resources are (the WIT has no
        // request for it yet: the gateway passes it through).
        Request::ListResources | Request::ReadDirectory { .. } => {
            Answer::Resources(items(&result.content, "resource", &malformed)?)
        }
        Request::ListResourceTemplates => {
            Answer::ResourceTemplates(items(&result.content, "resource template", &malformed)?)
        }
        Request::ReadResource { .. } | Request::ReadSkillFile { .. } => {
            Answer::Contents(items(&result.content, "`contents` item", &malformed)?)
        }
        Request::ListPrompts => Answer::Prompts(items(&result.content, "prompt", &malformed)?),
        Request::GetPrompt { .. } => {
            #[derive(Deserialize)]
            struct Get {
                #[serde(default)]
                description: Option<String>,
            }
            let messages = items(&result.content, "prompt message", &malformed)?;
            let description = match &result.structured_content {
                Some(text) => {
                    serde_json::from_str::<Get>(text)
                        .map_err(|e| malformed("prompt", None, e))?
                        .description
                }
                None => None,
            };
            Answer::Prompt(GotPrompt {
                description,
                messages,
            })
        }
        Request::Complete { .. } => {
            let text = result.structured_content.as_deref().unwrap_or("null");
            Answer::Completion(
                serde_json::from_str(text).map_err(|e| malformed("`completion`", None, e))?,
            )
        }
        Request::ListSkills => Answer::Skills(items(&result.content, "skill entry", &malformed)?),
        Request::GetSkill { .. } => {
            let mut entry = one("skill entry", &result.content)?;
            if entry.server.is_empty() {
                entry.server = server.unwrap_or_default().to_string();
            }
            Answer::Skill(entry)
        }
        Request::LoadSkill { .. } => {
            let contents = items(&result.content, "`contents` item", &malformed)?;
            let entry = one(
                "skill entry",
                result.structured_content.as_deref().unwrap_or("null"),
            )?;
            Answer::LoadedSkill(contents, entry)
        }
        Request::ListTasks => Answer::Tasks(items(&result.content, "task", &malformed)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: &str, structured: Option<&str>) -> CallResult {
        CallResult {
            is_error: false,
            text: String::new(),
            content: content.to_string(),
            structured_content: structured.map(String::from),
        }
    }

    #[test]
    fn a_list_merged_from_many_servers_names_the_server_and_field_of_the_item_that_does_not_fit() {
        let content = r#"[{"server":"a","registryName":"mcp__a__p","name":"p"},
                          {"server":"b","registryName":"mcp__b__q"}]"#;
        let e = read_answer(&Request::ListPrompts, None, &result(content, None)).unwrap_err();
        let CallError::Protocol(why) = e else {
            panic!("{e:?}")
        };
        assert!(why.starts_with("prompts/list: server `b` sent a malformed prompt (item 1)"));
        assert!(why.contains("missing field `name`"), "{why}");
    }

    #[test]
    fn open_fields_stay_json_text_and_null_reads_as_none() {
        let content = r#"[{"server":"s","uri":"test://a","name":"a","size":3,
                           "annotations":{"audience":["user"]}},
                          {"server":"s","uri":"test://b","name":"b","annotations":null}]"#;
        let Answer::Resources(list) =
            read_answer(&Request::ListResources, None, &result(content, None)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            list[0].annotations.as_deref(),
            Some(r#"{"audience":["user"]}"#)
        );
        assert_eq!(list[0].size, Some(3));
        assert_eq!(list[1].annotations, None);
    }

    #[test]
    fn a_prompt_keeps_its_description_and_each_message_its_content_block() {
        let request = Request::GetPrompt {
            name: "p".into(),
            arguments: None,
        };
        let content = r#"[{"role":"user","content":{"type":"text","text":"hi"}}]"#;
        let whole = r#"{"description":"greets","messages":[]}"#;
        let Answer::Prompt(got) =
            read_answer(&request, Some("s"), &result(content, Some(whole))).unwrap()
        else {
            panic!()
        };
        assert_eq!(got.description.as_deref(), Some("greets"));
        assert_eq!(got.messages[0].role, "user");
        assert_eq!(got.messages[0].content, r#"{"type":"text","text":"hi"}"#);
    }

    #[test]
    fn a_completion_without_values_is_refused_naming_the_server_and_the_field() {
        let request = Request::Complete {
            params: "{}".into(),
        };
        let e =
            read_answer(&request, Some("s"), &result("[]", Some(r#"{"total":3}"#))).unwrap_err();
        assert!(
            matches!(&e, CallError::Protocol(why)
                if why.contains("server `s` sent a malformed `completion`")
                    && why.contains("missing field `values`")),
            "{e:?}"
        );
    }

    #[test]
    fn a_task_with_a_null_ttl_has_none() {
        let content = r#"[{"server":"s","taskId":"t1","status":"working","ttl":null}]"#;
        let Answer::Tasks(tasks) =
            read_answer(&Request::ListTasks, None, &result(content, None)).unwrap()
        else {
            panic!()
        };
        assert_eq!(tasks[0].task_id, "t1");
        assert_eq!(tasks[0].ttl, None);
    }
}
