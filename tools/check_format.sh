#!/usr/bin/env bash
# Every C++ and CUDA file git tracks is formatted as .clang-format says (clang-format --dry-run --Werror); the files
# that are not are listed. Exit 77 (ctest's "skipped") where clang-format is missing.
#   tools/check_format.sh   (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format > /dev/null; then
  echo "format check skipped: no clang-format (Debian's clang-format package)"
  exit 77
fi
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "format check skipped: not a git checkout (the tracked files are what it checks)"
  exit 77
fi
unformatted=()
while IFS= read -r -d '' file; do
  clang-format --dry-run --Werror "$file" > /dev/null 2>&1 || unformatted+=("$file")
done < <(git ls-files -z -- '*.cpp' '*.hpp' '*.h' '*.cu')
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "not formatted as .clang-format says (clang-format -i FILE formats one):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
echo "every tracked C++ and CUDA file is formatted"
