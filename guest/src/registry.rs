//! The tool table: every connected server's tools under one flat namespace.
//!
//! The table is rebuilt from scratch whenever any server's list changes: servers in
//! configuration order, each server's tools in the order it listed them. Rebuilding
//! is cheap (a few hundred names) and makes the outcome a pure function of the
//! lists, so collisions always resolve the same way: the earlier tool keeps the
//! name, the later one is skipped, and both are named in a warning. Schemas pass
//! through as the exact text the server sent; the compiled validator is built once
//! per listing, not per rebuild.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;

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

/// A listed tool with its registry name and compiled input schema.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The server's description.
    pub def: ToolDef,
    /// The registry name.
    pub name: String,
    /// `None` when the schema could not be compiled: calls go unchecked.
    pub validator: Option<Rc<Validator>>,
}

/// Names and compiles a server's freshly listed tools. Returns the tools and one
/// warning per tool whose schema is not (fully) checked.
pub fn prepare(server: &str, segment: &str, defs: Vec<ToolDef>) -> (Vec<Tool>, Vec<String>) {
    let mut warnings = Vec::new();
    let tools = defs
        .into_iter()
        .map(|def| {
            let name = naming::tool_name(segment, &def.name);
            let validator = match Validator::compile(&def.input_schema) {
                Ok(v) => {
                    if !v.notes().is_empty() {
                        warnings.push(format!(
                            "{name} (server `{server}`): parts of its input schema are not checked before calls: {}",
                            v.notes().join("; ")
                        ));
                    }
                    Some(Rc::new(v))
                }
                Err(e) => {
                    warnings.push(format!(
                        "{name} (server `{server}`): its input schema cannot be compiled ({e}); arguments are passed to the server unchecked"
                    ));
                    None
                }
            };
            Tool { def, name, validator }
        })
        .collect();
    (tools, warnings)
}

/// One server's contribution to a rebuild.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The configured server name.
    pub server: &'a str,
    /// Its current tools.
    pub tools: &'a [Tool],
}

#[derive(Debug, Clone)]
struct Entry {
    info: ToolInfo,
    validator: Option<Rc<Validator>>,
}

/// The tool table.
#[derive(Debug, Default)]
pub struct Registry {
    by_name: BTreeMap<String, Entry>,
    /// Collisions already warned about, as (name, skipped server, skipped tool), so a
    /// rebuild does not repeat a warning for a collision that persists.
    reported: BTreeSet<(String, String, String)>,
}

impl Registry {
    /// An empty table.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Rebuilds the table from every connected server's tools, in configuration
    /// order. Returns warnings for collisions not reported before.
    pub fn rebuild(&mut self, sources: &[Source<'_>]) -> Vec<String> {
        let mut by_name: BTreeMap<String, Entry> = BTreeMap::new();
        let mut collisions = BTreeSet::new();
        let mut warnings = Vec::new();
        for source in sources {
            for tool in source.tools {
                if let Some(first) = by_name.get(&tool.name) {
                    let key = (
                        tool.name.clone(),
                        source.server.to_string(),
                        tool.def.name.clone(),
                    );
                    if !self.reported.contains(&key) {
                        warnings.push(format!(
                            "tool name collision: {} is the name of `{}` on server `{}` and of `{}` on server `{}`; \
                             keeping the first, skipping `{}` on server `{}` (set `toolPrefix` on one server to keep both)",
                            tool.name,
                            first.info.tool,
                            first.info.server,
                            tool.def.name,
                            source.server,
                            tool.def.name,
                            source.server,
                        ));
                    }
                    collisions.insert(key);
                    continue;
                }
                by_name.insert(
                    tool.name.clone(),
                    Entry {
                        info: ToolInfo {
                            name: tool.name.clone(),
                            server: source.server.to_string(),
                            tool: tool.def.name.clone(),
                            title: tool.def.title.clone(),
                            description: tool.def.description.clone(),
                            input_schema: tool.def.input_schema.clone(),
                            output_schema: tool.def.output_schema.clone(),
                            annotations: tool.def.annotations.clone(),
                        },
                        validator: tool.validator.clone(),
                    },
                );
            }
        }
        self.by_name = by_name;
        self.reported = collisions;
        warnings
    }

    /// Every tool, ordered by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.by_name.values().map(|e| e.info.clone()).collect()
    }

    /// The tool of that registry name.
    pub fn get(&self, name: &str) -> Option<&ToolInfo> {
        self.by_name.get(name).map(|e| &e.info)
    }

    /// How many tools of `server` made it into the table.
    pub fn count_for(&self, server: &str) -> u32 {
        let n = self
            .by_name
            .values()
            .filter(|e| e.info.server == server)
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// How many tools the table holds.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Parses and checks call arguments for the tool `name` (which must exist).
    /// Empty text means `{}`. The error text is for the caller, as is.
    pub fn check_arguments(&self, name: &str, arguments: &str) -> Result<String, String> {
        let validator = self.by_name.get(name).and_then(|e| e.validator.as_deref());
        check_arguments(name, validator, arguments)
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

    fn tools(server: &str, segment: &str, names: &[&str]) -> Vec<Tool> {
        let defs = names
            .iter()
            .map(|n| def(n, r#"{"type":"object"}"#))
            .collect();
        let (tools, warnings) = prepare(server, segment, defs);
        assert!(warnings.is_empty());
        tools
    }

    #[test]
    fn tools_are_ordered_by_name_with_schemas_untouched() {
        let schema = r#"{ "type" : "object",  "properties": {"b": {}, "a": {}} }"#;
        let (a, _) = prepare(
            "srv",
            "srv",
            vec![def("zeta", schema), def("alpha", "true")],
        );
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
        assert_eq!(r.get("mcp__srv__zeta").unwrap().input_schema, schema);
        assert_eq!(r.count_for("srv"), 2);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn collisions_are_reported_once_and_the_later_is_skipped() {
        let first = tools("a.b", "a.b", &["t"]);
        let second = tools("a_b", "a_b", &["t", "u"]);
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
        assert_eq!(r.get("mcp__a_b__t").unwrap().server, "a.b");
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
        let t = tools("github-enterprise", "gh", &["search"]);
        let mut r = Registry::new();
        r.rebuild(&[Source {
            server: "github-enterprise",
            tools: &t,
        }]);
        let info = r.get("mcp__gh__search").unwrap();
        assert_eq!(info.server, "github-enterprise");
        assert_eq!(info.tool, "search");
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let (t, _) = prepare(
            "demo",
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
            r.check_arguments("mcp__demo__echo", r#"{"text": 5}"#)
                .unwrap_err(),
            "invalid arguments for mcp__demo__echo: /text: want string, but got number"
        );
        assert_eq!(
            r.check_arguments("mcp__demo__echo", "").unwrap_err(),
            "invalid arguments for mcp__demo__echo: /text: required property is missing"
        );
        assert!(
            r.check_arguments("mcp__demo__echo", "[1]")
                .unwrap_err()
                .contains("must be a JSON object, but are an array")
        );
        assert!(
            r.check_arguments("mcp__demo__echo", "{")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert_eq!(
            r.check_arguments("mcp__demo__echo", r#"{"text":"hi"}"#)
                .unwrap(),
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
    fn an_uncompilable_schema_is_warned_about_once_and_not_checked() {
        let (t, warnings) = prepare(
            "s",
            "s",
            vec![def("remote", r#"{"$ref":"https://x.example/s.json"}"#)],
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("mcp__s__remote"));
        assert!(warnings[0].contains("unchecked"));
        let mut r = Registry::new();
        r.rebuild(&[Source {
            server: "s",
            tools: &t,
        }]);
        assert!(
            r.check_arguments("mcp__s__remote", r#"{"anything": 1}"#)
                .is_ok()
        );
        assert!(r.check_arguments("mcp__s__remote", "5").is_err());
        assert_eq!(
            r.check_arguments("mcp__s__remote", "  ").unwrap(),
            "{}",
            "empty arguments become {{}}"
        );
    }
}
