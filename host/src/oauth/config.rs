//! The `oauth` fields of remote server entries, read by the host.
//!
//! The guest parses the configuration for everything it acts on and ignores
//! fields it does not know; OAuth is the host's duty (credentials never enter
//! the guest), so the host reads these few fields itself from the same text.
//! Names follow Claude Code (`oauth.clientId`, `oauth.callbackPort`,
//! `oauth.authServerMetadataUrl`) and Codex (`scopes`), camelCase or snake_case:
//!
//! ```json
//! { "mcpServers": { "linear": {
//!     "type": "http", "url": "https://mcp.linear.app/mcp",
//!     "oauth": { "clientId": "abc", "clientSecret": "${LINEAR_SECRET}",
//!                "callbackPort": 8765, "scopes": ["read", "write"] } } } }
//! ```
//!
//! A machine client (the client credentials grant, SEP-1046) has a secret or
//! a private key (`private_key_jwt`, the TypeScript SDK's `privateKey` and
//! `algorithm`, plus a file and a key id):
//!
//! ```json
//! { "oauth": { "grantType": "client_credentials", "clientId": "svc-1",
//!              "privateKeyFile": "~/.config/svc-1.pem", "keyId": "2026-11",
//!              "algorithm": "ES256" } }
//! ```
//!
//! A workload with an identity token from its platform (workload identity
//! federation: the JWT bearer grant, named as Anthropic's WIF names the same
//! token, `ANTHROPIC_IDENTITY_TOKEN_FILE`):
//!
//! ```json
//! { "oauth": { "identityTokenFile": "/var/run/secrets/tokens/mcp", "clientId": "svc-1" } }
//! ```
//!
//! What this module cannot read is left alone: the guest reports problems with
//! an entry as configuration issues.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// How to authorize with one server, from its entry's `oauth` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OAuthConfig {
    /// A client registered with the authorization server beforehand; without
    /// it, mcpbox registers itself (RFC 7591).
    #[serde(alias = "client_id")]
    pub client_id: Option<String>,
    /// That client's secret; `${VAR}` is resolved from the host's environment.
    #[serde(alias = "client_secret")]
    pub client_secret: Option<String>,
    /// The loopback port of the redirect URI (when the client was registered
    /// with a fixed one); any free port otherwise.
    #[serde(alias = "callback_port")]
    pub callback_port: Option<u16>,
    /// Scopes to request instead of the ones the server advertises.
    #[serde(default, deserialize_with = "scopes")]
    pub scopes: Vec<String>,
    /// The URL of a client ID metadata document the user hosts (SEP-991),
    /// used as the client id where the authorization server accepts them.
    #[serde(alias = "client_metadata_url")]
    pub client_metadata_url: Option<String>,
    /// The authorization server's metadata document, for servers that publish
    /// no protected-resource metadata; skips discovery.
    #[serde(alias = "auth_server_metadata_url")]
    pub auth_server_metadata_url: Option<String>,
    /// `client_credentials` for a machine client (SEP-1046: `clientId` with
    /// `clientSecret` or a private key, no user, no browser); the
    /// authorization code grant otherwise.
    #[serde(alias = "grant_type")]
    pub grant_type: Option<String>,
    /// A PEM file holding the client's private key (PKCS#8 EC, RSA or
    /// Ed25519, or PKCS#1 RSA): the client credentials grant then
    /// authenticates with `private_key_jwt` (RFC 7523). `${VAR}` and `~/`
    /// are resolved by the host, which alone reads the file.
    #[serde(alias = "private_key_file")]
    pub private_key_file: Option<String>,
    /// The private key's PEM text instead of a file, normally `${VAR}`
    /// (the TypeScript SDK's `privateKey`).
    #[serde(alias = "private_key")]
    pub private_key: Option<String>,
    /// The `kid` of the signing key, for an authorization server that keeps
    /// several keys of the client (a JWKS).
    #[serde(alias = "key_id")]
    pub key_id: Option<String>,
    /// The JWS algorithm of the assertion (`ES256`, `RS256`, …); by default
    /// the first the authorization server accepts that the key signs with.
    pub algorithm: Option<String>,
    /// Enterprise-managed authorization (SEP-990): the ID token the user's
    /// identity provider issued, normally `${VAR}`; with it, no browser.
    #[serde(alias = "idp_id_token")]
    pub idp_id_token: Option<String>,
    /// The identity provider's token endpoint (RFC 8693 token exchange).
    #[serde(alias = "idp_token_endpoint")]
    pub idp_token_endpoint: Option<String>,
    /// The identity provider's issuer identifier; by default the origin of
    /// `idpTokenEndpoint`.
    #[serde(alias = "idp_issuer")]
    pub idp_issuer: Option<String>,
    /// mcpbox's client at the identity provider.
    #[serde(alias = "idp_client_id")]
    pub idp_client_id: Option<String>,
    /// That client's secret, if it has one; `${VAR}` resolved by the host.
    #[serde(alias = "idp_client_secret")]
    pub idp_client_secret: Option<String>,
    /// Workload identity federation (SEP-1933): a file holding the JWT the
    /// workload's platform issued it (a Kubernetes projected service account
    /// token, a CI job's OIDC token), re-read for every grant; `${VAR}` and
    /// `~/` resolved by the host. With it, no browser and no secret.
    #[serde(alias = "identity_token_file")]
    pub identity_token_file: Option<String>,
    /// That JWT itself instead of a file, normally `${VAR}`.
    #[serde(alias = "identity_token")]
    pub identity_token: Option<String>,
}

impl OAuthConfig {
    /// Whether tokens come without a person: the client credentials grant,
    /// enterprise-managed authorization (an IdP's ID token exchanged), or
    /// workload identity federation (the workload's own JWT as the grant).
    pub fn client_credentials(&self) -> bool {
        self.grant_type.as_deref() == Some("client_credentials")
            || self.idp_id_token.is_some()
            || self.identity_token.is_some()
            || self.identity_token_file.is_some()
    }
}

/// `"a b"` or `["a", "b"]`.
fn scopes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(a) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    })
}

/// One remote server entry, as far as OAuth cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteEntry {
    /// The URL as configured (the token store's key).
    pub url: String,
    /// Its `oauth` object.
    pub oauth: OAuthConfig,
}

/// Every remote server entry with a URL, by name (`mcpServers` or VS Code's
/// `servers`; `url` or Gemini CLI's `httpUrl`). Text that is not JSON gives none.
pub(crate) fn remote_entries(text: &str) -> BTreeMap<String, RemoteEntry> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return BTreeMap::new();
    };
    let mut entries = BTreeMap::new();
    for key in ["servers", "mcpServers"] {
        let Some(Value::Object(servers)) = root.get(key) else {
            continue;
        };
        for (name, entry) in servers {
            let url = entry
                .get("url")
                .or_else(|| entry.get("httpUrl"))
                .and_then(Value::as_str);
            let Some(url) = url else { continue };
            let oauth = entry
                .get("oauth")
                .and_then(|o| OAuthConfig::deserialize(o).ok())
                .unwrap_or_default();
            // Among other fields, Codex keeps scopes beside the entry.
            let oauth = match entry.get("scopes") {
                Some(s) if oauth.scopes.is_empty() => OAuthConfig {
                    scopes: scopes(s.clone()).unwrap_or_default(),
                    ..oauth
                },
                _ => oauth,
            };
            entries.insert(
                name.clone(),
                RemoteEntry {
                    url: url.to_owned(),
                    oauth,
                },
            );
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_as_claude_code_and_codex_name_them() {
        let entries = remote_entries(
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "https://a.example/mcp",
                      "oauth": {"clientId": "id", "clientSecret": "${S}", "callbackPort": 8765,
                                "scopes": "read write",
                                "authServerMetadataUrl": "https://as.example/.well-known/openid-configuration"}},
                "b": {"httpUrl": "https://b.example/mcp", "scopes": ["x"],
                      "oauth": {"client_id": "id2"}},
                "c": {"command": "npx"},
                "d": {"url": "https://d.example/mcp", "oauth": 7},
                "e": {"url": "https://e.example/mcp",
                      "oauth": {"identityTokenFile": "/var/run/secrets/tokens/mcp"}},
                "f": {"url": "https://f.example/mcp", "oauth": {"identity_token": "${JWT}"}}
            }}"#,
        );
        assert_eq!(entries.len(), 5);
        let e = &entries["e"].oauth;
        assert_eq!(
            e.identity_token_file.as_deref(),
            Some("/var/run/secrets/tokens/mcp")
        );
        assert!(e.client_credentials(), "a workload needs no login");
        assert_eq!(entries["f"].oauth.identity_token.as_deref(), Some("${JWT}"));
        assert!(!entries["a"].oauth.client_credentials());
        let a = &entries["a"].oauth;
        assert_eq!(a.client_id.as_deref(), Some("id"));
        assert_eq!(a.client_secret.as_deref(), Some("${S}"));
        assert_eq!(a.callback_port, Some(8765));
        assert_eq!(a.scopes, ["read", "write"]);
        assert!(a.auth_server_metadata_url.is_some());
        assert_eq!(entries["b"].oauth.client_id.as_deref(), Some("id2"));
        assert_eq!(entries["b"].oauth.scopes, ["x"]);
        assert_eq!(entries["d"].oauth, OAuthConfig::default());
        assert!(remote_entries("not json").is_empty());
    }
}
