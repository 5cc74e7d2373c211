// In-switch reduction (NVLink SHARP, InfiniBand SHARP): what each position streams through which switch.
#include "sim/collectives/closed_form.hpp"
#include "sim/collectives/schedule.hpp"

#include <gtest/gtest.h>

namespace dtsim::collectives {
namespace {

Request in_switch(int ranks, double bytes, std::vector<int> node_of, bool nvls, bool sharp) {
  Request r;
  r.op = Operation::all_reduce;
  r.algorithm = Algorithm::in_switch;
  r.ranks = ranks;
  r.bytes = bytes;
  r.node_of = std::move(node_of);
  r.node_switch_reduces = nvls;
  r.network_switch_reduces = sharp;
  return r;
}

struct Streamed {
  double up = 0, down = 0;
};

// Bytes a position sends to and receives from `peer` over the whole schedule.
Streamed streamed(const Schedule& s, int position, int peer) {
  Streamed out;
  for (int k = 0; k < s.step_count(); ++k) {
    const auto st = s.step(position, k);
    for (const auto& t : st.sends)
      out.up += t.peer == peer ? t.bytes : 0;
    for (const auto& t : st.recvs)
      out.down += t.peer == peer ? t.bytes : 0;
  }
  return out;
}

// NCCL's NVLS all-reduce: the reduce-scatter's multimem ld_reduce pulls every shard of the GPU's buffer through the
// switch (S up) and returns its own reduced shard (S/8 down); the all-gather's multimem store sends that shard up
// (S/8) and the switch writes all eight to the GPU (S down): 9/8 S each way.
TEST(InSwitch, InsideANodeEveryGpuStreamsItsBufferAndItsShardThroughTheNvSwitch) {
  const double S = 64.0 * (1 << 20);
  const auto s = make_schedule(in_switch(8, S, std::vector<int>(8, 0), true, false));
  // Streamed in at most 16 chunks, plus one step for the last chunk to come back.
  EXPECT_EQ(s->step_count(), 17);
  for (int p = 0; p < 8; ++p) {
    const auto t = streamed(*s, p, kNodeSwitch);
    EXPECT_DOUBLE_EQ(t.up, 9.0 / 8 * S);
    EXPECT_DOUBLE_EQ(t.down, 9.0 / 8 * S);
  }
}

TEST(InSwitch, AcrossNodesEachRailStreamsItsShardThroughTheNetworkSwitch) {
  const double S = 8e6;
  std::vector<int> node_of;
  for (int p = 0; p < 32; ++p)
    node_of.push_back(p / 8);
  const auto s = make_schedule(in_switch(32, S, node_of, true, true));
  for (int p = 0; p < 32; ++p) {
    const auto nvls = streamed(*s, p, kNodeSwitch);
    const auto ib = streamed(*s, p, kNetworkSwitch);
    // Reduce-scatter: S up, S/8 down; all-gather: S/8 up, S down.
    EXPECT_NEAR(nvls.up, S + S / 8, 1);
    EXPECT_NEAR(nvls.down, S / 8 + S, 1);
    EXPECT_NEAR(ib.up, S / 8, 1);
    EXPECT_NEAR(ib.down, S / 8, 1);
  }
}

TEST(InSwitch, RefusedWhereTheSwitchesDoNotReduce) {
  EXPECT_THROW(make_schedule(in_switch(8, 1e6, std::vector<int>(8, 0), false, true)), std::invalid_argument);
  EXPECT_THROW(make_schedule(in_switch(16, 1e6, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, true, false)),
               std::invalid_argument);
}

TEST(InSwitch, AutoPicksItWhereTheSwitchesReduceAndTheBufferIsLarge) {
  auto r = in_switch(8, 1 << 20, std::vector<int>(8, 0), true, false);
  r.algorithm = Algorithm::automatic;
  EXPECT_EQ(choose_algorithm(r), Algorithm::in_switch);
  r.bytes = 1024;
  EXPECT_NE(choose_algorithm(r), Algorithm::in_switch);
  r.bytes = 1 << 20;
  r.node_switch_reduces = false;
  EXPECT_NE(choose_algorithm(r), Algorithm::in_switch);
}

// NVLS moves S each way against the ring's 2(g-1)/g S: for large buffers the ring takes 2(g-1)/g / (1 + 1/C)
// times as long, C = 16 chunks (one chunk's time is the stream's fill).
TEST(InSwitch, ClosedFormBeatsTheRingByTheTrafficRatio) {
  const double S = 1e9, alpha = 1e-6, bw = 450e9;
  const double nvls = closed_form_time(in_switch(8, S, std::vector<int>(8, 0), true, false), alpha, bw, 0);
  Request ring = in_switch(8, S, std::vector<int>(8, 0), true, false);
  ring.algorithm = Algorithm::ring;
  const double flat = closed_form_time(ring, alpha, bw, 0);
  // The ring moves 2 (7/8) S each way, NVLS (9/8) S in 16 chunks plus one: the ratio of traffic, less the pipeline.
  EXPECT_NEAR(flat / nvls, 2.0 * 7 / 8 / (9.0 / 8 * (1 + 1.0 / 16)), 0.02);
}

} // namespace
} // namespace dtsim::collectives
