#!/usr/bin/env bash
# test.sh - the README's test command, and CI's (.ci/run): set up, fetch the data the end-to-end
# tests use, build, run the whole test suite with CTest, then the sanitizer jobs
# (scripts/test-sanitizers.sh: ASan+UBSan and TSan builds of their own) and each fuzzer for
# FUZZ_SECONDS (default 20; scripts/test-fuzz.sh). PLEXUS_TEST_SANITIZERS=0 leaves the sanitizer
# and fuzz jobs out; arguments go to ctest alone, and also leave them out.
# Every stage runs even after one fails; the exit status is non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh
scripts/fetch-data.sh
echo "test: set up in $((SECONDS - start)) s"
BUILD_DIR=${BUILD_DIR:-build}
status=0
stage=$SECONDS
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2 --timeout 900 "$@") 2>&1 |
  tee "$BUILD_DIR/ctest-output.log" || status=1
echo "test: ctest took $((SECONDS - stage)) s"
if (($# == 0)) && [[ ${PLEXUS_TEST_SANITIZERS:-1} != 0 ]]; then
  stage=$SECONDS
  scripts/test-sanitizers.sh || status=1
  echo "test: sanitizer jobs took $((SECONDS - stage)) s"
  stage=$SECONDS
  FUZZ_SECONDS=${FUZZ_SECONDS:-20} BUILD_DIR=build-fuzz scripts/test-fuzz.sh || status=1
  echo "test: fuzzers took $((SECONDS - stage)) s"
fi
echo "test: $((SECONDS - start)) s in all; the suite's result again:"
grep -E '^[0-9]+% tests passed' "$BUILD_DIR/ctest-output.log" || true
exit $status
