#!/usr/bin/env bash
# Installs what is missing, builds everything and runs the whole test suite (the README's test command; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
