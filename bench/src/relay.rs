//! `mcpbox-bench relay PROGRAM [ARGS…]`: the floor of any stdio gateway. It
//! starts PROGRAM and copies bytes both ways between its own stdio and the
//! child's, as they come, understanding nothing: one thread per direction,
//! each blocked in `read` until bytes arrive and writing them on at once. A
//! gateway that routes a call pays at least what this pays (a second pipe
//! round trip, and the wake-ups of the process in the middle), so its `relay`
//! column in G1 says how much of the gateway's time is the hop itself.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// Copies `from` to `to` until `from` ends or `to` is closed.
fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}

pub fn main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let Some(program) = args.next() else {
        eprintln!("usage: mcpbox-bench relay PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("relay: could not start {program}: {e}");
            return ExitCode::from(1);
        }
    };
    let (Some(to_child), Some(from_child)) = (child.stdin.take(), child.stdout.take()) else {
        return ExitCode::from(1);
    };
    // Our stdin ending closes the child's stdin (`to_child` is dropped), which
    // ends a well-behaved server; its stdout ending ends the relay.
    std::thread::spawn(move || pump(std::io::stdin(), to_child));
    pump(from_child, std::io::stdout());
    let _ = child.wait();
    ExitCode::SUCCESS
}
