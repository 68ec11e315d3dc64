//! The processes a stdio server leaves behind, found and stopped.
//!
//! A server runs in its own process group, and stopping it signals the group.
//! A descendant that calls `setsid` (a daemon, a double fork) leaves the group
//! and would outlive mcpbox. Two mechanisms find such descendants:
//!
//! - **A marker in the environment.** Every server is started with
//!   `MCPBOX_SERVER_ID=<host pid>.<n>`, unique per server process, which its
//!   descendants inherit. When the server stops, every process of the current
//!   user whose environment (`/proc/<pid>/environ`, as it was at its `exec`)
//!   holds that marker is killed. This needs nothing process-wide, so the
//!   library always does it. A descendant started with a cleared environment
//!   escapes it.
//! - **A subreaper** (`PR_SET_CHILD_SUBREAPER`, [`crate::Options::subreaper`]; on in
//!   the CLI). Orphaned descendants of the servers are then reparented to this
//!   process instead of to init, so none escapes: mcpbox reaps those that exit
//!   (no zombies), and when the last runtime with the option shuts down it kills
//!   every child process it did not start as a server. A server started while
//!   this process is the subreaper leaves all its descendants in this process's
//!   tree, so its marker is looked for only there (through the kernel's
//!   `children` lists), not in every process of the machine. Being a subreaper is an
//!   attribute of the whole process, and mcpbox cannot tell an orphan from a
//!   child the embedder started itself, so the option is off by default in the
//!   library: an embedder that starts processes of its own must leave it off.
//!
//! A cgroup per server would find every descendant whatever it does, but needs
//! a delegated cgroup v2 subtree, which an ordinary user session often lacks (and
//! these machines do); the two mechanisms above work everywhere on Linux.
//!
//! Reaping is made safe with tokio's own: tokio waits for each server by its pid
//! (a pidfd), so mcpbox never calls `waitpid(-1)`. It reaps only zombie children
//! whose pid is not a server's it started ([`LEADERS`], kept until tokio has
//! reaped them), under the same lock that a spawn holds from `fork` to
//! registering the pid.
//!
//! `/proc/<pid>/stat` is read by hand (three fields of one line); the `procfs`
//! crate would add a dependency tree for them. `process_table_agrees_with_ps`
//! checks the parse against `ps`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustix::process::{Pid, Signal, WaitOptions};

/// The environment variable that marks a server's descendants.
pub(crate) const MARKER_VAR: &str = "MCPBOX_SERVER_ID";

/// A fresh marker value, unique to one server process of this host process.
pub(crate) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The pids of the servers this process started and tokio has not reaped yet.
/// Held from before `fork` until the pid is in it, so the reaper never sees a
/// server's pid it does not know.
static LEADERS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// The lock on [`LEADERS`], for spawning a server and registering it.
pub(crate) fn leaders() -> MutexGuard<'static, Option<HashSet<i32>>> {
    LEADERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A server that tokio has reaped: its pid may be reused by anyone now.
pub(crate) fn forget_leader(pid: i32) {
    if let Some(set) = leaders().as_mut() {
        set.remove(&pid);
    }
}

/// Runtimes open with the subreaper option.
static SUBREAPER_RUNTIMES: AtomicUsize = AtomicUsize::new(0);

/// This process is a subreaper (set once, never cleared: see [`Subreaper::start`]).
static IS_SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Whether this process is the subreaper of its descendants now. A server started
/// after this is true keeps every descendant in this process's tree of children,
/// so its leftovers are found by walking that tree instead of all of `/proc`.
pub(crate) fn is_subreaper() -> bool {
    IS_SUBREAPER.load(Ordering::SeqCst)
}

/// One runtime's use of the subreaper: made by [`Subreaper::start`], ended by
/// [`Subreaper::release`] when the runtime's servers are stopped.
#[derive(Debug)]
pub(crate) struct Subreaper {
    /// Reaps orphans that exit while the runtime runs; taken by `release`.
    reaper: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Subreaper {
    /// Not released (the runtime failed to open): it no longer counts.
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.take() {
            reaper.abort();
            SUBREAPER_RUNTIMES.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Subreaper {
    /// Makes this process the subreaper of its descendants (for good: the
    /// attribute is the process's, and other runtimes may rely on it) and reaps
    /// adopted orphans whenever a child exits. Must be called inside a tokio runtime.
    pub fn start() -> std::io::Result<Subreaper> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut exits = signal(SignalKind::child())?;
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
        IS_SUBREAPER.store(true, Ordering::SeqCst);
        SUBREAPER_RUNTIMES.fetch_add(1, Ordering::SeqCst);
        let reaper = tokio::spawn(async move {
            while exits.recv().await.is_some() {
                let _ = tokio::task::spawn_blocking(reap_adopted).await;
            }
        });
        Ok(Subreaper {
            reaper: Some(reaper),
        })
    }

    /// The runtime's servers are stopped: when it was the last runtime relying
    /// on the subreaper, stops every child of this process that is not a server
    /// still running (orphans of servers, reparented here), and reaps them.
    pub async fn release(mut self) {
        let Some(reaper) = self.reaper.take() else {
            return;
        };
        reaper.abort();
        if SUBREAPER_RUNTIMES.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _ = tokio::task::spawn_blocking(kill_adopted).await;
        }
    }
}

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: i32,
    /// `R`, `S`, `D`, `Z`, …
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

/// Parses one `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp …`, where
/// `comm` may hold spaces and parentheses, so the fields start after the last `)`.
fn parse_stat(line: &str) -> Option<ProcStat> {
    let (head, rest) = line.rsplit_once(')')?;
    let pid = head.split_once(" (")?.0.trim().parse().ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
    })
}

/// Every process visible in `/proc`, as far as it can be read.
pub(crate) fn processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?))
        .collect()
}

/// The children of `pid`, from `/proc/<pid>/task/<tid>/children` of each of its
/// threads (a child is listed under the thread that forked it). `None` when the
/// kernel has no such files (built without `CONFIG_PROC_CHILDREN`) or `pid` is gone.
///
/// Reading the children of a few processes costs a few files where a look at the
/// whole table reads one per process (2 ms a look on a quiet machine with 80
/// processes, half of a cold `mcpbox tools` when it was done at every exit).
fn children_of(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut listed = false;
    let mut children = Vec::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        listed = true;
        children.extend(
            text.split_ascii_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    listed.then_some(children)
}

fn stat_of(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The children of this process that matter here: the servers (`leaders`, the
/// locked [`LEADERS`]) and what the leader thread lists, without opening the
/// `/proc` entry of any other thread of this process.
///
/// A child is listed under the thread that forked it, and an orphan reparented
/// to this subreaper under its first live thread (the kernel's
/// `find_new_reaper`), which is the leader while it runs. The servers are forked
/// by other threads, and mcpbox forks nothing else. Looking into
/// `/proc/<pid>/task/<tid>` of a thread other than the leader is not free: when
/// the process is reaped, the kernel walks the entries that look left behind
/// (`proc_invalidate_siblings_dcache`), and the parent of a cold `mcpbox tools`
/// waited 3–7 ms (median, a loaded machine) in `wait4` for it, against 20 µs
/// without. Only when the leader has exited are the other threads' lists read.
/// `None` when the kernel does not list children.
fn own_child_pids(leaders: &Option<HashSet<i32>>) -> Option<Vec<i32>> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    if stat_of(me).is_none_or(|leader| leader.state == 'Z') {
        return children_of(me);
    }
    let text = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")).ok()?;
    let mut pids: Vec<i32> = text
        .split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    for &server in leaders.iter().flatten() {
        if !pids.contains(&server) {
            pids.push(server);
        }
    }
    Some(pids)
}

/// The children of this process ([`own_child_pids`]), as [`processes`] would
/// list them; `leaders` is the locked [`LEADERS`].
fn own_children(leaders: &Option<HashSet<i32>>) -> Vec<ProcStat> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    match own_child_pids(leaders) {
        Some(pids) => pids
            .into_iter()
            .filter_map(stat_of)
            .filter(|p| p.ppid == me)
            .collect(),
        None => processes().into_iter().filter(|p| p.ppid == me).collect(),
    }
}

/// Every descendant of this process (children first), or `None` when the
/// kernel does not list children (then only the whole table finds them).
fn own_descendants() -> Option<Vec<i32>> {
    let servers = leaders().clone();
    let mut found = own_child_pids(&servers)?;
    let mut next = 0;
    // A process's children are listed once: a tree has no cycles, and a pid
    // reused within this walk is at worst looked at twice.
    while next < found.len() && found.len() < 1_000_000 {
        let pid = found[next];
        next += 1;
        found.extend(children_of(pid).unwrap_or_default());
    }
    Some(found)
}

/// Whether the environment `pid` was started with holds `MARKER_VAR=marker`.
/// Only the current user's processes can be read, which are the only ones a
/// server could have started.
fn has_marker(pid: i32, marker: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{MARKER_VAR}={marker}");
    environ
        .split(|b| *b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// Kills (SIGKILL) every live process whose environment holds `marker`, again
/// until a look finds none (one may fork while the first is killed). Returns
/// how many were killed. Blocking: reads `/proc`.
///
/// `adopted`: the server was started while this process was the subreaper
/// ([`is_subreaper`]), so all it left behind is in this process's tree and only
/// that tree is read; otherwise every process is looked at.
pub(crate) fn kill_marked(marker: &str, adopted: bool) -> usize {
    let me = std::process::id() as i32;
    let mut killed = 0;
    // Each round kills what the previous missed; a process that forks faster
    // than it is killed is bounded by the rounds.
    for _ in 0..10 {
        let candidates: Vec<i32> = match adopted.then(own_descendants).flatten() {
            Some(tree) => tree,
            None => processes()
                .into_iter()
                .filter(|p| p.state != 'Z')
                .map(|p| p.pid)
                .collect(),
        };
        let found: Vec<i32> = candidates
            .into_iter()
            .filter(|&pid| pid != me && has_marker(pid, marker))
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in found {
            if let Some(pid) = Pid::from_raw(pid)
                && rustix::process::kill_process(pid, Signal::KILL).is_ok()
            {
                killed += 1;
            }
        }
    }
    if SUBREAPER_RUNTIMES.load(Ordering::SeqCst) > 0 {
        reap_adopted();
    }
    killed
}

/// Reaps the zombie children of this process that are not servers tokio waits
/// for: orphans of servers, reparented here because it is their subreaper.
pub(crate) fn reap_adopted() {
    let leaders = leaders();
    for p in own_children(&leaders) {
        if p.state == 'Z'
            && !leaders.as_ref().is_some_and(|set| set.contains(&p.pid))
            && let Some(pid) = Pid::from_raw(p.pid)
        {
            let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
}

/// Kills every live child of this process that is not a server still running,
/// then reaps them: used when the last runtime relying on the subreaper stops.
fn kill_adopted() {
    let adopted: Vec<Pid> = {
        let leaders = leaders();
        own_children(&leaders)
            .into_iter()
            .filter(|p| p.state != 'Z' && !leaders.as_ref().is_some_and(|set| set.contains(&p.pid)))
            .filter_map(|p| Pid::from_raw(p.pid))
            .collect()
    };
    for pid in &adopted {
        let _ = rustix::process::kill_process(*pid, Signal::KILL);
    }
    for pid in adopted {
        // Killed with SIGKILL: the wait is short.
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::empty());
    }
    reap_adopted();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names() {
        assert_eq!(
            parse_stat("42 (a) b (c)) S 7 42 42 0 -1 4194560 …"),
            Some(ProcStat {
                pid: 42,
                state: 'S',
                ppid: 7,
                pgrp: 42
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    /// The children files against the whole table: the same children, and a
    /// grandchild found through its parent. The child is forked by a test's
    /// thread, not the leader, so it is found as a server is: registered.
    #[test]
    fn the_tree_of_children_agrees_with_the_process_table() {
        let mut child = {
            let mut leaders = leaders();
            let child = std::process::Command::new("sh")
                .args(["-c", "sleep 30 & echo $!; wait"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("sh runs");
            leaders
                .get_or_insert_with(HashSet::new)
                .insert(child.id() as i32);
            child
        };
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let me = std::process::id() as i32;
        let from_table: HashSet<i32> = processes()
            .into_iter()
            .filter(|p| p.ppid == me)
            .map(|p| p.pid)
            .collect();
        let from_files: HashSet<i32> = own_children(&leaders().clone())
            .into_iter()
            .map(|p| p.pid)
            .collect();
        let tree = own_descendants().expect("this kernel lists children");
        let _ = rustix::process::kill_process(Pid::from_raw(grandchild).unwrap(), Signal::KILL);
        let _ = child.kill();
        let _ = child.wait();
        forget_leader(child.id() as i32);
        // Other tests of this binary start processes too: compare ours.
        let child = child.id() as i32;
        for children in [&from_files, &from_table] {
            assert!(children.contains(&child) && !children.contains(&grandchild));
        }
        assert!(
            tree.contains(&child) && tree.contains(&grandchild),
            "{tree:?}"
        );
    }

    /// The hand-written parse against procps' `ps`, on this machine's processes.
    #[test]
    fn process_table_agrees_with_ps() {
        let mine: std::collections::HashMap<i32, ProcStat> =
            processes().into_iter().map(|p| (p.pid, p)).collect();
        let out = std::process::Command::new("ps")
            .args(["-eo", "pid=,ppid=,pgid=,stat="])
            .output()
            .expect("ps runs");
        let mut compared = 0;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let pid: i32 = f[0].parse().unwrap();
            // Processes that came or went between the two looks are skipped.
            let Some(p) = mine.get(&pid) else { continue };
            assert_eq!(p.ppid.to_string(), f[1], "{line}");
            assert_eq!(p.pgrp.to_string(), f[2], "{line}");
            // The state may change between the looks: a live process may have
            // become a zombie since, but a zombie stays one until it is reaped
            // (and then `ps` does not list it).
            if p.state == 'Z' {
                assert!(f[3].starts_with('Z'), "{line}");
            }
            compared += 1;
        }
        assert!(compared > 1, "{compared}");
    }
}
