// model.trace {"format": "pytorch-profiler"}: one GPU's measured step (sim/kineto) run by every GPU of the cluster,
// with PyTorch DDP's gradient all-reduces added as data_parallel.cpp adds them to a planned model: the gradients in the
// order backward produced them fill buckets (the first capped at training.first_bucket_bytes, the others at
// training.bucket_bytes, DDP's 1 MiB and bucket_cap_mb = 25 MiB), each bucket's all-reduce starts on the
// communication stream once the GPU has run what was launched before its last gradient was stored, and the step's
// work after backward (the optimizer) waits for every bucket, as DDP's finalize_backward makes it.
//
// Kernels and copies keep their measured durations on the compute stream, in the order the GPU ran them. The time the
// GPU waited for its host between them (launch gaps, the data loader and Python between steps) runs on the input
// stream, the host's, as a dependency of the next kernel: the compute stream is idle meanwhile, as it was.
#include "io/suggest.hpp"
#include "models/zoo.hpp"
#include "sim/kineto/kineto.hpp"
#include "sim/plan/data_parallel.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

namespace dtsim::plan::detail {

namespace {

using graph::Op;
using graph::Stream;

// The one GPU's step cannot hold another parallelism, nor a strategy other than DDP's all-reduce: say which field.
void check_profiled_scenario(const scenario::Scenario& s) {
  const auto refuse = [&](const std::string& pointer, const std::string& what) {
    throw scenario::ScenarioError(
        s.origin, pointer,
        fmt::format("{}; a PyTorch profiler trace is one GPU's step, which dtsim runs data parallel with PyTorch "
                    "DDP's bucketed all-reduce only",
                    what));
  };
  const auto& p = s.parallelism;
  if (p.tensor != 1 || p.pipeline != 1 || p.context != 1 || p.expert != 1)
    refuse("/parallelism", "tensor, pipeline, context or expert parallelism given");
  const auto& t = s.training;
  if (t.strategy.kind != strategies::Kind::allreduce) refuse("/training/strategy", "a strategy other than all-reduce");
  if (t.strategy.accumulation != 1) refuse("/training/strategy", "gradient accumulation given");
  if (t.compression.kind != strategies::CompressionKind::none) refuse("/training/compression", "compression given");
  if (t.zero_stage != 0) refuse("/training/zero_stage", "ZeRO given");
  if (t.offload != scenario::Offload::none) refuse("/training/offload", "offloading given");
}

std::string op_name(const kineto::Activity& a) {
  constexpr std::size_t kLongest = 96; // templated kernel names run to hundreds of characters
  std::string name = a.name.size() > kLongest ? a.name.substr(0, kLongest) + "..." : a.name;
  return fmt::format("{} ({})", name, kineto::to_string(a.phase));
}

// The step's distinct kernels and copies for `dtsim run --ops`, as measured: their launches, time and host waits.
// What bounds a traced kernel, for the energy model (which draws more for math than for memory traffic): the
// libraries name their GEMM and convolution kernels (cuBLAS' and CUTLASS' "gemm", cuDNN's convolution and "wgrad" /
// "dgrad" kernels, FlashAttention's "flash" / "fmha"); the rest of a training step (elementwise, normalization,
// reductions, optimizers, copies) streams memory.
std::string bound_of(const kineto::Activity& a) {
  static const char* const math[] = {"gemm", "conv", "wgrad", "dgrad", "winograd", "xmma", "flash", "fmha"};
  std::string name = a.name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!a.copy)
    for (const char* word : math)
      if (name.find(word) != std::string::npos) return "math";
  return "HBM";
}

// `waited`: per activity, the host gap before it as planned.
std::vector<KernelRow> kernel_rows(const kineto::ProfiledStep& step, const std::vector<double>& waited) {
  std::map<std::string, KernelRow> rows;
  for (std::size_t i = 0; i < step.activities.size(); ++i) {
    const auto& a = step.activities[i];
    auto& row = rows[a.name];
    row.name = a.name;
    row.kind = a.copy ? "copy" : "kernel";
    row.shape = a.copy && a.bytes > 0 ? fmt::format("{:.3f} MB", a.bytes / 1e6) : "";
    row.precision = "as traced";
    row.bound = bound_of(a);
    ++row.launches;
    row.seconds += a.seconds;
    row.host_wait += waited[i];
    row.bytes = a.bytes;
  }
  std::vector<KernelRow> out;
  for (auto& [name, row] : rows)
    out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.seconds + a.host_wait > b.seconds + b.host_wait;
  });
  return out;
}

// What dtsim runs for the traced job's communication: a collective posted once an activity is done; a blocking one
// holds up the next activity (the job waited on it), the others only the work after backward (DDP's buckets).
struct CommItem {
  collectives::Operation op = collectives::Operation::all_reduce;
  double bytes = 0;
  std::optional<std::size_t> ready_after;
  bool blocking = false;
  std::string name;
};

// The trace's own collectives (a DDP job's trace), as c10d names them in record_param_comms.
collectives::Operation operation_of(const scenario::Scenario& s, const std::string& name) {
  static const std::map<std::string, collectives::Operation> operations = {
      {"allreduce", collectives::Operation::all_reduce},
      {"allreduce_coalesced", collectives::Operation::all_reduce},
      {"broadcast", collectives::Operation::broadcast},
      {"reduce", collectives::Operation::reduce},
      {"allgather", collectives::Operation::all_gather},
      {"all_gather", collectives::Operation::all_gather},
      {"_allgather_base", collectives::Operation::all_gather},
      {"allgather_into_tensor_coalesced", collectives::Operation::all_gather},
      {"reduce_scatter", collectives::Operation::reduce_scatter},
      {"reduce_scatter_tensor_coalesced", collectives::Operation::reduce_scatter},
      {"all_to_all", collectives::Operation::all_to_all},
      {"all_reduce", collectives::Operation::all_reduce},
      {"_all_gather_base", collectives::Operation::all_gather},
      {"_reduce_scatter_base", collectives::Operation::reduce_scatter},
      {"all_to_allv", collectives::Operation::all_to_all},
      {"alltoall", collectives::Operation::all_to_all},
      {"alltoall_base", collectives::Operation::all_to_all},
      {"barrier", collectives::Operation::barrier}};
  const auto it = operations.find(name);
  if (it == operations.end())
    throw scenario::ScenarioError(s.origin, "/model/trace/path",
                                  fmt::format("{}: the trace launches a \"{}\" (record_param_comms), which dtsim does "
                                              "not replay over the data-parallel group",
                                              s.model.trace->path, name));
  return it->second;
}

// `ranks` 1: only where the job waited matters (its collectives are not replayed, and need not be known).
// Without the gradients' shapes in the trace, trace.model's layers give them: in reverse order, each layer's
// gradient ready once backward has spent, of its measured kernel time, the share of the model's backward FLOPs that the
// layers from the last down to this one take (backward time spent in proportion to FLOPs: an approximation the trace's
// own shapes do not need).
std::vector<kineto::Gradient> model_gradients(const scenario::Scenario& s, const kineto::ProfiledStep& step) {
  const auto workload = models::build_preset(s.model.trace->model);
  if (!workload) return {};
  std::vector<std::pair<double, std::size_t>> backward; // cumulative seconds after each backward activity, its index
  double seconds = 0;
  for (std::size_t i = 0; i < step.activities.size(); ++i)
    if (step.activities[i].phase == kineto::Phase::backward)
      backward.emplace_back(seconds += step.activities[i].seconds, i);
  double total_flops = 0;
  for (const auto& layer : workload->layers)
    total_flops += layer.backward_flops;
  std::vector<kineto::Gradient> out;
  double flops = 0;
  for (auto layer = workload->layers.rbegin(); layer != workload->layers.rend(); ++layer) {
    flops += layer->backward_flops;
    if (layer->parameters == 0) continue;
    kineto::Gradient g;
    g.bytes = static_cast<double>(layer->parameters) * calibration::gradient_bytes(s.model.precision);
    const double due = total_flops > 0 ? flops / total_flops * seconds : seconds;
    const auto reached =
        std::find_if(backward.begin(), backward.end(), [&](const auto& b) { return b.first >= due * (1 - 1e-12); });
    if (reached != backward.end())
      g.ready_after = reached->second;
    else if (!backward.empty())
      g.ready_after = backward.back().second;
    out.push_back(g);
  }
  return out;
}

std::vector<CommItem> comm_items(const scenario::Scenario& s, const kineto::ProfiledStep& step,
                                 std::optional<std::size_t> last_backward, int ranks) {
  std::vector<CommItem> items;
  if (!step.collectives.empty()) { // the job's own, as DDP formed them
    for (const auto& c : step.collectives)
      items.push_back({ranks > 1 ? operation_of(s, c.name) : collectives::Operation::all_reduce, c.bytes, c.ready_after,
                       c.phase != kineto::Phase::backward, fmt::format("{} (traced)", c.name)});
    return items;
  }
  // DDP's buckets over the gradients in the order they became ready.
  const auto gradients = step.shapes ? step.gradients : model_gradients(s, step);
  CommItem open; // an all-reduce
  for (const auto& g : gradients) {
    open.bytes += g.bytes;
    if (g.ready_after) open.ready_after = std::max(open.ready_after.value_or(0), *g.ready_after);
    const double cap = items.empty() ? s.training.first_bucket_bytes : s.training.bucket_bytes;
    if (s.training.overlap && open.bytes >= cap) items.push_back(std::exchange(open, CommItem()));
  }
  if (open.bytes > 0) items.push_back(open);
  for (std::size_t b = 0; b < items.size(); ++b) {
    items[b].name = fmt::format("allreduce bucket {}", b);
    if (!s.training.overlap) // one all-reduce once backward is over
      items[b].ready_after = std::max(items[b].ready_after.value_or(0), last_backward.value_or(0));
  }
  return items;
}

// The trace's kernels are replayed at the times they took on the GPU that recorded them: a trace from another GPU
// than the cluster's says so. The GPUs are compared by the profile's family ("a100" of "a100-80gb") in the name
// torch.profiler recorded ("NVIDIA A100-SXM4-80GB"), case ignored; a trace that names no GPU is taken as it is.
std::optional<std::string> other_gpu(const std::string& recorded_on, const calibration::GpuProfile& gpu) {
  if (recorded_on.empty()) return std::nullopt;
  const auto family = io::lowercase(gpu.name.substr(0, gpu.name.find('-')));
  if (io::lowercase(recorded_on).find(family) != std::string::npos) return std::nullopt;
  return fmt::format("the trace was recorded on {}, but the cluster's GPU is {} ({}): its kernels are replayed at the "
                     "times they took on {}",
                     recorded_on, gpu.name, gpu.display_name, recorded_on);
}

} // namespace

Plan make_profiler_plan(const scenario::Scenario& s) {
  check_profiled_scenario(s);
  const auto& spec = *s.model.trace;
  kineto::ProfiledStep step;
  try {
    step = kineto::read_profile(spec.path, {spec.step});
  } catch (const kineto::ProfileError& e) {
    throw scenario::ScenarioError(s.origin, e.about_step() ? "/model/trace/step" : "/model/trace/path", e.what());
  }
  const int ranks = s.cluster.gpu_count();
  if (ranks > 1 && step.collectives.empty() && !step.shapes && spec.model.empty())
    throw scenario::ScenarioError(
        s.origin, "/model/trace/path",
        fmt::format("{}: {} gives no gradient sizes ({} AccumulateGrad ops, their shapes missing, and no collectives): "
                    "record the trace with torch.profiler.profile(record_shapes=True), profile the DDP job itself, or "
                    "name the model whose gradients these are in model.trace.model",
                    spec.path, step.step.empty() ? std::string("the trace") : step.step, step.parameter_tensors));
  std::optional<std::size_t> last_backward;
  for (std::size_t i = 0; i < step.activities.size(); ++i)
    if (step.activities[i].phase == kineto::Phase::backward) last_backward = i;
  // The job's communication as the trace has it; on one GPU nothing is posted, but the waits for it still go.
  const auto items = comm_items(s, step, last_backward, ranks);
  std::vector<bool> waits(step.activities.size()); // where the traced job waited for its communication
  const bool distributed = ranks > 1 || !step.collectives.empty() || step.communication_kernels > 0;
  if (last_backward && distributed && *last_backward + 1 < waits.size())
    waits[*last_backward + 1] = true; // after backward: DDP's finalize_backward
  for (const auto& item : items)
    if (const std::size_t next = item.ready_after ? *item.ready_after + 1 : 0; item.blocking && next < waits.size())
      waits[next] = true;

  Plan plan;
  if (const auto other = other_gpu(step.device, s.gpu)) plan.warnings.push_back(*other);
  auto& graph = plan.graph;
  graph.programs.emplace_back();
  graph.rank_program.assign(static_cast<std::size_t>(ranks), 0);
  if (ranks > 1) {
    graph.groups.emplace_back(static_cast<std::size_t>(ranks));
    std::iota(graph.groups.front().begin(), graph.groups.front().end(), 0);
  }
  auto& ops = graph.programs.front().ops;
  const auto add = [&](Op op) {
    ops.push_back(std::move(op));
    return static_cast<std::uint32_t>(ops.size() - 1);
  };
  std::vector<std::uint32_t> op_of(step.activities.size());
  std::vector<double> waited(step.activities.size()); // the host gap planned before each activity
  std::optional<std::size_t> added;                   // the last activity whose op was added
  // The host's time before the next activity, from the end of the last one (not of a collective posted since).
  const auto host_gap = [&](double seconds, std::string name) {
    std::vector<std::uint32_t> deps;
    if (added) deps.push_back(op_of[*added]);
    return add(Op{std::move(name), Stream::input, graph::Compute{seconds, 0, 0}, std::move(deps)});
  };
  std::set<std::string> algorithms;
  std::vector<std::uint32_t> posted, blocking; // every collective posted; those the next activity waits for
  // Posts, in order, the collectives ready once `activity` is done (none: before any), each after that activity's op
  // (at most the last one added).
  const auto post_ready_by = [&](std::optional<std::size_t> activity) {
    if (ranks == 1) return;
    for (std::size_t k = posted.size(); k < items.size() && items[k].ready_after <= activity; ++k) {
      graph::Collective c;
      c.op = items[k].op;
      c.bytes = items[k].bytes;
      // training.algorithm names the gradient all-reduce's; the other collectives pick their own.
      if (c.op == collectives::Operation::all_reduce)
        c.algorithm = s.training.strategy.algorithm.value_or(s.training.algorithm);
      else
        c.algorithm = collectives::Algorithm::automatic;
      c.algorithm = checked_algorithm(c, graph.groups.front(), s.cluster);
      if (c.op == collectives::Operation::all_reduce)
        algorithms.insert(std::string(collectives::to_string(c.algorithm)));
      c.aggregate = s.run.fidelity == scenario::Fidelity::aggregate;
      c.reduce_seconds_per_byte = s.gpu.reduce_seconds_per_byte();
      std::vector<std::uint32_t> deps;
      if (items[k].ready_after && added) deps.push_back(op_of[std::min(*items[k].ready_after, *added)]);
      posted.push_back(add(Op{items[k].name, Stream::comm, c, std::move(deps)}));
      if (items[k].blocking) blocking.push_back(posted.back());
    }
  };
  post_ready_by(std::nullopt);
  for (std::size_t i = 0; i < step.activities.size(); ++i) {
    const auto& a = step.activities[i];
    std::vector<std::uint32_t> deps;
    // Where the traced job waited for its communication (after backward: DDP's finalize_backward; after a blocking
    // collective), the part of the gap an NCCL kernel ran in was that wait: the replayed collectives stand for it.
    const bool finalize = last_backward && i == *last_backward + 1;
    const double gap = waits[i] ? std::max(0.0, a.gap_before - a.comm_wait) : a.gap_before;
    waited[i] = gap;
    if (gap > 0) deps.push_back(host_gap(gap, "host (GPU waiting for launches)"));
    if (finalize) {
      post_ready_by(step.activities.size());
      deps.insert(deps.end(), posted.begin(), posted.end());
    }
    deps.insert(deps.end(), blocking.begin(), blocking.end());
    blocking.clear();
    op_of[i] = add(Op{op_name(a), Stream::compute, graph::Compute{a.seconds, 0, a.bytes}, std::move(deps)});
    added = i;
    post_ready_by(i);
  }
  if (step.gap_after > 0) host_gap(step.gap_after, "host (between steps: data loading, the Python loop)");

  plan.workers = ranks;
  plan.samples_per_worker_iteration = s.model.batch_per_gpu;
  for (const auto& item : ranks > 1 ? items : std::vector<CommItem>{})
    if (item.op == collectives::Operation::all_reduce) {
      plan.gradient_bytes += item.bytes;
      ++plan.buckets;
    }
  plan.wire_bytes = plan.dense_bytes = plan.gradient_bytes;
  plan.allreduce_algorithms.assign(algorithms.begin(), algorithms.end());
  plan.kernels = kernel_rows(step, waited);
  plan.host_wait_seconds = std::accumulate(waited.begin(), waited.end(), step.gap_after);
  plan.memory = estimate_memory(s); // no items: the trace's own figures, where it has them
  if (step.peak_allocated) {
    plan.memory.items.push_back({"tensors (traced peak)", *step.peak_allocated,
                                 "the step's peak in PyTorch's caching allocator (profile_memory=True)"});
    plan.memory.items.push_back({"allocator cache (traced)",
                                 std::max(0.0, step.peak_reserved.value_or(0) - *step.peak_allocated),
                                 "reserved from the GPU at the step's peak reservation, beyond the tensors' peak"});
  }
  return plan;
}

} // namespace dtsim::plan::detail
