//! The validator (`mcpbox_guest::schema::Validator`) against `boon`.
//!
//! A generator of schemas from the keywords the guest evaluates (in the drafts a
//! server may declare, or none), of instances near their edges (bounds, lengths,
//! required names, branches of combinators, strings drawn from patterns, each with
//! a chance of being knocked off), and the comparison of the two validators. The
//! fuzz target `differential` (guest/fuzz/) includes this file.
//!
//! The rules the comparison enforces (docs/testing.md, "Documented differences"):
//! - a schema boon compiles, the guest compiles too, unless the guest says why
//!   (a `patternProperties` pattern it cannot match);
//! - on a schema both compile, both give the same verdict for every instance,
//!   except that the guest may accept where boon rejects when it has said, in its
//!   notes, that part of the schema is not checked;
//! - a schema the guest compiles and boon does not is one whose pattern boon's
//!   ECMA-262-to-`regex` translation cannot express.
//!
//! Patterns come from the part of ECMA-262 that boon's translation means the same
//! way, and strings avoid the characters where it does not (see
//! `patterns::Dialect::BOON`); `tests/differential/main.rs` pins those differences.

use super::patterns::{self, Dialect, PLAIN_ALPHABET, Re, chance};
use arbitrary::{Result, Unstructured};
use mcpbox_guest::schema::{Pattern, Validator};
use serde_json::{Map, Value, json};

/// The dialect a generated schema declares in `$schema`, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draft {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
    /// No `$schema`: boon assumes 2020-12.
    Unlabelled,
}

impl Draft {
    fn uri(self) -> Option<&'static str> {
        Some(match self {
            Draft::Draft4 => "http://json-schema.org/draft-04/schema#",
            Draft::Draft6 => "http://json-schema.org/draft-06/schema#",
            Draft::Draft7 => "http://json-schema.org/draft-07/schema#",
            Draft::Draft2019 => "https://json-schema.org/draft/2019-09/schema",
            Draft::Draft2020 => "https://json-schema.org/draft/2020-12/schema",
            Draft::Unlabelled => return None,
        })
    }

    /// The year-numbered order of drafts: 4, 6, 7, 2019, 2020.
    fn version(self) -> u32 {
        match self {
            Draft::Draft4 => 4,
            Draft::Draft6 => 6,
            Draft::Draft7 => 7,
            Draft::Draft2019 => 2019,
            Draft::Draft2020 | Draft::Unlabelled => 2020,
        }
    }
}

const NAMES: &[&str] = &["a", "b", "c", "x-a", "x-b", "€😀", "a/b", "~0", ""];

/// Values for `enum`, `const` and random instances.
fn value_pool() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(1.0),
        json!(-1),
        json!(2.5),
        json!(""),
        json!("a"),
        json!("b"),
        json!([]),
        json!([1]),
        json!([1.0, "a"]),
        json!({}),
        json!({"a": 1}),
        json!({"a": 1.0, "b": null}),
    ]
}

/// Generates one schema and the instances to check against it.
#[derive(Debug)]
pub struct Generator {
    draft: Draft,
    /// Whether keywords of other drafts may appear.
    foreign: bool,
    patterns: patterns::Generator,
    /// Every pattern in the schema, with its tree, to draw strings from.
    drawn: Vec<(String, Re)>,
    /// `$defs` (or `definitions`) names, and the key they live under.
    defs: Vec<String>,
    defs_key: &'static str,
    pool: Vec<Value>,
}

/// One generated case.
#[derive(Debug)]
pub struct Case {
    pub schema: Value,
    pub instances: Vec<Value>,
}

impl Generator {
    /// A generator for one case.
    pub fn new(u: &mut Unstructured) -> Result<Generator> {
        let draft = *u.choose(&[
            Draft::Unlabelled,
            Draft::Unlabelled,
            Draft::Unlabelled,
            Draft::Draft2020,
            Draft::Draft2019,
            Draft::Draft7,
            Draft::Draft7,
            Draft::Draft6,
            Draft::Draft4,
        ])?;
        Ok(Generator {
            draft,
            foreign: chance(u, 10)?,
            patterns: patterns::Generator::new(Dialect::BOON),
            drawn: Vec::new(),
            defs: Vec::new(),
            defs_key: if draft.version() >= 2019 && !chance(u, 20)? {
                "$defs"
            } else {
                "definitions"
            },
            pool: value_pool(),
        })
    }

    /// A schema and instances near its edges.
    pub fn case(&mut self, u: &mut Unstructured) -> Result<Case> {
        let mut defs = Map::new();
        let n = u.int_in_range(0..=2)?;
        self.defs = (0..n).map(|i| format!("d{i}")).collect();
        for i in 0..n {
            // A definition refers only to later ones, so that no `$ref` cycle
            // avoids descending into the instance.
            let later = self.defs.split_off(i + 1);
            let saved = std::mem::take(&mut self.defs);
            self.defs = later.clone();
            let body = self.schema(u, 2)?;
            self.defs = saved;
            self.defs.extend(later);
            defs.insert(format!("d{i}"), body);
        }
        let root = self.schema(u, 3)?;
        let mut root = match root {
            Value::Object(m) => m,
            b => {
                let mut m = Map::new();
                if b == Value::Bool(false) {
                    m.insert("not".into(), json!({}));
                }
                m
            }
        };
        if !defs.is_empty() {
            root.insert(self.defs_key.into(), Value::Object(defs));
        }
        if let Some(uri) = self.draft.uri() {
            root.insert("$schema".into(), json!(uri));
        }
        let schema = Value::Object(root);
        let mut instances = Vec::new();
        for _ in 0..u.int_in_range(1..=6)? {
            instances.push(self.instance(u, &schema, &schema, 4)?);
        }
        Ok(Case { schema, instances })
    }

    fn has(&self, since: u32) -> bool {
        self.foreign || self.draft.version() >= since
    }

    fn schema(&mut self, u: &mut Unstructured, depth: u32) -> Result<Value> {
        if chance(u, 8)? {
            let verdict = u.int_in_range(0..=4)? > 0;
            // Draft 4 has no boolean schemas.
            return Ok(match (self.draft, verdict) {
                (Draft::Draft4, true) => json!({}),
                (Draft::Draft4, false) => json!({"not": {}}),
                (_, b) => json!(b),
            });
        }
        let mut m = Map::new();
        if !self.defs.is_empty() && chance(u, 15)? {
            let name = u.choose(&self.defs)?.clone();
            m.insert("$ref".into(), json!(format!("#/{}/{name}", self.defs_key)));
            if !chance(u, 30)? {
                return Ok(Value::Object(m));
            }
        }
        let kind = u.int_in_range(0..=6)?;
        if kind != 5 && chance(u, 75)? {
            let types = [
                "string", "number", "integer", "array", "object", "boolean", "null",
            ];
            let main = match kind {
                0 => "string",
                1 => "number",
                2 => "integer",
                3 => "array",
                4 => "object",
                _ => *u.choose(&types)?,
            };
            if chance(u, 20)? {
                let other = *u.choose(&types)?;
                if other != main {
                    m.insert("type".into(), json!([main, other]));
                } else {
                    m.insert("type".into(), json!(main));
                }
            } else {
                m.insert("type".into(), json!(main));
            }
        }
        match kind {
            0 => self.string_keywords(u, &mut m)?,
            1 | 2 => self.number_keywords(u, &mut m, kind == 2)?,
            3 => self.array_keywords(u, &mut m, depth)?,
            4 => self.object_keywords(u, &mut m, depth)?,
            5 => self.combinators(u, &mut m, depth)?,
            _ => {
                // Keywords of every type at once: each applies to its own type.
                self.string_keywords(u, &mut m)?;
                self.number_keywords(u, &mut m, false)?;
                if depth > 0 {
                    self.array_keywords(u, &mut m, depth)?;
                    self.object_keywords(u, &mut m, depth)?;
                }
            }
        }
        if chance(u, 10)? {
            self.values(u, &mut m)?;
        }
        if kind != 5 && depth > 0 && chance(u, 10)? {
            self.combinators(u, &mut m, depth)?;
        }
        Ok(Value::Object(m))
    }

    fn values(&mut self, u: &mut Unstructured, m: &mut Map<String, Value>) -> Result<()> {
        if chance(u, 50)? || !self.has(6) {
            let mut values = Vec::new();
            for _ in 0..u.int_in_range(1..=4)? {
                let v = u.choose(&self.pool)?.clone();
                // Older metaschemas want unique values (1 and 1.0 are equal).
                if !values
                    .iter()
                    .any(|w: &Value| w == &v || w.as_f64().is_some() && w.as_f64() == v.as_f64())
                {
                    values.push(v);
                }
            }
            m.insert("enum".into(), Value::Array(values));
        } else {
            m.insert("const".into(), u.choose(&self.pool)?.clone());
        }
        Ok(())
    }

    fn string_keywords(&mut self, u: &mut Unstructured, m: &mut Map<String, Value>) -> Result<()> {
        if chance(u, 40)? {
            m.insert("minLength".into(), json!(u.int_in_range(0..=3)?));
        }
        if chance(u, 40)? {
            m.insert("maxLength".into(), json!(u.int_in_range(0..=4)?));
        }
        if chance(u, 40)? {
            let re = self.patterns.pattern(u, 1)?;
            let source = re.render();
            m.insert("pattern".into(), json!(source));
            self.drawn.push((source, re));
        }
        if chance(u, 15)? {
            self.values(u, m)?;
        }
        Ok(())
    }

    fn number_keywords(
        &mut self,
        u: &mut Unstructured,
        m: &mut Map<String, Value>,
        integer: bool,
    ) -> Result<()> {
        let bound = |u: &mut Unstructured| -> Result<Value> {
            Ok(u.choose(&[
                json!(-1),
                json!(0),
                json!(1),
                json!(2),
                json!(2.5),
                json!(10),
            ])?
            .clone())
        };
        if self.draft == Draft::Draft4 {
            // Draft 4: exclusiveMinimum/Maximum are flags on minimum/maximum.
            for (bound_key, flag) in [
                ("minimum", "exclusiveMinimum"),
                ("maximum", "exclusiveMaximum"),
            ] {
                if chance(u, 40)? {
                    m.insert(bound_key.into(), bound(u)?);
                    if chance(u, 40)? {
                        m.insert(flag.into(), json!(u.arbitrary::<bool>()?));
                    }
                }
            }
        } else {
            for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                if chance(u, 25)? {
                    m.insert(key.into(), bound(u)?);
                }
            }
        }
        if chance(u, 30)? {
            // Dyadic fractions and whole numbers: exact in binary floating point
            // (decimal fractions are a documented difference).
            let step = if integer {
                u.choose(&[json!(1), json!(2), json!(3)])?.clone()
            } else {
                u.choose(&[
                    json!(1),
                    json!(2),
                    json!(3),
                    json!(0.5),
                    json!(0.25),
                    json!(1.5),
                ])?
                .clone()
            };
            m.insert("multipleOf".into(), step);
        }
        Ok(())
    }

    fn array_keywords(
        &mut self,
        u: &mut Unstructured,
        m: &mut Map<String, Value>,
        depth: u32,
    ) -> Result<()> {
        let d = depth.saturating_sub(1);
        match u.int_in_range(0..=3)? {
            0 if depth > 0 => {
                m.insert("items".into(), self.schema(u, d)?);
            }
            1 if depth > 0 => {
                let tuple = self.schemas(u, d, 1, 3)?;
                if self.draft.version() >= 2020 && !(self.foreign && chance(u, 50)?) {
                    m.insert("prefixItems".into(), tuple);
                    if chance(u, 50)? {
                        m.insert("items".into(), self.schema(u, d)?);
                    }
                } else if self.draft != Draft::Unlabelled || self.foreign {
                    m.insert("items".into(), tuple);
                    if chance(u, 50)? {
                        m.insert("additionalItems".into(), self.schema(u, d)?);
                    }
                }
            }
            _ => {}
        }
        if chance(u, 30)? {
            m.insert("minItems".into(), json!(u.int_in_range(0..=2)?));
        }
        if chance(u, 30)? {
            m.insert("maxItems".into(), json!(u.int_in_range(0..=3)?));
        }
        if chance(u, 25)? {
            m.insert("uniqueItems".into(), json!(u.arbitrary::<bool>()?));
        }
        if depth > 0 && self.has(6) && chance(u, 20)? {
            m.insert("contains".into(), self.schema(u, d)?);
            if self.has(2019) && chance(u, 40)? {
                m.insert("minContains".into(), json!(u.int_in_range(0..=2)?));
            }
            if self.has(2019) && chance(u, 40)? {
                m.insert("maxContains".into(), json!(u.int_in_range(0..=2)?));
            }
        }
        Ok(())
    }

    fn object_keywords(
        &mut self,
        u: &mut Unstructured,
        m: &mut Map<String, Value>,
        depth: u32,
    ) -> Result<()> {
        let d = depth.saturating_sub(1);
        let mut props = Map::new();
        if depth > 0 {
            for _ in 0..u.int_in_range(0..=3)? {
                let name = *u.choose(NAMES)?;
                let s = if chance(u, 5)? {
                    json!({"$ref": "#"})
                } else {
                    self.schema(u, d)?
                };
                props.insert(name.into(), s);
            }
        }
        let known: Vec<String> = props.keys().cloned().collect();
        if !props.is_empty() {
            m.insert("properties".into(), Value::Object(props));
        }
        if chance(u, 50)? {
            let mut required: Vec<&str> = Vec::new();
            for _ in 0..u.int_in_range(if self.draft == Draft::Draft4 { 1 } else { 0 }..=2)? {
                let name = if !known.is_empty() && chance(u, 80)? {
                    u.choose(&known)?.as_str()
                } else {
                    *u.choose(NAMES)?
                };
                if !required.contains(&name) {
                    required.push(name);
                }
            }
            m.insert("required".into(), json!(required));
        }
        if depth > 0 && chance(u, 15)? {
            let mut pp = Map::new();
            let re = self.patterns.pattern(u, 0)?;
            pp.insert(re.render(), self.schema(u, d)?);
            m.insert("patternProperties".into(), Value::Object(pp));
        }
        if chance(u, 30)? {
            let extra = if depth > 0 && chance(u, 40)? {
                self.schema(u, d)?
            } else {
                json!(false)
            };
            m.insert("additionalProperties".into(), extra);
        }
        if chance(u, 15)? {
            m.insert("minProperties".into(), json!(u.int_in_range(0..=2)?));
        }
        if chance(u, 15)? {
            m.insert("maxProperties".into(), json!(u.int_in_range(0..=3)?));
        }
        if depth > 0 && self.has(6) && chance(u, 10)? {
            m.insert("propertyNames".into(), self.schema(u, d)?);
        }
        if chance(u, 15)? {
            let name = *u.choose(NAMES)?;
            let other = *u.choose(NAMES)?;
            match u.int_in_range(0..=2)? {
                0 if self.has(2019) => {
                    m.insert("dependentRequired".into(), json!({name: [other]}));
                }
                1 if depth > 0 && self.has(2019) => {
                    m.insert("dependentSchemas".into(), json!({name: self.schema(u, d)?}));
                }
                _ => {
                    let dep = if depth > 0 && chance(u, 50)? {
                        self.schema(u, d)?
                    } else {
                        json!([other])
                    };
                    m.insert("dependencies".into(), json!({name: dep}));
                }
            }
        }
        Ok(())
    }

    fn combinators(
        &mut self,
        u: &mut Unstructured,
        m: &mut Map<String, Value>,
        depth: u32,
    ) -> Result<()> {
        if depth == 0 {
            return Ok(());
        }
        let d = depth - 1;
        match u.int_in_range(0..=4)? {
            0 => {
                m.insert("allOf".into(), self.schemas(u, d, 1, 3)?);
            }
            1 => {
                m.insert("anyOf".into(), self.schemas(u, d, 1, 3)?);
            }
            2 => {
                m.insert("oneOf".into(), self.schemas(u, d, 1, 3)?);
            }
            3 => {
                m.insert("not".into(), self.schema(u, d)?);
            }
            _ if self.has(7) => {
                m.insert("if".into(), self.schema(u, d)?);
                if chance(u, 70)? {
                    m.insert("then".into(), self.schema(u, d)?);
                }
                if chance(u, 70)? {
                    m.insert("else".into(), self.schema(u, d)?);
                }
            }
            _ => {
                m.insert("anyOf".into(), self.schemas(u, d, 1, 2)?);
            }
        }
        Ok(())
    }

    fn schemas(&mut self, u: &mut Unstructured, depth: u32, min: u32, max: u32) -> Result<Value> {
        let mut list = Vec::new();
        for _ in 0..u.int_in_range(min..=max)? {
            list.push(self.schema(u, depth)?);
        }
        Ok(Value::Array(list))
    }

    /// A value the schema probably accepts, or one just beside it.
    pub fn instance(
        &self,
        u: &mut Unstructured,
        schema: &Value,
        root: &Value,
        depth: u32,
    ) -> Result<Value> {
        if depth == 0 || chance(u, 8)? {
            return self.random(u, 2);
        }
        let Value::Object(m) = schema else {
            return self.random(u, 2);
        };
        if let Some(Value::String(r)) = m.get("$ref")
            && chance(u, 70)?
            && let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p))
        {
            return self.instance(u, target, root, depth - 1);
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = m.get(key)
                && !branches.is_empty()
                && chance(u, 60)?
            {
                let branch = u.choose(branches)?;
                return self.instance(u, branch, root, depth - 1);
            }
        }
        if m.contains_key("if") && chance(u, 50)? {
            let branch = if u.arbitrary()? { "then" } else { "else" };
            if let Some(b) = m.get(branch) {
                return self.instance(u, b, root, depth - 1);
            }
        }
        for key in ["enum", "const"] {
            if let Some(v) = m.get(key)
                && chance(u, 40)?
            {
                return Ok(match v {
                    Value::Array(values) if key == "enum" && !values.is_empty() => {
                        u.choose(values)?.clone()
                    }
                    other => other.clone(),
                });
            }
        }
        let ty = match m.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) if !ts.is_empty() => {
                u.choose(ts)?.as_str().unwrap_or("null").to_string()
            }
            _ => {
                let hinted: Vec<&str> = [
                    ("minLength", "string"),
                    ("maxLength", "string"),
                    ("pattern", "string"),
                    ("minimum", "number"),
                    ("maximum", "number"),
                    ("multipleOf", "number"),
                    ("items", "array"),
                    ("prefixItems", "array"),
                    ("minItems", "array"),
                    ("contains", "array"),
                    ("properties", "object"),
                    ("required", "object"),
                    ("additionalProperties", "object"),
                ]
                .iter()
                .filter(|(k, _)| m.contains_key(*k))
                .map(|(_, t)| *t)
                .collect();
                if hinted.is_empty() {
                    return self.random(u, 2);
                }
                u.choose(&hinted)?.to_string()
            }
        };
        Ok(match ty.as_str() {
            "string" => json!(self.string(u, m)?),
            "number" | "integer" => self.number(u, m, ty == "integer")?,
            "array" => self.array(u, m, root, depth)?,
            "object" => self.object(u, m, root, depth)?,
            "boolean" => json!(u.arbitrary::<bool>()?),
            _ => json!(null),
        })
    }

    fn string(&self, u: &mut Unstructured, m: &Map<String, Value>) -> Result<String> {
        if let Some(Value::String(p)) = m.get("pattern")
            && chance(u, 70)?
            && let Some((_, re)) = self.drawn.iter().find(|(s, _)| s == p)
        {
            let subjects = patterns::subjects(u, re, PLAIN_ALPHABET)?;
            return Ok(u.choose(&subjects[..3])?.clone());
        }
        let bound = |key: &str| m.get(key).and_then(Value::as_u64);
        let mut lengths = vec![0, 1, 2, 3];
        for b in [bound("minLength"), bound("maxLength")]
            .into_iter()
            .flatten()
        {
            lengths.extend([b.saturating_sub(1), b, b + 1]);
        }
        let len = *u.choose(&lengths)?;
        let mut s = String::new();
        for _ in 0..len {
            s.push(*u.choose(PLAIN_ALPHABET)?);
        }
        Ok(s)
    }

    fn number(&self, u: &mut Unstructured, m: &Map<String, Value>, integer: bool) -> Result<Value> {
        let mut candidates = vec![0.0, 1.0, -1.0, 0.5, 7.0];
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if let Some(b) = m.get(key).and_then(Value::as_f64) {
                candidates.extend([b, b - 1.0, b + 1.0, b - 0.5, b + 0.5]);
            }
        }
        if let Some(step) = m.get("multipleOf").and_then(Value::as_f64) {
            candidates.extend([-2.0, 1.0, 3.0, 4.0].map(|k| k * step));
            candidates.push(step * 1.5);
        }
        let x = *u.choose(&candidates)?;
        let whole = x == (x as i64) as f64;
        Ok(if whole && (integer || chance(u, 70)?) {
            if chance(u, 15)? {
                json!(x)
            } else {
                json!(x as i64)
            }
        } else {
            json!(x)
        })
    }

    fn array(
        &self,
        u: &mut Unstructured,
        m: &Map<String, Value>,
        root: &Value,
        depth: u32,
    ) -> Result<Value> {
        let bound = |key: &str| m.get(key).and_then(Value::as_u64);
        let mut lengths = vec![0, 1, 2];
        for b in [bound("minItems"), bound("maxItems"), bound("minContains")]
            .into_iter()
            .flatten()
        {
            lengths.extend([b.saturating_sub(1), b, b + 1]);
        }
        let tuple = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(t)), _) | (None, Some(Value::Array(t))) => t.clone(),
            _ => Vec::new(),
        };
        let rest = match (m.get("prefixItems"), m.get("items")) {
            (Some(_), Some(s)) => Some(s),
            (None, Some(Value::Array(_))) => m.get("additionalItems"),
            (None, Some(s)) => Some(s),
            _ => None,
        };
        let len = *u.choose(&lengths)? as usize;
        let mut items = Vec::new();
        for i in 0..len.min(5) {
            let s = if let Some(c) = m.get("contains").filter(|_| chance(u, 40).unwrap_or(false)) {
                Some(c)
            } else {
                tuple.get(i).or(rest)
            };
            items.push(match s {
                Some(s) => self.instance(u, s, root, depth - 1)?,
                None => self.random(u, 1)?,
            });
        }
        if !items.is_empty() && chance(u, 20)? {
            items.push(items[0].clone());
        }
        Ok(Value::Array(items))
    }

    fn object(
        &self,
        u: &mut Unstructured,
        m: &Map<String, Value>,
        root: &Value,
        depth: u32,
    ) -> Result<Value> {
        let mut out = Map::new();
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(props)) = m.get("properties") {
            for (name, s) in props {
                let want = if required.contains(&name.as_str()) {
                    90
                } else {
                    50
                };
                if chance(u, want)? {
                    out.insert(name.clone(), self.instance(u, s, root, depth - 1)?);
                }
            }
        }
        for name in &required {
            if !out.contains_key(*name) && chance(u, 80)? {
                out.insert(name.to_string(), self.random(u, 1)?);
            }
        }
        if let Some(Value::Object(pp)) = m.get("patternProperties")
            && let Some((p, s)) = pp.iter().next()
            && chance(u, 50)?
        {
            let name = self
                .drawn
                .iter()
                .find(|(src, _)| src == p)
                .map(|(_, re)| patterns::subjects(u, re, PLAIN_ALPHABET))
                .transpose()?
                .map(|mut v| v.swap_remove(0))
                .unwrap_or_default();
            out.insert(name, self.instance(u, s, root, depth - 1)?);
        }
        for _ in 0..u.int_in_range(0..=1)? {
            let name = *u.choose(NAMES)?;
            let extra = match m.get("additionalProperties") {
                Some(s) if chance(u, 60)? => self.instance(u, s, root, depth - 1)?,
                _ => self.random(u, 1)?,
            };
            out.insert(name.into(), extra);
        }
        Ok(Value::Object(out))
    }

    fn random(&self, u: &mut Unstructured, depth: u32) -> Result<Value> {
        Ok(match u.int_in_range(0..=9)? {
            0 if depth > 0 => {
                let mut items = Vec::new();
                for _ in 0..u.int_in_range(0..=2)? {
                    items.push(self.random(u, depth - 1)?);
                }
                Value::Array(items)
            }
            1 if depth > 0 => {
                let mut map = Map::new();
                for _ in 0..u.int_in_range(0..=2)? {
                    map.insert((*u.choose(NAMES)?).into(), self.random(u, depth - 1)?);
                }
                Value::Object(map)
            }
            2 => json!(*u.choose(&[
                1e300,
                -0.0,
                0.25,
                1e-7,
                1e-10,
                123456789.5,
                1000000000.5,
                4503599627370495.5
            ])?),
            3 => {
                let mut s = String::new();
                for _ in 0..u.int_in_range(0..=4)? {
                    s.push(*u.choose(PLAIN_ALPHABET)?);
                }
                json!(s)
            }
            _ => u.choose(&self.pool)?.clone(),
        })
    }
}

/// What the comparisons saw, to show that they compared something.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Schemas generated.
    pub schemas: u64,
    /// Instances both validators judged, and how many of them were valid.
    pub judged: u64,
    pub valid: u64,
    /// Instances the guest accepted and boon rejected after the guest noted that
    /// part of the schema is not checked.
    pub noted: u64,
    /// Schemas boon refused for a pattern its translation cannot express.
    pub boon_refused: u64,
    /// Schemas the guest refused and said why.
    pub guest_refused: u64,
    /// Schemas both refused.
    pub both_refused: u64,
    /// Unlabelled schemas with tuple `items`, compared with boon as 2019-09.
    pub tuple_items: u64,
    /// Instances the guest accepted and boon rejected after the guest's pattern
    /// matcher gave up on one of their strings (its step budget), so that the
    /// pattern counted as matched, as docs/testing.md documents.
    pub gave_up: u64,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} schemas ({} unlabelled with tuple items, {} refused by boon for a pattern, {} by the guest, {} by both); {} instances judged by both ({} valid), {} accepted by the guest under a note, {} after its matcher gave up",
            self.schemas,
            self.tuple_items,
            self.boon_refused,
            self.guest_refused,
            self.both_refused,
            self.judged,
            self.valid,
            self.noted,
            self.gave_up
        )
    }
}

/// Whether the guest's pattern matcher gives up (its step budget) on some pattern
/// of `schema` (`pattern`, or a `patternProperties` key) and some string of
/// `instance` (a string or a property name): the pattern then counts as matched.
fn matcher_gives_up(schema: &Value, instance: &Value) -> bool {
    fn patterns(schema: &Value, out: &mut Vec<String>) {
        match schema {
            Value::Object(m) => {
                for (key, value) in m {
                    match (key.as_str(), value) {
                        ("pattern", Value::String(p)) => out.push(p.clone()),
                        ("patternProperties", Value::Object(by)) => {
                            out.extend(by.keys().cloned());
                        }
                        _ => {}
                    }
                    patterns(value, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| patterns(v, out)),
            _ => {}
        }
    }
    fn strings(instance: &Value, out: &mut Vec<String>) {
        match instance {
            Value::String(s) => out.push(s.clone()),
            Value::Object(m) => {
                for (key, value) in m {
                    out.push(key.clone());
                    strings(value, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let (mut sources, mut texts) = (Vec::new(), Vec::new());
    patterns(schema, &mut sources);
    strings(instance, &mut texts);
    sources
        .iter()
        .filter_map(|source| Pattern::new(source).ok())
        .any(|pattern| texts.iter().any(|text| pattern.is_match(text).is_none()))
}

/// Compiles `schema` with boon (draft 2020-12 unless it says otherwise).
pub fn boon(schema: &Value) -> std::result::Result<(boon::Schemas, boon::SchemaIndex), String> {
    boon_as(schema, boon::Draft::V2020_12)
}

/// Compiles `schema` with boon, as `draft` unless it says otherwise.
pub fn boon_as(
    schema: &Value,
    draft: boon::Draft,
) -> std::result::Result<(boon::Schemas, boon::SchemaIndex), String> {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(draft);
    let url = "urn:mcpbox:differential";
    compiler
        .add_resource(url, schema.clone())
        .map_err(|e| format!("{e:#}"))?;
    let index = compiler
        .compile(url, &mut schemas)
        .map_err(|e| format!("{e:#}"))?;
    Ok((schemas, index))
}

/// `schema` with every `$ref`'s siblings removed (but for the root's
/// `$schema` and definitions, which are not keywords of the `$ref` object).
pub fn without_ref_siblings(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !m.contains_key("$ref")
                        || matches!(k.as_str(), "$ref" | "$schema" | "definitions" | "$defs")
                })
                .map(|(k, v)| {
                    // `enum` and `const` hold data, not schemas.
                    let v = if matches!(k.as_str(), "enum" | "const") {
                        v.clone()
                    } else {
                        without_ref_siblings(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_ref_siblings).collect()),
        other => other.clone(),
    }
}

/// JSON text with every non-ASCII character escaped, so that messages show
/// invisible and look-alike characters (U+00A0, U+FEFF) for what they are.
pub fn ascii(v: &Value) -> String {
    let mut out = String::new();
    for c in v.to_string().chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Whether an `items` keyword anywhere in `schema` holds an array.
fn has_tuple_items(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| (k == "items" && v.is_array()) || has_tuple_items(v)),
        Value::Array(items) => items.iter().any(has_tuple_items),
        _ => false,
    }
}

/// Whether `keyword` appears anywhere in `schema`.
fn has_keyword(schema: &Value, keyword: &str) -> bool {
    match schema {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k == keyword || has_keyword(v, keyword)),
        Value::Array(items) => items.iter().any(|v| has_keyword(v, keyword)),
        _ => false,
    }
}

/// Compares the guest's validator with boon on `schema` and `instances`.
pub fn compare(
    schema: &Value,
    instances: &[Value],
    tally: &mut Tally,
) -> std::result::Result<(), String> {
    tally.schemas += 1;
    let guest = Validator::compile(&schema.to_string());
    let declared = schema.get("$schema").and_then(Value::as_str);
    // Up to draft 7, `$ref` replaces its siblings; boon still applies those that
    // drafts 6 and 7 added (`const`, `contains`, `propertyNames`, `if`). Give
    // boon the schema with the siblings gone, as the drafts read it.
    let for_boon = match declared {
        Some(d)
            if ["draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|v| d.contains(v)) =>
        {
            without_ref_siblings(schema)
        }
        _ => schema.clone(),
    };
    let schema = &for_boon;
    let mut boon = boon(schema);
    // The guest reads the tuple form of `items` (drafts up to 2019-09) in any
    // draft; 2020-12 (boon's default) forbids it: compare with boon reading
    // 2019-09, unless the schema also uses 2020-12's `prefixItems`.
    if boon.is_err() && declared.is_none_or(|d| d.contains("2020-12")) && has_tuple_items(schema) {
        tally.tuple_items += 1;
        if has_keyword(schema, "prefixItems") {
            return Ok(());
        }
        let mut as_2019 = schema.clone();
        if let Some(m) = as_2019.as_object_mut() {
            m.remove("$schema");
        }
        boon = boon_as(&as_2019, boon::Draft::V2019_09);
    }
    let (guest, (schemas, index)) = match (guest, boon) {
        (Ok(g), Ok(b)) => (g, b),
        (Err(_), Err(_)) => {
            tally.both_refused += 1;
            return Ok(());
        }
        (Err(why), Ok(_)) if why.contains("is not supported") => {
            tally.guest_refused += 1;
            return Ok(());
        }
        (Err(why), Ok(_)) => {
            return Err(format!(
                "the guest refuses {schema}, which boon compiles: {why}"
            ));
        }
        (Ok(_), Err(why)) if why.contains("regex") => {
            tally.boon_refused += 1;
            return Ok(());
        }
        (Ok(_), Err(why)) => {
            return Err(format!(
                "the guest compiles {schema}, which boon refuses: {why}"
            ));
        }
    };
    for instance in instances {
        let ours = guest.validate(instance);
        let theirs = schemas.validate(instance, index);
        match (&ours, &theirs) {
            (Ok(()), Ok(())) => tally.valid += 1,
            (Err(_), Err(_)) => {}
            (Ok(()), Err(_)) if !guest.notes().is_empty() => {
                tally.noted += 1;
                continue;
            }
            (Ok(()), Err(_)) if matcher_gives_up(schema, instance) => {
                tally.gave_up += 1;
                continue;
            }
            (Ok(()), Err(e)) => {
                return Err(format!(
                    "{} on {}: the guest says valid, boon says invalid: {e}",
                    ascii(schema),
                    ascii(instance)
                ));
            }
            (Err(e), Ok(())) => {
                return Err(format!(
                    "{} on {}: the guest says invalid ({}), boon says valid",
                    ascii(schema),
                    ascii(instance),
                    mcpbox_guest::schema::describe(e)
                ));
            }
        }
        tally.judged += 1;
    }
    Ok(())
}

/// One generated case: a schema and its instances, compared.
pub fn case(u: &mut Unstructured, tally: &mut Tally) -> Result<std::result::Result<(), String>> {
    let case = Generator::new(u)?.case(u)?;
    Ok(compare(&case.schema, &case.instances, tally))
}
