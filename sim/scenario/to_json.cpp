// The resolved scenario as a format-version-1 document: every default spelled out, quantities in base
// units. Parsing the result gives the same scenario back.
#include "sim/scenario/reader.hpp"

namespace dtsim::scenario {
namespace {

using detail::json;

json link_json(const topologies::LinkSpec& link) {
  return {{"bandwidth", link.bandwidth}, {"latency", link.latency}};
}

json model_json(const ModelSpec& m) {
  json out = {{"batch_per_gpu", m.batch_per_gpu},
              {"precision", calibration::to_string(m.precision)},
              {"attention", to_string(m.attention)}};
  if (m.precision == calibration::Precision::fp8)
    out["fp8_recipe"] = m.fp8_recipe == Fp8Recipe::tensorwise ? "tensorwise" : "delayed";
  if (m.trace) {
    out["trace"] = {{"format", m.trace->format}, {"path", m.trace->path}};
    if (m.trace->step) out["trace"]["step"] = *m.trace->step;
    if (!m.trace->model.empty()) out["trace"]["model"] = m.trace->model;
    return out;
  }
  if (!m.preset.empty()) {
    out["preset"] = m.preset;
    return out;
  }
  if (m.transformer) {
    out["transformer"] = detail::transformer_json(*m.transformer);
    return out;
  }
  json layers = json::array();
  for (const auto& l : m.workload.layers)
    layers.push_back({{"name", l.name},
                      {"kind", models::to_string(l.kind)},
                      {"forward_flops", l.forward_flops},
                      {"backward_flops", l.backward_flops},
                      {"parameters", l.parameters},
                      {"input_elements", l.input_elements},
                      {"output_elements", l.output_elements},
                      {"saved_elements", l.saved_elements}});
  out["layers"] = std::move(layers);
  return out;
}

nlohmann::json topology_json(const topologies::ClusterSpec& c) {
  const auto kind = topologies::network_kind(c);
  if (kind == "ring") return {{"kind", kind}};
  if (kind == "torus") return {{"kind", kind}, {"dimensions", c.torus}};
  if (kind == "explicit") {
    json switches = json::array(), links = json::array();
    for (const auto& sw : c.explicit_network.switches)
      switches.push_back({{"name", sw.name}, {"latency", sw.latency}});
    for (const auto& l : c.explicit_network.links)
      links.push_back({{"from", l.from}, {"to", l.to}, {"bandwidth", l.link.bandwidth}, {"latency", l.link.latency}});
    return {{"kind", kind}, {"switches", switches}, {"links", links}};
  }
  if (kind == "dragonfly") {
    const auto& d = c.dragonfly;
    return {{"kind", kind},
            {"groups", d.groups},
            {"routers_per_group", d.routers_per_group},
            {"nodes_per_router", d.nodes_per_router},
            {"links_between_groups", d.links_between_groups},
            {"global_bandwidth", d.global_bandwidth > 0 ? d.global_bandwidth : c.nic.bandwidth},
            {"local_bandwidth", d.local_bandwidth > 0 ? d.local_bandwidth : c.nic.bandwidth}};
  }
  if (kind == "rail-optimized") { // defaults that follow the node count stay unwritten
    json out = {{"kind", kind}, {"rails", c.rail.rails}, {"oversubscription", c.rail.oversubscription}};
    if (c.rail.nodes_per_group > 0) out["nodes_per_group"] = c.rail.nodes_per_group;
    if (c.rail.spines > 0) out["spines"] = c.rail.spines;
    return out;
  }
  if (c.fat_tree.k > 0)
    return {{"kind", kind},
            {"k", c.fat_tree.k},
            {"oversubscription", {c.fat_tree.edge_oversubscription, c.fat_tree.aggregation_oversubscription}}};
  if (c.tiers.empty()) return {{"kind", kind}};
  json over = json::array();
  for (const auto& t : c.tiers)
    over.push_back(t.oversubscription);
  json out = {{"kind", kind}, {"nodes_per_leaf", c.tiers[0].fan_in}, {"oversubscription", over}};
  if (c.tiers.size() > 1) out["leaves_per_pod"] = c.tiers[1].fan_in;
  if (c.spines > 0) out["spines"] = c.spines;
  return out;
}

json intra_node_json(const topologies::ClusterSpec& c) {
  json out = {{"fabric", topologies::to_string(c.intra_kind)},
              {"bandwidth", c.intra.bandwidth},
              {"latency", c.intra.latency},
              {"sharp", c.nvswitch_reduces}};
  if (c.intra_kind == topologies::IntraNodeKind::pcie_tree) out["gpus_per_pcie_switch"] = c.gpus_per_pcie_switch;
  return out;
}

// The node's link into the network and its transport: a TCP network's streams, per-stream rate and frames, so that a
// sweep's or comparison's points (each read back from this form) keep them.
json nic_json(const topologies::ClusterSpec& c) {
  json nic = link_json(c.nic);
  nic["transport"] = c.tcp.enabled ? "tcp" : "rdma";
  if (!c.tcp.enabled) return nic;
  nic["streams"] = c.tcp.streams;
  nic["stream_bandwidth"] = c.tcp.stream_bandwidth;
  nic["mtu"] = static_cast<std::int64_t>(c.tcp.mtu);
  return nic;
}

} // namespace

json to_json(const Scenario& s) {
  const auto& c = s.cluster;
  json out = {
      {"version", kFormatVersion},
      {"name", s.name},
      {"description", s.description},
      {"model", model_json(s.model)},
      {"cluster",
       {{"nodes", c.nodes},
        {"gpus_per_node", c.gpus_per_node},
        {"gpu", c.gpu},
        {"intra_node", intra_node_json(c)},
        {"pcie", link_json(c.pcie)},
        {"nic", nic_json(c)},
        {"switch", {{"latency", c.switch_latency}, {"sharp", c.switch_reduces}}},
        {"price_per_hour", c.price_per_node_hour},
        {"topology", topology_json(c)}}},
      {"training",
       {{"strategy", detail::strategy_json(s.training.strategy)},
        {"compression", detail::compression_json(s.training.compression)},
        {"algorithm", collectives::to_string(s.training.algorithm)},
        {"bucket_size", s.training.bucket_bytes},
        {"first_bucket_size", s.training.first_bucket_bytes},
        {"optimizer", to_string(s.training.optimizer)},
        {"recompute", to_string(s.training.recompute)},
        {"zero_stage", s.training.zero_stage},
        {"offload", to_string(s.training.offload)},
        {"host_memory_bandwidth", s.training.host_memory_bandwidth},
        {"framework", s.training.framework},
        {"nccl", collectives::nccl_version_name(s.cluster.nccl_version)}}},
      {"run",
       {{"iterations", s.run.iterations},
        {"warmup_iterations", s.run.warmup_iterations},
        {"seed", s.run.seed},
        {"fidelity", s.run.fidelity_auto ? std::string("auto") : std::string(to_string(s.run.fidelity))}}},
      {"network", {{"model", to_string(s.network.model)}, {"cross_traffic", s.network.cross_traffic}}},
  };
  if (!s.run.skip_repeats) out["run"]["skip_repeats"] = false;
  // clip_gradients only when given: its default follows the framework, which "auto" resolves by the layout.
  if (s.training.clip_gradients) out["training"]["clip_gradients"] = *s.training.clip_gradients;
  // overlap likewise: its default is the framework version's habit.
  if (s.training.overlap_given) out["training"]["overlap"] = *s.training.overlap_given;
  // "dataset" is optional and has no neutral value: it is left out when the samples per epoch are unknown.
  if (s.dataset.samples > 0) out["dataset"] = {{"samples", s.dataset.samples}, {"epochs", s.dataset.epochs}};
  if (!s.cluster.instance.empty()) out["cluster"]["instance"] = s.cluster.instance;
  if (!s.groups.empty()) {
    json groups = json::array();
    for (const auto& g : s.groups) {
      groups.push_back(
          {{"name", g.name}, {"gpu", g.gpu_name}, {"nodes", g.nodes}, {"price_per_hour", g.price_per_node_hour}});
      if (g.nic) groups.back()["nic"] = link_json(*g.nic);
    }
    out["cluster"].erase("gpu"); // each group names its own
    out["cluster"]["groups"] = std::move(groups);
    out["cluster"]["batch_split"] = s.batch_split == BatchSplit::equal ? "equal" : "proportional";
  }
  // "input" is optional too: without it the GPUs never wait for data. Its cores are written out, resolved.
  if (s.input) {
    const auto& in = *s.input;
    json input = {{"cpu_cores", in.cpu_cores}, {"samples_per_core_per_second", in.samples_per_core_per_second}};
    if (in.sample_bytes > 0) input["sample_bytes"] = in.sample_bytes;
    if (in.storage_bandwidth > 0) input["storage_bandwidth"] = in.storage_bandwidth;
    out["input"] = std::move(input);
  }
  // "stragglers" is left out when no worker is slowed: the section's absence means exactly that.
  if (s.stragglers.any() || s.stragglers.gpu_speed_sigma != strategies::kMeasuredGpuSpeedSigma ||
      s.stragglers.kernel_noise_sigma != strategies::kMeasuredKernelNoiseSigma)
    out["stragglers"] = detail::stragglers_json(s.stragglers);
  // "parallelism" is left out for plain data parallelism (its absence means one GPU per replica).
  if (s.parallelism.model_parallel()) out["parallelism"] = detail::parallelism_json(s.parallelism);
  out["energy"] = detail::energy_json(s.energy);
  return detail::lifecycle_json(s, std::move(out));
}

} // namespace dtsim::scenario
