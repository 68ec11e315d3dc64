//! One file per subcommand of `mcpbox`, each with the function [`crate::run`]
//! calls once the configuration is trusted and the runtime is open (`trust`,
//! `login`, `logout`, `import` and `connect` run before, or without, a runtime).
//!
//! | file | command |
//! |---|---|
//! | [`servers`] | `mcpbox servers` and `servers --watch` |
//! | [`tools`] | `mcpbox tools` |
//! | [`call`] | `mcpbox call`, with the approvals an `ask` rule needs |
//! | [`resources`] | `mcpbox resources` and `mcpbox read` |
//! | [`prompts`] | `mcpbox prompts` and `mcpbox prompt` |
//! | [`skills`] | `mcpbox skills` and `mcpbox skill` |
//! | [`login`] | `mcpbox login` |
//! | [`logout`] | `mcpbox logout` |
//! | [`import`] | `mcpbox import`, and `--installed` |
//! | [`connect`] | `mcpbox connect CLIENT` and `--undo` |
//! | [`serve`] | `mcpbox serve`, on stdio or `--http` (the listener and its token, shared with `dashboard`) |
//! | [`dashboard`] | `mcpbox dashboard` |
//! | [`trust`] | `mcpbox trust`, and the check every other command makes first |

pub(crate) mod call;
pub(crate) mod connect;
pub(crate) mod dashboard;
pub(crate) mod import;
pub(crate) mod login;
pub(crate) mod logout;
pub(crate) mod prompts;
pub(crate) mod resources;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod trust;

use std::io::Write;

use mcpbox::terminal::{Lines, escape};
use mcpbox::{CallError, Runtime, ServerState};

use crate::exit::Exit;
use crate::{Failure, fail, one};

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
