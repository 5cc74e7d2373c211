// Faster hardware never makes a job slower. Every shipped scenario is run as shipped and with a faster network, a
// faster intra-node fabric (each link of twice the bandwidth) and a faster GPU; none may lengthen the iteration by
// more than 0.5% (event ordering may move a few sends), but for one case NCCL's own channel rule decides (below). And
// one sweep by hand: eight p3.2xlarge nodes (one V100 each) training ResNet-50 with NCCL over Ethernet of 10 to 100
// Gb/s, where NCCL's ring graph keeps one or two fast channels on a slow NIC (search.cc), so the SMs its channels take
// from backward's kernels do not grow as the NIC slows. (Picking many 0.24 GB/s channels made it 215, 241, 207 and 221
// ms at 10, 15, 20 and 25 Gb/s.)
#include "sim/simulate.hpp"
#include "tests/invariants/variants.hpp"
#include "tests/shipped_scenarios.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace dtsim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";

TEST(FasterNetwork, ResNetOnP3NodesIsNeverSlowerOnAFasterNic) {
  double last = 0;
  for (const int gbps : {10, 15, 20, 25, 30, 40, 50, 100}) {
    const auto s = scenario::load_scenario((kScenarios / "resnet50-p3.2xlarge-sync.json").string(),
                                           {{"cluster.nic.bandwidth", std::to_string(gbps) + "Gbps"}});
    const double mean = simulate(s).result.iteration.mean;
    if (last > 0) {
      EXPECT_LE(mean, last * (1 + 1e-9)) << gbps << " Gb/s";
    }
    last = mean;
  }
}

class FasterHardware : public ::testing::TestWithParam<std::string> {};

// One iteration and no warm-up: the invariant holds for any iteration, and the suite stays short.
double iteration(scenario::Scenario s) {
  s.run.iterations = 1;
  s.run.warmup_iterations = 0;
  return simulate(s).result.iteration.mean;
}

// The one case where software, not hardware, decides: NCCL takes more channels on faster links, and each holds an SM
// for its call. Twice the NVLink bandwidth gives one node's rings 12 channels at 60 GB/s, doubled to 24 at 30
// (ncclTopoDupChannels), so a communicator runs 48 instead of 24; and it lifts Megatron-Core's data-parallel rings
// across nodes from 8 channels at 45 GB/s to 8 at 48, which Hopper doubles ("Use 4 compute channels per search
// channel to reach peak BW on <8 PPN", ncclTopoPostset): 32 instead of 16. The NICs set the data-parallel pace
// either way and the tensor-parallel exchanges do not halve, so the SMs cost more than the time saved: 1.1% slower
// in one iteration. Held to 1.5%; anything more is a defect.
double fabric_tolerance(const std::string& name) {
  return name == "gpt-7b-megatron-core-h100x96" ? 1.015 : 1.005;
}

TEST_P(FasterHardware, AFasterNetworkOrFabricNeverLengthensTheIteration) {
  const auto shipped_scenario = scenario::load_scenario((kScenarios / (GetParam() + ".json")).string());
  const double base = iteration(shipped_scenario);
  auto network = shipped_scenario;
  network.cluster.nic.bandwidth *= 2;
  for (auto& nic : network.cluster.node_nics)
    nic.bandwidth *= 2;
  EXPECT_LE(iteration(network), base * 1.005) << "twice the network bandwidth";
  auto fabric = shipped_scenario;
  fabric.cluster.intra.bandwidth *= 2;
  EXPECT_LE(iteration(fabric), base * fabric_tolerance(GetParam())) << "twice the intra-node bandwidth";
}

// A GPU twice as fast and as frugal (invariants::with_faster_gpu): its kernels may only get shorter, and the network
// stays the same.
TEST_P(FasterHardware, AFasterGpuNeverLengthensTheIteration) {
  const auto shipped_scenario = scenario::load_scenario((kScenarios / (GetParam() + ".json")).string());
  EXPECT_LE(iteration(invariants::with_faster_gpu(shipped_scenario)), iteration(shipped_scenario) * 1.005)
      << "a GPU twice as fast";
}

INSTANTIATE_TEST_SUITE_P(Every, FasterHardware, ::testing::ValuesIn(testing::shipped_scenarios()),
                         [](const auto& info) { return testing::test_name(info.param); });

} // namespace
} // namespace dtsim
