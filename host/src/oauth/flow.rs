//! One authorization (the authorization code grant with PKCE, RFC 6749 + RFC
//! 7636 S256, as the MCP authorization spec profiles it), from discovery to the
//! tokens in the store.
//!
//! 1. Discovery through rmcp: protected-resource metadata (RFC 9728) from the
//!    `WWW-Authenticate` challenge's `resource_metadata` or the well-known
//!    paths, then authorization-server metadata (RFC 8414, OpenID discovery),
//!    then the 2025-03-26 fallbacks (`/authorize`, `/token`, `/register` on the
//!    server's origin). rmcp checks the `issuer` of each document.
//! 2. The client: a configured (pre-registered) one, a client ID metadata
//!    document where the server accepts them, else dynamic registration
//!    (RFC 7591), done here rather than inside rmcp's session so the issued
//!    client secret can be kept for refreshes in later runs.
//! 3. The authorization URL (PKCE S256, `state`, the `resource` indicator of RFC
//!    8707, the selected scopes), shown to the user; the loopback listener
//!    ([`super::callback`]) waits for the redirect, with a deadline.
//! 4. The code exchange through rmcp, which checks `state` and the RFC 9207
//!    `iss` parameter. Only then is anything written: the tokens go to the store
//!    as one record, so a failure at any step leaves the store as it was.
//!
//! When the authorization server takes DPoP proofs (RFC 9449,
//! [`super::dpop`]), the manager that asks for tokens is one whose HTTP client
//! signs a proof for each token request, with a key made for the server and
//! kept in its record.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, CredentialStore,
    InMemoryCredentialStore, OAuthClientConfig, OAuthTokenResponse, StoredCredentials,
};

use super::OAuthError;
use super::callback::Callback;
use super::config::{OAuthConfig, Setting};
use super::dpop::{self, DpopKey, TokenEndpointClient};
use super::net;
use super::store::{Record, TokenStore};

/// What to authorize with: a remote server entry.
pub(crate) struct Target<'a> {
    /// The configured name, for messages.
    pub name: &'a str,
    /// The URL as configured: the store's key.
    pub configured: &'a str,
    /// The URL with `${VAR}` resolved: where discovery starts.
    pub url: &'a Url,
    /// The entry's `oauth` fields.
    pub oauth: &'a OAuthConfig,
    /// The `${VAR}` values in `url`, which no message may show.
    pub resolved: &'a Resolved,
}

impl Target<'_> {
    /// An error of this server's authorization: every OAuth message is made
    /// here, with the URL as configured (each `${VAR}` value in it, however
    /// an HTTP library or rmcp wrote it, is replaced by its reference).
    pub(crate) fn error(&self, message: impl Into<String>) -> OAuthError {
        OAuthError {
            server: self.name.to_owned(),
            message: self.resolved.scrub(&message.into()),
        }
    }
}

/// The `${VAR}` values of a server's URL with the references they replaced:
/// what OAuth messages show instead (the URL as configured, as every other
/// message of the host does).
#[derive(Debug, Default, Clone)]
pub(crate) struct Resolved {
    /// Each way a value may be written (as is, percent-encoded for a path,
    /// a query, a user name or password, form-encoded, lowercased as a host),
    /// longest first, with its reference.
    forms: Vec<(String, String)>,
}

/// The `${VAR}` references of `template` as written (`${NAME}`, or
/// `${NAME:-fallback}`), in order: the guest's split, joined back.
pub(crate) fn references(template: &crate::bindings::wit::Template) -> Vec<String> {
    use crate::bindings::wit::TemplatePart;
    template
        .parts
        .iter()
        .filter_map(|part| match part {
            TemplatePart::Literal(_) => None,
            TemplatePart::Variable(v) => Some(match &v.fallback {
                Some(fallback) => format!("${{{}:-{fallback}}}", v.name),
                None => format!("${{{}}}", v.name),
            }),
        })
        .collect()
}

/// No `${VAR}` values.
#[cfg(test)]
pub(crate) static NOTHING_RESOLVED: Resolved = Resolved { forms: Vec::new() };

impl Resolved {
    /// The values `values` of the references in the configured URL `url` (as
    /// the guest split it), in order (as `endpoint::resolve_http` resolved them).
    pub(crate) fn new(url: &crate::bindings::wit::Template, values: &[String]) -> Resolved {
        Resolved::of(&references(url), values)
    }

    /// The values `values` of the references `references` (as written), in order.
    pub(crate) fn of(references: &[String], values: &[String]) -> Resolved {
        let mut forms = Vec::new();
        for (value, reference) in values.iter().zip(references) {
            if value.is_empty() {
                continue;
            }
            let mut written = vec![value.clone(), value.to_ascii_lowercase()];
            written.push(url::form_urlencoded::byte_serialize(value.as_bytes()).collect());
            if let Ok(mut u) = Url::parse("http://h/") {
                u.set_path(value);
                written.push(u.path().trim_start_matches('/').to_owned());
                u.set_query(Some(value));
                written.extend(u.query().map(str::to_owned));
                if u.set_password(Some(value)).is_ok() {
                    written.extend(u.password().map(str::to_owned));
                }
                if u.set_username(value).is_ok() {
                    written.push(u.username().to_owned());
                }
            }
            for form in written {
                if !form.is_empty() && !forms.iter().any(|(f, _)| *f == form) {
                    forms.push((form, reference.to_owned()));
                }
            }
        }
        forms.sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
        Resolved { forms }
    }

    /// `text` with every value replaced by its reference, in one pass (a
    /// reference put in is never scrubbed again).
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.forms.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        'next: while let Some(c) = rest.chars().next() {
            for (form, reference) in &self.forms {
                if let Some(after) = rest.strip_prefix(form.as_str()) {
                    out.push_str(reference);
                    rest = after;
                    continue 'next;
                }
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

/// The client name mcpbox registers under.
const CLIENT_NAME: &str = "mcpbox";

/// reqwest is built without a bundled crypto provider; rmcp's client needs one.
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A manager holding a server's tokens, and the key they are bound to when
/// the authorization server binds them (DPoP).
pub(crate) struct Authorized {
    /// rmcp's manager: the tokens, their refresh.
    pub manager: AuthorizationManager,
    /// The DPoP key of the server, for DPoP-bound tokens.
    pub dpop: Option<Arc<DpopKey>>,
}

impl Authorized {
    fn bearer(manager: AuthorizationManager) -> Authorized {
        Authorized {
            manager,
            dpop: None,
        }
    }
}

/// rmcp's manager for `url`, on the host's OAuth client ([`net::Client`]:
/// every address checked, every answer bounded).
pub(crate) async fn manager(target: &Target<'_>) -> Result<AuthorizationManager, OAuthError> {
    let client = net::Client::for_resource(target.url).map_err(|e| target.error(e))?;
    AuthorizationManager::new_with_oauth_http_client(target.url.as_str(), Arc::new(client))
        .await
        .map_err(|e| {
            target.error(format!(
                "could not set up OAuth for {}: {e}",
                target.configured
            ))
        })
}

/// rmcp's manager for `url` whose token requests prove possession of `key`
/// (DPoP), and its HTTP client, which must be told the token endpoint. Its
/// requests, discovery included, go through the same [`net::Client`] as
/// every other manager's.
pub(crate) async fn dpop_manager(
    target: &Target<'_>,
    key: &Arc<DpopKey>,
) -> Result<(AuthorizationManager, Arc<TokenEndpointClient>), OAuthError> {
    let client =
        Arc::new(TokenEndpointClient::new(key.clone(), target.url).map_err(|e| target.error(e))?);
    let manager =
        AuthorizationManager::new_with_oauth_http_client(target.url.as_str(), client.clone())
            .await
            .map_err(|e| {
                target.error(format!(
                    "could not set up OAuth for {}: {e}",
                    target.configured
                ))
            })?;
    Ok((manager, client))
}

/// A manager for tokens already in the store: no network until a refresh.
pub(crate) async fn from_record(
    target: &Target<'_>,
    record: &Record,
    store: &TokenStore,
) -> Result<Authorized, OAuthError> {
    let dpop = match &record.dpop_key {
        Some(pem) => Some(Arc::new(DpopKey::from_pem(pem).map_err(|e| {
            target.error(format!(
                "{e}: the stored tokens cannot be used; run `mcpbox login {}`",
                target.name
            ))
        })?)),
        None => None,
    };
    if !record.metadata.token_endpoint.is_empty() {
        // A refresh sends the refresh token there.
        net::credential_endpoint(
            target,
            "the stored token endpoint",
            &record.metadata.token_endpoint,
            record.metadata.issuer.as_deref(),
            "the refresh token",
        )
        .map_err(|e| {
            target.error(format!(
                "{}; the stored tokens cannot be refreshed: run `mcpbox login {}`",
                e.message, target.name
            ))
        })?;
    }
    let mut manager = match &dpop {
        Some(key) => {
            let (manager, client) = dpop_manager(target, key).await?;
            client.set_token_endpoint(&record.metadata.token_endpoint);
            manager
        }
        None => manager(target).await?,
    };
    manager.set_credential_store(store.credentials(target.configured));
    if record.metadata.token_endpoint.is_empty() {
        // A token the embedder handed over (`TokenStore::set_access_token`):
        // usable until it expires, never refreshed.
        return Ok(Authorized { manager, dpop });
    }
    manager.set_metadata(record.metadata.clone());
    let mut client = OAuthClientConfig::new(
        record.credentials.client_id.clone(),
        record.redirect_uri.clone(),
    );
    if let Some(secret) = &record.client_secret {
        client = client.with_client_secret(secret.clone());
    }
    manager.configure_client(client).map_err(|e| {
        target.error(format!(
            "the stored OAuth client is unusable ({e}); run `mcpbox login {}`",
            target.name
        ))
    })?;
    Ok(Authorized { manager, dpop })
}

/// The client secret with its `${VAR}` references resolved from the environment.
fn resolve_secret(target: &Target<'_>, value: &Setting) -> Result<String, OAuthError> {
    value
        .resolve("oauth.clientSecret", &|n| std::env::var(n).ok())
        .map_err(|e| target.error(e))
}

/// Runs one authorization for `target`: `challenge` is the server's
/// `WWW-Authenticate` (when a request was refused), `previous` the scopes of
/// the authorization it replaces (a step-up asks for their union with the
/// challenged ones, SEP-2350), `show` gets the
/// authorization URL (open a browser, print it, emit an event). Returns the
/// manager holding the new tokens, which are in `store` by then.
pub(crate) async fn authorize(
    target: &Target<'_>,
    store: &TokenStore,
    challenge: Option<&str>,
    previous: &[String],
    show: &(dyn Fn(&str) + Send + Sync),
    timeout: Duration,
) -> Result<Authorized, OAuthError> {
    let callback = Callback::bind(target.oauth.callback_port.unwrap_or(0))
        .await
        .map_err(|e| {
            target.error(format!(
                "could not listen on 127.0.0.1:{} for the OAuth redirect: {e}{}",
                target.oauth.callback_port.unwrap_or(0),
                if target.oauth.callback_port.is_some() {
                    " (is `oauth.callbackPort` in use by another program?)"
                } else {
                    ""
                }
            ))
        })?;
    let redirect_uri = callback.redirect_uri.clone();

    let mut manager = manager(target).await?;
    let code = "the authorization code and PKCE verifier";
    let mut metadata = discover(target, &manager, challenge, code).await?;
    // DPoP: a key for this server, and a manager whose token requests carry
    // proofs. rmcp keeps what discovery found (the resource, the scopes) in the
    // manager that ran it, so the new one runs it again.
    let dpop = if dpop::offered(&metadata) {
        let key = Arc::new(DpopKey::generate().map_err(|e| target.error(e))?);
        let (bound, client) = dpop_manager(target, &key).await?;
        metadata = discover(target, &bound, challenge, code).await?;
        client.set_token_endpoint(&metadata.token_endpoint);
        manager = bound;
        Some(key)
    } else {
        None
    };
    manager.set_metadata(metadata.clone());
    // Tokens stay in memory until the whole flow succeeded.
    let pending = InMemoryCredentialStore::new();
    manager.set_credential_store(pending.clone());

    let oauth = target.oauth;
    let scopes = if oauth.scopes.is_empty() {
        let mut scopes = previous.to_vec();
        for scope in manager.select_scopes(None, &[]) {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes
    } else {
        oauth.scopes.clone()
    };
    let accepts_metadata_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let (client_id, client_secret) = if let Some(id) = &oauth.client_id {
        let secret = match &oauth.client_secret {
            Some(s) => Some(resolve_secret(target, s)?),
            None => None,
        };
        (id.clone(), secret)
    } else if let Some(url) = oauth
        .client_metadata_url
        .as_ref()
        .filter(|_| accepts_metadata_documents)
    {
        (url.clone(), None)
    } else if metadata.registration_endpoint.is_some() {
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let client = manager
            .register_client(CLIENT_NAME, &redirect_uri, &refs)
            .await
            .map_err(|e| {
                target.error(format!(
                    "dynamic client registration failed: {}; register a client with the \
                     authorization server and set `oauth.clientId`",
                    describe(&e)
                ))
            })?;
        (client.client_id, client.client_secret)
    } else {
        return Err(target.error(
            "the authorization server offers no dynamic client registration; register a \
             client with it and set `oauth.clientId` (and `oauth.clientSecret` if it has one)",
        ));
    };

    let mut request =
        AuthorizationRequest::new(redirect_uri.clone()).with_preregistered_client(client_id);
    if let Some(secret) = &client_secret {
        request = request.with_client_secret(secret.clone());
    }
    if !oauth.scopes.is_empty() || !previous.is_empty() {
        request = request.with_scopes(scopes);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| {
            target.error(format!(
                "could not start the authorization: {}",
                describe(&e)
            ))
        })?;

    show(session.get_authorization_url());

    let state = query_param(session.get_authorization_url(), "state")
        .ok_or_else(|| target.error("the authorization URL carries no `state`"))?;
    let waited = tokio::time::timeout(timeout, callback.wait(target.name, &state)).await;
    let callback_url = match waited {
        Ok(Ok(url)) => url,
        Ok(Err(e)) => return Err(target.error(format!("the OAuth redirect listener failed: {e}"))),
        Err(_) => {
            return Err(target.error(format!(
                "the authorization was not completed within {} s; run `mcpbox login {}` again",
                timeout.as_secs(),
                target.name
            )));
        }
    };
    if let Some(refusal) = refusal(&callback_url) {
        return Err(target.error(format!("the authorization server refused: {refusal}")));
    }
    let callback = AuthorizationCallback::from_redirect_url(&callback_url)
        .map_err(|e| target.error(format!("the OAuth redirect is unusable: {}", describe(&e))))?;
    // The listener answers only the redirect with this `state`; rmcp would
    // refuse another too ("state not found").
    if query_param(session.get_authorization_url(), "state").as_deref()
        != Some(callback.csrf_token.as_str())
    {
        return Err(target.error(format!(
            "the OAuth redirect's `state` does not match the authorization mcpbox started \
             (a stale or forged redirect), so its code was not used; run `mcpbox login {}` again",
            target.name
        )));
    }
    session
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .await
        .map_err(|e| {
            target.error(format!(
                "the authorization could not be completed: {}; run `mcpbox login {}` again",
                describe(&e),
                target.name
            ))
        })?;

    let credentials = pending
        .load()
        .await
        .ok()
        .flatten()
        .ok_or_else(|| target.error("the authorization server issued no token"))?;
    let mut manager = session.auth_manager;
    store
        .put(
            target.configured,
            Record {
                server: target.name.to_owned(),
                credentials,
                client_secret,
                redirect_uri,
                metadata,
                dpop_key: dpop.as_ref().map(|k| k.pem().to_owned()),
            },
        )
        .map_err(|e| target.error(e.to_string()))?;
    manager.set_credential_store(store.credentials(target.configured));
    Ok(Authorized { manager, dpop })
}

/// The authorization server's metadata: the document at
/// `oauth.authServerMetadataUrl`, or what discovery from the challenge finds;
/// refused unless `what` (the credential the grant will send) may go to its
/// token endpoint ([`net::credential_endpoint`]).
async fn discover(
    target: &Target<'_>,
    manager: &AuthorizationManager,
    challenge: Option<&str>,
    what: &str,
) -> Result<AuthorizationMetadata, OAuthError> {
    let metadata = match &target.oauth.auth_server_metadata_url {
        Some(url) => configured_metadata(target, url).await?,
        None => {
            manager
                .resolve_metadata_from_challenge(challenge)
                .await
                .map_err(|e| target.error(format!("OAuth discovery failed: {}", describe(&e))))?
                .metadata
        }
    };
    net::credential_endpoint(
        target,
        "the authorization server's token endpoint",
        &metadata.token_endpoint,
        metadata.issuer.as_deref(),
        what,
    )?;
    Ok(metadata)
}

/// The document at `oauth.authServerMetadataUrl`: RFC 8414 or OpenID metadata
/// whose `issuer` is the one the URL was derived from (RFC 8414 §3.3: the
/// well-known path inserted after the origin, or OpenID's appended).
async fn configured_metadata(
    target: &Target<'_>,
    url: &str,
) -> Result<AuthorizationMetadata, OAuthError> {
    let field = "`oauth.authServerMetadataUrl`";
    let client = net::Client::for_resource(target.url).map_err(|e| target.error(e))?;
    let request = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| target.error(format!("{field} {url:?} is not a URL: {e}")))?;
    let response = client
        .fetch(request, false)
        .await
        .map_err(|e| target.error(format!("{field} {url} could not be fetched: {}", chain(&e))))?;
    if !response.status().is_success() {
        return Err(target.error(format!(
            "{field} {url} answered HTTP {}; check the URL",
            response.status()
        )));
    }
    let metadata: AuthorizationMetadata = serde_json::from_slice(response.body()).map_err(|e| {
        target.error(format!(
            "{field} {url} is not authorization server metadata ({e}); check the URL"
        ))
    })?;
    let issuer = metadata.issuer.clone().unwrap_or_default();
    let expected = |issuer: &str| -> Vec<String> {
        let Ok(parsed) = Url::parse(issuer) else {
            return Vec::new();
        };
        let origin = parsed.origin().ascii_serialization();
        let path = parsed.path().trim_end_matches('/');
        let mut urls = Vec::new();
        for name in ["oauth-authorization-server", "openid-configuration"] {
            urls.push(format!("{origin}/.well-known/{name}{path}"));
        }
        urls.push(format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ));
        urls
    };
    if !expected(&issuer).iter().any(|u| u == url) {
        return Err(target.error(format!(
            "{field} {url} names the issuer {issuer:?}, which does not publish metadata at that \
             URL (RFC 8414 §3.3); the document may be forged or the URL wrong"
        )));
    }
    Ok(metadata)
}

/// The query parameter `key` of `url`.
fn query_param(url: &str, key: &str) -> Option<String> {
    Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// A machine client's token, with no user: the client credentials grant
/// (SEP-1046), where the client authenticates with its secret
/// (`client_secret_basic` or `_post` as the server offers, through rmcp) or
/// with an assertion signed by its private key (`private_key_jwt`,
/// [`super::assertion`]); enterprise-managed authorization
/// ([`super::enterprise`]); or the workload's own identity token
/// ([`super::workload_identity`]). The token is kept in memory only: the
/// configured credential gets a new one whenever needed.
pub(crate) async fn client_credentials(
    target: &Target<'_>,
    challenge: Option<&str>,
) -> Result<Authorized, OAuthError> {
    let oauth = target.oauth;
    let jwt = super::assertion::configured(oauth);
    let enterprise = super::enterprise::configured(oauth);
    let workload = super::workload_identity::configured(oauth);
    if workload && (jwt || enterprise || oauth.client_secret.is_some()) {
        return Err(target.error(
            "`oauth.identityToken`/`oauth.identityTokenFile` (workload identity federation) \
             is set with a client secret, a private key or `oauth.idpIdToken`; the workload's \
             identity token is the whole credential of that grant, so keep it alone (with \
             `oauth.clientId` if the authorization server wants one)",
        ));
    }
    let client_id = match &oauth.client_id {
        Some(id) => id.as_str(),
        // The JWT bearer grant needs no client (RFC 7523 §3.1).
        None if workload => "",
        None => {
            return Err(target.error(
                "`oauth.grantType` \"client_credentials\" needs `oauth.clientId`, and \
                 `oauth.clientSecret` or a private key in `oauth.privateKeyFile`",
            ));
        }
    };
    if jwt && enterprise {
        return Err(target.error(
            "`oauth.idpIdToken` (enterprise-managed authorization) and a private key are both \
             set; the MCP server's authorization server takes the client secret there",
        ));
    }
    if jwt && oauth.client_secret.is_some() {
        return Err(target.error(
            "`oauth.clientSecret` and a private key (`oauth.privateKeyFile` or \
             `oauth.privateKey`) are both set; keep the one the authorization server \
             registered for this client",
        ));
    }
    let mut manager = manager(target).await?;
    let what = if workload {
        "the workload's identity token"
    } else if enterprise {
        "the identity assertion (ID-JAG)"
    } else if jwt {
        "a client assertion"
    } else {
        "the client secret"
    };
    let metadata = discover(target, &manager, challenge, what).await?;
    let memory = InMemoryCredentialStore::new();
    if jwt || enterprise || workload {
        let credentials = if workload {
            super::workload_identity::exchange(target, client_id, &metadata).await?
        } else if enterprise {
            super::enterprise::exchange(target, client_id, &metadata).await?
        } else {
            super::assertion::exchange(target, client_id, &metadata).await?
        };
        manager.set_metadata(metadata);
        memory
            .save(credentials)
            .await
            .map_err(|e| target.error(format!("the token could not be kept: {}", describe(&e))))?;
        manager.set_credential_store(memory);
        return Ok(Authorized::bearer(manager));
    }
    let Some(secret) = &oauth.client_secret else {
        return Err(target.error(
            "`oauth.grantType` \"client_credentials\" needs `oauth.clientSecret` or a \
             private key in `oauth.privateKeyFile` (for `private_key_jwt`)",
        ));
    };
    manager.set_metadata(metadata);
    manager.set_credential_store(memory);
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: client_id.to_owned(),
        client_secret: resolve_secret(target, secret)?,
        scopes: oauth.scopes.clone(),
        resource: Some(target.url.to_string()),
    };
    let fail = |e: AuthError| {
        target.error(format!(
            "the client credentials grant failed: {}; check `oauth.clientId` and \
             `oauth.clientSecret`",
            describe(&e)
        ))
    };
    manager
        .validate_client_credentials_metadata(&config)
        .map_err(fail)?;
    manager
        .configure_client_credentials(&config)
        .map_err(fail)?;
    manager
        .exchange_client_credentials(&config)
        .await
        .map_err(fail)?;
    Ok(Authorized::bearer(manager))
}

/// `error` and `error_description` of a redirect that carries no code.
fn refusal(callback_url: &str) -> Option<String> {
    let get = |k: &str| query_param(callback_url, k);
    let error = get("error")?;
    Some(match get("error_description") {
        Some(d) => format!("{error} ({d})"),
        None => error,
    })
}

/// An rmcp error for people: its text, with the cause of an HTTP failure.
fn describe(e: &AuthError) -> String {
    chain(e)
}

/// An error with its causes (an HTTP library's own text omits why a request failed).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A token response a grant got just now, kept as rmcp keeps the ones it gets
/// (the time it was received lets a refresh come before it expires).
pub(super) fn received_now(
    client_id: &str,
    response: OAuthTokenResponse,
    scopes: Vec<String>,
) -> StoredCredentials {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    StoredCredentials::new(client_id.to_owned(), Some(response), scopes, Some(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `${VAR}` value shows in no message, however it was written into it:
    /// as is, percent-encoded in a path, a query or a password, form-encoded.
    #[test]
    fn messages_show_the_url_as_configured() {
        let configured = "https://u:${PASS}@${HOST}/a/${SEG}?key=${KEY}";
        let values = ["p@ss word", "Mcp.Example", "a b/c", "k&y=1"].map(str::to_owned);
        let url = crate::transport::endpoint::http_endpoint(configured, &[]).url;
        let resolved = Resolved::new(&url, &values);
        let text = "failed for https://u:p%40ss%20word@mcp.example/a/a%20b/c?key=k&y=1 \
                    (resource=https%3A%2F%2Fmcp.example%2Fa%2Fa+b%2Fc)";
        let scrubbed = resolved.scrub(text);
        for value in ["p%40ss", "word", "mcp.example", "a%20b", "a+b", "k&y"] {
            assert!(!scrubbed.contains(value), "{value} in {scrubbed}");
        }
        assert!(
            scrubbed.contains("https://u:${PASS}@${HOST}/a/${SEG}?key=${KEY}"),
            "{scrubbed}"
        );
    }

    /// A loopback listener that must see no connection.
    fn untouched() -> (std::net::TcpListener, u16) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        (listener, port)
    }

    fn assert_untouched(listener: &std::net::TcpListener, what: &str) {
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "{what}"
        );
    }

    /// Every grant's credential goes through the same check: metadata whose
    /// token endpoint is on another origin than its issuer gets no client
    /// secret, no assertion, no identity token.
    #[tokio::test(flavor = "multi_thread")]
    async fn no_grant_sends_its_credential_to_a_token_endpoint_off_the_issuers_origin() {
        let (elsewhere, port) = untouched();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let document = serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("http://127.0.0.1:{port}/token"),
        })
        .to_string();
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{document}",
            document.len()
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut write = stream.try_clone().unwrap();
                crate::oauth::scripted::read_request(&mut std::io::BufReader::new(stream));
                let _ = std::io::Write::write_all(&mut write, answer.as_bytes());
            }
        });
        let metadata_url = format!("{issuer}/.well-known/oauth-authorization-server");
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let machine = OAuthConfig {
            grant_type: Some("client_credentials".into()),
            client_id: Some("svc".into()),
            auth_server_metadata_url: Some(metadata_url),
            ..OAuthConfig::default()
        };
        let grants = [
            (
                OAuthConfig {
                    client_secret: Some("secret-SECRET".into()),
                    ..machine.clone()
                },
                "the client secret",
            ),
            (
                OAuthConfig {
                    private_key: Some(crate::oauth::assertion::tests::P256.into()),
                    ..machine.clone()
                },
                "a client assertion",
            ),
            (
                OAuthConfig {
                    identity_token: Some("eyJh.eyJz.SECRET".into()),
                    ..machine.clone()
                },
                "the workload's identity token",
            ),
        ];
        for (oauth, what) in grants {
            let target = Target {
                name: "m",
                configured: "http://127.0.0.1:1/mcp",
                url: &url,
                oauth: &oauth,
                resolved: &NOTHING_RESOLVED,
            };
            let e = match client_credentials(&target, None).await {
                Ok(_) => panic!("{what} was sent"),
                Err(e) => e.to_string(),
            };
            assert!(
                e.contains("is not on the origin of its issuer")
                    && e.contains(&format!("did not send it {what}"))
                    && !e.contains("SECRET"),
                "{e}"
            );
        }
        assert_untouched(&elsewhere, "a credential went to another origin");
    }

    /// DPoP's discovery runs on the same client as every other: a metadata
    /// URL whose host name resolves to loopback is not fetched for a server
    /// that is not on loopback. (The name is this machine's own, where it
    /// resolves to loopback alone: no other name does without a DNS server.)
    #[tokio::test(flavor = "multi_thread")]
    async fn dpop_discovery_checks_the_addresses_a_name_resolves_to() {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .to_owned();
        let loopback = match tokio::net::lookup_host((host.as_str(), 0)).await {
            Ok(addrs) => {
                let addrs: Vec<_> = addrs.collect();
                !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
            }
            Err(_) => false,
        };
        if host.is_empty() || host.eq_ignore_ascii_case("localhost") || !loopback {
            eprintln!("skipped: the host name {host:?} does not resolve to loopback alone");
            return;
        }
        let (listener, port) = untouched();
        let url = Url::parse("http://mcp.invalid/mcp").unwrap();
        let oauth = OAuthConfig::default();
        let target = Target {
            name: "d",
            configured: "http://mcp.invalid/mcp",
            url: &url,
            oauth: &oauth,
            resolved: &NOTHING_RESOLVED,
        };
        let key = Arc::new(DpopKey::generate().unwrap());
        let (manager, _) = dpop_manager(&target, &key).await.unwrap();
        let challenge = format!(
            "Bearer resource_metadata=\"http://{host}:{port}/.well-known/oauth-protected-resource\""
        );
        assert!(
            manager
                .resolve_metadata_from_challenge(Some(&challenge))
                .await
                .is_err()
        );
        assert_untouched(&listener, "DPoP's discovery reached a loopback address");
    }
}
