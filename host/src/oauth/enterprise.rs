//! Enterprise-managed authorization (SEP-990, "cross-app access"): a user
//! already signed in to the enterprise's identity provider (IdP) gets a token
//! for an MCP server without a browser. The host exchanges the IdP's ID token
//! for an identity assertion JWT authorization grant (ID-JAG) at the IdP
//! (RFC 8693 token exchange), then the ID-JAG for an access token at the MCP
//! server's authorization server (the RFC 7523 JWT bearer grant).
//!
//! Both exchanges, and the checks of the ID-JAG's claims (audience, client,
//! resource, expiry), are rmcp's `enterprise` module (feature
//! `auth-enterprise-managed`); this file maps the `oauth` fields onto it.
//! Configuration, named as Claude Code names the same flow (`idpClientId`,
//! `idpIdToken`, `idpTokenEndpoint`):
//!
//! ```json
//! { "oauth": { "clientId": "mcp-client", "clientSecret": "${MCP_SECRET}",
//!              "idpIssuer": "https://idp.example", "idpTokenEndpoint": "https://idp.example/token",
//!              "idpClientId": "idp-client", "idpIdToken": "${IDP_ID_TOKEN}" } }
//! ```
//!
//! Like every credential, the ID token and both secrets stay in the host.

use oauth2::ClientSecret;
use reqwest::Url;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse, StoredCredentials};

use super::OAuthError;
use super::config::{OAuthConfig, Setting};
use super::flow::{Target, received_now};

/// Whether `oauth` configures enterprise-managed authorization.
pub(crate) fn configured(oauth: &OAuthConfig) -> bool {
    oauth.idp_id_token.is_some()
}

/// `${VAR}` references in `value` resolved from the host's environment.
fn resolve(target: &Target<'_>, value: &Setting, field: &str) -> Result<String, OAuthError> {
    value
        .resolve(field, &|n| std::env::var(n).ok())
        .map_err(|e| target.error(e))
}

/// How a client authenticates at a token endpoint: its secret, as HTTP Basic
/// unless the server takes only `client_secret_post`; none without a secret.
fn authentication(secret: Option<String>, methods: Option<&[String]>) -> EmaClientAuthentication {
    let Some(secret) = secret else {
        return EmaClientAuthentication::None;
    };
    let post_only = methods.is_some_and(|m| {
        m.iter().any(|m| m == "client_secret_post") && !m.iter().any(|m| m == "client_secret_basic")
    });
    if post_only {
        EmaClientAuthentication::ClientSecretPost(ClientSecret::new(secret))
    } else {
        EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret))
    }
}

/// Runs both exchanges for `target`, whose authorization server `metadata`
/// describes; returns the credentials to keep (in memory: the ID token gets a
/// new one when it expires, for as long as the IdP accepts it).
pub(crate) async fn exchange(
    target: &Target<'_>,
    client_id: &str,
    metadata: &AuthorizationMetadata,
) -> Result<StoredCredentials, OAuthError> {
    let oauth = target.oauth;
    let (Some(id_token), Some(idp_client), Some(idp_token_endpoint)) = (
        &oauth.idp_id_token,
        &oauth.idp_client_id,
        &oauth.idp_token_endpoint,
    ) else {
        return Err(target.error(
            "enterprise-managed authorization needs `oauth.idpIdToken`, `oauth.idpClientId` \
             and `oauth.idpTokenEndpoint` (and `oauth.clientId` for the MCP server's \
             authorization server)",
        ));
    };
    let id_token = resolve(target, id_token, "`oauth.idpIdToken`")?;
    let idp_token_endpoint = resolve(target, idp_token_endpoint, "`oauth.idpTokenEndpoint`")?;
    // The IdP's issuer identifier; by default the token endpoint's origin.
    let idp_issuer = match &oauth.idp_issuer {
        Some(issuer) => resolve(target, issuer, "`oauth.idpIssuer`")?,
        None => Url::parse(&idp_token_endpoint)
            .map(|u| u.origin().ascii_serialization())
            .map_err(|e| {
                target.error(format!(
                    "`oauth.idpTokenEndpoint` {idp_token_endpoint:?} is not a URL: {e}"
                ))
            })?,
    };
    let idp_secret = match &oauth.idp_client_secret {
        Some(s) => Some(resolve(target, s, "`oauth.idpClientSecret`")?),
        None => None,
    };
    let secret = match &oauth.client_secret {
        Some(s) => Some(resolve(target, s, "`oauth.clientSecret`")?),
        None => None,
    };
    let Some(issuer) = metadata.issuer.clone() else {
        return Err(target.error(
            "the MCP server's authorization server names no `issuer` in its metadata, which \
             the ID-JAG must be addressed to; set `oauth.authServerMetadataUrl` to its metadata",
        ));
    };
    let methods: Option<Vec<String>> = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
    // The ID token goes to the identity provider, the ID-JAG (and the client
    // secret) to the MCP server's authorization server: both checked.
    super::net::credential_endpoint(
        target,
        "`oauth.idpTokenEndpoint`",
        &idp_token_endpoint,
        Some(&idp_issuer),
        "the ID token",
    )?;
    super::net::credential_endpoint(
        target,
        "the authorization server's token endpoint",
        &metadata.token_endpoint,
        Some(&issuer),
        "the identity assertion (ID-JAG)",
    )?;
    let idp = EmaAuthorizationServer::new(idp_issuer, idp_token_endpoint, idp_client.clone())
        .with_client_authentication(authentication(idp_secret, None));
    let resource_as =
        EmaAuthorizationServer::new(issuer, metadata.token_endpoint.clone(), client_id)
            .with_client_authentication(authentication(secret, methods.as_deref()));
    let http = super::net::Client::for_resource(target.url).map_err(|e| target.error(e))?;
    let resource = target.url.to_string();
    let token = EmaExchangeRequest::new_with_id_token(idp, resource_as, &resource, &id_token)
        .with_scopes(oauth.scopes.iter().cloned())
        .exchange(&http, &http)
        .await
        .map_err(|e| {
            target.error(format!(
                "enterprise-managed authorization failed: {e}; check `oauth.idpIdToken` (it \
                 may have expired: sign in to the identity provider again), `oauth.idpClientId` \
                 and `oauth.clientId`"
            ))
        })?;
    let mut scopes: Vec<String> = token.scopes.iter().cloned().collect();
    scopes.sort();
    // The token as rmcp's store keeps it: a bearer token response.
    let mut response = serde_json::json!({
        "access_token": token.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(expires_in) = token.expires_in {
        response["expires_in"] = expires_in.as_secs().into();
    }
    if !scopes.is_empty() {
        response["scope"] = scopes.join(" ").into();
    }
    let response: OAuthTokenResponse = serde_json::from_value(response)
        .map_err(|e| target.error(format!("the token response could not be kept: {e}")))?;
    Ok(received_now(client_id, response, scopes))
}
