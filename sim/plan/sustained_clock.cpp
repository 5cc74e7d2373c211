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

void slow_down(graph::Program& program, const calibration::ClockState& clock) {
  for (auto& op : program.ops)
    if (auto* c = std::get_if<graph::Compute>(&op.body); c && op.stream == graph::Stream::compute && c->joules > 0) {
      c->seconds = clock.stretched(c->seconds, c->math_seconds);
      c->math_seconds /= clock.rate;
    }
}

} // namespace

void apply_sustained_clocks(Plan& plan, const scenario::Scenario& s) {
  auto& g = plan.graph;
  std::vector<int> first_rank(g.programs.size(), -1);
  for (std::size_t r = 0; r < g.rank_program.size(); ++r)
    if (first_rank[g.rank_program[r]] < 0) first_rank[g.rank_program[r]] = static_cast<int>(r);
  for (std::size_t p = 0; p < g.programs.size(); ++p) {
    if (first_rank[p] < 0) continue;
    const auto& gpu = gpu_of_rank(s, first_rank[p]);
    const auto clock = calibration::sustained_clock(gpu, priced_stretch(g.programs[p]));
    if (clock.capped) slow_down(g.programs[p], clock);
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
