//! docs/cli.md, the CLI's reference, generated from the clap definitions in
//! main.rs, and the test that keeps it so.
//!
//! Each command's block is what `mcpbox COMMAND --help` (and `mcpbox help
//! COMMAND`) prints, less trailing spaces: the help clap renders when it parses
//! that command line with the CLI's own definitions ([`cli_command`]), as the
//! binary does. That is chosen over converting the definitions to Markdown lists
//! (as clap-markdown would): the reference is then the help a user sees, with no
//! second renderer that could tell it differently, and no dependency. The exit codes come from [`Exit`], the one
//! definition the CLI exits with. Regenerate with
//! `MCPBOX_BLESS=1 cargo test -p mcpbox-cli --bin mcpbox cli_reference`.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::cli_command;
use crate::exit::Exit;

/// The command that rewrites docs/cli.md.
const BLESS: &str = "MCPBOX_BLESS=1 cargo test -p mcpbox-cli --bin mcpbox cli_reference";

/// docs/cli.md as the definitions give it.
fn reference() -> String {
    let mut command = cli_command();
    command.build();
    let mut page = String::new();
    let _ = writeln!(page, "# The `mcpbox` command line");
    let _ = writeln!(page);
    let _ = writeln!(
        page,
        "<!-- Generated from the CLI's clap definitions (cli/src/main.rs) by `{BLESS}`; \
         do not edit. -->"
    );
    let _ = writeln!(page);
    let _ = writeln!(
        page,
        "Each block below is what `mcpbox help COMMAND` prints (`mcpbox COMMAND --help` \
         prints the same; `-h` a shorter form). This page is generated from the CLI's own \
         definitions, and a test fails when they differ; `{BLESS}` writes it again."
    );
    let _ = writeln!(page);
    let _ = writeln!(page, "| command | what it does |");
    let _ = writeln!(page, "|---|---|");
    for sub in subcommands(&command) {
        let name = sub.get_name();
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let _ = writeln!(page, "| [`{name}`](#mcpbox-{name}) | {about} |");
    }
    let _ = writeln!(page);
    let _ = writeln!(page, "## Exit codes");
    let _ = writeln!(page);
    let _ = writeln!(page, "| code | meaning |");
    let _ = writeln!(page, "|---|---|");
    for exit in Exit::ALL {
        let _ = writeln!(page, "| {} | {} |", exit.code(), exit.meaning());
    }
    help_section(&mut page, &["mcpbox"]);
    for sub in subcommands(&command) {
        help_section(&mut page, &["mcpbox", sub.get_name()]);
    }
    page
}

/// The commands a user runs: not clap's own `help`.
fn subcommands(command: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    command.get_subcommands().filter(|s| s.get_name() != "help")
}

/// A heading and the help that `words --help` prints.
fn help_section(page: &mut String, words: &[&str]) {
    let title = words.join(" ");
    let line = words.iter().copied().chain(["--help"]);
    let help = match cli_command().try_get_matches_from(line) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.render().to_string(),
        other => panic!("`{title} --help` printed no help: {other:?}"),
    };
    let _ = writeln!(page);
    let _ = writeln!(page, "## `{title}`");
    let _ = writeln!(page);
    let _ = writeln!(page, "```text");
    for line in help.trim_end().lines() {
        let _ = writeln!(page, "{}", line.trim_end());
    }
    let _ = writeln!(page, "```");
}

#[test]
fn cli_reference_matches_the_clap_definitions() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    let generated = reference();
    if std::env::var_os("MCPBOX_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("docs/cli.md is writable");
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    if written != generated {
        let line = written
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| written.lines().count().min(generated.lines().count()));
        panic!(
            "docs/cli.md is not what the CLI's clap definitions give (first difference at \
             line {}: {:?} written, {:?} generated); regenerate it with `{BLESS}` and commit it",
            line + 1,
            written.lines().nth(line).unwrap_or("<end>"),
            generated.lines().nth(line).unwrap_or("<end>"),
        );
    }
}
