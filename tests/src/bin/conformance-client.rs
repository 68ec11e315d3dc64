//! mcpbox as a client for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, client scenarios).
//!
//! The suite's runner starts `conformance-client <server-url>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (and the spec revision it runs in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`, scenario data in `MCP_CONFORMANCE_CONTEXT`),
//! then scores what its mock server saw. This program does what an mcpbox user
//! would: it opens a runtime over a one-server configuration
//! (`{"type": "http", "url": <server-url>}`), waits for the server to connect —
//! era detection, handshake and tool listing are mcpbox's own — and then calls
//! the tools the scenario is about through the registry. It exits 0 when the
//! scenario's flow completed and 1 otherwise, with the reason on stderr.
//!
//! Input requests (elicitation) are enabled, and every one is accepted with an
//! empty object, so the requested schema's defaults fill it: a headless client's
//! policy, which is what the elicitation scenarios score (SEP-1034 defaults; the
//! 2026-07-28 `input_required` retry with `requestState`).
//!
//! The OAuth scenarios (`auth/…`) run the same way, with mcpbox's on-demand
//! authorization ([`Options::authorize_on_demand`]) and a memory token store:
//! the first request is refused, mcpbox discovers and registers, and its
//! [`Event::AuthorizationRequired`] is answered headlessly, as a browser whose
//! user approves would: the authorization URL is fetched without following
//! redirects and the `Location` it answers (mcpbox's loopback redirect URI, with
//! the code) is requested. A pre-registered client (`client_id`,
//! `client_secret` in the scenario's context) goes into the server entry's
//! `oauth` fields, as a user would write them; so does the URL of a client ID
//! metadata document.
//!
//! Everything the runtime hands this embedder (events, server states, tools,
//! call results and errors, diagnostics) goes into a transcript, which is
//! searched at the end for the suite's access tokens (`test-token-…`,
//! `cc-token-…`, and in the OAuth scenarios any JWT: the DPoP-bound tokens,
//! proofs, a workload's identity token) and private keys: finding one fails the
//! scenario. A scenario's private key (`private_key_jwt`) is written to a file
//! that the entry's `oauth.privateKeyFile` names, with `oauth.algorithm`, as a
//! user would; so is the workload's identity token of the workload identity
//! federation scenario (`oauth.identityTokenFile`, as a platform projects it).
//! The DPoP scenarios need nothing configured: mcpbox binds its tokens when
//! the authorization server offers DPoP.
//!
//! `tests/tests/all/conformance.rs` runs every client scenario with it.

use std::process::ExitCode;
use std::sync::Mutex;

use std::time::Duration;
use tokio::sync::broadcast;

use mcpbox::{CallOptions, Event, InputAnswer, Options, Runtime, ServerState, TokenStore};
use serde_json::{Value, json};

/// Everything the runtime handed out, searched for tokens at the end.
static TRANSCRIPT: Mutex<String> = Mutex::new(String::new());

/// What the suite's authorization servers issue as access tokens (the
/// client credentials scenarios: `cc-token-`), and the private key's PEM.
const TOKEN_PREFIXES: [&str; 3] = ["test-token-", "cc-token-", "PRIVATE KEY"];

/// How a JWT begins (`{"alg":` or `{"typ":` in base64url): in an OAuth
/// scenario, a DPoP-bound access token, a proof or the workload's identity token.
const JWT_PREFIXES: [&str; 2] = ["eyJhbGciOi", "eyJ0eXAiOi"];

fn record(what: impl std::fmt::Debug) {
    let mut t = TRANSCRIPT.lock().unwrap_or_else(|p| p.into_inner());
    t.push_str(&format!("{what:?}\n"));
}

/// A scenario's whole flow must finish well inside the runner's 30 s.
const PATIENCE: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance-client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(async {
        tokio::time::timeout(PATIENCE, run(&url, &scenario, &context))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "scenario {scenario} did not finish within {PATIENCE:?}"
                ))
            })
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client ({scenario}): {e}");
            ExitCode::from(1)
        }
    }
}

/// The client ID metadata document a user of the CIMD scenario would host.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    let mut entry = json!({ "type": "http", "url": url });
    if scenario.starts_with("auth/") {
        let mut oauth = json!({ "clientMetadataUrl": CLIENT_METADATA_URL });
        if let Some(id) = context["client_id"].as_str() {
            oauth["clientId"] = json!(id);
        }
        if let Some(secret) = context["client_secret"].as_str() {
            oauth["clientSecret"] = json!(secret);
        }
        if scenario.starts_with("auth/client-credentials") {
            oauth["grantType"] = json!("client_credentials");
        }
        // Enterprise-managed authorization: the IdP's ID token and client.
        for (key, field) in [
            ("idp_id_token", "idpIdToken"),
            ("idp_client_id", "idpClientId"),
            ("idp_issuer", "idpIssuer"),
            ("idp_token_endpoint", "idpTokenEndpoint"),
        ] {
            if let Some(value) = context[key].as_str() {
                oauth[field] = json!(value);
            }
        }
        // Workload identity federation: the workload's JWT in a file, as its
        // platform writes it.
        if let Some(jwt) = context["valid_jwt"].as_str() {
            let path = identity_token_file();
            std::fs::write(&path, jwt).map_err(|e| format!("{}: {e}", path.display()))?;
            oauth["identityTokenFile"] = json!(path);
        }
        // `private_key_jwt`: the key in a file, as a user keeps it.
        if let Some(pem) = context["private_key_pem"].as_str() {
            let path = key_file();
            std::fs::write(&path, pem).map_err(|e| format!("{}: {e}", path.display()))?;
            oauth["privateKeyFile"] = json!(path);
            if let Some(algorithm) = context["signing_algorithm"].as_str() {
                oauth["algorithm"] = json!(algorithm);
            }
        }
        entry["oauth"] = oauth;
    }
    let config = json!({ "mcpServers": { "server": entry } });
    let runtime = Options::from_config_text("conformance.mcp.json", config.to_string())
        .input_requests(true)
        .token_store(TokenStore::memory())
        .authorize_on_demand(true, PATIENCE)
        .open()
        .await
        .map_err(|e| e.to_string())?;
    let events = runtime.events();
    // An authorization that started before the subscription.
    for url in runtime.pending_authorizations().into_values() {
        tokio::spawn(approve(url));
    }
    let answering = tokio::spawn(accept_defaults(runtime.clone(), events));
    let servers = runtime.ready().await;
    let server = servers.first().ok_or("no server configured")?;
    if server.state != ServerState::Connected {
        return Err(format!(
            "the server did not connect: {}",
            server.error.as_deref().unwrap_or("no reason given")
        ));
    }
    eprintln!(
        "connected: protocol {}, {} tools",
        server.protocol_version.as_deref().unwrap_or("?"),
        server.tool_count
    );
    let result = scenario_flow(&runtime, scenario, context).await;
    record(&result);
    record(runtime.servers());
    record(runtime.tools());
    record(runtime.authorization_required());
    record(runtime.diagnostics("server"));
    runtime.shutdown().await;
    answering.abort();
    let _ = std::fs::remove_file(key_file());
    let _ = std::fs::remove_file(identity_token_file());
    let transcript = TRANSCRIPT.lock().unwrap_or_else(|p| p.into_inner());
    let auth = scenario.starts_with("auth/");
    let found = TOKEN_PREFIXES
        .iter()
        .filter_map(|p| transcript.find(p))
        .chain(
            JWT_PREFIXES
                .iter()
                .filter(|_| auth)
                .filter_map(|p| transcript.find(p)),
        )
        .min();
    if let Some(at) = found {
        let end = transcript.len().min(at + 80);
        return Err(format!(
            "an access token reached the embedder: …{}…",
            &transcript[at..end]
        ));
    }
    result
}

/// Where a scenario's private key is written for the server entry to name.
fn key_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mcpbox-conformance-{}.pem", std::process::id()))
}

/// Where the workload's identity token is written for the server entry to name.
fn identity_token_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mcpbox-conformance-{}.jwt", std::process::id()))
}

/// Accepts every input request with `{}`: the requested schema's defaults.
async fn accept_defaults(runtime: Runtime, mut events: broadcast::Receiver<Event>) {
    while let Ok(event) = events.recv().await {
        record(&event);
        if let Event::AuthorizationRequired {
            server,
            url: Some(url),
        } = &event
        {
            eprintln!("authorization required by {server}");
            tokio::spawn(approve(url.clone()));
        }
        if let Event::InputRequested(request) = event {
            eprintln!("input requested by {}: {}", request.server, request.message);
            if let Err(e) = runtime
                .answer_input(request.id, InputAnswer::Accept(json!({})))
                .await
            {
                eprintln!("could not answer input request {}: {e}", request.id);
            }
        }
    }
}

/// A browser whose user approves: the authorization server redirects to
/// mcpbox's loopback listener, which completes the authorization.
async fn approve(url: String) {
    let client = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(c) => c,
        Err(e) => return eprintln!("approve: {e}"),
    };
    let location = match client.get(&url).send().await {
        Ok(r) => r
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned),
        Err(e) => return eprintln!("approve: the authorization URL failed: {e}"),
    };
    let Some(location) = location else {
        return eprintln!("approve: the authorization server did not redirect");
    };
    if let Err(e) = client.get(&location).send().await {
        eprintln!("approve: the redirect failed: {e}");
    }
}

/// What each scenario expects of a client once it is connected.
async fn scenario_flow(runtime: &Runtime, scenario: &str, context: &Value) -> Result<(), String> {
    let tools = runtime.tools();
    let name = |tool: &str| format!("mcp__server__{tool}");
    match scenario {
        // Connecting (handshake or discovery, then tools/list) is the whole test.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Ok(()),
        "tools_call" | "tools-call" => {
            let tool = tools.first().ok_or("the server listed no tools")?;
            call(runtime, &tool.name, json!({"a": 2, "b": 3}).to_string()).await
        }
        "sse-retry" => call(runtime, &name("test_reconnection"), "{}".into()).await,
        "json-schema-2020-12-preservation" => {
            // Round-trip the schema exactly as the registry holds it.
            let focal = tools
                .iter()
                .find(|t| t.tool == "json_schema_2020_12_tool")
                .ok_or("json_schema_2020_12_tool is not listed")?;
            let arguments = format!(r#"{{"schema":{}}}"#, focal.input_schema.get());
            call(runtime, &name("json_schema_echo"), arguments).await
        }
        "http-custom-headers" => {
            for c in context["toolCalls"].as_array().into_iter().flatten() {
                let tool = c["name"].as_str().unwrap_or_default();
                call(runtime, &name(tool), c["arguments"].to_string()).await?;
            }
            Ok(())
        }
        // A host that lists skills and loads none: nothing of theirs is read.
        "sep-2640-client-no-prefetch" => {
            let skills = runtime.list_skills(None).await.map_err(|e| e.to_string())?;
            eprintln!("listed {} skills, loaded none", skills.len());
            Ok(())
        }
        // A host that loads every listed skill and then reads its files: a skill
        // served tampered must be refused at its SKILL.md, so none of its files is
        // read. A refusal is the expected end, not a failure of the flow.
        s if s.starts_with("sep-2640-client-") => {
            for skill in runtime.list_skills(None).await.map_err(|e| e.to_string())? {
                match runtime.load_skill(&skill.server, &skill.uri).await {
                    Ok(_) => {
                        let files = skill.resources.as_array().cloned().unwrap_or_default();
                        for file in files {
                            let uri = file["uri"].as_str().unwrap_or_default();
                            if uri != skill.uri {
                                record(
                                    &runtime
                                        .read_skill_file(&skill.server, &skill.uri, uri)
                                        .await,
                                );
                            }
                        }
                    }
                    Err(e) => eprintln!("refused: {e}"),
                }
            }
            Ok(())
        }
        // Every tool mcpbox offers, once, with the least arguments its schema takes:
        // what the scenario scores is the requests (their headers, which tools).
        _ => {
            for tool in tools.iter() {
                let arguments = minimal_arguments(tool.input_schema.get());
                // A tool refused with a tool error still exercised the request.
                record(
                    runtime
                        .call_tool_json(&tool.name, arguments, CallOptions::default())
                        .await,
                );
            }
            Ok(())
        }
    }
}

/// Arguments holding each required property of `schema`, with a value of its type.
fn minimal_arguments(schema: &str) -> String {
    let schema: Value = serde_json::from_str(schema).unwrap_or(Value::Null);
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let value = match schema["properties"][name]["type"].as_str() {
            Some("string") => json!("x"),
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => Value::Null,
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments).to_string()
}

async fn call(runtime: &Runtime, tool: &str, arguments: String) -> Result<(), String> {
    let result = runtime
        .call_tool_json(tool, arguments, CallOptions::default())
        .await
        .map_err(|e| format!("{tool}: {e}"));
    record(&result);
    let result = result?;
    eprintln!("{tool}: {}", result.text);
    Ok(())
}
