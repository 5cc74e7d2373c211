#include "sim/plan/stage_summary.hpp"

#include "sim/plan/model_parallel.hpp"

namespace dtsim::plan {

StageSummary describe_stages(const scenario::Scenario& s) {
  const detail::ModelParallelPlanner planner(s);
  StageSummary out;
  for (const auto& chunk : planner.chunk_units())
    out.chunk_units.push_back(static_cast<int>(chunk.size()));
  out.stage_memory = planner.stage_memory();
  return out;
}

} // namespace dtsim::plan
