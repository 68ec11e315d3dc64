//! `Mcp-Param-*` headers (SEP-2243): a tool's `x-mcp-header` annotations, checked
//! when it is listed, and the header values a call's arguments give.

use crate::prelude::*;

use serde_json::Value;

use crate::transport::Pair;

/// Checks the `x-mcp-header` annotations of a tool's parameters (SEP-2243): each
/// is a non-empty HTTP token, unique regardless of case, on a string, integer or
/// boolean parameter. A tool that breaks a rule is not offered: its calls could
/// not carry the `Mcp-Param-*` headers the server relies on. Returns the
/// (property, header name) pairs.
pub(super) fn check_param_headers(schema: &str) -> Result<Vec<(String, String)>, String> {
    let schema: Value = serde_json::from_str(schema).map_err(|e| e.to_string())?;
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut headers = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (param, spec) in properties {
        let Some(header) = spec.get("x-mcp-header") else {
            continue;
        };
        let Some(header) = header.as_str() else {
            return Err(format!("on `{param}` it is {header}, not a string"));
        };
        if header.is_empty() {
            return Err(format!("on `{param}` it is empty"));
        }
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if !header.bytes().all(token) {
            return Err(format!(
                "on `{param}`, {header:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
            ));
        }
        let lower = header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!("{header:?} names more than one parameter"));
        }
        seen.push(lower);
        let primitive = matches!(
            spec.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if !primitive {
            return Err(format!(
                "`{param}` is not a string, integer or boolean parameter"
            ));
        }
        headers.push((param.clone(), header.to_string()));
    }
    Ok(headers)
}

/// The `Mcp-Param-*` headers for a call (SEP-2243): each annotated parameter with
/// a non-null argument, as text: a string as is, a number in JSON notation, a
/// boolean as `true`/`false`. The host encodes values that are not plain ASCII.
pub(super) fn param_headers(annotated: &[(String, String)], arguments: &str) -> Vec<Pair> {
    if annotated.is_empty() {
        return Vec::new();
    }
    let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(arguments) else {
        return Vec::new();
    };
    annotated
        .iter()
        .filter_map(|(param, header)| {
            let value = match arguments.get(param)? {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                // Null means absent; structures cannot be headers (the schema
                // check keeps them out unless the schema could not be compiled).
                _ => return None,
            };
            Some(Pair {
                name: header.clone(),
                value,
            })
        })
        .collect()
}
