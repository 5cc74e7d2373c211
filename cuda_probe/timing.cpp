#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

#include "device.hpp"
#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

namespace {

int runs_for(const Repetitions& reps, double seconds_per_run) {
  if (!(seconds_per_run > 0)) return reps.max_runs;
  const double wanted = std::ceil(reps.target_seconds / seconds_per_run);
  return static_cast<int>(std::clamp(wanted, static_cast<double>(reps.min_runs), static_cast<double>(reps.max_runs)));
}

} // namespace

Stats summarize(std::vector<double> seconds) {
  Stats s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  s.runs = static_cast<int>(n);
  s.min = seconds.front();
  s.max = seconds.back();
  s.median = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(n);
  double sq = 0;
  for (double x : seconds)
    sq += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0.0;
  return s;
}

Stats time_on_stream(cudaStream_t stream, const Repetitions& reps, const std::function<void()>& enqueue, bool hold) {
  // Warm-up, timed as a whole to choose the number of timed runs.
  const int warmup = std::max(1, reps.warmup);
  Events warm(2);
  PROBE_CUDA(cudaEventRecord(warm[0], stream));
  for (int i = 0; i < warmup; ++i)
    enqueue();
  PROBE_CUDA(cudaEventRecord(warm[1], stream));
  PROBE_CUDA(cudaEventSynchronize(warm[1]));
  float warm_ms = 0;
  PROBE_CUDA(cudaEventElapsedTime(&warm_ms, warm[0], warm[1]));
  const int runs = runs_for(reps, warm_ms * 1e-3 / warmup);

  // One event pair around each run; the runs are queued back to back and read after one synchronization.
  Events ev(2 * static_cast<std::size_t>(runs));
  std::optional<HostGate> gate;
  if (hold) {
    gate.emplace();
    gate->hold(stream);
  }
  for (int i = 0; i < runs; ++i) {
    PROBE_CUDA(cudaEventRecord(ev[2 * i], stream));
    enqueue();
    PROBE_CUDA(cudaEventRecord(ev[2 * i + 1], stream));
  }
  if (gate) gate->release();
  PROBE_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> seconds(runs);
  for (int i = 0; i < runs; ++i) {
    float ms = 0;
    PROBE_CUDA(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    seconds[i] = ms * 1e-3;
  }
  return summarize(std::move(seconds));
}

Stats time_on_host(const Repetitions& reps, const std::function<void()>& run) {
  using clock = std::chrono::steady_clock;
  const int warmup = std::max(1, reps.warmup);
  const auto w0 = clock::now();
  for (int i = 0; i < warmup; ++i)
    run();
  const double per_run = std::chrono::duration<double>(clock::now() - w0).count() / warmup;
  const int runs = runs_for(reps, per_run);
  std::vector<double> seconds(runs);
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    run();
    seconds[i] = std::chrono::duration<double>(clock::now() - t0).count();
  }
  return summarize(std::move(seconds));
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4)
    bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void progress(const std::string& what, const Stats& stats, const std::string& rate) {
  const double m = stats.median;
  char buf[64];
  if (m < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f us", m * 1e6);
  else if (m < 1)
    std::snprintf(buf, sizeof buf, "%.3f ms", m * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", m);
  std::fprintf(stderr, "  %-48s median %s (%d runs)%s%s\n", what.c_str(), buf, stats.runs, rate.empty() ? "" : ", ",
               rate.c_str());
}

} // namespace dtsim::probe
