//! Processes a test starts and conditions it waits for, each with a deadline: a
//! test never sleeps a fixed time to wait for something, and a failing test
//! leaves no process behind.
//!
//! - [`ChildGuard`]: a child process the test owns. Dropped (when the test
//!   returns or panics) it is killed, with its process group when it leads one,
//!   and reaped; [`ChildGuard::kill_after`] kills it at a deadline, so that a read
//!   waiting for output that never comes ends (at end of file) instead of hanging
//!   the test.
//! - [`eventually`] and [`eventually_async`]: poll a condition until it holds or a
//!   deadline passes, then fail with what it last saw.
//! - [`alone_in_a_process`]: runs one test in a child of the test binary, for a
//!   test that reads or changes what belongs to the whole process; [`alone`]
//!   runs an async body so, on a tokio runtime of its own.

use std::ops::{Deref, DerefMut};
use std::process::{Child, Command, Output};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal};

/// How often [`eventually`] and [`eventually_async`] look again.
const POLL: Duration = Duration::from_millis(20);

/// Calls `condition` until it returns `Ok`, every 20 ms, for at most `deadline`,
/// and returns what it returned. `Err` says what is still missing (the state
/// seen), for the failure message.
///
/// # Panics
///
/// When `deadline` passes first, with the last `Err`.
pub fn eventually<T>(deadline: Duration, mut condition: impl FnMut() -> Result<T, String>) -> T {
    let until = Instant::now() + deadline;
    loop {
        match condition() {
            Ok(value) => return value,
            Err(missing) if Instant::now() >= until => {
                panic!("not within {deadline:?}: {missing}")
            }
            // Polling what another process changes (a file, /proc, a listing):
            // there is nothing to await.
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// [`eventually`] for a condition that is itself asynchronous (a request, a
/// runtime's status) or runs beside the test's own tasks, sleeping on tokio's
/// clock between tries.
///
/// # Panics
///
/// When `deadline` passes first, with the last `Err`.
pub async fn eventually_async<T>(
    deadline: Duration,
    mut condition: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        match condition().await {
            Ok(value) => return value,
            Err(missing) if tokio::time::Instant::now() >= until => {
                panic!("not within {deadline:?}: {missing}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// A child process the test owns: killed (`SIGKILL`, its whole process group
/// when it was started as the leader of one) and reaped when dropped. It
/// dereferences to the [`Child`], for its pipes and its id.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
    group: bool,
    watchdog: Option<Watchdog>,
}

#[derive(Debug)]
struct Watchdog {
    /// Dropped to call the watchdog off.
    _stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl ChildGuard {
    /// Starts `command`.
    ///
    /// # Panics
    ///
    /// When it cannot be started, naming it.
    pub fn spawn(command: &mut Command) -> ChildGuard {
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        ChildGuard {
            child,
            group: false,
            watchdog: None,
        }
    }

    /// Starts `command` as the leader of a new process group, which is killed
    /// whole (the program's own children too).
    ///
    /// # Panics
    ///
    /// When it cannot be started, naming it.
    pub fn spawn_group(command: &mut Command) -> ChildGuard {
        use std::os::unix::process::CommandExt;
        let mut guard = ChildGuard::spawn(command.process_group(0));
        guard.group = true;
        guard
    }

    /// Kills the process (and its group) when `deadline` has passed and it is
    /// still there: a test that waits for its output or its exit then sees the
    /// end of its output, or its death by `SIGKILL`, and fails saying what it
    /// waited for. The signal goes through a pidfd, so it can reach no other
    /// process once this one is reaped.
    ///
    /// # Panics
    ///
    /// When the kernel gives no pidfd for the child (Linux 5.3 and later do).
    #[must_use]
    pub fn kill_after(mut self, deadline: Duration) -> ChildGuard {
        let pid = Pid::from_child(&self.child);
        let pidfd =
            rustix::process::pidfd_open(pid, PidfdFlags::empty()).expect("a pidfd for the child");
        let group = self.group;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if stopped.recv_timeout(deadline) == Err(mpsc::RecvTimeoutError::Timeout)
                && rustix::process::pidfd_send_signal(&pidfd, Signal::KILL).is_ok()
                && group
            {
                // The leader was not reaped yet, so its group id is still its own.
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            }
        });
        self.watchdog = Some(Watchdog {
            _stop: stop,
            thread,
        });
        self
    }

    /// Waits for the process to exit, collecting its piped output
    /// ([`Child::wait_with_output`]); [`ChildGuard::kill_after`]'s deadline still
    /// holds while it waits.
    ///
    /// # Panics
    ///
    /// When waiting fails.
    pub fn wait_with_output(mut self) -> Output {
        let stdout = self.child.stdout.take();
        let stderr = self.child.stderr.take();
        let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let out = read(stdout.map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
        let err = read(stderr.map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
        let status = self.child.wait().expect("wait for the child");
        Output {
            status,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        }
    }
}

impl Deref for ChildGuard {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.child
    }
}

impl DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(watchdog) = self.watchdog.take() {
            drop(watchdog._stop);
            let _ = watchdog.thread.join();
        }
        // Not reaped yet unless the test waited for it: then the kill finds
        // nothing (a group's members, if any, still hold its id).
        if self.group {
            let _ = rustix::process::kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variable that tells a child of the test binary which test it runs alone.
const ALONE: &str = "MCPBOX_TEST_ALONE";

/// Runs test `name` of `module` (the test's `module_path!()`) alone in a child of
/// this test binary, with `env` set there, and fails unless it ran and passed.
/// Returns `true` in that child, where the caller then runs the test's body, and
/// `false` here once the child passed.
///
/// For a test that reads or changes what belongs to the whole process (peak
/// memory, open descriptors, zombies, being the subreaper of its descendants, an
/// environment variable), which the other tests of the binary, running in
/// threads beside it, would disturb or race. The integration tests are one
/// binary, so that wasmtime is linked once; this keeps such a test in it.
///
/// # Panics
///
/// In the parent, when the child fails, does not run the test, or cannot start.
pub fn alone_in_a_process(module: &str, name: &str, env: &[(&str, &str)]) -> bool {
    // A test's full name is its module path without the crate's name.
    let module = module.split_once("::").map_or("", |(_, m)| m);
    let test = if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}::{name}")
    };
    if std::env::var(ALONE).as_deref() == Ok(test.as_str()) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([&test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, &test)
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test}, alone in a child:\n{text}");
    assert!(
        text.contains("test result: ok. 1 passed"),
        "{test} did not run alone in a child:\n{text}"
    );
    false
}

/// Runs `body` as test `name` of `module` alone in a child of the test binary
/// ([`alone_in_a_process`]), on a multi-thread tokio runtime of its own.
///
/// # Panics
///
/// In the parent, when the child fails; in the child, when `body` does.
pub fn alone<F: std::future::Future<Output = ()>>(
    module: &str,
    name: &str,
    body: impl FnOnce() -> F,
) {
    if alone_in_a_process(module, name, &[]) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(body());
    }
}
