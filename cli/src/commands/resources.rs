//! `mcpbox resources` and `mcpbox read`: what servers offer to read, from the
//! command line. Human output escapes what servers wrote (it is untrusted on
//! its way to a terminal); `--json` prints it exactly.

use std::io::Write;

use mcpbox::terminal::{Lines, escape};
use mcpbox::{Event, Runtime};
use tokio::sync::broadcast::error::RecvError;

use super::{failed, print_json, warn_failed};
use crate::exit::Exit;
use crate::{Failure, one, settle, still_running};

/// `mcpbox resources [--server NAME] [--templates]`.
pub(crate) async fn resources(
    runtime: &Runtime,
    server: Option<&str>,
    templates: bool,
    json: bool,
) -> Result<Exit, Failure> {
    settle(runtime).await;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if templates {
        let list = runtime
            .list_resource_templates(server)
            .await
            .map_err(failed)?;
        if json {
            drop(out);
            print_json(&serde_json::to_value(&list)?)?;
        } else {
            for t in &list {
                let about = t
                    .description
                    .as_deref()
                    .or(t.title.as_deref())
                    .unwrap_or(&t.name);
                writeln!(
                    out,
                    "{}  {}  {}",
                    one(&t.server),
                    one(&t.uri_template),
                    one(about.lines().next().unwrap_or(""))
                )?;
            }
        }
    } else {
        let list = runtime.list_resources(server).await.map_err(failed)?;
        if json {
            drop(out);
            print_json(&serde_json::to_value(&list)?)?;
        } else {
            let width = list
                .iter()
                .map(|r| one(&r.uri).chars().count())
                .max()
                .unwrap_or(0);
            for r in &list {
                let about = r
                    .description
                    .as_deref()
                    .or(r.title.as_deref())
                    .unwrap_or(&r.name);
                writeln!(
                    out,
                    "{}  {:width$}  {}",
                    one(&r.server),
                    one(&r.uri),
                    one(about.lines().next().unwrap_or(""))
                )?;
            }
        }
    }
    std::io::stdout().flush()?;
    warn_failed(runtime);
    still_running(runtime)?;
    Ok(Exit::Success)
}

/// `mcpbox read URI [--server NAME] [--follow]`: text items are printed, blobs
/// named (with their size) on stderr; `--json` prints every item as the server
/// sent it. `--follow` subscribes and reads it again at each
/// `notifications/resources/updated`, until a signal ends the command.
pub(crate) async fn read(
    runtime: &Runtime,
    uri: &str,
    server: Option<&str>,
    follow: bool,
    json: bool,
) -> Result<Exit, Failure> {
    settle(runtime).await;
    // Subscribed before the first read, so no update falls between.
    let mut events = runtime.events();
    if follow {
        runtime
            .subscribe_resource(server, uri)
            .await
            .map_err(failed)?;
    }
    print_read(runtime, uri, server, json).await?;
    if !follow {
        still_running(runtime)?;
        return Ok(Exit::Success);
    }
    loop {
        match events.recv().await {
            Ok(Event::ResourceUpdated {
                server: from,
                uri: updated,
            }) if updated == uri && server.is_none_or(|s| s == from) => {
                print_read(runtime, uri, Some(from.as_str()), json).await?;
            }
            Ok(Event::Stopped(_)) | Err(RecvError::Closed) => break,
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => {
                eprintln!("({n} events were dropped: the display fell behind)");
                // An update may be among them: read it again.
                print_read(runtime, uri, server, json).await?;
            }
        }
    }
    still_running(runtime)?;
    Ok(Exit::Success)
}

/// One read of `uri`, printed.
async fn print_read(
    runtime: &Runtime,
    uri: &str,
    server: Option<&str>,
    json: bool,
) -> Result<(), Failure> {
    let read = runtime.read_resource(server, uri).await.map_err(failed)?;
    if json {
        print_json(&serde_json::to_value(&read.contents)?)?;
    } else {
        let mut out = std::io::stdout().lock();
        for item in &read.contents {
            if let Some(text) = &item.text {
                writeln!(out, "{}", escape(text, Lines::Keep))?;
            } else if let Some(blob) = &item.blob {
                eprintln!(
                    "{}: a blob of {} bytes ({}); use --json for its base64",
                    one(&item.uri),
                    blob.len() / 4 * 3,
                    one(item
                        .mime_type
                        .as_deref()
                        .unwrap_or("application/octet-stream"))
                );
            }
        }
        out.flush()?;
    }
    Ok(())
}
