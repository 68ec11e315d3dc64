//! Names fitted to each provider's rules, reversibly.
//!
//! - OpenAI: "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a
//!   maximum length of 64" (`FunctionDefinition.name` in the openai SDK); Anthropic's
//!   tool names are `^[a-zA-Z0-9_-]{1,64}$` (Messages API reference, `tools[].name`).
//! - Gemini: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or
//!   contain underscores, dots, colons and dashes" (`FunctionDeclaration.name` in the
//!   google-genai SDK). The SDK gives 128 as the maximum length; the Gemini API
//!   reference has said 64, which is what is used here (it fits both). Its parameter
//!   names "must start with a letter or an underscore and must only contain chars
//!   a-z, A-Z, 0-9, or underscores with a maximum length of 64"
//!   (`FunctionDeclaration.parameters`): [`fit_parameter_names`].
//! - MCP: names are what the server said.
//!
//! Registry names (`naming.rs`) are already `[A-Za-z0-9_-]{1,64}` and start with
//! `mcp__`, so they pass unchanged; a name that does not fit is sanitised (each
//! character outside the alphabet becomes `_`, as `naming::sanitize` does), given a
//! leading `_` where the first character may not start a name, and shortened with
//! `naming::shorten`'s hash of the whole original name. Each change is a
//! [`NoteKind::Renamed`] note.
//!
//! Fitting is not one-to-one (`a.b` and `a_b` both become `a_b`), so a batch is
//! fitted together ([`fit_all`]): of the names that meet, one that fitted unchanged
//! keeps it, else the one whose original sorts first, and the others get a hash
//! suffix of their original name ([`NoteKind::Collision`]) — the same outcome in
//! whatever order the tools come. The caller keeps the map back (`Adaptation::registry_name`).

use crate::prelude::*;
use alloc::collections::{BTreeMap, BTreeSet};

use super::{Dialect, Note, NoteKind};
use crate::naming;

/// What characters a name may hold and start with.
struct Rule {
    inner: fn(char) -> bool,
    first: fn(char) -> bool,
}

fn rule(dialect: Dialect) -> Option<Rule> {
    match dialect {
        Dialect::Mcp => None,
        Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Anthropic => Some(Rule {
            inner: |c| c.is_ascii_alphanumeric() || c == '_' || c == '-',
            first: |c| c.is_ascii_alphanumeric() || c == '_' || c == '-',
        }),
        Dialect::Gemini => Some(Rule {
            inner: |c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'),
            first: |c| c.is_ascii_alphabetic() || c == '_',
        }),
    }
}

/// Gemini's parameter names.
const PARAMETER: Rule = Rule {
    inner: |c| c.is_ascii_alphanumeric() || c == '_',
    first: |c| c.is_ascii_alphabetic() || c == '_',
};

/// `name` fitted to `rule`, or `None` when it already fits.
fn fit(rule: &Rule, name: &str) -> Option<String> {
    let fits = !name.is_empty()
        && name.len() <= naming::MAX_LEN
        && name.chars().next().is_some_and(rule.first)
        && name.chars().all(rule.inner);
    if fits {
        return None;
    }
    let mut out: String = name
        .chars()
        .map(|c| if (rule.inner)(c) { c } else { '_' })
        .collect();
    if !out.chars().next().is_some_and(rule.first) {
        out.insert(0, '_');
    }
    if out.len() > naming::MAX_LEN {
        out = naming::shorten(&out, name.as_bytes());
    }
    Some(out)
}

/// `fitted` made distinct from `taken` with a hash of `original` (and, should that
/// meet too, of `original` and a counter), within 64 characters.
fn distinct(fitted: &str, original: &str, taken: &BTreeSet<String>) -> String {
    let mut input = original.as_bytes().to_vec();
    let mut round = 0u32;
    loop {
        let candidate = if fitted.len() + 9 <= naming::MAX_LEN {
            let hash = naming::fnv1a64(&input);
            let folded = ((hash >> 32) ^ (hash & 0xffff_ffff)) as u32;
            format!("{fitted}_{folded:08x}")
        } else {
            naming::shorten(fitted, &input)
        };
        if !taken.contains(&candidate) {
            return candidate;
        }
        round += 1;
        input.truncate(original.len());
        input.extend_from_slice(&round.to_le_bytes());
    }
}

/// One tool name fitted alone, with its note.
pub(crate) fn fit_tool_name(dialect: Dialect, name: &str) -> (String, Vec<Note>) {
    match rule(dialect).and_then(|r| fit(&r, name)) {
        None => (name.to_string(), Vec::new()),
        Some(fitted) => {
            let note = renamed("/name", name, &fitted, dialect);
            (fitted, vec![note])
        }
    }
}

fn renamed(pointer: &str, from: &str, to: &str, dialect: Dialect) -> Note {
    Note {
        kind: NoteKind::Renamed,
        pointer: pointer.to_string(),
        lost: format!("name `{from}` is `{to}` for {dialect} (maps back)"),
    }
}

/// Every tool name fitted, collisions told apart; in the order given.
pub(crate) fn fit_all<'a>(
    dialect: Dialect,
    names: impl Iterator<Item = &'a str>,
) -> Vec<(String, Vec<Note>)> {
    let fitted: Vec<(&str, String, Vec<Note>)> = names
        .map(|n| {
            let (f, notes) = fit_tool_name(dialect, n);
            (n, f, notes)
        })
        .collect();
    // Which fitted names more than one original wants; the first original (in
    // sorted order) keeps it.
    let mut wanted: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, f, _)) in fitted.iter().enumerate() {
        wanted.entry(f.as_str()).or_default().push(i);
    }
    let mut taken: BTreeSet<String> = fitted.iter().map(|(_, f, _)| f.clone()).collect();
    let mut losers: Vec<usize> = Vec::new();
    for group in wanted.values().filter(|g| g.len() > 1) {
        let mut group = group.clone();
        // A name that fitted as it was keeps it; then the first original.
        let changed = |i: usize| fitted[i].0 != fitted[i].1;
        group.sort_by(|&a, &b| {
            changed(a)
                .cmp(&changed(b))
                .then(fitted[a].0.cmp(fitted[b].0))
                .then(a.cmp(&b))
        });
        losers.extend(group.into_iter().skip(1));
    }
    losers.sort_by(|&a, &b| fitted[a].0.cmp(fitted[b].0).then(a.cmp(&b)));
    let mut out: Vec<(String, Vec<Note>)> = fitted
        .iter()
        .map(|(_, f, notes)| (f.clone(), notes.clone()))
        .collect();
    for i in losers {
        let (original, f, _) = &fitted[i];
        let name = distinct(f, original, &taken);
        taken.insert(name.clone());
        out[i].1.push(Note {
            kind: NoteKind::Collision,
            pointer: "/name".into(),
            lost: format!(
                "`{original}` fits {dialect} as `{f}`, which another tool's name also became; it is `{name}` (maps back)"
            ),
        });
        out[i].0 = name;
    }
    out
}

/// Gemini's fitted names for an object's parameters, in the order given: (original,
/// fitted) for each that changes, collisions told apart as for tools.
pub(crate) fn fit_parameter_names<'a>(names: &[&'a str]) -> Vec<(&'a str, String)> {
    let mut taken: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    let mut out = Vec::new();
    for &name in names {
        if let Some(fitted) = fit(&PARAMETER, name) {
            let fitted = if taken.contains(&fitted) {
                distinct(&fitted, name, &taken)
            } else {
                fitted
            };
            taken.insert(fitted.clone());
            out.push((name, fitted));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_pass_unchanged() {
        for dialect in Dialect::ALL {
            let (name, notes) = fit_tool_name(dialect, "mcp__demo__echo");
            assert_eq!(name, "mcp__demo__echo");
            assert!(notes.is_empty());
        }
    }

    #[test]
    fn names_are_sanitised_shortened_and_noted() {
        let (name, notes) = fit_tool_name(Dialect::OpenAi, "get file.txt");
        assert_eq!(name, "get_file_txt");
        assert_eq!(notes[0].kind, NoteKind::Renamed);
        assert_eq!(notes[0].pointer, "/name");
        // Gemini keeps dots and colons, and wants a letter or `_` first.
        assert_eq!(fit_tool_name(Dialect::Gemini, "a.b:c").0, "a.b:c");
        assert_eq!(fit_tool_name(Dialect::Gemini, "9lives").0, "_9lives");
        assert_eq!(fit_tool_name(Dialect::OpenAi, "9lives").0, "9lives");
        assert_eq!(fit_tool_name(Dialect::OpenAi, "").0, "_");
        // MCP names are the server's.
        assert_eq!(
            fit_tool_name(Dialect::Mcp, "get file.txt").0,
            "get file.txt"
        );
        let long = "x".repeat(100);
        let (short, _) = fit_tool_name(Dialect::Anthropic, &long);
        assert_eq!(short.len(), 64);
        assert_eq!(short, naming::shorten(&long, long.as_bytes()));
    }

    #[test]
    fn collisions_resolve_the_same_in_any_order() {
        let names = ["a.b", "a_b", "a/b"];
        let forward = fit_all(Dialect::OpenAi, names.iter().copied());
        let backward = fit_all(Dialect::OpenAi, names.iter().rev().copied());
        let forward: Vec<&str> = forward.iter().map(|(n, _)| n.as_str()).collect();
        let mut backward: Vec<&str> = backward.iter().map(|(n, _)| n.as_str()).collect();
        backward.reverse();
        assert_eq!(forward, backward);
        // `a_b` already fits: it keeps its name.
        assert_eq!(forward[1], "a_b");
        let unique: BTreeSet<&str> = forward.iter().copied().collect();
        assert_eq!(unique.len(), 3);
        for n in &forward {
            assert!(n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        }
        let notes = fit_all(Dialect::OpenAi, names.iter().copied());
        assert!(notes[0].1.iter().any(|n| n.kind == NoteKind::Collision));
        assert!(notes[1].1.is_empty());
    }

    #[test]
    fn long_colliding_names_stay_within_64() {
        let a = format!("{}.a", "y".repeat(70));
        let b = format!("{}_a", "y".repeat(70));
        let out = fit_all(Dialect::Gemini, [a.as_str(), b.as_str()].into_iter());
        assert_ne!(out[0].0, out[1].0);
        assert!(out.iter().all(|(n, _)| n.len() <= 64));
    }

    #[test]
    fn parameter_names_fit_gemini() {
        let out = fit_parameter_names(&["ok", "file-path", "file_path", "$x", "1st"]);
        assert_eq!(out[0].0, "file-path");
        assert_ne!(out[0].1, "file_path");
        assert!(out[0].1.starts_with("file_path_"));
        assert_eq!(out[1], ("$x", "_x".to_string()));
        assert_eq!(out[2], ("1st", "_1st".to_string()));
    }
}
