//! The `openai` dialect: OpenAI function tools without strict mode.
//!
//! The envelope is Chat Completions' `{"type": "function", "function": {name,
//! description, parameters, strict: false}}` (`ChatCompletionFunctionToolParam` and
//! `FunctionDefinition` in the openai SDK) or the Responses API's flat `{"type":
//! "function", name, description, parameters, strict: false, output_schema}`
//! (`FunctionToolParam`).
//!
//! Without `strict`, `parameters` is "a JSON Schema object" and the model reads it;
//! the schema is kept as the server wrote it except where OpenAI, or the many
//! OpenAI-compatible servers this dialect is also used with, refuse or misread it:
//!
//! - **Local `$ref`s are inlined** and `$defs`/`definitions` removed: OpenAI documents
//!   definitions only for Structured Outputs, and compatible servers (vLLM, llama.cpp,
//!   Ollama, …) do not all resolve references. A target that refers to itself is
//!   inlined a bounded number of levels and then cut to `{}` (a
//!   [`NoteKind::RecursionCut`](super::NoteKind::RecursionCut) note), as is anything
//!   past the size budget. A `$ref` with siblings becomes its target with the siblings
//!   beside it where their keywords do not overlap, else `allOf: [target, siblings]`
//!   — so an `items` or a `description` next to a `$ref` is never lost.
//! - **The root is an object**: OpenAI refuses parameters whose root is not `type:
//!   "object"`; a root without `type` gets it (MCP arguments are always an object), a
//!   root of another type is refused.
//! - **Arrays have `items`**: OpenAI refuses `"type": "array"` without `items`
//!   ("array schema missing items"); `items: {}` (anything, as before) is added.
//!
//! Everything else (`oneOf`, `pattern`, formats, type arrays, …) is JSON Schema the
//! model can read, and is kept.

use crate::prelude::*;

use serde_json::value::RawValue;

use super::json::{Json, Obj};
use super::walk::{self, Doc, Failure};
use super::{AdaptedTool, Converted, Field, Note, NoteKind, envelope};

pub(super) fn convert(input: &Json, output: Option<&Json>, notes: &mut Vec<Note>) -> Converted {
    let parameters = parameters(input, notes)?;
    let output = output.and_then(|o| output_schema(o, notes));
    Ok((Some(parameters), output))
}

/// The output schema inlined for the Responses API's `output_schema`; one that
/// cannot be read is left out, noted (the tool can still be called).
pub(super) fn output_schema(output: &Json, notes: &mut Vec<Note>) -> Option<Json> {
    match inline(output, "/outputSchema", notes) {
        Ok(o) => Some(o),
        Err((pointer, why)) => {
            notes.push(Note {
                kind: NoteKind::Dropped,
                pointer,
                lost: format!("the output schema, not offered as `output_schema`: {why}"),
            });
            None
        }
    }
}

/// The input schema inlined, with an object root.
pub(super) fn parameters(input: &Json, notes: &mut Vec<Note>) -> Result<Json, Failure> {
    let mut out = inline(input, "/inputSchema", notes)?;
    object_root(&mut out, "/inputSchema", notes)?;
    Ok(out)
}

/// Makes the root `type: "object"`, or says why it cannot be.
pub(super) fn object_root(
    schema: &mut Json,
    at: &str,
    notes: &mut Vec<Note>,
) -> Result<(), Failure> {
    if schema == &Json::Bool(true) {
        *schema = Json::Object(Obj::new());
    }
    let Json::Object(map) = schema else {
        return Err((
            at.to_string(),
            "the input schema is `false`: no arguments are valid".into(),
        ));
    };
    match map.get("type") {
        None => {
            map.insert("type", Json::String("object".into()));
        }
        Some(Json::String(t)) if t == "object" => {}
        Some(Json::Array(list)) if list.iter().any(|t| t == "object") => {
            notes.push(Note {
                kind: NoteKind::Narrowed,
                pointer: walk::child(at, "type"),
                lost: format!(
                    "`type` {} is `object` at the root (tool arguments are an object)",
                    walk::shown(&Json::Array(list.clone()))
                ),
            });
            map.insert("type", Json::String("object".into()));
        }
        Some(other) => {
            return Err((
                walk::child(at, "type"),
                format!(
                    "the input schema's root is `type` {}, and tool arguments are an object",
                    walk::shown(other)
                ),
            ));
        }
    }
    Ok(())
}

/// A schema document with its local references inlined.
pub(super) fn inline(
    schema: &Json,
    base: &'static str,
    notes: &mut Vec<Note>,
) -> Result<Json, Failure> {
    let doc = Doc::new(schema, base);
    let mut inliner = Inliner {
        doc: &doc,
        notes,
        stack: Vec::new(),
        built: 0,
        failure: None,
    };
    let out = inliner.schema(schema, doc.at(""));
    match inliner.failure {
        Some(failure) => Err(failure),
        None => Ok(out),
    }
}

struct Inliner<'a, 'n> {
    doc: &'a Doc<'a>,
    notes: &'n mut Vec<Note>,
    /// Targets being inlined on the current path.
    stack: Vec<String>,
    built: usize,
    failure: Option<Failure>,
}

impl<'a> Inliner<'a, '_> {
    fn schema(&mut self, v: &'a Json, ptr: String) -> Json {
        let Json::Object(map) = v else {
            return v.clone();
        };
        self.built += 1;
        let mut out = Obj::new();
        for (k, sub) in map {
            let key = k.as_str();
            let value = match key {
                "$ref" | "$defs" | "definitions" => continue,
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => match sub {
                    Json::Array(list) => self.list(list, walk::child(&ptr, key)),
                    _ => self.schema(sub, walk::child(&ptr, key)),
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => match sub {
                    Json::Array(list) => self.list(list, walk::child(&ptr, key)),
                    _ => sub.clone(),
                },
                "properties" | "patternProperties" | "dependentSchemas" | "dependencies" => {
                    match sub {
                        Json::Object(entries) => {
                            let base = walk::child(&ptr, key);
                            let mut kept = Obj::new();
                            for (name, s) in entries {
                                let value = if s.is_array() {
                                    // `dependencies`' property lists.
                                    s.clone()
                                } else {
                                    self.schema(s, walk::child(&base, name))
                                };
                                kept.insert(name.clone(), value);
                            }
                            Json::Object(kept)
                        }
                        _ => sub.clone(),
                    }
                }
                _ => sub.clone(),
            };
            out.insert(k.clone(), value);
        }
        let typed_array = match out.get("type") {
            Some(Json::String(t)) => t == "array",
            Some(Json::Array(list)) => list.iter().any(|t| t == "array"),
            _ => false,
        };
        if typed_array && !out.contains_key("items") && !out.contains_key("prefixItems") {
            out.insert("items", Json::Object(Obj::new()));
        }
        match map.get("$ref") {
            Some(Json::String(reference)) => self.reference(reference, out, &ptr),
            Some(_) => {
                self.fail(walk::child(&ptr, "$ref"), "`$ref` is not a string".into());
                Json::Object(out)
            }
            None => Json::Object(out),
        }
    }

    fn list(&mut self, list: &'a [Json], ptr: String) -> Json {
        Json::Array(
            list.iter()
                .enumerate()
                .map(|(i, s)| self.schema(s, walk::child(&ptr, &i.to_string())))
                .collect(),
        )
    }

    fn fail(&mut self, pointer: String, why: String) {
        if self.failure.is_none() {
            self.failure = Some((pointer, why));
        }
    }

    /// `siblings` (the referencing schema without its `$ref`) with the target.
    fn reference(&mut self, reference: &str, siblings: Obj, ptr: &str) -> Json {
        let at = walk::child(ptr, "$ref");
        let target = match self.doc.resolve(reference) {
            Ok(t) => t,
            Err(why) => {
                self.fail(at, why);
                return Json::Object(siblings);
            }
        };
        let depth = self.stack.iter().filter(|k| **k == target.key).count();
        if depth >= walk::RECURSION_LIMIT || self.built > walk::NODE_BUDGET {
            let (kind, lost) = if depth >= walk::RECURSION_LIMIT {
                (
                    NoteKind::RecursionCut,
                    format!(
                        "`#{}` refers to itself; inlined {} levels deep, then any value",
                        target.key,
                        walk::RECURSION_LIMIT
                    ),
                )
            } else {
                (
                    NoteKind::SizeCut,
                    format!(
                        "`#{}` not inlined past {} schema nodes; any value here",
                        target.key,
                        walk::NODE_BUDGET
                    ),
                )
            };
            self.notes.push(Note {
                kind,
                pointer: at,
                lost,
            });
            let mut cut = siblings;
            if !cut.contains_key("description")
                && let Some(d) = target.value.get("description")
            {
                cut.insert("description", d.clone());
            }
            return Json::Object(cut);
        }
        self.stack.push(target.key.clone());
        let inlined = self.schema(target.value, self.doc.at(&target.key));
        self.stack.pop();
        let siblings = if self.doc.legacy_ref {
            // Up to draft 7 a `$ref` replaces its siblings; annotations still help.
            siblings
                .into_iter()
                .filter(|(k, _)| walk::is_annotation(k) && k != "format")
                .collect()
        } else {
            siblings
        };
        combine(inlined, siblings)
    }
}

/// A target and the siblings of the `$ref` to it, as one schema: merged where no
/// keyword is in both (the siblings' annotations win), else `allOf`.
fn combine(target: Json, siblings: Obj) -> Json {
    if siblings.is_empty() {
        return target;
    }
    let mut target = match target {
        Json::Object(m) => m,
        Json::Bool(true) => return Json::Object(siblings),
        other => {
            let mut out = Obj::new();
            out.insert("allOf", Json::Array(vec![other, Json::Object(siblings)]));
            return Json::Object(out);
        }
    };
    // Keywords whose meaning depends on others in the same schema.
    const INTERACTING: [&str; 8] = [
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
    ];
    let overlap = siblings
        .keys()
        .any(|k| target.contains_key(k) && !walk::is_annotation(k));
    let interacting = siblings.keys().any(|k| INTERACTING.contains(&k.as_str()))
        && target.keys().any(|k| INTERACTING.contains(&k.as_str()));
    if !overlap && !interacting {
        for (k, v) in siblings {
            target.insert(k, v);
        }
        return Json::Object(target);
    }
    let (annotations, rest): (Obj, Obj) = siblings
        .into_iter()
        .partition(|(k, _)| walk::is_annotation(k) && k != "format");
    let mut out = annotations;
    out.insert(
        "allOf",
        Json::Array(vec![Json::Object(target), Json::Object(rest)]),
    );
    Json::Object(out)
}

/// Chat Completions: `{"type": "function", "function": {name, description,
/// parameters, strict}}`.
pub(super) fn chat_completions(tool: &AdaptedTool) -> Box<RawValue> {
    let mut function = vec![("name", Field::Str(&tool.name))];
    if let Some(d) = &tool.description {
        function.push(("description", Field::Str(d)));
    }
    if let Some(p) = &tool.parameters {
        function.push(("parameters", Field::Raw(p)));
    }
    function.push(("strict", Field::Bool(is_strict(tool))));
    let function = envelope(&function);
    envelope(&[
        ("type", Field::Str("function")),
        ("function", Field::Raw(&function)),
    ])
}

/// The Responses API: `{"type": "function", name, description, parameters, strict,
/// output_schema}`.
pub(super) fn responses(tool: &AdaptedTool) -> Box<RawValue> {
    let mut fields = vec![
        ("type", Field::Str("function")),
        ("name", Field::Str(&tool.name)),
    ];
    if let Some(d) = &tool.description {
        fields.push(("description", Field::Str(d)));
    }
    match &tool.parameters {
        Some(p) => fields.push(("parameters", Field::Raw(p))),
        None => fields.push(("parameters", Field::Null)),
    }
    fields.push(("strict", Field::Bool(is_strict(tool))));
    if let Some(o) = &tool.output {
        fields.push(("output_schema", Field::Raw(o)));
    }
    envelope(&fields)
}

fn is_strict(tool: &AdaptedTool) -> bool {
    tool.dialect == super::Dialect::OpenAiStrict
}
