// `dtsim list`: what a scenario can name.
#include "calibration/profile.hpp"
#include "models/zoo.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/report/format.hpp"
#include "tools/dtsim/commands.hpp"
#include "topologies/instance.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

namespace dtsim::cli {
namespace {

std::string instances() {
  std::string out = fmt::format("{:<24} {:>4} {:<10} {:<26} {:<26} {:>10} {:>8}  {}\n", "instance", "GPUs", "GPU",
                                "intra-node", "network", "on-demand", "spot", "price date, region");
  for (const auto& i : topologies::all_instances()) {
    const auto spot = i.price.spot_per_hour ? fmt::format("${:.2f}", *i.price.spot_per_hour) : std::string("-");
    out += fmt::format(
        "{:<24} {:>4} {:<10} {:<26} {:<26} {:>10} {:>8}  {}, {}\n", i.name, i.gpus, i.gpu,
        fmt::format("{} {}", i.topology,
                    i.intra_bandwidth > 0 ? fmt::format("{:.0f} GB/s", i.intra_bandwidth / 1e9) : std::string()),
        i.nic_bandwidth > 0
            ? fmt::format("{} x {} {}", i.nics, report::format_bandwidth(i.nic_bandwidth), i.network_technology)
            : i.network_technology + " (rate unpublished)",
        fmt::format("${:.2f}/h", i.price.on_demand_per_hour), spot, i.price.date, i.price.region);
  }
  out += "\nPrices are USD per instance-hour, as listed on the date shown (sources in topologies/instances/*.json).\n";
  return out;
}

std::string gpus() {
  std::string out = fmt::format("{:<16} {:<28} {:>10} {:>12} {:>12}  {}\n", "gpu", "name", "memory", "fp32",
                                "fp16/bf16", "provenance");
  for (const auto& name : calibration::profile_names()) {
    const auto g = *calibration::find_profile(name);
    const auto half = g.peak_flops.count(calibration::Precision::fp16)
                          ? fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp16) / 1e12)
                          : std::string("-");
    out += fmt::format(
        "{:<16} {:<28} {:>10} {:>12} {:>12}  {}\n", g.name, g.display_name, report::format_bytes(g.memory_bytes),
        fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp32) / 1e12), half, g.provenance);
  }
  return out;
}

std::string models() {
  std::string out = fmt::format("{:<14} {:>14} {:>22}\n", "model", "parameters", "forward GFLOP/sample");
  for (const auto& name : models::preset_names()) {
    const auto w = *models::build_preset(name);
    out += fmt::format("{:<14} {:>14} {:>22.3f}\n", name, w.parameter_count(), w.forward_flops_per_sample() / 1e9);
  }
  return out;
}

std::string algorithms() {
  std::string out;
  for (const auto& name : collectives::operation_names()) {
    std::vector<std::string> names;
    for (auto a : collectives::supported_algorithms(*collectives::parse_operation(name)))
      names.emplace_back(collectives::to_string(a));
    out += fmt::format("{:<16} {}\n", name, fmt::join(names, ", "));
  }
  return out + "\nEvery operation also takes \"auto\": the choice NCCL or MPICH would make (README, Collectives).\n";
}

std::string topologies_list() {
  return "Networks (cluster.topology.kind):\n"
         "single-switch   every node's NIC into one non-blocking switch (the default)\n"
         "leaf-spine      nodes_per_leaf nodes under each leaf; oversubscription; optional spines: draw that many\n"
         "                spine switches, each leaf linked to every spine, flows spread by ECMP\n"
         "fat-tree        nodes_per_leaf and leaves_per_pod (tiers, aggregated uplinks), or k: a k-ary fat-tree\n"
         "                (Al-Fares 2008; k even, k^3/4 nodes) with every switch drawn and ECMP; oversubscription\n"
         "                per tier, e.g. [1, 2]\n"
         "rail-optimized  rails (NICs per node; default one per GPU or per NIC), nodes_per_group under one set of\n"
         "                rail leaves, spines; NIC r of every node of a group on rail r's leaf (DGX SuperPOD, p5)\n"
         "dragonfly       groups, routers_per_group, nodes_per_router, links_between_groups: routers of a group\n"
         "                all-to-all, every pair of groups joined by global links (Kim et al. 2008)\n"
         "torus           dimensions [x, y] or [x, y, z]: each node linked to the next in every dimension\n"
         "ring            a torus of one dimension\n"
         "explicit        switches [{name, latency}] and links [{from, to, bandwidth, latency}] between switches\n"
         "                and nodes (\"node0\" ...)\n"
         "\nNode fabrics (cluster.intra_node.fabric):\n"
         "nvlink            every GPU's NVLink port into an NVSwitch (DGX A100/H100, p4d, p5)\n"
         "hybrid-cube-mesh  DGX-1 V100 / p3.16xlarge: NVLink between chosen pairs, PCIe for the rest\n"
         "pcie              every GPU on the PCIe root complex\n"
         "pcie-tree         GPUs behind PCIe switches (gpus_per_pcie_switch each) under the root\n"
         "\nSingle-switch and tiers are routed by SimGrid's star zones (a tier's uplinks act as one link: perfect\n"
         "spreading); tori by SimGrid's torus zone (dimension order). Networks with every switch drawn are routed\n"
         "by dtsim: shortest paths, and where several are equal each switch picks one by a hash of the flow\n"
         "(ECMP), the same on every run. See docs/scenario-format.md.\n";
}

} // namespace

int list_command(const std::string& what) {
  if (what == "instances")
    std::cout << instances();
  else if (what == "gpus")
    std::cout << gpus();
  else if (what == "models")
    std::cout << models();
  else if (what == "algorithms")
    std::cout << algorithms();
  else if (what == "topologies")
    std::cout << topologies_list();
  else
    throw scenario::ScenarioError("list", "",
                                  fmt::format("cannot list \"{}\"; expected instances, gpus, models, algorithms or "
                                              "topologies",
                                              what));
  return kExitOk;
}

} // namespace dtsim::cli
