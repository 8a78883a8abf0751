#!/usr/bin/env bash
# Builds the real-allocator tool (tests/tools/allocator, tests/README.md "The
# real allocator") offline, in GOPATH mode, with sid's Go 1.26 as a private
# GOROOT and sid's Go libraries that fetch.sh unpacked:
#
#   tests/tools/allocator/build.sh OUT_DIR [FIX...]
#
# Prints the binary's path on stdout. The binary is cached as
# OUT_DIR/<hash>/allocator, the hash taken over everything it is built from
# (this folder's sources, scripts and fixes, third_party/dynamic-resource-
# allocation, the VERSIONS of the unpacked packages, and the FIXes asked
# for), so a second call with nothing changed builds nothing. The build
# copies the vendored allocator into OUT_DIR/gopath and applies the patches
# its SOURCE lists there (the files in third_party/ stay as upstream has
# them), then each FIX: fixes/FIX.patch beside this script, a test-only
# change that closes one known upstream bug (fixes/README.md), so a test can
# ask whether that bug explains an answer. Without FIX the binary is the
# upstream allocator as the scheduler runs it. Go's build cache lies beside the
# packages when that folder is writable, so every checkout on the machine
# shares the compiled libraries (a cold build takes minutes, a warm one
# seconds).
#
# Environment: GPUSLICE_ALLOCATOR_SID, the folder fetch.sh unpacked into
# (default /var/cache/gpuslice-test/sid-allocator).
#
# Exit status: 0 built (or cached), 3 a package is not unpacked (run
# fetch.sh; a test may skip), 1 anything else (the build failed).
set -euo pipefail

die() {
  echo "build.sh: $*" >&2
  exit 1
}
missing_packages() {
  echo "build.sh: $*" >&2
  exit 3
}

[ "$#" -ge 1 ] || die "usage: tests/tools/allocator/build.sh OUT_DIR [FIX...]"
here=$(cd "$(dirname "$0")" && pwd)
out_arg=$1
shift
fixes=("$@")
for fix in "${fixes[@]}"; do
  [ -f "$here/fixes/$fix.patch" ] || die "no fix named $fix: the fixes are the .patch files of $here/fixes"
done
repo=$(cd "$here/../../.." && pwd)
vendored=$repo/third_party/dynamic-resource-allocation
sid=${GPUSLICE_ALLOCATOR_SID:-/var/cache/gpuslice-test/sid-allocator}
goroot=$sid/root/usr/lib/go-1.26
gocode=$sid/root/usr/share/gocode
mkdir -p "$out_arg"
out=$(cd "$out_arg" && pwd)

# Every package the tool needs must have been unpacked.
[ -f "$sid/VERSIONS" ] || missing_packages "$sid/VERSIONS not found: run tests/tools/allocator/fetch.sh first (it unpacks Debian sid's Go 1.26 and the allocator's Go libraries there)"
missing=()
while read -r pkg; do
  awk -v p="$pkg" '$1 == p { found = 1 } END { exit !found }' "$sid/VERSIONS" || missing+=("$pkg")
done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/sid-packages.txt" | grep -v '^$')
[ "${#missing[@]}" -eq 0 ] || missing_packages "not unpacked in $sid: ${missing[*]}; run tests/tools/allocator/fetch.sh"
[ -x "$goroot/bin/go" ] || missing_packages "$goroot/bin/go is missing although VERSIONS lists golang-1.26-go; delete $sid and run tests/tools/allocator/fetch.sh"

# The inputs, named and hashed in a fixed order.
inputs() {
  (cd "$here" && find . -maxdepth 2 -type f \( -name '*.go' -o -name '*.sh' -o -name '*.txt' -o -name '*.patch' \) | LC_ALL=C sort | sed 's|^\./|tests/tools/allocator/|')
  (cd "$vendored" && find . -type f | LC_ALL=C sort | sed 's|^\./|third_party/dynamic-resource-allocation/|')
}
hash=$({
  while read -r file; do
    echo "$file $(sha256sum <"$repo/$file" | cut -d' ' -f1)"
  done < <(inputs)
  cat "$sid/VERSIONS"
  echo "fixes ${fixes[*]}"
} | sha256sum | cut -c1-16)
binary=$out/$hash/allocator

exec 9>"$out/.lock"
flock 9
if [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

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

gocache=$out/gocache
if [ -w "$sid" ]; then
  gocache=$sid/gocache
fi
field() { awk -v key="$1" '$1 == key { print $2; exit }' "$vendored/SOURCE"; }
fix_list=$(IFS=,; echo "${fixes[*]}")
ldflags="-X main.upstreamRef=$(field ref) -X main.upstreamCommit=$(field commit) -X main.appliedFixes=$fix_list"
echo "build.sh: building the allocator tool with $("$goroot/bin/go" version) (minutes while Go's build cache is cold, seconds after)" >&2
started=$SECONDS
mkdir -p "$out/$hash"
log=$out/$hash/build.log
if ! env GOROOT="$goroot" GOPATH="$gopath:$gocode" GO111MODULE=off GOPROXY=off GOTOOLCHAIN=local \
  GOFLAGS= CGO_ENABLED=0 GOTELEMETRY=off GOCACHE="$gocache" \
  "$goroot/bin/go" build -trimpath -ldflags "$ldflags" -o "$binary.tmp" gpuslice.test/allocator >"$log" 2>&1; then
  cat "$log" >&2
  if grep -q 'cannot find package' "$log"; then
    echo "build.sh: an import above is in no unpacked package: add the Debian package that holds it to tests/tools/allocator/sid-packages.txt and run fetch.sh" >&2
  fi
  die "go build failed (log: $log)"
fi
mv -f "$binary.tmp" "$binary"
echo "build.sh: built $binary in $((SECONDS - started)) s" >&2
echo "$binary"
