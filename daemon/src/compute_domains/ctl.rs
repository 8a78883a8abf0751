//! `nvidia-imex-ctl`, run with a bound: `-q`, whether the local daemon is
//! READY, and `-N`, the daemon's connections to the other members (its row
//! of the domain's table). gpusliced runs it under its own sandbox, so it
//! reaches the daemon over the command service's unix socket the config
//! names.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use gpuslice_imex::imex::{Query, query_answer, query_command, table_command};
use gpuslice_imex::names::{Mapping, member_name};
use gpuslice_imex::table::{CONNECTED, row};

use crate::supervise::process::kill_pid;

/// What `ctl -c <config> -q` says, waiting at most `bound` for it.
pub fn ready(ctl: &Path, config: &Path, bound: Duration) -> Query {
    let [_, args @ ..] = query_command(&config.to_string_lossy());
    match run(ctl, &args, bound) {
        Ok(text) => query_answer(&text),
        Err(problem) => Query::NotReady(problem),
    }
}

/// Whether the daemon holding `own` in `mapping` is connected to every
/// other member of it, and if not, which are not (`<name> <state>`,
/// comma-separated), as `ctl -c <config> -N` shows its row.
pub fn connections(
    ctl: &Path,
    config: &Path,
    own: u32,
    mapping: &Mapping,
    bound: Duration,
) -> Result<(), String> {
    let [_, args @ ..] = table_command(&config.to_string_lossy());
    let text = run(ctl, &args, bound)?;
    let Some(cells) = row(&text, own) else {
        return Err(format!(
            "its table has no row for {} (this node)",
            member_name(own)
        ));
    };
    missing(&cells, own, mapping)
}

/// The members of `mapping` but `own` whose cell is not connected.
fn missing(cells: &BTreeMap<u32, String>, own: u32, mapping: &Mapping) -> Result<(), String> {
    let not: Vec<String> = mapping
        .keys()
        .filter(|index| **index != own)
        .filter_map(|index| {
            let cell = cells.get(index).map_or("absent", String::as_str);
            (cell != CONNECTED).then(|| format!("{} {cell}", member_name(*index)))
        })
        .collect();
    if not.is_empty() {
        Ok(())
    } else {
        Err(not.join(", "))
    }
}

/// `ctl args`' stdout and stderr, waiting at most `bound`; what went wrong
/// otherwise.
fn run(ctl: &Path, args: &[String], bound: Duration) -> Result<String, String> {
    let child = Command::new(ctl)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", ctl.display()))?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(bound) {
        Ok(Ok(output)) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            Ok(text)
        }
        Ok(Err(e)) => Err(format!("{}: {e}", ctl.display())),
        Err(_) => {
            kill_pid(pid);
            Err(format!(
                "{} did not answer within {:.1}s",
                ctl.display(),
                bound.as_secs_f64()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mapped_members_but_itself_count() {
        let ip = |t: &str| t.parse().expect("ip");
        let mapping = Mapping::from([
            (0, ip("10.0.0.1")),
            (1, ip("10.0.0.2")),
            (3, ip("10.0.0.4")),
        ]);
        let cells: BTreeMap<u32, String> = [(0, "C"), (1, "C"), (2, "N"), (3, "R")]
            .into_iter()
            .map(|(i, c)| (i, c.to_owned()))
            .collect();
        assert_eq!(
            missing(&cells, 0, &mapping),
            Err("compute-domain-daemon-0003 R".to_owned())
        );
        let all: BTreeMap<u32, String> = (0..4).map(|i| (i, "C".to_owned())).collect();
        assert_eq!(missing(&all, 1, &mapping), Ok(()));
        assert_eq!(
            missing(&BTreeMap::new(), 3, &mapping),
            Err("compute-domain-daemon-0000 absent, compute-domain-daemon-0001 absent".to_owned())
        );
    }
}
