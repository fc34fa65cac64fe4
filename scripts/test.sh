#!/usr/bin/env bash
# test.sh - the README's test command: set up, fetch the data the end-to-end tests use, build,
# and run the whole test suite with CTest; then, for the whole suite (no arguments), the
# sanitizer jobs (scripts/test-sanitizers.sh: ASan+UBSan and TSan builds of their own) and the
# fuzzers, each for a bounded time (scripts/test-fuzz.sh). Arguments go to ctest alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch-data.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2 --timeout 900 "$@")
if (($# == 0)); then
  scripts/test-sanitizers.sh
  BUILD_DIR=build-fuzz scripts/test-fuzz.sh
fi
