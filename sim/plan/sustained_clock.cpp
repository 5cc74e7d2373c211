#include "sim/plan/sustained_clock.hpp"

#include <variant>

namespace dtsim::plan::detail {

namespace {

// A rank's GPU: its group's on a cluster of mixed GPUs, else the scenario's.
const calibration::GpuProfile& gpu_of_rank(const scenario::Scenario& s, int rank) {
  for (const auto& g : s.groups)
    if (rank >= g.first_rank && rank < g.first_rank + g.ranks) return g.gpu;
  return s.gpu;
}

calibration::Stretch priced_stretch(const graph::Program& program) {
  calibration::Stretch stretch;
  for (const auto& op : program.ops)
    if (const auto* c = std::get_if<graph::Compute>(&op.body);
        c && op.stream == graph::Stream::compute && c->joules > 0)
      stretch += {c->seconds, c->math_seconds, c->joules};
  return stretch;
}

// The program's priced kernels from the clock `from` (rate 1: burst) to `to`.
void retime(graph::Program& program, const calibration::ClockState& from, const calibration::ClockState& to) {
  for (auto& op : program.ops)
    if (auto* c = std::get_if<graph::Compute>(&op.body); c && op.stream == graph::Stream::compute && c->joules > 0) {
      const double math = c->math_seconds * from.rate;
      const double burst = c->seconds - math * (1 / from.rate - 1);
      c->seconds = to.stretched(burst, math);
      c->math_seconds = math / to.rate;
    }
}

std::vector<int> first_ranks(const graph::ExecutionGraph& g) {
  std::vector<int> first(g.programs.size(), -1);
  for (std::size_t r = 0; r < g.rank_program.size(); ++r)
    if (first[g.rank_program[r]] < 0) first[g.rank_program[r]] = static_cast<int>(r);
  return first;
}

} // namespace

void apply_sustained_clocks(Plan& plan, const scenario::Scenario& s) {
  auto& g = plan.graph;
  const auto first_rank = first_ranks(g);
  plan.burst_stretches.assign(g.programs.size(), {});
  plan.program_clocks.assign(g.programs.size(), {});
  for (std::size_t p = 0; p < g.programs.size(); ++p) {
    if (first_rank[p] < 0) continue;
    const auto& gpu = gpu_of_rank(s, first_rank[p]);
    plan.burst_stretches[p] = priced_stretch(g.programs[p]);
    const auto clock = calibration::sustained_clock(gpu, plan.burst_stretches[p]);
    if (clock.capped) {
      retime(g.programs[p], {}, clock);
      plan.program_clocks[p] = clock;
    }
    if (first_rank[p] != 0) continue;
    plan.clock = clock;
    for (auto& row : plan.kernels) {
      row.sm_clock_mhz = clock.sm_clock_mhz;
      if (!clock.capped || row.math_seconds <= 0) continue;
      const double seconds = clock.stretched(row.seconds, row.math_seconds);
      row.efficiency *= row.seconds / seconds;
      row.seconds = seconds;
      row.math_seconds /= clock.rate;
    }
  }
}

} // namespace dtsim::plan::detail

namespace dtsim::plan {

void retime_sustained_clocks(Plan& plan, const scenario::Scenario& s,
                             const std::vector<calibration::Stretch>& stretches) {
  auto& g = plan.graph;
  const auto first_rank = detail::first_ranks(g);
  for (std::size_t p = 0; p < g.programs.size() && p < stretches.size() && p < plan.program_clocks.size(); ++p) {
    if (first_rank[p] < 0) continue;
    auto clock = calibration::sustained_clock(detail::gpu_of_rank(s, first_rank[p]), stretches[p]);
    if (!clock.capped) clock = {};
    detail::retime(g.programs[p], plan.program_clocks[p], clock);
    plan.program_clocks[p] = clock;
  }
}

} // namespace dtsim::plan
