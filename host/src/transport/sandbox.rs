//! Sandboxed stdio servers: the kernel confines a server's process to its grants.
//!
//! A server entry's `sandbox` block (see the guest's `sandbox` module) arrives in
//! the endpoint with its paths resolved (`${VAR}` included). Here it becomes a
//! Landlock ruleset, built in the parent (where allocating and opening files is
//! safe) and applied in the child between `fork` and `exec`, together with
//! `no_new_privs` (so a setuid program cannot regain what the ruleset took):
//!
//! | grant | Landlock | kernel ABI needed |
//! |---|---|---|
//! | filesystem: only `read` / `write` and the automatic grants below | `AccessFs` (every right the kernel knows; truncation from ABI 3) | 3 |
//! | `network`: `false` or a port list | `AccessNet` TCP bind and connect | 4 |
//! | signals and abstract UNIX sockets scoped to the sandbox | `Scope` | 6 (applied when present; not a grant) |
//!
//! A grant the running kernel cannot enforce fails the start, naming the server,
//! the grant and the kernel's ABI; with `"require": false` it is dropped with a
//! warning instead. Landlock does not cover UDP, ICMP, or UNIX sockets by path
//! (those follow the filesystem rules only from ABI 9), and `stat` / `access` /
//! `readlink` are never restricted: docs/configuration.md says so.
//!
//! # Automatic grants
//!
//! A program needs its own files to run. Read and execute access is added for:
//!
//! - the system's programs and libraries: `/usr`, `/bin`, `/sbin`, `/lib`, `/lib32`,
//!   `/lib64`, `/libx32`, and the few files of `/etc` the dynamic loader, TLS and
//!   name resolution read (`ld.so.cache`, `ld.so.conf*`, `localtime`, `ssl`,
//!   `ca-certificates`, `pki`, `resolv.conf`, `hosts`, `nsswitch.conf`,
//!   `host.conf`, `gai.conf`) — not the rest of `/etc` (no `passwd`, no `shadow`);
//! - the command, found on the child's `PATH`, and the file it links to; for a
//!   script (`#!`), its interpreter, found the same way (`#!/usr/bin/env node`);
//! - for each of those at `<prefix>/bin/<name>` (or a version manager's
//!   `<prefix>/shims/<name>`), the installation it belongs to, where `<prefix>` is
//!   recognisably one ([`installation`]): a Python venv (`pyvenv.cfg`, the whole
//!   venv), a pyenv or rbenv root (`shims` beside `versions`, the whole root), an
//!   installation with a `lib/node_modules`, `lib/python3*` or `lib/ruby` tree
//!   (its `bin` and `lib` only: `/opt/node`, a pyenv Python, `~/.local` after
//!   `pip install --user`). Never the home directory or one of its ancestors
//!   (`~/bin/tool` gets the file alone), and nothing for an unrecognised prefix
//!   (`~/.cargo/bin/tool` gets the file alone, not `~/.cargo/credentials.toml`);
//! - the outermost `node_modules` directory above each of them (a package's
//!   dependencies);
//! - devices every program opens: `/dev/null`, `/dev/zero`, `/dev/full`,
//!   `/dev/random`, `/dev/urandom` (read and write).
//!
//! And one write grant: `npx` gets a private npm cache of its own (see
//! `super::places`), read and write, which `npm_config_cache` points it to: not
//! the shared `~/.npm`, whose `_npx` directory holds the code every other `npx`
//! of the user runs later.
//!
//! Not `/proc` or `/sys`: Node.js, Python and the fixture server run without them
//! (measured), and they describe the rest of the system. A server that needs them
//! is granted them like any path. Every automatic grant is listed in the
//! sandbox's description (`Runtime::diagnostics`, `mcpbox servers`).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::endpoint::{Network, SandboxSpec};

/// The lowest Landlock ABI that confines the filesystem fully (truncation too).
const FS_ABI: ABI = ABI::V3;
/// The lowest Landlock ABI that controls TCP bind and connect.
const NET_ABI: ABI = ABI::V4;
/// The lowest Landlock ABI with scoping (signals, abstract UNIX sockets).
const SCOPE_ABI: ABI = ABI::V6;

/// System directories a program needs to run, read and execute only.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
];

/// Devices every program may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The Landlock ABI of the running kernel (as far as the `landlock` crate knows
/// them), found once.
///
/// The crate reports it only after a ruleset is enforced, and deliberately offers
/// no other way (so that programs do not change behaviour by version). So a
/// thread of its own enforces a ruleset on itself, without `no_new_privs`, and
/// ends: a Landlock domain belongs to the thread that made it, and the rest of
/// the process stays unconfined.
pub(crate) fn kernel_abi() -> ABI {
    static ABI_FOUND: OnceLock<ABI> = OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        let probe = || {
            Ruleset::default()
                .handle_access(AccessFs::Execute)
                .and_then(Ruleset::create)
                .map(|r| r.no_new_privs(false))
                .and_then(RulesetCreated::restrict_self)
                .map(|status| ABI::from(status.landlock))
                .unwrap_or(ABI::Unsupported)
        };
        std::thread::spawn(probe).join().unwrap_or(ABI::Unsupported)
    })
}

/// A sandbox ready to apply in the child.
pub(crate) struct Prepared {
    /// Applied by [`confine_before_exec`]; taken once.
    ruleset: RulesetCreated,
    /// For diagnostics and error messages.
    pub description: String,
    /// What was dropped (`require: false`) or skipped (a granted path that does
    /// not exist), for warnings.
    pub warnings: Vec<String>,
}

/// Why a sandbox cannot be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    /// The kernel lacks what a grant needs, and the grant is required.
    #[error(
        "server `{server}`: the sandbox cannot be enforced: {grant} needs Landlock ABI {needs} or \
         later, but this kernel has {has}; set \"sandbox\": {{\"require\": false}} to run it with \
         what the kernel can enforce"
    )]
    Unsupported {
        server: String,
        grant: String,
        needs: ABI,
        has: String,
    },
    /// The ruleset could not be built.
    #[error("server `{server}`: the sandbox could not be set up: {message}")]
    Setup { server: String, message: String },
}

fn describe_abi(abi: ABI) -> String {
    match abi {
        ABI::Unsupported => "no Landlock (not built in, or not enabled at boot)".into(),
        abi => format!("Landlock ABI {abi}"),
    }
}

/// Builds the ruleset for `server`'s `sandbox`, with the automatic grants for a
/// child that runs `command` with `env` (its `PATH`, `HOME`, …) in `cwd`, and
/// `private`: directories the host made for this server alone (its npm cache),
/// read and write.
pub(crate) fn prepare(
    server: &str,
    sandbox: &SandboxSpec,
    command: &str,
    env: &[(String, String)],
    cwd: Option<&Path>,
    private: &[PathBuf],
) -> Result<Prepared, SandboxError> {
    prepare_for(kernel_abi(), server, sandbox, command, env, cwd, private)
}

/// [`prepare`] on a kernel of Landlock ABI `abi` (tests ask for older ones).
fn prepare_for(
    abi: ABI,
    server: &str,
    sandbox: &SandboxSpec,
    command: &str,
    env: &[(String, String)],
    cwd: Option<&Path>,
    private: &[PathBuf],
) -> Result<Prepared, SandboxError> {
    let mut warnings = Vec::new();
    let confine_net = !matches!(sandbox.network, Network::All);
    let mut wanted = vec![("the filesystem confinement", FS_ABI)];
    if confine_net {
        wanted.push(("the `network` grant (TCP bind and connect)", NET_ABI));
    }
    for (grant, needs) in wanted {
        if abi >= needs {
            continue;
        }
        if sandbox.require {
            return Err(SandboxError::Unsupported {
                server: server.to_owned(),
                grant: grant.to_owned(),
                needs,
                has: describe_abi(abi),
            });
        }
        warnings.push(format!(
            "server `{server}`: {grant} needs Landlock ABI {needs}, but this kernel has {}; \
             it runs without it (\"require\": false)",
            describe_abi(abi)
        ));
    }
    let setup = |e: landlock::RulesetError| SandboxError::Setup {
        server: server.to_owned(),
        message: e.to_string(),
    };
    // Requirements were checked above: the ruleset takes what the kernel has.
    let all_fs = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all_fs)
        .map_err(setup)?;
    if confine_net && abi >= NET_ABI {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(setup)?;
    }
    if abi >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(setup)?;
    }
    let mut created = ruleset.create().map_err(setup)?;

    // The grants, user's first (their missing paths are worth a warning).
    let resolve = |p: &Path| match (p.is_relative(), cwd) {
        (true, Some(cwd)) => cwd.join(p),
        _ => p.to_path_buf(),
    };
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>, bool)> = Vec::new();
    for p in &sandbox.read {
        rules.push((resolve(p), read, true));
    }
    for p in &sandbox.write {
        rules.push((resolve(p), all_fs, true));
    }
    for p in SYSTEM {
        rules.push((PathBuf::from(p), read, false));
    }
    for p in DEVICES {
        rules.push((PathBuf::from(p), all_fs & AccessFs::from_file(abi), false));
    }
    let automatic = automatic_grants(command, env, cwd, private);
    for (p, write) in &automatic {
        rules.push((p.clone(), if *write { all_fs } else { read }, false));
    }
    for (path, access, granted) in &rules {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(e) if *granted => {
                warnings.push(format!(
                    "server `{server}`: the sandbox grant {} is skipped: {e}",
                    path.display()
                ));
                continue;
            }
            Err(_) => continue,
        };
        // A file gets only the rights that make sense for a file.
        let access = if path.is_dir() {
            *access
        } else {
            *access & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(setup)?;
    }
    if let Network::Ports { connect, bind } = &sandbox.network
        && abi >= NET_ABI
    {
        for port in connect {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(setup)?;
        }
        for port in bind {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::BindTcp))
                .map_err(setup)?;
        }
    }
    let mut description = describe(sandbox, abi, cwd, &automatic);
    // What was dropped or skipped stays visible after the warning event is gone.
    for warning in &warnings {
        let what = warning
            .strip_prefix(&format!("server `{server}`: "))
            .unwrap_or(warning);
        description.push_str(&format!("; {what}"));
    }
    Ok(Prepared {
        ruleset: created,
        description,
        warnings,
    })
}

/// The sandbox in words, for diagnostics and error messages: the grants as
/// configured, then every automatic one (`automatic`: the program's own files,
/// and what is written to, besides the system's).
fn describe(
    sandbox: &SandboxSpec,
    abi: ABI,
    cwd: Option<&Path>,
    automatic: &[(PathBuf, bool)],
) -> String {
    let list = |paths: &[PathBuf]| {
        if paths.is_empty() {
            "nothing".to_owned()
        } else {
            paths
                .iter()
                .map(|p| match (p.is_relative(), cwd) {
                    (true, Some(cwd)) => cwd.join(p).display().to_string(),
                    _ => p.display().to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let network = match &sandbox.network {
        _ if abi < NET_ABI && !matches!(sandbox.network, Network::All) => {
            "not confined (the kernel cannot)".to_owned()
        }
        Network::None => "no TCP".to_owned(),
        Network::All => "unrestricted".to_owned(),
        Network::Ports { connect, bind } => {
            format!("TCP connect to ports {connect:?}, bind ports {bind:?}")
        }
    };
    let fs = if abi >= ABI::V1 {
        format!(
            "read {}; write {}; {}",
            list(&sandbox.read),
            list(&sandbox.write),
            describe_automatic(automatic)
        )
    } else {
        "filesystem not confined (the kernel cannot)".to_owned()
    };
    format!(
        "{}: {fs}; network: {network}; no_new_privs",
        describe_abi(abi)
    )
}

/// What a sandboxed program gets without asking, besides the system's files:
/// its own files (see [`runtime_paths`]) and `private`, directories the host made
/// for it alone (read and write). `(path, writable)`, each once, in the order
/// found, existing paths only.
pub(crate) fn automatic_grants(
    command: &str,
    env: &[(String, String)],
    cwd: Option<&Path>,
    private: &[PathBuf],
) -> Vec<(PathBuf, bool)> {
    let mut automatic: Vec<(PathBuf, bool)> = Vec::new();
    let found = runtime_paths(command, env, cwd)
        .into_iter()
        .chain(private.iter().map(|p| (p.clone(), true)));
    for (p, write) in found {
        match automatic.iter_mut().find(|(q, _)| *q == p) {
            Some((_, w)) => *w |= write,
            None => automatic.push((p, write)),
        }
    }
    // A directory the system grant already covers says nothing new.
    let covered = |p: &Path| {
        p.is_dir()
            && SYSTEM
                .iter()
                .any(|system| !system.starts_with("/etc") && p.starts_with(system))
    };
    automatic.retain(|(p, write)| p.exists() && (*write || !covered(p)));
    automatic
}

/// Every automatic grant in words: the system's, then `automatic`
/// ([`automatic_grants`]).
pub(crate) fn describe_automatic(automatic: &[(PathBuf, bool)]) -> String {
    let of = |write: bool| -> Vec<String> {
        automatic
            .iter()
            .filter(|(_, w)| *w == write)
            .map(|(p, _)| p.display().to_string())
            .collect()
    };
    let mut text = "also read: the system's programs and libraries (/usr, /bin, /sbin, /lib*, \
                    the loader's, TLS and name resolution files of /etc), /dev/null, /dev/zero, \
                    /dev/full, /dev/random, /dev/urandom"
        .to_owned();
    for p in of(false) {
        text.push_str(", ");
        text.push_str(&p);
    }
    let private = of(true);
    if !private.is_empty() {
        text.push_str(&format!("; also write: {} (its own)", private.join(", ")));
    }
    text
}

/// Whether `command` is `npx`, which gets a private npm cache in a sandbox.
pub(crate) fn runs_npx(command: &str) -> bool {
    Path::new(command).file_name().is_some_and(|n| n == "npx")
}

/// The paths the program needs to run: its command and interpreter, their
/// installations and their `node_modules`, read-only. `(path, writable)`.
fn runtime_paths(
    command: &str,
    env: &[(String, String)],
    cwd: Option<&Path>,
) -> Vec<(PathBuf, bool)> {
    let var = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    // The home directories the program could mean: its own, and this process's.
    let homes: Vec<PathBuf> = [var("HOME").map(str::to_owned), std::env::var("HOME").ok()]
        .into_iter()
        .flatten()
        .filter(|h| !h.is_empty())
        .flat_map(|h| {
            let h = PathBuf::from(h);
            let canonical = std::fs::canonicalize(&h).ok();
            std::iter::once(h).chain(canonical)
        })
        .collect();
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    let mut programs = vec![command.to_owned()];
    let mut seen = 0;
    while seen < programs.len() && seen < 4 {
        let program = programs[seen].clone();
        seen += 1;
        let Some(path) = find_program(&program, var("PATH"), cwd) else {
            continue;
        };
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        for p in [&path, &canonical] {
            out.push((p.clone(), false));
            out.extend(installation(p, &homes).into_iter().map(|i| (i, false)));
            if let Some(modules) = p
                .ancestors()
                .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
                .last()
            {
                out.push((modules.to_path_buf(), false));
            }
        }
        // A script's interpreter (`#!/usr/bin/env node` names two programs).
        if let Some(line) = shebang(&canonical) {
            let mut words = line.split_whitespace();
            if let Some(interpreter) = words.next() {
                programs.push(interpreter.to_owned());
                if Path::new(interpreter)
                    .file_name()
                    .is_some_and(|n| n == "env")
                    && let Some(next) = words.find(|w| !w.starts_with('-'))
                {
                    programs.push(next.to_owned());
                }
            }
        }
    }
    out
}

/// The installation a program at `<prefix>/bin/<name>` (or `<prefix>/shims/<name>`)
/// belongs to, as the paths to grant: empty unless `<prefix>` is recognisably an
/// installation, and never `/`, a home directory in `homes` or an ancestor of one.
///
/// - a Python venv (`<prefix>/pyvenv.cfg`): the whole venv;
/// - a pyenv or rbenv root (`shims` beside `versions`): the whole root;
/// - a prefix with a `lib/node_modules`, `lib/python3*` or `lib/ruby` tree (Node.js,
///   a Python, a Ruby, `~/.local` after `pip install --user`): `<prefix>/bin` and
///   `<prefix>/lib`, not the rest (`~/.local/share` holds keyrings and histories).
fn installation(program: &Path, homes: &[PathBuf]) -> Vec<PathBuf> {
    let Some(dir) = program.parent() else {
        return Vec::new();
    };
    let Some(kind) = dir.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let Some(prefix) = dir.parent() else {
        return Vec::new();
    };
    if !matches!(kind, "bin" | "shims")
        || prefix.parent().is_none()
        || homes.iter().any(|home| home.starts_with(prefix))
    {
        return Vec::new();
    }
    if prefix.join("pyvenv.cfg").is_file() {
        return vec![prefix.to_path_buf()];
    }
    if kind == "shims" {
        return if prefix.join("versions").is_dir() {
            vec![prefix.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    let lib = prefix.join("lib");
    let runtime_tree = lib.join("node_modules").is_dir()
        || std::fs::read_dir(&lib).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                (name.starts_with("python3") || name == "ruby") && e.path().is_dir()
            })
        });
    if runtime_tree {
        vec![dir.to_path_buf(), lib]
    } else {
        Vec::new()
    }
}

/// `program` as `exec` finds it: a path as is (relative to `cwd`), a bare name
/// on `path`.
fn find_program(program: &str, path: Option<&str>, cwd: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return Some(match (p.is_relative(), cwd) {
            (true, Some(cwd)) => cwd.join(p),
            _ => p.to_path_buf(),
        });
    }
    let path = path
        .map(str::to_owned)
        .or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The `#!` line of a script, without the `#!`.
fn shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let head = head[..n].strip_prefix(b"#!")?;
    let line = head.split(|b| *b == b'\n').next()?;
    Some(String::from_utf8_lossy(line).trim().to_owned())
}

/// Applies `prepared` in the child `command` starts, just before `exec`:
/// `no_new_privs`, then the Landlock ruleset.
///
/// The one place the host uses `unsafe`: `pre_exec` runs its closure in the
/// forked child, where only async-signal-safe work is sound. The closure locks
/// a mutex nothing else ever locks (so it cannot be held across the fork) and
/// makes two system calls through the `landlock` crate (`prctl`, then
/// `landlock_restrict_self`); the ruleset was built, and its files opened, in
/// the parent. Its error path builds an `io::Error` from an errno, which does
/// not allocate.
#[allow(unsafe_code)]
pub(crate) fn confine_before_exec(command: &mut tokio::process::Command, prepared: Prepared) {
    let ruleset = Mutex::new(Some(prepared.ruleset));
    let apply = move || -> std::io::Result<()> {
        let taken = ruleset
            .lock()
            .map_err(|_| std::io::Error::from_raw_os_error(libc_eperm()))?
            .take();
        let Some(ruleset) = taken else {
            return Ok(());
        };
        match ruleset.restrict_self() {
            Ok(RestrictionStatus {
                no_new_privs: true, ..
            }) => Ok(()),
            // no_new_privs is the one part that is never optional.
            Ok(_) => Err(std::io::Error::from_raw_os_error(libc_eperm())),
            Err(e) => {
                let errno = std::io::Error::last_os_error();
                // Not dropped: freeing memory after a fork is not async-signal-safe.
                std::mem::forget(e);
                Err(errno)
            }
        }
    };
    // SAFETY: see the function's documentation: the closure only does
    // async-signal-safe work in the child.
    unsafe {
        command.pre_exec(apply);
    }
}

/// `EPERM`, without a libc dependency for one constant.
fn libc_eperm() -> i32 {
    rustix::io::Errno::PERM.raw_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use landlock::RulesetStatus;

    #[test]
    fn the_kernel_abi_found_is_one_the_kernel_takes() {
        let abi = kernel_abi();
        eprintln!("this kernel: {}", describe_abi(abi));
        let takes = |abi: ABI| {
            Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(Ruleset::create)
                .is_ok()
        };
        // The probe's thread ended with its domain: this thread is unconfined.
        assert!(std::fs::read_dir("/").is_ok());
        if abi != ABI::Unsupported {
            assert!(takes(abi));
            // A ruleset of that ABI is fully enforced on this kernel.
            let status = Ruleset::default()
                .handle_access(AccessFs::from_all(abi))
                .and_then(Ruleset::create)
                .map(|r| r.no_new_privs(false))
                .and_then(|r| {
                    // Applied in a thread of its own, which then ends: the test
                    // process stays unconfined.
                    std::thread::spawn(move || r.restrict_self())
                        .join()
                        .unwrap()
                })
                .unwrap();
            assert_eq!(status.ruleset, RulesetStatus::FullyEnforced);
        }
    }

    fn spec(network: Network, require: bool) -> SandboxSpec {
        SandboxSpec {
            read: vec![PathBuf::from("/nonexistent/mcpbox-test")],
            write: Vec::new(),
            network,
            require,
        }
    }

    #[test]
    fn a_grant_an_older_kernel_cannot_enforce_is_refused_or_dropped_with_a_warning() {
        let prepare =
            |abi, spec: &SandboxSpec| prepare_for(abi, "fs", spec, "true", &[], None, &[]);
        let e = prepare(ABI::V3, &spec(Network::None, true)).err().unwrap();
        assert_eq!(
            e.to_string(),
            "server `fs`: the sandbox cannot be enforced: the `network` grant (TCP bind and \
             connect) needs Landlock ABI 4 or later, but this kernel has Landlock ABI 3; set \
             \"sandbox\": {\"require\": false} to run it with what the kernel can enforce"
        );
        let e = prepare(ABI::V2, &spec(Network::All, true)).err().unwrap();
        assert!(
            e.to_string()
                .contains("the filesystem confinement needs Landlock ABI 3"),
            "{e}"
        );
        // A network left open needs no network support.
        let ok = prepare(ABI::V3, &spec(Network::All, true)).unwrap();
        assert_eq!(
            ok.warnings.len(),
            1,
            "only the missing path: {:?}",
            ok.warnings
        );
        // Downgraded on request, with a warning naming the grant and the ABI.
        let ok = prepare(ABI::V3, &spec(Network::None, false)).unwrap();
        assert!(
            ok.warnings[0].contains("`network` grant (TCP bind and connect) needs Landlock ABI 4")
                && ok.warnings[0].contains("this kernel has Landlock ABI 3"),
            "{:?}",
            ok.warnings
        );
        assert!(
            ok.description
                .contains("network: not confined (the kernel cannot)"),
            "{}",
            ok.description
        );
        assert!(
            ok.warnings[1].contains("the sandbox grant /nonexistent/mcpbox-test is skipped"),
            "{:?}",
            ok.warnings
        );
    }

    #[test]
    fn runtime_paths_follow_the_shebang_and_the_node_modules() {
        let dir = std::env::temp_dir().join(format!("mcpbox-sandbox-{}", std::process::id()));
        let modules = dir.join("node_modules");
        let pkg = modules.join("pkg").join("bin");
        std::fs::create_dir_all(&pkg).unwrap();
        let script = pkg.join("serve.js");
        std::fs::write(&script, "#!/usr/bin/env node\n").unwrap();
        let env = vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())];
        let paths: Vec<PathBuf> = runtime_paths(script.to_str().unwrap(), &env, None)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert!(paths.contains(&script), "{paths:?}");
        assert!(
            paths.contains(&modules),
            "the outermost node_modules: {paths:?}"
        );
        assert!(
            !paths.contains(&modules.join("pkg")),
            "<prefix>/bin/<name> is no installation by itself: {paths:?}"
        );
        assert!(paths.contains(&PathBuf::from("/usr/bin/env")), "{paths:?}");
        if Path::new("/usr/bin/node").exists() {
            assert!(paths.contains(&PathBuf::from("/usr/bin/node")), "{paths:?}");
        }
        // Nothing is ever writable but what the host made for the server.
        assert!(runtime_paths("npx", &env, None).iter().all(|(_, w)| !w));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A program in `<prefix>/bin` opens `<prefix>` only where it is
    /// recognisably an installation, and never a home directory or above.
    #[test]
    fn an_installation_is_granted_only_where_it_is_one() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let home = root.join("home");
        let homes = [home.clone()];
        let program = |dir: &Path| {
            std::fs::create_dir_all(dir).unwrap();
            let p = dir.join("tool");
            std::fs::write(&p, "").unwrap();
            p
        };
        // ~/bin/tool: never the home directory.
        std::fs::create_dir_all(home.join("lib/python3.12")).unwrap();
        assert_eq!(
            installation(&program(&home.join("bin")), &homes),
            Vec::<PathBuf>::new()
        );
        // An ancestor of it neither (a home at /x/home, a program at /x/bin).
        assert_eq!(
            installation(&program(&root.join("bin")), &homes),
            Vec::<PathBuf>::new()
        );
        // ~/.cargo/bin/tool: nothing recognisable, the file alone.
        assert_eq!(
            installation(&program(&home.join(".cargo/bin")), &homes),
            Vec::<PathBuf>::new()
        );
        // ~/.local/bin/tool with a Python's packages: its bin and lib, not share.
        let local = home.join(".local");
        std::fs::create_dir_all(local.join("lib/python3.12/site-packages")).unwrap();
        std::fs::create_dir_all(local.join("share/keyrings")).unwrap();
        assert_eq!(
            installation(&program(&local.join("bin")), &homes),
            vec![local.join("bin"), local.join("lib")]
        );
        // A Node.js installation the same.
        let node = root.join("opt/node");
        std::fs::create_dir_all(node.join("lib/node_modules/npm")).unwrap();
        assert_eq!(
            installation(&program(&node.join("bin")), &homes),
            vec![node.join("bin"), node.join("lib")]
        );
        // A venv whole.
        let venv = home.join("project/.venv");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(
            installation(&program(&venv.join("bin")), &homes),
            vec![venv.clone()]
        );
        // A version manager's root with its shims.
        let pyenv = home.join(".pyenv");
        std::fs::create_dir_all(pyenv.join("versions")).unwrap();
        assert_eq!(
            installation(&program(&pyenv.join("shims")), &homes),
            vec![pyenv]
        );
        assert_eq!(
            installation(&program(&home.join("shims")), &homes),
            Vec::<PathBuf>::new()
        );
        // The whole chain, with the child's HOME: ~/bin/tool is the file alone.
        let env = [
            ("HOME".to_owned(), home.display().to_string()),
            ("PATH".to_owned(), home.join("bin").display().to_string()),
        ];
        let paths = automatic_grants("tool", &env, None, &[]);
        assert_eq!(paths, vec![(home.join("bin/tool"), false)]);
    }
}
