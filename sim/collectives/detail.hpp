#pragma once
// Internal to sim/collectives: the building blocks every algorithm file shares (even splits of a buffer,
// schedules computed on demand, the two ways schedules combine) and the builders make_schedule dispatches
// to. Not part of the public interface (schedule.hpp, closed_form.hpp).
#include "sim/collectives/schedule.hpp"

#include <array>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace dtsim::collectives::detail {

using SchedulePtr = std::shared_ptr<const Schedule>;

// Throws std::invalid_argument for a request make_schedule refuses (bad sizes, root, node_of or matrix;
// `automatic`; an algorithm the operation does not have).
void validate_request(const Request& request);

// Offset of part i (0..parts) when `total` bytes are cut into `parts` consecutive, nearly equal parts. An
// integral total gives integral offsets (floor(total * i / parts), computed exactly), so the parts differ
// by at most one byte and add up to the total exactly; any other total is cut as total * i / parts.
double part_offset(double total, int parts, int i);
inline double part_bytes(double total, int parts, int i) {
  return part_offset(total, parts, i + 1) - part_offset(total, parts, i);
}

// Chunks of a pipelined algorithm (chain, double binary tree) moving `bytes` along one path: about `chunk_bytes`
// each (by default NCCL's pipeline slot: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8), at least 1, at most kMaxPipelineChunks.
inline constexpr double kPipelineChunkBytes = 512.0 * 1024;
inline constexpr int kMaxPipelineChunks = 1024;
int pipeline_chunks(double bytes, double chunk_bytes = kPipelineChunkBytes);

// Aggregated all-to-all over regular nodes from a stratified sample of its shifts (sampled_all_to_all.cpp);
// nullptr when the nodes hold different numbers of positions.
SchedulePtr sampled_all_to_all(const Request& request);
// Above this many flows in one aggregated phase, all-to-all is sampled instead of posted pair by pair.
inline constexpr double kMaxExactAggregateFlows = 16384;

int ceil_log2(int n);  // smallest L with 2^L >= n
int floor_log2(int n); // largest q with 2^q <= n (n >= 1)

// A step in which a position does nothing; it stands for no latency term.
inline Step idle_step() {
  Step s;
  s.latency_terms = 0;
  return s;
}

// A schedule whose steps are computed on demand: big groups (1024 positions, 2046 steps) never hold the
// whole table in memory.
class GeneratedSchedule final : public Schedule {
public:
  using StepFn = std::function<Step(int position, int k)>;
  GeneratedSchedule(int ranks, int steps, StepFn fn, std::vector<int> phases = {0}, bool pipelined = false)
      : ranks_(ranks), steps_(steps), fn_(std::move(fn)), phases_(std::move(phases)), pipelined_(pipelined) {}
  int ranks() const override { return ranks_; }
  int step_count() const override { return steps_; }
  // A generated step stands for one alpha term exactly when it moves something (the step functions only say what
  // moves), except in pipelines, whose step functions mark the steps that fill a hop themselves.
  Step step(int position, int k) const override {
    Step s = fn_(position, k);
    if (!pipelined_) s.latency_terms = s.sends.empty() && s.recvs.empty() ? 0 : 1;
    return s;
  }
  std::vector<int> phase_starts() const override { return phases_; }

private:
  int ranks_;
  int steps_;
  StepFn fn_;
  std::vector<int> phases_;
  bool pipelined_;
};

SchedulePtr generated(int ranks, int steps, GeneratedSchedule::StepFn fn, std::vector<int> phases = {0});
// A pipeline's steps (chunks following each other through the same hops): the step function sets latency_terms to 1
// on the steps where a position receives a hop's first chunk (or sends it, where it receives nothing), 0 elsewhere.
// A hop's latency is paid once, by its first chunk: the chunks behind it are already in flight (NCCL keeps
// NCCL_STEPS = 8 slots of each connection busy), which is NCCL's own count (tuning.cc charges a tree or a
// broadcast chain its latency per hop, not per chunk).
SchedulePtr pipelined(int ranks, int steps, GeneratedSchedule::StepFn fn, std::vector<int> phases);

// Phase starts 0, length, 2 length, ... below `steps`. Pipelines (chain, double binary tree) use phases of C
// steps (C chunks) so that aggregate() keeps their fill: a phase moves at most one buffer per link, and the
// aggregated time is about (C + fill) / C buffer times, as the pipeline's; binomial trees use one phase per
// round (length 1), as each round depends on the previous one.
std::vector<int> phases_every(int steps, int length);
SchedulePtr empty_schedule(int ranks); // zero steps

// Sub-schedules running side by side on disjoint groups: local position l of group g is position
// groups[g][l]; positions in no group, and groups whose schedule is shorter, idle. Phases: the union of the
// sub-schedules' phases.
SchedulePtr side_by_side(int ranks, std::vector<std::vector<int>> groups, std::vector<SchedulePtr> schedules);

// Schedules run one after the other, each starting when the previous one is over. Each part contributes its
// own phases, or a single phase when `as_one_phase`; parts without steps are skipped.
// Independent lanes over the same positions (Schedule::lanes()): step(p, k) is the union of the lanes' steps k, a
// position's transfers to one peer summed into one; phases are the union of theirs.
SchedulePtr concurrent(std::vector<SchedulePtr> lanes);

struct Part {
  SchedulePtr schedule;
  bool as_one_phase = false;
};
SchedulePtr in_sequence(int ranks, std::vector<Part> parts);

// ring.cpp (Thakur, Rabenseifner and Gropp 2005; Patarasuk and Yuan 2009). Block b = part b of n.
SchedulePtr ring_reduce_scatter(int n, double bytes);        // position p ends with block p
SchedulePtr ring_all_gather(int n, double bytes);            // position p starts with block p
SchedulePtr ring_all_reduce(int n, double bytes);            // reduce-scatter then all-gather: 2 phases
SchedulePtr ring_reduce_scatter(std::vector<double> blocks); // block b has blocks[b] bytes; position p ends with it
SchedulePtr ring_all_gather(std::vector<double> blocks);     // position p starts with block p of blocks[p] bytes
SchedulePtr chain_broadcast(int n, double bytes, int root);
SchedulePtr chain_reduce(int n, double bytes, int root);

// binomial.cpp
SchedulePtr binomial_broadcast(int n, double bytes, int root);
SchedulePtr binomial_reduce(int n, double bytes, int root);
SchedulePtr binomial_all_reduce(int n, double bytes); // reduce to 0, then broadcast from 0: 2 phases

// tree_pipeline.cpp: a tree over positions 0..n-1, from each position's parent.
struct Tree {
  int root = 0;
  std::vector<int> parent;                // -1 at the root
  std::vector<std::vector<int>> children; // ascending
  std::vector<int> depth;                 // root 0
  std::vector<int> height;                // leaves 0
};
Tree tree_from_parents(std::vector<int> parent);

// The reduce-then-broadcast pipeline NCCL runs over trees (both tree all-reduces below): each tree carries its
// `bytes` in `chunks` chunks; v sends chunk j up in step j + h(v) and the result down in step j + D + d(v), D the
// height of the highest tree, so the schedule takes chunks + 2D - 1 steps, in phases of `chunks`.
struct TreeShare {
  Tree tree;
  double bytes = 0;
};
struct TreeMessages {
  bool one_per_peer = false;   // a position's transfers to one peer in a step are one message (else one per tree)
  bool mark_forwarded = false; // sends of data received are Transfer::forwarded (LL and LL128 pass them line by line)
};
SchedulePtr tree_pipeline(int n, std::vector<TreeShare> trees, int chunks, TreeMessages messages);

// double_binary_tree.cpp: NCCL's two complementary binary trees over positions 0..n-1.
std::array<Tree, 2> nccl_double_binary_tree(int n);
// Each tree's chunks as NCCL `version` cuts them (nccl_tree_chunks, one position a node).
SchedulePtr double_binary_tree_all_reduce(int n, double bytes, int version);
int double_binary_tree_chunks(int n, double bytes, int version); // chunks per tree for an all-reduce of `bytes`

// recursive.cpp (Thakur, Rabenseifner and Gropp 2005, with their folding of non-powers of two)
SchedulePtr recursive_doubling_all_reduce(int n, double bytes);
SchedulePtr rabenseifner_all_reduce(int n, double bytes);
SchedulePtr recursive_halving_reduce_scatter(int n, double bytes);
SchedulePtr recursive_doubling_all_gather(int n, double bytes);
SchedulePtr dissemination_barrier(int n);

// direct.cpp and all_to_all.cpp. bytes(from, to): what `from` sends to `to`.
using PairBytes = std::function<double(int from, int to)>;
SchedulePtr direct_reduce_scatter(int n, double bytes);
SchedulePtr direct_all_gather(int n, double bytes);
SchedulePtr point_to_point(int n, double bytes, int root);
SchedulePtr pairwise_all_to_all(int n, PairBytes bytes, bool skip_empty);
SchedulePtr direct_all_to_all(int n, PairBytes bytes, bool skip_empty);

// hierarchical.cpp. Throws std::invalid_argument when nodes hold different numbers of positions.
struct NodeLayout {
  std::vector<std::vector<int>> nodes; // positions of each node, ascending; nodes by ascending node index
  int per_node = 1;
};
// `what` names the algorithm in the error message.
NodeLayout node_layout(int n, const std::vector<int>& node_of, std::string_view what = "hierarchical all-reduce");
SchedulePtr hierarchical_all_reduce(int n, double bytes, const std::vector<int>& node_of);
// Rail-parallel reduce-scatter and all-gather: position p ends with (reduce-scatter) or starts with (all-gather)
// block p of n, as in the flat operation (hierarchical.cpp documents the layout).
SchedulePtr hierarchical_reduce_scatter(int n, double bytes, const std::vector<int>& node_of);
SchedulePtr hierarchical_all_gather(int n, double bytes, const std::vector<int>& node_of);

// multi_ring.cpp: NCCL's rings across nodes, R of them side by side on the same positions, each entering every node
// at a different position (so leaving it through a different NIC) and carrying 1/R of the buffer. `op`: all-reduce,
// reduce-scatter or all-gather.
SchedulePtr multi_ring(Operation op, const NodeLayout& layout, int rings, double bytes);
// The rings NCCL spreads a ring collective over: one per NIC the node's positions can use when the group spans
// several nodes with the same number of positions on each, else 1.
int ring_count(const Request& request);
// NCCL's tree on nodes of several GPUs (nccl_tree.cpp): a chain in each node under the tree of nodes.
bool nccl_node_tree(const Request& request);

// nccl_tree.cpp: NCCL's tree all-reduce on nodes of several GPUs: a chain inside each node, the chains' heads in the
// double binary tree over nodes; `channels` chains per node, each headed by a different position (so NIC), each
// channel's two trees carrying S / (2 channels). One node: a single chain.
SchedulePtr nccl_tree_all_reduce(const NodeLayout& layout, int channels, double bytes, int version);

// in_switch.cpp: NVLink SHARP inside a node, InfiniBand SHARP across nodes. Throws std::invalid_argument when
// the switches the group needs do not reduce.
SchedulePtr in_switch_all_reduce(const Request& request);
int switch_chunks(double bytes); // chunks a switch streams `bytes` in

} // namespace dtsim::collectives::detail
