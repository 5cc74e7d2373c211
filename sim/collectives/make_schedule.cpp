// make_schedule: checks a request and dispatches it to the algorithm that implements it.
#include "sim/collectives/detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

namespace dtsim::collectives {
namespace {

using detail::SchedulePtr;
using enum Algorithm;

// Every supported (operation, algorithm), in the order error messages list them.
std::vector<Algorithm> algorithms_of(Operation op) {
  switch (op) {
  case Operation::all_reduce:
    return {ring, double_binary_tree, binomial_tree, recursive_doubling, rabenseifner, hierarchical, in_switch};
  case Operation::reduce_scatter:
    return {ring, rabenseifner, direct, hierarchical};
  case Operation::all_gather:
    return {ring, recursive_doubling, direct, hierarchical};
  case Operation::broadcast:
  case Operation::reduce:
    return {binomial_tree, ring};
  case Operation::all_to_all:
  case Operation::all_to_all_v:
    return {pairwise, direct};
  case Operation::barrier:
    return {recursive_doubling};
  case Operation::send_recv:
    return {direct};
  }
  return {};
}

std::string listed(const std::vector<Algorithm>& algorithms) {
  std::string out;
  for (auto a : algorithms)
    out += (out.empty() ? "" : ", ") + std::string(to_string(a));
  return out;
}

} // namespace

void detail::validate_request(const Request& r) {
  if (r.ranks < 1) throw std::invalid_argument(fmt::format("a collective needs at least 1 rank, got {}", r.ranks));
  if (!std::isfinite(r.bytes) || r.bytes < 0)
    throw std::invalid_argument(fmt::format("{}: bytes must be finite and >= 0, got {}", to_string(r.op), r.bytes));
  if (r.root < 0 || r.root >= r.ranks)
    throw std::invalid_argument(
        fmt::format("{}: root {} is not a position of a {}-rank group", to_string(r.op), r.root, r.ranks));
  if (!r.node_of.empty() && static_cast<int>(r.node_of.size()) != r.ranks)
    throw std::invalid_argument(
        fmt::format("{}: node_of has {} entries for {} ranks", to_string(r.op), r.node_of.size(), r.ranks));
  if (r.op == Operation::all_to_all_v) {
    const auto n = static_cast<std::size_t>(r.ranks);
    if (r.matrix.size() != n * n)
      throw std::invalid_argument(fmt::format("all-to-all-v over {} ranks needs a {}x{} matrix ({} entries), got {}",
                                              r.ranks, r.ranks, r.ranks, n * n, r.matrix.size()));
    for (std::size_t i = 0; i < r.matrix.size(); ++i)
      if (!std::isfinite(r.matrix[i]) || r.matrix[i] < 0)
        throw std::invalid_argument(
            fmt::format("all-to-all-v: matrix[{}][{}] = {} is not a byte count", i / n, i % n, r.matrix[i]));
  }
  if (r.algorithm == automatic)
    throw std::invalid_argument(
        fmt::format("{}: algorithm 'auto' must be resolved with choose_algorithm first", to_string(r.op)));
  const auto supported = algorithms_of(r.op);
  if (std::find(supported.begin(), supported.end(), r.algorithm) == supported.end())
    throw std::invalid_argument(fmt::format("{} has no '{}' algorithm; supported: {}", to_string(r.op),
                                            to_string(r.algorithm), listed(supported)));
}

namespace {

SchedulePtr build(const Request& r) {
  using namespace detail;
  const int n = r.ranks;
  const double S = r.bytes;
  if (r.algorithm == ring &&
      (r.op == Operation::all_reduce || r.op == Operation::reduce_scatter || r.op == Operation::all_gather))
    if (const int rings = ring_count(r); rings > 1) return multi_ring(r.op, node_layout(n, r.node_of), rings, S);
  const auto uniform = [n, S](int, int to) { return part_bytes(S, n, to); };
  switch (r.op) {
  case Operation::all_reduce:
    switch (r.algorithm) {
    case ring:
      return ring_all_reduce(n, S);
    case double_binary_tree:
      // NCCL's tree on GPUs: chains inside the nodes under the tree of nodes (one GPU a node: the tree itself).
      if (nccl_node_tree(r)) {
        const auto layout = node_layout(n, r.node_of);
        return nccl_tree_all_reduce(layout, layout.nodes.size() > 1 ? std::min(layout.per_node, r.nccl.nics) : 1, S,
                                    r.nccl.version);
      }
      return double_binary_tree_all_reduce(n, S, r.nccl.version);
    case binomial_tree:
      return binomial_all_reduce(n, S);
    case recursive_doubling:
      return recursive_doubling_all_reduce(n, S);
    case rabenseifner:
      return rabenseifner_all_reduce(n, S);
    case in_switch:
      return in_switch_all_reduce(r);
    default:
      return hierarchical_all_reduce(n, S, r.node_of);
    }
  case Operation::reduce_scatter:
    if (r.algorithm == ring) return ring_reduce_scatter(n, S);
    if (r.algorithm == rabenseifner) return recursive_halving_reduce_scatter(n, S);
    if (r.algorithm == hierarchical) return hierarchical_reduce_scatter(n, S, r.node_of);
    return direct_reduce_scatter(n, S);
  case Operation::all_gather:
    if (r.algorithm == ring) return ring_all_gather(n, S);
    if (r.algorithm == recursive_doubling) return recursive_doubling_all_gather(n, S);
    if (r.algorithm == hierarchical) return hierarchical_all_gather(n, S, r.node_of);
    return direct_all_gather(n, S);
  case Operation::broadcast:
    return r.algorithm == ring ? chain_broadcast(n, S, r.root) : binomial_broadcast(n, S, r.root);
  case Operation::reduce:
    return r.algorithm == ring ? chain_reduce(n, S, r.root) : binomial_reduce(n, S, r.root);
  case Operation::all_to_all:
    return r.algorithm == pairwise ? pairwise_all_to_all(n, uniform, false) : direct_all_to_all(n, uniform, false);
  case Operation::all_to_all_v: {
    const auto matrix = [n, m = r.matrix](int from, int to) {
      return m[static_cast<std::size_t>(from) * static_cast<std::size_t>(n) + static_cast<std::size_t>(to)];
    };
    return r.algorithm == pairwise ? pairwise_all_to_all(n, matrix, true) : direct_all_to_all(n, matrix, true);
  }
  case Operation::barrier:
    return dissemination_barrier(n);
  case Operation::send_recv:
    return point_to_point(n, S, r.root);
  }
  throw std::logic_error("make_schedule: unknown operation");
}

} // namespace

bool detail::nccl_node_tree(const Request& r) {
  return r.nccl.present() && !r.node_of.empty() && node_layout(r.ranks, r.node_of).per_node > 1;
}

int detail::ring_count(const Request& r) {
  if (!r.nccl.present() || r.nccl.nics <= 1 || r.node_of.empty()) return 1;
  const std::set<int> nodes(r.node_of.begin(), r.node_of.end());
  if (nodes.size() < 2 || r.ranks % static_cast<int>(nodes.size()) != 0) return 1;
  const int per_node = r.ranks / static_cast<int>(nodes.size());
  for (int node : nodes)
    if (std::count(r.node_of.begin(), r.node_of.end(), node) != per_node) return 1;
  return std::min(per_node, r.nccl.nics);
}

std::vector<Algorithm> supported_algorithms(Operation op) {
  return algorithms_of(op);
}

std::shared_ptr<const Schedule> make_schedule(const Request& request) {
  detail::validate_request(request);
  // Hierarchical checks its node layout even for one rank, so a bad layout fails early.
  if (request.algorithm == hierarchical || request.algorithm == in_switch)
    detail::node_layout(request.ranks, request.node_of,
                        fmt::format("{} {}", to_string(request.algorithm), to_string(request.op)));
  if (request.ranks == 1) return detail::empty_schedule(1);
  return build(request);
}

} // namespace dtsim::collectives
