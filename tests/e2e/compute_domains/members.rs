//! Members join and leave a running domain: the daemons are told with
//! SIGUSR1, never restarted, and what a workload imported stays valid; a
//! member's bad entry is skipped, not the others'. The import a workload
//! holds (tests/tools/fake-imex-workload) is lost only when its exporter's
//! daemon restarts, as the stand-in, like IMEX, ends exports on shutdown.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use gpuslice::compute_domains::{DomainError, Domains};
use gpuslice::supervise::DaemonState;
use gpuslice::supervise::process::kill_pid;

use super::node::{CLIQUE, DOMAIN, Node, UID_A, UID_B, UID_C, claim, members, tools, wait_until};

const A: &str = "127.0.31.21";
const B: &str = "127.0.31.22";
const C: &str = "127.0.31.23";

/// The pid of the domain's daemon on `domains`.
fn pid(domains: &Domains) -> u32 {
    domains
        .running(DOMAIN)
        .and_then(|r| r.daemon().status().pid)
        .expect("a running daemon")
}

/// Whether the domain on `domains` is READY, knows its members and is
/// connected to all of them.
fn settled(domains: &Domains) -> bool {
    domains
        .list()
        .first()
        .is_some_and(|d| d.ready() && d.seen.knows && d.seen.connected.is_ok())
}

/// A workload on `node` holding an import of `handle` from member `from`.
fn importer(tools: &std::path::Path, node: &Node, from: &str, handle: &str) -> Child {
    let config = node.folder(DOMAIN).join("imexd.cfg");
    let mut child = Command::new(tools.join("fake-imex-workload"))
        .arg("-c")
        .arg(&config)
        .args(["import", from, handle])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("workload");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("its first line");
    assert!(
        line.starts_with("imported"),
        "the workload imported: {line:?}"
    );
    child
}

fn export(tools: &std::path::Path, node: &Node, handle: &str) {
    let config = node.folder(DOMAIN).join("imexd.cfg");
    let out = Command::new(tools.join("fake-imex-workload"))
        .arg("-c")
        .arg(&config)
        .args(["export", handle])
        .output()
        .expect("export");
    assert!(out.status.success(), "export: {out:?}");
}

#[test]
fn sim_members_join_and_leave_without_a_restart_and_imports_stay() {
    let Some(tools) = tools("sim_members_join_and_leave_without_a_restart") else {
        return;
    };
    let (one, two, three) = (
        Node::new(&tools, A, Some(CLIQUE), ""),
        Node::new(&tools, B, Some(CLIQUE), ""),
        Node::new(&tools, C, Some(CLIQUE), ""),
    );
    let (d1, d2, d3) = (one.engine(), two.engine(), three.engine());
    d1.prepare(&claim(UID_A, 0, DOMAIN)).expect("node 1");
    d2.prepare(&claim(UID_B, 0, DOMAIN)).expect("node 2");
    let pair = members(&[(0, A), (1, B)]);
    for d in [&d1, &d2] {
        let (changed, skipped) = d.set_members(DOMAIN, &pair).expect("members");
        assert!(changed && skipped.is_empty(), "{skipped:?}");
    }
    assert!(!d1.set_members(DOMAIN, &pair).expect("same").0, "unchanged");
    wait_until("two members connected", || settled(&d1) && settled(&d2));
    let (pid1, pid2) = (pid(&d1), pid(&d2));
    export(&tools, &one, "weights");
    let mut workload = importer(&tools, &two, "compute-domain-daemon-0000", "weights");

    // A third node joins: the two are told, not restarted.
    d3.prepare(&claim(UID_C, 0, DOMAIN)).expect("node 3");
    let trio = members(&[(0, A), (1, B), (2, C)]);
    for d in [&d1, &d2, &d3] {
        assert!(d.set_members(DOMAIN, &trio).expect("members").0);
    }
    wait_until("three members connected", || {
        for d in [&d1, &d2] {
            let seen = &d.list()[0].seen;
            assert!(d.list()[0].ready(), "a member stays READY: {seen:?}");
            assert_eq!(seen.status.state, DaemonState::Running);
        }
        settled(&d1) && settled(&d2) && settled(&d3)
    });
    assert_eq!((pid(&d1), pid(&d2)), (pid1, pid2), "no member restarted");
    assert!(one.record().contains("usr1 resolved"), "{}", one.record());
    assert!(two.record().contains("usr1 resolved"), "{}", two.record());
    assert_eq!(
        one.record().matches("start ").count(),
        1,
        "{}",
        one.record()
    );
    assert!(
        workload.try_wait().expect("workload").is_none(),
        "the import held"
    );

    // The third leaves.
    assert!(d3.unprepare(UID_C).expect("node 3 off"));
    for d in [&d1, &d2] {
        assert!(d.set_members(DOMAIN, &pair).expect("members").0);
    }
    wait_until("two members again", || settled(&d1) && settled(&d2));
    assert_eq!((pid(&d1), pid(&d2)), (pid1, pid2), "no member restarted");
    assert!(
        workload.try_wait().expect("workload").is_none(),
        "the import held"
    );

    // gpusliced restarts on node 1: the daemon it told is found knowing its
    // members (no new signal needed), and nothing it exported is lost.
    drop(d1);
    let d1 = one.engine();
    assert!(
        d1.list()[0].seen.knows,
        "told by the gpusliced before: {:?}",
        d1.list()[0].seen
    );
    assert_eq!(pid(&d1), pid1, "taken over");
    wait_until("connected after the restart", || settled(&d1));
    assert!(
        workload.try_wait().expect("workload").is_none(),
        "the import held"
    );

    // What a restart would do, and the old design did on every change: the
    // exporter's daemon restarts, the import is gone.
    kill_pid(pid1);
    let status = workload.wait().expect("the workload ends");
    assert!(!status.success(), "the workload lost its import");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut workload.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert!(err.contains("invalid resource handle"), "{err}");

    assert!(d1.unprepare(UID_A).expect("node 1 off"));
    assert!(d2.unprepare(UID_B).expect("node 2 off"));
    let err = d1.set_members(DOMAIN, &pair).expect_err("not a member");
    assert!(matches!(err, DomainError::NotMember { .. }), "{err}");
}

#[test]
fn sim_a_bad_member_is_skipped_and_the_others_taken() {
    let Some(tools) = tools("sim_a_bad_member_is_skipped") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.31", Some(CLIQUE), "");
    let domains = node.engine();
    domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    let (changed, skipped) = domains
        .set_members(
            DOMAIN,
            &members(&[
                (0, "127.0.31.31"),
                (1, ""),
                (2, "10.9.9.9"),
                (3, "127.0.31.33"),
                (40, "127.0.31.34"),
            ]),
        )
        .expect("members");
    assert!(changed);
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    let mapping = &domains.list()[0].seen.mapping;
    assert_eq!(mapping.keys().copied().collect::<Vec<_>>(), [0, 3]);
    let hosts = std::fs::read_to_string(node.folder(DOMAIN).join("hosts")).expect("hosts");
    assert!(
        hosts.contains("127.0.31.33\tcompute-domain-daemon-0003\n"),
        "{hosts}"
    );
    assert!(!hosts.contains("10.9.9.9"), "{hosts}");
    assert!(domains.unprepare(UID_A).expect("unprepared"));
}

#[test]
fn sim_a_killed_daemon_comes_back_and_a_restart_of_gpusliced_takes_it_over() {
    let Some(tools) = tools("sim_a_killed_daemon_comes_back") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.41", Some(CLIQUE), "");
    let domains = node.engine();
    domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    let first = pid(&domains);
    kill_pid(first);
    wait_until("restarted", || {
        let status = domains.running(DOMAIN).expect("running").daemon().status();
        status.restarts == 1 && status.state == DaemonState::Running && status.pid != Some(first)
    });
    wait_until("started again", || {
        node.record().matches("start ").count() == 2
    });
    wait_until("ready again", || domains.list()[0].ready());
    let second = pid(&domains);
    let starts = node.record().matches("start ").count();
    drop(domains);
    let domains = node.engine();
    assert_eq!(pid(&domains), second, "taken over, not started again");
    assert_eq!(node.record().matches("start ").count(), starts);
    assert!(node.spec(UID_A).is_some());
    assert!(domains.unprepare(UID_A).expect("unprepared"));
    assert!(!gpuslice::supervise::process::pid_alive(second));
}
