//! The bearer token of `mcpbox serve --http` and `mcpbox dashboard`, kept for the
//! user between runs.
//!
//! Loopback is not a boundary between the users of a machine: any process of any
//! user can connect to `127.0.0.1`. So the gateway and the dashboard require a
//! bearer token on every address, and the CLI keeps one in
//! [`TOKEN_FILE`] (0600) in the user's configuration directory, where the user's
//! own clients read it and no other user can. It is made on first use (128 random
//! bits) and kept, so a client configured once (`Authorization: Bearer $(cat
//! ~/.config/mcpbox/http-token)`) keeps working across restarts; delete the file
//! to change it. The file is read and written with the checks of `user_files`:
//! the directory and the file must be the user's and writable by no one else, the
//! file readable by no one else, and never a symbolic link.

use std::path::{Path, PathBuf};

use crate::user_files::{Refused, UserDir};

/// The file in the configuration directory that holds the token.
pub const TOKEN_FILE: &str = "http-token";

/// The most a token file may hold, in bytes.
const MAX_TOKEN_FILE: u64 = 1024;

/// A token kept in the user's configuration directory, and where.
#[derive(Clone)]
pub struct StoredToken {
    /// The token.
    pub token: String,
    /// The file it is kept in.
    pub path: PathBuf,
    /// Whether this call made it (the file did not exist).
    pub created: bool,
}

/// Never shows the token itself.
impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("path", &self.path)
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// The directory or the file could have been read or written by another
    /// user (or is a symbolic link), so it is not used; the text says how to fix it.
    #[error("{0}")]
    Unsafe(String),
    /// The file holds something that is not a token.
    #[error(
        "{0} does not hold a bearer token (one line of letters, digits, `-`, `_`, `.`, `~`); \
         delete it and a new one is made"
    )]
    Malformed(PathBuf),
    /// The directory or the file could not be created, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The token kept in `config_dir` ([`crate::default_config_dir`] for the
/// CLI), made (128 random bits, [`crate::random_token`]) and written 0600 when
/// there is none. Two processes that start at once end up with the same token.
pub fn stored_token(config_dir: &Path) -> Result<StoredToken, TokenFileError> {
    let path = config_dir.join(TOKEN_FILE);
    let refused = |e: Refused, at: &Path| match e {
        Refused::Unsafe(why) => TokenFileError::Unsafe(why),
        Refused::Io(source) => TokenFileError::Io {
            path: at.to_owned(),
            source,
        },
    };
    let dir = UserDir::open(config_dir).map_err(|e| refused(e, config_dir))?;
    let mut created = false;
    if dir
        .read_secret(TOKEN_FILE, MAX_TOKEN_FILE)
        .map_err(|e| refused(e, &path))?
        .is_none()
    {
        let made = super::random_token().map_err(|source| TokenFileError::Io {
            path: path.clone(),
            source,
        })?;
        created = dir
            .create(TOKEN_FILE, format!("{made}\n").as_bytes())
            .map_err(|e| refused(e, &path))?;
    }
    // Read back: another process may have created it first.
    let bytes = dir
        .read_secret(TOKEN_FILE, MAX_TOKEN_FILE)
        .map_err(|e| refused(e, &path))?
        .ok_or_else(|| TokenFileError::Io {
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "removed while it was made"),
        })?;
    let token = String::from_utf8(bytes)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| is_valid_token(t))
        .ok_or_else(|| TokenFileError::Malformed(path.clone()))?;
    Ok(StoredToken {
        token,
        path,
        created,
    })
}

/// Whether `text` can be sent as a bearer token as it is (RFC 6750's
/// `b64token`, without the padding): a header value that needs no quoting.
pub fn is_valid_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpbox-token-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_token_is_made_once_kept_private_and_read_back() {
        let dir = temp("kept");
        let first = stored_token(&dir).unwrap();
        assert!(first.created);
        assert_eq!(first.token.len(), 32);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&first.path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let again = stored_token(&dir).unwrap();
        assert!(!again.created);
        assert_eq!(again.token, first.token);
        assert!(!format!("{again:?}").contains(&first.token));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_token_file_others_can_read_or_that_holds_no_token_is_refused() {
        let dir = temp("refused");
        let made = stored_token(&dir).unwrap();
        std::fs::set_permissions(&made.path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = stored_token(&dir).unwrap_err();
        assert!(
            matches!(&err, TokenFileError::Unsafe(m) if m.contains("chmod 600")),
            "{err}"
        );
        std::fs::set_permissions(&made.path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&made.path, "two words\n").unwrap();
        let err = stored_token(&dir).unwrap_err();
        assert!(matches!(err, TokenFileError::Malformed(_)), "{err}");
        std::fs::remove_file(&made.path).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &made.path).unwrap();
        let err = stored_token(&dir).unwrap_err();
        assert!(
            matches!(&err, TokenFileError::Unsafe(m) if m.contains("symbolic link")),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
