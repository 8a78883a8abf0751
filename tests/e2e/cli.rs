//! What a command-line user meets, on the real binaries: gpuslicectl's
//! answer when it cannot reach gpusliced (the socket tried, whether
//! gpusliced seems to run, `--socket` / `GPUSLICE_SOCKET`, the OS error
//! once), `GPUSLICE_SOCKET` itself, `gpusliced --check-config` on problems
//! start-up would only warn about, each binary's `--version`, and the man
//! pages and completions each binary writes for the packages.
//! gpuslice-dra-plugin's version and files: dra-plugin/tests/cli.rs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::harness::{Daemon, answered, gpusliced_binary, write_config};

/// gpusliced and gpuslicectl (gpuslice-dra-plugin's are checked by
/// dra-plugin/tests/cli.rs).
const BINARIES: [&str; 2] = ["gpusliced", "gpuslicectl"];

/// The binary cargo built for this test, or (gpuslicectl) built from its
/// own package.
fn binary(name: &str) -> std::path::PathBuf {
    match name {
        "gpusliced" => gpusliced_binary(),
        _ => crate::binaries::gpuslicectl(),
    }
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out: Output = cmd.output().expect("run the binary");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `gpuslicectl status`, with no GPUSLICE_SOCKET but what `env` sets.
fn ctl(args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(binary("gpuslicectl"));
    cmd.env_remove("GPUSLICE_SOCKET").args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    run(&mut cmd)
}

/// The way out every connection failure names, once.
fn names_the_way_out(stderr: &str, socket: &Path) {
    let tried = format!(
        "gpuslicectl: cannot connect to gpusliced at {}: ",
        socket.display()
    );
    assert!(stderr.starts_with(&tried), "{stderr}");
    assert_eq!(
        stderr
            .matches("--socket PATH or GPUSLICE_SOCKET=PATH")
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn sim_a_missing_socket_is_named_with_the_way_out_and_the_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gpusliced.sock");
    let (code, _, stderr) = ctl(&["status", "--socket", socket.to_str().unwrap()], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    names_the_way_out(&stderr, &socket);
    assert!(
        stderr.contains("no such socket; gpusliced is not running"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("os error"),
        "the OS error is said in words: {stderr}"
    );
    assert!(!stderr.contains("transport error"), "{stderr}");
}

#[test]
fn sim_a_stale_socket_says_gpusliced_is_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gpusliced.sock");
    // A socket file nobody listens on, as a killed daemon leaves it.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let (code, _, stderr) = ctl(&["health"], &[("GPUSLICE_SOCKET", &socket)]);
    assert_eq!(code, Some(1), "{stderr}");
    names_the_way_out(&stderr, &socket);
    assert!(
        stderr.contains("connection refused; the socket is stale"),
        "{stderr}"
    );
}

#[test]
fn sim_a_socket_closed_to_the_user_says_who_may_call() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run gpuslicectl as nobody");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.path().join("gpusliced.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o660)).unwrap();
    let (code, _, stderr) = run(Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(binary("gpuslicectl"))
        .env("GPUSLICE_SOCKET", &socket)
        .arg("status"));
    assert_eq!(code, Some(1), "{stderr}");
    names_the_way_out(&stderr, &socket);
    assert!(
        stderr.contains("permission denied; run as root or as a member of group root"),
        "the socket's own group: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_gpusliced_socket_names_the_socket_of_every_command() {
    let daemon = Daemon::start(1);
    let env = [("GPUSLICE_SOCKET", daemon.socket.as_path())];
    let (code, out, err) = ctl(&["status"], &env);
    assert!(code.is_some_and(|c| c == 0 || c == 3), "{err}");
    assert!(out.contains("backend        sim"), "{out}");
    let (code, out, err) = ctl(&["inventory", "--output", "json"], &env);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"gpu-0\""), "{out}");
    // The flag wins over the variable, before or after the command.
    let elsewhere = daemon.dir.path().join("elsewhere.sock");
    let bad = [("GPUSLICE_SOCKET", elsewhere.as_path())];
    let socket = daemon.socket.to_str().unwrap();
    let mut status = Command::new(binary("gpuslicectl"));
    status
        .env("GPUSLICE_SOCKET", &elsewhere)
        .args(["--socket", socket, "status"]);
    assert!(answered(&status.output().unwrap().status));
    assert_eq!(ctl(&["mig", "--socket", socket], &bad).0, Some(0));
    let (code, _, err) = ctl(&["mig"], &bad);
    assert_eq!(code, Some(1));
    names_the_way_out(&err, &elsewhere);
}

/// `gpusliced --config <config> --check-config`: its exit code, stdout and
/// stderr.
fn check_config(config: &Path) -> (Option<i32>, String, String) {
    run(Command::new(gpusliced_binary())
        .arg("--config")
        .arg(config)
        .arg("--check-config"))
}

#[test]
fn sim_check_config_fails_on_a_layout_that_cannot_be_placed() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 0\n\
                 layout = [\"7g.80gb\", \"3g.40gb\"]\n";
    let config = write_config(dir.path(), 1, "");
    // The harness puts its extra text before [backend]: append [mig] after.
    let text = std::fs::read_to_string(&config).unwrap() + extra;
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", text.as_bytes(), 0o644)
        .unwrap();
    let check = || check_config(&config);
    let (code, out, stderr) = check();
    assert_eq!(code, Some(1), "{out}{stderr}");
    assert!(out.is_empty(), "no `ok`: {out}");
    assert!(
        stderr.starts_with(
            "gpusliced: config key mig.gpu.layout: gpu-0 (H100-80GB): layout cannot be offered: "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 problem(s); fix them and check again"),
        "{stderr}"
    );

    let fine = text.replace("\"7g.80gb\", \"3g.40gb\"", "\"3g.40gb\", \"3g.40gb\"");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", fine.as_bytes(), 0o644)
        .unwrap();
    let (code, out, stderr) = check();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(out, format!("{}: ok\n", config.display()));

    let typo = format!("socket_grup = \"x\"\n{fine}");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", typo.as_bytes(), 0o644)
        .unwrap();
    assert_eq!(check().0, Some(2), "a file that does not load stays 2");
}

#[test]
fn sim_check_config_names_a_missing_tool_and_what_nvml_leaves_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gpuslice.toml");
    let text = "driver_root = \".\"\n[mps]\ncontrol_program = \"no-such-mps-control\"\n\
                [mig]\n[[mig.gpu]]\nlayout = [\"1g.10gb\"]\n";
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", text.as_bytes(), 0o644)
        .unwrap();
    let check = || check_config(&config);
    let (code, _, stderr) = check();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("config key mps.control_program: ")
            && stderr.contains("no-such-mps-control cannot be used"),
        "{stderr}"
    );
    let text = text.replace("no-such-mps-control", "gpuslice.toml");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", text.as_bytes(), 0o755)
        .unwrap();
    let (code, out, stderr) = check();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.starts_with(&format!("{}: ok\nnot checked: ", config.display())),
        "{out}"
    );
    assert!(out.contains("needs the GPUs' models"), "{out}");
}

#[test]
fn each_binary_names_itself_and_its_commit_in_its_version() {
    for name in BINARIES {
        let (code, out, err) = run(Command::new(binary(name)).arg("--version"));
        assert_eq!(code, Some(0), "{name}: {err}");
        let rest = out
            .strip_prefix(&format!("{name} "))
            .unwrap_or_else(|| panic!("{name}: {out:?}"));
        let (version, commit) = rest.trim_end().split_once(' ').expect("version (commit)");
        assert_eq!(version, env!("CARGO_PKG_VERSION"), "{out:?}");
        let commit = commit
            .strip_prefix('(')
            .and_then(|c| c.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{out:?}"));
        let hex = commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit());
        assert!(hex || commit == "unknown", "{out:?}");
    }
}

#[test]
fn each_binary_writes_its_man_page_and_completions() {
    for name in BINARIES {
        let generate = |kind: &str| {
            let (code, out, err) = run(Command::new(binary(name)).args(["--generate", kind]));
            assert_eq!(code, Some(0), "{name} {kind}: {err}");
            out
        };
        let page = generate("man");
        let title = format!(".TH {} 8 ", name.to_uppercase().replace('-', "\\-"));
        assert!(page.contains(&title), "{name}:\n{page}");
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH \"EXIT STATUS\"",
            ".SH FILES",
        ] {
            assert!(page.contains(section), "{name} lacks {section}");
        }
        assert!(
            generate("complete-bash")
                .contains(&format!("complete -F _{}", name.replace('-', "__"))),
            "{name}"
        );
        assert!(
            generate("complete-zsh").starts_with(&format!("#compdef {name}")),
            "{name}"
        );
        assert!(
            generate("complete-fish").contains(&format!("complete -c {name}")),
            "{name}"
        );
    }
    // gpuslicectl's: every command a user types (the full checks are the
    // binaries' unit tests, on their clap definitions).
    let bash = run(Command::new(binary("gpuslicectl")).args(["--generate", "complete-bash"])).1;
    for command in [
        "status",
        "inventory",
        "claims",
        "top",
        "mig",
        "sharing",
        "health",
        "clear",
        "prepare",
        "unprepare",
        "match",
        "sim",
        "exec",
    ] {
        assert!(bash.contains(command), "{command}");
    }
}
