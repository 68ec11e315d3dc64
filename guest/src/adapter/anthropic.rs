//! The `anthropic` dialect: Anthropic Messages API tools.
//!
//! The envelope is `{name, description, input_schema}` (`ToolParam` in the
//! anthropic SDK). `input_schema` is "[JSON schema](https://json-schema.org/draft/2020-12)
//! for this tool's input" whose `type` must be `"object"` (`InputSchemaTyped`:
//! `type: Required[Literal["object"]]`), and otherwise takes JSON Schema as it is —
//! `$defs` and `$ref` included, which is how FastMCP servers reach Claude today. So
//! the schema is the server's own, with two checks:
//!
//! - **the root is an object**: a root without `type` gets `"object"` (MCP arguments
//!   are always an object), a root of another type is refused;
//! - **every `$ref` resolves** within the schema: one that does not would be refused
//!   by the API for every tool in the request, so the tool is refused here instead,
//!   with the reference named.
//!
//! Nothing is lost, so this dialect makes no schema notes. Anthropic has no place
//! for an output schema.

use crate::prelude::*;

use serde_json::value::RawValue;

use super::json::Json;
use super::walk::{self, Doc, Failure};
use super::{AdaptedTool, Converted, Field, Note, envelope, openai};

pub(super) fn convert(mut input: Json, notes: &mut Vec<Note>) -> Converted {
    references_resolve(&input, "/inputSchema")?;
    openai::object_root(&mut input, "/inputSchema", notes)?;
    Ok((Some(input), None))
}

/// Every `$ref` in the document resolves within it, or the first that does not.
fn references_resolve(schema: &Json, base: &'static str) -> Result<(), Failure> {
    let doc = Doc::new(schema, base);
    let mut ptr = String::new();
    check(&doc, schema, &mut ptr)
}

fn check(doc: &Doc<'_>, v: &Json, ptr: &mut String) -> Result<(), Failure> {
    match v {
        Json::Object(map) => {
            if let Some(Json::String(reference)) = map.get("$ref") {
                doc.resolve(reference)
                    .map_err(|why| (doc.at(&walk::child(ptr, "$ref")), why))?;
            }
            for (k, sub) in map {
                let len = ptr.len();
                *ptr = walk::child(ptr, k);
                check(doc, sub, ptr)?;
                ptr.truncate(len);
            }
        }
        Json::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                let len = ptr.len();
                *ptr = walk::child(ptr, &i.to_string());
                check(doc, sub, ptr)?;
                ptr.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `{name, description, input_schema}`.
pub(super) fn definition(tool: &AdaptedTool) -> Box<RawValue> {
    let mut fields = vec![("name", Field::Str(&tool.name))];
    if let Some(d) = &tool.description {
        fields.push(("description", Field::Str(d)));
    }
    match &tool.parameters {
        Some(p) => fields.push(("input_schema", Field::Raw(p))),
        None => fields.push(("input_schema", Field::Null)),
    }
    envelope(&fields)
}
