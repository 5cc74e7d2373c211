#include "sim/graph/collective_request.hpp"

namespace dtsim::graph {

collectives::Request collective_request(const Collective& c, const std::vector<int>& members,
                                        const topologies::ClusterSpec& cluster) {
  collectives::Request r;
  r.op = c.op;
  r.algorithm = c.algorithm;
  r.ranks = static_cast<int>(members.size());
  r.bytes = c.bytes;
  r.root = c.root;
  r.matrix = c.matrix;
  r.node_switch_reduces = cluster.nvswitch_reduces;
  r.network_switch_reduces = cluster.switch_reduces;
  for (int member : members)
    r.node_of.push_back(cluster.node_of(member));
  return r;
}

} // namespace dtsim::graph
