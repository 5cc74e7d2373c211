// Per-GPU memory of data-parallel training, item by item:
//   weights, gradients, optimizer  model_state_bytes() per parameter (op_cost.hpp); ZeRO (Rajbhandari et al. 2020)
//                                  stage 1 divides the optimizer's (fp32 master + states) by the data-parallel
//                                  ranks, stage 2 also the gradients, stage 3 also the weights. Offloading moves the
//                                  optimizer's, and from stage 2 the gradients, to the host (ZeRO-Offload).
//   activations                    what each op keeps for backward (models::Layer::saved_elements; Korthikanti et
//                                  al. 2022: 34 s b h + 5 a s^2 b bytes per GPT layer at 16 bits without
//                                  recomputation, 34 s b h with selective recomputation or flash attention); full
//                                  recomputation keeps each block's input and, while one block is recomputed, that
//                                  block's activations
//   activation gradients           the largest op's input and output gradients, alive together in its backward
//   communication buckets          DDP's flat gradient buckets (a copy of every gradient); with ZeRO stages 1
//                                  and 2, the two reduce-scatter buckets in flight; with stage 3, which reduce-
//                                  scatters each unit's gradients once its backward is over (data_parallel.cpp),
//                                  the full gradients of the unit being reduced and of the one computing: the two
//                                  largest units' (all of them without overlap: one reduce-scatter after backward)
//   gathered weights               ZeRO-3: the full weights of the unit computing and of the one prefetched (at
//                                  most two, FSDP's limit_all_gathers): the two largest units' parameters. A unit
//                                  is a transformer block, a run of ops outside the blocks, or in a model without
//                                  blocks a layer (shard_units, data_parallel.hpp; Zhao et al. 2023, PyTorch FSDP)
#include "sim/plan/data_parallel.hpp"
#include "sim/plan/model_parallel.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/strategies/compression.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace dtsim::plan {

using calibration::Precision;

double MemoryEstimate::total() const {
  return std::accumulate(items.begin(), items.end(), 0.0, [](double s, const MemoryItem& i) { return s + i.bytes; });
}

double saved_activation_bytes(const models::Layer& layer, std::int64_t batch, Precision precision,
                              scenario::AttentionKernel attention, scenario::Recompute recompute) {
  const double e = calibration::activation_bytes(precision);
  // A linear layer keeps its GEMM's input (in fp8 under fp8 training); attention cores run in bf16 and keep theirs.
  const bool linear = layer.kind == models::LayerKind::matmul && layer.parameters > 0;
  // Under autocast (plan/op_cost.cpp) a layer norm keeps its fp32 input, the residual stream.
  const bool autocast = precision == Precision::amp;
  const bool fp32_norm = autocast && layer.memory_op == models::MemoryOp::layer_norm;
  const double saved = linear ? calibration::saved_gemm_input_bytes(precision) : fp32_norm ? 4 : e;
  double per_sample = static_cast<double>(layer.saved_elements) * saved + static_cast<double>(layer.saved_fixed_bytes);
  const bool unfused = layer.kind == models::LayerKind::attention && layer.attention.sequence > 0 &&
                       attention == scenario::AttentionKernel::plain;
  if (unfused && recompute == scenario::Recompute::none) {
    // Autocast's explicit attention keeps its fp32 probabilities (softmax's backward), dropout's mask, and the 16-bit
    // cast P V reads.
    const auto& a = layer.attention;
    const double scores =
        static_cast<double>(a.heads) * static_cast<double>(a.sequence) * static_cast<double>(a.sequence);
    per_sample += autocast ? scores * (4 + (a.dropout ? 1 : 0) + 2) : models::attention_score_bytes(a, e);
  }
  return per_sample * static_cast<double>(batch);
}

namespace {

double gib(double bytes) {
  return bytes / (1 << 30);
}

std::string_view precision_note(Precision p) {
  switch (p) {
  case Precision::amp:
    return "fp32 + the fp16 copies autocast keeps";
  case Precision::fp16:
  case Precision::bf16:
    return "16-bit";
  case Precision::fp8:
    return "bf16 + fp8 copies";
  default:
    return "fp32";
  }
}

class MemoryModel {
public:
  explicit MemoryModel(const scenario::Scenario& s) : s_(s) {}

  MemoryEstimate estimate() const {
    MemoryEstimate m;
    m.capacity = s_.gpu.memory_bytes;
    model_states(m);
    activations(m);
    buffers(m);
    return m;
  }

private:
  int ranks() const { return s_.world_size(); }
  int stage() const { return ranks() > 1 ? s_.training.zero_stage : 0; }
  double params() const { return static_cast<double>(s_.model.workload.parameter_count()); }
  double element() const { return calibration::activation_bytes(s_.model.precision); }

  std::string shard_note(int from_stage) const {
    return stage() >= from_stage ? fmt::format(", ZeRO-{} shard of {}", stage(), ranks()) : "";
  }
  double shard(int from_stage) const { return stage() >= from_stage ? 1.0 / ranks() : 1.0; }

  void model_states(MemoryEstimate& m) const {
    const ModelStateBytes b = model_state_bytes(s_.training.optimizer, s_.model.precision);
    const bool offload = s_.training.offload == scenario::Offload::optimizer;
    m.items.push_back(
        {"weights", params() * b.weights * shard(3),
         fmt::format("{} B/parameter ({}){}", b.weights, precision_note(s_.model.precision), shard_note(3))});
    MemoryItem gradients{"gradients", params() * b.gradients * shard(2),
                         fmt::format("{} B/parameter{}", b.gradients, shard_note(2))};
    const int states = static_cast<int>(b.states / 4);
    MemoryItem optimizer{"optimizer states", params() * b.optimizer() * shard(1),
                         fmt::format("{}: {} B/parameter ({}{} state{}){}", to_string(s_.training.optimizer),
                                     b.optimizer(), b.master > 0 ? "fp32 master + " : "", states,
                                     states == 1 ? "" : "s", shard_note(1))};
    (offload && stage() >= 2 ? m.host_items : m.items).push_back(std::move(gradients));
    // A parameter server runs the optimizer (Li et al. 2014): its states live there, not on the workers' GPUs.
    if (!strategies::servers_step(s_.training.strategy))
      (offload ? m.host_items : m.items).push_back(std::move(optimizer));
    // Compressors with error feedback keep what they did not send, one gradient-sized residual (Seide et al. 2014).
    const double residual = strategies::error_feedback_bytes(
        s_.training.compression, params(), calibration::gradient_bytes(s_.model.precision), s_.cluster.gpu_count());
    if (residual > 0)
      m.items.push_back({"error-feedback residual", residual,
                         fmt::format("{} compression keeps the unsent part of every gradient",
                                     strategies::to_string(s_.training.compression.kind))});
  }

  void activations(MemoryEstimate& m) const {
    const auto& layers = s_.model.workload.layers;
    const auto batch = s_.model.batch_per_gpu;
    const auto recompute = s_.training.recompute;
    const bool full = recompute == scenario::Recompute::full;
    double kept = 0;
    std::map<int, double> block_bytes; // full recomputation: what each block would keep
    std::map<int, double> block_input;
    for (const auto& l : layers) {
      const double bytes = saved_activation_bytes(l, batch, s_.model.precision, s_.model.attention,
                                                  full ? scenario::Recompute::none : recompute);
      if (full && l.block >= 0) {
        block_bytes[l.block] += bytes;
        if (!block_input.contains(l.block))
          block_input[l.block] = static_cast<double>(l.input_elements) * element() * batch;
      } else {
        kept += bytes;
      }
    }
    for (const auto& [block, input] : block_input)
      kept += input;
    const bool attention =
        std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l.kind == models::LayerKind::attention; });
    m.items.push_back({"activations", kept,
                       fmt::format("micro-batch {}{}, recompute {}", batch,
                                   attention ? fmt::format(", {} attention", to_string(s_.model.attention)) : "",
                                   to_string(recompute))});
    if (!block_bytes.empty()) {
      const double working = std::max_element(block_bytes.begin(), block_bytes.end(), [](auto& a, auto& b) {
                               return a.second < b.second;
                             })->second;
      m.items.push_back({"recomputed block", working, "one block's activations while its backward reruns it"});
    }
    double gradient = 0;
    for (const auto& l : layers) {
      double elements = static_cast<double>(l.input_elements + l.output_elements);
      if (l.kind == models::LayerKind::attention && s_.model.attention == scenario::AttentionKernel::plain)
        elements += 2 * static_cast<double>(l.attention.heads * l.attention.sequence * l.attention.sequence);
      gradient = std::max(gradient, elements * element() * batch);
    }
    m.items.push_back({"activation gradients", gradient, "the largest op's input and output gradients"});
  }

  void buffers(MemoryEstimate& m) const {
    if (ranks() == 1) return;
    const double grad = calibration::gradient_bytes(s_.model.precision);
    if (stage() == 0) {
      m.items.push_back({"gradient buckets", params() * grad, "DDP's flat copies of every gradient"});
    } else if (stage() < 3) {
      const double in_flight = std::min(params() * grad, 2 * s_.training.bucket_bytes);
      m.items.push_back({"gradient buckets", in_flight, "two reduce-scatter buckets in flight"});
    }
    if (stage() >= 3) {
      const auto units = detail::shard_units(s_.model.workload);
      std::vector<double> sizes;
      for (const auto& u : units)
        sizes.push_back(static_cast<double>(u.parameters));
      std::partial_sort(sizes.begin(), sizes.begin() + std::min<std::size_t>(2, sizes.size()), sizes.end(),
                        std::greater<>());
      const double two = (sizes.empty() ? 0 : sizes[0]) + (sizes.size() > 1 ? sizes[1] : 0);
      const bool blocks = std::any_of(s_.model.workload.layers.begin(), s_.model.workload.layers.end(),
                                      [](const models::Layer& l) { return l.block >= 0; });
      const std::string_view unit = blocks ? "unit" : "layer"; // a unit: a block, or a run of ops outside them
      if (s_.training.overlap)
        m.items.push_back({"gradient buckets", two * grad,
                           fmt::format("the two largest {0}s' full gradients (ZeRO-3: reduce-scattered per {0} after "
                                       "its backward)",
                                       unit)});
      else
        m.items.push_back(
            {"gradient buckets", params() * grad, "every full gradient, reduce-scattered after backward"});
      const double bytes = model_state_bytes(s_.training.optimizer, s_.model.precision).weights;
      m.items.push_back(
          {"gathered weights", two * bytes,
           fmt::format("the two largest {0}s' full weights (ZeRO-3: the {0} computing and the one prefetched)", unit)});
    }
  }

  const scenario::Scenario& s_;
};

// A change to the scenario that might make it fit, tried on the memory model.
struct Remedy {
  std::string what;
  scenario::Scenario changed;
};

std::vector<Remedy> remedies(const scenario::Scenario& s) {
  std::vector<Remedy> out;
  auto add = [&](std::string what, auto change) {
    scenario::Scenario c = s;
    change(c);
    out.push_back({std::move(what), std::move(c)});
  };
  const auto& layers = s.model.workload.layers;
  const bool unfused =
      s.model.attention == scenario::AttentionKernel::plain &&
      std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l.kind == models::LayerKind::attention; });
  const bool blocks = std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l.block >= 0; });
  if (unfused && s.training.recompute == scenario::Recompute::none)
    add("training.recompute \"selective\"", [](auto& c) { c.training.recompute = scenario::Recompute::selective; });
  if (blocks && s.training.recompute != scenario::Recompute::full)
    add("training.recompute \"full\"", [](auto& c) { c.training.recompute = scenario::Recompute::full; });
  if (s.world_size() > 1)
    for (int stage = s.training.zero_stage + 1; stage <= 3; ++stage)
      add(fmt::format("training.zero_stage {}", stage), [stage](auto& c) { c.training.zero_stage = stage; });
  if (s.training.offload == scenario::Offload::none)
    add("training.offload \"optimizer\"", [](auto& c) { c.training.offload = scenario::Offload::optimizer; });
  for (int batch = s.model.batch_per_gpu / 2; batch >= 1; batch /= 2)
    add(fmt::format("model.batch_per_gpu {}", batch), [batch](auto& c) { c.model.batch_per_gpu = batch; });
  return out;
}

} // namespace

MemoryEstimate estimate_memory(const scenario::Scenario& s) {
  if (s.model.trace) return {{}, {}, s.gpu.memory_bytes}; // a trace of ops says nothing of the memory they hold
  if (s.parallelism.model_parallel()) {                   // the largest stage's
    const auto stages = detail::ModelParallelPlanner(s).stage_memory();
    return *std::max_element(stages.begin(), stages.end(),
                             [](const auto& a, const auto& b) { return a.total() < b.total(); });
  }
  return MemoryModel(s).estimate();
}

void check_fits(const scenario::Scenario& s, const MemoryEstimate& memory) {
  if (memory.fits()) return;
  auto items = memory.items;
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string largest;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, items.size()); ++i)
    largest += fmt::format("{}{} {:.2f} GiB", i ? ", " : "", items[i].name, gib(items[i].bytes));
  // Each remedy on its own, then all the training-side ones together; batch sizes stop at the largest that fits.
  std::vector<std::string> fixes;
  bool batch_listed = false;
  for (const auto& r : remedies(s)) {
    const auto m = estimate_memory(r.changed);
    const bool batch = r.what.starts_with("model.batch_per_gpu");
    if (!m.fits() || (batch && batch_listed)) continue;
    batch_listed = batch_listed || batch;
    fixes.push_back(fmt::format("{} ({:.2f} GiB)", r.what, gib(m.total())));
  }
  std::string advice;
  if (!fixes.empty()) {
    advice = "Each of these alone would fit: ";
    for (std::size_t i = 0; i < fixes.size(); ++i)
      advice += (i ? "; " : "") + fixes[i];
    advice += ".";
  } else {
    scenario::Scenario all = s;
    all.training.recompute = scenario::Recompute::full;
    all.training.zero_stage = s.world_size() > 1 ? 3 : 0;
    all.training.offload = scenario::Offload::optimizer;
    all.model.batch_per_gpu = 1;
    const double floor = estimate_memory(all).total();
    advice = fmt::format(
        "No single change fits; with full recompute, ZeRO-3 over {} ranks, optimizer offload and batch 1 it would "
        "still need {:.2f} GiB. The model needs more GPUs to shard over, or tensor or pipeline parallelism to split "
        "its layers.",
        s.world_size(), gib(floor));
  }
  throw PlanError(fmt::format("the job does not fit in GPU memory: it needs {:.2f} GiB per GPU, the {} has {:.2f} GiB "
                              "(largest: {}). {}",
                              gib(memory.total()), s.gpu.display_name, gib(memory.capacity), largest, advice));
}

} // namespace dtsim::plan
