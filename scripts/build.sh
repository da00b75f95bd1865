#!/usr/bin/env bash
# Configures (once) and builds saccade and its tests in build/, Release, with ccache when present.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# The precompiled header differs from the sources' include path; let ccache accept it.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build build -j2
