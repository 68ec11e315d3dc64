//! Reading one source file: with a size cap, as JSON with comments (VS Code and
//! Cursor allow them; the others' files are plain JSON, which is a subset), with
//! object members in file order.

use std::io::Read;
use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstObject, CstRootNode};
use serde_json::Value;

/// Why a file was not used.
pub(crate) enum Unusable {
    /// It does not exist.
    Missing,
    /// Anything else, with the reason for people.
    Skipped(String),
}

/// Reads `path` as UTF-8 text of at most `max_bytes` bytes.
pub(crate) fn read_text(path: &Path, max_bytes: u64) -> Result<String, Unusable> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
        Err(e) => return Err(Unusable::Skipped(format!("cannot be read: {e}"))),
    };
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Unusable::Skipped("is a directory, not a file".into()));
    }
    // Read one byte past the cap, so a file of exactly the cap is accepted and
    // a longer one is known to be longer without reading all of it.
    let mut bytes = Vec::new();
    if let Err(e) = file
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
    {
        return Err(Unusable::Skipped(format!("cannot be read: {e}")));
    }
    if bytes.len() as u64 > max_bytes {
        return Err(Unusable::Skipped(format!(
            "is larger than {max_bytes} bytes, the most mcpbox reads from a configuration file"
        )));
    }
    String::from_utf8(bytes).map_err(|e| Unusable::Skipped(format!("is not UTF-8 text ({e})")))
}

/// A JSON object's members, in file order. (`serde_json`'s map sorts its keys;
/// the order of servers in a file is kept for the report and the output.)
pub(crate) type Members = Vec<(String, Value)>;

/// A parsed JSON file (comments and trailing commas allowed) whose top level is
/// an object.
pub(crate) struct Document {
    /// Kept alive while its children are used: the tree's nodes point up to it.
    root: CstRootNode,
}

/// What is at a path in a [`Document`].
pub(crate) enum Found {
    /// Nothing.
    Absent,
    /// An object: its members in file order.
    Object(Members),
    /// Something else (described for a message: "an array").
    Other(&'static str),
}

impl Document {
    /// Parses `text`; the error says where and what, for people.
    pub(crate) fn parse(text: &str) -> Result<Document, String> {
        let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
            format!(
                "is not valid JSON: line {}, column {}: {}",
                e.line_display(),
                e.column_display(),
                e.kind()
            )
        })?;
        match root.value() {
            None => Err("is empty".into()),
            Some(v) if v.as_object().is_none() => {
                Err("does not hold a JSON object at the top level".into())
            }
            Some(_) => Ok(Document { root }),
        }
    }

    /// What is at `path` (object keys from the top).
    pub(crate) fn at(&self, path: &[&str]) -> Found {
        let Some(mut object) = self.root.object_value() else {
            return Found::Other("not an object");
        };
        for (i, key) in path.iter().enumerate() {
            let Some(prop) = last_prop(&object, key) else {
                return Found::Absent;
            };
            let Some(value) = prop.value() else {
                return Found::Absent;
            };
            match value.as_object() {
                Some(inner) => object = inner,
                None => {
                    let kind = value
                        .to_serde_value()
                        .map_or("not an object", |v| kind_of(&v));
                    return if i + 1 == path.len() {
                        Found::Other(kind)
                    } else {
                        Found::Absent
                    };
                }
            }
        }
        Found::Object(members(&object))
    }
}

/// The last property called `key`, as `JSON.parse` reads a repeated key.
fn last_prop(object: &CstObject, key: &str) -> Option<jsonc_parser::cst::CstObjectProp> {
    object
        .properties()
        .into_iter()
        .rev()
        .find(|p| p.decoded_name().as_deref() == Some(key))
}

fn members(object: &CstObject) -> Members {
    object
        .properties()
        .into_iter()
        .filter_map(|p| {
            let name = p.decoded_name()?;
            let value = p.value()?.to_serde_value()?;
            Some((name, value))
        })
        .collect()
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The last member called `key`, as `JSON.parse` reads a repeated key.
pub(crate) fn get<'a>(members: &'a Members, key: &str) -> Option<&'a Value> {
    members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}
