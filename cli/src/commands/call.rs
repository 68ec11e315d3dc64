//! `mcpbox call`: one tool call, its arguments from the command line or stdin,
//! and the approvals an `ask` permission rule needs (a prompt on a terminal,
//! `--yes`, or a refusal that says how to give them). A call its server runs as
//! a task (a tool that requires one, or allows one and `--task` asks for it)
//! shows each status the task reports, on stderr, while it waits. A URL a
//! server asks the user to open (URL-mode elicitation) is printed on stderr, never
//! opened: on a terminal the call waits for Enter (done) or `n` (decline); with
//! `--yes` it goes on at once; otherwise it is declined, saying so.

use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use anyhow::Context;
use mcpbox::terminal::{Lines, escape};
use mcpbox::{CallError, CallOptions, InputAnswer, Runtime};

use crate::exit::Exit;
use crate::{Failure, Spinner, block, fail, one};

/// What `mcpbox call` was asked.
pub(crate) struct Call<'a> {
    /// The registry name, or with `dialect` the name a model saw.
    pub(crate) tool: &'a str,
    /// `--format`: the dialect the name and arguments were made under.
    pub(crate) dialect: Option<&'a str>,
    /// A JSON object, or `-` for stdin.
    pub(crate) arguments: &'a str,
    /// `--timeout`, in seconds.
    pub(crate) timeout: Option<f64>,
    /// `--yes`.
    pub(crate) yes: bool,
    /// `--task`.
    pub(crate) task: bool,
}

pub(crate) async fn call(runtime: &Runtime, call: Call<'_>, json: bool) -> Result<Exit, Failure> {
    let Call {
        tool,
        dialect,
        arguments,
        timeout,
        yes,
        task,
    } = call;
    // A prompt needs stdin for the answer: not when it is a pipe, nor when it
    // carried the arguments.
    let who = if yes {
        Approver::Yes
    } else if arguments != "-" && std::io::stdin().is_terminal() {
        Approver::Terminal
    } else {
        Approver::Nobody
    };
    let arguments = if arguments == "-" {
        read_arguments(runtime, tool).await?
    } else {
        arguments.to_owned()
    };
    let timeout = timeout
        .map(parse_timeout)
        .transpose()
        .map_err(|e| fail(Exit::Usage, e))?;

    // Wait for this tool's server only, not for every slow server; when the tool
    // never appears, the registry's own error says why (its server failed, …).
    // A model's name under a dialect is not a registry name: wait for every
    // server then, as `tools --format` does, so that the name maps back.
    let spinner = Spinner::start(runtime);
    match dialect {
        None => drop(runtime.wait_for_tool(tool).await),
        Some(_) => drop(runtime.ready().await),
    }
    spinner.finish();

    // Subscribed before the call starts, so its approval request is not missed.
    let approvals = tokio::spawn(answer_approvals(
        runtime.clone(),
        runtime.events(),
        who,
        tool.to_owned(),
    ));
    let options = CallOptions { timeout, task };
    let result = match dialect {
        None => runtime.call_tool_json(tool, arguments, options).await,
        Some(dialect) => {
            runtime
                .call_adapted_tool_json(dialect, tool, arguments, options)
                .await
        }
    };
    approvals.abort();
    let result = match result {
        Ok(result) => result,
        Err(CallError::Denied(e)) if who == Approver::Nobody && e.contains("was not approved") => {
            return Err(fail(
                Exit::Usage,
                anyhow::anyhow!(
                    "{e}; nobody could be asked: stdin is not a terminal{}; pass --yes to approve it",
                    if std::io::stdin().is_terminal() {
                        " (it carried the arguments)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Err(e) => {
            let code = match e {
                CallError::UnknownTool(_)
                | CallError::InvalidArguments(_)
                | CallError::Denied(_) => Exit::Usage,
                _ => Exit::Unavailable,
            };
            return Err(fail(code, e));
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else if result.is_error {
        eprintln!("{}", escape(&result.text, Lines::Keep));
    } else {
        writeln!(out, "{}", escape(&result.text, Lines::Keep))?;
    }
    Ok(if result.is_error {
        Exit::ToolError
    } else {
        Exit::Success
    })
}

/// Reads a call's arguments from stdin, keeping no more than a call may have:
/// beyond that the rest is only counted, for the error.
/// On a blocking thread, so that a signal is handled while stdin waits.
async fn read_arguments(runtime: &Runtime, tool: &str) -> Result<String, Failure> {
    let limit = runtime.max_arguments_bytes();
    let read = tokio::task::spawn_blocking(move || -> std::io::Result<(Vec<u8>, usize)> {
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        (&mut stdin)
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)?;
        let mut size = bytes.len();
        if size > limit {
            let rest = std::io::copy(&mut stdin, &mut std::io::sink())?;
            size = size.saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
        }
        Ok((bytes, size))
    });
    let (bytes, size) = read
        .await
        .context("reading the arguments from stdin")?
        .context("reading the arguments from stdin")?;
    runtime
        .check_arguments_size(tool, size)
        .map_err(|e| fail(Exit::Usage, e))?;
    String::from_utf8(bytes).map_err(|e| {
        fail(
            Exit::Usage,
            anyhow::anyhow!("the arguments on stdin are not UTF-8: {e}"),
        )
    })
}

/// Who answers approvals for `ask` permission rules in `call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approver {
    /// `--yes`: every approval is given.
    Yes,
    /// The user, at a prompt on stderr, answering on stdin.
    Terminal,
    /// Nobody: approvals are refused, and the error says how to give them.
    Nobody,
}

/// Answers every approval request until aborted, and shows the status of the
/// call's task (when its server runs it as one) on stderr.
async fn answer_approvals(
    runtime: Runtime,
    mut events: tokio::sync::broadcast::Receiver<mcpbox::Event>,
    who: Approver,
    tool: String,
) {
    loop {
        let request = match events.recv().await {
            Ok(mcpbox::Event::InputRequested(request)) => request,
            Ok(mcpbox::Event::UrlElicitationRequested(request)) => {
                let answer = open_url(&request, who).await;
                let _ = runtime.answer_input(request.id, answer).await;
                continue;
            }
            Ok(mcpbox::Event::TaskStatus {
                tool: of,
                status,
                message,
                ..
            }) if of == tool => {
                eprintln!(
                    "{}: {}{}",
                    escape(&tool, Lines::Escape),
                    escape(&status, Lines::Escape),
                    message
                        .map(|m| format!(": {}", escape(&m, Lines::Escape)))
                        .unwrap_or_default()
                );
                continue;
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(approval) = &request.approval else {
            continue;
        };
        let answer = match who {
            Approver::Yes => InputAnswer::approve_once(),
            Approver::Nobody => InputAnswer::Decline,
            Approver::Terminal => {
                let question = format!(
                    "{}\n  arguments: {}\nApprove? [y/N] ",
                    block(&request.message, "  "),
                    one(&approval.arguments.to_string())
                );
                prompt(question).await
            }
        };
        let _ = runtime.answer_input(request.id, answer).await;
    }
}

/// Shows the URL a server asks the user to open (never opened here) and how the
/// call goes on: the user's word on a terminal, `--yes`, or a refusal.
async fn open_url(request: &mcpbox::UrlElicitationRequest, who: Approver) -> InputAnswer {
    let shown = format!(
        "{} asks you to open this URL (mcpbox does not open it):\n  {}\n  {}",
        escape(&request.server, Lines::Escape),
        escape(&request.url, Lines::Escape),
        block(&request.message, "  "),
    );
    match who {
        Approver::Yes => {
            eprintln!("{shown}\n(--yes: going on)");
            InputAnswer::Accept(serde_json::Value::Null)
        }
        Approver::Nobody => {
            eprintln!(
                "{shown}\nDeclined: nobody could be asked (stdin is not a terminal); pass --yes to go on"
            );
            InputAnswer::Decline
        }
        Approver::Terminal => {
            let question = format!("{shown}\nPress Enter once done there, or n to decline: ");
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                eprint!("{question}");
                let mut line = String::new();
                let answer = match std::io::stdin().read_line(&mut line) {
                    Ok(n) if n > 0 && !matches!(line.trim(), "n" | "N" | "no") => {
                        InputAnswer::Accept(serde_json::Value::Null)
                    }
                    _ => InputAnswer::Decline,
                };
                let _ = tx.send(answer);
            });
            rx.await.unwrap_or(InputAnswer::Decline)
        }
    }
}

/// Asks on stderr and reads one line from stdin, on a thread of its own: a
/// blocking read left behind when the call ends elsewhere (its timeout) must not
/// hold the runtime's shutdown.
async fn prompt(question: String) -> InputAnswer {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        eprint!("{question}");
        let mut line = String::new();
        let answer = match std::io::stdin().read_line(&mut line) {
            Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                InputAnswer::approve_once()
            }
            _ => InputAnswer::Decline,
        };
        let _ = tx.send(answer);
    });
    rx.await.unwrap_or(InputAnswer::Decline)
}

/// `--timeout SECS` as a [`Duration`]: a positive, finite number of seconds that
/// a `Duration` can hold (`1e300` cannot; `Duration::from_secs_f64` would panic).
fn parse_timeout(secs: f64) -> anyhow::Result<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        anyhow::bail!("--timeout must be a positive number of seconds, not {secs}");
    }
    Duration::try_from_secs_f64(secs).map_err(|_| {
        anyhow::anyhow!(
            "--timeout {secs} is too large: at most {} seconds",
            Duration::MAX.as_secs()
        )
    })
}
