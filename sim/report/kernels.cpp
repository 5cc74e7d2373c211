// `dtsim run --ops`: rank 0's kernels of one iteration, one CSV row per distinct kernel, for holding against a
// profiler's kernel summary (Nsight Systems' cuda_gpu_kern_sum, torch.profiler's key_averages).
#include "sim/report/format.hpp"
#include "sim/report/result.hpp"

#include <fmt/format.h>

namespace dtsim::report {

std::string kernels_csv(const RunResult& r) {
  std::string out = "kernel,kind,shape,precision,launches_per_iteration,seconds_each,seconds_per_iteration,"
                    "host_wait_seconds_per_iteration,flops_each,bytes_each,tflop_per_second,gigabytes_per_second,"
                    "efficiency,bound,sm_clock_mhz\n";
  for (const auto& k : r.kernels) {
    const double each = k.launches > 0 ? k.seconds / k.launches : 0;
    const double tflops = each > 0 ? k.flops / each / 1e12 : 0;
    const double gbps = each > 0 ? k.bytes / each / 1e9 : 0;
    const std::string clock = k.sm_clock_mhz > 0 ? fmt::format("{:.0f}", k.sm_clock_mhz) : std::string();
    out += fmt::format("{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.4g},{:.4g},{:.3f},{},{}\n",
                       csv_field(k.name), k.kind, csv_field(k.shape), k.precision, k.launches, each, k.seconds,
                       k.host_wait, k.flops, k.bytes, tflops, gbps, k.efficiency, k.bound, clock);
  }
  return out;
}

} // namespace dtsim::report
