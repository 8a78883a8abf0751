#!/usr/bin/env bash
# Builds the real-allocator tool (tests/tools/allocator, tests/README.md "The
# real allocator") offline, in GOPATH mode, with sid's Go 1.26 as a private
# GOROOT and sid's Go libraries that fetch.sh unpacked:
#
#   tests/tools/allocator/build.sh OUT_DIR [FIX...]
#
# Prints the binary's path on stdout. The binary is cached as
# OUT_DIR/<hash>/allocator, the hash taken over everything it is built from
# (this folder's sources, scripts and fixes, the shared build steps,
# third_party/dynamic-resource-allocation, the VERSIONS of the unpacked
# packages, and the FIXes asked for), so a second call with nothing
# changed builds nothing. The build copies the vendored allocator into
# OUT_DIR/gopath and applies the patches its SOURCE lists there (the files
# in third_party/ stay as upstream has them), then each FIX: fixes/FIX.patch beside this script, a test-only
# change that closes one known upstream bug (fixes/README.md), so a test can
# ask whether that bug explains an answer. Without FIX the binary is the
# upstream allocator as the scheduler runs it. Go's build cache lies beside the
# packages when that folder is writable, so every checkout on the machine
# shares the compiled libraries (a cold build takes minutes, a warm one
# seconds).
#
# The steps both Go tools' scripts share are in ../go_build_common.sh.
#
# Environment: GPUSLICE_ALLOCATOR_SID, the folder fetch.sh unpacked into
# (default /var/cache/gpuslice-test/sid-allocator).
#
# Exit status: 0 built (or cached), 3 a package is not unpacked (run
# fetch.sh; a test may skip), 1 anything else (the build failed).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=../go_build_common.sh
. "$here/../go_build_common.sh"
[ "$#" -ge 1 ] || die "usage: tests/tools/allocator/build.sh OUT_DIR [FIX...]"
out_arg=$1
shift
fixes=("$@")
for fix in "${fixes[@]}"; do
  [ -f "$here/fixes/$fix.patch" ] || die "no fix named $fix: the fixes are the .patch files of $here/fixes"
done
vendored=$repo/third_party/dynamic-resource-allocation
out_dir "$out_arg"

# Every package the tool needs must have been unpacked.
mapfile -t packages < <(sid_packages "$here/sid-packages.txt")
require_unpacked allocator "the allocator's Go libraries" "${packages[@]}"

# The inputs, named and hashed in a fixed order.
inputs() {
  (cd "$here" && find . -maxdepth 2 -type f \( -name '*.go' -o -name '*.sh' -o -name '*.txt' -o -name '*.patch' \) | LC_ALL=C sort | sed 's|^\./|tests/tools/allocator/|')
  echo tests/tools/go_build_common.sh
  (cd "$vendored" && find . -type f | LC_ALL=C sort | sed 's|^\./|third_party/dynamic-resource-allocation/|')
}
hash=$({
  inputs | hash_files
  cat "$sid/VERSIONS"
  echo "fixes ${fixes[*]}"
} | sha256sum | cut -c1-16)
binary=$out/$hash/allocator
cached_or_locked "$binary"

# A GOPATH holding the vendored allocator, patched, and the tool.
gopath=$out/gopath
rm -rf "$gopath"
mkdir -p "$gopath/src/k8s.io" "$gopath/src/gpuslice.test/allocator"
cp -R "$vendored" "$gopath/src/k8s.io/dynamic-resource-allocation"
while read -r patch_name; do
  patch -p1 --quiet --forward -d "$gopath/src/k8s.io/dynamic-resource-allocation" \
    <"$vendored/$patch_name" >&2 ||
    die "$vendored/$patch_name does not apply to the vendored files"
done < <(awk '$1 == "patch" { print $2 }' "$vendored/SOURCE")
for fix in "${fixes[@]}"; do
  patch -p1 --quiet --forward -d "$gopath/src/k8s.io/dynamic-resource-allocation" \
    <"$here/fixes/$fix.patch" >&2 ||
    die "$here/fixes/$fix.patch does not apply to the vendored files"
done
cp "$here"/*.go "$gopath/src/gpuslice.test/allocator/"

field() { awk -v key="$1" '$1 == key { print $2; exit }' "$vendored/SOURCE"; }
fix_list=$(IFS=,; echo "${fixes[*]}")
go_build allocator "$binary" "" \
  -ldflags "-X main.upstreamRef=$(field ref) -X main.upstreamCommit=$(field commit) -X main.appliedFixes=$fix_list"
