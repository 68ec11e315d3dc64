//! Arguments mapped between a tool's own schema and its adapted schema.
//!
//! A model fills in the adapted schema; the server expects its own. What a
//! conversion changed about *instances* is undone here, and only that:
//!
//! - **openai-strict**: every optional property is required and nullable, so the
//!   model sends `null` for one it would have left out. A `null` for an optional
//!   property whose own schema does not allow `null` is removed, and so is one whose
//!   default is `null` (pydantic's `Optional[X] = None`: the same call either way);
//!   where `null` is allowed and means something else, it stays (the conversion
//!   noted the ambiguity).
//! - **gemini**: parameter names fitted to Gemini's rules get their own names back.
//! - **mcp**, **openai**, **anthropic**: instances are the same; nothing to do.
//!
//! Both directions read the original schema with the same walk as the conversion
//! (`walk.rs`), so they agree on which properties are optional, through `$ref`,
//! `allOf` and `anyOf` alike. The result is then checked against the *original*
//! schema by the caller, as any other call: mapping never makes an invalid call
//! valid, it only removes what the adapted schema added. An argument value that is
//! not what the schema describes is left as it is, for that check to report.
//!
//! Each call reads the schema again; a caller mapping many calls of one tool may
//! keep the tool's schema small, or cache per tool.

use crate::prelude::*;

use serde_json::Value;

use super::json::Json;
use super::walk::{Body, Builder, Def, Doc, Node, Ty};
use super::{Dialect, gemini};

/// `arguments` produced under `dialect`'s adapted schema, as the tool's own
/// `input_schema` (JSON text) expects them. A schema that cannot be read leaves
/// the arguments as they are.
pub fn map_arguments_back(dialect: Dialect, input_schema: &str, arguments: Value) -> Value {
    map(dialect, input_schema, arguments, Direction::Back)
}

/// The inverse of [`map_arguments_back`]: arguments valid under the tool's own
/// schema as a model would write them under `dialect`'s adapted schema (strict
/// mode's `null` for each optional property left out, Gemini's fitted names). For
/// tests and examples.
pub fn map_arguments_forward(dialect: Dialect, input_schema: &str, arguments: Value) -> Value {
    map(dialect, input_schema, arguments, Direction::Forward)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Back,
    Forward,
}

fn map(dialect: Dialect, input_schema: &str, arguments: Value, direction: Direction) -> Value {
    if !matches!(dialect, Dialect::OpenAiStrict | Dialect::Gemini) {
        return arguments;
    }
    let Ok(schema) = serde_json::from_str::<Json>(input_schema) else {
        return arguments;
    };
    let doc = Doc::new(&schema, "/inputSchema");
    let mut notes = Vec::new();
    let mut builder = Builder::new(&doc, &mut notes, dialect == Dialect::OpenAiStrict);
    let root = builder.root();
    if builder.failure.is_some() {
        return arguments;
    }
    let defs = core::mem::take(&mut builder.defs);
    drop(builder);
    match dialect {
        Dialect::OpenAiStrict => {
            let mut arguments = arguments;
            let nulls = Nulls {
                defs: &defs,
                root: &root,
                direction,
            };
            nulls.walk(&root, &mut arguments, 0);
            arguments
        }
        _ => rename(&root, arguments, direction),
    }
}

/// Gemini's fitted parameter names, undone (or applied, forward).
fn rename(root: &Node<'_>, arguments: Value, direction: Direction) -> Value {
    let renames = gemini::parameter_names(root);
    let Value::Object(map) = arguments else {
        return arguments;
    };
    if renames.is_empty() {
        return Value::Object(map);
    }
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        let key = renames
            .iter()
            .find_map(|(original, fitted)| match direction {
                Direction::Back if *fitted == k => Some(original.to_string()),
                Direction::Forward if *original == k => Some(fitted.clone()),
                _ => None,
            })
            .unwrap_or(k);
        out.insert(key, v);
    }
    Value::Object(out)
}

/// How deep an instance is followed (deeper is left as it is).
const MAX_DEPTH: usize = 128;

/// Strict mode's `null`s for optional properties, removed (or added, forward).
struct Nulls<'d, 'a> {
    defs: &'d [Def<'a>],
    root: &'d Node<'a>,
    direction: Direction,
}

impl<'d, 'a> Nulls<'d, 'a> {
    /// The node a reference stands for.
    fn resolve(&self, mut node: &'d Node<'a>) -> &'d Node<'a> {
        for _ in 0..16 {
            match node.body {
                Body::Ref(i) => {
                    node = match &self.defs[i].node {
                        Some(n) => n,
                        None if self.defs[i].key.is_empty() => self.root,
                        None => return node,
                    }
                }
                _ => return node,
            }
        }
        node
    }

    /// The branch of `node` that describes `value`: the node itself, or the first
    /// `anyOf` branch of the value's type (for an object, one that lists every
    /// property the value has, if any does).
    fn shape(&self, node: &'d Node<'a>, value: &Value) -> Option<&'d Node<'a>> {
        let node = self.resolve(node);
        let fits = |n: &'d Node<'a>, strict_keys: bool| -> bool {
            let Body::Typed(t) = &n.body else {
                return false;
            };
            match (t.ty, value) {
                (Ty::Object, Value::Object(map)) => {
                    !strict_keys || map.keys().all(|k| t.properties.iter().any(|(p, _)| p == k))
                }
                (Ty::Array, Value::Array(_)) => true,
                _ => false,
            }
        };
        match &node.body {
            Body::Typed(_) => Some(node),
            Body::AnyOf(branches) => {
                let branches: Vec<&'d Node<'a>> =
                    branches.iter().map(|b| self.resolve(b)).collect();
                branches
                    .iter()
                    .find(|b| fits(b, true))
                    .or_else(|| branches.iter().find(|b| fits(b, false)))
                    .copied()
            }
            _ => None,
        }
    }

    fn walk(&self, node: &'d Node<'a>, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(shape) = self.shape(node, value) else {
            return;
        };
        let Body::Typed(t) = &shape.body else { return };
        match value {
            Value::Object(map) if t.ty == Ty::Object => {
                for (name, child) in &t.properties {
                    let optional = !t.required.contains(name);
                    match self.direction {
                        Direction::Back => {
                            let null_default = child.default.is_some_and(|d| d.v.is_null());
                            let remove = optional
                                && map.get(*name).is_some_and(Value::is_null)
                                && (!child.allows_null(self.defs, self.root) || null_default);
                            if remove {
                                map.remove(*name);
                            }
                        }
                        Direction::Forward => {
                            if optional
                                && !map.contains_key(*name)
                                && !matches!(child.body, Body::Never)
                            {
                                map.insert(name.to_string(), Value::Null);
                            }
                        }
                    }
                    if let Some(v) = map.get_mut(*name) {
                        self.walk(child, v, depth + 1);
                    }
                }
            }
            Value::Array(items) if t.ty == Ty::Array => {
                if let Some(item) = &t.items {
                    for v in items {
                        self.walk(item, v, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}
