#!/usr/bin/env bash
# Builds the gpuslice .deb (cargo-deb) and .rpm (cargo-generate-rpm):
# release binaries, man pages from their --help (help2man), then both packages.
#
#   packaging/build.sh          # CARGO_TARGET_DIR is honoured (default ./target)
#
# Output: $TARGET/debian/gpuslice_<version>-1_amd64.deb and
#         $TARGET/generate-rpm/gpuslice-<version>-1.x86_64.rpm
# Needs: cargo-deb, cargo-generate-rpm (cargo install --locked), help2man.
#
# One package, gpuslice, holds gpusliced, gpuslicectl and gpuslice-dra-plugin
# (the shim/ crate), their man pages, configs and units; the metadata is in
# daemon/Cargo.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
release="$target/release"

for tool in cargo-deb cargo-generate-rpm help2man; do
  command -v "$tool" >/dev/null || {
    echo "build.sh: $tool is missing (.ci/run installs it)" >&2
    exit 1
  }
done

cargo build --release --locked -p gpuslice -p gpuslice-dra-plugin
binaries=(gpusliced gpuslicectl gpuslice-dra-plugin)

# Section 8 man pages: each binary's --help and --version, plus the NAME,
# DESCRIPTION, FILES, SIGNALS... sections in packaging/man/<binary>.h2m.
mkdir -p "$release/man"
for bin in "${binaries[@]}"; do
  help2man --no-info --section 8 --include "packaging/man/$bin.h2m" \
    --output "$release/man/$bin.8" "$release/$bin"
  gzip -9n --force "$release/man/$bin.8"
done

cargo deb -p gpuslice --no-build --locked --output "$target/debian/"
cargo generate-rpm -p daemon --target-dir "$target"
ls -l "$target"/debian/gpuslice_*.deb "$target"/generate-rpm/gpuslice-*.rpm
