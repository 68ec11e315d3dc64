//! `mcpbox trust`, and the check every command that starts servers makes
//! first: a configuration file runs only once the user trusted it as it is
//! ([`mcpbox::trust`]). `mcpbox trust` also accepts the tool definitions that
//! changed since they were pinned ([`mcpbox::pins`]).

use std::io::IsTerminal;

use mcpbox::trust::ConfigFile;

use crate::exit::Exit;
use crate::{Failure, fail, one};

/// What a configuration would start and hand over, for the user to judge.
fn what_it_runs(config: &ConfigFile) -> String {
    let mut text: String = config
        .servers()
        .iter()
        .map(|s| format!("\n    {}", one(s)))
        .collect();
    let variables = config.variables();
    if !variables.is_empty() {
        text.push_str(&format!(
            "\n  and hand them these environment variables: {}",
            one(&variables.join(", "))
        ));
    }
    text
}

/// `path` as one shell word.
fn shell_word(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Starts nothing from a configuration the user has not trusted: on a terminal
/// asks (y/N), otherwise fails with exit code 2 saying what it would run and how
/// to trust it.
pub(crate) fn ensure_trusted(config: &ConfigFile) -> Result<(), Failure> {
    let config_dir = mcpbox::default_config_dir();
    if mcpbox::trust::check(config, config_dir.as_deref())?.is_some() {
        return Ok(());
    }
    let shown = config.canonical.as_deref().unwrap_or(&config.path);
    let runs = what_it_runs(config);
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprint!(
            "mcpbox has not run {} before. It would start:{runs}\nStart these servers \
             (and remember the file as it is now)? [y/N] ",
            one(&shown.display().to_string())
        );
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            if let Err(e) = mcpbox::trust::trust(config, config_dir.as_deref()) {
                eprintln!("warning: trusted for this run only: {e}");
            }
            return Ok(());
        }
    }
    Err(fail(
        Exit::Usage,
        anyhow::anyhow!(
            "{} is not trusted yet: mcpbox starts the servers of a configuration file only \
             once you have trusted it as it is. It would start:{runs}\n\
             If you trust it, run `mcpbox --config {} trust` first (or pass --trust, or set \
             MCPBOX_TRUST_ALL=1, for CI).",
            shown.display(),
            shell_word(shown)
        ),
    ))
}

/// For `servers --watch`: a changed file is applied only once it is trusted as
/// it is now, as a start would need. Trust was given to the file's contents, and
/// a project file can change under a running watch (a `git pull`, a checkout):
/// what runs should still be what the user agreed to. A change to a file the
/// user trusted again (`mcpbox trust` in another terminal) is applied at the
/// next save; one that names no server is always applied.
pub(crate) fn still_trusted(
    config: ConfigFile,
) -> impl Fn(&str) -> Result<(), String> + Send + Sync {
    let config_dir = mcpbox::default_config_dir();
    move |text: &str| {
        let changed = config.with_text(text.to_owned());
        match mcpbox::trust::check(&changed, config_dir.as_deref()) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(format!(
                "{} changed and is not trusted as it is now, so nothing of it was applied. It \
                 would start:{}\nIf you trust it, run `mcpbox --config {} trust` and save the \
                 file again.",
                changed.path.display(),
                what_it_runs(&changed),
                shell_word(&changed.path)
            )),
            Err(e) => Err(format!(
                "whether the changed file is trusted cannot be told: {e}"
            )),
        }
    }
}

/// `mcpbox trust`: shows what the configuration runs and remembers it.
pub(crate) fn trust(config: &ConfigFile) -> Result<Exit, Failure> {
    let shown = config.canonical.as_deref().unwrap_or(&config.path);
    if config.servers().is_empty() {
        eprintln!(
            "{} names no server: nothing to trust",
            one(&shown.display().to_string())
        );
        return Ok(Exit::Success);
    }
    let config_dir = mcpbox::default_config_dir();
    mcpbox::trust::trust(config, config_dir.as_deref())?;
    println!(
        "trusted {} (sha256 {}), which starts:{}",
        one(&shown.display().to_string()),
        config.sha256_hex(),
        what_it_runs(config)
    );
    // Its tools' definitions that changed since they were pinned, held back by
    // `onToolChange` "ask" or "block", are accepted as mcpbox last saw them.
    if mcpbox::pins::accept(&config.path, config_dir.as_deref())? {
        println!(
            "and accepted its tools' changed definitions as mcpbox last saw them: they are \
             pinned when its servers next start"
        );
    }
    Ok(Exit::Success)
}
