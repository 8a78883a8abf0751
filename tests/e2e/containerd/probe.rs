//! What runs in each container and what the test reads back: a shell probe
//! that prints one `key:value` line per fact (the GPU env, every NVIDIA
//! device node with its numbers, the driver and MPS mounts, the MPS pipe
//! folder's entries, a file of the daemon's shm), then becomes a long sleep,
//! the container's process that gpusliced must attribute to the claim.
//! containerd writes the lines to the container's log in the CRI format
//! (`<time> stdout F <line>`); the test waits for the probe's last line.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::node::host_numbers;

/// The probe, as `sh -c` runs it.
pub const PROBE: &str = r#"
env | grep -e '^NVIDIA_' -e '^CUDA_' -e '^GPUSLICE_' | sed 's/^/env:/'
for n in /dev/nvidia* /dev/nvidia-caps/*; do
  [ -c "$n" ] && stat -c "node:%n %t:%T" "$n"
done
while read -r dev mnt fs opts rest; do
  case "$mnt" in /usr/lib/x86_64-linux-gnu/*|/usr/bin/nvidia-smi|/dev/shm) echo "mount:$mnt ${opts%%,*}";; esac
  if [ -n "$CUDA_MPS_PIPE_DIRECTORY" ] && [ "$mnt" = "$CUDA_MPS_PIPE_DIRECTORY" ]; then
    echo "mount:pipe ${opts%%,*}"
  fi
done < /proc/mounts
echo "lib:$(cat /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)"
if [ -n "$CUDA_MPS_PIPE_DIRECTORY" ]; then
  for f in "$CUDA_MPS_PIPE_DIRECTORY"/*; do echo "pipe:${f##*/}"; done
  echo "shm:$(cat /dev/shm/probe)"
fi
echo probe:done
exec sleep 2147483647
"#;

/// Upper bound for a container's output; only a hung runtime reaches it.
const BOUND: Duration = Duration::from_secs(60);

/// The probe's lines from the CRI log at `path`, once it has printed them
/// all.
pub async fn output(path: &Path) -> Vec<String> {
    let began = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| l.splitn(4, ' ').nth(3))
            .map(str::to_owned)
            .collect();
        if lines.iter().any(|l| l == "probe:done") {
            return lines;
        }
        assert!(
            began.elapsed() < BOUND,
            "no probe output in {} within {BOUND:?}; so far:\n{text}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `node:` lines a container of `ids` must show, exactly: every device
/// node of the spec's common edits and of those devices, with the numbers
/// of the host node behind it.
pub fn expected_nodes(spec: &Value, ids: &[String]) -> BTreeSet<String> {
    let names: Vec<&str> = ids
        .iter()
        .filter_map(|id| id.split_once('=').map(|(_, name)| name))
        .collect();
    let devices = spec["devices"].as_array().into_iter().flatten();
    let edits = std::iter::once(&spec["containerEdits"]).chain(
        devices
            .filter(|d| d["name"].as_str().is_some_and(|n| names.contains(&n)))
            .map(|d| &d["containerEdits"]),
    );
    edits
        .flat_map(|e| e["deviceNodes"].as_array().into_iter().flatten())
        .map(|node| {
            let path = node["path"].as_str().unwrap_or_default();
            let host = node["hostPath"].as_str().unwrap_or(path);
            format!("node:{path} {}", host_numbers(Path::new(host)))
        })
        .collect()
}

/// The `node:` lines the container printed.
pub fn nodes(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("node:"))
        .cloned()
        .collect()
}

/// The `env:` lines, as `NAME=value`.
pub fn env(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("env:"))
        .map(str::to_owned)
        .collect()
}
