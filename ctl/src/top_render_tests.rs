//! The top screen, exactly, from the shared fixture.

use super::{Node, SortKey, key_line, lines, with_keys, with_problem};
use crate::fixture::{NOW, reply};

fn node() -> Node {
    Node {
        name: "node-1".into(),
        gpus: 4,
    }
}

fn screen(sort: SortKey, width: usize) -> String {
    lines(&reply(), &node(), sort, NOW, width).join("\n")
}

#[test]
fn the_whole_screen_sorted_by_memory() {
    let expected = "\
gpuslice top  node node-1  sampled 2s ago  every 5s
GPUs 4  claims 2  unclaimed 1  warnings 2

NAMESPACE/NAME   DEVICE  SHARING    PROCS  MEMORY               SM%  LAST ACTIVE
team-a/train     gpu-1   mps        2      6.0 GiB / 4.0 GiB !  30   12s ago
team-b/notebook  gpu-2   exclusive  0      0 / 80.0 GiB         -    never

UNCLAIMED PID  DEVICE  NAME   MEMORY   REASON
77             gpu-0   miner  1.0 GiB  no gpuslice claim in its environment

warning: claim team-a/train uses 6.0 GiB on gpu-1, over its 4.0 GiB share (for 1m)
warning: process 77 (miner) on gpu-0 belongs to no claim (for 30s)";
    assert_eq!(screen(SortKey::Memory, 0), expected);
}

fn first_rows(sort: SortKey) -> Vec<String> {
    lines(&reply(), &node(), sort, NOW, 0)
        .into_iter()
        .skip(4)
        .take(2)
        .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn every_sort_key_orders_the_rows() {
    assert_eq!(
        first_rows(SortKey::Memory),
        ["team-a/train", "team-b/notebook"]
    );
    assert_eq!(first_rows(SortKey::Sm), ["team-a/train", "team-b/notebook"]);
    assert_eq!(
        first_rows(SortKey::Idle),
        ["team-b/notebook", "team-a/train"]
    );
    assert_eq!(
        first_rows(SortKey::Name),
        ["team-a/train", "team-b/notebook"]
    );
    let mut busy = reply();
    busy.claims[1].devices[0].memory_used_bytes = 50 << 30;
    let top = lines(&busy, &node(), SortKey::Memory, NOW, 0);
    assert!(top[4].starts_with("team-b/notebook"), "{top:?}");
}

#[test]
fn lines_are_cut_to_the_terminal_width() {
    for line in lines(&reply(), &node(), SortKey::Memory, NOW, 20) {
        assert!(line.chars().count() <= 20, "{line:?}");
    }
}

#[test]
fn sampling_off_and_no_claims_say_so() {
    let off = lines(&Default::default(), &node(), SortKey::Memory, NOW, 0);
    assert!(off[1].starts_with("sampling is off"), "{off:?}");
    let mut empty = reply();
    empty.claims.clear();
    empty.unclaimed.clear();
    empty.warnings.clear();
    empty.sampled_at_ms = 0;
    let text = lines(&empty, &node(), SortKey::Memory, NOW, 0).join("\n");
    assert_eq!(
        text,
        "gpuslice top  node node-1  no sample yet  every 5s\n\
         GPUs 4  claims 0  unclaimed 0  warnings 0\n\nno prepared claims"
    );
}

#[test]
fn a_fetch_that_failed_is_said_under_the_title_over_the_last_sample() {
    let last = lines(&reply(), &node(), SortKey::Memory, NOW + 40, 0);
    let shown = with_problem(last.clone(), "connection refused", 5, 0);
    assert_eq!(shown.len(), last.len() + 1);
    assert_eq!(shown[0], last[0]);
    assert!(
        shown[0].contains("sampled 42s ago"),
        "the age keeps counting: {}",
        shown[0]
    );
    assert_eq!(
        shown[1],
        "! gpusliced did not answer: connection refused; showing its last sample, trying again every 5s"
    );
    assert_eq!(&shown[2..], &last[1..]);
    let narrow = with_problem(last, "connection refused", 5, 20);
    assert_eq!(narrow[1], "! gpusliced did not ");
}

#[test]
fn a_claim_prepared_after_the_sample_shows_as_not_sampled_yet() {
    let mut fresh = reply();
    let new = &mut fresh.claims[1];
    new.not_sampled_yet = true;
    new.prepared_at = NOW - 3;
    new.idle_seconds = 3;
    let top = lines(&fresh, &node(), SortKey::Name, NOW, 0);
    assert_eq!(top[1], "GPUs 4  claims 2  unclaimed 1  warnings 2");
    assert_eq!(
        top[5],
        "team-b/notebook  gpu-2   exclusive  -      -                    -    not sampled yet"
    );
}

#[test]
fn the_live_view_lists_its_keys_under_the_header_and_the_print_does_not() {
    let printed = lines(&reply(), &node(), SortKey::Memory, NOW, 0);
    assert!(!printed.iter().any(|l| l.contains("q quit")), "{printed:?}");
    let live = with_keys(printed.clone(), SortKey::Idle, 0);
    assert_eq!(&live[..2], &printed[..2]);
    assert_eq!(
        live[2],
        "keys: q quit  m memory  s SM  i idle  n name  (sorted by idle)"
    );
    assert_eq!(&live[3..], &printed[2..]);
    assert_eq!(
        key_line(SortKey::Sm),
        "keys: q quit  m memory  s SM  i idle  n name  (sorted by SM)"
    );
    let narrow = with_keys(printed, SortKey::Memory, 10);
    assert_eq!(narrow[2], "keys: q qu");
    let off = with_keys(
        lines(&Default::default(), &node(), SortKey::Name, NOW, 0),
        SortKey::Name,
        0,
    );
    assert_eq!(off.len(), 3);
    assert!(off[2].starts_with("keys: q quit"), "{off:?}");
}
