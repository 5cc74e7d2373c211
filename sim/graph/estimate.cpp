#include "sim/graph/estimate.hpp"
#include "sim/collectives/closed_form.hpp"
#include "sim/graph/collective_request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace dtsim::graph {
namespace {

using collectives::Algorithm;
using collectives::LinkClass;

// What a transfer costs on each kind of path, from the cluster's links: the node fabric, and the network where a
// node's NIC is shared evenly by the node's ranks that the graph simulates (each sends its part at once: the
// data-parallel rings of a node's GPUs, a pipeline stage's slices). Coarse fidelity's graphs simulate one rank of a
// tensor-parallel group and carry the group's bytes through it already.
struct Paths {
  double alpha_intra = 0, bandwidth_intra = 0;
  double alpha_network = 0, nic_bandwidth = 0, connection_cap = 0;
};

Paths paths_of(const topologies::ClusterSpec& c) {
  Paths p;
  const bool nvswitch = c.intra_kind == topologies::IntraNodeKind::nvlink;
  // A message through an NVSwitch crosses two fabric links; the library's per-message overhead is on every one.
  p.alpha_intra = c.intra.latency * (nvswitch ? 2 : 1) + c.message_overhead;
  p.bandwidth_intra = c.intra_data_rate();
  // Up through the tiers and down again: each switch crossed once.
  const double switches = 1 + 2 * static_cast<double>(c.tiers.size());
  p.alpha_network = 2 * c.slowest_nic().latency + switches * c.switch_latency + c.message_overhead;
  p.nic_bandwidth = c.slowest_nic().bandwidth * c.tcp.payload_efficiency();
  if (c.pcie.bandwidth > 0)
    p.nic_bandwidth = std::min(p.nic_bandwidth, c.pcie.bandwidth * c.pcie_efficiency * c.gpus_per_node);
  p.connection_cap = c.tcp.connection_bandwidth();
  return p;
}

double point_to_point_seconds(const topologies::ClusterSpec& cluster, const Paths& paths, int from, int to,
                              double bytes, int sharers) {
  if (cluster.node_of(from) == cluster.node_of(to)) return paths.alpha_intra + bytes / paths.bandwidth_intra;
  double bandwidth = paths.nic_bandwidth / std::max(1, sharers);
  if (paths.connection_cap > 0) bandwidth = std::min(bandwidth, paths.connection_cap);
  return paths.alpha_network + bytes / bandwidth;
}

double closed_form_seconds(const topologies::ClusterSpec& cluster, const Paths& paths, const Collective& c,
                           const std::vector<int>& members, const std::function<int(int)>& sharers) {
  const auto request = resolved_request(c, members, cluster);
  std::map<int, int> per_node;
  for (int m : members)
    ++per_node[cluster.node_of(m)];
  // Each node's members cross the network with the node's other simulated ranks, in groups of their own of the
  // same kind: the group gets its members' share of each NIC, and the smallest share bounds it.
  double network = std::numeric_limits<double>::infinity();
  for (const auto& [node, count] : per_node)
    network = std::min(network, paths.nic_bandwidth * count / std::max(count, sharers(node)));
  if (paths.connection_cap > 0) network = std::min(network, paths.connection_cap);
  const double gamma = c.reduce_seconds_per_byte;
  const auto wire = wire_model(c, request);
  if (per_node.size() == 1) {
    const auto link = request.nccl.nvlink ? LinkClass::nvlink : LinkClass::pcie;
    return collectives::closed_form_time(request, wire, link, paths.alpha_intra, paths.bandwidth_intra, gamma);
  }
  const bool two_level = request.algorithm == Algorithm::hierarchical || request.algorithm == Algorithm::in_switch;
  return two_level ? collectives::closed_form_time(request, paths.alpha_intra, paths.bandwidth_intra,
                                                   paths.alpha_network, network, gamma)
                   : collectives::closed_form_time(request, wire, LinkClass::network, paths.alpha_network,
                                                   std::min(network, paths.bandwidth_intra), gamma);
}

// closed_form_seconds, or where the algorithm has no closed form over two link classes its bytes once over the
// slowest path and a latency a peer.
double collective_or_fallback(const topologies::ClusterSpec& cluster, const Paths& paths, const Collective& c,
                              const std::vector<int>& members, const std::function<int(int)>& sharers) {
  try {
    return closed_form_seconds(cluster, paths, c, members, sharers);
  } catch (const std::exception&) {
    return static_cast<double>(members.size() - 1) * paths.alpha_network +
           c.bytes / (paths.nic_bandwidth / std::max(1, sharers(cluster.node_of(members.front()))));
  }
}

class Evaluator {
public:
  Evaluator(const topologies::ClusterSpec& cluster, const ExecutionGraph& graph, int iterations)
      : cluster_(cluster), graph_(graph), paths_(paths_of(cluster)), iterations_(iterations) {}

  Estimate run();

private:
  struct StreamState {
    std::size_t pos = 0;
    int it = 0;
    bool started = false; // the iteration's start (the rank's previous iteration done) was taken
    bool posted = false;  // its collective is posted and waits for the group
    std::uint64_t call = 0;
    double free = 0;
    bool queued = false;
  };
  struct RankState {
    std::vector<double> finish;
    std::vector<std::int64_t> done_it;
    std::uint64_t ops_done = 0;
    double iteration_max = 0;
    std::vector<double> iteration_end;
    std::array<StreamState, kStreamCount> streams;
    std::unordered_map<int, std::uint64_t> calls; // per group: collectives posted
  };
  struct Call {
    std::size_t posted = 0;
    double last_post = 0;
    bool resolved = false;
    double end = 0;
    std::vector<std::pair<int, int>> waiting; // (rank, stream)
  };

  void advance(int rank, int stream);
  void complete(int rank, int stream, std::uint32_t op, double end);
  void wake(int rank, int stream);
  void wake_rank(int rank);
  double collective_seconds(const Collective& c);
  // The members that post a group's collectives: those with programs (a first-replica plan's others mirror them).
  std::size_t posting_members(int group);
  std::unordered_map<int, std::size_t> posting_;
  double transfer_seconds(int from, int to, double bytes) const;

  const topologies::ClusterSpec& cluster_;
  const ExecutionGraph& graph_;
  Paths paths_;
  int iterations_;
  std::vector<std::array<std::vector<std::uint32_t>, kStreamCount>> stream_ops_; // per program
  std::vector<RankState> ranks_;
  std::unordered_map<int, int> sharers_; // per node: its simulated ranks
  std::vector<std::pair<int, int>> ready_;
  std::unordered_map<std::uint64_t, Call> calls_;                 // (group, call)
  std::unordered_map<std::uint64_t, std::deque<double>> sends_;   // (from, to, stream): posted sends' times
  std::unordered_map<const Collective*, double> collective_cost_; // programs are shared: priced once per op
};

Estimate Evaluator::run() {
  if (!graph_.servers.empty()) throw EstimateError("parameter servers answer in arrival order: no closed form");
  stream_ops_.resize(graph_.programs.size());
  for (std::size_t p = 0; p < graph_.programs.size(); ++p)
    for (std::uint32_t i = 0; i < graph_.programs[p].ops.size(); ++i) {
      const auto& body = graph_.programs[p].ops[i].body;
      if (std::holds_alternative<Push>(body) || std::holds_alternative<PushPull>(body) ||
          std::holds_alternative<Exchange>(body))
        throw EstimateError("gossip, D-PSGD and parameter-server ops have no closed form here");
      stream_ops_[p][static_cast<int>(graph_.programs[p].ops[i].stream)].push_back(i);
    }
  ranks_.resize(graph_.rank_count());
  // A node's NIC is shared by its ranks that run (with programs, or in a group: a first-replica plan's mirrors).
  std::vector<bool> runs(graph_.rank_count(), false);
  for (const auto& group : graph_.groups)
    for (int r : group)
      runs[r] = true;
  for (int r = 0; r < graph_.rank_count(); ++r)
    if (runs[r] || !graph_.program_of(r).ops.empty()) ++sharers_[cluster_.node_of(r)];
  for (int r = 0; r < graph_.rank_count(); ++r) {
    const auto n = graph_.program_of(r).ops.size();
    ranks_[r].finish.assign(n, 0);
    ranks_[r].done_it.assign(n, -1);
    for (int s = 0; s < kStreamCount; ++s)
      if (!stream_ops_[graph_.rank_program[r]][s].empty()) wake(r, s);
  }
  while (!ready_.empty()) {
    const auto [rank, stream] = ready_.back();
    ready_.pop_back();
    // Still marked queued while it runs: its own completions need not wake it again.
    advance(rank, stream);
    ranks_[rank].streams[stream].queued = false;
  }
  Estimate e;
  e.iteration_ends.assign(iterations_, 0);
  for (int r = 0; r < graph_.rank_count(); ++r) {
    if (graph_.program_of(r).ops.empty()) continue;
    if (static_cast<int>(ranks_[r].iteration_end.size()) < iterations_)
      throw EstimateError(fmt::format("rank {} waits for ever: the plan's communication does not match", r));
    for (int i = 0; i < iterations_; ++i)
      e.iteration_ends[i] = std::max(e.iteration_ends[i], ranks_[r].iteration_end[i]);
  }
  e.iteration_seconds = iterations_ > 1 ? e.iteration_ends[iterations_ - 1] - e.iteration_ends[iterations_ - 2]
                                        : e.iteration_ends.front();
  return e;
}

void Evaluator::wake(int rank, int stream) {
  auto& st = ranks_[rank].streams[stream];
  if (st.queued || st.it >= iterations_) return;
  st.queued = true;
  ready_.emplace_back(rank, stream);
}

void Evaluator::wake_rank(int rank) {
  for (int s = 0; s < kStreamCount; ++s)
    if (!stream_ops_[graph_.rank_program[rank]][s].empty()) wake(rank, s);
}

void Evaluator::complete(int rank, int stream, std::uint32_t op, double end) {
  auto& state = ranks_[rank];
  auto& st = state.streams[stream];
  state.finish[op] = end;
  state.done_it[op] = st.it;
  st.free = end;
  ++st.pos;
  state.iteration_max = std::max(state.iteration_max, end);
  if (++state.ops_done % graph_.program_of(rank).ops.size() == 0) {
    state.iteration_end.push_back(state.iteration_max);
    state.iteration_max = 0;
  }
  wake_rank(rank);
}

// Runs the stream's ops until one waits for something not yet known (another stream, the group, the sender).
void Evaluator::advance(int rank, int stream) {
  auto& state = ranks_[rank];
  auto& st = state.streams[stream];
  const auto& program = graph_.program_of(rank);
  const auto& list = stream_ops_[graph_.rank_program[rank]][stream];
  const std::uint64_t per_iteration = program.ops.size();
  while (st.it < iterations_) {
    if (st.pos == list.size()) {
      st.pos = 0;
      st.started = false;
      ++st.it;
      continue;
    }
    if (!st.started) { // a rank starts iteration i + 1 once all of its ops of iteration i are done
      if (state.ops_done < static_cast<std::uint64_t>(st.it) * per_iteration) return;
      if (st.it > 0) st.free = std::max(st.free, state.iteration_end[st.it - 1]);
      st.started = true;
    }
    const std::uint32_t index = list[st.pos];
    const auto& op = program.ops[index];
    double ready = st.free;
    for (auto dep : op.deps) {
      if (state.done_it[dep] < st.it) return;
      ready = std::max(ready, state.finish[dep]);
    }
    if ((st.it + 1) % op.every != 0) {
      complete(rank, stream, index, ready);
      continue;
    }
    if (const auto* compute = std::get_if<Compute>(&op.body)) {
      // A slower GPU's kernels take longer (as the replay prices them); the data loader's work does not.
      const auto& slowdown = graph_.compute_slowdown;
      const bool slowed = paced_by_gpu(op) && !slowdown.empty() && !slowdown[rank].empty();
      complete(rank, stream, index,
               ready + compute->seconds * (slowed ? slowdown[rank][st.it % slowdown[rank].size()] : 1.0));
    } else if (const auto* c = std::get_if<Collective>(&op.body)) {
      // The k-th collective a member posts on a group is the group's k-th call (NCCL's communicators order them).
      if (!st.posted) {
        st.call = state.calls[c->group]++;
        st.posted = true;
        auto& call = calls_[(static_cast<std::uint64_t>(c->group) << 32) | st.call];
        call.last_post = std::max(call.last_post, ready);
        if (++call.posted == posting_members(c->group)) {
          call.resolved = true;
          call.end = call.last_post + collective_seconds(*c);
          for (const auto& [r, s] : call.waiting)
            wake(r, s);
          call.waiting.clear();
        }
      }
      const auto key = (static_cast<std::uint64_t>(c->group) << 32) | st.call;
      auto& call = calls_[key];
      if (!call.resolved) {
        call.waiting.emplace_back(rank, stream);
        return;
      }
      st.posted = false;
      const double end = call.end;
      if (--call.posted == 0) calls_.erase(key); // every member has taken it
      complete(rank, stream, index, end);
    } else if (const auto* p2p = std::get_if<SendRecv>(&op.body)) {
      const auto channel = [&](int from, int to) {
        return p2p_channel(from, to, static_cast<Stream>(stream), graph_.rank_count());
      };
      if (p2p->send) {
        sends_[channel(rank, p2p->peer)].push_back(ready);
        wake_rank(p2p->peer);
        complete(rank, stream, index, ready);
      } else {
        auto& posted = sends_[channel(p2p->peer, rank)];
        if (posted.empty()) return; // woken by the send
        const double start = std::max(ready, posted.front());
        posted.pop_front();
        complete(rank, stream, index, start + transfer_seconds(p2p->peer, rank, p2p->bytes));
      }
    }
  }
}

std::size_t Evaluator::posting_members(int group) {
  if (const auto found = posting_.find(group); found != posting_.end()) return found->second;
  std::size_t n = 0;
  for (int r : graph_.groups[group])
    n += !graph_.program_of(r).ops.empty();
  return posting_.emplace(group, n).first->second;
}

double Evaluator::transfer_seconds(int from, int to, double bytes) const {
  return point_to_point_seconds(cluster_, paths_, from, to, bytes, sharers_.at(cluster_.node_of(from)));
}

double Evaluator::collective_seconds(const Collective& c) {
  if (const auto found = collective_cost_.find(&c); found != collective_cost_.end()) return found->second;
  const double seconds =
      collective_or_fallback(cluster_, paths_, c, graph_.groups[c.group], [&](int node) { return sharers_.at(node); });
  return collective_cost_.emplace(&c, seconds).first->second;
}

} // namespace

Estimate estimate(const topologies::ClusterSpec& cluster, const ExecutionGraph& graph, int iterations) {
  return Evaluator(cluster, graph, std::max(1, iterations)).run();
}

double collective_seconds(const topologies::ClusterSpec& cluster, const Collective& c, const std::vector<int>& members,
                          int sharers) {
  return collective_or_fallback(cluster, paths_of(cluster), c, members, [sharers](int) { return sharers; });
}

double transfer_seconds(const topologies::ClusterSpec& cluster, int from, int to, double bytes, int sharers) {
  return point_to_point_seconds(cluster, paths_of(cluster), from, to, bytes, sharers);
}

} // namespace dtsim::graph
