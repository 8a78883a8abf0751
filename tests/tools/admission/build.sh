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
# list, and the unpacked versions of the packages both lists name), so a
# second call with nothing changed builds nothing. The build adds one file
# to k8s.io/apiserver's policy/validating package with Go's -overlay
# (overlay/: it exports the plugin's own compilePolicy); Debian's files stay
# as they are. Go's build cache lies beside the packages when that
# folder is writable, shared with the allocator's build (a cold build takes
# minutes, a warm one seconds).
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

[ "$#" -eq 1 ] || die "usage: tests/tools/admission/build.sh OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
lists=("$repo/tests/tools/allocator/sid-packages.txt" "$here/sid-packages.txt")
sid=${GPUSLICE_ALLOCATOR_SID:-/var/cache/gpuslice-test/sid-allocator}
goroot=$sid/root/usr/lib/go-1.26
gocode=$sid/root/usr/share/gocode
validating=k8s.io/apiserver/pkg/admission/plugin/policy/validating
mkdir -p "$1"
out=$(cd "$1" && pwd)

# Every package the tool needs must have been unpacked.
[ -f "$sid/VERSIONS" ] || missing_packages "$sid/VERSIONS not found: run tests/tools/admission/fetch.sh first (it unpacks Debian sid's Go 1.26 and the Go libraries there)"
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "${lists[@]}" | grep -v '^$' | LC_ALL=C sort -u)
missing=()
for pkg in "${packages[@]}"; do
  awk -v p="$pkg" '$1 == p { found = 1 } END { exit !found }' "$sid/VERSIONS" || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] || missing_packages "not unpacked in $sid: ${missing[*]}; run tests/tools/admission/fetch.sh"
[ -x "$goroot/bin/go" ] || missing_packages "$goroot/bin/go is missing although VERSIONS lists golang-1.26-go; delete $sid and run tests/tools/admission/fetch.sh"
[ -d "$gocode/src/$validating" ] || die "$gocode/src/$validating is missing although golang-k8s-apiserver-dev is unpacked"

# The inputs, named and hashed in a fixed order; of VERSIONS only the
# packages the lists name (another tool's packages unpacked beside them
# change nothing here).
hash=$({
  (cd "$repo" && find tests/tools/admission -type f \( -name '*.go' -o -name '*.sh' -o -name '*.txt' \) | LC_ALL=C sort) |
    while read -r file; do
      echo "$file $(sha256sum <"$repo/$file" | cut -d' ' -f1)"
    done
  echo "tests/tools/allocator/sid-packages.txt $(sha256sum <"${lists[0]}" | cut -d' ' -f1)"
  for pkg in "${packages[@]}"; do
    awk -v p="$pkg" '$1 == p' "$sid/VERSIONS"
  done
} | sha256sum | cut -c1-16)
binary=$out/$hash/admission

exec 9>"$out/.lock"
flock 9
if [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

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

gocache=$out/gocache
if [ -w "$sid" ]; then
  gocache=$sid/gocache
fi
version=$(awk '$1 == "golang-k8s-apiserver-dev" { print $2; exit }' "$sid/VERSIONS")
echo "build.sh: building the admission tool with $("$goroot/bin/go" version) and golang-k8s-apiserver-dev $version (minutes while Go's build cache is cold, seconds after)" >&2
started=$SECONDS
mkdir -p "$out/$hash"
log=$out/$hash/build.log
if ! env GOROOT="$goroot" GOPATH="$gopath:$gocode" GO111MODULE=off GOPROXY=off GOTOOLCHAIN=local \
  GOFLAGS= CGO_ENABLED=0 GOTELEMETRY=off GOCACHE="$gocache" \
  "$goroot/bin/go" build -trimpath -overlay "$overlay" -ldflags "-X main.apiserverVersion=$version" -o "$binary.tmp" gpuslice.test/admission >"$log" 2>&1; then
  cat "$log" >&2
  if grep -q 'cannot find package' "$log"; then
    echo "build.sh: an import above is in no unpacked package: add the Debian package that holds it to tests/tools/admission/sid-packages.txt and run fetch.sh" >&2
  fi
  die "go build failed (log: $log)"
fi
mv -f "$binary.tmp" "$binary"
echo "build.sh: built $binary in $((SECONDS - started)) s" >&2
echo "$binary"
