#!/usr/bin/env bash
# Builds the gpuslice .deb (cargo-deb) and .rpm (cargo-generate-rpm) for
# amd64 (x86_64) and arm64 (aarch64), every binary linked against glibc 2.28
# (docs/packaging.md says why and which distributions that covers).
#
#   packaging/build.sh          # CARGO_TARGET_DIR is honoured (default ./target)
#   packaging/build.sh --amd64  # the amd64 packages only (no arm64 tools needed),
#                               # e.g. for the nspawn tests (tests/README.md)
#
# Output, in $TARGET (CARGO_TARGET_DIR, default ./target):
#   debian/gpuslice_<version>-1_amd64.deb      generate-rpm/gpuslice-<version>-1.x86_64.rpm
#   debian/gpuslice_<version>-1_arm64.deb      generate-rpm/gpuslice-<version>-1.aarch64.rpm
# from the binaries in $TARGET/<triple>/release/ (with --amd64, the first row only).
#
# How: cargo-zigbuild links with zig, whose glibc stubs are those of the
# version in the target's suffix (x86_64-unknown-linux-gnu.2.28), so no
# symbol newer than 2.28 can be linked in. amd64 compiles with the default
# toolchain; arm64 with a rustc that has the aarch64 standard library:
# GPUSLICE_ARM64_RUSTC, default Debian's rustc-web (/usr/bin/rustc) with
# libstd-rust-web-dev:arm64. Needs: cargo-zigbuild, zig (on PATH, or the
# `ziglang` Python package: CARGO_ZIGBUILD_PYTHON_PATH names its python),
# cargo-deb, cargo-generate-rpm; .ci/run installs them all.
#
# One package, gpuslice, holds gpusliced, gpuslicectl (the ctl/ crate) and
# gpuslice-dra-plugin (the dra-plugin/ crate), their man pages and shell
# completions, configs and units; the metadata is in daemon/Cargo.toml. Each
# stage prints its wall time. The binaries' --version carries the git commit
# (gpuslice-cli's build script); from a tarball without .git, set
# GPUSLICE_GIT_COMMIT (and GPUSLICE_GIT_DATE, YYYY-MM-DD, for the man pages'
# date).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
glibc=2.28
arm64_rustc="${GPUSLICE_ARM64_RUSTC:-/usr/bin/rustc}"
binaries=(gpusliced gpuslicectl gpuslice-dra-plugin)

fail() { echo "build.sh: $*" >&2; exit 1; }
with_arm64=yes
case "${1:-}" in
  "") ;;
  --amd64) with_arm64=no ;;
  *) fail "usage: packaging/build.sh [--amd64] (unknown argument: $1)" ;;
esac
for tool in cargo-zigbuild cargo-deb cargo-generate-rpm; do
  command -v "$tool" >/dev/null || fail "$tool is missing (.ci/run installs it)"
done
command -v "${CARGO_ZIGBUILD_ZIG_PATH:-zig}" >/dev/null ||
  "${CARGO_ZIGBUILD_PYTHON_PATH:-python3}" -m ziglang version >/dev/null 2>&1 ||
  fail "zig is missing: put it on PATH or pip install ziglang (.ci/run does)"
if [ "$with_arm64" = yes ]; then
  arm64_std=$("$arm64_rustc" --print target-libdir --target aarch64-unknown-linux-gnu 2>/dev/null || true)
  compgen -G "${arm64_std:-/nonexistent}/libstd-*.rlib" >/dev/null ||
    fail "$arm64_rustc has no aarch64 standard library: apt-get install rustc-web libstd-rust-web-dev:arm64, or set GPUSLICE_ARM64_RUSTC (or build.sh --amd64)"
fi

# Runs "$@" and prints how long it took, under the stage's name ($1).
stage() {
  local name="$1" start=$SECONDS
  shift
  echo "== build.sh: $name"
  "$@"
  echo "== build.sh: $name: $((SECONDS - start)) s"
}

# The release binaries of one target triple, linked against glibc $glibc.
compile() {
  cargo zigbuild --release --locked --target "$1.$glibc" -p gpuslice -p gpuslicectl -p gpuslice-dra-plugin
}
compile_arm64() { RUSTC="$arm64_rustc" compile aarch64-unknown-linux-gnu; }

# Section 8 man pages and bash, zsh and fish completions, which each binary
# writes from its own clap definition (its hidden --generate; the pages add
# the sections of packaging/man/<binary>.roff). Run on the host's (amd64)
# binaries: the arm64 ones are cross-built and do not run here, and their
# definitions, hence the files, are the same. Laid out under
# <release>/man/ and <release>/completions/{bash,zsh,fish}/ as the package
# metadata in daemon/Cargo.toml expects.
generated_files() {
  local amd64="$target/x86_64-unknown-linux-gnu/release" arm64="$target/aarch64-unknown-linux-gnu/release"
  local out="$amd64"
  rm -rf "$amd64/man" "$amd64/completions"
  mkdir -p "$out/man" "$out/completions/bash" "$out/completions/zsh" "$out/completions/fish"
  for bin in "${binaries[@]}"; do
    "$amd64/$bin" --generate man >"$out/man/$bin.8"
    gzip -9n --force "$out/man/$bin.8"
    "$amd64/$bin" --generate complete-bash >"$out/completions/bash/$bin"
    "$amd64/$bin" --generate complete-zsh >"$out/completions/zsh/_$bin"
    "$amd64/$bin" --generate complete-fish >"$out/completions/fish/$bin.fish"
  done
  if [ "$with_arm64" = yes ]; then
    rm -rf "$arm64/man" "$arm64/completions"
    cp -r "$amd64/man" "$amd64/completions" "$arm64/"
  fi
}

# Both packages of one triple. The asset paths under target/release/ in
# daemon/Cargo.toml become target/<triple>/release/ with --target (both
# tools); the .rpm's payload is xz, which every rpm since RHEL 6 reads.
package() {
  cargo deb -p gpuslice --no-build --no-strip --locked --target "$1" --output "$target/debian/"
  mkdir -p "$target/generate-rpm"
  cargo generate-rpm -p daemon --target-dir "$target" --target "$1" \
    --payload-compress xz --output "$target/generate-rpm/"
}

stage "amd64: cargo zigbuild (x86_64, glibc $glibc)" compile x86_64-unknown-linux-gnu
if [ "$with_arm64" = yes ]; then
  stage "arm64: cargo zigbuild (aarch64, glibc $glibc, $("$arm64_rustc" --version))" compile_arm64
fi
stage "man pages and shell completions (amd64 binaries' --generate)" generated_files
stage "amd64: .deb and .rpm" package x86_64-unknown-linux-gnu
if [ "$with_arm64" = yes ]; then
  stage "arm64: .deb and .rpm" package aarch64-unknown-linux-gnu
fi
ls -l "$target"/debian/gpuslice_*.deb "$target"/generate-rpm/gpuslice-*.rpm
