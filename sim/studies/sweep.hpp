#pragma once
// A scenario at several node counts: the scaling study behind `dtsim sweep`, each point simulated in a child process.
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"

#include <string>
#include <vector>

namespace dtsim::studies {

class ResumeStore; // sim/studies/resume.hpp

struct SweepPoint {
  int nodes = 0;
  bool ok = false;
  std::string error;      // why the point failed (does not fit, ...)
  bool bad_input = false; // it failed because of its input (invalid at this size, does not fit): exit 2, not 1
  report::RunResult result;
  double speedup = 0;    // throughput over the first successful point's
  double efficiency = 0; // speedup over the GPU ratio
};

// Runs the scenario at each node count, `jobs` simulations at a time in parallel processes.
// Every point's scenario is read again with its node count before anything runs, so a count the scenario cannot
// have (beyond the topology, the format's limits) throws scenario::ScenarioError naming it. With `resume`, points
// kept by an earlier run of the same sweep are read back, and the others kept as they finish.
std::vector<SweepPoint> sweep(const scenario::Scenario& base, const std::vector<int>& node_counts, int jobs,
                              const SweepProgress& progress = {}, ResumeStore* resume = nullptr,
                              const MemoryLimit& limit = {});

// The scenario at another node count, read again (validated) as if the file had said it.
scenario::Scenario with_nodes(const scenario::Scenario& base, int nodes);

// "1,2,4,8" or "1..64" (doubling from the first to the last). Throws std::invalid_argument.
std::vector<int> parse_node_counts(const std::string& text);

} // namespace dtsim::studies
