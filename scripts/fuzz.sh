#!/usr/bin/env bash
# Fuzzes one reader of outside input with libFuzzer (fuzz/fuzz_targets.h lists the targets).
# Builds the clang fuzz binaries in build-fuzz/ (first run: several minutes), then mutates the
# seeds of fuzz/corpus/TARGET for SECONDS. New inputs go to build-fuzz/corpus/TARGET; a finding
# is saved as build-fuzz/findings/TARGET/crash-* (or leak-, timeout-, oom-): once fixed, copy
# it into fuzz/corpus/TARGET/, where the test suite replays it from then on.
#   scripts/fuzz.sh json 60
#   scripts/fuzz.sh config 600 -jobs=2     more arguments go to libFuzzer
set -euo pipefail
cd "$(dirname "$0")/.."
# Every target has a seed corpus of its own, which the test suite replays.
targets=$(cd fuzz/corpus && echo *)
if [ $# -lt 2 ] || [[ " $targets " != *" $1 "* ]] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags]; TARGET is one of: $targets" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2

scripts/setup.sh --fuzz
SACCADE_BUILD_TARGETS="saccade_fuzz_$target" scripts/build.sh build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DSACCADE_FUZZ=ON
mkdir -p "build-fuzz/corpus/$target" "build-fuzz/findings/$target"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
"build-fuzz/fuzz/saccade_fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$target/" "$@" \
  "build-fuzz/corpus/$target" "fuzz/corpus/$target"
