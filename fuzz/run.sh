#!/usr/bin/env bash
# Builds every cargo-fuzz target and runs each for SECONDS (default 20), then
# prints per target the executions and exec/s libFuzzer reports. Fails when a
# target crashes (the reproducer lands in fuzz/artifacts/<target>/).
#
#   fuzz/run.sh [SECONDS-PER-TARGET]
#
# Each target starts from its committed seeds (fuzz/corpus/<target>) and its
# crash reproducers (fuzz/regressions/<target>), read-only; what it discovers
# goes to a scratch folder that is removed afterwards, so the committed corpus
# never grows. Needs cargo-fuzz (cargo install --locked cargo-fuzz@0.13.2).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-20}"
targets=(sharing_config daemon_config prepare_request prepare_structured cdi_roundtrip usage_history)

# cargo-fuzz passes nightly-only rustc flags (-Zsanitizer, sancov passes); the
# stable toolchain accepts them with RUSTC_BOOTSTRAP=1.
export RUSTC_BOOTSTRAP=1
# Safe Rust: no sanitizer (memory errors are out of reach), which buys
# several times the executions; panics and overflow checks stay on.
fuzz_flags=(--sanitizer none)

# The lock is committed: refuse to run if it would change.
cargo fetch --locked --quiet
cargo fuzz build "${fuzz_flags[@]}"

# The prepare targets run a claim engine in GPUSLICE_FUZZ_TMP; tmpfs keeps its
# fsyncs cheap.
scratch=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export GPUSLICE_FUZZ_TMP="$scratch"

stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n 1; }

failed=()
printf '\n%-20s %12s %10s %10s %8s\n' target executions exec/s new-units result
for target in "${targets[@]}"; do
  found="$scratch/corpus-$target"
  mkdir -p "$found" "regressions/$target"
  seeds=("$found")
  [ -d "corpus/$target" ] && seeds+=("corpus/$target")
  seeds+=("regressions/$target")
  args=(-max_total_time="$seconds" -timeout=30 -print_final_stats=1)
  [ -f "dict/$target.dict" ] && args+=(-dict="dict/$target.dict")
  log="$scratch/$target.log"
  result=ok
  cargo fuzz run "${fuzz_flags[@]}" "$target" "${seeds[@]}" -- "${args[@]}" >"$log" 2>&1 || result=CRASH
  printf '%-20s %12s %10s %10s %8s\n' "$target" \
    "$(stat number_of_executed_units "$log")" "$(stat average_exec_per_sec "$log")" \
    "$(stat new_units_added "$log")" "$result"
  if [ "$result" != ok ]; then
    failed+=("$target")
    echo "--- $target: last lines of libFuzzer's output ---"
    tail -n 40 "$log"
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}; reproducers are in fuzz/artifacts/" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no crash"
