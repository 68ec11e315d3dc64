//! Permission rules: which tools are offered and which calls may go out.
//!
//! Three sources of rules, all in the configuration text (so every host, and the
//! gateway, applies the same rules):
//!
//! - the top-level `permissions` object, in the shape Claude Code users already
//!   write: `allow`, `ask` and `deny` lists of `mcp__server` (every tool of a
//!   server), `mcp__server__*` (the same) or `mcp__server__tool`, plus `default`
//!   (`allow`, `ask` or `deny`; `allow` when absent) for tools no rule names;
//! - per server, `enabledTools` (an allowlist of the server's own tool names) and
//!   `disabledTools` (a denylist); Codex's `enabled_tools` / `disabled_tools` too;
//! - the `permissions` of a Claude Code settings file (`.claude/settings.json`
//!   next to the configuration), when the embedder asks for them
//!   ([`Permissions::add_claude_settings`]): their `mcp__…` rules join the
//!   top-level ones; rules about Claude Code's own tools (`Bash(…)`) and its other
//!   keys are skipped without a word, since they are not mcpbox's;
//! - named **profiles** (top-level `profiles`: name → a rule set of the same
//!   shape as `permissions`), one of which a caller may name per call (the gateway
//!   names one per downstream client). A profile only narrows: a call must pass
//!   both the top-level rules and the profile's.
//!
//! Deny wins over ask, ask over allow, whatever order the lists are written in;
//! a disabled tool (or one missing from `enabledTools`) is denied. Every
//! [`Decision`] names the [`Rule`] that made it, for error messages and the audit
//! trail.
//!
//! # Cost
//!
//! Rules are resolved once, when the configuration loads: each names a configured
//! server (found by its name or `toolPrefix`, raw or sanitised as in tool names)
//! and is filed under that server and tool. [`Permissions::decide`] is then a
//! lookup of the server and one of the tool (`O(log rules)`), whatever the number
//! of rules: it runs on every call.
//!
//! Reading the rules from the configuration (text → [`Permissions`], with the
//! problems it reports) is the configuration reader's
//! (`guest/src/config/permissions.rs`); this module holds the rules and their
//! decisions, and knows nothing of the configuration's format.

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;
use core::fmt;

use crate::naming;

/// What a rule (or a decision) says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// The call goes out.
    Allow,
    /// The call waits for someone to approve it.
    Ask,
    /// The call is refused, and the tool is not offered.
    Deny,
}

impl Mode {
    /// The word used in the configuration: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Allow => "allow",
            Mode::Ask => "ask",
            Mode::Deny => "deny",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Mode> {
        match word {
            "allow" => Some(Mode::Allow),
            "ask" => Some(Mode::Ask),
            "deny" => Some(Mode::Deny),
            _ => None,
        }
    }

    /// Index into per-mode arrays, strictest first (the order rules are consulted in).
    pub(crate) fn index(self) -> usize {
        match self {
            Mode::Deny => 0,
            Mode::Ask => 1,
            Mode::Allow => 2,
        }
    }
}

/// The lists, strictest first: the order in which a tool's rules are consulted.
pub(crate) const MODES: [Mode; 3] = [Mode::Deny, Mode::Ask, Mode::Allow];

/// One rule, as written: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The field it is written in: `permissions.deny[2]`,
    /// `profiles.readonly.allow[0]`, `mcpServers.fs.disabledTools[1]`,
    /// `permissions.default`.
    pub source: String,
    /// What it says: `mcp__fs__write_file`, or a default's value.
    pub text: String,
    /// The file (or other origin) the configuration came from.
    pub origin: String,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.text.is_empty(), self.origin.is_empty()) {
            (true, true) => f.write_str(&self.source),
            (true, false) => write!(f, "{} in {}", self.source, self.origin),
            (false, true) => write!(f, "`{}` ({})", self.text, self.source),
            (false, false) => write!(f, "`{}` ({} in {})", self.text, self.source, self.origin),
        }
    }
}

/// What the rules say about one tool: the mode and the rule that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Call it.
    Allow(Rc<Rule>),
    /// Ask someone first.
    Ask(Rc<Rule>),
    /// Refuse it and do not offer it.
    Deny(Rc<Rule>),
}

impl Decision {
    fn new(mode: Mode, rule: Rc<Rule>) -> Decision {
        match mode {
            Mode::Allow => Decision::Allow(rule),
            Mode::Ask => Decision::Ask(rule),
            Mode::Deny => Decision::Deny(rule),
        }
    }

    /// Allow, ask or deny.
    pub fn mode(&self) -> Mode {
        match self {
            Decision::Allow(_) => Mode::Allow,
            Decision::Ask(_) => Mode::Ask,
            Decision::Deny(_) => Mode::Deny,
        }
    }

    /// The rule that decided.
    pub fn rule(&self) -> &Rc<Rule> {
        match self {
            Decision::Allow(r) | Decision::Ask(r) | Decision::Deny(r) => r,
        }
    }
}

/// A server's `enabledTools` and `disabledTools`, as parsed from its entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// The allowlist: the key as written (`enabledTools` or `enabled_tools`) and
    /// the server's own tool names. Tools not in it are denied.
    pub enabled: Option<(String, Vec<String>)>,
    /// The denylist: the key as written and the tool names.
    pub disabled: Option<(String, Vec<String>)>,
}

/// The rules that name one server, per mode (strictest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ServerRules {
    /// A rule for every tool of the server (`mcp__server`, `mcp__server__*`).
    pub(crate) whole: [Option<Rc<Rule>>; 3],
    /// Rules for one tool, by the tool name the rule gives.
    pub(crate) tools: [BTreeMap<String, Rc<Rule>>; 3],
}

impl ServerRules {
    fn decide(&self, tool: &str, sanitized: Option<&str>) -> Option<(Mode, &Rc<Rule>)> {
        for mode in MODES {
            let i = mode.index();
            let named = self.tools[i]
                .get(tool)
                .or_else(|| sanitized.and_then(|s| self.tools[i].get(s)));
            if let Some(rule) = named.or(self.whole[i].as_ref()) {
                return Some((mode, rule));
            }
        }
        None
    }
}

/// One set of `allow` / `ask` / `deny` lists and a `default`: the top-level
/// `permissions`, or one profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RuleSet {
    /// By configured server name.
    pub(crate) servers: BTreeMap<String, ServerRules>,
    /// `default`, when written (or read as `deny` because it was invalid).
    pub(crate) default: Option<(Mode, Rc<Rule>)>,
}

impl RuleSet {
    fn decide(
        &self,
        server: &str,
        tool: &str,
        sanitized: Option<&str>,
    ) -> Option<(Mode, Rc<Rule>)> {
        self.servers
            .get(server)
            .and_then(|rules| rules.decide(tool, sanitized))
            .map(|(mode, rule)| (mode, rule.clone()))
            .or_else(|| self.default.clone())
    }
}

/// A server's tool filter, compiled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// The allowlist's names, and the rule a tool outside it is denied by.
    pub(crate) enabled: Option<(BTreeSet<String>, Rc<Rule>)>,
    /// The denylist: tool name → its entry.
    pub(crate) disabled: BTreeMap<String, Rc<Rule>>,
}

/// Every permission rule of a configuration, resolved against its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    pub(crate) base: RuleSet,
    pub(crate) profiles: BTreeMap<String, RuleSet>,
    /// `enabledTools` / `disabledTools`, by server name.
    pub(crate) filters: BTreeMap<String, Filter>,
    /// Every rule that names one tool, by server: checked against the server's
    /// list when it arrives ([`Permissions::unknown_tools`]).
    pub(crate) named_tools: BTreeMap<String, Vec<(String, Rc<Rule>)>>,
    /// The decision for a tool no rule names and no `default` covers.
    pub(crate) implicit: Rc<Rule>,
}

impl Default for Permissions {
    /// No rules: every tool allowed.
    fn default() -> Permissions {
        Permissions {
            base: RuleSet::default(),
            profiles: BTreeMap::new(),
            filters: BTreeMap::new(),
            named_tools: BTreeMap::new(),
            implicit: implicit_rule(),
        }
    }
}

/// The rule a decision names when no rule and no `default` covers a tool.
pub(crate) fn implicit_rule() -> Rc<Rule> {
    Rc::new(Rule {
        source: "permissions.default".into(),
        text: "allow".into(),
        origin: String::new(),
    })
}

impl Permissions {
    /// Whether a profile of that name is configured.
    pub fn has_profile(&self, name: &str) -> bool {
        self.profiles.contains_key(name)
    }

    /// The configured profile names, sorted.
    pub fn profiles(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    /// Whether any rule at all is configured (no rule: every decision is the
    /// implicit `allow`).
    pub fn is_empty(&self) -> bool {
        self.base == RuleSet::default() && self.profiles.is_empty() && self.filters.is_empty()
    }

    /// What the rules say about `tool` (its own name on its server) of the
    /// configured server `server`, for a caller using `profile` (none: the
    /// top-level rules alone). An unknown profile denies, naming itself.
    pub fn decide(&self, server: &str, tool: &str, profile: Option<&str>) -> Decision {
        // A rule may give the tool's sanitised name, as it appears in tool names.
        let sanitized = needs_sanitizing(tool).then(|| naming::sanitize(tool));
        let sanitized = sanitized.as_deref();
        if let Some(filter) = self.filters.get(server) {
            if let Some(rule) = filter
                .disabled
                .get(tool)
                .or_else(|| sanitized.and_then(|s| filter.disabled.get(s)))
            {
                return Decision::Deny(rule.clone());
            }
            if let Some((names, rule)) = &filter.enabled
                && !names.contains(tool)
                && !sanitized.is_some_and(|s| names.contains(s))
            {
                return Decision::Deny(rule.clone());
            }
        }
        let base = self.base.decide(server, tool, sanitized);
        let Some(profile) = profile else {
            return match base {
                Some((mode, rule)) => Decision::new(mode, rule),
                None => Decision::Allow(self.implicit.clone()),
            };
        };
        let Some(set) = self.profiles.get(profile) else {
            let names: Vec<&str> = self.profiles().collect();
            return Decision::Deny(Rc::new(Rule {
                source: format!("profile `{profile}`"),
                text: String::new(),
                origin: format!(
                    "the configuration (no such profile; configured: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            }));
        };
        let narrowed = set.decide(server, tool, sanitized);
        // The stricter of the two; on a tie, the rule written for the profile
        // says more about why (an explicit rule before the implicit default).
        let decided = match (base, narrowed) {
            (Some(b), Some(p)) => Some(if b.0 > p.0 { b } else { p }),
            (b, p) => p.or(b),
        };
        match decided {
            Some((mode, rule)) => Decision::new(mode, rule),
            None => Decision::Allow(self.implicit.clone()),
        }
    }

    /// Warnings for the rules that name a tool of `server` that is not in its
    /// list `tools` (the server's own tool names), each naming the rule. Checked
    /// when a server's list arrives: tools are not known before.
    pub fn unknown_tools(&self, server: &str, tools: &[&str]) -> Vec<String> {
        let Some(named) = self.named_tools.get(server) else {
            return Vec::new();
        };
        let listed: BTreeSet<&str> = tools.iter().copied().collect();
        let sanitized: BTreeSet<String> = tools
            .iter()
            .filter(|t| needs_sanitizing(t))
            .map(|t| naming::sanitize(t))
            .collect();
        let mut warnings = Vec::new();
        for (tool, rule) in named {
            if listed.contains(tool.as_str()) || sanitized.contains(tool) {
                continue;
            }
            let mut some: Vec<&str> = tools.iter().copied().take(8).collect();
            if tools.len() > some.len() {
                some.push("…");
            }
            warnings.push(format!(
                "permission rule {rule} names tool `{tool}`, but server `{server}` lists no such tool \
                 (it lists: {}); the rule has no effect",
                if some.is_empty() {
                    "nothing".to_string()
                } else {
                    some.join(", ")
                }
            ));
        }
        warnings
    }
}

/// Whether [`naming::sanitize`] would change `tool`.
fn needs_sanitizing(tool: &str) -> bool {
    !tool
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
