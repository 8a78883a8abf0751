//! The IMEX stand-ins of tests/tools (`fake-nvidia-imex`,
//! `fake-nvidia-imex-ctl`, `fake-imex-workload`) held to what a design
//! without daemon restarts relies on, as NVIDIA's IMEX guide describes the
//! daemon: a nodes config of names read once and resolved through the
//! daemon's own /etc/hosts; SIGUSR1 re-resolves and reconnects without a
//! restart, at most once per 5 s; a shut-down or restarted exporter's
//! imports are lost on the importing node, which a workload sees.
//!
//! Three daemons on 127.0.37.1-3 (no other test uses 127.0.37.x), each in a
//! mount namespace of its own where its `hosts` file is /etc/hosts and its
//! `nsswitch.conf` (`hosts: files`) keeps the 15 unmapped names away from
//! any DNS server. Needs root (the bind mounts), python3 and unshare;
//! without them the test says why and returns, unless
//! `GPUSLICE_REQUIRE_TOOLS=1`. Every wait is a bounded poll.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::files::write_text;
use crate::tools::{first_missing, is_root, repo_root, skip};

const ADDRESSES: [&str; 3] = ["127.0.37.1", "127.0.37.2", "127.0.37.3"];
/// NVIDIA's nodes config: one name per index of an 18-node clique.
const NAMES: usize = 18;
/// Upper bound of every wait; only a hung stand-in reaches it.
const BOUND: Duration = Duration::from_secs(30);
const EVERY: Duration = Duration::from_millis(20);
const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
/// Runs the daemon with its hosts (and nsswitch.conf) as the system's.
const IN_NAMESPACE: &str = "mount --bind \"$1\" /etc/hosts && \
     { [ ! -e /etc/nsswitch.conf ] || mount --bind \"$2\" /etc/nsswitch.conf; } && \
     exec \"$3\" -c \"$4\"";

fn name(index: usize) -> String {
    format!("compute-domain-daemon-{index:04}")
}

fn tool(name: &str) -> PathBuf {
    repo_root().join("tests/tools").join(name)
}

async fn until<T>(what: &str, check: impl FnMut() -> Option<T>, context: impl Fn() -> String) -> T {
    crate::harness::poll_until(what, (BOUND, EVERY), check, context).await
}

/// One node: its folder (config, nodes config, hosts, command socket,
/// record, log) and its daemon.
struct Node {
    dir: PathBuf,
    daemon: Option<Child>,
}

impl Node {
    fn new(root: &Path, index: usize) -> Self {
        let dir = root.join(format!("node-{index}"));
        std::fs::create_dir_all(&dir).expect("node folder");
        let nodes: String = (0..NAMES).map(|i| name(i) + "\n").collect();
        write_text(&dir.join("nodes_config.cfg"), &nodes);
        write_text(&dir.join("nsswitch.conf"), "hosts: files\n");
        let config = format!(
            "BIND_INTERFACE_IP={}\nSERVER_PORT=50000\nIMEX_NODE_CONFIG_FILE={}\n\
             IMEX_CMD_ENABLED=1\nIMEX_CMD_PORT=50005\nIMEX_CMD_UNIX_DOMAIN_PATH={}\n",
            ADDRESSES[index],
            dir.join("nodes_config.cfg").display(),
            dir.join("cmd.sock").display()
        );
        write_text(&dir.join("imexd.cfg"), &config);
        Self { dir, daemon: None }
    }

    fn config(&self) -> PathBuf {
        self.dir.join("imexd.cfg")
    }

    /// Maps the names of `members` (indices) to their addresses, in place.
    fn map(&self, members: &[usize]) {
        let mut text = "127.0.0.1 localhost\n::1 localhost\n".to_owned();
        for &i in members {
            text.push_str(&format!("{}\t{}\n", ADDRESSES[i], name(i)));
        }
        write_text(&self.dir.join("hosts"), &text);
    }

    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log"))
            .expect("log");
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .args([IN_NAMESPACE, "imex"])
            .args([self.dir.join("hosts"), self.dir.join("nsswitch.conf")])
            .args([tool("fake-nvidia-imex"), self.config()])
            .env("FAKE_IMEX_RECORD", self.dir.join("record"))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start a stand-in daemon");
        self.daemon = Some(child);
    }

    fn pid(&self) -> Pid {
        let id = self.daemon.as_ref().expect("running").id();
        Pid::from_raw(i32::try_from(id).expect("pid"))
    }

    fn signal(&self, signal: Signal) {
        kill(self.pid(), signal).expect("signal the daemon");
    }

    fn running(&mut self) -> bool {
        let daemon = self.daemon.as_mut().expect("started");
        daemon.try_wait().expect("wait").is_none()
    }

    fn record(&self) -> String {
        std::fs::read_to_string(self.dir.join("record")).unwrap_or_default()
    }

    fn context(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        format!("record:\n{}\nlog:\n{log}", self.record())
    }

    /// One command to the daemon's command service: its answer line, or
    /// `None` while nothing serves the socket.
    fn try_ask(&self, line: &str) -> Option<String> {
        let mut stream = UnixStream::connect(self.dir.join("cmd.sock")).ok()?;
        stream.set_read_timeout(Some(BOUND)).expect("timeout");
        stream.write_all(format!("{line}\n").as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        Some(answer.trim().to_owned())
    }

    fn ask(&self, line: &str) -> String {
        self.try_ask(line).expect("the daemon answers")
    }

    /// Whether STATUS shows the link to `index` as `letter`.
    fn link(&self, index: usize, letter: char) -> bool {
        let wanted = format!("{}={letter}", name(index));
        self.try_ask("STATUS")
            .is_some_and(|status| status.split(' ').any(|w| w == wanted))
    }

    /// Stops the daemon with `signal`; its exit status.
    async fn stop(&mut self, signal: Signal) -> Option<i32> {
        self.signal(signal);
        let context = self.context();
        let daemon = self.daemon.as_mut().expect("running");
        let status = until(
            "the daemon to exit",
            || daemon.try_wait().expect("wait"),
            || context.clone(),
        )
        .await;
        self.daemon = None;
        status.code()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut daemon) = self.daemon.take() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// `fake-nvidia-imex-ctl` or `fake-imex-workload` on `node`'s config.
fn client(program: &str, node: &Node, args: &[&str]) -> Command {
    let mut cmd = Command::new(tool(program));
    cmd.arg("-c").arg(node.config()).args(args);
    cmd
}

/// Starts a workload importing `handle` from `entry` on `node`, once it
/// says it imported.
fn import(node: &Node, entry: usize, handle: &str) -> Child {
    let mut child = client(
        "fake-imex-workload",
        node,
        &["import", &name(entry), handle],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start a workload");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("read the workload");
    assert_eq!(
        line.trim(),
        format!("imported {handle} from {}", name(entry))
    );
    child
}

/// Waits for a workload to end, as a CUDA job whose import of `handle`
/// went away: exit 1, `why` and the lost line on stderr.
async fn lost(workload: &mut Child, handle: &str, why: &str) {
    let status = until(
        "the workload to end",
        || workload.try_wait().expect("wait"),
        String::new,
    )
    .await;
    let mut stderr = String::new();
    if let Some(mut pipe) = workload.stderr.take() {
        pipe.read_to_string(&mut stderr).expect("stderr");
    }
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(why), "{stderr}");
    let line = format!("lost {handle}: invalid resource handle\n");
    assert!(stderr.ends_with(&line), "{stderr}");
}

/// `fake-imex-workload export` of `handle` on `node`.
fn export(node: &Node, handle: &str) {
    let out = client("fake-imex-workload", node, &["export", handle])
        .output()
        .expect("export");
    assert!(out.status.success(), "{out:?}");
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !is_root() {
        return Some("root is needed to bind-mount each daemon's /etc/hosts".to_owned());
    }
    first_missing(&["python3", "unshare", "mount"]).map(|p| format!("{p} is missing"))
}

/// `fake-nvidia-imex-ctl -q` on `node`: what it prints.
fn query(node: &Node) -> String {
    let out = client("fake-nvidia-imex-ctl", node, &["-q"])
        .output()
        .expect("ctl");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// How often `node` connected to A's address.
fn connections_to_a(node: &Node) -> usize {
    let line = format!("connected {} {}\n", name(A), ADDRESSES[A]);
    node.record().matches(&line).count()
}

#[tokio::test]
async fn imex_standin_keeps_imports_across_sigusr1_and_a_restarted_exporter_loses_them() {
    let test = "imex_standin_keeps_imports_across_sigusr1_and_a_restarted_exporter_loses_them";
    if let Some(why) = missing() {
        skip(test, &why);
        return;
    }
    let root = tempfile::tempdir().expect("temp dir");
    let mut nodes: Vec<Node> = (0..3).map(|i| Node::new(root.path(), i)).collect();
    // A and B map each other's names; C, which joins, maps all three.
    nodes[A].map(&[A, B]);
    nodes[B].map(&[A, B]);
    nodes[C].map(&[A, B, C]);
    for node in &mut nodes {
        node.start();
    }
    formed(&nodes).await;

    export(&nodes[A], "h1");
    let mut workload = import(&nodes[B], A, "h1");
    let answer = nodes[B].ask(&format!("IMPORT {} h1", name(A)));
    let id = answer.strip_prefix("OK ").expect("an import id").to_owned();

    c_joins_b_without_a_restart(&mut nodes[B], &id).await;
    let held = workload.try_wait().expect("wait").is_none();
    assert!(held, "the workload holds its import");
    table_of_b(&nodes[B]);
    unreachable_socket(root.path());
    restart_of_a_loses_the_import(&mut nodes, workload, &id).await;
    killed_and_restarted_a_loses_the_import(&mut nodes).await;
}

/// Every daemon READY and linked to the names it maps.
async fn formed(nodes: &[Node]) {
    for (node, links) in [(A, &[B][..]), (B, &[A]), (C, &[A, B])] {
        let ready = || {
            let linked = links.iter().all(|&l| nodes[node].link(l, 'C'));
            (query(&nodes[node]) == "READY" && linked).then_some(())
        };
        until(
            &format!("node {node} READY, linked to {links:?}"),
            ready,
            || nodes[node].context(),
        )
        .await;
    }
    assert!(nodes[B].link(C, 'N'), "B's hosts do not map C's name");
}

/// B's hosts rewritten in place and one SIGUSR1: B resolves C's name and
/// connects, its import stays, its process is the same; a repeat within
/// 5 s is ignored.
async fn c_joins_b_without_a_restart(b: &mut Node, id: &str) {
    let hosts = b.dir.join("hosts");
    let inode = std::fs::metadata(&hosts).expect("hosts").ino();
    b.map(&[A, B, C]);
    assert_eq!(std::fs::metadata(&hosts).expect("hosts").ino(), inode);
    assert!(b.link(C, 'N'), "names resolve at start and on SIGUSR1 only");

    b.signal(Signal::SIGUSR1);
    let resolved = format!("{}={}", name(C), ADDRESSES[C]);
    let processed = || {
        let record = b.record();
        let mut lines = record.lines().filter(|l| l.starts_with("usr1 resolved "));
        lines
            .any(|l| l.split(' ').any(|w| w == resolved))
            .then_some(())
    };
    until("B re-resolves on SIGUSR1", processed, || b.context()).await;
    // Sent as soon as the first is seen processed: well within IMEX's 5 s.
    b.signal(Signal::SIGUSR1);
    let ignored = || b.record().contains("usr1 ignored\n").then_some(());
    until("B ignores the repeat", ignored, || b.context()).await;

    let joined = format!("connected {} {}\n", name(C), ADDRESSES[C]);
    let linked = || {
        let record = b.record();
        let again = connections_to_a(b) >= 2; // its link to A restarted too
        (record.contains(&joined) && again && b.link(C, 'C') && b.link(A, 'C')).then_some(())
    };
    until("B connects to C and again to A", linked, || b.context()).await;
    assert_eq!(b.ask(&format!("CHECK {id}")), "VALID", "{}", b.context());
    assert!(b.running(), "B's daemon was not restarted");
    assert_eq!(b.record().matches("start ").count(), 1, "{}", b.context());
    assert_eq!(b.record().matches("usr1 ").count(), 2, "{}", b.context());
}

/// `-N` on B: its row, C's, an unmapped name's, in NVIDIA's layout.
fn table_of_b(b: &Node) {
    let out = client("fake-nvidia-imex-ctl", b, &["-N"])
        .output()
        .expect("ctl -N");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let node_c = format!(
        "Node #2   - {} - READY                - Version: 570.172",
        name(C)
    );
    assert!(text.lines().any(|l| l == node_c), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.starts_with(" Nodes From\\To"))
        .skip(1)
        .take(NAMES)
        .map(|l| l.split_whitespace().skip(1).collect())
        .collect();
    let mut b_row = vec!["C"; 3];
    b_row.extend(["N"; NAMES - 3]);
    assert_eq!(rows[B], b_row, "{text}");
    assert_eq!(rows[C][..3], ["C", "C", "C"], "{text}");
    assert_eq!(rows[3], vec!["I"; NAMES], "{text}");
    assert!(text.ends_with("Domain State: DEGRADED\n"), "{text}");
}

/// `-q` on a unix socket nobody serves: the real tool's gRPC message.
fn unreachable_socket(root: &Path) {
    let socket = root.join("nobody.sock");
    let config = root.join("nobody.cfg");
    let text = format!(
        "IMEX_CMD_ENABLED=1\nIMEX_CMD_UNIX_DOMAIN_PATH={}\n",
        socket.display()
    );
    write_text(&config, &text);
    let mut ctl = Command::new(tool("fake-nvidia-imex-ctl"));
    let out = ctl
        .arg("-c")
        .arg(&config)
        .arg("-q")
        .output()
        .expect("ctl -q");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "Query Status returned error code: 14 - failed to connect to all addresses; \
             last error: UNKNOWN: unix:{}: No such file or directory\n",
            socket.display()
        )
    );
}

/// A shut down (it tells B) and started again: the workload sees its
/// import lost; the new process has none of the old one's exports.
async fn restart_of_a_loses_the_import(nodes: &mut [Node], mut workload: Child, id: &str) {
    let before = connections_to_a(&nodes[B]);
    assert_eq!(nodes[A].stop(Signal::SIGTERM).await, Some(0));
    lost(&mut workload, "h1", &format!("{} shut down", name(A))).await;
    let b = &nodes[B];
    assert!(b.ask(&format!("CHECK {id}")).starts_with("LOST "));
    assert!(b.record().contains(&format!("lost {}\n", name(A))));

    nodes[A].start();
    let b = &nodes[B];
    let back = || (connections_to_a(b) > before && b.link(A, 'C')).then_some(());
    until("B linked to A's new process", back, || b.context()).await;
    let answer = b.ask(&format!("IMPORT {} h1", name(A)));
    assert_eq!(answer, format!("ERROR {} does not export h1", name(A)));
}

/// A killed (no word to B) and started again: B sees a new epoch when the
/// link comes back, and the workload its import lost.
async fn killed_and_restarted_a_loses_the_import(nodes: &mut [Node]) {
    export(&nodes[A], "h2");
    let mut workload = import(&nodes[B], A, "h2");
    assert_eq!(nodes[A].stop(Signal::SIGKILL).await, None);
    let b = &nodes[B];
    until(
        "B's link to A recovering",
        || b.link(A, 'R').then_some(()),
        || b.context(),
    )
    .await;
    let held = workload.try_wait().expect("wait").is_none();
    assert!(held, "R keeps the import");

    nodes[A].start();
    lost(&mut workload, "h2", &format!("{} restarted", name(A))).await;
}
