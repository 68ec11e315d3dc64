//! Resources: what a `resources/read` result holds (`contents`, each item a
//! `text` or a base64 `blob` with its `uri` and `mimeType`), and the flat text
//! view of it. Listing is [`super::request`]'s; large blobs are written to host
//! files by [`crate::output::limit_contents`] on their way out of the manager.

use crate::prelude::*;

use serde_json::value::RawValue;

use super::CallResult;

/// A `resources/read` result: `content` is its `contents` list as the server
/// wrote it, `text` the text items joined with "\n".
pub(super) fn read_result(raw: &RawValue) -> Result<CallResult, String> {
    #[derive(serde::Deserialize)]
    struct Read<'a> {
        #[serde(borrow)]
        contents: Option<&'a RawValue>,
    }
    let read: Read<'_> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    let contents = read.contents.ok_or("no `contents` list")?;
    let items: Vec<&RawValue> =
        serde_json::from_str(contents.get()).map_err(|_| "`contents` is not a list")?;
    let text = items
        .iter()
        .filter_map(|item| serde_json::from_str::<TextItem>(item.get()).ok()?.text)
        .collect::<Vec<_>>()
        .join("\n");
    Ok(CallResult {
        is_error: false,
        text,
        content: contents.get().to_string(),
        structured_content: None,
    })
}

/// What the flat view reads of a contents item: its text, if it has one (a
/// blob is skipped, not built).
#[derive(serde::Deserialize)]
struct TextItem {
    #[serde(default)]
    text: Option<String>,
}
