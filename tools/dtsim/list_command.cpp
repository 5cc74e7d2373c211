// `dtsim list`: what a scenario can name.
#include "calibration/profile.hpp"
#include "models/zoo.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/report/format.hpp"
#include "sim/strategies/strategy.hpp"
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

// Where a profile's numbers come from: datasheets and the measurements its sources cite, or a probe's run.
std::string origin(const calibration::GpuProfile& g) {
  if (g.measured) return fmt::format("measured: {} on {}", g.measured->device, g.measured->date);
  return fmt::format("derived: datasheets and published measurements, {} sources cited", g.sources.size());
}

std::string gpus() {
  std::string out = fmt::format("{:<16} {:<28} {:>10} {:>12} {:>12} {:>17}  {}\n", "gpu", "name", "memory", "fp32",
                                "fp16/bf16", "W idle/HBM/math", "where its numbers come from");
  for (const auto& name : calibration::profile_names()) {
    const auto g = *calibration::find_profile(name);
    const auto half = g.peak_flops.count(calibration::Precision::fp16)
                          ? fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp16) / 1e12)
                          : std::string("-");
    const auto draw = g.power.known() ? fmt::format("{:.0f}/{:.0f}/{:.0f}", g.power.idle, g.power.memory, g.power.math)
                                      : std::string("-");
    out += fmt::format(
        "{:<16} {:<28} {:>10} {:>12} {:>12} {:>17}  {}\n", g.name, g.display_name, report::format_bytes(g.memory_bytes),
        fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp32) / 1e12), half, draw, origin(g));
  }
  out +=
      "\nEach is calibration/profiles/NAME.json, its sources listed in the file. A profile file of your own (dtsim "
      "calibrate -o FILE) goes in cluster.gpu as its path. The draws (watts: idle, streaming from HBM, compute-bound) "
      "were measured on the H100 and H200 and scaled from the H100's by TDP on the others.\n";
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

// What each short name does, in strategy_forms() order.
std::string_view strategy_summary(std::string_view form) {
  static const std::vector<std::pair<std::string_view, std::string_view>> kSummaries{
      {"allreduce", "every gradient all-reduced each iteration, synchronous (PyTorch DDP, Horovod)"},
      {"ps-sync", "parameter servers: a round waits for every worker's push (BSP); 1 dedicated server node"},
      {"ps-async", "parameter servers answer each push at once, whatever the others do (DistBelief)"},
      {"ssp[:S]", "parameter servers; a worker may lead the slowest by S iterations (stale-synchronous, Petuum; S 3)"},
      {"dpsgd", "D-PSGD: each worker averages with its ring neighbours every iteration, synchronous"},
      {"adpsgd", "AD-PSGD: asynchronous pairwise averaging with a random peer"},
      {"gossip[:P]", "GoSGD: push the model to a random peer with probability P per iteration (P 0.1)"},
      {"easgd[:TAU]", "EASGD: elastic averaging with a centre variable on 1 server node every TAU steps (TAU 4)"},
      {"local-sgd[:H]", "local SGD: train alone, all-reduce the model every H steps (H 8)"},
      {"preset:NAME", "a system below by name, case and spaces ignored (preset:petuum, preset:parameter-server)"},
  };
  for (const auto& [name, summary] : kSummaries)
    if (name == form) return summary;
  return "";
}

// A preset's strategy as its short name and what the name leaves out ("ps-async, 2 dedicated servers").
std::string strategy_summary_of(const strategies::StrategySpec& spec) {
  namespace st = strategies;
  st::StrategySpec plain = spec;
  plain.preset.clear();
  std::string out = st::strategy_name(plain);
  if (spec.kind == st::Kind::easgd && spec.schedule != st::Schedule::asynchronous)
    out += spec.schedule == st::Schedule::bounded ? fmt::format(", staleness {}", spec.staleness) : ", sync";
  if (st::uses_servers(spec)) {
    if (spec.servers.placement == st::ServerPlacement::colocated)
      out += spec.servers.count == 0 ? ", a server on every node"
                                     : fmt::format(", {} colocated servers", spec.servers.count);
    else
      out += fmt::format(", {} dedicated server{}", spec.servers.count, spec.servers.count == 1 ? "" : "s");
    if (spec.servers.hierarchical) out += ", in-node reduce first";
  }
  if (spec.kind == st::Kind::parameter_server && spec.period > 1) out += fmt::format(", every {} steps", spec.period);
  if (spec.algorithm) out += fmt::format(", {}", collectives::to_string(*spec.algorithm));
  return out;
}

std::string strategies_list() {
  std::string out = "Strategies (training.strategy; fields of the object form override them):\n";
  for (const auto& form : strategies::strategy_forms())
    out += fmt::format("{:<15} {}\n", form, strategy_summary(form));
  out += fmt::format(
      "\nSystems (Table 1 of Kako et al. 2021, then Horovod and BytePS):\n{:<17} {:<26} {:<26} {:<33} {:<27} {}\n",
      "preset", "citation", "scheduling", "exchange", "topology", "dtsim runs");
  for (const auto& p : strategies::presets())
    out +=
        fmt::format("{:<17} {:<26} {:<26} {:<33} {:<27} {}\n", p.name, p.citation, p.scheduling, p.exchange, p.topology,
                    strategy_summary_of(p.strategy) + (p.splits_model ? ", tensor parallel over every GPU" : ""));
  // The table leaves counts, bounds and periods open; each note says what dtsim chose.
  out += "\nWhat dtsim chose where the table is silent:\n";
  for (const auto& p : strategies::presets())
    out += fmt::format("{:<17} {}\n", p.name, p.note);
  return out;
}

std::string failure_presets() {
  std::string out = fmt::format("{:<18} {:<10} {:>14} {:>16} {:>10}  {}\n", "preset", "component", "units a node",
                                "MTBF of a unit", "detection", "counted");
  for (const auto& name : scenario::failure_preset_names())
    for (const auto& f : scenario::failure_preset(name))
      out += fmt::format("{:<18} {:<10} {:>14} {:>16} {:>10}  {}\n", name, f.component, f.units_per_node,
                         report::format_duration(f.mtbf), report::format_duration(f.detection), f.source);
  out += "\nEach is sim/lifecycle/failures/NAME.json: the study's published counts, from which dtsim derives a unit's "
         "MTBF (unit-seconds observed / interruptions). A scenario names one in failures.preset.\n";
  return out;
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
  else if (what == "strategies")
    std::cout << strategies_list();
  else if (what == "failures")
    std::cout << failure_presets();
  else
    throw scenario::ScenarioError("list", "",
                                  fmt::format("cannot list \"{}\"; expected instances, gpus, models, algorithms, "
                                              "topologies, strategies or failures",
                                              what));
  return kExitOk;
}

} // namespace dtsim::cli
