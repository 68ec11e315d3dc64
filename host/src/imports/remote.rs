//! `mcpbox:runtime/remote`: the guest's grants to reach configured remote servers.
//!
//! Opening a grant is where the host's duties for a remote server happen: the
//! network policy is checked (the denial names the server and the URL as
//! configured), `${VAR}` references in the URL and the headers are resolved from
//! the host's environment, and the results are kept here, out of the guest's
//! reach. The guest gets a stand-in URL on a reserved authority of its own,
//! `g<N>.mcpbox.internal` (`.internal` is reserved for private use and never
//! resolves on the internet), whose path and query are the configured ones with
//! a placeholder for every reference; [`super::wasi_http`] maps its requests back.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use wasmtime::component::Resource;

use crate::bindings::{remote, wit};
use crate::store::HostState;
use crate::transport::endpoint::{self, placeholder};

/// The reserved domain of stand-in authorities.
pub(crate) const STAND_IN_DOMAIN: &str = ".mcpbox.internal";

/// One configured remote server, resolved: what requests under its grant get.
pub(crate) struct Granted {
    /// The configured server name.
    pub server: String,
    /// The URL as configured, for messages.
    pub configured: String,
    /// The resolved URL.
    pub url: Url,
    /// The configured headers, resolved.
    pub headers: HeaderMap,
    /// The stand-in URL's path and query: a request for exactly this goes to `url`.
    pub stand_in_path: String,
    /// The value of each placeholder, by number.
    pub values: Vec<String>,
    /// The reference each value replaced, as written (`${NAME}`), by number.
    pub references: Vec<String>,
}

impl std::fmt::Debug for Granted {
    /// Resolved values are secrets: only the configuration shows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Granted")
            .field("server", &self.server)
            .field("configured", &self.configured)
            .finish_non_exhaustive()
    }
}

impl Granted {
    /// Where a request for `path` (path and query) on the stand-in authority
    /// goes: the configured URL itself, or that path on the configured origin
    /// with the placeholders replaced by their values. None when the result is
    /// not on the configured origin.
    pub fn target(&self, path: &str) -> Option<Url> {
        let url = if path == self.stand_in_path {
            self.url.clone()
        } else {
            let origin = self.url.origin().ascii_serialization();
            Url::parse(&format!("{origin}{}", self.substitute(path))).ok()?
        };
        (url.origin() == self.url.origin()).then_some(url)
    }

    /// `text` with every placeholder replaced by its value (the longest number
    /// first, so `mcpbox-ref-1` never eats the start of `mcpbox-ref-12`).
    fn substitute(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for n in (0..self.values.len()).rev() {
            text = text.replace(&placeholder(n), &self.values[n]);
        }
        text
    }

    /// Whether an absolute `url` is on the configured origin.
    pub fn same_origin(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| u.origin() == self.url.origin())
    }
}

/// Every open grant, by stand-in authority. The `wasi:http` hook reads it.
#[derive(Debug, Default)]
pub(crate) struct Grants {
    next: u64,
    by_authority: HashMap<String, Arc<Granted>>,
    /// The runtime's OAuth state: the hook adds tokens and handles refusals.
    pub oauth: Option<Arc<crate::oauth::OAuth>>,
}

impl Grants {
    /// The grant a stand-in authority names.
    pub fn get(&self, authority: &str) -> Option<Arc<Granted>> {
        self.by_authority.get(authority).cloned()
    }
}

/// The resource behind `remote.grant`.
#[derive(Debug)]
pub struct Grant {
    authority: String,
    stand_in: String,
}

/// Opens a grant for `server`, applying the network policy; `${VAR}` values
/// come from `lookup` (the host's environment in production).
pub(crate) fn open(
    state: &mut HostState,
    server: &str,
    ep: &wit::HttpEndpoint,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Grant, wit::TransportError> {
    if !state.policy.allow_network {
        // The URL as configured, before `${VAR}` resolution: no secret goes in a message.
        return Err(wit::TransportError::Denied(format!(
            "server `{server}`: the policy does not allow network connections, so {} was not \
             contacted (allow them with `Policy::allow_network`, or run the CLI without \
             `--no-network`)",
            ep.url.configured
        )));
    }
    let invalid =
        |e: String| wit::TransportError::InvalidEndpoint(format!("server `{server}`: {e}"));
    let spec = endpoint::resolve_http(ep, lookup).map_err(invalid)?;
    let url = Url::parse(&spec.url)
        .map_err(|e| invalid(format!("`url` {:?} is not a URL: {e}", ep.url.configured)))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &spec.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("`headers.{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            invalid(format!(
                "`headers.{name}` has a value that cannot be sent in an HTTP header (control characters or non-ASCII)"
            ))
        })?;
        headers.append(header, value);
    }
    let grants = &mut state.grants;
    let authority = format!("g{}{STAND_IN_DOMAIN}", grants.next);
    grants.next += 1;
    let path = spec
        .path_with_placeholders
        .clone()
        .unwrap_or_else(|| "/".to_owned());
    // Normalised as the guest will send it (`wasi:http` takes path-with-query as is).
    let stand_in = Url::parse(&format!("http://{authority}{path}")).map_err(|e| {
        invalid(format!(
            "`url` {:?} has a path that is not valid: {e}",
            ep.url.configured
        ))
    })?;
    let stand_in_path = match stand_in.query() {
        Some(q) => format!("{}?{q}", stand_in.path()),
        None => stand_in.path().to_owned(),
    };
    grants.by_authority.insert(
        authority.clone(),
        Arc::new(Granted {
            server: server.to_owned(),
            configured: ep.url.configured.clone(),
            url,
            headers,
            stand_in_path,
            values: spec.values,
            references: crate::oauth::references(&ep.url),
        }),
    );
    Ok(Grant {
        authority,
        stand_in: stand_in.to_string(),
    })
}

impl remote::Host for HostState {}

impl remote::HostGrant for HostState {
    fn open(
        &mut self,
        server: String,
        endpoint: wit::HttpEndpoint,
    ) -> wasmtime::Result<Result<Resource<Grant>, wit::TransportError>> {
        match open(self, &server, &endpoint, &|name| std::env::var(name).ok()) {
            Ok(grant) => Ok(Ok(self.table.push(grant)?)),
            Err(e) => Ok(Err(e)),
        }
    }

    fn url(&mut self, this: Resource<Grant>) -> wasmtime::Result<String> {
        Ok(self.table.get(&this)?.stand_in.clone())
    }

    fn same_origin(&mut self, this: Resource<Grant>, url: String) -> wasmtime::Result<bool> {
        let authority = &self.table.get(&this)?.authority;
        Ok(self
            .grants
            .get(authority)
            .is_some_and(|g| g.same_origin(&url)))
    }

    fn needs_authorization(
        &mut self,
        this: Resource<Grant>,
    ) -> wasmtime::Result<Option<remote::AuthorizationFailure>> {
        let authority = &self.table.get(&this)?.authority;
        let (Some(granted), Some(oauth)) = (self.grants.get(authority), &self.grants.oauth) else {
            return Ok(None);
        };
        // The host's own fact about this server; a server whose entry sets its
        // own `Authorization` header is never authorized by the host.
        Ok(oauth.refusal(&granted.server).map(|refusal| match refusal {
            crate::oauth::Refusal::Login(why) => remote::AuthorizationFailure::LoginRequired(why),
            crate::oauth::Refusal::Credentials(why) => {
                remote::AuthorizationFailure::CredentialsRefused(why)
            }
        }))
    }

    fn drop(&mut self, this: Resource<Grant>) -> wasmtime::Result<()> {
        let grant = self.table.delete(this)?;
        self.grants.by_authority.remove(&grant.authority);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Policy, Wake};

    fn state(policy: Policy) -> HostState {
        HostState::new(
            policy,
            Arc::new(Wake::default()),
            1 << 20,
            Default::default(),
        )
    }

    fn env(name: &str) -> Option<String> {
        (name == "API_KEY").then(|| "s3cret".to_owned())
    }

    fn ep(url: &str) -> wit::HttpEndpoint {
        crate::transport::endpoint::http_endpoint(url, &[("Authorization", "Bearer ${API_KEY}")])
    }

    #[test]
    fn the_guest_gets_a_stand_in_and_the_host_keeps_the_values() {
        let mut s = state(Policy::default());
        let grant = open(
            &mut s,
            "x",
            &ep("https://h.example/a/mcp?key=${API_KEY}"),
            &env,
        )
        .unwrap();
        assert_eq!(
            grant.stand_in,
            "http://g0.mcpbox.internal/a/mcp?key=mcpbox-ref-0"
        );
        let g = s.grants.get(&grant.authority).unwrap();
        assert!(!format!("{g:?}").contains("s3cret"));
        assert_eq!(
            g.target("/a/mcp?key=mcpbox-ref-0").unwrap().as_str(),
            "https://h.example/a/mcp?key=s3cret"
        );
        assert_eq!(
            g.target("/messages?s=1").unwrap().as_str(),
            "https://h.example/messages?s=1"
        );
        assert_eq!(g.headers["authorization"], "Bearer s3cret");
        assert!(g.same_origin("https://H.example:443/elsewhere"));
        assert!(!g.same_origin("http://h.example/a"));
        assert!(!g.same_origin("https://evil.example/a"));
        // Each grant its own authority; a dropped one names nothing.
        let other = open(&mut s, "y", &ep("http://127.0.0.1:1/"), &env).unwrap();
        assert_eq!(other.authority, "g1.mcpbox.internal");
        s.grants.by_authority.remove(&grant.authority);
        assert!(s.grants.get(&grant.authority).is_none());
    }

    #[test]
    fn denials_and_errors_name_the_url_as_configured() {
        let mut s = state(Policy {
            allow_network: false,
            ..Policy::default()
        });
        let url = "https://h.example/mcp?key=${API_KEY}";
        match open(&mut s, "x", &ep(url), &env) {
            Err(wit::TransportError::Denied(m)) => {
                assert!(m.contains(url) && m.contains("server `x`"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        let mut s = state(Policy::default());
        match open(&mut s, "x", &ep("${API_KEY}"), &env) {
            Err(wit::TransportError::InvalidEndpoint(m)) => {
                assert!(m.contains("${API_KEY}") && !m.contains("s3cret"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
