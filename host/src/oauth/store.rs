//! Token storage: where the OAuth tokens of remote servers live between runs,
//! keyed by the server's URL as configured (so no `${VAR}` value is ever a key).
//!
//! Three backends:
//! - the OS keychain (feature `keychain`, on by default): macOS Keychain,
//!   Windows Credential Manager, the Secret Service on Linux, through the
//!   `keyring` crate; one entry per server (service `mcpbox`, account the URL),
//!   used when the keychain answers a probe;
//! - a JSON file readable only by the user (`0600` in a `0700` directory),
//!   rewritten atomically (a temporary file in the same directory, renamed over
//!   the old one), so a crash never leaves half a file: where there is no
//!   keychain (a server, a container: no Secret Service runs where mcpbox is
//!   built and tested), or when asked for. The file, its lock file and their
//!   directory get the checks of every file mcpbox keeps for the user
//!   (`user_files`): they must belong to the user and be writable by no one
//!   else, the file and the lock must not be symbolic links, and the file must
//!   be readable by no one else; otherwise the store is refused with a message
//!   saying why (another user's file could log you in to their account, a
//!   planted lock link could make mcpbox create or lock a file elsewhere);
//! - memory, for embedders that keep tokens elsewhere and tests.
//!
//! [`TokenStore::default_location`] chooses, and [`TokenStore::describe`] says
//! what it chose and why (`mcpbox login` prints it).
//!
//! A record holds everything a later run needs to use and refresh the tokens
//! without discovery: the rmcp credentials (client id, token response, granted
//! scopes, issuer), the client secret when the authorization server issued one,
//! the redirect URI it was registered with, the authorization server's
//! metadata, and the DPoP key the tokens are bound to when they are. Nothing in
//! a record ever crosses into the guest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::user_files::{Refused, UserDir};

/// Where OAuth tokens are kept. Cheap to clone; clones share the backend.
#[derive(Clone)]
pub struct TokenStore {
    backend: Arc<Choice>,
}

/// A backend, or the default one, chosen at its first use: the keychain's probe
/// (a D-Bus round trip on Linux, with its client's threads and memory, about
/// 1.4 MiB of peak RSS in `mcpbox-bench`'s W4) is then paid only by a runtime
/// that has an OAuth server to look up, not by every `Options`.
enum Choice {
    Chosen(Backend),
    Default(OnceLock<Backend>),
}

enum Backend {
    File {
        path: PathBuf,
        lock: Mutex<()>,
        /// Why the keychain was not used, when it was tried.
        no_keychain: Option<String>,
    },
    Memory(Mutex<BTreeMap<String, Record>>),
    #[cfg(feature = "keychain")]
    Keychain(Mutex<()>),
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Everything kept for one server.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The configured server name when the record was written, for people reading the file.
    pub server: String,
    /// rmcp's credentials: client id, token response, granted scopes, issuer.
    pub credentials: StoredCredentials,
    /// The client secret the authorization server issued (or the configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered with.
    pub redirect_uri: String,
    /// The authorization server's metadata, so a refresh needs no discovery.
    pub metadata: AuthorizationMetadata,
    /// The private key the tokens are bound to (DPoP, RFC 9449), as PKCS#8
    /// PEM, when the authorization server binds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    /// Records by configured server URL.
    #[serde(default)]
    servers: BTreeMap<String, Record>,
}

/// Why the token store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the OAuth token store {store}: {message}")]
pub struct StoreError {
    store: String,
    message: String,
}

impl std::fmt::Debug for Record {
    /// Tokens and secrets are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("server", &self.server)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl TokenStore {
    /// A file readable only by the user, created on first write.
    pub fn file(path: impl Into<PathBuf>) -> TokenStore {
        TokenStore::chosen(Backend::File {
            path: path.into(),
            lock: Mutex::new(()),
            no_keychain: None,
        })
    }

    /// The OS keychain, when one answers here; why not otherwise.
    #[cfg(feature = "keychain")]
    pub fn keychain() -> Result<TokenStore, String> {
        keychain::available()?;
        Ok(TokenStore::chosen(Backend::Keychain(Mutex::new(()))))
    }

    /// Memory only: tokens last as long as the store.
    pub fn memory() -> TokenStore {
        TokenStore::chosen(Backend::Memory(Mutex::default()))
    }

    fn chosen(backend: Backend) -> TokenStore {
        TokenStore {
            backend: Arc::new(Choice::Chosen(backend)),
        }
    }

    /// The backend, the default one chosen now if this is its first use.
    fn backend(&self) -> &Backend {
        match &*self.backend {
            Choice::Chosen(backend) => backend,
            Choice::Default(cell) => cell.get_or_init(|| {
                let (want_file, file) = TokenStore::default_places();
                TokenStore::choose_backend(want_file, file)
            }),
        }
    }

    /// The default: the file `$MCPBOX_CREDENTIALS` when it is set; else the OS
    /// keychain when one answers (feature `keychain`) and
    /// `$MCPBOX_TOKEN_STORE` is not `file`; else `credentials.json` in
    /// `$XDG_CONFIG_HOME/mcpbox` or `~/.config/mcpbox`; memory when no
    /// directory is known. Chosen at the first use (the environment as it is
    /// then), so that a runtime with no OAuth server never probes the keychain.
    pub fn default_location() -> TokenStore {
        TokenStore {
            backend: Arc::new(Choice::Default(OnceLock::new())),
        }
    }

    /// Whether the file is asked for, and where the file would be.
    fn default_places() -> (bool, Option<PathBuf>) {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(path) = var("MCPBOX_CREDENTIALS") {
            return (true, Some(path));
        }
        let file = var("XDG_CONFIG_HOME")
            .map(|d| d.join("mcpbox").join("credentials.json"))
            .or_else(|| {
                var("HOME").map(|d| d.join(".config").join("mcpbox").join("credentials.json"))
            });
        let want_file = std::env::var("MCPBOX_TOKEN_STORE").is_ok_and(|v| v == "file");
        (want_file, file)
    }

    /// The keychain unless `want_file`, else (or without one) the file.
    #[cfg(test)]
    fn choose(want_file: bool, file: Option<PathBuf>) -> TokenStore {
        TokenStore::chosen(TokenStore::choose_backend(want_file, file))
    }

    fn choose_backend(want_file: bool, file: Option<PathBuf>) -> Backend {
        #[cfg(feature = "keychain")]
        let no_keychain = if want_file {
            None
        } else {
            match keychain::available() {
                Ok(()) => return Backend::Keychain(Mutex::new(())),
                Err(why) => Some(why),
            }
        };
        #[cfg(not(feature = "keychain"))]
        let no_keychain = (!want_file).then(|| "built without the `keychain` feature".to_owned());
        match file {
            Some(path) => Backend::File {
                path,
                lock: Mutex::new(()),
                no_keychain,
            },
            None => Backend::Memory(Mutex::default()),
        }
    }

    /// Where tokens go, for people: `the OS keychain`, `file /path (mode
    /// 0600)` (the file's mode as it is, or the one it will be written with)
    /// with why not the keychain, or `memory`.
    pub fn describe(&self) -> String {
        match self.backend() {
            Backend::File {
                path,
                no_keychain: None,
                ..
            } => format!("file {} ({})", path.display(), file_mode(path)),
            Backend::File {
                path,
                no_keychain: Some(why),
                ..
            } => format!(
                "file {} ({}; no OS keychain: {why})",
                path.display(),
                file_mode(path)
            ),
            Backend::Memory(_) => "memory (not kept after this process)".to_owned(),
            #[cfg(feature = "keychain")]
            Backend::Keychain(_) => "the OS keychain (service `mcpbox`)".to_owned(),
        }
    }

    /// The configured URLs that have tokens (the keychain cannot list its entries).
    pub fn urls(&self) -> Result<Vec<String>, StoreError> {
        self.with(false, |servers| {
            Ok((servers.keys().cloned().collect(), false))
        })
    }

    pub(crate) fn get(&self, url: &str) -> Result<Option<Record>, StoreError> {
        #[cfg(feature = "keychain")]
        if let Backend::Keychain(_) = self.backend() {
            return match keychain::get(url).map_err(|m| self.error(m))? {
                Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
                    self.error(format!(
                        "holds an entry for {url} that is not a token record ({e}); run \
                         `mcpbox logout` and `mcpbox login` for that server"
                    ))
                }),
                None => Ok(None),
            };
        }
        self.with(false, |servers| Ok((servers.get(url).cloned(), false)))
    }

    pub(crate) fn put(&self, url: &str, record: Record) -> Result<(), StoreError> {
        #[cfg(feature = "keychain")]
        if let Backend::Keychain(_) = self.backend() {
            let text = serde_json::to_string(&record).map_err(|e| self.error(e.to_string()))?;
            return keychain::set(url, &text).map_err(|m| self.error(m));
        }
        self.with(true, |servers| {
            servers.insert(url.to_owned(), record);
            Ok(((), true))
        })
    }

    /// Replaces the credentials of an existing record (a refresh).
    fn update(&self, url: &str, credentials: StoredCredentials) -> Result<(), StoreError> {
        #[cfg(feature = "keychain")]
        if let Backend::Keychain(lock) = self.backend() {
            let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(mut record) = self.get(url)? {
                record.credentials = credentials;
                self.put(url, record)?;
            }
            return Ok(());
        }
        self.with(true, |servers| match servers.get_mut(url) {
            Some(record) => {
                record.credentials = credentials;
                Ok(((), true))
            }
            None => Ok(((), false)),
        })
    }

    /// Hands mcpbox an access token the embedder obtained itself (from its own
    /// store or flow) for the server configured with `url` (as written in the
    /// configuration), valid for `expires_in` when known. mcpbox sends it as
    /// the bearer token and cannot refresh it: once it expires or is refused,
    /// the server needs authorization again
    /// ([`Event::AuthorizationRequired`](crate::Event::AuthorizationRequired)).
    pub fn set_access_token(
        &self,
        url: &str,
        access_token: &str,
        expires_in: Option<std::time::Duration>,
    ) -> Result<(), StoreError> {
        let mut response = serde_json::json!({
            "access_token": access_token,
            "token_type": "Bearer",
        });
        if let Some(d) = expires_in {
            response["expires_in"] = d.as_secs().into();
        }
        let response = serde_json::from_value(response).map_err(|e| self.error(e.to_string()))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.put(
            url,
            Record {
                server: String::new(),
                credentials: StoredCredentials::new(
                    String::new(),
                    Some(response),
                    Vec::new(),
                    Some(now),
                ),
                client_secret: None,
                redirect_uri: String::new(),
                metadata: AuthorizationMetadata::default(),
                dpop_key: None,
            },
        )
    }

    /// Forgets a server's tokens; whether there were any.
    pub fn remove(&self, url: &str) -> Result<bool, StoreError> {
        #[cfg(feature = "keychain")]
        if let Backend::Keychain(_) = self.backend() {
            return keychain::delete(url).map_err(|m| self.error(m));
        }
        self.with(true, |servers| {
            let had = servers.remove(url).is_some();
            Ok((had, had))
        })
    }

    /// Runs `f` on the records; writes them back when it says so. One at a
    /// time: in this process by a mutex, across processes (two `mcpbox` runs
    /// refreshing tokens at once) by an exclusive lock on a file beside the
    /// token file (`credentials.json.lock`: the token file itself is replaced by
    /// a rename, so a lock on it would not outlive the first write). The lock
    /// is `std`'s `File::lock` (`flock` on Unix, `LockFileEx` on Windows), held
    /// for one read-modify-write, a few milliseconds. A reader (`writes`
    /// false) takes no file lock: the rename shows it the old file or the new.
    fn with<T>(
        &self,
        writes: bool,
        f: impl FnOnce(&mut BTreeMap<String, Record>) -> Result<(T, bool), StoreError>,
    ) -> Result<T, StoreError> {
        match self.backend() {
            Backend::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
                f(&mut map).map(|(t, _)| t)
            }
            #[cfg(feature = "keychain")]
            Backend::Keychain(_) => Err(self.error("cannot list its entries".to_owned())),
            Backend::File { path, lock, .. } => {
                let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
                let (dir, name) = split(path);
                // A reader of a store nobody wrote yet creates nothing.
                if !writes && std::fs::symlink_metadata(dir).is_err() {
                    return f(&mut BTreeMap::new()).map(|(t, _)| t);
                }
                let dir = UserDir::open(dir).map_err(|e| self.refused(e))?;
                let _across = if writes {
                    Some(lock_file(&dir, &name).map_err(|e| self.refused(e))?)
                } else {
                    None
                };
                let mut file = read(&dir, &name).map_err(|e| self.refused(e))?;
                let (t, write_back) = f(&mut file.servers)?;
                if write_back {
                    write(&dir, &name, &file).map_err(|e| self.refused(e))?;
                }
                Ok(t)
            }
        }
    }

    /// A refused or failed file operation, with what to do when the file or
    /// its directory is not safe to use.
    fn refused(&self, e: Refused) -> StoreError {
        match e {
            Refused::Unsafe(why) => self.error(format!(
                "{why}; OAuth tokens are kept only in a file and directory of your own that no \
                 one else can write (the file and its lock not symbolic links, the file readable \
                 by you alone): fix that, or point MCPBOX_CREDENTIALS at a file in a private \
                 directory"
            )),
            Refused::Io(e) => self.error(e.to_string()),
        }
    }

    fn error(&self, message: String) -> StoreError {
        StoreError {
            store: self.describe(),
            message,
        }
    }

    /// rmcp's view of one server's credentials in this store.
    pub(crate) fn credentials(&self, url: &str) -> ServerCredentials {
        ServerCredentials {
            store: self.clone(),
            url: url.to_owned(),
            cached: Mutex::new(None),
        }
    }
}

/// The largest token file read: a record is a few kilobytes.
const MAX_FILE: u64 = 16 << 20;

/// The directory of the token file at `path`, and the file's name.
fn split(path: &Path) -> (&Path, String) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    (dir, name.into_owned())
}

/// The token file's mode as it is, for people.
fn file_mode(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => "a symbolic link, not used".to_owned(),
        Ok(m) => format!("mode {:04o}", m.permissions().mode() & 0o7777),
        Err(_) => "mode 0600 once written".to_owned(),
    }
}

/// Takes the exclusive lock beside the token file `name` in `dir`
/// (`NAME.lock`, created 0600, never through a symbolic link); released when
/// the returned file is dropped.
fn lock_file(dir: &UserDir, name: &str) -> Result<std::fs::File, Refused> {
    let lock = dir.lock_file(&format!("{name}.lock"))?;
    lock.lock().map_err(|e| {
        Refused::Io(std::io::Error::other(format!(
            "its lock file could not be locked: {e}"
        )))
    })?;
    Ok(lock)
}

fn read(dir: &UserDir, name: &str) -> Result<File, Refused> {
    match dir.read_secret(name, MAX_FILE)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Refused::Io(std::io::Error::other(format!(
                "is not a token file ({e}); move it aside and run `mcpbox login` again"
            )))
        }),
        None => Ok(File::default()),
    }
}

fn write(dir: &UserDir, name: &str, file: &File) -> Result<(), Refused> {
    let text = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    dir.write_synced(name, &text)
}

/// One server's credentials, as rmcp's [`CredentialStore`]: what a refresh reads
/// and writes. The record must exist (login writes it whole).
///
/// rmcp loads the credentials for every request it authorizes; they are read
/// from the store once and kept here, so a request costs no file read. A login
/// in another process is seen by the next runtime.
pub(crate) struct ServerCredentials {
    store: TokenStore,
    url: String,
    cached: Mutex<Option<StoredCredentials>>,
}

fn store_error(e: StoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if let Some(c) = &*self.cached.lock().unwrap_or_else(|p| p.into_inner()) {
            return Ok(Some(c.clone()));
        }
        let loaded = self
            .store
            .get(&self.url)
            .map_err(store_error)?
            .map(|r| r.credentials);
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = loaded.clone();
        Ok(loaded)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some(credentials.clone());
        self.store
            .update(&self.url, credentials)
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.store.remove(&self.url).map_err(store_error)?;
        Ok(())
    }
}

/// The OS keychain through `keyring` (its v1 API: the platform's default
/// store). Calls block briefly (D-Bus on Linux); they happen once per server and
/// runtime (credentials are cached), at login and at refresh.
#[cfg(feature = "keychain")]
mod keychain {
    use keyring::{Entry, Error};

    /// The keychain service name of every entry.
    const SERVICE: &str = "mcpbox";

    fn entry(account: &str) -> Result<Entry, String> {
        Entry::new(SERVICE, account).map_err(|e| e.to_string())
    }

    /// Whether the keychain answers: a read of an entry that need not exist.
    pub fn available() -> Result<(), String> {
        if let Err(e) = Entry::store_status() {
            return Err(e.to_string());
        }
        match entry("mcpbox-availability-probe")?.get_password() {
            Ok(_) | Err(Error::NoEntry) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    pub fn get(url: &str) -> Result<Option<String>, String> {
        match entry(url)?.get_password() {
            Ok(text) => Ok(Some(text)),
            Err(Error::NoEntry) => Ok(None),
            Err(e) => Err(format!("could not be read: {e}")),
        }
    }

    pub fn set(url: &str, text: &str) -> Result<(), String> {
        entry(url)?
            .set_password(text)
            .map_err(|e| format!("could not be written: {e}"))
    }

    pub fn delete(url: &str) -> Result<bool, String> {
        match entry(url)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(Error::NoEntry) => Ok(false),
            Err(e) => Err(format!("could not be changed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default store probes nothing until it is used: a runtime with no
    /// OAuth server never asks the keychain.
    #[test]
    fn the_default_store_is_chosen_at_its_first_use() {
        let store = TokenStore::default_location();
        let chosen = |s: &TokenStore| match &*s.backend {
            Choice::Default(cell) => cell.get().is_some(),
            Choice::Chosen(_) => panic!("the default store was chosen at once"),
        };
        assert!(!chosen(&store));
        let clone = store.clone();
        assert!(!store.describe().is_empty());
        assert!(chosen(&clone), "clones share the choice");
    }

    /// Where a keychain answers, records round-trip through it; where none does
    /// (here: no Secret Service), the file is chosen and says why.
    #[test]
    fn the_keychain_where_one_answers_else_the_file_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        let store = TokenStore::choose(false, Some(path.clone()));
        let text = store.describe();
        if text.starts_with("the OS keychain") {
            let url = "https://mcpbox-test.invalid/mcp";
            store.put(url, record("tok-k")).unwrap();
            assert!(store.get(url).unwrap().is_some());
            assert!(store.remove(url).unwrap());
            assert!(store.get(url).unwrap().is_none());
        } else {
            assert!(text.contains("no OS keychain: "), "{text}");
            assert!(text.contains(&path.display().to_string()), "{text}");
        }
        // Asked for the file: the file, with no excuse.
        let store = TokenStore::choose(true, Some(path.clone()));
        assert_eq!(
            store.describe(),
            format!("file {} (mode 0600 once written)", path.display())
        );
        assert!(
            TokenStore::choose(true, None)
                .describe()
                .starts_with("memory")
        );
    }

    fn record(token: &str) -> Record {
        let response: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": token, "token_type": "Bearer"}),
        )
        .unwrap();
        Record {
            server: "s".into(),
            credentials: StoredCredentials::new("client".into(), Some(response), vec![], None),
            client_secret: None,
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            metadata: AuthorizationMetadata::default(),
            dpop_key: None,
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_rewritten_whole_and_keyed_by_url() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/credentials.json");
        let store = TokenStore::file(&path);
        assert!(store.get("https://a.example/mcp").unwrap().is_none());
        store.put("https://a.example/mcp", record("tok-a")).unwrap();
        store.put("https://b.example/mcp", record("tok-b")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        // Another store on the same file sees both; removing one keeps the other.
        let again = TokenStore::file(&path);
        assert_eq!(again.urls().unwrap().len(), 2);
        assert!(again.remove("https://a.example/mcp").unwrap());
        assert!(!again.remove("https://a.example/mcp").unwrap());
        assert_eq!(store.urls().unwrap(), vec!["https://b.example/mcp"]);
        // No temporary file is left behind: the tokens and the lock beside them.
        let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
        let lock_mode = std::fs::metadata(path.with_extension("json.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(lock_mode & 0o777, 0o600);
    }

    /// Two stores on one file stand for two `mcpbox` processes: each has its
    /// own in-process mutex, so only the lock file keeps their read-modify-write
    /// cycles apart (`flock` locks belong to the open file, so two opens in one
    /// process exclude each other as two processes would). Without it, writes
    /// from one would overwrite the other's and entries would be lost.
    #[test]
    fn two_stores_writing_one_file_at_once_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        let writers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let store = TokenStore::file(&path);
                std::thread::spawn(move || {
                    for i in 0..100 {
                        let url = format!("https://{who}{i}.example/mcp");
                        store.put(&url, record(&format!("tok-{who}{i}"))).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(TokenStore::file(&path).urls().unwrap().len(), 200);
    }

    /// The store reports the file's mode as it is.
    #[cfg(unix)]
    #[test]
    fn the_store_says_the_files_real_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        let store = TokenStore::file(&path);
        store.put("https://a.example/mcp", record("tok-a")).unwrap();
        assert!(store.describe().ends_with("(mode 0600)"), "{store:?}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(store.describe().ends_with("(mode 0400)"), "{store:?}");
        assert!(store.get("https://a.example/mcp").unwrap().is_some());
    }

    /// What another local user could have written or planted is not used:
    /// a token file others may write or read, one of another user, a token
    /// file or lock that is a symbolic link, a directory others may write.
    /// Nothing is read from them, nothing created through them, and the
    /// error says why.
    #[cfg(unix)]
    #[test]
    fn a_token_file_others_could_have_written_or_planted_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        let url = "https://a.example/mcp";
        TokenStore::file(&path)
            .put(url, record("tok-attacker"))
            .unwrap();
        let refused = |store: &TokenStore, words: &[&str]| {
            let e = store.get(url).unwrap_err().to_string();
            assert!(words.iter().all(|w| e.contains(w)), "{e}");
            assert!(
                e.contains("MCPBOX_CREDENTIALS") && !e.contains("tok-"),
                "{e}"
            );
        };
        let store = TokenStore::file(&path);
        mode(&path, 0o666);
        refused(&store, &["may be written by anyone (mode 0666)"]);
        assert!(store.describe().ends_with("(mode 0666)"), "{store:?}");
        mode(&path, 0o644);
        refused(&store, &["may be read by others (mode 0644)"]);
        mode(&path, 0o600);
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            refused(&store, &["belongs to user 65534"]);
            std::os::unix::fs::chown(&path, Some(0), Some(0)).unwrap();
        }
        assert!(store.get(url).unwrap().is_some());

        // A planted lock link: no write goes through, nothing is created at its target.
        let lock = dir.path().join("credentials.json.lock");
        let _ = std::fs::remove_file(&lock);
        let victim = dir.path().join("victim");
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        let e = store.remove(url).unwrap_err().to_string();
        assert!(
            e.contains("credentials.json.lock is a symbolic link"),
            "{e}"
        );
        assert!(!victim.exists());
        assert!(store.get(url).unwrap().is_some(), "nothing was removed");
        std::fs::remove_file(&lock).unwrap();

        // The token file itself a link.
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::rename(&path, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        refused(&store, &["credentials.json is a symbolic link"]);
        std::fs::remove_file(&path).unwrap();
        std::fs::rename(&elsewhere, &path).unwrap();

        // A directory anyone may write (a shared one).
        mode(dir.path(), 0o777);
        refused(&store, &["may be written by anyone (mode 0777)"]);
        mode(dir.path(), 0o700);
        assert!(store.get(url).unwrap().is_some());
    }

    #[test]
    fn a_file_that_is_not_a_token_file_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        std::fs::write(&path, "<html>").unwrap();
        #[cfg(unix)]
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let e = TokenStore::file(&path).get("x").unwrap_err().to_string();
        assert!(
            e.contains("is not a token file") && e.contains("mcpbox login"),
            "{e}"
        );
        // And it is left as it was.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "<html>");
    }
}
