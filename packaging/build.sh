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
# gpuslice-dra-plugin (the shim package in shim/) is packaged only when its
# release binary exists after the build: then the `shim` variants of the
# metadata in daemon/Cargo.toml are used (same package name, plus the plugin's
# binary, man page, config and unit). See the marked blocks there.
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

packages=(-p gpuslice)
if [ -f shim/Cargo.toml ]; then
  packages+=(-p gpuslice-dra-plugin)
fi
cargo build --release --locked "${packages[@]}"

variant=()
binaries=(gpusliced gpuslicectl)
if [ -x "$release/gpuslice-dra-plugin" ]; then
  variant=(--variant shim)
  binaries+=(gpuslice-dra-plugin)
else
  echo "build.sh: no $release/gpuslice-dra-plugin; packaging without the DRA plugin" >&2
fi

# Section 8 man pages: each binary's --help and --version, plus the NAME,
# DESCRIPTION, FILES, SIGNALS... sections in packaging/man/<binary>.h2m.
mkdir -p "$release/man"
for bin in "${binaries[@]}"; do
  help2man --no-info --section 8 --include "packaging/man/$bin.h2m" \
    --output "$release/man/$bin.8" "$release/$bin"
  gzip -9n --force "$release/man/$bin.8"
done

cargo deb -p gpuslice --no-build --locked "${variant[@]}" --output "$target/debian/"
cargo generate-rpm -p daemon --target-dir "$target" "${variant[@]}"
ls -l "$target"/debian/gpuslice_*.deb "$target"/generate-rpm/gpuslice-*.rpm
