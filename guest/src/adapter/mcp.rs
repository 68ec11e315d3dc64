//! The `mcp` dialect: the tool as its server described it.
//!
//! Nothing is converted and nothing is lost: an MCP client (or a platform that
//! converts for itself) gets the server's own schema text, under the registry name.

use crate::prelude::*;

use serde_json::value::RawValue;

use super::{AdaptedTool, Field, envelope};

/// An MCP `Tool`: `{name, description, inputSchema, outputSchema}`.
pub(super) fn definition(tool: &AdaptedTool) -> Box<RawValue> {
    let mut fields = vec![("name", Field::Str(&tool.name))];
    if let Some(d) = &tool.description {
        fields.push(("description", Field::Str(d)));
    }
    match &tool.parameters {
        Some(p) => fields.push(("inputSchema", Field::Raw(p))),
        None => fields.push(("inputSchema", Field::Null)),
    }
    if let Some(o) = &tool.output {
        fields.push(("outputSchema", Field::Raw(o)));
    }
    envelope(&fields)
}
