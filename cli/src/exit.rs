//! The `mcpbox` command's exit codes, defined once: the CLI exits with an
//! [`Exit`], and `--help` and docs/cli.md list them from [`Exit::ALL`] and
//! [`Exit::meaning`].

use std::process::ExitCode;

/// How a run of `mcpbox` ended. Its value is the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Success = 0,
    /// The tool answered with an error result: the call worked, the tool did not.
    ToolError = 1,
    /// The caller's mistake: clap's own usage errors exit with 2 as well.
    Usage = 2,
    /// A server's or the runtime's failure: trying again may help.
    Unavailable = 3,
    /// 128 + SIGINT.
    Interrupted = 130,
    /// 128 + SIGTERM.
    Terminated = 143,
    /// 128 + SIGHUP: the terminal closed, or an ssh session dropped.
    HungUp = 129,
    /// 128 + SIGQUIT (Ctrl-\\ on a terminal).
    Quit = 131,
}

impl Exit {
    /// Every exit code, in order.
    pub const ALL: [Exit; 8] = [
        Exit::Success,
        Exit::ToolError,
        Exit::Usage,
        Exit::Unavailable,
        Exit::HungUp,
        Exit::Interrupted,
        Exit::Quit,
        Exit::Terminated,
    ];

    /// The exit code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// What the code means, for `--help` and docs/cli.md.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "ok",
            Exit::ToolError => "the tool returned an error result (`isError`)",
            Exit::Usage => {
                "usage or configuration error (also unknown tool, invalid or oversized \
                 arguments, an untrusted configuration, a call the permission rules deny or \
                 nobody approved)"
            }
            Exit::Unavailable => {
                "server unavailable or timeout, or the runtime stopped (its guest failed \
                 three times within a minute)"
            }
            Exit::Interrupted => "interrupted by SIGINT (Ctrl-C), after every server was stopped",
            Exit::Terminated => "terminated by SIGTERM, after every server was stopped",
            Exit::HungUp => {
                "ended by SIGHUP (the terminal closed), after every server was stopped; \
                 ignored when mcpbox was started ignoring it (nohup)"
            }
            Exit::Quit => "ended by SIGQUIT (Ctrl-\\), after every server was stopped",
        }
    }

    /// The paragraph `--help` ends with.
    pub fn help() -> String {
        let codes: Vec<String> = Exit::ALL
            .iter()
            .map(|e| format!("{} {}", e.code(), e.meaning()))
            .collect();
        format!("Exit codes: {}.", codes.join("; "))
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}
