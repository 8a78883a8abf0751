#!/usr/bin/env bash
# Usage: bench/compare-prepare.sh BASE_REV
#
# The prepare bench (cargo bench --bench prepare, see bench/README.md) of
# BASE_REV against the working tree, in the same run on the same machine:
# builds the bench at BASE_REV (a temporary git worktree, sharing this
# checkout's target dir so only the workspace crates are rebuilt) and here,
# then runs them alternately, BASE HEAD BASE HEAD ..., and prints per level
# each run's prepare p50, the median per side and HEAD/BASE, and the same for
# prepare/floor (the two durable writes measured in the same loop: the ratio
# the disk's mood moves least). The goal after a redesign: HEAD/BASE <= 1.05.
#
# Env: GPUSLICE_COMPARE_RUNS (runs per side, default 3), CARGO_TARGET_DIR
# (default target/ here); the bench's own GPUSLICE_BENCH_SAMPLES and
# GPUSLICE_BENCH_DIR (default the target dir) pass through.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 BASE_REV   (a commit, branch or tag to compare the working tree with)" >&2
    exit 2
fi
root=$(git rev-parse --show-toplevel)
base_rev=$(git -C "$root" rev-parse --verify --quiet "$1^{commit}") || {
    echo "$0: $1 is not a commit in $root; give a commit, branch or tag" >&2
    exit 2
}
runs=${GPUSLICE_COMPARE_RUNS:-3}
case $runs in
'' | *[!0-9]* | 0)
    echo "$0: GPUSLICE_COMPARE_RUNS=$runs: give a positive number of runs per side" >&2
    exit 2
    ;;
esac
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
target=$(cd "$target" && pwd)
export GPUSLICE_BENCH_DIR=${GPUSLICE_BENCH_DIR:-$target}

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-compare-XXXXXX")
cleanup() {
    git -C "$root" worktree remove --force "$work/base" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Builds the prepare bench in $1 and copies it to $2.
build() {
    local tree=$1 out=$2 log exe
    log=$(mktemp "$work/build-XXXXXX")
    if ! (cd "$tree" && CARGO_TARGET_DIR=$target cargo bench -p gpuslice --bench prepare \
        --no-run --locked) >"$log" 2>&1; then
        cat "$log" >&2
        echo "$0: building the prepare bench in $tree failed" >&2
        exit 1
    fi
    # cargo says: "Executable benches/prepare.rs (/path/release/deps/prepare-<hash>)"
    exe=$(sed -n 's/^ *Executable .*(\(.*\/prepare-[0-9a-f]*\))$/\1/p' "$log" | tail -n 1)
    case $exe in
    /*) ;;
    ?*) exe=$tree/$exe ;; # cargo may print it relative to where it ran
    esac
    if [ -z "$exe" ] || [ ! -x "$exe" ]; then
        cat "$log" >&2
        echo "$0: cannot find the prepare bench cargo built in $tree" >&2
        exit 1
    fi
    cp "$exe" "$out"
}

git -C "$root" worktree add --quiet --detach "$work/base" "$base_rev"
head_rev=$(git -C "$root" rev-parse --short HEAD)
if [ -n "$(git -C "$root" status --porcelain)" ]; then
    head_rev="$head_rev+changes"
fi
echo "building the prepare bench at BASE $(git -C "$root" rev-parse --short "$base_rev") ..."
build "$work/base" "$work/prepare-base"
echo "building the prepare bench at HEAD $head_rev (the working tree) ..."
build "$root" "$work/prepare-head"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$runs"); do
    for side in base head; do
        echo "run $i/$runs: $side"
        "$work/prepare-$side" >"$work/$side-$i.txt"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# One line per level and run: "<side> <live> <gpus> <prepare p50 µs> <floor p50 µs>".
for side in base head; do
    for i in $(seq 1 "$runs"); do
        sed -n 's/^live=\([0-9]*\) *gpus=\([0-9]*\) *prepare p50=\([0-9]*\)µs.*floor p50=\([0-9]*\)µs.*/\1 \2 \3 \4/p' \
            "$work/$side-$i.txt" | sed "s/^/$side /"
    done
done >"$work/p50s"

echo "BASE $(git -C "$root" rev-parse --short "$base_rev"), HEAD $head_rev, $runs runs each, alternating"
awk -v runs="$runs" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    key = sprintf("live=%-6s gpus=%-6s", $2, $3)
    if (!(key in seen)) { seen[key] = 1; order[++levels] = key }
    p50[$1, key] = p50[$1, key] " " $4
    ratio[$1, key] = ratio[$1, key] " " sprintf("%.3f", $4 / $5)
}
END {
    if (levels == 0) { print "no level lines found in the bench output"; exit 1 }
    for (l = 1; l <= levels; l++) {
        k = order[l]
        b = median(p50["base", k]); h = median(p50["head", k])
        rb = median(ratio["base", k]); rh = median(ratio["head", k])
        printf "%s prepare p50 BASE [%s ] HEAD [%s ] µs\n", k, p50["base", k], p50["head", k]
        printf "%s   median BASE %.0fµs HEAD %.0fµs  HEAD/BASE %.3fx;  prepare/floor BASE %.2fx HEAD %.2fx  HEAD/BASE %.3fx\n",
            sprintf("%26s", ""), b, h, h / b, rb, rh, rh / rb
    }
}' "$work/p50s"
