#pragma once
// `dtsim explain` without the command line: what a scenario's cluster is (its fabric, links, bottlenecks, price), what
// the plan puts on each GPU and what simulating it would take, without simulating it. Shared by the CLI and the
// Python module.
#include "sim/engine/child_process.hpp"
#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::studies {

struct Explanation {
  std::string text;        // what `dtsim explain` prints
  nlohmann::json document; // what `dtsim explain --json` writes
};

// `path` "A,B": the route between GPUs A and B as well (empty: none); `limit` the memory limit the simulation's
// estimate is held to. Throws scenario::ScenarioError naming --path for a bad pair.
Explanation explain(const scenario::Scenario& scenario, const std::string& path, const engine::ChildLimits& limit);

} // namespace dtsim::studies
