#!/usr/bin/env bash
# Refreshes one folder of vendored upstream files (third_party/README.md):
#
#   third_party/refresh.sh FOLDER REF
#
# FOLDER is a folder of third_party/ (cdi, cri-api, kubelet); REF an upstream tag,
# branch or commit. Resolves REF to one commit (git ls-remote), downloads every
# file FOLDER/SOURCE lists at that commit with curl, checks that each patch
# FOLDER/SOURCE lists (`patch NAME.patch`, gpuslice's own change that a build
# applies to its copy) still applies to them, replaces them, and rewrites
# FOLDER/SOURCE with the commit, today's date and each file's sha256. A NAME
# may lie in a subfolder (`structured/allocator.go`). A folder whose SOURCE
# has a `wheel` line instead of `commit` takes its files from the release
# wheel the project publishes on PyPI (the project named as the repository)
# for the tag REF (vX.Y.Z: version X.Y.Z), downloaded with pip
# ($GPUSLICE_PYTHON -m pip, default python3); its file paths are paths inside
# the wheel. To vendor one more file, first add a line `file - NAME
# UPSTREAM/PATH` to FOLDER/SOURCE; to drop one, delete its line and the file.
# The folder's own comment lines are kept.
set -euo pipefail

die() {
  echo "refresh.sh: $*" >&2
  exit 1
}

[ "$#" -eq 2 ] || die "usage: third_party/refresh.sh FOLDER REF (FOLDER: cdi, kubelet, ...; REF: tag, branch or commit)"
folder=$1
ref=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/$folder
source_file=$dir/SOURCE
case $folder in
  "" | */* | .*) die "FOLDER must be the name of a folder of third_party/, got '$folder'" ;;
esac
[ -f "$source_file" ] || die "$source_file not found"

field() { awk -v key="$1" '$1 == key { print $2; exit }' "$source_file"; }
repository=$(field repository)
license=$(field license)
wheel=$(field wheel)
case $repository in
  https://github.com/*/*) ;;
  *) die "SOURCE: repository must be https://github.com/OWNER/NAME, got '$repository'" ;;
esac
[ -n "$license" ] || die "SOURCE: no license line (the SPDX id of upstream's license)"
slug=${repository#https://github.com/}

# The files to fetch: local name and upstream path, from the `file` lines;
# the patches to check, from the `patch` lines.
names=()
paths=()
patches=()
while read -r kind second name path extra; do
  case $kind in
    patch)
      if [ -z "$second" ] || [ -n "$name" ]; then
        die "SOURCE: a patch line is: patch NAME.patch (at '$second')"
      fi
      [[ $second =~ ^[^/.][^/]*\.patch$ ]] || die "SOURCE: patch '$second' must be a top-level file name ending in .patch"
      [ -f "$dir/$second" ] || die "SOURCE lists patch $second, but $dir/$second is missing"
      patches+=("$second")
      continue
      ;;
    file) ;;
    *) continue ;;
  esac
  if [ -z "$path" ] || [ -n "$extra" ]; then
    die "SOURCE: a file line is: file SHA256 NAME UPSTREAM/PATH (at '$name')"
  fi
  # A relative path in the folder: no empty part, none starting with a dot
  # (so no . or ..), not the manifest itself.
  [ "$name" != SOURCE ] || die "SOURCE: a file may not be named SOURCE"
  IFS=/ read -r -a parts <<<"$name"
  [[ $name != /* && $name != */ && $name != *//* ]] || die "SOURCE: '$name' must be a relative path in the folder"
  for part in "${parts[@]}"; do
    case $part in
      "" | .*) die "SOURCE: '$name' must be a relative path in the folder, no part starting with a dot" ;;
    esac
  done
  names+=("$name")
  paths+=("$path")
done <"$source_file"
[ "${#names[@]}" -gt 0 ] || die "SOURCE lists no files"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$wheel" ]; then
  # The release wheel of tag REF, from the PyPI project named as the repository.
  project=${slug#*/}
  version=${ref#v}
  python=${GPUSLICE_PYTHON:-python3}
  echo "downloading $project==$version from PyPI" >&2
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    "$project==$version" -d "$tmp/wheel" || die "pip download $project==$version failed"
  wheels=("$tmp"/wheel/*.whl)
  [ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || die "expected one wheel from pip, got: ${wheels[*]}"
  wheel=$(basename "${wheels[0]}")
  wheel_sum=$(sha256sum "${wheels[0]}")
  for i in "${!names[@]}"; do
    mkdir -p "$tmp/files/$(dirname "${names[$i]}")"
    "$python" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "${wheels[0]}" "${paths[$i]}" >"$tmp/files/${names[$i]}" || die "${paths[$i]} not in $wheel"
  done
  origin="wheel $wheel ${wheel_sum%% *}"
else
  # One commit for every file: a full commit id as given, else what the
  # (peeled) tag or the branch points at.
  if [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
    commit=$ref
  else
    refs=$(git ls-remote "$repository" "refs/tags/$ref^{}" "refs/tags/$ref" "refs/heads/$ref")
    # Preference: the commit an annotated tag points at, a tag, a branch.
    commit=$(awk -v tag="refs/tags/$ref" -v head="refs/heads/$ref" '
      $2 == tag "^{}" { rank[1] = $1 }
      $2 == tag { rank[2] = $1 }
      $2 == head { rank[3] = $1 }
      END { for (i = 1; i <= 3; i++) if (i in rank) { print rank[i]; exit } }' <<<"$refs")
    [[ $commit =~ ^[0-9a-f]{40}$ ]] || die "no tag or branch '$ref' in $repository (give a full commit id for anything else)"
  fi

  for i in "${!names[@]}"; do
    url=https://raw.githubusercontent.com/$slug/$commit/${paths[$i]}
    echo "fetching $url" >&2
    mkdir -p "$tmp/files/$(dirname "${names[$i]}")"
    curl -fsSL --retry 3 -o "$tmp/files/${names[$i]}" "$url" || die "download failed: $url"
  done
  origin="commit $commit"
fi

# Each patch must still apply to what was fetched (on a scratch copy: the
# vendored files themselves stay as upstream has them).
for patch_name in "${patches[@]}"; do
  rm -rf "$tmp/scratch"
  cp -R "$tmp/files" "$tmp/scratch"
  patch -p1 --quiet --forward -d "$tmp/scratch" <"$dir/$patch_name" >&2 ||
    die "$patch_name no longer applies at $origin ($ref): update it to the new files (its header says what it changes), then run this again"
  echo "$patch_name applies at $origin" >&2
done
rm -rf "$tmp/scratch"

{
  echo "# third_party/$folder: files vendored unchanged from upstream (third_party/README.md)."
  echo "# Written by third_party/refresh.sh; by hand, only add or drop a file line,"
  echo "# then run it. The repo-checks tests compare each file with its sha256."
  # The folder's own comments (what the files are, who reads them).
  grep '^#' "$source_file" | grep -v -e '^# third_party/' -e '^# Written by third_party/refresh.sh' \
    -e '^# then run it. The repo-checks' -e '^# file sha256 name upstream-path' || true
  echo "repository $repository"
  echo "ref $ref"
  echo "$origin"
  echo "fetched $(date -u +%Y-%m-%d)"
  echo "license $license"
  echo "# file sha256 name upstream-path"
  for i in "${!names[@]}"; do
    sum=$(sha256sum "$tmp/files/${names[$i]}")
    echo "file ${sum%% *} ${names[$i]} ${paths[$i]}"
  done
  if [ "${#patches[@]}" -gt 0 ]; then
    echo "# gpuslice's own changes, applied by a build to its copy (third_party/README.md)"
    for patch_name in "${patches[@]}"; do
      echo "patch $patch_name"
    done
  fi
} >"$tmp/SOURCE"

for name in "${names[@]}"; do
  mkdir -p "$dir/$(dirname "$name")"
  mv -f "$tmp/files/$name" "$dir/$name"
done
mv -f "$tmp/SOURCE" "$source_file"
echo "third_party/$folder now at $origin ($ref); review: git diff -- third_party/$folder" >&2
