//! The IMEX daemon's start as a child of gpusliced: a short-lived process
//! (gpusliced itself, run with [`LAUNCH_FLAG`] first) that gives itself a
//! mount namespace of its own, binds the domain's `hosts` over /etc/hosts
//! in it, read-only, and execs the daemon, which so resolves its members'
//! names through the mapping gpusliced keeps and nobody else's.
//!
//! It does nothing before gpusliced's word: one byte on its stdin, sent
//! once gpusliced has kept its pid and start time in the domain's folder
//! (the exec keeps both, so they name the daemon). A gpusliced that dies
//! before that closes the pipe, and the launcher exits without a daemon: no
//! IMEX daemon ever runs that its folder does not name, so a restart never
//! starts a second one beside it. Its stdin is /dev/null once the word came.
//!
//! Root makes the namespace directly; any other user (a developer running
//! the simulator) in a user namespace of its own too, mapped to itself. A
//! fresh process does it, not a thread of gpusliced: a user namespace needs
//! a single-threaded caller.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{Gid, Uid, execv};

/// The first argument that makes gpusliced the launcher.
pub const LAUNCH_FLAG: &str = "--imex-launch";

/// Where the mapping goes in the daemon's namespace.
const HOSTS: &str = "/etc/hosts";

/// The launcher's arguments (after the program itself): the mapping, then
/// the daemon's command line.
pub fn launch_args(hosts: &Path, command: &[&OsStr]) -> Vec<OsString> {
    let mut args = vec![OsString::from(LAUNCH_FLAG), hosts.as_os_str().to_owned()];
    args.push(OsString::from("--"));
    args.extend(command.iter().map(|a| (*a).to_owned()));
    args
}

/// A launch that failed, saying at which step.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The arguments are not [`launch_args`]'.
    #[error("usage: gpusliced {LAUNCH_FLAG} <hosts file> -- <program> [args...]")]
    Usage,
    /// A step of the namespace failed.
    #[error("cannot {step}: {error}")]
    Step {
        /// What was tried.
        step: &'static str,
        /// The OS error.
        error: nix::Error,
    },
    /// gpusliced closed the pipe before its word (it died before keeping
    /// the pid, or gave the start up): no daemon.
    #[error("gpusliced gave no word to start the daemon (it stopped first); not starting it")]
    NoWord,
    /// A file it needs could not be opened or written (a user namespace's
    /// id map, /dev/null).
    #[error("cannot use {file}: {error}")]
    File {
        /// The file.
        file: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
}

fn step(step: &'static str) -> impl Fn(nix::Error) -> LaunchError {
    move |error| LaunchError::Step { step, error }
}

/// Runs as the launcher on `args` (what follows [`LAUNCH_FLAG`]): returns
/// only when it failed.
pub fn run(args: &[OsString]) -> LaunchError {
    match launch(args) {
        Ok(never) => match never {},
        Err(err) => err,
    }
}

fn launch(args: &[OsString]) -> Result<std::convert::Infallible, LaunchError> {
    let [hosts, dashes, program, rest @ ..] = args else {
        return Err(LaunchError::Usage);
    };
    if dashes != "--" {
        return Err(LaunchError::Usage);
    }
    wait_for_word()?;
    own_mount_namespace()?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(step("make the mounts private"))?;
    mount(
        Some(hosts.as_os_str()),
        HOSTS,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(step("bind the domain's hosts file over /etc/hosts"))?;
    mount(
        None::<&str>,
        HOSTS,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
        None::<&str>,
    )
    .map_err(step("make /etc/hosts read-only"))?;
    let c = |s: &OsStr| CString::new(s.as_bytes()).map_err(|_| LaunchError::Usage);
    let program = c(program)?;
    let mut argv = vec![program.clone()];
    for arg in rest {
        argv.push(c(arg)?);
    }
    execv(&program, &argv).map_err(step("run the IMEX daemon"))
}

/// Blocks until gpusliced's word (one byte on stdin); then stdin becomes
/// /dev/null, which the daemon inherits.
fn wait_for_word() -> Result<(), LaunchError> {
    use std::io::Read;
    let mut word = [0_u8; 1];
    // read_exact retries a read a signal interrupted; EOF is no word.
    std::io::stdin()
        .read_exact(&mut word)
        .map_err(|_| LaunchError::NoWord)?;
    let null = std::fs::File::open("/dev/null").map_err(|error| LaunchError::File {
        file: "/dev/null",
        error,
    })?;
    nix::unistd::dup2_stdin(&null).map_err(step("make /dev/null the daemon's stdin"))
}

/// A mount namespace of this process's own: directly as root, else inside
/// a user namespace mapping this user to itself.
fn own_mount_namespace() -> Result<(), LaunchError> {
    if unshare(CloneFlags::CLONE_NEWNS).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (Uid::current(), Gid::current());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(step(
        "make a mount namespace (as root, or in a user namespace)",
    ))?;
    for (file, text) in [
        ("/proc/self/setgroups", "deny".to_owned()),
        ("/proc/self/uid_map", format!("{uid} {uid} 1")),
        ("/proc/self/gid_map", format!("{gid} {gid} 1")),
    ] {
        write_proc(file, &text).map_err(|error| LaunchError::File { file, error })?;
    }
    Ok(())
}

/// Writes a /proc control file (not a durable file: the atomic writer
/// does not apply).
fn write_proc(file: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)?
        .write_all(text.as_bytes())
}
