// NCCL's rings across nodes (src/graph/search.cc, connect.cc): every channel runs a ring over all positions, node
// after node, and the channels' rings enter each node at different GPUs so that each leaves the node through a
// different NIC. dtsim draws R rings (R = the NICs the node's positions can use, at most the call's channels),
// each carrying 1/R of the buffer: ring r visits the positions of every node starting at the r-th of R evenly
// spaced positions, so on a rail-optimized network its node-to-node hop runs on one rail (the router's PXN relay
// moves a hop that would cross rails to the destination's rail over NVLink first, as NCCL does).
//
// Each ring is the ring algorithm of ring.cpp over its own order (reduce-scatter n-1 steps, all-gather n-1 steps,
// all-reduce both); a position's transfers to the same peer in one step are one message (the rings whose
// successor of p is q all send p -> q in that step, and q receives them from p in the same step).
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
namespace {

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

void add(std::vector<Transfer>& transfers, int peer, double bytes) {
  for (auto& t : transfers)
    if (t.peer == peer) {
      t.bytes += bytes;
      return;
    }
  transfers.push_back({peer, bytes});
}

class MultiRing final : public Schedule {
public:
  MultiRing(Operation op, const NodeLayout& layout, int rings, double bytes) : op_(op), bytes_(bytes) {
    const int g = layout.per_node;
    n_ = g * static_cast<int>(layout.nodes.size());
    for (int r = 0; r < rings; ++r) {
      std::vector<int> order;
      const int first = r * g / rings;
      for (const auto& node : layout.nodes)
        for (int l = 0; l < g; ++l)
          order.push_back(node[static_cast<std::size_t>((first + l) % g)]);
      std::vector<int> index(static_cast<std::size_t>(n_));
      for (int i = 0; i < n_; ++i)
        index[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
      orders_.push_back(std::move(order));
      indexes_.push_back(std::move(index));
      ring_bytes_.push_back(part_bytes(bytes, rings, r));
    }
  }

  int ranks() const override { return n_; }
  int step_count() const override { return op_ == Operation::all_reduce ? 2 * (n_ - 1) : n_ - 1; }
  std::vector<int> phase_starts() const override {
    return op_ == Operation::all_reduce ? std::vector<int>{0, n_ - 1} : std::vector<int>{0};
  }

  // Ring r at index i: reduce-scatter step k sends block i-1-k and receives (and reduces) block i-2-k; all-gather
  // step k sends block i-k and receives block i-1-k (ring.cpp).
  Step step(int p, int k) const override {
    Step s;
    const bool reducing = op_ == Operation::reduce_scatter || (op_ == Operation::all_reduce && k < n_ - 1);
    const int j = op_ == Operation::all_reduce && k >= n_ - 1 ? k - (n_ - 1) : k;
    for (std::size_t r = 0; r < orders_.size(); ++r) {
      const int i = indexes_[r][static_cast<std::size_t>(p)];
      const auto& order = orders_[r];
      const auto block = [&](int b) { return part_bytes(ring_bytes_[r], n_, mod(b, n_)); };
      const int next = order[static_cast<std::size_t>(mod(i + 1, n_))];
      const int prev = order[static_cast<std::size_t>(mod(i - 1, n_))];
      if (reducing) {
        add(s.sends, next, block(i - 1 - j));
        add(s.recvs, prev, block(i - 2 - j));
        s.reduce_bytes += block(i - 2 - j);
      } else {
        add(s.sends, next, block(i - j));
        add(s.recvs, prev, block(i - 1 - j));
      }
    }
    return s;
  }

private:
  Operation op_;
  double bytes_;
  int n_ = 0;
  std::vector<std::vector<int>> orders_, indexes_;
  std::vector<double> ring_bytes_;
};

} // namespace

SchedulePtr multi_ring(Operation op, const NodeLayout& layout, int rings, double bytes) {
  return std::make_shared<MultiRing>(op, layout, std::max(1, std::min(rings, layout.per_node)), bytes);
}

} // namespace dtsim::collectives::detail
