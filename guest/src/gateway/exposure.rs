//! The tools a downstream client sees: the registry under the gateway's names,
//! filtered by the client's profile.
//!
//! # Names
//!
//! The registry names tools `mcp__{server}__{tool}`; an MCP client puts its own
//! prefix in front of every tool of the gateway (Claude Code: `mcp__{entry}__`), so
//! the gateway drops `mcp__` and serves `{server}__{tool}` ([`Naming::Prefixed`]),
//! where `{server}` is the server's `toolPrefix` when it has one. Clients and the
//! models behind them accept at most 64 characters for the full name, so the served
//! name is kept within a budget ([`super::ServeOptions::max_name_len`], by default
//! 64 − `mcp__mcpbox__`.len() = 51): a longer name is cut and given the same stable
//! 8-hex-digit hash suffix the registry uses (see [`crate::naming`]), so the full
//! name a client builds stays within 64 when its entry for the gateway is named
//! `mcpbox` (or anything as short).
//!
//! [`Naming::Conditional`] serves a tool under its own name when no other server
//! has a tool of that name (always, with one upstream), and as `{server}__{tool}`
//! otherwise. Names then depend on which servers are connected: a server that
//! connects with a clashing tool renames the other server's tool too, and clients
//! are told the list changed.

use crate::prelude::*;
use alloc::collections::BTreeMap;
use alloc::rc::Rc;

use crate::naming;
use crate::registry::Entry;

use crate::permissions::{Decision, Permissions};

/// How registry tools are named downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// `{server}__{tool}` for every tool.
    #[default]
    Prefixed,
    /// The tool's own name unless another server has a tool of that name.
    Conditional,
}

impl Naming {
    /// Reads `prefixed` or `conditional`.
    pub fn parse(text: &str) -> Option<Naming> {
        match text {
            "prefixed" => Some(Naming::Prefixed),
            "conditional" => Some(Naming::Conditional),
            _ => None,
        }
    }
}

/// What the gateway serves, per profile (`None`: no profile): the exposures
/// built from the registry, the tools served before whose server is gone, the
/// search indexes, and the registry generations they were last compared and
/// warned about.
#[derive(Debug, Default)]
pub(super) struct Served {
    /// The served tools per profile, rebuilt when the registry changes.
    pub(super) exposures: BTreeMap<Option<String>, Rc<Exposure>>,
    /// Tools each profile served before whose server is gone, by served name.
    pub(super) retired: BTreeMap<Option<String>, BTreeMap<String, Exposed>>,
    /// Search indexes per profile.
    pub(super) indexes: BTreeMap<Option<String>, Rc<super::search::Index>>,
    /// The registry generation the sessions were last compared against.
    pub(super) seen_generation: u64,
    /// The registry generation whose tools refused by the schema dialect were
    /// last warned about (see `tools.rs`).
    pub(super) refusals_warned: u64,
}

/// One tool as served.
#[derive(Debug, Clone)]
pub struct Exposed {
    /// The name downstream clients call it by.
    pub name: String,
    /// The registry entry behind it.
    pub entry: Entry,
    /// `None` when calls go ahead; the `ask` rule otherwise.
    pub ask: Option<String>,
}

/// Every tool one profile serves, ordered by served name.
#[derive(Debug, Clone, Default)]
pub struct Exposure {
    /// The registry generation it was built from.
    pub generation: u64,
    /// Ordered by `name`, one entry per name.
    pub tools: Vec<Exposed>,
    /// Changes when the served list changes (names, or any tool's definition).
    pub fingerprint: u64,
    /// Denied tools by served name, with the rule, so a call to one is refused
    /// naming the rule rather than "unknown tool".
    pub denied: BTreeMap<String, String>,
}

impl Exposure {
    /// The served tool of that name.
    pub fn get(&self, name: &str) -> Option<&Exposed> {
        let at = self
            .tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()?;
        self.tools.get(at)
    }
}

/// Fits `name` into `max` characters: as is when short enough, else cut and given
/// an 8-hex-digit hash of `key` (the unsanitised identity of the tool).
fn fit(name: &str, max: usize, key: &str) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let hash = naming::fnv1a64(key.as_bytes());
    let folded = ((hash >> 32) ^ (hash & 0xffff_ffff)) as u32;
    let keep = max.saturating_sub(9);
    // Served names are sanitised ASCII: any byte index is a character boundary.
    format!("{}_{folded:08x}", &name[..keep.min(name.len())])
}

/// The prefixed served name of a registry entry: its registry name without `mcp__`.
fn prefixed(entry: &Entry, max: usize) -> String {
    let registry = &entry.tool.name;
    let rest = registry.strip_prefix("mcp__").unwrap_or(registry);
    let key = format!("{}\0{}", entry.server, entry.tool.def.name);
    fit(rest, max, &key)
}

/// Builds what `profile` serves from the registry's entries.
pub fn build(
    entries: &[Entry],
    generation: u64,
    permissions: &Permissions,
    profile: Option<&str>,
    naming_mode: Naming,
    max: usize,
) -> (Exposure, Vec<String>) {
    let mut allowed: Vec<(&Entry, Option<String>)> = Vec::with_capacity(entries.len());
    let mut denied_entries = Vec::new();
    for e in entries {
        match permissions.decide(&e.server, &e.tool.def.name, profile) {
            Decision::Allow(_) => allowed.push((e, None)),
            Decision::Ask(rule) => allowed.push((e, Some(rule.to_string()))),
            Decision::Deny(rule) => denied_entries.push((e, rule.to_string())),
        }
    }
    // Conditional naming: how many servers serve each sanitised own name.
    let mut owners: BTreeMap<String, (Rc<str>, bool)> = BTreeMap::new();
    if naming_mode == Naming::Conditional {
        for (e, _) in &allowed {
            let own = naming::sanitize(&e.tool.def.name);
            owners
                .entry(own)
                .and_modify(|(server, shared)| *shared |= **server != *e.server)
                .or_insert((e.server.clone(), false));
        }
    }
    let name_of = |e: &Entry| -> String {
        if naming_mode == Naming::Conditional {
            let own = naming::sanitize(&e.tool.def.name);
            if owners.get(&own).is_some_and(|(_, shared)| !*shared) && !own.is_empty() {
                return fit(&own, max, &format!("{}\0{}", e.server, e.tool.def.name));
            }
        }
        prefixed(e, max)
    };
    let mut tools: Vec<Exposed> = allowed
        .into_iter()
        .map(|(e, ask)| Exposed {
            name: name_of(e),
            entry: e.clone(),
            ask,
        })
        .collect();
    // Stable: of two tools that still share a name, the registry's earlier one stays.
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let mut warnings = Vec::new();
    tools.dedup_by(|later, first| {
        let same = later.name == first.name;
        if same {
            warnings.push(format!(
                "gateway: {} is the served name of `{}` on server `{}` and of `{}` on server `{}`; \
                 serving the first (set `toolPrefix` on one server, or serve with --naming prefixed)",
                later.name,
                first.entry.tool.def.name,
                first.entry.server,
                later.entry.tool.def.name,
                later.entry.server
            ));
        }
        same
    });
    let denied = denied_entries
        .into_iter()
        .map(|(e, rule)| (name_of(e), rule))
        .collect();
    let mut fingerprint: u64 = tools.len() as u64;
    for t in &tools {
        fingerprint = fingerprint.rotate_left(5)
            ^ naming::fnv1a64(t.name.as_bytes())
            ^ (Rc::as_ptr(&t.entry.tool) as usize as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ u64::from(t.ask.is_some());
        fingerprint = fingerprint.wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    (
        Exposure {
            generation,
            tools,
            fingerprint,
            denied,
        },
        warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Registry, Source, Standing, ToolDef, prepare};

    fn def(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: None,
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            annotations: None,
            param_headers: Vec::new(),
            task_support: Default::default(),
        }
    }

    fn registry(servers: &[(&str, &[&str])]) -> Registry {
        let lists: Vec<_> = servers
            .iter()
            .map(|(s, tools)| prepare(s, tools.iter().map(|t| def(t)).collect()))
            .collect();
        let sources: Vec<Source<'_>> = servers
            .iter()
            .zip(&lists)
            .map(|((s, _), tools)| Source {
                server: s,
                segment: s,
                tools,
                standing: Standing::Connected,
            })
            .collect();
        let mut r = Registry::new();
        r.rebuild(&sources);
        r
    }

    fn names(e: &Exposure) -> Vec<&str> {
        e.tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn prefixed_names_drop_mcp_and_fit_the_budget() {
        let long = "t".repeat(60);
        let r = registry(&[("fs", &["read", "write"]), ("git", &[long.as_str()])]);
        let rules = Permissions::default();
        let (e, warnings) = build(r.entries(), 1, &rules, None, Naming::Prefixed, 51);
        assert!(warnings.is_empty());
        assert_eq!(names(&e)[..2], ["fs__read", "fs__write"]);
        let cut = names(&e)[2];
        assert_eq!(cut.len(), 51);
        assert!(cut.starts_with("git__ttt"), "{cut}");
        // Within 64 once a client adds `mcp__mcpbox__`.
        assert!(format!("mcp__mcpbox__{cut}").len() <= 64);
        assert_eq!(e.get("fs__read").unwrap().entry.tool.def.name, "read");
    }

    #[test]
    fn conditional_names_keep_own_names_unless_they_clash() {
        let r = registry(&[("a", &["read", "only_a"]), ("b", &["read", "only_b"])]);
        let rules = Permissions::default();
        let (e, _) = build(r.entries(), 1, &rules, None, Naming::Conditional, 51);
        assert_eq!(names(&e), ["a__read", "b__read", "only_a", "only_b"]);
        let single = registry(&[("a", &["read", "write"])]);
        let (e, _) = build(single.entries(), 1, &rules, None, Naming::Conditional, 51);
        assert_eq!(names(&e), ["read", "write"]);
    }

    #[test]
    fn denied_tools_are_not_served_and_ask_is_marked() {
        let r = registry(&[("fs", &["read", "write", "rm"])]);
        let rules = crate::config::parse(
            "t.json",
            r#"{"mcpServers": {"fs": {"command": "fs"}},
                "permissions": {"deny": ["mcp__fs__rm"], "ask": ["mcp__fs__write"]}}"#,
        )
        .unwrap()
        .permissions;
        let (e, _) = build(r.entries(), 1, &rules, None, Naming::Prefixed, 51);
        assert_eq!(names(&e), ["fs__read", "fs__write"]);
        assert_eq!(
            e.get("fs__write").unwrap().ask.as_deref(),
            Some("`mcp__fs__write` (permissions.ask[0] in t.json)")
        );
        assert_eq!(
            e.denied["fs__rm"],
            "`mcp__fs__rm` (permissions.deny[0] in t.json)"
        );
        let (again, _) = build(r.entries(), 2, &rules, None, Naming::Prefixed, 51);
        assert_eq!(
            again.fingerprint, e.fingerprint,
            "same tools, same fingerprint"
        );
    }
}
