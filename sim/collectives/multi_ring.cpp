// NCCL's rings across nodes (src/graph/search.cc, connect.cc): every channel runs a ring over all positions, node
// after node, and the channels' rings enter each node at different GPUs so that each leaves the node through a
// different NIC. dtsim draws R rings (R = the NICs the node's positions can use, at most the call's channels),
// each carrying 1/R of the buffer: ring r visits the positions of every node starting at the r-th of R evenly
// spaced positions, so on a rail-optimized network its node-to-node hop runs on one rail (the router's PXN relay
// moves a hop that would cross rails to the destination's rail over NVLink first, as NCCL does).
//
// Each ring is the ring algorithm of ring.cpp over its own order (reduce-scatter n-1 steps, all-gather n-1 steps,
// all-reduce both) and a lane of its own (Schedule::lanes()): a channel's ring never waits for another's.
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
namespace {

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// The ring algorithm over positions order[0], order[1], ...: at index i, reduce-scatter step k sends block i-1-k
// and receives (and reduces) block i-2-k; all-gather step k sends block i-k and receives block i-1-k (ring.cpp).
class OrderedRing final : public Schedule {
public:
  OrderedRing(Operation op, std::vector<int> order, double bytes)
      : op_(op), n_(static_cast<int>(order.size())), order_(std::move(order)), index_(order_.size()), bytes_(bytes) {
    for (int i = 0; i < n_; ++i)
      index_[static_cast<std::size_t>(order_[static_cast<std::size_t>(i)])] = i;
  }

  int ranks() const override { return n_; }
  int step_count() const override { return op_ == Operation::all_reduce ? 2 * (n_ - 1) : n_ - 1; }
  std::vector<int> phase_starts() const override {
    return op_ == Operation::all_reduce ? std::vector<int>{0, n_ - 1} : std::vector<int>{0};
  }

  Step step(int p, int k) const override {
    Step s;
    const bool reducing = op_ == Operation::reduce_scatter || (op_ == Operation::all_reduce && k < n_ - 1);
    const int j = op_ == Operation::all_reduce && k >= n_ - 1 ? k - (n_ - 1) : k;
    const int i = index_[static_cast<std::size_t>(p)];
    const auto block = [&](int b) { return part_bytes(bytes_, n_, mod(b, n_)); };
    const int next = order_[static_cast<std::size_t>(mod(i + 1, n_))];
    const int prev = order_[static_cast<std::size_t>(mod(i - 1, n_))];
    // The phase's data chain into this position: at step j of n - 1 it crosses hop (i-(n-1)+j) -> (i-(n-1)+j+1).
    s.latency_hop = {order_[static_cast<std::size_t>(mod(i - (n_ - 1) + j, n_))],
                     order_[static_cast<std::size_t>(mod(i - (n_ - 1) + j + 1, n_))]};
    s.sends.push_back({next, block(reducing ? i - 1 - j : i - j)});
    s.recvs.push_back({prev, block(reducing ? i - 2 - j : i - 1 - j)});
    if (reducing) s.reduce_bytes = s.recvs.front().bytes;
    return s;
  }

private:
  Operation op_;
  int n_;
  std::vector<int> order_, index_;
  double bytes_;
};

} // namespace

SchedulePtr multi_ring(Operation op, const NodeLayout& layout, int rings, double bytes) {
  const int g = layout.per_node;
  rings = std::max(1, std::min(rings, g));
  std::vector<SchedulePtr> lanes;
  for (int r = 0; r < rings; ++r) {
    std::vector<int> order;
    const int first = r * g / rings;
    for (const auto& node : layout.nodes)
      for (int l = 0; l < g; ++l)
        order.push_back(node[static_cast<std::size_t>((first + l) % g)]);
    lanes.push_back(std::make_shared<OrderedRing>(op, std::move(order), part_bytes(bytes, rings, r)));
  }
  return concurrent(std::move(lanes));
}

} // namespace dtsim::collectives::detail
