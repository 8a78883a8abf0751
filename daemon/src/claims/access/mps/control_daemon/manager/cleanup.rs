//! Start-up cleanup: daemons, units, mounts and folders of claims that are
//! gone are stopped before any acquire; the live ones keep running. What
//! was stopped is returned with the devices it covered (from the folder's
//! key file), so the engine can put their compute mode back.

use std::collections::BTreeSet;

use super::super::MpsError;
use super::super::folders::DaemonFolders;
use super::super::key::MpsKey;
use super::MpsManager;

/// A daemon stopped at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleDaemon {
    /// Its key hash (folder and unit name).
    pub hash: String,
    /// The UUIDs it covered, from its key file; empty when the folder had
    /// none (a unit found without its folder, or a folder cut short).
    pub devices: Vec<String>,
}

impl MpsManager {
    /// At start-up, before any acquire: stops every daemon, unit, mount and
    /// folder not of `live` keys (the keys of claims still prepared). The
    /// live ones keep running and are taken over by their next `acquire`.
    pub fn cleanup_stale(&self, live: &[MpsKey]) -> Result<Vec<StaleDaemon>, MpsError> {
        let live: BTreeSet<String> = live.iter().map(MpsKey::hash).collect();
        let mut stale = BTreeSet::new();
        match std::fs::read_dir(&self.settings.mps_dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    stale.insert(entry.file_name().to_string_lossy().into_owned());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(MpsError::Io {
                    action: "list",
                    path: self.settings.mps_dir.clone(),
                    error,
                });
            }
        }
        stale.extend(self.supervisor.running_hashes(&self.settings.mps_dir)?);
        stale.retain(|hash| !live.contains(hash));
        let mut stopped = Vec::new();
        for hash in stale {
            let folders = DaemonFolders::at(self.settings.mps_dir.join(&hash));
            let devices = folders.read_key();
            tracing::info!(daemon = %hash, "stopping an MPS control daemon left from a claim that is gone");
            self.supervisor.stop_stale(&hash, &folders, &|| {
                let _ = self.control.send(&folders, "quit");
            })?;
            crate::crash::crash_point("mps.after_stale_stopped");
            self.remove(&folders)?;
            stopped.push(StaleDaemon { hash, devices });
        }
        Ok(stopped)
    }
}
