//! Several containers at once: a rack of N nodes, each the cached rootfs
//! booted by systemd-nspawn on a throwaway overlay, with its own hostname
//! (`node-<i>`, from 1) and addresses, all running the same script of this
//! folder as their `systemd.run=`, at the same time.
//!
//! The network is made on the host before the boots and is nothing but L2:
//! a bridge (no host address, so nothing routes to or from the host), and
//! per node a network namespace (`ip netns`) whose `eth0` is a veth into the
//! bridge, up, with two addresses set before PID 1 starts:
//! `10.213.0.<10+i>/24` on the rack network and `10.213.1.<10+i>/24` on
//! another network on the same link, so an address outside the rack is
//! there to be refused. nspawn joins it (`--network-namespace-path`).
//!
//! Two things nspawn needs here, both measured (the host has no systemd and
//! a hybrid cgroup layout):
//! - `--system-call-filter=bpf`: nspawn's seccomp filter refuses `bpf()`,
//!   and systemd then ignores `IPAddressAllow=`/`IPAddressDeny=` (its BPF
//!   firewall "not supported"), silently;
//! - each nspawn started in a cgroup of its own, in every hierarchy systemd
//!   uses (cgroup2, and name=systemd on a hybrid host): with `--keep-unit`
//!   nspawn puts the container's cgroups under the one it starts in, so two
//!   containers started from one cgroup share `payload/system.slice/<unit>`,
//!   and a unit's BPF firewall in one container applies to the unit of the
//!   same name in the other.
//!
//! Each node's folder (bound at /out) is a test folder of `mod.rs` plus
//! `rack_common.sh` and `node.env` (this node's name, addresses and the
//! rack's); one folder shared by all is bound at /rack, for the scripts'
//! rendezvous. When a node fails (nspawn exits non-zero: its script's exit
//! status), the others are told to power off (SIGTERM to their `timeout`,
//! which passes it to nspawn and kills it 30 s later), so a failure never
//! waits for the others' timeouts. Whatever happens, dropping the [`Rack`]
//! removes the namespaces, the bridge and the cgroups.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::tools::run;

/// What a rack script sources after common.sh.
const RACK_COMMON: &str = include_str!("rack_common.sh");
/// The rack network, a /24: node i is `.10+i`.
const RACK_NET: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 0);
/// Another network on the same link, outside the rack's: node i is `.10+i`.
const OTHER_NET: Ipv4Addr = Ipv4Addr::new(10, 213, 1, 0);
/// Moves this shell into each cgroup named before `--` (their folders),
/// then execs the rest: nspawn then starts in them.
const ENTER_CGROUPS: &str = r#"while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@""#;

/// One node of a rack.
pub(super) struct Node {
    /// Its hostname, `node-<i>`.
    pub name: String,
    /// Its address on the rack network.
    pub addr: Ipv4Addr,
    /// Its address on the other network.
    pub other_addr: Ipv4Addr,
    /// `gsr<pid>n<i>`: its network namespace, its veth's host end, its
    /// machine name and (under `gpuslice-`) its cgroups.
    ns: String,
}

/// Lines of a failed node's journal in its report.
const JOURNAL_TAIL: usize = 80;

/// A node's end: nspawn's exit status (the script's), the script's log,
/// nspawn's own output and the node's journal (rack_common.sh saves it).
pub(super) struct Ended {
    pub status: Result<ExitStatus, String>,
    /// Powered off by the host because another node failed first.
    pub stopped: bool,
    pub log: String,
    pub nspawn: String,
    pub journal: String,
}

impl Ended {
    /// Whether the script exited 0 and its log ends with PASS.
    pub fn passed(&self) -> bool {
        self.status.as_ref().is_ok_and(ExitStatus::success) && self.log.trim_end().ends_with("PASS")
    }

    /// What to show of this node's end: its status, log and nspawn's
    /// output; when it did not pass, its journal's last lines too.
    pub fn report(&self, node: &Node) -> String {
        let mut out = format!(
            "==== {} ({}): {:?}{}\n{}\n-- nspawn's output:\n{}",
            node.name,
            node.addr,
            self.status,
            if self.stopped {
                ", powered off after another node failed"
            } else {
                ""
            },
            self.log,
            self.nspawn
        );
        if !self.passed() {
            let lines: Vec<&str> = self.journal.lines().collect();
            let tail = &lines[lines.len().saturating_sub(JOURNAL_TAIL)..];
            let _ = write!(
                out,
                "-- its journal's last {} lines:\n{}\n",
                tail.len(),
                tail.join("\n")
            );
        }
        out
    }
}

/// The host's side of a rack: the bridge, the namespaces, the cgroups.
/// Made step by step, so a failure halfway is cleaned up as well.
pub(super) struct Rack {
    pub nodes: Vec<Node>,
    /// The bridge, `gsr<pid>` (one rack a process at a time: `ONE_BOOT`).
    bridge: String,
    made_bridge: bool,
    made_namespaces: Vec<String>,
    made_cgroups: Vec<PathBuf>,
    /// The cgroup hierarchies each node gets a cgroup in.
    hierarchies: Vec<PathBuf>,
}

/// The cgroup hierarchies nspawn's containers live in: the cgroup2 one
/// (systemd's IP firewall attaches there) and, on a hybrid host, the
/// name=systemd one. An error on a host without cgroup2.
pub(super) fn cgroup_hierarchies() -> Result<Vec<PathBuf>, String> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let unified = root.join("unified");
    if !unified.join("cgroup.controllers").is_file() {
        return Err(
            "no cgroup2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified): \
                    systemd's IPAddressAllow= needs one"
                .to_owned(),
        );
    }
    let mut all = vec![unified];
    let named = root.join("systemd");
    if named.join("cgroup.procs").is_file() {
        all.push(named);
    }
    Ok(all)
}

/// Runs `ip` with `args`, panicking with its output if it fails.
fn ip(args: &[&str]) {
    run(Command::new("ip").args(args)).unwrap_or_else(|e| panic!("{e}"));
}

impl Rack {
    /// Makes the network and the cgroups of `count` nodes.
    pub fn new(count: u8, hierarchies: Vec<PathBuf>) -> Self {
        assert!((1..=200).contains(&count), "a rack of {count} nodes");
        let bridge = format!("gsr{}", std::process::id());
        let nodes = (1..=count)
            .map(|i| Node {
                name: format!("node-{i}"),
                addr: Ipv4Addr::from(u32::from(RACK_NET) + 10 + u32::from(i)),
                other_addr: Ipv4Addr::from(u32::from(OTHER_NET) + 10 + u32::from(i)),
                ns: format!("{bridge}n{i}"),
            })
            .collect();
        let mut rack = Self {
            nodes,
            bridge,
            made_bridge: false,
            made_namespaces: Vec::new(),
            made_cgroups: Vec::new(),
            hierarchies,
        };
        rack.remove_leftovers();
        rack.make();
        rack
    }

    /// What an earlier process of this pid left (it was killed): gone.
    fn remove_leftovers(&self) {
        for node in &self.nodes {
            let _ = Command::new("ip").args(["netns", "del", &node.ns]).output();
            for hierarchy in &self.hierarchies {
                remove_tree(&hierarchy.join(format!("gpuslice-{}", node.ns)));
            }
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .output();
    }

    fn make(&mut self) {
        ip(&["link", "add", &self.bridge, "type", "bridge"]);
        self.made_bridge = true;
        ip(&["link", "set", &self.bridge, "up"]);
        for i in 0..self.nodes.len() {
            let (ns, addr, other) = {
                let n = &self.nodes[i];
                (n.ns.clone(), n.addr, n.other_addr)
            };
            ip(&["netns", "add", &ns]);
            self.made_namespaces.push(ns.clone());
            ip(&[
                "link", "add", &ns, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            ip(&["link", "set", &ns, "master", &self.bridge, "up"]);
            for a in [addr, other] {
                ip(&["-n", &ns, "addr", "add", &format!("{a}/24"), "dev", "eth0"]);
            }
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            for hierarchy in self.hierarchies.clone() {
                let cgroup = hierarchy.join(format!("gpuslice-{ns}"));
                std::fs::create_dir(&cgroup)
                    .unwrap_or_else(|e| panic!("create the cgroup {}: {e}", cgroup.display()));
                self.made_cgroups.push(cgroup);
            }
        }
    }

    /// The node's cgroups, one per hierarchy.
    fn cgroups_of(&self, node: &Node) -> Vec<PathBuf> {
        let leaf = format!("gpuslice-{}", node.ns);
        self.hierarchies.iter().map(|h| h.join(&leaf)).collect()
    }

    /// Adds to node `index`'s test folder what a rack script needs:
    /// `rack_common.sh` and `node.env`.
    pub fn fill(&self, out: &Path, index: usize) {
        super::write_script(&out.join("rack_common.sh"), RACK_COMMON);
        super::write_file(
            &out.join("node.env"),
            &self.node_env(&self.nodes[index], index),
            0o644,
        );
    }

    /// `node.env`: what a script knows of its node and the rack (shell
    /// assignments).
    fn node_env(&self, node: &Node, index: usize) -> String {
        let list =
            |f: &dyn Fn(&Node) -> String| self.nodes.iter().map(f).collect::<Vec<_>>().join(" ");
        let mut env = String::new();
        let _ = writeln!(env, "NODE_INDEX={}", index + 1);
        let _ = writeln!(env, "NODE_COUNT={}", self.nodes.len());
        let _ = writeln!(env, "NODE_NAME={}", node.name);
        let _ = writeln!(env, "NODE_ADDR={}", node.addr);
        let _ = writeln!(env, "NODE_OTHER_ADDR={}", node.other_addr);
        let _ = writeln!(env, "RACK_CIDR={RACK_NET}/24");
        let _ = writeln!(env, "OTHER_CIDR={OTHER_NET}/24");
        let _ = writeln!(env, "RACK_NAMES='{}'", list(&|n| n.name.clone()));
        let _ = writeln!(env, "RACK_ADDRS='{}'", list(&|n| n.addr.to_string()));
        let _ = writeln!(env, "OTHER_ADDRS='{}'", list(&|n| n.other_addr.to_string()));
        env
    }

    /// The command that boots `node` from `root` with `out` at /out and
    /// `shared` at /rack, running `/out/<script>`, its output in `out`.
    fn command(
        &self,
        node: &Node,
        root: &Path,
        out: &Path,
        shared: &Path,
        script: &str,
    ) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", ENTER_CGROUPS, "sh"])
            .args(self.cgroups_of(node))
            .arg("--")
            .args(["timeout", "--kill-after=30", super::NSPAWN_TIMEOUT_S])
            .args(["systemd-nspawn", "--quiet", "--directory"])
            .arg(root)
            .args(["--volatile=overlay", "--register=no", "--keep-unit"])
            .args(["--console=pipe", "--system-call-filter=bpf"])
            .arg(format!("--machine={}", node.ns))
            .arg(format!("--network-namespace-path=/run/netns/{}", node.ns))
            .arg(format!("--bind={}:/out", out.display()))
            .arg(format!("--bind={}:/rack", shared.display()))
            .args(["--boot", "--"])
            .arg(format!("systemd.hostname={}", node.name))
            .arg(format!("systemd.run=/out/{script}"));
        let output = out.join("nspawn.out");
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&output)
            .unwrap_or_else(|e| panic!("open {}: {e}", output.display()));
        let err = file.try_clone().expect("dup nspawn.out");
        cmd.stdin(Stdio::null()).stdout(file).stderr(err);
        cmd
    }
}

impl Drop for Rack {
    fn drop(&mut self) {
        for ns in &self.made_namespaces {
            // The veth goes with its namespace.
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        if self.made_bridge {
            let _ = Command::new("ip")
                .args(["link", "del", &self.bridge])
                .output();
        }
        for cgroup in &self.made_cgroups {
            remove_tree(cgroup);
            if cgroup.exists() {
                eprintln!(
                    "rack: could not remove the cgroup {} (processes left?)",
                    cgroup.display()
                );
            }
        }
    }
}

/// Removes a cgroup and the cgroups under it (the container's systemd made
/// them), deepest first.
fn remove_tree(cgroup: &Path) {
    if let Ok(entries) = std::fs::read_dir(cgroup) {
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(cgroup);
}

/// Boots every node of `rack` at once from `root`, node i with `outs[i]` at
/// /out, runs `/out/<script>` in each and waits for all; the first failure
/// powers the others off. Returns each node's end, in order.
pub(super) fn boot_all(
    rack: &Rack,
    root: &Path,
    outs: &[&Path],
    shared: &Path,
    script: &str,
) -> Vec<Ended> {
    let started = Instant::now();
    let commands: Vec<Command> = rack
        .nodes
        .iter()
        .zip(outs)
        .map(|(node, out)| rack.command(node, root, out, shared, script))
        .collect();
    let statuses = run_at_once(commands);
    eprintln!(
        "rack: {} nodes booted, ran {script} and stopped in {:.1} s",
        rack.nodes.len(),
        started.elapsed().as_secs_f64()
    );
    statuses
        .into_iter()
        .zip(outs)
        .map(|((status, stopped), out)| Ended {
            status,
            stopped,
            log: std::fs::read_to_string(out.join("log")).unwrap_or_default(),
            nspawn: std::fs::read_to_string(out.join("nspawn.out")).unwrap_or_default(),
            journal: std::fs::read_to_string(out.join("journal")).unwrap_or_default(),
        })
        .collect()
}

/// Starts every command, waits for all (a thread each); when one fails,
/// SIGTERM to those still running. Each command's exit status, and whether
/// it was sent SIGTERM.
fn run_at_once(commands: Vec<Command>) -> Vec<(Result<ExitStatus, String>, bool)> {
    let count = commands.len();
    let mut statuses: Vec<(Result<ExitStatus, String>, bool)> = (0..count)
        .map(|_| (Err("not started".to_owned()), false))
        .collect();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        // The pid of each command still running (not yet reported).
        let mut running: Vec<Option<Pid>> = vec![None; count];
        for (i, mut cmd) in commands.into_iter().enumerate() {
            match cmd.spawn() {
                Ok(mut child) => {
                    running[i] = i32::try_from(child.id()).ok().map(Pid::from_raw);
                    let tx = tx.clone();
                    scope.spawn(move || {
                        let status = child.wait().map_err(|e| format!("wait: {e}"));
                        let _ = tx.send((i, status));
                    });
                }
                Err(e) => {
                    statuses[i].0 = Err(format!("cannot start: {e}"));
                    terminate(&running, &mut statuses);
                    break;
                }
            }
        }
        drop(tx);
        for (i, status) in rx {
            running[i] = None;
            let failed = !status.as_ref().is_ok_and(ExitStatus::success);
            statuses[i].0 = status;
            if failed {
                terminate(&running, &mut statuses);
            }
        }
    });
    statuses
}

/// SIGTERM to each process still running (marked in `statuses`): `timeout`
/// passes it to nspawn, which powers its container off (and `timeout`
/// kills it 30 s later). (A process reaped by its waiter whose report is
/// not read yet would get it too, at a pid then free: a window of
/// microseconds, in a test.)
fn terminate(running: &[Option<Pid>], statuses: &mut [(Result<ExitStatus, String>, bool)]) {
    for (pid, status) in running.iter().zip(statuses) {
        if let Some(pid) = pid {
            let _ = kill(*pid, Signal::SIGTERM);
            status.1 = true;
        }
    }
}
