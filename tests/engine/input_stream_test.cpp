// The input stream: a rank's data loader runs beside its compute and communication streams, and the rank starts its
// next iteration only once every stream has finished the current one.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtsim {
namespace {

// One rank: a 1 ms kernel on the compute stream and a load of `load` seconds on the input stream.
graph::ExecutionGraph kernel_and_load(double load) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"kernel", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}},
                         graph::Op{"load batch", graph::Stream::input, graph::Compute{load, 0, 0}, {}}}});
  g.rank_program = {0};
  return g;
}

std::vector<double> iteration_ends(double load) {
  auto options = testing::cm02_options();
  options.iterations = 3;
  const auto r = engine::replay(testing::uniform_cluster(1, 1e9, 0, 0), kernel_and_load(load), options);
  EXPECT_EQ(r.ranks.size(), 1u);
  return r.ranks.at(0).iteration_end;
}

TEST(InputStream, ASlowLoaderSetsTheIteration) {
  const auto ends = iteration_ends(3e-3);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_NEAR(ends[0], 3e-3, 1e-12);
  EXPECT_NEAR(ends[1], 6e-3, 1e-12);
  EXPECT_NEAR(ends[2], 9e-3, 1e-12);
}

TEST(InputStream, AFastLoaderHidesBehindTheKernel) {
  const auto ends = iteration_ends(0.25e-3);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_NEAR(ends[2], 3e-3, 1e-12);
}

TEST(InputStream, StreamNamesAndOnlyComputeOpsOnIt) {
  EXPECT_EQ(graph::to_string(graph::Stream::input), "input");
  EXPECT_EQ(graph::to_string(graph::Stream::comm), "comm");
  EXPECT_EQ(graph::to_string(graph::Stream::compute), "compute");
  auto g = kernel_and_load(1e-3);
  g.programs[0].ops[1].body = graph::SendRecv{0, 8, true};
  EXPECT_THROW(graph::validate(g), std::invalid_argument);
}

} // namespace
} // namespace dtsim
