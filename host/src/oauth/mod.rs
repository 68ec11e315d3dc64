//! OAuth for remote servers: the MCP authorization flow, run by the host so
//! that access tokens, refresh tokens, client secrets and PKCE verifiers never
//! enter the guest.
//!
//! # Where it happens
//! The guest's requests to a remote server go out through the `wasi:http` hook
//! (`imports/wasi_http.rs`), which hands them to `oauth::send`: it adds
//! `Authorization: Bearer …` when the store holds a token for the server
//! (refreshing it first when it is about to expire), and when the server answers
//! `401`, or `403` with `insufficient_scope` (step-up), it either runs an
//! authorization and sends the request once more with the new token
//! ([`Options::authorize_on_demand`](crate::Options::authorize_on_demand)), or
//! records that the server needs a login and passes the answer on. The guest
//! sees the answer it would see without OAuth: a success, or the `401`/`403`.
//! A server whose entry configures an `Authorization` header is left alone.
//! A token is bound to the URL it was issued for: the state of a server is
//! found from the grant of each request by its name and URL (`OAuth`), so
//! a reload that gives a name another URL never sends it the old URL's token.
//! A token the authorization server bound to mcpbox's key (DPoP, `dpop`) goes
//! as `Authorization: DPoP …` with a proof on every request instead.
//!
//! # The library
//! The protocol mechanics are rmcp's `auth` module (the official Rust MCP SDK),
//! which drives the `oauth2` crate: protected-resource metadata (RFC 9728),
//! authorization-server metadata (RFC 8414, OpenID discovery, the 2025-03-26
//! fallbacks), `issuer` checks of metadata and of the redirect (RFC 9207), PKCE
//! S256, resource indicators (RFC 8707), dynamic client registration (RFC 7591),
//! client ID metadata documents, scope selection and step-up, `none`/`basic`/
//! `post` token endpoint authentication, refresh. The `oauth2` crate alone
//! offers the grant and PKCE but none of MCP's discovery, registration, scope
//! or issuer rules, which would all be written here by hand. The client
//! credentials grant with `private_key_jwt` signs its assertion with
//! `jsonwebtoken` (`assertion`). rmcp is used for
//! its authorization client only (no transports); its `CredentialStore` trait
//! is implemented on mcpbox's [`TokenStore`].
//!
//! # Files
//! - [`store`]: where tokens live (a 0600 file written atomically, or memory).
//! - `config`: the `oauth` fields of server entries.
//! - `flow`: one authorization, from discovery to the tokens in the store.
//! - `assertion`: the client credentials grant with `private_key_jwt` (RFC 7523).
//! - `enterprise`: enterprise-managed authorization (SEP-990: token exchange,
//!   then the JWT bearer grant), through rmcp's `enterprise` module.
//! - `workload_identity`: workload identity federation (SEP-1933: the
//!   workload's own JWT as the JWT bearer grant).
//! - `dpop`: DPoP-bound tokens (RFC 9449, SEP-1932): the key, the proofs, the
//!   nonces.
//! - `callback`: the loopback listener for the redirect.
//! - `net`: the HTTP client of every OAuth request (addresses checked as
//!   discovery checks them, answers read up to 1 MiB) and the one rule for
//!   where a credential may be sent.

mod assertion;
mod callback;
mod config;
mod dpop;
mod enterprise;
mod flow;
mod net;
pub mod store;
mod workload_identity;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use oauth2::TokenResponse as _;
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, WWW_AUTHENTICATE};
use rmcp::transport::auth::AuthError;

pub(crate) use flow::references;
pub use store::TokenStore;

use crate::Event;
use crate::imports::remote::Granted;
use config::{OAuthConfig, RemoteEntry};
use dpop::DpopKey;

/// How long an authorization may wait for the user by default.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How many authorizations one server may need in a row before mcpbox stops
/// asking (a server that keeps refusing every token, or keeps asking for more
/// scopes).
const MAX_AUTHORIZATIONS_IN_A_ROW: u32 = 3;

/// Why an authorization failed. The message names the server and says what to do.
#[derive(Debug, thiserror::Error)]
#[error("server `{server}`: {message}")]
pub struct OAuthError {
    /// The configured server name.
    pub server: String,
    message: String,
}

/// Why the requests of a server go without a usable authorization: the
/// transport fact the guest gets (`remote.grant.needs-authorization`). The
/// text says why, in the host's words, and never holds a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A person must authorize (`mcpbox login SERVER`).
    Login(String),
    /// The configured machine credentials (client credentials grant) got no
    /// token: the configuration must change, a login would not help.
    Credentials(String),
}

/// The result of a login.
#[derive(Debug, Clone)]
pub struct Login {
    /// The scopes the authorization server granted (as it reported them).
    pub scopes: Vec<String>,
    /// Where the tokens went ([`TokenStore::describe`]).
    pub stored_in: String,
}

/// Logs in to the remote server `server` of the configuration `text`: runs the
/// authorization, showing its URL through `show` (open a browser, print it),
/// and keeps the tokens in `store`. Waits up to `timeout` for the user.
pub async fn login(
    text: &str,
    server: &str,
    store: &TokenStore,
    show: &(dyn Fn(&str) + Send + Sync),
    timeout: Duration,
) -> Result<Login, OAuthError> {
    let (entry, url, resolved) = entry(&describe(text, server).await?, server)?;
    let target = flow::Target {
        name: server,
        configured: &entry.url,
        url: &url,
        oauth: &entry.oauth,
        resolved: &resolved,
    };
    let authorized = flow::authorize(&target, store, None, &[], show, timeout).await?;
    let scopes = authorized.manager.get_current_scopes().await;
    Ok(Login {
        scopes,
        stored_in: store.describe(),
    })
}

/// Forgets the tokens of `server` of the configuration `text`; whether there were any.
pub fn logout(text: &str, server: &str, store: &TokenStore) -> Result<bool, OAuthError> {
    let described = crate::describe::Describer::embedded()
        .and_then(|guest| guest.describe_blocking("the configuration", text))
        .map_err(|e| OAuthError {
            server: server.to_owned(),
            message: e.to_string(),
        })?
        .unwrap_or_default();
    let (entry, _, _) = entry(&described, server)?;
    store.remove(&entry.url).map_err(|e| OAuthError {
        server: server.to_owned(),
        message: e.to_string(),
    })
}

/// Whether the store holds tokens for `server` of the configuration `text`.
pub fn has_tokens(text: &str, server: &str, store: &TokenStore) -> bool {
    let described = crate::describe::Describer::embedded()
        .and_then(|guest| guest.describe_blocking("the configuration", text));
    let Ok(Ok(described)) = described else {
        return false;
    };
    config::remote_entries(&described)
        .get(server)
        .is_some_and(|e| matches!(store.get(&e.url), Ok(Some(_))))
}

/// What the embedded guest reads in `text` (a bare instance: no runtime
/// exists yet); text it refuses whole names no server.
async fn describe(
    text: &str,
    server: &str,
) -> Result<Vec<crate::describe::ServerDescription>, OAuthError> {
    let error = |e: crate::Error| OAuthError {
        server: server.to_owned(),
        message: e.to_string(),
    };
    let guest = crate::describe::Describer::embedded().map_err(error)?;
    Ok(guest
        .describe("the configuration", text)
        .await
        .map_err(error)?
        .unwrap_or_default())
}

/// The entry of `server` and its URL with `${VAR}` resolved.
fn entry(
    described: &[crate::describe::ServerDescription],
    server: &str,
) -> Result<(RemoteEntry, Url, flow::Resolved), OAuthError> {
    let error = |message: String| OAuthError {
        server: server.to_owned(),
        message,
    };
    let entry = config::remote_entries(described).remove(server).ok_or_else(|| {
        error("is not a remote server of this configuration (OAuth is for `http` and `sse` servers with a `url`)".to_owned())
    })?;
    let endpoint = crate::bindings::wit::HttpEndpoint {
        url: entry.template.clone(),
        headers: Vec::new(),
    };
    let spec =
        crate::transport::endpoint::resolve_http(&endpoint, &|name| std::env::var(name).ok())
            .map_err(error)?;
    let url = Url::parse(&spec.url)
        .map_err(|e| error(format!("`url` {:?} is not a URL: {e}", entry.url)))?;
    let resolved = flow::Resolved::new(&entry.template, &spec.values);
    Ok((entry, url, resolved))
}

/// A runtime's OAuth state, shared by every guest instance it makes.
///
/// Tokens are bound to the URL they were issued for: the state of a server
/// is kept by its name *and* its URL (as configured, which keys the store,
/// and as resolved, where its requests go), and looked up for every request
/// from the grant the request goes under. A reload that points a name at
/// another URL therefore gets a new state, with that URL's tokens or none:
/// the old URL's token never goes to the new one.
pub(crate) struct OAuth {
    store: TokenStore,
    on_demand: bool,
    timeout: Duration,
    events: crate::events::Events,
    /// The remote entries of every configuration applied, by name and URL as
    /// configured: a reload adds its own, and servers still running from an
    /// earlier one (an entry the reload could not apply) keep theirs.
    entries: Mutex<BTreeMap<(String, String), OAuthConfig>>,
    servers: Mutex<HashMap<ServerKey, Arc<ServerAuth>>>,
    /// The servers that need an authorization the host cannot get by itself:
    /// the message for people and the fact for the guest.
    required: Mutex<BTreeMap<String, (String, Refusal)>>,
    /// Authorization URLs waiting for the user, by server: an embedder that
    /// subscribed to events after the event was sent still finds them.
    pending: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("store", &self.store)
            .field("on_demand", &self.on_demand)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The state for a runtime; its configuration's remote entries come with
    /// [`learn`](OAuth::learn) before its servers start.
    pub fn new(
        store: TokenStore,
        on_demand: bool,
        timeout: Duration,
        events: crate::events::Events,
    ) -> OAuth {
        OAuth {
            store,
            on_demand,
            timeout,
            events,
            entries: Mutex::default(),
            servers: Mutex::default(),
            required: Mutex::default(),
            pending: Mutex::default(),
        }
    }

    /// Takes in the remote entries of a configuration about to be applied (as
    /// the guest describes it: at a start, a restart after a trap, a reload),
    /// so that the servers it starts get their `oauth` fields.
    pub fn learn(&self, described: &[crate::describe::ServerDescription]) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(by_name_and_url(described));
    }

    /// Authorization URLs waiting for the user, by server.
    pub fn pending(&self) -> BTreeMap<String, String> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_pending(&self, server: &str, url: Option<&str>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        match url {
            Some(url) => pending.insert(server.to_owned(), url.to_owned()),
            None => pending.remove(server),
        };
    }

    /// The servers that need a login, with the reason.
    pub fn required(&self) -> BTreeMap<String, String> {
        self.required
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(server, (message, _))| (server.clone(), message.clone()))
            .collect()
    }

    /// Why `server`'s requests go without a usable authorization, if they do.
    pub fn refusal(&self, server: &str) -> Option<Refusal> {
        self.required
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(server)
            .map(|(_, fact)| fact.clone())
    }

    /// Lists `server` as needing a login. The first reason stays until an
    /// authorization succeeds: it is the specific one (a failed refresh), the
    /// refusals that follow only repeat it.
    fn require(&self, server: &str, reason: String, fact: Refusal, url: Option<String>) {
        self.required
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(server.to_owned())
            .or_insert((reason, fact));
        let _ = self.events.send(Event::AuthorizationRequired {
            server: server.to_owned(),
            url,
        });
    }

    fn satisfied(&self, server: &str) {
        self.required
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(server);
    }

    /// What a request under `granted` needs: None when the server's entry sets
    /// its own `Authorization` header. The state is the one of the grant's
    /// server name, URL and `oauth` fields, made afresh when any differs from
    /// what an earlier request of that name used.
    pub fn for_grant(self: &Arc<Self>, granted: &Granted) -> Option<Authorizing> {
        if granted.headers.contains_key(AUTHORIZATION) {
            return None;
        }
        let oauth = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(granted.server.clone(), granted.configured.clone()))
            .cloned()
            .unwrap_or_default();
        let key = ServerKey {
            name: granted.server.clone(),
            configured: granted.configured.clone(),
            url: granted.url.to_string(),
        };
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let server = match servers.get(&key) {
            Some(server) if server.oauth == oauth => server.clone(),
            _ => {
                let server = Arc::new(ServerAuth {
                    name: granted.server.clone(),
                    configured: granted.configured.clone(),
                    url: granted.url.clone(),
                    resolved: flow::Resolved::of(&granted.references, &granted.values),
                    oauth,
                    manager: tokio::sync::Mutex::new(Loaded::NotYet),
                    flow: tokio::sync::Mutex::new(()),
                    in_a_row: AtomicU32::new(0),
                });
                // A name that moved to another URL: why the old one needed a
                // login is no reason for the new one.
                if servers.keys().any(|k| k.name == key.name && *k != key) {
                    self.satisfied(&key.name);
                }
                servers.insert(key, server.clone());
                server
            }
        };
        Some(Authorizing {
            ctx: self.clone(),
            server,
        })
    }
}

/// Remote entries by name and URL as configured.
fn by_name_and_url(
    described: &[crate::describe::ServerDescription],
) -> BTreeMap<(String, String), OAuthConfig> {
    config::remote_entries(described)
        .into_iter()
        .map(|(name, entry)| ((name, entry.url), entry.oauth))
        .collect()
}

/// What one server's OAuth state is bound to: its name, its URL as
/// configured (the store's key) and as resolved (where requests go).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ServerKey {
    name: String,
    configured: String,
    url: String,
}

/// One server's OAuth state.
struct ServerAuth {
    name: String,
    configured: String,
    url: Url,
    /// The `${VAR}` values of the URL, which messages never show.
    resolved: flow::Resolved,
    oauth: OAuthConfig,
    manager: tokio::sync::Mutex<Loaded>,
    /// One authorization at a time.
    flow: tokio::sync::Mutex<()>,
    /// Authorizations since a request last succeeded.
    in_a_row: AtomicU32,
}

enum Loaded {
    /// The store has not been read yet.
    NotYet,
    /// No usable tokens.
    Nothing,
    Manager(Arc<flow::Authorized>),
}

/// An access token and how it goes to the server: as a bearer token, or
/// bound to the server's DPoP key (a proof with every request).
struct Credential {
    token: String,
    dpop: Option<Arc<DpopKey>>,
}

impl Credential {
    /// The token `authorized` holds now, refreshed when about to expire.
    async fn of(authorized: &flow::Authorized) -> Result<Credential, AuthError> {
        let token = authorized.manager.get_access_token().await?;
        // DPoP only when the authorization server did bind the token: it
        // may issue a bearer token in answer to a proof (RFC 9449 §5).
        let dpop = match &authorized.dpop {
            Some(key) => match authorized.manager.get_credentials().await {
                Ok((_, Some(response)))
                    if response.token_type().as_ref().eq_ignore_ascii_case("dpop") =>
                {
                    Some(key.clone())
                }
                _ => None,
            },
            None => None,
        };
        Ok(Credential { token, dpop })
    }
}

impl ServerAuth {
    fn target(&self) -> flow::Target<'_> {
        flow::Target {
            name: &self.name,
            configured: &self.configured,
            url: &self.url,
            oauth: &self.oauth,
            resolved: &self.resolved,
        }
    }
}

/// A request's view of its server's OAuth state.
pub(crate) struct Authorizing {
    ctx: Arc<OAuth>,
    server: Arc<ServerAuth>,
}

impl Authorizing {
    /// The current access token, refreshed when about to expire; None when
    /// there is none (or it could not be refreshed: the server then needs a login).
    async fn access_token(&self) -> Option<Credential> {
        let manager = {
            let mut loaded = self.server.manager.lock().await;
            if let Loaded::NotYet = *loaded {
                *loaded = match self.ctx.store.get(&self.server.configured) {
                    Ok(Some(record)) => {
                        match flow::from_record(&self.server.target(), &record, &self.ctx.store)
                            .await
                        {
                            Ok(authorized) => Loaded::Manager(Arc::new(authorized)),
                            Err(e) => {
                                let fact = Refusal::Login(e.message.clone());
                                self.ctx
                                    .require(&self.server.name, e.to_string(), fact, None);
                                Loaded::Nothing
                            }
                        }
                    }
                    Ok(None) => Loaded::Nothing,
                    Err(e) => {
                        self.ctx.require(
                            &self.server.name,
                            format!("server `{}`: {e}", self.server.name),
                            Refusal::Login(format!("its stored tokens could not be read: {e}")),
                            None,
                        );
                        Loaded::Nothing
                    }
                };
            }
            match &*loaded {
                Loaded::Manager(m) => m.clone(),
                _ => return None,
            }
        };
        match Credential::of(&manager).await {
            Ok(credential) => Some(credential),
            // A machine client's token expired (it has no refresh token, and
            // rmcp has no client to refresh with): the next refusal gets a new
            // one with the configured credential, no login involved.
            Err(_) if self.server.oauth.client_credentials() => {
                *self.server.manager.lock().await = Loaded::Nothing;
                None
            }
            Err(e) => {
                let reason = match e {
                    AuthError::AuthorizationRequired => {
                        "the token expired and could not be refreshed".to_owned()
                    }
                    e => format!("refreshing the token failed: {e}"),
                };
                self.ctx.require(
                    &self.server.name,
                    format!(
                        "server `{}`: {reason}; run `mcpbox login {}`",
                        self.server.name, self.server.name
                    ),
                    Refusal::Login(reason),
                    None,
                );
                *self.server.manager.lock().await = Loaded::Nothing;
                None
            }
        }
    }

    /// Handles a refusal (`challenge` is the `WWW-Authenticate` value): runs an
    /// authorization when the runtime may, and returns the new token.
    async fn authorize(&self, used: Option<&str>, challenge: &str) -> Option<Credential> {
        let name = &self.server.name;
        if self.server.oauth.client_credentials() {
            return self.client_credentials(used, challenge).await;
        }
        if !self.ctx.on_demand {
            let why = if used.is_some() {
                "it refused the stored token"
            } else {
                "no token is stored for it"
            };
            self.ctx.require(
                name,
                format!("server `{name}` needs authorization: run `mcpbox login {name}`"),
                Refusal::Login(why.to_owned()),
                None,
            );
            return None;
        }
        let _flow = self.server.flow.lock().await;
        // Another request may have completed an authorization meanwhile.
        if let Some(credential) = self.access_token().await
            && Some(credential.token.as_str()) != used
        {
            return Some(credential);
        }
        if self.server.in_a_row.fetch_add(1, Ordering::SeqCst) >= MAX_AUTHORIZATIONS_IN_A_ROW {
            self.ctx.require(
                name,
                format!(
                    "server `{name}` refused {MAX_AUTHORIZATIONS_IN_A_ROW} authorizations in a \
                     row; check the scopes it needs (`oauth.scopes`) and run `mcpbox login {name}`"
                ),
                Refusal::Login(format!(
                    "it refused {MAX_AUTHORIZATIONS_IN_A_ROW} authorizations in a row; check the \
                     scopes it needs (`oauth.scopes`)"
                )),
                None,
            );
            return None;
        }
        let ctx = &self.ctx;
        let show = move |url: &str| {
            ctx.set_pending(name, Some(url));
            let _ = ctx.events.send(Event::AuthorizationRequired {
                server: name.clone(),
                url: Some(url.to_owned()),
            });
        };
        let previous = match &*self.server.manager.lock().await {
            Loaded::Manager(m) => m.manager.get_current_scopes().await,
            _ => Vec::new(),
        };
        let target = self.server.target();
        let result = flow::authorize(
            &target,
            &self.ctx.store,
            Some(challenge),
            &previous,
            &show,
            self.ctx.timeout,
        )
        .await;
        self.ctx.set_pending(name, None);
        match result {
            Ok(authorized) => {
                let authorized = Arc::new(authorized);
                *self.server.manager.lock().await = Loaded::Manager(authorized.clone());
                self.ctx.satisfied(name);
                Credential::of(&authorized).await.ok()
            }
            Err(e) => {
                let fact = Refusal::Login(e.message.clone());
                self.ctx.require(name, e.to_string(), fact, None);
                None
            }
        }
    }
}

impl Authorizing {
    /// A machine client's token (no user: on demand or not).
    async fn client_credentials(&self, used: Option<&str>, challenge: &str) -> Option<Credential> {
        let name = &self.server.name;
        let _flow = self.server.flow.lock().await;
        if let Some(credential) = self.access_token().await
            && Some(credential.token.as_str()) != used
        {
            return Some(credential);
        }
        if self.server.in_a_row.fetch_add(1, Ordering::SeqCst) >= MAX_AUTHORIZATIONS_IN_A_ROW {
            return None;
        }
        match flow::client_credentials(&self.server.target(), Some(challenge)).await {
            Ok(authorized) => {
                let authorized = Arc::new(authorized);
                *self.server.manager.lock().await = Loaded::Manager(authorized.clone());
                self.ctx.satisfied(name);
                Credential::of(&authorized).await.ok()
            }
            Err(e) => {
                let fact = Refusal::Credentials(e.message.clone());
                self.ctx.require(name, e.to_string(), fact, None);
                None
            }
        }
    }
}

/// The `WWW-Authenticate` of an answer that asks for (other) authorization:
/// `401`, or `403` with `insufficient_scope`.
fn challenge(response: &reqwest::Response) -> Option<String> {
    let header = response
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    match response.status().as_u16() {
        401 => Some(header),
        403 if header.contains("insufficient_scope") => Some(header),
        _ => None,
    }
}

/// Why a request of the guest's was not sent.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The HTTP exchange failed.
    Http(reqwest::Error),
    /// No DPoP proof could be made for it; the text names the server and the
    /// reason, never a credential.
    Proof(String),
}

/// Sends one request of the guest's, with OAuth when `auth` is given (see the
/// module docs).
pub(crate) async fn send(
    auth: Option<Authorizing>,
    client: &reqwest::Client,
    method: http::Method,
    url: Url,
    headers: HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, SendError> {
    let mut headers = headers;
    if auth.is_some() {
        // Only the host authorizes: anything the guest put there goes.
        headers.remove(AUTHORIZATION);
        headers.remove(dpop::DPOP);
    }
    let name = auth
        .as_ref()
        .map(|a| a.server.name.clone())
        .unwrap_or_default();
    let build = |credential: Option<&Credential>| -> Result<reqwest::RequestBuilder, SendError> {
        let mut request = client
            .request(method.clone(), url.clone())
            .headers(headers.clone());
        match credential {
            Some(Credential {
                token,
                dpop: Some(key),
            }) => {
                let proof = key
                    .proof(
                        dpop::Server::Resource,
                        method.as_str(),
                        &url,
                        Some(token.as_str()),
                    )
                    .map_err(|e| SendError::Proof(format!("server `{name}`: {e}")))?;
                request = request
                    .header(AUTHORIZATION, format!("DPoP {token}"))
                    .header(dpop::DPOP, proof);
            }
            Some(Credential { token, dpop: None }) => request = request.bearer_auth(token),
            None => {}
        }
        if !body.is_empty() {
            request = request.body(body.clone());
        }
        Ok(request)
    };
    let Some(auth) = auth else {
        return attempt(&build, None).await;
    };
    let credential = auth.access_token().await;
    let response = attempt(&build, credential.as_ref()).await?;
    let Some(challenge) = challenge(&response) else {
        if response.status().is_success() {
            auth.server.in_a_row.store(0, Ordering::SeqCst);
        }
        return Ok(response);
    };
    let used = credential.as_ref().map(|c| c.token.as_str());
    match auth.authorize(used, &challenge).await {
        Some(credential) => attempt(&build, Some(&credential)).await,
        None => Ok(response),
    }
}

/// Sends the request `build` makes with `credential`; a DPoP-bound one once
/// more with the MCP server's nonce when it asks for one (RFC 9449 §9: once,
/// a second request for a nonce is the server's answer).
async fn attempt(
    build: &impl Fn(Option<&Credential>) -> Result<reqwest::RequestBuilder, SendError>,
    credential: Option<&Credential>,
) -> Result<reqwest::Response, SendError> {
    let send = || async { build(credential)?.send().await.map_err(SendError::Http) };
    let response = send().await?;
    let Some(key) = credential.and_then(|c| c.dpop.as_ref()) else {
        return Ok(response);
    };
    key.note_nonce(dpop::Server::Resource, response.headers());
    if !dpop::resource_asks_for_nonce(response.status().as_u16(), response.headers()) {
        return Ok(response);
    }
    let response = send().await?;
    key.note_nonce(dpop::Server::Resource, response.headers());
    Ok(response)
}

/// For the tests: a loopback HTTP/1.1 server that reads each request whole and
/// answers from a script (one connection per request, `connection: close`).
#[cfg(test)]
pub(crate) mod scripted {
    use std::io::{BufRead, BufReader, Write};

    /// Reads one request from `reader`: its head (request line and headers, as
    /// sent) and its body (`content-length` bytes).
    pub(crate) fn read_request(reader: &mut impl BufRead) -> (String, Vec<u8>) {
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        (head, body)
    }

    /// Serves `requests` requests, answering each with `answer(head, body)`;
    /// returns the port and, when done, what `answer` kept of each request.
    pub(crate) fn serve<T: Send + 'static>(
        requests: usize,
        mut answer: impl FnMut(&str, &[u8]) -> (String, T) + Send + 'static,
    ) -> (u16, std::thread::JoinHandle<Vec<T>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..requests {
                let (stream, _) = listener.accept().unwrap();
                let mut write = stream.try_clone().unwrap();
                let (head, body) = read_request(&mut BufReader::new(stream));
                let (text, kept) = answer(&head, &body);
                write.write_all(text.as_bytes()).unwrap();
                seen.push(kept);
            }
            seen
        });
        (port, thread)
    }

    /// Answers every request with `answer`, for as long as the test runs;
    /// returns the port and the request heads seen so far.
    pub(crate) fn recorder(answer: String) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut write = stream.try_clone().unwrap();
                let (head, _) = read_request(&mut BufReader::new(stream));
                kept.lock().unwrap().push(head);
                let _ = write.write_all(answer.as_bytes());
            }
        });
        (port, seen)
    }

    /// Answers with `answers` in order; returns the port and the request heads.
    pub(crate) fn answers(answers: Vec<String>) -> (u16, std::thread::JoinHandle<Vec<String>>) {
        let mut answers = answers.into_iter();
        let count = answers.len();
        serve(count, move |head, _| {
            (answers.next().unwrap_or_default(), head.to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    //! The boundary: what the guest hands the `wasi:http` hook and what the hook
    //! hands back, for a server with a stored token and one without, searched
    //! for the token, along with everything the runtime would show (the
    //! reasons, the events).

    use std::pin::Pin;

    use base64::Engine as _;
    use http_body_util::{BodyExt, Full};
    use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
    use sha2::Digest as _;
    use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

    use super::*;
    use crate::store::{HostState, Policy};

    const TOKEN: &str = "tok-SECRET-5a1b";

    /// Answers each request 200 when it carries the token, else 401 with a
    /// challenge; returns every request head it saw.
    fn server(requests: usize) -> (u16, std::thread::JoinHandle<Vec<String>>) {
        super::scripted::serve(requests, |head, body| {
            let authorized = head.contains(&format!("Bearer {TOKEN}"));
            let refresh = head.starts_with("POST /token");
            let answer = if refresh {
                // The refresh token was revoked.
                let error = r#"{"error":"invalid_grant"}"#;
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{error}",
                    error.len()
                )
            } else if authorized {
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_owned()
            } else {
                "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer error=\"invalid_token\"\r\n\
                 content-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned()
            };
            (answer, format!("{head}{}", String::from_utf8_lossy(body)))
        })
    }

    const EXPIRED: &str = "tok-EXPIRED-77c2";
    const REFRESH: &str = "refresh-SECRET-90d3";

    fn record(port: u16) -> store::Record {
        let response = serde_json::from_value(
            serde_json::json!({"access_token": TOKEN, "token_type": "Bearer"}),
        )
        .unwrap();
        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": format!("http://127.0.0.1:{port}/authorize"),
            "token_endpoint": format!("http://127.0.0.1:{port}/token"),
        }))
        .unwrap();
        store::Record {
            server: "with".into(),
            credentials: StoredCredentials::new("client".into(), Some(response), vec![], None),
            client_secret: None,
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            metadata,
            dpop_key: None,
        }
    }

    /// A token that expired an hour ago, with a refresh token the server revoked.
    fn expired(port: u16) -> store::Record {
        let mut record = record(port);
        record.credentials = StoredCredentials::new(
            "client".into(),
            Some(
                serde_json::from_value(serde_json::json!({
                    "access_token": EXPIRED, "token_type": "Bearer",
                    "expires_in": 60, "refresh_token": REFRESH,
                }))
                .unwrap(),
            ),
            vec![],
            Some(1),
        );
        record
    }

    /// What the guest gets back: status, headers and body, as text.
    async fn exchange(state: &mut HostState, uri: &str) -> String {
        let request = http::Request::builder()
            .method("POST")
            .uri(uri)
            .header("authorization", "Bearer guest-made")
            .body(
                Full::new(Bytes::from_static(b"{}"))
                    .map_err(|e| match e {})
                    .boxed_unsync(),
            )
            .unwrap();
        let future = state
            .grants
            .send_request(request, None, Box::new(async { Ok(()) }));
        let (response, _): (http::Response<WasiBody>, _) = Pin::from(future).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        format!("{parts:?} {}", String::from_utf8_lossy(&body))
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_guest_never_sees_a_token_and_a_refusal_names_the_login() {
        // with, without, expired's refresh, expired.
        let (port, requests) = server(4);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let other = format!("http://127.0.0.1:{port}/other");
        let stale = format!("http://127.0.0.1:{port}/stale");
        let config = serde_json::json!({"mcpServers": {
            "with": {"type": "http", "url": url},
            "without": {"type": "http", "url": other},
            "expired": {"type": "http", "url": stale},
        }})
        .to_string();
        let store = TokenStore::memory();
        // A token the embedder hands over, as an embedder would.
        store.set_access_token(&url, TOKEN, None).unwrap();
        store.put(&stale, expired(port)).unwrap();
        let (mut state, oauth, mut seen_events) = runtime_state(&config, store);
        let mut handed = String::new();
        for (name, url) in [("with", &url), ("without", &other), ("expired", &stale)] {
            let ep = crate::transport::endpoint::http_endpoint(url, &[]);
            let grant = crate::imports::remote::open(&mut state, name, &ep, &|_| None).unwrap();
            let stand_in = format!("{grant:?}");
            handed.push_str(&stand_in);
        }
        let with = exchange(&mut state, "http://g0.mcpbox.internal/mcp").await;
        assert!(with.contains("200"), "{with}");
        let without = exchange(&mut state, "http://g1.mcpbox.internal/other").await;
        assert!(without.contains("401"), "{without}");
        // A refresh the server refuses: the request goes without a token, is
        // refused, and only this server needs a login.
        let refused = exchange(&mut state, "http://g2.mcpbox.internal/stale").await;
        assert!(refused.contains("401"), "{refused}");
        handed.push_str(&with);
        handed.push_str(&without);
        handed.push_str(&refused);
        let required = oauth.required();
        assert!(
            required["expired"].contains("could not be refreshed")
                && required["expired"].contains("mcpbox login expired"),
            "{required:?}"
        );
        assert!(
            required["without"].contains("mcpbox login without"),
            "{required:?}"
        );
        assert!(!required.contains_key("with"), "{required:?}");
        handed.push_str(&format!("{required:?}"));
        while let Ok(event) = seen_events.try_recv() {
            handed.push_str(&format!("{event:?}"));
        }
        assert!(handed.contains("AuthorizationRequired"), "{handed}");
        for secret in [TOKEN, EXPIRED, REFRESH] {
            assert!(!handed.contains(secret), "{secret} in {handed}");
        }
        // The server got the token, once, and never the guest's own header.
        let requests = requests.join().unwrap();
        assert!(
            requests[0].contains(&format!("Bearer {TOKEN}")),
            "{requests:?}"
        );
        assert!(
            !requests.iter().any(|r| r.contains("guest-made")),
            "{requests:?}"
        );
        assert!(!requests[1].contains(TOKEN), "{requests:?}");
        assert!(
            requests[2].starts_with("POST /token") && requests[2].contains(REFRESH),
            "{requests:?}"
        );
        assert!(!requests[3].contains(EXPIRED), "{requests:?}");
    }

    /// A host state whose grants authorize with `config`'s OAuth, and the
    /// events it sends.
    fn runtime_state(
        config: &str,
        store: TokenStore,
    ) -> (
        HostState,
        Arc<OAuth>,
        tokio::sync::broadcast::Receiver<Event>,
    ) {
        let events = crate::events::Events::default();
        let seen = events.subscribe();
        let oauth = Arc::new(OAuth::new(store, false, Duration::from_secs(1), events));
        let described = crate::describe::Describer::embedded()
            .unwrap()
            .describe_blocking("test", config)
            .unwrap()
            .unwrap();
        oauth.learn(&described);
        let mut state = HostState::new(
            Policy::default(),
            Default::default(),
            1 << 20,
            Default::default(),
        );
        state.grants.oauth = Some(oauth.clone());
        (state, oauth, seen)
    }

    /// A token bound to the server's DPoP key goes as `Authorization: DPoP`
    /// with a fresh proof on every request (`htm`, `htu` without the query,
    /// `ath`); the server's `use_dpop_nonce` gets the request once more with
    /// its nonce, which later proofs keep. The guest sees the answers only.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_dpop_bound_token_goes_with_a_fresh_proof_and_the_servers_nonce() {
        const BOUND: &str = "tok-DPOP-BOUND-31f4";
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_owned();
        let (port, requests) = super::scripted::answers(vec![
            "HTTP/1.1 401 Unauthorized\r\n\
             www-authenticate: DPoP error=\"use_dpop_nonce\", error_description=\"nonce\"\r\n\
             dpop-nonce: rs-nonce-1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_owned(),
            ok.clone(),
            ok,
        ]);
        let url = format!("http://127.0.0.1:{port}/mcp?tenant=7");
        let config =
            serde_json::json!({"mcpServers": {"bound": {"type": "http", "url": url}}}).to_string();
        let store = TokenStore::memory();
        let key = DpopKey::generate().unwrap();
        let mut bound = record(port);
        bound.credentials = StoredCredentials::new(
            "client".into(),
            Some(
                serde_json::from_value(
                    serde_json::json!({"access_token": BOUND, "token_type": "DPoP"}),
                )
                .unwrap(),
            ),
            vec![],
            None,
        );
        bound.dpop_key = Some(key.pem().to_owned());
        store.put(&url, bound).unwrap();
        let (mut state, oauth, _) = runtime_state(&config, store);
        let ep = crate::transport::endpoint::http_endpoint(&url, &[]);
        crate::imports::remote::open(&mut state, "bound", &ep, &|_| None).unwrap();
        let first = exchange(&mut state, "http://g0.mcpbox.internal/mcp?tenant=7").await;
        let second = exchange(&mut state, "http://g0.mcpbox.internal/mcp?tenant=7").await;
        assert!(
            first.contains("200") && second.contains("200"),
            "{first} {second}"
        );
        assert!(oauth.required().is_empty(), "{:?}", oauth.required());
        let requests = requests.join().unwrap();
        let proofs: Vec<serde_json::Value> = requests
            .iter()
            .map(|head| {
                assert!(
                    head.contains(&format!("authorization: DPoP {BOUND}")),
                    "{head}"
                );
                assert!(!head.contains("guest-made"), "{head}");
                let proof = head
                    .lines()
                    .find_map(|l| l.strip_prefix("dpop: "))
                    .expect("a proof with every request");
                let (header, claims) = dpop::tests::verify(proof.trim());
                // Signed by the stored key.
                assert_eq!(
                    serde_json::to_value(header.jwk).unwrap(),
                    serde_json::to_value(key.public_jwk()).unwrap()
                );
                claims
            })
            .collect();
        for claims in &proofs {
            assert_eq!(claims["htm"], "POST");
            assert_eq!(claims["htu"], format!("http://127.0.0.1:{port}/mcp"));
            assert_eq!(
                claims["ath"],
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(BOUND.as_bytes()))
            );
        }
        assert!(proofs[0].get("nonce").is_none(), "{}", proofs[0]);
        assert_eq!(proofs[1]["nonce"], "rs-nonce-1");
        assert_eq!(proofs[2]["nonce"], "rs-nonce-1");
        let jtis: std::collections::BTreeSet<_> =
            proofs.iter().map(|c| c["jti"].to_string()).collect();
        assert_eq!(jtis.len(), 3, "a new proof each time");
        for handed in [&first, &second] {
            assert!(
                !handed.contains(BOUND) && !handed.contains("eyJ"),
                "{handed}"
            );
        }
    }

    /// A stored DPoP key that is no key: the server needs a login, and the
    /// message never shows the stored text.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_unusable_stored_dpop_key_asks_for_a_login_without_showing_it() {
        let (port, requests) = server(1);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let config =
            serde_json::json!({"mcpServers": {"k": {"type": "http", "url": url}}}).to_string();
        let store = TokenStore::memory();
        let mut broken = record(port);
        broken.dpop_key = Some("-----BEGIN PRIVATE KEY-----\nKEY-SECRET\n".to_owned());
        store.put(&url, broken).unwrap();
        let (mut state, oauth, _) = runtime_state(&config, store);
        let ep = crate::transport::endpoint::http_endpoint(&url, &[]);
        crate::imports::remote::open(&mut state, "k", &ep, &|_| None).unwrap();
        let answer = exchange(&mut state, "http://g0.mcpbox.internal/mcp").await;
        assert!(answer.contains("401"), "{answer}");
        let required = oauth.required();
        assert!(
            required["k"].starts_with("server `k`: the DPoP key is unusable")
                && required["k"].contains("run `mcpbox login k`")
                && !required["k"].contains("KEY-SECRET"),
            "{required:?}"
        );
        assert!(!requests.join().unwrap()[0].contains(TOKEN));
    }

    /// A machine client's token that expired gets a new grant at the next
    /// refusal: it has no refresh token, and a login would not help.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_expired_machine_token_is_dropped_without_asking_for_a_login() {
        let url = "http://127.0.0.1:1/mcp";
        let config = serde_json::json!({"mcpServers": {"w": {"type": "http", "url": url,
            "oauth": {"identityToken": "${WORKLOAD_TOKEN}"}}}})
        .to_string();
        let (_, oauth, _) = runtime_state(&config, TokenStore::memory());
        let granted = Granted {
            server: "w".into(),
            configured: url.into(),
            url: Url::parse(url).unwrap(),
            headers: HeaderMap::new(),
            stand_in_path: "/mcp".into(),
            values: Vec::new(),
            references: Vec::new(),
        };
        let auth = oauth.for_grant(&granted).unwrap();
        flow::ensure_crypto_provider();
        let mut manager = rmcp::transport::auth::AuthorizationManager::new(url)
            .await
            .unwrap();
        manager.set_metadata(record(1).metadata);
        let memory = rmcp::transport::auth::InMemoryCredentialStore::new();
        rmcp::transport::auth::CredentialStore::save(&memory, expired(1).credentials)
            .await
            .unwrap();
        manager.set_credential_store(memory);
        *auth.server.manager.lock().await = Loaded::Manager(Arc::new(flow::Authorized {
            manager,
            dpop: None,
        }));
        assert!(auth.access_token().await.is_none());
        assert!(oauth.required().is_empty(), "{:?}", oauth.required());
        assert!(matches!(*auth.server.manager.lock().await, Loaded::Nothing));
    }

    /// Waits up to 60 s for `seen` to hold a request.
    async fn first_request(seen: &std::sync::Mutex<Vec<String>>) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(head) = seen.lock().unwrap().first() {
                return head.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "no request came");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A runtime logged in to `api` at origin A, its configuration reloaded
    /// (the runtime's reload API, as the watcher, `serve` and the dashboard
    /// use it) with `api` at origin B: B gets no token, A's or any.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_reload_that_moves_a_server_to_another_origin_takes_no_token_there() {
        const REFUSE: &str = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\n\
                              content-length: 0\r\nconnection: close\r\n\r\n";
        let (a, seen_a) = super::scripted::recorder(REFUSE.to_owned());
        let (b, seen_b) = super::scripted::recorder(REFUSE.to_owned());
        let config = |port: u16| {
            serde_json::json!({"mcpServers": {"api": {
                "type": "http", "url": format!("http://127.0.0.1:{port}/mcp")
            }}})
            .to_string()
        };
        let store = TokenStore::memory();
        store
            .set_access_token(&format!("http://127.0.0.1:{a}/mcp"), TOKEN, None)
            .unwrap();
        let runtime = crate::Options::from_config_text("test", config(a))
            .token_store(store)
            .cache_dir(None)
            .config_dir(None)
            .open()
            .await
            .unwrap();
        let at_a = first_request(&seen_a).await;
        assert!(at_a.contains(&format!("Bearer {TOKEN}")), "{at_a}");
        runtime.reload_text("test", config(b)).await.unwrap();
        let at_b = first_request(&seen_b).await;
        runtime.shutdown().await;
        for head in seen_b.lock().unwrap().iter() {
            assert!(
                !head.to_ascii_lowercase().contains("authorization"),
                "{head}"
            );
        }
        assert!(!at_b.contains(TOKEN), "{at_b}");
    }
}
