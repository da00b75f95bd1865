#!/usr/bin/env bash
# Configures (once) and builds saccade and its tests, Release, with ccache when present.
#   scripts/build.sh                          in build/
#   scripts/build.sh build-sanitize -DSACCADE_SANITIZE=ON   another folder; CMake flags for its first configure
# SACCADE_BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# The precompiled header differs from the sources' include path; let ccache accept it.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
dir=${1:-build}
shift || true
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$dir" -j2 ${SACCADE_BUILD_TARGETS:+--target $SACCADE_BUILD_TARGETS}
