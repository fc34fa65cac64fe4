#!/usr/bin/env bash
# test-fuzz.sh - builds the libFuzzer targets of tests/fuzz/ with clang++ (ASan and UBSan) into a
# build of their own and runs each for a bounded time, starting from its checked-in corpus. Fails
# if any finds an input that crashes, breaks a property the target checks, leaks, runs past
# -timeout or allocates past the memory limits; the input is saved under
# $BUILD_DIR/fuzz-runs/<target>/ and the log names it. To keep a fixed crash as a regression
# input, copy it to tests/fuzz/corpus/<target>/regression-<what>.
# Installs clang and libFuzzer (Debian 12: clang, libclang-rt-14-dev) when missing, as setup.sh
# installs its packages. Inputs the fuzzers find that add coverage go to
# $BUILD_DIR/fuzz-runs/<target>/new/, never into the checked-in corpus.
# Usage: scripts/test-fuzz.sh [target...]     (default: every target; e.g. topology_json)
#   FUZZ_SECONDS  seconds per target (default 30)
#   FUZZ_JOBS     targets run at once (default: the number of cores)
#   BUILD_DIR     the fuzz build (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-30}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
TARGETS=("$@")
if ((${#TARGETS[@]} == 0)); then
  TARGETS=(placement rendezvous_wire env_settings topology_json checkpoint_file shard_file
           checkpoint_manifest)
fi

fuzzer_runtime() {
  command -v clang++ >/dev/null 2>&1 &&
    echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null
}
if ! fuzzer_runtime; then
  echo "test-fuzz: installing clang and libFuzzer"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    clang libclang-rt-14-dev
fi

start=$SECONDS
source scripts/ccache.sh
# Debug keeps assertions (nlohmann-json's included); its -g is left out (the fuzzers add line
# tables), which shortens the build.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG= -DCMAKE_C_FLAGS_DEBUG= \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DPLEXUS_BUILD_FUZZERS=ON \
  -DPLEXUS_CUDA=OFF -DPLEXUS_BUILD_PERF=OFF "${COMPILER_LAUNCHER[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${TARGETS[@]/%/_fuzzer}"
echo "test-fuzz: built ${#TARGETS[@]} fuzzers in $((SECONDS - start)) s"

runs="$BUILD_DIR/fuzz-runs"
rm -rf "$runs"
run_one() {
  local target=$1 dir="$runs/$1"
  mkdir -p "$dir/new"
  # -rss_limit_mb: the process as a whole; -malloc_limit_mb: any one allocation (a size read from
  # the input and trusted shows up here); -timeout: seconds for one input (the largest topology
  # document allowed, 2^22 objects, takes about 8 s under ASan).
  if "$BUILD_DIR/bin/${target}_fuzzer" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
      -malloc_limit_mb=512 -timeout=30 -print_final_stats=1 -artifact_prefix="$dir/" \
      "$dir/new" "tests/fuzz/corpus/$target" >"$dir/log" 2>&1; then
    echo "test-fuzz: $target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" |
      grep -o '[0-9]*$') inputs in ${FUZZ_SECONDS} s, nothing found"
  else
    echo "test-fuzz: $target FAILED; the end of $dir/log:"
    tail -n 40 "$dir/log"
    return 1
  fi
}
export -f run_one
export BUILD_DIR FUZZ_SECONDS runs
start=$SECONDS
status=0
printf '%s\n' "${TARGETS[@]}" | xargs -P "$FUZZ_JOBS" -I{} bash -c 'run_one {}' || status=1
echo "test-fuzz: ran ${#TARGETS[@]} fuzzers in $((SECONDS - start)) s"
exit $status
