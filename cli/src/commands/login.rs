//! `mcpbox login`: authorizes mcpbox with a remote server that uses OAuth
//! ([`mcpbox::oauth::login`]), in the browser or by a printed URL.

use std::time::Duration;

use mcpbox::trust::ConfigFile;

use crate::exit::Exit;
use crate::{Failure, fail, one};

/// `mcpbox login SERVER`. Only for a trusted configuration (the caller checks):
/// a login sends requests to the URL the file names (with its `${VAR}`s
/// resolved from the environment), registers a client there and opens the
/// browser on an authorization page that server chose.
pub(crate) async fn login(
    json: bool,
    config: &ConfigFile,
    server: &str,
    timeout: u64,
    no_browser: bool,
) -> Result<Exit, Failure> {
    let store = mcpbox::TokenStore::default_location();
    eprintln!("tokens will be stored in: {}", one(&store.describe()));
    let show = move |url: &str| {
        // Built from the server's metadata: shown escaped.
        eprintln!(
            "Open this URL in a browser to authorize mcpbox with `{}`:\n\n  {}\n",
            one(server),
            one(url)
        );
        if !no_browser && webbrowser::open(url).is_err() {
            eprintln!("(no browser could be opened here; open the URL yourself)");
        }
        eprintln!("waiting for the authorization (up to {timeout} s)…");
    };
    let login = mcpbox::oauth::login(
        &config.text,
        server,
        &store,
        &show,
        Duration::from_secs(timeout),
    )
    .await
    .map_err(|e| fail(Exit::Unavailable, e))?;
    if json {
        println!(
            "{}",
            serde_json::json!({"server": server, "scopes": login.scopes, "storedIn": login.stored_in})
        );
    } else {
        let scopes = if login.scopes.is_empty() {
            "none reported".to_owned()
        } else {
            login.scopes.join(" ")
        };
        println!(
            "logged in to {} (scopes: {}); tokens stored in {}",
            one(server),
            one(&scopes),
            one(&login.stored_in)
        );
    }
    Ok(Exit::Success)
}
