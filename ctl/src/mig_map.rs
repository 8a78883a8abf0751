//! `gpuslicectl mig`: per GPU, a one-line map of its memory slices (one letter
//! per GPU instance, `.` for a free slice) and a row per instance saying
//! profile, slices, holder and whether gpusliced made it.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};

const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The map of every GPU, or the same as JSON.
pub fn render(reply: &pb::GetMigLayoutResponse, json: bool) -> String {
    if json {
        let gpus: Vec<Value> = reply.gpus.iter().map(gpu_json).collect();
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&json!({ "gpus": gpus })).unwrap_or_default()
        );
    }
    reply
        .gpus
        .iter()
        .map(gpu_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn letter(i: usize) -> char {
    LETTERS
        .get(i % LETTERS.len())
        .map_or('?', |b| char::from(*b))
}

fn gpu_text(gpu: &pb::GpuMigLayout) -> String {
    let mut out = format!("{} {}  MIG {}\n", gpu.device, gpu.uuid, gpu.mig_mode);
    if gpu.memory_slices == 0 {
        return out;
    }
    let mut cells = vec!['.'; usize::try_from(gpu.memory_slices).unwrap_or(0)];
    for (i, inst) in gpu.instances.iter().enumerate() {
        let start = usize::try_from(inst.placement_start).unwrap_or(usize::MAX);
        let size = usize::try_from(inst.placement_size).unwrap_or(0);
        for cell in cells.iter_mut().skip(start).take(size) {
            *cell = letter(i);
        }
    }
    let numbers: Vec<String> = (0..cells.len()).map(|i| i.to_string()).collect();
    let map: Vec<String> = cells.iter().map(char::to_string).collect();
    out.push_str(&format!("  slice  {}\n", numbers.join(" ")));
    out.push_str(&format!("         {}\n", map.join(" ")));
    for (i, inst) in gpu.instances.iter().enumerate() {
        let end = inst.placement_start.saturating_add(inst.placement_size);
        let holder = if inst.holder.is_empty() {
            "free".to_owned()
        } else {
            format!("claim {}", inst.holder)
        };
        let origin = if inst.created_by_daemon {
            "made for the claim"
        } else if inst.device.is_empty() {
            "not gpusliced's"
        } else {
            "pre-made"
        };
        out.push_str(&format!(
            "  {}  gi {:<2} {:<12} slices {}-{}  {}  {}  {}\n",
            letter(i),
            inst.gpu_instance_id,
            inst.profile,
            inst.placement_start,
            end.saturating_sub(1),
            holder,
            origin,
            inst.uuid
        ));
    }
    out
}

fn gpu_json(gpu: &pb::GpuMigLayout) -> Value {
    let instances: Vec<Value> = gpu
        .instances
        .iter()
        .map(|i| {
            json!({
                "gpuInstance": i.gpu_instance_id, "computeInstance": i.compute_instance_id,
                "profile": i.profile, "placementStart": i.placement_start,
                "placementSize": i.placement_size, "uuid": i.uuid, "device": i.device,
                "holder": i.holder, "createdByDaemon": i.created_by_daemon,
            })
        })
        .collect();
    json!({
        "device": gpu.device, "uuid": gpu.uuid, "index": gpu.index, "migMode": gpu.mig_mode,
        "memorySlices": gpu.memory_slices, "instances": instances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_shows_instances_by_letter_and_free_slices_as_dots() {
        let reply = pb::GetMigLayoutResponse {
            gpus: vec![pb::GpuMigLayout {
                device: "gpu-0".into(),
                uuid: "GPU-1".into(),
                index: 0,
                mig_mode: "enabled".into(),
                memory_slices: 8,
                instances: vec![
                    pb::MigInstance {
                        gpu_instance_id: 2,
                        profile: "3g.40gb".into(),
                        placement_start: 4,
                        placement_size: 4,
                        holder: "aaaa".into(),
                        created_by_daemon: true,
                        device: "gpu-0-mig-3g40gb-4".into(),
                        ..pb::MigInstance::default()
                    },
                    pb::MigInstance {
                        gpu_instance_id: 9,
                        profile: "1g.10gb".into(),
                        placement_start: 0,
                        placement_size: 1,
                        ..pb::MigInstance::default()
                    },
                ],
            }],
        };
        let text = render(&reply, false);
        assert!(text.contains("B . . . A A A A"), "{text}");
        assert!(text.contains("claim aaaa  made for the claim"), "{text}");
        assert!(text.contains("free  not gpusliced's"), "{text}");
        let doc: Value = serde_json::from_str(&render(&reply, true)).unwrap();
        assert_eq!(doc["gpus"][0]["instances"][0]["placementStart"], 4);
    }
}
