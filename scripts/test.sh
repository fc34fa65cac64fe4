#!/usr/bin/env bash
# test.sh - the README's test command: set up, fetch the data the end-to-end tests use, build,
# and run the whole test suite with CTest. With PLEXUS_TEST_SANITIZERS=1 and no arguments it
# then runs the sanitizer jobs (scripts/test-sanitizers.sh: ASan+UBSan and TSan builds of their
# own) and the fuzzers for a bounded time (scripts/test-fuzz.sh); they are not yet part of CI
# (their time on CI's 2 cores is not measured). Arguments go to ctest alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch-data.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2 --timeout 900 "$@")
if (($# == 0)) && [[ ${PLEXUS_TEST_SANITIZERS:-0} == 1 ]]; then
  scripts/test-sanitizers.sh
  BUILD_DIR=build-fuzz scripts/test-fuzz.sh
fi
