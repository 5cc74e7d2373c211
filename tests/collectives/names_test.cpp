// Names, choose_algorithm's documented rules (choose.cpp), bus bandwidth factors and refused requests.
#include "schedule_checks.hpp"

namespace dtsim::collectives {
namespace {

constexpr double KiB = 1024, MiB = 1024 * KiB;

TEST(Names, RoundTripAndAliases) {
  for (const auto& name : operation_names())
    EXPECT_EQ(to_string(parse_operation(name).value()), name);
  for (const auto& name : algorithm_names())
    EXPECT_EQ(to_string(parse_algorithm(name).value()), name);
  EXPECT_EQ(operation_names().size(), 9u);
  EXPECT_EQ(algorithm_names().size(), 10u);
  EXPECT_EQ(parse_algorithm("sharp"), Algorithm::in_switch);
  EXPECT_EQ(parse_algorithm("NVLS"), Algorithm::in_switch);
  EXPECT_EQ(parse_operation("all_reduce"), Operation::all_reduce);
  EXPECT_EQ(parse_operation("AllToAllV"), Operation::all_to_all_v);
  EXPECT_EQ(parse_operation("sendrecv"), Operation::send_recv);
  EXPECT_EQ(parse_algorithm("tree"), Algorithm::double_binary_tree);
  EXPECT_EQ(parse_algorithm("auto"), Algorithm::automatic);
  EXPECT_EQ(parse_algorithm("automatic"), Algorithm::automatic);
  EXPECT_EQ(parse_algorithm("binomial"), Algorithm::binomial_tree);
  EXPECT_EQ(parse_algorithm("recursive_doubling"), Algorithm::recursive_doubling);
  EXPECT_FALSE(parse_operation("allreduce2"));
  EXPECT_FALSE(parse_algorithm("butterfly"));
  EXPECT_FALSE(parse_algorithm(""));
}

TEST(BusBandwidth, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Operation::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Operation::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Operation::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Operation::all_to_all, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Operation::all_to_all_v, 8), 7.0 / 8);
  EXPECT_EQ(bus_bandwidth_factor(Operation::broadcast, 8), 1);
  EXPECT_EQ(bus_bandwidth_factor(Operation::reduce, 8), 1);
  EXPECT_EQ(bus_bandwidth_factor(Operation::send_recv, 2), 1);
  EXPECT_EQ(bus_bandwidth_factor(Operation::barrier, 8), 0);
  EXPECT_EQ(bus_bandwidth_factor(Operation::all_reduce, 1), 0);
}

Algorithm chosen(Operation op, int ranks, double bytes, std::vector<int> node_of = {}) {
  Request r;
  r.op = op;
  r.ranks = ranks;
  r.bytes = bytes;
  r.node_of = std::move(node_of);
  return choose_algorithm(r);
}

std::vector<int> nodes_of(int nodes, int per_node) {
  std::vector<int> out;
  for (int i = 0; i < nodes; ++i)
    out.insert(out.end(), per_node, i);
  return out;
}

TEST(ChooseAlgorithm, AllReduceRules) {
  using enum Algorithm;
  const auto op = Operation::all_reduce;
  EXPECT_EQ(chosen(op, 64, 1 * MiB, nodes_of(8, 8)), hierarchical);
  EXPECT_EQ(chosen(op, 64, 1 * MiB - 1, nodes_of(8, 8)), ring);
  EXPECT_EQ(chosen(op, 8, 64 * MiB, nodes_of(1, 8)), ring);                        // one node
  EXPECT_EQ(chosen(op, 8, 64 * MiB, nodes_of(8, 1)), ring);                        // one GPU per node
  EXPECT_EQ(chosen(op, 12, 64 * MiB, {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}), ring); // uneven nodes
  EXPECT_EQ(chosen(op, 64, 256 * KiB), ring);
  EXPECT_EQ(chosen(op, 4, 256 * KiB), ring);
  EXPECT_EQ(chosen(op, 64, 2 * KiB - 1), recursive_doubling);
  EXPECT_EQ(chosen(op, 4, 100), recursive_doubling);
  EXPECT_EQ(chosen(op, 9, 2 * KiB), double_binary_tree);
  EXPECT_EQ(chosen(op, 1024, 256 * KiB - 1), double_binary_tree);
  EXPECT_EQ(chosen(op, 8, 2 * KiB), rabenseifner);
  EXPECT_EQ(chosen(op, 8, 256 * KiB - 1), rabenseifner);
}

TEST(ChooseAlgorithm, OtherOperations) {
  using enum Algorithm;
  for (double bytes : {8.0, 1e9}) {
    EXPECT_EQ(chosen(Operation::reduce_scatter, 16, bytes), ring);
    EXPECT_EQ(chosen(Operation::all_gather, 16, bytes), ring);
    EXPECT_EQ(chosen(Operation::all_to_all, 16, bytes), pairwise);
    EXPECT_EQ(chosen(Operation::all_to_all_v, 16, bytes), pairwise);
    EXPECT_EQ(chosen(Operation::barrier, 16, bytes), recursive_doubling);
    EXPECT_EQ(chosen(Operation::send_recv, 16, bytes), direct);
  }
  EXPECT_EQ(chosen(Operation::broadcast, 16, 1 * MiB - 1), binomial_tree);
  EXPECT_EQ(chosen(Operation::broadcast, 16, 1 * MiB), ring);
  EXPECT_EQ(chosen(Operation::reduce, 16, 1 * MiB - 1), binomial_tree);
  EXPECT_EQ(chosen(Operation::reduce, 16, 1 * MiB), ring);
}

// Reduce-scatter and all-gather go rail-parallel under the hierarchical all-reduce's node conditions, at any size.
TEST(ChooseAlgorithm, ReduceScatterAndAllGatherGoHierarchicalOnMultiGpuNodes) {
  using enum Algorithm;
  for (auto op : {Operation::reduce_scatter, Operation::all_gather})
    for (double bytes : {8.0, 1 * MiB - 1, 1e9}) {
      EXPECT_EQ(chosen(op, 16, bytes, nodes_of(2, 8)), hierarchical);
      EXPECT_EQ(chosen(op, 64, bytes, nodes_of(8, 8)), hierarchical);
      EXPECT_EQ(chosen(op, 8, bytes, nodes_of(1, 8)), ring);                        // one node
      EXPECT_EQ(chosen(op, 8, bytes, nodes_of(8, 1)), ring);                        // one GPU per node
      EXPECT_EQ(chosen(op, 12, bytes, {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}), ring); // uneven nodes
    }
}

TEST(ChooseAlgorithm, EveryChoiceIsSupported) {
  for (auto op : checks::kOperations)
    for (int n : {1, 2, 9, 64})
      for (double bytes : {0.0, 1000.0, 100 * KiB, 1 * MiB, 1e9}) {
        Request r;
        r.op = op;
        r.ranks = n;
        r.bytes = bytes;
        r.node_of = nodes_of(n % 8 == 0 ? n / 8 : n, n % 8 == 0 ? 8 : 1);
        if (op == Operation::all_to_all_v) r.matrix.assign(static_cast<std::size_t>(n) * n, bytes / n);
        r.algorithm = choose_algorithm(r);
        EXPECT_NO_THROW(make_schedule(r)) << to_string(op) << " " << to_string(r.algorithm);
      }
}

std::string error_of(const Request& r) {
  try {
    make_schedule(r);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Errors, UnsupportedCombinationsListTheSupportedOnes) {
  for (auto op : checks::kOperations) {
    const auto supported = supported_algorithms(op);
    for (const auto& name : algorithm_names()) {
      const Algorithm a = *parse_algorithm(name);
      if (a == Algorithm::automatic || std::find(supported.begin(), supported.end(), a) != supported.end()) continue;
      Request r;
      r.op = op;
      r.algorithm = a;
      r.ranks = 4;
      r.matrix.assign(16, 1);
      const std::string message = error_of(r);
      EXPECT_NE(message.find(std::string(to_string(op)) + " has no '" + name + "' algorithm"), std::string::npos)
          << message;
      for (auto s : supported)
        EXPECT_NE(message.find(std::string(to_string(s))), std::string::npos) << message;
    }
  }
  Request r;
  r.algorithm = Algorithm::pairwise;
  r.ranks = 1; // refused even when there would be nothing to do
  EXPECT_EQ(error_of(r), "all-reduce has no 'pairwise' algorithm; supported: ring, double-binary-tree, "
                         "binomial-tree, recursive-doubling, rabenseifner, hierarchical, in-switch");
}

TEST(Errors, BadRequests) {
  Request r;
  r.algorithm = Algorithm::ring;
  r.ranks = 4;
  r.bytes = 100;
  EXPECT_EQ(error_of(r), "");
  Request automatic = r;
  automatic.algorithm = Algorithm::automatic;
  EXPECT_NE(error_of(automatic).find("choose_algorithm"), std::string::npos);
  Request zero = r;
  zero.ranks = 0;
  EXPECT_NE(error_of(zero).find("at least 1 rank"), std::string::npos);
  Request negative = r;
  negative.bytes = -1;
  EXPECT_NE(error_of(negative).find("bytes"), std::string::npos);
  Request root = r;
  root.op = Operation::broadcast;
  root.algorithm = Algorithm::binomial_tree;
  root.root = 4;
  EXPECT_NE(error_of(root).find("root 4"), std::string::npos);
  Request matrix = r;
  matrix.op = Operation::all_to_all_v;
  matrix.algorithm = Algorithm::pairwise;
  matrix.matrix.assign(15, 1);
  EXPECT_NE(error_of(matrix).find("4x4 matrix (16 entries), got 15"), std::string::npos) << error_of(matrix);
  matrix.matrix.assign(16, 1);
  matrix.matrix[6] = -2;
  EXPECT_NE(error_of(matrix).find("matrix[1][2]"), std::string::npos) << error_of(matrix);
  Request uneven = r;
  uneven.algorithm = Algorithm::hierarchical;
  uneven.node_of = {0, 0, 0, 1};
  EXPECT_NE(error_of(uneven).find("same number of positions on every node"), std::string::npos) << error_of(uneven);
  uneven.node_of = {0, 1};
  EXPECT_NE(error_of(uneven).find("node_of has 2 entries"), std::string::npos) << error_of(uneven);
}

TEST(Errors, OneRankHasNoSteps) {
  for (const auto& c : checks::supported_cases()) {
    const auto s = make_schedule(checks::request_for(c, 1, 1000));
    EXPECT_EQ(s->step_count(), 0) << checks::name_of(c);
    EXPECT_EQ(aggregate(checks::request_for(c, 1, 1000))->step_count(), 0);
  }
}

} // namespace
} // namespace dtsim::collectives
