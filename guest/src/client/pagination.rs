//! Pagination: following a list's `nextCursor` from page to page until the
//! server sends none, for the tool list ([`super::listing`]) and the lists
//! beyond tools (resources, resource templates, prompts: [`super::request`]).
//!
//! A server decides how many pages a list has, so a cursor is followed only
//! while it is new ([`Cursors::repeated`]: a server that sends one twice would
//! loop) and for at most [`MAX_PAGES`] pages; either stop keeps the items so
//! far and says so with a warning. (The bytes a listing may take are each
//! list's own limit, `maxListBytes`, checked where its pages are read.)

use crate::prelude::*;
use alloc::collections::BTreeSet;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{CallResult, ResultKind, result_kind};

/// A listing that never ends (a server inventing cursors) stops here.
pub(super) const MAX_PAGES: usize = 1000;

/// The cursors a list has followed, and how many pages it has fetched.
#[derive(Debug)]
pub(super) struct Cursors {
    seen: BTreeSet<String>,
    pages: usize,
}

impl Default for Cursors {
    /// The first page, which needs no cursor, is under way.
    fn default() -> Self {
        Cursors {
            seen: BTreeSet::new(),
            pages: 1,
        }
    }
}

impl Cursors {
    /// Whether the server sent `cursor` before (it is remembered if not).
    pub(super) fn repeated(&mut self, cursor: &str) -> bool {
        !self.seen.insert(cursor.to_string())
    }

    /// Whether [`MAX_PAGES`] pages were fetched: no cursor is followed now.
    pub(super) fn at_limit(&self) -> bool {
        self.pages >= MAX_PAGES
    }

    /// The next page is asked for.
    pub(super) fn followed(&mut self) {
        self.pages += 1;
    }
}

/// One page of a list beyond tools.
pub(super) struct Page {
    pub(super) items: Vec<Box<RawValue>>,
    pub(super) next_cursor: Option<String>,
}

pub(super) fn read_page(key: &str, raw: &RawValue) -> Result<Page, String> {
    // The page's fields, unread: only the list and the cursor are read.
    let page: alloc::collections::BTreeMap<&str, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|e| format!("not a JSON object: {e}"))?;
    let text = |name: &str| -> Option<Value> {
        page.get(name)
            .and_then(|v| serde_json::from_str(v.get()).ok())
    };
    if let ResultKind::Other(kind) = result_kind(text("resultType").as_ref()) {
        return Err(format!("unknown resultType {kind}"));
    }
    let list = page.get(key).ok_or_else(|| format!("no `{key}` list"))?;
    let items: Vec<Box<RawValue>> =
        serde_json::from_str(list.get()).map_err(|_| format!("`{key}` is not a list"))?;
    let next_cursor = match text("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => return Err(format!("nextCursor is {other}, not a string")),
    };
    Ok(Page { items, next_cursor })
}

/// Every page's items as one result; `text` names them one a line.
pub(super) fn list_result(key: &str, items: Vec<Box<RawValue>>) -> CallResult {
    let field = match key {
        "resources" => "uri",
        "resourceTemplates" => "uriTemplate",
        "skills" => "uri",
        "tasks" => "taskId",
        _ => "name",
    };
    let text = items
        .iter()
        .filter_map(|item| {
            let map: Map<String, Value> = serde_json::from_str(item.get()).ok()?;
            map.get(field)?.as_str().map(String::from)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut content = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            content.push(',');
        }
        content.push_str(item.get());
    }
    content.push(']');
    CallResult {
        is_error: false,
        text,
        content,
        structured_content: None,
    }
}
