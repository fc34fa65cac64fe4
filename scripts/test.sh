#!/usr/bin/env bash
# test.sh - the README's test command: set up, fetch the data the end-to-end tests use, build,
# and run the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch-data.sh
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure -j 2 --timeout 900 "$@"
