//! The `gemini` dialect: Gemini `FunctionDeclaration`s.
//!
//! The envelope is `{name, description, parameters, response}` (`FunctionDeclaration`
//! in the google-genai SDK). `parameters` and `response` are Gemini `Schema`s: "a
//! select subset of an OpenAPI 3.0 schema object". The SDK's own conversion of
//! pydantic schemas (`_transformers.process_schema`) and the errors the API answers
//! with set the rules:
//!
//! - **One `type` per node**, written as OpenAPI writes it (`"string"`; the SDK's
//!   `Type` enum takes either case). Type arrays become `anyOf` (a branch per type,
//!   each with the keywords that apply to it) — the walk does this.
//! - **`nullable: true`** instead of a `null` type or an `anyOf` branch `{"type":
//!   "null"}` (the SDK's `handle_null_fields`).
//! - **No `$ref`/`$defs`**: references are inlined (the SDK inlines them too for the
//!   Gemini API); a recursive one is cut after a bounded depth to `{}`, which is
//!   where the SDK cuts it.
//! - **No `const`**: a one-value `enum` (the SDK does the same).
//! - **`enum` only on strings** (`Schema.enum: list[str]`): an `enum` of numbers or
//!   booleans is dropped, widened.
//! - **`format` only where supported**: `date-time` for strings, `float`/`double`
//!   for numbers, `int32`/`int64` for integers. The API answered other string
//!   formats with "only 'enum' and 'date-time' are supported for STRING type" (MCP
//!   tools with `format: "uri"` broke Gemini clients this way); they are dropped.
//! - **No `additionalProperties`**: the SDK refuses it outside Vertex AI
//!   ("additionalProperties is only supported in … not in Gemini Developer API
//!   mode"); dropped, with a note where it said something.
//! - **`properties` and `required` only on objects**, and `required` only names that
//!   are in `properties` ("properties: only allowed for OBJECT type"; unknown
//!   required names were refused): the walk's normal form puts them only on objects,
//!   and a required name without a schema is dropped, widened.
//! - **Keywords beside `anyOf` move into its branches** (the walk distributes them).
//! - **`parameters` is an object with properties**: the API refuses "properties:
//!   should be non-empty for OBJECT type" at the root, so a tool that takes no
//!   parameters has none; a root that is not an object (or is an `anyOf` of
//!   shapes) is refused.
//! - **Parameter names** "must start with a letter or an underscore and must only
//!   contain chars a-z, A-Z, 0-9, or underscores with a maximum length of 64"
//!   (`FunctionDeclaration.parameters`): the root's property names are fitted
//!   (`names.rs`), noted, and mapped back by
//!   [`map_arguments_back`](super::map_arguments_back).
//! - **Property order** is kept with `propertyOrdering`, as the SDK writes it: the
//!   API's `properties` is a map, which does not keep order.
//! - Kept as the SDK's `Schema` has them: `description`, `title`, `default`,
//!   `example`, `pattern`, `minLength`/`maxLength`, `minimum`/`maximum` (an
//!   exclusive bound becomes inclusive, widened), `minItems`/`maxItems`,
//!   `minProperties`/`maxProperties`. Everything else (`multipleOf`, `uniqueItems`,
//!   `patternProperties`, `not`, `examples`, …) is dropped with a note.
//!
//! Newer API versions also take `parametersJsonSchema` (plain JSON Schema); this
//! dialect writes `parameters`, which every Gemini API version and relay accepts.

use crate::prelude::*;

use serde_json::value::RawValue;

use super::json::{Json, Obj};
use super::names;
use super::walk::{self, Additional, Body, Builder, Doc, Failure, Node, Ty, Typed};
use super::{AdaptedTool, Converted, Field, Note, NoteKind, envelope};

pub(super) fn convert(input: &Json, output: Option<&Json>, notes: &mut Vec<Note>) -> Converted {
    let doc = Doc::new(input, "/inputSchema");
    let mut builder = Builder::new(&doc, notes, false);
    let root = builder.root();
    if let Some(failure) = builder.failure.take() {
        return Err(failure);
    }
    drop(builder);
    let parameters = Writer { notes }.root(&root)?;
    let output = output.and_then(|o| response(o, notes));
    Ok((parameters, output))
}

/// The output schema as Gemini's `response`; a schema that cannot be read is left
/// out, noted (the tool can still be called).
fn response(output: &Json, notes: &mut Vec<Note>) -> Option<Json> {
    let doc = Doc::new(output, "/outputSchema");
    let mut builder = Builder::new(&doc, notes, false);
    let node = builder.root();
    if let Some((pointer, why)) = builder.failure.take() {
        notes.push(Note {
            kind: NoteKind::Dropped,
            pointer,
            lost: format!("the output schema, not offered as `response`: {why}"),
        });
        return None;
    }
    drop(builder);
    Some(Writer { notes }.node(&node, &[]))
}

/// Gemini's parameter names for the root's properties: (original, fitted) for each
/// that changes. [`map_arguments_back`](super::map_arguments_back) uses the same.
pub(super) fn parameter_names<'a>(root: &Node<'a>) -> Vec<(&'a str, String)> {
    match &root.body {
        Body::Typed(t) if t.ty == Ty::Object => {
            let names: Vec<&str> = t.properties.iter().map(|(n, _)| *n).collect();
            names::fit_parameter_names(&names)
        }
        _ => Vec::new(),
    }
}

struct Writer<'n> {
    notes: &'n mut Vec<Note>,
}

impl Writer<'_> {
    fn note(&mut self, kind: NoteKind, pointer: String, lost: String) {
        self.notes.push(Note {
            kind,
            pointer,
            lost,
        });
    }

    fn root(&mut self, root: &Node<'_>) -> Result<Option<Json>, Failure> {
        match &root.body {
            Body::Typed(t) if t.ty == Ty::Object => {
                if t.properties.is_empty() {
                    // A tool without parameters: Gemini wants no `parameters` then.
                    if !matches!(t.additional, Additional::Forbidden(_)) {
                        self.note(
                            NoteKind::Narrowed,
                            root.ptr().to_string(),
                            "the arguments list no properties (any were allowed); Gemini calls it with none".into(),
                        );
                    }
                    return Ok(None);
                }
                let renames = parameter_names(root);
                for (from, to) in &renames {
                    self.note(
                        NoteKind::Renamed,
                        walk::child(&walk::child(root.ptr(), "properties"), from),
                        format!("parameter `{from}` is `{to}` for Gemini (maps back)"),
                    );
                }
                Ok(Some(self.node(root, &renames)))
            }
            Body::Any => {
                self.note(
                    NoteKind::Narrowed,
                    root.ptr().to_string(),
                    "the arguments list no properties (any were allowed); Gemini calls it with none".into(),
                );
                Ok(None)
            }
            Body::AnyOf(_) => Err((
                root.ptr().to_string(),
                "the arguments are one of several shapes (`anyOf`/`oneOf` at the root), and Gemini's `parameters` is one OBJECT schema".into(),
            )),
            _ => Err((
                root.ptr().to_string(),
                "the input schema's root is not an object, and Gemini's `parameters` is one".into(),
            )),
        }
    }

    /// A node as a Gemini `Schema`; `renames` fits its property names (the root's).
    fn node(&mut self, n: &Node<'_>, renames: &[(&str, String)]) -> Json {
        let mut out = Obj::new();
        if let Some(d) = n.description {
            out.insert("description", Json::string(d.v));
        }
        if let Some(t) = n.title {
            out.insert("title", Json::string(t.v));
        }
        match &n.body {
            Body::Typed(t) if t.ty == Ty::Null => {
                out.insert("nullable", Json::Bool(true));
            }
            Body::Typed(t) => self.typed(n, t, renames, &mut out),
            Body::AnyOf(branches) => {
                let list = branches.iter().map(|b| self.node(b, &[])).collect();
                out.insert("anyOf", Json::Array(list));
            }
            Body::Never => self.note(
                NoteKind::Widened,
                n.ptr().to_string(),
                "no value was allowed here (`false`); Gemini has no such schema".into(),
            ),
            // A cut is `{}`, as the SDK cuts recursion.
            Body::Any | Body::Cut(_) | Body::Ref(_) => {}
        }
        if n.nullable {
            out.insert("nullable", Json::Bool(true));
        }
        if let Some(d) = n.default {
            out.insert("default", d.v.clone());
        }
        for e in &n.extra {
            let (key, value) = e.v;
            if key == "example" {
                out.insert("example", value.clone());
                continue;
            }
            self.note(
                NoteKind::Dropped,
                n.at(e.src, key),
                format!("`{key}` {}", walk::shown(value)),
            );
        }
        Json::Object(out)
    }

    fn typed(&mut self, n: &Node<'_>, t: &Typed<'_>, renames: &[(&str, String)], out: &mut Obj) {
        out.insert("type", Json::string(t.ty.name()));
        if let Some(e) = &t.enumeration {
            if t.ty == Ty::String {
                out.insert(
                    "enum",
                    Json::Array(e.v.iter().map(|v| (*v).clone()).collect()),
                );
            } else {
                let values: Vec<String> = e.v.iter().map(|v| v.to_string()).collect();
                self.note(
                    NoteKind::Widened,
                    n.at(e.src, "enum"),
                    format!(
                        "`enum` [{}] (Gemini takes `enum` on strings only)",
                        values.join(", ")
                    ),
                );
            }
        }
        if let Some(f) = t.format {
            let supported = match t.ty {
                Ty::String => f.v == "date-time",
                Ty::Number => matches!(f.v, "float" | "double"),
                Ty::Integer => matches!(f.v, "int32" | "int64"),
                _ => false,
            };
            if supported {
                out.insert("format", Json::string(f.v));
            } else {
                self.note(
                    NoteKind::Dropped,
                    n.at(f.src, "format"),
                    format!("`format` `{}` (Gemini supports `date-time` for strings, `float`/`double`, `int32`/`int64`)", f.v),
                );
            }
        }
        match t.ty {
            Ty::String => {
                if let Some(p) = t.pattern {
                    out.insert("pattern", Json::string(p.v));
                }
                for (slot, key) in [(t.min_length, "minLength"), (t.max_length, "maxLength")] {
                    if let Some(k) = slot {
                        out.insert(key, k.v.clone());
                    }
                }
            }
            Ty::Integer | Ty::Number => {
                self.bound(
                    n,
                    out,
                    t.minimum,
                    t.exclusive_minimum,
                    "minimum",
                    "exclusiveMinimum",
                    true,
                );
                self.bound(
                    n,
                    out,
                    t.maximum,
                    t.exclusive_maximum,
                    "maximum",
                    "exclusiveMaximum",
                    false,
                );
                if let Some(m) = t.multiple_of {
                    self.note(
                        NoteKind::Dropped,
                        n.at(m.src, "multipleOf"),
                        format!("`multipleOf` {}", walk::shown(m.v)),
                    );
                }
            }
            Ty::Array => {
                let items = match &t.items {
                    Some(items) => self.node(items, &[]),
                    // The API wants `items` on every array; `{}` allows anything.
                    None => Json::Object(Obj::new()),
                };
                out.insert("items", items);
                for (slot, key) in [(t.min_items, "minItems"), (t.max_items, "maxItems")] {
                    if let Some(k) = slot {
                        out.insert(key, k.v.clone());
                    }
                }
            }
            Ty::Object => self.object(n, t, renames, out),
            Ty::Boolean | Ty::Null => {}
        }
    }

    /// `minimum`/`maximum`, an exclusive bound made inclusive where it is the tighter.
    #[allow(clippy::too_many_arguments)]
    fn bound(
        &mut self,
        n: &Node<'_>,
        out: &mut Obj,
        inclusive: Option<walk::Kw<&Json>>,
        exclusive: Option<walk::Kw<&Json>>,
        key: &str,
        exclusive_key: &str,
        lower: bool,
    ) {
        let tighter = |x: f64, y: f64| if lower { x >= y } else { x <= y };
        let value = match (inclusive, exclusive) {
            (Some(i), Some(e)) => {
                let (Some(x), Some(y)) = (i.v.as_f64(), e.v.as_f64()) else {
                    return;
                };
                if tighter(x, y) && x != y {
                    Some(i.v.clone())
                } else {
                    self.widened_bound(n, e, exclusive_key);
                    Some(e.v.clone())
                }
            }
            (Some(i), None) => Some(i.v.clone()),
            (None, Some(e)) => {
                self.widened_bound(n, e, exclusive_key);
                Some(e.v.clone())
            }
            (None, None) => None,
        };
        if let Some(v) = value {
            out.insert(key, v);
        }
    }

    fn widened_bound(&mut self, n: &Node<'_>, e: walk::Kw<&Json>, key: &str) {
        self.note(
            NoteKind::Widened,
            n.at(e.src, key),
            format!(
                "`{key}` {} is inclusive for Gemini (it has no exclusive bounds)",
                walk::shown(e.v)
            ),
        );
    }

    fn object(&mut self, n: &Node<'_>, t: &Typed<'_>, renames: &[(&str, String)], out: &mut Obj) {
        let fitted = |name: &str| -> String {
            renames
                .iter()
                .find(|(from, _)| *from == name)
                .map(|(_, to)| to.clone())
                .unwrap_or_else(|| name.to_string())
        };
        let mut properties = Obj::new();
        let mut order = Vec::new();
        for (name, child) in &t.properties {
            if matches!(child.body, Body::Never) {
                self.note(
                    NoteKind::Dropped,
                    child.ptr().to_string(),
                    format!("property `{name}`, which must not be given (`false`)"),
                );
                continue;
            }
            let key = fitted(name);
            order.push(Json::String(key.clone()));
            properties.insert(key, self.node(child, &[]));
        }
        let mut required = Vec::new();
        for name in &t.required {
            if t.properties
                .iter()
                .any(|(p, c)| p == name && !matches!(c.body, Body::Never))
            {
                required.push(Json::String(fitted(name)));
            } else {
                self.note(
                    NoteKind::Widened,
                    walk::child(n.ptr(), "required"),
                    format!("`{name}` is required but has no schema in `properties`, which Gemini refuses"),
                );
            }
        }
        self.additional(t, n);
        if !properties.is_empty() {
            out.insert("properties", Json::Object(properties));
        }
        if !required.is_empty() {
            out.insert("required", Json::Array(required));
        }
        if order.len() > 1 {
            out.insert("propertyOrdering", Json::Array(order));
        }
        for (slot, key) in [
            (t.min_properties, "minProperties"),
            (t.max_properties, "maxProperties"),
        ] {
            if let Some(k) = slot {
                out.insert(key, k.v.clone());
            }
        }
    }

    /// `additionalProperties`, which Gemini does not take: noted where it said
    /// something.
    fn additional(&mut self, t: &Typed<'_>, n: &Node<'_>) {
        let (pointer, lost) = match &t.additional {
            Additional::Unsaid => return,
            Additional::Allowed(src) => (
                n.at(*src, "additionalProperties"),
                "`additionalProperties`: other properties were allowed; Gemini offers only the listed ones".to_string(),
            ),
            Additional::Forbidden(src) => (
                n.at(*src, "additionalProperties"),
                "`additionalProperties` false: other properties are no longer refused".to_string(),
            ),
            Additional::Schema(node, _) => (
                node.ptr().to_string(),
                "`additionalProperties`: the schema of properties not listed (a map's entries)".to_string(),
            ),
        };
        self.note(NoteKind::Dropped, pointer, lost);
    }
}

/// `FunctionDeclaration {name, description, parameters, response}`.
pub(super) fn definition(tool: &AdaptedTool) -> Box<RawValue> {
    let mut fields = vec![("name", Field::Str(&tool.name))];
    if let Some(d) = &tool.description {
        fields.push(("description", Field::Str(d)));
    }
    if let Some(p) = &tool.parameters {
        fields.push(("parameters", Field::Raw(p)));
    }
    if let Some(o) = &tool.output {
        fields.push(("response", Field::Raw(o)));
    }
    envelope(&fields)
}
