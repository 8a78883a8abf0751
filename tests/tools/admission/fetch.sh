#!/usr/bin/env bash
# Unpacks what the admission tool is built from: the real allocator's Debian
# sid packages (tests/tools/allocator/sid-packages.txt: Go 1.26, Kubernetes'
# api, apimachinery, apiserver, cel-go and what they import) and this
# tool's own beside them (sid-packages.txt here: client-go and what it
# imports), into the allocator's folder, with tests/tools/sid-fetch.sh
# (tests/README.md, "The real allocator"):
#
#   tests/tools/admission/fetch.sh [DEST]
#
# DEST defaults to $GPUSLICE_ALLOCATOR_SID, else
# /var/cache/gpuslice-test/sid-allocator. Both lists are fetched together,
# so the packages come from one state of sid. Prints each package's version.
# A DEST that already holds every package is left as it is.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-${GPUSLICE_ALLOCATOR_SID:-/var/cache/gpuslice-test/sid-allocator}}
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' \
  "$here/../allocator/sid-packages.txt" "$here/sid-packages.txt" | grep -v '^$' | LC_ALL=C sort -u)
"$here/../sid-fetch.sh" "$dest" "${packages[@]}"
