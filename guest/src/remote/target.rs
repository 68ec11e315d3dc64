//! Where a remote connection sends its requests, and which URLs it may follow.
//!
//! Two kinds of target. A plain one is a real URL: requests go to it, and a URL
//! a server names (a legacy `endpoint` event, a redirect's `Location`) is
//! followed only on the same origin (scheme, host and port). A granted one (the
//! mcpbox hosts) is the stand-in URL of a `remote.grant`: the host maps it to the
//! configured URL, whose `${VAR}` values the guest never sees, so an absolute URL
//! from the server cannot be compared here: the grant says whether it is on the
//! configured origin, and if so the request goes to its path and query on the
//! stand-in origin.
//!
//! Either way, messages name the URL as configured.

use crate::prelude::*;

use fluent_uri::{Uri, UriRef};

use crate::transport::{AuthorizationFailure, Failure};

/// What the host says about URLs under a grant (`mcpbox:runtime/remote.grant`).
pub trait Grant {
    /// Whether `url` (absolute) is on the configured URL's origin.
    fn same_origin(&self, url: &str) -> bool;

    /// Whether the server's requests go without a usable authorization that
    /// the host could not get by itself (it runs OAuth); asked after a refusal.
    fn needs_authorization(&self) -> Option<AuthorizationFailure> {
        None
    }
}

/// A URL a server named that is on another origin: not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elsewhere {
    /// That origin, `scheme://host[:port]` (or the URL, if it has no origin).
    pub origin: String,
}

/// The URL a remote connection speaks to.
pub struct Target {
    /// The configured server name, for messages; empty for a plain target.
    server: String,
    /// The URL as configured, for messages.
    configured: String,
    /// Where requests go.
    base: String,
    /// The host's word on origins, for a granted target.
    grant: Option<Box<dyn Grant>>,
}

impl core::fmt::Debug for Target {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Target")
            .field("configured", &self.configured)
            .field("base", &self.base)
            .field("granted", &self.grant.is_some())
            .finish()
    }
}

impl Target {
    /// A real `http` or `https` URL.
    pub fn plain(url: &str) -> Result<Target, String> {
        let parsed = Uri::parse(url).map_err(|e| format!("`url` {url:?} is not a URL: {e}"))?;
        if split(&parsed).is_none() {
            return Err(format!(
                "`url` must be an http:// or https:// URL with a host (got {url:?})"
            ));
        }
        Ok(Target {
            server: String::new(),
            configured: url.to_string(),
            base: url.to_string(),
            grant: None,
        })
    }

    /// A real URL `real` whose `${VAR}` references were resolved from `configured`
    /// (the stock component, which has no grant): requests go to `real`, origins
    /// are compared here, and messages name `configured`, so a resolved value
    /// shows in none of them.
    pub fn resolved(configured: &str, real: &str) -> Result<Target, String> {
        let mut target = Target::plain(real).map_err(|_| {
            format!("`url` must be an http:// or https:// URL with a host (got {configured:?})")
        })?;
        target.configured = configured.to_string();
        Ok(target)
    }

    /// The stand-in URL `stand_in` of a grant for server `server`'s URL
    /// `configured`.
    pub fn granted(
        server: &str,
        configured: &str,
        stand_in: &str,
        grant: Box<dyn Grant>,
    ) -> Target {
        Target {
            server: server.to_string(),
            configured: configured.to_string(),
            base: stand_in.to_string(),
            grant: Some(grant),
        }
    }

    /// The URL as configured: the one messages name.
    pub fn configured(&self) -> &str {
        &self.configured
    }

    /// Where requests go.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// What a refusal (`401`, or `403` asking for scopes) means when the host
    /// has no usable authorization for the server: none when it has nothing
    /// to add.
    pub fn unauthorized(&self) -> Option<Failure> {
        let failure = self.grant.as_ref()?.needs_authorization()?;
        Some(Failure::NeedsAuthorization {
            server: self.server.clone(),
            failure,
        })
    }

    /// Resolves `reference` (from a response to a request for `from`) to the URL
    /// to send the next request to, if it stays on the origin. Err(None) when it
    /// is not a URL reference at all.
    pub fn resolve(&self, from: &str, reference: &str) -> Result<String, Option<Elsewhere>> {
        let from_uri = Uri::parse(from).map_err(|_| None)?;
        let reference = UriRef::parse(reference.trim()).map_err(|_| None)?;
        let resolved = reference.resolve_against(&from_uri).map_err(|_| None)?;
        let resolved = resolved.with_fragment(None).into_string();
        let resolved = Uri::parse(resolved.as_str()).map_err(|_| None)?;
        if origin(&resolved) == origin(&from_uri) {
            return Ok(resolved.as_str().to_string());
        }
        let elsewhere = || Elsewhere {
            origin: origin(&resolved).unwrap_or_else(|| resolved.as_str().to_string()),
        };
        match &self.grant {
            Some(grant) if grant.same_origin(resolved.as_str()) => {
                // The real origin, named in full: send its path and query to the
                // stand-in origin, which the host maps back.
                let base = Uri::parse(self.base.as_str()).map_err(|_| None)?;
                let (scheme, authority, _) = split(&base).ok_or(None)?;
                let (_, _, path) = split(&resolved).ok_or(None)?;
                Ok(format!("{scheme}://{authority}{path}"))
            }
            _ => Err(Some(elsewhere())),
        }
    }
}

/// A URL's origin for comparison: lowercase scheme and host, and the port,
/// the scheme's default left out.
fn origin(uri: &Uri<&str>) -> Option<String> {
    let scheme = uri.scheme().as_str().to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority.host().to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => Some("80"),
        "https" => Some("443"),
        _ => None,
    };
    let port = authority
        .port()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty() && Some(*p) != default);
    Some(match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

/// An `http`/`https` URL's scheme, authority and path-with-query (`/` for an
/// empty path), as `wasi:http` takes them.
pub fn split(uri: &Uri<&str>) -> Option<(String, String, String)> {
    let scheme = uri.scheme().as_str().to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = uri.authority()?;
    if authority.host().is_empty() {
        return None;
    }
    let mut path = uri.path().as_str().to_string();
    if path.is_empty() {
        path.push('/');
    }
    if let Some(query) = uri.query() {
        path.push('?');
        path.push_str(query.as_str());
    }
    Some((scheme, authority.as_str().to_string(), path))
}

/// [`split`] for URL text.
pub fn split_url(url: &str) -> Option<(String, String, String)> {
    split(&Uri::parse(url).ok()?)
}

/// The path and query of a URL, for messages about a URL other than the
/// configured one (a stand-in origin means nothing to people).
pub fn path_of(url: &str) -> String {
    split_url(url).map_or_else(|| url.to_string(), |(_, _, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_and_stay_on_the_origin() {
        let t = Target::plain("http://127.0.0.1:8080/api/sse?key=k").unwrap();
        let from = t.base().to_string();
        assert_eq!(
            t.resolve(&from, "/messages?sessionId=1"),
            Ok("http://127.0.0.1:8080/messages?sessionId=1".into())
        );
        assert_eq!(
            t.resolve(&from, "messages?s=2"),
            Ok("http://127.0.0.1:8080/api/messages?s=2".into())
        );
        assert_eq!(
            t.resolve(&from, "HTTP://127.0.0.1:8080/x#frag"),
            Ok("HTTP://127.0.0.1:8080/x".into())
        );
        assert_eq!(
            t.resolve(&from, "http://evil.example:8080/messages"),
            Err(Some(Elsewhere {
                origin: "http://evil.example:8080".into()
            }))
        );
        assert_eq!(
            t.resolve(&from, "//127.0.0.1:9999/m"),
            Err(Some(Elsewhere {
                origin: "http://127.0.0.1:9999".into()
            }))
        );
        assert_eq!(
            t.resolve(&from, "https://127.0.0.1:8080/m")
                .unwrap_err()
                .unwrap()
                .origin,
            "https://127.0.0.1:8080"
        );
        let https = Target::plain("https://example.com/mcp").unwrap();
        assert!(
            https
                .resolve(https.base(), "https://EXAMPLE.com:443/v2")
                .is_ok()
        );
        assert!(Target::plain("ftp://x/y").is_err());
        assert!(Target::plain("not a url").is_err());
    }

    struct RealOrigin(&'static str);
    impl Grant for RealOrigin {
        fn same_origin(&self, url: &str) -> bool {
            url.starts_with(self.0)
        }
    }

    #[test]
    fn a_grant_decides_absolute_urls_and_keeps_the_stand_in_origin() {
        let t = Target::granted(
            "s",
            "https://${HOST}/mcp",
            "http://g1.mcpbox.internal/mcp",
            Box::new(RealOrigin("https://real.example/")),
        );
        let from = t.base().to_string();
        assert_eq!(
            t.resolve(&from, "/messages?s=1"),
            Ok("http://g1.mcpbox.internal/messages?s=1".into())
        );
        assert_eq!(
            t.resolve(&from, "https://real.example/moved?a=b"),
            Ok("http://g1.mcpbox.internal/moved?a=b".into())
        );
        assert_eq!(
            t.resolve(&from, "https://other.example/moved")
                .unwrap_err()
                .unwrap()
                .origin,
            "https://other.example"
        );
        assert_eq!(t.configured(), "https://${HOST}/mcp");
        assert_eq!(path_of("http://g1.mcpbox.internal/m?x=1"), "/m?x=1");
    }
}
