// The "cluster" section: nodes, GPUs, and the links between them, with defaults from the GPU profile.
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

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

} // namespace

void read_cluster(const Object& top, Scenario& s) {
  const Object c = top.object("cluster", {"nodes", "gpus_per_node", "gpu", "intra_node", "pcie", "nic", "switch"});
  if (!c.present()) top.fail("cluster", "missing; expected an object with \"nodes\", \"gpu\" and \"nic\"");
  auto& cluster = s.cluster;
  cluster.nodes = static_cast<int>(c.integer("nodes", 1, std::nullopt, kMaxNodes));
  cluster.gpus_per_node = static_cast<int>(c.integer("gpus_per_node", 1, 1, kMaxGpusPerNode));
  cluster.gpu = c.choice("gpu", calibration::profile_names(), "GPU profile", std::nullopt);
  auto profile = calibration::find_profile(cluster.gpu);
  if (!profile) c.fail("gpu", fmt::format("GPU profile \"{}\" is listed but cannot be loaded", cluster.gpu));
  s.gpu = std::move(*profile);
  cluster.message_overhead = s.gpu.collective_step_overhead;
  check_precision(top, s);

  const Object intra = c.object("intra_node", {"fabric", "bandwidth", "latency", "sharp"});
  const bool has_nvlink = s.gpu.nvlink_bandwidth > 0;
  const std::string fabric =
      intra.choice("fabric", fabric_names(), "intra-node fabric", has_nvlink ? "nvlink" : "pcie");
  const bool nvlink = fabric == "nvlink";
  cluster.intra_kind = nvlink ? topologies::IntraNodeKind::nvlink : topologies::IntraNodeKind::pcie;
  cluster.intra = read_link(intra, nvlink ? s.gpu.nvlink_bandwidth : s.gpu.pcie_bandwidth, nvlink ? 1e-6 : 2e-6,
                            fmt::format("GPU profile \"{}\" has no {} bandwidth", s.gpu.name, fabric));
  cluster.nvswitch_reduces = intra.boolean("sharp", false);
  if (cluster.nvswitch_reduces && !nvlink)
    intra.fail("sharp", "NVLink SHARP needs the nvlink fabric (an NVSwitch); this node's fabric is pcie");

  const Object pcie = c.object("pcie", {"bandwidth", "latency"});
  cluster.pcie =
      read_link(pcie, s.gpu.pcie_bandwidth, 1e-6, fmt::format("GPU profile \"{}\" has no PCIe bandwidth", s.gpu.name));

  const Object nic = c.object("nic", {"bandwidth", "latency"});
  if (!nic.present())
    c.fail("nic", "missing; expected an object with the NIC's \"bandwidth\" (for example {\"bandwidth\": \"10Gbps\"})");
  cluster.nic = read_link(nic, 0, 5e-6, "the NIC has no default");

  const Object sw = c.object("switch", {"latency", "sharp"});
  cluster.switch_latency = sw.quantity("latency", Dimension::time, Bound::non_negative, 1e-6);
  cluster.switch_reduces = sw.boolean("sharp", false);
}

} // namespace dtsim::scenario::detail
