#!/usr/bin/env bash
# The test command: installs missing system packages, builds, checks formatting, runs every test.
#   scripts/test.sh            everything (unit + end-to-end)
#   scripts/test.sh -LE e2e    extra arguments go to ctest (here: skip the end-to-end tests)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh
scripts/check_format.sh

export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
cd build
ctest --output-on-failure --timeout 600 -j2 "$@"
