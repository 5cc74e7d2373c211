// Closed forms (alpha-beta-gamma model, Thakur, Rabenseifner and Gropp 2005 section 3; Hockney 1994).
// Notation: n ranks, S bytes, B bandwidth, L = ceil(log2 n), m = 2^floor(log2 n), q = log2 m, r = n - m,
// fold = [r > 0] (2 (alpha + S/B) + S gamma), the extra step before and after a folded core.
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
// With s_v(t), r_v(t), q_v(t) the chunks v sends, receives and reduces in step t over both trees:
//   T = sum over t of max_v (alpha [v busy] + max(s_v(t), r_v(t)) c/B + q_v(t) c gamma)
// In the steady state (2D <= t < C) every window is open, which gives the simpler upper bound
//   T <= (C + 2D - 1) (alpha + c max_v (s_v / B + q_v gamma)),  s_v, q_v: the counts with all windows open,
// reached as C grows. NCCL's trees make each position a leaf in one of them, so s_v <= 4 and q_v <= 3.
double double_binary_tree(int n, double bytes, double alpha, double bw, double gamma) {
  const auto trees = detail::nccl_double_binary_tree(n);
  const int chunks = detail::double_binary_tree_chunks(bytes);
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
      const int children = (tree.children[v][0] >= 0) + (tree.children[v][1] >= 0);
      if (tree.parent[v] >= 0) {
        open(sends, tree.height[v], 1);
        open(recvs, d + tree.depth[v] - 1, 1);
      }
      for (int u : tree.children[v])
        if (u >= 0) {
          open(recvs, tree.height[u], 1);
          open(reduces, tree.height[u], 1);
        }
      if (children > 0) open(sends, d + tree.depth[v], children);
    }
    for (int t = 0; t < steps; ++t)
      if (sends[t] + recvs[t] > 0)
        slowest[t] =
            std::max(slowest[t], alpha + std::max(sends[t], recvs[t]) * chunk / bw + reduces[t] * chunk * gamma);
  }
  double total = 0;
  for (double t : slowest)
    total += t;
  return total;
}

// Hierarchical all-reduce (hierarchical.cpp), g positions on each of N nodes:
//   (g-1) (a_i + S/(g B_i) + S/g gamma)              intra-node ring reduce-scatter
//   + 2 (N-1) (a_e + S/(g N B_e)) + (N-1) S/(gN) gamma  ring all-reduce of S/g across the nodes
//   + (g-1) (a_i + S/(g B_i))                        intra-node ring all-gather
double hierarchical(const Request& r, double a_i, double bw_i, double a_e, double bw_e, double gamma) {
  const auto layout = detail::node_layout(r.ranks, r.node_of);
  const double g = layout.per_node;
  const double nodes = static_cast<double>(layout.nodes.size());
  const double S = r.bytes;
  return (g - 1) * (a_i + S / (g * bw_i) + S / g * gamma) + 2 * (nodes - 1) * (a_e + S / (g * nodes * bw_e)) +
         (nodes - 1) * S / (g * nodes) * gamma + (g - 1) * (a_i + S / (g * bw_i));
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
  const double fold = rest > 0 ? 2 * (a + S / bw) + S * gamma : 0;
  const double block = S / nn;

  switch (r.op) {
  case Operation::all_reduce:
    switch (r.algorithm) {
    case Algorithm::ring: // Thakur et al. 2005 4.5 / Patarasuk and Yuan 2009
      return 2 * (nn - 1) * (a + block / bw) + (nn - 1) * block * gamma;
    case Algorithm::double_binary_tree:
      return double_binary_tree(n, S, a, bw, gamma);
    case Algorithm::binomial_tree: // reduce + broadcast, Thakur et al. 2005 4.1 and 4.3
      return 2 * L * (a + S / bw) + L * S * gamma;
    case Algorithm::recursive_doubling: // Thakur et al. 2005 4.4
      return q * (a + S / bw + S * gamma) + fold;
    case Algorithm::rabenseifner: // Thakur et al. 2005 4.4, Rabenseifner's algorithm
      return 2 * q * a + 2.0 * (m - 1) / m * S / bw + (m - 1.0) / m * S * gamma + fold;
    default:
      return hierarchical(r, a, bw, a, bw, gamma);
    }
  case Operation::reduce_scatter:
    if (r.algorithm == Algorithm::ring) return (nn - 1) * (a + block / bw + block * gamma);
    if (r.algorithm == Algorithm::direct) return a + (nn - 1) * block / bw + (nn - 1) * block * gamma;
    {
      // Recursive halving (Thakur et al. 2005 4.5). Folded, new rank j < r holds two blocks, so the aligned
      // half of h = m/2^(i+1) new ranks sent in step i holds up to h + min(h, r) blocks:
      //   [r > 0] (alpha + S/B + S gamma) + sum_i (alpha + (h_i + min(h_i, r)) S/n (1/B + gamma))
      //   + [r > 0] (alpha + S/(nB))
      double t = rest > 0 ? (a + S / bw + S * gamma) + (a + block / bw) : 0;
      for (int i = 0; i < q; ++i) {
        const int h = m >> (i + 1);
        t += a + (h + std::min(h, rest)) * block * (1 / bw + gamma);
      }
      return t;
    }
  case Operation::all_gather:
    if (r.algorithm == Algorithm::ring) return (nn - 1) * (a + block / bw);
    if (r.algorithm == Algorithm::direct) return a + (nn - 1) * block / bw;
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
    const double g = r.op == Operation::reduce ? gamma : 0;
    if (r.algorithm == Algorithm::binomial_tree) return L * (a + S / bw + S * g); // Thakur et al. 2005 4.1, 4.3
    // Pipelined chain of C chunks: C + n - 2 steps of one chunk (NCCL's ring broadcast and reduce).
    const int chunks = detail::pipeline_chunks(S);
    return (chunks + nn - 2) * (a + S / chunks / bw + S / chunks * g);
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
  if (r.op != Operation::all_reduce || r.algorithm != Algorithm::hierarchical)
    throw std::invalid_argument(fmt::format("a closed form with separate intra- and inter-node links exists only for "
                                            "the hierarchical all-reduce, not {} {}",
                                            to_string(r.op), to_string(r.algorithm)));
  if (r.ranks == 1) return 0;
  return hierarchical(r, alpha_intra, bandwidth_intra, alpha_inter, bandwidth_inter, gamma);
}

} // namespace dtsim::collectives
