//! `mcpbox prompts` and `mcpbox prompt`: the prompts servers offer, listed and
//! filled in. Human output escapes what servers wrote (it is untrusted on its
//! way to a terminal); `--json` prints it exactly.

use std::collections::BTreeMap;
use std::io::Write;

use mcpbox::Runtime;
use mcpbox::terminal::{Lines, escape};

use super::{failed, print_json, warn_failed};
use crate::exit::Exit;
use crate::{Failure, fail, one, settle, still_running};

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
