//! The client credentials grant with `private_key_jwt` client authentication
//! (SEP-1046's second method; RFC 7523 §2.2 and RFC 7521 §4.2): a machine
//! client proves who it is with a short-lived JWT signed by its private key
//! instead of a shared secret.
//!
//! The key stays in the host, like every credential: it is read from
//! `oauth.privateKeyFile` (or `oauth.privateKey`, a PEM in an environment
//! variable) when a token is needed, signs one assertion, and is dropped.
//!
//! The libraries: `jsonwebtoken` builds and signs the JWT (PEM parsing, the
//! JOSE header, the signature), the `oauth2` crate sends the token request and
//! reads the answer (its error responses included). What is written here is the
//! choice of claims RFC 7523 §3 asks for and the form parameters of RFC 7521
//! §4.2. rmcp has the same grant behind its `auth-client-credentials-jwt`
//! feature, which is not used (see `host/Cargo.toml`: aws-lc-rs, and no `kid`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oauth2::basic::BasicClient;
use oauth2::{AuthType, ClientId, RequestTokenError, Scope, TokenResponse, TokenUrl};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse, StoredCredentials};

use super::OAuthError;
use super::config::OAuthConfig;
use super::flow::{Target, received_now};

/// RFC 7523 §2.2: the value of `client_assertion_type`.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid: it is used at once, once.
const LIFETIME: Duration = Duration::from_secs(300);

/// The algorithms tried, in order, when neither `oauth.algorithm` nor the
/// server's `token_endpoint_auth_signing_alg_values_supported` names one: the
/// first the key can sign with wins.
const DEFAULT_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// Whether `oauth` configures a private key (then the grant authenticates with
/// `private_key_jwt`).
pub(crate) fn configured(oauth: &OAuthConfig) -> bool {
    oauth.private_key_file.is_some() || oauth.private_key.is_some()
}

/// The private key's PEM text, from `oauth.privateKeyFile` (a path; `${VAR}`
/// and a leading `~/` are resolved) or `oauth.privateKey` (the PEM itself,
/// normally `${VAR}`).
fn key_pem(target: &Target<'_>) -> Result<Vec<u8>, OAuthError> {
    let oauth = target.oauth;
    let env = |name: &str| std::env::var(name).ok();
    match (&oauth.private_key_file, &oauth.private_key) {
        (Some(_), Some(_)) => Err(target.error(
            "`oauth.privateKeyFile` and `oauth.privateKey` are both set; keep one (the file \
             holds the PEM, or `privateKey` names the variable that does)",
        )),
        (Some(setting), None) => {
            let field = "`oauth.privateKeyFile`";
            let path = setting.configured();
            let mut resolved = setting.resolve(field, &env).map_err(|e| target.error(e))?;
            if let (Some(rest), Some(home)) = (resolved.strip_prefix("~/"), env("HOME")) {
                resolved = format!("{home}/{rest}");
            }
            std::fs::read(&resolved).map_err(|e| {
                target.error(format!(
                    "{field} {path:?} could not be read ({e}); it should name a PEM file \
                     holding the client's private key"
                ))
            })
        }
        (None, Some(pem)) => pem
            .resolve("`oauth.privateKey`", &env)
            .map(String::into_bytes)
            .map_err(|e| target.error(e)),
        (None, None) => Err(target.error(
            "`oauth.grantType` \"client_credentials\" needs `oauth.clientSecret`, or a private \
             key in `oauth.privateKeyFile` for `private_key_jwt`",
        )),
    }
}

/// The key for `algorithm`, if the PEM is a key of that family.
fn key_for(pem: &[u8], algorithm: Algorithm) -> Option<EncodingKey> {
    match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem).ok(),
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem).ok(),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem).ok(),
        _ => None,
    }
}

/// The claims of RFC 7523 §3: the client is both issuer and subject, the
/// authorization server the audience; `jti` makes each assertion single-use.
#[derive(serde::Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

/// Signs an assertion for `client_id` and `audience` with the configured key,
/// with `oauth.algorithm`, else the first algorithm of `offered` (the server's
/// list, or [`DEFAULT_ALGORITHMS`]) that the key signs with.
pub(crate) fn sign(
    target: &Target<'_>,
    client_id: &str,
    audience: &str,
    offered: &[String],
) -> Result<String, OAuthError> {
    let pem = key_pem(target)?;
    let candidates: Vec<Algorithm> = match &target.oauth.algorithm {
        Some(name) => {
            let algorithm = name
                .parse::<Algorithm>()
                .ok()
                .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512));
            let Some(algorithm) = algorithm else {
                return Err(target.error(format!(
                    "`oauth.algorithm` {name:?} is not a signature algorithm mcpbox signs with; \
                     use ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA"
                )));
            };
            vec![algorithm]
        }
        None if offered.is_empty() => DEFAULT_ALGORITHMS.to_vec(),
        None => offered
            .iter()
            .filter_map(|a| a.parse::<Algorithm>().ok())
            .collect(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti)
        .map_err(|e| target.error(format!("no randomness for the assertion's `jti`: {e}")))?;
    let claims = Claims {
        iss: client_id,
        sub: client_id,
        aud: audience,
        iat: now,
        exp: now + LIFETIME.as_secs(),
        jti: jti.iter().map(|b| format!("{b:02x}")).collect(),
    };
    for algorithm in &candidates {
        let Some(key) = key_for(&pem, *algorithm) else {
            continue;
        };
        let mut header = Header::new(*algorithm);
        header.kid = target.oauth.key_id.clone();
        // The type RFC 7523bis (draft-ietf-oauth-rfc7523bis) gives client assertions.
        header.typ = Some("client-authentication+jwt".to_owned());
        // A P-384 key parses as an EC key but cannot sign ES256: try the next.
        if let Ok(jwt) = jsonwebtoken::encode(&header, &claims, &key) {
            return Ok(jwt);
        }
    }
    let tried: Vec<String> = candidates.iter().map(|a| format!("{a:?}")).collect();
    Err(target.error(format!(
        "the private key in {} is not a PEM key that signs with {} ({}); use a PKCS#8 EC \
         (P-256, P-384), RSA or Ed25519 key, and set `oauth.algorithm` to match it",
        if target.oauth.private_key_file.is_some() {
            "`oauth.privateKeyFile`"
        } else {
            "`oauth.privateKey`"
        },
        tried.join(", "),
        match (&target.oauth.algorithm, offered.is_empty()) {
            (Some(_), _) => "the configured `oauth.algorithm`",
            (None, false) => "what the authorization server accepts",
            (None, true) => "the algorithms mcpbox tries",
        }
    )))
}

/// The string list `field` of the metadata, if present.
fn advertised(metadata: &AuthorizationMetadata, field: &str) -> Option<Vec<String>> {
    metadata
        .additional_fields
        .get(field)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
}

/// Runs the client credentials grant authenticated with a signed assertion
/// against the authorization server of `metadata`; returns the credentials to
/// keep (in memory: the key gets a new token whenever one is needed).
pub(crate) async fn exchange(
    target: &Target<'_>,
    client_id: &str,
    metadata: &AuthorizationMetadata,
) -> Result<StoredCredentials, OAuthError> {
    if let Some(methods) = advertised(metadata, "token_endpoint_auth_methods_supported")
        && !methods.iter().any(|m| m == "private_key_jwt")
    {
        return Err(target.error(format!(
            "the authorization server does not accept `private_key_jwt` client authentication \
             (it accepts: {}); configure `oauth.clientSecret` instead of a private key",
            methods.join(", ")
        )));
    }
    let token_url = super::net::credential_endpoint(
        target,
        "the authorization server's token endpoint",
        &metadata.token_endpoint,
        metadata.issuer.as_deref(),
        "a client assertion",
    )?;
    // RFC 7523 §3: the audience identifies the authorization server; its
    // issuer identifier, or the token endpoint where the metadata names none
    // (the 2025-03-26 fallback endpoints).
    let audience = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone());
    let offered = advertised(metadata, "token_endpoint_auth_signing_alg_values_supported")
        .unwrap_or_default();
    let assertion = sign(target, client_id, &audience, &offered)?;

    let client = BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_token_uri(TokenUrl::from_url(token_url))
        // No secret: `client_id` goes in the body, which RFC 7521 §4.2 allows
        // when it names the assertion's subject.
        .set_auth_type(AuthType::RequestBody);
    let mut request = client
        .exchange_client_credentials()
        .add_extra_param("client_assertion_type", JWT_BEARER)
        .add_extra_param("client_assertion", assertion)
        .add_extra_param("resource", target.url.as_str());
    for scope in &target.oauth.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let http = super::net::Client::for_resource(target.url).map_err(|e| target.error(e))?;
    // No redirects: the assertion goes to the checked endpoint alone.
    let send = |request: oauth2::HttpRequest| {
        let http = http.clone();
        async move { http.fetch(request, false).await }
    };
    let token = request.request_async(&send).await.map_err(|e| {
        let why = match &e {
            RequestTokenError::ServerResponse(r) => match r.error_description() {
                Some(d) => format!("{} ({d})", r.error()),
                None => r.error().to_string(),
            },
            RequestTokenError::Request(e) => {
                format!("the request failed: {}", super::flow::chain(e))
            }
            RequestTokenError::Parse(e, _) => format!("its answer is not a token response: {e}"),
            RequestTokenError::Other(e) => e.clone(),
        };
        target.error(format!(
            "the client credentials grant (private_key_jwt) was refused: {why}; check \
             `oauth.clientId`, and that the authorization server holds the public key of \
             `oauth.privateKeyFile`{}",
            if target.oauth.key_id.is_some() {
                " under `oauth.keyId`"
            } else {
                " (set `oauth.keyId` if it keeps several)"
            }
        ))
    })?;
    let scopes: Vec<String> = token
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    // The basic token response as rmcp keeps it (the same fields; serde both ways).
    let token: OAuthTokenResponse = serde_json::to_value(&token)
        .and_then(serde_json::from_value)
        .map_err(|e| target.error(format!("the token response could not be kept: {e}")))?;
    Ok(received_now(client_id, token, scopes))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use reqwest::Url;

    /// A P-256 key pair (PKCS#8 and SPKI), made for these tests only.
    pub(crate) const P256: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg3Yzpg4zYirDWmuKT
zJtKJUtA/Zuq5xnRr+JEyC+WrnmhRANCAAT0Xiwjc4j1AW1yVnK/+m2KRajTsET6
EOx4fuQxFoo5TkI0bZqIUfoxX+M+5Z64Fk6XZaANPnY4S/L14GbhqSeS
-----END PRIVATE KEY-----
";
    const P256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9F4sI3OI9QFtclZyv/ptikWo07BE
+hDseH7kMRaKOU5CNG2aiFH6MV/jPuWeuBZOl2WgDT52OEvy9eBm4aknkg==
-----END PUBLIC KEY-----
";

    /// The header and the claims of `jwt`, its signature checked with the
    /// public key, as an authorization server would.
    fn verify(jwt: &str, audience: &str) -> (Header, serde_json::Value) {
        let key = jsonwebtoken::DecodingKey::from_ec_pem(P256_PUBLIC.as_bytes()).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.set_audience(&[audience]);
        let data = jsonwebtoken::decode::<serde_json::Value>(jwt, &key, &validation).unwrap();
        (data.header, data.claims)
    }

    #[test]
    fn an_assertion_names_the_client_the_audience_and_the_key() {
        let oauth = OAuthConfig {
            private_key: Some(P256.into()),
            key_id: Some("key-1".to_owned()),
            ..OAuthConfig::default()
        };
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let target = Target {
            name: "m",
            configured: "http://127.0.0.1:1/mcp",
            url: &url,
            oauth: &oauth,
            resolved: &crate::oauth::flow::NOTHING_RESOLVED,
        };
        // The server offers RS256 first: the EC key cannot, ES256 it can.
        let offered = ["RS256".to_owned(), "ES256".to_owned()];
        let jwt = sign(&target, "client-7", "https://as.example", &offered).unwrap();
        let (header, claims) = verify(&jwt, "https://as.example");
        assert_eq!(header.alg, Algorithm::ES256, "{header:?}");
        assert_eq!(header.kid.as_deref(), Some("key-1"), "{header:?}");
        assert_eq!(header.typ.as_deref(), Some("client-authentication+jwt"));
        assert_eq!(claims["iss"], "client-7");
        assert_eq!(claims["sub"], "client-7");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        let other = sign(&target, "client-7", "https://as.example", &offered).unwrap();
        assert_ne!(
            verify(&other, "https://as.example").1["jti"],
            claims["jti"],
            "jti is single-use"
        );

        // A configured algorithm the key cannot sign with, and one that is no
        // signature at all, are errors that name the field.
        let cases: [(&str, &[&str]); 2] = [
            ("RS256", &["`oauth.privateKey`", "RS256"]),
            ("HS256", &["`oauth.algorithm` \"HS256\""]),
        ];
        for (algorithm, named) in cases {
            let oauth = OAuthConfig {
                algorithm: Some(algorithm.to_owned()),
                ..target.oauth.clone()
            };
            let e = sign(
                &Target {
                    oauth: &oauth,
                    ..target
                },
                "c",
                "a",
                &[],
            )
            .unwrap_err()
            .to_string();
            assert!(named.iter().all(|n| e.contains(n)), "{e}");
        }
        // Not a key at all: the error never shows the text.
        let oauth = OAuthConfig {
            private_key: Some("not-a-PEM-SECRET".into()),
            ..OAuthConfig::default()
        };
        let e = sign(
            &Target {
                oauth: &oauth,
                ..target
            },
            "c",
            "a",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("is not a PEM key") && !e.contains("SECRET"),
            "{e}"
        );
    }

    /// A hostile token endpoint streams an endless answer: mcpbox reads 1 MiB
    /// of it, no more, and fails the grant saying so.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_token_answer_larger_than_1_mib_fails_the_grant_unread() {
        use std::io::Write as _;
        const SENT_AT_MOST: usize = 64 << 20;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sender = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut write = stream.try_clone().unwrap();
            crate::oauth::scripted::read_request(&mut std::io::BufReader::new(stream));
            let mut sent = 0;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                        connection: close\r\n\r\n{\"access_token\":\"";
            let _ = write.write_all(head.as_bytes());
            let chunk = vec![b'a'; 64 << 10];
            while sent < SENT_AT_MOST && write.write_all(&chunk).is_ok() {
                sent += chunk.len();
            }
            sent
        });
        let oauth = OAuthConfig {
            private_key: Some(P256.into()),
            ..OAuthConfig::default()
        };
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let target = Target {
            name: "m",
            configured: "http://127.0.0.1:1/mcp",
            url: &url,
            oauth: &oauth,
            resolved: &crate::oauth::flow::NOTHING_RESOLVED,
        };
        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "issuer": format!("http://127.0.0.1:{port}"),
            "authorization_endpoint": format!("http://127.0.0.1:{port}/authorize"),
            "token_endpoint": format!("http://127.0.0.1:{port}/token"),
        }))
        .unwrap();
        let e = exchange(&target, "c", &metadata)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("answered more than 1048576 bytes"), "{e}");
        let sent = sender.join().unwrap();
        assert!(
            sent < SENT_AT_MOST,
            "the whole answer was read ({sent} bytes)"
        );
    }

    /// The assertion goes only to an https endpoint (plain http between
    /// loopback addresses) on the issuer's origin.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_client_assertion_goes_only_over_https_to_the_issuers_origin() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let endpoint = format!("http://127.0.0.1:{port}/token");
        let oauth = OAuthConfig {
            private_key: Some(P256.into()),
            ..OAuthConfig::default()
        };
        let metadata = |issuer: &str| -> AuthorizationMetadata {
            serde_json::from_value(serde_json::json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": endpoint,
            }))
            .unwrap()
        };
        let remote = Url::parse("https://mcp.example.test/mcp").unwrap();
        let local = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let own = format!("http://127.0.0.1:{port}");
        for (url, issuer, why) in [
            (&remote, own.as_str(), "is not https"),
            (
                &local,
                "http://127.0.0.1:1",
                "is not on the origin of its issuer",
            ),
        ] {
            let target = Target {
                name: "m",
                configured: "u",
                url,
                oauth: &oauth,
                resolved: &crate::oauth::flow::NOTHING_RESOLVED,
            };
            let e = exchange(&target, "c", &metadata(issuer))
                .await
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(why) && e.contains("did not send it a client assertion"),
                "{e}"
            );
        }
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "the assertion was sent to {endpoint}"
        );
    }

    #[test]
    fn a_missing_key_file_names_the_field_and_the_path() {
        let oauth = OAuthConfig {
            private_key_file: Some("/nonexistent/mcpbox-key.pem".into()),
            ..OAuthConfig::default()
        };
        let url = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let target = Target {
            name: "m",
            configured: "http://127.0.0.1:1/mcp",
            url: &url,
            oauth: &oauth,
            resolved: &crate::oauth::flow::NOTHING_RESOLVED,
        };
        let e = sign(&target, "c", "a", &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("server `m`: `oauth.privateKeyFile` \"/nonexistent/mcpbox-key.pem\""),
            "{e}"
        );
    }
}
