#!/usr/bin/env bash
# Unpacks what the real-allocator tool is built from: the Debian sid
# packages in sid-packages.txt beside this script (Go 1.26 and the Go
# libraries of the allocator's import closure), privately, with
# tests/tools/sid-fetch.sh (tests/README.md, "The real allocator"):
#
#   tests/tools/allocator/fetch.sh [DEST]
#
# DEST defaults to $GPUSLICE_ALLOCATOR_SID, else
# /var/cache/gpuslice-test/sid-allocator. Prints each package's version. A
# DEST that already holds every package is left as it is (delete it to fetch
# sid's newest again).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-${GPUSLICE_ALLOCATOR_SID:-/var/cache/gpuslice-test/sid-allocator}}
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/sid-packages.txt" | grep -v '^$')
[ "${#packages[@]}" -gt 0 ] || {
  echo "fetch.sh: $here/sid-packages.txt lists no package" >&2
  exit 1
}
"$here/../sid-fetch.sh" "$dest" "${packages[@]}"
