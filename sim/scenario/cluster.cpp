// The "cluster" section: nodes, GPUs, and the links between them, with defaults from the GPU profile.
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include "topologies/instance.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

namespace dtsim::scenario::detail {
namespace {

constexpr std::int64_t kMaxNodes = limits::kNodes;
constexpr std::int64_t kMaxGpusPerNode = limits::kGpusPerNode;

// A NIC crossing's latency when the scenario gives none. RDMA: NCCL prices its fastest step between GPUs of two nodes
// at 2.7 us (tuning.cc hwLatencies, NET, Ring LL), a path that crosses PCIe twice (0.5 us each, below), two NIC links
// and a switch (1 us): 0.35 us a NIC link. Sockets keep dtsim's earlier 5 us a crossing: NCCL's tuning has no socket
// figure of its own, and a kernel TCP stack adds microseconds a message that RDMA does not.
constexpr double kRdmaNicLatency = 0.35e-6; // (2.7 - 2 x 0.5 - 1) / 2 us
constexpr double kTcpNicLatency = 5e-6;

// The model's precision must be one the GPU has a peak rate for.
void check_precision(const Object& top, const Scenario& s, const calibration::GpuProfile& gpu) {
  try {
    (void)gpu.peak(s.model.precision);
  } catch (const std::exception&) {
    std::vector<std::string> supported;
    for (const auto& name : calibration::precision_names()) {
      try {
        (void)gpu.peak(*calibration::parse_precision(name));
        supported.push_back(name);
      } catch (const std::exception&) {
      }
    }
    throw ScenarioError(top.file(), "/model/precision",
                        fmt::format("GPU profile \"{}\" has no peak rate for {}; it supports {}", gpu.name,
                                    calibration::to_string(s.model.precision), quoted_list(supported)));
  }
}

std::string expected_gpu() {
  return fmt::format("a shipped profile ({}) or the path of a profile file, relative to the scenario's folder or the "
                     "current directory",
                     quoted_list(calibration::profile_names()));
}

// cluster.gpu as written (the instance's GPU when absent).
std::string gpu_name(const Object& cluster, std::optional<std::string> fallback) {
  if (!cluster.has("gpu") && fallback) return *fallback;
  if (!cluster.has("gpu")) cluster.fail("gpu", "missing; expected " + expected_gpu());
  const auto& v = *cluster.get("gpu");
  if (!v.is_string() || v.get<std::string>().empty())
    cluster.fail("gpu", fmt::format("expected {}, got {}", expected_gpu(), show(v)));
  return v.get<std::string>();
}

// cluster.gpu: a shipped profile's name, or a profile file (`dtsim calibrate`'s output) relative to the scenario
// file's folder or, failing that, to the current directory (where a `--set cluster.gpu=my.json` names it from). A
// file that is not a valid profile is reported in its own terms: its path and the JSON pointer inside it.
calibration::GpuProfile resolve_gpu(const Object& cluster, const std::string& name_or_path) {
  const auto scenario_folder = std::filesystem::path(cluster.file()).parent_path().string();
  std::optional<calibration::GpuProfile> profile;
  try {
    profile = calibration::resolve_profile(name_or_path, {scenario_folder.empty() ? "." : scenario_folder, "."});
  } catch (const calibration::CalibrationError& e) {
    throw ScenarioError(
        e.file(), e.pointer(),
        fmt::format("{} (the GPU profile named by {} in {})", e.detail(), cluster.pointer("gpu"), cluster.file()));
  }
  if (profile) return std::move(*profile);
  const std::string hint = did_you_mean(name_or_path, calibration::profile_names());
  cluster.fail("gpu",
               hint.empty()
                   ? fmt::format("unknown GPU profile \"{}\"; expected {}", name_or_path, expected_gpu())
                   : fmt::format("unknown GPU profile \"{}\"{} Expected {}", name_or_path, hint, expected_gpu()));
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

// The instance's fabric, else NVLink through an NVSwitch when the GPU has NVLink, else PCIe.
std::string default_fabric(const std::optional<topologies::Instance>& instance, const calibration::GpuProfile& gpu) {
  if (!instance) return gpu.nvlink_bandwidth > 0 ? "nvlink" : "pcie";
  if (instance->fabric != "nvlink") return "pcie";
  return instance->topology == "hybrid-cube-mesh" ? "hybrid-cube-mesh" : "nvlink";
}

// nic.transport: TCP's streams, per-stream limit and MTU (topologies/cluster.hpp TcpTransport), the instance's where
// it has a TCP network; RDMA otherwise.
void read_transport(const Object& nic, const std::optional<topologies::Instance>& instance,
                    topologies::TcpTransport& tcp) {
  const topologies::TcpTransport base = instance ? instance->tcp : topologies::TcpTransport{};
  const std::string transport = nic.choice("transport", {"rdma", "tcp"}, "transport", base.enabled ? "tcp" : "rdma");
  tcp = base;
  tcp.enabled = transport == "tcp";
  for (const char* key : {"streams", "stream_bandwidth", "mtu"})
    if (nic.has(key) && !tcp.enabled) nic.fail(key, "only a TCP network has TCP streams (set \"transport\": \"tcp\")");
  tcp.streams = static_cast<int>(nic.integer("streams", 1, tcp.streams, 1024));
  if (nic.has("stream_bandwidth"))
    tcp.stream_bandwidth = nic.quantity("stream_bandwidth", Dimension::bandwidth, Bound::positive, std::nullopt);
  tcp.mtu = static_cast<double>(nic.integer("mtu", 576, static_cast<std::int64_t>(tcp.mtu), 65536));
}

// cluster.groups: consecutive runs of nodes, each of one GPU; their nodes add up to cluster.nodes.
//   "groups": [{"gpu": "v100", "nodes": 4}, {"gpu": "a100-80gb", "nodes": 4, "price_per_hour": 4.1, "name": "new"}]
const std::vector<std::string> kClusterKeys{"instance",   "nodes",          "gpus_per_node", "gpu",
                                            "intra_node", "pcie",           "nic",           "switch",
                                            "topology",   "price_per_hour", "groups",        "batch_split"};

void read_groups(const Object& top, const Object& c, Scenario& s) {
  const json* list = c.get("groups");
  if (!list->is_array() || list->size() < 2)
    c.fail("groups", fmt::format("expected an array of at least two node groups, each {{\"gpu\": ..., \"nodes\": N}}, "
                                 "got {}",
                                 show(*list)));
  std::int64_t nodes = 0;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const Object g(c.file(), &(*list)[i], c.pointer("groups") + "/" + std::to_string(i),
                   {"name", "gpu", "nodes", "price_per_hour", "nic"});
    GpuGroup group;
    group.gpu_name = gpu_name(g, std::nullopt);
    group.gpu = resolve_gpu(g, group.gpu_name);
    check_precision(top, s, group.gpu); // every group runs the model's math
    group.name = g.string("name", group.gpu.name);
    group.nodes = static_cast<int>(g.integer("nodes", 1, std::nullopt, kMaxNodes));
    group.first_rank = static_cast<int>(nodes * s.cluster.gpus_per_node);
    group.ranks = group.nodes * s.cluster.gpus_per_node;
    group.price_per_node_hour = g.number("price_per_hour", 0, s.cluster.price_per_node_hour, limits::kPricePerHour);
    if ((group.gpu.compute_capability > 0) != (s.gpu.compute_capability > 0))
      g.fail("gpu", "a cluster mixes GPUs, not GPUs and CPUs: their collectives would run over different libraries");
    if (g.has("nic")) {
      // Each node of the group on its own NIC; the switches above are the cluster's.
      const auto& topology = s.cluster;
      if (topology.rail.rails > 0 || !topology.torus.empty() || !topology.explicit_network.links.empty())
        g.fail("nic", "a group's own NIC needs a switched network (tiers, leaf-spine, fat-tree or dragonfly): rails, a "
                      "torus and an explicit network are drawn with one NIC for every node");
      group.nic = read_link(g.object("nic", {"bandwidth", "latency"}), 0, s.cluster.nic.latency,
                            "a group's NIC has no default bandwidth");
    }
    nodes += group.nodes;
    s.groups.push_back(std::move(group));
  }
  if (std::any_of(s.groups.begin(), s.groups.end(), [](const GpuGroup& g) { return g.nic.has_value(); }))
    for (const auto& g : s.groups)
      for (int n = 0; n < g.nodes; ++n)
        s.cluster.node_nics.push_back(g.nic.value_or(s.cluster.nic));
  if (nodes != s.cluster.nodes)
    c.fail("groups",
           fmt::format("the groups have {} nodes in all, the cluster {} (cluster.nodes): every node belongs to "
                       "exactly one group",
                       nodes, s.cluster.nodes));
  // The cluster's price is the mean over its nodes, so that the whole cluster's hour costs what its groups do.
  double price = 0;
  for (const auto& g : s.groups)
    price += g.price_per_node_hour * g.nodes;
  s.cluster.price_per_node_hour = price / s.cluster.nodes;
  s.batch_split = c.choice("batch_split", {"equal", "proportional"}, "batch split", "equal") == "equal"
                      ? BatchSplit::equal
                      : BatchSplit::proportional;
}

} // namespace

void check_groups(const Object& top, const Scenario& s) {
  if (s.groups.empty()) return;
  const Object c = top.object("cluster", kClusterKeys);
  const auto& p = s.parallelism;
  if (p.expert > 1 || p.context > 1)
    c.fail("groups", "a cluster of mixed GPUs trains with data, tensor and pipeline parallelism here: expert and "
                     "context parallelism over groups are not modeled");
  if (p.model_parallel() && s.batch_split == BatchSplit::proportional)
    c.fail("batch_split", "with pipeline or tensor parallelism the groups get pipeline stages sized to their speed "
                          "(HetPipe), not proportional batches: use \"equal\"");
  if (s.training.strategy.kind != strategies::Kind::allreduce)
    c.fail("groups", fmt::format("a cluster of mixed GPUs runs the all-reduce strategy here, not \"{}\"",
                                 strategies::strategy_name(s.training.strategy)));
}

void read_cluster(const Object& top, Scenario& s) {
  const Object c = top.object("cluster", kClusterKeys);
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
  // A mixed cluster's GPU is its first group's: what the node's fabric and the model's precision are checked against.
  std::optional<std::string> first_group;
  if (const json* groups = c.get("groups"); groups && groups->is_array() && !groups->empty() &&
                                            (*groups)[0].is_object() && (*groups)[0].contains("gpu") &&
                                            (*groups)[0]["gpu"].is_string())
    first_group = (*groups)[0]["gpu"].get<std::string>();
  if (first_group && c.has("gpu")) c.fail("gpu", "a cluster with \"groups\" names each group's GPU there, not here");
  cluster.gpu = gpu_name(c, first_group ? first_group
                            : instance  ? std::optional<std::string>(instance->gpu)
                                        : std::nullopt);
  if (static_cast<std::int64_t>(cluster.nodes) * cluster.gpus_per_node > limits::kGpus)
    c.fail(c.has("gpus_per_node") ? "gpus_per_node" : "nodes",
           fmt::format("{} nodes x {} GPUs is {} GPUs; the format takes at most {} (2^24) in one cluster",
                       cluster.nodes, cluster.gpus_per_node,
                       static_cast<std::int64_t>(cluster.nodes) * cluster.gpus_per_node, limits::kGpus));
  cluster.price_per_node_hour =
      c.number("price_per_hour", 0, instance ? std::optional<double>(instance->price.on_demand_per_hour) : 0.0,
               limits::kPricePerHour);
  s.gpu = resolve_gpu(c, cluster.gpu);
  cluster.message_overhead = s.gpu.collective_step_overhead;
  cluster.compute_capability = s.gpu.compute_capability;
  cluster.compute_units = s.gpu.compute_units;
  cluster.memory_bandwidth = s.gpu.memory_bandwidth * s.gpu.memory_efficiency;
  cluster.pcie_efficiency = s.gpu.pcie_efficiency;
  check_precision(top, s, s.gpu);

  const Object intra = c.object("intra_node", {"fabric", "bandwidth", "latency", "sharp", "gpus_per_pcie_switch"});
  const std::string fabric =
      intra.choice("fabric", fabric_names(), "intra-node fabric", default_fabric(instance, s.gpu));
  cluster.intra_kind = fabric == "nvlink"             ? topologies::IntraNodeKind::nvlink
                       : fabric == "hybrid-cube-mesh" ? topologies::IntraNodeKind::hybrid_cube_mesh
                       : fabric == "pcie-tree"        ? topologies::IntraNodeKind::pcie_tree
                                                      : topologies::IntraNodeKind::pcie;
  const bool nvlink = fabric == "nvlink" || fabric == "hybrid-cube-mesh";
  // A GPU's NVLink bandwidth (the instance's, else the profile's); a cube-mesh link is one of its six NVLinks.
  const double gpu_nvlink = instance && instance->intra_bandwidth > 0 && instance->fabric == "nvlink"
                                ? instance->intra_bandwidth
                                : s.gpu.nvlink_bandwidth;
  const double default_intra = fabric == "nvlink"             ? gpu_nvlink
                               : fabric == "hybrid-cube-mesh" ? gpu_nvlink / 6
                                                              : s.gpu.pcie_bandwidth;
  // A hop between two GPUs crosses two links (GPU to NVSwitch or PCIe root, then to the other GPU): NCCL's LL step,
  // its smallest message, takes 0.6 us over NVLink and 1 us over PCIe (tuning.cc hwLatencies), so half that a link.
  cluster.intra = read_link(intra, default_intra, nvlink ? 0.3e-6 : 0.5e-6,
                            fmt::format("GPU profile \"{}\" has no {} bandwidth", s.gpu.name, fabric));
  cluster.gpus_per_pcie_switch = static_cast<int>(intra.integer("gpus_per_pcie_switch", 1, 2, kMaxGpusPerNode));
  if (intra.has("gpus_per_pcie_switch") && fabric != "pcie-tree")
    intra.fail("gpus_per_pcie_switch",
               fmt::format("only a pcie-tree fabric has PCIe switches to set; this node's fabric is {}", fabric));
  if (fabric == "hybrid-cube-mesh" && cluster.gpus_per_node != 8)
    intra.fail("fabric", fmt::format("a hybrid cube-mesh joins 8 GPUs; this node has {}", cluster.gpus_per_node));
  cluster.fabric_efficiency = nvlink ? s.gpu.nvlink_efficiency : s.gpu.pcie_efficiency;
  cluster.nvswitch_reduces = intra.boolean("sharp", false);
  if (cluster.nvswitch_reduces && fabric != "nvlink")
    intra.fail("sharp",
               fmt::format("NVLink SHARP needs the nvlink fabric (an NVSwitch); this node's fabric is {}", fabric));

  const Object pcie = c.object("pcie", {"bandwidth", "latency"});
  cluster.pcie = read_link(pcie, s.gpu.pcie_bandwidth, 0.5e-6,
                           fmt::format("GPU profile \"{}\" has no PCIe bandwidth", s.gpu.name));

  // The node's network bandwidth: an instance's NICs summed. A rail-optimized topology splits it among the rails;
  // every other topology bonds the NICs into one link.
  const Object nic = c.object("nic", {"bandwidth", "latency", "transport", "streams", "stream_bandwidth", "mtu"});
  if (!nic.present() && !instance)
    c.fail("nic", "missing; expected an object with the NIC's \"bandwidth\" (for example {\"bandwidth\": \"10Gbps\"})");
  read_transport(nic, instance, cluster.tcp);
  cluster.nic = read_link(nic, instance ? instance->network_bandwidth() : 0,
                          cluster.tcp.enabled ? kTcpNicLatency : kRdmaNicLatency,
                          instance ? fmt::format("{} does not publish its network bandwidth", instance->name)
                                   : std::string("the NIC has no default"));

  const Object sw = c.object("switch", {"latency", "sharp"});
  cluster.switch_latency = sw.quantity("latency", Dimension::time, Bound::non_negative, 1e-6);
  cluster.switch_reduces = sw.boolean("sharp", false);
  read_topology(c, instance ? instance->nics : 0, cluster);
  cluster.nic_ports = std::max(cluster.nics_per_node(), instance ? instance->nics : 1);
  if (c.has("groups")) read_groups(top, c, s);
  if (c.has("batch_split") && !c.has("groups"))
    c.fail("batch_split", "only a cluster with \"groups\" of different GPUs splits its batch unequally");
}

} // namespace dtsim::scenario::detail
