//! Skills (`io.modelcontextprotocol/skills`, SEP-2640): Agent Skills a server
//! serves as resources, listed with `skills/list` (or one by URI with
//! `skills/get`), each entry a skill's `SKILL.md` URI, its frontmatter and the
//! digest and size of every file.
//!
//! The rules this client keeps, from the extension's "Integrity and
//! Verification":
//!
//! - **Lazy.** Listing fetches nothing: a skill's `SKILL.md` is read only when
//!   the embedder loads the skill ([`Request::LoadSkill`]), and a supporting
//!   file only when it is read ([`Request::ReadSkillFile`]), and only for a
//!   skill loaded before.
//! - **Held entries.** A load needs the entry it is verified against: one from
//!   the server's listing, or, given the `SKILL.md` URI of a skill no listing
//!   held, one got with `skills/get` first. A file read resolves only to a URI
//!   the held entry lists; any other is refused.
//! - **Verified.** Every file read is checked against its entry's `size` (first:
//!   no digest is computed over bytes of the wrong length) and SHA-256 `digest`;
//!   `SKILL.md`'s frontmatter is then compared field by field with the entry's.
//!   Any discrepancy refuses the content: the call ends with an error naming the
//!   server, the skill and the mismatch, and nothing of it is handed on.
//! - **Bounded.** An entry listing more than [`MAX_RESOURCES`] files or more than
//!   [`MAX_TOTAL_BYTES`] in all is declined before anything is fetched; an entry
//!   whose `resources` is `"dynamic"` offers nothing to verify and is declined too.
//!   A declined entry is still described: it stays in the listing the embedder
//!   gets, and `skills/get` answers with it (a warning says it cannot be loaded).
//!
//! The frontmatter is YAML. The component is `no_std` and no well-kept YAML
//! crate builds without std, so [`frontmatter`] reads the subset Agent Skills
//! frontmatter uses (block mappings and sequences of plain or quoted scalars) and
//! refuses the rest: a `SKILL.md` whose frontmatter cannot be read cannot be
//! compared, and is not loaded.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::request::{PendingRequest, Request};
use super::{CallError, CallResult, Client};

/// The extension's identifier, a key of a server's `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The most files one skill may list (the extension's limit; larger ones are
/// declined before any read).
pub const MAX_RESOURCES: usize = 512;

/// The most bytes one skill's files may hold together (16 MiB, the extension's
/// limit; larger skills are declined before any read).
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// What the client knows of a server's skills.
#[derive(Debug, Default)]
pub(super) struct Skills {
    /// The entries held, by `SKILL.md` URI, from listings and `skills/get`.
    entries: BTreeMap<String, Entry>,
    /// The skills loaded (the extension's acting window), by `SKILL.md` URI.
    loaded: BTreeSet<String>,
    /// Calls that got an entry with `skills/get` to load the skill after.
    load_after_get: BTreeSet<u64>,
    /// Listed entries declined (invalid, dynamic, past the limits): by URI, the
    /// skill's name and why, for a load to say.
    declined: BTreeMap<String, (String, String)>,
}

/// One skill's entry, as held.
#[derive(Debug, Clone)]
struct Entry {
    uri: String,
    frontmatter: Map<String, Value>,
    files: Vec<File>,
}

/// A file an entry lists.
#[derive(Debug, Clone)]
struct File {
    uri: String,
    /// The 64 lowercase hex digits of its SHA-256.
    digest: String,
    size: u64,
}

impl Entry {
    /// The skill's name (its frontmatter's).
    fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Reads one `Skill` entry; an entry the extension calls invalid, or one this
/// client declines to load (dynamic, past the limits), is an error saying why.
fn read_entry(value: &Value) -> Result<Entry, String> {
    let uri = value
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the entry has no `uri`")?;
    let Some(Value::Object(frontmatter)) = value.get("frontmatter") else {
        return Err(format!("{uri}: the entry has no `frontmatter` object"));
    };
    let resources = match value.get("resources") {
        Some(Value::Array(items)) => items,
        Some(Value::String(s)) if s == "dynamic" => {
            return Err(format!(
                "{uri}: its files are generated (`resources: \"dynamic\"`), so nothing can be verified; mcpbox does not load such skills"
            ));
        }
        _ => {
            return Err(format!(
                "{uri}: the entry's `resources` is neither a list of files nor \"dynamic\""
            ));
        }
    };
    if resources.len() > MAX_RESOURCES {
        return Err(format!(
            "{uri}: the entry lists {} files, past the extension's limit of {MAX_RESOURCES}",
            resources.len()
        ));
    }
    let mut files = Vec::with_capacity(resources.len());
    let mut total: u64 = 0;
    for (i, file) in resources.iter().enumerate() {
        let file_uri = file
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{uri}: resources[{i}] has no `uri`"))?;
        let digest = file
            .get("digest")
            .and_then(Value::as_str)
            .and_then(|d| d.strip_prefix("sha256:"))
            .filter(|hex| {
                hex.len() == 64
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
            .ok_or_else(|| {
                format!(
                    "{uri}: the digest of {file_uri} is not `sha256:` and 64 lowercase hex digits"
                )
            })?;
        let size = file
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{uri}: the size of {file_uri} is not a byte count"))?;
        total = total.saturating_add(size);
        files.push(File {
            uri: file_uri.to_string(),
            digest: digest.to_string(),
            size,
        });
    }
    if total > MAX_TOTAL_BYTES {
        return Err(format!(
            "{uri}: its files hold {total} bytes together, past the extension's limit of {MAX_TOTAL_BYTES}"
        ));
    }
    if !files.iter().any(|f| f.uri == uri) {
        return Err(format!(
            "{uri}: the entry's `resources` does not list the skill's own SKILL.md"
        ));
    }
    Ok(Entry {
        uri: uri.to_string(),
        frontmatter: frontmatter.clone(),
        files,
    })
}

/// Whether `text` names a skill by its `SKILL.md` URI rather than by name.
fn is_uri(text: &str) -> bool {
    text.contains("://")
}

impl Client {
    /// Holds the entries of a `skills/list` answer; an entry that cannot be
    /// loaded is a warning naming it (it stays in the listing the embedder gets).
    pub(super) fn hold_skills(&mut self, items: &[Box<RawValue>]) {
        for item in items {
            let value: Value = serde_json::from_str(item.get()).unwrap_or(Value::Null);
            match read_entry(&value) {
                Ok(entry) => {
                    self.skills.declined.remove(&entry.uri);
                    self.skills.entries.insert(entry.uri.clone(), entry);
                }
                Err(why) => self.decline(&value, why),
            }
        }
    }

    /// An entry (listed, or got with `skills/get`) that cannot be loaded: a
    /// warning naming it, and no entry held for its URI, so that a load says why.
    fn decline(&mut self, value: &Value, why: String) {
        self.warn(format!(
            "server `{}`: skill {why}; it cannot be loaded",
            self.server
        ));
        if let Some(uri) = value.get("uri").and_then(Value::as_str) {
            let name = value["frontmatter"]["name"].as_str().unwrap_or_default();
            self.skills.entries.remove(uri);
            self.skills.loaded.remove(uri);
            self.skills
                .declined
                .insert(uri.to_string(), (name.to_string(), why));
        }
    }

    /// Resolves a skill request's names to the URIs it reads, or ends the call
    /// with why it cannot be sent (`None`). A load of a URI no entry holds
    /// becomes a `skills/get` that loads the skill once its entry is in.
    pub(super) fn prepare_skill_request(
        &mut self,
        mut pending: PendingRequest,
    ) -> Option<PendingRequest> {
        let server = self.server.clone();
        let outcome = match &pending.request {
            Request::LoadSkill { skill } => match self.resolve_skill(skill) {
                Ok(Some(uri)) => Ok(Request::LoadSkill { skill: uri }),
                Ok(None) => {
                    self.skills.load_after_get.insert(pending.call);
                    Ok(Request::GetSkill { uri: skill.clone() })
                }
                Err(why) => Err(why),
            },
            Request::ReadSkillFile { skill, file } => match self.resolve_skill(skill) {
                Ok(Some(uri)) if self.skills.loaded.contains(&uri) => {
                    let entry = &self.skills.entries[&uri];
                    let root = uri.strip_suffix("SKILL.md").unwrap_or(&uri);
                    let wanted = if is_uri(file) {
                        file.clone()
                    } else {
                        format!("{root}{}", file.trim_start_matches("./"))
                    };
                    match entry.files.iter().find(|f| f.uri == wanted) {
                        Some(f) => Ok(Request::ReadSkillFile {
                            skill: uri,
                            file: f.uri.clone(),
                        }),
                        None => Err(format!(
                            "skill `{}` ({uri}) on server `{server}` lists no file {wanted}: a file its entry does not list is not read",
                            entry.name()
                        )),
                    }
                }
                Ok(Some(uri)) => Err(format!(
                    "skill {uri} on server `{server}` is not loaded: load it before reading its files"
                )),
                Ok(None) => Err(format!(
                    "skill {skill} on server `{server}` is not loaded: load it before reading its files"
                )),
                Err(why) => Err(why),
            },
            _ => return Some(pending),
        };
        match outcome {
            Ok(request) => {
                pending.request = request;
                Some(pending)
            }
            Err(why) => {
                self.finish(pending.call, Err(CallError::InvalidArguments(why)), true);
                None
            }
        }
    }

    /// The URI of the held entry `skill` names (a name or a `SKILL.md` URI);
    /// `None` for a URI no entry holds.
    fn resolve_skill(&self, skill: &str) -> Result<Option<String>, String> {
        let declined = self
            .skills
            .declined
            .iter()
            .find(|(uri, (name, _))| *uri == skill || name == skill);
        if let Some((uri, (name, why))) = declined {
            return Err(format!(
                "skill `{name}` ({uri}) on server `{}` cannot be loaded: {why}",
                self.server
            ));
        }
        if is_uri(skill) {
            return Ok(self
                .skills
                .entries
                .contains_key(skill)
                .then(|| skill.to_string()));
        }
        let named: Vec<&str> = self
            .skills
            .entries
            .values()
            .filter(|e| e.name() == skill)
            .map(|e| e.uri.as_str())
            .collect();
        match named.as_slice() {
            [uri] => Ok(Some(uri.to_string())),
            [] => Err(format!(
                "server `{}` listed no skill named `{skill}`: list its skills first, or name the skill by its SKILL.md URI",
                self.server
            )),
            several => Err(format!(
                "server `{}` lists {} skills named `{skill}`: name one by its SKILL.md URI ({})",
                self.server,
                several.len(),
                several.join(", ")
            )),
        }
    }

    /// The answer to a skill request; `None` when the call goes on (a
    /// `skills/get` that loads the skill next).
    pub(super) fn skill_response(
        &mut self,
        r: &PendingRequest,
        raw: &RawValue,
    ) -> Option<Result<CallResult, CallError>> {
        let server = self.server.clone();
        let refuse = |why: String| Some(Err(CallError::Protocol(why)));
        match &r.request {
            Request::GetSkill { uri } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let skill = value.get("skill").cloned().unwrap_or(Value::Null);
                if skill.get("uri").and_then(Value::as_str) != Some(uri.as_str()) {
                    return refuse(format!(
                        "skills/get {uri} on server `{server}`: the answer is not that skill's entry"
                    ));
                }
                let entry = match read_entry(&skill) {
                    Ok(entry) => entry,
                    Err(why) if self.skills.load_after_get.remove(&r.call) => {
                        return refuse(format!("server `{server}`: skill {why}; not loaded"));
                    }
                    Err(why) => {
                        // The entry is the answer, as a listing holds it: a
                        // skill that cannot be loaded (`resources: "dynamic"`)
                        // is still described.
                        self.decline(&skill, why);
                        return Some(Ok(CallResult {
                            is_error: false,
                            text: uri.clone(),
                            content: skill.to_string(),
                            structured_content: None,
                        }));
                    }
                };
                // A new entry is a new content set: what was loaded from the
                // old one is not loaded any more.
                self.skills.loaded.remove(uri);
                self.skills.entries.insert(uri.clone(), entry);
                if self.skills.load_after_get.remove(&r.call) {
                    let pending = r.restarted(Request::LoadSkill { skill: uri.clone() });
                    if let Some(pending) = self.prepare_skill_request(pending) {
                        self.send_skill_request(pending);
                    }
                    return None;
                }
                Some(Ok(CallResult {
                    is_error: false,
                    text: uri.clone(),
                    content: skill.to_string(),
                    structured_content: None,
                }))
            }
            Request::LoadSkill { skill } => {
                let entry = self.skills.entries.get(skill)?.clone();
                let outcome = self.verified_read(&entry, skill, raw).and_then(|result| {
                    let text = result.text.clone();
                    let file = frontmatter::read(&text).map_err(|why| {
                        self.mismatch(
                            &entry,
                            format!("its SKILL.md frontmatter cannot be read ({why})"),
                        )
                    })?;
                    match frontmatter::compare(&file, &entry.frontmatter) {
                        Ok(()) => Ok(result),
                        Err(why) => Err(self.mismatch(&entry, why)),
                    }
                });
                match outcome {
                    Ok(mut result) => {
                        self.skills.loaded.insert(skill.clone());
                        result.structured_content = Some(entry_json(&entry));
                        Some(Ok(result))
                    }
                    Err(e) => {
                        self.skills.loaded.remove(skill);
                        Some(Err(e))
                    }
                }
            }
            Request::ReadSkillFile { skill, file } => {
                let entry = self.skills.entries.get(skill)?.clone();
                Some(self.verified_read(&entry, file, raw))
            }
            _ => None,
        }
    }

    /// Sends a skill request (after a `skills/get`).
    fn send_skill_request(&mut self, pending: PendingRequest) {
        self.send_request(pending, None);
    }

    /// The `resources/read` answer for `uri`, checked against `entry`'s size
    /// and digest for it.
    fn verified_read(
        &self,
        entry: &Entry,
        uri: &str,
        raw: &RawValue,
    ) -> Result<CallResult, CallError> {
        let listed =
            entry.files.iter().find(|f| f.uri == uri).ok_or_else(|| {
                self.mismatch(entry, format!("{uri} is not a file its entry lists"))
            })?;
        let result = super::resources::read_result(raw).map_err(|why| {
            CallError::Protocol(format!(
                "resources/read {uri} on server `{}`: the server sent a malformed result ({why})",
                self.server
            ))
        })?;
        let bytes = content_bytes(&result.content, uri)
            .map_err(|why| self.mismatch(entry, format!("{uri}: {why}")))?;
        if bytes.len() as u64 != listed.size {
            return Err(self.mismatch(
                entry,
                format!(
                    "{uri} is {} bytes, its entry says {}",
                    bytes.len(),
                    listed.size
                ),
            ));
        }
        let digest = hex(&Sha256::digest(&bytes));
        if digest != listed.digest {
            return Err(self.mismatch(
                entry,
                format!(
                    "{uri} has digest sha256:{digest}, its entry says sha256:{}",
                    listed.digest
                ),
            ));
        }
        Ok(result)
    }

    /// A verification failure of `entry`'s skill: the content is refused.
    fn mismatch(&self, entry: &Entry, why: String) -> CallError {
        CallError::Protocol(format!(
            "skill `{}` ({}) on server `{}` failed verification: {why}; its content is refused (list the server's skills again to refresh the entry)",
            entry.name(),
            entry.uri,
            self.server
        ))
    }
}

impl PendingRequest {
    /// The same call asking `request` next, with the time it has left.
    fn restarted(&self, request: Request) -> PendingRequest {
        let mut next = PendingRequest::new(self.call, request, self.timeout_ms, 0);
        next.deadline_ms = self.deadline_ms;
        next
    }
}

/// The entry as the embedder sees it once the skill is loaded.
fn entry_json(entry: &Entry) -> String {
    let files: Vec<Value> = entry
        .files
        .iter()
        .map(|f| {
            serde_json::json!({
                "uri": f.uri,
                "digest": format!("sha256:{}", f.digest),
                "size": f.size,
            })
        })
        .collect();
    serde_json::json!({
        "uri": entry.uri,
        "frontmatter": entry.frontmatter,
        "resources": files,
    })
    .to_string()
}

/// The raw bytes of the read's item for `uri` (or its only item): a `text`
/// item's UTF-8, a `blob` item's decoded base64.
fn content_bytes(contents: &str, uri: &str) -> Result<Vec<u8>, String> {
    let items: Vec<Value> =
        serde_json::from_str(contents).map_err(|_| "`contents` is not a list".to_string())?;
    let item = match items
        .iter()
        .find(|i| i.get("uri").and_then(Value::as_str) == Some(uri))
    {
        Some(item) => item,
        None if items.len() == 1 => &items[0],
        None => {
            return Err(format!(
                "the read returned {} items, none of them this file",
                items.len()
            ));
        }
    };
    if let Some(text) = item.get("text").and_then(Value::as_str) {
        return Ok(text.as_bytes().to_vec());
    }
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        return base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| format!("its blob is not base64 ({e})"));
    }
    Err("the read returned neither text nor blob".into())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

pub(super) mod frontmatter {
    //! The YAML frontmatter of a `SKILL.md`, read for comparison with its entry.
    //!
    //! What is read: a leading `---` line, then block mappings (`key: value`)
    //! nested by indentation, block sequences (`- item`), and scalars that are
    //! plain (typed as YAML 1.2's core schema: null, booleans, integers, floats,
    //! else strings), single-quoted or double-quoted, up to a closing `---` line.
    //! Anything else (flow collections, block scalars, anchors, tags, plain
    //! scalars folded over several lines) is refused: it could not be compared.

    use crate::prelude::*;

    use serde_json::{Map, Number, Value};

    /// The frontmatter of `text` as a JSON object.
    pub fn read(text: &str) -> Result<Map<String, Value>, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.lines();
        if lines.next().map(str::trim_end) != Some("---") {
            return Err("it does not begin with a `---` line".into());
        }
        let mut body = Vec::new();
        let mut closed = false;
        for (i, line) in lines.enumerate() {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if line.starts_with('\t') {
                return Err(format!("line {}: a tab indents it", i + 2));
            }
            body.push((i + 2, line.len() - trimmed.len(), trimmed.trim_end()));
        }
        if !closed {
            return Err("no `---` line closes it".into());
        }
        let mut at = 0;
        match block(&body, &mut at, 0)? {
            Value::Object(map) if at == body.len() => Ok(map),
            Value::Object(_) => Err(format!(
                "line {}: it is indented past its block",
                body[at].0
            )),
            _ => Err("it is not a mapping".into()),
        }
    }

    /// One block at `indent`: a mapping or a sequence, by its first line.
    fn block(
        lines: &[(usize, usize, &str)],
        at: &mut usize,
        indent: usize,
    ) -> Result<Value, String> {
        let Some(&(_, _, first)) = lines.get(*at) else {
            return Ok(Value::Object(Map::new()));
        };
        if first == "-" || first.starts_with("- ") {
            let mut items = Vec::new();
            while let Some(&(n, ind, line)) = lines.get(*at) {
                if ind < indent {
                    break;
                }
                if ind > indent {
                    return Err(format!("line {n}: it is indented past its block"));
                }
                let Some(rest) = line.strip_prefix('-') else {
                    return Err(format!("line {n}: a sequence item must begin with `- `"));
                };
                let rest = rest.trim_start();
                *at += 1;
                if rest.is_empty() {
                    items.push(nested(lines, at, indent)?);
                } else if rest.contains(": ") || rest.ends_with(':') {
                    return Err(format!(
                        "line {n}: mappings inside sequence items are not read"
                    ));
                } else {
                    items.push(scalar(rest, n)?);
                }
            }
            return Ok(Value::Array(items));
        }
        let mut map = Map::new();
        while let Some(&(n, ind, line)) = lines.get(*at) {
            if ind < indent {
                break;
            }
            if ind > indent {
                return Err(format!("line {n}: it is indented past its block"));
            }
            let (key, rest) =
                split_key(line).ok_or_else(|| format!("line {n}: not `key: value`"))?;
            *at += 1;
            let value = if rest.is_empty() {
                nested(lines, at, indent)?
            } else {
                scalar(rest, n)?
            };
            if map.insert(key, value).is_some() {
                return Err(format!("line {n}: a key is repeated"));
            }
        }
        Ok(Value::Object(map))
    }

    /// The block under a key or item with nothing after it (null when none).
    fn nested(
        lines: &[(usize, usize, &str)],
        at: &mut usize,
        indent: usize,
    ) -> Result<Value, String> {
        match lines.get(*at) {
            Some(&(_, ind, _)) if ind > indent => block(lines, at, ind),
            _ => Ok(Value::Null),
        }
    }

    /// `key: rest` (the key plain or quoted).
    fn split_key(line: &str) -> Option<(String, &str)> {
        if line.starts_with('"') || line.starts_with('\'') {
            let end = quoted_end(line)?;
            let key = match scalar(&line[..end], 0).ok()? {
                Value::String(s) => s,
                _ => return None,
            };
            let rest = line[end..].strip_prefix(':')?;
            return (rest.is_empty() || rest.starts_with(' ')).then(|| (key, rest.trim()));
        }
        let colon = line
            .find(": ")
            .or_else(|| line.ends_with(':').then(|| line.len() - 1))?;
        let key = &line[..colon];
        if key.is_empty() || key.starts_with(['-', '[', '{', '&', '*', '!', '?', '|', '>']) {
            return None;
        }
        Some((key.to_string(), line[colon + 1..].trim()))
    }

    /// Where the quoted scalar opening `text` ends (one past its closing quote).
    fn quoted_end(text: &str) -> Option<usize> {
        let quote = text.chars().next()?;
        let mut chars = text.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            if quote == '"' && c == '\\' {
                chars.next();
            } else if c == quote {
                if quote == '\'' && text[i + 1..].starts_with('\'') {
                    chars.next();
                    continue;
                }
                return Some(i + 1);
            }
        }
        None
    }

    /// One scalar, as YAML 1.2's core schema types it.
    fn scalar(text: &str, n: usize) -> Result<Value, String> {
        let refuse = || format!("line {n}: `{text}` is YAML mcpbox does not read");
        if text.starts_with('"') || text.starts_with('\'') {
            let end = quoted_end(text).ok_or_else(refuse)?;
            let rest = &text[end..];
            let after = rest.trim_start();
            // A comment after a quoted scalar needs a space before its `#`.
            if !(after.is_empty() || rest.starts_with(' ') && after.starts_with('#')) {
                return Err(refuse());
            }
            let inner = &text[1..end - 1];
            if text.starts_with('\'') {
                return Ok(Value::String(inner.replace("''", "'")));
            }
            // JSON's string escapes are a subset of YAML's double-quoted ones.
            return serde_json::from_str::<String>(&text[..end])
                .map(Value::String)
                .map_err(|_| refuse());
        }
        let plain = match text.find(" #") {
            // A comment where the value would be: the value is empty.
            _ if text.starts_with('#') => "",
            Some(i) => text[..i].trim_end(),
            None => text,
        };
        if plain.starts_with(['[', '{', '&', '*', '!', '|', '>', '%', '@', '`'])
            // A nested sequence, a complex key or a mapping where a scalar stands.
            || matches!(plain, "-" | "?")
            || plain.starts_with("- ")
            || plain.starts_with("? ")
            || plain.contains(": ")
            || plain.ends_with(':')
        {
            return Err(refuse());
        }
        // YAML's infinities and not-a-number: no JSON entry can hold them.
        let unsigned = plain.strip_prefix(['-', '+']).unwrap_or(plain);
        if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(plain, ".nan" | ".NaN" | ".NAN")
        {
            return Err(refuse());
        }
        Ok(match plain {
            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            _ => match number(plain) {
                Some(number) => number,
                // An integer past 64 bits: JSON entries disagree on how to hold it.
                None if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) => {
                    return Err(refuse());
                }
                None => Value::String(plain.to_string()),
            },
        })
    }

    fn number(text: &str) -> Option<Value> {
        // The core schema's octal and hexadecimal integers (unsigned).
        for (prefix, radix) in [("0o", 8), ("0x", 16)] {
            if let Some(digits) = text.strip_prefix(prefix) {
                return i64::from_str_radix(digits, radix).ok().map(Value::from);
            }
        }
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        if digits.is_empty() || !digits.bytes().next()?.is_ascii_digit() && !digits.starts_with('.')
        {
            return None;
        }
        if digits.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse::<i64>().ok().map(Value::from);
        }
        if digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        {
            return text
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number);
        }
        None
    }

    /// Compares the file's frontmatter with the entry's, field by field; the
    /// first discrepancy, named.
    pub fn compare(file: &Map<String, Value>, entry: &Map<String, Value>) -> Result<(), String> {
        let keys: alloc::collections::BTreeSet<&String> = file.keys().chain(entry.keys()).collect();
        for key in keys {
            let (a, b) = (file.get(key), entry.get(key));
            if !same(a.unwrap_or(&Value::Null), b.unwrap_or(&Value::Null)) {
                let show = |v: Option<&Value>| match v {
                    Some(v) => crate::jsonrpc::truncate(&v.to_string(), 120).to_string(),
                    None => "nothing".into(),
                };
                return Err(format!(
                    "frontmatter field `{key}` is {} in SKILL.md but {} in the entry",
                    show(a),
                    show(b)
                ));
            }
        }
        Ok(())
    }

    /// JSON equality, numbers by value (1 and 1.0 are the same).
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClientEvent, FinishedCall};
    use super::*;
    use serde_json::json;

    const SKILL: &str = "skill://pdf-processing/SKILL.md";
    const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
    const BODY: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const FORMS_BODY: &str = "Supporting content.\n";

    fn digest(text: &str) -> String {
        format!("sha256:{}", hex(&Sha256::digest(text.as_bytes())))
    }

    fn entry() -> Value {
        json!({"uri": SKILL,
               "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
               "resources": [
                   {"uri": SKILL, "digest": digest(BODY), "size": BODY.len()},
                   {"uri": FORMS, "digest": digest(FORMS_BODY), "size": FORMS_BODY.len()}]})
    }

    /// What the client sent, as JSON.
    fn sent(c: &mut Client) -> Vec<Value> {
        c.take_outbox()
            .into_iter()
            .map(|o| serde_json::from_str(&o.text).unwrap())
            .collect()
    }

    fn answer(c: &mut Client, request: &Value, result: Value) {
        let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        c.handle_text(&reply.to_string(), 1);
    }

    fn read(uri: &str, text: &str) -> Value {
        json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
    }

    /// A client of a legacy server offering skills, with `entry` listed.
    fn listed(entry: Value) -> Client {
        let mut c = Client::new("docs");
        c.begin();
        let init = sent(&mut c).remove(0);
        answer(
            &mut c,
            &init,
            json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "s", "version": "1"},
                   "capabilities": {"resources": {}, "extensions": {EXTENSION: {}}}}),
        );
        sent(&mut c);
        assert!(c.offers().skills);
        c.start_request(1, Request::ListSkills, 1000, 1);
        let list = sent(&mut c).remove(0);
        assert_eq!(list["method"], "skills/list");
        answer(&mut c, &list, json!({"skills": [entry]}));
        assert!(sent(&mut c).is_empty(), "listing reads no skill file");
        c.take_events();
        c
    }

    fn outcome(c: &mut Client, call: u64) -> Result<CallResult, CallError> {
        let events = c.take_events();
        events
            .into_iter()
            .find_map(|e| match e {
                ClientEvent::Finished(FinishedCall { call: n, outcome }) if n == call => {
                    Some(outcome)
                }
                _ => None,
            })
            .expect("the call finished")
    }

    /// Loads the skill with `body` served for its SKILL.md.
    fn load(c: &mut Client, body: &str) -> Result<CallResult, CallError> {
        c.start_request(
            2,
            Request::LoadSkill {
                skill: "pdf-processing".into(),
            },
            1000,
            1,
        );
        let read_skill = sent(c).remove(0);
        assert_eq!(read_skill["method"], "resources/read");
        assert_eq!(read_skill["params"]["uri"], SKILL);
        answer(c, &read_skill, read(SKILL, body));
        outcome(c, 2)
    }

    #[test]
    fn a_verified_skill_loads_and_then_its_listed_files_read() {
        let mut c = listed(entry());
        c.start_request(
            3,
            Request::ReadSkillFile {
                skill: "pdf-processing".into(),
                file: "references/FORMS.md".into(),
            },
            1000,
            1,
        );
        assert!(
            sent(&mut c).is_empty(),
            "no file of a skill not loaded is read"
        );
        let refused = outcome(&mut c, 3).unwrap_err().to_string();
        assert!(refused.contains("not loaded"), "{refused}");

        let loaded = load(&mut c, BODY).expect("loads");
        assert_eq!(loaded.text, BODY);

        c.start_request(
            4,
            Request::ReadSkillFile {
                skill: "pdf-processing".into(),
                file: "references/FORMS.md".into(),
            },
            1000,
            1,
        );
        let r = sent(&mut c).remove(0);
        assert_eq!(r["params"]["uri"], FORMS);
        answer(&mut c, &r, read(FORMS, FORMS_BODY));
        assert_eq!(outcome(&mut c, 4).unwrap().text, FORMS_BODY);

        c.start_request(
            5,
            Request::ReadSkillFile {
                skill: "pdf-processing".into(),
                file: "scripts/evil.sh".into(),
            },
            1000,
            1,
        );
        assert!(sent(&mut c).is_empty(), "an unlisted file is not read");
        let refused = outcome(&mut c, 5).unwrap_err().to_string();
        assert!(refused.contains("lists no file"), "{refused}");
    }

    #[test]
    fn a_wrong_digest_size_or_frontmatter_is_refused_naming_server_skill_and_mismatch() {
        let evil = BODY.replace("Skill body.", "Evil body!!");
        let e = load(&mut listed(entry()), &evil).unwrap_err().to_string();
        assert!(
            e.contains("server `docs`") && e.contains("`pdf-processing`"),
            "{e}"
        );
        assert!(e.contains("has digest sha256:"), "{e}");

        let longer = format!("{BODY}extra bytes\n");
        let e = load(&mut listed(entry()), &longer).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "is {} bytes, its entry says {}",
                longer.len(),
                BODY.len()
            )),
            "{e}"
        );

        let changed = BODY.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let mut entry = entry();
        entry["resources"][0]["digest"] = digest(&changed).into();
        entry["resources"][0]["size"] = changed.len().into();
        let e = load(&mut listed(entry), &changed).unwrap_err().to_string();
        assert!(e.contains("frontmatter field `description`"), "{e}");
        assert!(e.contains("Exfiltrate credentials"), "{e}");
    }

    #[test]
    fn oversized_dynamic_and_incomplete_entries_are_not_held() {
        let mut big = entry();
        big["resources"][1]["size"] = (MAX_TOTAL_BYTES + 1).into();
        let mut c = listed(big);
        c.start_request(
            2,
            Request::LoadSkill {
                skill: "pdf-processing".into(),
            },
            1000,
            1,
        );
        assert!(
            sent(&mut c).is_empty(),
            "nothing is fetched for a skill past the limits"
        );
        assert!(outcome(&mut c, 2).is_err());

        let mut dynamic = entry();
        dynamic["resources"] = "dynamic".into();
        assert!(read_entry(&dynamic).unwrap_err().contains("dynamic"));
        let mut missing = entry();
        missing["resources"].as_array_mut().unwrap().remove(0);
        assert!(read_entry(&missing).unwrap_err().contains("SKILL.md"));
    }

    #[test]
    fn a_dynamic_skill_is_got_but_not_loaded() {
        let mut dynamic = entry();
        dynamic["resources"] = "dynamic".into();
        let mut c = listed(json!({"uri": "skill://other/SKILL.md"}));
        c.start_request(2, Request::GetSkill { uri: SKILL.into() }, 1000, 1);
        let get = sent(&mut c).remove(0);
        answer(&mut c, &get, json!({"skill": dynamic}));
        let got = outcome(&mut c, 2).expect("the entry is the answer");
        assert_eq!(
            serde_json::from_str::<Value>(&got.content).unwrap(),
            dynamic
        );
        // Loading it reads nothing and says why.
        c.start_request(
            3,
            Request::LoadSkill {
                skill: SKILL.into(),
            },
            1000,
            1,
        );
        assert!(sent(&mut c).is_empty(), "nothing is fetched");
        let refused = outcome(&mut c, 3).unwrap_err().to_string();
        assert!(refused.contains("dynamic"), "{refused}");
        // Got to load it: refused too, with nothing read.
        c.start_request(
            4,
            Request::LoadSkill {
                skill: "skill://third/SKILL.md".into(),
            },
            1000,
            1,
        );
        let get = sent(&mut c).remove(0);
        let mut third = dynamic.clone();
        third["uri"] = "skill://third/SKILL.md".into();
        answer(&mut c, &get, json!({"skill": third}));
        assert!(sent(&mut c).is_empty(), "nothing is fetched");
        let refused = outcome(&mut c, 4).unwrap_err().to_string();
        assert!(refused.contains("dynamic"), "{refused}");
    }

    #[test]
    fn a_uri_no_listing_held_is_got_then_loaded() {
        let mut c = listed(json!({"uri": "skill://other/SKILL.md"}));
        c.start_request(
            2,
            Request::LoadSkill {
                skill: SKILL.into(),
            },
            1000,
            1,
        );
        let get = sent(&mut c).remove(0);
        assert_eq!(get["method"], "skills/get");
        answer(&mut c, &get, json!({"skill": entry()}));
        let read_skill = sent(&mut c).remove(0);
        assert_eq!(read_skill["params"]["uri"], SKILL);
        answer(&mut c, &read_skill, read(SKILL, BODY));
        assert_eq!(outcome(&mut c, 2).unwrap().text, BODY);
    }

    #[test]
    fn frontmatter_reads_the_agent_skills_subset_and_refuses_the_rest() {
        let text = "---\nname: x\ndescription: \"A: quoted\"\nlicense: 'it''s MIT'\nversion: 2\nmetadata:\n  author: me\n  tags:\n    - a\n    - b\nallowed-tools: Bash(git:*) Read # a comment\n---\nbody";
        let read = frontmatter::read(text).unwrap();
        assert_eq!(
            Value::Object(read),
            json!({"name": "x", "description": "A: quoted", "license": "it's MIT", "version": 2,
                   "metadata": {"author": "me", "tags": ["a", "b"]}, "allowed-tools": "Bash(git:*) Read"})
        );
        for bad in [
            "---\nname: [a, b]\n---\n",
            "---\ndescription: |\n  block\n---\n",
            "---\nname: x\n",
            "no frontmatter",
            "---\nname: x\nname: y\n---\n",
        ] {
            assert!(frontmatter::read(bad).is_err(), "{bad:?}");
        }
        let a = frontmatter::read("---\nv: 1.0\n---\n").unwrap();
        assert!(frontmatter::compare(&a, json!({"v": 1}).as_object().unwrap()).is_ok());
        let e = frontmatter::compare(&a, json!({"v": 1, "extra": "x"}).as_object().unwrap())
            .unwrap_err();
        assert!(e.contains("`extra`"), "{e}");
    }
}

/// The frontmatter reader against yaml-rust2 (a YAML 1.2 parser) on generated
/// frontmatters: wherever the reader accepts a text, it reads what the library
/// reads. Native only: the library needs std, which the component has not.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod differential {
    use super::frontmatter;
    use proptest::prelude::*;
    use serde_json::{Map, Number, Value};
    use yaml_rust2::{Yaml, YamlLoader};

    /// yaml-rust2's document as JSON; `None` where JSON cannot hold it (a
    /// non-finite float, an alias, a non-string key).
    fn json(yaml: &Yaml) -> Option<Value> {
        Some(match yaml {
            Yaml::Null => Value::Null,
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Integer(i) => Value::from(*i),
            Yaml::Real(text) => Value::Number(Number::from_f64(
                yaml.as_f64().or_else(|| text.parse().ok())?,
            )?),
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Array(items) => Value::Array(items.iter().map(json).collect::<Option<_>>()?),
            Yaml::Hash(hash) => {
                let mut map = Map::new();
                for (k, v) in hash {
                    map.insert(k.as_str()?.to_string(), json(v)?);
                }
                Value::Object(map)
            }
            _ => return None,
        })
    }

    /// Plain scalars whose type YAML decides, and strings that look like them.
    /// Not `Null`, `True`, `FALSE` and their kin: the core schema (and the `yaml`
    /// package TypeScript servers write with) reads them as null and booleans,
    /// yaml-rust2 as strings; the reader follows the schema.
    const PLAIN: &[&str] = &[
        "x",
        "pdf-processing",
        "Extract text: and more",
        "Bash(git:*) Read",
        "1",
        "-7",
        "+3",
        "0",
        "007",
        "1.5",
        "1.50",
        "-0.25",
        "1e3",
        "2E-2",
        ".5",
        "1.",
        "0x1F",
        "0o17",
        "0b1",
        "true",
        "false",
        "yes",
        "No",
        "on",
        "null",
        "~",
        ".inf",
        "-.Inf",
        ".nan",
        "9223372036854775807",
        "9223372036854775808",
        "1_000",
        "12:30",
        "2024-01-02",
        "a # comment",
        "a#b",
        "é and ü",
        "it's",
        "v1.2.3",
        "-",
        "- x",
        "?",
        "a: b",
    ];

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(PLAIN).prop_map(str::to_string),
            "[a-zA-Z0-9 .:#'\"-]{0,12}".prop_map(|s| s.trim().to_string()),
            "[a-zA-Z0-9 :#'\\\\\"-]{0,10}".prop_map(|s| format!("'{}'", s.replace('\'', "''"))),
            "[a-zA-Z0-9 :#'\\\\\"-]{0,10}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ]
    }

    #[derive(Clone, Debug)]
    enum Node {
        Scalar(String),
        List(Vec<String>),
        Map(Vec<(String, Node)>),
    }

    fn node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![
            scalar().prop_map(Node::Scalar),
            proptest::collection::vec(scalar(), 1..4).prop_map(Node::List),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            proptest::collection::vec(("[a-z][a-z-]{0,6}", inner), 1..4).prop_map(Node::Map)
        })
    }

    fn render(entries: &[(String, Node)], indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        for (key, value) in entries {
            match value {
                Node::Scalar(s) => out.push_str(&format!("{pad}{key}: {s}\n")),
                Node::List(items) => {
                    out.push_str(&format!("{pad}{key}:\n"));
                    for item in items {
                        out.push_str(&format!("{pad}  - {item}\n"));
                    }
                }
                Node::Map(inner) => {
                    out.push_str(&format!("{pad}{key}:\n"));
                    render(inner, indent + 2, out);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn the_reader_reads_what_a_yaml_parser_reads(
            entries in proptest::collection::vec(("[a-z][a-z-]{0,6}", node()), 1..5)
        ) {
            let mut body = String::new();
            render(&entries, 0, &mut body);
            let ours = frontmatter::read(&format!("---\n{body}---\nbody"));
            let theirs = YamlLoader::load_from_str(&body)
                .ok()
                .and_then(|docs| docs.into_iter().next())
                .and_then(|doc| json(&doc));
            if let Ok(ours) = ours {
                prop_assert_eq!(Some(Value::Object(ours)), theirs, "{}", body);
            }
        }
    }

    /// The reader is not vacuous: the frontmatters Agent Skills write are read.
    #[test]
    fn the_reader_accepts_the_usual_frontmatter() {
        let body = "name: pdf\ndescription: \"Fill: forms\"\nlicense: Apache-2.0\nmetadata:\n  version: 1.0\n  tags:\n    - a\n";
        let ours = frontmatter::read(&format!("---\n{body}---\n")).unwrap();
        let theirs = json(&YamlLoader::load_from_str(body).unwrap()[0]).unwrap();
        assert_eq!(Value::Object(ours), theirs);
    }
}
