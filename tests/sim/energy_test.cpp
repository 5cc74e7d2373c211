// Energy against hand calculations: a node's draw, a run's kilowatt-hours and CO2, an iteration's GPU draw from its
// kernels' bounds, the scenario's energy section and its defaults, and the units it is written in.
#include "sim/report/energy.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "version": 1, "name": "t",
    "model": {"preset": "resnet50", "batch_per_gpu": 32},
    "cluster": {"nodes": 4, "gpus_per_node": 8, "gpu": "h100-sxm", "nic": {"bandwidth": "400Gbps"}}
  })");
}

scenario::Scenario read(const json& document) {
  return scenario::parse_scenario(document.dump(), "t.json");
}

TEST(Energy, ANodeDrawsItsGpusPlusItsHostAndNetwork) {
  lifecycle::EnergySpec spec;
  spec.host_power = 2800;
  spec.network_power = 150;
  spec.pue = 1.1;
  spec.grid_intensity = 400;
  const auto node = lifecycle::node_power(600, 120, 8, spec);
  EXPECT_DOUBLE_EQ(node.training, 8 * 600 + 2950);
  EXPECT_DOUBLE_EQ(node.idle, 8 * 120 + 2950);
  // 16 nodes, 10 hours training and 2 hours idle: 1.1 x 16 x (36,000 s x 7,750 W + 7,200 s x 3,910 W) / 3.6e6.
  const double kwh = lifecycle::energy_kwh(node, spec, 16, 36000, 7200);
  EXPECT_NEAR(kwh, 1.1 * 16 * (36000 * 7750.0 + 7200 * 3910.0) / 3.6e6, 1e-9);
  EXPECT_NEAR(lifecycle::co2_kg(kwh, spec), kwh * 0.4, 1e-9);
}

TEST(Energy, AnIterationDrawsWhatItsKernelsAreBoundBy) {
  const auto s = read(base());
  report::RunResult r;
  r.iteration.mean = 0.100;
  r.kernels = {{"gemm", "gemm", "", "bf16", 10, 0.040, 0, 0, 0, "math", 0.7},
               {"norm", "memory", "", "bf16", 10, 0.020, 0, 0, 0, "HBM", 0.9},
               {"tiny", "memory", "", "bf16", 100, 0.005, 0, 0, 0, "launch", 0.1}};
  r.breakdown.exposed_communication = 0.010;
  const auto e = report::iteration_energy(s, r);
  ASSERT_TRUE(e.known);
  // The H100's measured draws: 695 W compute-bound, 395 W streaming, 120 W idle. 40 ms math, 30 ms streaming
  // (20 ms of kernels, 10 ms of exposed communication), 30 ms idle (25 ms with nothing to run, 5 ms launch-bound).
  EXPECT_NEAR(e.gpu_watts, (0.040 * 695 + 0.030 * 395 + 0.030 * 120) / 0.100, 1e-9);
  EXPECT_NEAR(e.math_share, 0.4, 1e-12);
  EXPECT_NEAR(e.memory_share, 0.3, 1e-12);
  // No instance preset and no energy section: the node is its GPUs alone.
  EXPECT_DOUBLE_EQ(e.host_watts, 0);
  EXPECT_NEAR(e.node_watts, 8 * e.gpu_watts, 1e-9);
  EXPECT_NEAR(e.kwh_per_iteration, 4 * 8 * e.gpu_watts * 0.100 / 3.6e6, 1e-15);
}

TEST(Energy, EachGroupOfAMixedClusterDrawsAtItsOwnGpusFigures) {
  auto doc = base();
  doc["cluster"] = json::parse(R"({"nodes": 4, "gpus_per_node": 8, "nic": {"bandwidth": "400Gbps"},
      "groups": [{"gpu": "h100-sxm", "nodes": 1}, {"gpu": "h200", "nodes": 3}]})");
  doc["energy"] = {{"host_power", "2kW"}, {"pue", 1.5}};
  const auto s = read(doc);
  report::RunResult r;
  r.iteration.mean = 0.100;
  // The H100s compute 60 ms (50 math, 10 streaming) and wait; the H200s 40 ms of math and 20 ms streaming.
  report::GroupMetrics h100{"h100-sxm", "h100-sxm", 8, 32, 0.060, {0.050, 0.010, 0}, {}};
  report::GroupMetrics h200{"h200", "h200", 24, 32, 0.060, {0.040, 0.020, 0}, {}};
  h200.breakdown.exposed_communication = 0.010;
  r.groups = {h100, h200};
  const auto e = report::iteration_energy(s, r);
  ASSERT_TRUE(e.known);
  // Measured draws: H100 695 / 395 / 120 W, H200 689 / 423 / 132 W (compute-bound, streaming, idle).
  const double w100 = (0.050 * 695 + 0.010 * 395 + 0.040 * 120) / 0.100;
  const double w200 = (0.040 * 689 + 0.030 * 423 + 0.030 * 132) / 0.100;
  ASSERT_EQ(e.group_gpu_watts.size(), 2u);
  EXPECT_NEAR(e.group_gpu_watts[0], w100, 1e-9);
  EXPECT_NEAR(e.group_gpu_watts[1], w200, 1e-9);
  EXPECT_NEAR(e.gpu_watts, (8 * w100 + 24 * w200) / 32, 1e-9);
  // One H100 node and three H200 nodes, each with its 2 kW host; the mean node, and the cluster at a PUE of 1.5.
  const double nodes = (8 * w100 + 2000) + 3 * (8 * w200 + 2000);
  EXPECT_NEAR(e.node_watts, nodes / 4, 1e-9);
  EXPECT_NEAR(e.node_idle_watts, ((8 * 120 + 2000) + 3 * (8 * 132 + 2000)) / 4.0, 1e-9);
  EXPECT_NEAR(e.cluster_watts, 1.5 * nodes, 1e-9);
  EXPECT_NEAR(e.kwh_per_iteration, 1.5 * nodes * 0.100 / 3.6e6, 1e-15);
}

TEST(Energy, TheHostDrawComesFromTheInstancePresetUnlessTheScenarioGivesIt) {
  auto doc = base();
  doc["cluster"] = {{"nodes", 2}, {"instance", "aws.p5.48xlarge"}};
  // Latif et al. 2025: an 8-GPU H100 node peaked at 8.4 kW with its GPUs near their 700 W: 2.8 kW besides them.
  EXPECT_DOUBLE_EQ(read(doc).energy.host_power, 2800);
  doc["energy"] = {{"host_power", "1.5kW"}, {"network_power", "200 W"}, {"pue", 1.2}, {"grid_intensity", "0.4 kg/kWh"}};
  const auto s = read(doc);
  EXPECT_DOUBLE_EQ(s.energy.host_power, 1500);
  EXPECT_DOUBLE_EQ(s.energy.network_power, 200);
  EXPECT_DOUBLE_EQ(s.energy.pue, 1.2);
  EXPECT_DOUBLE_EQ(s.energy.grid_intensity, 400);
  // The canonical scenario reads back to the same figures.
  const auto again = read(scenario::to_json(s));
  EXPECT_DOUBLE_EQ(again.energy.host_power, 1500);
  EXPECT_DOUBLE_EQ(again.energy.grid_intensity, 400);
}

TEST(Energy, BadEnergyInputIsRefusedAtItsPointer) {
  const auto refused = [](const json& energy) {
    auto doc = base();
    doc["energy"] = energy;
    try {
      read(doc);
    } catch (const scenario::ScenarioError& e) {
      return e.pointer();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused({{"pue", 0.9}}), "/energy/pue");
  EXPECT_EQ(refused({{"grid_intensity", "400 W"}}), "/energy/grid_intensity");
  EXPECT_EQ(refused({{"host_power", "-3kW"}}), "/energy/host_power");
  EXPECT_EQ(refused({{"host_power", "2 GW"}}), "/energy/host_power");
  EXPECT_EQ(refused({{"watts", 3}}), "/energy/watts");
}

TEST(Energy, FiguresCarryTheirUnits) {
  EXPECT_EQ(report::format_power(689.02), "689 W");
  EXPECT_EQ(report::format_power(5840), "5.84 kW");
  EXPECT_EQ(report::format_energy(0.0000134), "13.4 mWh"); // one family: never joules beside watt-hours
  EXPECT_EQ(report::format_energy(0.312), "312 Wh");
  EXPECT_EQ(report::format_energy(1.53e6), "1.53 GWh");
  EXPECT_EQ(report::format_co2(12.4), "12.4 kg");
  EXPECT_EQ(report::format_co2(8930e3), "8.93 kt");
}

} // namespace
} // namespace dtsim
