// The small sections: dataset, training (its strategy and compression in strategy.cpp), run, network; and the names
// of the scenario's enums.
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::scenario::detail {

// "auto" and the all-reduce algorithms sim/collectives implements.
const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n{std::string(collectives::to_string(collectives::Algorithm::automatic))};
    for (auto a : collectives::supported_algorithms(collectives::Operation::all_reduce))
      n.emplace_back(collectives::to_string(a));
    return n;
  }();
  return names;
}
const std::vector<std::string>& fidelity_names() {
  static const std::vector<std::string> names{"step", "aggregate", "coarse"};
  return names;
}
const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{"sgd", "momentum", "adam"};
  return names;
}
const std::vector<std::string>& recompute_names() {
  static const std::vector<std::string> names{"none", "selective", "full"};
  return names;
}
const std::vector<std::string>& offload_names() {
  static const std::vector<std::string> names{"none", "optimizer"};
  return names;
}
const std::vector<std::string>& attention_names() {
  static const std::vector<std::string> names{"auto", "plain", "flash", "cudnn"};
  return names;
}
const std::vector<std::string>& network_model_names() {
  static const std::vector<std::string> names{"lv08", "cm02"};
  return names;
}
const std::vector<std::string>& fabric_names() {
  static const std::vector<std::string> names{"nvlink", "hybrid-cube-mesh", "pcie", "pcie-tree"};
  return names;
}

namespace {
const std::vector<std::string>& training_keys() {
  static const std::vector<std::string> keys{
      "strategy",       "algorithm",  "bucket_size", "first_bucket_size",     "overlap",     "optimizer",
      "recompute",      "zero_stage", "offload",     "host_memory_bandwidth", "compression", "framework",
      "clip_gradients", "steps",      "nccl"};
  return keys;
}
} // namespace

DatasetSpec read_dataset(const Object& top) {
  const Object section = top.object("dataset", {"samples", "epochs"});
  DatasetSpec d;
  if (section.present())
    d.samples = section.integer("samples", 1, std::nullopt, std::numeric_limits<std::int64_t>::max());
  d.epochs = static_cast<int>(section.integer("epochs", 1, d.epochs, 1'000'000));
  return d;
}

TrainingSpec read_training(const Object& top) {
  const Object section = top.object("training", training_keys());
  TrainingSpec t;
  t.strategy = read_strategy(section);
  t.compression = read_compression(section);
  t.algorithm = *collectives::parse_algorithm(section.choice("algorithm", algorithm_names(), "all-reduce algorithm",
                                                             std::string(collectives::to_string(t.algorithm))));
  t.bucket_bytes = section.quantity("bucket_size", Dimension::bytes, Bound::positive, t.bucket_bytes);
  t.first_bucket_bytes = section.quantity("first_bucket_size", Dimension::bytes, Bound::positive, t.first_bucket_bytes);
  t.overlap = section.boolean("overlap", t.overlap);
  if (section.has("overlap")) t.overlap_given = t.overlap;
  t.optimizer = enum_of<Optimizer>(optimizer_names(), section.choice("optimizer", optimizer_names(), "optimizer",
                                                                     std::string(to_string(t.optimizer))));
  t.recompute = enum_of<Recompute>(recompute_names(), section.choice("recompute", recompute_names(), "recompute mode",
                                                                     std::string(to_string(t.recompute))));
  t.zero_stage = static_cast<int>(section.integer("zero_stage", 0, t.zero_stage, 3));
  t.offload = enum_of<Offload>(
      offload_names(), section.choice("offload", offload_names(), "offload mode", std::string(to_string(t.offload))));
  t.host_memory_bandwidth =
      section.quantity("host_memory_bandwidth", Dimension::bandwidth, Bound::positive, t.host_memory_bandwidth);
  t.steps = section.integer("steps", 1, 0, limits::kSteps);
  return t;
}

int read_nccl_release(const Object& top) {
  const Object section = top.object("training", training_keys());
  if (!section.has("nccl")) return collectives::kNcclTuningVersion;
  try {
    return collectives::parse_nccl_version(section.string("nccl", std::nullopt));
  } catch (const std::invalid_argument& e) {
    section.fail("nccl", e.what());
  }
}

void resolve_framework(const Object& top, Scenario& s) {
  const Object section = top.object("training", training_keys());
  std::vector<std::string> names{"auto"};
  for (const auto& name : calibration::framework_names())
    names.push_back(name);
  s.training.framework = section.choice("framework", names, "framework", std::string("auto"));
  const auto& name = s.training.framework != "auto"   ? s.training.framework
                     : s.parallelism.model_parallel() ? std::string("megatron")
                                                      : std::string("pytorch-ddp");
  s.framework = *calibration::find_framework(name);
  if (section.has("clip_gradients")) s.training.clip_gradients = section.boolean("clip_gradients", std::nullopt);
  // The version's habits: whether it reduces gradients under backward by default (data parallelism alone; under a
  // parallelism section parallelism.overlap says), what it cannot do at all.
  const auto& f = s.framework;
  using calibration::ReduceDuringBackward;
  if (!s.training.overlap_given)
    s.training.overlap = f.reduce_during_backward == ReduceDuringBackward::on ||
                         (f.reduce_during_backward == ReduceDuringBackward::zero3 && s.training.zero_stage >= 3);
  const bool asked = s.training.overlap_given.value_or(false) || s.parallelism.overlap.grad_reduce;
  if (f.reduce_during_backward == ReduceDuringBackward::never && asked)
    throw ScenarioError(top.file(), top.pointer("training") + "/overlap",
                        fmt::format("{} cannot reduce gradients while backward runs; set it false", f.display_name));
  auto& spec = s.parallelism;
  if (spec.overlap.given.p2p.value_or(false)) {
    const auto pointer = top.pointer("parallelism") + "/overlap/p2p";
    if (!f.overlap_p2p)
      throw ScenarioError(top.file(), pointer,
                          fmt::format("{} waits for each pipeline send and receive: it has no option to overlap them "
                                      "(Megatron-LM's came in 2023); set it false, or use megatron-core",
                                      f.display_name));
    if (!spec.interleaved())
      throw ScenarioError(top.file(), pointer,
                          fmt::format("{} overlaps a pipeline's sends with compute only under the interleaved "
                                      "schedule with virtual_stages > 1 (its other schedules wait for each send and "
                                      "receive); set it false",
                                      f.display_name));
  }
  spec.overlap.p2p = overlaps_p2p(f, spec);
  if (!f.distributed_optimizer && s.training.zero_stage > 0)
    throw ScenarioError(
        top.file(), top.pointer("training") + "/zero_stage",
        fmt::format("{} has no distributed optimizer (ZeRO) to shard optimizer states with; use 0", f.display_name));
}

void check_recompute(const Object& top, const Scenario& s) {
  const auto& layers = s.model.workload.layers;
  // A trace's ops already are what ran, recomputation included: the setting changes nothing there.
  if (s.model.trace || s.training.recompute != Recompute::full ||
      std::any_of(layers.begin(), layers.end(), [](const models::Layer& l) { return l.block >= 0; }))
    return;
  throw ScenarioError(top.file(), top.pointer("training") + "/recompute",
                      fmt::format("\"full\" recomputes transformer blocks, and model \"{}\" has none; use \"none\" "
                                  "(\"selective\" applies to unfused attention cores)",
                                  s.model.workload.name));
}

void resolve_attention(const Object& top, Scenario& s) {
  auto& attention = s.model.attention;
  const auto precision = calibration::attention_precision(s.model.precision);
  const bool fused = s.gpu.has_fused_attention(precision);
  const bool cudnn = s.gpu.has_cudnn_attention(precision);
  // Unless the scenario names one, the attention the framework version runs: its own unfused kernels, or a fused one
  // where the GPU has it. Transformer Engine prefers cuDNN's on Hopper and newer ('Disabling FlashAttention to give
  // FusedAttention preference on Hopper+ for performance reasons', get_attention_backend, TE v1.8 to 2.x).
  constexpr int kHopper = 90;
  if (attention == AttentionKernel::automatic) {
    attention = AttentionKernel::plain;
    if (s.framework.attention != calibration::AttentionImpl::unfused && fused) attention = AttentionKernel::flash;
    if (s.framework.attention == calibration::AttentionImpl::cudnn && cudnn && s.gpu.compute_capability >= kHopper)
      attention = AttentionKernel::cudnn;
  }
  if (attention == AttentionKernel::cudnn && !cudnn)
    throw ScenarioError(top.file(), top.pointer("model") + "/attention",
                        fmt::format("\"cudnn\" needs cuDNN's fused attention measured on the GPU, and the {} profile "
                                    "has no rate for it in {}; use \"flash\", \"plain\" or \"auto\"",
                                    s.gpu.display_name, calibration::to_string(precision)));
  if (attention == AttentionKernel::flash && !fused)
    throw ScenarioError(top.file(), top.pointer("model") + "/attention",
                        fmt::format("\"flash\" needs a fused-attention kernel, and the {} profile has none for {} "
                                    "(FlashAttention-2 runs on Ampere and newer GPUs in fp16 or bf16); use \"plain\" "
                                    "or \"auto\"",
                                    s.gpu.display_name, calibration::to_string(s.model.precision)));
}

RunSpec read_run(const Object& top) {
  const Object section = top.object("run", {"iterations", "warmup_iterations", "seed", "fidelity", "skip_repeats"});
  RunSpec r;
  r.iterations = static_cast<int>(section.integer("iterations", 1, r.iterations, limits::kIterations));
  r.warmup_iterations =
      static_cast<int>(section.integer("warmup_iterations", 0, r.warmup_iterations, limits::kIterations));
  r.seed = section.unsigned_integer("seed", r.seed);
  r.skip_repeats = section.boolean("skip_repeats", r.skip_repeats);
  auto names = fidelity_names();
  names.insert(names.begin(), "auto");
  const auto fidelity = section.choice("fidelity", names, "fidelity mode", "auto");
  r.fidelity_auto = fidelity == "auto";
  if (!r.fidelity_auto) r.fidelity = enum_of<Fidelity>(fidelity_names(), fidelity);
  return r;
}

NetworkSpec read_network(const Object& top) {
  const Object section = top.object("network", {"model", "cross_traffic"});
  NetworkSpec n;
  n.model = enum_of<NetworkModel>(network_model_names(), section.choice("model", network_model_names(), "network model",
                                                                        std::string(to_string(n.model))));
  // TCP acknowledgements flow back on the reverse path; RDMA and NVLink have none. By default the reverse
  // traffic comes with the TCP model (lv08) only.
  n.cross_traffic = section.boolean("cross_traffic", n.model == NetworkModel::lv08);
  return n;
}

} // namespace dtsim::scenario::detail

namespace dtsim::scenario {

bool overlaps_p2p(const calibration::Framework& framework, const ParallelismSpec& spec) {
  if (spec.overlap.given.p2p) return *spec.overlap.given.p2p;
  return framework.overlap_p2p && spec.pipeline > 1 && spec.interleaved();
}

} // namespace dtsim::scenario
