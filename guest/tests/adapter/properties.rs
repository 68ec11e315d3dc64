//! Generated instances through each conversion and back.
//!
//! For a schema and an instance valid under it, in each dialect:
//! - the instance as a model would write it under the adapted schema
//!   (`map_arguments_forward`) is valid under the adapted schema, unless the
//!   conversion noted that it narrowed the schema;
//! - mapped back (`map_arguments_back`), it is the instance again, or the
//!   conversion noted the ambiguity (or the instance holds a `null`, which strict
//!   mode's mapping may read as "not given" where the default is `null`);
//! - and it is valid under the original schema.
//!
//! Validity is the guest's own validator's (`mcpbox_guest::schema`), which the
//! differential tests hold to boon. Gemini's `Schema`s are read as JSON Schema
//! for it (`nullable` as a `null` type).

use super::corpus;
use super::schemas::Generator;
use arbitrary::Unstructured;
use mcpbox_guest::adapter::{
    self, Dialect, NoteKind, ToolInput, map_arguments_back, map_arguments_forward,
};
use mcpbox_guest::schema::Validator;
use proptest::collection::vec;
use proptest::prelude::any;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::fmt;

const DIALECTS: [Dialect; 4] = [
    Dialect::OpenAi,
    Dialect::OpenAiStrict,
    Dialect::Anthropic,
    Dialect::Gemini,
];

/// Cases per test: `MCPBOX_DIFF_CASES`, or `default`.
fn cases(default: u32) -> u32 {
    match std::env::var("MCPBOX_DIFF_CASES") {
        Ok(n) => n.parse().expect("MCPBOX_DIFF_CASES is a number of cases"),
        Err(_) => default,
    }
}

fn runner(cases: u32) -> TestRunner {
    let seed: u64 = std::env::var("MCPBOX_DIFF_SEED")
        .map(|s| s.parse().expect("MCPBOX_DIFF_SEED is a number"))
        .unwrap_or(7);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

#[derive(Default, Debug)]
struct Tally {
    /// Instances valid under their original schema, checked.
    valid: u32,
    /// (dialect, instance) pairs checked.
    converted: u32,
    /// Of those, the adapted schema refused the instance, as a narrowing note said.
    narrowed: u32,
    /// Tools a dialect refused (with a reason).
    refused: u32,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} valid instances, {} conversions checked, {} refused as noted narrowed, {} tools refused",
            self.valid, self.converted, self.narrowed, self.refused
        )
    }
}

/// `v` with Gemini's `nullable` written as JSON Schema's `null` type.
pub fn gemini_as_json_schema(v: &Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, sub) in m {
        let sub = match k.as_str() {
            "items" => gemini_as_json_schema(sub),
            "anyOf" => Value::Array(
                sub.as_array()
                    .unwrap()
                    .iter()
                    .map(gemini_as_json_schema)
                    .collect(),
            ),
            "properties" => Value::Object(
                sub.as_object()
                    .unwrap()
                    .iter()
                    .map(|(name, s)| (name.clone(), gemini_as_json_schema(s)))
                    .collect(),
            ),
            "nullable" | "propertyOrdering" | "example" => continue,
            _ => sub.clone(),
        };
        out.insert(k.clone(), sub);
    }
    if m.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(t)) = out.get("type").cloned() {
            out.insert("type".into(), json!([t, "null"]));
        }
        if let Some(Value::Array(e)) = out.get_mut("enum") {
            e.push(Value::Null);
        }
        if let Some(Value::Array(branches)) = out.get_mut("anyOf") {
            branches.push(json!({"type": "null"}));
        }
    }
    Value::Object(out)
}

fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(has_null),
        Value::Object(m) => m.values().any(has_null),
        _ => false,
    }
}

/// Checks one instance, valid under `schema`, in every dialect.
fn through_every_dialect(schema: &str, instance: &Value, tally: &mut Tally) -> Result<(), String> {
    let original = Validator::compile(schema).map_err(|e| format!("original: {e}"))?;
    if original.validate(instance).is_err() {
        return Ok(());
    }
    tally.valid += 1;
    for dialect in DIALECTS {
        let tool = ToolInput {
            name: "mcp__p__t",
            description: None,
            input_schema: schema,
            output_schema: None,
        };
        let adapted = match adapter::adapt_tool(dialect, &tool) {
            Ok(a) => a,
            Err(_) => {
                tally.refused += 1;
                continue;
            }
        };
        tally.converted += 1;
        let converted: Value = match &adapted.parameters {
            Some(p) => serde_json::from_str(p.get()).unwrap(),
            // Gemini without parameters: called with none.
            None => json!({"type": "object", "maxProperties": 0}),
        };
        let converted = if dialect == Dialect::Gemini {
            gemini_as_json_schema(&converted)
        } else {
            converted
        };
        let context = || {
            format!(
                "{dialect}\nschema: {schema}\nadapted: {converted}\ninstance: {instance}\nnotes: {:#?}",
                adapted.notes
            )
        };
        let validator = Validator::compile(&converted.to_string())
            .map_err(|e| format!("the adapted schema does not compile: {e}\n{}", context()))?;
        let forward = map_arguments_forward(dialect, schema, instance.clone());
        if let Err(errors) = validator.validate(&forward) {
            let narrowed = adapted.notes.iter().any(|n| n.kind == NoteKind::Narrowed);
            if !narrowed {
                return Err(format!(
                    "the adapted schema refuses {forward} ({}) and no note says it narrowed\n{}",
                    mcpbox_guest::schema::describe(&errors),
                    context()
                ));
            }
            tally.narrowed += 1;
            continue;
        }
        let back = map_arguments_back(dialect, schema, forward.clone());
        let ambiguous = adapted.notes.iter().any(|n| n.kind == NoteKind::Ambiguous);
        if &back != instance && ambiguous {
            // Left out and `null` look the same here, as noted: `null` is passed
            // on, and the original decides.
            continue;
        }
        if let Err(errors) = original.validate(&back) {
            return Err(format!(
                "mapped back, {back} is not valid under the original ({})\nforward: {forward}\n{}",
                mcpbox_guest::schema::describe(&errors),
                context()
            ));
        }
        if &back != instance && !has_null(instance) {
            return Err(format!(
                "mapped there and back, {instance} became {back}\nforward: {forward}\n{}",
                context()
            ));
        }
    }
    Ok(())
}

fn run(
    cases: u32,
    case: impl Fn(&mut Unstructured, &mut Tally) -> arbitrary::Result<Result<(), String>>,
) -> Tally {
    let tally = RefCell::new(Tally::default());
    let result = runner(cases).run(&vec(any::<u8>(), 64..2048), |bytes| {
        let mut u = Unstructured::new(&bytes);
        match case(&mut u, &mut tally.borrow_mut()) {
            Ok(Err(failure)) => Err(TestCaseError::fail(failure)),
            Ok(Ok(())) | Err(_) => Ok(()),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let tally = tally.into_inner();
    println!("{tally}");
    tally
}

#[test]
fn corpus_instances_survive_every_dialect() {
    let tools = corpus();
    let schemas: Vec<(String, Value)> = tools
        .iter()
        .map(|t| {
            (
                t.input_schema.clone(),
                serde_json::from_str(&t.input_schema).unwrap(),
            )
        })
        .collect();
    let t = run(cases(1_500), |u, tally| {
        let (text, schema) = u.choose(&schemas)?;
        let generator = Generator::new(u)?;
        let instance = generator.instance(u, schema, schema, 12)?;
        Ok(through_every_dialect(text, &instance, tally))
    });
    assert!(t.valid > 300, "{t}");
    assert!(t.converted >= 4 * t.valid - t.refused, "{t}");
}

/// A schema from the differential tests' generator, as one property of an object
/// (tool arguments are an object): its definitions and `$schema` move to the root,
/// and `#` becomes the property.
fn wrapped(schema: &Value) -> Value {
    fn rebase(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if m.get("$ref") == Some(&json!("#")) {
                    m.insert("$ref".into(), json!("#/properties/x"));
                }
                for sub in m.values_mut() {
                    rebase(sub);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(rebase),
            _ => {}
        }
    }
    let mut inner = schema.clone();
    let mut root = Map::new();
    if let Value::Object(m) = &mut inner {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(v) = m.remove(key) {
                root.insert(key.into(), v);
            }
        }
    }
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), json!({"x": inner}));
    root.insert("required".into(), json!(["x"]));
    let mut root = Value::Object(root);
    rebase(&mut root);
    root
}

#[test]
fn generated_instances_survive_every_dialect() {
    let t = run(cases(1_500), |u, tally| {
        let mut generator = Generator::new(u)?;
        let case = generator.case(u)?;
        let schema = wrapped(&case.schema);
        let text = schema.to_string();
        for instance in case.instances {
            if let Err(failure) = through_every_dialect(&text, &json!({"x": instance}), tally) {
                return Ok(Err(failure));
            }
        }
        Ok(Ok(()))
    });
    assert!(t.valid > 500, "{t}");
}
