#!/usr/bin/env bash
# Checks what packaging/build.sh made, as CI does (.ci/run):
#  1. systemd-analyze verify of both units (any output fails) and their
#     `systemd-analyze security --offline=yes` exposure (fails above 3.0);
#  2. lintian on the .deb (fails on any error), rpmlint on the .rpm (fails on
#     any error not filtered in packaging/rpmlint.toml);
#  3. the .rpm's files, config files and scripts (rpm -qpl, -qpc, --scripts);
#  4. no crash point (gpuslice::crash, test builds only) in the packaged gpusliced;
#  5. an install test on this host: dpkg -i, files, conffile, group, the
#     installed unit verifies; dpkg -r keeps the conffile; dpkg -P removes
#     config and state. Needs root; changes this host's package set.
# The service itself runs under a real systemd in the nspawn e2e test.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
fail() { echo "check.sh: FAIL: $*" >&2; exit 1; }
newest() { find "$1" -name "$2" -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2; }
deb=$(newest "$target/debian" 'gpuslice_*.deb')
rpm=$(newest "$target/generate-rpm" 'gpuslice-*.rpm')
[ -n "$deb" ] && [ -n "$rpm" ] || fail "no packages in $target: run packaging/build.sh first"
units=(gpusliced.service gpuslice-dra-plugin.service)
echo "check.sh: $deb and $rpm"

echo "== systemd-analyze verify and security"
vroot=$(mktemp -d)
trap 'rm -rf "$vroot"' EXIT
mkdir -p "$vroot/usr/bin" "$vroot/bin" "$vroot/etc/systemd/system" "$vroot/usr/lib/systemd"
cp -a /lib/systemd/system "$vroot/usr/lib/systemd/"
for bin in gpusliced gpuslice-dra-plugin; do cp /bin/true "$vroot/usr/bin/$bin"; done
cp /bin/sh "$vroot/bin/sh"
for unit in "${units[@]}"; do
  cp "systemd/$unit" "$vroot/etc/systemd/system/"
  out=$(systemd-analyze verify --man=no --root="$vroot" "$unit" 2>&1) || fail "verify $unit: $out"
  [ -z "$out" ] || fail "verify $unit printed: $out"
  exposure=$(systemd-analyze security --offline=yes --threshold=30 "systemd/$unit" 2>&1 | tail -n 1) \
    || fail "$unit: $exposure (above 3.0)"
  echo "$unit: verify clean; $exposure"
done

echo "== lintian"
lintian --display-info --pedantic --fail-on error "$deb" || fail "lintian reports errors"

echo "== rpmlint"
rpmlint -c packaging/rpmlint.toml "$rpm" || fail "rpmlint reports errors"

echo "== rpm -qpl / -qpc / --scripts"
# Captured first: `rpm ... | grep -q` would fail under pipefail (SIGPIPE).
files=$(rpm -qpl "$rpm")
echo "$files"
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm")
grep -qx 'cn /etc/gpuslice/gpuslice.toml' <<<"$flags" || fail "gpuslice.toml is not %config(noreplace)"
scripts=$(rpm -qp --scripts "$rpm")
echo "$scripts"
for f in /usr/bin/gpusliced /usr/bin/gpuslicectl /usr/lib/systemd/system/gpusliced.service \
  /usr/lib/sysusers.d/gpuslice.conf /usr/lib/tmpfiles.d/gpusliced.conf /usr/share/man/man8/gpusliced.8.gz; do
  grep -qx "$f" <<<"$files" || fail "$f missing from the rpm"
done
for scriptlet in postinstall preuninstall postuninstall; do
  grep -q "^$scriptlet scriptlet" <<<"$scripts" || fail "no $scriptlet scriptlet in the rpm"
done

echo "== no crash points in the packaged gpusliced"
# They exist only in builds with the `failpoints` feature, which only the
# package's tests turn on (daemon/Cargo.toml); a point's name in the
# packaged binary means a release build picked the feature up.
points=$(sed -n '/^pub const ALL/,/^];/p' daemon/src/crash.rs | grep -o '"[a-z_]*\.after_[a-z_]*"' | tr -d '"')
[ "$(wc -l <<<"$points")" -ge 20 ] || fail "cannot read the crash point names in daemon/src/crash.rs"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/gpusliced >"$vroot/gpusliced.packaged"
for point in $points; do
  ! grep -aqF "$point" "$vroot/gpusliced.packaged" || fail "crash point $point is in the packaged gpusliced"
done
echo "none of the $(wc -l <<<"$points") crash points is in the packaged gpusliced"

echo "== dpkg -i / -r / -P on this host"
[ "$(id -u)" = 0 ] || fail "the install test needs root"
dpkg -i "$deb"
for f in /usr/bin/gpusliced /usr/bin/gpuslicectl /usr/lib/systemd/system/gpusliced.service \
  /usr/lib/sysusers.d/gpuslice.conf /usr/lib/tmpfiles.d/gpusliced.conf \
  /usr/share/man/man8/gpusliced.8.gz /usr/share/man/man8/gpuslicectl.8.gz /etc/gpuslice/gpuslice.toml; do
  [ -e "$f" ] || fail "$f not installed"
done
grep -qx /etc/gpuslice/gpuslice.toml /var/lib/dpkg/info/gpuslice.conffiles || fail "gpuslice.toml is not a conffile"
getent group gpuslice >/dev/null || fail "group gpuslice not created"
gpusliced --check-config || fail "the packaged config does not load"
out=$(systemd-analyze verify --man=no /usr/lib/systemd/system/gpusliced.service 2>&1) || fail "installed unit: $out"
[ -z "$out" ] || fail "installed unit: $out"
dpkg -r gpuslice
[ ! -e /usr/bin/gpusliced ] || fail "dpkg -r left /usr/bin/gpusliced"
[ -f /etc/gpuslice/gpuslice.toml ] || fail "dpkg -r removed the conffile"
dpkg -P gpuslice
[ ! -e /etc/gpuslice ] || fail "dpkg -P left /etc/gpuslice"
[ ! -e /var/lib/gpuslice ] || fail "dpkg -P left /var/lib/gpuslice"
[ ! -e /etc/systemd/system/gpusliced.service ] || fail "dpkg -P left the unit masked"
echo "check.sh: all package checks passed"
