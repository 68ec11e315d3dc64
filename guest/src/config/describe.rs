//! What configuration text names, for the decisions a host makes before any
//! server runs (the WIT `registry.describe-config`).
//!
//! A host decides two things from a configuration file that need no registry:
//! whether the file may start what it names (trust shows each server's command
//! line or URL as configured), and how to authorize with a remote server (OAuth
//! needs its URL as configured and its `oauth` fields). Both used to read the
//! `.mcp.json` in the host, with a parser of their own beside this one; now the
//! guest's reading is the only one: an entry [`parse`](super::parse) loads is
//! described by the endpoint it loaded, and one it skips by its text and the
//! issue that skipped it, so what trust lists is what would start.
//!
//! `${VAR}` references stay as written: the component hands the strings across
//! as templates (`component/registry.rs`), and the names every entry refers to
//! come along for the trust prompt.

use crate::prelude::*;

use serde::Deserialize;
use serde_json::Value;

use super::Members;
use crate::transport::Endpoint;

/// One server entry, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// The key under `mcpServers` (or `servers`).
    pub name: String,
    /// False for `disabled: true` or `enabled: false`.
    pub enabled: bool,
    /// How it is reached.
    pub reach: Reach,
    /// The environment variables its `${VAR}` references name, each once, in
    /// the order written.
    pub variables: Vec<String>,
}

/// How a described server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The endpoint it loaded, and for a remote server its `oauth` fields.
    Loaded(Endpoint, Box<OAuthFields>),
    /// An entry that does not load: its JSON text, and why.
    Unreadable {
        /// The entry as written.
        written: String,
        /// The issues that skipped it, joined.
        why: String,
    },
}

/// A remote entry's `oauth` object, as Claude Code (`clientId`,
/// `callbackPort`, `authServerMetadataUrl`) and Codex (`scopes`, snake_case)
/// write it. An object whose fields have the wrong types is read as none, as
/// the host read it when it parsed this itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct OAuthFields {
    #[serde(alias = "client_id")]
    pub client_id: Option<String>,
    #[serde(alias = "client_secret")]
    pub client_secret: Option<String>,
    #[serde(alias = "callback_port")]
    pub callback_port: Option<u16>,
    /// `"a b"` or `["a", "b"]`.
    #[serde(default, deserialize_with = "scopes")]
    pub scopes: Vec<String>,
    #[serde(alias = "client_metadata_url")]
    pub client_metadata_url: Option<String>,
    #[serde(alias = "auth_server_metadata_url")]
    pub auth_server_metadata_url: Option<String>,
    #[serde(alias = "grant_type")]
    pub grant_type: Option<String>,
    #[serde(alias = "private_key_file")]
    pub private_key_file: Option<String>,
    #[serde(alias = "private_key")]
    pub private_key: Option<String>,
    #[serde(alias = "key_id")]
    pub key_id: Option<String>,
    pub algorithm: Option<String>,
    #[serde(alias = "idp_id_token")]
    pub idp_id_token: Option<String>,
    #[serde(alias = "idp_token_endpoint")]
    pub idp_token_endpoint: Option<String>,
    #[serde(alias = "idp_issuer")]
    pub idp_issuer: Option<String>,
    #[serde(alias = "idp_client_id")]
    pub idp_client_id: Option<String>,
    #[serde(alias = "idp_client_secret")]
    pub idp_client_secret: Option<String>,
    #[serde(alias = "identity_token_file")]
    pub identity_token_file: Option<String>,
    #[serde(alias = "identity_token")]
    pub identity_token: Option<String>,
}

impl OAuthFields {
    /// The fields that may hold a `${VAR}` reference.
    fn templated(&self) -> [&Option<String>; 9] {
        [
            &self.client_secret,
            &self.private_key_file,
            &self.private_key,
            &self.idp_id_token,
            &self.idp_token_endpoint,
            &self.idp_issuer,
            &self.idp_client_secret,
            &self.identity_token_file,
            &self.identity_token,
        ]
    }
}

/// `"a b"` or `["a", "b"]`; anything else is none.
fn scopes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(scopes_of(Value::deserialize(d)?))
}

fn scopes_of(value: Value) -> Vec<String> {
    match value {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(a) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The server entries of `text`, in the file's order, as [`parse`](super::parse)
/// reads them (the last of a repeated name). Err for text it refuses whole.
pub fn describe(origin: &str, text: &str) -> Result<Vec<Description>, String> {
    let config = super::parse(origin, text)?;
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let top: Members = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Some(servers) = top.get("mcpServers").or_else(|| top.get("servers")) else {
        return Ok(Vec::new());
    };
    let Some(entries) = Members::read(servers) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Description> = Vec::new();
    for (i, (name, raw)) in entries.0.iter().enumerate() {
        // A repeated name keeps its last definition.
        if entries.0[i + 1..].iter().any(|(later, _)| later == name) {
            continue;
        }
        let fields = Members::read(raw);
        let loaded = config.servers.iter().find(|s| &s.name == name);
        let description = match loaded {
            Some(server) => {
                let oauth = match &server.endpoint {
                    Endpoint::Stdio { .. } => OAuthFields::default(),
                    Endpoint::Http { .. } | Endpoint::Sse { .. } => {
                        fields.as_ref().map(oauth_of).unwrap_or_default()
                    }
                };
                let mut variables = Vec::new();
                strings_of(&server.endpoint, &mut |s| references_in(s, &mut variables));
                for value in oauth.templated().into_iter().flatten() {
                    references_in(value, &mut variables);
                }
                Description {
                    name: name.clone(),
                    enabled: server.enabled,
                    reach: Reach::Loaded(server.endpoint.clone(), Box::new(oauth)),
                    variables,
                }
            }
            None => {
                let why: Vec<String> = config
                    .issues
                    .iter()
                    .filter(|issue| issue.server.as_deref() == Some(name.as_str()))
                    .map(ToString::to_string)
                    .collect();
                let mut variables = Vec::new();
                references_in(raw.get(), &mut variables);
                // Spelled with escapes (`\u0024{KEY}`), a reference shows once decoded.
                if let Ok(value) = serde_json::from_str::<Value>(raw.get()) {
                    strings_in(&value, &mut |s| references_in(s, &mut variables));
                }
                Description {
                    name: name.clone(),
                    enabled: true,
                    reach: Reach::Unreadable {
                        written: raw.get().to_owned(),
                        why: why.join("; "),
                    },
                    variables,
                }
            }
        };
        out.push(description);
    }
    Ok(out)
}

/// The `oauth` fields of a remote entry; Codex keeps `scopes` beside them.
fn oauth_of(fields: &Members) -> OAuthFields {
    let mut oauth: OAuthFields = fields
        .get("oauth")
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    if oauth.scopes.is_empty()
        && let Some(raw) = fields.get("scopes")
        && let Ok(value) = serde_json::from_str::<Value>(raw.get())
    {
        oauth.scopes = scopes_of(value);
    }
    oauth
}

/// Calls `f` on every configured string of `endpoint` that may hold a reference.
fn strings_of(endpoint: &Endpoint, f: &mut impl FnMut(&str)) {
    match endpoint {
        Endpoint::Stdio {
            command,
            args,
            env,
            cwd,
            sandbox,
        } => {
            f(command);
            args.iter().for_each(|a| f(a));
            env.iter().for_each(|p| f(&p.value));
            if let Some(cwd) = cwd {
                f(cwd);
            }
            if let Some(sandbox) = sandbox {
                sandbox.read.iter().chain(&sandbox.write).for_each(|p| f(p));
            }
        }
        Endpoint::Http { url, headers } | Endpoint::Sse { url, headers } => {
            f(url);
            headers.iter().for_each(|p| f(&p.value));
        }
    }
}

/// Adds the names of the `${VAR}` and `${VAR:-default}` references in `text`
/// not yet in `names`, leniently: a malformed reference elsewhere in the text
/// does not hide a well-formed one.
fn references_in(text: &str, names: &mut Vec<String>) {
    for rest in text.split("${").skip(1) {
        let Some(end) = rest.find(['}', ':']) else {
            continue;
        };
        let name = &rest[..end];
        if !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
}

/// Calls `f` on every string in `value`, keys included.
fn strings_in(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, f)),
        Value::Object(members) => members.iter().for_each(|(k, v)| {
            f(k);
            strings_in(v, f);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(d: &Description) -> (&Endpoint, &OAuthFields) {
        match &d.reach {
            Reach::Loaded(endpoint, oauth) => (endpoint, oauth),
            other => panic!("not loaded: {other:?}"),
        }
    }

    #[test]
    fn entries_as_configured_in_file_order() {
        let described = describe(
            "t.json",
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "${HOME}/p"]},
                "api": {"url": "https://x.example/?k=${AWS_SECRET_ACCESS_KEY}",
                        "headers": {"A": "${TOKEN:-none}"}, "disabled": true},
                "fs": {"command": "npx", "args": ["-y", "pkg", "${HOME}/q"]},
                "bad": {"command": "run", "args": [1, "${LEAK}"]}
            }}"#,
        )
        .unwrap();
        let names: Vec<&str> = described.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["api", "fs", "bad"], "the last of a repeated name");
        assert!(!described[0].enabled);
        assert_eq!(described[0].variables, ["AWS_SECRET_ACCESS_KEY", "TOKEN"]);
        match loaded(&described[1]).0 {
            Endpoint::Stdio { args, .. } => assert_eq!(args[2], "${HOME}/q"),
            other => panic!("{other:?}"),
        }
        match &described[2].reach {
            Reach::Unreadable { written, why } => {
                assert!(written.contains("\"run\""), "{written}");
                assert!(why.contains("args[0]"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(described[2].variables, ["LEAK"]);
    }

    /// Values a `serde_json::Value` cannot hold (`1e999`, nesting deeper than
    /// 128 levels) do not hide an entry: it is described as it loads.
    #[test]
    fn what_serde_json_cannot_hold_is_described() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(
            r#"{{"mcpServers": {{
                "big": {{"command": "run", "x": 1e999}},
                "deep": {{"url": "https://x.example/?k=\u0024{{KEY}}", "x": {deep}}}
            }}}}"#
        );
        let described = describe("t.json", &text).unwrap();
        assert_eq!(described.len(), 2, "{described:?}");
        assert!(
            matches!(loaded(&described[0]).0, Endpoint::Stdio { command, .. } if command == "run")
        );
        assert_eq!(described[1].variables, ["KEY"], "escapes decoded");
        assert!(describe("t.json", r#"{"mcpServers": {"a": {"command": "run"}"#).is_err());
        assert!(describe("t.json", "").unwrap().is_empty());
        assert!(
            describe("t.json", r#"{"mcpServers": 7}"#)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn oauth_fields_as_claude_code_and_codex_name_them() {
        let described = describe(
            "t.json",
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "https://a.example/mcp",
                      "oauth": {"clientId": "id", "clientSecret": "${S}", "callbackPort": 8765,
                                "scopes": "read write",
                                "authServerMetadataUrl": "https://as.example/.well-known/openid-configuration"}},
                "b": {"httpUrl": "https://b.example/mcp", "scopes": ["x"],
                      "oauth": {"client_id": "id2"}},
                "c": {"command": "npx", "oauth": {"clientId": "ignored"}},
                "d": {"url": "https://d.example/mcp", "oauth": 7},
                "e": {"url": "https://e.example/mcp", "oauth": {"callbackPort": "x", "clientId": "i"}},
                "f": {"url": "https://f.example/mcp", "oauth": {"identity_token": "${JWT}"}}
            }}"#,
        )
        .unwrap();
        let oauth = |i: usize| loaded(&described[i]).1.clone();
        let a = oauth(0);
        assert_eq!(a.client_id.as_deref(), Some("id"));
        assert_eq!(a.client_secret.as_deref(), Some("${S}"));
        assert_eq!(a.callback_port, Some(8765));
        assert_eq!(a.scopes, ["read", "write"]);
        assert!(a.auth_server_metadata_url.is_some());
        assert_eq!(described[0].variables, ["S"]);
        assert_eq!(oauth(1).client_id.as_deref(), Some("id2"));
        assert_eq!(oauth(1).scopes, ["x"]);
        assert_eq!(oauth(2), OAuthFields::default(), "a local server has none");
        assert_eq!(oauth(3), OAuthFields::default());
        assert_eq!(oauth(4), OAuthFields::default(), "wrong types: none");
        assert_eq!(oauth(5).identity_token.as_deref(), Some("${JWT}"));
        assert_eq!(described[5].variables, ["JWT"]);
    }
}
