#pragma once
// The plan: how a scenario's training job maps onto ranks, what each rank executes (the execution
// graph), and whether it fits in GPU memory.
#include "sim/graph/execution_graph.hpp"
#include "sim/scenario/scenario.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::plan {

struct MemoryItem {
  std::string name; // "weights", "activations", ...
  double bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;
  double capacity = 0; // the GPU's memory, bytes
  double total() const;
};

struct Plan {
  graph::ExecutionGraph graph;
  MemoryEstimate memory;                         // per GPU
  double gradient_bytes = 0;                     // bytes each rank all-reduces per iteration
  int buckets = 0;                               // all-reduce operations per iteration
  std::vector<std::string> allreduce_algorithms; // the algorithms they run (auto resolved), sorted
};

// The plan cannot run: it does not fit, or the scenario asks for something the planner cannot build.
class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

Plan make_plan(const scenario::Scenario& scenario);

// Per-GPU memory of data-parallel training (weights, gradients, optimizer states, saved activations,
// gradient buckets). Exposed for `explain` and tests.
MemoryEstimate estimate_memory(const scenario::Scenario& scenario);

} // namespace dtsim::plan
