#pragma once
// The other cluster shapes a whole run passes through, each simulated once: an elastic job's shrunk shapes, and under
// Bamboo's redundant computation the iteration without it and the iteration after a failover.
#include "sim/lifecycle/lifecycle.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include <vector>

namespace dtsim::studies {

// Nodes one data-parallel replica spans: a node for plain data parallelism (its GPUs go together), else the
// replica's tensor x pipeline x context GPUs in whole nodes.
int nodes_per_replica(const scenario::Scenario& s);

// Redundant computation (spot policy "redundancy"): `iteration` is the scenario's own (with the redundant forwards);
// `with` its simulation's result. Simulates the iteration without redundancy and the failover shape (a node running
// its lost successor's stage as well), and prices a replacement's rejoin.
lifecycle::JobTimes::Redundancy redundancy_times(const scenario::Scenario& s, const report::RunResult& with,
                                                 const MemoryLimit& limit = {});

// Elastic: seconds per full step's worth of samples with 0, 1, ... data-parallel replicas lost (each shape
// simulated; the first is `iteration`). Empty unless the scenario's elastic policy shrinks.
std::vector<double> shrunk_iterations(const scenario::Scenario& s, double iteration, const MemoryLimit& limit = {});

} // namespace dtsim::studies
