//! The simulated node behind this library, opened at the first `nvmlInit`:
//! gpuslice's own simulator ([`SimBackend`]), configured as gpusliced's
//! `[backend.sim]` would configure it, from a gpuslice.toml.
//!
//! Which file: `$GPUSLICE_NVML_SIM_CONFIG`, else `gpuslice-nvml-sim.toml`
//! in the folder of this library's file (found in `/proc/self/maps`, so a
//! copy of the library next to its config needs no variable: what
//! nvidia-smi finds on `LD_LIBRARY_PATH` and what gpusliced's
//! `[backend.nvml] library` names read the same node). Its `[backend.sim]`
//! is read whatever `[backend] kind` says, so the config of a gpusliced
//! running on this library is itself a config of the library. The
//! hardware state goes to `[backend.sim] hardware_state` (default beside
//! the socket), shared with every other process that opens the same
//! config: the simulator locks and re-reads it on every call.
//! `GPUSLICE_SIM_FAULTS` arms the simulator's faults as it does in
//! gpusliced (a latency inside a create, a GPU that fails);
//! `GPUSLICE_NVML_SIM_DRIVER` makes the library play another driver
//! version ([`DRIVER_ENV`]).
//!
//! Owns the init count (NVML counts `nvmlInit` against `nvmlShutdown`;
//! a call between a last shutdown and the next init is UNINITIALIZED) and
//! the GPUs the health events said were lost (answering GPU_IS_LOST until
//! one is said to be recovered). The node stays open for the life of the
//! process, as handles a client kept stay valid across a re-init.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use gpuslice::config::Config;
use gpuslice::gpu::GpuError;
use gpuslice::gpu::sim::SimBackend;

use crate::code::{Answer, DRIVER_NOT_LOADED, GPU_IS_LOST, UNINITIALIZED};

/// The variable naming the config file.
pub const CONFIG_ENV: &str = "GPUSLICE_NVML_SIM_CONFIG";

/// The config's name beside the library when the variable is not set.
pub const CONFIG_BESIDE: &str = "gpuslice-nvml-sim.toml";

/// The variable naming another driver version for the library to play
/// (the simulator's own, `gpu::sim::DRIVER_VERSION`, otherwise): what
/// `nvmlSystemGetDriverVersion` answers, and which struct versions the
/// calls accept (a driver before 570 knows no fabric info v3).
pub const DRIVER_ENV: &str = "GPUSLICE_NVML_SIM_DRIVER";

/// The first driver branch that takes `nvmlGpuFabricInfo_v3`: an
/// assumption (CUDA 12.4's header, the 550 drivers', ends at v2).
const FABRIC_V3_FROM: u32 = 570;

/// The node, and what NVML keeps beside the hardware.
#[derive(Debug)]
pub struct Node {
    /// The simulated GPUs.
    pub sim: SimBackend,
    /// The config it was opened from.
    pub config: PathBuf,
    /// The driver version played, where not the simulator's.
    driver: Option<String>,
    lost: Mutex<BTreeSet<u32>>,
}

static NODE: OnceLock<Result<Node, String>> = OnceLock::new();
static INITS: AtomicU32 = AtomicU32::new(0);

impl Node {
    /// The driver version the library plays.
    pub fn driver_version(&self) -> String {
        self.driver
            .clone()
            .unwrap_or_else(|| gpuslice::gpu::sim::DRIVER_VERSION.to_owned())
    }

    /// Whether the driver played takes `nvmlGpuFabricInfo_v3`.
    pub fn takes_fabric_v3(&self) -> bool {
        let major = self
            .driver_version()
            .split('.')
            .next()
            .map(str::parse::<u32>);
        major.is_none_or(|m| m.map_or(true, |m| m >= FABRIC_V3_FROM))
    }

    /// Whether GPU `index` fell off the bus (a `lost` health event).
    pub fn is_lost(&self, index: u32) -> bool {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&index)
    }

    /// GPU_IS_LOST for a lost GPU.
    pub fn answering(&self, index: u32) -> Answer<()> {
        if self.is_lost(index) {
            Err(GPU_IS_LOST)
        } else {
            Ok(())
        }
    }

    /// Records that GPU `index` is lost (`true`) or answers again.
    pub fn set_lost(&self, index: u32, lost: bool) {
        let mut set = self.lost.lock().unwrap_or_else(PoisonError::into_inner);
        if lost {
            set.insert(index);
        } else {
            set.remove(&index);
        }
    }
}

/// `nvmlInit`: opens the node the first time, and counts the init.
/// DRIVER_NOT_LOADED, with the reason on stderr once, where the config
/// cannot be found or read, or the simulator refuses it (as the real
/// library answers where no driver runs).
pub fn init() -> Answer<()> {
    match NODE.get_or_init(open) {
        Ok(_) => {
            INITS.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        Err(_) => Err(DRIVER_NOT_LOADED),
    }
}

/// `nvmlShutdown`: UNINITIALIZED when not initialised.
pub fn shutdown() -> Answer<()> {
    (INITS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)))
        .map(drop)
        .map_err(|_| UNINITIALIZED)
}

/// The node, for a call made between an init and its shutdown.
pub fn node() -> Answer<&'static Node> {
    if INITS.load(Ordering::SeqCst) == 0 {
        return Err(UNINITIALIZED);
    }
    match NODE.get() {
        Some(Ok(node)) => Ok(node),
        _ => Err(UNINITIALIZED),
    }
}

fn open() -> Result<Node, String> {
    let opened = config_path().and_then(|config| {
        let parsed = Config::load(&config).map_err(|err| err.to_string())?;
        let sim = open_sim(&parsed).map_err(|err| err.to_string())?;
        Ok(Node {
            sim,
            config,
            driver: std::env::var(DRIVER_ENV).ok().filter(|v| !v.is_empty()),
            lost: Mutex::new(BTreeSet::new()),
        })
    });
    if let Err(why) = &opened {
        eprintln!("gpuslice-nvml-sim: no simulated node, so no driver: {why}");
    }
    opened
}

/// The simulated node as gpusliced's `[backend] kind = "sim"` opens it
/// (`run::start::open_backend`): the models, seed and hardware state, the
/// health events file and process folder, then the instance's shape or
/// the NUMA nodes.
pub fn open_sim(config: &Config) -> Result<SimBackend, GpuError> {
    let sim = &config.backend.sim;
    let backend = SimBackend::open(sim.models(), &sim.seed, &config.sim_hardware_state())?
        .with_health_events(&config.sim_health_events())
        .with_processes_dir(&config.sim_processes());
    Ok(match sim.shape() {
        Some(shape) => backend.with_instance(shape, &sim.fabric()),
        None => backend.with_numa_nodes(sim.numa_nodes()),
    })
}

/// The config this crate's own tests open (they cannot set the variable:
/// the environment is shared by their threads).
#[cfg(test)]
pub static TEST_CONFIG: OnceLock<PathBuf> = OnceLock::new();

/// The config file: the variable's, else the one beside this library.
fn config_path() -> Result<PathBuf, String> {
    #[cfg(test)]
    if let Some(path) = TEST_CONFIG.get() {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let library = own_file().ok_or_else(|| {
        format!("{CONFIG_ENV} is not set and this library's own file is not in /proc/self/maps")
    })?;
    let beside = library
        .parent()
        .unwrap_or(Path::new("/"))
        .join(CONFIG_BESIDE);
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!(
            "{CONFIG_ENV} is not set and there is no {} beside {}",
            CONFIG_BESIDE,
            library.display()
        ))
    }
}

/// This library's file, as the dynamic loader mapped it: the mapping of
/// `/proc/self/maps` that holds this very function's code.
fn own_file() -> Option<PathBuf> {
    let here = (own_file as fn() -> Option<PathBuf> as *const ()).addr();
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| mapping_of(line, here))
}

/// The file of one `/proc/self/maps` line when its range holds `address`.
fn mapping_of(line: &str, address: usize) -> Option<PathBuf> {
    let (range, _) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    if !(start..end).contains(&address) {
        return None;
    }
    // The path is the rest of the line from its first " /" (it may hold
    // blanks; the fields before it never hold a slash).
    let at = line.find(" /")?;
    Some(PathBuf::from(line.get(at + 1..)?))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{mapping_of, own_file};

    #[test]
    fn a_mapping_names_its_file() {
        let line = "7f12a000-7f12b000 r-xp 00001000 08:01 1234   /tmp/a b/libnvidia-ml.so.1";
        assert_eq!(
            mapping_of(line, 0x7f12_a800),
            Some(PathBuf::from("/tmp/a b/libnvidia-ml.so.1"))
        );
        assert_eq!(mapping_of(line, 0x7f12_b000), None);
        assert_eq!(
            mapping_of("7f12a000-7f12b000 rw-p 0 0:0 0", 0x7f12_a800),
            None
        );
    }

    #[test]
    fn the_test_binary_finds_its_own_file() {
        let file = own_file().expect("this code is mapped from a file");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(file.file_name(), exe.file_name());
    }
}
