//! When two entries are the same server.
//!
//! People copy a server from one client to the next and the copies drift: one
//! says `npx -y pkg`, the next `npx pkg`, a third `/usr/local/bin/npx --yes pkg`;
//! one URL ends in `/`, another does not. The identity is a string built so that
//! those compare equal and different programs do not:
//!
//! **A local server** is `stdio`, then its program and its arguments:
//!
//! 1. The program's file name is used when it is one of the launchers `npx`,
//!    `uvx`, `bunx`, `pipx`, `pnpm`, `yarn`, `bun`, `uv`, `node`, `python`,
//!    `python3`, `deno`, `docker` (so `/usr/local/bin/npx` and `npx` agree), with
//!    a Windows `.cmd` or `.exe` ending dropped. Any other program is compared as
//!    written. The launcher is part of the identity: `npx pkg` and `bunx pkg` are
//!    different servers.
//! 2. A launcher's flags that only stop it from asking or talking are dropped
//!    wherever they come before the package: `-y`/`--yes` (npx), `-q`/`--quiet`
//!    (npx, uvx, pipx), `--silent` (npx, bunx), and `--no-install` is kept (it
//!    changes what runs). For `pnpm dlx`, `yarn dlx`, `bun x`, `uv tool run`
//!    and `pipx run` the same holds after the subcommand.
//! 3. The package's `@latest` is dropped (`pkg@latest` is `pkg`); any other
//!    version stays (`pkg@1.2.0` is not `pkg@1.3.0`).
//! 4. Every other argument is compared as written, except the value of a flag
//!    whose name looks like a credential (`--api-key=…`, `--token …`; see
//!    [`super::secrets`]): which key a server is started with does not make it
//!    another server.
//! 5. A working directory (`cwd`), when set, is part of the identity: the same
//!    relative command in two directories is two servers. `env` is not.
//!
//! **A remote server** is its transport (`http` or `sse`) and its URL with the
//! scheme and host lower-cased, the default port (`:443`, `:80`), a trailing `/`
//! of the path and the `#fragment` dropped, and query parameters whose name
//! looks like a credential (or whose value holds a `${…}` reference) left out:
//! a key in the URL and a key in a header reach the same server. Headers are not
//! part of it.

use super::Transport;
use super::secrets::is_credential_name;

/// Launchers whose path does not matter, only their name.
const LAUNCHERS: &[&str] = &[
    "npx", "uvx", "bunx", "pipx", "pnpm", "yarn", "bun", "uv", "node", "python", "python3", "deno",
    "docker",
];

/// The identity of a server (see the module docs).
pub fn of(transport: &Transport) -> String {
    match transport {
        Transport::Stdio {
            command, args, cwd, ..
        } => {
            let (program, args) = normalize_command(command, args);
            let mut parts = vec![program];
            parts.extend(args);
            let mut id = format!(
                "stdio {}",
                serde_json::to_string(&parts).unwrap_or_default()
            );
            if let Some(cwd) = cwd {
                id.push_str(&format!(" in {}", cwd.trim_end_matches('/')));
            }
            id
        }
        Transport::Http { url, .. } => format!("http {}", normalize_url(url)),
        Transport::Sse { url, .. } => format!("sse {}", normalize_url(url)),
    }
}

/// A program's file name without a Windows extension, when it is a launcher.
fn program_name(command: &str) -> String {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    let lower = name.to_ascii_lowercase();
    let bare = lower
        .strip_suffix(".cmd")
        .or_else(|| lower.strip_suffix(".exe"))
        .unwrap_or(&lower);
    if LAUNCHERS.contains(&bare) {
        bare.to_string()
    } else {
        command.to_string()
    }
}

/// Flags of a launcher that only make it quiet or stop it asking.
fn is_quiet_flag(launcher: &str, arg: &str) -> bool {
    match launcher {
        "npx" => matches!(arg, "-y" | "--yes" | "-q" | "--quiet" | "--silent"),
        "uvx" | "uv" => matches!(arg, "-q" | "--quiet" | "--no-progress"),
        "pipx" => matches!(arg, "-q" | "--quiet"),
        "bunx" | "bun" => matches!(arg, "--silent"),
        "pnpm" | "yarn" => matches!(arg, "--silent" | "-s"),
        _ => false,
    }
}

/// The subcommand after which a launcher's package comes (`pnpm dlx pkg`).
fn subcommand(launcher: &str) -> &'static [&'static str] {
    match launcher {
        "pnpm" | "yarn" => &["dlx"],
        "bun" => &["x"],
        "uv" => &["tool", "run"],
        "pipx" => &["run"],
        _ => &[],
    }
}

fn normalize_command(command: &str, args: &[String]) -> (String, Vec<String>) {
    let program = program_name(command);
    let launcher = program.as_str();
    let mut out = Vec::with_capacity(args.len());
    let sub = subcommand(launcher);
    let mut matched = 0;
    // Quiet flags are dropped until the package (the first non-flag argument
    // after the launcher's subcommand, if it has one).
    let mut before_package = LAUNCHERS.contains(&launcher);
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if before_package {
            if matched < sub.len() && arg == sub[matched] {
                matched += 1;
                out.push(arg.clone());
                i += 1;
                continue;
            }
            if is_quiet_flag(launcher, arg) {
                i += 1;
                continue;
            }
            if !arg.starts_with('-') && matched == sub.len() {
                before_package = false;
                out.push(arg.strip_suffix("@latest").unwrap_or(arg).to_string());
                i += 1;
                continue;
            }
        }
        // A credential flag's value is not part of the identity.
        let flag = arg.trim_start_matches('-');
        if arg.starts_with('-') && !flag.is_empty() {
            if let Some((name, _)) = flag.split_once('=') {
                if is_credential_name(name) {
                    out.push(format!("{}=", &arg[..arg.len() - flag.len() + name.len()]));
                    i += 1;
                    continue;
                }
            } else if is_credential_name(flag)
                && args.get(i + 1).is_some_and(|next| !next.starts_with('-'))
            {
                out.push(arg.clone());
                out.push(String::new());
                i += 2;
                continue;
            }
        }
        out.push(arg.clone());
        i += 1;
    }
    (program, out)
}

/// The URL as compared (see the module docs).
pub fn normalize_url(url: &str) -> String {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let (scheme, rest) = match base.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => return url.to_string(),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // Credentials in the authority are not part of the identity.
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let mut host = host.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => Some(":443"),
        "http" => Some(":80"),
        _ => None,
    };
    if let Some(port) = default_port
        && let Some(stripped) = host.strip_suffix(port)
    {
        host = stripped.to_string();
    }
    let path = path.trim_end_matches('/');
    let mut out = format!("{scheme}://{host}{path}");
    if let Some(query) = query {
        let params: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter(|p| match p.split_once('=') {
                Some((name, value)) => !(is_credential_name(name) || value.contains("${")),
                None => !is_credential_name(p),
            })
            .collect();
        if !params.is_empty() {
            out.push('?');
            out.push_str(&params.join("&"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, args: &[&str]) -> Transport {
        Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![("A".into(), "1".into())],
            cwd: None,
        }
    }

    fn same(a: &Transport, b: &Transport) -> bool {
        of(a) == of(b)
    }

    #[test]
    fn launcher_flags_paths_and_latest_do_not_matter() {
        let base = stdio("npx", &["-y", "@modelcontextprotocol/server-github"]);
        for other in [
            stdio("npx", &["@modelcontextprotocol/server-github"]),
            stdio(
                "npx",
                &["--yes", "@modelcontextprotocol/server-github@latest"],
            ),
            stdio(
                "/usr/local/bin/npx",
                &["-y", "@modelcontextprotocol/server-github"],
            ),
            stdio(
                "C:\\nodejs\\npx.cmd",
                &["-y", "-q", "@modelcontextprotocol/server-github"],
            ),
        ] {
            assert!(same(&base, &other), "{} vs {}", of(&base), of(&other));
        }
        assert_eq!(
            of(&base),
            r#"stdio ["npx","@modelcontextprotocol/server-github"]"#
        );
        assert!(same(
            &stdio("pipx", &["run", "-q", "mcp-server-time"]),
            &stdio("pipx", &["run", "mcp-server-time"])
        ));
        assert!(same(
            &stdio("pnpm", &["dlx", "--silent", "pkg"]),
            &stdio("pnpm", &["dlx", "pkg"])
        ));
    }

    #[test]
    fn what_runs_matters() {
        let base = stdio("npx", &["-y", "pkg"]);
        for other in [
            stdio("bunx", &["pkg"]),
            stdio("npx", &["-y", "pkg@1.2.0"]),
            stdio("npx", &["-y", "other"]),
            stdio("npx", &["-y", "pkg", "--port", "1"]),
            // A flag after the package belongs to the package.
            stdio("npx", &["pkg", "-y"]),
            // Not a launcher: the path is the program.
            stdio("./npx-wrapper", &["-y", "pkg"]),
        ] {
            assert!(!same(&base, &other), "{}", of(&other));
        }
        let with_cwd = Transport::Stdio {
            command: "npx".into(),
            args: vec!["pkg".into()],
            env: vec![],
            cwd: Some("/srv".into()),
        };
        assert!(!same(&stdio("npx", &["pkg"]), &with_cwd));
        assert!(!same(
            &stdio("uvx", &["-q", "x"]),
            &stdio("uvx", &["-y", "x"])
        ));
    }

    #[test]
    fn credential_flag_values_do_not_matter() {
        assert!(same(
            &stdio("npx", &["pkg", "--api-key=a"]),
            &stdio("npx", &["pkg", "--api-key=${B}"])
        ));
        assert!(same(
            &stdio("npx", &["pkg", "--token", "a"]),
            &stdio("npx", &["pkg", "--token", "${B}"])
        ));
        assert!(!same(
            &stdio("npx", &["pkg", "--port", "1"]),
            &stdio("npx", &["pkg", "--port", "2"])
        ));
    }

    #[test]
    fn urls() {
        let u = |url: &str| Transport::Http {
            url: url.into(),
            headers: vec![],
        };
        let base = u("https://api.example.com/mcp");
        for other in [
            "HTTPS://API.Example.com/mcp/",
            "https://api.example.com:443/mcp",
            "https://api.example.com/mcp#x",
            "https://user:pw@api.example.com/mcp",
        ] {
            assert!(same(&base, &u(other)), "{other}");
        }
        assert!(same(
            &u("https://x.dev/mcp?key=abc&region=eu"),
            &u("https://x.dev/mcp?key=${X_KEY}&region=eu")
        ));
        assert!(same(
            &u("https://x.dev/mcp?api_key=abc"),
            &u("https://x.dev/mcp")
        ));
        assert!(!same(
            &u("https://x.dev/mcp?region=eu"),
            &u("https://x.dev/mcp?region=us")
        ));
        assert!(!same(&base, &u("http://api.example.com/mcp")));
        assert!(!same(&base, &u("https://api.example.com/MCP")));
        let sse = Transport::Sse {
            url: "https://api.example.com/mcp".into(),
            headers: vec![],
        };
        assert!(!same(&base, &sse));
    }
}
