//! `mcpbox skills` and `mcpbox skill`: the skills servers serve (the skills
//! extension, `io.modelcontextprotocol/skills`), listed and loaded. Listing reads
//! no skill file; `skill NAME` loads one skill, its `SKILL.md` verified against
//! the server's entry (size, digest, frontmatter), and `--file` reads one of its
//! files, verified too. Human output escapes what servers wrote; `--json` prints
//! it exactly.

use std::io::Write;

use mcpbox::Runtime;
use mcpbox::terminal::{Lines, escape};

use super::{failed, print_json, warn_failed};
use crate::exit::Exit;
use crate::{Failure, fail, one, settle, still_running};

/// `mcpbox skills [--server NAME]`.
pub(crate) async fn skills(
    runtime: &Runtime,
    server: Option<&str>,
    json: bool,
) -> Result<Exit, Failure> {
    settle(runtime).await;
    let list = runtime.list_skills(server).await.map_err(failed)?;
    if json {
        print_json(&serde_json::to_value(&list)?)?;
    } else {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let names: Vec<String> = list
            .iter()
            .map(|s| format!("{}/{}", one(&s.server), one(s.name())))
            .collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        for (s, name) in list.iter().zip(&names) {
            writeln!(
                out,
                "{name:width$}  {}  {}",
                one(&s.uri),
                one(s.description().lines().next().unwrap_or(""))
            )?;
        }
        out.flush()?;
    }
    warn_failed(runtime);
    still_running(runtime)?;
    Ok(Exit::Success)
}

/// `mcpbox skill NAME [--server NAME] [--file PATH]`: NAME is the skill's name
/// (as `mcpbox skills` shows it, with or without its `SERVER/`) or its
/// `SKILL.md` URI.
pub(crate) async fn skill(
    runtime: &Runtime,
    name: &str,
    server: Option<&str>,
    file: Option<&str>,
    json: bool,
) -> Result<Exit, Failure> {
    settle(runtime).await;
    // `SERVER/NAME` names its server; a loaded skill is verified against the
    // entry its server listed, so the server's skills are listed first.
    let (server, skill) = match (server, name.split_once('/')) {
        (Some(server), _) => (Some(server), name),
        (None, Some((server, skill))) if !name.contains("://") => (Some(server), skill),
        _ => (None, name),
    };
    let list = runtime.list_skills(server).await.map_err(failed)?;
    let found: Vec<_> = list
        .iter()
        .filter(|s| s.name() == skill || s.uri == skill)
        .collect();
    let server = match (server, found.as_slice()) {
        (Some(server), _) => server.to_string(),
        (None, [one_skill]) => one_skill.server.clone(),
        (None, []) => {
            let known: Vec<String> = list
                .iter()
                .map(|s| format!("{}/{}", one(&s.server), one(s.name())))
                .collect();
            return Err(fail(
                Exit::Usage,
                anyhow::anyhow!(
                    "no server lists a skill named `{}` (skills: {}); name one as `mcpbox skills` shows it, or give --server and its SKILL.md URI",
                    one(name),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        (None, several) => {
            let at: Vec<String> = several
                .iter()
                .map(|s| format!("{} on `{}`", one(&s.uri), one(&s.server)))
                .collect();
            return Err(fail(
                Exit::Usage,
                anyhow::anyhow!(
                    "{} skills are named `{}` ({}); name one as SERVER/NAME, or give --server and its SKILL.md URI",
                    several.len(),
                    one(name),
                    at.join(", ")
                ),
            ));
        }
    };
    let loaded = runtime.load_skill(&server, skill).await.map_err(failed)?;
    let mut out = std::io::stdout().lock();
    match file {
        None if json => {
            let value = serde_json::json!({
                "server": server,
                "entry": loaded.entry,
                "contents": loaded.contents,
            });
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
        None => write!(out, "{}", escape(&loaded.text, Lines::Keep))?,
        Some(file) => {
            let read = runtime
                .read_skill_file(&server, skill, file)
                .await
                .map_err(failed)?;
            if json {
                serde_json::to_writer_pretty(&mut out, &read.contents)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", escape(&read.text, Lines::Keep))?;
            }
        }
    }
    out.flush()?;
    warn_failed(runtime);
    still_running(runtime)?;
    Ok(Exit::Success)
}
