//! The `openai-strict` dialect: OpenAI function tools with `strict: true`.
//!
//! Strict mode (Structured Outputs) constrains the model's output to the schema, so
//! it takes only the subset of JSON Schema its decoder compiles. The rules below are
//! the OpenAI guide's "Supported schemas" section (Structured Outputs), and the
//! openai SDK's own `to_strict_json_schema` (`openai/lib/_pydantic.py`) where the
//! guide is silent:
//!
//! - **Supported keywords.** Types string, number, boolean, integer, object,
//!   array, enum (and `const`), `anyOf`; for strings `pattern` and `format` (one of
//!   `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`,
//!   `uuid`); for numbers `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`; for arrays `minItems`, `maxItems`; `description` and `title`.
//!   `minLength`/`maxLength` are kept too: the guide lists them among what fine-tuned
//!   models "additionally do not support". Everything else is dropped with a note:
//!   `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`/`dependentSchemas` ("not
//!   yet supported"; `allOf` is merged by the walk), `uniqueItems`, `patternProperties`,
//!   `minProperties`/`maxProperties`, `default` (the SDK drops `default: null`
//!   itself: that one goes without a note), `examples` and other annotations.
//! - **Every property required, optional ones nullable.** "All fields or function
//!   parameters must be specified as `required`… it is possible to emulate an
//!   optional parameter by using a union type with `null`": an optional property's
//!   type gains `null` (`["string", "null"]`, or a `{"type": "null"}` branch), and
//!   [`map_arguments_back`](super::map_arguments_back) removes the model's `null`
//!   where the original does not allow one. A property that was optional *and*
//!   nullable cannot say "not given" apart from `null`: an
//!   [`Ambiguous`](super::NoteKind::Ambiguous) note, and the `null` is passed on.
//! - **`additionalProperties: false` on every object.** Where the server allowed
//!   other properties (by saying nothing, as pydantic does, or `true`, or a schema —
//!   a map such as pydantic's `dict[str, X]` or zod's `record`), strict mode can only
//!   offer what is listed: [`Narrowed`](super::NoteKind::Narrowed). An object that
//!   lists no properties at all can only be empty.
//! - **An object root, not `anyOf`**: a tool whose arguments are an `anyOf` at the
//!   root is refused (offer it as `openai`).
//! - **A type on every node.** A value the server left open (`{}`, pydantic's `Any`)
//!   is offered as a string, number or boolean (narrowed).
//! - **`$defs` and recursion are supported**, so references are kept: a lone `$ref`
//!   stays a `$ref` (to `#/$defs/…`, or `#` for the root), and every target it
//!   reaches is converted once into `$defs` — a recursive tree stays whole, and a
//!   model used in ten places is not written ten times into a schema whose size is
//!   bounded. A `$ref` with siblings is inlined, as the SDK does ("we can't use
//!   `$ref`s if there are also other properties defined"), unless it is recursive;
//!   then the reference is kept and the siblings are noted.
//! - **Size bounds**: "up to 5000 object properties total, with up to 10 levels of
//!   nesting"; "total string length of all property names, definition names, enum
//!   values, and const values cannot exceed 120,000 characters"; "up to 1000 enum
//!   values across all enum properties"; a single string enum of more than 250
//!   values at most 15,000 characters. The guide does not say how nesting is
//!   counted; here every object or array inside another counts a level, which fails
//!   closed. A tool over a bound is refused, naming it.
//!
//! No offline validator of these rules ships with the openai SDK (its request types
//! are TypedDicts); `tests/peers/provider_check.py` writes them as checks.
//!
//! The output schema, if any, goes to the Responses API's `output_schema` as the
//! `openai` dialect writes it: it describes what the tool returns, which strict mode
//! does not constrain.

use crate::prelude::*;
use alloc::collections::BTreeSet;

use super::json::{Json, Obj};
use super::walk::{self, Additional, Body, Builder, Doc, Failure, Node, Ty, Typed};
use super::{Converted, Note, NoteKind, openai};

/// String formats strict mode supports.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// "up to 5000 object properties total".
pub(crate) const MAX_PROPERTIES: usize = 5000;
/// "up to 10 levels of nesting".
pub(crate) const MAX_DEPTH: usize = 10;
/// "total string length of all property names, definition names, enum values, and
/// const values cannot exceed 120,000 characters".
pub(crate) const MAX_STRING_LENGTH: usize = 120_000;
/// "up to 1000 enum values across all enum properties".
pub(crate) const MAX_ENUM_VALUES: usize = 1000;

pub(super) fn convert(input: &Json, output: Option<&Json>, notes: &mut Vec<Note>) -> Converted {
    let doc = Doc::new(input, "/inputSchema");
    let mut builder = Builder::new(&doc, notes, true);
    let root = builder.root();
    if let Some(failure) = builder.failure.take() {
        return Err(failure);
    }
    let defs = core::mem::take(&mut builder.defs);
    drop(builder);
    let names = def_names(&defs);
    let mut writer = Writer {
        notes,
        names: &names,
        defs: &defs,
        root: &root,
    };
    let mut parameters = writer.root(&root)?;
    if defs.iter().any(|d| d.node.is_some()) {
        let mut out = Obj::new();
        for (def, name) in defs.iter().zip(&names) {
            if let Some(node) = &def.node {
                out.insert(name.clone(), writer.node(node, false));
            }
        }
        if let Json::Object(map) = &mut parameters {
            map.insert("$defs", Json::Object(out));
        }
    }
    within_bounds(&parameters)?;
    let output = output.and_then(|o| openai::output_schema(o, notes));
    Ok((Some(parameters), output))
}

/// A name in the written `$defs` for each kept target: the last token of its
/// pointer, told apart from the others (`""`, the root, is written `#`).
fn def_names(defs: &[walk::Def<'_>]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    defs.iter()
        .map(|def| {
            if def.key.is_empty() {
                return String::new();
            }
            let last = def.key.rsplit('/').next().unwrap_or("def");
            let base = last.replace("~1", "/").replace("~0", "~");
            let mut name = base.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            name
        })
        .collect()
}

struct Writer<'n, 'd, 'a> {
    notes: &'n mut Vec<Note>,
    names: &'d [String],
    defs: &'d [walk::Def<'a>],
    root: &'d Node<'a>,
}

impl Writer<'_, '_, '_> {
    fn note(&mut self, kind: NoteKind, pointer: String, lost: String) {
        self.notes.push(Note {
            kind,
            pointer,
            lost,
        });
    }

    fn root(&mut self, root: &Node<'_>) -> Result<Json, Failure> {
        match &root.body {
            Body::Typed(t) if t.ty == Ty::Object => {
                let mut out = self.node(root, false);
                if root.nullable
                    && let Json::Object(map) = &mut out
                {
                    // The arguments are an object, never `null`.
                    map.insert("type", Json::string("object"));
                }
                Ok(out)
            }
            // A tool that declares no parameters: an empty object.
            Body::Any => {
                self.note(
                    NoteKind::Narrowed,
                    root.ptr().to_string(),
                    "the arguments list no properties (any were allowed); strict mode takes an empty object".into(),
                );
                let mut out = Obj::new();
                out.insert("type", Json::string("object"));
                out.insert("properties", Json::Object(Obj::new()));
                out.insert("required", Json::Array(Vec::new()));
                out.insert("additionalProperties", Json::Bool(false));
                self.annotations(root, &mut out, false);
                Ok(Json::Object(out))
            }
            Body::AnyOf(_) => Err((
                root.ptr().to_string(),
                "the arguments are one of several shapes (`anyOf`/`oneOf` at the root), and strict mode wants a single object at the root; offer this tool as `openai`".into(),
            )),
            _ => Err((
                root.ptr().to_string(),
                "the input schema's root is not an object, and tool arguments are one".into(),
            )),
        }
    }

    /// A node as strict JSON Schema; `optional` makes it nullable (an optional
    /// property).
    fn node(&mut self, n: &Node<'_>, optional: bool) -> Json {
        let nullable = n.nullable || optional;
        let mut out = match &n.body {
            Body::Typed(t) => self.typed(n, t, nullable),
            Body::AnyOf(branches) => {
                let mut list: Vec<Json> = branches.iter().map(|b| self.node(b, false)).collect();
                if nullable {
                    list.push(null_branch());
                }
                let mut out = Obj::new();
                out.insert("anyOf", Json::Array(list));
                out
            }
            Body::Ref(i) => {
                let target = if self.names[*i].is_empty() {
                    "#".to_string()
                } else {
                    format!("#/$defs/{}", escape(&self.names[*i]))
                };
                let mut reference = Obj::new();
                reference.insert("$ref", Json::String(target));
                let annotated = n.description.is_some() || n.title.is_some();
                if nullable || annotated {
                    // `$ref` takes no siblings in strict mode: a one-branch `anyOf`
                    // carries the annotations, and `null` where it may be.
                    let mut list = vec![Json::Object(reference)];
                    if nullable {
                        list.push(null_branch());
                    }
                    let mut out = Obj::new();
                    out.insert("anyOf", Json::Array(list));
                    out
                } else {
                    reference
                }
            }
            Body::Any | Body::Cut(_) | Body::Never => {
                let lost = match &n.body {
                    Body::Never => {
                        "no value was allowed (`false`); strict mode needs a type".to_string()
                    }
                    _ => "any value was allowed; strict mode needs a type, so only strings, numbers, booleans and null are offered".to_string(),
                };
                let kind = if matches!(n.body, Body::Never) {
                    NoteKind::Widened
                } else {
                    NoteKind::Narrowed
                };
                self.note(kind, n.ptr().to_string(), lost);
                let mut list: Vec<Json> = ["string", "number", "boolean"]
                    .iter()
                    .map(|t| {
                        let mut b = Obj::new();
                        b.insert("type", Json::string(t));
                        Json::Object(b)
                    })
                    .collect();
                // Any value includes `null`.
                if nullable || !matches!(n.body, Body::Never) {
                    list.push(null_branch());
                }
                let mut out = Obj::new();
                out.insert("anyOf", Json::Array(list));
                out
            }
        };
        self.annotations(n, &mut out, true);
        Json::Object(out)
    }

    /// `description` and `title` kept; `default` and other annotations dropped.
    fn annotations(&mut self, n: &Node<'_>, out: &mut Obj, extras: bool) {
        let mut annotated = Obj::new();
        if let Some(d) = n.description {
            annotated.insert("description", Json::string(d.v));
        }
        if let Some(t) = n.title {
            annotated.insert("title", Json::string(t.v));
        }
        // Annotations first, as the server wrote them.
        for (k, v) in core::mem::take(out) {
            annotated.insert(k, v);
        }
        *out = annotated;
        if let Some(d) = n.default
            && !d.v.is_null()
        {
            self.note(
                NoteKind::Dropped,
                n.at(d.src, "default"),
                format!(
                    "`default` {} (strict mode takes no defaults)",
                    walk::shown(d.v)
                ),
            );
        }
        if extras {
            for e in &n.extra {
                let (key, value) = e.v;
                self.note(
                    NoteKind::Dropped,
                    n.at(e.src, key),
                    format!("`{key}` {}", walk::shown(value)),
                );
            }
        }
    }

    fn typed(&mut self, n: &Node<'_>, t: &Typed<'_>, nullable: bool) -> Obj {
        let mut out = Obj::new();
        let ty = Json::string(t.ty.name());
        if nullable && t.ty != Ty::Null {
            out.insert("type", Json::Array(vec![ty, Json::string("null")]));
        } else {
            out.insert("type", ty);
        }
        if let Some(e) = &t.enumeration {
            let mut values: Vec<Json> = e.v.iter().map(|v| (*v).clone()).collect();
            if nullable && t.ty != Ty::Null {
                values.push(Json::Null);
            }
            out.insert("enum", Json::Array(values));
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
                for (slot, key) in [
                    (t.minimum, "minimum"),
                    (t.maximum, "maximum"),
                    (t.exclusive_minimum, "exclusiveMinimum"),
                    (t.exclusive_maximum, "exclusiveMaximum"),
                    (t.multiple_of, "multipleOf"),
                ] {
                    if let Some(k) = slot {
                        out.insert(key, k.v.clone());
                    }
                }
            }
            Ty::Array => {
                let items = match &t.items {
                    Some(items) => self.node(items, false),
                    // No `items` (or a tuple's, dropped): noted where the array is.
                    None => self.node(&Node::any_at(n.ptr().to_string()), false),
                };
                out.insert("items", items);
                for (slot, key) in [(t.min_items, "minItems"), (t.max_items, "maxItems")] {
                    if let Some(k) = slot {
                        out.insert(key, k.v.clone());
                    }
                }
            }
            Ty::Object => self.object(n, t, &mut out),
            Ty::Boolean | Ty::Null => {}
        }
        if let Some(f) = t.format {
            if t.ty == Ty::String && FORMATS.contains(&f.v) {
                out.insert("format", Json::string(f.v));
            } else {
                self.note(
                    NoteKind::Dropped,
                    n.at(f.src, "format"),
                    format!("`format` `{}` (strict mode does not support it)", f.v),
                );
            }
        }
        out
    }

    fn object(&mut self, n: &Node<'_>, t: &Typed<'_>, out: &mut Obj) {
        let mut properties = Obj::new();
        let mut required = Vec::new();
        for (name, child) in &t.properties {
            let optional = !t.required.contains(name);
            if matches!(child.body, Body::Never) {
                self.note(
                    NoteKind::Dropped,
                    child.ptr().to_string(),
                    format!("property `{name}`, which must not be given (`false`)"),
                );
                continue;
            }
            // Optional and nullable: `null` and "not given" differ, unless `null` is
            // the default (pydantic's `Optional[X] = None`), when they mean the same.
            let null_default = child.default.is_some_and(|d| d.v.is_null());
            if optional && child.allows_null(self.defs, self.root) && !null_default {
                self.note(
                    NoteKind::Ambiguous,
                    child.ptr().to_string(),
                    format!(
                        "`{name}` is optional and may be null: strict mode sends `null` for both, and `null` is passed on"
                    ),
                );
            }
            properties.insert(*name, self.node(child, optional));
            required.push(Json::string(name));
        }
        for name in &t.required {
            if !t.properties.iter().any(|(p, _)| p == name) {
                self.note(
                    NoteKind::Widened,
                    walk::child(n.ptr(), "required"),
                    format!("`{name}` is required but has no schema in `properties`; strict mode can only require listed properties"),
                );
            }
        }
        match &t.additional {
            Additional::Allowed(src) => self.note(
                NoteKind::Narrowed,
                n.at(*src, "additionalProperties"),
                "other properties were allowed; strict mode takes only the listed ones".into(),
            ),
            Additional::Schema(node, _) => self.note(
                NoteKind::Narrowed,
                node.ptr().to_string(),
                "properties not listed (a map's entries) were allowed with this schema; strict mode takes only the listed ones".into(),
            ),
            Additional::Unsaid if t.properties.is_empty() => self.note(
                NoteKind::Narrowed,
                n.ptr().to_string(),
                "an object with no listed properties (any were allowed) can only be empty in strict mode".into(),
            ),
            Additional::Unsaid => self.note(
                NoteKind::Narrowed,
                n.ptr().to_string(),
                "`additionalProperties` not said (others were allowed); strict mode takes only the listed properties".into(),
            ),
            Additional::Forbidden(_) => {}
        }
        for (slot, key) in [
            (t.min_properties, "minProperties"),
            (t.max_properties, "maxProperties"),
        ] {
            if let Some(k) = slot {
                self.note(
                    NoteKind::Dropped,
                    n.at(k.src, key),
                    format!(
                        "`{key}` {} (strict mode does not list it)",
                        walk::shown(k.v)
                    ),
                );
            }
        }
        out.insert("properties", Json::Object(properties));
        out.insert("required", Json::Array(required));
        out.insert("additionalProperties", Json::Bool(false));
    }
}

fn null_branch() -> Json {
    let mut b = Obj::new();
    b.insert("type", Json::string("null"));
    Json::Object(b)
}

/// A `$defs` name as a JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Strict mode's documented size bounds, or the first one the schema exceeds.
pub(crate) fn within_bounds(schema: &Json) -> Result<(), Failure> {
    let mut tally = Tally::default();
    tally.walk(schema, 0, "/inputSchema".into());
    if let Some(failure) = tally.too_deep {
        return Err(failure);
    }
    let checks = [
        (
            tally.properties > MAX_PROPERTIES,
            format!(
                "{} object properties in all; strict mode takes up to {MAX_PROPERTIES}",
                tally.properties
            ),
        ),
        (
            tally.strings > MAX_STRING_LENGTH,
            format!(
                "{} characters of property names, definition names and enum values; strict mode takes up to {MAX_STRING_LENGTH}",
                tally.strings
            ),
        ),
        (
            tally.enum_values > MAX_ENUM_VALUES,
            format!(
                "{} enum values in all; strict mode takes up to {MAX_ENUM_VALUES}",
                tally.enum_values
            ),
        ),
    ];
    for (over, why) in checks {
        if over {
            return Err((
                "/inputSchema".into(),
                format!("{why}; offer this tool as `openai`"),
            ));
        }
    }
    if let Some(failure) = tally.long_enum {
        return Err(failure);
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    properties: usize,
    strings: usize,
    enum_values: usize,
    too_deep: Option<Failure>,
    long_enum: Option<Failure>,
}

impl Tally {
    /// Counts `v`, a schema `depth` objects/arrays deep.
    fn walk(&mut self, v: &Json, depth: usize, ptr: String) {
        let Json::Object(map) = v else { return };
        let nests = matches!(
            map.get("type"),
            Some(Json::String(t)) if t == "object" || t == "array"
        ) || matches!(map.get("type"), Some(Json::Array(list)) if list.iter().any(|t| t.as_str() == Some("object") || t.as_str() == Some("array")));
        let depth = depth + usize::from(nests);
        if depth > MAX_DEPTH && self.too_deep.is_none() {
            self.too_deep = Some((
                ptr.clone(),
                format!(
                    "objects and arrays nest more than {MAX_DEPTH} levels deep; strict mode takes up to {MAX_DEPTH}; offer this tool as `openai`"
                ),
            ));
        }
        if let Some(Json::Array(values)) = map.get("enum") {
            self.enum_values += values.len();
            let mut length = 0;
            for v in values {
                if let Json::String(s) = v {
                    length += s.chars().count();
                }
            }
            self.strings += length;
            if values.len() > 250 && length > 15_000 && self.long_enum.is_none() {
                self.long_enum = Some((
                    walk::child(&ptr, "enum"),
                    format!(
                        "an enum of {} values and {length} characters; strict mode takes up to 15,000 characters in an enum of more than 250 values; offer this tool as `openai`",
                        values.len()
                    ),
                ));
            }
        }
        if let Some(Json::Object(props)) = map.get("properties") {
            self.properties += props.len();
            for (name, sub) in props.iter() {
                self.strings += name.chars().count();
                self.walk(
                    sub,
                    depth,
                    walk::child(&walk::child(&ptr, "properties"), name),
                );
            }
        }
        if let Some(Json::Object(defs)) = map.get("$defs") {
            for (name, sub) in defs.iter() {
                self.strings += name.chars().count();
                // A definition nests from where it is used; counted from the root
                // here, as the guide does not say.
                self.walk(sub, 0, walk::child(&walk::child(&ptr, "$defs"), name));
            }
        }
        if let Some(items) = map.get("items") {
            self.walk(items, depth, walk::child(&ptr, "items"));
        }
        if let Some(Json::Array(branches)) = map.get("anyOf") {
            for (i, b) in branches.iter().enumerate() {
                self.walk(
                    b,
                    depth.saturating_sub(usize::from(nests)),
                    walk::child(&walk::child(&ptr, "anyOf"), &i.to_string()),
                );
            }
        }
    }
}
