//! Output limits: a tool result too large for an agent's context, and the images
//! and audio in results, go to host files instead of through the caller.
//!
//! Agent platforms keep about 100 KB of a tool's output in context (Claude Code's
//! default is 25,000 tokens); a result past that costs the model its context and
//! the embedder memory. So a result whose `content` and `structuredContent` take
//! more than `maxBytes` (default 100,000) is written whole to a file the host
//! keeps, and the caller gets, in its place:
//!
//! 1. the head of its text (as much as fits in the limit, cut at a character),
//! 2. a note with the full size and where the rest is, and
//! 3. a `resource_link` block to the file (`file://…`, with its MIME type and size).
//!
//! Image and audio blocks are written the same way, each to its own file
//! (decoded, `.png`, `.wav`, …), and replaced by a `resource_link`, unless the
//! configuration or the embedder asks for media inline: base64 in a context
//! window is worse than useless. Files are the host's: the guest asks the
//! `mcpbox:runtime/blobs` import to write them, within limits the host sets, and
//! never sees the file system. When the host will not write one (no directory,
//! over its limits), the result is still cut, and the note says why the rest is
//! gone; media then stay inline.
//!
//! One result writes at most `maxFiles` media files (default 100), plus the one
//! file of an oversized result: 20,000 one-pixel images must not become 20,000
//! files. Media past the cap stay inline, with a warning saying how many and why
//! (and count toward the size limit, so a large rest goes into the result's file).
//!
//! Cost: a result under the limit with no media is passed on untouched (two
//! length checks and a substring search). A result over it is parsed once more
//! here and handed to the host once, as bytes; what crosses back to the
//! embedder is the head, so a 10 MB result costs one copy out of the guest
//! instead of two (its text and its content list).

use crate::prelude::*;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::client::CallResult;
use crate::config::types::{ConfigIssue, kind_of};
use crate::transport::{Blob, Platform};

/// Results larger than this (bytes of `content` and `structuredContent` JSON)
/// go to a file.
pub const DEFAULT_MAX_BYTES: u64 = 100_000;

/// The most media files one result writes.
pub const DEFAULT_MAX_FILES: u64 = 100;

/// How results are limited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The most bytes of result passed on whole.
    pub max_bytes: u64,
    /// The most media files one result writes.
    pub max_files: u64,
    /// Keep images and audio inline (base64) instead of writing them to files.
    pub inline_media: bool,
    /// `media` was written in the configuration (the gateway's default, inline,
    /// gives way to it).
    pub media_configured: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_bytes: DEFAULT_MAX_BYTES,
            max_files: DEFAULT_MAX_FILES,
            inline_media: false,
            media_configured: false,
        }
    }
}

impl Settings {
    /// Reads the top-level `output` object: `{"maxBytes": 100000, "maxFiles": 100,
    /// "media": "files" | "inline"}`. Problems are issues; the defaults stand in.
    pub fn read(value: Option<&Value>, issues: &mut Vec<ConfigIssue>) -> Settings {
        let mut settings = Settings::default();
        let mut issue = |field: &str, message: String| {
            issues.push(ConfigIssue {
                server: None,
                field: Some(field.into()),
                message,
            });
        };
        let map = match value {
            None | Some(Value::Null) => return settings,
            Some(Value::Object(map)) => map,
            Some(other) => {
                issue(
                    "output",
                    format!(
                        "must be an object like {{\"maxBytes\": 100000, \"media\": \"files\"}}, but is {}",
                        kind_of(other)
                    ),
                );
                return settings;
            }
        };
        for key in map
            .keys()
            .filter(|k| !["maxBytes", "maxFiles", "media"].contains(&k.as_str()))
        {
            issue(
                &format!("output.{key}"),
                format!(
                    "unknown key `{key}`, ignored (output has `maxBytes`, `maxFiles` and `media`)"
                ),
            );
        }
        match map.get("maxFiles") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) => settings.max_files = n,
                None => issue(
                    "output.maxFiles",
                    format!(
                        "must be a number of files, like 100, but is {v}; using {DEFAULT_MAX_FILES}"
                    ),
                ),
            },
        }
        match map.get("maxBytes") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64().filter(|n| *n > 0) {
                Some(n) => settings.max_bytes = n,
                None => issue(
                    "output.maxBytes",
                    format!(
                        "must be a positive number of bytes, like 100000, but is {v}; \
                         using {DEFAULT_MAX_BYTES}"
                    ),
                ),
            },
        }
        match map.get("media") {
            None | Some(Value::Null) => {}
            Some(v) if v == "files" => {
                settings.inline_media = false;
                settings.media_configured = true;
            }
            Some(v) if v == "inline" => {
                settings.inline_media = true;
                settings.media_configured = true;
            }
            Some(v) => issue(
                "output.media",
                format!("must be \"files\" or \"inline\", but is {v}; using \"files\""),
            ),
        }
        settings
    }
}

/// MIME types of media blocks and the file extension they get.
fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "webm",
        m if m.starts_with("image/") || m.starts_with("audio/") => "bin",
        _ => "bin",
    }
}

/// Limits one call's result. `tool` (the registry name) and `call` name the
/// files; `server` is the configured server name. Returns the result to pass
/// on and warnings (a file the host would not write).
pub fn limit<P: Platform>(
    result: CallResult,
    settings: &Settings,
    server: &str,
    tool: &str,
    call: u64,
    platform: &mut P,
) -> (CallResult, Vec<String>) {
    let size = result.content.len() + result.structured_content.as_ref().map_or(0, String::len);
    let media = !settings.inline_media
        && (result.content.contains("\"image\"") || result.content.contains("\"audio\""));
    if size as u64 <= settings.max_bytes && !media {
        return (result, Vec::new());
    }
    let mut warnings = Vec::new();
    let Ok(mut blocks) = serde_json::from_str::<Vec<Value>>(&result.content) else {
        return (result, warnings);
    };
    if media {
        let (mut written, mut kept) = (0u64, 0u64);
        for (i, block) in blocks.iter_mut().enumerate() {
            if written >= settings.max_files {
                kept += u64::from(is_media(block));
                continue;
            }
            if let Some(link) = media_to_file(block, server, tool, call, i, platform, &mut warnings)
            {
                *block = link;
                written += 1;
            }
        }
        if kept > 0 {
            warnings.push(format!(
                "{tool}: {kept} images or audio clips of its result were passed on inline: one \
                 result writes at most {} files (the configuration's output.maxFiles)",
                settings.max_files
            ));
        }
    }
    let content = Value::Array(blocks).to_string();
    let size = content.len() + result.structured_content.as_ref().map_or(0, String::len);
    if size as u64 <= settings.max_bytes {
        let text = flat_text(&content);
        let result = CallResult {
            text,
            content,
            ..result
        };
        return (result, warnings);
    }
    (
        spill(
            result, content, size, settings, server, tool, call, platform,
        ),
        warnings,
    )
}

/// Whether `block` is an image or audio block.
fn is_media(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("image" | "audio")
    )
}

/// Writes an image or audio block's data to a file; the `resource_link` block
/// that replaces it, or `None` to leave it as it is.
fn media_to_file<P: Platform>(
    block: &Value,
    server: &str,
    tool: &str,
    call: u64,
    index: usize,
    platform: &mut P,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    let kind = block.get("type").and_then(Value::as_str)?;
    if kind != "image" && kind != "audio" {
        return None;
    }
    let data = block.get("data").and_then(Value::as_str)?;
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        warnings.push(format!(
            "{tool}: an {kind} block of the result is not valid base64; passed on as it is"
        ));
        return None;
    };
    let name = format!("{tool}-{call}-{index}.{}", extension(mime));
    match platform.write_blob(server, &name, mime, &bytes) {
        Ok(Blob { uri, size }) => {
            let mut link = Map::new();
            link.insert("type".into(), "resource_link".into());
            link.insert("uri".into(), uri.into());
            link.insert("name".into(), name.into());
            link.insert("mimeType".into(), mime.into());
            link.insert("size".into(), size.into());
            link.insert(
                "description".into(),
                format!("the {kind} {tool} returned, written to a file by mcpbox").into(),
            );
            if let Some(annotations) = block.get("annotations") {
                link.insert("annotations".into(), annotations.clone());
            }
            Some(Value::Object(link))
        }
        Err(e) => {
            warnings.push(format!(
                "{tool}: the {kind} in its result was passed on inline: the host did not write \
                 it to a file ({e})"
            ));
            None
        }
    }
}

/// Replaces an oversized result by its head, a note and a link to the whole.
#[allow(clippy::too_many_arguments)]
fn spill<P: Platform>(
    result: CallResult,
    content: String,
    size: usize,
    settings: &Settings,
    server: &str,
    tool: &str,
    call: u64,
    platform: &mut P,
) -> CallResult {
    let text = flat_text(&content);
    let only_text = result.structured_content.is_none()
        && serde_json::from_str::<Vec<Value>>(&content).is_ok_and(|blocks| {
            blocks
                .iter()
                .all(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        });
    // Text alone is kept as text; anything else as the result's JSON.
    let (name, mime, bytes) = if only_text {
        (
            format!("{tool}-{call}.txt"),
            "text/plain",
            text.clone().into_bytes(),
        )
    } else {
        let mut whole = format!("{{\"content\":{content}");
        if let Some(s) = &result.structured_content {
            whole.push_str(",\"structuredContent\":");
            whole.push_str(s);
        }
        whole.push('}');
        (
            format!("{tool}-{call}.json"),
            "application/json",
            whole.into_bytes(),
        )
    };
    let written = platform.write_blob(server, &name, mime, &bytes);
    // Room for the note and the link; the rest of the limit is the head.
    let room = (settings.max_bytes as usize).saturating_sub(1024).max(256);
    let head = head_of(&text, room);
    let shown = if head.len() < text.len() {
        format!("the first {} bytes of its text are above", head.len())
    } else {
        "its text is above".to_string()
    };
    let dropped = if result.structured_content.is_some() {
        "; its structuredContent is only in the file"
    } else {
        ""
    };
    let mut blocks = vec![json!({"type": "text", "text": head})];
    let note = match written {
        Ok(Blob { uri, size: written }) => {
            blocks.push(Value::Null); // the note, below
            blocks.push(json!({
                "type": "resource_link", "uri": uri, "name": name, "mimeType": mime, "size": written,
                "description": format!("the whole result of {tool}, written to a file by mcpbox"),
            }));
            format!(
                "[mcpbox: the result of {tool} was {} (over the {} limit), so {shown}{dropped}; \
                 the whole result is in {uri}]",
                format_bytes(size as u64),
                format_bytes(settings.max_bytes)
            )
        }
        Err(e) => {
            blocks.push(Value::Null);
            format!(
                "[mcpbox: the result of {tool} was {} (over the {} limit), so {shown}{dropped}; \
                 the rest is gone: the host did not keep it ({e})]",
                format_bytes(size as u64),
                format_bytes(settings.max_bytes)
            )
        }
    };
    blocks[1] = json!({"type": "text", "text": note});
    let content = Value::Array(blocks).to_string();
    CallResult {
        is_error: result.is_error,
        text: flat_text(&content),
        content,
        structured_content: None,
    }
}

/// The text blocks of a content list, joined with "\n" (the flat view).
fn flat_text(content: &str) -> String {
    let blocks: Vec<Value> = serde_json::from_str(content).unwrap_or_default();
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn head_of(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `1.2 MB`, `100 KB`, `512 bytes` (decimal units, as the limit is written).
pub fn format_bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{}.{} MB", n / 1_000_000, (n % 1_000_000) / 100_000),
        n if n >= 1_000 => format!("{} KB", n / 1_000),
        n => format!("{n} bytes"),
    }
}

/// Limits one `resources/read` result (`result.content` is its `contents`
/// list): when the list takes more than `max_bytes`, each blob, and each text
/// longer than the limit, is written whole to a host file and replaced by a
/// text item with the head of the text (none for a blob) and a note saying
/// where the rest is; the item's `_meta` `"mcpbox/file"` holds the file's
/// `uri`, `mimeType` and `size`. A blob is decoded first: the file holds the
/// bytes. `uri` (the resource's) names the files with `call`.
pub fn limit_contents<P: Platform>(
    result: CallResult,
    settings: &Settings,
    server: &str,
    uri: &str,
    call: u64,
    platform: &mut P,
) -> (CallResult, Vec<String>) {
    if result.content.len() as u64 <= settings.max_bytes {
        return (result, Vec::new());
    }
    let mut warnings = Vec::new();
    let Ok(mut items) = serde_json::from_str::<Vec<Value>>(&result.content) else {
        return (result, warnings);
    };
    let total = result.content.len() as u64;
    drop(result);
    let room = (settings.max_bytes as usize).saturating_sub(1024).max(256);
    for (index, item) in items.iter_mut().enumerate() {
        let item_uri = item
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or(uri)
            .to_string();
        let mime = item
            .get("mimeType")
            .and_then(Value::as_str)
            .map(String::from);
        let (bytes, head, mime) = if let Some(blob) = item.get("blob").and_then(Value::as_str) {
            match base64::engine::general_purpose::STANDARD.decode(blob) {
                Ok(bytes) => (
                    bytes,
                    String::new(),
                    mime.unwrap_or_else(|| "application/octet-stream".into()),
                ),
                Err(_) => {
                    warnings.push(format!(
                        "resources/read {uri} on server `{server}`: item {index} has a blob that is not valid base64; it was dropped"
                    ));
                    (Vec::new(), String::new(), "application/octet-stream".into())
                }
            }
        } else if let Some(text) = item.get("text").and_then(Value::as_str) {
            if text.len() <= room {
                continue;
            }
            let head = head_of(text, room).to_string();
            (
                text.as_bytes().to_vec(),
                head,
                mime.unwrap_or_else(|| "text/plain".into()),
            )
        } else {
            continue;
        };
        let ext = match extension(&mime) {
            "bin" if mime.starts_with("text/") => "txt",
            "bin" if mime == "application/json" => "json",
            ext => ext,
        };
        let name = format!("resource-{call}-{index}.{ext}");
        let size = bytes.len() as u64;
        let shown = if head.is_empty() {
            String::new()
        } else {
            format!("the first {} bytes are above; ", head.len())
        };
        let (note, file) = if bytes.is_empty() {
            (
                format!("[mcpbox: {item_uri} held a blob that is not valid base64; dropped]"),
                None,
            )
        } else {
            match platform.write_blob(server, &name, &mime, &bytes) {
                Ok(Blob {
                    uri: file,
                    size: written,
                }) => (
                    format!(
                        "[mcpbox: {item_uri} is {} ({mime}; the read was {}, over the {} limit): {shown}the whole of it is in {file}]",
                        format_bytes(size),
                        format_bytes(total),
                        format_bytes(settings.max_bytes)
                    ),
                    Some(json!({"uri": file, "mimeType": mime, "size": written})),
                ),
                Err(e) => (
                    format!(
                        "[mcpbox: {item_uri} is {} ({mime}; the read was {}, over the {} limit): {shown}the rest is gone: the host did not keep it ({e})]",
                        format_bytes(size),
                        format_bytes(total),
                        format_bytes(settings.max_bytes)
                    ),
                    None,
                ),
            }
        };
        let text = if head.is_empty() {
            note
        } else {
            format!("{head}\n{note}")
        };
        let mut replaced = Map::new();
        replaced.insert("uri".into(), item_uri.into());
        replaced.insert("mimeType".into(), "text/plain".into());
        replaced.insert("text".into(), text.into());
        if let Some(file) = file {
            replaced.insert("_meta".into(), json!({ "mcpbox/file": file }));
        }
        *item = Value::Object(replaced);
    }
    let text = items
        .iter()
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let result = CallResult {
        is_error: false,
        text,
        content: Value::Array(items).to_string(),
        structured_content: None,
    };
    (result, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakePlatform;

    fn result(content: Value) -> CallResult {
        let content = content.to_string();
        CallResult {
            is_error: false,
            text: flat_text(&content),
            content,
            structured_content: None,
        }
    }

    fn small() -> Settings {
        Settings {
            max_bytes: 2_000,
            ..Settings::default()
        }
    }

    const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

    #[test]
    fn a_small_text_result_passes_untouched() {
        let mut p = FakePlatform::new();
        let r = result(json!([{"type": "text", "text": "hi"}]));
        let (out, warnings) = limit(r.clone(), &small(), "s", "mcp__s__t", 1, &mut p);
        assert_eq!(out, r);
        assert!(warnings.is_empty());
        assert!(p.blobs.is_empty());
    }

    #[test]
    fn an_oversized_text_result_becomes_its_head_a_note_and_a_link() {
        let mut p = FakePlatform::new();
        let big = "é".repeat(3_000); // 6,000 bytes; a cut must not split a character
        let r = result(json!([{"type": "text", "text": big}]));
        let (out, _) = limit(r, &small(), "s", "mcp__s__t", 7, &mut p);
        let blocks: Vec<Value> = serde_json::from_str(&out.content).unwrap();
        assert_eq!(blocks.len(), 3);
        let head = blocks[0]["text"].as_str().unwrap();
        assert_eq!(
            head.len(),
            976,
            "2,000 - 1,024 bytes, at a character boundary"
        );
        assert!(big.starts_with(head));
        let note = blocks[1]["text"].as_str().unwrap();
        assert_eq!(
            note,
            "[mcpbox: the result of mcp__s__t was 6 KB (over the 2 KB limit), so the first 976 \
             bytes of its text are above; the whole result is in mem://blobs/0]"
        );
        assert_eq!(
            blocks[2],
            json!({"type": "resource_link", "uri": "mem://blobs/0", "name": "mcp__s__t-7.txt",
                   "mimeType": "text/plain", "size": 6000,
                   "description": "the whole result of mcp__s__t, written to a file by mcpbox"})
        );
        assert_eq!(out.text, format!("{head}\n{note}"));
        // The file holds exactly the text.
        assert_eq!(p.blobs[0].0, "s");
        assert_eq!(p.blobs[0].2, big.as_bytes());
    }

    /// A result of many images writes `maxFiles` of them; the rest stay inline,
    /// with a warning, and being large go into the result's one file.
    #[test]
    fn one_result_writes_at_most_max_files_media_files() {
        let mut blocks = vec![json!({"type": "text", "text": "pixels"})];
        for _ in 0..50 {
            blocks.push(json!({"type": "image", "data": PIXEL, "mimeType": "image/png"}));
        }
        let settings = Settings {
            max_files: 10,
            ..small()
        };
        let mut p = FakePlatform::new();
        let (out, warnings) = limit(
            result(Value::Array(blocks)),
            &settings,
            "s",
            "mcp__s__many",
            1,
            &mut p,
        );
        assert_eq!(p.blobs.len(), 11, "10 images and the whole result");
        assert_eq!(
            warnings,
            [
                "mcp__s__many: 40 images or audio clips of its result were passed on inline: one \
              result writes at most 10 files (the configuration's output.maxFiles)"
            ]
        );
        let whole: Value = serde_json::from_slice(&p.blobs[10].2).unwrap();
        let kept = whole["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "image")
            .count();
        assert_eq!(
            kept, 40,
            "nothing is lost: the rest is in the result's file"
        );
        assert!(
            out.text.contains("the whole result is in mem://blobs/10"),
            "{}",
            out.text
        );
    }

    #[test]
    fn images_go_to_files_unless_asked_inline() {
        let content = json!([{"type": "text", "text": "a red pixel"},
                             {"type": "image", "data": PIXEL, "mimeType": "image/png"}]);
        let mut p = FakePlatform::new();
        let (out, warnings) = limit(
            result(content.clone()),
            &small(),
            "s",
            "mcp__s__img",
            3,
            &mut p,
        );
        assert!(warnings.is_empty());
        let blocks: Vec<Value> = serde_json::from_str(&out.content).unwrap();
        assert_eq!(blocks[0], json!({"type": "text", "text": "a red pixel"}));
        assert_eq!(blocks[1]["type"], "resource_link");
        assert_eq!(blocks[1]["name"], "mcp__s__img-3-1.png");
        assert_eq!(blocks[1]["mimeType"], "image/png");
        assert_eq!(blocks[1]["size"], 70);
        assert_eq!(&p.blobs[0].2[..4], b"\x89PNG", "decoded");
        assert_eq!(out.text, "a red pixel");
        // Inline on request.
        let inline = Settings {
            inline_media: true,
            ..small()
        };
        let r = result(content);
        assert_eq!(limit(r.clone(), &inline, "s", "t", 3, &mut p).0, r);
    }

    #[test]
    fn when_the_host_keeps_nothing_the_result_is_cut_and_media_stay() {
        let mut p = FakePlatform::new();
        p.refuse_blobs = Some("no result directory".into());
        let r = result(json!([{"type": "text", "text": "x".repeat(5_000)}]));
        let (out, _) = limit(r, &small(), "s", "mcp__s__t", 1, &mut p);
        assert!(out.text.starts_with(&"x".repeat(976)));
        assert!(
            out.text.ends_with(
                "the rest is gone: the host did not keep it (denied: no result directory)]"
            ),
            "{}",
            out.text
        );
        let r = result(json!([{"type": "image", "data": PIXEL, "mimeType": "image/png"}]));
        let (out, warnings) = limit(r.clone(), &small(), "s", "mcp__s__t", 1, &mut p);
        assert_eq!(out, r);
        assert!(warnings[0].contains("passed on inline"), "{warnings:?}");
    }

    #[test]
    fn structured_content_over_the_limit_goes_to_the_file_as_json() {
        let mut p = FakePlatform::new();
        let mut r = result(json!([{"type": "text", "text": "summary"}]));
        r.structured_content = Some(json!({"rows": "y".repeat(3_000)}).to_string());
        let (out, _) = limit(r, &small(), "s", "mcp__s__q", 2, &mut p);
        assert_eq!(out.structured_content, None);
        assert!(
            out.text
                .contains("its structuredContent is only in the file"),
            "{}",
            out.text
        );
        let whole: Value = serde_json::from_slice(&p.blobs[0].2).unwrap();
        assert_eq!(whole["content"][0]["text"], "summary");
        assert_eq!(
            whole["structuredContent"]["rows"].as_str().unwrap().len(),
            3_000
        );
        assert_eq!(p.blobs[0].1, "mcp__s__q-2.json");
    }

    #[test]
    fn settings_from_the_configuration() {
        let mut issues = Vec::new();
        let s = Settings::read(
            Some(&json!({"maxBytes": 5000, "maxFiles": 3, "media": "inline"})),
            &mut issues,
        );
        assert_eq!((s.max_bytes, s.max_files, s.inline_media), (5000, 3, true));
        assert!(issues.is_empty());
        let s = Settings::read(
            Some(&json!({"maxBytes": -1, "maxFiles": "all", "media": "x", "colour": 1})),
            &mut issues,
        );
        assert_eq!(s, Settings::default());
        let fields: Vec<_> = issues.iter().map(|i| i.field.clone().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "output.colour",
                "output.maxFiles",
                "output.maxBytes",
                "output.media"
            ]
        );
        assert_eq!(format_bytes(1_234_567), "1.2 MB");
    }
}
