// The replay's link samples (ReplayOptions::sample_links): each tracked link's bytes carried so far, read from
// SimGrid's link-load plugin as ops end, for a trace's utilization counters.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dtsim {
namespace {

constexpr double kBandwidth = 1e9;

std::size_t link_index(const engine::ReplayResult& r, const std::string& name) {
  const auto found = std::find_if(r.links.begin(), r.links.end(), [&](const auto& l) { return l.name == name; });
  EXPECT_NE(found, r.links.end()) << name;
  return static_cast<std::size_t>(found - r.links.begin());
}

// Rank 0 computes 1 ms, then sends 1 MB to rank 1 at 1 GB/s (CM02, no latency): node 0's NIC carries nothing until
// 1 ms, then 1 MB by 2 ms, at its full bandwidth.
TEST(LinkSamples, ASendFillsItsNicAtFullBandwidthFromOneToTwoMilliseconds) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"fwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}},
                         graph::Op{"send", graph::Stream::p2p, graph::SendRecv{1, 1e6, true}, {0}}}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e6, false}, {}}}});
  g.rank_program = {0, 1};
  auto options = testing::cm02_options();
  options.sample_links = true;
  const auto r = engine::replay(testing::uniform_cluster(2, kBandwidth, 0, 0), g, options);
  const auto& s = r.link_samples;
  ASSERT_EQ(s.times.size(), 3u); // the start, the compute's end (the send ends with it), the receive's end
  EXPECT_DOUBLE_EQ(s.times[0], 0);
  EXPECT_NEAR(s.times[1], 1e-3, 1e-12);
  EXPECT_NEAR(s.times[2], 2e-3, 1e-9);
  ASSERT_EQ(s.bytes.size(), 3 * r.links.size());
  const auto up = link_index(r, "node0-nic_UP");
  EXPECT_DOUBLE_EQ(s.bytes[0 * r.links.size() + up], 0);
  EXPECT_DOUBLE_EQ(s.bytes[1 * r.links.size() + up], 0);
  EXPECT_NEAR(s.bytes[2 * r.links.size() + up], 1e6, 1e-3);
  EXPECT_NEAR(s.bytes[2 * r.links.size() + up], r.links[up].bytes, 1e-3); // what the replay booked on it
  const auto down = link_index(r, "node1-nic_DOWN");
  EXPECT_NEAR(s.bytes[2 * r.links.size() + down], 1e6, 1e-3);
  EXPECT_NEAR(s.bytes[2 * r.links.size() + link_index(r, "node1-nic_UP")], 0, 1e-9); // nothing goes back
}

// 3,000 ops of 1 us each end 1 us apart: past the cap (2,048 with few links) the samples thin to every other one and
// the interval doubles; they stay in time order, cumulative, and end at the last op's end.
TEST(LinkSamples, ThinToWithinTheCapAndKeepTheEnd) {
  constexpr int ops = 3000;
  graph::ExecutionGraph g;
  graph::Program sender;
  for (int i = 0; i < ops; ++i)
    sender.ops.push_back({"step", graph::Stream::compute, graph::Compute{1e-6, 0, 0}, {}});
  sender.ops.push_back({"send", graph::Stream::p2p, graph::SendRecv{1, 1e3, true}, {ops - 1}});
  g.programs.push_back(sender);
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e3, false}, {}}}});
  g.rank_program = {0, 1};
  auto options = testing::cm02_options();
  options.sample_links = true;
  const auto r = engine::replay(testing::uniform_cluster(2, kBandwidth, 0, 0), g, options);
  const auto& s = r.link_samples;
  EXPECT_GE(s.times.size(), 1024u);
  EXPECT_LE(s.times.size(), 2048u);
  EXPECT_TRUE(std::is_sorted(s.times.begin(), s.times.end()));
  EXPECT_NEAR(s.times.back(), ops * 1e-6 + 1e3 / kBandwidth, 1e-9);
  const auto up = link_index(r, "node0-nic_UP");
  for (std::size_t i = 1; i < s.times.size(); ++i)
    EXPECT_GE(s.bytes[i * r.links.size() + up], s.bytes[(i - 1) * r.links.size() + up]);
  EXPECT_NEAR(s.bytes[(s.times.size() - 1) * r.links.size() + up], 1e3, 1e-6);
}

// Off unless asked: no samples, and the same timeline as with them.
TEST(LinkSamples, OffByDefaultAndTheTimelineIsTheSame) {
  graph::ExecutionGraph g = testing::one_collective(4, graph::Collective{.bytes = 4e6});
  auto options = testing::cm02_options();
  const auto plain = engine::replay(testing::uniform_cluster(4, kBandwidth, 1e-6, 1e-6), g, options);
  options.sample_links = true;
  const auto sampled = engine::replay(testing::uniform_cluster(4, kBandwidth, 1e-6, 1e-6), g, options);
  EXPECT_TRUE(plain.link_samples.times.empty());
  EXPECT_FALSE(sampled.link_samples.times.empty());
  EXPECT_EQ(plain.simulated_seconds, sampled.simulated_seconds);
}

} // namespace
} // namespace dtsim
