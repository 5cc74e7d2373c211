// Per-GPU memory of each pipeline stage under tensor, pipeline, expert and sharded data parallelism:
//   weights, gradients, optimizer  model_state_bytes() per parameter of the stage's tensor-parallel share (experts:
//                                  their expert-parallel share); ZeRO stage 1 divides the optimizer's by the
//                                  data-parallel ranks (experts: by the expert-data ranks), 2 also the gradients,
//                                  3 also the weights
//   activations                    what each op of the stage keeps for one micro-batch (saved_activation_bytes: a
//                                  t-th where tensor parallelism splits the op, and for the norms and dropout too
//                                  under sequence parallelism: Korthikanti et al. 2022, Table 2), times the
//                                  micro-batches in flight at the stage's peak, read off its pipeline order (1F1B:
//                                  p - s on stage s; GPipe: all m; interleaved: Megatron's warm-up + 1 chunks).
//                                  Full recomputation keeps each block's input and one block's activations
//   activation gradients           the largest op's input and output gradients
//   gathered weights               ZeRO-3: the two largest units' weights (the one computing, the one prefetched)
#include "sim/plan/model_parallel.hpp"
#include "sim/plan/pipeline_schedule.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace dtsim::plan::detail {

namespace {
double gib(double bytes) {
  return bytes / (1 << 30);
}
} // namespace

UnitFootprint unit_footprint(const std::vector<models::Layer>& shared, const std::vector<std::size_t>& unit,
                             std::int64_t batch, calibration::Precision precision, scenario::AttentionKernel attention,
                             scenario::Recompute recompute) {
  const double e = calibration::activation_bytes(precision);
  UnitFootprint f;
  for (auto i : unit) {
    const auto& l = shared[i];
    (l.moe.experts > 0 ? f.experts : f.dense) += static_cast<double>(l.parameters);
    f.tensors += l.parameters > 0 ? 1 : 0;
    f.saved += saved_activation_bytes(l, batch, precision, attention, recompute);
    f.gradient = std::max(f.gradient, static_cast<double>(l.input_elements + l.output_elements) * e * batch);
  }
  // The block's input: its first op's (the embedding ahead of the first block reads token ids).
  const auto in_block = std::find_if(unit.begin(), unit.end(), [&](std::size_t i) { return shared[i].block >= 0; });
  f.block_input = static_cast<double>(shared[in_block != unit.end() ? *in_block : unit.front()].input_elements) * e *
                  static_cast<double>(batch);
  return f;
}

MemoryEstimate stage_memory_of(int stage, const std::vector<std::vector<std::size_t>>& chunk_units,
                               const std::vector<UnitFootprint>& units, const StageMemoryShape& shape,
                               const std::vector<PipelineSlot>& order, bool with_details) {
  const int p = shape.pipeline;
  const bool full = shape.recompute == scenario::Recompute::full;
  const auto detail = [with_details]<class... Args>(fmt::format_string<Args...> format, Args&&... args) {
    return with_details ? fmt::format(format, std::forward<Args>(args)...) : std::string();
  };
  MemoryEstimate m;
  m.capacity = shape.capacity;
  double dense = 0, experts = 0, gradient = 0, largest_unit = 0, second_unit = 0;
  std::vector<double> chunk_activations(shape.virtual_stages, 0.0);
  for (int c = stage, chunk = 0; c < static_cast<int>(chunk_units.size()); c += p, ++chunk) {
    for (auto u : chunk_units[c]) {
      const auto& f = units[u];
      dense += f.dense;
      experts += f.experts;
      const double unit = f.dense + f.experts;
      second_unit = std::max(second_unit, std::min(unit, largest_unit));
      largest_unit = std::max(largest_unit, unit);
      gradient = std::max(gradient, f.gradient);
      // Full recomputation: each block keeps its input; one block's activations live while it is recomputed.
      chunk_activations[chunk] += full ? f.block_input : f.saved;
      if (full) gradient = std::max(gradient, f.saved);
    }
  }
  const auto& states = shape.states;
  const bool zero1 = shape.zero_stage >= 1, zero2 = shape.zero_stage >= 2, zero3 = shape.zero_stage >= 3;
  const auto shard = [&](double bytes_per_parameter, bool sharded) {
    return dense * bytes_per_parameter / (sharded ? shape.data_replicas : 1) +
           experts * bytes_per_parameter / (sharded ? shape.expert_replicas : 1);
  };
  m.items.push_back({"weights", shard(states.weights, zero3),
                     detail("{:.4g} billion parameters (tensor share of {}{}), {} B each{}", (dense + experts) / 1e9,
                            shape.tensor, experts > 0 ? fmt::format(", experts / {}", shape.expert) : "",
                            states.weights, zero3 ? ", ZeRO-3 shard" : "")});
  m.items.push_back({"gradients", shard(states.gradients, zero2),
                     detail("{} B/parameter{}", states.gradients, zero2 ? ", ZeRO-2 shard" : "")});
  m.items.push_back({"optimizer states", shard(states.optimizer(), zero1),
                     detail("{} B/parameter{}", states.optimizer(), zero1 ? ", ZeRO-1 shard" : "")});
  // The micro-batches in flight at the stage's peak, chunk by chunk, from its pipeline order.
  double now = 0, peak = 0;
  for (const auto& slot : order) {
    now += (slot.forward ? 1 : -1) * chunk_activations[slot.chunk];
    peak = std::max(peak, now);
  }
  m.items.push_back(
      {"activations", peak,
       detail("stage {} of {}: {} micro-batches of {} in flight at the peak ({})", stage, p,
              with_details ? peak_in_flight(order) : 0, shape.batch,
              full ? "block inputs, full recomputation" : std::string(scenario::to_string(shape.recompute)))});
  m.items.push_back({"activation gradients", gradient, detail("the largest op's input and output gradients")});
  if (zero3 && shape.data_replicas > 1)
    m.items.push_back({"gathered weights", (largest_unit + second_unit) * states.weights,
                       detail("the two largest units' full weights (ZeRO-3 prefetch)")});
  return m;
}

StageMemoryShape stage_memory_shape(const scenario::Scenario& s, const scenario::ParallelismSpec& spec, int zero_stage,
                                    scenario::Recompute recompute, std::int64_t batch, double data_replicas,
                                    double expert_replicas) {
  StageMemoryShape shape;
  shape.states = model_state_bytes(s.training.optimizer, s.model.precision);
  shape.states.gradients = reduced_gradient_bytes(s, spec); // Megatron-LM's fp32 gradient buffer under bf16
  shape.data_replicas = data_replicas;
  shape.expert_replicas = expert_replicas;
  shape.zero_stage = zero_stage;
  shape.recompute = recompute;
  shape.schedule = spec.schedule;
  shape.pipeline = spec.pipeline;
  shape.micro_batches = spec.micro_batches;
  shape.virtual_stages = spec.virtual_stages;
  shape.tensor = spec.tensor;
  shape.expert = spec.expert;
  shape.batch = batch;
  return shape;
}

std::vector<MemoryEstimate> ModelParallelPlanner::stage_memory() const {
  std::vector<UnitFootprint> footprints;
  for (const auto& unit : units_)
    footprints.push_back(unit_footprint(shared_, unit, s_.model.batch_per_gpu, s_.model.precision, s_.model.attention,
                                        s_.training.recompute));
  auto shape = stage_memory_shape(s_, spec_, s_.training.zero_stage, s_.training.recompute, s_.model.batch_per_gpu,
                                  layout_.gradient_replicas(), static_cast<double>(layout_.data()) / layout_.expert());
  std::vector<MemoryEstimate> stages;
  for (int stage = 0; stage < spec_.pipeline; ++stage) {
    shape.capacity = stage_gpu(stage).memory_bytes;
    const auto order = pipeline_order(shape.schedule, shape.pipeline, stage, shape.micro_batches, shape.virtual_stages);
    stages.push_back(stage_memory_of(stage, chunk_units_, footprints, shape, order, /*with_details=*/true));
  }
  if (redundant()) { // Bamboo: each stage holds its successor's model state too (the last stage the first's)
    std::vector<double> state(stages.size(), 0.0);
    for (std::size_t i = 0; i < stages.size(); ++i)
      for (const auto& item : stages[i].items)
        if (item.name == "weights" || item.name == "gradients" || item.name == "optimizer states")
          state[i] += item.bytes;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const auto next = (i + 1) % stages.size();
      stages[i].items.push_back({"successor's replica", state[next],
                                 fmt::format("stage {}'s weights, gradients and optimizer states (redundant "
                                             "computation, Bamboo)",
                                             next)});
    }
  }
  return stages;
}

void check_model_parallel_fits(const scenario::Scenario& s, const std::vector<MemoryEstimate>& stages) {
  const auto worst = std::max_element(stages.begin(), stages.end(),
                                      [](const auto& a, const auto& b) { return a.total() < b.total(); });
  if (worst->fits()) return;
  auto items = worst->items;
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string largest;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, items.size()); ++i)
    largest += fmt::format("{}{} {:.2f} GiB", i ? ", " : "", items[i].name, gib(items[i].bytes));
  // Changes that keep the grid, each tried on the memory model.
  std::vector<std::string> fixes;
  const auto attempt = [&](const std::string& what, auto change) {
    scenario::Scenario c = s;
    change(c);
    const auto m = ModelParallelPlanner(c).stage_memory();
    const double need = std::max_element(m.begin(), m.end(), [](const auto& a, const auto& b) {
                          return a.total() < b.total();
                        })->total();
    if (need <= worst->capacity) fixes.push_back(fmt::format("{} ({:.2f} GiB)", what, gib(need)));
  };
  if (s.training.recompute != scenario::Recompute::full)
    attempt("training.recompute \"full\"", [](auto& c) { c.training.recompute = scenario::Recompute::full; });
  for (int zero = s.training.zero_stage + 1; zero <= (s.parallelism.pipeline > 1 ? 2 : 3); ++zero)
    attempt(fmt::format("training.zero_stage {}", zero), [zero](auto& c) { c.training.zero_stage = zero; });
  const std::string advice =
      fixes.empty() ? "No change of recomputation or ZeRO stage fits: use more tensor or pipeline parallelism "
                      "(dtsim search lists the combinations that fit)."
                    : "Each of these alone would fit: " + fmt::format("{}", fmt::join(fixes, "; ")) + ".";
  const auto stage = worst - stages.begin();
  throw PlanError(fmt::format("the job does not fit in GPU memory: pipeline stage {} needs {:.2f} GiB per GPU, the {} "
                              "has {:.2f} GiB (largest: {}). {}",
                              stage, gib(worst->total()), s.groups.empty() ? s.gpu.display_name : "GPU of its group",
                              gib(worst->capacity), largest, advice));
}

Plan make_model_parallel_plan(const scenario::Scenario& s, bool first_replica_only) {
  return ModelParallelPlanner(s).build(first_replica_only);
}

} // namespace dtsim::plan::detail
