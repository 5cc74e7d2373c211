#pragma once
// A scenario under several synchronization strategies: the study behind `dtsim compare --strategies`, each strategy
// simulated in a child process.
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dtsim::studies {

class ResumeStore; // sim/studies/resume.hpp

// The scenario with another synchronization strategy, given by its short name ("ssp:3"; see
// strategies::parse_strategy_name). The name gives the scheme (kind, schedule, staleness, period, probability, preset,
// algorithm); what the scenario's own strategy says about the cluster and the job (servers, sparse_embeddings,
// backup_workers, accumulation, graph) is kept where the new scheme uses it and the scenario set it (it differs from
// what the scenario's strategy name gives by itself). Everything else in the scenario stays as it is.
// Throws std::invalid_argument for a bad name, and ScenarioError (naming the strategy) when the scenario does not
// validate with it (dedicated servers on a one-node cluster, a straggler rank the servers took).
scenario::Scenario with_strategy(const scenario::Scenario& base, std::string_view name);

// One strategy of a comparison: its name as given, and its result or why it failed.
struct ComparePoint {
  std::string strategy;
  bool ok = false;
  std::string error; // does not validate with this strategy, does not fit, ...
  bool bad_input = false;
  report::RunResult result;
};

// Runs the scenario with each strategy (with_strategy), `jobs` simulations at a time in parallel processes; the
// points come back in the order of the names. Every name is checked before anything runs: a bad one throws
// std::invalid_argument.
std::vector<ComparePoint> compare(const scenario::Scenario& base, const std::vector<std::string>& strategy_names,
                                  int jobs, const SweepProgress& progress = {}, ResumeStore* resume = nullptr,
                                  const MemoryLimit& limit = {});

// "allreduce,ps-sync,ssp:3": short names separated by commas (spaces around them ignored), each checked. Throws
// std::invalid_argument naming the bad one and the accepted forms.
std::vector<std::string> parse_strategy_list(const std::string& text);

} // namespace dtsim::studies
