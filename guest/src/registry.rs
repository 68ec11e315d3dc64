//! The tool table: every server's tools under one flat namespace.
//!
//! The table is rebuilt from scratch whenever any server's list or state
//! changes. Its outcome is a pure function of the servers' lists and states, not
//! of the order in which servers connected or listed: of the tools that share a
//! name, the one whose server comes first in the configuration keeps it (of one
//! server's tools, the first by tool name), the others are skipped, and each
//! collision is named once in a warning.
//!
//! A server that is not connected but whose last list is kept (it failed, and
//! calls restart it) still owns its names: they are not offered, and a call to one
//! restarts that server rather than reaching a later server that lists the same
//! name. A server that is still starting has not said what it lists, so a name it
//! could claim (one in its [`naming::space`]) is not offered by a server after it
//! until it has listed: what `tools` shows is then what calls reach, whichever
//! server answers first.
//!
//! A rebuild copies no tool: the table holds the servers' own [`Tool`]s (shared
//! through `Rc`), whose schemas are the exact text the server sent. A tool's input
//! schema is compiled into a [`Validator`] the first time it is called, not when it
//! is listed: a platform that lists thousands of tools calls a few of them, and the
//! compiled forms of the rest would cost time at every listing and memory for good.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;
use core::cell::{OnceCell, RefCell};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::adapter::{self, AdaptedTool, Dialect, Refusal, ToolInput};
use crate::config::types::{Members, kind_of_raw};
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
    /// `execution.taskSupport` (2025-11-25): whether a call runs as a task.
    pub task_support: TaskSupport,
}

/// A tool's `execution.taskSupport` (MCP 2025-11-25): whether the server runs a
/// call to it as a task (answered with a task handle, polled to its result).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never as a task (absent, or `"forbidden"`).
    #[default]
    Forbidden,
    /// As a task when the caller asks for one.
    Optional,
    /// Only as a task: a plain call is refused.
    Required,
}

impl TaskSupport {
    /// Reads a tool's `execution` object; anything unknown is `Forbidden`.
    pub fn read(execution: Option<&serde_json::Value>) -> TaskSupport {
        match execution
            .and_then(|e| e.get("taskSupport"))
            .and_then(serde_json::Value::as_str)
        {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
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
    /// Its conversion into each dialect asked for, made on first use: a tool
    /// keeps its conversions as long as its server's list does, so a registry
    /// rebuilt for another server's change converts nothing again.
    adapted: RefCell<BTreeMap<Dialect, Result<AdaptedTool, Refusal>>>,
}

impl Tool {
    /// Names a freshly listed tool of a server whose registry segment is `segment`.
    pub fn new(segment: &str, def: ToolDef) -> Tool {
        Tool {
            name: naming::tool_name(segment, &def.name),
            def,
            validator: OnceCell::new(),
            adapted: RefCell::new(BTreeMap::new()),
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
    ) -> (Result<Box<RawValue>, String>, Option<String>) {
        let (validator, warning) = self.validator(server);
        (check_arguments(&self.name, validator, arguments), warning)
    }

    /// This tool in `dialect`, its name not yet fitted (see
    /// [`adapter::convert_tool`]); converted once per dialect, then copied.
    pub fn adapted(&self, dialect: Dialect) -> Result<AdaptedTool, Refusal> {
        self.adapted
            .borrow_mut()
            .entry(dialect)
            .or_insert_with(|| {
                adapter::convert_tool(
                    dialect,
                    &ToolInput {
                        name: &self.name,
                        description: self.def.description.as_deref(),
                        input_schema: &self.def.input_schema,
                        output_schema: self.def.output_schema.as_deref(),
                    },
                )
            })
            .clone()
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

/// Where a server stands, for a rebuild.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Connected: its tools are offered.
    Connected,
    /// Not connected, its last list kept: the names stay its own, not offered.
    Kept,
    /// Starting: like `Kept` for the list it had before (if any), and a name it
    /// could claim is not offered by a server after it until it has listed.
    Starting,
}

/// One server's contribution to a rebuild.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The configured server name.
    pub server: &'a str,
    /// Its segment of tool names (the name, or its `toolPrefix`).
    pub segment: &'a str,
    /// Its current (or kept) tools.
    pub tools: &'a [Rc<Tool>],
    /// Whether it is connected.
    pub standing: Standing,
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
    /// The tools offered, ordered by registry name, one entry per name: looked up
    /// by binary search, and read in pages by position.
    by_name: Vec<Entry>,
    /// Names owned by a server that is not connected, ordered the same way.
    kept: Vec<Entry>,
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

    /// Rebuilds the table from every server's tools; `sources` are in
    /// configuration order, which decides collisions. Returns warnings for
    /// collisions not reported before.
    pub fn rebuild(&mut self, sources: &[Source<'_>]) -> Vec<String> {
        let mut all: Vec<(usize, Entry)> =
            Vec::with_capacity(sources.iter().map(|s| s.tools.len()).sum());
        // The first starting server that could claim a name, per space.
        let mut starting: BTreeMap<String, usize> = BTreeMap::new();
        for (rank, source) in sources.iter().enumerate() {
            let server: Rc<str> = Rc::from(source.server);
            all.extend(source.tools.iter().map(|tool| {
                let entry = Entry {
                    server: server.clone(),
                    tool: tool.clone(),
                };
                (rank, entry)
            }));
            if source.standing == Standing::Starting {
                starting
                    .entry(naming::space(source.segment))
                    .or_insert(rank);
            }
        }
        // A total order: by name, then the server's place in the configuration,
        // then the tool's own name (a server's listing order can change between
        // runs); stable for a tool a server lists twice.
        all.sort_by(|(ra, a), (rb, b)| {
            (&a.tool.name, ra, &a.tool.def.name).cmp(&(&b.tool.name, rb, &b.tool.def.name))
        });
        let mut winners: Vec<(usize, Entry)> = Vec::with_capacity(all.len());
        let mut collisions = BTreeSet::new();
        let mut warnings = Vec::new();
        for (rank, entry) in all {
            if let Some((_, first)) = winners
                .last()
                .filter(|(_, f)| f.tool.name == entry.tool.name)
            {
                let (tool, server) = (&entry.tool, &entry.server);
                let key = (tool.name.clone(), server.to_string(), tool.def.name.clone());
                if !self.reported.contains(&key) {
                    warnings.push(format!(
                        "tool name collision: {} is the name of `{}` on server `{}` and of `{}` on server `{}`; \
                         keeping `{}` on server `{}` (the earlier server in the configuration), skipping `{}` \
                         on server `{}`, which cannot be called by this name (set `toolPrefix` on one server \
                         to keep both)",
                        tool.name,
                        first.tool.def.name,
                        first.server,
                        tool.def.name,
                        server,
                        first.tool.def.name,
                        first.server,
                        tool.def.name,
                        server,
                    ));
                }
                collisions.insert(key);
                continue;
            }
            winners.push((rank, entry));
        }
        let mut by_name: Vec<Entry> = Vec::with_capacity(winners.len());
        let mut kept = Vec::new();
        let mut counts = BTreeMap::new();
        for (rank, entry) in winners {
            if sources[rank].standing != Standing::Connected {
                kept.push(entry);
                continue;
            }
            let withheld = !starting.is_empty()
                && naming::possible_spaces(&entry.tool.name)
                    .any(|space| starting.get(space).is_some_and(|&first| first < rank));
            if withheld {
                continue;
            }
            *counts.entry(entry.server.clone()).or_insert(0u32) += 1;
            by_name.push(entry);
        }
        self.by_name = by_name;
        self.kept = kept;
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
        by_name(&self.by_name, name)
    }

    /// The tool of that registry name that a server which is not connected owns.
    pub fn kept(&self, name: &str) -> Option<&Entry> {
        by_name(&self.kept, name)
    }

    /// How many tools of `server` made it into the table.
    pub fn count_for(&self, server: &str) -> u32 {
        self.counts.get(server).copied().unwrap_or(0)
    }

    /// How many times the table was rebuilt: equal generations, equal tables.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How often the table was rebuilt.
    #[cfg(test)]
    pub(crate) fn rebuilds(&self) -> u64 {
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

/// The entry of that name in a list ordered by name.
fn by_name<'a>(entries: &'a [Entry], name: &str) -> Option<&'a Entry> {
    let at = entries
        .binary_search_by(|e| e.tool.name.as_str().cmp(name))
        .ok()?;
    entries.get(at)
}

/// Parses and checks call arguments for the tool `name` against `validator` (none:
/// only "a JSON object" is checked). Empty text means `{}`. The error text is for
/// the caller, as is. The registry uses it for its tools, the manager for the
/// tools a lost server had, so a call that would restart it is checked first.
/// Arguments of more JSON values than [`crate::budget::MAX_VALUES`], or whose
/// reading needs more memory than the guest has free, are refused before they are
/// read (see [`crate::budget`]): that call fails, nothing else.
///
/// What goes to the server is the caller's text, exactly: it is never re-encoded
/// (which would turn `1e2` into `100.0` and cut an integer beyond 64 bits). JSON
/// is read without building it first, so any depth passes when there is no
/// schema to check; arguments the schema must be checked on but a
/// `serde_json::Value` cannot hold (deeper than 128 levels, a number beyond
/// `f64`) are refused, saying so, rather than sent unchecked.
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
) -> Result<Box<RawValue>, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    // Counted before they are read: what reading them builds must fit the guest's
    // memory now, or this call alone fails (see `budget`). Held at once: the text,
    // its raw copy and the request written on, and one `Value` tree.
    crate::budget::admit(crate::budget::Needs::of(text), 3, 1)
        .map_err(|refused| refused.describe(&format!("the arguments of {name}")))?;
    // Read once as the raw value the client sends, once more as a `Value` to
    // check: a call's arguments are read twice, not four times (a `Members` list
    // and a second raw value were made on every call before).
    let raw: Box<RawValue> = serde_json::from_str(text)
        .map_err(|e| format!("arguments for {name} are not valid JSON: {e}"))?;
    let not_an_object = || {
        format!(
            "arguments for {name} must be a JSON object, but are {}",
            kind_of_raw(&raw)
        )
    };
    // A raw value's text starts at its first byte: `{` is an object.
    if !raw.get().starts_with('{') {
        return Err(not_an_object());
    }
    let Some(validator) = validator else {
        // Its keys must read as strings (a lone surrogate escape does not).
        return match Members::read(&raw) {
            Some(_) => Ok(raw),
            None => Err(not_an_object()),
        };
    };
    let value: Value = match serde_json::from_str(raw.get()) {
        Ok(value) => value,
        // Keys a string cannot hold, as without a schema.
        Err(_) if Members::read(&raw).is_none() => return Err(not_an_object()),
        Err(e) => {
            return Err(format!(
                "arguments for {name} cannot be checked against its input schema: {e} \
                 (arguments are checked up to 128 levels deep, with numbers a 64-bit float \
                 holds); nothing was sent"
            ));
        }
    };
    let Err(errors) = validator.validate(&value) else {
        return Ok(raw);
    };
    if let Value::Object(mut map) = value
        && map.values().any(Value::is_null)
    {
        map.retain(|_, v| !v.is_null());
        if validator.validate(&Value::Object(map)).is_ok()
            && let Some(members) = Members::read(&raw)
            && let Ok(raw) = RawValue::from_string(without_nulls(&members))
        {
            return Ok(raw);
        }
    }
    Err(format!(
        "invalid arguments for {name}: {}",
        schema::describe(&errors)
    ))
}

/// The object text of `members` without its null members, each value as written.
/// A repeated key counts once, at its last value, as a JSON parser reads it.
fn without_nulls(members: &Members) -> String {
    let mut last = BTreeMap::new();
    for (i, (key, _)) in members.0.iter().enumerate() {
        last.insert(key.as_str(), i);
    }
    let mut text = String::from("{");
    for (i, (key, value)) in members.0.iter().enumerate() {
        if last.get(key.as_str()) != Some(&i) || value.get() == "null" {
            continue;
        }
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&Value::String(key.clone()).to_string());
        text.push(':');
        text.push_str(value.get());
    }
    text.push('}');
    text
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
            task_support: TaskSupport::Forbidden,
        }
    }

    fn tools(segment: &str, names: &[&str]) -> Vec<Rc<Tool>> {
        let defs = names
            .iter()
            .map(|n| def(n, r#"{"type":"object"}"#))
            .collect();
        prepare(segment, defs)
    }

    /// A connected server whose segment is its name (or a `toolPrefix` that the
    /// tools were prepared with).
    fn live<'a>(server: &'a str, tools: &'a [Rc<Tool>]) -> Source<'a> {
        Source {
            server,
            segment: server,
            tools,
            standing: Standing::Connected,
        }
    }

    /// Checks arguments the way the manager does, failing on a first-use warning.
    fn check(r: &Registry, name: &str, arguments: &str) -> Result<String, String> {
        let entry = r.get(name).unwrap();
        let (checked, warning) = entry.tool.check_arguments(&entry.server, arguments);
        assert_eq!(warning, None);
        checked.map(|raw| raw.get().to_string())
    }

    /// [`check_arguments`], the arguments as text.
    fn check_text(
        name: &str,
        validator: Option<&Validator>,
        arguments: &str,
    ) -> Result<String, String> {
        check_arguments(name, validator, arguments).map(|raw| raw.get().to_string())
    }

    #[test]
    fn tools_are_ordered_by_name_with_schemas_untouched() {
        let schema = r#"{ "type" : "object",  "properties": {"b": {}, "a": {}} }"#;
        let a = prepare("srv", vec![def("zeta", schema), def("alpha", "true")]);
        let mut r = Registry::new();
        assert!(r.rebuild(&[live("srv", &a)]).is_empty());
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
        let sources = [live("a.b", &first), live("a_b", &second)];
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

    fn source<'a>(server: &'a str, tools: &'a [Rc<Tool>], standing: Standing) -> Source<'a> {
        Source {
            standing,
            ..live(server, tools)
        }
    }

    #[test]
    fn a_name_a_starting_server_could_claim_waits_for_its_list() {
        let x = tools("x", &["y__echo"]);
        let xy = tools("x__y", &["echo", "other"]);
        let mut r = Registry::new();
        // `x` (first in the configuration) is still starting: `x__y`'s
        // `mcp__x__y__…` names could be `x`'s, so none is offered yet.
        r.rebuild(&[source("x", &[], Standing::Starting), live("x__y", &xy)]);
        assert_eq!(r.len(), 0);
        assert!(r.get("mcp__x__y__echo").is_none());
        assert_eq!(r.count_for("x__y"), 0);
        // Once `x` has listed, its tool wins and the other name is offered.
        let warnings = r.rebuild(&[live("x", &x), live("x__y", &xy)]);
        assert_eq!(&*r.get("mcp__x__y__echo").unwrap().server, "x");
        assert_eq!(&*r.get("mcp__x__y__other").unwrap().server, "x__y");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("skipping `echo` on server `x__y`, which cannot be called"),
            "{warnings:?}"
        );
        // A starting server after the one that lists the name withholds nothing.
        r.rebuild(&[live("x", &x), source("x__y", &[], Standing::Starting)]);
        assert_eq!(&*r.get("mcp__x__y__echo").unwrap().server, "x");
    }

    #[test]
    fn a_server_that_is_not_connected_keeps_its_names() {
        let x = tools("x", &["y__echo"]);
        let xy = tools("x__y", &["echo"]);
        let mut r = Registry::new();
        for standing in [Standing::Kept, Standing::Starting] {
            r.rebuild(&[source("x", &x, standing), live("x__y", &xy)]);
            assert!(r.get("mcp__x__y__echo").is_none(), "not offered");
            assert_eq!(&*r.kept("mcp__x__y__echo").unwrap().server, "x");
            assert_eq!(r.tools(), vec![]);
        }
        // The server after it keeps nothing from a name it lost.
        r.rebuild(&[live("x", &x), source("x__y", &xy, Standing::Kept)]);
        assert!(r.kept("mcp__x__y__echo").is_none());
        assert_eq!(&*r.get("mcp__x__y__echo").unwrap().server, "x");
    }

    #[test]
    fn of_one_server_s_colliding_tools_the_first_by_name_wins_whatever_the_listing_order() {
        for names in [["x_y", "x.y"], ["x.y", "x_y"]] {
            let t = tools("s", &names);
            let mut r = Registry::new();
            assert_eq!(r.rebuild(&[live("s", &t)]).len(), 1);
            assert_eq!(r.get("mcp__s__x_y").unwrap().tool.def.name, "x.y");
        }
    }

    #[test]
    fn tool_prefix_replaces_the_server_segment() {
        let t = tools("gh", &["search"]);
        let mut r = Registry::new();
        r.rebuild(&[live("github-enterprise", &t)]);
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
        r.rebuild(&[live("demo", &t)]);
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
        let check = |args: &str| check_text("t", Validator::compile(schema).ok().as_ref(), args);
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
        r.rebuild(&[live("s", &t)]);
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

    /// Arguments reach the server as the caller wrote them: leaving out a null
    /// must not re-encode the whole object (`1e2` becoming `100.0`, an integer
    /// beyond 64 bits losing its digits, keys sorted), and arguments serde_json
    /// cannot build are refused saying why, not called "not valid JSON".
    #[test]
    fn arguments_reach_the_server_as_written_or_are_refused_saying_why() {
        let schema = r#"{"type":"object","properties":{"q":{"type":"string"},
            "verbose":{"type":"boolean"}},"required":["q"]}"#;
        let validator = Validator::compile(schema).ok();
        let check = |args: &str| check_text("t", validator.as_ref(), args);
        assert_eq!(
            check(
                r#"{"q":"x","n":123456789012345678901234567890,"f":1e2,"verbose":null,"a":[1.50]}"#
            )
            .unwrap(),
            r#"{"q":"x","n":123456789012345678901234567890,"f":1e2,"a":[1.50]}"#
        );
        // A repeated key counts once, the last time (as a JSON parser reads it).
        assert_eq!(
            check(r#"{"q":"x","verbose":true,"verbose":null}"#).unwrap(),
            r#"{"q":"x"}"#
        );

        let deep = |n: usize| format!(r#"{{"q":"x","d":{}{}}}"#, "[".repeat(n), "]".repeat(n));
        // Without a schema to check, any depth passes through untouched; 10,000
        // levels are read without recursion.
        for n in [200, 10_000] {
            assert_eq!(check_text("t", None, &deep(n)).unwrap(), deep(n));
        }
        // With one, what cannot be checked is refused, saying so.
        let refused = check(&deep(200)).unwrap_err();
        assert!(
            refused.starts_with("arguments for t cannot be checked against its input schema: "),
            "{refused}"
        );
        assert!(refused.contains("128 levels"), "{refused}");
        let refused = check(r#"{"q":"x","n":1e999}"#).unwrap_err();
        assert!(refused.contains("cannot be checked"), "{refused}");
        assert!(
            check_text("t", None, "[1]")
                .unwrap_err()
                .contains("must be a JSON object, but are an array")
        );
        assert!(
            check_text("t", None, r#"{"a":"#)
                .unwrap_err()
                .contains("not valid JSON")
        );
    }
}
