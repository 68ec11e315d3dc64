//! Every HTTP request the host makes for OAuth goes through here, and here
//! alone is decided whether a credential may go to an endpoint.
//!
//! - **How much is read**: at most [`MAX_BODY`] (1 MiB, rmcp's own limit) of
//!   any answer ([`Client::fetch`]); a larger one fails the request, and the
//!   rest is never read. Metadata documents, registration answers and token
//!   answers are all far smaller.
//! - **Where a request may go** ([`Addresses`]): the addresses a host name
//!   resolves to are checked when the connection is made, and IP literals
//!   before it, with the policy rmcp's authorization manager applies to
//!   discovery: a public address always; a loopback or private one only when
//!   the MCP server's own URL names one of the same kind (a loopback or
//!   private IP literal, `localhost`); link-local (cloud instance metadata),
//!   unspecified, multicast and reserved addresses never. rmcp keeps that
//!   resolver private to the clients it builds itself, so the policy is
//!   written out here and every client the host builds for OAuth is a
//!   [`Client`]: rmcp's managers get one
//!   ([`AuthorizationManager::new_with_oauth_http_client`](rmcp::transport::auth::AuthorizationManager::new_with_oauth_http_client)),
//!   DPoP's token endpoint client is built on one, enterprise-managed
//!   authorization's exchanges run on one, and the host's own requests
//!   (`oauth.authServerMetadataUrl`, the `private_key_jwt` and workload
//!   identity token requests) use one.
//! - **Where a credential may go** ([`credential_endpoint`]): a client secret,
//!   an assertion, an identity token, an authorization code or a refresh token
//!   goes only to an `https` endpoint (plain `http` only between loopback
//!   addresses, for a server on loopback: tests and local development) on the
//!   origin of the authorization server's issuer, as checked by discovery (or
//!   on the MCP server's origin, where the metadata names no issuer: the
//!   2025-03-26 fallback endpoints), at an address the policy above allows.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest,
};
use url::Host;

use super::OAuthError;
use super::flow::Target;

/// The largest answer read from any OAuth endpoint.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// How long one OAuth request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// How many redirects a request that follows them may take (rmcp's limit).
const MAX_REDIRECTS: usize = 10;

/// The proxy variables whose hosts are not filtered: a proxied request
/// resolves only the proxy's name, and the proxy resolves the target.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Why an OAuth request got no answer the host would read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The address policy refused the URL (an IP literal, or a redirect to one).
    #[error("{0} is at an address OAuth requests for this server may not reach")]
    Refused(Url),
    /// The answer was larger than [`MAX_BODY`].
    #[error("it answered more than {MAX_BODY} bytes")]
    TooLarge,
    /// The request could not be made or its answer read.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// The request or the answer could not be built.
    #[error("{0}")]
    Invalid(String),
}

/// The kind of an address, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Public,
    Loopback,
    Private,
    Blocked,
}

impl Class {
    /// Classifies as rmcp's metadata resolver does: IPv4 embedded in IPv6
    /// (mapped, compatible, NAT64, 6to4) counts as that IPv4 address;
    /// carrier-grade NAT counts as private; Teredo and local-use NAT64 are
    /// blocked.
    fn of(ip: IpAddr) -> Class {
        let ip = match ip {
            IpAddr::V6(v6) => embedded_ipv4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        match ip {
            IpAddr::V4(v4) => {
                let [a, b, ..] = v4.octets();
                if v4.is_loopback() {
                    Class::Loopback
                } else if v4.is_private() || (a == 100 && (64..=127).contains(&b)) {
                    Class::Private
                } else if v4.is_link_local()
                    || v4.is_broadcast()
                    || v4.is_unspecified()
                    || v4.is_multicast()
                    || a == 0
                    || (a == 198 && matches!(b, 18 | 19))
                {
                    Class::Blocked
                } else {
                    Class::Public
                }
            }
            IpAddr::V6(v6) => {
                let s = v6.segments();
                if v6.is_loopback() {
                    Class::Loopback
                } else if (s[0] & 0xfe00) == 0xfc00 {
                    Class::Private
                } else if v6.is_unspecified()
                    || v6.is_multicast()
                    || (s[0] & 0xffc0) == 0xfe80
                    || s[..2] == [0x2001, 0]
                    || s[..3] == [0x64, 0xff9b, 1]
                {
                    Class::Blocked
                } else {
                    Class::Public
                }
            }
        }
    }
}

/// The IPv4 address an IPv4-mapped, IPv4-compatible, NAT64 (`64:ff9b::/96`)
/// or 6to4 (`2002::/16`) address carries.
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, g, h] = v6.segments();
    let low = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    match [a, b, c, d, e, f] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if !v6.is_loopback() && !v6.is_unspecified() => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::from((u32::from(b) << 16) | u32::from(c))),
        _ => None,
    }
}

/// Whether `host` is a loopback name or address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(Host::Ipv4(v4)) => Class::of(IpAddr::V4(v4)) == Class::Loopback,
        Some(Host::Ipv6(v6)) => Class::of(IpAddr::V6(v6)) == Class::Loopback,
        None => false,
    }
}

fn literal(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        Host::Domain(_) => None,
    }
}

/// Which addresses OAuth requests for one MCP server may reach (see the
/// module docs), and the resolver that applies it to host names.
#[derive(Debug, Clone)]
pub(crate) struct Addresses {
    /// The MCP server URL's own IP literal: always allowed.
    base: Option<IpAddr>,
    /// The loopback or private classes the MCP server's URL names.
    allowed: Vec<Class>,
    /// Proxy hosts, not filtered.
    proxies: Vec<String>,
}

impl Addresses {
    /// The policy for the MCP server at `resource` (its URL, resolved).
    pub(crate) fn for_resource(resource: &Url) -> Addresses {
        let allowed = match (literal(resource), is_loopback(resource)) {
            (Some(ip), _) => vec![Class::of(ip)],
            (None, true) => vec![Class::Loopback],
            (None, false) => Vec::new(),
        };
        let proxies = PROXY_VARIABLES
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .filter_map(|proxy| {
                let proxy = if proxy.contains("://") {
                    proxy
                } else {
                    format!("http://{proxy}")
                };
                Url::parse(&proxy).ok()?.host_str().map(normalize)
            })
            .collect();
        Addresses {
            base: literal(resource),
            allowed,
            proxies,
        }
    }

    fn allows(&self, ip: IpAddr) -> bool {
        match Class::of(ip) {
            Class::Public => true,
            class @ (Class::Loopback | Class::Private) => self.allowed.contains(&class),
            Class::Blocked => false,
        }
    }

    /// Whether a request to `url` may be made: an IP literal is checked here
    /// (reqwest connects to it without resolving), a name when it is resolved.
    pub(crate) fn allows_url(&self, url: &Url) -> bool {
        match literal(url) {
            Some(ip) => self.base == Some(ip) || self.allows(ip),
            None => url.host_str().is_some(),
        }
    }
}

fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl Resolve for Addresses {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let host = normalize(name.as_str());
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if this.proxies.contains(&host) {
                return Ok(Box::new(resolved.into_iter()) as Addrs);
            }
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|a| this.allows(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "no address of `{host}` may be reached by OAuth requests for this server \
                     (loopback and private addresses only for a server configured at one; \
                     link-local and reserved addresses never)"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The HTTP client of every OAuth request for one MCP server: addresses
/// filtered, answers bounded, 30 s per request.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    follow: reqwest::Client,
    stop: reqwest::Client,
    addresses: Arc<Addresses>,
}

impl Client {
    /// The client for OAuth requests of the MCP server at `resource`.
    pub(crate) fn for_resource(resource: &Url) -> Result<Client, String> {
        super::flow::ensure_crypto_provider();
        let addresses = Arc::new(Addresses::for_resource(resource));
        let build = |redirect: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .timeout(TIMEOUT)
                .redirect(redirect)
                .dns_resolver(addresses.clone())
                .build()
                .map_err(|e| format!("could not create an HTTP client: {e}"))
        };
        let policy = addresses.clone();
        let follow = reqwest::redirect::Policy::custom(move |attempt| {
            if !policy.allows_url(attempt.url()) {
                let refused = FetchError::Refused(attempt.url().clone());
                attempt.error(refused)
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        Ok(Client {
            follow: build(follow)?,
            stop: build(reqwest::redirect::Policy::none())?,
            addresses,
        })
    }

    /// Sends `request` (following redirects when `follow`) and reads its
    /// answer, at most [`MAX_BODY`] of it.
    pub(crate) async fn fetch(
        &self,
        request: http::Request<Vec<u8>>,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, FetchError> {
        let request =
            reqwest::Request::try_from(request).map_err(|e| FetchError::Invalid(e.to_string()))?;
        if !self.addresses.allows_url(request.url()) {
            return Err(FetchError::Refused(request.url().clone()));
        }
        let client = if follow { &self.follow } else { &self.stop };
        let mut response = client.execute(request).await?;
        let mut answer = http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if chunk.len() > MAX_BODY - body.len() {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        answer
            .body(body)
            .map_err(|e| FetchError::Invalid(e.to_string()))
    }
}

impl OAuthHttpClient for Client {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let follow = matches!(request.redirect_policy, OAuthHttpRedirectPolicy::Follow);
            self.fetch(request.request, follow)
                .await
                .map_err(|e| Box::new(e) as _)
        })
    }
}

/// Decides whether a credential (`what`: "a client assertion", "the
/// workload's identity token", …) may be sent to `endpoint` for `target`,
/// the authorization server being `issuer` (as discovery checked it; None
/// for the fallback endpoints on the MCP server's origin). `field` names the
/// endpoint in messages. The one place this is decided: every grant calls it
/// before it sends anything.
pub(crate) fn credential_endpoint(
    target: &Target<'_>,
    field: &str,
    endpoint: &str,
    issuer: Option<&str>,
    what: &str,
) -> Result<Url, OAuthError> {
    let url = Url::parse(endpoint)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| target.error(format!("{field} {endpoint:?} is not an http(s) URL")))?;
    let refuse = |why: String| {
        target.error(format!(
            "{field} {url} {why}, so mcpbox did not send it {what}; mcpbox sends credentials only \
             over https, to the origin of the authorization server's issuer, at an address \
             OAuth requests may reach (plain http only between loopback addresses)"
        ))
    };
    if url.scheme() != "https" && !(is_loopback(&url) && is_loopback(target.url)) {
        return Err(refuse("is not https".to_owned()));
    }
    let (authority, whose) = match issuer {
        Some(issuer) => (
            Url::parse(issuer).map_err(|_| {
                refuse(format!(
                    "belongs to the issuer {issuer:?}, which is not a URL"
                ))
            })?,
            format!("its issuer {issuer}"),
        ),
        None => (
            target.url.clone(),
            format!(
                "the server `{}` (its metadata names no issuer)",
                target.name
            ),
        ),
    };
    if url.origin() != authority.origin() {
        return Err(refuse(format!("is not on the origin of {whose}")));
    }
    if !Addresses::for_resource(target.url).allows_url(&url) {
        return Err(refuse(
            "is at an address OAuth requests for this server may not reach".to_owned(),
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classified_as_rmcp_classifies_them() {
        let class = |ip: &str| Class::of(ip.parse().unwrap());
        assert_eq!(class("93.184.216.34"), Class::Public);
        assert_eq!(class("2606:4700::1111"), Class::Public);
        assert_eq!(class("127.0.0.1"), Class::Loopback);
        assert_eq!(class("::1"), Class::Loopback);
        assert_eq!(class("::ffff:127.0.0.1"), Class::Loopback);
        assert_eq!(class("10.0.0.9"), Class::Private);
        assert_eq!(class("100.64.0.1"), Class::Private);
        assert_eq!(class("fd00::1"), Class::Private);
        assert_eq!(class("169.254.169.254"), Class::Blocked);
        assert_eq!(class("::ffff:169.254.169.254"), Class::Blocked);
        assert_eq!(class("fe80::1"), Class::Blocked);
        assert_eq!(class("0.0.0.0"), Class::Blocked);
        assert_eq!(class("64:ff9b::a9fe:a9fe"), Class::Blocked);
        assert_eq!(class("2002:a9fe:a9fe::"), Class::Blocked);
        assert_eq!(class("2002:7f00:1::"), Class::Loopback);
        assert_eq!(class("2001:0:4136:e378::1"), Class::Blocked);
    }

    #[test]
    fn a_loopback_or_private_address_only_for_a_server_configured_at_one() {
        let url = |u: &str| Url::parse(u).unwrap();
        let public = Addresses::for_resource(&url("https://mcp.example.com/mcp"));
        assert!(public.allows_url(&url("https://93.184.216.34/token")));
        assert!(!public.allows_url(&url("http://127.0.0.1:8080/token")));
        assert!(!public.allows_url(&url("http://10.0.0.9/token")));
        let loopback = Addresses::for_resource(&url("http://localhost:3000/mcp"));
        assert!(loopback.allows_url(&url("http://127.0.0.1:8080/token")));
        assert!(!loopback.allows_url(&url("http://10.0.0.9/token")));
        for server in [&public, &loopback] {
            assert!(!server.allows_url(&url("http://169.254.169.254/latest")));
            assert!(!server.allows_url(&url("http://0.0.0.0:8080/token")));
        }
    }
}
