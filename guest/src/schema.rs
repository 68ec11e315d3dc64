//! Checking call arguments against a tool's `inputSchema` (JSON Schema).
//!
//! A model that sends a wrong argument learns more from "`/text: want string, but got
//! number`" before the call than from whatever the server makes of it, so arguments
//! are checked in the guest first. The server still checks them: a keyword we do not
//! evaluate only makes our check weaker, never wrong, so unsupported parts are skipped
//! with a note rather than rejected.
//!
//! Why not `boon` (or `jsonschema`, which is larger): boon needs std, and the
//! component is `no_std` so that it imports no `wasi:cli/*` (see `lib.rs`); boon's
//! `ahash` and std's `HashMap` seed themselves at run time, which adds
//! `wasi:random/random` and `wasi:random/insecure-seed` imports to a component that
//! must have none; and it is big: a std build of the guest grows from 0.65 MB to
//! 2.3 MB with boon (measured with the `guest` profile; the `no_std` guest is
//! 0.71 MB), and Cranelift's compile time at first run grows with it. Tool schemas use a small,
//! stable part of JSON Schema; that part is implemented here, and
//! `tests/differential/` checks it against boon on generated schemas and
//! instances (docs/testing.md lists the differences, "Documented differences"):
//!
//! - `type`, `enum`, `const`;
//! - numbers: `minimum`, `maximum`, `exclusiveMinimum`/`exclusiveMaximum` (numbers,
//!   or draft-4 booleans), `multipleOf`;
//! - strings: `minLength`, `maxLength` (in code points), `pattern` (see [`Pattern`];
//!   a pattern it does not support, such as a lookbehind, is skipped with a note);
//! - arrays: `items` (schema, or draft-7 tuple array), `prefixItems`, `additionalItems`,
//!   `minItems`, `maxItems`, `uniqueItems`, `contains`, `minContains`, `maxContains`;
//! - objects: `properties`, `patternProperties`, `additionalProperties`, `required`,
//!   `minProperties`, `maxProperties`, `propertyNames`, `dependentRequired`,
//!   `dependentSchemas`, draft-7 `dependencies`;
//! - `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`;
//! - `$ref` to this document: JSON pointers (`#/$defs/x`, `#/definitions/x`), `$anchor`
//!   names, and the document's own `$id`. A `$ref` anywhere else cannot be resolved
//!   without fetching, which mcpbox never does, so such a schema does not compile.
//!
//! Not evaluated (noted): `unevaluatedProperties`, `unevaluatedItems`,
//! `$dynamicRef` outside this document. `format` is an annotation in draft 2020-12
//! and is not asserted.
//!
//! A schema that declares its draft in `$schema` is read as that draft: a keyword
//! added later (`const` before draft 6, `prefixItems` before 2020-12, …) is not a
//! keyword there and is ignored, and up to draft 7 `$ref` replaces its siblings.
//! A schema without `$schema` is read with every draft's keywords (MCP servers mix
//! them: draft-7 tuple `items` beside 2020-12 `$defs`).

use crate::prelude::*;
use alloc::collections::BTreeMap;
use core::fmt;

mod pattern;

pub use pattern::Pattern;
use serde_json::{Map, Value};

/// How deep validation may recurse; guards against `$ref` cycles that never
/// descend into the instance (`{"$ref": "#"}`).
const MAX_DEPTH: u32 = 200;

/// How many errors a message shows; the rest are counted.
const SHOWN_ERRORS: usize = 3;

/// One way the instance fails the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// Where in the instance, as a JSON pointer (`""` is the whole instance).
    pub path: String,
    /// What is wrong there.
    pub message: String,
    /// For type mismatches, so `anyOf` failures can be merged into one
    /// "want string or number" message.
    mismatch: Option<Mismatch>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// A type mismatch: the wanted types and the instance's type.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mismatch {
    want: Vec<&'static str>,
    got: &'static str,
}

/// Formats the first few errors on one line.
pub fn describe(errors: &[SchemaError]) -> String {
    let mut text = errors
        .iter()
        .take(SHOWN_ERRORS)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if errors.len() > SHOWN_ERRORS {
        text.push_str(&format!(" (and {} more)", errors.len() - SHOWN_ERRORS));
    }
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    fn parse(name: &str) -> Option<JsonType> {
        Some(match name {
            "null" => JsonType::Null,
            "boolean" => JsonType::Boolean,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "string" => JsonType::String,
            "array" => JsonType::Array,
            "object" => JsonType::Object,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }

    fn matches(self, v: &Value) -> bool {
        match self {
            JsonType::Null => v.is_null(),
            JsonType::Boolean => v.is_boolean(),
            JsonType::Integer => is_integer(v),
            JsonType::Number => v.is_number(),
            JsonType::String => v.is_string(),
            JsonType::Array => v.is_array(),
            JsonType::Object => v.is_object(),
        }
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(is_whole),
        _ => false,
    }
}

/// Whether a finite number has no fractional part. `f64::fract` lives in std, not
/// in core; floats of magnitude 2^53 and above are all whole.
pub(crate) fn is_whole(x: f64) -> bool {
    x.is_finite() && (x.abs() >= 9_007_199_254_740_992.0 || (x as i64) as f64 == x)
}

/// `multipleOf` as the JSON text means it, in decimal: 0.3 is a multiple of 0.1,
/// though in binary floating point 0.3 / 0.1 is 2.9999999999999996. Each number is
/// taken as the shortest decimal that reads back as the same `f64` (what the
/// server wrote, for up to 17 significant digits). Checked after the binary
/// quotient, so what a floating-point validator accepts is accepted too.
fn is_decimal_multiple(x: f64, m: f64) -> bool {
    let (Some((a, p)), Some((b, q))) = (decimal(x), decimal(m)) else {
        return false;
    };
    if a == 0 {
        return true;
    }
    if b == 0 {
        return false;
    }
    // x / m = a / b * 10^(p - q): a whole number when b divides a * 10^(p - q).
    if p >= q {
        let mut rest = u128::from(a % b);
        for _ in 0..p - q {
            if rest == 0 {
                break;
            }
            rest = rest * 10 % u128::from(b);
        }
        rest == 0
    } else {
        let mut divisor = u128::from(b);
        for _ in 0..q - p {
            divisor *= 10;
            if divisor > u128::from(a) {
                return false;
            }
        }
        u128::from(a) % divisor == 0
    }
}

/// `|x|` as digits and a power of ten: 0.25 is (25, -2). `None` for NaN and the
/// infinities, which JSON does not have.
fn decimal(x: f64) -> Option<(u64, i32)> {
    if !x.is_finite() {
        return None;
    }
    // Rust's `{:e}` is the shortest round-trip form: "2.5e-1".
    let text = format!("{:e}", x.abs());
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: u64 = format!("{whole}{fraction}").parse().ok()?;
    Some((digits, exponent - fraction.len() as i32))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Debug)]
enum Node {
    /// `true` or `{}`: anything goes.
    Any,
    /// `false`: nothing is allowed.
    Never,
    Schema(Box<Keywords>),
}

#[derive(Debug, Default)]
struct Keywords {
    reference: Option<usize>,
    types: Option<Vec<JsonType>>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<(String, Pattern)>,
    prefix_items: Vec<usize>,
    items: Option<usize>,
    contains: Option<usize>,
    min_contains: Option<u64>,
    max_contains: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    properties: Vec<(String, usize)>,
    pattern_properties: Vec<(Pattern, usize)>,
    additional_properties: Option<usize>,
    required: Vec<String>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    property_names: Option<usize>,
    dependent_required: Vec<(String, Vec<String>)>,
    dependent_schemas: Vec<(String, usize)>,
    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    not: Option<usize>,
    condition: Option<(usize, Option<usize>, Option<usize>)>,
}

/// A compiled schema, ready to check instances.
#[derive(Debug)]
pub struct Validator {
    nodes: Vec<Node>,
    notes: Vec<String>,
}

impl Validator {
    /// Compiles schema text. Fails when the schema is not JSON, is not a schema,
    /// or refers outside itself.
    pub fn compile(text: &str) -> Result<Validator, String> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| format!("the schema is not valid JSON: {e}"))?;
        let draft = root
            .get("$schema")
            .and_then(Value::as_str)
            .and_then(declared_draft);
        let mut compiler = Compiler {
            root: &root,
            root_id: root
                .get("$id")
                .or_else(|| root.get("id"))
                .and_then(Value::as_str)
                .map(|s| s.trim_end_matches('#').to_string())
                .filter(|s| !s.is_empty()),
            anchors: BTreeMap::new(),
            draft,
            nodes: Vec::new(),
            memo: BTreeMap::new(),
            notes: Vec::new(),
        };
        collect_anchors(&root, &mut String::new(), &mut compiler.anchors);
        compiler.compile_at("", &root)?;
        Ok(Validator {
            nodes: compiler.nodes,
            notes: compiler.notes,
        })
    }

    /// Parts of the schema that are not checked (and why), for one warning.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Checks an instance; every error found, in document order.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<SchemaError>> {
        let mut errors = Vec::new();
        let mut path = String::new();
        self.check(0, instance, &mut path, &mut errors, 0);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn check(
        &self,
        node: usize,
        v: &Value,
        path: &mut String,
        out: &mut Vec<SchemaError>,
        depth: u32,
    ) {
        if depth > MAX_DEPTH {
            out.push(err(
                path,
                "the schema nests too deeply here (a $ref cycle?)".into(),
            ));
            return;
        }
        let k = match &self.nodes[node] {
            Node::Any => return,
            Node::Never => {
                out.push(err(
                    path,
                    "no value is allowed here (the schema is `false`)".into(),
                ));
                return;
            }
            Node::Schema(k) => k,
        };
        let depth = depth + 1;
        if let Some(r) = k.reference {
            self.check(r, v, path, out, depth);
        }
        if let Some(types) = &k.types
            && !types.iter().any(|t| t.matches(v))
        {
            let want: Vec<&'static str> = types.iter().map(|t| t.name()).collect();
            let got = type_name(v);
            out.push(SchemaError {
                path: path.clone(),
                message: format!("want {}, but got {got}", want.join(" or ")),
                mismatch: Some(Mismatch { want, got }),
            });
            // Every other keyword would only restate the type mismatch.
            return;
        }
        if let Some(values) = &k.enumeration
            && !values.iter().any(|e| json_eq(e, v))
        {
            let shown: Vec<String> = values.iter().take(10).map(short).collect();
            let more = if values.len() > 10 { ", …" } else { "" };
            out.push(err(
                path,
                format!(
                    "want one of {}{more}, but got {}",
                    shown.join(", "),
                    short(v)
                ),
            ));
        }
        if let Some(c) = &k.constant
            && !json_eq(c, v)
        {
            out.push(err(
                path,
                format!("want {}, but got {}", short(c), short(v)),
            ));
        }
        match v {
            Value::Number(n) => self.check_number(k, n.as_f64().unwrap_or(f64::NAN), v, path, out),
            Value::String(s) => check_string(k, s, path, out),
            Value::Array(items) => self.check_array(k, items, path, out, depth),
            Value::Object(map) => self.check_object(k, map, path, out, depth),
            _ => {}
        }
        for &s in &k.all_of {
            self.check(s, v, path, out, depth);
        }
        if !k.any_of.is_empty() {
            let mut failures = Vec::new();
            for &s in &k.any_of {
                let mut scratch = Vec::new();
                self.check(s, v, path, &mut scratch, depth);
                if scratch.is_empty() {
                    failures.clear();
                    break;
                }
                failures.push(scratch);
            }
            if !failures.is_empty() {
                out.extend(none_matched("anyOf", failures, path));
            }
        }
        if !k.one_of.is_empty() {
            let mut failures = Vec::new();
            let mut matched = Vec::new();
            for (i, &s) in k.one_of.iter().enumerate() {
                let mut scratch = Vec::new();
                self.check(s, v, path, &mut scratch, depth);
                if scratch.is_empty() {
                    matched.push(i);
                } else {
                    failures.push(scratch);
                }
            }
            match matched.len() {
                0 => out.extend(none_matched("oneOf", failures, path)),
                1 => {}
                _ => out.push(err(
                    path,
                    format!(
                        "matches more than one oneOf alternative ({}), but must match exactly one",
                        matched
                            .iter()
                            .map(|i| i.to_string())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ),
                )),
            }
        }
        if let Some(n) = k.not {
            let mut scratch = Vec::new();
            self.check(n, v, path, &mut scratch, depth);
            if scratch.is_empty() {
                out.push(err(
                    path,
                    "matches the schema under `not`, which is forbidden".into(),
                ));
            }
        }
        if let Some((cond, then, otherwise)) = k.condition {
            let mut scratch = Vec::new();
            self.check(cond, v, path, &mut scratch, depth);
            let branch = if scratch.is_empty() { then } else { otherwise };
            if let Some(b) = branch {
                self.check(b, v, path, out, depth);
            }
        }
    }

    fn check_number(
        &self,
        k: &Keywords,
        x: f64,
        v: &Value,
        path: &str,
        out: &mut Vec<SchemaError>,
    ) {
        let got = short(v);
        if let Some(m) = k.minimum
            && x < m
        {
            out.push(err(path, format!("want >= {}, but got {got}", num(m))));
        }
        if let Some(m) = k.exclusive_minimum
            && x <= m
        {
            out.push(err(path, format!("want > {}, but got {got}", num(m))));
        }
        if let Some(m) = k.maximum
            && x > m
        {
            out.push(err(path, format!("want <= {}, but got {got}", num(m))));
        }
        if let Some(m) = k.exclusive_maximum
            && x >= m
        {
            out.push(err(path, format!("want < {}, but got {got}", num(m))));
        }
        if let Some(m) = k.multiple_of
            && !is_whole(x / m)
            && !is_decimal_multiple(x, m)
        {
            out.push(err(
                path,
                format!("want a multiple of {}, but got {got}", num(m)),
            ));
        }
    }

    fn check_array(
        &self,
        k: &Keywords,
        items: &[Value],
        path: &mut String,
        out: &mut Vec<SchemaError>,
        depth: u32,
    ) {
        let len = items.len() as u64;
        if let Some(min) = k.min_items
            && len < min
        {
            out.push(err(
                path,
                format!("want at least {min} items, but got {len}"),
            ));
        }
        if let Some(max) = k.max_items
            && len > max
        {
            out.push(err(
                path,
                format!("want at most {max} items, but got {len}"),
            ));
        }
        if k.unique_items {
            'outer: for i in 0..items.len() {
                for j in i + 1..items.len() {
                    if json_eq(&items[i], &items[j]) {
                        out.push(err(
                            path,
                            format!("want unique items, but items {i} and {j} are equal"),
                        ));
                        break 'outer;
                    }
                }
            }
        }
        for (i, item) in items.iter().enumerate() {
            let schema = k
                .prefix_items
                .get(i)
                .copied()
                .or(if i >= k.prefix_items.len() {
                    k.items
                } else {
                    None
                });
            if let Some(s) = schema {
                let base = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                self.check(s, item, path, out, depth);
                path.truncate(base);
            }
        }
        if let Some(c) = k.contains {
            let mut count = 0u64;
            for item in items {
                let mut scratch = Vec::new();
                self.check(c, item, path, &mut scratch, depth);
                if scratch.is_empty() {
                    count += 1;
                }
            }
            let min = k.min_contains.unwrap_or(1);
            if count < min {
                out.push(err(
                    path,
                    format!("want at least {min} items matching `contains`, but got {count}"),
                ));
            }
            if let Some(max) = k.max_contains
                && count > max
            {
                out.push(err(
                    path,
                    format!("want at most {max} items matching `contains`, but got {count}"),
                ));
            }
        }
    }

    fn check_object(
        &self,
        k: &Keywords,
        map: &Map<String, Value>,
        path: &mut String,
        out: &mut Vec<SchemaError>,
        depth: u32,
    ) {
        let len = map.len() as u64;
        if let Some(min) = k.min_properties
            && len < min
        {
            out.push(err(
                path,
                format!("want at least {min} properties, but got {len}"),
            ));
        }
        if let Some(max) = k.max_properties
            && len > max
        {
            out.push(err(
                path,
                format!("want at most {max} properties, but got {len}"),
            ));
        }
        for name in &k.required {
            if !map.contains_key(name) {
                out.push(err(
                    &child(path, name),
                    "required property is missing".into(),
                ));
            }
        }
        for (name, needs) in &k.dependent_required {
            if map.contains_key(name) {
                for need in needs {
                    if !map.contains_key(need) {
                        out.push(err(
                            &child(path, need),
                            format!(
                                "required property is missing (required when {name:?} is present)"
                            ),
                        ));
                    }
                }
            }
        }
        for (name, s) in &k.dependent_schemas {
            if map.contains_key(name) {
                self.check(*s, &Value::Object(map.clone()), path, out, depth);
            }
        }
        for (name, value) in map {
            let base = path.len();
            path.push('/');
            path.push_str(&escape(name));
            if let Some(names) = k.property_names {
                let mut scratch = Vec::new();
                self.check(
                    names,
                    &Value::String(name.clone()),
                    path,
                    &mut scratch,
                    depth,
                );
                for e in scratch {
                    out.push(err(path, format!("property name {name:?}: {}", e.message)));
                }
            }
            let mut known = false;
            if let Some((_, s)) = k.properties.iter().find(|(p, _)| p == name) {
                known = true;
                self.check(*s, value, path, out, depth);
            }
            for (re, s) in &k.pattern_properties {
                // A name the matcher cannot decide counts as matching: fail open.
                if re.is_match(name) != Some(false) {
                    known = true;
                    self.check(*s, value, path, out, depth);
                }
            }
            if !known && let Some(extra) = k.additional_properties {
                if matches!(self.nodes[extra], Node::Never) {
                    let mut allowed: Vec<&str> =
                        k.properties.iter().map(|(p, _)| p.as_str()).collect();
                    let message = if allowed.is_empty() {
                        "unexpected property: the schema allows no other properties".to_string()
                    } else {
                        let more = allowed.len() > 12;
                        allowed.truncate(12);
                        format!(
                            "unexpected property; allowed: {}{}",
                            allowed.join(", "),
                            if more { ", …" } else { "" }
                        )
                    };
                    out.push(err(path, message));
                } else {
                    self.check(extra, value, path, out, depth);
                }
            }
            path.truncate(base);
        }
    }
}

fn check_string(k: &Keywords, s: &str, path: &str, out: &mut Vec<SchemaError>) {
    if k.min_length.is_some() || k.max_length.is_some() {
        let len = s.chars().count() as u64;
        if let Some(min) = k.min_length
            && len < min
        {
            out.push(err(
                path,
                format!("want at least {min} characters, but got {len}"),
            ));
        }
        if let Some(max) = k.max_length
            && len > max
        {
            out.push(err(
                path,
                format!("want at most {max} characters, but got {len}"),
            ));
        }
    }
    if let Some((source, re)) = &k.pattern {
        // `None`: the matcher gave up; the server checks the pattern anyway.
        if re.is_match(s) == Some(false) {
            out.push(err(
                path,
                format!(
                    "{} does not match the pattern {source}",
                    short(&Value::String(s.into()))
                ),
            ));
        }
    }
}

fn err(path: &str, message: String) -> SchemaError {
    SchemaError {
        path: path.to_string(),
        message,
        mismatch: None,
    }
}

/// Explains why no alternative of `anyOf`/`oneOf` matched, as helpfully as the
/// shape of the failures allows.
fn none_matched(keyword: &str, failures: Vec<Vec<SchemaError>>, path: &str) -> Vec<SchemaError> {
    let wrong_type_here = |errors: &[SchemaError]| {
        errors.len() == 1 && errors[0].path == path && errors[0].mismatch.is_some()
    };
    // Every alternative wanted another type: one merged type error.
    if failures.iter().all(|f| wrong_type_here(f)) {
        let mut want: Vec<&'static str> = Vec::new();
        let mut got = "";
        for m in failures.iter().filter_map(|f| f[0].mismatch.as_ref()) {
            got = m.got;
            for t in &m.want {
                if !want.contains(t) {
                    want.push(t);
                }
            }
        }
        return vec![SchemaError {
            path: path.to_string(),
            message: format!("want {}, but got {got}", want.join(" or ")),
            mismatch: Some(Mismatch { want, got }),
        }];
    }
    // Exactly one alternative had the right type: its errors are the useful ones
    // (an object branch failing on a property, beside a `null` branch).
    let right_type: Vec<&Vec<SchemaError>> =
        failures.iter().filter(|f| !wrong_type_here(f)).collect();
    if right_type.len() == 1 {
        return right_type[0].clone();
    }
    let summary: Vec<String> = failures
        .iter()
        .enumerate()
        .take(SHOWN_ERRORS)
        .map(|(i, f)| format!("[{i}] {}", f[0]))
        .collect();
    vec![err(
        path,
        format!(
            "matches none of the {keyword} alternatives: {}",
            summary.join("; ")
        ),
    )]
}

fn child(path: &str, name: &str) -> String {
    format!("{path}/{}", escape(name))
}

/// JSON pointer escaping (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn num(x: f64) -> String {
    if is_whole(x) && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A value in a message: JSON, cut short.
fn short(v: &Value) -> String {
    crate::jsonrpc::truncate(&v.to_string(), 40)
}

/// JSON equality as JSON Schema defines it: `1` equals `1.0`.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

/// Finds `$anchor` (2019-09+) and `$id: "#name"` (draft 6/7) locations.
fn collect_anchors(v: &Value, ptr: &mut String, anchors: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(map) => {
            for key in ["$anchor", "$dynamicAnchor"] {
                if let Some(Value::String(a)) = map.get(key) {
                    anchors.entry(a.clone()).or_insert_with(|| ptr.clone());
                }
            }
            for key in ["$id", "id"] {
                if let Some(Value::String(id)) = map.get(key)
                    && let Some(a) = id.strip_prefix('#')
                {
                    anchors.entry(a.to_string()).or_insert_with(|| ptr.clone());
                }
            }
            for (k, child) in map {
                // `enum`/`const`/`default`/`examples` hold data, not schemas.
                if matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                    continue;
                }
                let base = ptr.len();
                ptr.push('/');
                ptr.push_str(&escape(k));
                collect_anchors(child, ptr, anchors);
                ptr.truncate(base);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let base = ptr.len();
                ptr.push('/');
                ptr.push_str(&i.to_string());
                collect_anchors(child, ptr, anchors);
                ptr.truncate(base);
            }
        }
        _ => {}
    }
}

fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Compiler<'a> {
    root: &'a Value,
    root_id: Option<String>,
    anchors: BTreeMap<String, String>,
    /// The draft `$schema` declares (4, 6, 7, 2019, 2020), if any: a keyword
    /// that draft does not have is not a keyword there, and evaluating it would
    /// reject arguments the server accepts. Without one, every draft's keywords
    /// are read.
    draft: Option<u32>,
    nodes: Vec<Node>,
    /// Schema locations already compiled, so `$ref` cycles close into a graph.
    memo: BTreeMap<String, usize>,
    notes: Vec<String>,
}

impl Compiler<'_> {
    fn compile_at(&mut self, ptr: &str, v: &Value) -> Result<usize, String> {
        if let Some(&i) = self.memo.get(ptr) {
            return Ok(i);
        }
        let index = self.nodes.len();
        self.nodes.push(Node::Any);
        self.memo.insert(ptr.to_string(), index);
        let node = match v {
            Value::Bool(true) => Node::Any,
            Value::Bool(false) => Node::Never,
            Value::Object(map) if map.is_empty() => Node::Any,
            Value::Object(map) => Node::Schema(Box::new(self.keywords(ptr, map)?)),
            other => {
                return Err(format!(
                    "{} must be a schema (an object or a boolean), but is {}",
                    at(ptr),
                    type_name(other)
                ));
            }
        };
        self.nodes[index] = node;
        Ok(index)
    }

    fn sub(&mut self, ptr: &str, key: &str, v: &Value) -> Result<usize, String> {
        self.compile_at(&format!("{ptr}/{}", escape(key)), v)
    }

    fn list(&mut self, ptr: &str, key: &str, v: &Value) -> Result<Vec<usize>, String> {
        let Value::Array(items) = v else {
            return Err(format!(
                "{} must be an array of schemas",
                at(&format!("{ptr}/{key}"))
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, s)| self.compile_at(&format!("{ptr}/{key}/{i}"), s))
            .collect()
    }

    fn keywords(&mut self, ptr: &str, map: &Map<String, Value>) -> Result<Keywords, String> {
        let mut k = Keywords::default();
        if let Some(r) = map
            .get("$ref")
            .or_else(|| map.get("$recursiveRef"))
            .or_else(|| map.get("$dynamicRef"))
        {
            let Value::String(r) = r else {
                return Err(format!("{}/$ref must be a string", at(ptr)));
            };
            k.reference = Some(self.resolve(ptr, r)?);
            // Draft 7 and earlier: `$ref` replaces its siblings.
            if self.draft.is_some_and(|d| d <= 7) {
                return Ok(k);
            }
        }
        for (key, v) in map {
            let here = || format!("{}/{key}", at(ptr));
            if let Some(since) = introduced_in(key)
                && self.draft.is_some_and(|d| d < since)
            {
                continue;
            }
            match key.as_str() {
                "type" => {
                    let names: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    let mut types = Vec::new();
                    for n in names {
                        let t = n.as_str().and_then(JsonType::parse).ok_or_else(|| {
                            format!("{}: unknown type {n}; use null, boolean, integer, number, string, array or object", here())
                        })?;
                        types.push(t);
                    }
                    k.types = Some(types);
                }
                "enum" => match v {
                    Value::Array(values) => k.enumeration = Some(values.clone()),
                    _ => return Err(format!("{} must be an array", here())),
                },
                "const" => k.constant = Some(v.clone()),
                "minimum" => k.minimum = Some(number(v, &here)?),
                "maximum" => k.maximum = Some(number(v, &here)?),
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let min = key == "exclusiveMinimum";
                    match v {
                        // Draft 4: a flag that makes minimum/maximum exclusive.
                        Value::Bool(true) => {
                            let bound = map.get(if min { "minimum" } else { "maximum" });
                            if let Some(b) = bound {
                                let b = number(b, &here)?;
                                if min {
                                    k.exclusive_minimum = Some(b);
                                } else {
                                    k.exclusive_maximum = Some(b);
                                }
                            }
                        }
                        Value::Bool(false) => {}
                        _ => {
                            let b = number(v, &here)?;
                            if min {
                                k.exclusive_minimum = Some(b);
                            } else {
                                k.exclusive_maximum = Some(b);
                            }
                        }
                    }
                }
                "multipleOf" => {
                    let m = number(v, &here)?;
                    if m <= 0.0 {
                        return Err(format!("{} must be greater than 0", here()));
                    }
                    k.multiple_of = Some(m);
                }
                "minLength" => k.min_length = Some(count(v, &here)?),
                "maxLength" => k.max_length = Some(count(v, &here)?),
                "minItems" => k.min_items = Some(count(v, &here)?),
                "maxItems" => k.max_items = Some(count(v, &here)?),
                "minContains" => k.min_contains = Some(count(v, &here)?),
                "maxContains" => k.max_contains = Some(count(v, &here)?),
                "minProperties" => k.min_properties = Some(count(v, &here)?),
                "maxProperties" => k.max_properties = Some(count(v, &here)?),
                "uniqueItems" => {
                    k.unique_items = v
                        .as_bool()
                        .ok_or_else(|| format!("{} must be a boolean", here()))?
                }
                "pattern" => {
                    let Value::String(p) = v else {
                        return Err(format!("{} must be a string", here()));
                    };
                    match Pattern::new(p) {
                        Ok(re) => k.pattern = Some((p.clone(), re)),
                        Err(why) => self
                            .notes
                            .push(format!("{}: pattern {p:?} is not checked ({why})", here())),
                    }
                }
                "items" => match v {
                    Value::Array(_) => {
                        k.prefix_items = self.list(ptr, key, v)?;
                        if let Some(extra) = map.get("additionalItems") {
                            k.items = Some(self.sub(ptr, "additionalItems", extra)?);
                        }
                    }
                    _ => k.items = Some(self.sub(ptr, key, v)?),
                },
                "prefixItems" => k.prefix_items = self.list(ptr, key, v)?,
                "contains" => k.contains = Some(self.sub(ptr, key, v)?),
                "properties" => {
                    let Value::Object(props) = v else {
                        return Err(format!("{} must be an object", here()));
                    };
                    for (name, s) in props {
                        let i =
                            self.compile_at(&format!("{ptr}/properties/{}", escape(name)), s)?;
                        k.properties.push((name.clone(), i));
                    }
                }
                "patternProperties" => {
                    let Value::Object(props) = v else {
                        return Err(format!("{} must be an object", here()));
                    };
                    for (p, s) in props {
                        let i =
                            self.compile_at(&format!("{ptr}/patternProperties/{}", escape(p)), s)?;
                        match Pattern::new(p) {
                            Ok(re) => k.pattern_properties.push((re, i)),
                            Err(why) => {
                                return Err(format!(
                                    "{}: pattern {p:?} is not supported ({why}), so properties cannot be matched",
                                    here()
                                ));
                            }
                        }
                    }
                }
                "additionalProperties" => k.additional_properties = Some(self.sub(ptr, key, v)?),
                "required" => match v {
                    Value::Array(names) => {
                        for n in names {
                            let n = n.as_str().ok_or_else(|| {
                                format!("{} must list property names as strings", here())
                            })?;
                            k.required.push(n.to_string());
                        }
                    }
                    // Draft 3 put `required: true` on the property itself.
                    Value::Bool(_) => self.notes.push(format!(
                        "{}: draft-3 `required: true` is not checked",
                        here()
                    )),
                    _ => return Err(format!("{} must be an array of property names", here())),
                },
                "propertyNames" => k.property_names = Some(self.sub(ptr, key, v)?),
                "dependentRequired" => k.dependent_required = string_lists(v, &here)?,
                "dependentSchemas" => {
                    let Value::Object(deps) = v else {
                        return Err(format!("{} must be an object", here()));
                    };
                    for (name, s) in deps {
                        let i = self
                            .compile_at(&format!("{ptr}/dependentSchemas/{}", escape(name)), s)?;
                        k.dependent_schemas.push((name.clone(), i));
                    }
                }
                "dependencies" => {
                    let Value::Object(deps) = v else {
                        return Err(format!("{} must be an object", here()));
                    };
                    for (name, d) in deps {
                        if let Value::Array(_) = d {
                            k.dependent_required.extend(string_lists(
                                &Value::Object(Map::from_iter([(name.clone(), d.clone())])),
                                &here,
                            )?);
                        } else {
                            let i = self
                                .compile_at(&format!("{ptr}/dependencies/{}", escape(name)), d)?;
                            k.dependent_schemas.push((name.clone(), i));
                        }
                    }
                }
                "allOf" => k.all_of = self.list(ptr, key, v)?,
                "anyOf" => k.any_of = self.list(ptr, key, v)?,
                "oneOf" => k.one_of = self.list(ptr, key, v)?,
                "not" => k.not = Some(self.sub(ptr, key, v)?),
                "if" => {
                    let cond = self.sub(ptr, key, v)?;
                    let then = map
                        .get("then")
                        .map(|s| self.sub(ptr, "then", s))
                        .transpose()?;
                    let otherwise = map
                        .get("else")
                        .map(|s| self.sub(ptr, "else", s))
                        .transpose()?;
                    k.condition = Some((cond, then, otherwise));
                }
                "unevaluatedProperties" | "unevaluatedItems" if v != &Value::Bool(true) => {
                    self.notes.push(format!("{}: {key} is not checked", here()));
                }
                _ => {}
            }
        }
        Ok(k)
    }

    fn resolve(&mut self, ptr: &str, reference: &str) -> Result<usize, String> {
        let mut r = reference;
        if let Some(id) = &self.root_id
            && let Some(rest) = r.strip_prefix(id.as_str())
        {
            r = rest;
        }
        let target = match r.strip_prefix('#') {
            _ if r.is_empty() => String::new(),
            Some(fragment) => {
                let fragment = percent_decode(fragment);
                if fragment.is_empty() || fragment.starts_with('/') {
                    fragment
                } else {
                    self.anchors.get(&fragment).cloned().ok_or_else(|| {
                        format!(
                            "{}: $ref {reference:?} names an anchor that is not in this schema",
                            at(ptr)
                        )
                    })?
                }
            }
            None => {
                return Err(format!(
                    "{}: $ref {reference:?} points outside this schema, and mcpbox never fetches schemas",
                    at(ptr)
                ));
            }
        };
        let value = self.root.pointer(&target).ok_or_else(|| {
            format!(
                "{}: $ref {reference:?} points to nothing in this schema",
                at(ptr)
            )
        })?;
        self.compile_at(&target, value)
    }
}

/// The draft a `$schema` URI names, as 3, 4, 6, 7, 2019 or 2020.
fn declared_draft(uri: &str) -> Option<u32> {
    [
        ("draft-03", 3),
        ("draft-04", 4),
        ("draft-06", 6),
        ("draft-07", 7),
        ("2019-09", 2019),
        ("2020-12", 2020),
    ]
    .iter()
    .find(|(name, _)| uri.contains(name))
    .map(|&(_, draft)| draft)
}

/// The draft that made `key` a keyword, for the keywords newer than draft 4.
fn introduced_in(key: &str) -> Option<u32> {
    Some(match key {
        "const" | "contains" | "propertyNames" => 6,
        "if" => 7,
        "dependentRequired"
        | "dependentSchemas"
        | "minContains"
        | "maxContains"
        | "unevaluatedProperties"
        | "unevaluatedItems" => 2019,
        "prefixItems" => 2020,
        _ => return None,
    })
}

/// A schema location for messages: `#/properties/x`.
fn at(ptr: &str) -> String {
    format!("#{ptr}")
}

fn number(v: &Value, here: &dyn Fn() -> String) -> Result<f64, String> {
    v.as_f64()
        .ok_or_else(|| format!("{} must be a number", here()))
}

fn count(v: &Value, here: &dyn Fn() -> String) -> Result<u64, String> {
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| *f >= 0.0 && is_whole(*f))
                .map(|f| f as u64)
        })
        .ok_or_else(|| format!("{} must be a non-negative integer", here()))
}

fn string_lists(
    v: &Value,
    here: &dyn Fn() -> String,
) -> Result<Vec<(String, Vec<String>)>, String> {
    let Value::Object(map) = v else {
        return Err(format!("{} must be an object", here()));
    };
    map.iter()
        .map(|(name, list)| {
            let names = list
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|n| n.as_str().map(String::from))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| format!("{}: {name:?} must list property names", here()))?;
            Ok((name.clone(), names))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, instance: Value) -> Result<(), String> {
        let v = Validator::compile(&schema.to_string()).expect("compiles");
        v.validate(&instance).map_err(|e| describe(&e))
    }

    #[test]
    fn type_errors_name_the_field() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        assert_eq!(check(schema.clone(), json!({"text": "hi"})), Ok(()));
        assert_eq!(
            check(schema.clone(), json!({"text": 5})).unwrap_err(),
            "/text: want string, but got number"
        );
        assert_eq!(
            check(schema, json!({})).unwrap_err(),
            "/text: required property is missing"
        );
    }

    #[test]
    fn nested_paths_and_escaping() {
        let schema =
            json!({"properties": {"a/b": {"items": {"properties": {"n": {"type": "integer"}}}}}});
        assert_eq!(
            check(schema, json!({"a/b": [{"n": 1}, {"n": 1.5}]})).unwrap_err(),
            "/a~1b/1/n: want integer, but got number"
        );
        assert_eq!(check(json!({"type": "integer"}), json!(2.0)), Ok(()));
    }

    #[test]
    fn numbers_strings_arrays_objects() {
        let s = json!({"properties": {
            "n": {"minimum": 1, "exclusiveMaximum": 10, "multipleOf": 0.5},
            "s": {"minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"},
            "a": {"minItems": 1, "maxItems": 2, "uniqueItems": true},
            "e": {"enum": ["x", "y"]},
            "c": {"const": 3}
        }, "additionalProperties": false});
        assert_eq!(
            check(
                s.clone(),
                json!({"n": 9.5, "s": "ab", "a": [1], "e": "x", "c": 3.0})
            ),
            Ok(())
        );
        let cases = [
            (json!({"n": 0}), "/n: want >= 1, but got 0"),
            (json!({"n": 10}), "/n: want < 10, but got 10"),
            (json!({"n": 1.2}), "/n: want a multiple of 0.5, but got 1.2"),
            (
                json!({"s": "a"}),
                "/s: want at least 2 characters, but got 1",
            ),
            (
                json!({"s": "abcd"}),
                "/s: want at most 3 characters, but got 4",
            ),
            (
                json!({"s": "AB"}),
                "/s: \"AB\" does not match the pattern ^[a-z]+$",
            ),
            (json!({"a": []}), "/a: want at least 1 items, but got 0"),
            (
                json!({"a": [1, 1.0]}),
                "/a: want unique items, but items 0 and 1 are equal",
            ),
            (
                json!({"e": "z"}),
                "/e: want one of \"x\", \"y\", but got \"z\"",
            ),
            (json!({"c": 4}), "/c: want 3, but got 4"),
            (
                json!({"zz": 1}),
                "/zz: unexpected property; allowed: a, c, e, n, s",
            ),
        ];
        for (instance, want) in cases {
            assert_eq!(
                check(s.clone(), instance.clone()).unwrap_err(),
                want,
                "{instance}"
            );
        }
        assert_eq!(check(json!({"multipleOf": 0.1}), json!(0.3)), Ok(()));
    }

    #[test]
    fn multiple_of_absorbs_rounding_but_not_fractions() {
        assert_eq!(check(json!({"multipleOf": 0.1}), json!(0.3)), Ok(()));
        assert_eq!(check(json!({"multipleOf": 0.01}), json!(0.07)), Ok(()));
        // 10^300 is not a multiple of 3, but its nearest f64 divided by 3 is
        // whole, so a floating-point validator accepts it: so does the guest.
        assert_eq!(check(json!({"multipleOf": 3}), json!(1e300)), Ok(()));
        assert_eq!(check(json!({"multipleOf": 0.7}), json!(2.1)), Ok(()));
        assert_eq!(check(json!({"multipleOf": 1e-300}), json!(1e300)), Ok(()));
        assert!(check(json!({"multipleOf": 0.7}), json!(2.2)).is_err());
        assert!(check(json!({"multipleOf": 1e-3}), json!(1e-4)).is_err());
        assert_eq!(check(json!({"multipleOf": 0.5}), json!(0)), Ok(()));
        // Found by the differential test against boon: the former tolerance
        // (a quotient within 1e-9 of a whole number) took these for multiples.
        for x in [json!(1000000000.5), json!(1e-10), json!(4503599627370495.5)] {
            assert!(check(json!({"multipleOf": 1}), x.clone()).is_err(), "{x}");
        }
    }

    #[test]
    fn a_declared_draft_ignores_keywords_it_does_not_have() {
        // Found by the differential test against boon: `propertyNames` is not a
        // draft-4 keyword, nor `prefixItems` a draft-7 one; checking them would
        // reject arguments the server accepts.
        let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "propertyNames": {"maxLength": 0}});
        assert_eq!(check(draft4, json!({"a": 1})), Ok(()));
        let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": [{"type": "string"}], "if": {"type": "array"}, "then": {"minItems": 2}});
        assert!(
            check(draft7.clone(), json!([1]))
                .unwrap_err()
                .contains("at least 2")
        );
        let draft6 = json!({"$schema": "http://json-schema.org/draft-06/schema#", "if": {}, "then": false, "const": 1});
        assert!(check(draft6, json!(2)).unwrap_err().contains("want 1"));
        // Without `$schema`, every draft's keywords count.
        let unlabelled =
            json!({"propertyNames": {"maxLength": 0}, "prefixItems": [{"type": "string"}]});
        assert!(check(unlabelled.clone(), json!({"a": 1})).is_err());
        assert!(check(unlabelled, json!([1])).is_err());
    }

    #[test]
    fn whole_numbers_without_std() {
        assert!(is_whole(2.0) && is_whole(-3.0) && is_whole(1e300));
        assert!(!is_whole(2.5) && !is_whole(f64::NAN) && !is_whole(f64::INFINITY));
        assert_eq!(decimal(0.25), Some((25, -2)));
        assert_eq!(decimal(-1e300), Some((1, 300)));
        assert_eq!(decimal(123.0), Some((123, 0)));
        assert_eq!(decimal(0.0), Some((0, 0)));
    }

    #[test]
    fn draft4_exclusive_flags() {
        let s = json!({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5, "exclusiveMinimum": true});
        assert_eq!(check(s.clone(), json!(6)), Ok(()));
        assert!(check(s, json!(5)).unwrap_err().contains("want > 5"));
    }

    #[test]
    fn any_of_messages() {
        let s = json!({"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}});
        assert_eq!(check(s.clone(), json!({"v": 3})), Ok(()));
        assert_eq!(
            check(s, json!({"v": true})).unwrap_err(),
            "/v: want string or integer, but got boolean"
        );
        // Optional object: the object branch's error is the useful one.
        let s = json!({"properties": {"o": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["k"]}]}}});
        assert_eq!(
            check(s, json!({"o": {}})).unwrap_err(),
            "/o/k: required property is missing"
        );
        let s = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert!(
            check(s, json!(1))
                .unwrap_err()
                .contains("more than one oneOf")
        );
    }

    #[test]
    fn combinators_and_conditionals() {
        let s = json!({
            "allOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"required": ["c"]},
            "if": {"properties": {"a": {"const": 1}}},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]}
        });
        assert_eq!(check(s.clone(), json!({"a": 1, "b": 0, "x": 0})), Ok(()));
        assert_eq!(
            check(s.clone(), json!({"a": 2, "b": 0})).unwrap_err(),
            "/y: required property is missing"
        );
        assert!(
            check(s.clone(), json!({"a": 1, "b": 0, "x": 0, "c": 0}))
                .unwrap_err()
                .contains("`not`")
        );
        assert_eq!(
            check(s, json!({"a": 1})).unwrap_err(),
            "/b: required property is missing; /x: required property is missing"
        );
    }

    #[test]
    fn local_refs_and_recursion() {
        let s = json!({
            "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}, "v": {"type": "string"}}}},
            "$ref": "#/$defs/node"
        });
        assert_eq!(
            check(s.clone(), json!({"kids": [{"kids": [{"v": "x"}]}]})),
            Ok(())
        );
        assert_eq!(
            check(s, json!({"kids": [{"kids": [{"v": 1}]}]})).unwrap_err(),
            "/kids/0/kids/0/v: want string, but got number"
        );
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/s", "type": "number"}}
        });
        // Draft 7 ignores $ref's siblings.
        assert_eq!(check(draft7, json!({"a": "x"})), Ok(()));
        let anchored =
            json!({"$defs": {"x": {"$anchor": "pos", "minimum": 0}}, "items": {"$ref": "#pos"}});
        assert!(
            check(anchored, json!([1, -1]))
                .unwrap_err()
                .starts_with("/1: want >= 0")
        );
        let with_id = json!({"$id": "https://example.com/s.json", "$defs": {"i": {"type": "integer"}}, "$ref": "https://example.com/s.json#/$defs/i"});
        assert!(check(with_id, json!("no")).is_err());
    }

    #[test]
    fn a_self_cycle_stops_instead_of_overflowing() {
        let v = Validator::compile(r##"{"$ref": "#"}"##).unwrap();
        let errors = v.validate(&json!(1)).unwrap_err();
        assert!(errors[0].message.contains("nests too deeply"));
    }

    #[test]
    fn schemas_that_do_not_compile() {
        for (schema, want) in [
            (
                r#"{"$ref": "https://elsewhere.example/s.json"}"#,
                "never fetches",
            ),
            (r##"{"$ref": "#/$defs/missing"}"##, "points to nothing"),
            (r#"{"type": "strin"}"#, "unknown type"),
            (
                r#"{"properties": {"a": 5}}"#,
                "#/properties/a must be a schema",
            ),
            (r#"{"required": "a"}"#, "array of property names"),
            ("not json", "not valid JSON"),
        ] {
            let e = Validator::compile(schema).unwrap_err();
            assert!(e.contains(want), "{schema}: {e}");
        }
    }

    #[test]
    fn unsupported_parts_are_noted_not_fatal() {
        let v = Validator::compile(
            r#"{"properties": {"p": {"pattern": "(?<=a)b"}}, "unevaluatedProperties": false}"#,
        )
        .unwrap();
        assert_eq!(v.notes().len(), 2);
        assert_eq!(v.validate(&json!({"p": "b", "x": 1})), Ok(()));
    }

    #[test]
    fn boolean_schemas_and_arrays() {
        assert_eq!(check(json!(true), json!(1)), Ok(()));
        assert!(check(json!(false), json!(1)).is_err());
        let tuple = json!({"prefixItems": [{"type": "string"}], "items": false});
        assert_eq!(check(tuple.clone(), json!(["a"])), Ok(()));
        assert!(
            check(tuple, json!(["a", 1]))
                .unwrap_err()
                .starts_with("/1: no value is allowed")
        );
        let old_tuple =
            json!({"items": [{"type": "string"}], "additionalItems": {"type": "integer"}});
        assert_eq!(check(old_tuple.clone(), json!(["a", 1, 2])), Ok(()));
        assert!(check(old_tuple, json!(["a", "b"])).is_err());
        let contains = json!({"contains": {"type": "integer"}, "maxContains": 1});
        assert!(
            check(contains.clone(), json!(["a"]))
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(
            check(contains, json!([1, 2]))
                .unwrap_err()
                .contains("at most 1")
        );
    }

    #[test]
    fn object_extras() {
        let s = json!({
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"maxLength": 5},
            "dependentRequired": {"a": ["b"]},
            "minProperties": 1
        });
        assert_eq!(check(s.clone(), json!({"x-a": "s", "n": 1})), Ok(()));
        assert_eq!(
            check(s.clone(), json!({"x-a": 1})).unwrap_err(),
            "/x-a: want string, but got number"
        );
        assert_eq!(
            check(s.clone(), json!({"n": "s"})).unwrap_err(),
            "/n: want integer, but got string"
        );
        assert!(
            check(s.clone(), json!({"toolong": 1}))
                .unwrap_err()
                .contains("property name \"toolong\"")
        );
        assert!(
            check(s.clone(), json!({"a": 1}))
                .unwrap_err()
                .starts_with("/b: required property is missing")
        );
        assert!(
            check(s, json!({}))
                .unwrap_err()
                .contains("at least 1 properties")
        );
    }

    #[test]
    fn many_errors_are_summarised() {
        let s = json!({"required": ["a", "b", "c", "d", "e"]});
        assert_eq!(
            check(s, json!({})).unwrap_err(),
            "/a: required property is missing; /b: required property is missing; /c: required property is missing (and 2 more)"
        );
    }
}
