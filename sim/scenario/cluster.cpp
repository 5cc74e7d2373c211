// The "cluster" section: nodes, GPUs, and the links between them, with defaults from the GPU profile.
#include "sim/scenario/reader.hpp"

#include "topologies/instance.hpp"

#include <fmt/format.h>

#include <optional>

namespace dtsim::scenario::detail {
namespace {

constexpr std::int64_t kMaxNodes = std::int64_t{1} << 20;
constexpr std::int64_t kMaxGpusPerNode = 1024;

// The model's precision must be one the GPU has a peak rate for.
void check_precision(const Object& top, const Scenario& s) {
  try {
    (void)s.gpu.peak(s.model.precision);
  } catch (const std::exception&) {
    std::vector<std::string> supported;
    for (const auto& name : calibration::precision_names()) {
      try {
        (void)s.gpu.peak(*calibration::parse_precision(name));
        supported.push_back(name);
      } catch (const std::exception&) {
      }
    }
    throw ScenarioError(top.file(), "/model/precision",
                        fmt::format("GPU profile \"{}\" has no peak rate for {}; it supports {}", s.gpu.name,
                                    calibration::to_string(s.model.precision), quoted_list(supported)));
  }
}

// A link's bandwidth and latency; `default_bandwidth` <= 0 means the profile has none and it must be given.
topologies::LinkSpec read_link(const Object& section, double default_bandwidth, double default_latency,
                               const std::string& why_required) {
  topologies::LinkSpec link;
  if (!section.has("bandwidth") && default_bandwidth <= 0)
    section.fail("bandwidth", fmt::format("missing; expected {} ({})", describe(Dimension::bandwidth), why_required));
  link.bandwidth = section.quantity("bandwidth", Dimension::bandwidth, Bound::positive,
                                    default_bandwidth > 0 ? std::optional(default_bandwidth) : std::nullopt);
  link.latency = section.quantity("latency", Dimension::time, Bound::non_negative, default_latency);
  return link;
}

// A torus of the given dimensions (their product is the node count), or a ring of all the nodes.
void read_torus(const Object& t, const std::string& kind, topologies::ClusterSpec& cluster) {
  for (const char* key : {"nodes_per_leaf", "leaves_per_pod", "oversubscription"})
    if (t.has(key)) t.fail(key, fmt::format("a {} has no switches: expected no \"{}\"", kind, key));
  if (kind == "ring") {
    if (t.has("dimensions")) t.fail("dimensions", "a ring's one dimension is the node count");
    cluster.torus = {cluster.nodes};
    return;
  }
  const auto* dims = t.get("dimensions");
  if (!dims || !dims->is_array() || dims->empty() || dims->size() > 3)
    t.fail("dimensions", fmt::format("expected 1 to 3 sizes such as [4, 4], got {}", dims ? show(*dims) : "nothing"));
  long product = 1;
  for (const auto& d : *dims) {
    if (!d.is_number_integer() || d.get<long>() < 1)
      t.fail("dimensions", fmt::format("expected positive integers, got {}", show(*dims)));
    cluster.torus.push_back(d.get<int>());
    product *= d.get<long>();
  }
  if (product != cluster.nodes)
    t.fail("dimensions", fmt::format("{} makes {} nodes, but the cluster has {}", show(*dims), product, cluster.nodes));
  if (cluster.switch_reduces) t.fail("kind", "a torus has no switch to reduce in (cluster.switch.sharp)");
}

// The network between the nodes: one switch, a leaf-spine (one tier of leaf switches under the spine) or a
// three-tier fat-tree (leaves, pods, core), each tier with an oversubscription.
void read_topology(const Object& c, topologies::ClusterSpec& cluster) {
  const Object t = c.object("topology", {"kind", "nodes_per_leaf", "leaves_per_pod", "oversubscription", "dimensions"});
  static const std::vector<std::string> kinds{"single-switch", "leaf-spine", "fat-tree", "torus", "ring"};
  const auto kind = t.choice("kind", kinds, "topology", std::string("single-switch"));
  if (kind == "torus" || kind == "ring") {
    read_torus(t, kind, cluster);
    return;
  }
  if (t.has("dimensions")) t.fail("dimensions", "only a torus has dimensions");
  if (kind == "single-switch") {
    for (const char* key : {"nodes_per_leaf", "leaves_per_pod", "oversubscription"})
      if (t.has(key)) t.fail(key, "a single switch has no tiers: expected no \"" + std::string(key) + "\"");
    return;
  }
  const int per_leaf = static_cast<int>(t.integer("nodes_per_leaf", 1, std::nullopt, kMaxNodes));
  std::vector<double> over;
  if (const auto* o = t.get("oversubscription"); o && o->is_array()) {
    for (std::size_t i = 0; i < o->size(); ++i) {
      if (!(*o)[i].is_number() || (*o)[i].get<double>() < 1)
        t.fail("oversubscription",
               fmt::format("expected ratios >= 1 (one per tier, from the leaves up), got {}", show(*o)));
      over.push_back((*o)[i].get<double>());
    }
  } else {
    over.push_back(t.number("oversubscription", 1, 1.0));
  }
  cluster.tiers.push_back({per_leaf, over.at(0)});
  if (kind == "fat-tree") {
    const int per_pod = static_cast<int>(t.integer("leaves_per_pod", 1, std::nullopt, kMaxNodes));
    cluster.tiers.push_back({per_pod, over.size() > 1 ? over[1] : over[0]});
  } else if (t.has("leaves_per_pod")) {
    t.fail("leaves_per_pod", "a leaf-spine has no pods: use \"kind\": \"fat-tree\"");
  }
  if (over.size() > cluster.tiers.size())
    t.fail("oversubscription", fmt::format("{} ratios for {} tiers", over.size(), cluster.tiers.size()));
  if (const auto problem = topologies::check_tiers(cluster); !problem.empty()) t.fail("nodes_per_leaf", problem);
}

} // namespace

void read_cluster(const Object& top, Scenario& s) {
  const Object c = top.object("cluster", {"instance", "nodes", "gpus_per_node", "gpu", "intra_node", "pcie", "nic",
                                          "switch", "topology", "price_per_hour"});
  if (!c.present())
    top.fail("cluster", "missing; expected an object with \"nodes\" and either \"instance\" or \"gpu\" and \"nic\"");
  auto& cluster = s.cluster;
  // A cloud instance fills in the node: its GPUs, fabric, network and price; explicit fields override it.
  std::optional<topologies::Instance> instance;
  if (c.has("instance")) {
    cluster.instance = c.choice("instance", topologies::instance_names(), "cloud instance", std::nullopt);
    instance = topologies::find_instance(cluster.instance);
  }
  cluster.nodes = static_cast<int>(c.integer("nodes", 1, std::nullopt, kMaxNodes));
  cluster.gpus_per_node =
      static_cast<int>(c.integer("gpus_per_node", 1, instance ? instance->gpus : 1, kMaxGpusPerNode));
  cluster.gpu = c.choice("gpu", calibration::profile_names(), "GPU profile",
                         instance ? std::optional<std::string>(instance->gpu) : std::nullopt);
  cluster.price_per_node_hour =
      c.number("price_per_hour", 0, instance ? std::optional<double>(instance->price.on_demand_per_hour) : 0.0);
  auto profile = calibration::find_profile(cluster.gpu);
  if (!profile) c.fail("gpu", fmt::format("GPU profile \"{}\" is listed but cannot be loaded", cluster.gpu));
  s.gpu = std::move(*profile);
  cluster.message_overhead = s.gpu.collective_step_overhead;
  check_precision(top, s);

  const Object intra = c.object("intra_node", {"fabric", "bandwidth", "latency", "sharp"});
  const bool has_nvlink = s.gpu.nvlink_bandwidth > 0;
  const bool instance_nvlink = instance && instance->fabric == "nvlink";
  const std::string fabric = intra.choice("fabric", fabric_names(), "intra-node fabric",
                                          (instance ? instance_nvlink : has_nvlink) ? "nvlink" : "pcie");
  const bool nvlink = fabric == "nvlink";
  cluster.intra_kind = nvlink ? topologies::IntraNodeKind::nvlink : topologies::IntraNodeKind::pcie;
  const double instance_intra = instance && instance->intra_bandwidth > 0 ? instance->intra_bandwidth : 0;
  cluster.intra =
      read_link(intra,
                instance_intra > 0 ? instance_intra
                : nvlink           ? s.gpu.nvlink_bandwidth
                                   : s.gpu.pcie_bandwidth,
                nvlink ? 1e-6 : 2e-6, fmt::format("GPU profile \"{}\" has no {} bandwidth", s.gpu.name, fabric));
  cluster.nvswitch_reduces = intra.boolean("sharp", false);
  if (cluster.nvswitch_reduces && !nvlink)
    intra.fail("sharp", "NVLink SHARP needs the nvlink fabric (an NVSwitch); this node's fabric is pcie");

  const Object pcie = c.object("pcie", {"bandwidth", "latency"});
  cluster.pcie =
      read_link(pcie, s.gpu.pcie_bandwidth, 1e-6, fmt::format("GPU profile \"{}\" has no PCIe bandwidth", s.gpu.name));

  // One NIC link per node for now: an instance's NICs count as one of their summed bandwidth (rails arrive with
  // the topologies).
  const Object nic = c.object("nic", {"bandwidth", "latency"});
  if (!nic.present() && !instance)
    c.fail("nic", "missing; expected an object with the NIC's \"bandwidth\" (for example {\"bandwidth\": \"10Gbps\"})");
  cluster.nic = read_link(nic, instance ? instance->network_bandwidth() : 0, 5e-6,
                          instance ? fmt::format("{} does not publish its network bandwidth", instance->name)
                                   : std::string("the NIC has no default"));

  const Object sw = c.object("switch", {"latency", "sharp"});
  cluster.switch_latency = sw.quantity("latency", Dimension::time, Bound::non_negative, 1e-6);
  cluster.switch_reduces = sw.boolean("sharp", false);
  read_topology(c, cluster);
}

} // namespace dtsim::scenario::detail
