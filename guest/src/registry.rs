//! The tool table: every connected server's tools under one flat namespace.
//!
//! The table is rebuilt from scratch whenever any server's list changes: servers in
//! configuration order, each server's tools in the order it listed them. That makes
//! the outcome a pure function of the lists, so collisions always resolve the same
//! way: the earlier tool keeps the name, the later one is skipped, and both are
//! named in a warning.
//!
//! A rebuild copies no tool: the table holds the servers' own [`Tool`]s (shared
//! through `Rc`), whose schemas are the exact text the server sent. A tool's input
//! schema is compiled into a [`Validator`] the first time it is called, not when it
//! is listed: a platform that lists thousands of tools calls a few of them, and the
//! compiled forms of the rest would cost time at every listing and memory for good.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;
use core::cell::OnceCell;

use serde_json::Value;

use crate::config::kind_of;
use crate::naming;
use crate::schema::{self, Validator};

/// A tool as its server described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef {
    /// The tool's own name on its server.
    pub name: String,
    /// A human-readable title, if given.
    pub title: Option<String>,
    /// The description, if given.
    pub description: Option<String>,
    /// `inputSchema`, exact JSON text.
    pub input_schema: String,
    /// `outputSchema`, exact JSON text.
    pub output_schema: Option<String>,
    /// `annotations`, exact JSON text.
    pub annotations: Option<String>,
    /// Parameters mirrored into HTTP headers, as (property, `x-mcp-header` name),
    /// from the input schema's valid `x-mcp-header` annotations (SEP-2243).
    pub param_headers: Vec<(String, String)>,
}

/// One tool in the registry, as the `registry` interface reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// `mcp__{server}__{tool}`, sanitised, at most 64 characters.
    pub name: String,
    /// The configured server name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// A human-readable title, if given.
    pub title: Option<String>,
    /// The description, if given.
    pub description: Option<String>,
    /// `inputSchema`, exact JSON text.
    pub input_schema: String,
    /// `outputSchema`, exact JSON text.
    pub output_schema: Option<String>,
    /// `annotations`, exact JSON text.
    pub annotations: Option<String>,
}

/// A listed tool with its registry name and, once called, its compiled input schema.
#[derive(Debug)]
pub struct Tool {
    /// The server's description.
    pub def: ToolDef,
    /// The registry name.
    pub name: String,
    /// Compiled on first use; `None` inside when the schema cannot be compiled
    /// (calls then go unchecked).
    validator: OnceCell<Option<Validator>>,
}

impl Tool {
    /// Names a freshly listed tool of a server whose registry segment is `segment`.
    pub fn new(segment: &str, def: ToolDef) -> Tool {
        Tool {
            name: naming::tool_name(segment, &def.name),
            def,
            validator: OnceCell::new(),
        }
    }

    /// The compiled input schema, compiled now if this is the first use. The
    /// first use also returns a warning when the schema is not (fully) checked,
    /// for `server`'s user; later uses return none, so it is said once.
    pub fn validator(&self, server: &str) -> (Option<&Validator>, Option<String>) {
        let mut warning = None;
        let validator = self.validator.get_or_init(|| {
            match Validator::compile(&self.def.input_schema) {
                Ok(v) => {
                    if !v.notes().is_empty() {
                        warning = Some(format!(
                            "{} (server `{server}`): parts of its input schema are not checked before calls: {}",
                            self.name,
                            v.notes().join("; ")
                        ));
                    }
                    Some(v)
                }
                Err(e) => {
                    warning = Some(format!(
                        "{} (server `{server}`): its input schema cannot be compiled ({e}); arguments are passed to the server unchecked",
                        self.name
                    ));
                    None
                }
            }
        });
        (validator.as_ref(), warning)
    }

    /// Checks call arguments against the input schema (see [`check_arguments`]).
    /// The second value is the first-use warning of [`Tool::validator`].
    pub fn check_arguments(
        &self,
        server: &str,
        arguments: &str,
    ) -> (Result<String, String>, Option<String>) {
        let (validator, warning) = self.validator(server);
        (check_arguments(&self.name, validator, arguments), warning)
    }

    /// The registry's view of this tool, copied.
    pub fn info(&self, server: &str) -> ToolInfo {
        ToolInfo {
            name: self.name.clone(),
            server: server.to_string(),
            tool: self.def.name.clone(),
            title: self.def.title.clone(),
            description: self.def.description.clone(),
            input_schema: self.def.input_schema.clone(),
            output_schema: self.def.output_schema.clone(),
            annotations: self.def.annotations.clone(),
        }
    }
}

/// Names a server's freshly listed tools.
pub fn prepare(segment: &str, defs: Vec<ToolDef>) -> Vec<Rc<Tool>> {
    defs.into_iter()
        .map(|def| Rc::new(Tool::new(segment, def)))
        .collect()
}

/// One server's contribution to a rebuild.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The configured server name.
    pub server: &'a str,
    /// Its current tools.
    pub tools: &'a [Rc<Tool>],
}

/// A tool in the table.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The configured name of the tool's server.
    pub server: Rc<str>,
    /// The tool, shared with its server's list.
    pub tool: Rc<Tool>,
}

/// The tool table.
#[derive(Debug, Default)]
pub struct Registry {
    /// Ordered by registry name, one entry per name: looked up by binary search,
    /// and read in pages by position.
    by_name: Vec<Entry>,
    /// Tools in the table per server, counted at rebuild: statuses ask often.
    counts: BTreeMap<Rc<str>, u32>,
    /// Collisions already warned about, as (name, skipped server, skipped tool), so a
    /// rebuild does not repeat a warning for a collision that persists.
    reported: BTreeSet<(String, String, String)>,
    /// Counts rebuilds, so a reader that derived something from the table (the
    /// gateway's exposed names) knows when to derive it again.
    generation: u64,
}

impl Registry {
    /// An empty table.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Rebuilds the table from every connected server's tools, in configuration
    /// order. Returns warnings for collisions not reported before.
    pub fn rebuild(&mut self, sources: &[Source<'_>]) -> Vec<String> {
        let mut all: Vec<Entry> = Vec::with_capacity(sources.iter().map(|s| s.tools.len()).sum());
        for source in sources {
            let server: Rc<str> = Rc::from(source.server);
            all.extend(source.tools.iter().map(|tool| Entry {
                server: server.clone(),
                tool: tool.clone(),
            }));
        }
        // Stable: among tools of one name, the earlier server (and the earlier
        // tool of a server) stays first, and is the one kept.
        all.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        let mut by_name: Vec<Entry> = Vec::with_capacity(all.len());
        let mut counts = BTreeMap::new();
        let mut collisions = BTreeSet::new();
        let mut warnings = Vec::new();
        for entry in all {
            if let Some(first) = by_name.last().filter(|f| f.tool.name == entry.tool.name) {
                let (tool, server) = (&entry.tool, &entry.server);
                let key = (tool.name.clone(), server.to_string(), tool.def.name.clone());
                if !self.reported.contains(&key) {
                    warnings.push(format!(
                        "tool name collision: {} is the name of `{}` on server `{}` and of `{}` on server `{}`; \
                         keeping the first, skipping `{}` on server `{}` (set `toolPrefix` on one server to keep both)",
                        tool.name,
                        first.tool.def.name,
                        first.server,
                        tool.def.name,
                        server,
                        tool.def.name,
                        server,
                    ));
                }
                collisions.insert(key);
                continue;
            }
            *counts.entry(entry.server.clone()).or_insert(0u32) += 1;
            by_name.push(entry);
        }
        self.by_name = by_name;
        self.counts = counts;
        self.reported = collisions;
        self.generation += 1;
        warnings
    }

    /// Every tool, ordered by name.
    pub fn entries(&self) -> &[Entry] {
        &self.by_name
    }

    /// Every tool, ordered by name, copied.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.by_name
            .iter()
            .map(|e| e.tool.info(&e.server))
            .collect()
    }

    /// The tool of that registry name.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        let at = self
            .by_name
            .binary_search_by(|e| e.tool.name.as_str().cmp(name))
            .ok()?;
        self.by_name.get(at)
    }

    /// How many tools of `server` made it into the table.
    pub fn count_for(&self, server: &str) -> u32 {
        self.counts.get(server).copied().unwrap_or(0)
    }

    /// How many times the table was rebuilt: equal generations, equal tables.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How many tools the table holds.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Parses and checks call arguments for the tool `name` against `validator` (none:
/// only "a JSON object" is checked). Empty text means `{}`. The error text is for
/// the caller, as is. The registry uses it for its tools, the manager for the
/// tools a lost server had, so a call that would restart it is checked first.
///
/// A top-level `null` the schema does not accept is taken to mean "not given"
/// and left out, when the arguments are valid without it: models often write
/// `"verbose": null` for an optional parameter they mean to skip, and MCP treats an
/// absent and a null argument alike elsewhere (no `Mcp-Param-*` header for either).
/// A null the schema allows is sent as it is; a null for a required parameter
/// is still an error.
pub fn check_arguments(
    name: &str,
    validator: Option<&Validator>,
    arguments: &str,
) -> Result<String, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("arguments for {name} are not valid JSON: {e}"))?;
    if !value.is_object() {
        return Err(format!(
            "arguments for {name} must be a JSON object, but are {}",
            kind_of(&value)
        ));
    }
    let Some(validator) = validator else {
        return Ok(text.to_string());
    };
    let Err(errors) = validator.validate(&value) else {
        return Ok(text.to_string());
    };
    if let Value::Object(mut map) = value
        && map.values().any(Value::is_null)
    {
        map.retain(|_, v| !v.is_null());
        let stripped = Value::Object(map);
        if validator.validate(&stripped).is_ok() {
            return Ok(stripped.to_string());
        }
    }
    Err(format!(
        "invalid arguments for {name}: {}",
        schema::describe(&errors)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, schema: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: None,
            input_schema: schema.into(),
            output_schema: None,
            annotations: None,
            param_headers: Vec::new(),
        }
    }

    fn tools(segment: &str, names: &[&str]) -> Vec<Rc<Tool>> {
        let defs = names
            .iter()
            .map(|n| def(n, r#"{"type":"object"}"#))
            .collect();
        prepare(segment, defs)
    }

    /// Checks arguments the way the manager does, failing on a first-use warning.
    fn check(r: &Registry, name: &str, arguments: &str) -> Result<String, String> {
        let entry = r.get(name).unwrap();
        let (checked, warning) = entry.tool.check_arguments(&entry.server, arguments);
        assert_eq!(warning, None);
        checked
    }

    #[test]
    fn tools_are_ordered_by_name_with_schemas_untouched() {
        let schema = r#"{ "type" : "object",  "properties": {"b": {}, "a": {}} }"#;
        let a = prepare("srv", vec![def("zeta", schema), def("alpha", "true")]);
        let mut r = Registry::new();
        assert!(
            r.rebuild(&[Source {
                server: "srv",
                tools: &a
            }])
            .is_empty()
        );
        let names: Vec<_> = r.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["mcp__srv__alpha", "mcp__srv__zeta"]);
        assert_eq!(
            r.get("mcp__srv__zeta").unwrap().tool.def.input_schema,
            schema
        );
        assert_eq!(r.tools()[1].input_schema, schema);
        assert_eq!(r.count_for("srv"), 2);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn collisions_are_reported_once_and_the_later_is_skipped() {
        let first = tools("a.b", &["t"]);
        let second = tools("a_b", &["t", "u"]);
        let mut r = Registry::new();
        let sources = [
            Source {
                server: "a.b",
                tools: &first,
            },
            Source {
                server: "a_b",
                tools: &second,
            },
        ];
        let warnings = r.rebuild(&sources);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("mcp__a_b__t"));
        assert!(warnings[0].contains("`t` on server `a.b`"));
        assert!(warnings[0].contains("skipping `t` on server `a_b`"));
        assert_eq!(&*r.get("mcp__a_b__t").unwrap().server, "a.b");
        assert_eq!(r.count_for("a.b"), 1);
        assert_eq!(r.count_for("a_b"), 1);
        // The same collision on the next rebuild is not reported again.
        assert!(r.rebuild(&sources).is_empty());
        // Gone, then back: reported again.
        r.rebuild(&sources[..1]);
        assert_eq!(r.rebuild(&sources).len(), 1);
    }

    #[test]
    fn tool_prefix_replaces_the_server_segment() {
        let t = tools("gh", &["search"]);
        let mut r = Registry::new();
        r.rebuild(&[Source {
            server: "github-enterprise",
            tools: &t,
        }]);
        let info = &r.tools()[0];
        assert_eq!(info.name, "mcp__gh__search");
        assert_eq!(info.server, "github-enterprise");
        assert_eq!(info.tool, "search");
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let t = prepare(
            "demo",
            vec![def(
                "echo",
                r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
            )],
        );
        let mut r = Registry::new();
        r.rebuild(&[Source {
            server: "demo",
            tools: &t,
        }]);
        assert_eq!(
            check(&r, "mcp__demo__echo", r#"{"text": 5}"#).unwrap_err(),
            "invalid arguments for mcp__demo__echo: /text: want string, but got number"
        );
        assert_eq!(
            check(&r, "mcp__demo__echo", "").unwrap_err(),
            "invalid arguments for mcp__demo__echo: /text: required property is missing"
        );
        assert!(
            check(&r, "mcp__demo__echo", "[1]")
                .unwrap_err()
                .contains("must be a JSON object, but are an array")
        );
        assert!(
            check(&r, "mcp__demo__echo", "{")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert_eq!(
            check(&r, "mcp__demo__echo", r#"{"text":"hi"}"#).unwrap(),
            r#"{"text":"hi"}"#
        );
    }

    #[test]
    fn a_null_the_schema_refuses_for_an_optional_parameter_means_not_given() {
        let schema = r#"{"type":"object","properties":{"q":{"type":"string"},
            "verbose":{"type":"boolean"},"maybe":{"type":["string","null"]}},"required":["q"]}"#;
        let check =
            |args: &str| check_arguments("t", Validator::compile(schema).ok().as_ref(), args);
        assert_eq!(
            check(r#"{"q":"x","verbose":null}"#).unwrap(),
            r#"{"q":"x"}"#
        );
        // A null the schema allows is the caller's to send.
        assert_eq!(
            check(r#"{"q":"x","maybe":null}"#).unwrap(),
            r#"{"q":"x","maybe":null}"#
        );
        // A required parameter cannot be skipped that way; the error is about the null.
        assert_eq!(
            check(r#"{"q":null}"#).unwrap_err(),
            "invalid arguments for t: /q: want string, but got null"
        );
        // Nor does a null excuse another error.
        assert!(check(r#"{"q":5,"verbose":null}"#).is_err());
    }

    #[test]
    fn an_uncompilable_schema_is_warned_about_at_first_use_and_not_checked() {
        let t = prepare(
            "s",
            vec![def("remote", r#"{"$ref":"https://x.example/s.json"}"#)],
        );
        let mut r = Registry::new();
        r.rebuild(&[Source {
            server: "s",
            tools: &t,
        }]);
        let entry = r.get("mcp__s__remote").unwrap();
        let (checked, warning) = entry
            .tool
            .check_arguments(&entry.server, r#"{"anything": 1}"#);
        assert!(checked.is_ok());
        let warning = warning.expect("a warning at first use");
        assert!(warning.contains("mcp__s__remote (server `s`)"), "{warning}");
        assert!(warning.contains("unchecked"), "{warning}");
        assert!(check(&r, "mcp__s__remote", "5").is_err());
        assert_eq!(
            check(&r, "mcp__s__remote", "  ").unwrap(),
            "{}",
            "empty arguments become {{}}"
        );
    }
}
