#include "sim/plan/input_pipeline.hpp"

#include <algorithm>

namespace dtsim::plan {

InputRates input_rates(const scenario::Scenario& s) {
  InputRates r;
  if (!s.input) return r;
  const auto& in = *s.input;
  r.cpu_samples_per_second = in.cpu_cores * in.samples_per_core_per_second;
  r.samples_per_second = r.cpu_samples_per_second;
  if (in.storage_bandwidth > 0 && in.sample_bytes > 0) {
    r.storage_samples_per_second = in.storage_bandwidth / in.sample_bytes;
    r.samples_per_second = std::min(r.samples_per_second, r.storage_samples_per_second);
  }
  if (r.samples_per_second > 0)
    r.seconds_per_iteration =
        static_cast<double>(s.model.batch_per_gpu) * s.cluster.gpus_per_node / r.samples_per_second;
  return r;
}

void add_input_stage(graph::Program& program, double seconds) {
  if (seconds <= 0) return;
  program.ops.push_back(graph::Op{"load batch", graph::Stream::input, graph::Compute{seconds, 0, 0}, {}});
}

} // namespace dtsim::plan
