//! Tools in each model provider's dialect: provider-ready definitions, and the
//! arguments a model sends mapped back to what the server's own schema expects.
//!
//! An agent platform does not hand MCP tools to a model as they are: it turns each
//! one into its provider's tool format, and providers accept different subsets of
//! the JSON Schema that MCP servers publish. The guest already reads every schema
//! (it checks arguments before a call), so the conversion is done here, once, with
//! no I/O: a registry name, a description and schema text in, a definition out.
//!
//! | dialect | envelope | schema | name |
//! |---|---|---|---|
//! | `mcp` | MCP `Tool` | unchanged | unchanged |
//! | `openai` | Chat Completions `{"type":"function","function":{…}}`, or the flat Responses tool ([`AdaptedTool::responses_definition`]); `strict: false` | local `$ref`s inlined, object root, `items` on arrays (see `openai.rs`) | `^[a-zA-Z0-9_-]{1,64}$` |
//! | `openai-strict` | the same with `strict: true` | Structured Outputs' subset: every property required (optional ones nullable), `additionalProperties: false`, `$defs` kept (see `openai_strict.rs`) | as `openai` |
//! | `anthropic` | `{name, description, input_schema}` | JSON Schema as the server wrote it, with an object root (see `anthropic.rs`) | `^[a-zA-Z0-9_-]{1,64}$` |
//! | `gemini` | `FunctionDeclaration {name, description, parameters, response}` | the OpenAPI 3.0 subset of Gemini's `Schema` (see `gemini.rs`) | `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$` |
//!
//! # Nothing silent
//!
//! A conversion that loses something — a keyword the provider does not take, a
//! recursive schema cut at a bounded depth, a `oneOf` widened to `anyOf`, a name
//! shortened — says so in a [`Note`] on that tool: what kind of loss, where in the
//! tool's definition (a JSON pointer such as `/inputSchema/$defs/Address/properties/postcode/pattern`),
//! and what was lost. A tool that cannot be represented in a dialect at all is a
//! [`Refusal`] that says why, never just missing. Only what says nothing about
//! instances is dropped without a note: `$schema`, `$id`, `$anchor`, `$comment`, and
//! an annotation (`description`, `title`, `default`) of a `$ref` target where the
//! referencing schema has its own — the referencing one is kept, being the more
//! specific (pydantic writes a field's description beside the `$ref` to its model).
//!
//! # Arguments mapped back
//!
//! The original schema still decides validity: a call made under an adapted schema
//! is mapped back with [`map_arguments_back`] (strict mode's explicit `null` for an
//! optional property removed where the original does not allow `null`, Gemini's
//! fitted parameter names restored) and then checked and sent as any other call. An
//! adapted tool name maps back to its registry name with
//! [`Adaptation::registry_name`]. Dropping a constraint therefore never lets a bad
//! argument through: it only means the model is told less, and the guest's own check
//! says what is wrong.
//!
//! # Layout
//!
//! | file | what |
//! |---|---|
//! | `walk.rs` | the shared schema walk: `$ref` resolution, `allOf`/`$ref` merging, `oneOf`/`anyOf`/type arrays/`const`/`null` normalised into one tree the strict and Gemini dialects write out |
//! | `names.rs` | names fitted to each provider's rules, reversibly; collisions resolved deterministically |
//! | `mcp.rs`, `openai.rs`, `openai_strict.rs`, `anthropic.rs`, `gemini.rs` | one dialect each |
//! | `arguments.rs` | arguments mapped back (and forward, for tests and examples) |
//! | `json.rs` | JSON that keeps the order of keys (the guest's `serde_json` sorts them), so parameters reach the model in the server's order |
//!
//! Tests: one per rule in `tests.rs`; the real corpus, the providers' SDKs
//! (`tests/peers/provider_check.py`) and property tests in `guest/tests/adapter/`.

use crate::prelude::*;
use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use core::fmt;
use core::str::FromStr;

use serde::Serialize;
use serde_json::value::RawValue;

mod anthropic;
mod arguments;
mod gemini;
mod json;
mod mcp;
mod names;
mod openai;
mod openai_strict;
mod walk;

pub use arguments::{map_arguments_back, map_arguments_forward};

/// A model provider's tool format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dialect {
    /// MCP's own `Tool`, as the server described it.
    Mcp,
    /// OpenAI function tools (Chat Completions and Responses), `strict: false`.
    OpenAi,
    /// OpenAI function tools with `strict: true` (Structured Outputs).
    OpenAiStrict,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Gemini `FunctionDeclaration`s.
    Gemini,
}

impl Dialect {
    /// Every dialect, in the order help texts list them.
    pub const ALL: [Dialect; 5] = [
        Dialect::Mcp,
        Dialect::OpenAi,
        Dialect::OpenAiStrict,
        Dialect::Anthropic,
        Dialect::Gemini,
    ];

    /// The dialect's name on every surface: `mcp`, `openai`, `openai-strict`,
    /// `anthropic`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Mcp => "mcp",
            Dialect::OpenAi => "openai",
            Dialect::OpenAiStrict => "openai-strict",
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a dialect; says which are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown dialect `{}`: use mcp, openai, openai-strict, anthropic or gemini",
            self.0
        )
    }
}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Dialect, UnknownDialect> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDialect(s.to_string()))
    }
}

/// One tool to adapt, as the registry holds it.
#[derive(Debug, Clone, Copy)]
pub struct ToolInput<'a> {
    /// The registry name (`mcp__{server}__{tool}`); adapted names map back to it.
    pub name: &'a str,
    /// The description, if the server gave one.
    pub description: Option<&'a str>,
    /// `inputSchema`, exact JSON text.
    pub input_schema: &'a str,
    /// `outputSchema`, exact JSON text, if any.
    pub output_schema: Option<&'a str>,
}

/// What kind of loss a [`Note`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoteKind {
    /// A keyword the dialect does not take was removed: the model is told less.
    Dropped,
    /// The adapted schema accepts more than the original (a `oneOf` read as
    /// `anyOf`, an exclusive bound made inclusive, an `allOf` part not merged).
    Widened,
    /// The adapted schema accepts less than the original (strict mode's closed
    /// objects, a value with no `type` given one).
    Narrowed,
    /// A recursive schema cut at a bounded depth to a permissive node.
    RecursionCut,
    /// Inlining stopped at the size budget; the rest is a permissive node.
    SizeCut,
    /// A name changed to fit the provider's rules (it maps back).
    Renamed,
    /// Two names met after fitting; this one was given a hash suffix.
    Collision,
    /// Two instances the original tells apart look the same under the dialect
    /// (strict mode's `null` for an omitted property that also allows `null`).
    Ambiguous,
}

impl NoteKind {
    /// The kind's name in JSON (`dropped`, `recursion-cut`, …).
    pub fn name(self) -> &'static str {
        match self {
            NoteKind::Dropped => "dropped",
            NoteKind::Widened => "widened",
            NoteKind::Narrowed => "narrowed",
            NoteKind::RecursionCut => "recursion-cut",
            NoteKind::SizeCut => "size-cut",
            NoteKind::Renamed => "renamed",
            NoteKind::Collision => "collision",
            NoteKind::Ambiguous => "ambiguous",
        }
    }
}

/// One thing a conversion lost, on one tool (`adapterNotes` in JSON output).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Note {
    /// What kind of loss.
    pub kind: NoteKind,
    /// Where, as a JSON pointer into the tool's MCP definition: `/name`,
    /// `/inputSchema/properties/path/pattern`, `/outputSchema/...`.
    pub pointer: String,
    /// What was lost, for a person: "`pattern` `^[0-9]{5}$`".
    pub lost: String,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.kind.name(), self.pointer, self.lost)
    }
}

/// A tool that cannot be represented in a dialect, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The registry name.
    pub name: String,
    /// The dialect asked for.
    #[serde(serialize_with = "dialect_name")]
    pub dialect: Dialect,
    /// Where the obstacle is, as a JSON pointer into the tool's definition.
    pub pointer: String,
    /// Why, with what to do instead where there is something.
    pub reason: String,
}

fn dialect_name<S: serde::Serializer>(d: &Dialect, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(d.name())
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: not offered as an {} tool: {} (at {})",
            self.name, self.dialect, self.reason, self.pointer
        )
    }
}

/// One tool in a provider's dialect. Schemas are JSON text whose objects keep
/// the order the server gave their keys in (the order a model reads parameters in),
/// shared: the registry keeps one conversion per tool and dialect, and every copy
/// of this tool with a fitted name points at it.
#[derive(Debug, Clone)]
pub struct AdaptedTool {
    /// The dialect.
    pub dialect: Dialect,
    /// The name the provider sees (maps back with [`Adaptation::registry_name`]).
    pub name: String,
    /// The registry name.
    pub registry_name: String,
    /// The description.
    pub description: Option<String>,
    /// The converted input schema; `None` where the dialect leaves a tool without
    /// parameters out (Gemini refuses an `OBJECT` without properties).
    pub parameters: Option<Rc<RawValue>>,
    /// The converted output schema, where the dialect has a place for one (MCP's
    /// `outputSchema`, the Responses API's `output_schema`, Gemini's `response`).
    pub output: Option<Rc<RawValue>>,
    /// What the conversion lost, in the order found, each once.
    pub notes: Vec<Note>,
}

impl AdaptedTool {
    /// The provider's JSON for this tool: MCP `Tool`, OpenAI Chat Completions
    /// function tool, Anthropic tool, Gemini `FunctionDeclaration`.
    pub fn definition(&self) -> Box<RawValue> {
        match self.dialect {
            Dialect::Mcp => mcp::definition(self),
            Dialect::OpenAi | Dialect::OpenAiStrict => openai::chat_completions(self),
            Dialect::Anthropic => anthropic::definition(self),
            Dialect::Gemini => gemini::definition(self),
        }
    }

    /// The OpenAI Responses API's flat function tool (`{"type":"function","name",…}`);
    /// `None` for the other dialects.
    pub fn responses_definition(&self) -> Option<Box<RawValue>> {
        match self.dialect {
            Dialect::OpenAi | Dialect::OpenAiStrict => Some(openai::responses(self)),
            _ => None,
        }
    }
}

/// Every tool of a registry in one dialect, with the names mapped back.
#[derive(Debug, Clone)]
pub struct Adaptation {
    /// The dialect.
    pub dialect: Dialect,
    /// The tools that could be represented, in the order given.
    pub tools: Vec<AdaptedTool>,
    /// The tools that could not, in the order given.
    pub refused: Vec<Refusal>,
    /// Adapted name → registry name, for every adapted tool.
    names: BTreeMap<String, String>,
    /// Registry name → its place in `tools` (`Ok`) or `refused` (`Err`).
    places: BTreeMap<String, Result<usize, usize>>,
}

impl Adaptation {
    /// The registry name of the tool the provider calls `adapted`.
    pub fn registry_name(&self, adapted: &str) -> Option<&str> {
        self.names.get(adapted).map(String::as_str)
    }

    /// Adapted name → registry name, for every adapted tool.
    pub fn names(&self) -> &BTreeMap<String, String> {
        &self.names
    }

    /// The tool of that registry name: adapted, or refused with why.
    pub fn get(&self, registry_name: &str) -> Option<Result<&AdaptedTool, &Refusal>> {
        self.places.get(registry_name).map(|place| match *place {
            Ok(i) => Ok(&self.tools[i]),
            Err(i) => Err(&self.refused[i]),
        })
    }
}

/// Adapts one tool. Its name is fitted alone: a batch whose fitted names might
/// meet goes through [`adapt`], which resolves collisions.
pub fn adapt_tool(dialect: Dialect, tool: &ToolInput<'_>) -> Result<AdaptedTool, Refusal> {
    let (name, name_notes) = names::fit_tool_name(dialect, tool.name);
    let mut adapted = convert(dialect, tool)?;
    adapted.name = name;
    let mut notes = name_notes;
    notes.append(&mut adapted.notes);
    adapted.notes = notes;
    Ok(adapted)
}

/// Adapts every tool; fitted names that meet are told apart deterministically
/// (see `names.rs`), whatever order the tools come in.
pub fn adapt(dialect: Dialect, tools: &[ToolInput<'_>]) -> Adaptation {
    adapt_converted(
        dialect,
        tools.iter().map(|t| t.name),
        tools.iter().map(|t| convert(dialect, t)),
    )
}

/// [`adapt`] with each tool's conversion supplied by the caller (the registry
/// keeps one per tool and dialect, made with [`convert_tool`]): only the names
/// are fitted here, across the whole batch.
pub fn adapt_converted<'a>(
    dialect: Dialect,
    names: impl Iterator<Item = &'a str>,
    converted: impl Iterator<Item = Result<AdaptedTool, Refusal>>,
) -> Adaptation {
    let fitted = names::fit_all(dialect, names);
    let mut adaptation = Adaptation {
        dialect,
        tools: Vec::with_capacity(fitted.len()),
        refused: Vec::new(),
        names: BTreeMap::new(),
        places: BTreeMap::new(),
    };
    for ((name, mut notes), converted) in fitted.into_iter().zip(converted) {
        match converted {
            Ok(mut adapted) => {
                adapted.name = name;
                notes.append(&mut adapted.notes);
                adapted.notes = notes;
                adaptation
                    .names
                    .insert(adapted.name.clone(), adapted.registry_name.clone());
                adaptation
                    .places
                    .insert(adapted.registry_name.clone(), Ok(adaptation.tools.len()));
                adaptation.tools.push(adapted);
            }
            Err(refusal) => {
                adaptation
                    .places
                    .insert(refusal.name.clone(), Err(adaptation.refused.len()));
                adaptation.refused.push(refusal);
            }
        }
    }
    adaptation
}

/// One tool's schemas and description in `dialect`, its name left as the
/// registry name (and without a name's notes): what [`adapt_converted`] fits.
pub fn convert_tool(dialect: Dialect, tool: &ToolInput<'_>) -> Result<AdaptedTool, Refusal> {
    let mut adapted = convert(dialect, tool)?;
    adapted.name = adapted.registry_name.clone();
    Ok(adapted)
}

/// The schemas and description in `dialect`; the name is left to the caller.
fn convert(dialect: Dialect, tool: &ToolInput<'_>) -> Result<AdaptedTool, Refusal> {
    let refuse = |(pointer, reason): walk::Failure| Refusal {
        name: tool.name.to_string(),
        dialect,
        pointer,
        reason,
    };
    let mut notes = Vec::new();
    let (parameters, output) = if dialect == Dialect::Mcp {
        // Unchanged: the server's own text.
        let exact = |text: &str, at: &str| {
            RawValue::from_string(text.to_string()).map_err(|e| {
                refuse((
                    at.to_string(),
                    format!("the schema is not valid JSON ({e})"),
                ))
            })
        };
        let input = exact(tool.input_schema, "/inputSchema")?;
        let output = tool
            .output_schema
            .map(|o| exact(o, "/outputSchema"))
            .transpose()?;
        (Some(input.into()), output.map(Rc::from))
    } else {
        let parse = |text: &str, at: &str| {
            serde_json::from_str::<json::Json>(text).map_err(|e| {
                refuse((
                    at.to_string(),
                    format!("the schema is not valid JSON ({e})"),
                ))
            })
        };
        let input = parse(tool.input_schema, "/inputSchema")?;
        let output = tool
            .output_schema
            .map(|o| parse(o, "/outputSchema"))
            .transpose()?;
        let (parameters, output) = match dialect {
            Dialect::Mcp | Dialect::OpenAi => openai::convert(&input, output.as_ref(), &mut notes),
            Dialect::OpenAiStrict => openai_strict::convert(&input, output.as_ref(), &mut notes),
            Dialect::Anthropic => anthropic::convert(input, &mut notes),
            Dialect::Gemini => gemini::convert(&input, output.as_ref(), &mut notes),
        }
        .map_err(refuse)?;
        (
            parameters.map(|p| Rc::from(raw(&p))),
            output.map(|o| Rc::from(raw(&o))),
        )
    };
    Ok(AdaptedTool {
        dialect,
        name: String::new(),
        registry_name: tool.name.to_string(),
        description: tool.description.map(str::to_string),
        parameters,
        output,
        notes: dedupe(notes),
    })
}

/// What a dialect's `convert` returns: (parameters, output), or why the tool
/// cannot be represented.
type Converted = Result<(Option<json::Json>, Option<json::Json>), walk::Failure>;

/// JSON text, keys in order.
fn raw(v: &json::Json) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a JSON tree serialises")
}

/// A value of an envelope's field.
enum Field<'a> {
    Str(&'a str),
    Bool(bool),
    Raw(&'a RawValue),
    Null,
}

/// An envelope: a JSON object of these fields, in this order.
fn envelope(fields: &[(&str, Field<'_>)]) -> Box<RawValue> {
    let mut text = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&serde_json::to_string(key).expect("a string serialises"));
        text.push(':');
        match value {
            Field::Str(s) => text.push_str(&serde_json::to_string(s).expect("a string serialises")),
            Field::Bool(b) => text.push_str(if *b { "true" } else { "false" }),
            Field::Raw(r) => text.push_str(r.get()),
            Field::Null => text.push_str("null"),
        }
    }
    text.push('}');
    RawValue::from_string(text).expect("an envelope is JSON")
}

/// Each note once, in the order first made (an inlined `$def` used twice loses the
/// same keyword twice).
fn dedupe(notes: Vec<Note>) -> Vec<Note> {
    let mut seen = alloc::collections::BTreeSet::new();
    notes
        .into_iter()
        .filter(|n| seen.insert((n.kind, n.pointer.clone(), n.lost.clone())))
        .collect()
}

#[cfg(test)]
mod tests;
