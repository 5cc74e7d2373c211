// model.trace: the job as a recorded trace gives it (sim/chakra), replayed on the scenario's cluster.
#include "sim/chakra/chakra.hpp"
#include "sim/plan/data_parallel.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace dtsim::plan::detail {

Plan make_trace_plan(const scenario::Scenario& s) {
  if (s.model.trace->format == "pytorch-profiler") return make_profiler_plan(s);
  const auto& gpu = s.gpu;
  chakra::ReadOptions options;
  // A node with FLOPs and bytes but no duration, priced as a roofline on the scenario's GPU: its FLOPs at the
  // profile's large-GEMM efficiency or its bytes at its streaming bandwidth, whichever takes longer.
  const auto precision = gpu.peak_flops.count(s.model.precision) ? s.model.precision : calibration::Precision::fp32;
  const double flops_rate =
      gpu.peak_flops.at(precision) * (gpu.gemm_efficiency.count(precision) ? gpu.gemm_efficiency.at(precision) : 1.0);
  const double byte_rate = gpu.memory_bandwidth * gpu.memory_efficiency;
  options.compute_seconds = [=](double flops, double bytes) {
    return std::max(flops_rate > 0 ? flops / flops_rate : 0.0, byte_rate > 0 ? bytes / byte_rate : 0.0);
  };
  options.reduce_seconds_per_byte = gpu.reduce_seconds_per_byte();
  options.aggregate = s.run.fidelity != scenario::Fidelity::step; // as the planner marks its own collectives
  Plan plan;
  try {
    plan.graph = chakra::read_trace(s.model.trace->path, s.cluster.gpu_count(), options);
  } catch (const chakra::TraceError& e) {
    throw scenario::ScenarioError(s.origin, "/model/trace/path", e.what());
  }
  plan.memory = estimate_memory(s);
  plan.workers = s.cluster.gpu_count();
  plan.samples_per_worker_iteration = s.model.batch_per_gpu;
  // The data-parallel reductions rank 0 takes part in, for the report's traffic lines.
  std::set<std::string> algorithms;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body); c && op.axis == graph::Axis::data) {
      plan.gradient_bytes += c->bytes;
      ++plan.buckets;
      algorithms.insert(std::string(collectives::to_string(c->algorithm)));
    }
  plan.allreduce_algorithms.assign(algorithms.begin(), algorithms.end());
  plan.wire_bytes = plan.dense_bytes = plan.gradient_bytes;
  return plan;
}

} // namespace dtsim::plan::detail
