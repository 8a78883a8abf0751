//! Upgrades that lose nothing: the real gpusliced adopts what an earlier
//! release left on disk (`tests/fixtures/upgrade/<release>/`, see its
//! README) unchanged.
//!
//! The fixture holds a claim of every kind (exclusive, a whole MIG GPU, MIG
//! slices made at prepare and made ahead, MPS on whole GPUs with a memory
//! share and on a MIG slice, time-slicing), two open warning episodes and
//! two device faults. After a restart in the same boot every record, spec,
//! the MIG ledger and health.json stay byte for byte, the claims keep their
//! CDI ids, slices and holders, the MPS daemons start again under the same
//! key hashes, the faults are still reported and the open episodes are not
//! warned of again. After a reboot the records are re-stamped with the new
//! boot id (and the new MIG UUIDs of their slices, made again at the same
//! placements), and every spec is written again as the fixture has it.
//!
//! A change of an on-disk format (a record field moved, a spec built in
//! another order, a renamed key) fails these tests; the daemon's
//! `claims::tests::upgrade_fixture` checks the same files against today's
//! loaders and writers without starting anything.

mod checks;
mod fixture;
mod survivors;

use std::collections::BTreeMap;

use gpuslice::claims::mps_daemon::MpsKey;
use gpuslice::state::ClaimRecord;
use gpuslice_proto::gpuslice::v1 as pb;

use checks::{
    assert_cdi_ids, assert_episodes_go_on, assert_faults_kept, assert_files, assert_mig_layout,
    assert_mps_daemons, expected_slices, fixture_instances, fixture_keys, prepare_again,
};
use fixture::{Boot, Fixture};
use survivors::{Survivor, Survivors, give_pid, open_episodes, spec_env};

use crate::cdi_schema::assert_all_valid;
use crate::common::queries::Queries;
use crate::stand_ins::SharedDaemon;
use crate::tools::{skip, which};

/// The fixture of the first release.
const V0: &str = "v0";
const MPS_SHARE_A: &str = "66666666-6666-4666-8666-666666666666";
const MIG_AHEAD: &str = "55555555-5555-4555-8555-555555555555";
const GIB: u64 = 1 << 30;

/// A temp folder with a canonical path (the specs' host paths are).
fn node_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().canonicalize().expect("canonical temp dir");
    (dir, path)
}

/// False, after a skip line, where the MPS stand-in cannot run.
fn stand_ins_run(test: &str) -> bool {
    let found = which("python3").is_some();
    if !found {
        skip(
            test,
            "python3 (the stand-in MPS control program's interpreter) is missing",
        );
    }
    found
}

#[test]
fn upgrade_fixture_v0_files_match_their_source_manifest() {
    let fixture = Fixture::new(V0);
    let source = String::from_utf8(fixture.bytes("SOURCE")).expect("SOURCE is text");
    let listed: Vec<(String, String)> = source
        .lines()
        .skip_while(|l| *l != "files (sha256):")
        .skip(1)
        .filter_map(|l| l.trim().split_once("  "))
        .map(|(sum, file)| (file.to_owned(), sum.to_owned()))
        .collect();
    let files = fixture.files();
    assert_eq!(
        listed.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
        files,
        "SOURCE lists every file of the fixture; a fixture is never regenerated \
         (tests/fixtures/upgrade/README.md)"
    );
    for (file, sum) in listed {
        let digest = ring::digest::digest(&ring::digest::SHA256, &fixture.bytes(&file));
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, sum, "{file} changed since the fixture was made");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_upgrade_fixture_v0_is_adopted_unchanged_after_a_restart() {
    let test = "sim_upgrade_fixture_v0_is_adopted_unchanged_after_a_restart";
    if !stand_ins_run(test) {
        return;
    }
    let fixture = Fixture::new(V0);
    let records = fixture.records();
    let (dir, base) = node_dir();
    let boot_id = fixture.install(&base, Boot::Same);
    // The processes of the open episodes still run: the MPS claim's over its
    // share (with its containers' environment) and the unclaimed one, which
    // stands for the fixture's pid.
    let mut survivors = Survivors::new(&base.join("sim-processes"));
    let gpu = |name: &str| device_uuid(&records, name);
    survivors.start(&Survivor {
        env: spec_env(&base, MPS_SHARE_A),
        device: &gpu("gpu-3"),
        memory_bytes: 30 * GIB,
        sm_percent: 40,
        mps_client: true,
    });
    let unclaimed = survivors.start(&Survivor {
        env: Vec::new(),
        device: &gpu("gpu-4"),
        memory_bytes: 2 * GIB,
        sm_percent: 10,
        mps_client: false,
    });
    let episodes = open_episodes(&fixture);
    give_pid(&base, episodes[1].pid, unclaimed);
    let files = ["state/", "cdi/", "run/"]
        .into_iter()
        .flat_map(|prefix| fixture.installed(prefix, &base, &boot_id))
        .filter(|(file, _)| file != "state/activity.json")
        .collect();

    let node = SharedDaemon::start_in(dir);
    assert_files(&base, &files, "after the restart");
    assert_all_valid(&node.cdi_dir);
    let mut client = node.client().await;
    assert_cdi_ids(&mut client, &records).await;
    let layout = client.mig_layout().await;
    assert_mig_layout(&layout, &expected_slices(&fixture, true));
    assert_mps_daemons(&node, &fixture_keys(&fixture)).await;
    assert_faults_kept(&mut client, &fixture).await;

    assert_episodes_go_on(&mut client, &episodes, unclaimed, &node.log()).await;

    prepare_again(&mut client, &records).await;
    assert_files(&base, &files, "after every claim was prepared again");
    let log = node.log();
    for never in [
        "unreadable",
        "rewrote",
        "over its mps share",
        "belongs to no",
    ] {
        assert!(!log.contains(never), "{never:?} in the log:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_upgrade_fixture_v0_is_adopted_after_a_reboot() {
    let test = "sim_upgrade_fixture_v0_is_adopted_after_a_reboot";
    if !stand_ins_run(test) {
        return;
    }
    let fixture = Fixture::new(V0);
    let records = fixture.records();
    let (dir, base) = node_dir();
    let earlier = fixture.install(&base, Boot::Rebooted);

    let node = SharedDaemon::start_in(dir);
    let now = fixture::this_boot();
    assert_ne!(earlier, now);
    let mut client = node.client().await;
    let layout = client.mig_layout().await;
    assert_mig_layout(&layout, &expected_slices(&fixture, false));
    // Made again at its placement, a slice has a new MIG UUID, as on
    // hardware: its claim's record and the key of its MPS daemon follow.
    let mut renamed = new_mig_uuids(&fixture, &layout);
    let mut keys = BTreeMap::new();
    for (hash, key) in fixture_keys(&fixture) {
        let key = rename(&key, &renamed);
        let new_hash = MpsKey::new(key.split(',')).hash();
        renamed.insert(hash, new_hash.clone());
        keys.insert(new_hash, key);
    }
    renamed.insert(earlier.clone(), now);
    // Each record is the fixture's, byte for byte, re-stamped (and the slice
    // made ahead, made again for its claim, is now the claim's to destroy);
    // each spec is written again as the fixture has it; so is the ledger.
    let ahead = format!("state/claims/{MIG_AHEAD}.json");
    let mut want: BTreeMap<String, Vec<u8>> = ["state/claims/", "state/mig-ahead.json", "cdi/"]
        .into_iter()
        .flat_map(|prefix| fixture.installed(prefix, &base, &earlier))
        .map(|(file, bytes)| {
            let mut text = rename(&String::from_utf8(bytes).expect("fixture text"), &renamed);
            if file == ahead {
                text = text.replace("\"created\": false", "\"created\": true");
            }
            (file, text.into_bytes())
        })
        .collect();
    for (hash, key) in &keys {
        want.insert(format!("run/mps/{hash}/key"), key.clone().into_bytes());
    }
    assert_files(&base, &want, "after the reboot");
    assert_all_valid(&node.cdi_dir);
    assert_cdi_ids(&mut client, &records).await;
    assert_mps_daemons(&node, &keys).await;
    let health = client.health().await;
    assert!(
        health.unhealthy.is_empty(),
        "a reboot resets every GPU: {:?}",
        health.unhealthy
    );
    prepare_again(&mut client, &records).await;
    assert_files(&base, &want, "after every claim was prepared again");
    let log = node.log();
    assert!(!log.contains("unreadable"), "{log}");
}

/// Old MIG UUID → the one the slice at the same place has now.
fn new_mig_uuids(fixture: &Fixture, layout: &pb::GetMigLayoutResponse) -> BTreeMap<String, String> {
    fixture_instances(fixture)
        .into_iter()
        .map(|(index, _, start, size, uuid)| {
            let now = layout
                .gpus
                .iter()
                .filter(|g| g.index == index)
                .flat_map(|g| &g.instances)
                .find(|i| (i.placement_start, i.placement_size) == (start, size))
                .unwrap_or_else(|| panic!("no slice at {start}+{size} on gpu-{index}"));
            (uuid, now.uuid.clone())
        })
        .collect()
}

/// `text` with every key of `renamed` replaced by its value.
fn rename(text: &str, renamed: &BTreeMap<String, String>) -> String {
    renamed
        .iter()
        .fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
}

/// The GPU UUID of the whole GPU `name` a record names.
fn device_uuid(records: &BTreeMap<String, ClaimRecord>, name: &str) -> String {
    records
        .values()
        .flat_map(|r| &r.devices)
        .find(|d| d.device == name)
        .map(|d| d.uuid.clone())
        .unwrap_or_else(|| panic!("no record names {name}"))
}
