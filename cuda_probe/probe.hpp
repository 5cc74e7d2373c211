// The probe's run: options, the context every family gets, and the families (one source file each).
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>

#include <cuda_runtime.h>

#include "record.hpp"

namespace dtsim::probe {

inline constexpr const char* kProbeVersion = "1.0.0";

struct Options {
  std::string out;            // --out: the measurement file
  bool quick = false;         // --quick: a smaller grid, fewer repetitions
  int device = 0;             // --device: the GPU of the single-GPU measurements
  std::set<std::string> only; // --only: a subset of the families (empty: all)
};

// How many times an operation runs: warm-up runs, then as many timed runs as fill target_seconds, within bounds.
struct Repetitions {
  int warmup = 3;
  int min_runs = 10;
  int max_runs = 50;
  double target_seconds = 0.25;
};

struct Context {
  Options options;
  int device = 0;
  int device_count = 0;
  int sms = 0;
  int cc_major = 0, cc_minor = 0;
  Repetitions reps;
  Results results;

  std::size_t free_bytes() const; // free device memory on `device` now
  // Whether `bytes` more fit on the device with room to spare; when not, the size is skipped with a note.
  bool fits(const std::string& what, std::size_t bytes);
  // Runs `body`; a CheckFailed or Unsupported thrown inside is recorded under `what` and the run goes on. Anything
  // else (a failed CUDA call) propagates and stops the probe.
  void guarded(const std::string& what, const std::function<void()>& body);
};

// Times `enqueue` (which puts one execution of the operation on `stream`) with CUDA events: warm-up runs, then the
// timed runs, one event pair around each, queued behind a HostGate and released together (pass hold = false for
// operations that block the host until they are done, such as copies from pageable memory).
Stats time_on_stream(cudaStream_t stream, const Repetitions& reps, const std::function<void()>& enqueue,
                     bool hold = true);
// Times `run` (which blocks until the operation is done) with the host's steady clock.
Stats time_on_host(const Repetitions& reps, const std::function<void()>& run);
Stats summarize(std::vector<double> seconds);

// Progress on stderr: "gemm bf16 8192x8192x8192: median 1.234 ms, 891 TFLOP/s".
void progress(const std::string& what, const Stats& stats, const std::string& rate = "");
std::string human_bytes(double bytes);

void run_launch(Context& ctx);      // copies.cu
void run_copies(Context& ctx);      // copies.cu
void run_memory(Context& ctx);      // memory.cu
void run_kernels(Context& ctx);     // kernels.cu
void run_gemm(Context& ctx);        // gemm.cu
void run_attention(Context& ctx);   // attention.cu
void run_collectives(Context& ctx); // collectives.cu
std::string nccl_version();         // collectives.cu: "2.21.5", empty when built without NCCL

} // namespace dtsim::probe
