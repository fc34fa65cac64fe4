# shellcheck shell=bash
# ccache.sh - sourced by the build scripts: sets COMPILER_LAUNCHER to the CMake arguments that
# compile through ccache (C, C++ and CUDA), or that compile without it where ccache is missing
# or PLEXUS_CCACHE=0. The cache is ccache's own (~/.cache/ccache unless configured otherwise) and is
# shared by every clone on the machine: CCACHE_BASEDIR makes the paths in each command relative
# to the clone's root, so a second clone (CI's, a worktree) hits what the first compiled.
# A hit returns the object the same command compiled before; a changed source, flag or header
# misses. Only build speed depends on it.
# shellcheck disable=SC2034  # read by the scripts that source this file
# Off: empty launchers, so that a build folder configured with ccache before stops using it.
COMPILER_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=
                   -DCMAKE_CUDA_COMPILER_LAUNCHER=)
if [[ ${PLEXUS_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  # The working directory goes into the debug information only; leaving it out of the hash
  # lets Debug builds hit across clones too.
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  # What ccache needs to cache compiles that use a precompiled header (the tests':
  # tests/support/test_pch.h) rather than pass them to the compiler uncached.
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
  COMPILER_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                     -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
