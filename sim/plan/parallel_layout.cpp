#include "sim/plan/parallel_layout.hpp"
#include "topologies/network_graph.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace dtsim::plan {

namespace {
Dim dim_of(const std::string& name) {
  if (name == "tp") return Dim::tp;
  if (name == "ep") return Dim::ep;
  if (name == "dp") return Dim::dp;
  if (name == "cp") return Dim::cp;
  return Dim::pp; // the scenario checked the names
}
} // namespace

int& GridCoord::operator[](Dim d) {
  switch (d) {
  case Dim::tp:
    return tp;
  case Dim::ep:
    return ep;
  case Dim::dp:
    return dp;
  case Dim::cp:
    return cp;
  default:
    return pp;
  }
}
int GridCoord::operator[](Dim d) const {
  return const_cast<GridCoord&>(*this)[d];
}

ParallelLayout::ParallelLayout(const scenario::ParallelismSpec& spec) {
  sizes_ = {spec.tensor, spec.expert, spec.data / spec.expert, spec.pipeline, spec.context};
  // An order without "cp" places it next to "tp", as Megatron-LM's default "tp-cp-ep-dp-pp".
  auto order = spec.order;
  if (std::find(order.begin(), order.end(), "cp") == order.end())
    order.insert(std::find(order.begin(), order.end(), "tp") + 1, "cp");
  int stride = 1;
  for (const auto& name : order) {
    const auto d = static_cast<int>(dim_of(name));
    strides_[d] = stride;
    stride *= sizes_[d];
  }
}

GridCoord ParallelLayout::coord(int rank) const {
  GridCoord c;
  for (auto d : {Dim::tp, Dim::ep, Dim::dp, Dim::pp, Dim::cp})
    c[d] = rank / strides_[static_cast<int>(d)] % sizes_[static_cast<int>(d)];
  return c;
}

int ParallelLayout::rank(const GridCoord& c) const {
  int r = 0;
  for (auto d : {Dim::tp, Dim::ep, Dim::dp, Dim::pp, Dim::cp})
    r += c[d] * strides_[static_cast<int>(d)];
  return r;
}

std::vector<std::vector<int>> ParallelLayout::groups(std::vector<Dim> varying) const {
  std::map<int, std::size_t> index; // the group's key (its rank with the varying coordinates zeroed) -> group
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world(); ++r) {
    GridCoord c = coord(r);
    for (auto d : varying)
      c[d] = 0;
    const auto [it, fresh] = index.try_emplace(rank(c), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

namespace {

// The narrowest ring step of any group (describe_groups in the header says how a step's bandwidth is counted).
double ring_bandwidth(const std::vector<std::vector<int>>& groups, const topologies::NetworkModel& m) {
  const auto& g = m.graph;
  const auto node = [&](int rank) { return g[m.gpu_vertex.at(static_cast<std::size_t>(rank))].node; };
  // Members whose step leaves (enters) the node, per NIC vertex.
  std::map<std::size_t, int> leaving, entering;
  for (const auto& members : groups)
    for (std::size_t i = 0; i < members.size(); ++i) {
      const int a = members[i], b = members[(i + 1) % members.size()];
      if (node(a) == node(b)) continue;
      ++leaving[m.nic_vertex.at(static_cast<std::size_t>(a))];
      ++entering[m.nic_vertex.at(static_cast<std::size_t>(b))];
    }
  const topologies::Router router(m);
  double narrowest = std::numeric_limits<double>::infinity();
  for (const auto& members : groups)
    for (std::size_t i = 0; i < members.size(); ++i) {
      const int a = members[i], b = members[(i + 1) % members.size()];
      const auto hops = router.route_gpus(a, b);
      std::vector<double> bandwidth;
      std::vector<std::size_t> network; // indices of the hops over network links
      for (std::size_t h = 0; h < hops.size(); ++h) {
        const auto& link = g[m.edges.at(static_cast<std::size_t>(hops[h].edge))];
        bandwidth.push_back(link.bandwidth);
        if (link.kind == topologies::LinkClass::network) network.push_back(h);
      }
      if (!network.empty()) {
        const int out = leaving.at(m.nic_vertex.at(static_cast<std::size_t>(a)));
        const int in = entering.at(m.nic_vertex.at(static_cast<std::size_t>(b)));
        if (network.front() == network.back()) {
          bandwidth[network.front()] /= std::max(out, in); // NIC to NIC (a torus): one link, shared both ways
        } else {
          bandwidth[network.front()] /= out;
          bandwidth[network.back()] /= in;
        }
      }
      for (double bw : bandwidth)
        narrowest = std::min(narrowest, bw);
    }
  return narrowest;
}

} // namespace

std::vector<GroupSummary> describe_groups(const scenario::Scenario& s) {
  return describe_groups(s, topologies::build_network(s.cluster));
}

std::vector<GroupSummary> describe_groups(const scenario::Scenario& s, const topologies::NetworkModel& network) {
  const ParallelLayout layout(s.parallelism);
  const int per_node = s.cluster.gpus_per_node;
  std::vector<GroupSummary> out;
  const auto add = [&](std::string kind, const std::vector<std::vector<int>>& groups) {
    if (groups.empty() || groups.front().size() < 2) return;
    GroupSummary summary;
    summary.kind = std::move(kind);
    summary.size = static_cast<int>(groups.front().size());
    summary.count = static_cast<int>(groups.size());
    summary.first = groups.front();
    summary.crosses_nodes = std::any_of(groups.begin(), groups.end(), [&](const std::vector<int>& members) {
      return std::any_of(members.begin(), members.end(),
                         [&](int r) { return r / per_node != members.front() / per_node; });
    });
    summary.ring_bandwidth = ring_bandwidth(groups, network);
    out.push_back(std::move(summary));
  };
  add("tensor", layout.tensor_groups());
  add("context", layout.context_groups());
  add("pipeline", layout.pipeline_groups());
  add("data", layout.data_groups());
  if (layout.expert() > 1) { // (without it the expert-data groups are the data groups)
    add("expert", layout.expert_groups());
    add("expert-data", layout.expert_data_groups());
  }
  return out;
}

std::string_view to_string(Dim d) {
  switch (d) {
  case Dim::tp:
    return "tp";
  case Dim::ep:
    return "ep";
  case Dim::dp:
    return "dp";
  case Dim::cp:
    return "cp";
  default:
    return "pp";
  }
}

} // namespace dtsim::plan
