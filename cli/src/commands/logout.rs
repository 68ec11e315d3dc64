//! `mcpbox logout`: forgets a remote server's OAuth tokens.

use mcpbox::trust::ConfigFile;

use crate::exit::Exit;
use crate::{Failure, one};

/// `mcpbox logout SERVER`: removes the server's tokens from this machine. Needs
/// no trust: it contacts nobody and only forgets a credential of the user's.
pub(crate) fn logout(config: &ConfigFile, server: &str) -> Result<Exit, Failure> {
    let store = mcpbox::TokenStore::default_location();
    let had = mcpbox::oauth::logout(&config.text, server, &store)?;
    let server = one(server);
    let place = store.describe();
    let place = one(&place);
    if had {
        println!("logged out of {server}: its tokens were removed from {place}");
    } else {
        println!("{server} had no tokens in {place}");
    }
    Ok(Exit::Success)
}
