#pragma once
// The library's front door: a scenario in, a RunResult out (plan -> execution graph -> replay -> report).
#include "sim/engine/engine.hpp"
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim {

struct Simulation {
  report::RunResult result;
  nlohmann::json trace; // Chrome trace events; null unless asked for
};

// The engine's options for a scenario: iterations (warm-up included) and the network model.
engine::ReplayOptions replay_options(const scenario::Scenario& scenario);

// Runs one simulation (in a child process, as SimGrid needs). Throws plan::PlanError,
// engine::DeadlockError or std::runtime_error.
// `show_progress` prints a progress line on stderr during long replays (for a terminal).
Simulation simulate(const scenario::Scenario& scenario, bool with_trace = false, bool show_progress = false);

struct SweepPoint {
  int nodes = 0;
  bool ok = false;
  std::string error; // why the point failed (does not fit, ...)
  report::RunResult result;
  double speedup = 0;    // throughput over the first successful point's
  double efficiency = 0; // speedup over the GPU ratio
};

using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// Runs the scenario at each node count, `jobs` simulations at a time in parallel processes.
std::vector<SweepPoint> sweep(const scenario::Scenario& base, const std::vector<int>& node_counts, int jobs,
                              const SweepProgress& progress = {});

// "1,2,4,8" or "1..64" (doubling from the first to the last). Throws std::invalid_argument.
std::vector<int> parse_node_counts(const std::string& text);

} // namespace dtsim
