// The pairwise exchange's timing model (sim/collectives/pairwise_exchange.hpp) on links drawn by hand.
#include "sim/collectives/pairwise_exchange.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtsim::collectives {
namespace {

// Three positions whose transfers all cross one shared link (index 0, 1 GB/s) and nothing else.
struct OneLink {
  ExchangePath path{{0}, 0, 0};
  std::vector<double> capacity{1e9};
  PairwiseExchange exchange(const std::vector<double>& matrix) const {
    return PairwiseExchange(
        3, [&](int p, int q) { return matrix[p * 3 + q]; }, [this](int, int) -> const ExchangePath& { return path; },
        capacity);
  }
};

// Processor sharing: transfers of 1, 2 and 3 MB on one 1 GB/s link share it three ways until the first is done
// (3 ms), then two ways (the second ends at 1 + 2 x 2 = 5 ms), then the last has it alone (6 ms). Alone each takes
// its bytes at 1 GB/s.
TEST(PairwiseExchange, TransfersOnALinkShareItAsMaxMinDoes) {
  const std::vector<double> matrix{0,   1e6, 0,   //
                                   0,   0,   2e6, //
                                   3e6, 0,   0};
  const OneLink link; // outlives the exchange, which reads its path
  const auto exchange = link.exchange(matrix);
  // Round 1 holds them all: 0 -> 1, 1 -> 2, 2 -> 0.
  EXPECT_NEAR(exchange.shared(1, 0), 3e-3, 1e-15);
  EXPECT_NEAR(exchange.shared(1, 1), 5e-3, 1e-15);
  EXPECT_NEAR(exchange.shared(1, 2), 6e-3, 1e-15);
  EXPECT_NEAR(exchange.alone(1, 2), 3e-3, 1e-15);
  EXPECT_LT(exchange.alone(2, 0), 0); // round 2 moves nothing
  const auto finish = exchange.finish_times({0, 0, 0});
  EXPECT_NEAR(finish[0], 6e-3, 1e-15); // sends 1 MB (3 ms), receives 3 MB (6 ms)
  EXPECT_NEAR(finish[1], 5e-3, 1e-15);
  EXPECT_NEAR(finish[2], 6e-3, 1e-15);
}

// The rounds' chain: every pair sends 1 kB, 1 ns alone on its path, and a path's latency is 1 ms. A position starts
// round 2 once round 1's receive is in: two rounds of 1.000001 ms.
TEST(PairwiseExchange, EachRoundWaitsForTheOneBefore) {
  OneLink link;
  link.path.latency = 1e-3;
  link.capacity = {1e12}; // sharing the link costs 6 ns in all: the chain decides
  const std::vector<double> matrix{0, 1e3, 1e3, 1e3, 0, 1e3, 1e3, 1e3, 0};
  for (double f : link.exchange(matrix).finish_times({0, 0, 0}))
    EXPECT_NEAR(f, 2 * (1e-3 + 1e-9), 1e-15);
  // Position 0 starts 5 ms late. Position 1 receives from it in round 1 at 6.000001 ms, starts round 2 then and sends
  // to 0, which has it at 7.000002 ms.
  const auto late = link.exchange(matrix).finish_times({5e-3, 0, 0});
  EXPECT_NEAR(late[0], 5e-3 + 2 * (1e-3 + 1e-9), 1e-15);
}

TEST(PairwiseExchange, APathToAnUnknownLinkIsRefused) {
  OneLink link;
  link.path.links = {3};
  const std::vector<double> matrix(9, 1.0);
  EXPECT_THROW(link.exchange(matrix), std::invalid_argument);
  const OneLink fresh;
  EXPECT_THROW(fresh.exchange(matrix).finish_times({0, 0}), std::invalid_argument);
}

} // namespace
} // namespace dtsim::collectives
