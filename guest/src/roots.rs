//! Roots: the directories the client tells a server it may work in (MCP `roots`).
//!
//! A server that declares interest asks with `roots/list` (a request during a
//! 2025 session; an entry of an `input_required` result's `inputRequests` in
//! 2026-07-28) and the client answers with `{"roots": [{"uri": "file://…",
//! "name": …}]}`. In 2025 sessions the client also sends
//! `notifications/roots/list_changed` when they change, and the server asks again
//! (the reference filesystem server replaces its allowed directories with them).
//!
//! Where roots come from, most specific first (see [`crate::manager`]): a server
//! entry's own `roots`, the embedder's (`registry.set-roots`), the configuration's
//! top-level `roots`. A sandboxed server gets at most its grants: a root inside a
//! granted path is kept, a root that contains granted paths becomes those paths,
//! any other root is left out. The guest compares paths as written (it never sees
//! `${VAR}` values or the host's file system), so only grants written as absolute
//! paths without references can admit a root.
//!
//! This module holds what every era shares: reading roots from configuration or
//! the embedder, clipping them to a sandbox, and the `ListRootsResult`.

use crate::prelude::*;

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use serde_json::{Value, json};

use crate::config::types::kind_of;
use crate::sandbox::Sandbox;

/// One root: a `file://` URI and an optional display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// `file://` URI of a directory (or file).
    pub uri: String,
    /// A name to show for it.
    pub name: Option<String>,
}

/// What a path segment must escape in a `file://` URI (RFC 3986 `pchar`, keeping
/// `/`): controls, space and the delimiters that would end or change the path.
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

impl Root {
    /// A root for an absolute path or a `file://` URI, as a configuration or an
    /// embedder writes it. Err says what is wrong and how to write it.
    pub fn new(location: &str, name: Option<String>) -> Result<Root, String> {
        let path = if location.starts_with("file:") {
            path_of_uri(location)?
        } else {
            location.to_string()
        };
        if path.contains("${") {
            return Err(format!(
                "{location:?} holds a ${{VAR}} reference; roots go to servers in MCP messages the \
                 sandboxed guest writes, and it never sees variable values, so write the absolute \
                 path"
            ));
        }
        if path.starts_with('~') {
            return Err(format!(
                "{location:?} starts with `~`; write the absolute path (mcpbox does not expand `~`)"
            ));
        }
        if !path.starts_with('/') {
            return Err(format!(
                "{location:?} is not an absolute path or a file:// URI; write it like \
                 \"/home/me/project\" or \"file:///home/me/project\""
            ));
        }
        Ok(Root {
            uri: uri_of_path(&normalize(&path)),
            name,
        })
    }

    /// The root's path (its URI decoded).
    pub fn path(&self) -> String {
        path_of_uri(&self.uri).unwrap_or_default()
    }

    /// The root as a `ListRootsResult` item.
    pub fn to_json(&self) -> Value {
        match &self.name {
            Some(name) => json!({"uri": self.uri, "name": name}),
            None => json!({"uri": self.uri}),
        }
    }
}

/// `{"roots": [...]}`, the answer to `roots/list`.
pub fn list_result(roots: &[Root]) -> Value {
    json!({"roots": roots.iter().map(Root::to_json).collect::<Vec<_>>()})
}

/// `file://` + the path, percent-encoded.
fn uri_of_path(path: &str) -> String {
    format!("file://{}", utf8_percent_encode(path, PATH))
}

/// The path of a `file:` URI (`file:///p`, `file://localhost/p`), decoded.
fn path_of_uri(uri: &str) -> Result<String, String> {
    let rest = uri
        .strip_prefix("file://")
        .ok_or_else(|| format!("{uri:?} is not a file:// URI (roots are file:// URIs)"))?;
    let path = if rest.starts_with('/') {
        rest
    } else if let Some(after) = rest.strip_prefix("localhost") {
        after
    } else {
        return Err(format!(
            "{uri:?} names a host; a root is a local file:// URI like \"file:///home/me/project\""
        ));
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let decoded = percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| format!("{uri:?} does not decode to UTF-8"))?;
    Ok(decoded.into_owned())
}

/// `path` with `.`, `..`, repeated and trailing slashes resolved lexically.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `base` or below it (both normalized).
fn within(path: &str, base: &str) -> bool {
    base == "/"
        || path == base
        || (path.starts_with(base) && path.as_bytes().get(base.len()) == Some(&b'/'))
}

/// Reads a `roots` list from configuration: each item an absolute path or
/// `file://` URI (a string), or `{"uri" | "path": …, "name": …}`. `issue(field,
/// message)` records a problem with an item, which is left out. `None` when the
/// value is `null`.
pub fn parse_list(
    value: &Value,
    field: &str,
    issue: &mut dyn FnMut(String, String),
) -> Option<Vec<Root>> {
    let items = match value {
        Value::Null => return None,
        Value::Array(items) => items,
        other => {
            issue(
                field.into(),
                format!(
                    "must be a list of directories, like [\"/home/me/project\"] or \
                     [{{\"uri\": \"file:///home/me/project\", \"name\": \"project\"}}], but is {}; \
                     no roots are taken from it",
                    kind_of(other)
                ),
            );
            return Some(Vec::new());
        }
    };
    let mut roots = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let parsed = match item {
            Value::String(location) => Root::new(location, None),
            Value::Object(map) => {
                let location = map.get("uri").or_else(|| map.get("path"));
                let name = match map.get("name") {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(name)) => Ok(Some(name.clone())),
                    Some(other) => Err(format!(
                        "`name` must be a string, but is {}",
                        kind_of(other)
                    )),
                };
                match (location, name) {
                    (Some(Value::String(location)), Ok(name)) => Root::new(location, name),
                    (_, Err(why)) => Err(why),
                    (Some(other), _) => Err(format!(
                        "`uri` must be a string, but is {}",
                        kind_of(other)
                    )),
                    (None, _) => Err(
                        "has neither `uri` nor `path`; write {\"uri\": \"file:///…\", \"name\": \"…\"}"
                            .into(),
                    ),
                }
            }
            other => Err(format!(
                "must be a path or a {{\"uri\", \"name\"}} object, but is {}",
                kind_of(other)
            )),
        };
        match parsed {
            Ok(root) => {
                if !roots.contains(&root) {
                    roots.push(root);
                }
            }
            Err(why) => issue(at, format!("{why}; this root is left out")),
        }
    }
    Some(roots)
}

/// The embedder's roots, each an absolute path or a `file://` URI with an
/// optional name. Err names the first that is neither, by position.
pub fn from_embedder(
    roots: impl IntoIterator<Item = (String, Option<String>)>,
) -> Result<Vec<Root>, String> {
    let mut out: Vec<Root> = Vec::new();
    for (i, (location, name)) in roots.into_iter().enumerate() {
        let root = Root::new(&location, name).map_err(|why| format!("root {i}: {why}"))?;
        if !out.contains(&root) {
            out.push(root);
        }
    }
    Ok(out)
}

/// `roots` clipped to what `sandbox` grants (read or write): a root inside a
/// grant stays; a grant inside a root becomes a root (with the root's name);
/// nothing else passes. Grants that are not absolute paths without `${VAR}`
/// references cannot be compared by the guest and admit nothing.
pub fn clip(roots: &[Root], sandbox: Option<&Sandbox>) -> Vec<Root> {
    let Some(sandbox) = sandbox else {
        return roots.to_vec();
    };
    let grants: Vec<String> = sandbox
        .read
        .iter()
        .chain(&sandbox.write)
        .filter(|g| g.starts_with('/') && !g.contains("${"))
        .map(|g| normalize(g))
        .collect();
    let mut clipped: Vec<Root> = Vec::new();
    let mut push = |root: Root| {
        if !clipped.contains(&root) {
            clipped.push(root);
        }
    };
    for root in roots {
        let path = normalize(&root.path());
        if grants.iter().any(|g| within(&path, g)) {
            push(root.clone());
            continue;
        }
        for grant in grants.iter().filter(|g| within(g, &path)) {
            push(Root {
                uri: uri_of_path(grant),
                name: root.name.clone(),
            });
        }
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Network;

    fn sandbox(read: &[&str], write: &[&str]) -> Sandbox {
        Sandbox {
            read: read.iter().map(|s| s.to_string()).collect(),
            write: write.iter().map(|s| s.to_string()).collect(),
            network: Network::None,
            env: None,
            require: true,
        }
    }

    fn root(path: &str) -> Root {
        Root::new(path, None).unwrap()
    }

    #[test]
    fn paths_and_uris_become_file_uris() {
        assert_eq!(root("/home/me/proj").uri, "file:///home/me/proj");
        assert_eq!(root("/home/me/proj/").uri, "file:///home/me/proj");
        assert_eq!(root("/a/./b/../c").uri, "file:///a/c");
        assert_eq!(root("/my docs/#1").uri, "file:///my%20docs/%231");
        assert_eq!(root("/my docs/#1").path(), "/my docs/#1");
        assert_eq!(root("/héllo").uri, "file:///h%C3%A9llo");
        assert_eq!(root("file:///my%20docs").path(), "/my docs");
        assert_eq!(root("file://localhost/srv").uri, "file:///srv");
    }

    #[test]
    fn what_the_guest_cannot_resolve_is_refused_with_the_fix() {
        for (bad, says) in [
            ("project", "absolute path"),
            ("./project", "absolute path"),
            ("~/project", "`~`"),
            ("${HOME}/project", "${VAR}"),
            ("https://example.com/x", "absolute path"),
            ("file://server/share", "names a host"),
        ] {
            let e = Root::new(bad, None).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_configuration_list_keeps_the_good_items_and_names_the_bad() {
        let mut issues = Vec::new();
        let list = json!(["/a", {"uri": "file:///b", "name": "B"}, {"path": "/c"}, 5, {"name": "x"}, "rel", "/a"]);
        let roots = parse_list(&list, "roots", &mut |f, m| issues.push((f, m))).unwrap();
        assert_eq!(
            roots,
            vec![
                root("/a"),
                Root::new("/b", Some("B".into())).unwrap(),
                root("/c")
            ]
        );
        let fields: Vec<&str> = issues.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["roots[3]", "roots[4]", "roots[5]"]);
        assert!(
            issues[1].1.contains("neither `uri` nor `path`"),
            "{issues:?}"
        );
        let mut issues = Vec::new();
        assert_eq!(
            parse_list(&json!("/a"), "roots", &mut |f, m| issues.push((f, m))),
            Some(Vec::new())
        );
        assert!(issues[0].1.contains("must be a list"));
        assert_eq!(parse_list(&Value::Null, "roots", &mut |_, _| {}), None);
    }

    #[test]
    fn a_sandbox_clips_roots_to_its_grants() {
        let roots = vec![
            root("/home/me/notes/inbox"),
            Root::new("/home/me", Some("home".into())).unwrap(),
            root("/etc"),
            root("/home/me/notesbook"),
        ];
        let s = sandbox(&["/home/me/notes", "${HOME}/other", "rel"], &["/tmp/out"]);
        let clipped = clip(&roots, Some(&s));
        assert_eq!(
            clipped,
            vec![
                root("/home/me/notes/inbox"),
                Root::new("/home/me/notes", Some("home".into())).unwrap(),
            ]
        );
        // Unconfined: as given.
        assert_eq!(clip(&roots, None), roots);
        // A root above a write grant.
        assert_eq!(clip(&[root("/tmp")], Some(&s)), vec![root("/tmp/out")]);
    }

    #[test]
    fn the_answer_has_the_spec_shape() {
        let roots = [root("/a"), Root::new("/b", Some("B".into())).unwrap()];
        assert_eq!(
            list_result(&roots),
            json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "B"}]})
        );
    }
}
