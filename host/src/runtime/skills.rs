//! Skills through [`Runtime`] (the skills extension,
//! `io.modelcontextprotocol/skills`): listed (`skills/list`), loaded (the
//! skill's `SKILL.md`, verified) and their files read (verified) on demand.
//!
//! The rules are the guest's (`guest/src/client/skills.rs`): listing fetches
//! no file; a load reads `SKILL.md` and checks its size, SHA-256 digest and
//! frontmatter against the server's entry; a file is read only for a loaded
//! skill whose entry lists it. A mismatch is a [`CallError::Protocol`] naming
//! the server, the skill and the mismatch, with none of the content. A skill is
//! named by its server and its `SKILL.md` URI (two servers may serve the same
//! URI, and one server two skills of the same name): [`Skill::server`] and
//! [`Skill::uri`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Runtime;
use super::request::{open_json, unexpected};
use super::resources::{ResourceContents, contents};
use crate::bindings::registry;
use crate::types::CallError;

/// One skill a server lists (`skills/list`), as its entry says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Skill {
    /// The configured server that lists it.
    #[serde(default)]
    pub server: String,
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its `SKILL.md` frontmatter, as the entry renders it (`name` and
    /// `description` at least).
    pub frontmatter: Value,
    /// Its files (`uri`, `digest`, `size` each), or `"dynamic"`.
    pub resources: Value,
}

impl Skill {
    /// Its name (its frontmatter's `name`).
    pub fn name(&self) -> &str {
        self.frontmatter["name"].as_str().unwrap_or_default()
    }

    /// Its description (its frontmatter's `description`).
    pub fn description(&self) -> &str {
        self.frontmatter["description"].as_str().unwrap_or_default()
    }
}

/// A skill loaded: its verified `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The `SKILL.md` text, verified against the entry.
    pub text: String,
    /// The `resources/read` items it came in.
    pub contents: Vec<ResourceContents>,
    /// The entry it was verified against (`uri`, `frontmatter`, `resources`).
    pub entry: Value,
}

/// A file of a loaded skill, verified against its entry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SkillFile {
    /// The `resources/read` items it came in.
    pub contents: Vec<ResourceContents>,
    /// The text items joined with "\n".
    pub text: String,
}

/// A skill entry as the guest read it; its frontmatter and files are open
/// JSON (the skill's author shapes the frontmatter).
fn entry(what: &str, e: registry::SkillEntry) -> Result<Skill, CallError> {
    Ok(Skill {
        frontmatter: open_json(what, "frontmatter", &e.frontmatter)?,
        resources: open_json(what, "resources", &e.resources)?,
        server: e.server,
        uri: e.uri,
    })
}

impl Runtime {
    /// The skills of `server`, or of every connected server that declared the
    /// skills extension (all pages). No skill file is read.
    #[doc(alias = "skills/list")]
    pub async fn list_skills(&self, server: Option<&str>) -> Result<Vec<Skill>, CallError> {
        let what = "skills/list";
        let request = registry::ServerRequest::ListSkills;
        let (registry::RequestAnswer::Skills(list), _) =
            self.request(server, request, None, what).await?
        else {
            return Err(unexpected(what));
        };
        list.into_iter().map(|e| entry(what, e)).collect()
    }

    /// Loads skill `skill` of `server`, named by its name in the server's
    /// listing ([`Runtime::list_skills`] first) or by its `SKILL.md` URI: its
    /// `SKILL.md`, verified against the entry (size, digest, frontmatter).
    pub async fn load_skill(&self, server: &str, skill: &str) -> Result<LoadedSkill, CallError> {
        let what = format!("skill {skill}");
        let request = registry::ServerRequest::LoadSkill(skill.to_string());
        let (registry::RequestAnswer::LoadedSkill(loaded), text) =
            self.request(Some(server), request, None, &what).await?
        else {
            return Err(unexpected(&what));
        };
        let verified = entry(&what, loaded.entry)?;
        Ok(LoadedSkill {
            text,
            contents: contents(&what, loaded.contents)?,
            entry: serde_json::json!({
                "uri": verified.uri,
                "frontmatter": verified.frontmatter,
                "resources": verified.resources,
            }),
        })
    }

    /// Reads file `file` (its path in the skill, or its URI) of the loaded skill
    /// `skill` of `server`, verified against the skill's entry.
    pub async fn read_skill_file(
        &self,
        server: &str,
        skill: &str,
        file: &str,
    ) -> Result<SkillFile, CallError> {
        let what = format!("skill file {file}");
        let request = registry::ServerRequest::ReadSkillFile(registry::SkillFile {
            skill: skill.to_string(),
            file: file.to_string(),
        });
        let (registry::RequestAnswer::Contents(items), text) =
            self.request(Some(server), request, None, &what).await?
        else {
            return Err(unexpected(&what));
        };
        Ok(SkillFile {
            contents: contents(&what, items)?,
            text,
        })
    }
}
