// The Perfetto timeline (report::chrome_trace) of a replay worked out by hand: rank 0 on node 0 computes 1 ms and
// sends 1 MB to rank 2 on node 1 at 1 GB/s (CM02, no latency), two iterations.
#include "sim/report/trace.hpp"
#include "sim/simulate.hpp"

#include "../engine/replay_fixtures.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

namespace dtsim {
namespace {

using nlohmann::json;

struct Traced {
  plan::Plan plan;
  engine::ReplayResult replay;
  topologies::ClusterSpec cluster;
};

Traced two_nodes_send() {
  Traced t;
  auto& g = t.plan.graph;
  g.programs.push_back({{graph::Op{"fwd", graph::Stream::compute, graph::Compute{1e-3, 2e9, 0}, {}},
                         graph::Op{"send", graph::Stream::p2p, graph::SendRecv{2, 1e6, true}, {0}}}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e6, false}, {}}}});
  g.programs.push_back({{graph::Op{"idle", graph::Stream::compute, graph::Compute{1e-4, 0, 0}, {}}}});
  g.rank_program = {0, 2, 1, 2}; // rank 2 receives
  t.plan.memory.items = {{"weights", 1024.0 * 1024 * 1024, ""}};
  t.cluster = testing::uniform_cluster(2, 1e9, 0, 0, 2);
  auto options = testing::cm02_options();
  options.iterations = 2;
  options.skip_repeats = false;
  options.sample_links = true;
  t.replay = engine::replay(t.cluster, g, options);
  return t;
}

std::vector<json> of_phase(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

TEST(ChromeTrace, ProcessPerNodeThreadPerGpuStream) {
  const auto t = two_nodes_send();
  const auto trace = report::chrome_trace(t.plan, t.replay, t.cluster);
  std::map<std::string, std::pair<int, int>> threads; // name -> (pid, tid)
  std::map<int, std::string> processes;
  for (const auto& e : of_phase(trace, "M")) {
    if (e["name"] == "thread_name") threads[e["args"]["name"]] = {e["pid"], e["tid"]};
    if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(processes.at(0), "node 0 (2 GPUs traced)");
  EXPECT_EQ(processes.at(1), "node 1 (2 GPUs traced)");
  EXPECT_EQ(processes.at(2), "network links");
  const int streams = graph::kStreamCount, compute = 0, p2p = static_cast<int>(graph::Stream::p2p);
  EXPECT_EQ(threads.at("GPU 0 compute"), std::make_pair(0, 0 * streams + compute));
  EXPECT_EQ(threads.at("GPU 0 p2p"), std::make_pair(0, 0 * streams + p2p));
  EXPECT_EQ(threads.at("GPU 2 p2p"), std::make_pair(1, 2 * streams + p2p));
  EXPECT_EQ(threads.at("GPU 3 compute"), std::make_pair(1, 3 * streams + compute));
  // Two iterations of rank 0's compute: 0 to 1 ms, then 2 to 3 ms (it waits for nothing: the send is posted).
  std::vector<json> fwd;
  for (const auto& e : of_phase(trace, "X"))
    if (e["name"] == "fwd") fwd.push_back(e);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_NEAR(fwd[0]["dur"].get<double>(), 1000, 1e-6);
  EXPECT_EQ(fwd[0]["args"]["flops"], 2e9);
  EXPECT_EQ(fwd[1]["args"]["iteration"], 1);
}

TEST(ChromeTrace, ArrowFromEachSendToItsReceive) {
  const auto t = two_nodes_send();
  const auto trace = report::chrome_trace(t.plan, t.replay, t.cluster);
  const auto starts = of_phase(trace, "s"), ends = of_phase(trace, "f");
  ASSERT_EQ(starts.size(), 2u); // one transfer per iteration
  ASSERT_EQ(ends.size(), 2u);
  const int p2p = static_cast<int>(graph::Stream::p2p);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(starts[i]["id"], ends[i]["id"]);
    EXPECT_EQ(starts[i]["pid"], 0);
    EXPECT_EQ(starts[i]["tid"], 0 * graph::kStreamCount + p2p);
    EXPECT_EQ(ends[i]["pid"], 1);
    EXPECT_EQ(ends[i]["tid"], 2 * graph::kStreamCount + p2p);
    EXPECT_EQ(ends[i]["bp"], "e");
  }
  // Iteration 0: posted at 1 ms; the receive runs 1 to 2 ms, and the arrow lands in its middle.
  EXPECT_NEAR(starts[0]["ts"].get<double>(), 1000, 1e-6);
  EXPECT_NEAR(ends[0]["ts"].get<double>(), 1500, 1e-3);
}

TEST(ChromeTrace, NicUtilizationCounterIsFullWhileTheSendRuns) {
  const auto t = two_nodes_send();
  const auto trace = report::chrome_trace(t.plan, t.replay, t.cluster);
  std::vector<std::pair<double, double>> nic; // (us, %)
  for (const auto& e : of_phase(trace, "C"))
    if (e["name"] == "node0-nic_UP utilization (%)") nic.emplace_back(e["ts"], e["args"]["%"]);
  ASSERT_FALSE(nic.empty());
  // 1 MB at 1 GB/s from 1 ms to 2 ms: 100% over that span, 0% over the compute before it.
  double at_1_5ms = -1, at_0_5ms = -1;
  for (std::size_t i = 0; i + 1 < nic.size(); ++i) {
    if (nic[i].first <= 1500 && 1500 < nic[i + 1].first) at_1_5ms = nic[i].second;
    if (nic[i].first <= 500 && 500 < nic[i + 1].first) at_0_5ms = nic[i].second;
  }
  EXPECT_NEAR(at_1_5ms, 100, 1e-6);
  EXPECT_NEAR(at_0_5ms, 0, 1e-9);
  // The planned memory per GPU, 1 GiB, on each node.
  int memory = 0;
  for (const auto& e : of_phase(trace, "C"))
    if (e["name"] == "planned memory per GPU (GiB)") {
      EXPECT_DOUBLE_EQ(e["args"]["GiB"].get<double>(), 1.0);
      ++memory;
    }
  EXPECT_EQ(memory, 4); // two nodes, at the first start and the last end
}

TEST(ChromeTrace, FiltersKeepTheChosenRanksAndIterations) {
  const auto t = two_nodes_send();
  const auto trace = report::chrome_trace(t.plan, t.replay, t.cluster, {.ranks = {0, 1}, .iterations = {1}});
  for (const auto& e : of_phase(trace, "X")) {
    EXPECT_LT(e["tid"].get<int>() / graph::kStreamCount, 2) << e.dump();
    EXPECT_EQ(e["args"]["iteration"], 1) << e.dump();
  }
  EXPECT_TRUE(of_phase(trace, "s").empty()); // rank 2, the receiver, is not traced: no dangling arrows
  const auto both = report::chrome_trace(t.plan, t.replay, t.cluster, {.ranks = {0, 2}, .iterations = {1}});
  ASSERT_EQ(of_phase(both, "s").size(), 1u);
  EXPECT_EQ(of_phase(both, "s")[0]["id"], 2); // transfers keep their numbers: the second one
}

// Ranks beyond the limit are sampled evenly with the first and the last kept: of simulated ranks [0, 1, 2, 3], three
// are those at i * (4 - 1) / (3 - 1) for i = 0, 1, 2, that is 0, 1 and 3; two are 0 and 3.
TEST(ChromeTrace, ALargeJobKeepsRanksSpreadOverIt) {
  const auto t = two_nodes_send();
  EXPECT_EQ(report::traced_ranks(t.replay, {.max_ranks = 3}), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(report::traced_ranks(t.replay, {.max_ranks = 2}), (std::vector<int>{0, 3}));
  EXPECT_EQ(report::traced_ranks(t.replay, {.max_ranks = 4}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(report::traced_ranks(t.replay, {.ranks = {1, 2}, .max_ranks = 1}), (std::vector<int>{1, 2}));
  const auto trace = report::chrome_trace(t.plan, t.replay, t.cluster, {.max_ranks = 2});
  EXPECT_EQ(trace["otherData"]["ranks_simulated"], 4);
  EXPECT_EQ(trace["otherData"]["ranks_traced"], 2);
  for (const auto& e : of_phase(trace, "X")) {
    const int rank = e["tid"].get<int>() / graph::kStreamCount;
    EXPECT_TRUE(rank == 0 || rank == 3) << e.dump();
  }
}

// The structure every viewer relies on, on a real replay (GPT-2 on two nodes of 8 A100, NCCL's choices left to it):
// on each thread no op starts before the one before it ends, in the viewer's own arithmetic (ts + dur); every time is
// a whole number of nanoseconds; every collective names the algorithm and protocol it ran, never "auto".
TEST(ChromeTrace, OpsOnAThreadNeverOverlapAndCollectivesNameWhatRan) {
  auto scenario = scenario::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/gpt2-p4d.24xlarge-x2.json",
                                          {{"run.iterations", "2"}, {"run.warmup_iterations", "1"}});
  const auto sim = simulate(scenario, true);
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> threads; // (pid, tid) -> (ts, dur)
  int collectives = 0;
  for (const auto& e : of_phase(sim.trace, "X")) {
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    EXPECT_NEAR(ts * 1e3, std::round(ts * 1e3), 1e-6) << e.dump();
    threads[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back({ts, dur});
    if (e["args"].contains("algorithm")) {
      ++collectives;
      EXPECT_NE(e["args"]["algorithm"], "auto") << e.dump();
      EXPECT_NE(e["args"]["protocol"], "auto") << e.dump();
    }
  }
  EXPECT_GT(collectives, 0);
  std::size_t back_to_back = 0;
  for (auto& [thread, ops] : threads) {
    std::sort(ops.begin(), ops.end());
    for (std::size_t i = 1; i < ops.size(); ++i) {
      EXPECT_GE(ops[i].first, ops[i - 1].first + ops[i - 1].second)
          << "thread " << thread.second << ": op at " << ops[i].first << " us starts inside the one before";
      back_to_back += ops[i].first == ops[i - 1].first + ops[i - 1].second;
    }
  }
  EXPECT_GT(back_to_back, 0u); // ops that touch: the case rounding must not turn into an overlap
}

// Coarse fidelity prices a tensor-parallel group's collectives in closed form, as an op on the compute stream: the
// trace (and the HTML report's timeline, which colours by it) names the dimension that op serves, while plain compute
// names none. GPT-2 on two p4d nodes with tensor parallelism of 2.
TEST(ChromeTrace, ClosedFormTensorParallelOpsNameTheirDimension) {
  auto scenario = scenario::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/gpt2-p4d.24xlarge-x2.json",
                                          {{"parallelism.tensor", "2"},
                                           {"run.fidelity", "coarse"},
                                           {"run.iterations", "2"},
                                           {"run.warmup_iterations", "1"}});
  const auto sim = simulate(scenario, true);
  std::map<std::string, int> compute_by_dimension;
  for (const auto& e : of_phase(sim.trace, "X"))
    if (e["cat"] == "compute") ++compute_by_dimension[e["args"].value("dimension", std::string("none"))];
  EXPECT_GT(compute_by_dimension["tensor"], 0);
  EXPECT_GT(compute_by_dimension["none"], 0);
  EXPECT_EQ(compute_by_dimension.size(), 2u);
}

// The busiest links of each kind: at most three of each, by kind, the busiest first within a kind, and each kind
// as the platform's names give it. Quickstart (4 one-GPU nodes on 10 Gbps) loads its NICs and, less, its PCIe.
TEST(BusiestLinks, TheBusiestOfEachKind) {
  EXPECT_EQ(report::link_kind("gpu3-nvlink_UP"), "NVLink");
  EXPECT_EQ(report::link_kind("gpu0-gpu1-nvlink"), "NVLink");
  EXPECT_EQ(report::link_kind("node0-pcie-switch1"), "PCIe");
  EXPECT_EQ(report::link_kind("node12-nic3_DOWN"), "NIC");
  EXPECT_EQ(report::link_kind("leaf2-spine0"), "network switches");
  const auto sim = simulate(scenario::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json"));
  const auto& links = sim.result.busiest_links_by_kind;
  std::map<std::string, std::vector<double>> by_kind;
  for (const auto& l : links) {
    EXPECT_EQ(l.kind, report::link_kind(l.name));
    by_kind[l.kind].push_back(l.utilization);
  }
  EXPECT_EQ(by_kind.size(), 2u); // NIC and PCIe
  for (const auto& [kind, utilization] : by_kind) {
    EXPECT_LE(utilization.size(), 3u) << kind;
    EXPECT_TRUE(std::is_sorted(utilization.rbegin(), utilization.rend())) << kind;
  }
  EXPECT_GT(by_kind["NIC"].front(), by_kind["PCIe"].front());
}

} // namespace
} // namespace dtsim
