//! The `oauth` fields of remote server entries, as the guest reads them.
//!
//! OAuth is the host's duty (credentials never enter the guest), but the
//! configuration has one reader, the guest's: it describes each remote entry's
//! URL and `oauth` fields (`registry.describe-config`, `crate::describe`), the
//! fields that may hold a credential as templates, and the host only looks up
//! their `${VAR}` names when it uses them. Names follow Claude Code (`oauth.clientId`, `oauth.callbackPort`,
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
//! An `oauth` object whose fields have the wrong types is read as none; the
//! guest reports problems with an entry as configuration issues.

use std::collections::BTreeMap;

use crate::bindings::wit;
use crate::describe::{OauthFields, ServerDescription, ServerReach};

/// A field that may hold a `${VAR}` reference, as the guest split it; `Err`
/// when the reference is malformed (the message names the field).
#[derive(Debug, Clone)]
pub(crate) struct Setting(Result<wit::Template, String>);

impl Setting {
    /// The text as configured, for messages (it holds no resolved value).
    pub fn configured(&self) -> &str {
        match &self.0 {
            Ok(template) => &template.configured,
            Err(_) => "",
        }
    }

    /// The value with every reference looked up in `lookup`; `field` names it
    /// in errors.
    pub fn resolve(
        &self,
        field: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        match &self.0 {
            Ok(template) => crate::transport::endpoint::resolve(template, field, lookup),
            Err(malformed) => Err(malformed.clone()),
        }
    }
}

/// Two settings are the same when configured the same: the guest splits a
/// text one way only.
impl PartialEq for Setting {
    fn eq(&self, other: &Setting) -> bool {
        match (&self.0, &other.0) {
            (Ok(a), Ok(b)) => a.configured == b.configured,
            (Err(a), Err(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Setting {}

/// Literal text, with no reference: what tests write by hand.
#[cfg(test)]
impl From<&str> for Setting {
    fn from(text: &str) -> Setting {
        Setting(Ok(wit::Template {
            configured: text.to_owned(),
            parts: vec![wit::TemplatePart::Literal(text.to_owned())],
        }))
    }
}

#[cfg(test)]
impl Setting {
    /// `${name}`, as the guest splits it.
    pub fn variable(name: &str) -> Setting {
        Setting(Ok(wit::Template {
            configured: format!("${{{name}}}"),
            parts: vec![wit::TemplatePart::Variable(wit::VariableReference {
                name: name.to_owned(),
                fallback: None,
            })],
        }))
    }
}

/// How to authorize with one server, from its entry's `oauth` object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OAuthConfig {
    /// A client registered with the authorization server beforehand; without
    /// it, mcpbox registers itself (RFC 7591).
    pub client_id: Option<String>,
    /// That client's secret; `${VAR}` is resolved from the host's environment.
    pub client_secret: Option<Setting>,
    /// The loopback port of the redirect URI (when the client was registered
    /// with a fixed one); any free port otherwise.
    pub callback_port: Option<u16>,
    /// Scopes to request instead of the ones the server advertises.
    pub scopes: Vec<String>,
    /// The URL of a client ID metadata document the user hosts (SEP-991),
    /// used as the client id where the authorization server accepts them.
    pub client_metadata_url: Option<String>,
    /// The authorization server's metadata document, for servers that publish
    /// no protected-resource metadata; skips discovery.
    pub auth_server_metadata_url: Option<String>,
    /// `client_credentials` for a machine client (SEP-1046: `clientId` with
    /// `clientSecret` or a private key, no user, no browser); the
    /// authorization code grant otherwise.
    pub grant_type: Option<String>,
    /// A PEM file holding the client's private key (PKCS#8 EC, RSA or
    /// Ed25519, or PKCS#1 RSA): the client credentials grant then
    /// authenticates with `private_key_jwt` (RFC 7523). `${VAR}` and `~/`
    /// are resolved by the host, which alone reads the file.
    pub private_key_file: Option<Setting>,
    /// The private key's PEM text instead of a file, normally `${VAR}`
    /// (the TypeScript SDK's `privateKey`).
    pub private_key: Option<Setting>,
    /// The `kid` of the signing key, for an authorization server that keeps
    /// several keys of the client (a JWKS).
    pub key_id: Option<String>,
    /// The JWS algorithm of the assertion (`ES256`, `RS256`, …); by default
    /// the first the authorization server accepts that the key signs with.
    pub algorithm: Option<String>,
    /// Enterprise-managed authorization (SEP-990): the ID token the user's
    /// identity provider issued, normally `${VAR}`; with it, no browser.
    pub idp_id_token: Option<Setting>,
    /// The identity provider's token endpoint (RFC 8693 token exchange).
    pub idp_token_endpoint: Option<Setting>,
    /// The identity provider's issuer identifier; by default the origin of
    /// `idpTokenEndpoint`.
    pub idp_issuer: Option<Setting>,
    /// mcpbox's client at the identity provider.
    pub idp_client_id: Option<String>,
    /// That client's secret, if it has one; `${VAR}` resolved by the host.
    pub idp_client_secret: Option<Setting>,
    /// Workload identity federation (SEP-1933): a file holding the JWT the
    /// workload's platform issued it (a Kubernetes projected service account
    /// token, a CI job's OIDC token), re-read for every grant; `${VAR}` and
    /// `~/` resolved by the host. With it, no browser and no secret.
    pub identity_token_file: Option<Setting>,
    /// That JWT itself instead of a file, normally `${VAR}`.
    pub identity_token: Option<Setting>,
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

impl From<OauthFields> for OAuthConfig {
    fn from(o: OauthFields) -> OAuthConfig {
        let s = |value: Option<Result<wit::Template, String>>| value.map(Setting);
        OAuthConfig {
            client_id: o.client_id,
            client_secret: s(o.client_secret),
            callback_port: o.callback_port,
            scopes: o.scopes,
            client_metadata_url: o.client_metadata_url,
            auth_server_metadata_url: o.auth_server_metadata_url,
            grant_type: o.grant_type,
            private_key_file: s(o.private_key_file),
            private_key: s(o.private_key),
            key_id: o.key_id,
            algorithm: o.algorithm,
            idp_id_token: s(o.idp_id_token),
            idp_token_endpoint: s(o.idp_token_endpoint),
            idp_issuer: s(o.idp_issuer),
            idp_client_id: o.idp_client_id,
            idp_client_secret: s(o.idp_client_secret),
            identity_token_file: s(o.identity_token_file),
            identity_token: s(o.identity_token),
        }
    }
}

/// One remote server entry, as far as OAuth cares.
#[derive(Debug, Clone)]
pub(crate) struct RemoteEntry {
    /// The URL as configured (the token store's key).
    pub url: String,
    /// The same URL as the guest split it, to resolve.
    pub template: wit::Template,
    /// Its `oauth` object.
    pub oauth: OAuthConfig,
}

/// Every remote server entry, by name, from the guest's description of the
/// configuration (`mcpServers` or VS Code's `servers`; `url` or Gemini CLI's
/// `httpUrl`).
pub(crate) fn remote_entries(servers: &[ServerDescription]) -> BTreeMap<String, RemoteEntry> {
    servers
        .iter()
        .filter_map(|server| match &server.reach {
            ServerReach::Remote(remote) => Some((
                server.name.clone(),
                RemoteEntry {
                    url: remote.endpoint.url.configured.clone(),
                    template: remote.endpoint.url.clone(),
                    oauth: remote.oauth.clone().into(),
                },
            )),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's reading of the fields is tested where it lives
    /// (`guest/src/config/describe.rs`); this is the host's side of it: the
    /// description of the embedded guest, turned into what OAuth uses.
    #[test]
    fn fields_as_the_guest_describes_them() {
        let text = r#"{"mcpServers": {
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
            "f": {"url": "https://f.example/mcp", "oauth": {"identity_token": "${JWT}"}},
            "g": {"url": "https://g.example/mcp", "oauth": {"privateKey": "${OOPS"}}
        }}"#;
        let described = crate::describe::Describer::embedded()
            .unwrap()
            .describe_blocking("t.json", text)
            .unwrap()
            .unwrap();
        let entries = remote_entries(&described);
        assert_eq!(entries.len(), 6);
        let e = &entries["e"].oauth;
        assert_eq!(
            e.identity_token_file.as_ref().map(Setting::configured),
            Some("/var/run/secrets/tokens/mcp")
        );
        assert!(e.client_credentials(), "a workload needs no login");
        let env = |name: &str| (name == "JWT").then(|| "the-jwt".to_owned());
        let f = entries["f"].oauth.identity_token.as_ref().unwrap();
        assert_eq!(f.configured(), "${JWT}");
        assert_eq!(f.resolve("oauth.identityToken", &env).unwrap(), "the-jwt");
        assert!(!entries["a"].oauth.client_credentials());
        let a = &entries["a"].oauth;
        assert_eq!(a.client_id.as_deref(), Some("id"));
        assert_eq!(a.client_secret, Some(Setting::variable("S")));
        assert_eq!(a.callback_port, Some(8765));
        assert_eq!(a.scopes, ["read", "write"]);
        assert!(a.auth_server_metadata_url.is_some());
        assert_eq!(entries["a"].url, "https://a.example/mcp");
        assert_eq!(entries["b"].oauth.client_id.as_deref(), Some("id2"));
        assert_eq!(entries["b"].oauth.scopes, ["x"]);
        assert_eq!(entries["d"].oauth, OAuthConfig::default());
        let g = entries["g"].oauth.private_key.as_ref().unwrap();
        let e = g.resolve("oauth.privateKey", &env).unwrap_err();
        assert!(
            e.contains("oauth.privateKey") && e.contains("unclosed"),
            "{e}"
        );
    }
}
