//! Turning the guest's endpoint description into something the host can open.
//!
//! The guest passes configuration text as templates: the text as written, split
//! into literals and `${VAR}` references (the grammar is the guest's,
//! `guest/src/variables.rs`). They are resolved here, in the host, by looking
//! each name up, so secrets kept in the environment never enter the sandbox. The child's environment is built here too: a small
//! allowlist of the ambient environment plus the server's explicit `env`, so
//! credentials in the host's environment never leak to a server by accident.

use std::path::PathBuf;

use crate::bindings::wit;

/// Ambient variables every child gets (when set): enough to find programs, a
/// home directory and a locale, and nothing credential-shaped.
const AMBIENT_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TEMP",
    "TMP",
    "TZ",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
];

/// A stdio server with every reference resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StdioSpec {
    pub command: String,
    pub args: Vec<String>,
    /// The complete environment of the child.
    pub env: Vec<(String, String)>,
    /// Where it runs: as configured here; once opened, absolute (see `super::places`).
    pub cwd: Option<PathBuf>,
    /// The grants, paths resolved; unconfined when absent.
    pub sandbox: Option<SandboxSpec>,
}

/// The grants of one server, paths resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxSpec {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub network: Network,
    pub require: bool,
}

/// A sandboxed server's TCP access (the WIT `network-grant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Network {
    None,
    All,
    Ports { connect: Vec<u16>, bind: Vec<u16> },
}

/// Resolves a stdio endpoint against `lookup` (the host's environment in production).
pub(crate) fn resolve_stdio(
    ep: &wit::StdioEndpoint,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<StdioSpec, String> {
    let command = resolve(&ep.command, "command", lookup)?;
    if command.trim().is_empty() {
        return Err("`command` is empty".into());
    }
    let args = ep
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| resolve(a, &format!("args[{i}]"), lookup))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = ep
        .cwd
        .as_ref()
        .map(|c| resolve(c, "cwd", lookup).map(PathBuf::from))
        .transpose()?;

    // A sandbox's `env` names the only ambient variables that pass.
    let ambient: Vec<&str> = match ep.sandbox.as_ref().and_then(|s| s.env.as_ref()) {
        Some(names) => names.iter().map(String::as_str).collect(),
        None => AMBIENT_ALLOWLIST.to_vec(),
    };
    let mut env: Vec<(String, String)> = ambient
        .into_iter()
        .filter_map(|name| lookup(name).map(|v| (name.to_owned(), v)))
        .collect();
    for pair in &ep.env {
        let value = resolve(&pair.value, &format!("env.{}", pair.name), lookup)?;
        // Explicit configuration wins over the ambient allowlist.
        env.retain(|(name, _)| name != &pair.name);
        env.push((pair.name.clone(), value));
    }
    let sandbox = ep
        .sandbox
        .as_ref()
        .map(|s| {
            let paths = |key: &str, list: &[wit::Template]| {
                list.iter()
                    .enumerate()
                    .map(|(i, p)| {
                        resolve(p, &format!("sandbox.{key}[{i}]"), lookup).map(PathBuf::from)
                    })
                    .collect::<Result<Vec<_>, _>>()
            };
            Ok::<_, String>(SandboxSpec {
                read: paths("read", &s.read)?,
                write: paths("write", &s.write)?,
                network: match &s.network {
                    wit::NetworkGrant::None => Network::None,
                    wit::NetworkGrant::All => Network::All,
                    wit::NetworkGrant::Ports(p) => Network::Ports {
                        connect: p.connect.clone(),
                        bind: p.bind.clone(),
                    },
                },
                require: s.require,
            })
        })
        .transpose()?;
    Ok(StdioSpec {
        command,
        args,
        env,
        cwd,
        sandbox,
    })
}

/// A remote server with every reference resolved.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct HttpSpec {
    pub url: String,
    /// Extra request headers, in configuration order.
    pub headers: Vec<(String, String)>,
    /// The configured URL's path and query with every `${VAR}` reference
    /// replaced by a placeholder ([`placeholder`]), when the URL's scheme and
    /// authority are written out (not themselves a reference): what the guest
    /// sees of the URL. `None` when the origin comes from a reference.
    pub path_with_placeholders: Option<String>,
    /// The value each placeholder stands for, by its number.
    pub values: Vec<String>,
}

/// Header values are usually credentials, and URLs may hold them: never print them.
impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpSpec")
            .field("headers", &names)
            .field("path_with_placeholders", &self.path_with_placeholders)
            .finish_non_exhaustive()
    }
}

/// The placeholder for the `n`th reference of a URL, in the guest's stand-in URL.
pub(crate) fn placeholder(n: usize) -> String {
    format!("mcpbox-ref-{n}")
}

/// Resolves an HTTP or SSE endpoint against `lookup`: `${VAR}` in the URL and
/// in header values. The resolved values stay in the host.
pub(crate) fn resolve_http(
    ep: &wit::HttpEndpoint,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<HttpSpec, String> {
    let pieces = pieces(&ep.url, "url", lookup)?;
    let mut url = String::new();
    let mut tokenized = String::new();
    let mut values = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => {
                url.push_str(t);
                tokenized.push_str(t);
            }
            Piece::Value(v) => {
                url.push_str(&v);
                tokenized.push_str(&placeholder(values.len()));
                values.push(v);
            }
        }
    }
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        // As configured: a resolved value may be a secret.
        return Err(format!(
            "`url` must start with http:// or https:// (got {:?})",
            ep.url.configured
        ));
    }
    let headers = ep
        .headers
        .iter()
        .map(|p| {
            let value = resolve(&p.value, &format!("headers.{}", p.name), lookup)?;
            Ok((p.name.clone(), value))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(HttpSpec {
        url,
        headers,
        path_with_placeholders: path_and_query(&tokenized),
        values,
    })
}

/// The path and query of URL text whose scheme and authority are written out
/// (`/` for an empty path), the fragment left off.
fn path_and_query(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let rest = ["http://", "https://"]
        .iter()
        .find_map(|scheme| lower.starts_with(scheme).then(|| &text[scheme.len()..]))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let rest = &rest[end..];
    let rest = rest.split('#').next().unwrap_or_default();
    Some(match rest {
        "" => "/".to_owned(),
        r if r.starts_with('?') => format!("/{r}"),
        r => r.to_owned(),
    })
}

/// A piece of configured text: written out, or the value of a reference.
enum Piece<'a> {
    Text(&'a str),
    Value(String),
}

/// The parts of `template` with each reference resolved. `field` names the
/// place in error messages.
fn pieces<'a>(
    template: &'a wit::Template,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Piece<'a>>, String> {
    template
        .parts
        .iter()
        .map(|part| match part {
            wit::TemplatePart::Literal(text) => Ok(Piece::Text(text)),
            wit::TemplatePart::Variable(reference) => {
                let name = &reference.name;
                // Like the shell: `:-` also replaces a variable that is set but empty.
                let value = match &reference.fallback {
                    Some(fallback) => Some(
                        lookup(name)
                            .filter(|v| !v.is_empty())
                            .unwrap_or_else(|| fallback.clone()),
                    ),
                    None => lookup(name),
                };
                value.map(Piece::Value).ok_or_else(|| {
                    format!(
                        "`{field}` uses ${{{name}}}, which is not set; set {name} in the environment or write ${{{name}:-default}}"
                    )
                })
            }
        })
        .collect()
}

/// `template` with every reference resolved. `field` names the place in error
/// messages.
pub(crate) fn resolve(
    template: &wit::Template,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.configured.len());
    for piece in pieces(template, field, lookup)? {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Value(v) => out.push_str(&v),
        }
    }
    Ok(out)
}

/// `text` split as the guest splits it (`guest/src/variables.rs`), for tests
/// that build endpoints by hand: the host itself parses no `${VAR}`.
#[cfg(test)]
pub(crate) fn parse(text: &str, field: &str) -> Result<wit::Template, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        parts.push(wit::TemplatePart::Literal(rest[..start].to_owned()));
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`{field}` has an unclosed `${{` in {text:?}"));
        };
        let reference = &after[..end];
        let (name, fallback) = match reference.split_once(":-") {
            Some((name, fallback)) => (name, Some(fallback.to_owned())),
            None => (reference, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{field}` has an invalid variable reference `${{{reference}}}`"
            ));
        }
        parts.push(wit::TemplatePart::Variable(wit::VariableReference {
            name: name.to_owned(),
            fallback,
        }));
        rest = &after[end + 1..];
    }
    parts.push(wit::TemplatePart::Literal(rest.to_owned()));
    Ok(wit::Template {
        configured: text.to_owned(),
        parts,
    })
}

/// An HTTP endpoint as the guest would hand it over, for tests.
#[cfg(test)]
pub(crate) fn http_endpoint(url: &str, headers: &[(&str, &str)]) -> wit::HttpEndpoint {
    let template = |text: &str| parse(text, "test").unwrap();
    wit::HttpEndpoint {
        url: template(url),
        headers: headers
            .iter()
            .map(|(name, value)| wit::TemplatePair {
                name: (*name).to_owned(),
                value: template(value),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` resolved as a template the guest split.
    fn interpolate(
        text: &str,
        field: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        resolve(&parse(text, field)?, field, lookup)
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "API_TOKEN" => Some("secret".into()),
            "EMPTY" => Some(String::new()),
            "PATH" => Some("/bin".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_references_and_defaults() {
        assert_eq!(interpolate("${HOME}/x", "f", &env).unwrap(), "/home/me/x");
        assert_eq!(interpolate("a${NOPE:-b}c", "f", &env).unwrap(), "abc");
        assert_eq!(interpolate("${EMPTY:-d}", "f", &env).unwrap(), "d");
        assert_eq!(interpolate("[${EMPTY}]", "f", &env).unwrap(), "[]");
        assert_eq!(
            interpolate("$HOME ${HOME}", "f", &env).unwrap(),
            "$HOME /home/me"
        );
        assert_eq!(interpolate("no refs", "f", &env).unwrap(), "no refs");
    }

    #[test]
    fn unset_variable_is_an_error_naming_field_and_variable() {
        let err = interpolate("Bearer ${GH_TOKEN}", "headers.Authorization", &env).unwrap_err();
        assert!(err.contains("headers.Authorization"), "{err}");
        assert!(err.contains("${GH_TOKEN}"), "{err}");
        assert!(
            interpolate("${OOPS", "args[0]", &env)
                .unwrap_err()
                .contains("unclosed")
        );
        assert!(
            interpolate("${A B}", "args[0]", &env)
                .unwrap_err()
                .contains("invalid")
        );
    }

    #[test]
    fn http_endpoints_resolve_url_and_headers() {
        let ep = http_endpoint(
            "http://127.0.0.1:${PORT:-8080}/mcp",
            &[("Authorization", "Bearer ${API_TOKEN}")],
        );
        let spec = resolve_http(&ep, &env).unwrap();
        assert_eq!(spec.url, "http://127.0.0.1:8080/mcp");
        assert_eq!(spec.path_with_placeholders.as_deref(), Some("/mcp"));
        assert_eq!(spec.values, vec!["8080"]);
        assert_eq!(
            spec.headers,
            vec![("Authorization".into(), "Bearer secret".into())]
        );
        assert!(
            !format!("{spec:?}").contains("secret"),
            "Debug hides header values"
        );
        let missing = http_endpoint("https://x", &[("X-Key", "${NOPE}")]);
        assert!(
            resolve_http(&missing, &env)
                .unwrap_err()
                .contains("headers.X-Key")
        );
        let ftp = http_endpoint("ftp://x", &[]);
        assert!(resolve_http(&ftp, &env).unwrap_err().contains("http://"));
    }

    #[test]
    fn the_guest_sees_placeholders_for_references_in_the_url() {
        let ep = |url: &str| http_endpoint(url, &[]);
        let spec = resolve_http(
            &ep("https://h.example/api/${API_TOKEN}/mcp?key=${API_TOKEN}&x=1#f"),
            &env,
        )
        .unwrap();
        assert_eq!(
            spec.url,
            "https://h.example/api/secret/mcp?key=secret&x=1#f"
        );
        assert_eq!(
            spec.path_with_placeholders.as_deref(),
            Some("/api/mcpbox-ref-0/mcp?key=mcpbox-ref-1&x=1")
        );
        assert_eq!(spec.values, vec!["secret", "secret"]);
        assert_eq!(
            resolve_http(&ep("http://${HOME}:1"), &env)
                .unwrap()
                .path_with_placeholders
                .as_deref(),
            Some("/")
        );
        assert_eq!(
            resolve_http(&ep("http://h?q=${API_TOKEN}"), &env)
                .unwrap()
                .path_with_placeholders
                .as_deref(),
            Some("/?q=mcpbox-ref-0")
        );
        // The origin itself from a variable: nothing of the URL is shown.
        let spec = resolve_http(&ep("${URL:-http://x.example/secret-path}"), &env).unwrap();
        assert_eq!(spec.url, "http://x.example/secret-path");
        assert_eq!(spec.path_with_placeholders, None);
        // A URL that does not resolve to http(s) is named as configured.
        let err = resolve_http(&ep("${API_TOKEN}"), &env).unwrap_err();
        assert!(
            err.contains("${API_TOKEN}") && !err.contains("secret"),
            "{err}"
        );
    }

    #[test]
    fn child_env_is_allowlist_plus_explicit() {
        let template = |text: &str| parse(text, "test").unwrap();
        let ep = wit::StdioEndpoint {
            command: template("srv"),
            args: vec![template("--home=${HOME}")],
            env: vec![
                wit::TemplatePair {
                    name: "TOKEN".into(),
                    value: template("${API_TOKEN}"),
                },
                wit::TemplatePair {
                    name: "PATH".into(),
                    value: template("/opt/bin"),
                },
            ],
            cwd: None,
            sandbox: None,
        };
        let spec = resolve_stdio(&ep, &env).unwrap();
        assert_eq!(spec.args, vec!["--home=/home/me"]);
        // The ambient API_TOKEN is not passed through by itself…
        assert!(!spec.env.iter().any(|(n, _)| n == "API_TOKEN"));
        // …only where the configuration asks for it, and explicit values win.
        assert!(spec.env.contains(&("TOKEN".into(), "secret".into())));
        assert!(spec.env.contains(&("PATH".into(), "/opt/bin".into())));
        assert!(spec.env.contains(&("HOME".into(), "/home/me".into())));
        assert_eq!(spec.env.iter().filter(|(n, _)| n == "PATH").count(), 1);
    }
}
