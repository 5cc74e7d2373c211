// The design-space search: what the space is read from a scenario, which candidates it enumerates (counted by hand
// below), how a candidate's scenario is built, and how the invalid and the ones that do not fit are counted.
#include "sim/graph/estimate.hpp"
#include "sim/plan/plan.hpp"
#include "sim/studies/search.hpp"
#include "tests/sim/rank_correlation.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

namespace dtsim::studies::search {
namespace {

using scenario::Fidelity;
using scenario::PipelineSchedule;
using scenario::Recompute;

// `model` is the model section's JSON; the cluster is `nodes` x `gpus` A100 80GB.
scenario::Scenario make(const nlohmann::json& model, int nodes, int gpus, const nlohmann::json& training = {},
                        const std::string& gpu = "a100-80gb") {
  nlohmann::json document = {
      {"version", 1},
      {"name", "search-test"},
      {"model", model},
      {"cluster", {{"nodes", nodes}, {"gpus_per_node", gpus}, {"gpu", gpu}, {"nic", {{"bandwidth", "100Gbps"}}}}},
      {"run", {{"iterations", 5}, {"warmup_iterations", 2}}}};
  if (!training.is_null()) document["training"] = training;
  return scenario::parse_scenario(document.dump(), "search-test.json");
}

// GPT-3 125M (12 blocks, 12 heads, 2048 tokens): one sequence per GPU on 2 nodes of 4 GPUs, a global batch of 8.
scenario::Scenario gpt3_125m(int nodes = 2, int gpus = 4, int batch = 1) {
  return make({{"preset", "gpt3-125m"}, {"batch_per_gpu", batch}, {"precision", "bf16"}}, nodes, gpus);
}

// Eight matmuls of 300M weights each (2.4e9 in all), 1024 input and 1024 output elements per sample: no transformer
// blocks, heads or experts, so only data-parallel candidates. fp32 with momentum: 4 B of weights, 4 of gradient and
// 4 of momentum per parameter. One node of 4 V100 16GB (16e9 bytes); 2 samples per GPU, a global batch of 8.
scenario::Scenario eight_big_layers() {
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    layers.push_back({{"name", "fc" + std::to_string(i)},
                      {"kind", "matmul"},
                      {"forward_flops", 1e6},
                      {"parameters", 300'000'000},
                      {"input_elements", 1024},
                      {"output_elements", 1024}});
  return make({{"layers", layers}, {"batch_per_gpu", 2}}, 1, 4, {{"optimizer", "momentum"}}, "v100");
}

std::map<std::pair<int, int>, int> by_tensor_and_pipeline(const std::vector<Candidate>& candidates) {
  std::map<std::pair<int, int>, int> out;
  for (const auto& c : candidates)
    ++out[{c.tensor, c.pipeline}];
  return out;
}

TEST(SearchSpace, ReadFromTheScenario) {
  const auto space = space_of(gpt3_125m());
  EXPECT_EQ(space.gpus_per_node, 4);
  EXPECT_EQ(space.node_counts, std::vector<int>{2});
  EXPECT_EQ(space.heads, 12);  // the preset's published configuration
  EXPECT_EQ(space.blocks, 12); // layers.0 .. layers.11
  EXPECT_EQ(space.experts, 0);
  EXPECT_EQ(space.global_batch, 8); // 1 sequence x 8 GPUs

  // Gradient accumulation is part of a data-parallel global batch: 2 x 4 GPUs x 3 steps.
  const auto accumulated = make({{"preset", "mlp-small"}, {"batch_per_gpu", 2}}, 1, 4,
                                {{"strategy", {{"name", "allreduce"}, {"accumulation", 3}}}});
  const auto mlp = space_of(accumulated, {1, 2});
  EXPECT_EQ(mlp.global_batch, 24);
  EXPECT_EQ(mlp.node_counts, (std::vector<int>{1, 2}));
  EXPECT_EQ(mlp.heads, 0); // no transformer: no tensor parallelism
  EXPECT_EQ(mlp.blocks, 0);

  // An MoE transformer given inline: its own heads, and the experts of its expert layers.
  const auto moe = make({{"transformer", {{"base", "gpt3-125m"}, {"moe", {{"experts", 4}, {"top_k", 1}}}}},
                         {"batch_per_gpu", 2},
                         {"precision", "bf16"}},
                        1, 4);
  const auto moe_space = space_of(moe);
  EXPECT_EQ(moe_space.heads, 12);
  EXPECT_EQ(moe_space.blocks, 12);
  EXPECT_EQ(moe_space.experts, 4);
  EXPECT_EQ(moe_space.global_batch, 8);
}

// GPT-3 125M on 2 nodes x 4 GPUs (8 GPUs), global batch 8, counted by hand:
//   t in {1, 2, 4} (powers of two dividing 4 GPUs per node and 12 heads); p divides 8 / t (all <= 12 blocks);
//   d = 8 / (t p); b in {1, 2, 4, 8} with b d dividing 8, so b <= t p; m = 8 / (b d) = t p / b.
//   Per (t, p, b): schedules (1, or 2 when p > 1, 12 % 2p == 0 and m % p == 0) x ZeRO stages (3 when p == 1, else 2)
//   x 3 recomputations, x 2 with t > 1 (sequence parallelism off and on).
//   t=1 p=1: d 8, b 1                                   1 x 3 x 3     =  9
//   t=1 p=2: d 4, b 1 (m 2, interleaved too), 2 (m 1)   3 x 2 x 3     = 18
//   t=1 p=4: d 2, b 1, 2, 4 (12 % 8 != 0: 1f1b only)    3 x 2 x 3     = 18
//   t=1 p=8: d 1, b 1, 2, 4, 8 (12 % 16 != 0)           4 x 2 x 3     = 24
//   t=2 p=1: d 4, b 1, 2                                2 x 3 x 3 x 2 = 36
//   t=2 p=2: d 2, b 1 (m 4), 2 (m 2) twice, 4 (m 1)     5 x 2 x 3 x 2 = 60
//   t=2 p=4: d 1, b 1, 2, 4, 8 (12 % 8 != 0)            4 x 2 x 3 x 2 = 48
//   t=4 p=1: d 2, b 1, 2, 4                             3 x 3 x 3 x 2 = 54
//   t=4 p=2: d 1, b 1 (m 8), 2 (m 4), 4 (m 2) twice, 8  7 x 2 x 3 x 2 = 84
//   total 351, of which interleaved (1 + 2 x 2 + 3 x 2) x 2 x 3 = 66.
TEST(SearchEnumerate, Gpt3On8GpusCountedByHand) {
  const auto candidates = enumerate(space_of(gpt3_125m()));
  EXPECT_EQ(candidates.size(), 351u);
  const std::map<std::pair<int, int>, int> expected{{{1, 1}, 9},  {{1, 2}, 18}, {{1, 4}, 18},
                                                    {{1, 8}, 24}, {{2, 1}, 36}, {{2, 2}, 60},
                                                    {{2, 4}, 48}, {{4, 1}, 54}, {{4, 2}, 84}};
  EXPECT_EQ(by_tensor_and_pipeline(candidates), expected);

  int interleaved = 0;
  for (const auto& c : candidates) {
    EXPECT_EQ(c.nodes, 2);
    EXPECT_EQ(c.tensor * c.pipeline * c.data, 8);
    EXPECT_EQ(c.expert, 1);
    EXPECT_EQ(c.micro_batch * c.data * c.micro_batches, 8) << "the global batch stays 8";
    if (c.pipeline > 1) {
      EXPECT_NE(c.zero_stage, 3);
    }
    if (c.tensor == 1) {
      EXPECT_FALSE(c.sequence_parallel);
    }
    if (c.schedule == PipelineSchedule::interleaved) {
      ++interleaved;
      EXPECT_EQ(c.virtual_stages, 2);
      EXPECT_EQ(c.pipeline, 2); // 12 blocks split in 2p chunks only for p = 2 (p = 4, 8: 12 % 8, 12 % 16)
      EXPECT_EQ(c.micro_batches % c.pipeline, 0);
    } else {
      EXPECT_EQ(c.virtual_stages, 1);
    }
  }
  EXPECT_EQ(interleaved, 66);
  EXPECT_EQ(std::count_if(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.sequence_parallel; }),
            (36 + 60 + 48 + 54 + 84) / 2);
  EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
  // The data-parallel corner: 8 replicas of one sequence, ZeRO 0, 1 or 3, three recomputations.
  const Candidate dp{2, 1, 1, 8, 1, 1, 1, PipelineSchedule::one_f_one_b, 1, 3, Recompute::full};
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), dp), candidates.end());
}

// One node of 4 GPUs, global batch 8, by hand (as above with 4 GPUs; m = 8 / (b d)):
//   t=1 p=1: d 4, b 1, 2                    2 x 3 x 3 = 18
//   t=1 p=2: d 2, b 1, 2 (interleaved), 4   5 x 2 x 3 = 30
//   t=1 p=4: d 1, b 1, 2, 4, 8              4 x 2 x 3 = 24
//   t=2 p=1: d 2, b 1, 2, 4                 3 x 3 x 3 x 2 = 54
//   t=2 p=2: d 1, b 1, 2, 4 (interl.), 8    7 x 2 x 3 x 2 = 84
//   t=4 p=1: d 1, b 1, 2, 4, 8              4 x 3 x 3 x 2 = 72
//   282 on one node; with 2 nodes as well, 282 + 351 = 633 (each node count is its own cluster).
TEST(SearchEnumerate, NodeCountsAreClustersOfTheirOwn) {
  EXPECT_EQ(enumerate(space_of(gpt3_125m(1, 4, 2))).size(), 282u); // 2 sequences x 4 GPUs
  const auto both = enumerate(space_of(gpt3_125m(2), {1, 2}));
  EXPECT_EQ(both.size(), 633u);
  EXPECT_EQ(std::count_if(both.begin(), both.end(), [](const Candidate& c) { return c.nodes == 1; }), 282);
}

// The MoE GPT on one node of 4 GPUs, 4 experts: each (t, p, b) of the 282 above comes with every e dividing d (all
// divide 4): d 4 -> e 1, 2, 4; d 2 -> e 1, 2; d 1 -> e 1.
//   t=1 p=1 (d 4): 18 x 3 = 54; t=1 p=2 (d 2): 30 x 2 = 60; t=1 p=4: 24; t=2 p=1 (d 2): 27 x 2 = 54; t=2 p=2: 42;
//   t=4 p=1: 36; each with t > 1 twice (sequence parallelism off and on): 54 + 60 + 24 + 108 + 84 + 72 = 402.
// With 6 experts, e = 4 does not divide them: t=1 p=1 gives 18 x 2 = 36 and the total is 402 - 18 = 384.
TEST(SearchEnumerate, ExpertParallelismDividesTheReplicasAndTheExperts) {
  const auto moe = make({{"transformer", {{"base", "gpt3-125m"}, {"moe", {{"experts", 4}, {"top_k", 1}}}}},
                         {"batch_per_gpu", 2},
                         {"precision", "bf16"}},
                        1, 4);
  auto space = space_of(moe);
  const auto candidates = enumerate(space);
  EXPECT_EQ(candidates.size(), 402u);
  std::map<int, int> by_expert;
  for (const auto& c : candidates) {
    EXPECT_EQ(c.data % c.expert, 0);
    ++by_expert[c.expert];
  }
  // e = 4 only with d = 4 (t=1 p=1: 18); e = 2 with d = 4 (18) and d = 2 (t=1 p=2: 30, t=2 p=1: 27 x 2).
  EXPECT_EQ(by_expert, (std::map<int, int>{{1, 282}, {2, 102}, {4, 18}}));
  space.experts = 6;
  EXPECT_EQ(enumerate(space).size(), 384u);
}

// Without transformer blocks, heads or experts only data parallelism remains. One node of 4 GPUs, global batch 8:
// b 1 (m 2) or 2 (m 1) x ZeRO 0, 1, 3 x 3 recomputations = 18.
TEST(SearchEnumerate, WithoutTransformerOnlyDataParallelism) {
  const Space space{4, {1}, 0, 0, 0, 8};
  const auto candidates = enumerate(space);
  EXPECT_EQ(candidates.size(), 18u);
  for (const auto& c : candidates) {
    EXPECT_FALSE(c.model_parallel());
    EXPECT_EQ(c.data, 4);
  }
  // A global batch no micro-batch divides with 4 replicas: nothing to enumerate.
  EXPECT_TRUE(enumerate(Space{4, {1}, 0, 0, 0, 6}).empty());
}

// A candidate keeps the base's overlap choices where its layout can run them and takes its framework's defaults
// where it cannot (Megatron-Core overlaps tensor-parallel communication with its GEMMs only under sequence
// parallelism, and a pipeline's sends with compute only under the interleaved schedule): without that, the base's
// choices made every 1F1B candidate of an interleaved scenario invalid.
TEST(SearchCandidate, KeepsTheOverlapsItsLayoutCanRun) {
  const nlohmann::json document = {
      {"version", 1},
      {"name", "overlaps"},
      {"model", {{"preset", "gpt3-125m"}, {"batch_per_gpu", 1}, {"precision", "bf16"}}},
      {"cluster", {{"nodes", 2}, {"gpus_per_node", 4}, {"gpu", "a100-80gb"}, {"nic", {{"bandwidth", "100Gbps"}}}}},
      {"training", {{"framework", "megatron-core"}, {"zero_stage", 1}}},
      {"parallelism",
       {{"tensor", 2},
        {"pipeline", 2},
        {"schedule", "interleaved"},
        {"virtual_stages", 2},
        {"sequence_parallel", true},
        {"global_batch", 8},
        {"overlap", {{"tensor", true}, {"p2p", true}, {"grad_reduce", true}, {"param_gather", true}}}}}};
  const auto base = scenario::parse_scenario(document.dump(), "overlaps.json");
  ASSERT_TRUE(base.parallelism.overlap.tensor && base.parallelism.overlap.p2p);
  const Candidate plain{2, 2, 2, 2, 1, 1, 4, PipelineSchedule::one_f_one_b, 1, 1, Recompute::none, false};
  const auto s = candidate_scenario(base, plain, Options{});
  EXPECT_FALSE(s.parallelism.overlap.tensor);
  EXPECT_FALSE(s.parallelism.overlap.p2p);
  EXPECT_TRUE(s.parallelism.overlap.grad_reduce); // applies to every layout with ZeRO 1
  EXPECT_TRUE(s.parallelism.overlap.param_gather);
  const Candidate same{2, 2, 2, 2, 1, 1, 4, PipelineSchedule::interleaved, 2, 1, Recompute::none, true};
  const auto t = candidate_scenario(base, same, Options{});
  EXPECT_TRUE(t.parallelism.overlap.tensor);
  EXPECT_TRUE(t.parallelism.overlap.p2p);
  // Without the distributed optimizer there is no parameter all-gather to overlap.
  auto zero0 = same;
  zero0.zero_stage = 0;
  EXPECT_FALSE(candidate_scenario(base, zero0, Options{}).parallelism.overlap.param_gather);
}

TEST(SearchCandidate, ScenarioCarriesTheLayout) {
  const auto base = gpt3_125m();
  const Candidate c{2, 2, 2, 2, 1, 2, 2, PipelineSchedule::interleaved, 2, 1, Recompute::selective};
  const auto s = candidate_scenario(base, c, Options{});
  EXPECT_EQ(s.parallelism.tensor, 2);
  EXPECT_EQ(s.parallelism.pipeline, 2);
  EXPECT_EQ(s.parallelism.data, 2);
  EXPECT_EQ(s.parallelism.expert, 1);
  EXPECT_EQ(s.parallelism.micro_batches, 2);
  EXPECT_EQ(s.parallelism.schedule, PipelineSchedule::interleaved);
  EXPECT_EQ(s.parallelism.virtual_stages, 2);
  EXPECT_EQ(s.model.batch_per_gpu, 2);
  EXPECT_EQ(s.global_batch(), 8); // 2 x 2 replicas x 2 micro-batches: the base's
  EXPECT_EQ(s.training.zero_stage, 1);
  EXPECT_EQ(s.training.recompute, Recompute::selective);
  EXPECT_FALSE(s.parallelism.sequence_parallel);
  auto sp = c;
  sp.sequence_parallel = true;
  EXPECT_TRUE(candidate_scenario(base, sp, Options{}).parallelism.sequence_parallel);
  EXPECT_EQ(s.training.strategy.accumulation, 1);
  EXPECT_EQ(s.run.fidelity, Fidelity::coarse); // model parallel, no fidelity asked for
  EXPECT_EQ(s.run.iterations, 1);
  EXPECT_EQ(s.run.warmup_iterations, 1);
  EXPECT_EQ(s.origin, "search-test.json");

  // Data parallelism on one node: the 2 micro-batches of 1 become gradient accumulation, no parallelism section, and
  // "coarse" (which needs model parallelism) runs at aggregate.
  Options options;
  options.fidelity = Fidelity::coarse;
  options.iterations.reset();
  options.warmup_iterations.reset();
  const Candidate dp{1, 1, 1, 4, 1, 1, 2, PipelineSchedule::one_f_one_b, 1, 3, Recompute::full};
  const auto d = candidate_scenario(base, dp, options);
  EXPECT_FALSE(d.parallelism.model_parallel());
  EXPECT_EQ(d.cluster.nodes, 1);
  EXPECT_EQ(d.training.strategy.accumulation, 2);
  EXPECT_EQ(d.model.batch_per_gpu * d.world_size() * d.training.strategy.accumulation, 8);
  EXPECT_EQ(d.training.zero_stage, 3);
  EXPECT_EQ(d.training.recompute, Recompute::full);
  EXPECT_EQ(d.run.fidelity, Fidelity::aggregate);
  EXPECT_EQ(d.run.iterations, 5); // the base's, as a user's --set keeps them
  EXPECT_EQ(d.run.warmup_iterations, 2);
  options.fidelity = Fidelity::step;
  EXPECT_EQ(candidate_scenario(base, dp, options).run.fidelity, Fidelity::step);
  EXPECT_EQ(fidelity_of(c, options, 8), Fidelity::step);
}

// The eight big layers on 4 V100 16GB (16e9 bytes), global batch 8: 18 candidates (b 1 or 2 x ZeRO 0, 1, 3 x 3
// recomputations).
//   invalid: the 6 with full recomputation (it recomputes transformer blocks; this model has none).
//   Per GPU, P = 2.4e9 parameters at 4 B each of weights, gradient and momentum, N = 4 ranks:
//     ZeRO 0: 4P + 4P + 4P + DDP's gradient buckets (a copy of every gradient) 4P    = 38.4e9 > 16e9: does not fit
//     ZeRO 1: 4P + 4P + 4P/N + two 25 MiB reduce-scatter buckets in flight           = 21.65e9 > 16e9: does not fit
//     ZeRO 3: (4P + 4P + 4P)/N + the full gradients and the full weights of the two largest layers (FSDP units),
//             2 x 4 x 3e8 each                                                        = 7.2e9 + 2.4e9 + 2.4e9 = 12e9
//   so 8 do not fit (ZeRO 0 and 1 x b 1, 2 x none, selective) and 4 fit.
//   Activations at 4 B per element and b samples: the 8 layers keep their 1024 outputs (32768 b bytes) and the
//   largest op's input and output gradients take 8192 b: 40960 b.
TEST(SearchScreen, CountsInvalidAndDoesNotFit) {
  const auto base = eight_big_layers();
  const auto candidates = enumerate(space_of(base));
  ASSERT_EQ(candidates.size(), 18u);
  const auto screened = screen(base, candidates, Options{});
  ASSERT_EQ(screened.size(), 18u);
  int invalid = 0, too_big = 0, fit = 0;
  for (const auto& s : screened) {
    const auto& c = s.candidate;
    switch (s.verdict) {
    case Verdict::invalid:
      ++invalid;
      EXPECT_EQ(c.recompute, Recompute::full);
      EXPECT_NE(s.reason.find("/training/recompute"), std::string::npos) << s.reason;
      break;
    case Verdict::does_not_fit:
      ++too_big;
      EXPECT_NE(c.zero_stage, 3);
      EXPECT_DOUBLE_EQ(s.capacity_bytes, 16e9);
      EXPECT_DOUBLE_EQ(s.memory_bytes,
                       (c.zero_stage == 0 ? 38.4e9 : 21.6e9 + 2 * 25 * 1048576.0) + 40960.0 * c.micro_batch)
          << s.reason;
      EXPECT_NE(s.reason.find("of 14.90 GiB"), std::string::npos) << s.reason;
      break;
    case Verdict::simulate:
      ++fit;
      EXPECT_EQ(c.zero_stage, 3);
      EXPECT_DOUBLE_EQ(s.memory_bytes, 12e9 + 40960.0 * c.micro_batch);
      break;
    }
  }
  EXPECT_EQ(invalid, 6);
  EXPECT_EQ(too_big, 8);
  EXPECT_EQ(fit, 4);
}

// A combination the scenario reader refuses is invalid, not an error: gradient compression runs with data
// parallelism only, so of the 351 GPT candidates (above) only the 9 data-parallel ones (t = p = 1) stay.
TEST(SearchScreen, ModelParallelismRefusedByTheScenarioIsInvalid) {
  auto base =
      make({{"preset", "gpt3-125m"}, {"batch_per_gpu", 1}, {"precision", "bf16"}}, 2, 4, {{"compression", "topk"}});
  const auto screened = screen(base, enumerate(space_of(base)), Options{});
  ASSERT_EQ(screened.size(), 351u);
  int invalid = 0;
  for (const auto& s : screened) {
    EXPECT_EQ(s.verdict == Verdict::invalid, s.candidate.model_parallel()) << s.reason;
    if (s.verdict == Verdict::invalid) {
      ++invalid;
      EXPECT_NE(s.reason.find("compression is not modeled"), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(invalid, 351 - 9);
}

// The whole search on the eight big layers: the 4 ZeRO-3 candidates run, each trains 8 samples per iteration, and the
// ranking goes by throughput with ties (no attention: selective recomputation changes nothing) in candidate order.
TEST(Search, SimulatesWhatFitsAndRanksIt) {
  auto base = eight_big_layers();
  base.cluster.price_per_node_hour = 36; // $0.01 per second
  Options options;
  options.jobs = 2;
  const auto result = search::search(base, options);
  EXPECT_EQ(result.counts.enumerated, 18);
  EXPECT_EQ(result.counts.invalid, 6);
  EXPECT_EQ(result.counts.do_not_fit, 8);
  EXPECT_EQ(result.counts.simulated, 4);
  EXPECT_EQ(result.counts.failed, 0);
  EXPECT_EQ(result.rejected.size(), 14u);
  EXPECT_EQ(result.unit.name, "samples");
  ASSERT_EQ(result.points.size(), 4u);
  const auto ranked = by_throughput(result);
  ASSERT_EQ(ranked.size(), 4u);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& p = *ranked[i];
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.result.global_batch, 8);
    EXPECT_NEAR(p.throughput, 8 / p.result.iteration.mean, 1e-9 * p.throughput);
    // $36 per hour is $0.01 per second: 0.01 / throughput x 1e6 USD per million samples.
    EXPECT_NEAR(p.cost_per_million, 0.01 / p.throughput * 1e6, 1e-9 * p.cost_per_million);
    if (i > 0) {
      const auto& previous = *ranked[i - 1];
      EXPECT_GE(previous.throughput, p.throughput);
      if (previous.throughput == p.throughput) {
        EXPECT_LT(previous.candidate, p.candidate);
      }
    }
  }
  // Selective recomputation changes nothing without attention: each micro-batch's pair ties, none first.
  EXPECT_EQ(ranked[0]->throughput, ranked[1]->throughput);
  EXPECT_EQ(ranked[0]->candidate.recompute, Recompute::none);
  EXPECT_EQ(ranked[1]->candidate.recompute, Recompute::selective);
  // One cluster: the cheapest per sample is the fastest.
  const auto cheapest = by_cost(result);
  ASSERT_EQ(cheapest.size(), 4u);
  for (std::size_t i = 0; i < cheapest.size(); ++i)
    EXPECT_EQ(cheapest[i], ranked[i]);

  // The same input, the same result.
  const auto again = search::search(base, options);
  ASSERT_EQ(again.points.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again.points[i].candidate, result.points[i].candidate);
    EXPECT_EQ(again.points[i].result.iteration.mean, result.points[i].result.iteration.mean);
  }
}

using test::rank_correlation;

struct Agreement {
  double lowest = INFINITY, highest = 0; // estimate / simulated
  double correlation = 0;
  int best_by_estimate = 0;                             // the simulated best's rank by the estimate
  double estimates_pick = 0, simulated_best = INFINITY; // simulated seconds of the estimate's first and of the best
};

Agreement agreement(const Result& result) {
  Agreement a;
  std::vector<double> estimates, simulated;
  const Point* best = nullptr;
  for (const auto& p : result.points) {
    EXPECT_TRUE(p.ok) << p.error;
    EXPECT_GT(p.estimate_rank, 0) << p.estimate_error;
    if (!p.ok || p.estimate_rank == 0) continue;
    estimates.push_back(p.estimate_seconds);
    simulated.push_back(p.result.iteration.mean);
    a.lowest = std::min(a.lowest, p.estimate_seconds / p.result.iteration.mean);
    a.highest = std::max(a.highest, p.estimate_seconds / p.result.iteration.mean);
    if (!best) best = &p; // points are best first
    if (p.estimate_rank == 1) a.estimates_pick = p.result.iteration.mean;
    a.simulated_best = std::min(a.simulated_best, p.result.iteration.mean);
  }
  a.correlation = rank_correlation(estimates, simulated);
  if (best) a.best_by_estimate = best->estimate_rank;
  return a;
}

// Every candidate of GPT-3 125M on one node of 4 A100 (282, all fit) estimated and simulated: on one node nothing
// shares a link but what the estimate shares too, and the estimate is within 5% of the replay (measured 0.962 to
// 1.000, rank correlation 0.9998: ZeRO-3's gathers overlap the layers more in the estimate, which leaves out the SMs
// NCCL's channels take). On 2 nodes (450) the estimate's even share of each NIC meets the replay's flows: within a
// factor 0.9 to 1.7 (measured 0.958 to 1.585), a rank correlation of 0.87, and the best simulated candidate is the
// estimate's 11th.
TEST(SearchScreen, TheEstimateRanksAsTheSimulationDoes) {
  Options options;
  options.jobs = 2;
  options.simulate = 0; // every candidate, to compare
  options.iterations = 1;
  options.warmup_iterations = 1;
  const auto one_node = agreement(search::search(gpt3_125m(1, 4, 2), options));
  EXPECT_GE(one_node.lowest, 0.95);
  EXPECT_LE(one_node.highest, 1.05);
  EXPECT_GE(one_node.correlation, 0.99);
  // The estimate's first choice is the best simulated, or ties it: measured 3rd by the estimate, its first 0.03%
  // slower in the replay (two layouts 8 us apart an iteration).
  EXPECT_LE(one_node.best_by_estimate, 3);
  EXPECT_LE(one_node.estimates_pick / one_node.simulated_best, 1.001);

  const auto two_nodes = agreement(search::search(gpt3_125m(2, 4, 2), options));
  EXPECT_GE(two_nodes.lowest, 0.9);
  EXPECT_LE(two_nodes.highest, 1.7);
  EXPECT_GE(two_nodes.correlation, 0.85);
  EXPECT_LE(two_nodes.best_by_estimate, 20); // in the default screened top 20
}

// The estimate plans the first data-parallel replica only: with identical GPUs the same figure as the whole plan's,
// every layout of GPT-3 125M on 2 nodes that has model parallelism and data parallelism both. With GPUs that differ
// (the default) each simulated rank takes the slowest speed of its position across the replicas, an upper bound on
// the whole plan's (which waits for the slowest replica, not for a replica of each position's slowest): measured 0.1%
// to 0.4% above it.
TEST(SearchScreen, FirstReplicaPlanEstimatesAsTheWholePlan) {
  for (double sigma : {0.0, strategies::kMeasuredGpuSpeedSigma}) {
    auto base = gpt3_125m(2, 4, 2);
    base.stragglers.gpu_speed_sigma = sigma;
    int compared = 0;
    for (const auto& c : enumerate(space_of(base))) {
      if (!c.model_parallel() || c.data == 1 || c.recompute != Recompute::none) continue;
      const auto s = candidate_scenario(base, c, Options{});
      if (!plan::estimate_memory(s).fits()) continue;
      const auto whole = graph::estimate(s.cluster, plan::make_plan(s).graph, 2).iteration_seconds;
      const auto first = estimate_seconds(s);
      const auto layout = fmt::format("sigma {} layout {} {} {}", sigma, c.tensor, c.pipeline, c.data);
      if (sigma == 0) {
        EXPECT_NEAR(first, whole, 1e-12 * whole) << layout;
      } else {
        EXPECT_GE(first, whole * (1 - 1e-12)) << layout;
        EXPECT_LE(first, whole * 1.01) << layout;
      }
      ++compared;
    }
    EXPECT_GT(compared, 20);
  }
}

// The estimate prices many micro-batches from two short runs of the schedule and extends the steady state linearly:
// on every layout of GPT-3 125M over 2 nodes of 4 GPUs with a global batch of 64 whose micro-batches reach past the
// schedule's warm-up, with identical GPUs the same figure as the plan built with all of them, on A100 and on H100
// (GPT-3 125M's small GEMMs stay under the power limit at boost clocks). Where GPUs differ, stages run at different
// speeds and the faster ones' lead settles over more micro-batches than the short runs hold: measured within 0.18%.
TEST(SearchScreen, TheSteadyStateExtendsToEveryMicroBatch) {
  for (double sigma : {0.0, strategies::kMeasuredGpuSpeedSigma}) {
    int compared = 0;
    double worst = 0;
    for (auto base : {gpt3_125m(2, 4, 8), make({{"preset", "gpt3-125m"}, {"batch_per_gpu", 8}, {"precision", "bf16"}},
                                               2, 4, {}, "h100-sxm")}) {
      base.stragglers.gpu_speed_sigma = sigma;
      for (const auto& c : enumerate(space_of(base))) {
        const int from = 2 * c.pipeline * c.virtual_stages;
        if (c.micro_batches <= from + c.pipeline) continue;
        const auto s = candidate_scenario(base, c, Options{});
        if (!plan::estimate_memory(s).fits()) continue;
        const auto whole = graph::estimate(s.cluster, plan::make_first_replica_plan(s).graph, 2).iteration_seconds;
        worst = std::max(worst, std::fabs(estimate_seconds(s) / whole - 1));
        ++compared;
      }
    }
    EXPECT_GT(compared, 50);
    EXPECT_LT(worst, sigma == 0 ? 1e-9 : 3e-3) << "sigma " << sigma; // measured: 1e-13 over 732 layouts; 1.8e-3
  }
}

// Where the power limit holds the clock below its boost (Llama-3-8B's GEMMs on H100 draw more than 700 W at boost),
// the short plans run at the clock the whole job's kernels hold (their burst-clock stretch grows by the same amount
// per micro-batch), so each is priced as the whole plan prices it. But stages that sustain different clocks (their
// kernels differ: the last holds the LM head and the loss) run at different speeds, and the faster one's lead takes
// tens of micro-batches to settle: the steady state then starts after the short plans end, and the extension is short
// by what that settling adds. GPUs that differ in speed (the default) add to it.
TEST(SearchScreen, TheSteadyStateExtendsUnderAPowerCappedClock) {
  for (double sigma : {0.0, strategies::kMeasuredGpuSpeedSigma}) {
    auto base = make(
        {{"transformer", {{"base", "llama3-8b"}, {"sequence", 2048}}}, {"batch_per_gpu", 1}, {"precision", "bf16"}}, 1,
        8, {{"optimizer", "adam"}}, "h100-sxm");
    base.stragglers.gpu_speed_sigma = sigma;
    auto document = scenario::to_json(base);
    document["parallelism"] = {{"tensor", 2}, {"global_batch", 64}};
    const auto sized = scenario::parse_scenario(document.dump(), "search-test.json");
    int compared = 0;
    double worst = 0;
    for (const auto& c : enumerate(space_of(sized))) {
      if (c.recompute != Recompute::none || c.sequence_parallel || c.micro_batches <= 3 * c.pipeline * c.virtual_stages)
        continue;
      std::optional<scenario::Scenario> valid;
      try {
        valid = candidate_scenario(sized, c, Options{});
      } catch (const scenario::ScenarioError&) {
        continue; // a layout the format refuses (the search counts it invalid)
      }
      const auto& s = *valid;
      if (!plan::estimate_memory(s).fits()) continue;
      const auto whole = graph::estimate(s.cluster, plan::make_first_replica_plan(s).graph, 2).iteration_seconds;
      worst = std::max(worst, std::fabs(estimate_seconds(s) / whole - 1));
      ++compared;
    }
    EXPECT_GT(compared, 50);
    // Measured with identical GPUs: 72 of 73 exact to 1e-13; tensor 4 x interleaved pipeline 2 at 64 micro-batches
    // 0.29% short. With GPUs that differ: within 0.91%.
    EXPECT_LT(worst, sigma == 0 ? 5e-3 : 1.2e-2) << "sigma " << sigma;
  }
}

// With --simulate K only the best K by the estimate are simulated; the rest are listed by it, and none is lost.
TEST(SearchScreen, SimulatesTheBestKByTheEstimate) {
  Options options;
  options.jobs = 2;
  options.simulate = 5;
  const auto result = search::search(gpt3_125m(1, 4, 2), options);
  EXPECT_EQ(result.counts.simulated, 5);
  EXPECT_EQ(result.counts.estimated, 282);
  EXPECT_EQ(result.counts.not_simulated, 277);
  ASSERT_EQ(result.points.size(), 5u);
  ASSERT_EQ(result.screened.size(), 277u);
  std::set<int> simulated_ranks;
  for (const auto& p : result.points)
    simulated_ranks.insert(p.estimate_rank);
  EXPECT_EQ(simulated_ranks, (std::set<int>{1, 2, 3, 4, 5}));
  for (std::size_t i = 0; i < result.screened.size(); ++i) {
    EXPECT_EQ(result.screened[i].estimate_rank, static_cast<int>(i) + 6);
    EXPECT_FALSE(result.screened[i].simulated);
    if (i == 0) continue;
    // Those estimated from their plans rank first, by that estimate, then those priced in closed form alone.
    const auto &p = result.screened[i], &before = result.screened[i - 1];
    EXPECT_TRUE(p.closed_form_only || !before.closed_form_only);
    if (p.closed_form_only == before.closed_form_only) {
      EXPECT_GE(p.estimate_seconds, before.estimate_seconds);
    }
  }
}

TEST(Search, RefusesBadOptions) {
  const auto base = eight_big_layers();
  Options options;
  options.iterations = 0;
  EXPECT_THROW(search::search(base, options), std::invalid_argument);
  options.iterations = 1;
  options.jobs = 0;
  EXPECT_THROW(search::search(base, options), std::invalid_argument);
}

} // namespace
} // namespace dtsim::studies::search
