#!/usr/bin/env bash
# Fails if an ELF file needs a glibc newer than the floor (packaging/check.sh).
#
#   packaging/glibc-floor.sh 2.28 FILE...
#
# Reads each file's version needs (.gnu.version_r, what the dynamic loader
# checks before it runs anything) with readelf, which reads every
# architecture's ELF. Prints each file's highest GLIBC_ version; for a file
# above the floor, names the symbols that need the newer versions. Fails too
# on a file with no GLIBC_ needs at all (not a dynamic glibc binary, or
# readelf's output changed): the check must never pass by reading nothing.
set -euo pipefail
floor="${1:?usage: glibc-floor.sh FLOOR FILE...}"
shift
[ "$#" -gt 0 ] || { echo "glibc-floor.sh: no files to check" >&2; exit 2; }
status=0
for file in "$@"; do
  if [ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" != '177ELF' ]; then
    echo "glibc-floor.sh: FAIL: $file is not an ELF file" >&2
    status=1
    continue
  fi
  needs=$(readelf --version-info --wide "$file" |
    sed -n '/^Version needs section/,/^$/p' | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/Name: GLIBC_//' | sort -uV)
  if [ -z "$needs" ]; then
    echo "glibc-floor.sh: FAIL: $file needs no GLIBC_ version (not a glibc binary?)" >&2
    status=1
    continue
  fi
  highest=$(tail -n 1 <<<"$needs")
  if [ "$(printf '%s\n%s\n' "$floor" "$highest" | sort -V | tail -n 1)" = "$floor" ]; then
    echo "$file: highest GLIBC_$highest (floor $floor): ok"
    continue
  fi
  status=1
  echo "glibc-floor.sh: FAIL: $file needs GLIBC_$highest, above the floor $floor; symbols:" >&2
  above=$(awk -v f="$floor" '$0 != f' <<<"$(printf '%s\n' "$needs" "$floor" | sort -V | sed -n "/^$floor\$/,\$p")")
  for version in $above; do
    readelf --dyn-syms --wide "$file" | grep -o "[^ ]*@GLIBC_$version\b" | sed 's/^/  /' >&2 || true
  done
done
exit "$status"
