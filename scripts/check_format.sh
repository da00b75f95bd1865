#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (with .clang-format) would write.
# The style is kept with clang-format 14 (Debian 12's); other versions format some constructs
# differently, so where clang-format is another version the check says so and is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
pinned=14
version=$(clang-format --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p')
if [ "$version" != "$pinned" ]; then
  echo "check_format.sh: skipped: clang-format ${version:-is missing}${version:+ is not $pinned}, the version the style is kept with"
  exit 0
fi
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
