#pragma once
// The request a collective op over `members` makes of sim/collectives: its sizes, the node each member is on and
// which switches reduce. The planner (to resolve `auto` and name it), the benchmark and the engine all ask the
// same question, so they build it here.
#include "sim/collectives/schedule.hpp"
#include "sim/graph/execution_graph.hpp"
#include "topologies/cluster.hpp"

#include <vector>

namespace dtsim::graph {

// What NCCL sees of the cluster's GPUs and links (absent for CPU clusters).
collectives::NcclSystem nccl_system(const topologies::ClusterSpec& cluster);

collectives::Request collective_request(const Collective& c, const std::vector<int>& members,
                                        const topologies::ClusterSpec& cluster);

// The algorithm that runs: the request's, or choose_algorithm's pick when it is `automatic`.
inline collectives::Algorithm resolved_algorithm(const collectives::Request& request) {
  return collectives::resolve(request).algorithm;
}

} // namespace dtsim::graph
