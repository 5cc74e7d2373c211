// Aggregated all-to-all at scale: a sample of the exchange's shifts stands for all of them.
//
// An all-to-all over n positions is n-1 shift permutations (pairwise exchange: in round k, p sends S/n to
// p+k). Aggregating it exactly posts n(n-1) flows at once; at 4096 ranks that is 16.7 million concurrent
// flows, far beyond what a max-min solver can share (DESIGN.md). On nodes of g GPUs the shifts fall into two
// kinds: the g-1 that stay inside a node and the N-1 node shifts that cross the network, and within a kind
// every shift loads each GPU's and each NIC's links the same way on a regular cluster. So each position
// posts a stratified sample of each kind, one flow per sampled shift carrying the bytes of the shifts it
// stands for: at most kIntraSamples + kInterSamples flows per position. The sample keeps the totals per link
// tier exactly and spreads flows evenly; what it loses is the pattern of a particular shift on a topology
// whose tiers are not uniform (an oversubscribed fabric sees the average shift, not each one).
#include "sim/collectives/detail.hpp"

#include <algorithm>
#include <map>

namespace dtsim::collectives::detail {
namespace {

constexpr int kIntraSamples = 2;
constexpr int kInterSamples = 4;

// Shift j of `samples` spread over 1..range (stratified: the first of each of `samples` equal strata).
int sampled_shift(int j, int samples, int range) {
  return 1 + static_cast<int>(static_cast<long>(j) * range / samples);
}

class SampledAllToAll final : public Schedule {
public:
  SampledAllToAll(const Request& r, std::vector<int> node_index, std::vector<int> local, int nodes, int per_node)
      : n_(r.ranks), bytes_(r.bytes), node_(std::move(node_index)), local_(std::move(local)), nodes_(nodes),
        g_(per_node), members_(static_cast<std::size_t>(nodes) * per_node) {
    for (int p = 0; p < n_; ++p)
      members_[static_cast<std::size_t>(node_[p]) * g_ + local_[p]] = p;
  }

  int ranks() const override { return n_; }
  int step_count() const override { return n_ > 1 ? 1 : 0; }

  Step step(int p, int) const override {
    Step s;
    s.latency_terms = n_ - 1; // the rounds of a pairwise exchange
    const double block = bytes_ / n_;
    const int intra = std::min(kIntraSamples, g_ - 1);
    for (int j = 0; j < intra; ++j) {
      const int shift = sampled_shift(j, intra, g_ - 1);
      const double bytes = block * stratum(j, intra, g_ - 1);
      s.sends.push_back({at(node_[p], (local_[p] + shift) % g_), bytes});
      s.recvs.push_back({at(node_[p], (local_[p] - shift + g_) % g_), bytes});
    }
    const int inter = std::min(kInterSamples, nodes_ - 1);
    for (int j = 0; j < inter; ++j) {
      const int shift = sampled_shift(j, inter, nodes_ - 1);
      // Each node shift carries S/n to each of the g GPUs of the other node; the flow goes to the same rail.
      const double bytes = block * g_ * stratum(j, inter, nodes_ - 1);
      s.sends.push_back({at((node_[p] + shift) % nodes_, local_[p]), bytes});
      s.recvs.push_back({at((node_[p] - shift + nodes_) % nodes_, local_[p]), bytes});
    }
    return s;
  }

private:
  // How many shifts sample j of `samples` stands for, out of `range`.
  static int stratum(int j, int samples, int range) {
    return sampled_shift(j + 1, samples, range) - sampled_shift(j, samples, range);
  }
  int at(int node, int local) const { return members_[static_cast<std::size_t>(node) * g_ + local]; }

  int n_;
  double bytes_;
  std::vector<int> node_, local_;
  int nodes_, g_;
  std::vector<int> members_;
};

} // namespace

SchedulePtr sampled_all_to_all(const Request& r) {
  // Nodes in ascending id, positions within a node in ascending position: the same order hierarchical uses.
  std::map<int, std::vector<int>> by_node;
  for (int p = 0; p < r.ranks; ++p)
    by_node[r.node_of.empty() ? p : r.node_of[p]].push_back(p);
  const int per_node = static_cast<int>(by_node.begin()->second.size());
  std::vector<int> node(r.ranks), local(r.ranks);
  int index = 0;
  for (const auto& [id, positions] : by_node) {
    if (static_cast<int>(positions.size()) != per_node)
      return nullptr; // irregular nodes: the caller falls back to exact aggregation
    for (int l = 0; l < per_node; ++l) {
      node[positions[l]] = index;
      local[positions[l]] = l;
    }
    ++index;
  }
  return std::make_shared<SampledAllToAll>(r, std::move(node), std::move(local), index, per_node);
}

} // namespace dtsim::collectives::detail
