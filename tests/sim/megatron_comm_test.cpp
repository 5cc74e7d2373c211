// Megatron-Core's communication beside the tensor-parallel collectives: what it overlaps (tp-comm-overlap,
// overlap-grad-reduce, overlap-param-gather), the precision each tensor crosses the wire in, and the collectives of
// finalize_model_grads and the vocabulary-parallel loss, each by hand from Megatron-LM's source.
#include "models/transformer.hpp"
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dtsim {
namespace {

using calibration::Precision;
using collectives::Operation;

// A two-block GPT of hidden 768 at micro-batch 4 x 128 tokens, bf16, tensor-parallel over `tensor` GPUs of a node
// whose links carry 100 GB/s (so the tensor-parallel collectives cost something), sequence parallel.
scenario::Scenario gpt(int tensor, int pipeline = 1) {
  auto s = test::small_gpt(tensor * pipeline, tensor, true);
  s.cluster.intra = {100e9, 1e-6};
  s.parallelism.pipeline = pipeline;
  s.parallelism.micro_batches = pipeline;
  s.run.iterations = 2;
  return s;
}

const graph::Op* find(const graph::Program& p, const std::string& name) {
  const auto it = std::find_if(p.ops.begin(), p.ops.end(), [&](const graph::Op& op) { return op.name == name; });
  return it == p.ops.end() ? nullptr : &*it;
}

// tp-comm-overlap: the MLP's up-projection's forward all-gather runs on its own stream from the same dependencies as
// the MLP's up-projection's GEMM, which runs as (t-1)/t of its time beside it and 1/t after both: with t = 2, halves.
// Where the collectives cost more than running the GEMMs in chunks of rows loses (links of 10 GB/s here), the
// iteration gets shorter than with the collectives blocking the GEMMs, and no shorter than the compute alone; with
// free communication the chunks only cost.
TEST(MegatronOverlap, TensorParallelCollectivesRunBesideTheirGemms) {
  auto s = gpt(2);
  s.cluster.intra = {10e9, 1e-6};
  s.parallelism.overlap.tensor = true;
  const auto plan = plan::make_plan(s);
  const auto& program = plan.graph.program_of(0);
  const auto* gather = find(program, "layers.0.mlp.up fwd tp all-gather (overlapped)");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->stream, graph::Stream::tensor);
  EXPECT_EQ(std::get<graph::Collective>(gather->body).bytes, 4 * 128 * 768 * 2.0); // b s h in bf16
  const auto index = static_cast<std::uint32_t>(gather - program.ops.data());
  const auto& inside = program.ops[index + 1];
  const auto& last = program.ops[index + 2];
  EXPECT_EQ(inside.deps, gather->deps);
  EXPECT_EQ(last.deps, (std::vector<std::uint32_t>{index + 1, index}));
  EXPECT_NEAR(std::get<graph::Compute>(inside.body).seconds, std::get<graph::Compute>(last.body).seconds, 1e-12);

  const double overlapped = simulate(s).result.iteration.mean;
  s.parallelism.overlap.tensor = false;
  const auto blocking = simulate(s).result;
  EXPECT_LT(overlapped, blocking.iteration.mean);
  EXPECT_GT(overlapped, blocking.breakdown.compute);

  s.cluster.intra = {1e18, 0};
  const double free_blocking = simulate(s).result.iteration.mean;
  s.parallelism.overlap.tensor = true;
  EXPECT_GT(simulate(s).result.iteration.mean, free_blocking);
}

// Without overlap-grad-reduce (Megatron-LM's default) every gradient bucket is reduced once the last backward is
// over; with it, the first bucket goes while the earlier blocks' backward still runs.
TEST(MegatronOverlap, GradientsAreReducedAfterBackwardUnlessOverlapped) {
  for (bool overlap : {false, true}) {
    auto s = gpt(2);
    s.cluster.gpus_per_node = 4;
    s.parallelism.data = 2;
    s.training.bucket_bytes = 1e6; // several buckets
    s.parallelism.overlap.grad_reduce = overlap;
    const auto plan = plan::make_plan(s);
    const auto& ops = plan.graph.program_of(0).ops;
    std::uint32_t last_backward = 0, first_reduction = 0;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name.ends_with(" bwd")) last_backward = i;
      if (!first_reduction && ops[i].name.starts_with("dense gradients bucket")) first_reduction = i;
    }
    ASSERT_GT(first_reduction, 0u);
    const auto& deps = ops[first_reduction].deps;
    EXPECT_EQ(*std::max_element(deps.begin(), deps.end()) >= last_backward, !overlap);
  }
}

// overlap-param-gather: the distributed optimizer's updated weights are gathered unit by unit before their first
// forward, not after the step; the bytes are the same.
TEST(MegatronOverlap, ParameterGathersMoveAheadOfTheirForward) {
  auto s = gpt(2);
  s.cluster.gpus_per_node = 4;
  s.parallelism.data = 2;
  s.training.zero_stage = 1;
  const auto gathered = [](const plan::Plan& p) {
    double bytes = 0;
    for (const auto& op : p.graph.program_of(0).ops)
      if (op.name.starts_with("allgather")) bytes += std::get<graph::Collective>(op.body).bytes;
    return bytes;
  };
  const auto after_step = plan::make_plan(s);
  s.parallelism.overlap.grad_reduce = s.parallelism.overlap.param_gather = true;
  const auto ahead = plan::make_plan(s);
  EXPECT_NEAR(gathered(ahead), gathered(after_step), 1e-6 * gathered(after_step));
  const auto& ops = ahead.graph.program_of(0).ops;
  EXPECT_TRUE(ops.front().name.starts_with("allgather unit 0"));
  const auto* first_forward = find(ahead.graph.program_of(0), "embed fwd");
  ASSERT_NE(first_forward, nullptr);
  EXPECT_EQ(first_forward->deps.front(), 0u);
}

// The vocabulary-parallel loss: the logits' maximum, then the predicted logit and the sum of exponentials, each fp32
// per token: 3 x 4 bytes x 4 x 128 tokens in 2 all-reduces of 3072 bytes each.
TEST(MegatronCollectives, VocabularyParallelLossAllReducesFp32PerToken) {
  const auto plan = plan::make_plan(gpt(2));
  int calls = 0;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (op.name.starts_with("loss fwd tp")) {
      ++calls;
      EXPECT_EQ(std::get<graph::Collective>(op.body).bytes, 3 * 4 * 4 * 128 / 2.0);
    }
  EXPECT_EQ(calls, 2);
}

// finalize_model_grads: the first and last stage all-reduce the tied word embedding's gradient, V h / t values in fp32
// (GPT's 50257 x 768 over t = 2), then, where gradients are clipped, every rank of the model copy all-reduces their
// norm, one fp32.
TEST(MegatronCollectives, TiedEmbeddingAndGradientNormAfterBackward) {
  auto s = gpt(2, 2);
  s.training.clip_gradients = true; // Megatron-LM's --clip-grad 1.0; without clipping there is no norm to reduce
  const auto plan = plan::make_plan(s);
  const auto& program = plan.graph.program_of(0);
  const auto* embedding = find(program, "allreduce tied embedding gradients");
  ASSERT_NE(embedding, nullptr);
  const auto& c = std::get<graph::Collective>(embedding->body);
  EXPECT_EQ(c.bytes, 50257.0 * 768 / 2 * 4);
  EXPECT_EQ(plan.graph.groups[c.group], (std::vector<int>{0, 2}));
  const auto* norm = find(program, "allreduce gradient norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(std::get<graph::Collective>(norm->body).bytes, 4);
  EXPECT_EQ(plan.graph.groups[std::get<graph::Collective>(norm->body).group], (std::vector<int>{0, 1, 2, 3}));
  s.training.clip_gradients = false;
  EXPECT_EQ(find(plan::make_plan(s).graph.program_of(0), "allreduce gradient norm"), nullptr);
}

// fp8 training: Transformer Engine's GEMMs run in fp8, but what crosses the wire between ranks is bf16.
TEST(MegatronCollectives, Fp8ExchangesBf16Activations) {
  auto s = gpt(2);
  const auto bytes = [](const scenario::Scenario& scenario) {
    const auto plan = plan::make_plan(scenario);
    const auto* op = find(plan.graph.program_of(0), "layers.0.mlp.up fwd tp all-gather");
    return op ? std::get<graph::Collective>(op->body).bytes : 0.0;
  };
  const double bf16 = bytes(s);
  s.model.precision = Precision::fp8;
  s.gpu.peak_flops[Precision::fp8] = 20e12;
  s.gpu.gemm_efficiency[Precision::fp8] = 0.5;
  EXPECT_EQ(bytes(s), bf16);
  EXPECT_EQ(bf16, 4 * 128 * 768 * 2.0);
}

// GPT-3 125M at `sequence` tokens over `context` ranks of context parallelism (no tensor parallelism).
scenario::Scenario long_gpt(int context, std::int64_t sequence, scenario::ContextComm comm) {
  auto s = gpt(1);
  s.cluster.gpus_per_node = context;
  s.model.transformer->sequence = sequence;
  s.model.workload = models::transformer(*s.model.transformer);
  s.parallelism.sequence_parallel = false;
  s.parallelism.context = context;
  s.parallelism.context_comm = comm;
  return s;
}

// Ring attention: each layer's forward all-gathers the sequence's K and V over the context group, 2 x s x h values
// per sample (GPT's K and V heads are its 12 x 64 = 768 query features), in bf16: 2 x 128 x 768 x 4 samples x 2 B;
// each rank sends (cp - 1)/cp of it. Backward moves K and V again and their gradients back. Every op of a rank
// computes its s / cp tokens: the QKV projection's GEMM has m = 64 rows a sample.
TEST(ContextParallel, RingPassesKeysAndValuesAroundTheGroup) {
  const auto plan = plan::make_plan(long_gpt(2, 128, scenario::ContextComm::p2p));
  const auto& program = plan.graph.program_of(0);
  const auto* forward = find(program, "layers.0.attn.core fwd cp all-gather (overlapped)");
  ASSERT_NE(forward, nullptr);
  const double kv = 2.0 * 128 * 768 * 4 * 2;
  EXPECT_EQ(std::get<graph::Collective>(forward->body).bytes, kv);
  EXPECT_EQ(plan.graph.groups[std::get<graph::Collective>(forward->body).group], (std::vector<int>{0, 1}));
  ASSERT_NE(find(program, "layers.0.attn.core bwd cp all-gather (overlapped)"), nullptr);
  const auto* back = find(program, "layers.0.attn.core bwd cp reduce-scatter (overlapped)");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(std::get<graph::Collective>(back->body).bytes, kv);
  // The tensor-parallel-free ops see half the tokens: the loss's and the embedding's activations are halved.
  EXPECT_EQ(plan.parallel.context, 2);
}

// With 2048-token sequences the attention blocks (4 s^2 h FLOPs a sample, halved per rank) outlast the K/V exchange
// (25 MB at 100 GB/s): ring attention's communication is hidden, none of it exposed.
TEST(ContextParallel, RingAttentionHidesItsExchangeBehindTheBlocks) {
  const auto r = simulate(long_gpt(2, 2048, scenario::ContextComm::p2p)).result;
  EXPECT_GT(r.communication_seconds, 0);
  EXPECT_NEAR(r.breakdown.exposed_tensor, 0, 1e-9);
}

// DeepSpeed-Ulysses: before the core an all-to-all of this rank's Q, K and V (3 x 768 features x 64 tokens x 4
// samples x 2 B), after it one of the output (768 x 64 x 4 x 2 B); the reverse in backward.
TEST(ContextParallel, UlyssesAllToAllsAroundTheCore) {
  const auto plan = plan::make_plan(long_gpt(2, 128, scenario::ContextComm::a2a));
  const auto& program = plan.graph.program_of(0);
  const auto* qkv = find(program, "layers.0.attn.core fwd cp all-to-all q k v");
  const auto* out = find(program, "layers.0.attn.core fwd cp all-to-all output");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(std::get<graph::Collective>(qkv->body).bytes, 3.0 * 768 * 64 * 4 * 2);
  EXPECT_EQ(std::get<graph::Collective>(out->body).bytes, 768.0 * 64 * 4 * 2);
  ASSERT_NE(find(program, "layers.0.attn.core bwd cp all-to-all output gradient"), nullptr);
}

// Context parallelism divides each rank's work by the context size: the QKV projection's and the attention core's
// forward FLOPs (the kernels', softmax included) on a rank are half those of plain data parallelism at the same
// micro-batch (the core in the two pieces its exchange overlaps).
TEST(ContextParallel, HalvesEachRanksWork) {
  auto s = long_gpt(2, 128, scenario::ContextComm::p2p);
  const auto split = plan::make_plan(s);
  s.parallelism.context = 1;
  s.parallelism.data = 2;
  const auto whole = plan::make_plan(s);
  const auto flops = [](const plan::Plan& p, const std::string& name) {
    double sum = 0;
    for (const auto& op : p.graph.program_of(0).ops)
      if (const auto* c = std::get_if<graph::Compute>(&op.body); c && op.name == name) sum += c->flops;
    return sum;
  };
  for (const std::string name : {"layers.0.attn.qkv fwd", "layers.0.attn.core fwd"}) {
    EXPECT_GT(flops(whole, name), 0) << name;
    EXPECT_NEAR(flops(split, name), flops(whole, name) / 2, 1e-9 * flops(whole, name)) << name;
  }
}

} // namespace
} // namespace dtsim
