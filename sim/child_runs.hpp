#pragma once
// Internal to sim/: simulations run in child processes (SimGrid keeps one engine per process), the plumbing that
// sweep, compare and search share.
#include "sim/engine/child_process.hpp"
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace dtsim::detail {

// One simulation in this process, as a child runs it: the result as JSON text for the parent.
std::string run_here(const scenario::Scenario& s);

// Runs one child per job, `jobs` at a time, reporting progress as points finish.
std::vector<engine::ChildOutcome> run_points(const std::vector<engine::ChildJob>& work, int jobs,
                                             const SweepProgress& progress);

// A point's result (the child's JSON), or why it failed.
template <class Point> void take_outcome(Point& point, engine::ChildOutcome& outcome) {
  point.ok = outcome.ok;
  if (point.ok)
    point.result = report::run_result_from_json(nlohmann::json::parse(outcome.output));
  else
    point.error = std::move(outcome.output);
}

} // namespace dtsim::detail
