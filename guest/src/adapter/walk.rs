//! The shared schema walk: a JSON Schema read into one normal form.
//!
//! Providers that take a subset of JSON Schema (OpenAI strict mode, Gemini) differ
//! in how they write things down, but not in what has to be worked out first. This
//! file works it out once, into a tree of [`Node`]s:
//!
//! - **`$ref` resolved** within the document: JSON pointers (`#/$defs/X`,
//!   `#/definitions/X`, and the `#/properties/a/items` zod-to-json-schema writes),
//!   `$anchor` names and `#` itself. A reference outside the document would need a
//!   fetch, which mcpbox never does: the tool is refused, as the guest's validator
//!   refuses to compile it (`schema.rs`). A target is inlined where the reference
//!   is; one already being inlined on the same path more than [`RECURSION_LIMIT`]
//!   times is cut to a permissive node (reported), and so is everything past
//!   [`NODE_BUDGET`] nodes (a schema whose references fan out). The strict dialect
//!   keeps references instead (OpenAI supports `$defs` and recursion): a lone `$ref`
//!   becomes [`Body::Ref`] and its target a [`Def`].
//! - **`$ref` beside other keywords and `allOf` merged**: since draft 2019-09 a
//!   `$ref`'s siblings apply alongside it, as `allOf`'s parts do, so both are the same
//!   operation here: a node is made of *parts*, each with the pointer it came from,
//!   and their keywords are combined: types and `enum`s intersected, bounds
//!   tightened, `properties` and `required` united (a property in two parts gets
//!   both). What cannot be combined (two different `pattern`s) keeps the first and
//!   says so. A schema that declares draft 7 or earlier in `$schema` is read as that
//!   draft: a `$ref` there replaces its siblings, as the validator reads it.
//! - **`anyOf`/`oneOf` distributed**: `{A, anyOf: [B, C]}` is `anyOf: [A∧B, A∧C]`,
//!   so keywords beside a combinator move into each branch (Gemini refuses
//!   `properties` beside `anyOf` on a node without `type`; the "`anyOf` inside
//!   `items`" bug of hand-written converters is this step done wrong). A `oneOf` is
//!   read as `anyOf` — noted as widened unless its branches cannot overlap (different
//!   types, or objects told apart by a required `const` property, as discriminated
//!   unions are). Branches that only list `required` names ("at least one of") are
//!   dropped as a whole, widened.
//! - **types normalised**: a type array becomes one branch per type (each with the
//!   keywords that apply to it); `null` among the types, a `{"type": "null"}` branch,
//!   or `null` in an `enum` becomes the node's `nullable` flag; `const` is a one-value
//!   `enum`; `integer` and `number` together are `number`. A node with no `type` but
//!   keywords of one type (`properties` alone) is given that type, narrowed.
//!
//! Keywords the normal form does not model (`not`, `if`, `patternProperties`,
//! `uniqueItems`, `examples`, `x-…`, …) are carried as [`Node::extra`] with their
//! pointers, for each dialect to keep or drop with a note.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use super::json::{Json, Obj};

use super::{Note, NoteKind};

/// How many times one `$ref` target may be inlined on one path from the root
/// before the next occurrence is cut: a recursive tree unfolds this many levels.
pub(crate) const RECURSION_LIMIT: usize = 2;

/// How many nodes one schema may grow to by inlining before further references
/// are cut: references that fan out (each definition using two others, ten deep)
/// would otherwise multiply the schema.
pub(crate) const NODE_BUDGET: usize = 5_000;

/// The JSON pointer of `key` under `ptr` (RFC 6901 escaping).
pub(crate) fn child(ptr: &str, key: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + key.len() + 1);
    out.push_str(ptr);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// A value shown in a note: short JSON.
pub(crate) fn shown(v: &Json) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// JSON equality with numbers compared as numbers (`1` and `1.0` are the same
/// value to JSON Schema).
pub(crate) fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// One schema document (an `inputSchema` or `outputSchema`) and how to resolve
/// references in it.
pub(crate) struct Doc<'a> {
    /// The document.
    pub root: &'a Json,
    /// Its pointer in the tool definition: `/inputSchema` or `/outputSchema`.
    pub base: &'static str,
    /// Its own `$id`, without fragment: a `$ref` to it is local.
    id: Option<&'a str>,
    /// Draft 7 or earlier declared: `$ref` replaces its siblings.
    pub legacy_ref: bool,
    /// The draft declared in `$schema`, if any.
    draft: Option<u32>,
}

/// A resolved `$ref`.
pub(crate) struct Target<'a> {
    /// The schema referred to.
    pub value: &'a Json,
    /// Its pointer within the document (`""` for the root, `/$defs/X`).
    pub key: String,
}

impl<'a> Doc<'a> {
    pub fn new(root: &'a Json, base: &'static str) -> Doc<'a> {
        let draft = root
            .get("$schema")
            .and_then(Json::as_str)
            .and_then(declared_draft);
        Doc {
            root,
            base,
            id: root
                .get("$id")
                .or_else(|| root.get("id"))
                .and_then(Json::as_str)
                .map(|s| s.trim_end_matches('#'))
                .filter(|s| !s.is_empty()),
            legacy_ref: draft.is_some_and(|d| d <= 7),
            draft,
        }
    }

    /// Whether `key` is a keyword of a later draft than the one declared (`const`
    /// in draft 4): not a keyword here, so it says nothing, as the validator reads it.
    pub fn foreign(&self, key: &str) -> bool {
        let since = match key {
            "const" | "contains" | "propertyNames" => 6,
            "if" | "then" | "else" => 7,
            "dependentRequired"
            | "dependentSchemas"
            | "minContains"
            | "maxContains"
            | "unevaluatedProperties"
            | "unevaluatedItems" => 2019,
            "prefixItems" => 2020,
            _ => return false,
        };
        self.draft.is_some_and(|d| d < since)
    }

    /// The pointer of a position in the document, in the tool definition.
    pub fn at(&self, key: &str) -> String {
        format!("{}{key}", self.base)
    }

    /// Resolves a `$ref` within the document, or says why not.
    pub fn resolve(&self, reference: &str) -> Result<Target<'a>, String> {
        let (base, fragment) = match reference.split_once('#') {
            Some((base, fragment)) => (base, fragment),
            None => (reference, ""),
        };
        if !base.is_empty() && Some(base) != self.id {
            return Err(format!(
                "`$ref` `{reference}` refers outside the schema, and mcpbox never fetches schemas"
            ));
        }
        let fragment = percent_decode(fragment);
        if fragment.is_empty() || fragment.starts_with('/') {
            return self
                .root
                .pointer(&fragment)
                .map(|value| Target {
                    value,
                    key: fragment.clone(),
                })
                .ok_or_else(|| format!("`$ref` `{reference}` points at nothing in the schema"));
        }
        let mut found = None;
        find_anchor(self.root, &fragment, &mut String::new(), &mut found);
        found
            .and_then(|key| self.root.pointer(&key).map(|value| Target { value, key }))
            .ok_or_else(|| format!("`$ref` `{reference}` names no `$anchor` in the schema"))
    }
}

/// The draft a `$schema` URI names: 4, 6, 7, 2019 or 2020.
fn declared_draft(uri: &str) -> Option<u32> {
    let uri = uri.trim_end_matches('#');
    let uri = uri
        .strip_prefix("http://")
        .or_else(|| uri.strip_prefix("https://"))?;
    Some(match uri.trim_end_matches("/schema") {
        "json-schema.org/draft-04" => 4,
        "json-schema.org/draft-06" => 6,
        "json-schema.org/draft-07" => 7,
        "json-schema.org/draft/2019-09" => 2019,
        "json-schema.org/draft/2020-12" => 2020,
        _ => return None,
    })
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The pointer of the subschema whose `$anchor` (or draft-7 `$id: "#name"`) is `name`.
fn find_anchor(v: &Json, name: &str, ptr: &mut String, found: &mut Option<String>) {
    if found.is_some() {
        return;
    }
    match v {
        Json::Object(map) => {
            let anchored = map.get("$anchor").and_then(Json::as_str) == Some(name)
                || map
                    .get("$id")
                    .and_then(Json::as_str)
                    .and_then(|id| id.strip_prefix('#'))
                    == Some(name);
            if anchored {
                *found = Some(ptr.clone());
                return;
            }
            for (k, sub) in map {
                let len = ptr.len();
                *ptr = child(ptr, k);
                find_anchor(sub, name, ptr, found);
                ptr.truncate(len);
            }
        }
        Json::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                let len = ptr.len();
                ptr.push('/');
                ptr.push_str(&i.to_string());
                find_anchor(sub, name, ptr, found);
                ptr.truncate(len);
            }
        }
        _ => {}
    }
}

/// Keywords of a part the walk has already taken apart (or must not read).
pub(crate) mod skip {
    /// `$ref` (expanded, or replaced by a kept reference).
    pub const REF: u8 = 1;
    /// `allOf` (expanded into parts).
    pub const ALL_OF: u8 = 2;
    /// `anyOf` and `oneOf` (distributed, or dropped).
    pub const COMBINATORS: u8 = 4;
    /// Annotations (`description`, `title`, `default`, …): an outer part inside a
    /// branch, whose annotations stay on the outer node.
    pub const ANNOTATIONS: u8 = 8;
    /// Everything but annotations: a draft-7 `$ref`'s siblings.
    pub const ASSERTIONS: u8 = 16;
}

/// One schema object that applies at a node, with where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Part<'a> {
    pub map: &'a Obj,
    /// Its JSON pointer in the tool definition.
    pub ptr: String,
    pub skip: u8,
}

/// A keyword's value and the index of the part it came from (in [`Node::srcs`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kw<T> {
    pub v: T,
    pub src: u16,
}

/// A JSON type of the normal form. `integer` stays apart from `number` because
/// providers type them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Null => "null",
            Ty::Boolean => "boolean",
            Ty::Integer => "integer",
            Ty::Number => "number",
            Ty::String => "string",
            Ty::Array => "array",
            Ty::Object => "object",
        }
    }
}

/// Sets of JSON types, as bits; `number` includes `integer`.
mod types {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const INTEGER: u8 = 4;
    /// Non-integral numbers; the type `number` is `NUMBER | INTEGER`.
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
    pub const ALL: u8 = 127;

    pub fn parse(name: &str) -> Option<u8> {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "integer" => INTEGER,
            "number" => NUMBER | INTEGER,
            "string" => STRING,
            "array" => ARRAY,
            "object" => OBJECT,
            _ => return None,
        })
    }
}

/// The types a value belongs to.
fn value_types(v: &Json) -> u8 {
    match v {
        Json::Null => types::NULL,
        Json::Bool(_) => types::BOOLEAN,
        Json::Number(n) => {
            let whole = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(crate::schema::is_whole);
            if whole {
                types::INTEGER | types::NUMBER
            } else {
                types::NUMBER
            }
        }
        Json::String(_) => types::STRING,
        Json::Array(_) => types::ARRAY,
        Json::Object(_) => types::OBJECT,
    }
}

/// The types whose keywords these are (`0`: none, or not type-specific).
fn keyword_types(key: &str) -> u8 {
    match key {
        "minLength" | "maxLength" | "pattern" | "contentEncoding" | "contentMediaType" => {
            types::STRING
        }
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            types::NUMBER | types::INTEGER
        }
        "items" | "prefixItems" | "additionalItems" | "minItems" | "maxItems" | "uniqueItems"
        | "contains" | "minContains" | "maxContains" | "unevaluatedItems" => types::ARRAY,
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "minProperties"
        | "maxProperties"
        | "propertyNames"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies"
        | "unevaluatedProperties" => types::OBJECT,
        _ => 0,
    }
}

/// Keywords that say nothing about instances and no model needs: dropped
/// without a note.
fn is_meta(key: &str) -> bool {
    matches!(
        key,
        "$schema" | "$id" | "id" | "$anchor" | "$dynamicAnchor" | "$comment" | "$vocabulary"
    )
}

/// Keywords that never constrain instances: the annotations a dialect may keep
/// or drop (with a note).
pub(crate) fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "title"
            | "description"
            | "default"
            | "examples"
            | "example"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "discriminator"
            | "$comment"
            | "format"
            | "nullable"
            | "contentSchema"
    ) || key.starts_with("x-")
}

/// One node of the normal form.
#[derive(Debug, Clone)]
pub(crate) struct Node<'a> {
    /// The pointers of the parts the node was made from; `srcs[0]` is where it is.
    pub srcs: Vec<String>,
    /// `null` is allowed besides what [`Node::body`] allows.
    pub nullable: bool,
    pub description: Option<Kw<&'a str>>,
    pub title: Option<Kw<&'a str>>,
    pub default: Option<Kw<&'a Json>>,
    /// Keywords the normal form does not model: (name, value), for each dialect to
    /// keep or drop.
    pub extra: Vec<Kw<(&'a str, &'a Json)>>,
    pub body: Body<'a>,
}

/// What a node allows.
#[derive(Debug, Clone)]
pub(crate) enum Body<'a> {
    /// Anything (no constraint, or none a dialect could keep).
    Any,
    /// Nothing (`false`, or parts that contradict each other).
    Never,
    /// Values of one type.
    Typed(Box<Typed<'a>>),
    /// Any of these (at least two; none nullable, none `Any`).
    AnyOf(Vec<Node<'a>>),
    /// A kept reference to [`Builder::defs`]`[i]` (the strict dialect only).
    Ref(usize),
    /// A `$ref` cut: [`NoteKind::RecursionCut`] or [`NoteKind::SizeCut`]; the
    /// target's type, when it has exactly one.
    Cut(Option<Ty>),
}

/// `additionalProperties` of an object node.
#[derive(Debug, Clone)]
pub(crate) enum Additional<'a> {
    /// Not said: JSON Schema allows any other property.
    Unsaid,
    /// `true`, or `{}`.
    Allowed(u16),
    /// `false`.
    Forbidden(u16),
    /// A schema for every other property's value.
    Schema(Box<Node<'a>>, u16),
}

/// A node of one type and the keywords that apply to it.
#[derive(Debug, Clone)]
pub(crate) struct Typed<'a> {
    pub ty: Ty,
    /// The allowed values (of this type; `null` is [`Node::nullable`]).
    pub enumeration: Option<Kw<Vec<&'a Json>>>,
    pub format: Option<Kw<&'a str>>,
    pub pattern: Option<Kw<&'a str>>,
    pub min_length: Option<Kw<&'a Json>>,
    pub max_length: Option<Kw<&'a Json>>,
    pub minimum: Option<Kw<&'a Json>>,
    pub maximum: Option<Kw<&'a Json>>,
    pub exclusive_minimum: Option<Kw<&'a Json>>,
    pub exclusive_maximum: Option<Kw<&'a Json>>,
    pub multiple_of: Option<Kw<&'a Json>>,
    pub items: Option<Box<Node<'a>>>,
    pub min_items: Option<Kw<&'a Json>>,
    pub max_items: Option<Kw<&'a Json>>,
    pub properties: Vec<(&'a str, Node<'a>)>,
    pub required: Vec<&'a str>,
    pub additional: Additional<'a>,
    pub min_properties: Option<Kw<&'a Json>>,
    pub max_properties: Option<Kw<&'a Json>>,
}

impl<'a> Typed<'a> {
    fn new(ty: Ty) -> Typed<'a> {
        Typed {
            ty,
            enumeration: None,
            format: None,
            pattern: None,
            min_length: None,
            max_length: None,
            minimum: None,
            maximum: None,
            exclusive_minimum: None,
            exclusive_maximum: None,
            multiple_of: None,
            items: None,
            min_items: None,
            max_items: None,
            properties: Vec::new(),
            required: Vec::new(),
            additional: Additional::Unsaid,
            min_properties: None,
            max_properties: None,
        }
    }
}

impl<'a> Node<'a> {
    fn new(srcs: Vec<String>, body: Body<'a>) -> Node<'a> {
        Node {
            srcs,
            nullable: false,
            description: None,
            title: None,
            default: None,
            extra: Vec::new(),
            body,
        }
    }

    /// A node that allows anything, at `ptr`.
    pub fn any_at(ptr: String) -> Node<'a> {
        Node::new(vec![ptr], Body::Any)
    }

    /// The pointer of keyword `key` from part `src`.
    pub fn at(&self, src: u16, key: &str) -> String {
        child(&self.srcs[usize::from(src)], key)
    }

    /// Where the node is.
    pub fn ptr(&self) -> &str {
        &self.srcs[0]
    }

    /// Whether `null` is one of the node's values (through kept references).
    pub fn allows_null(&self, defs: &[Def<'a>], root: &Node<'a>) -> bool {
        let mut node = self;
        // A chain of references is short; a cycle of bare references allows nothing.
        for _ in 0..16 {
            match &node.body {
                Body::Ref(i) => {
                    if node.nullable {
                        return true;
                    }
                    node = match &defs[*i].node {
                        Some(n) => n,
                        None if defs[*i].key.is_empty() => root,
                        None => return false,
                    };
                }
                Body::Any | Body::Cut(_) => return true,
                Body::Typed(t) => return node.nullable || t.ty == Ty::Null,
                _ => return node.nullable,
            }
        }
        false
    }

    /// The node's single type, if it has one.
    pub fn ty(&self) -> Option<Ty> {
        match &self.body {
            Body::Typed(t) => Some(t.ty),
            _ => None,
        }
    }
}

/// A `$ref` target kept as a definition (the strict dialect).
#[derive(Debug)]
pub(crate) struct Def<'a> {
    /// Its pointer within the document.
    pub key: String,
    /// Built once every reference is known.
    pub node: Option<Node<'a>>,
}

/// A reason a schema cannot be read at all: (pointer, why).
pub(crate) type Failure = (String, String);

/// Reads a document into [`Node`]s, with notes for what it merges away.
pub(crate) struct Builder<'a, 'n> {
    pub doc: &'a Doc<'a>,
    pub notes: &'n mut Vec<Note>,
    /// Keep lone `$ref`s as [`Body::Ref`] (the strict dialect).
    keep_refs: bool,
    /// Targets being inlined on the current path from the root.
    stack: Vec<String>,
    built: usize,
    pub defs: Vec<Def<'a>>,
    def_index: BTreeMap<String, usize>,
    /// The first reason the schema cannot be read.
    pub failure: Option<Failure>,
}

/// What expanding a node's parts found besides the parts.
#[derive(Default)]
struct Expansion<'a> {
    never: bool,
    /// A reference cut here: its target, and the kind of cut.
    cut: Option<(Target<'a>, NoteKind, String)>,
}

impl<'a, 'n> Builder<'a, 'n> {
    pub fn new(doc: &'a Doc<'a>, notes: &'n mut Vec<Note>, keep_refs: bool) -> Builder<'a, 'n> {
        Builder {
            doc,
            notes,
            keep_refs,
            stack: Vec::new(),
            built: 0,
            defs: Vec::new(),
            def_index: BTreeMap::new(),
            failure: None,
        }
    }

    fn note(&mut self, kind: NoteKind, pointer: String, lost: String) {
        self.notes.push(Note {
            kind,
            pointer,
            lost,
        });
    }

    fn fail(&mut self, pointer: String, why: String) {
        if self.failure.is_none() {
            self.failure = Some((pointer, why));
        }
    }

    /// The document's root as a node (and, keeping references, every definition
    /// it reaches).
    pub fn root(&mut self) -> Node<'a> {
        let root = self.doc.root;
        let ptr = self.doc.at("");
        let node = self.value(root, ptr);
        let mut i = 0;
        while i < self.defs.len() {
            let key = self.defs[i].key.clone();
            if key.is_empty() {
                // `#`: the root itself, written as `#`.
                i += 1;
                continue;
            }
            let value = self.doc.root.pointer(&key).unwrap_or(&Json::Bool(true));
            // A definition is read on its own, with no references in flight.
            let saved = core::mem::take(&mut self.stack);
            self.stack.push(key.clone());
            let def = self.value(value, self.doc.at(&key));
            self.stack = saved;
            self.defs[i].node = Some(def);
            i += 1;
        }
        node
    }

    /// A schema value (object or boolean) as a node.
    pub fn value(&mut self, v: &'a Json, ptr: String) -> Node<'a> {
        match v {
            Json::Bool(true) => Node::new(vec![ptr], Body::Any),
            Json::Bool(false) => Node::new(vec![ptr], Body::Never),
            Json::Object(map) => self.build(vec![Part { map, ptr, skip: 0 }]),
            _ => {
                self.fail(ptr.clone(), format!("{} is not a schema", shown(v)));
                Node::new(vec![ptr], Body::Any)
            }
        }
    }

    /// The node the parts make together.
    pub fn build(&mut self, seeds: Vec<Part<'a>>) -> Node<'a> {
        self.built += 1;
        let mark = self.stack.len();
        let node = self.build_inner(seeds);
        self.stack.truncate(mark);
        node
    }

    fn build_inner(&mut self, seeds: Vec<Part<'a>>) -> Node<'a> {
        // The root stays itself: a provider wants an object there, not a reference.
        if self.keep_refs
            && self.built > 1
            && seeds.len() == 1
            && let Some(node) = self.kept_ref(&seeds[0])
        {
            return node;
        }
        let mut parts = Vec::with_capacity(seeds.len() + 1);
        let mut found = Expansion::default();
        for seed in seeds {
            self.expand(seed, &mut parts, &mut found);
        }
        let srcs: Vec<String> = parts.iter().map(|p| p.ptr.clone()).collect();
        let mut node = Node::new(srcs, Body::Any);
        self.annotations(&parts, &mut node);
        if let Some((target, kind, from)) = found.cut {
            if self.keep_refs && kind == NoteKind::RecursionCut {
                // Strict mode keeps recursion as a reference; what stood beside it goes.
                let kept: Vec<&str> = parts
                    .iter()
                    .flat_map(|p| p.map.keys())
                    .map(String::as_str)
                    .filter(|k| *k != "$ref" && !is_annotation(k) && !is_meta(k))
                    .collect();
                if !kept.is_empty() {
                    self.note(
                        NoteKind::Widened,
                        node.ptr().to_string(),
                        format!(
                            "{} beside a recursive `$ref` not applied",
                            kept.iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
                node.body = Body::Ref(self.def(target.key));
                return node;
            }
            let ty = target
                .value
                .get("type")
                .and_then(Json::as_str)
                .and_then(|t| match t {
                    "object" => Some(Ty::Object),
                    "array" => Some(Ty::Array),
                    "string" => Some(Ty::String),
                    "integer" => Some(Ty::Integer),
                    "number" => Some(Ty::Number),
                    "boolean" => Some(Ty::Boolean),
                    _ => None,
                });
            if node.description.is_none()
                && let Some(d) = target.value.get("description").and_then(Json::as_str)
            {
                node.description = Some(Kw { v: d, src: 0 });
            }
            let lost = match kind {
                NoteKind::RecursionCut => format!(
                    "`#{}` refers to itself; inlined {RECURSION_LIMIT} levels deep, then any value",
                    target.key
                ),
                _ => format!(
                    "`#{}` not inlined past {NODE_BUDGET} schema nodes; any value here",
                    target.key
                ),
            };
            self.note(kind, from, lost);
            node.body = Body::Cut(ty);
            return node;
        }
        if found.never {
            node.body = Body::Never;
            return node;
        }
        if self.combinator(&mut parts, &mut node) {
            return node;
        }
        self.typed(&parts, node)
    }

    /// The index of the definition kept for the target at `key`.
    fn def(&mut self, key: String) -> usize {
        if let Some(&i) = self.def_index.get(&key) {
            return i;
        }
        self.defs.push(Def {
            key: key.clone(),
            node: None,
        });
        self.def_index.insert(key, self.defs.len() - 1);
        self.defs.len() - 1
    }

    /// A part that is a `$ref` alone (with annotations at most), kept as a
    /// reference to a definition.
    fn kept_ref(&mut self, part: &Part<'a>) -> Option<Node<'a>> {
        let reference = part.map.get("$ref")?.as_str()?;
        if part.skip & skip::REF != 0
            || part.map.keys().any(|k| {
                k != "$ref"
                    && !is_annotation(k)
                    && !is_meta(k)
                    && k != "$defs"
                    && k != "definitions"
            })
        {
            return None;
        }
        let target = match self.doc.resolve(reference) {
            Ok(t) => t,
            Err(why) => {
                self.fail(child(&part.ptr, "$ref"), why);
                return None;
            }
        };
        if !target.value.is_object() {
            return None;
        }
        let index = self.def(target.key);
        let mut node = Node::new(vec![part.ptr.clone()], Body::Ref(index));
        let parts = [Part {
            map: part.map,
            ptr: part.ptr.clone(),
            skip: skip::REF,
        }];
        self.annotations(&parts, &mut node);
        Some(node)
    }

    /// Adds the part (its `$ref` and `allOf` taken apart) and then the parts those
    /// bring, depth first.
    fn expand(&mut self, mut part: Part<'a>, out: &mut Vec<Part<'a>>, found: &mut Expansion<'a>) {
        let map = part.map;
        let reference = if part.skip & skip::REF == 0 {
            map.get("$ref")
        } else {
            None
        };
        let all_of = if part.skip & skip::ALL_OF == 0 {
            map.get("allOf")
        } else {
            None
        };
        let ptr = part.ptr.clone();
        part.skip |= skip::REF | skip::ALL_OF;
        if reference.is_some() && self.doc.legacy_ref {
            part.skip |= skip::ASSERTIONS;
        }
        let legacy = part.skip & skip::ASSERTIONS != 0;
        out.push(part);
        if let Some(reference) = reference {
            let Some(reference) = reference.as_str() else {
                self.fail(child(&ptr, "$ref"), "`$ref` is not a string".into());
                return;
            };
            match self.doc.resolve(reference) {
                Err(why) => self.fail(child(&ptr, "$ref"), why),
                Ok(target) => {
                    let depth = self.stack.iter().filter(|k| **k == target.key).count();
                    // Strict mode keeps any recursion as a reference.
                    let limit = if self.keep_refs { 1 } else { RECURSION_LIMIT };
                    if depth >= limit || self.built > NODE_BUDGET {
                        let kind = if depth >= limit {
                            NoteKind::RecursionCut
                        } else {
                            NoteKind::SizeCut
                        };
                        if found.cut.is_none() {
                            found.cut = Some((target, kind, child(&ptr, "$ref")));
                        }
                    } else {
                        self.stack.push(target.key.clone());
                        let target_ptr = self.doc.at(&target.key);
                        match target.value {
                            Json::Bool(true) => {}
                            Json::Bool(false) => found.never = true,
                            Json::Object(m) => self.expand(
                                Part {
                                    map: m,
                                    ptr: target_ptr,
                                    skip: 0,
                                },
                                out,
                                found,
                            ),
                            other => {
                                self.fail(target_ptr, format!("{} is not a schema", shown(other)))
                            }
                        }
                    }
                }
            }
        }
        if let Some(all_of) = all_of
            && !legacy
        {
            let Some(list) = all_of.as_array() else {
                self.fail(child(&ptr, "allOf"), "`allOf` is not an array".into());
                return;
            };
            let base = child(&ptr, "allOf");
            for (i, branch) in list.iter().enumerate() {
                let branch_ptr = child(&base, &i.to_string());
                match branch {
                    Json::Bool(true) => {}
                    Json::Bool(false) => found.never = true,
                    Json::Object(m) => self.expand(
                        Part {
                            map: m,
                            ptr: branch_ptr,
                            skip: 0,
                        },
                        out,
                        found,
                    ),
                    other => self.fail(branch_ptr, format!("{} is not a schema", shown(other))),
                }
            }
        }
    }

    /// `description`, `title`, `default`: the first part's that has one. Annotations
    /// of later parts (a `$ref` target's, under the referencing schema's own) give way.
    fn annotations(&mut self, parts: &[Part<'a>], node: &mut Node<'a>) {
        for (i, part) in parts.iter().enumerate() {
            if part.skip & skip::ANNOTATIONS != 0 {
                continue;
            }
            let src = i as u16;
            if node.description.is_none()
                && let Some(d) = part.map.get("description").and_then(Json::as_str)
            {
                node.description = Some(Kw { v: d, src });
            }
            if node.title.is_none()
                && let Some(t) = part.map.get("title").and_then(Json::as_str)
            {
                node.title = Some(Kw { v: t, src });
            }
            if node.default.is_none()
                && let Some(d) = part.map.get("default")
            {
                node.default = Some(Kw { v: d, src });
            }
        }
    }

    /// The node, if the parts hold an `anyOf` or `oneOf`: its branches, each with the
    /// other parts' keywords.
    fn combinator(&mut self, parts: &mut [Part<'a>], node: &mut Node<'a>) -> bool {
        let mut chosen: Option<(usize, &'static str, &'a Json)> = None;
        for (i, part) in parts.iter().enumerate() {
            if part.skip & (skip::COMBINATORS | skip::ASSERTIONS) != 0 {
                continue;
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(list) = part.map.get(key) {
                    if chosen.is_none() {
                        chosen = Some((i, key, list));
                    } else {
                        self.note(
                            NoteKind::Widened,
                            child(&part.ptr, key),
                            format!(
                                "`{key}` beside another `anyOf`/`oneOf` is not applied (one per schema is kept)"
                            ),
                        );
                    }
                }
            }
        }
        let Some((at, key, list)) = chosen else {
            return false;
        };
        let list_ptr = child(&parts[at].ptr, key);
        let Some(branches) = list.as_array() else {
            self.fail(list_ptr, format!("`{key}` is not an array"));
            return false;
        };
        if branches.iter().all(only_requires) {
            self.note(
                NoteKind::Widened,
                list_ptr,
                format!("`{key}` of `required` lists (which properties must be given together) is not applied"),
            );
            for part in parts.iter_mut() {
                part.skip |= skip::COMBINATORS;
            }
            return false;
        }
        // Outer keywords go into every branch; outer annotations stay outside. A
        // part with nothing left to say is left out, so that a branch that is a
        // lone `$ref` stays one (and is kept as a reference in strict mode).
        let outer: Vec<Part<'a>> = parts
            .iter()
            .map(|p| Part {
                map: p.map,
                ptr: p.ptr.clone(),
                skip: p.skip | skip::COMBINATORS | skip::ANNOTATIONS,
            })
            .filter(says_something)
            .collect();
        let mut nodes = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            let branch_ptr = child(&list_ptr, &i.to_string());
            let mut branch_parts = Vec::with_capacity(outer.len() + 1);
            match branch {
                Json::Bool(true) => {}
                Json::Bool(false) => continue,
                Json::Object(m) => branch_parts.push(Part {
                    map: m,
                    ptr: branch_ptr,
                    skip: 0,
                }),
                other => {
                    self.fail(branch_ptr, format!("{} is not a schema", shown(other)));
                    continue;
                }
            }
            branch_parts.extend(outer.iter().cloned());
            nodes.push(self.build(branch_parts));
        }
        let mut out = core::mem::replace(node, Node::new(Vec::new(), Body::Any));
        out.extra = self.extras(parts, true);
        let one_of = (key == "oneOf").then_some(list_ptr);
        self.union(nodes, &mut out, one_of);
        *node = out;
        true
    }

    /// Makes `out` allow what any of `nodes` allows: `null` branches become
    /// `nullable`, an unconstrained branch makes it unconstrained, one branch is
    /// the node itself. `one_of`: where the `oneOf` these came from is, to note
    /// when its branches can overlap.
    fn union(&mut self, nodes: Vec<Node<'a>>, out: &mut Node<'a>, one_of: Option<String>) {
        let mut nullable = false;
        let mut kept = Vec::with_capacity(nodes.len());
        let mut any = false;
        for mut n in nodes {
            match n.body {
                Body::Never => continue,
                Body::Typed(ref t) if t.ty == Ty::Null => {
                    nullable = true;
                    continue;
                }
                Body::Any | Body::Cut(None) => any = true,
                _ => {}
            }
            nullable |= n.nullable;
            n.nullable = false;
            kept.push(n);
        }
        if let Some(at) = one_of
            && kept.len() > 1
            && !self.disjoint_through_refs(&kept)
        {
            self.note(
                NoteKind::Widened,
                at,
                "`oneOf` read as `anyOf`: a value matching more than one branch is no longer refused"
                    .into(),
            );
        }
        out.nullable = nullable;
        if any {
            out.body = Body::Any;
            return;
        }
        match kept.len() {
            0 if nullable => {
                out.nullable = false;
                out.body = Body::Typed(Box::new(Typed::new(Ty::Null)));
            }
            0 => out.body = Body::Never,
            1 => {
                let only = kept.pop().expect("one branch");
                // The branch's own annotations where the outer node has none.
                let srcs_base = out.srcs.len() as u16;
                out.srcs.extend(only.srcs);
                let shift = |k: Kw<&'a str>| Kw {
                    v: k.v,
                    src: k.src + srcs_base,
                };
                if out.description.is_none() {
                    out.description = only.description.map(shift);
                }
                if out.title.is_none() {
                    out.title = only.title.map(shift);
                }
                if out.default.is_none() {
                    out.default = only.default.map(|k| Kw {
                        v: k.v,
                        src: k.src + srcs_base,
                    });
                }
                out.extra.extend(only.extra.into_iter().map(|k| Kw {
                    v: k.v,
                    src: k.src + srcs_base,
                }));
                out.body = shift_body(only.body, srcs_base);
            }
            _ => out.body = Body::AnyOf(kept),
        }
    }

    /// [`disjoint`], seeing through kept references: each is read inline, for
    /// the look only (its notes are not kept).
    fn disjoint_through_refs(&mut self, nodes: &[Node<'a>]) -> bool {
        if !nodes.iter().any(|n| matches!(n.body, Body::Ref(_))) {
            return disjoint(nodes);
        }
        let saved = core::mem::take(self.notes);
        let keep = core::mem::replace(&mut self.keep_refs, false);
        let failure = self.failure.take();
        let mut seen = Vec::with_capacity(nodes.len());
        for n in nodes {
            match n.body {
                Body::Ref(i) => {
                    let key = self.defs[i].key.clone();
                    let value = self.doc.root.pointer(&key).unwrap_or(&Json::Bool(true));
                    seen.push(self.value(value, self.doc.at(&key)));
                }
                _ => seen.push(n.clone()),
            }
        }
        self.keep_refs = keep;
        self.failure = failure;
        *self.notes = saved;
        disjoint(&seen)
    }

    /// The node of the parts' types: one type, a branch per type, `null` alone,
    /// anything, or nothing.
    fn typed(&mut self, parts: &[Part<'a>], mut node: Node<'a>) -> Node<'a> {
        let mut set = types::ALL;
        let mut said = false;
        let mut enumeration: Option<Kw<Vec<&'a Json>>> = None;
        for (i, part) in parts.iter().enumerate() {
            if part.skip & skip::ASSERTIONS != 0 {
                continue;
            }
            let src = i as u16;
            if let Some(t) = part.map.get("type") {
                said = true;
                let names: Vec<&str> = match t {
                    Json::String(s) => vec![s.as_str()],
                    Json::Array(list) => list.iter().filter_map(Json::as_str).collect(),
                    _ => Vec::new(),
                };
                let mut bits = 0;
                for name in names {
                    match types::parse(name) {
                        Some(b) => bits |= b,
                        None => self.fail(
                            child(&part.ptr, "type"),
                            format!("`type` `{name}` is not a JSON type"),
                        ),
                    }
                }
                set &= bits;
            }
            for key in ["enum", "const"] {
                let Some(v) = part.map.get(key).filter(|_| !self.doc.foreign(key)) else {
                    continue;
                };
                let values: Vec<&'a Json> = match (key, v) {
                    ("const", v) => vec![v],
                    (_, Json::Array(list)) => list.iter().collect(),
                    _ => {
                        self.fail(child(&part.ptr, key), "`enum` is not an array".into());
                        continue;
                    }
                };
                enumeration = Some(match enumeration.take() {
                    None => Kw { v: values, src },
                    Some(mut before) => {
                        before.v.retain(|a| values.iter().any(|b| same(a, b)));
                        before
                    }
                });
            }
        }
        if let Some(e) = &enumeration {
            let of_values = e.v.iter().fold(0, |bits, v| bits | value_types(v));
            set &= of_values;
            said = true;
        }
        node.extra = self.extras(parts, false);
        if !said {
            // No `type`: types come from the keywords present, if any.
            let mut classes = 0;
            for part in parts {
                if part.skip & skip::ASSERTIONS != 0 {
                    continue;
                }
                for key in part.map.keys().filter(|k| !self.doc.foreign(k)) {
                    classes |= keyword_types(key);
                }
            }
            if classes == 0 {
                node.body = Body::Any;
                return node;
            }
            let names: Vec<&str> = ORDER
                .iter()
                .filter(|(bits, _)| classes & bits != 0)
                .map(|(_, ty)| ty.name())
                .collect();
            self.note(
                NoteKind::Narrowed,
                node.ptr().to_string(),
                format!(
                    "no `type`: read as {} from its keywords (other values were allowed)",
                    names.join(" or ")
                ),
            );
            set = classes;
        }
        node.nullable = set & types::NULL != 0;
        let mut tys: Vec<Ty> = Vec::new();
        for (bits, ty) in ORDER {
            // `number` covers `integer`; `null` is the nullable flag.
            let covered = ty == Ty::Integer && tys.contains(&Ty::Number);
            if set & bits != 0 && ty != Ty::Null && !covered {
                tys.push(ty);
            }
        }
        let enumeration = enumeration.map(|mut e| {
            e.v.retain(|v| !v.is_null());
            e
        });
        match tys.len() {
            0 if node.nullable => {
                node.nullable = false;
                node.body = Body::Typed(Box::new(Typed::new(Ty::Null)));
            }
            0 => node.body = Body::Never,
            1 => {
                let typed = self.one_type(tys[0], parts, enumeration, &node);
                node.body = Body::Typed(Box::new(typed));
            }
            _ => {
                let mut branches = Vec::with_capacity(tys.len());
                for ty in tys {
                    let mut branch = Node::new(node.srcs.clone(), Body::Any);
                    let typed = self.one_type(ty, parts, enumeration.clone(), &node);
                    branch.body = Body::Typed(Box::new(typed));
                    branches.push(branch);
                }
                node.body = Body::AnyOf(branches);
            }
        }
        node
    }

    /// Keywords no part of the normal form holds, from every part; with
    /// `annotations_only`, only annotations (an `anyOf` node's own).
    fn extras(
        &mut self,
        parts: &[Part<'a>],
        annotations_only: bool,
    ) -> Vec<Kw<(&'a str, &'a Json)>> {
        let mut out = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            for (k, v) in part.map {
                let annotation = is_annotation(k) && k != "format";
                if matches!(k.as_str(), "description" | "title" | "default") {
                    continue;
                }
                if annotation && part.skip & skip::ANNOTATIONS != 0 {
                    continue;
                }
                if !annotation && (annotations_only || part.skip & skip::ASSERTIONS != 0) {
                    continue;
                }
                let items_schema = k == "items" && !v.is_array();
                let said = is_meta(k) || modelled(k) || modelled_typed(k) || items_schema;
                if said || self.doc.foreign(k) {
                    continue;
                }
                out.push(Kw {
                    v: (k.as_str(), v),
                    src: i as u16,
                });
            }
        }
        out
    }

    /// The keywords of one type from every part, combined.
    fn one_type(
        &mut self,
        ty: Ty,
        parts: &[Part<'a>],
        enumeration: Option<Kw<Vec<&'a Json>>>,
        node: &Node<'a>,
    ) -> Typed<'a> {
        let mut t = Typed::new(ty);
        t.enumeration = enumeration.map(|mut e| {
            let bits = match ty {
                Ty::Null => types::NULL,
                Ty::Boolean => types::BOOLEAN,
                Ty::Integer => types::INTEGER,
                Ty::Number => types::NUMBER | types::INTEGER,
                Ty::String => types::STRING,
                Ty::Array => types::ARRAY,
                Ty::Object => types::OBJECT,
            };
            e.v.retain(|v| value_types(v) & bits != 0);
            e
        });
        // Each property's parts, and whether one of them is `false`.
        let mut properties: Vec<(&'a str, Vec<Part<'a>>, bool)> = Vec::new();
        let mut items: Vec<Part<'a>> = Vec::new();
        let mut items_any = false;
        let mut items_never = false;
        // A tuple (`prefixItems`, or draft 7's `items` array): its schemas, where
        // it is, and what follows it (`items` after `prefixItems`, draft 7's
        // `additionalItems`).
        let mut tuple: Option<(&'a [Json], String)> = None;
        let mut rest: Option<(&'a Json, String)> = None;
        let mut additional: Vec<Part<'a>> = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if part.skip & skip::ASSERTIONS != 0 {
                continue;
            }
            let src = i as u16;
            for (key, v) in part.map {
                let key = key.as_str();
                if self.doc.foreign(key) {
                    continue;
                }
                match (ty, key) {
                    (_, "format") => {
                        if let Some(f) = v.as_str() {
                            self.first(&mut t.format, f, src, node, key);
                        }
                    }
                    (Ty::String, "pattern") => {
                        if let Some(p) = v.as_str() {
                            self.first(&mut t.pattern, p, src, node, key);
                        }
                    }
                    (Ty::String, "minLength") => tighten(&mut t.min_length, v, src, true),
                    (Ty::String, "maxLength") => tighten(&mut t.max_length, v, src, false),
                    (Ty::Integer | Ty::Number, "minimum") => tighten(&mut t.minimum, v, src, true),
                    (Ty::Integer | Ty::Number, "maximum") => tighten(&mut t.maximum, v, src, false),
                    (Ty::Integer | Ty::Number, "exclusiveMinimum") if v.is_number() => {
                        tighten(&mut t.exclusive_minimum, v, src, true)
                    }
                    (Ty::Integer | Ty::Number, "exclusiveMaximum") if v.is_number() => {
                        tighten(&mut t.exclusive_maximum, v, src, false)
                    }
                    // Draft 4: a boolean that makes `minimum`/`maximum` exclusive.
                    (Ty::Integer | Ty::Number, "exclusiveMinimum" | "exclusiveMaximum")
                        if v == &Json::Bool(true) =>
                    {
                        self.draft4_exclusive(&mut t, key, part, src);
                    }
                    (Ty::Integer | Ty::Number, "multipleOf") => {
                        if t.multiple_of.is_some_and(|m| !same(m.v, v)) {
                            self.note(
                                NoteKind::Widened,
                                child(&part.ptr, key),
                                format!("a second `multipleOf` {} is not applied", shown(v)),
                            );
                        } else {
                            t.multiple_of = Some(Kw { v, src });
                        }
                    }
                    (Ty::Array, "items") => match v {
                        Json::Bool(true) => items_any = true,
                        Json::Bool(false) => items_never = true,
                        Json::Object(m) => items.push(Part {
                            map: m,
                            ptr: child(&part.ptr, key),
                            skip: 0,
                        }),
                        Json::Array(list) if tuple.is_none() => {
                            tuple = Some((list, child(&part.ptr, key)));
                            rest = part
                                .map
                                .get("additionalItems")
                                .map(|r| (r, child(&part.ptr, "additionalItems")));
                        }
                        _ => {}
                    },
                    (Ty::Array, "prefixItems") if tuple.is_none() => {
                        if let Json::Array(list) = v {
                            tuple = Some((list, child(&part.ptr, key)));
                            rest = Some(match part.map.get("items") {
                                Some(r) => (r, child(&part.ptr, "items")),
                                None => (&Json::Bool(true), child(&part.ptr, key)),
                            });
                        }
                    }
                    (Ty::Array, "minItems") => tighten(&mut t.min_items, v, src, true),
                    (Ty::Array, "maxItems") => tighten(&mut t.max_items, v, src, false),
                    (Ty::Object, "properties") => {
                        let Some(map) = v.as_object() else {
                            self.fail(
                                child(&part.ptr, key),
                                "`properties` is not an object".into(),
                            );
                            continue;
                        };
                        let base = child(&part.ptr, key);
                        for (name, sub) in map {
                            let sub_ptr = child(&base, name);
                            let slot = match properties.iter().position(|(n, _, _)| *n == name) {
                                Some(at) => at,
                                None => {
                                    properties.push((name.as_str(), Vec::new(), false));
                                    properties.len() - 1
                                }
                            };
                            match sub {
                                Json::Object(m) => properties[slot].1.push(Part {
                                    map: m,
                                    ptr: sub_ptr,
                                    skip: 0,
                                }),
                                Json::Bool(true) => {}
                                Json::Bool(false) => properties[slot].2 = true,
                                other => {
                                    self.fail(sub_ptr, format!("{} is not a schema", shown(other)))
                                }
                            }
                        }
                    }
                    (Ty::Object, "required") => {
                        for name in v.as_array().into_iter().flatten().filter_map(Json::as_str) {
                            if !t.required.contains(&name) {
                                t.required.push(name);
                            }
                        }
                    }
                    (Ty::Object, "additionalProperties") => match v {
                        Json::Bool(false) => t.additional = Additional::Forbidden(src),
                        Json::Bool(true) => {
                            if matches!(t.additional, Additional::Unsaid) {
                                t.additional = Additional::Allowed(src);
                            }
                        }
                        Json::Object(m) if m.is_empty() => {
                            if matches!(t.additional, Additional::Unsaid) {
                                t.additional = Additional::Allowed(src);
                            }
                        }
                        Json::Object(m) => additional.push(Part {
                            map: m,
                            ptr: child(&part.ptr, key),
                            skip: 0,
                        }),
                        _ => {}
                    },
                    (Ty::Object, "minProperties") => tighten(&mut t.min_properties, v, src, true),
                    (Ty::Object, "maxProperties") => tighten(&mut t.max_properties, v, src, false),
                    _ => {}
                }
            }
        }
        if ty == Ty::Array
            && let Some((list, at)) = tuple
        {
            // Positions are not kept: each item may be any of the tuple's types (or
            // what may follow it). The tuple keyword itself is noted as dropped.
            let mut nodes = Vec::with_capacity(list.len() + 1);
            for (i, schema) in list.iter().enumerate() {
                nodes.push(self.value(schema, child(&at, &i.to_string())));
            }
            // What may follow the tuple, unless `maxItems` leaves no room for it.
            let room = t
                .max_items
                .and_then(|m| m.v.as_f64())
                .is_none_or(|m| m > list.len() as f64);
            match rest {
                _ if !room => {}
                Some((r, ptr)) => nodes.push(self.value(r, ptr)),
                None => nodes.push(Node::any_at(at.clone())),
            }
            let mut union = Node::new(vec![at], Body::Any);
            self.union(nodes, &mut union, None);
            t.items = Some(Box::new(union));
        } else if ty == Ty::Array {
            t.items = if items_never {
                Some(Box::new(Node::new(
                    vec![child(node.ptr(), "items")],
                    Body::Never,
                )))
            } else if items.is_empty() || items_any && items.is_empty() {
                None
            } else {
                Some(Box::new(self.build(items)))
            };
        }
        if ty == Ty::Object {
            for (name, child_parts, never) in properties {
                let here = || vec![child(&child(node.ptr(), "properties"), name)];
                let built = if never {
                    Node::new(here(), Body::Never)
                } else if child_parts.is_empty() {
                    Node::new(here(), Body::Any)
                } else {
                    self.build(child_parts)
                };
                t.properties.push((name, built));
            }
            if !additional.is_empty() && !matches!(t.additional, Additional::Forbidden(_)) {
                let src = match t.additional {
                    Additional::Allowed(s) => s,
                    _ => 0,
                };
                let built = self.build(additional);
                t.additional = match built.body {
                    Body::Any => Additional::Allowed(src),
                    _ => Additional::Schema(Box::new(built), src),
                };
            }
        }
        t
    }

    /// Keeps the first value of a keyword that cannot be combined; a different
    /// second one is noted.
    fn first(
        &mut self,
        slot: &mut Option<Kw<&'a str>>,
        v: &'a str,
        src: u16,
        node: &Node<'a>,
        key: &str,
    ) {
        match slot {
            None => *slot = Some(Kw { v, src }),
            Some(kept) if kept.v == v => {}
            Some(_) => self.note(
                NoteKind::Widened,
                node.at(src, key),
                format!("a second `{key}` `{v}` is not applied (one per schema is kept)"),
            ),
        }
    }

    /// Draft 4's `exclusiveMinimum: true`: its `minimum` becomes exclusive.
    fn draft4_exclusive(&mut self, t: &mut Typed<'a>, key: &str, part: &Part<'a>, src: u16) {
        let (bound, slot) = if key == "exclusiveMinimum" {
            (part.map.get("minimum"), &mut t.exclusive_minimum)
        } else {
            (part.map.get("maximum"), &mut t.exclusive_maximum)
        };
        if let Some(b) = bound.filter(|b| b.is_number()) {
            tighten(slot, b, src, key == "exclusiveMinimum");
        }
    }
}

/// The order types are tried in, and the bits of each.
const ORDER: [(u8, Ty); 7] = [
    (types::OBJECT, Ty::Object),
    (types::ARRAY, Ty::Array),
    (types::STRING, Ty::String),
    (types::NUMBER, Ty::Number),
    (types::INTEGER, Ty::Integer),
    (types::BOOLEAN, Ty::Boolean),
    (types::NULL, Ty::Null),
];

/// Keywords the walk reads whatever the type.
fn modelled(key: &str) -> bool {
    matches!(
        key,
        "type"
            | "enum"
            | "const"
            | "$ref"
            | "allOf"
            | "anyOf"
            | "oneOf"
            | "$defs"
            | "definitions"
            | "description"
            | "title"
            | "default"
            | "format"
    )
}

/// Type-specific keywords the normal form holds (the rest are extras).
fn modelled_typed(key: &str) -> bool {
    matches!(
        key,
        "minLength"
            | "maxLength"
            | "pattern"
            | "minimum"
            | "maximum"
            | "exclusiveMinimum"
            | "exclusiveMaximum"
            | "multipleOf"
            | "minItems"
            | "maxItems"
            | "properties"
            | "required"
            | "additionalProperties"
            | "minProperties"
            | "maxProperties"
    )
}

/// Whether a part has keywords left that constrain instances.
fn says_something(part: &Part<'_>) -> bool {
    if part.skip & skip::ASSERTIONS != 0 {
        return false;
    }
    part.map.keys().any(|k| {
        let taken = match k.as_str() {
            "$ref" => part.skip & skip::REF != 0,
            "allOf" => part.skip & skip::ALL_OF != 0,
            "anyOf" | "oneOf" => part.skip & skip::COMBINATORS != 0,
            "$defs" | "definitions" => true,
            k => is_annotation(k) || is_meta(k),
        };
        !taken
    })
}

/// A lower (`lower`) or upper bound, kept at the tightest of the values seen.
fn tighten<'a>(slot: &mut Option<Kw<&'a Json>>, v: &'a Json, src: u16, lower: bool) {
    let Some(x) = v.as_f64() else { return };
    match slot {
        Some(kept) => {
            let y = kept.v.as_f64().unwrap_or(x);
            if (lower && x > y) || (!lower && x < y) {
                *slot = Some(Kw { v, src });
            }
        }
        None => *slot = Some(Kw { v, src }),
    }
}

/// A branch that only lists `required` names (or other object-count rules), with
/// no type or shape of its own: "at least one of" patterns.
fn only_requires(branch: &Json) -> bool {
    match branch {
        Json::Object(m) => {
            !m.is_empty()
                && m.keys().all(|k| {
                    matches!(
                        k.as_str(),
                        "required" | "minProperties" | "maxProperties" | "dependentRequired"
                    ) || is_annotation(k)
                        || is_meta(k)
                })
                && m.contains_key("required")
        }
        _ => false,
    }
}

/// Whether no value can match two of these branches: different types, or objects
/// that one required property's single allowed value tells apart (a discriminated
/// union). Then `oneOf` and `anyOf` mean the same.
fn disjoint(nodes: &[Node<'_>]) -> bool {
    for (i, a) in nodes.iter().enumerate() {
        for b in &nodes[i + 1..] {
            if !apart(a, b) {
                return false;
            }
        }
    }
    true
}

fn apart(a: &Node<'_>, b: &Node<'_>) -> bool {
    let (Body::Typed(x), Body::Typed(y)) = (&a.body, &b.body) else {
        return false;
    };
    if x.ty != y.ty {
        // `integer` values are `number` values too.
        return !matches!(
            (x.ty, y.ty),
            (Ty::Integer, Ty::Number) | (Ty::Number, Ty::Integer)
        );
    }
    if let (Some(e), Some(f)) = (&x.enumeration, &y.enumeration) {
        return !e.v.iter().any(|v| f.v.iter().any(|w| same(v, w)));
    }
    if x.ty != Ty::Object {
        return false;
    }
    x.properties.iter().any(|(name, p)| {
        x.required.contains(name)
            && y.required.contains(name)
            && y.properties
                .iter()
                .find(|(n, _)| n == name)
                .is_some_and(|(_, q)| {
                    !p.nullable
                        && !q.nullable
                        && apart(p, q)
                        && p.ty() == q.ty()
                        && p.ty().is_some()
                })
    })
}

/// A branch's body with its keywords' part indices moved by `by` (its parts now
/// follow the outer node's).
fn shift_body(body: Body<'_>, by: u16) -> Body<'_> {
    let Body::Typed(mut t) = body else {
        return body;
    };
    let shift = |k: &mut Option<Kw<&Json>>| {
        if let Some(k) = k {
            k.src += by;
        }
    };
    if let Some(e) = &mut t.enumeration {
        e.src += by;
    }
    if let Some(f) = &mut t.format {
        f.src += by;
    }
    if let Some(p) = &mut t.pattern {
        p.src += by;
    }
    shift(&mut t.min_length);
    shift(&mut t.max_length);
    shift(&mut t.minimum);
    shift(&mut t.maximum);
    shift(&mut t.exclusive_minimum);
    shift(&mut t.exclusive_maximum);
    shift(&mut t.multiple_of);
    shift(&mut t.min_items);
    shift(&mut t.max_items);
    shift(&mut t.min_properties);
    shift(&mut t.max_properties);
    t.additional = match t.additional {
        Additional::Allowed(s) => Additional::Allowed(s + by),
        Additional::Forbidden(s) => Additional::Forbidden(s + by),
        Additional::Schema(n, s) => Additional::Schema(n, s + by),
        Additional::Unsaid => Additional::Unsaid,
    };
    Body::Typed(t)
}
