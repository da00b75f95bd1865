#!/usr/bin/env bash
# The test command: installs missing system packages, builds, checks formatting, runs every test.
#   scripts/test.sh              everything (unit + end-to-end)
#   scripts/test.sh -LE e2e      extra arguments go to ctest (here: skip the end-to-end tests)
#   scripts/test.sh --sanitize   the same suite built with AddressSanitizer, UndefinedBehaviorSanitizer
#                                and libstdc++'s assertions, in build-sanitize/
#   scripts/test.sh --debian13 [ARGS]   the same, against Debian 13's LibTorch 2.6 and GCC 14, in a
#                                Debian 13 root made once (scripts/debian13.sh), in build-debian13/;
#                                with --prepare it only makes that root
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--debian13" ]; then
  shift
  exec scripts/debian13.sh "$@"
fi

# SACCADE_BUILD_SUFFIX keeps another system's build folders apart from this one's.
dir=build${SACCADE_BUILD_SUFFIX:-}
cmake_flags=()
if [ "${1:-}" = "--sanitize" ]; then
  shift
  dir=build-sanitize${SACCADE_BUILD_SUFFIX:-}
  cmake_flags=(-DSACCADE_SANITIZE=ON)
  # Leaks are checked for saccade's code; LibTorch and OpenMP keep process-lifetime allocations.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/sanitizer_suppressions.txt:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi

scripts/setup.sh
scripts/build.sh "$dir" "${cmake_flags[@]}"
scripts/check_format.sh

export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
# What saccade would otherwise re-execute itself to set (src/cli/runtime.h), once per test.
export OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-4}
cd "$dir"
ctest --output-on-failure --timeout 600 -j2 "$@"
