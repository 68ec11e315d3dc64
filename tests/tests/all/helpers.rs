//! The guarantees of `mcpbox_tests`' process helpers: [`ChildGuard`] kills and reaps what it
//! started, at its deadline or when dropped, and [`eventually`] polls until a
//! condition holds or says what it last saw.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpbox_tests::process::{ChildGuard, eventually};

/// Whether process `pid` still runs (a zombie does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[test]
fn a_dropped_guard_kills_and_reaps_the_whole_group() {
    // The shell prints the pid of a child it leaves running in its group.
    let mut guard = ChildGuard::spawn_group(
        Command::new("sh")
            .args(["-c", "sleep 600 & echo $!; wait"])
            .stdout(Stdio::piped()),
    );
    let mut line = [0u8; 32];
    let n = guard.stdout.as_mut().unwrap().read(&mut line).unwrap();
    let grandchild: u32 = std::str::from_utf8(&line[..n])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let shell = guard.id();
    assert!(runs(shell) && runs(grandchild));
    drop(guard);
    assert!(!runs(shell), "the shell was reaped");
    // The grandchild is not ours to reap: killed, it is gone or a zombie.
    eventually(Duration::from_secs(10), || {
        if runs(grandchild) {
            Err(format!("{grandchild} still runs"))
        } else {
            Ok(())
        }
    });
}

#[test]
fn kill_after_ends_a_read_that_would_wait_forever() {
    let started = Instant::now();
    let mut guard = ChildGuard::spawn(Command::new("sleep").arg("600").stdout(Stdio::piped()))
        .kill_after(Duration::from_millis(200));
    let mut out = String::new();
    guard
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    let output = guard.wait_with_output();
    assert!(!output.status.success());
}

#[test]
fn a_guard_dropped_before_its_deadline_leaves_no_watchdog_to_fire() {
    let guard = ChildGuard::spawn(&mut Command::new("true")).kill_after(Duration::from_secs(600));
    let started = Instant::now();
    drop(guard);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the watchdog was called off"
    );
}

#[test]
#[should_panic(expected = "not within 50ms: still 3")]
fn eventually_fails_with_what_it_last_saw() {
    eventually(Duration::from_millis(50), || {
        Err::<(), _>("still 3".to_owned())
    });
}

#[test]
fn eventually_returns_once_the_condition_holds() {
    let mut tries = 0;
    let value = eventually(Duration::from_secs(10), || {
        tries += 1;
        if tries == 3 {
            Ok(tries)
        } else {
            Err(format!("{tries}"))
        }
    });
    assert_eq!(value, 3);
}
