//! `${VAR}` and `${VAR:-default}` references in configuration text: the grammar,
//! parsed here and nowhere else.
//!
//! Configuration values that reach the world (a server's command line, `env`,
//! `cwd`, sandbox paths, URL and headers, `audit.file`) may refer to the host's
//! environment. The guest never resolves them: a value may be a secret, and
//! nothing handed to the guest holds one. So the guest splits the text into
//! written parts and references ([`parse`]), hands the parts across the WIT
//! (`types.template`), and a host only looks each name up and joins the pieces
//! (`host/src/transport/endpoint.rs`, `js/src/endpoint.js`). The stock component
//! is the one exception: it writes its HTTP requests itself, so it resolves the
//! parts from its own environment (`stock/references.rs`).
//!
//! The grammar: `${NAME}` with `NAME` made of ASCII letters, digits and `_`;
//! `${NAME:-default}` uses `default` when the variable is unset or empty (as the
//! shell does); a `$` not followed by `{` is kept as written. An unclosed `${`
//! and an invalid name are errors naming the field.

use crate::prelude::*;

/// A piece of configured text: written out, or a reference to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text as written.
    Literal(String),
    /// `${name}`, or `${name:-fallback}` with a fallback.
    Variable {
        /// The environment variable's name.
        name: String,
        /// Used when the variable is unset or empty.
        fallback: Option<String>,
    },
}

/// Splits `text` into written text and references; `field` names the place in
/// errors (`args[0]`, `headers.Authorization`).
pub fn parse(text: &str, field: &str) -> Result<Vec<Part>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            out.push(Part::Literal(rest[..start].to_owned()));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`{field}` has an unclosed `${{` in {text:?}"));
        };
        let reference = &after[..end];
        let (name, fallback) = match reference.split_once(":-") {
            Some((name, fallback)) => (name, Some(fallback)),
            None => (reference, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{field}` has an invalid variable reference `${{{reference}}}`"
            ));
        }
        out.push(Part::Variable {
            name: name.to_owned(),
            fallback: fallback.map(str::to_owned),
        });
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Literal(rest.to_owned()));
    }
    Ok(out)
}

/// The value of one reference, given the variable's value in the environment:
/// `:-` also replaces a variable that is set but empty. `None` when it is unset
/// and has no fallback.
pub fn value_of(value: Option<String>, fallback: Option<&str>) -> Option<String> {
    match fallback {
        Some(fallback) => Some(
            value
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| fallback.to_owned()),
        ),
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, fallback: Option<&str>) -> Part {
        Part::Variable {
            name: name.into(),
            fallback: fallback.map(Into::into),
        }
    }

    fn lit(text: &str) -> Part {
        Part::Literal(text.into())
    }

    #[test]
    fn text_splits_into_literals_and_references() {
        assert_eq!(
            parse("${HOME}/x", "f").unwrap(),
            vec![var("HOME", None), lit("/x")]
        );
        assert_eq!(
            parse("a${NOPE:-b}c", "f").unwrap(),
            vec![lit("a"), var("NOPE", Some("b")), lit("c")]
        );
        assert_eq!(
            parse("${URL:-http://x.example/p}", "f").unwrap(),
            vec![var("URL", Some("http://x.example/p"))]
        );
        assert_eq!(parse("${E:-}", "f").unwrap(), vec![var("E", Some(""))]);
        assert_eq!(
            parse("$HOME ${HOME}", "f").unwrap(),
            vec![lit("$HOME "), var("HOME", None)]
        );
        assert_eq!(parse("no refs", "f").unwrap(), vec![lit("no refs")]);
        assert_eq!(parse("", "f").unwrap(), vec![]);
    }

    #[test]
    fn a_malformed_reference_names_the_field() {
        let e = parse("${OOPS", "args[0]").unwrap_err();
        assert!(e.contains("`args[0]`") && e.contains("unclosed"), "{e}");
        let e = parse("${A B}", "headers.X").unwrap_err();
        assert!(e.contains("`headers.X`") && e.contains("invalid"), "{e}");
        let e = parse("${A-B}", "url").unwrap_err();
        assert!(e.contains("invalid variable reference `${A-B}`"), "{e}");
        assert!(parse("${}", "url").unwrap_err().contains("invalid"));
        assert!(parse("${:-x}", "url").unwrap_err().contains("invalid"));
    }

    #[test]
    fn a_fallback_replaces_an_unset_or_empty_variable() {
        assert_eq!(value_of(None, Some("d")).as_deref(), Some("d"));
        assert_eq!(
            value_of(Some(String::new()), Some("d")).as_deref(),
            Some("d")
        );
        assert_eq!(value_of(Some("v".into()), Some("d")).as_deref(), Some("v"));
        assert_eq!(value_of(Some(String::new()), None).as_deref(), Some(""));
        assert_eq!(value_of(None, None), None);
    }
}
