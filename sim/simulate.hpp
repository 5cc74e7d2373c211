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

} // namespace dtsim
