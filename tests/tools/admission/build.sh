#!/usr/bin/env bash
# Builds the admission tool (tests/tools/admission: Kubernetes' own
# ValidatingAdmissionPolicy evaluation, tests/README.md "The real
# allocator" describes the same build) offline, in GOPATH mode, with sid's
# Go 1.26 as a private GOROOT and the sid Go libraries fetch.sh unpacked
# (the real allocator's folder and packages, and this tool's own beside
# them):
#
#   tests/tools/admission/build.sh OUT_DIR
#
# Prints the binary's path on stdout. The binary is cached as
# OUT_DIR/<hash>/admission, the hash taken over everything it is built from
# (this folder's sources, scripts and package list, the allocator's package
# list, the shared build steps, and the unpacked versions of the packages
# both lists name), so a second call with nothing changed builds nothing.
# The build adds one file to k8s.io/apiserver's policy/validating package with Go's -overlay
# (overlay/: it exports the plugin's own compilePolicy); Debian's files stay
# as they are. Go's build cache lies beside the packages when that
# folder is writable, shared with the allocator's build (a cold build takes
# minutes, a warm one seconds).
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
[ "$#" -eq 1 ] || die "usage: tests/tools/admission/build.sh OUT_DIR"
lists=("$repo/tests/tools/allocator/sid-packages.txt" "$here/sid-packages.txt")
validating=k8s.io/apiserver/pkg/admission/plugin/policy/validating
out_dir "$1"

# Every package the tool needs must have been unpacked.
mapfile -t packages < <(sid_packages "${lists[@]}" | LC_ALL=C sort -u)
require_unpacked admission "the Go libraries" "${packages[@]}"
[ -d "$gocode/src/$validating" ] || die "$gocode/src/$validating is missing although golang-k8s-apiserver-dev is unpacked"

# The inputs, named and hashed in a fixed order; of VERSIONS only the
# packages the lists name (another tool's packages unpacked beside them
# change nothing here).
hash=$({
  {
    (cd "$repo" && find tests/tools/admission -type f \( -name '*.go' -o -name '*.sh' -o -name '*.txt' \) | LC_ALL=C sort)
    echo tests/tools/allocator/sid-packages.txt
    echo tests/tools/go_build_common.sh
  } | hash_files
  for pkg in "${packages[@]}"; do
    awk -v p="$pkg" '$1 == p' "$sid/VERSIONS"
  done
} | sha256sum | cut -c1-16)
binary=$out/$hash/admission
cached_or_locked "$binary"

# A GOPATH holding the tool; every import is found in Debian's gocode, the
# second GOPATH entry. Go's -overlay adds the one file of overlay/ to
# Debian's validating package for this build only (a GOPATH copy of the
# package would hide every other package under k8s.io/apiserver).
gopath=$out/gopath
rm -rf "$gopath"
mkdir -p "$gopath/src/gpuslice.test/admission"
cp "$here"/*.go "$gopath/src/gpuslice.test/admission/"
overlay=$out/$hash.overlay.json
{
  echo '{"Replace": {'
  first=1
  for file in "$here/overlay/$validating"/*.go; do
    [ "$first" = 1 ] || echo ','
    first=0
    printf '"%s": "%s"' "$gocode/src/$validating/$(basename "$file")" "$file"
  done
  echo '}}'
} >"$overlay"

version=$(awk '$1 == "golang-k8s-apiserver-dev" { print $2; exit }' "$sid/VERSIONS")
go_build admission "$binary" " and golang-k8s-apiserver-dev $version" \
  -overlay "$overlay" -ldflags "-X main.apiserverVersion=$version"
