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

std::vector<MemoryEstimate> ModelParallelPlanner::stage_memory() const {
  const auto& t = s_.training;
  const int p = spec_.pipeline;
  const double e = calibration::activation_bytes(s_.model.precision);
  const auto batch = static_cast<std::int64_t>(s_.model.batch_per_gpu);
  auto states = model_state_bytes(t.optimizer, s_.model.precision);
  states.gradients = reduced_gradient_bytes(); // Megatron-LM's fp32 gradient buffer under bf16
  const double data = layout_.gradient_replicas(), expert_data = static_cast<double>(layout_.data()) / layout_.expert();
  const bool full = t.recompute == scenario::Recompute::full;
  std::vector<MemoryEstimate> stages;
  for (int stage = 0; stage < p; ++stage) {
    MemoryEstimate m;
    m.capacity = stage_gpu(stage).memory_bytes;
    double dense = 0, experts = 0, gradient = 0, largest_unit = 0, second_unit = 0;
    std::vector<double> chunk_activations(spec_.virtual_stages, 0.0);
    for (int c = stage, chunk = 0; c < static_cast<int>(chunk_units_.size()); c += p, ++chunk) {
      for (auto u : chunk_units_[c]) {
        dense += unit_params_[u].dense;
        experts += unit_params_[u].experts;
        const double unit = unit_params_[u].total();
        second_unit = std::max(second_unit, std::min(unit, largest_unit));
        largest_unit = std::max(largest_unit, unit);
        double saved = 0;
        for (auto i : units_[u]) {
          const auto& l = shared_[i];
          saved += saved_activation_bytes(l, batch, s_.model.precision, s_.model.attention, t.recompute);
          gradient = std::max(gradient, static_cast<double>(l.input_elements + l.output_elements) * e * batch);
        }
        // The block's input: its first op's (the embedding ahead of the first block reads token ids).
        const auto in_block =
            std::find_if(units_[u].begin(), units_[u].end(), [&](std::size_t i) { return shared_[i].block >= 0; });
        const auto& first = shared_[in_block != units_[u].end() ? *in_block : units_[u].front()];
        // Full recomputation: each block keeps its input; one block's activations live while it is recomputed.
        const double kept = full ? static_cast<double>(first.input_elements) * e * batch : saved;
        chunk_activations[chunk] += kept;
        if (full) gradient = std::max(gradient, saved);
      }
    }
    const double zero1 = t.zero_stage >= 1, zero2 = t.zero_stage >= 2, zero3 = t.zero_stage >= 3;
    const auto shard = [&](double bytes_per_parameter, bool sharded) {
      return dense * bytes_per_parameter / (sharded ? data : 1) +
             experts * bytes_per_parameter / (sharded ? expert_data : 1);
    };
    m.items.push_back(
        {"weights", shard(states.weights, zero3),
         fmt::format("{:.4g} billion parameters (tensor share of {}{}), {} B each{}", (dense + experts) / 1e9,
                     spec_.tensor, experts > 0 ? fmt::format(", experts / {}", spec_.expert) : "", states.weights,
                     zero3 ? ", ZeRO-3 shard" : "")});
    m.items.push_back({"gradients", shard(states.gradients, zero2),
                       fmt::format("{} B/parameter{}", states.gradients, zero2 ? ", ZeRO-2 shard" : "")});
    m.items.push_back({"optimizer states", shard(states.optimizer(), zero1),
                       fmt::format("{} B/parameter{}", states.optimizer(), zero1 ? ", ZeRO-1 shard" : "")});
    // The micro-batches in flight at the stage's peak, chunk by chunk, from its pipeline order.
    const auto order = pipeline_order(spec_.schedule, p, stage, spec_.micro_batches, spec_.virtual_stages);
    double now = 0, peak = 0;
    for (const auto& slot : order) {
      now += (slot.forward ? 1 : -1) * chunk_activations[slot.chunk];
      peak = std::max(peak, now);
    }
    m.items.push_back(
        {"activations", peak,
         fmt::format("stage {} of {}: {} micro-batches of {} in flight at the peak ({})", stage, p,
                     peak_in_flight(order), batch,
                     full ? "block inputs, full recomputation" : std::string(scenario::to_string(t.recompute)))});
    m.items.push_back({"activation gradients", gradient, "the largest op's input and output gradients"});
    if (zero3 && data > 1)
      m.items.push_back({"gathered weights", (largest_unit + second_unit) * states.weights,
                         "the two largest units' full weights (ZeRO-3 prefetch)"});
    stages.push_back(std::move(m));
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
