//! Reading a configuration file: bounded (no further than one byte past
//! [`MAX_CONFIG_BYTES`]), a missing file told apart. Shared by the runtime's
//! start and reload, the watcher and `mcpbox trust`, and a leaf: it knows
//! nothing of the runtime, so those who read a file need not reach it.

use std::path::Path;

use crate::Error;

/// The largest configuration accepted, as the guest's own cap
/// (`mcpbox_guest::config::MAX_CONFIG_BYTES`): a bigger text is refused here,
/// before it is read whole or copied into the guest's memory.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;

pub(crate) fn too_large(origin: &str) -> Error {
    Error::Config {
        origin: origin.to_owned(),
        message: format!(
            "{origin} is larger than 16 MiB, the most a configuration may be; is this the right file?"
        ),
    }
}

/// The text of the configuration file at `path`, read no further than one byte
/// past [`MAX_CONFIG_BYTES`]; a missing file is empty.
pub(crate) fn read_config(path: &Path) -> Result<String, Error> {
    Ok(read_config_file(path)?.unwrap_or_default())
}

/// The text of the configuration file at `path`, as [`read_config`] reads it;
/// `None` when there is no such file (the watcher tells a deleted file apart).
pub(crate) fn read_config_file(path: &Path) -> Result<Option<String>, Error> {
    use std::io::Read;
    let origin = path.display().to_string();
    let cannot = |e: std::io::Error| Error::Config {
        origin: origin.clone(),
        message: format!("{origin}: cannot be read: {e}"),
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
    };
    // One byte past the cap tells a file over it apart, whatever its metadata says.
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() > MAX_CONFIG_BYTES {
        return Err(too_large(&origin));
    }
    Ok(Some(text))
}
