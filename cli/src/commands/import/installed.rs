//! `mcpbox import --installed [NAME,...]`: the servers installed but configured
//! nowhere ([`mcpbox::client_configs::installed`]), listed beside the configured ones.
//!
//! Probing runs nothing. What it finds is a guess (a program named like a server
//! may be anything), so an installed server is started by `--check` and written
//! by `--write` only when the user names it with `--installed NAME`, whatever
//! `--trust` says: trusting a project's files says nothing about what is on PATH.

use std::io::Write;

use mcpbox::client_configs::installed::{self, Finder, InstalledPlaces, Looked};
use mcpbox::client_configs::{Discovery, Places, Server, SourceOutcome};

use super::{place, shown};

/// Probes (blocking) and merges what it found into `discovery`; returns the
/// places looked at.
pub(super) fn probe(places: &Places, discovery: &mut Discovery) -> Vec<Looked> {
    let probe = installed::probe(&InstalledPlaces::from_env(&places.home));
    installed::merge(&mut discovery.servers, probe.found);
    probe.looked
}

/// The servers `--write` and `--check` take: every configured one, and the
/// installed ones `named`. A name that is no server found is an error.
pub(super) fn taken(servers: &[Server], named: &[String]) -> anyhow::Result<Vec<Server>> {
    for name in named {
        if !servers.iter().any(|s| &s.name == name) {
            let installed: Vec<&str> = servers
                .iter()
                .filter(|s| s.found_in.is_empty())
                .map(|s| s.name.as_str())
                .collect();
            let known = if installed.is_empty() {
                "no installed server was found".to_string()
            } else {
                format!("the installed servers found are: {}", installed.join(", "))
            };
            anyhow::bail!(
                "--installed {}: no server of that name was found; {}",
                shown(name),
                shown(&known)
            );
        }
    }
    Ok(servers
        .iter()
        .filter(|s| !s.found_in.is_empty() || named.contains(&s.name))
        .cloned()
        .collect())
}

/// The installed servers not named (neither checked nor written).
pub(super) fn not_taken(servers: &[Server], named: &[String]) -> Vec<String> {
    servers
        .iter()
        .filter(|s| s.found_in.is_empty() && !named.contains(&s.name))
        .map(|s| s.name.clone())
        .collect()
}

/// The places looked at, after the clients' sources.
pub(super) fn print_looked(
    out: &mut impl Write,
    places: &Places,
    looked: &[Looked],
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nInstalled (names and package metadata read; nothing run):"
    )?;
    let mut missing = Vec::new();
    let on_path: Vec<&Looked> = looked.iter().filter(|l| l.by == Finder::Path).collect();
    let read = on_path
        .iter()
        .filter(|l| matches!(l.outcome, SourceOutcome::Read { .. }))
        .count();
    let programs: usize = on_path
        .iter()
        .map(|l| match &l.outcome {
            SourceOutcome::Read { servers, .. } => *servers,
            _ => 0,
        })
        .sum();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        out,
        "  PATH: {} read, {} named like MCP servers",
        plural(read, "directory", "directories"),
        plural(programs, "program", "programs")
    )?;
    for l in looked {
        let what = match (l.by, &l.chosen_by) {
            (Finder::Path, _) => format!("{} (PATH)", place(&l.path, places)),
            (by, None) => format!("{} ({})", place(&l.path, places), by.label()),
            (by, Some(how)) => format!(
                "{} ({}, {})",
                place(&l.path, places),
                by.label(),
                shown(how)
            ),
        };
        match &l.outcome {
            SourceOutcome::Missing => missing.push(place(&l.path, places)),
            SourceOutcome::Skipped { reason } => {
                writeln!(out, "  {what}: skipped: it {}", shown(reason))?
            }
            SourceOutcome::Read { servers, skipped } => {
                if l.by != Finder::Path {
                    writeln!(out, "  {what}: {}", plural(*servers, "server", "servers"))?;
                } else if !skipped.is_empty() {
                    writeln!(out, "  {what}:")?;
                }
                for reason in skipped {
                    writeln!(out, "      skipped {}", shown(reason))?;
                }
            }
        }
    }
    if !missing.is_empty() {
        writeln!(out, "  not found: {}", missing.join(", "))?;
    }
    Ok(())
}

/// Where a server is installed and why it is thought to be an MCP server, under
/// its line in the list of servers.
pub(super) fn print_server(
    out: &mut impl Write,
    places: &Places,
    server: &Server,
) -> std::io::Result<()> {
    if server.found_in.is_empty() {
        writeln!(
            out,
            "      installed, configured nowhere: nothing starts it unless named \
             (--installed {})",
            shown(&server.name)
        )?;
    }
    for it in &server.installed {
        let sightings: Vec<String> = it
            .found_by
            .iter()
            .map(|s| match (s.by, &it.package) {
                (Finder::Path, _) => format!("on PATH in {}", place(&s.path, places)),
                (by, Some(p)) => format!(
                    "{} {}{} ({})",
                    by.label(),
                    shown(&p.name),
                    p.version
                        .as_deref()
                        .map(|v| format!(" {}", shown(v)))
                        .unwrap_or_default(),
                    place(&s.path, places)
                ),
                (by, None) => format!("{} ({})", by.label(), place(&s.path, places)),
            })
            .collect();
        writeln!(
            out,
            "      installed: {}: {}",
            place(std::path::Path::new(&it.program), places),
            sightings.join("; ")
        )?;
        writeln!(
            out,
            "      why ({}): {}",
            it.certainty.label(),
            shown(&it.why.join("; "))
        )?;
    }
    Ok(())
}

/// After a `--check`: the installed servers not started, because not named.
pub(super) fn print_not_named(out: &mut impl Write, names: &[String]) -> std::io::Result<()> {
    if !names.is_empty() {
        writeln!(
            out,
            "\nNot checked (installed, configured nowhere: started only when named, \
             e.g. --installed {} --check): {}",
            shown(&names[0]),
            shown(&names.join(", "))
        )?;
    }
    Ok(())
}

/// How to take an installed server, when some were found and not named.
pub(super) fn print_how_to_take(
    out: &mut impl Write,
    servers: &[Server],
    named: &[String],
    wrote: bool,
) -> std::io::Result<()> {
    let left = not_taken(servers, named);
    let Some(first) = left.first() else {
        return Ok(());
    };
    if wrote {
        writeln!(
            out,
            "  not written: {}: installed, configured nowhere; name one to add it \
             (--installed {} --write)",
            shown(&left.join(", ")),
            shown(first)
        )?;
    } else {
        writeln!(
            out,
            "Installed servers no client configures are checked and written only when named: \
             `mcpbox import --installed NAME[,NAME] --check --write`."
        )?;
    }
    Ok(())
}
