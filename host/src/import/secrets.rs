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
//!   A numbered word counts as the word (`Cookie2`, `TOKEN2`), except `AUTH`,
//!   `PAT` and `SIG` (`AUTH0_DOMAIN` names a company);
//! - the `Authorization`, `Proxy-Authorization`, `Cookie` and `Cookie2` headers,
//!   and any header, `env` value or argument written `Basic …`, `Bearer …`,
//!   `Token …` or `Bot …` (the scheme is kept: `Bearer ${GITHUB_TOKEN}`);
//! - an argument written as a header, `Authorization: Basic …` (mcp-remote's and
//!   curl's `--header`), under the rules for headers;
//! - in a URL — the `url` of a remote server, and any `env` value or argument
//!   that is a URL (`DATABASE_URL=mysql://root:PASS@…`,
//!   `postgresql://user:PASS@host/db`) — the password, a token-shaped user
//!   (`https://ghp_…@github.com`) or path segment (`/sk_live_…/mcp`), query
//!   parameters with such a name or a token-shaped value (`?key=…`,
//!   `?access_token=…`, `?sig=…`), and the secret path of a known webhook
//!   (`https://hooks.slack.com/services/${VAR}`, Discord, Teams, Zapier, Telegram);
//! - the whole value of an `env` variable or flag named for a webhook
//!   (`SLACK_WEBHOOK_URL`, `--webhook-url`) when it is an `http(s)` URL;
//! - an argument `--api-key=…`, or the argument after `--api-key`; the argument
//!   after `-p` when a user flag (`-u`, `--user`) is given too, as database
//!   clients take a password (alone, `-p` is as often a port, a package or a
//!   Python, and a port or version after it is left alone);
//! - anywhere in those fields and in `args`, a value **shaped** like a known token
//!   (`ghp_…`, `github_pat_…`, `glpat-…`, `sk-…`, `sk_live_…`, `xoxb-…`, `AKIA…`,
//!   `AIza…`, `npm_…`, `hf_…`, a JWT `eyJ….….…`).
//!
//! A value that is empty, or a part of one that already holds a `${…}`
//! reference, is left as it is; a URL in which nothing was replaced stays exactly
//! as written (one that was is written back as the `url` crate serializes it).
//!
//! The variable is the `env` name itself (`GITHUB_TOKEN` → `${GITHUB_TOKEN}`), or
//! the server's name and the field's (`brave` + `X-API-Key` → `BRAVE_API_KEY`;
//! `Authorization` → `BRAVE_TOKEN`; a URL's password `BRAVE_PASSWORD`, a webhook's
//! path `BRAVE_WEBHOOK`). Two different values of one server that want the same
//! variable get `_2`, `_3`; when two servers had different values under the same
//! variable name, the later one's gets the server's name in front, so one
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
        // A numbered word (`Cookie2`, `TOKEN2`, `apiKey2`) counts as the word,
        // for the words that say nothing else (not `AUTH0`, a company).
        let unnumbered = w.trim_end_matches(|c: char| c.is_ascii_digit());
        (unnumbered.len() < w.len()
            && matches!(
                unnumbered,
                "KEY"
                    | "APIKEY"
                    | "TOKEN"
                    | "SECRET"
                    | "PASSWORD"
                    | "PASSWD"
                    | "PASS"
                    | "CREDENTIAL"
                    | "CREDENTIALS"
                    | "COOKIE"
            ))
            || matches!(
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
            )
            || [
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

/// The secrets of one server as they are found, with their variables: the same
/// value keeps its variable, and another value wanting a variable already taken
/// gets `_2`, `_3`, … (so that one variable never stands for two secrets).
struct Found<'a> {
    secrets: Vec<Secret>,
    file: &'a std::path::Path,
}

impl Found<'_> {
    /// Records `value`, found in `field`, under `wanted` or the first free
    /// variation of it; returns the variable.
    fn add(&mut self, wanted: String, field: &str, value: &str) -> String {
        let digest: [u8; 32] = Sha256::digest(value.as_bytes()).into();
        let mut variable = wanted.clone();
        let mut n = 2;
        while self
            .secrets
            .iter()
            .any(|s| s.variable == variable && s.digest != digest)
        {
            variable = format!("{wanted}_{n}");
            n += 1;
        }
        self.secrets.push(Secret {
            variable: variable.clone(),
            field: field.to_owned(),
            file: self.file.to_path_buf(),
            digest,
        });
        variable
    }
}

/// HTTP authentication schemes whose credential is one word after the scheme:
/// a value `Basic dXNl…` is a credential whatever its header or variable is called.
const SCHEMES: &[&str] = &["Basic", "Bearer", "Token", "Bot"];

/// `(scheme, credential)` of `Scheme credential`: for any name when the scheme
/// is one of [`SCHEMES`], for an `…Authorization` header any alphabetic scheme.
fn split_scheme<'v>(name: &str, value: &'v str) -> Option<(&'v str, &'v str)> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let rest = rest.trim();
    let alphabetic = !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic());
    if rest.is_empty() || !alphabetic {
        return None;
    }
    let known = SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme))
        && !rest.contains(char::is_whitespace);
    (known || name.to_ascii_lowercase().ends_with("authorization")).then_some((scheme, rest))
}

/// Whether a name says its value is a webhook URL (`SLACK_WEBHOOK_URL`,
/// `--webhook-url`): whoever has the URL can post to it.
fn is_webhook_name(name: &str) -> bool {
    words(name)
        .iter()
        .any(|w| w == "WEBHOOK" || w == "WEBHOOKS")
}

fn is_http_url(value: &str) -> bool {
    let lower = value.trim_start().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// A flag naming a user (`-u`, `-U`, `--user`, `--username`, `--db-user=…`).
fn is_user_flag(arg: &str) -> bool {
    let flag = arg.trim_start_matches('-');
    let flag = flag.split_once('=').map_or(flag, |(name, _)| name);
    arg.starts_with('-')
        && !flag.is_empty()
        && (flag == "u"
            || flag == "U"
            || words(flag).iter().any(|w| w == "USER" || w == "USERNAME"))
}

/// A port, a port mapping or a version (`3306`, `8080:80`, `127.0.0.1:80:80/tcp`,
/// `3.12`): what `-p` means where it is not a password.
fn port_or_version(value: &str) -> bool {
    let value = value.trim_end_matches("/tcp").trim_end_matches("/udp");
    value.chars().any(|c| c.is_ascii_digit())
        && value
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | '-'))
}

/// The header's value with its credential replaced by a reference (the scheme,
/// `Bearer ` or `Basic `, kept), or `None` when it holds none: the
/// `Authorization`, `Proxy-Authorization`, `Cookie` and `Cookie2` headers, a
/// credential-like name, a token-shaped value, or `Scheme credential`.
fn header_value(
    prefix: &str,
    name: &str,
    value: &str,
    field: &str,
    found: &mut Found<'_>,
) -> Option<String> {
    if value.trim().is_empty() || holds_reference(value) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let whole = matches!(
        lower.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "cookie2"
    );
    let schemed = split_scheme(name, value);
    if !(whole || is_credential_name(name) || looks_like_token(value) || schemed.is_some()) {
        return None;
    }
    let variable = if lower.ends_with("authorization") {
        format!("{prefix}_TOKEN")
    } else {
        let part = variable_part(name);
        let part = part.strip_prefix("X_").unwrap_or(&part).to_string();
        format!("{prefix}_{part}")
    };
    let variable = found.add(variable, field, value);
    // Keep the scheme: "Bearer abc" → "Bearer ${VAR}".
    let scheme = schemed.map(|(s, _)| format!("{s} ")).unwrap_or_default();
    Some(format!("{scheme}${{{variable}}}"))
}

/// An argument written as a header, `Name: value` (mcp-remote's and curl's
/// `--header`), with its credential replaced: `Authorization: Bearer ${VAR}`.
fn header_argument(prefix: &str, arg: &str, field: &str, found: &mut Found<'_>) -> Option<String> {
    let (name, rest) = arg.split_once(':')?;
    let header_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    // `https://…` is a URL, not a header named `https`.
    if !header_name || rest.starts_with("//") {
        return None;
    }
    let value = rest.trim_start();
    let separator = &rest[..rest.len() - value.len()];
    let replaced = header_value(prefix, name, value, field, found)?;
    Some(format!("{name}:{separator}{replaced}"))
}

/// A value that holds a credential inside it — `Scheme credential`, or a URL
/// with a password, a token-shaped path segment, user or query value, or a
/// webhook's secret path — with the credential replaced by a reference; `None`
/// when it holds none. `scheme_variable` names the credential of the first form.
fn scrub_inside(
    prefix: &str,
    scheme_variable: String,
    value: &str,
    field: &str,
    found: &mut Found<'_>,
) -> Option<String> {
    if let Some((scheme, credential)) = split_scheme("", value)
        && !holds_reference(credential)
    {
        let variable = found.add(scheme_variable, field, credential);
        return Some(format!("{scheme} ${{{variable}}}"));
    }
    scrub_url(value, prefix, field, found)
}

/// Replaces inline credentials in `transport` by references; returns what was
/// replaced. `server` names the variables that are not an `env` name; `file` is
/// where the values were written.
pub(crate) fn scrub(
    server: &str,
    file: &std::path::Path,
    transport: &mut Transport,
) -> Vec<Secret> {
    let prefix = variable_part(server);
    let mut found = Found {
        secrets: Vec::new(),
        file,
    };
    match transport {
        Transport::Stdio { args, env, .. } => {
            for (name, value) in env.iter_mut() {
                if value.is_empty() {
                    continue;
                }
                let field = format!("env.{name}");
                let variable = variable_part(name);
                if !holds_reference(value)
                    && (is_credential_name(name)
                        || looks_like_token(value)
                        || (is_webhook_name(name) && is_http_url(value)))
                {
                    let variable = found.add(variable, &field, value);
                    *value = format!("${{{variable}}}");
                } else if let Some(scrubbed) =
                    scrub_inside(&prefix, variable, value, &field, &mut found)
                {
                    *value = scrubbed;
                }
            }
            // `-p` is a password beside a user flag, as database clients take
            // them; alone it is as often a port (docker), a package (npx) or a
            // Python (uvx).
            let user_given = args.iter().any(|a| is_user_flag(a));
            let mut i = 0;
            while i < args.len() {
                let arg = args[i].clone();
                let field = format!("args[{i}]");
                let flag = arg.trim_start_matches('-');
                let is_flag = arg.starts_with('-') && !flag.is_empty();
                let password_flag = flag == "p" && user_given;
                if is_flag && let Some((name, value)) = flag.split_once('=') {
                    let dashes = &arg[..arg.len() - flag.len()];
                    if value.is_empty() {
                        // Nothing to move.
                    } else if !holds_reference(value)
                        && (is_credential_name(name)
                            || looks_like_token(value)
                            || (is_webhook_name(name) && is_http_url(value)))
                    {
                        let wanted = format!("{prefix}_{}", variable_part(name));
                        let variable = found.add(wanted, &field, value);
                        args[i] = format!("{dashes}{name}=${{{variable}}}");
                    } else if let Some(scrubbed) = scrub_inside(
                        &prefix,
                        format!("{prefix}_{}", variable_part(name)),
                        value,
                        &field,
                        &mut found,
                    ) {
                        args[i] = format!("{dashes}{name}={scrubbed}");
                    }
                } else if is_flag
                    && (is_credential_name(flag) || password_flag || is_webhook_name(flag))
                {
                    if let Some(next) = args.get(i + 1).cloned()
                        && !next.starts_with('-')
                        && !next.is_empty()
                        && !holds_reference(&next)
                        && !(password_flag && port_or_version(&next))
                        && (!is_webhook_name(flag)
                            || is_credential_name(flag)
                            || is_http_url(&next))
                    {
                        let wanted = if password_flag {
                            format!("{prefix}_PASSWORD")
                        } else {
                            format!("{prefix}_{}", variable_part(flag))
                        };
                        let variable = found.add(wanted, &format!("args[{}]", i + 1), &next);
                        args[i + 1] = format!("${{{variable}}}");
                        i += 1;
                    }
                } else if let Some(scrubbed) = header_argument(&prefix, &arg, &field, &mut found) {
                    args[i] = scrubbed;
                } else if !holds_reference(&arg) && looks_like_token(&arg) {
                    let variable = found.add(format!("{prefix}_TOKEN"), &field, &arg);
                    args[i] = format!("${{{variable}}}");
                } else if !is_flag
                    && let Some(scrubbed) =
                        scrub_inside(&prefix, format!("{prefix}_TOKEN"), &arg, &field, &mut found)
                {
                    args[i] = scrubbed;
                }
                i += 1;
            }
        }
        Transport::Http { url, headers } | Transport::Sse { url, headers } => {
            for (name, value) in headers.iter_mut() {
                let field = format!("headers.{name}");
                if let Some(replaced) = header_value(&prefix, name, value, &field, &mut found) {
                    *value = replaced;
                }
            }
            if let Some(scrubbed) = scrub_url(url, &prefix, "url", &mut found) {
                *url = scrubbed;
            }
        }
    }
    found.secrets
}

/// Known webhook URLs, whose path after the prefix is the secret: (host, or
/// `.domain` for its subdomains; path prefix).
const WEBHOOKS: &[(&str, &str)] = &[
    ("hooks.slack.com", "/services/"),
    ("hooks.slack.com", "/workflows/"),
    ("discord.com", "/api/webhooks/"),
    ("discordapp.com", "/api/webhooks/"),
    ("hooks.zapier.com", "/hooks/catch/"),
    (".webhook.office.com", "/webhookb2/"),
    ("outlook.office.com", "/webhook/"),
    ("api.telegram.org", "/bot"),
];

/// What stands in for a reference or a replaced value while the URL parser
/// has the text: a lowercase word it leaves as it is everywhere (hosts are
/// lowercased, paths and user information percent-encoded).
const STAND_IN: &str = "mcpboxstandin";

/// A URL's password, token-shaped user, path segments and credential query
/// values, and a known webhook's secret path, replaced by references; `None`
/// when `text` is not such a URL or holds none (then it stays exactly as written).
///
/// The URL is taken apart by the `url` crate. `${…}` references already in it,
/// and the references written into it, pass through the parser as stand-ins
/// (so that it does not percent-encode their `$`, `{` and `}`), and are put
/// back in the text it writes.
fn scrub_url(text: &str, prefix: &str, field: &str, found: &mut Found<'_>) -> Option<String> {
    if !text.contains("://") || text.chars().any(char::is_whitespace) || text.contains(STAND_IN) {
        return None;
    }
    // Stand-in i is `{STAND_IN}{i}x`: the `x` keeps stand-in 1 out of 11.
    let mut stand_ins: Vec<String> = Vec::new();
    let mut stand_in = |text: String| {
        stand_ins.push(text);
        format!("{STAND_IN}{}x", stand_ins.len() - 1)
    };
    let mut protected = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        protected.push_str(&rest[..start]);
        protected.push_str(&stand_in(rest[start..start + len + 1].to_owned()));
        rest = &rest[start + len + 1..];
    }
    protected.push_str(rest);
    let mut url = url::Url::parse(&protected).ok()?;
    let reference = |var: &str| format!("${{{var}}}");
    let mut changed = false;
    if let Some(password) = url.password().map(str::to_owned) {
        if !password.contains(STAND_IN) {
            let variable = found.add(format!("{prefix}_PASSWORD"), field, &password);
            url.set_password(Some(&stand_in(reference(&variable))))
                .ok()?;
            changed = true;
        }
    } else if !url.username().contains(STAND_IN) && looks_like_token(url.username()) {
        let user = url.username().to_owned();
        let variable = found.add(format!("{prefix}_TOKEN"), field, &user);
        url.set_username(&stand_in(reference(&variable))).ok()?;
        changed = true;
    }
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let webhook = WEBHOOKS.iter().find(|(h, path)| {
        let host_matches = match h.strip_prefix('.') {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => host == *h,
        };
        host_matches && url.path().starts_with(path)
    });
    if let Some((_, path_prefix)) = webhook {
        let secret = url.path()[path_prefix.len()..].to_owned();
        if !secret.is_empty() && !secret.contains(STAND_IN) {
            let variable = found.add(format!("{prefix}_WEBHOOK"), field, &secret);
            let path = format!("{path_prefix}{}", stand_in(reference(&variable)));
            url.set_path(&path);
            changed = true;
        }
    } else if let Some(segments) = url.path_segments() {
        let segments: Vec<String> = segments.map(str::to_owned).collect();
        let mut any = false;
        let mut path = String::new();
        for segment in segments {
            path.push('/');
            if !segment.contains(STAND_IN) && looks_like_token(&segment) {
                let variable = found.add(format!("{prefix}_TOKEN"), field, &segment);
                path.push_str(&stand_in(reference(&variable)));
                any = true;
            } else {
                path.push_str(&segment);
            }
        }
        if any {
            url.set_path(&path);
            changed = true;
        }
    }
    if let Some(query) = url.query().map(str::to_owned) {
        let mut any = false;
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((name, value))
                    if !value.is_empty()
                        && !value.contains(STAND_IN)
                        && (is_credential_name(name) || looks_like_token(value)) =>
                {
                    let variable =
                        found.add(format!("{prefix}_{}", variable_part(name)), field, value);
                    any = true;
                    format!("{name}={}", stand_in(reference(&variable)))
                }
                _ => param.to_string(),
            })
            .collect();
        if any {
            url.set_query(Some(&params.join("&")));
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let mut out = url.to_string();
    for (i, text) in stand_ins.iter().enumerate() {
        out = out.replace(&format!("{STAND_IN}{i}x"), text);
    }
    Some(out)
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
                "${GH_TOKEN_2}",
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

    fn stdio(args: &[&str], env: &[(&str, &str)]) -> Transport {
        Transport::Stdio {
            command: "server".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            cwd: None,
        }
    }

    #[test]
    fn credentials_inside_values_become_references() {
        let mut t = stdio(
            &[
                "postgresql://admin:pg%2Fpass@localhost:5432/mydb",
                "--db=mysql://root:pw@db/x",
                "--header",
                "Authorization: Basic YWRtaW46cHc=",
                "-H",
                "X-Api-Key:abc",
                "--webhook-url",
                "https://example.com/hook/1",
                "--notify",
                "https://discord.com/api/webhooks/1234/abcdef",
                "https://ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r.git",
                "https://mcp.example/sk_live_0123456789abcdef/mcp?region=eu",
                "https://${HOST}/x?token=abc&keep=${K}",
                "https://example.com/plain",
                "HTTPS://Example.COM/left-as-written",
            ],
            &[
                ("DATABASE_URL", "mysql://root:env-Pa55@127.0.0.1:3306/shop"),
                (
                    "SLACK_WEBHOOK_URL",
                    "https://hooks.slack.com/services/T0/B0/x",
                ),
                ("NOTIFY", "https://hooks.slack.com/services/T1/B1/y"),
                ("UPSTREAM", "Basic dXNlcjpwYXNz"),
                ("HOMEPAGE", "https://example.com/"),
                ("WEBHOOK_EVENTS", "push,pull"),
            ],
        );
        let found = scrub("db", std::path::Path::new("/f"), &mut t);
        let Transport::Stdio { args, env, .. } = &t else {
            unreachable!()
        };
        assert_eq!(
            args,
            &[
                "postgresql://admin:${DB_PASSWORD_2}@localhost:5432/mydb",
                "--db=mysql://root:${DB_PASSWORD_3}@db/x",
                "--header",
                "Authorization: Basic ${DB_TOKEN}",
                "-H",
                "X-Api-Key:${DB_API_KEY}",
                "--webhook-url",
                "${DB_WEBHOOK_URL}",
                "--notify",
                "https://discord.com/api/webhooks/${DB_WEBHOOK_2}",
                "https://${DB_TOKEN_2}@github.com/o/r.git",
                "https://mcp.example/${DB_TOKEN_3}/mcp?region=eu",
                "https://${HOST}/x?token=${DB_TOKEN_4}&keep=${K}",
                "https://example.com/plain",
                "HTTPS://Example.COM/left-as-written",
            ]
        );
        let env: Vec<&str> = env.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(
            env,
            [
                "mysql://root:${DB_PASSWORD}@127.0.0.1:3306/shop",
                "${SLACK_WEBHOOK_URL}",
                "https://hooks.slack.com/services/${DB_WEBHOOK}",
                "Basic ${UPSTREAM}",
                "https://example.com/",
                "push,pull",
            ]
        );
        let shown = format!("{found:?} {}", serde_json::to_string(&found).unwrap());
        for value in [
            "pg%2Fpass",
            "env-Pa55",
            "YWRtaW46cHc",
            "abcdef",
            "sk_live_",
            "dXNlcjpwYXNz",
        ] {
            assert!(!shown.contains(value), "{shown}");
        }
    }

    #[test]
    fn dash_p_is_a_password_only_beside_a_user() {
        let scrubbed = |args: &[&str]| {
            let mut t = stdio(args, &[]);
            scrub("my", std::path::Path::new("/f"), &mut t);
            let Transport::Stdio { args, .. } = t else {
                unreachable!()
            };
            args
        };
        assert_eq!(
            scrubbed(&["-h", "db", "-u", "root", "-p", "pw"]),
            ["-h", "db", "-u", "root", "-p", "${MY_PASSWORD}"]
        );
        assert_eq!(
            scrubbed(&["--user=root", "-p", "pw"]),
            ["--user=root", "-p", "${MY_PASSWORD}"]
        );
        // A port beside a user, a package or a Python without one: left alone.
        assert_eq!(
            scrubbed(&["run", "-u", "1000", "-p", "8080:80", "image"]),
            ["run", "-u", "1000", "-p", "8080:80", "image"]
        );
        assert_eq!(
            scrubbed(&["-y", "-p", "@scope/pkg", "cmd"]),
            ["-y", "-p", "@scope/pkg", "cmd"]
        );
        assert_eq!(
            scrubbed(&["-p", "python3.12", "tool"]),
            ["-p", "python3.12", "tool"]
        );
    }

    #[test]
    fn numbered_and_schemed_headers_are_credentials() {
        let mut t = http(
            "https://api.example.com/mcp",
            &[
                ("Cookie2", "session=abc"),
                ("X-Upstream", "Basic dXNlcjpwYXNz"),
                ("X-Trace", "Basic but not one word"),
                ("Authorization", "Digest username=\"me\", response=\"x\""),
            ],
        );
        scrub("api", std::path::Path::new("/f"), &mut t);
        let Transport::Http { headers, .. } = &t else {
            unreachable!()
        };
        let values: Vec<&str> = headers.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(
            values,
            [
                "${API_COOKIE2}",
                "Basic ${API_UPSTREAM}",
                "Basic but not one word",
                "Digest ${API_TOKEN}"
            ]
        );
        assert!(is_credential_name("TOKEN2") && is_credential_name("apiKey2"));
        assert!(!is_credential_name("AUTH0_DOMAIN") && !is_credential_name("PATH2"));
    }
}
