//! DPoP (RFC 9449, the MCP DPoP extension SEP-1932): access tokens bound to a
//! key of mcpbox's, so that a token copied off the wire is useless without the
//! key. Used whenever the authorization server advertises
//! `dpop_signing_alg_values_supported` with ES256; nothing to configure.
//!
//! - **The key** ([`DpopKey`]): a P-256 key pair made for one server when it
//!   is first authorized (`p256`), kept with that server's tokens in the token
//!   store (a login in one process serves the next), never sent anywhere: a
//!   proof carries only the public half (`jwk`).
//! - **Token requests** ([`TokenEndpointClient`], the HTTP client rmcp's
//!   authorization manager is given for such a server): the code exchange and
//!   every refresh carry a proof (`htm` POST, `htu` the token endpoint). When
//!   the authorization server answers `400` `use_dpop_nonce` with a
//!   `DPoP-Nonce`, the request goes once more with that nonce (§8).
//! - **Requests to the MCP server** (`oauth::send`): a token the authorization
//!   server issued as `token_type: DPoP` goes as `Authorization: DPoP …` with a
//!   fresh proof on every request (`htm`, `htu`, `ath` the token's SHA-256), and
//!   a `401` with `use_dpop_nonce` gets the request sent once more with the
//!   resource server's nonce (§9). The last nonce each server sent is kept for
//!   the proofs that follow.
//!
//! The proof is a JWT signed by `jsonwebtoken` (the JOSE header with `jwk`,
//! the signature); what is written here is the choice of claims of §4.2 and
//! the nonce rules. Like every credential, the key, the proofs and the tokens
//! stay in the host: the guest sends its request and reads the answer.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::elliptic_curve::Generate as _;
use p256::pkcs8::{EncodePrivateKey as _, LineEnding};
use reqwest::Url;
use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture,
    OAuthHttpRequest,
};
use sha2::{Digest as _, Sha256};

use super::net;

/// The request header that carries a proof.
pub(crate) const DPOP: &str = "dpop";
/// The response header that carries a nonce.
const DPOP_NONCE: &str = "dpop-nonce";

/// The proofs' JWS algorithm. ES256 is the one every DPoP implementation is
/// expected to accept (the conformance suite and the reference clients use
/// it); a server that does not is used with bearer tokens.
const ALGORITHM: &str = "ES256";

/// The `typ` of a proof (§4.2).
const TYP: &str = "dpop+jwt";

/// The error code of a nonce request, at either server (§8, §9).
const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// Whether the authorization server `metadata` describes takes DPoP proofs
/// that mcpbox can make.
pub(crate) fn offered(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some(ALGORITHM)))
}

/// One server's DPoP key pair, and the nonces its authorization server and
/// resource server asked for.
pub(crate) struct DpopKey {
    key: EncodingKey,
    /// The public half, as every proof's header carries it.
    jwk: Jwk,
    /// The private key as PKCS#8 PEM, for the token store.
    pem: String,
    nonces: Mutex<Nonces>,
}

#[derive(Default)]
struct Nonces {
    authorization_server: Option<String>,
    resource_server: Option<String>,
}

/// Which server a proof or a nonce is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Server {
    /// The authorization server's token endpoint (RFC 9449 §8).
    Authorization,
    /// The MCP server (§9).
    Resource,
}

impl std::fmt::Debug for DpopKey {
    /// The key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

/// The claims of a proof (§4.2), with `ath` (§7.1) and `nonce` (§8, §9) when
/// they apply.
#[derive(serde::Serialize)]
struct Claims<'a> {
    jti: String,
    htm: &'a str,
    htu: String,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

impl DpopKey {
    /// A new key pair, from the operating system's random numbers.
    pub(crate) fn generate() -> Result<DpopKey, String> {
        let secret = p256::SecretKey::try_generate()
            .map_err(|e| format!("no randomness for a DPoP key: {e}"))?;
        let pem = secret
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| format!("the new DPoP key could not be encoded: {e}"))?;
        DpopKey::from_pem(&pem)
    }

    /// The key kept in the token store (PKCS#8 PEM). The error never
    /// shows the text.
    pub(crate) fn from_pem(pem: &str) -> Result<DpopKey, String> {
        let unusable = |e: jsonwebtoken::errors::Error| format!("the DPoP key is unusable ({e})");
        let key = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(unusable)?;
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(unusable)?;
        Ok(DpopKey {
            key,
            jwk,
            pem: pem.to_owned(),
            nonces: Mutex::default(),
        })
    }

    /// The public key, as proofs carry it.
    #[cfg(test)]
    pub(crate) fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// The private key as PKCS#8 PEM, for the token store only.
    pub(crate) fn pem(&self) -> &str {
        &self.pem
    }

    /// A proof for a request `method` `url` to `server`, bound to
    /// `access_token` when one is presented with it, with that server's last
    /// nonce.
    pub(crate) fn proof(
        &self,
        server: Server,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|e| format!("no randomness for a DPoP proof: {e}"))?;
        let claims = Claims {
            jti: URL_SAFE_NO_PAD.encode(jti),
            htm: method,
            htu: htu.into(),
            iat: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs(),
            ath: access_token.map(|t| URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes()))),
            nonce: self.nonce(server),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(TYP.to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| format!("a DPoP proof could not be signed: {e}"))
    }

    fn nonce(&self, server: Server) -> Option<String> {
        let nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        match server {
            Server::Authorization => nonces.authorization_server.clone(),
            Server::Resource => nonces.resource_server.clone(),
        }
    }

    /// Keeps the nonce an answer of `server` carries, if any: a server may
    /// send a new one with any answer (§8, §9).
    pub(crate) fn note_nonce(&self, server: Server, headers: &HeaderMap) {
        let Some(nonce) = headers.get(DPOP_NONCE).and_then(|v| v.to_str().ok()) else {
            return;
        };
        let mut nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        let slot = match server {
            Server::Authorization => &mut nonces.authorization_server,
            Server::Resource => &mut nonces.resource_server,
        };
        *slot = Some(nonce.to_owned());
    }
}

/// Whether the MCP server refused a request for want of a (new) nonce (§9):
/// `401`, `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a `DPoP-Nonce`.
pub(crate) fn resource_asks_for_nonce(status: u16, headers: &HeaderMap) -> bool {
    status == 401
        && headers.contains_key(DPOP_NONCE)
        && headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains(USE_DPOP_NONCE))
}

/// Whether the token endpoint refused a request for want of a (new) nonce
/// (§8): `400`, `{"error": "use_dpop_nonce"}` and a `DPoP-Nonce`.
fn authorization_asks_for_nonce(status: u16, headers: &HeaderMap, body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Error {
        error: String,
    }
    status == 400
        && headers.contains_key(DPOP_NONCE)
        && serde_json::from_slice::<Error>(body).is_ok_and(|e| e.error == USE_DPOP_NONCE)
}

/// The HTTP client of rmcp's authorization manager for a server whose tokens
/// are DPoP-bound: every `POST` to the token endpoint (the code exchange, each
/// refresh) carries a proof and is sent once more with the authorization
/// server's nonce when it asks for one. Everything else (discovery,
/// registration) goes as it came. All of it goes through the host's OAuth
/// client ([`net::Client`]), as every other manager's requests do.
pub(crate) struct TokenEndpointClient {
    key: Arc<DpopKey>,
    token_endpoint: Mutex<Option<Url>>,
    http: net::Client,
}

impl std::fmt::Debug for TokenEndpointClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEndpointClient")
            .field("token_endpoint", &self.token_endpoint)
            .finish_non_exhaustive()
    }
}

impl TokenEndpointClient {
    /// A client that proves possession of `key` at the token endpoint of the
    /// authorization server, once [`TokenEndpointClient::set_token_endpoint`]
    /// has named it, for the MCP server at `resource`.
    pub(crate) fn new(key: Arc<DpopKey>, resource: &Url) -> Result<TokenEndpointClient, String> {
        Ok(TokenEndpointClient {
            key,
            token_endpoint: Mutex::new(None),
            http: net::Client::for_resource(resource)?,
        })
    }

    /// The token endpoint, from the authorization server's metadata.
    pub(crate) fn set_token_endpoint(&self, url: &str) {
        *self
            .token_endpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Url::parse(url).ok();
    }

    fn is_token_request(&self, request: &oauth2::HttpRequest) -> Option<Url> {
        if request.method() != http::Method::POST {
            return None;
        }
        let url = Url::parse(&request.uri().to_string()).ok()?;
        let endpoint = self
            .token_endpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let bare = |u: &Url| {
            let mut u = u.clone();
            u.set_query(None);
            u.set_fragment(None);
            u
        };
        (bare(&url) == bare(&endpoint)).then_some(url)
    }

    /// Sends one token request with a proof; the answer's status, headers and body.
    async fn send(
        &self,
        url: &Url,
        request: &oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, OAuthHttpClientError> {
        let proof = self.key.proof(Server::Authorization, "POST", url, None)?;
        let mut with_proof = http::Request::post(url.as_str()).body(request.body().clone())?;
        *with_proof.headers_mut() = request.headers().clone();
        with_proof
            .headers_mut()
            .insert(DPOP, http::HeaderValue::from_str(&proof)?);
        // rmcp asks for no redirects on token requests; the same here.
        let answer = self.http.fetch(with_proof, false).await?;
        self.key.note_nonce(Server::Authorization, answer.headers());
        Ok(answer)
    }
}

impl TokenEndpointClient {
    /// A token request: with a proof, and once more with the authorization
    /// server's nonce when it asks for one (§8). Only once: a second request
    /// for a nonce is the server's answer.
    async fn token_request(
        &self,
        url: &Url,
        request: &oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, OAuthHttpClientError> {
        let answer = self.send(url, request).await?;
        if authorization_asks_for_nonce(answer.status().as_u16(), answer.headers(), answer.body()) {
            return self.send(url, request).await;
        }
        Ok(answer)
    }
}

impl OAuthHttpClient for TokenEndpointClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            match self.is_token_request(&request.request) {
                Some(url) => self.token_request(&url, &request.request).await,
                None => self.http.execute(request).await,
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {

    use jsonwebtoken::{DecodingKey, Validation};
    use serde_json::Value;

    use super::*;

    /// A proof's header and claims, its signature checked with the key its
    /// own header names, as a server checks it (RFC 9449 §4.3).
    pub(crate) fn verify(proof: &str) -> (Header, Value) {
        let header = jsonwebtoken::decode_header(proof).unwrap();
        let jwk = header.jwk.clone().expect("a proof names its key");
        let key = DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Value>(proof, &key, &validation).unwrap();
        (data.header, data.claims)
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn a_proof_is_signed_by_the_key_it_names_and_binds_method_url_and_token() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("https://mcp.example/mcp?session=1#frag").unwrap();
        let proof = key
            .proof(Server::Resource, "POST", &url, Some("tok-SECRET"))
            .unwrap();
        let (header, claims) = verify(&proof);
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        assert_eq!(header.alg, Algorithm::ES256);
        // The public key only.
        let jwk = serde_json::to_value(header.jwk.unwrap()).unwrap();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert!(jwk.get("d").is_none(), "{jwk}");
        assert_eq!(claims["htm"], "POST");
        // No query, no fragment (§4.2).
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        // ath = base64url(SHA-256(token)), without padding.
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok-SECRET"))
        );
        assert!(now().abs_diff(claims["iat"].as_u64().unwrap()) <= 2);
        assert!(claims.get("nonce").is_none(), "{claims}");
        assert!(!proof.contains("tok-SECRET"));
        // Each proof is new: its own jti.
        let other = key.proof(Server::Resource, "POST", &url, Some("tok-SECRET"));
        assert_ne!(verify(&other.unwrap()).1["jti"], claims["jti"]);
        assert!(claims["jti"].as_str().unwrap().len() >= 16);
        // A token request carries no ath.
        let token = Url::parse("https://as.example/token").unwrap();
        let (_, claims) = verify(
            &key.proof(Server::Authorization, "POST", &token, None)
                .unwrap(),
        );
        assert!(claims.get("ath").is_none(), "{claims}");
        assert_eq!(claims["htu"], "https://as.example/token");
    }

    #[test]
    fn each_server_gets_its_own_nonce() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("https://mcp.example/mcp").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(DPOP_NONCE, "rs-nonce-1".parse().unwrap());
        key.note_nonce(Server::Resource, &headers);
        let nonce = |server| {
            let proof = key.proof(server, "GET", &url, None).unwrap();
            verify(&proof).1.get("nonce").cloned()
        };
        assert_eq!(nonce(Server::Resource), Some("rs-nonce-1".into()));
        assert_eq!(nonce(Server::Authorization), None);
        // A newer nonce replaces the old; an answer without one keeps it.
        headers.insert(DPOP_NONCE, "rs-nonce-2".parse().unwrap());
        key.note_nonce(Server::Resource, &headers);
        key.note_nonce(Server::Resource, &HeaderMap::new());
        assert_eq!(nonce(Server::Resource), Some("rs-nonce-2".into()));

        let mut refusal = HeaderMap::new();
        refusal.insert(
            WWW_AUTHENTICATE,
            r#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce""#
                .parse()
                .unwrap(),
        );
        assert!(!resource_asks_for_nonce(401, &refusal), "no nonce given");
        refusal.insert(DPOP_NONCE, "n".parse().unwrap());
        assert!(resource_asks_for_nonce(401, &refusal));
        assert!(!resource_asks_for_nonce(403, &refusal));
        let mut other = refusal.clone();
        other.insert(
            WWW_AUTHENTICATE,
            r#"DPoP error="invalid_token""#.parse().unwrap(),
        );
        assert!(!resource_asks_for_nonce(401, &other));
    }

    #[test]
    fn a_stored_key_is_the_same_key_and_a_broken_one_is_not_shown() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_pem(key.pem()).unwrap();
        assert_eq!(key.jwk, again.jwk);
        assert!(!format!("{key:?}").contains("PRIVATE"));
        let e = DpopKey::from_pem("-----BEGIN PRIVATE KEY-----\nSECRET\n").unwrap_err();
        assert!(
            e.contains("DPoP key is unusable") && !e.contains("SECRET"),
            "{e}"
        );
    }

    #[test]
    fn dpop_is_used_when_the_authorization_server_takes_es256_proofs() {
        let metadata = |algs: Value| -> AuthorizationMetadata {
            serde_json::from_value(serde_json::json!({
                "authorization_endpoint": "https://as.example/authorize",
                "token_endpoint": "https://as.example/token",
                "dpop_signing_alg_values_supported": algs,
            }))
            .unwrap()
        };
        assert!(offered(&metadata(serde_json::json!(["RS256", "ES256"]))));
        assert!(!offered(&metadata(serde_json::json!(["EdDSA"]))));
        assert!(!offered(&metadata(serde_json::json!([]))));
        assert!(!offered(&metadata(Value::Null)));
    }

    /// The token endpoint asks for a nonce: the request goes once more with a
    /// new proof carrying it; requests elsewhere are not token requests.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_token_endpoint_nonce_is_sent_on_the_second_try() {
        let (port, server) = crate::oauth::scripted::answers(
            [
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
                 dpop-nonce: as-nonce-7\r\ncontent-length: 26\r\nconnection: close\r\n\r\n\
                 {\"error\":\"use_dpop_nonce\"}",
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\
                 connection: close\r\n\r\n{}",
            ]
            .map(str::to_owned)
            .to_vec(),
        );
        let key = Arc::new(DpopKey::generate().unwrap());
        let token = format!("http://127.0.0.1:{port}/token");
        let resource = Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let client = TokenEndpointClient::new(key, &resource).unwrap();
        client.set_token_endpoint(&token);
        let request = |url: &str| {
            http::Request::builder()
                .method("POST")
                .uri(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(b"grant_type=authorization_code&code=c".to_vec())
                .unwrap()
        };
        let token_request = request(&token);
        let url = client
            .is_token_request(&token_request)
            .expect("the token endpoint");
        let answer = client.token_request(&url, &token_request).await.unwrap();
        assert_eq!(answer.status(), 200);
        // Registration is no token request: it goes as it came.
        let other = format!("http://127.0.0.1:{port}/register");
        assert!(client.is_token_request(&request(&other)).is_none());
        let seen = server.join().unwrap();
        let proof = |head: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix("dpop: "))
                .map(|p| verify(p.trim()).1)
        };
        let first = proof(&seen[0]).expect("a proof on the token request");
        assert!(first.get("nonce").is_none(), "{first}");
        assert_eq!(first["htu"], token);
        let second = proof(&seen[1]).expect("a proof on the retry");
        assert_eq!(second["nonce"], "as-nonce-7");
        assert_ne!(first["jti"], second["jti"]);
    }
}
