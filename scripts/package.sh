#!/usr/bin/env bash
# package.sh - builds Plexus's Debian packages (libplexus0, libplexus-dev, plexus-tools,
# python3-plexus; comm/install/package.cmake) into $DEB_BUILD_DIR (default build-deb/) and
# prints their paths. Install them with `sudo apt install ./build-deb/*.deb`.
# The packages are built without CUDA: Debian 12 has no CUDA 13 runtime (cuBLAS) that a package
# could depend on. A CUDA build is installed with `cmake --install` instead (README).
# Compiles through ccache (scripts/ccache.sh), like setup.sh; needs what setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
DEB_BUILD_DIR=${DEB_BUILD_DIR:-build-deb}
source scripts/ccache.sh
cmake -S . -B "$DEB_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DPLEXUS_CUDA=OFF -DPLEXUS_TORCH=OFF -DPLEXUS_BUILD_TESTS=OFF "${COMPILER_LAUNCHER[@]}" \
  >/dev/null
cmake --build "$DEB_BUILD_DIR" -j "$(nproc)"
rm -f "$DEB_BUILD_DIR"/*.deb
if ! (cd "$DEB_BUILD_DIR" && cpack -G DEB >cpack.log 2>&1); then
  cat "$DEB_BUILD_DIR/cpack.log" >&2
  echo "package: cpack failed (log above, in $DEB_BUILD_DIR/cpack.log)" >&2
  exit 1
fi
ls "$DEB_BUILD_DIR"/*.deb
