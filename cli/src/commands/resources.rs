//! `mcpbox resources`, `mcpbox read`, `mcpbox prompts` and `mcpbox prompt`:
//! what servers offer beyond tools, from the command line. Human output escapes
//! what servers wrote (it is untrusted on its way to a terminal); `--json`
//! prints it exactly.

use std::collections::BTreeMap;
use std::io::Write;

use mcpbox::terminal::{Lines, escape};
use mcpbox::{CallError, Event, Runtime, ServerState};
use tokio::sync::broadcast::error::RecvError;

use crate::exit::Exit;
use crate::{Failure, fail, one, settle, still_running};

/// The exit code of a request that failed: 2 for the caller's mistake, 3 for
/// the server's or the runtime's.
fn failed(e: CallError) -> Failure {
    let code = match e {
        CallError::InvalidArguments(_) | CallError::UnknownTool(_) | CallError::Denied(_) => {
            Exit::Usage
        }
        _ => Exit::Unavailable,
    };
    fail(code, e)
}

/// Names the servers that failed to start, on stderr, after the output.
fn warn_failed(runtime: &Runtime) {
    for s in runtime
        .servers()
        .iter()
        .filter(|s| s.state == ServerState::Failed)
    {
        eprintln!(
            "warning: server `{}` failed: {}",
            one(&s.name),
            escape(s.error.as_deref().unwrap_or("unknown error"), Lines::Keep)
        );
    }
}

fn print_json(value: &serde_json::Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

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

/// `mcpbox prompts [--server NAME]`.
pub(crate) async fn prompts(
    runtime: &Runtime,
    server: Option<&str>,
    json: bool,
) -> Result<Exit, Failure> {
    settle(runtime).await;
    let list = runtime.list_prompts(server).await.map_err(failed)?;
    if json {
        print_json(&serde_json::to_value(&list)?)?;
    } else {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let width = list
            .iter()
            .map(|p| one(&p.registry_name).chars().count())
            .max()
            .unwrap_or(0);
        for p in &list {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .map(|a| {
                    if a.required {
                        format!("{}=…", one(&a.name))
                    } else {
                        format!("[{}=…]", one(&a.name))
                    }
                })
                .collect();
            let about = p
                .description
                .as_deref()
                .or(p.title.as_deref())
                .unwrap_or("");
            writeln!(
                out,
                "{:width$}  {}{}{}",
                one(&p.registry_name),
                arguments.join(" "),
                if arguments.is_empty() { "" } else { "  " },
                one(about.lines().next().unwrap_or(""))
            )?;
        }
        out.flush()?;
    }
    warn_failed(runtime);
    still_running(runtime)?;
    Ok(Exit::Success)
}

/// `mcpbox prompt NAME [KEY=VALUE…]`: NAME is the registry name
/// (`mcp__{server}__{prompt}`, as `mcpbox prompts` shows it) or `SERVER/PROMPT`.
pub(crate) async fn prompt(
    runtime: &Runtime,
    name: &str,
    arguments: &[String],
    json: bool,
) -> Result<Exit, Failure> {
    let mut values = BTreeMap::new();
    for a in arguments {
        let Some((key, value)) = a.split_once('=') else {
            return Err(fail(
                Exit::Usage,
                anyhow::anyhow!("prompt arguments are KEY=VALUE, not `{}`", one(a)),
            ));
        };
        values.insert(key.to_string(), value.to_string());
    }
    settle(runtime).await;
    let (server, own) = match name.split_once('/') {
        Some((server, own)) => (server.to_string(), own.to_string()),
        None => {
            let list = runtime.list_prompts(None).await.map_err(failed)?;
            let Some(p) = list.iter().find(|p| p.registry_name == name) else {
                let known: Vec<String> = list
                    .iter()
                    .map(|p| one(&p.registry_name).into_owned())
                    .collect();
                return Err(fail(
                    Exit::Usage,
                    anyhow::anyhow!(
                        "no prompt named `{}` (prompts: {}); name one as `mcpbox prompts` shows it, or as SERVER/PROMPT",
                        one(name),
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            };
            if let Some(missing) = p
                .arguments
                .iter()
                .find(|a| a.required && !values.contains_key(&a.name))
            {
                return Err(fail(
                    Exit::Usage,
                    anyhow::anyhow!(
                        "prompt `{}` needs the argument `{}` (write {}=VALUE)",
                        one(name),
                        one(&missing.name),
                        one(&missing.name)
                    ),
                ));
            }
            (p.server.clone(), p.name.clone())
        }
    };
    let got = runtime
        .get_prompt(&server, &own, &values)
        .await
        .map_err(failed)?;
    let mut out = std::io::stdout().lock();
    if json {
        let value = serde_json::json!({
            "description": got.description,
            "messages": got.messages,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        for m in &got.messages {
            let text = match m.content.get("type").and_then(|t| t.as_str()) {
                Some("text") => m
                    .content
                    .get("text")
                    .and_then(|t| t.as_str())
                    .unwrap_or("")
                    .to_string(),
                Some(kind) => format!("[{kind} content; use --json to see it]"),
                None => "[content without a type]".to_string(),
            };
            writeln!(out, "{}: {}", one(&m.role), escape(&text, Lines::Keep))?;
        }
    }
    still_running(runtime)?;
    Ok(Exit::Success)
}
