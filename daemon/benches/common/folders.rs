//! What the benches share around their figures: the folder a bench works
//! in (under `GPUSLICE_BENCH_DIR`, else the cargo target dir, so a bench
//! measures the disk the build is on, not a tmpfs), and the nearest-rank
//! percentile of sorted samples.

use std::path::{Path, PathBuf};

/// The cargo target dir: a bench runs as `<target>/release/deps/<name>-*`;
/// the temp dir when that cannot be told.
pub fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}

/// A fresh folder named `<prefix>…` under `GPUSLICE_BENCH_DIR` (else the
/// target dir), removed when the guard drops.
pub fn work_dir(prefix: &str) -> tempfile::TempDir {
    let parent = std::env::var_os("GPUSLICE_BENCH_DIR").map_or_else(target_dir, PathBuf::from);
    std::fs::create_dir_all(&parent).expect("cannot create the bench folder's parent");
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&parent)
        .expect("cannot create the bench folder")
}

/// The nearest-rank percentile `p` (0..=100) of `sorted`; the default of
/// `T` when there is none.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: usize) -> T {
    let rank = (p * sorted.len()).div_ceil(100);
    sorted
        .get(rank.saturating_sub(1))
        .copied()
        .unwrap_or_default()
}

/// Prints the work dir and its filesystem (`df -T`): the disk is part of
/// every figure a bench that writes prints.
pub fn print_work_dir(base: &Path) {
    println!("work dir: {}", base.display());
    let df = std::process::Command::new("df")
        .args(["-T", "-h"])
        .arg(base)
        .output();
    match df {
        Ok(out) if out.status.success() => print!("{}", String::from_utf8_lossy(&out.stdout)),
        _ => println!("(df -T unavailable; filesystem unknown)"),
    }
}
