//! Workload identity federation (SEP-1933): a workload that already holds a
//! JWT from its platform's identity provider (a Kubernetes projected service
//! account token, a CI job's OIDC token, a cloud's workload identity) presents
//! it to the MCP server's authorization server as an authorization grant (RFC
//! 7523 §2.1, the JWT bearer grant) and gets an access token. No secret, no
//! key, no browser: the platform's JWT is the credential.
//!
//! Configuration, named as Anthropic's workload identity federation names the
//! same token (`ANTHROPIC_IDENTITY_TOKEN_FILE`, `ANTHROPIC_IDENTITY_TOKEN`):
//! `oauth.identityTokenFile` (a path, read again for every grant, so a token
//! the platform rotates on disk is always the current one) or
//! `oauth.identityToken` (the JWT itself, normally `${VAR}`), with
//! `oauth.clientId` when the authorization server wants one and
//! `oauth.scopes`.
//!
//! The libraries: the `oauth2` crate has no extension grants (RFC 6749 §4.5),
//! and rmcp's JWT bearer grant redeems only an ID-JAG it obtained itself
//! (`enterprise`), so the form of RFC 7523 §2.1 is written here, as rmcp
//! writes its own assertion forms; the answer is read as the `oauth2` crate's
//! token response or error response. Like every credential, the JWT stays in
//! the host and never shows in a message.

use oauth2::TokenResponse as _;
use oauth2::basic::BasicErrorResponse;
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse, StoredCredentials};

use super::OAuthError;
use super::config::OAuthConfig;
use super::flow::{Target, received_now};

/// RFC 7523 §2.1: the value of `grant_type`.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Whether `oauth` configures workload identity federation.
pub(crate) fn configured(oauth: &OAuthConfig) -> bool {
    oauth.identity_token.is_some() || oauth.identity_token_file.is_some()
}

/// The identity token and the field it came from; `${VAR}` and a leading
/// `~/` resolved. The errors name the field, and the path of a file, never
/// the token.
fn identity_token(target: &Target<'_>) -> Result<(String, &'static str), OAuthError> {
    let oauth = target.oauth;
    let env = |name: &str| std::env::var(name).ok();
    let (token, field) = match (&oauth.identity_token_file, &oauth.identity_token) {
        (Some(_), Some(_)) => {
            return Err(target.error(
                "`oauth.identityTokenFile` and `oauth.identityToken` are both set; keep one \
                 (the file your platform writes the token to, or the variable that holds it)",
            ));
        }
        (Some(setting), None) => {
            let field = "`oauth.identityTokenFile`";
            let path = setting.configured();
            let mut resolved = setting
                .resolve("oauth.identityTokenFile", &env)
                .map_err(|e| target.error(e))?;
            if let (Some(rest), Some(home)) = (resolved.strip_prefix("~/"), env("HOME")) {
                resolved = format!("{home}/{rest}");
            }
            let text = std::fs::read_to_string(&resolved).map_err(|e| {
                target.error(format!(
                    "{field} {path:?} could not be read ({e}); it should name the file your \
                     platform writes the workload's identity token (a JWT) to"
                ))
            })?;
            (text, field)
        }
        (None, Some(value)) => {
            let field = "`oauth.identityToken`";
            let text = value
                .resolve("oauth.identityToken", &env)
                .map_err(|e| target.error(e))?;
            (text, field)
        }
        (None, None) => {
            return Err(target.error(
                "workload identity federation needs `oauth.identityTokenFile` or \
                 `oauth.identityToken`",
            ));
        }
    };
    // Files end with a newline; a JWT is three base64url parts (RFC 7519 §3).
    let token = token.trim().to_owned();
    let parts: Vec<&str> = token.split('.').collect();
    let jwt = parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if !jwt {
        return Err(target.error(format!(
            "{field} does not hold a JWT (three base64url parts joined by dots); it should be \
             the identity token your platform issued the workload"
        )));
    }
    Ok((token, field))
}

/// Presents the workload's identity token at the token endpoint of the
/// authorization server `metadata` describes (RFC 7523 §2.1); returns the
/// credentials to keep (in memory: the next grant reads the token again).
pub(crate) async fn exchange(
    target: &Target<'_>,
    client_id: &str,
    metadata: &AuthorizationMetadata,
) -> Result<StoredCredentials, OAuthError> {
    let (assertion, field) = identity_token(target)?;
    let token_url = super::net::credential_endpoint(
        target,
        "the authorization server's token endpoint",
        &metadata.token_endpoint,
        metadata.issuer.as_deref(),
        "the workload's identity token",
    )?;
    let form = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", JWT_BEARER)
            .append_pair("assertion", &assertion)
            .append_pair("resource", target.url.as_str());
        if !target.oauth.scopes.is_empty() {
            form.append_pair("scope", &target.oauth.scopes.join(" "));
        }
        // A public client names itself in the body (RFC 6749 §3.2.1); the
        // grant itself needs no client (RFC 7523 §3.1).
        if !client_id.is_empty() {
            form.append_pair("client_id", client_id);
        }
        form.finish()
    };
    let http = super::net::Client::for_resource(target.url).map_err(|e| target.error(e))?;
    let failed = |why: String| {
        target.error(format!(
            "the JWT bearer grant (workload identity federation) at {token_url} failed: {why}"
        ))
    };
    let request = http::Request::post(token_url.as_str())
        .header(http::header::ACCEPT, "application/json")
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(form.into_bytes())
        .map_err(|e| failed(e.to_string()))?;
    // No redirects: the identity token goes to the checked endpoint alone.
    let response = http
        .fetch(request, false)
        .await
        .map_err(|e| failed(format!("the request failed: {}", super::flow::chain(&e))))?;
    let status = response.status();
    let body = response.body();
    if !status.is_success() {
        let refusal = serde_json::from_slice::<BasicErrorResponse>(body).map_err(|_| {
            failed(format!(
                "it answered HTTP {status} without an OAuth error; check that it offers the \
                 grant (`grant_types_supported`)"
            ))
        })?;
        let mut why = refusal.error().to_string();
        if let Some(d) = refusal.error_description() {
            why.push_str(&format!(" ({d})"));
        }
        let fix = match refusal.error().as_ref() {
            "invalid_grant" => format!(
                "the identity token in {field} was refused: it may have expired, or name \
                 another audience than the authorization server ({})",
                metadata
                    .issuer
                    .as_deref()
                    .unwrap_or(&metadata.token_endpoint)
            ),
            "invalid_scope" => "check `oauth.scopes`".to_owned(),
            "invalid_client" | "unauthorized_client" => {
                "check `oauth.clientId`, and that the authorization server trusts the \
                 workload's identity provider for it"
                    .to_owned()
            }
            _ => format!("check {field} and `oauth.clientId`"),
        };
        return Err(failed(format!("HTTP {status}, {why}; {fix}")));
    }
    let token: OAuthTokenResponse = serde_json::from_slice(body)
        .map_err(|e| failed(format!("its answer is not a token response ({e})")))?;
    let mut scopes: Vec<String> = token
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    if scopes.is_empty() {
        // An omitted `scope` means the grant equals the request (RFC 6749 §5.1).
        scopes = target.oauth.scopes.clone();
    }
    Ok(received_now(client_id, token, scopes))
}

#[cfg(test)]
mod tests {
    use reqwest::Url;

    use super::*;
    use crate::oauth::config::Setting;

    /// A JWT-shaped token, for these tests only (no signature is checked here).
    const JWT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.SECRETc2lnbmF0dXJl";

    fn target<'a>(oauth: &'a OAuthConfig, url: &'a Url) -> Target<'a> {
        Target {
            name: "w",
            configured: "http://127.0.0.1:1/mcp",
            url,
            oauth,
            resolved: &crate::oauth::flow::NOTHING_RESOLVED,
        }
    }

    /// An authorization server that answers one token request with `answer`;
    /// returns the request's body.
    fn token_endpoint(answer: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let (port, thread) = crate::oauth::scripted::serve(1, move |_, body| {
            (answer.to_owned(), String::from_utf8(body.to_vec()).unwrap())
        });
        let body = std::thread::spawn(move || thread.join().unwrap().remove(0));
        (format!("http://127.0.0.1:{port}/token"), body)
    }

    /// Metadata whose issuer is the token endpoint's origin.
    fn metadata(token_endpoint: &str) -> AuthorizationMetadata {
        let issuer = Url::parse(token_endpoint)
            .unwrap()
            .origin()
            .ascii_serialization();
        metadata_of(&issuer, token_endpoint)
    }

    fn metadata_of(issuer: &str, token_endpoint: &str) -> AuthorizationMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": token_endpoint,
        }))
        .unwrap()
    }

    /// The workload's identity token is a credential like any other: it goes
    /// over https only (plain http only between loopback addresses), to the
    /// origin of the authorization server's issuer. A token endpoint the
    /// metadata names elsewhere gets nothing, and the error says why.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_identity_token_goes_only_over_https_to_the_issuers_origin() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let endpoint = format!("http://127.0.0.1:{port}/token");
        let oauth = OAuthConfig {
            identity_token: Some(JWT.into()),
            ..OAuthConfig::default()
        };
        let remote = Url::parse("https://mcp.example.test/mcp").unwrap();
        let local = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let cases = [
            // Plain http, for a server that is not on loopback.
            (&remote, metadata(&endpoint), "is not https"),
            // Another origin than the issuer's.
            (
                &local,
                metadata_of("http://127.0.0.1:1", &endpoint),
                "is not on the origin of its issuer http://127.0.0.1:1",
            ),
        ];
        for (url, metadata, why) in cases {
            let e = exchange(&target(&oauth, url), "", &metadata)
                .await
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&endpoint)
                    && e.contains(why)
                    && e.contains("did not send it the workload's identity token")
                    && !e.contains("SECRET"),
                "{e}"
            );
        }
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "the identity token was sent to {endpoint}"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_token_file_is_presented_as_the_jwt_bearer_grant() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{JWT}\n")).unwrap();
        let oauth = OAuthConfig {
            identity_token_file: Some(file.display().to_string().as_str().into()),
            scopes: vec!["mcp:read".into()],
            ..OAuthConfig::default()
        };
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let (endpoint, request) = token_endpoint(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 61\r\n\
             connection: close\r\n\r\n\
             {\"access_token\":\"at-1\",\"token_type\":\"Bearer\",\"expires_in\":60}",
        );
        let credentials = exchange(&target(&oauth, &url), "svc-1", &metadata(&endpoint))
            .await
            .unwrap();
        let form: Vec<(String, String)> =
            url::form_urlencoded::parse(request.join().unwrap().as_bytes())
                .into_owned()
                .collect();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("grant_type"), Some(JWT_BEARER));
        // The file's token, without its newline.
        assert_eq!(get("assertion"), Some(JWT));
        assert_eq!(get("resource"), Some("http://127.0.0.1:1/mcp"));
        assert_eq!(get("scope"), Some("mcp:read"));
        assert_eq!(get("client_id"), Some("svc-1"));
        let token = credentials.token_response.unwrap();
        assert_eq!(oauth2::TokenResponse::access_token(&token).secret(), "at-1");
        assert_eq!(credentials.granted_scopes, ["mcp:read"]);
    }

    /// Each refusal names the server, the field and the fix, and never the token.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_refused_or_missing_token_says_which_field_and_never_shows_it() {
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let (endpoint, request) = token_endpoint(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\
             connection: close\r\n\r\n\
             {\"error\":\"invalid_grant\",\"error_description\":\"JWT has expired.\"}",
        );
        let oauth = OAuthConfig {
            identity_token: Some(JWT.into()),
            ..OAuthConfig::default()
        };
        let e = exchange(&target(&oauth, &url), "", &metadata(&endpoint))
            .await
            .unwrap_err()
            .to_string();
        let body = request.join().unwrap();
        assert!(!body.contains("client_id"), "no client named: {body}");
        assert!(
            e.starts_with("server `w`: the JWT bearer grant")
                && e.contains("invalid_grant (JWT has expired.)")
                && e.contains("`oauth.identityToken`")
                && e.contains(&endpoint.replace("/token", ""))
                && !e.contains("SECRET"),
            "{e}"
        );
        let cases = [
            (
                OAuthConfig {
                    identity_token_file: Some("/nonexistent/mcpbox-token".into()),
                    ..OAuthConfig::default()
                },
                "`oauth.identityTokenFile` \"/nonexistent/mcpbox-token\" could not be read",
            ),
            (
                OAuthConfig {
                    identity_token: Some("not-a-jwt-SECRET".into()),
                    ..OAuthConfig::default()
                },
                "`oauth.identityToken` does not hold a JWT",
            ),
            (
                OAuthConfig {
                    identity_token: Some(JWT.into()),
                    identity_token_file: Some("/t".into()),
                    ..OAuthConfig::default()
                },
                "are both set",
            ),
            (
                OAuthConfig {
                    identity_token: Some(Setting::variable("MCPBOX_TEST_UNSET_IDENTITY_TOKEN")),
                    ..OAuthConfig::default()
                },
                "MCPBOX_TEST_UNSET_IDENTITY_TOKEN",
            ),
        ];
        for (oauth, named) in cases {
            let e = exchange(
                &target(&oauth, &url),
                "",
                &metadata("http://127.0.0.1:1/token"),
            )
            .await
            .unwrap_err()
            .to_string();
            assert!(
                e.starts_with("server `w`: ") && e.contains(named) && !e.contains("SECRET"),
                "{e}"
            );
        }
    }
}
