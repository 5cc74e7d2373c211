// The kernels a framework runs for memory-bound ops and once per iteration (sim/plan/op_cost.cpp), their bytes counted
// by hand; and a host-bound iteration of tiny kernels, whose time is the host's cost to issue them.
#include "calibration/cost_model.hpp"
#include "calibration/profile.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

namespace dtsim::plan {
namespace {

using calibration::Precision;
using models::MemoryOp;

calibration::Framework preset(const char* name) {
  return *calibration::find_framework(name);
}

CostContext bf16(const char* framework, std::int64_t batch = 1) {
  return {batch, Precision::bf16, scenario::AttentionKernel::flash, scenario::Recompute::none, preset(framework)};
}

// A memory-bound op of `elements` outputs (and inputs: the loss reads `elements` logits) with no parameters.
models::Layer memory_op(MemoryOp op, std::int64_t elements) {
  models::Layer l;
  l.name = "op";
  l.kind = op == MemoryOp::cross_entropy ? models::LayerKind::softmax : models::LayerKind::elementwise;
  if (op == MemoryOp::layer_norm) l.kind = models::LayerKind::normalization;
  l.memory_op = op;
  l.input_elements = elements;
  l.output_elements = op == MemoryOp::cross_entropy ? 1 : elements;
  return l;
}

constexpr std::int64_t kN = 1'000'000;

TEST(FrameworkKernels, LayerNormReadsTheGradientAndTheInputOnceOrTwice) {
  const auto norm = memory_op(MemoryOp::layer_norm, kN);
  // Forward: read x, write y, 2 B each.
  EXPECT_DOUBLE_EQ(forward_cost(norm, bf16("megatron")).bytes(), 2.0 * 2 * kN);
  // Backward, Transformer Engine: read dy and x once, write dx: 3 x 2 B, in two launches (the weights' finish).
  const auto fused = backward_cost(norm, bf16("megatron"));
  EXPECT_DOUBLE_EQ(fused.bytes(), 3.0 * 2 * kN);
  EXPECT_EQ(fused.kernels.front().kernels, 2);
  // torch.nn.LayerNorm: the input gradient (read dy, x; write dx) and GammaBetaBackward (read dy, x again): 5 x 2 B.
  EXPECT_DOUBLE_EQ(backward_cost(norm, bf16("pytorch-ddp")).bytes(), 5.0 * 2 * kN);
}

// A norm and a gated activation at the share of the streaming rate each framework's kernel was measured at
// (Liger-Kernel's suite on an H100: torch.nn.LayerNorm forward, 4096 x 8192 fp32, 152.7 us), by hand: the bytes over
// the H100 profile's streaming rate (3.35 TB/s x 0.90) over the share, plus one launch overhead (1.3 us) a kernel.
TEST(FrameworkKernels, RowKernelsRunAtTheirMeasuredShareOfTheStream) {
  const auto gpu = *calibration::find_profile("h100-sxm");
  const double stream = 3.35e12 * 0.90;
  const auto norm = memory_op(MemoryOp::layer_norm, 4096LL * 8192);
  CostContext fp32 = bf16("pytorch-ddp");
  fp32.precision = Precision::fp32;
  const auto eager = forward_cost(norm, fp32).kernels.front();
  EXPECT_DOUBLE_EQ(eager.stream_share, 0.605);
  const double by_hand = 2.0 * 4 * 4096 * 8192 / (stream * 0.605) + 1.3e-6;
  EXPECT_NEAR(calibration::kernel_time(gpu, eager), by_hand, 1e-12);
  EXPECT_NEAR(by_hand, 152.67e-6, 0.03 * 152.67e-6); // within 3% of the measurement it was taken from
  // Backward: two launches at the backward share.
  const auto eager_bwd = backward_cost(norm, fp32).kernels.front();
  EXPECT_NEAR(calibration::kernel_time(gpu, eager_bwd), 5.0 * 4 * 4096 * 8192 / (stream * 0.672) + 2 * 1.3e-6, 1e-12);
  // Transformer Engine's norm (no measurement of it): at the streaming rate.
  const auto te = forward_cost(norm, bf16("megatron")).kernels.front();
  EXPECT_DOUBLE_EQ(te.stream_share, 1);
  EXPECT_NEAR(calibration::kernel_time(gpu, te), 2.0 * 2 * 4096 * 8192 / stream + 1.3e-6, 1e-12);
  // Gated activations: Megatron's fused kernel and eager PyTorch's two, each at its own share; a plain residual add
  // streams.
  const auto act = memory_op(MemoryOp::gated_activation, kN);
  EXPECT_DOUBLE_EQ(forward_cost(act, bf16("megatron")).kernels.front().stream_share, 0.615);
  EXPECT_DOUBLE_EQ(backward_cost(act, bf16("pytorch-ddp")).kernels.front().stream_share, 0.590);
  EXPECT_DOUBLE_EQ(
      forward_cost(memory_op(MemoryOp::residual_add, kN), bf16("pytorch-ddp")).kernels.front().stream_share, 1);
}

TEST(FrameworkKernels, DropoutAndTheResidualAdd) {
  const auto add = memory_op(MemoryOp::dropout_residual_add, kN);
  // Megatron's bias-dropout-add: read the branch and the residual, write the sum and the 1-byte mask; one kernel.
  const auto fused = forward_cost(add, bf16("megatron"));
  EXPECT_DOUBLE_EQ(fused.bytes(), (3.0 * 2 + 1) * kN);
  EXPECT_EQ(fused.kernels.front().kernels, 1);
  // Eager: dropout (read, write, mask) then add (read 2, write 1): two kernels.
  const auto eager = forward_cost(add, bf16("pytorch-ddp"));
  EXPECT_DOUBLE_EQ(eager.bytes(), (2.0 * 2 + 1 + 3.0 * 2) * kN);
  EXPECT_EQ(eager.kernels.front().kernels, 2);
  // Backward, either way: dropout's (read dy and the mask, write dx) and autograd adding the residual stream's two
  // gradients where it forks (read 2, write 1).
  EXPECT_DOUBLE_EQ(backward_cost(add, bf16("megatron")).bytes(), (2.0 * 2 + 1 + 3.0 * 2) * kN);
  // Without dropout: the add, and the gradients' add in backward.
  const auto plain = memory_op(MemoryOp::residual_add, kN);
  EXPECT_DOUBLE_EQ(forward_cost(plain, bf16("megatron")).bytes(), 3.0 * 2 * kN);
  EXPECT_DOUBLE_EQ(backward_cost(plain, bf16("megatron")).bytes(), 3.0 * 2 * kN);
}

TEST(FrameworkKernels, SwiGluFusedOrNot) {
  const auto act = memory_op(MemoryOp::gated_activation, kN);
  // Fused: read gate and up, write the product (3 x 2 B); backward read dy, gate, up, write dgate, dup (5 x 2 B).
  EXPECT_DOUBLE_EQ(forward_cost(act, bf16("megatron")).bytes(), 3.0 * 2 * kN);
  EXPECT_DOUBLE_EQ(backward_cost(act, bf16("megatron")).bytes(), 5.0 * 2 * kN);
  // Eager: silu(gate) (R 1 W 1) and the product (R 2 W 1); backward three kernels of R 2 W 1.
  EXPECT_DOUBLE_EQ(forward_cost(act, bf16("pytorch-ddp")).bytes(), 5.0 * 2 * kN);
  EXPECT_DOUBLE_EQ(backward_cost(act, bf16("pytorch-ddp")).bytes(), 9.0 * 2 * kN);
}

TEST(FrameworkKernels, CrossEntropyOverTheLogits) {
  const auto loss = memory_op(MemoryOp::cross_entropy, kN);
  // Megatron's vocab-parallel cross-entropy upcasts bf16 logits: cast R 2 W 4, max R 4, subtract R 4 W 4, exp R 4 W 4,
  // sum R 4, divide R 4 W 4 = 38 B a logit in 6 kernels; backward multiply R 4 W 4 and cast back R 4 W 2 = 14 B in 2.
  const auto forward = forward_cost(loss, bf16("megatron"));
  EXPECT_DOUBLE_EQ(forward.bytes(), 38.0 * kN);
  EXPECT_EQ(forward.kernels.front().kernels, 6);
  EXPECT_DOUBLE_EQ(backward_cost(loss, bf16("megatron")).bytes(), 14.0 * kN);
  // PyTorch's F.cross_entropy in the logits' precision: log_softmax R 1 W 1; backward a zeroed gradient W 1 and
  // log_softmax_backward R 2 W 1.
  EXPECT_DOUBLE_EQ(forward_cost(loss, bf16("pytorch-ddp")).bytes(), 2.0 * 2 * kN);
  EXPECT_DOUBLE_EQ(backward_cost(loss, bf16("pytorch-ddp")).bytes(), 4.0 * 2 * kN);
}

// A linear layer Y[m x n] = X W, its weight n x k, one sample.
models::Layer linear(std::int64_t m, std::int64_t n, std::int64_t k) {
  models::Layer fc;
  fc.name = "fc";
  fc.kind = models::LayerKind::matmul;
  fc.gemm = {m, n, k, 1};
  fc.forward_flops = fc.gemm.flops();
  fc.backward_flops = 2 * fc.forward_flops;
  fc.parameters = n * k;
  fc.input_elements = m * k;
  fc.output_elements = m * n;
  return fc;
}

TEST(FrameworkKernels, ALinearLayersBiasGradientIsAReduction) {
  // Y[m x n] = X W + b at m = 4 x 512 rows, n = 1024, k = 256: backward adds a kernel reading dY (m n x 2 B).
  models::Layer fc = linear(512, 1024, 256);
  fc.parameters += 1024;
  fc.bias = true;
  const auto backward = backward_cost(fc, bf16("megatron", 4));
  ASSERT_EQ(backward.kernels.size(), 3u); // dgrad, wgrad, bias grad
  EXPECT_EQ(backward.kernels.back().name, "bias grad");
  EXPECT_DOUBLE_EQ(backward.kernels.back().bytes, 4.0 * 512 * 1024 * 2);
  fc.bias = false;
  EXPECT_EQ(backward_cost(fc, bf16("megatron", 4)).kernels.size(), 2u);
  // fp8 (Transformer Engine): the input is cast to fp8 with its transpose first, read 2 write 1 + 1 bytes an element.
  auto fp8 = bf16("megatron", 4);
  fp8.precision = Precision::fp8;
  const auto forward = forward_cost(fc, fp8);
  ASSERT_EQ(forward.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(forward.kernels.front().bytes, 4.0 * 4 * 512 * 256);
  EXPECT_EQ(forward.kernels.front().kernels, 1);
  // Tensorwise scaling reads the input once more for its amax (R 2) and sets the scale in a kernel of its own: 6 bytes
  // an element in 3 kernels; backward casts dY (m x n) the same way.
  fp8.fp8_recipe = scenario::Fp8Recipe::tensorwise;
  const auto current = forward_cost(fc, fp8);
  EXPECT_DOUBLE_EQ(current.kernels.front().bytes, 4.0 * 6 * 512 * 256);
  EXPECT_EQ(current.kernels.front().kernels, 3);
  EXPECT_DOUBLE_EQ(backward_cost(fc, fp8).kernels.front().bytes, 4.0 * 6 * 512 * 1024);
}

// Beside a tensor-parallel exchange Transformer Engine runs a GEMM in chunks of rows: 4 chunks of Llama 3 70B's
// qkv projection at TP 4 (4096 x 2560 x 8192 bf16) do the same FLOPs, read the weight 4 times (3 x 8192 x 2560 x 2 B
// more) and launch 4 kernels; on the H100 a chunk of 1024 rows leaves more of the 132 SMs idle in its last wave than
// the whole GEMM does (wave quantization), so the chunks take longer.
TEST(FrameworkKernels, AnOverlappedGemmRunsInChunksOfRows) {
  const auto qkv = linear(4096, 2560, 8192);
  const auto c = bf16("megatron");
  const auto whole = forward_cost(qkv, c);
  const auto chunks = split_gemm_rows(whole, kForwardGemm, 4, c);
  const auto& w = whole.kernels.front();
  const auto& k = chunks.kernels.front();
  EXPECT_EQ(k.kernels, 4);
  ASSERT_EQ(k.gemms.size(), 4u);
  EXPECT_DOUBLE_EQ(k.gemms.front().m, 1024);
  EXPECT_DOUBLE_EQ(k.flops, w.flops);
  EXPECT_DOUBLE_EQ(k.bytes, w.bytes + 3.0 * 8192 * 2560 * 2);
  EXPECT_DOUBLE_EQ(k.host_seconds, w.host_seconds + 3 * c.framework.host.launch);
  const auto gpu = *calibration::find_profile("h100-sxm");
  EXPECT_GT(calibration::kernel_time(gpu, k), 1.1 * calibration::kernel_time(gpu, w));
  // Another kernel's name, or one chunk, leaves the cost as it was.
  EXPECT_EQ(split_gemm_rows(whole, kDataGradientGemm, 4, c).kernels.front().kernels, 1);
  EXPECT_EQ(split_gemm_rows(whole, kForwardGemm, 1, c).kernels.front().kernels, 1);
}

// The shipped tensorwise scenario moves 6 bytes in every activation and gradient cast where delayed scaling moves 4
// (the amax read, R 2), in three launches where delayed takes one: over rank 0's iteration, exactly 1.5 times the
// bytes and 3 times the launches of the same step under delayed scaling.
TEST(FrameworkKernels, TensorwiseScalingReadsEachCastTensorOnceMore) {
  const auto path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama3.1-8b-fp8-tensorwise-h100x8.json";
  const auto casts = [](const scenario::Scenario& s) {
    double bytes = 0;
    int launches = 0;
    for (const auto& k : simulate(s).result.kernels)
      if (k.name == "fp8 cast-transpose" || k.name == "fp8 cast-transpose bwd") {
        bytes += k.bytes * k.launches;
        launches += k.launches;
      }
    return std::pair{bytes, launches};
  };
  const auto tensorwise = casts(scenario::load_scenario(path));
  const auto delayed = casts(scenario::load_scenario(path, {{"model.fp8_recipe", "delayed"}}));
  ASSERT_GT(delayed.first, 0);
  EXPECT_NEAR(tensorwise.first, 1.5 * delayed.first, 1e-9 * delayed.first);
  EXPECT_EQ(tensorwise.second, 3 * delayed.second);
}

// The hand scenario (round GPU) with a framework and an optimizer: the per-iteration passes over 1e6 parameters in 2
// tensors.
scenario::Scenario passes_scenario(const char* framework, Precision p, scenario::Optimizer optimizer) {
  auto s = test::hand_scenario({}, 1);
  s.framework = preset(framework);
  s.training.framework = framework;
  s.model.precision = p;
  s.training.optimizer = optimizer;
  return s;
}

double bytes_per_parameter(const scenario::Scenario& s) {
  return iteration_passes(1e6, 2, s).bytes() / 1e6;
}

TEST(FrameworkKernels, OptimizerAndIterationPassesPerParameter) {
  // Fused Adam with bf16 weights (DeepSpeed): read the 2-byte gradient, read and write the fp32 master (8), both fp32
  // moments (16), write the bf16 working copy (2): 28 B.
  EXPECT_DOUBLE_EQ(bytes_per_parameter(passes_scenario("deepspeed", Precision::bf16, scenario::Optimizer::adam)), 28);
  // Megatron adds zeroing its fp32 gradient buffer (W 4) and the gradient norm for clipping (R 4): 36 B.
  EXPECT_DOUBLE_EQ(bytes_per_parameter(passes_scenario("megatron", Precision::bf16, scenario::Optimizer::adam)), 36);
  // PyTorch's foreach AdamW under autocast (fp32 weights and gradients): the loss scaler's unscale (R 4 W 4), then
  // weight decay (R W p: 8), lerp m (R m g W m: 12), v x beta2 (8), addcmul v (12), sqrt (8), divide (8), add eps (8),
  // addcdiv p (R p m t W p: 16): 8 + 80 = 88 B.
  auto eager = passes_scenario("pytorch-ddp", Precision::amp, scenario::Optimizer::adam);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(eager), 88);
  EXPECT_EQ(iteration_passes(1e6, 2, eager).kernels.size(), 9u);
  // Clipping with torch.nn.utils.clip_grad_norm_: the norm (R 4) and the multiply (R 4 W 4): 12 more.
  eager.training.clip_gradients = true;
  EXPECT_DOUBLE_EQ(bytes_per_parameter(eager), 100);
}

TEST(FrameworkKernels, Fp8BookkeepingOncePerIteration) {
  // Megatron in fp8 over 1e6 parameters in 2 tensors: the zeroed fp32 gradients (4), the norm (4), the weights' fp8
  // cast-transpose (R 2 W 1 + 1: 4), fused Adam on bf16-like states (28): 40 B a parameter; and the amax histories,
  // after forward and after backward, of 3 tensors per GEMM (one GEMM per parameter tensor), 1024 fp32 amaxes each,
  // read and written: 2 x 2 x 1024 x 4 x 3 x 2 bytes in 2 launches.
  const auto s = passes_scenario("megatron", Precision::fp8, scenario::Optimizer::adam);
  const auto passes = iteration_passes(1e6, 2, s);
  const auto& amax = passes.kernels.at(3);
  EXPECT_EQ(amax.name, "fp8 amax history and scale update");
  EXPECT_EQ(amax.kernels, 2);
  EXPECT_DOUBLE_EQ(amax.bytes, 2.0 * 2 * 1024 * 4 * 3 * 2);
  EXPECT_DOUBLE_EQ(passes.bytes() - amax.bytes, 40e6);
  // Tensorwise scaling keeps no history: each weight's amax is read (R 2) before its cast, 42 B a parameter, and its
  // amax and scale kernels are two launches a tensor.
  auto tensorwise = s;
  tensorwise.model.fp8_recipe = scenario::Fp8Recipe::tensorwise;
  const auto current = iteration_passes(1e6, 2, tensorwise);
  EXPECT_DOUBLE_EQ(current.bytes(), 42e6);
  EXPECT_EQ(current.kernels.at(2).kernels, 4);
}

TEST(FrameworkKernels, MultiTensorLaunchesFollowTheChunkAndTensorLimits) {
  const auto s = passes_scenario("deepspeed", Precision::bf16, scenario::Optimizer::adam);
  // 1e6 parameters in 2 tensors: one launch. 100e6 in 2: ceil(100e6 / (320 x 65,536)) = 5. 1e6 in 100 tensors:
  // ceil(100 / 36) = 3.
  EXPECT_EQ(iteration_passes(1e6, 2, s).kernels.back().kernels, 1);
  EXPECT_EQ(iteration_passes(100e6, 2, s).kernels.back().kernels, 5);
  EXPECT_EQ(iteration_passes(1e6, 100, s).kernels.back().kernels, 3);
}

// 200 tiny elementwise ops at batch 1 on a GPU that runs each in 1 us: the host needs 3.6 us of Python dispatch and
// 2.6 us of launch for each forward kernel, 1 us of C++ dispatch and 2.6 us for each backward one, so it cannot keep
// up and the iteration is the host's: 200 x 6.2 + 200 x 3.6 us, plus PyTorch's foreach momentum SGD (4 passes of one
// launch each, 6.2 us of host time apiece), plus the last kernel's 1 us on the GPU.
TEST(FrameworkKernels, TinyKernelsAreBoundByTheHostIssuingThem) {
  std::vector<models::Layer> layers;
  for (int i = 0; i < 200; ++i)
    layers.push_back({"op", models::LayerKind::elementwise, 0, 0, 0, 1, 1});
  auto s = test::hand_scenario(std::move(layers), 1);
  s.model.batch_per_gpu = 1;
  s.gpu.launch_overhead = 1e-6;
  s.framework = preset("pytorch-ddp");
  const double expected = 200 * (3.6e-6 + 2.6e-6) + 200 * (1.0e-6 + 2.6e-6) + 4 * (3.6e-6 + 2.6e-6) + 1e-6;
  const auto r = simulate(s).result;
  EXPECT_NEAR(r.iteration.mean, expected, 1e-10);
  // The kernel table: 200 launches of each, and the GPU idle for the rest of the host's time.
  ASSERT_GE(r.kernels.size(), 2u);
  double gpu = 0;
  for (const auto& k : r.kernels) {
    gpu += k.seconds;
    if (k.name == "elementwise" || k.name == "elementwise bwd") {
      EXPECT_EQ(k.launches, 200) << k.name;
      EXPECT_EQ(k.bound, "launch") << k.name;
    }
  }
  EXPECT_NEAR(gpu, 404e-6, 1e-8); // 404 kernels of 1 us (and a few bytes each)
  EXPECT_NEAR(r.host_wait_seconds, expected - 404e-6, 1e-8);
}

// Megatron-LM's fused scale-mask-softmax takes up to 2048 keys in 2021 and 4096 in 2022 (fused_softmax.py); past
// that the scores go through PyTorch's softmax: three kernels each reading and writing them. An attention core of
// 16 heads of 64 at sequence 4096, micro-batch 1: 16 x 4096^2 = 268.4M scores of 2 bytes.
TEST(FrameworkKernels, AVersionsFusedSoftmaxStopsAtItsKeyLimit) {
  models::Layer core;
  core.name = "core";
  core.kind = models::LayerKind::attention;
  core.attention = {4096, 16, 64, true, false};
  core.input_elements = 3 * 4096 * 1024;
  core.output_elements = 4096 * 1024;
  core.block = 0;
  const double scores = 16.0 * 4096 * 4096;
  const auto softmax_bytes = [&](const char* framework) {
    CostContext c{1, Precision::bf16, scenario::AttentionKernel::plain, scenario::Recompute::none, preset(framework)};
    return forward_cost(core, c).kernels.at(1).bytes;
  };
  EXPECT_DOUBLE_EQ(softmax_bytes("megatron-2022"), 2 * 2 * scores);     // one fused kernel: R 2 W 2
  EXPECT_DOUBLE_EQ(softmax_bytes("megatron-2021"), 3 * 2 * 2 * scores); // scale, mask, softmax
  core.attention.sequence = 2048;
  EXPECT_DOUBLE_EQ(softmax_bytes("megatron-2021"), 2 * 2 * (scores / 4));
}

// The precision a version reduces gradients in: Megatron-LM keeps fp16 gradients fp16 and reduces bf16 ones in fp32,
// FSDP's DEFAULT mixed precision reduces everything in fp32, PyTorch DDP as trained. Megatron-LM 2022 and Megatron-Core
// zero their main_grad buffer every iteration; 2021's only when fp32 accumulation forces the buffer on.
TEST(FrameworkKernels, EachVersionReducesGradientsInItsOwnPrecision) {
  EXPECT_DOUBLE_EQ(preset("megatron-2021").reduced_gradient_bytes(Precision::fp16), 2);
  EXPECT_DOUBLE_EQ(preset("megatron-2021").reduced_gradient_bytes(Precision::bf16), 4);
  EXPECT_DOUBLE_EQ(preset("megatron-core").reduced_gradient_bytes(Precision::fp8), 4);
  EXPECT_DOUBLE_EQ(preset("pytorch-fsdp-2023").reduced_gradient_bytes(Precision::bf16), 4);
  EXPECT_DOUBLE_EQ(preset("pytorch-ddp").reduced_gradient_bytes(Precision::bf16), 2);
  EXPECT_DOUBLE_EQ(preset("pytorch-ddp").reduced_gradient_bytes(Precision::amp), 4);
  EXPECT_DOUBLE_EQ(preset("megatron-2021").gradient_buffer_bytes(Precision::fp16), 0);
  EXPECT_DOUBLE_EQ(preset("megatron-2021").gradient_buffer_bytes(Precision::bf16), 4);
  EXPECT_DOUBLE_EQ(preset("megatron-2022").gradient_buffer_bytes(Precision::fp16), 2);
  // Fused Adam in fp16 over 1e6 parameters in 2 tensors with Megatron-LM 2021: the loss scaler's unscale (R W 2 B),
  // the norm (R 2), the step (28): 34 B a parameter, no buffer to zero; 2022 adds zeroing its fp16 buffer (W 2).
  EXPECT_DOUBLE_EQ(bytes_per_parameter(passes_scenario("megatron-2021", Precision::fp16, scenario::Optimizer::adam)),
                   34);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(passes_scenario("megatron-2022", Precision::fp16, scenario::Optimizer::adam)),
                   36);
}

} // namespace
} // namespace dtsim::plan
