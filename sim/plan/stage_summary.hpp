#pragma once
// What `dtsim explain` shows of a pipeline before anything is simulated: the planner's stage split and memory model.
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

#include <vector>

namespace dtsim::plan {

// The pipeline's stage split and each stage's memory as the planner computes them, without building programs.
struct StageSummary {
  std::vector<int> chunk_units;             // pipeline units (transformer blocks) per model chunk, in model order
  std::vector<MemoryEstimate> stage_memory; // per pipeline stage (device)
};
StageSummary describe_stages(const scenario::Scenario& s);

} // namespace dtsim::plan
