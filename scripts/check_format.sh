#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (with .clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || true)
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(find src tests -name '*.cpp' -o -name '*.h')
fi
bad=()
for file in "${files[@]}"; do
  [ -f "$file" ] || continue
  if ! clang-format --dry-run --Werror "$file" >/dev/null 2>&1; then bad+=("$file"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format.sh: clang-format would change: ${bad[*]}" >&2
  echo "HINT: clang-format -i ${bad[*]}" >&2
  exit 1
fi
