#include "tests/invariants/scenario_generator.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace dtsim::invariants {
namespace {

using nlohmann::json;

// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a fixed sequence for a seed on every platform.
class Draw {
public:
  explicit Draw(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // One of the values, each as likely (the modulo bias over 2^64 is far below anything a test sees).
  template <typename T> T pick(const std::vector<T>& values) { return values[next() % values.size()]; }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

private:
  std::uint64_t state_;
};

struct Gpu {
  std::string profile;
  std::vector<std::string> precisions;
};

// The network between the nodes: a switch, a leaf-spine of two nodes per leaf, or a ring.
json topology(Draw& draw, int nodes) {
  if (nodes < 2) return {{"kind", "single-switch"}};
  const std::string kind = draw.pick<std::string>({"single-switch", "leaf-spine", "ring"});
  if (kind == "leaf-spine" && nodes >= 4)
    return {{"kind", kind}, {"nodes_per_leaf", 2}, {"oversubscription", draw.pick<int>({1, 2, 4})}};
  if (kind == "ring") return {{"kind", "ring"}}; // a ring of every node, whatever their count
  return {{"kind", "single-switch"}};
}

// Tensor x pipeline over the GPUs (tensor inside a node, the heads and layers split evenly); none where nothing fits.
void model_parallel(Draw& draw, json& s, int gpus_per_node, int world, int heads, int layers, GeneratedScenario& g) {
  std::vector<int> tensors{1};
  for (int t = 2; t <= std::min(gpus_per_node, 4); t *= 2)
    if (heads % t == 0) tensors.push_back(t);
  const int tensor = draw.pick(tensors);
  const int pipeline = (world / tensor) % 2 == 0 && layers % 2 == 0 ? draw.pick<int>({1, 2}) : 1;
  if (tensor * pipeline == 1) return;
  json p{{"tensor", tensor}, {"pipeline", pipeline}, {"micro_batches", draw.pick<int>({1, 2, 4})}};
  if (pipeline > 1) p["schedule"] = draw.pick<std::string>({"1f1b", "gpipe"});
  if (tensor > 1) p["sequence_parallel"] = draw.chance(0.5);
  s["parallelism"] = p;
  g.model_parallel = true;
}

} // namespace

GeneratedScenario generate_scenario(std::uint64_t seed) {
  Draw draw(seed);
  GeneratedScenario g;
  g.seed = seed;

  const Gpu gpu = draw.pick<Gpu>(
      {{"v100", {"fp32", "fp16"}}, {"a100-80gb", {"fp32", "bf16", "fp16"}}, {"h100-sxm", {"bf16", "fp16"}}});
  int gpus_per_node = draw.pick<int>({1, 2, 4, 8});
  const int nodes = draw.pick<int>({1, 2, 4});
  if (nodes * gpus_per_node > 16) gpus_per_node = 16 / nodes;
  const int world = nodes * gpus_per_node;

  // Models: vision and MLP presets, transformer presets, and short transformers of a preset's shape.
  const std::string family = draw.pick<std::string>({"vision", "transformer", "short-transformer"});
  json model;
  int heads = 0, layers = 0;
  if (family == "vision") {
    model = {{"preset", draw.pick<std::string>({"mlp-small", "resnet50", "resnet50", "vgg16"})},
             {"batch_per_gpu", draw.pick<int>({16, 32, 64})}};
  } else if (family == "transformer") {
    const std::string preset = draw.pick<std::string>({"bert-base", "gpt2", "gpt3-125m"});
    model = {{"preset", preset}, {"batch_per_gpu", draw.pick<int>({1, 2, 4, 8})}};
    heads = 12;
    layers = 12;
  } else {
    layers = draw.pick<int>({2, 4, 8});
    model = {
        {"transformer", {{"base", "gpt3-125m"}, {"layers", layers}, {"sequence", draw.pick<int>({256, 512, 1024})}}},
        {"batch_per_gpu", draw.pick<int>({1, 4, 8})}};
    heads = 12;
  }
  model["precision"] = draw.pick(gpu.precisions);

  json cluster{{"nodes", nodes}, {"gpus_per_node", gpus_per_node}, {"gpu", gpu.profile}};
  if (gpus_per_node > 1) cluster["intra_node"] = {{"fabric", draw.pick<std::string>({"nvlink", "pcie"})}};
  const int gbps = draw.pick<int>({10, 25, 50, 100, 200, 400});
  json nic{{"bandwidth", fmt::format("{}Gbps", gbps)}, {"latency", fmt::format("{}us", draw.pick<int>({2, 5, 25}))}};
  if (gbps <= 100 && draw.chance(0.4)) nic["transport"] = "tcp";
  cluster["nic"] = nic;
  cluster["topology"] = topology(draw, nodes);
  cluster["price_per_hour"] = draw.pick<double>({3.06, 12.24, 32.77, 98.32});

  json s{{"version", 1},       {"name", fmt::format("generated-{}", seed)},
         {"model", model},     {"dataset", {{"samples", 1'000'000}}},
         {"cluster", cluster}, {"run", {{"iterations", 2}, {"warmup_iterations", 1}, {"seed", draw.next() % 1000}}}};

  json training{{"optimizer", family == "vision" ? "momentum" : "adam"}};
  const bool transformer = family != "vision";
  if (transformer && world > 1 && draw.chance(0.5)) model_parallel(draw, s, gpus_per_node, world, heads, layers, g);
  if (!g.model_parallel && world > 1) {
    const std::string strategy = draw.pick<std::string>(
        {"allreduce", "allreduce", "allreduce", "ps-sync", "ps-async", "ssp:2", "local-sgd:2", "dpsgd", "easgd:2"});
    // Server shards on the workers' nodes (MXNet's and BytePS's layout), so that every GPU trains and one node is
    // enough.
    if (strategy != "allreduce") training["strategy"] = {{"name", strategy}, {"servers", {{"placement", "colocated"}}}};
    // A server on every node: more nodes, more shards, each updating and serving a smaller part of the model.
    if (strategy.starts_with("ps") || strategy.starts_with("ssp") || strategy.starts_with("easgd"))
      g.sharded_state = true;
    if (strategy == "allreduce" && transformer && draw.chance(0.4)) {
      training["zero_stage"] = draw.pick<int>({1, 2, 3});
      g.sharded_state = true;
    }
  }
  if (transformer && draw.chance(0.3)) training["recompute"] = draw.pick<std::string>({"selective", "full"});
  // No overlap of the gradients' reduction with backward (ZeRO-3 always overlaps: it reduces each unit as it ends).
  if (draw.chance(0.3) && training.value("zero_stage", 0) != 3) training["overlap"] = false;
  s["training"] = training;
  if (world > 1 && draw.chance(0.2))
    s["stragglers"] = {{"ranks", {0}}, {"slowdown", 1.5}, {"jitter", {{"distribution", "lognormal"}, {"scale", 0.1}}}};
  // An older NCCL: rings only (2.3), no LL128 (2.4), trees cut into finer chunks (2.4 to 2.19).
  if (world > 1 && draw.chance(0.25))
    s["training"]["nccl"] = draw.pick<std::string>({"2.3.7", "2.4.8", "2.6.3", "2.19.4"});

  g.json = s.dump(2);
  g.summary = fmt::format("seed {}: {} x{} on {} nodes x {} {} ({} Gb/s{}, {}), {}{}", seed,
                          model.contains("preset") ? model["preset"].get<std::string>() : "short transformer",
                          model["batch_per_gpu"].get<int>(), nodes, gpus_per_node, gpu.profile, gbps,
                          nic.contains("transport") ? " tcp" : "", cluster["topology"]["kind"].get<std::string>(),
                          s.contains("parallelism") ? s["parallelism"].dump() : "data parallel",
                          training.contains("strategy") ? ", " + training["strategy"]["name"].get<std::string>() : "");
  return g;
}

} // namespace dtsim::invariants
