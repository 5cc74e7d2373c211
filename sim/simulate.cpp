#include "sim/simulate.hpp"

#include "sim/chakra/chakra.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/kineto/kineto.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

namespace dtsim {
MemoryLimit memory_limit(double max_memory_flag, int jobs) {
  const double total = max_memory_flag > 0 ? max_memory_flag : engine::default_memory_limit();
  const int share = std::max(1, jobs);
  return {total / share, engine::describe_limit(total / share, max_memory_flag > 0, share)};
}

void check_scenario_size(const scenario::Scenario& s, const MemoryLimit& limit, bool with_timelines) {
  const auto options = replay_options(s, limit);
  if (limit.memory > 0) {
    // A lower bound from the scenario alone: every simulated rank runs each layer forward and backward (at least)
    // for each of its micro-batches, every iteration. Coarse fidelity simulates one rank per tensor-parallel group.
    const auto& p = s.parallelism;
    engine::Footprint lower;
    lower.ranks = s.world_size();
    lower.simulated_ranks =
        s.run.fidelity == scenario::Fidelity::coarse ? lower.ranks / std::max(1, p.tensor) : lower.ranks;
    lower.iterations = options.iterations;
    const double layers = static_cast<double>(s.model.workload.layers.size()) / std::max(1, p.pipeline);
    lower.intervals = with_timelines ? 2 * std::max(1.0, layers) * std::max(1, p.micro_batches) *
                                           static_cast<double>(lower.simulated_ranks) * lower.iterations
                                     : 0;
    lower.bytes = engine::kProcessBytes + engine::kBytesPerRank * static_cast<double>(lower.ranks) +
                  engine::kBytesPerInterval * lower.intervals;
    engine::check_footprint(lower, options);
    // A trace is read before any of this, in this process: its text and what is kept of it are the first cost.
    if (const auto& trace = s.model.trace) {
      const bool profiler = trace->format == "pytorch-profiler";
      const double reading = profiler ? kineto::reading_bytes(trace->path) : chakra::reading_bytes(trace->path);
      if (reading > limit.memory)
        throw engine::ResourceError(fmt::format(
            "reading the {} trace {} would take about {} of memory ({}), over the limit of {}; {} or raise "
            "--max-memory",
            profiler ? "PyTorch profiler" : "Chakra", trace->path, engine::describe_bytes(reading),
            profiler ? "its text and the events kept from it" : "its files and their nodes, planned", limit.memory_text,
            profiler ? "profile fewer steps (torch.profiler's schedule: active=1)" : "trace fewer iterations"));
    }
  }
}

plan::Plan checked_plan(const scenario::Scenario& s, const MemoryLimit& limit) {
  check_scenario_size(s, limit);
  return plan::make_plan(s);
}

engine::ReplayOptions replay_options(const scenario::Scenario& s, const MemoryLimit& limit) {
  engine::ReplayOptions o;
  o.memory_limit = limit.memory;
  o.memory_limit_text = limit.memory_text;
  o.iterations = s.run.warmup_iterations + s.run.iterations;
  o.warmup_iterations = s.run.warmup_iterations;
  o.skip_repeats = s.run.skip_repeats;
  o.network_model =
      s.network.model == scenario::NetworkModel::cm02 ? engine::NetworkModel::cm02 : engine::NetworkModel::lv08;
  o.cross_traffic = s.network.cross_traffic;
  return o;
}

std::optional<report::RunResult> dense_warmup_stage(const scenario::Scenario& s, const MemoryLimit& limit) {
  if (s.training.compression.warmup_steps == 0) return std::nullopt;
  auto dense = s;
  dense.training.compression = {};
  const auto plan = checked_plan(dense, limit);
  const auto replay = engine::replay(dense.cluster, plan.graph, replay_options(dense, limit));
  return report::summarize(dense, plan, replay);
}

Simulation simulate(const scenario::Scenario& scenario, bool with_trace, bool show_progress, const MemoryLimit& limit,
                    const report::TraceOptions& trace) {
  const auto plan = checked_plan(scenario, limit);
  auto options = replay_options(scenario, limit);
  options.show_progress = show_progress;
  options.sample_links = with_trace;
  const auto replay = engine::replay(scenario.cluster, plan.graph, options);
  Simulation sim{report::summarize(scenario, plan, replay), nullptr};
  if (const auto dense = dense_warmup_stage(scenario, limit)) report::add_warmup_stage(scenario, *dense, sim.result);
  if (with_trace) sim.trace = report::chrome_trace(plan, replay, scenario.cluster, trace);
  return sim;
}

} // namespace dtsim
