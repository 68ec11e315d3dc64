//! Watching the configuration file and reloading it when it changes
//! ([`Options::watch_config`](crate::Options::watch_config)).
//!
//! The file's **directory** is watched, not the file: editors that save by
//! writing a new file and renaming it over the old one (vim, many IDEs) replace
//! the inode a file watch would follow, and a deleted file cannot be watched
//! until it is back. Every event that names the file (or asks for a rescan)
//! counts, except reads (inotify reports opening and closing a file, and the
//! watcher's own read would otherwise wake it again).
//!
//! Changes are applied on the trailing edge: once the file has been quiet for
//! the debounce time, it is read and, when its text differs from what was last
//! applied, handed to [`Runtime::apply`]. A burst of saves (an editor's
//! write-rename-chmod, a formatter, a script writing a hundred times) is thus
//! applied once, as its last state, and the report counts the events folded
//! into it. `notify-debouncer-full` and `-mini` were not used: they emit each
//! event a fixed time after it happened, so a storm of saves over a second
//! comes out as a stream of events rather than one; the trailing edge is a
//! timer reset in the task below.
//!
//! The task holds the runtime weakly: it ends (and drops the OS watch) when the
//! runtime is dropped or stops.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::types::Event;
use crate::{Error, Runtime};

/// Starts watching `path`, whose text `applied` the runtime was opened with.
pub(crate) fn start(
    runtime: &Runtime,
    path: &Path,
    applied: String,
    quiet: Duration,
) -> Result<(), Error> {
    let origin = path.display().to_string();
    let cannot = |why: String| Error::Config {
        origin: origin.clone(),
        message: format!("{origin}: cannot be watched for changes: {why}"),
    };
    let name = path
        .file_name()
        .ok_or_else(|| cannot("the path does not name a file".into()))?
        .to_owned();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tx, rx) = mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            // Reading the file (ours included) is no change.
            Ok(event) if matches!(event.kind, notify::EventKind::Access(_)) => false,
            Ok(event) => {
                event.need_rescan()
                    || event
                        .paths
                        .iter()
                        .any(|p| p.file_name() == Some(name.as_os_str()))
            }
            // The watch lost track of something: look at the file again.
            Err(_) => true,
        };
        if relevant {
            let _ = tx.send(());
        }
    })
    .map_err(|e| cannot(e.to_string()))?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| cannot(format!("{} ({e})", dir.display())))?;
    tokio::spawn(watch(
        runtime.downgrade(),
        watcher,
        rx,
        path.to_path_buf(),
        applied,
        quiet,
    ));
    Ok(())
}

/// What the task holds: the runtime weakly, the OS watch for as long as it runs.
async fn watch(
    weak: std::sync::Weak<crate::runtime::Inner>,
    _watcher: notify::RecommendedWatcher,
    mut changes: mpsc::UnboundedReceiver<()>,
    path: PathBuf,
    mut applied: String,
    quiet: Duration,
) {
    let origin = path.display().to_string();
    let Some(mut stopped) = Runtime::upgrade(&weak).map(|r| r.stopped_watch()) else {
        return;
    };
    // Whether the last look at the file failed (then an unchanged text is
    // applied again, so a listener hears that the file is fine once more).
    let mut failed = false;
    loop {
        tokio::select! {
            change = changes.recv() => if change.is_none() { return },
            _ = stopped.wait_for(Option::is_some) => return,
        }
        // The trailing edge: wait until the file has been quiet for `quiet`.
        let mut events: u32 = 1;
        let mut deadline = Instant::now() + quiet;
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Some(()) => {
                        events = events.saturating_add(1);
                        deadline = Instant::now() + quiet;
                    }
                    None => return,
                },
                _ = tokio::time::sleep_until(deadline) => break,
                _ = stopped.wait_for(Option::is_some) => return,
            }
        }
        let Some(runtime) = Runtime::upgrade(&weak) else {
            return;
        };
        // The same bounded read as a start (16 MiB at most).
        let read = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || crate::config_file::read_config_file(&path)).await
        };
        let Ok(read) = read else { return };
        match read {
            Ok(Some(text)) if text == applied && !failed => {}
            Ok(Some(text)) => match runtime
                .apply_file(origin.clone(), text.clone(), events)
                .await
            {
                Ok(_) => {
                    applied = text;
                    failed = false;
                }
                // The driver or the reload check announced why (ReloadFailed),
                // or the runtime stopped.
                Err(Error::Config { .. }) => failed = true,
                Err(_) => return,
            },
            Ok(None) => {
                runtime.announce(Event::ReloadFailed {
                    origin: origin.clone(),
                    error: format!(
                        "{origin} was deleted; the running configuration stays until the file \
                         is back"
                    ),
                });
                failed = true;
            }
            Err(e) => {
                runtime.announce(Event::ReloadFailed {
                    origin: origin.clone(),
                    error: format!("{e}; the running configuration stays"),
                });
                failed = true;
            }
        }
    }
}
