#!/usr/bin/env bash
# Unpacks packages of Debian's newer suite (sid) into a private folder,
# without installing anything of it into the system (tests/README.md,
# "Tools from Debian sid"):
#
#   tests/tools/sid-fetch.sh [--component COMPONENT]... DEST PKG...
#
# A private sources list and lists folder under DEST/.apt point apt at sid
# on the same Debian mirror the system uses, component `main` and each
# COMPONENT named beside it (`--component non-free` for NVIDIA's user-space,
# which is in Debian's non-free; also written `--component=non-free` or
# `-c non-free`, and repeatable); `apt-get download` fetches
# exactly the packages named (never their Depends: the caller names the
# closure it needs) and `dpkg-deb -x` unpacks each into DEST/root. Sid
# moves, so the packages are resolved now: DEST/VERSIONS lists the name and
# version of each one unpacked, and the versions are printed. A package sid
# does not have fails the run, naming it. A DEST whose VERSIONS already
# lists every PKG is left as it is (delete it to fetch again).
#
# Environment: GPUSLICE_SID_SUITE (default sid), GPUSLICE_SID_MIRROR (default:
# the first deb.debian.org-style URI of the system's sources, else
# http://deb.debian.org/debian), GPUSLICE_SID_COMPONENTS (more components
# beside main, separated by spaces or commas, added to those of
# --component; default none).
set -euo pipefail

die() {
  echo "sid-fetch.sh: $*" >&2
  exit 1
}

usage="usage: tests/tools/sid-fetch.sh [--component COMPONENT]... DEST PKG..."
# main always; then --component's and GPUSLICE_SID_COMPONENTS', each once.
components=(main)
add_component() {
  [[ $1 =~ ^[a-z][a-z0-9-]*(/[a-z0-9-]+)?$ ]] || die "'$1' is not a Debian archive component"
  local have
  for have in "${components[@]}"; do
    [ "$have" != "$1" ] || return 0
  done
  components+=("$1")
}
while [ "$#" -gt 0 ]; do
  case $1 in
  -c | --component)
    [ "$#" -ge 2 ] || die "$1 needs a component; $usage"
    add_component "$2"
    shift 2
    ;;
  --component=*)
    add_component "${1#--component=}"
    shift
    ;;
  --)
    shift
    break
    ;;
  -*) die "unknown option '$1'; $usage" ;;
  *) break ;;
  esac
done
extra=${GPUSLICE_SID_COMPONENTS:-}
for component in ${extra//,/ }; do
  add_component "$component"
done

[ "$#" -ge 2 ] || die "$usage"
dest=$1
shift
packages=("$@")
for pkg in "${packages[@]}"; do
  [[ $pkg =~ ^[a-z0-9][a-z0-9.+-]+(:[a-z0-9]+)?$ ]] || die "'$pkg' is not a Debian package name"
done

if [ -f "$dest/VERSIONS" ]; then
  have=1
  for pkg in "${packages[@]}"; do
    awk -v p="$pkg" '$1 == p { found = 1 } END { exit !found }' "$dest/VERSIONS" || have=0
  done
  if [ "$have" = 1 ]; then
    echo "sid-fetch.sh: $dest already holds them:" >&2
    for pkg in "${packages[@]}"; do
      awk -v p="$pkg" '$1 == p { print "  " $1 " " $2 }' "$dest/VERSIONS" >&2
    done
    exit 0
  fi
fi

suite=${GPUSLICE_SID_SUITE:-sid}
mirror=${GPUSLICE_SID_MIRROR:-}
if [ -z "$mirror" ]; then
  # deb822 (URIs:) or one-line (deb URI suite) sources; the main archive,
  # not the security one.
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    awk '/^URIs:/ { print $2 } /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }' |
    grep -v -- '-security' | head -n 1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring not found (apt-get install debian-archive-keyring)"

apt_dir=$dest/.apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$dest/root"
echo "deb [signed-by=$keyring] $mirror $suite ${components[*]}" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::Cache::archives=$apt_dir/archives" -o "APT::Get::List-Cleanup=0"
  -o "APT::Sandbox::User=root")
mkdir -p "$apt_dir/cache"
echo "sid-fetch.sh: $mirror $suite ${components[*]}: updating the private package lists" >&2
apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of $mirror $suite failed"

missing=()
versions=()
for pkg in "${packages[@]}"; do
  version=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2>/dev/null |
    awk '/^Version:/ { print $2; exit }' || true)
  if [ -z "$version" ]; then
    missing+=("$pkg")
  else
    versions+=("$pkg $version")
  fi
done
[ "${#missing[@]}" -eq 0 ] || die "$suite (${components[*]}) has no package ${missing[*]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "${packages[@]}") >&2 ||
  die "apt-get download failed for: ${packages[*]}"
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$dest/root"
done

: >"$dest/VERSIONS.new"
for row in "${versions[@]}"; do
  echo "$row" >>"$dest/VERSIONS.new"
done
if [ -f "$dest/VERSIONS" ]; then
  # Keep what an earlier call unpacked into the same root.
  sort -u -k1,1 "$dest/VERSIONS.new" "$dest/VERSIONS" >"$dest/VERSIONS.merged"
  mv "$dest/VERSIONS.merged" "$dest/VERSIONS"
  rm -f "$dest/VERSIONS.new"
else
  mv "$dest/VERSIONS.new" "$dest/VERSIONS"
fi
echo "sid-fetch.sh: unpacked into $dest/root:" >&2
for row in "${versions[@]}"; do
  echo "  $row" >&2
done
