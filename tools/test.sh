#!/usr/bin/env bash
# Installs what is missing, builds everything and runs the whole test suite (the README's test command; CI runs it).
#   --sanitize  the same on the sanitizer build (tools/build.sh --sanitize, build-sanitize/): any AddressSanitizer or
#               UndefinedBehaviorSanitizer report fails the test it happened in.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --tests
if [ "${1:-}" = "--sanitize" ]; then
  tools/build.sh --sanitize
  # Leak checking stays on: a leak is a finding like any other. The stack trace makes a UBSan report actionable.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)"
else
  tools/build.sh
  # The fuzz harnesses' sanitized clang build is a build step: the fuzz.readers test then only fuzzes (exit 77, no
  # clang with libFuzzer: the test is skipped, and so is this).
  tests/fuzz.sh build --build-only || [ $? -eq 77 ]
  ctest --test-dir build --output-on-failure -j "$(nproc)"
fi
