//! Why trust could not be checked or recorded: a leaf, so that the pins
//! ([`crate::pins`]), which `mcpbox trust` accepts, name the error without
//! reaching the trust store's module.

use std::path::PathBuf;

/// Why trust could not be checked or recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The configuration file could not be read.
    #[error("{path}: cannot be read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file could not be read whole (unreadable, or larger
    /// than a configuration may be).
    #[error(transparent)]
    Config(#[from] crate::Error),
    /// The trust store could not be used (no configuration directory, one that
    /// others may write, an unreadable or unwritable file).
    #[error("the list of trusted configurations cannot be used: {0}")]
    Store(String),
}
