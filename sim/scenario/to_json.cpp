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
  json out = {{"batch_per_gpu", m.batch_per_gpu}, {"precision", calibration::to_string(m.precision)}};
  if (!m.preset.empty()) {
    out["preset"] = m.preset;
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
                      {"output_elements", l.output_elements}});
  out["layers"] = std::move(layers);
  return out;
}

nlohmann::json topology_json(const topologies::ClusterSpec& c) {
  if (!c.torus.empty()) return {{"kind", "torus"}, {"dimensions", c.torus}};
  if (c.tiers.empty()) return {{"kind", "single-switch"}};
  nlohmann::json over = nlohmann::json::array();
  for (const auto& t : c.tiers)
    over.push_back(t.oversubscription);
  nlohmann::json out = {{"kind", c.tiers.size() == 1 ? "leaf-spine" : "fat-tree"},
                        {"nodes_per_leaf", c.tiers[0].fan_in},
                        {"oversubscription", over}};
  if (c.tiers.size() > 1) out["leaves_per_pod"] = c.tiers[1].fan_in;
  return out;
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
        {"intra_node",
         {{"fabric", c.intra_kind == topologies::IntraNodeKind::nvlink ? "nvlink" : "pcie"},
          {"bandwidth", c.intra.bandwidth},
          {"latency", c.intra.latency},
          {"sharp", c.nvswitch_reduces}}},
        {"pcie", link_json(c.pcie)},
        {"nic", link_json(c.nic)},
        {"switch", {{"latency", c.switch_latency}, {"sharp", c.switch_reduces}}},
        {"price_per_hour", c.price_per_node_hour},
        {"topology", topology_json(c)}}},
      {"training",
       {{"strategy", to_string(s.training.strategy)},
        {"algorithm", collectives::to_string(s.training.algorithm)},
        {"bucket_size", s.training.bucket_bytes},
        {"first_bucket_size", s.training.first_bucket_bytes},
        {"overlap", s.training.overlap},
        {"optimizer", to_string(s.training.optimizer)}}},
      {"run",
       {{"iterations", s.run.iterations},
        {"warmup_iterations", s.run.warmup_iterations},
        {"seed", s.run.seed},
        {"fidelity", to_string(s.run.fidelity)}}},
      {"network", {{"model", to_string(s.network.model)}, {"cross_traffic", s.network.cross_traffic}}},
  };
  // "dataset" is optional and has no neutral value: it is left out when the samples per epoch are unknown.
  if (s.dataset.samples > 0) out["dataset"] = {{"samples", s.dataset.samples}, {"epochs", s.dataset.epochs}};
  if (!s.cluster.instance.empty()) out["cluster"]["instance"] = s.cluster.instance;
  return out;
}

} // namespace dtsim::scenario
