//! Credentials written inline in a client's file become `${VAR}` references.
//!
//! `mcpbox import` never copies a secret in clear into a new file, prints it, or
//! returns it: the value is replaced by a reference to an environment variable,
//! and a [`Secret`] names the variable to set (mcpbox's host resolves it when it
//! starts the server; the value never enters the sandbox either).
//!
//! What counts as inline credential:
//!
//! - an `env` value or header whose **name** has a word `KEY`, `APIKEY`, `TOKEN`,
//!   `SECRET`, `PASSWORD`, `PASSWD`, `PASS`, `CREDENTIAL(S)`, `AUTH`,
//!   `AUTHORIZATION`, `PAT`, `COOKIE` or `SIGNATURE`, or a word ending in `TOKEN`,
//!   `SECRET`, `APIKEY`, `ACCESSKEY`, `SECRETKEY` or `PASSWORD` (words are split at
//!   `_`, `-` and lower-to-upper case changes: `apiKey`, `X-API-Key`,
//!   `GITHUB_PERSONAL_ACCESS_TOKEN`);
//! - the `Authorization`, `Proxy-Authorization` and `Cookie` headers (the scheme,
//!   `Bearer ` or `Basic `, is kept: `Bearer ${GITHUB_TOKEN}`);
//! - a URL's password (`https://user:pass@host`) and query parameters with such a
//!   name (`?key=…`, `?api_key=…`, `?access_token=…`, `?sig=…`);
//! - an argument `--api-key=…`, or the argument after `--api-key`;
//! - anywhere in those fields and in `args`, a value **shaped** like a known token
//!   (`ghp_…`, `github_pat_…`, `glpat-…`, `sk-…`, `xoxb-…`, `AKIA…`, `AIza…`,
//!   `npm_…`, `hf_…`, a JWT `eyJ….….…`).
//!
//! A value that already holds a `${…}` reference, or is empty, is left as it is.
//!
//! The variable is the `env` name itself (`GITHUB_TOKEN` → `${GITHUB_TOKEN}`), or
//! the server's name and the field's (`brave` + `X-API-Key` → `BRAVE_API_KEY`;
//! `Authorization` → `BRAVE_TOKEN`). When two servers had different values under
//! the same variable name, the later one's gets the server's name in front, so one
//! variable never stands for two secrets.

use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Server, Transport};

/// A credential that was inline and is now a `${VAR}` reference.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct Secret {
    /// The environment variable to set for the server (without `${}`).
    pub variable: String,
    /// Where it was: `env.API_KEY`, `headers.Authorization`, `url`, `args[3]`.
    pub field: String,
    /// The file it was written in.
    pub file: PathBuf,
    /// A hash of the value, only to tell two values apart; never shown.
    #[serde(skip)]
    digest: [u8; 32],
}

/// Never shows the digest, so nothing derived from the value reaches a log.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("variable", &self.variable)
            .field("field", &self.field)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Words of a name: split at non-alphanumerics and at lower-to-upper changes,
/// upper-cased.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_uppercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Whether a variable, header, parameter or flag name looks like it holds a
/// credential (see the module docs for the rule).
pub fn is_credential_name(name: &str) -> bool {
    words(name).iter().any(|w| {
        matches!(
            w.as_str(),
            "KEY"
                | "APIKEY"
                | "TOKEN"
                | "SECRET"
                | "PASSWORD"
                | "PASSWD"
                | "PASS"
                | "CREDENTIAL"
                | "CREDENTIALS"
                | "AUTH"
                | "AUTHORIZATION"
                | "PAT"
                | "COOKIE"
                | "SIGNATURE"
                | "SIG"
        ) || [
            "TOKEN",
            "SECRET",
            "APIKEY",
            "ACCESSKEY",
            "SECRETKEY",
            "PASSWORD",
        ]
        .iter()
        .any(|suffix| w.len() > suffix.len() && w.ends_with(suffix))
    })
}

/// Whether a value is shaped like a well-known kind of token.
pub fn looks_like_token(value: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "sk-",
        "sk_live_",
        "rk_live_",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xoxs-",
        "xapp-",
        "AIza",
        "npm_",
        "pypi-",
        "hf_",
        "shpat_",
    ];
    let value = value.trim();
    if value.len() < 16 || value.chars().any(char::is_whitespace) {
        return false;
    }
    let tokenish = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '=' | '/' | '+'))
    };
    if !tokenish(value) {
        return false;
    }
    if PREFIXES.iter().any(|p| value.starts_with(p)) {
        return true;
    }
    // AWS access key ids: AKIA or ASIA and 16 upper-case letters and digits.
    let aws = (value.starts_with("AKIA") || value.starts_with("ASIA"))
        && value.len() == 20
        && value[4..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    // A JWT: three base64url parts, the first a JSON object ("eyJ" is `{"`).
    let jwt = value.starts_with("eyJ") && value.split('.').count() == 3;
    aws || jwt
}

fn holds_reference(value: &str) -> bool {
    value.contains("${")
}

/// `brave-search` → `BRAVE_SEARCH`: the server's part of a variable name.
pub(crate) fn variable_part(name: &str) -> String {
    let words = words(name);
    if words.is_empty() {
        "SERVER".into()
    } else {
        words.join("_")
    }
}

/// Replaces inline credentials in `transport` by references; returns what was
/// replaced. `server` names the variables that are not an `env` name; `file` is
/// where the values were written.
pub(crate) fn scrub(
    server: &str,
    file: &std::path::Path,
    transport: &mut Transport,
) -> Vec<Secret> {
    let mut found = Vec::new();
    let prefix = variable_part(server);
    let mut secret = |variable: String, field: String, value: &str| {
        found.push(Secret {
            variable,
            field,
            file: file.to_path_buf(),
            digest: Sha256::digest(value.as_bytes()).into(),
        });
    };
    match transport {
        Transport::Stdio { args, env, .. } => {
            for (name, value) in env.iter_mut() {
                if value.is_empty() || holds_reference(value) {
                    continue;
                }
                if is_credential_name(name) || looks_like_token(value) {
                    let variable = variable_part(name);
                    secret(variable.clone(), format!("env.{name}"), value);
                    *value = format!("${{{variable}}}");
                }
            }
            let mut i = 0;
            while i < args.len() {
                let arg = args[i].clone();
                let flag = arg.trim_start_matches('-');
                let is_flag = arg.starts_with('-') && !flag.is_empty();
                if is_flag && let Some((name, value)) = flag.split_once('=') {
                    if !value.is_empty()
                        && !holds_reference(value)
                        && (is_credential_name(name) || looks_like_token(value))
                    {
                        let variable = format!("{prefix}_{}", variable_part(name));
                        secret(variable.clone(), format!("args[{i}]"), value);
                        let dashes = &arg[..arg.len() - flag.len()];
                        args[i] = format!("{dashes}{name}=${{{variable}}}");
                    }
                } else if is_flag && is_credential_name(flag) {
                    if let Some(next) = args.get(i + 1).cloned()
                        && !next.starts_with('-')
                        && !next.is_empty()
                        && !holds_reference(&next)
                    {
                        let variable = format!("{prefix}_{}", variable_part(flag));
                        secret(variable.clone(), format!("args[{}]", i + 1), &next);
                        args[i + 1] = format!("${{{variable}}}");
                        i += 1;
                    }
                } else if !holds_reference(&arg) && looks_like_token(&arg) {
                    let variable = format!("{prefix}_TOKEN");
                    secret(variable.clone(), format!("args[{i}]"), &arg);
                    args[i] = format!("${{{variable}}}");
                }
                i += 1;
            }
        }
        Transport::Http { url, headers } | Transport::Sse { url, headers } => {
            for (name, value) in headers.iter_mut() {
                if value.is_empty() || holds_reference(value) {
                    continue;
                }
                let lower = name.to_ascii_lowercase();
                let whole = matches!(
                    lower.as_str(),
                    "authorization" | "proxy-authorization" | "cookie"
                );
                if !(whole || is_credential_name(name) || looks_like_token(value)) {
                    continue;
                }
                let variable = if lower.ends_with("authorization") {
                    format!("{prefix}_TOKEN")
                } else {
                    let part = variable_part(name);
                    let part = part.strip_prefix("X_").unwrap_or(&part).to_string();
                    format!("{prefix}_{part}")
                };
                secret(variable.clone(), format!("headers.{name}"), value);
                // Keep the scheme: "Bearer abc" → "Bearer ${VAR}".
                let scheme = match value.split_once(' ') {
                    Some((scheme, rest))
                        if lower.ends_with("authorization")
                            && !rest.trim().is_empty()
                            && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
                    {
                        format!("{scheme} ")
                    }
                    _ => String::new(),
                };
                *value = format!("{scheme}${{{variable}}}");
            }
            let (scrubbed, replaced) = scrub_url(url, &prefix);
            for (variable, value) in replaced {
                secret(variable, "url".into(), &value);
            }
            *url = scrubbed;
        }
    }
    found
}

/// Replaces a URL's password and credential query values by references.
///
/// The URL is taken apart as text rather than with the `url` crate, which would
/// percent-encode the `${…}` written into it.
fn scrub_url(url: &str, prefix: &str) -> (String, Vec<(String, String)>) {
    let mut replaced = Vec::new();
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b.to_string(), Some(q)),
        None => (before_fragment.to_string(), None),
    };
    let mut base = base;
    if let Some(scheme_end) = base.find("://") {
        let authority_start = scheme_end + 3;
        let authority_end = base[authority_start..]
            .find('/')
            .map_or(base.len(), |i| authority_start + i);
        let authority = base[authority_start..authority_end].to_string();
        if let Some((userinfo, host)) = authority.rsplit_once('@')
            && let Some((user, password)) = userinfo.split_once(':')
            && !password.is_empty()
            && !holds_reference(password)
        {
            let variable = format!("{prefix}_PASSWORD");
            replaced.push((variable.clone(), password.to_string()));
            base = format!(
                "{}{user}:${{{variable}}}@{host}{}",
                &base[..authority_start],
                &base[authority_end..]
            );
        }
    }
    let mut out = base;
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((name, value))
                    if !value.is_empty()
                        && !holds_reference(value)
                        && (is_credential_name(name) || looks_like_token(value)) =>
                {
                    let variable = format!("{prefix}_{}", variable_part(name));
                    replaced.push((variable.clone(), value.to_string()));
                    format!("{name}=${{{variable}}}")
                }
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    (out, replaced)
}

/// Gives a variable that two servers used for different values a distinct name
/// in the later server (its name in front), so no variable stands for two secrets.
pub(crate) fn separate_variables(servers: &mut [Server]) {
    let mut first: Vec<(String, [u8; 32])> = Vec::new();
    for server in servers.iter_mut() {
        let prefix = variable_part(&server.name);
        for i in 0..server.secrets.len() {
            let (variable, digest) = (server.secrets[i].variable.clone(), server.secrets[i].digest);
            match first.iter().find(|(v, _)| *v == variable) {
                None => first.push((variable, digest)),
                Some((_, d)) if *d == digest => {}
                Some(_) => {
                    let mut renamed = if variable.starts_with(&format!("{prefix}_")) {
                        format!("{variable}_2")
                    } else {
                        format!("{prefix}_{variable}")
                    };
                    let mut n = 3;
                    while first.iter().any(|(v, _)| *v == renamed) {
                        renamed = format!("{prefix}_{variable}_{n}");
                        n += 1;
                    }
                    let field = server.secrets[i].field.clone();
                    rename_in_field(&mut server.transport, &field, &variable, &renamed);
                    server.secrets[i].variable = renamed.clone();
                    first.push((renamed, digest));
                }
            }
        }
    }
}

/// Replaces the reference `${old}` by `${new}` in one field of `transport`.
fn rename_in_field(transport: &mut Transport, field: &str, old: &str, new: &str) {
    let (old, new) = (format!("${{{old}}}"), format!("${{{new}}}"));
    let swap = |text: &mut String| *text = text.replace(&old, &new);
    match transport {
        Transport::Stdio { args, env, .. } => {
            if let Some(name) = field.strip_prefix("env.") {
                env.iter_mut()
                    .filter(|(n, _)| n == name)
                    .for_each(|(_, v)| swap(v));
            } else if let Some(i) = field
                .strip_prefix("args[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|i| i.parse::<usize>().ok())
                && let Some(arg) = args.get_mut(i)
            {
                swap(arg);
            }
        }
        Transport::Http { url, headers } | Transport::Sse { url, headers } => {
            if let Some(name) = field.strip_prefix("headers.") {
                headers
                    .iter_mut()
                    .filter(|(n, _)| n == name)
                    .for_each(|(_, v)| swap(v));
            } else if field == "url" {
                swap(url);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_by_word() {
        for name in [
            "API_KEY",
            "apiKey",
            "X-API-Key",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "BRAVE_API_KEY",
            "DB_PASSWORD",
            "clientSecret",
            "access_token",
            "Authorization",
            "SLACK_BOT_TOKEN",
            "key",
            "sig",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "LOG_LEVEL",
            "HOME",
            "MONKEY_MODE",
            "AUTHOR",
            "PATH",
            "PWD",
            "keyboard",
            "X-Client",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn token_shapes() {
        assert!(looks_like_token("ghp_0123456789abcdefghijABCDEFGHIJ012345"));
        assert!(looks_like_token("sk-ant-api03-abcdefghijklmnop"));
        assert!(looks_like_token("AKIAIOSFODNN7EXAMPLE"));
        assert!(looks_like_token(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2ln"
        ));
        assert!(!looks_like_token("sk-1"));
        assert!(!looks_like_token("hello world, this is long"));
        assert!(!looks_like_token("/home/me/projects/data"));
        assert!(!looks_like_token("@modelcontextprotocol/server-github"));
    }

    fn http(url: &str, headers: &[(&str, &str)]) -> Transport {
        Transport::Http {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn headers_and_urls_become_references() {
        let mut t = http(
            "https://u:hunter2@api.example.com/mcp?key=abc123&region=eu&token=${T}#top",
            &[
                ("Authorization", "Bearer s3cr3t"),
                ("X-API-Key", "k"),
                ("X-Client", "mcpbox"),
                ("Cookie", "sid=1"),
            ],
        );
        let found = scrub("brave-search", std::path::Path::new("/f"), &mut t);
        let Transport::Http { url, headers } = &t else {
            unreachable!()
        };
        assert_eq!(
            url,
            "https://u:${BRAVE_SEARCH_PASSWORD}@api.example.com/mcp?key=${BRAVE_SEARCH_KEY}&region=eu&token=${T}#top"
        );
        assert_eq!(headers[0].1, "Bearer ${BRAVE_SEARCH_TOKEN}");
        assert_eq!(headers[1].1, "${BRAVE_SEARCH_API_KEY}");
        assert_eq!(headers[2].1, "mcpbox");
        assert_eq!(headers[3].1, "${BRAVE_SEARCH_COOKIE}");
        let variables: Vec<&str> = found.iter().map(|s| s.variable.as_str()).collect();
        assert_eq!(
            variables,
            [
                "BRAVE_SEARCH_TOKEN",
                "BRAVE_SEARCH_API_KEY",
                "BRAVE_SEARCH_COOKIE",
                "BRAVE_SEARCH_PASSWORD",
                "BRAVE_SEARCH_KEY"
            ]
        );
        // Nothing derived from a value is printable.
        let shown = format!("{found:?} {}", serde_json::to_string(&found).unwrap());
        for value in ["s3cr3t", "hunter2", "abc123", "sid=1"] {
            assert!(!shown.contains(value), "{shown}");
        }
    }

    #[test]
    fn env_and_args_become_references() {
        let mut t = Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "server".into(),
                "--api-key=abc".into(),
                "--token".into(),
                "xyz".into(),
                "ghp_0123456789abcdefghijABCDEFGHIJ012345".into(),
                "--verbose".into(),
            ],
            env: vec![
                ("GITHUB_TOKEN".into(), "t".into()),
                ("LOG_LEVEL".into(), "debug".into()),
                ("OTHER".into(), "sk-proj-0123456789abcdef".into()),
                ("REF_KEY".into(), "${REF_KEY}".into()),
                ("EMPTY_TOKEN".into(), String::new()),
            ],
            cwd: None,
        };
        let found = scrub("gh", std::path::Path::new("/f"), &mut t);
        let Transport::Stdio { args, env, .. } = &t else {
            unreachable!()
        };
        assert_eq!(
            args,
            &[
                "-y",
                "server",
                "--api-key=${GH_API_KEY}",
                "--token",
                "${GH_TOKEN}",
                "${GH_TOKEN}",
                "--verbose"
            ]
        );
        assert_eq!(env[0].1, "${GITHUB_TOKEN}");
        assert_eq!(env[1].1, "debug");
        assert_eq!(env[2].1, "${OTHER}");
        assert_eq!(env[3].1, "${REF_KEY}");
        assert_eq!(env[4].1, "");
        assert_eq!(found.len(), 5);
    }
}
