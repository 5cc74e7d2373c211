#pragma once
// The made-up GPU of the end-to-end tests and the scenario around it: round numbers, so that every op time can be
// written down by hand.
#include "calibration/profile.hpp"
#include "models/transformer.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>
#include <utility>
#include <vector>

namespace dtsim::test {

// 10 TFLOP/s at 50% for GEMMs, 1 TB/s at 100% for memory-bound kernels, 10 us per launch.
inline calibration::GpuProfile round_gpu() {
  using calibration::Precision;
  calibration::GpuProfile g;
  g.name = "round";
  g.display_name = "round-number GPU";
  g.peak_flops = {{Precision::fp32, 10e12}};
  g.gemm_efficiency = {{Precision::fp32, 0.5}};
  g.conv_efficiency = {{Precision::fp32, 0.5}};
  g.memory_bytes = 64e9;
  g.memory_bandwidth = 1e12;
  g.memory_efficiency = 1.0;
  g.launch_overhead = 10e-6;
  return g;
}

// `layers` at batch 10 in fp32 with momentum SGD on `nodes` nodes of `gpus_per_node` round GPUs: free PCIe and
// intra-node hops, 1 GB/s NICs with 1 us latency on a zero-latency switch (a ring step's alpha is 2 us), ring
// all-reduce, CM02 without cross traffic (the alpha-beta model), 3 measured iterations after 1 warm-up, every GPU as
// fast as the profile.
inline scenario::Scenario hand_scenario(std::vector<models::Layer> layers, int nodes, int gpus_per_node = 1) {
  scenario::Scenario s;
  s.name = "hand";
  s.model.workload.name = "hand";
  s.model.workload.sample_unit = "samples";
  s.model.workload.layers = std::move(layers);
  s.model.batch_per_gpu = 10;
  s.model.precision = calibration::Precision::fp32;
  s.gpu = round_gpu();
  s.cluster.gpu = "round";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = gpus_per_node;
  s.cluster.intra_kind = topologies::IntraNodeKind::pcie;
  s.cluster.intra = {1e15, 0};
  s.cluster.pcie = {1e15, 0};
  s.cluster.nic = {1e9, 1e-6};
  s.cluster.switch_latency = 0;
  s.training.optimizer = scenario::Optimizer::momentum;
  s.training.algorithm = collectives::Algorithm::ring;
  s.run.iterations = 3;
  s.run.warmup_iterations = 1;
  s.network.model = scenario::NetworkModel::cm02;
  s.network.cross_traffic = false;
  s.stragglers.gpu_speed_sigma = 0;    // identical GPUs: every op time written down by hand
  s.stragglers.kernel_noise_sigma = 0; // and every kernel at its priced time
  return s;
}

// A layer of 10 ms forward and 20 ms backward at batch 10 on the round GPU (1e11 FLOP at 5 TFLOP/s, plus a 10 us
// launch), with few parameters so that the optimizer step is negligible.
inline models::Layer slab(int i) {
  return {std::string("slab") + std::to_string(i), models::LayerKind::matmul, 5e9, 10e9, 1000, 1000, 1000};
}

// `layers` slabs over a pipeline of `stages` single-GPU nodes with free communication.
inline scenario::Scenario pipeline_scenario(int layers, int stages, int micro_batches,
                                            scenario::PipelineSchedule schedule, int chunks = 1) {
  std::vector<models::Layer> slabs;
  for (int i = 0; i < layers; ++i)
    slabs.push_back(slab(i));
  auto s = hand_scenario(std::move(slabs), stages);
  s.cluster.nic = {1e18, 0};
  s.training.optimizer = scenario::Optimizer::sgd;
  s.parallelism.pipeline = stages;
  s.parallelism.data = 1;
  s.parallelism.micro_batches = micro_batches;
  s.parallelism.schedule = schedule;
  s.parallelism.virtual_stages = chunks;
  return s;
}

// A two-block GPT-3 125M (hidden 768) at micro-batch 4 x 128 tokens in bf16 (10 TFLOP/s at 50%, plain attention) on
// one node of `gpus` round GPUs, tensor-parallel over `tensor` of them.
inline scenario::Scenario small_gpt(int gpus, int tensor, bool sequence_parallel) {
  auto spec = models::transformer_spec("gpt3-125m");
  spec.layers = 2;
  spec.sequence = 128;
  auto s = hand_scenario({}, 1, gpus);
  s.model.transformer = spec;
  s.model.workload = models::transformer(spec);
  s.model.batch_per_gpu = 4;
  s.model.precision = calibration::Precision::bf16;
  s.gpu.peak_flops[calibration::Precision::bf16] = 10e12;
  s.gpu.gemm_efficiency[calibration::Precision::bf16] = 0.5;
  s.model.attention = scenario::AttentionKernel::plain;
  s.parallelism.tensor = tensor;
  s.parallelism.data = 1;
  s.parallelism.sequence_parallel = sequence_parallel;
  // Megatron-LM's habit (what "auto" resolves to under tensor parallelism): bf16 gradients reduced in fp32. The
  // framework's kernels otherwise stay unfused, as the hand calculations of these tests count them.
  s.framework.gradient_reduce = calibration::GradientReduce::bf16_in_fp32;
  return s;
}

} // namespace dtsim::test
