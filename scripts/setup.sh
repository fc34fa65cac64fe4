#!/usr/bin/env bash
# setup.sh - installs what Plexus needs from Debian 12 and builds it (Release) into build/.
# python3-torch, libtorch-dev and pybind11-dev are for plexus_torch, the torch.distributed
# backend (build/python/); without them CMake skips it and says so. python3-numpy is for the
# NumPy binding (python/plexus), openmpi-bin for its test under mpirun, dpkg-dev
# (dpkg-shlibdeps) for scripts/package.sh, gnuplot-nox for plexus-train --plot.
# Idempotent: packages already present are not reinstalled and the build is incremental.
# Compiles through ccache (scripts/ccache.sh; PLEXUS_CCACHE=0 turns it off).
# Usage: scripts/setup.sh [--main-job]   (BUILD_DIR and CMAKE_ARGS may be set in the environment)
#   --main-job  builds only what the main job runs (target plexus_main_job: the library, the
#               plugins, plexus-run, plexus-train); the tests and benchmarks are left for test.sh.
#               On a new build folder where no GPU driver is present (no libcuda.so.1 known to
#               the loader, no /dev/nvidiactl) it also leaves out the CUDA code, which nothing
#               could run there; the next full set-up (test.sh, CI) of that folder compiles it
#               when a toolkit is installed. PLEXUS_CUDA in CMAKE_ARGS overrides both.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  "" | --main-job) ;;
  *) echo "setup: unknown argument '$1' (the only one is --main-job)" >&2; exit 2 ;;
esac

PACKAGES=(build-essential cmake pkg-config git
  libfabric-dev libfabric-bin libhwloc-dev libucx-dev libboost-dev libopenblas-dev libssl-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  python3-torch libtorch-dev pybind11-dev python3-numpy ccache
  dpkg-dev gnuplot-nox openmpi-bin
  nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm may come from elsewhere than Debian (as on CI images): accept any working npm.
if command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
source scripts/ccache.sh
# CUDA: the main job's first configure of a build folder on a host without a GPU driver leaves
# the CUDA code out (and says so in a marker file); the next full set-up of that folder turns it
# back to AUTO. Any other configure keeps what the folder has. A PLEXUS_CUDA in CMAKE_ARGS
# (which comes later and wins) leaves the folder unmarked.
# The loader's list is read whole before it is searched: with pipefail, `ldconfig -p | grep -q`
# fails whenever grep exits on its match before ldconfig has written the rest (SIGPIPE).
gpu_driver_known() {
  local libraries
  libraries=$(/sbin/ldconfig -p 2>/dev/null) || true
  [[ $libraries == *'libcuda.so.1 '* ]]
}
cuda_arg=()
marker=$BUILD_DIR/.main-job-without-cuda
if [[ ${1:-} == --main-job && ! -f $BUILD_DIR/CMakeCache.txt && ! -e /dev/nvidiactl &&
      ${CMAKE_ARGS:-} != *PLEXUS_CUDA* ]] && ! gpu_driver_known; then
  cuda_arg=(-DPLEXUS_CUDA=OFF)
  mkdir -p "$BUILD_DIR" && touch "$marker"
  echo "setup: no GPU driver here: the main job is built without its CUDA code"
elif [[ ${1:-} != --main-job && -f $marker ]]; then
  cuda_arg=(-DPLEXUS_CUDA=AUTO)
  rm -f "$marker"
fi
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of words
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${COMPILER_LAUNCHER[@]}" \
  "${cuda_arg[@]+"${cuda_arg[@]}"}" ${CMAKE_ARGS:-} >/dev/null
targets=()
[[ ${1:-} == --main-job ]] && targets=(--target plexus_main_job)
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
echo "setup: built into $BUILD_DIR/"
