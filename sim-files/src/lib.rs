//! gpuslice-sim-files: the files through which other programs drive
//! gpusliced's simulated GPU backend, so that a program writing them
//! (`gpuslicectl sim exec`, the tests) need not link the daemon. Today one
//! format: the fake GPU processes of the process folder
//! ([`process_file`]). gpusliced's simulator reads them through its
//! `gpu::sim::process_file`, which re-exports this crate.
//!
//! Serde types, their atomic writer (gpuslice-cdi's, the one durable writer)
//! and their reader; no GPU knowledge, no logging (what a reader skips is
//! handed back, for the caller to log).

pub mod process_file;

pub use process_file::{
    Folder, SimFileError, SimProcessFile, Skipped, proc_start_time, process_file_path, read_folder,
    read_live, remove_process_file, write_process_file,
};
