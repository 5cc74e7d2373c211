// Clusters that mix GPU types: each group's program planned on its own GPU, the all-reduces shared. Equal batches
// take the slowest group's time; proportional batches equalize the groups' compute and keep the global batch.
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using nlohmann::json;

json mixed(const char* split) {
  return json::parse(fmt::format(R"({{
    "version": 1, "name": "mixed",
    "model": {{"preset": "resnet50", "batch_per_gpu": 128, "precision": "amp"}},
    "cluster": {{"nodes": 2, "gpus_per_node": 4, "nic": {{"bandwidth": "100Gbps"}},
                "intra_node": {{"fabric": "nvlink", "bandwidth": "150GB/s"}},
                "groups": [{{"gpu": "v100", "nodes": 1, "price_per_hour": 12}},
                           {{"gpu": "a100-80gb", "nodes": 1, "price_per_hour": 20}}],
                "batch_split": "{}"}},
    "run": {{"iterations": 2, "warmup_iterations": 1}}
  }})",
                                 split));
}

scenario::Scenario read(const json& document) {
  return scenario::parse_scenario(document.dump(), "mixed.json");
}

// The same cluster with every GPU of one kind.
scenario::Scenario uniform(const char* gpu) {
  auto doc = mixed("equal");
  doc["cluster"].erase("groups");
  doc["cluster"].erase("batch_split");
  doc["cluster"]["gpu"] = gpu;
  return read(doc);
}

TEST(MixedGpus, EqualBatchesTakeTheSlowestGroupsTime) {
  const auto r = simulate(read(mixed("equal"))).result;
  const auto v100 = simulate(uniform("v100")).result;
  const auto a100 = simulate(uniform("a100-80gb")).result;
  ASSERT_EQ(r.groups.size(), 2u);
  // Each group's kernels are what a uniform cluster of its GPU plans.
  double v100_kernels = 0;
  for (const auto& k : v100.kernels)
    v100_kernels += k.seconds;
  EXPECT_DOUBLE_EQ(r.groups[0].kernel_seconds, v100_kernels);
  EXPECT_LT(a100.iteration.mean, 0.7 * v100.iteration.mean);
  // The mixed cluster runs at the V100s' pace: within 2% of the all-V100 cluster, nowhere near the A100s'.
  EXPECT_NEAR(r.iteration.mean, v100.iteration.mean, 0.02 * v100.iteration.mean);
  // The A100s wait: their compute is shorter by what the V100s take longer.
  EXPECT_LT(r.groups[1].breakdown.compute, 0.7 * r.groups[0].breakdown.compute);
  EXPECT_EQ(r.global_batch, 8 * 128);
  // The cluster's hour is its groups': 12 + 20 dollars.
  EXPECT_DOUBLE_EQ(r.price_per_hour, 32);
}

TEST(MixedGpus, ProportionalBatchesEqualizeComputeAndKeepTheGlobalBatch) {
  const auto equal = simulate(read(mixed("equal"))).result;
  const auto r = simulate(read(mixed("proportional"))).result;
  ASSERT_EQ(r.groups.size(), 2u);
  // 8 GPUs x 128 = 1,024 images, split 4 x b_v100 + 4 x b_a100 = 1,024, the A100s taking more.
  EXPECT_EQ(4 * r.groups[0].batch_per_gpu + 4 * r.groups[1].batch_per_gpu, 1024);
  EXPECT_GT(r.groups[1].batch_per_gpu, r.groups[0].batch_per_gpu);
  EXPECT_EQ(r.global_batch, 1024);
  // Within a sample's worth of each other (a V100's 1/b of its time): kernel times are not linear in the batch.
  const double v = r.groups[0].kernel_seconds, a = r.groups[1].kernel_seconds;
  EXPECT_NEAR(v, a, 2.0 * v / static_cast<double>(r.groups[0].batch_per_gpu));
  EXPECT_LT(r.iteration.mean, 0.8 * equal.iteration.mean);
}

TEST(MixedGpus, AGroupsOwnNicGatesTheRingAsASlowClusterWould) {
  // Two V100 nodes, one on a 5 Gbps NIC and one on the cluster's 100 Gbps: NCCL's ring over both moves at the
  // slower link's pace, so the iteration is the all-5 Gbps cluster's (within 1%), well behind the all-100 Gbps one.
  auto doc = mixed("equal");
  doc["cluster"]["groups"][1]["gpu"] = "v100";
  doc["cluster"]["groups"][0]["nic"] = {{"bandwidth", "5Gbps"}};
  const auto s = read(doc);
  ASSERT_EQ(s.cluster.node_nics.size(), 2u);
  EXPECT_DOUBLE_EQ(s.cluster.nic_of(0).bandwidth, 5e9 / 8);
  EXPECT_DOUBLE_EQ(s.cluster.nic_of(1).bandwidth, 100e9 / 8);
  EXPECT_DOUBLE_EQ(read(scenario::to_json(s)).cluster.nic_of(0).bandwidth, 5e9 / 8); // reads back
  const auto slow = [](const char* bandwidth) {
    auto u = mixed("equal");
    u["cluster"].erase("groups");
    u["cluster"].erase("batch_split");
    u["cluster"]["gpu"] = "v100";
    u["cluster"]["nic"]["bandwidth"] = bandwidth;
    return simulate(read(u)).result.iteration.mean;
  };
  const double mixed_nics = simulate(s).result.iteration.mean, all_5 = slow("5Gbps"), all_100 = slow("100Gbps");
  EXPECT_NEAR(mixed_nics, all_5, 0.01 * all_5);
  EXPECT_GT(mixed_nics, 1.2 * all_100);
}

TEST(MixedGpus, GroupsThatDoNotMatchTheClusterAreRefusedAtTheirPointer) {
  const auto refused = [](json doc) {
    try {
      read(doc);
    } catch (const scenario::ScenarioError& e) {
      return e.pointer();
    }
    return std::string("accepted");
  };
  auto doc = mixed("equal");
  doc["cluster"]["nodes"] = 3; // the groups have 2
  EXPECT_EQ(refused(doc), "/cluster/groups");
  doc = mixed("equal"); // the A100s have bf16, the V100s do not
  doc["cluster"]["groups"] = {doc["cluster"]["groups"][1], doc["cluster"]["groups"][0]};
  doc["model"]["precision"] = "bf16";
  EXPECT_EQ(refused(doc), "/model/precision");
  doc = mixed("equal");
  doc["cluster"]["gpu"] = "v100";
  EXPECT_EQ(refused(doc), "/cluster/gpu");
  doc = mixed("equal");
  doc["cluster"]["groups"][1]["gpu"] = "a100-81gb";
  EXPECT_EQ(refused(doc), "/cluster/groups/1/gpu");
  doc = mixed("equal");
  doc["cluster"]["groups"][0]["nodes"] = 0;
  EXPECT_EQ(refused(doc), "/cluster/groups/0/nodes");
  doc = mixed("sideways");
  EXPECT_EQ(refused(doc), "/cluster/batch_split");
  doc = mixed("equal");
  doc["cluster"]["groups"][0]["nic"] = {{"latency", "2us"}};
  EXPECT_EQ(refused(doc), "/cluster/groups/0/nic/bandwidth");
  doc["cluster"]["groups"][0]["nic"] = {{"bandwidth", "5Gbps"}};
  doc["cluster"]["topology"] = {{"kind", "torus"}, {"dimensions", {2}}};
  EXPECT_EQ(refused(doc), "/cluster/groups/0/nic");
  doc = mixed("equal");
  doc["cluster"]["groups"].erase(1);
  EXPECT_EQ(refused(doc), "/cluster/groups");
  doc = mixed("equal");
  doc["model"] = {{"preset", "gpt2"}, {"batch_per_gpu", 8}, {"precision", "fp16"}};
  doc["parallelism"] = {{"pipeline", 2}};
  doc["cluster"]["batch_split"] = "proportional"; // pipelines get stages sized to their GPUs instead
  EXPECT_EQ(refused(doc), "/cluster/batch_split");
  auto plain = scenario::to_json(uniform("v100"));
  plain["cluster"]["batch_split"] = "proportional";
  EXPECT_EQ(refused(plain), "/cluster/batch_split");
}

json pipelined(const json& groups) {
  auto doc = mixed("equal");
  doc["model"] = {{"preset", "gpt2"}, {"batch_per_gpu", 4}, {"precision", "fp16"}};
  doc["parallelism"] = {{"pipeline", 2}, {"micro_batches", 8}};
  doc["cluster"]["groups"] = groups;
  doc["cluster"].erase("batch_split");
  return doc;
}

TEST(MixedGpus, PipelineStagesAreSizedToEachGroupsGpu) {
  // Two stages of GPT-2 (12 blocks, then the LM head) over a V100 node and an A100 node: each stage's blocks are
  // priced on its own GPU and the split balances their times (HetPipe), so the V100 stage takes fewer blocks than it
  // would in an all-V100 pipeline, and the iteration beats the even split of 6 and 6.
  const auto mixed_groups = json::parse(R"([{"gpu": "v100", "nodes": 1}, {"gpu": "a100-80gb", "nodes": 1}])");
  const auto v100_groups = json::parse(R"([{"gpu": "v100", "nodes": 1}, {"gpu": "v100", "nodes": 1}])");
  const auto hetpipe = simulate(read(pipelined(mixed_groups))).result;
  const auto all_v100 = simulate(read(pipelined(v100_groups))).result;
  auto even_doc = pipelined(mixed_groups);
  even_doc["parallelism"]["stages"] = {6, 6};
  const auto even = simulate(read(even_doc)).result;
  ASSERT_EQ(hetpipe.parallel.chunk_units.size(), 2u);
  EXPECT_LT(hetpipe.parallel.chunk_units[0], all_v100.parallel.chunk_units[0]);
  EXPECT_LT(hetpipe.iteration.mean, even.iteration.mean);
  EXPECT_LT(hetpipe.iteration.mean, all_v100.iteration.mean);
  // A stage whose ranks fall in two groups has no one GPU: refused when planned.
  auto split = pipelined(mixed_groups);
  split["parallelism"] = {{"tensor", 4}, {"data", 2}};
  EXPECT_THROW(simulate(read(split)), plan::PlanError);
}

TEST(MixedGpus, TheShippedHetPipeScenarioGivesTheV100StageFewerBlocks) {
  const auto path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/gpt2-v100-a100-hetpipe.json";
  const auto r = simulate(scenario::load_scenario(path)).result;
  ASSERT_EQ(r.parallel.chunk_units.size(), 2u);
  EXPECT_LT(r.parallel.chunk_units[0], r.parallel.chunk_units[1]); // the V100 stage is the first
  EXPECT_LT(r.iteration.mean,
            simulate(scenario::load_scenario(path, {{"parallelism.stages", "[6,6]"}})).result.iteration.mean);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].gpu, "v100");
}

TEST(MixedGpus, TheCanonicalScenarioReadsBackTheSameGroups) {
  const auto s = read(mixed("proportional"));
  const auto again = read(scenario::to_json(s));
  ASSERT_EQ(again.groups.size(), 2u);
  EXPECT_EQ(again.groups[1].gpu.name, "a100-80gb");
  EXPECT_EQ(again.groups[1].first_rank, 4);
  EXPECT_EQ(again.batch_split, scenario::BatchSplit::proportional);
  EXPECT_EQ(scenario::to_json(again), scenario::to_json(s));
}

} // namespace
} // namespace dtsim
