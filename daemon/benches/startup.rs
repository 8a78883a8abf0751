//! Start-to-READY time, idle memory and stop time of the real gpusliced on
//! eight simulated GPUs (the node of examples/gpuslice-sim.toml: six whole GPUs, two in
//! MIG mode with a layout), on an empty node and on a full one (every GPU and
//! slice held by a claim, so start-up reconciles records, specs and slices).
//!
//! Start-to-READY runs from the spawn to the `READY=1` datagram on the
//! sd_notify socket, the same signal systemd's Type=notify waits for. Floors,
//! measured in the same loop: spawning `/bin/true` (a process start and exit)
//! and `gpusliced --check-config` (the same binary loading and validating the
//! same config, then exiting). Memory is VmRSS from /proc at READY and after
//! an idle second, with VmHWM (the peak). See bench/README.md.
//!
//! Env: `GPUSLICE_BENCH_SAMPLES` (default 30), `GPUSLICE_BENCH_DIR` (default a
//! temp folder under the cargo target dir).

#[path = "../../tests/e2e/binaries.rs"]
mod binaries;
#[path = "common/folders.rs"]
#[allow(
    dead_code,
    reason = "shared by the benches; this one prints no work dir"
)]
mod folders;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEFAULT_SAMPLES: usize = 30;
/// The binaries timed: `GPUSLICE_GPUSLICED` / `GPUSLICE_GPUSLICECTL` when
/// set (a release build without the tests' crash points, which cargo turns
/// on for benches too), else the ones cargo built (gpuslicectl from its own
/// package, `binaries`).
fn binary(var: &str, built: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| PathBuf::from(built), PathBuf::from)
}

fn gpusliced() -> PathBuf {
    binary("GPUSLICE_GPUSLICED", env!("CARGO_BIN_EXE_gpusliced"))
}

fn gpuslicectl() -> PathBuf {
    std::env::var_os("GPUSLICE_GPUSLICECTL").map_or_else(binaries::gpuslicectl, PathBuf::from)
}

/// Whether `path` has the crash points compiled in (a test build).
fn has_crash_points(path: &Path) -> bool {
    let needle = gpuslice::crash::ALL[0].as_bytes();
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}
const READY_BOUND: Duration = Duration::from_secs(60);

/// One level's samples.
#[derive(Default)]
struct Samples {
    ready: Vec<Duration>,
    stop: Vec<Duration>,
    rss_ready_kib: Vec<u64>,
    rss_idle_kib: Vec<u64>,
    hwm_kib: Vec<u64>,
    check_config: Vec<Duration>,
    true_floor: Vec<Duration>,
}

fn main() {
    let samples = std::env::var("GPUSLICE_BENCH_SAMPLES")
        .ok()
        .map_or(DEFAULT_SAMPLES, |v| {
            v.parse()
                .expect("GPUSLICE_BENCH_SAMPLES must be a positive integer")
        });
    let dir = folders::work_dir("gpuslice-startup-");
    let config = write_config(dir.path());
    println!(
        "gpuslice start-up bench: {samples} samples per level, {} CPUs, binary {} (crash points {})",
        std::thread::available_parallelism().map_or(0, usize::from),
        gpusliced().display(),
        if has_crash_points(&gpusliced()) {
            "compiled in, unarmed"
        } else {
            "not compiled in"
        }
    );
    println!("folder {}", dir.path().display());
    let empty = run_level(&config, samples);
    print_level("empty node (0 claims)", &empty);
    let claims = fill_node(&config);
    let full = run_level(&config, samples);
    print_level(&format!("full node ({claims} claims)"), &full);
    println!(
        "full vs empty node: start-to-READY p50 {:.2}x, idle RSS p50 {:.2}x",
        ratio(p50(&full.ready), p50(&empty.ready)),
        ratio_kib(p50(&full.rss_idle_kib), p50(&empty.rss_idle_kib)),
    );
}

/// The node of examples/gpuslice-sim.toml, everything under `dir`.
fn write_config(dir: &Path) -> PathBuf {
    let sim_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = {root:?}\n[backend]\nkind = \"sim\"\n[backend.sim]\n\
         gpus = [\"H100-80GB\", \"H100-80GB\", \"H100-80GB\", \"H100-80GB\", \
         \"A100-40GB\", \"A100-40GB\", \"H100-NVL-94GB\", \"H100-NVL-94GB\"]\n\
         [mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n\
         [[mig.gpu]]\nindex = 0\nlayout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n\
         [[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n\
         [log]\nlevel = \"warn\"\n",
        root = sim_root.display().to_string()
    );
    gpuslice_cdi::atomic::write_atomic(dir, "gpuslice.toml", text.as_bytes(), 0o644)
        .expect("write config");
    dir.join("gpuslice.toml")
}

fn run_level(config: &Path, samples: usize) -> Samples {
    let mut out = Samples::default();
    for round in 0..samples {
        // Alternate which floor goes first so both see the same machine.
        if round % 2 == 0 {
            out.true_floor
                .push(time_exit(&mut Command::new("/bin/true")));
        }
        out.check_config.push(time_exit(
            Command::new(gpusliced())
                .arg("--config")
                .arg(config)
                .arg("--check-config"),
        ));
        if round % 2 == 1 {
            out.true_floor
                .push(time_exit(&mut Command::new("/bin/true")));
        }
        let (ready, mut child, notify) = start(config);
        out.ready.push(ready);
        let pid = child.id();
        out.rss_ready_kib.push(status_kib(pid, "VmRSS"));
        #[expect(
            clippy::disallowed_methods,
            reason = "a bench measuring idle memory waits, a test never does"
        )]
        std::thread::sleep(Duration::from_secs(1));
        out.rss_idle_kib.push(status_kib(pid, "VmRSS"));
        out.hwm_kib.push(status_kib(pid, "VmHWM"));
        out.stop.push(stop(&mut child));
        drop(notify);
    }
    out
}

fn time_exit(cmd: &mut Command) -> Duration {
    let begin = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn floor command");
    let took = begin.elapsed();
    assert!(status.success(), "floor command failed: {status}");
    took
}

/// Spawns gpusliced and waits for READY=1; returns the time it took.
fn start(config: &Path) -> (Duration, Child, UnixDatagram) {
    let dir = config.parent().expect("config folder");
    let notify_path = dir.join("notify.sock");
    let _ = std::fs::remove_file(&notify_path);
    let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
    notify
        .set_read_timeout(Some(READY_BOUND))
        .expect("notify timeout");
    let begin = Instant::now();
    let mut child = Command::new(gpusliced())
        .arg("--config")
        .arg(config)
        .env("NOTIFY_SOCKET", &notify_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn gpusliced");
    let mut buf = [0u8; 4096];
    loop {
        let n = match notify.recv(&mut buf) {
            Ok(n) => n,
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no READY=1 from gpusliced: {err}");
            }
        };
        if String::from_utf8_lossy(&buf[..n])
            .lines()
            .any(|l| l == "READY=1")
        {
            return (begin.elapsed(), child, notify);
        }
    }
}

fn stop(child: &mut Child) -> Duration {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    let begin = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait for gpusliced");
    assert!(status.success(), "gpusliced exit: {status}");
    begin.elapsed()
}

/// A `Vm*:` line of /proc/<pid>/status, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Prepares a claim on every slice of the MIG GPUs' layouts and on every
/// whole GPU that offers no slices (taking a MIG GPU whole would switch its
/// MIG mode off and free its slices); returns how many.
fn fill_node(config: &Path) -> usize {
    let (_, mut child, _notify) = start(config);
    let socket = config.with_file_name("gpusliced.sock");
    let ctl = |args: &[&str]| {
        let out = Command::new(gpuslicectl())
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .output()
            .expect("run gpuslicectl");
        assert!(out.status.success(), "gpuslicectl {args:?}: {out:?}");
        out.stdout
    };
    let inventory: serde_json::Value =
        serde_json::from_slice(&ctl(&["--output", "json", "inventory"])).expect("inventory json");
    let names: Vec<String> = inventory["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    let sliced: Vec<&str> = names
        .iter()
        .filter_map(|n| n.split_once("-mig-").map(|(parent, _)| parent))
        .collect();
    let mut claims = 0;
    for (n, name) in names.iter().enumerate() {
        if sliced.contains(&name.as_str()) {
            continue;
        }
        let uid = format!("00000000-0000-4000-8000-{n:012}");
        ctl(&["prepare", "--uid", &uid, "--device", name]);
        claims += 1;
    }
    stop(&mut child);
    claims
}

fn p50<T: Copy + Ord + Default>(v: &[T]) -> T {
    percentile(v, 50)
}

fn p99<T: Copy + Ord + Default>(v: &[T]) -> T {
    percentile(v, 99)
}

/// Nearest-rank percentile of unsorted samples.
fn percentile<T: Copy + Ord + Default>(v: &[T], pct: usize) -> T {
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    folders::percentile(&sorted, pct)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

#[expect(
    clippy::cast_precision_loss,
    reason = "KiB counts far below 2^52 print exactly"
)]
fn ratio_kib(a: u64, b: u64) -> f64 {
    a as f64 / b as f64
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn print_level(name: &str, s: &Samples) {
    println!("\n{name}:");
    println!(
        "  start-to-READY      p50 {:>10}  p99 {:>10}",
        ms(p50(&s.ready)),
        ms(p99(&s.ready))
    );
    println!(
        "  --check-config      p50 {:>10}  p99 {:>10}   READY / check-config p50 {:.1}x",
        ms(p50(&s.check_config)),
        ms(p99(&s.check_config)),
        ratio(p50(&s.ready), p50(&s.check_config))
    );
    println!(
        "  /bin/true           p50 {:>10}  p99 {:>10}   READY / process start p50 {:.1}x",
        ms(p50(&s.true_floor)),
        ms(p99(&s.true_floor)),
        ratio(p50(&s.ready), p50(&s.true_floor))
    );
    println!(
        "  SIGTERM-to-exit     p50 {:>10}  p99 {:>10}",
        ms(p50(&s.stop)),
        ms(p99(&s.stop))
    );
    println!(
        "  RSS at READY p50 {} KiB; idle (1 s later) p50 {} KiB, p99 {} KiB; peak (VmHWM) p50 {} KiB",
        p50(&s.rss_ready_kib),
        p50(&s.rss_idle_kib),
        p99(&s.rss_idle_kib),
        p50(&s.hwm_kib)
    );
}
