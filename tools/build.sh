#!/usr/bin/env bash
# Configures and builds dtsim in build/ (Release). Extra arguments go to the build step.
#   --sanitize  builds instead in build-sanitize/ with AddressSanitizer and UndefinedBehaviorSanitizer (optimized,
#               with debug information for readable reports); tools/test.sh --sanitize runs the suite on it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
config=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  dir=build-sanitize
  config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDTSIM_SANITIZE=ON)
fi
cmake -S . -B "$dir" "${config[@]}" > /dev/null
cmake --build "$dir" -j "$(nproc)" "$@"
