//! The published pool follows gpusliced and the API server promptly. The
//! shim runs with `resync_seconds = 3600`, so its timer acts only at start:
//! every republish waited for here comes from a watch. In order: an XID
//! injected into gpusliced taints the device in a newer generation, and its
//! recovery removes the taint; slices deleted (as the kubelet does when it
//! restarts) come back; a slice someone else edited is put back; slices
//! deleted while the watch was down and its history compacted come back
//! after the watch's 410 and relist; a bookmark lets the watch resume
//! without a relist; gpusliced restarted mid-run (its watches end cleanly)
//! and the shim follows the new one. No sleeps: every wait is on the fake
//! API server's state, with a bound.

use std::collections::BTreeSet;

use serde_json::json;

use crate::fake_apiserver::{FakeApiServer, State};
use crate::peers::Shim;
use crate::{BOUND, GPUS, check_pool, published, start_node};

/// The devices carrying the shim's NoSchedule `gpu.nvidia.com/unhealthy` taint.
fn tainted(state: &State) -> BTreeSet<String> {
    (state.slices.values())
        .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
        .filter(|d| {
            d["taints"].as_array().is_some_and(|taints| {
                taints
                    .iter()
                    .any(|t| t["key"] == "gpu.nvidia.com/unhealthy" && t["effect"] == "NoSchedule")
            })
        })
        .map(|d| d["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn names(devices: &[&str]) -> BTreeSet<String> {
    devices.iter().map(|d| (*d).to_owned()).collect()
}

/// Waits for `done` within the bound, or fails with the shim's log.
fn wait(api: &FakeApiServer, shim: &Shim, what: &str, done: impl Fn(&State) -> bool) -> i64 {
    assert!(
        api.wait_for(BOUND, &done),
        "{what}: not within {BOUND:?}; writes {:?}; shim log:\n{}",
        api.state().writes,
        shim.log()
    );
    check_pool(&api.state()).0
}

#[test]
fn slices_follow_changes_deletions_and_restarts_without_the_timer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, mut daemon, mut shim) = start_node(dir.path(), GPUS);
    let first = wait(&api, &shim, "first publication, watch open", |s| {
        published(s, 1) && s.watches_open > 0
    });

    // (a) Health from gpusliced: the taint comes, in a newer generation
    // (64 devices a slice with taints: three slices), and goes.
    daemon.inject_health("gpu=9 xid=79");
    let sick = wait(&api, &shim, "gpu-9 tainted", |s| {
        published(s, first + 1) && tainted(s) == names(&["gpu-9"])
    });
    assert_eq!(api.state().slices.len(), 3);
    daemon.inject_health("gpu=9 recovered");
    let healed = wait(&api, &shim, "gpu-9 untainted", |s| {
        published(s, sick + 1) && tainted(s).is_empty()
    });

    // (b) Deleted, as the kubelet does when it restarts: back, newer.
    api.delete_all_slices();
    let restored = wait(&api, &shim, "deleted slices back", |s| {
        published(s, healed + 1)
    });

    // Someone else's edit is put back.
    api.mutate(|s| {
        let mut slice = s.slices.values().next().cloned().expect("a slice");
        slice["spec"]["devices"][0]["attributes"]["productName"] = json!({"string": "edited"});
        s.put_slice(slice);
    });
    let unedited = wait(&api, &shim, "foreign edit undone", |s| {
        published(s, restored + 1)
            && (s.slices.values())
                .flat_map(|x| x["spec"]["devices"].as_array().cloned().unwrap_or_default())
                .all(|d| d["attributes"]["productName"]["string"] != "edited")
    });

    // Deleted while the watch was down, and the history compacted: the watch
    // resumes into a 410, lists again, and the shim republishes.
    let lists = api.state().watcher_lists;
    api.mutate(|s| {
        s.watch_epoch += 1;
        s.delete_all_slices();
        s.compact_and_close_watches();
    });
    let relisted = wait(&api, &shim, "republished after a 410 and a relist", |s| {
        published(s, unedited + 1) && s.watcher_lists > lists
    });

    // A bookmark moves the watch on past changes it is not sent (another
    // node's slices): after a compaction it resumes from there, no 410.
    api.mutate(State::other_node_churn);
    let marks = api.state().bookmarks_sent;
    api.mutate(|s| s.bookmark_epoch += 1);
    wait(&api, &shim, "bookmark sent", |s| s.bookmarks_sent > marks);
    let (opened, version) = {
        let s = api.state();
        (s.watches_opened, s.next_version)
    };
    api.mutate(State::compact_and_close_watches);
    wait(&api, &shim, "watch resumed", |s| s.watches_opened > opened);
    assert_eq!(
        api.state().watch_versions.last(),
        Some(&version),
        "resumed from the bookmark"
    );

    // (c) gpusliced restarts (ending the shim's watch cleanly, so it exits
    // at once): the shim follows the new one.
    daemon.restart(BOUND);
    assert!(
        !daemon.log().contains("kept connections open"),
        "{}",
        daemon.log()
    );
    daemon.inject_health("gpu=11 xid=79");
    let after = wait(&api, &shim, "gpu-11 tainted after the restart", |s| {
        published(s, relisted + 1) && tainted(s) == names(&["gpu-11"])
    });
    daemon.inject_health("gpu=11 recovered");
    wait(&api, &shim, "gpu-11 untainted", |s| {
        published(s, after + 1) && tainted(s).is_empty()
    });
    assert!(
        shim.log().contains("gpusliced closed the inventory watch"),
        "{}",
        shim.log()
    );

    shim.terminate();
    let status = shim.wait_exit(BOUND);
    assert!(status.success(), "exit {status:?}; log:\n{}", shim.log());
}
