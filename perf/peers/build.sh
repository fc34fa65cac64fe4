#!/usr/bin/env bash
# build.sh - builds the peer benchmarks and the memory-bandwidth probe for perf/compare.sh.
#
#   perf/peers/build.sh [OUT_DIR]        (default: build/peers)
#
# Not part of the CMake build: CI needs none of these packages. Each peer is built when its
# package is installed and skipped with a note otherwise (perf/compare.sh installs them):
#   OUT_DIR/gloo_bench           libgloo-dev               g++ ... -lgloo
#   OUT_DIR/mpi_bench_openmpi    libopenmpi-dev            mpicxx.openmpi
#   OUT_DIR/mpi_bench_mpich      libmpich-dev              mpicxx.mpich
#   OUT_DIR/stream_bound         (none)                    g++ -O3 -march=native
# Exit status: 0 when everything that could be built was built, 1 when a compile failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/peers}
mkdir -p "$out"
cxxflags=(-O2 -std=c++17 -Wall -Wextra -I"$root")
harness=("$here/peer_harness.cpp")
status=0

build() {  # build NAME COMMAND...
  local name=$1
  shift
  if "$@"; then
    echo "build.sh: built $out/$name"
  else
    echo "build.sh: FAILED to build $name" >&2
    status=1
  fi
}

if [[ -f /usr/include/gloo/allreduce.h ]]; then
  build gloo_bench g++ "${cxxflags[@]}" "$here/gloo_bench.cpp" "${harness[@]}" -lgloo -pthread \
    -o "$out/gloo_bench"
else
  echo "build.sh: skipping gloo_bench (apt-get install libgloo-dev)"
fi
if command -v mpicxx.openmpi >/dev/null; then
  build mpi_bench_openmpi mpicxx.openmpi "${cxxflags[@]}" -DOMPI_SKIP_MPICXX "$here/mpi_bench.cpp" \
    "${harness[@]}" -o "$out/mpi_bench_openmpi"
else
  echo "build.sh: skipping mpi_bench_openmpi (apt-get install openmpi-bin libopenmpi-dev)"
fi
if command -v mpicxx.mpich >/dev/null; then
  build mpi_bench_mpich mpicxx.mpich "${cxxflags[@]}" -DMPICH_SKIP_MPICXX "$here/mpi_bench.cpp" \
    "${harness[@]}" -o "$out/mpi_bench_mpich"
else
  echo "build.sh: skipping mpi_bench_mpich (apt-get install mpich libmpich-dev)"
fi
build stream_bound g++ -O3 -march=native -std=c++17 -pthread "$root/perf/compare/stream_bound.cpp" \
  -o "$out/stream_bound"
exit $status
