#!/usr/bin/env bash
# The libFuzzer harnesses of fuzz/, each run for a fixed time on its seed corpus (docs/guide.md "Sanitizer build
# and fuzzing"): built with clang, AddressSanitizer and UndefinedBehaviorSanitizer in BUILD/fuzz, then each reader fed
# what libFuzzer mutates from the repository's own scenarios, measurement files, nccl-tests outputs and --set values.
# A crash, a sanitizer report, or a reader that refuses with anything but its own error type fails it, and libFuzzer
# leaves the input as BUILD/fuzz/crash-*. Exit 77 (ctest's "skipped") where clang or libFuzzer is missing.
#   tests/fuzz.sh BUILD [SECONDS_PER_HARNESS]   (default 15)
#   tests/fuzz.sh BUILD --build-only           builds the harnesses and stops: tools/test.sh runs this before ctest,
#                                              so that the test's time is the fuzzing (a second, sanitized build of
#                                              the whole project inside a test ran into its timeout on a busy machine)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
seconds=${2:-15}
build_only=false
[ "$seconds" = --build-only ] && build_only=true

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/f.cpp"
if ! command -v clang++ > /dev/null || ! clang++ -fsanitize=fuzzer "$probe/f.cpp" -o "$probe/f" 2> /dev/null; then
  echo "fuzzing skipped: no clang++ with libFuzzer (Debian's clang package provides both)"
  exit 77
fi

# -O1 and line tables only: the build is most of this test's time, and a report still names file and line.
cmake -S "$src" -B "$build/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DDTSIM_FUZZ=ON -DDTSIM_BUILD_TESTS=OFF \
  -DDTSIM_BUILD_CUDA_PROBE=OFF > /dev/null
cmake --build "$build/fuzz" -j "$(nproc)" --target dtsim_fuzz > "$build/fuzz/build.log" 2>&1 ||
  { tail -50 "$build/fuzz/build.log"; exit 1; }
$build_only && exit 0

status=0
for harness in scenario overrides measurements nccl_tests chakra kineto; do
  # A scratch corpus: the seeds stay as written, what libFuzzer adds goes away with the run.
  corpus="$probe/$harness"
  mkdir -p "$corpus"
  cp -r "$build/fuzz/fuzz/seeds/$harness/." "$corpus/"
  # Chakra traces are binary: their seeds are what `dtsim export` writes (the build beside this one has the binary),
  # each rank's file after a leading even byte (the harness reads the rest as one rank's file). An all-reduce between
  # two single-GPU nodes and a GPT-2 step on one GPU.
  if [ "$harness" = chakra ] && [ -x "$build/dtsim" ]; then
    "$build/dtsim" export "$src/scenarios/quickstart.json" --set cluster.nodes=2 --chakra "$probe/export" > /dev/null
    "$build/dtsim" export "$src/scenarios/gpt2-h100-micro-batch-1.json" --chakra "$probe/export" > /dev/null
    for trace in "$probe/export"/*.et; do
      { printf '\0'; cat "$trace"; } > "$corpus/exported-$(basename "$trace")"
    done
  fi
  echo "== ${harness}_fuzzer, ${seconds} s"
  if ! (cd "$build/fuzz" && "./fuzz/${harness}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict="$src/fuzz/dtsim.dict" -print_final_stats=1 "$corpus" 2>&1 | tail -n 25); then
    status=1
  fi
done
exit $status
