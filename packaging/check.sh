#!/usr/bin/env bash
# Checks the four packages packaging/build.sh made (.deb and .rpm, amd64 and
# arm64), as CI does (.ci/run):
#  1. systemd-analyze verify of both units (any output fails) and their
#     `systemd-analyze security --offline=yes` exposure (fails above 3.0);
#  2. lintian on both .debs (fails on any error), rpmlint on both .rpms (fails
#     on any error not filtered in packaging/rpmlint.toml);
#  3. each .rpm's files, config files and scripts (rpm -qpl, -qpc, --scripts);
#     each package's man pages and bash, zsh and fish completions, the same
#     as the packaged binaries write (--generate);
#  4. per architecture: the .deb and the .rpm carry the same binaries, built
#     for that architecture; no packaged ELF file needs a glibc above 2.28
#     (packaging/glibc-floor.sh), nor does the packages' own libc dependency;
#     no crash point or test hook (gpuslice::crash, test builds only) in
#     gpusliced;
#  5. a smoke test of each architecture's packaged binaries
#     (packaging/smoke.py): --version, gpusliced on the sim backend until
#     READY=1, `gpuslicectl status`, SIGTERM -> exit 0; again on the node
#     EKS runs that architecture on (amd64: a simulated p6-b200.48xlarge;
#     arm64: a p6e-gb200.36xlarge, whose GPUs must carry their clique),
#     checked with `gpuslicectl gpus`. arm64 runs under
#     qemu-user (qemu-aarch64, with libc6:arm64 from multiarch); without it the
#     arm64 run is skipped, or fails when GPUSLICE_REQUIRE_TOOLS=1;
#  6. an install test of the amd64 .deb on this host: dpkg -i, files,
#     conffile, group, the installed unit verifies; dpkg -r keeps the
#     conffile; dpkg -P removes config and state. Needs root; changes this
#     host's package set.
# The service itself runs under a real systemd in the nspawn e2e test.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
glibc=2.28
# The arm64 glibc qemu-aarch64 loads: multiarch libc6:arm64 lives in / itself.
# (libc6-arm64-cross 2.36-8cross1, in /usr/aarch64-linux-gnu, hangs in
# pthread_create under Debian 12's qemu-user 7.2; libc6:arm64 does not.)
qemu_sysroot="${GPUSLICE_QEMU_SYSROOT:-/}"
fail() { echo "check.sh: FAIL: $*" >&2; exit 1; }
newest() { find "$1" -name "$2" -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2; }
# Debian's architecture name -> rpm's, and readelf's name of the machine.
declare -A rpm_arch=([amd64]=x86_64 [arm64]=aarch64)
declare -A machine=([amd64]="Advanced Micro Devices X86-64" [arm64]=AArch64)
declare -A deb rpm
for arch in amd64 arm64; do
  deb[$arch]=$(newest "$target/debian" "gpuslice_*_$arch.deb")
  rpm[$arch]=$(newest "$target/generate-rpm" "gpuslice-*.${rpm_arch[$arch]}.rpm")
  [ -n "${deb[$arch]}" ] && [ -n "${rpm[$arch]}" ] ||
    fail "no $arch packages in $target: run packaging/build.sh first"
  echo "check.sh: $arch: ${deb[$arch]} and ${rpm[$arch]}"
done
units=(gpusliced.service gpuslice-dra-plugin.service gpuslice-imex@.service)
binaries=(gpusliced gpuslicectl gpuslice-dra-plugin)

echo "== systemd-analyze verify and security"
vroot=$(mktemp -d)
trap 'rm -rf "$vroot"' EXIT
mkdir -p "$vroot/usr/bin" "$vroot/bin" "$vroot/etc/systemd/system" "$vroot/usr/lib/systemd"
cp -a /lib/systemd/system "$vroot/usr/lib/systemd/"
for bin in gpusliced gpuslice-dra-plugin nvidia-imex; do cp /bin/true "$vroot/usr/bin/$bin"; done
cp /bin/sh "$vroot/bin/sh"
for unit in "${units[@]}"; do
  cp "systemd/$unit" "$vroot/etc/systemd/system/"
  # A template is verified as an instance of it (a ComputeDomain's uid).
  instance=${unit/@./@5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d.}
  out=$(systemd-analyze verify --man=no --root="$vroot" "$instance" 2>&1) || fail "verify $unit: $out"
  [ -z "$out" ] || fail "verify $unit printed: $out"
  exposure=$(systemd-analyze security --offline=yes --threshold=30 "systemd/$unit" 2>&1 | tail -n 1) \
    || fail "$unit: $exposure (above 3.0)"
  echo "$unit: verify clean; $exposure"
done

echo "== lintian"
lintian --display-info --pedantic --fail-on error "${deb[amd64]}" "${deb[arm64]}" || fail "lintian reports errors"

echo "== rpmlint"
rpmlint -c packaging/rpmlint.toml "${rpm[amd64]}" "${rpm[arm64]}" || fail "rpmlint reports errors"

echo "== rpm -qpl / -qpc / --scripts"
for arch in amd64 arm64; do
  # Captured first: `rpm ... | grep -q` would fail under pipefail (SIGPIPE).
  files=$(rpm -qpl "${rpm[$arch]}")
  echo "$files"
  flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "${rpm[$arch]}")
  grep -qx 'cn /etc/gpuslice/gpuslice.toml' <<<"$flags" || fail "$arch: gpuslice.toml is not %config(noreplace)"
  scripts=$(rpm -qp --scripts "${rpm[$arch]}")
  echo "$scripts"
  for f in /usr/bin/gpusliced /usr/bin/gpuslicectl /usr/lib/systemd/system/gpusliced.service \
    /usr/lib/systemd/system/gpuslice-imex@.service \
    /usr/lib/sysusers.d/gpuslice.conf /usr/lib/tmpfiles.d/gpusliced.conf /usr/share/man/man8/gpusliced.8.gz \
    /usr/share/bash-completion/completions/gpuslicectl /usr/share/zsh/site-functions/_gpuslicectl \
    /usr/share/fish/vendor_completions.d/gpuslicectl.fish; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the $arch rpm"
  done
  for scriptlet in postinstall preuninstall postuninstall; do
    grep -q "^$scriptlet scriptlet" <<<"$scripts" || fail "no $scriptlet scriptlet in the $arch rpm"
  done
done

# Every package's files, unpacked: $vroot/<arch>.deb/ and $vroot/<arch>.rpm/.
for arch in amd64 arm64; do
  dpkg-deb -x "${deb[$arch]}" "$vroot/$arch.deb"
  mkdir "$vroot/$arch.rpm"
  # rpm2cpio (rpm 4.18) exits 1 when the header has no archive size, which
  # cargo-generate-rpm does not write; cpio's status and the files count.
  rpm2cpio "${rpm[$arch]}" >"$vroot/$arch.cpio" || true
  (cd "$vroot/$arch.rpm" && cpio -idm --quiet <"$vroot/$arch.cpio") || fail "cannot unpack ${rpm[$arch]}"
done

echo "== man pages and shell completions, made by the packaged binaries"
# Where each family's shells look; zsh differs (Debian: vendor-completions).
declare -A zsh_dir=([deb]=usr/share/zsh/vendor-completions [rpm]=usr/share/zsh/site-functions)
for arch in amd64 arm64; do
  for kind in deb rpm; do
    root="$vroot/$arch.$kind"
    for bin in "${binaries[@]}"; do
      for f in "usr/share/man/man8/$bin.8.gz" "usr/share/bash-completion/completions/$bin" \
        "${zsh_dir[$kind]}/_$bin" "usr/share/fish/vendor_completions.d/$bin.fish"; do
        [ -s "$root/$f" ] || fail "$arch .$kind: no /$f"
      done
      # The same text the amd64 binary writes from its clap definition.
      gen="$vroot/amd64.deb/usr/bin/$bin"
      cmp -s <(zcat "$root/usr/share/man/man8/$bin.8.gz") <("$gen" --generate man) ||
        fail "$arch .$kind: $bin.8.gz is not what $bin --generate man writes"
      cmp -s "$root/usr/share/bash-completion/completions/$bin" <("$gen" --generate complete-bash) ||
        fail "$arch .$kind: $bin's bash completion is not what $bin --generate complete-bash writes"
      cmp -s "$root/${zsh_dir[$kind]}/_$bin" <("$gen" --generate complete-zsh) ||
        fail "$arch .$kind: $bin's zsh completion is not what $bin --generate complete-zsh writes"
      cmp -s "$root/usr/share/fish/vendor_completions.d/$bin.fish" <("$gen" --generate complete-fish) ||
        fail "$arch .$kind: $bin's fish completion is not what $bin --generate complete-fish writes"
    done
  done
done
# Every gpuslicectl command is completed.
commands=$("$vroot/amd64.deb/usr/bin/gpuslicectl" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "cannot read gpuslicectl's commands from its --help"
for command in $commands; do
  grep -qw -- "$command" "$vroot/amd64.deb/usr/share/bash-completion/completions/gpuslicectl" ||
    fail "the bash completion of gpuslicectl lacks $command"
done
echo "man pages and bash/zsh/fish completions of ${binaries[*]} in all four packages, as the binaries write them"

echo "== architecture, glibc $glibc floor"
for arch in amd64 arm64; do
  for bin in "${binaries[@]}"; do
    cmp -s "$vroot/$arch.deb/usr/bin/$bin" "$vroot/$arch.rpm/usr/bin/$bin" ||
      fail "$arch: the .deb's and the .rpm's $bin differ"
    got=$(readelf --file-header "$vroot/$arch.deb/usr/bin/$bin" | sed -n 's/^ *Machine: *//p')
    [ "$got" = "${machine[$arch]}" ] || fail "$arch: $bin is built for $got"
  done
  elves=()
  while IFS= read -r -d '' f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && elves+=("$f")
  done < <(find "$vroot/$arch.deb" "$vroot/$arch.rpm" -type f -print0)
  [ "${#elves[@]}" -eq 6 ] || fail "$arch: want 6 ELF files (3 per package), found ${#elves[@]}"
  packaging/glibc-floor.sh "$glibc" "${elves[@]}" || fail "$arch: a binary needs a glibc above $glibc"
  # What the packages declare must not ask for more than the binaries need.
  libc=$(dpkg-deb --field "${deb[$arch]}" Depends | sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p')
  [ -n "$libc" ] || fail "$arch .deb: no libc6 (>= ...) in Depends"
  [ "$(printf '%s\n' "$libc" "$glibc" | sort -V | tail -n 1)" = "$glibc" ] ||
    fail "$arch .deb depends on libc6 (>= $libc), above $glibc"
  req=$(rpm -qpR "${rpm[$arch]}" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1) ||
    fail "$arch .rpm: no libc.so.6(GLIBC_...) in Requires"

  [ "$(printf '%s\n' "$req" "$glibc" | sort -V | tail -n 1)" = "$glibc" ] ||
    fail "$arch .rpm requires libc.so.6(GLIBC_$req), above $glibc"
  echo "$arch: ${machine[$arch]}; .deb Depends libc6 (>= $libc); .rpm requires up to GLIBC_$req"
done

echo "== no crash points or test hooks in the packaged gpusliced"
# They exist only in builds with the `failpoints` feature, which only the
# package's tests turn on (daemon/Cargo.toml); a point's or hook's name in the
# packaged binary means a release build picked the feature up.
points=$(sed -n '/^pub const ALL/,/^];/p' daemon/src/crash.rs | grep -o '"[a-z_]*\.after_[a-z_]*"' | tr -d '"')
[ "$(wc -l <<<"$points")" -ge 20 ] || fail "cannot read the crash point names in daemon/src/crash.rs"
hooks=$(sed -n '/^pub const HOOKS/,/^];/p' daemon/src/crash.rs | grep -o '"[a-z_]*\.[a-z_]*"' | tr -d '"')
[ -n "$hooks" ] || fail "cannot read the test hook names in daemon/src/crash.rs"
for arch in amd64 arm64; do
  for point in $points $hooks; do
    ! grep -aqF "$point" "$vroot/$arch.deb/usr/bin/gpusliced" || fail "crash point or test hook $point is in the $arch gpusliced"
  done
done
echo "none of the $(wc -l <<<"$points") crash points and $(wc -l <<<"$hooks") test hooks is in either gpusliced"

echo "== smoke test: amd64 (native, a p6-b200 node), arm64 (qemu-user, a GB200 node)"
packaging/smoke.py "$vroot/amd64.deb/usr/bin"
packaging/smoke.py --instance p6-b200.48xlarge:8 "$vroot/amd64.deb/usr/bin"
if command -v qemu-aarch64 >/dev/null && [ -e "${qemu_sysroot%/}/lib/ld-linux-aarch64.so.1" ]; then
  packaging/smoke.py "$vroot/arm64.deb/usr/bin" qemu-aarch64 -L "$qemu_sysroot"
  # The arm64 node EKS runs: p6e-gb200.36xlarge, four GB200s on two Grace
  # sockets in one multi-node NVLink domain.
  packaging/smoke.py --instance p6e-gb200.36xlarge:4 "$vroot/arm64.deb/usr/bin" qemu-aarch64 -L "$qemu_sysroot"
elif [ "${GPUSLICE_REQUIRE_TOOLS:-}" = 1 ]; then
  fail "arm64 smoke test: needs qemu-aarch64 (apt qemu-user) and the arm64 glibc in $qemu_sysroot (apt libc6:arm64)"
else
  echo "check.sh: SKIP arm64 smoke test: no qemu-aarch64 (apt qemu-user) or no arm64 glibc in $qemu_sysroot (apt libc6:arm64)"
fi

echo "== dpkg -i / -r / -P on this host (amd64)"
[ "$(id -u)" = 0 ] || fail "the install test needs root"
dpkg -i "${deb[amd64]}"
for f in /usr/bin/gpusliced /usr/bin/gpuslicectl /usr/lib/systemd/system/gpusliced.service \
    /usr/lib/systemd/system/gpuslice-imex@.service \
  /usr/lib/sysusers.d/gpuslice.conf /usr/lib/tmpfiles.d/gpusliced.conf \
  /usr/share/man/man8/gpusliced.8.gz /usr/share/man/man8/gpuslicectl.8.gz /etc/gpuslice/gpuslice.toml \
  /usr/share/man/man8/gpuslice-dra-plugin.8.gz /usr/share/bash-completion/completions/gpuslicectl \
  /usr/share/zsh/vendor-completions/_gpuslicectl /usr/share/fish/vendor_completions.d/gpuslicectl.fish; do
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
