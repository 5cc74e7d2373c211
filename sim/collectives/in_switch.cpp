// In-switch reduction: the switches add the contributions as they pass through.
//   NVLink SHARP (NVLS, NVSwitch gen 3 in H100 systems): each GPU sends its buffer up its NVLink port once and
//   receives the reduced buffer once, plus its own shard each way: S (g+1)/g each way against the ring's
//   2(g-1)/g S (NVIDIA, "NVLink SHARP", Hopper architecture whitepaper 2022).
//   InfiniBand SHARP (Graham et al. 2016, "Scalable Hierarchical Aggregation Protocol"): the same in the network
//   switch, one contribution per node and rail.
// Both stream the buffer through the switch in chunks (kPipelineChunkBytes): in step k a position sends chunk k
// and receives the reduced chunk k-1, so an all-reduce of S over one switch takes about S/B plus a chunk.
// Across nodes: a reduce-scatter inside each node (NVLS when the NVSwitch reduces, else a ring), the network
// switch reducing every rail's shard, then an all-gather inside each node (NVLS multicast, else a ring).
#include "sim/collectives/detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dtsim::collectives::detail {
namespace {

// n positions each stream `up` bytes to `peer` and get `down` bytes back, in chunks: C + 1 steps.
SchedulePtr through_switch(int n, double up, double down, int peer) {
  const int chunks = switch_chunks(std::max(up, down));
  return pipelined(n, chunks + 1,
                   [=](int, int k) {
                     Step s;
                     if (k < chunks) s.sends.push_back({peer, part_bytes(up, chunks, k)});
                     if (k > 0) s.recvs.push_back({peer, part_bytes(down, chunks, k - 1)});
                     s.latency_terms = k == 1 ? 1 : 0; // the stream's latency, paid by its first chunk
                     return s;
                   },
                   {0});
}

} // namespace

// A switch stream keeps up to NCCL_STEPS = 8 slots in flight, so the latency of its chunks overlaps; a step
// schedule pays one latency per step, so the stream is cut into at most 16 steps' worth of chunks.
int switch_chunks(double bytes) {
  return std::min(pipeline_chunks(bytes), 16);
}

SchedulePtr in_switch_all_reduce(const Request& r) {
  const int n = r.ranks;
  const double S = r.bytes;
  const NodeLayout layout = node_layout(n, r.node_of, "in-switch all-reduce");
  const int g = layout.per_node;
  const int nodes = static_cast<int>(layout.nodes.size());
  if (nodes == 1) {
    if (!r.node_switch_reduces)
      throw std::invalid_argument("an in-switch all-reduce inside one node needs an NVSwitch that reduces "
                                  "(NVLink SHARP: cluster.intra_node.sharp)");
    // NVLS all-reduce (NCCL's multimem kernels): the reduce-scatter's ld_reduce pulls each GPU's shard for each
    // owner through the switch (S up) and returns the owner's reduced shard (S/n down); the all-gather's multimem
    // store sends the shard up once (S/n) and the switch writes it to every GPU (S down).
    return through_switch(n, S + S / n, S / n + S, kNodeSwitch);
  }
  if (!r.network_switch_reduces)
    throw std::invalid_argument("an in-switch all-reduce across nodes needs a network switch that reduces "
                                "(InfiniBand SHARP: cluster.switch.sharp)");
  std::vector<std::vector<int>> rails(g); // rails[l]: local position l of every node
  for (const auto& node : layout.nodes)
    for (int l = 0; l < g; ++l)
      rails[l].push_back(node[l]);
  std::vector<SchedulePtr> inter;
  for (int l = 0; l < g; ++l) {
    const double shard = part_bytes(S, g, l);
    inter.push_back(through_switch(nodes, shard, shard, kNetworkSwitch));
  }
  if (g == 1) return side_by_side(n, std::move(rails), std::move(inter));

  // NVLS reduce-scatter: every GPU sends its whole buffer up and pulls its reduced shard; all-gather: the shard
  // goes up once and the switch multicasts the whole buffer down.
  const auto reduce_scatter =
      r.node_switch_reduces ? through_switch(g, S, S / g, kNodeSwitch) : ring_reduce_scatter(g, S);
  const auto all_gather = r.node_switch_reduces ? through_switch(g, S / g, S, kNodeSwitch) : ring_all_gather(g, S);
  std::vector<SchedulePtr> intra_rs(nodes, reduce_scatter), intra_ag(nodes, all_gather);
  return in_sequence(n, {{side_by_side(n, layout.nodes, std::move(intra_rs)), true},
                         {side_by_side(n, std::move(rails), std::move(inter)), true},
                         {side_by_side(n, layout.nodes, std::move(intra_ag)), true}});
}

} // namespace dtsim::collectives::detail
