//! The IMEX daemon's start as a child of gpusliced: a short-lived process
//! (gpusliced itself, run with [`LAUNCH_FLAG`] first) that gives itself a
//! mount namespace of its own, binds the domain's `hosts` over /etc/hosts
//! in it, read-only, and execs the daemon, which so resolves its members'
//! names through the mapping gpusliced keeps and nobody else's.
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
    /// A user namespace's id map could not be written.
    #[error("cannot write {file}: {error}")]
    IdMap {
        /// The /proc file.
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
        write_proc(file, &text).map_err(|error| LaunchError::IdMap { file, error })?;
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
