#pragma once
// The library's front door: a scenario in, a RunResult out (plan -> execution graph -> replay -> report).
#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"
#include "sim/report/result.hpp"
#include "sim/report/trace.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

class ResumeStore; // sim/resume.hpp

struct Simulation {
  report::RunResult result;
  nlohmann::json trace; // Chrome trace events; null unless asked for
};

// The memory each simulation may take and how messages name the limit (engine/footprint.hpp): every entry point
// below takes one; the default is none (library use and tests); the CLI passes --max-memory or 3/4 of the machine.
using MemoryLimit = engine::ChildLimits;
// --max-memory in bytes (0: not given, so 3/4 of this machine's memory), shared by `jobs` simulations at once.
MemoryLimit memory_limit(double max_memory_flag, int jobs);

// The engine's options for a scenario: iterations (warm-up included), the network model, and the memory limit.
engine::ReplayOptions replay_options(const scenario::Scenario& scenario, const MemoryLimit& limit = {});

// Throws engine::ResourceError when even a lower bound of the scenario's replay memory, from the scenario alone (its
// ranks; with `with_timelines`, each rank's layers forward and backward per micro-batch and iteration), passes the
// limit: a million ranks times a million iterations is never planned. Cheap: sweep and search check every point.
void check_scenario_size(const scenario::Scenario& scenario, const MemoryLimit& limit, bool with_timelines = true);

// The scenario's plan, refused before it is built by check_scenario_size; the replay checks its own estimate.
plan::Plan checked_plan(const scenario::Scenario& scenario, const MemoryLimit& limit);

// With compression after dense warm-up steps (training.compression.warmup_steps), the scenario without compression
// simulated in a child process (report::add_warmup_stage makes the two a two-stage run); nullopt otherwise. Only a
// process that forks its replays can call it: sweep and comparison points, each replaying in a child, report the
// compressed stage alone.
std::optional<report::RunResult> dense_warmup_stage(const scenario::Scenario& scenario, const MemoryLimit& limit);

// Runs one simulation (in a child process, as SimGrid needs). Throws plan::PlanError,
// engine::DeadlockError or std::runtime_error.
// `show_progress` prints a progress line on stderr during long replays (for a terminal). With `with_trace`, the
// result carries the timeline (report/trace.hpp) of the ranks and iterations `trace` keeps, the replay sampling its
// links for the utilization counters.
Simulation simulate(const scenario::Scenario& scenario, bool with_trace = false, bool show_progress = false,
                    const MemoryLimit& limit = {}, const report::TraceOptions& trace = {});

struct SweepPoint {
  int nodes = 0;
  bool ok = false;
  std::string error;      // why the point failed (does not fit, ...)
  bool bad_input = false; // it failed because of its input (invalid at this size, does not fit): exit 2, not 1
  report::RunResult result;
  double speedup = 0;    // throughput over the first successful point's
  double efficiency = 0; // speedup over the GPU ratio
};

using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

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

} // namespace dtsim
