// Closed forms (alpha-beta-gamma model, Thakur, Rabenseifner and Gropp 2005 section 3; Hockney 1994), with the
// reduction overlapping the receives as in NCCL's recvReduceSend primitive, which reduces slices as they
// arrive: a position's step costs alpha + max(max(bytes sent, bytes received) / B, bytes reduced * gamma)
// (alpha only when it moves something), and a step in lock step lasts as long as its slowest position. A
// step that receives and reduces x bytes (and sends no more than x) takes alpha + x max(1/B, gamma).
// Notation: n ranks, S bytes, B bandwidth, L = ceil(log2 n), m = 2^floor(log2 n), q = log2 m, r = n - m,
// fold = [r > 0] ((alpha + S max(1/B, gamma)) + (alpha + S/B)), the extra step before a folded core (the even
// positions below 2r hand their buffer to the odd ones, which reduce it) and the one after it (the result
// goes back).
#include "sim/collectives/closed_form.hpp"
#include "sim/collectives/detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace dtsim::collectives {
namespace {

using detail::ceil_log2;
using detail::floor_log2;

// Double binary tree (double_binary_tree.cpp): C chunks of c = S/(2C) per tree, C + 2D - 1 steps, D the
// trees' depth. From the pipeline's definition, position v of a tree (height h(v), depth d(v)) is busy in
// these windows of C steps each:
//   sends one chunk to its parent     in [h(v), h(v) + C)            (not the root)
//   receives and reduces one chunk     in [h(u), h(u) + C)            for each child u
//   receives one chunk from its parent in [D + d(v) - 1, D + d(v) - 1 + C)   (not the root)
//   sends one chunk to each child      in [D + d(v), D + d(v) + C)
// With s_v(t), r_v(t), q_v(t) the chunks v sends, receives and reduces in step t over both trees, and the
// reduction overlapping the step's transfers:
//   T = sum over t of max_v (alpha [v busy] + c max(max(s_v(t), r_v(t)) / B, q_v(t) gamma))
// In the steady state (2D <= t < C) every window is open, which gives the simpler upper bound
//   T <= (C + 2D - 1) (alpha + c max_v max(max(s_v, r_v) / B, q_v gamma)),  s_v, r_v, q_v: the counts with
// all windows open, reached as C grows. NCCL's trees make each position a leaf in one of them, so s_v, r_v <= 4
// and q_v <= 3.
double double_binary_tree(int n, double bytes, double alpha, double bw, double gamma, int version) {
  const auto trees = detail::nccl_double_binary_tree(n);
  const int chunks = detail::double_binary_tree_chunks(n, bytes, version);
  int depth = 0;
  for (const auto& t : trees)
    depth = std::max(depth, t.height[t.root]);
  const int steps = chunks + 2 * depth - 1;
  const double chunk = bytes / 2 / chunks;
  std::vector<int> sends(steps), recvs(steps), reduces(steps);
  std::vector<double> slowest(steps, 0);
  const auto open = [&](std::vector<int>& count, int from, int times) {
    for (int t = from; t < from + chunks; ++t)
      count[t] += times;
  };
  for (int v = 0; v < n; ++v) {
    std::fill(sends.begin(), sends.end(), 0);
    std::fill(recvs.begin(), recvs.end(), 0);
    std::fill(reduces.begin(), reduces.end(), 0);
    for (const auto& tree : trees) {
      const int d = tree.height[tree.root];
      const int children = static_cast<int>(tree.children[v].size());
      if (tree.parent[v] >= 0) {
        open(sends, tree.height[v], 1);
        open(recvs, d + tree.depth[v] - 1, 1);
      }
      for (int u : tree.children[v]) {
        open(recvs, tree.height[u], 1);
        open(reduces, tree.height[u], 1);
      }
      if (children > 0) open(sends, d + tree.depth[v], children);
    }
    for (int t = 0; t < steps; ++t)
      if (sends[t] + recvs[t] > 0)
        slowest[t] =
            std::max(slowest[t], alpha + chunk * std::max(std::max(sends[t], recvs[t]) / bw, reduces[t] * gamma));
  }
  double total = 0;
  for (double t : slowest)
    total += t;
  return total;
}

// Hierarchical all-reduce (hierarchical.cpp), g positions on each of N nodes, the three phases one after the
// other, each a ring (see the ring all-reduce below):
//   (g-1) (a_i + S/g max(1/B_i, gamma))              intra-node ring reduce-scatter
//   + (N-1) (a_e + S/(gN) max(1/B_e, gamma))         ring all-reduce of S/g across the nodes: its
//   + (N-1) (a_e + S/(gN B_e))                         reduce-scatter and its all-gather
//   + (g-1) (a_i + S/(g B_i))                        intra-node ring all-gather
// The hierarchical (rail-parallel) reduce-scatter is the first two lines, the intra-node ring reduce-scatter
// of the g rails' unions of blocks (S/g each) and the rails' ring reduce-scatters of their N blocks (S/(gN)):
//   (g-1) (a_i + S/g max(1/B_i, gamma)) + (N-1) (a_e + S/(gN) max(1/B_e, gamma))
// and the hierarchical all-gather the last two, the rails' ring all-gathers first:
//   (N-1) (a_e + S/(gN B_e)) + (g-1) (a_i + S/(g B_i))
// B_e is what one rail's ring gets across the nodes: the NIC's bandwidth when each rail has its own NIC, a
// share of it when the rails share one.
double hierarchical(const Request& r, double a_i, double bw_i, double a_e, double bw_e, double gamma) {
  const auto layout = detail::node_layout(r.ranks, r.node_of, fmt::format("hierarchical {}", to_string(r.op)));
  const double g = layout.per_node;
  const double nodes = static_cast<double>(layout.nodes.size());
  const double S = r.bytes;
  const double reduced_i = std::max(1 / bw_i, gamma); // seconds per byte received and reduced inside a node
  const double reduced_e = std::max(1 / bw_e, gamma); // and across nodes
  const double reduce_scatter = (g - 1) * (a_i + S / g * reduced_i) + (nodes - 1) * (a_e + S / (g * nodes) * reduced_e);
  const double all_gather = (nodes - 1) * (a_e + S / (g * nodes * bw_e)) + (g - 1) * (a_i + S / (g * bw_i));
  if (r.op == Operation::reduce_scatter) return reduce_scatter;
  if (r.op == Operation::all_gather) return all_gather;
  return reduce_scatter + all_gather;
}

double all_to_all_v(const Request& r, double a, double bw) {
  const int n = r.ranks;
  const auto at = [&](int i, int j) { return r.matrix[static_cast<std::size_t>(i) * n + j]; };
  double t = 0;
  if (r.algorithm == Algorithm::pairwise) {
    // Round k: alpha + max_p M[p][(p+k) mod n] / B, for the rounds that move anything. This is the lock-step
    // time; with uneven rounds an asynchronous replay is faster (positions run ahead of the slowest pair).
    for (int k = 1; k < n; ++k) {
      double largest = -1;
      for (int p = 0; p < n; ++p)
        if (at(p, (p + k) % n) > 0) largest = std::max(largest, at(p, (p + k) % n));
      if (largest >= 0) t += a + largest / bw;
    }
    return t;
  }
  // Direct: alpha + max_p max(sent by p, received by p) / B.
  double largest = -1;
  for (int p = 0; p < n; ++p) {
    double out = 0, in = 0;
    bool any = false;
    for (int q = 0; q < n; ++q)
      if (q != p) {
        out += at(p, q);
        in += at(q, p);
        any = any || at(p, q) > 0 || at(q, p) > 0;
      }
    if (any) largest = std::max(largest, std::max(out, in));
  }
  return largest >= 0 ? a + largest / bw : 0;
}

} // namespace

// In-switch all-reduce (in_switch.cpp). Streaming x bytes through a switch in C = switch_chunks(x) chunks takes
// C + 1 steps of alpha + x/(C B) (chunk k goes up while chunk k-1 comes down). Inside one node of g GPUs, NVLS
// streams S (g+1)/g each way (the reduce-scatter's S up and S/g down, the all-gather's S/g up and S down):
//   (C + 1) (alpha_i + S (g+1)/(g C B_i))
// Across N nodes of g GPUs, with NVLS in the nodes (the reduce-scatter sends S up and gets S/g back, the
// all-gather sends S/g up and gets S back, so both stream S), InfiniBand SHARP on each rail's shard S/g:
//   2 (C_S + 1) (alpha_i + S/(C_S B_i)) + (C_g + 1) (alpha_e + S/(g C_g B_e)),  C_S = C(S), C_g = C(S/g)
// and without NVLS the intra-node phases are rings: (g-1) (alpha_i + S/g max(1/B_i, gamma)) + (g-1) (alpha_i +
// S/(g B_i)). The switch reduces, so gamma appears only in the rings.
double in_switch(const Request& r, double a_i, double bw_i, double a_e, double bw_e, double gamma) {
  const auto layout = detail::node_layout(r.ranks, r.node_of, "in-switch all-reduce");
  const double S = r.bytes, g = layout.per_node;
  auto stream = [](double bytes, double alpha, double bw) {
    const int chunks = detail::switch_chunks(bytes);
    return (chunks + 1) * (alpha + bytes / chunks / bw);
  };
  if (layout.nodes.size() == 1) return stream(S + S / g, a_i, bw_i);
  const double inter = stream(S / g, a_e, bw_e);
  if (layout.per_node == 1) return inter;
  if (r.node_switch_reduces) return 2 * stream(S, a_i, bw_i) + inter;
  return (g - 1) * (a_i + S / g * std::max(1 / bw_i, gamma)) + inter + (g - 1) * (a_i + S / (g * bw_i));
}

double closed_form_time(const Request& request, double a, double bw, double gamma) {
  Request r = request;
  if (r.algorithm == Algorithm::automatic) r.algorithm = choose_algorithm(r);
  detail::validate_request(r);
  const int n = r.ranks;
  if (n == 1) return 0;
  const double S = r.bytes;
  const double nn = n;
  const int L = ceil_log2(n);
  const int q = floor_log2(n);
  const int m = 1 << q;
  const int rest = n - m;
  // Seconds per byte a position receives and reduces in the same step: the reduction overlaps the receive.
  const double reduced = std::max(1 / bw, gamma);
  const double fold = rest > 0 ? (a + S * reduced) + (a + S / bw) : 0;
  const double block = S / nn;

  switch (r.op) {
  case Operation::all_reduce:
    switch (r.algorithm) {
    case Algorithm::ring:
      // Thakur et al. 2005 4.5 / Patarasuk and Yuan 2009: ring reduce-scatter, every position receiving and
      // reducing a block of S/n per step, then ring all-gather:
      //   (n-1) (alpha + S/n max(1/B, gamma)) + (n-1) (alpha + S/(nB))
      //   = 2 (n-1) alpha + (n-1) S/n max(1/B, gamma) + (n-1) S/(nB)
      return 2 * (nn - 1) * a + (nn - 1) * block * reduced + (nn - 1) * block / bw;
    case Algorithm::double_binary_tree: // per step, see double_binary_tree above
      return double_binary_tree(n, S, a, bw, gamma, r.nccl.version);
    case Algorithm::binomial_tree:
      // Binomial reduce + binomial broadcast, Thakur et al. 2005 4.3 and 4.1. Every reduce round has a receiver
      // that reduces S (relative rank 0 among them):
      //   L (alpha + S max(1/B, gamma)) + L (alpha + S/B)
      return L * (a + S * reduced) + L * (a + S / bw);
    case Algorithm::recursive_doubling:
      // Thakur et al. 2005 4.4: q exchanges of the whole buffer, each reduced as it arrives, plus the fold:
      //   q (alpha + S max(1/B, gamma)) + fold
      return q * (a + S * reduced) + fold;
    case Algorithm::rabenseifner:
      // Thakur et al. 2005 4.4, Rabenseifner's algorithm: recursive halving, step i receiving and reducing
      // S/2^(i+1), then recursive doubling of the same sizes, plus the fold:
      //   2 q alpha + (m-1)/m S max(1/B, gamma) + (m-1)/m S/B + fold
      return 2 * q * a + (m - 1.0) / m * S * reduced + (m - 1.0) / m * S / bw + fold;
    case Algorithm::in_switch:
      return in_switch(r, a, bw, a, bw, gamma);
    default: // hierarchical, one kind of link
      return hierarchical(r, a, bw, a, bw, gamma);
    }
  case Operation::reduce_scatter:
    // Ring (Thakur et al. 2005 4.5): n-1 steps, each receiving and reducing one block:
    //   (n-1) (alpha + S/n max(1/B, gamma))
    if (r.algorithm == Algorithm::ring) return (nn - 1) * (a + block * reduced);
    // Direct: one step, each position sending n-1 blocks and receiving and reducing n-1 copies of its own:
    //   alpha + (n-1) S/n max(1/B, gamma)
    if (r.algorithm == Algorithm::direct) return a + (nn - 1) * block * reduced;
    if (r.algorithm == Algorithm::hierarchical) return hierarchical(r, a, bw, a, bw, gamma); // one kind of link
    {
      // Recursive halving (Thakur et al. 2005 4.5). Folded, new rank j < r holds two blocks, so the aligned
      // half of h = m/2^(i+1) new ranks exchanged in step i holds up to h + min(h, r) blocks, and the
      // position that receives (and reduces) the largest half sends no more than it:
      //   [r > 0] (alpha + S max(1/B, gamma)) + sum_i (alpha + (h_i + min(h_i, r)) S/n max(1/B, gamma))
      //   + [r > 0] (alpha + S/(nB))
      double t = rest > 0 ? (a + S * reduced) + (a + block / bw) : 0;
      for (int i = 0; i < q; ++i) {
        const int h = m >> (i + 1);
        t += a + (h + std::min(h, rest)) * block * reduced;
      }
      return t;
    }
  case Operation::all_gather:
    if (r.algorithm == Algorithm::ring) return (nn - 1) * (a + block / bw);
    if (r.algorithm == Algorithm::direct) return a + (nn - 1) * block / bw;
    if (r.algorithm == Algorithm::hierarchical) return hierarchical(r, a, bw, a, bw, gamma); // one kind of link
    {
      // Recursive doubling (Thakur et al. 2005 4.2); step i moves 2^i new ranks' blocks, up to
      // 2^i + min(2^i, r) blocks when folded:
      //   [r > 0] (alpha + S/(nB)) + sum_i (alpha + (2^i + min(2^i, r)) S/(nB)) + [r > 0] (alpha + (n-1) S/(nB))
      double t = rest > 0 ? (a + block / bw) + (a + (nn - 1) * block / bw) : 0;
      for (int i = 0; i < q; ++i)
        t += a + ((1 << i) + std::min(1 << i, rest)) * block / bw;
      return t;
    }
  case Operation::broadcast:
  case Operation::reduce: {
    // Seconds per byte of a step's busiest position: in every step of a reduce some position receives and
    // reduces the step's message (binomial: relative rank 0 among others; chain: each chunk's receiver), while
    // a broadcast only moves data.
    const double per_byte = r.op == Operation::reduce ? reduced : 1 / bw;
    // Binomial (Thakur et al. 2005 4.1, 4.3):
    //   broadcast L (alpha + S/B), reduce L (alpha + S max(1/B, gamma))
    if (r.algorithm == Algorithm::binomial_tree) return L * (a + S * per_byte);
    // Pipelined chain of C chunks: C + n - 2 steps of one chunk (NCCL's ring broadcast and reduce):
    //   broadcast (C + n - 2) (alpha + S/(CB)), reduce (C + n - 2) (alpha + S/C max(1/B, gamma))
    const int chunks = detail::pipeline_chunks(S);
    return (chunks + nn - 2) * (a + S / chunks * per_byte);
  }
  case Operation::all_to_all: // Thakur et al. 2005 4.6
    if (r.algorithm == Algorithm::pairwise) return (nn - 1) * (a + block / bw);
    return a + (nn - 1) * block / bw;
  case Operation::all_to_all_v:
    return all_to_all_v(r, a, bw);
  case Operation::barrier: // dissemination, Hensgen, Finkel and Manber 1988
    return L * a;
  case Operation::send_recv:
    return a + S / bw;
  }
  throw std::logic_error("closed_form_time: unknown operation");
}

double closed_form_time(const Request& request, double alpha_intra, double bandwidth_intra, double alpha_inter,
                        double bandwidth_inter, double gamma) {
  Request r = request;
  if (r.algorithm == Algorithm::automatic) r.algorithm = choose_algorithm(r);
  detail::validate_request(r);
  const bool two_level =
      r.algorithm == Algorithm::hierarchical || (r.op == Operation::all_reduce && r.algorithm == Algorithm::in_switch);
  if (!two_level)
    throw std::invalid_argument(fmt::format("a closed form with separate intra- and inter-node links exists only for "
                                            "the hierarchical all-reduce, reduce-scatter and all-gather and the "
                                            "in-switch all-reduce, not {} {}",
                                            to_string(r.op), to_string(r.algorithm)));
  if (r.ranks == 1) return 0;
  if (r.algorithm == Algorithm::in_switch)
    return in_switch(r, alpha_intra, bandwidth_intra, alpha_inter, bandwidth_inter, gamma);
  return hierarchical(r, alpha_intra, bandwidth_intra, alpha_inter, bandwidth_inter, gamma);
}

double closed_form_time(const Request& resolved, const WireModel& wire, LinkClass link, double alpha, double bandwidth,
                        double gamma) {
  const double step_alpha = std::max(alpha, wire.step_latency[static_cast<int>(link)]);
  const double rate = wire.rate_cap > 0 ? std::min(bandwidth, wire.rate_cap) : bandwidth;
  if (resolved.op == Operation::all_reduce && resolved.algorithm == Algorithm::double_binary_tree &&
      resolved.ranks > 1 && (wire.protocol == Protocol::ll || wire.protocol == Protocol::ll128)) {
    // LL and LL128 pass each line on as it arrives (the replay's Transfer::forwarded): a latency at each of the
    // tree's 2D hops, up and down, and the bytes at the protocol's rate once, as NCCL's model prices it.
    int depth = 0;
    for (const auto& t : detail::nccl_double_binary_tree(resolved.ranks))
      depth = std::max(depth, t.height[static_cast<std::size_t>(t.root)]);
    return wire.base_latency + 2 * depth * step_alpha + resolved.bytes * wire.wire_factor / rate;
  }
  return wire.base_latency + closed_form_time(resolved, step_alpha, rate / wire.wire_factor, gamma);
}

} // namespace dtsim::collectives
