// Names of operations and algorithms as scenarios and the CLI spell them, and nccl-tests' bus bandwidth
// factors. Parsing ignores case, '-' and '_' ("all-reduce", "all_reduce", "AllReduce").
#include "sim/collectives/schedule.hpp"

#include <array>
#include <cctype>

namespace dtsim::collectives {
namespace {

constexpr std::array<std::string_view, 9> kOperationNames{"all-reduce",   "reduce-scatter", "all-gather",
                                                          "broadcast",    "reduce",         "all-to-all",
                                                          "all-to-all-v", "barrier",        "send-recv"};

constexpr std::array<std::string_view, 10> kAlgorithmNames{
    "auto",     "ring",   "double-binary-tree", "binomial-tree", "recursive-doubling", "rabenseifner",
    "pairwise", "direct", "hierarchical",       "in-switch"};

// NCCL's spelling (NCCL_PROTO): LL, LL128, Simple.
constexpr std::array<std::string_view, 4> kProtocolNames{"auto", "LL", "LL128", "Simple"};

struct Alias {
  std::string_view name;
  Algorithm algorithm;
};
// NCCL calls its double binary tree "tree"; MPICH's names for the same algorithms.
constexpr std::array<Alias, 9> kAlgorithmAliases{{{"automatic", Algorithm::automatic},
                                                  {"sharp", Algorithm::in_switch},
                                                  {"nvls", Algorithm::in_switch},
                                                  {"collnet", Algorithm::in_switch},
                                                  {"tree", Algorithm::double_binary_tree},
                                                  {"binomial", Algorithm::binomial_tree},
                                                  {"reduce-scatter-all-gather", Algorithm::rabenseifner},
                                                  {"recursive-halving", Algorithm::rabenseifner},
                                                  {"dissemination", Algorithm::recursive_doubling}}};

// Lower case without '-' and '_'.
std::string folded(std::string_view name) {
  std::string out;
  for (char c : name)
    if (c != '-' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

} // namespace

std::string_view to_string(Operation op) {
  return kOperationNames.at(static_cast<std::size_t>(op));
}
std::string_view to_string(Algorithm algorithm) {
  return kAlgorithmNames.at(static_cast<std::size_t>(algorithm));
}

std::string_view to_string(Protocol protocol) {
  return kProtocolNames.at(static_cast<std::size_t>(protocol));
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  const auto key = folded(name);
  for (std::size_t i = 0; i < kProtocolNames.size(); ++i)
    if (folded(kProtocolNames[i]) == key) return static_cast<Protocol>(i);
  if (key == "automatic") return Protocol::automatic;
  return std::nullopt;
}

std::vector<std::string> protocol_names() {
  return {kProtocolNames.begin(), kProtocolNames.end()};
}

std::optional<Operation> parse_operation(std::string_view name) {
  const auto key = folded(name);
  for (std::size_t i = 0; i < kOperationNames.size(); ++i)
    if (folded(kOperationNames[i]) == key) return static_cast<Operation>(i);
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  const auto key = folded(name);
  for (std::size_t i = 0; i < kAlgorithmNames.size(); ++i)
    if (folded(kAlgorithmNames[i]) == key) return static_cast<Algorithm>(i);
  for (const auto& alias : kAlgorithmAliases)
    if (folded(alias.name) == key) return alias.algorithm;
  return std::nullopt;
}

std::vector<std::string> operation_names() {
  return {kOperationNames.begin(), kOperationNames.end()};
}
std::vector<std::string> algorithm_names() {
  return {kAlgorithmNames.begin(), kAlgorithmNames.end()};
}

// nccl-tests doc/PERFORMANCE.md: all-reduce moves 2(n-1)/n of the buffer over the busiest link, reduce-scatter
// and all-gather (n-1)/n, all-to-all (n-1)/n (each rank keeps 1/n), broadcast, reduce and send/recv 1.
double bus_bandwidth_factor(Operation op, int ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  switch (op) {
  case Operation::all_reduce:
    return 2 * (n - 1) / n;
  case Operation::reduce_scatter:
  case Operation::all_gather:
  case Operation::all_to_all:
  case Operation::all_to_all_v:
    return (n - 1) / n;
  case Operation::broadcast:
  case Operation::reduce:
  case Operation::send_recv:
    return 1;
  case Operation::barrier:
    return 0;
  }
  return 0;
}

} // namespace dtsim::collectives
