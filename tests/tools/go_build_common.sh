# Sourced (not run) by the Go tools' build scripts, tests/tools/admission/
# build.sh and tests/tools/allocator/build.sh: what both do the same way to
# build offline, in GOPATH mode, with Debian sid's Go 1.26 as a private
# GOROOT and the sid Go libraries their fetch.sh unpacked. Each script keeps
# its own inputs, hash and GOPATH; this file is one of the inputs each
# hashes.
#
# Sets sid (GPUSLICE_ALLOCATOR_SID, default
# /var/cache/gpuslice-test/sid-allocator), goroot and gocode. The functions
# below read the script's `repo` and `out`, and set `binary`'s folder.

die() {
  echo "build.sh: $*" >&2
  exit 1
}
missing_packages() {
  echo "build.sh: $*" >&2
  exit 3
}

sid=${GPUSLICE_ALLOCATOR_SID:-/var/cache/gpuslice-test/sid-allocator}
goroot=$sid/root/usr/lib/go-1.26
gocode=$sid/root/usr/share/gocode

# out_dir DIR: creates DIR and sets `out` to its absolute path.
out_dir() {
  mkdir -p "$1"
  out=$(cd "$1" && pwd)
}

# sid_packages LIST...: the package names of sid-packages.txt files, one a
# line, in their order (comments and blank lines dropped).
sid_packages() {
  sed -e 's/#.*//' -e 's/[[:space:]]//g' "$@" | grep -v '^$'
}

# require_unpacked TOOL WHAT PACKAGE...: exits 3 (a test may skip) unless
# TOOL's fetch.sh unpacked sid's Go and every PACKAGE; WHAT names the
# libraries in the message.
require_unpacked() {
  local tool=$1 what=$2 pkg
  shift 2
  [ -f "$sid/VERSIONS" ] || missing_packages "$sid/VERSIONS not found: run tests/tools/$tool/fetch.sh first (it unpacks Debian sid's Go 1.26 and $what there)"
  local missing=()
  for pkg in "$@"; do
    awk -v p="$pkg" '$1 == p { found = 1 } END { exit !found }' "$sid/VERSIONS" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] || missing_packages "not unpacked in $sid: ${missing[*]}; run tests/tools/$tool/fetch.sh"
  [ -x "$goroot/bin/go" ] || missing_packages "$goroot/bin/go is missing although VERSIONS lists golang-1.26-go; delete $sid and run tests/tools/$tool/fetch.sh"
}

# hash_files: for each repository-relative path read on stdin, the line
# "PATH SHA256" (the lines a build's hash is taken over).
hash_files() {
  local file
  while read -r file; do
    echo "$file $(sha256sum <"$repo/$file" | cut -d' ' -f1)"
  done
}

# cached_or_locked BINARY: takes the output folder's lock (held until the
# script exits); if BINARY is built already, prints its path and exits 0.
cached_or_locked() {
  exec 9>"$out/.lock"
  flock 9
  if [ -x "$1" ]; then
    echo "$1"
    exit 0
  fi
}

# go_build TOOL BINARY NOTE FLAG...: builds gpuslice.test/TOOL from the
# GOPATH "$out/gopath" and sid's gocode into BINARY, with `go build
# -trimpath FLAG...`, saying so on stderr (NOTE follows Go's version); its
# log is build.log beside BINARY. Go's build cache lies beside the packages
# when that folder is writable, shared by every tool and checkout. Prints
# BINARY; a failed build exits 1 after the log.
go_build() {
  local tool=$1 binary=$2 note=$3
  shift 3
  local gocache=$out/gocache
  if [ -w "$sid" ]; then
    gocache=$sid/gocache
  fi
  echo "build.sh: building the $tool tool with $("$goroot/bin/go" version)$note (minutes while Go's build cache is cold, seconds after)" >&2
  local started=$SECONDS
  mkdir -p "$(dirname "$binary")"
  local log
  log=$(dirname "$binary")/build.log
  if ! env GOROOT="$goroot" GOPATH="$out/gopath:$gocode" GO111MODULE=off GOPROXY=off GOTOOLCHAIN=local \
    GOFLAGS= CGO_ENABLED=0 GOTELEMETRY=off GOCACHE="$gocache" \
    "$goroot/bin/go" build -trimpath "$@" -o "$binary.tmp" "gpuslice.test/$tool" >"$log" 2>&1; then
    cat "$log" >&2
    if grep -q 'cannot find package' "$log"; then
      echo "build.sh: an import above is in no unpacked package: add the Debian package that holds it to tests/tools/$tool/sid-packages.txt and run fetch.sh" >&2
    fi
    die "go build failed (log: $log)"
  fi
  mv -f "$binary.tmp" "$binary"
  echo "build.sh: built $binary in $((SECONDS - started)) s" >&2
  echo "$binary"
}
